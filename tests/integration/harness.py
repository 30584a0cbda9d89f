# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Racks, incad and workers for the integration tests.

Rack and Incad are context managers: leaving the 'with' block, normally or
by an exception, stops incad and removes the rack's namespaces.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, '..', '..'))
RACK = os.path.join(SRC, 'tools', 'rack')
WORKER = os.path.join(HERE, 'inca_worker.py')
PYTHON = '/usr/bin/python3' if os.path.exists('/usr/bin/python3') else sys.executable

_seq = [0]


class Failed(Exception):
    """A test's expectation did not hold (the message says which)."""


class Skip(Exception):
    """The test cannot run here (a prerequisite is missing): exit 77."""


def run_test(name, fn):
    """Run test @fn as the main program does: SIGTERM (meson's timeout) and
    SIGINT unwind through the test's 'with' blocks, so that racks are
    removed and incads stopped; PASS, FAIL or SKIP logged with the time.
    The exit status: 0, 1, or 77 for Skip."""
    if os.geteuid() != 0:
        log('integration tests need root (network namespaces)')
        return 1

    def stop(sig, frame):
        raise Failed('stopped by signal %d' % sig)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    t0 = time.monotonic()
    try:
        fn()
    except Skip as e:
        log('SKIP %s: %s' % (name, e))
        return 77
    except Exception as e:
        if not isinstance(e, Failed):
            traceback.print_exc()
        log('FAIL %s: %s (%.1f s)' % (name, e, time.monotonic() - t0))
        return 1
    log('PASS %s (%.1f s)' % (name, time.monotonic() - t0))
    return 0


def check(cond, msg, *a):
    if not cond:
        raise Failed(msg % a if a else msg)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def unique_name(tag):
    """A rack name no other test run on this host uses at the same time."""
    _seq[0] += 1
    return 'it%d%s%d' % (os.getpid() % 100000, tag[:6], _seq[0])


class Rack:
    def __init__(self, tag, workers=2, mode='switch', rate='0', mtu=1500, up_args=()):
        self.name = unique_name(tag)
        self.workers, self.mode, self.rate, self.mtu = workers, mode, rate, mtu
        self.up_args = list(up_args)   # --racks R --uplink-rate U, --aggs K, ...
        self.env = {}

    def rack(self, *args, **kw):
        return subprocess.run([RACK, args[0], '--name', self.name] + list(args[1:]),
                              check=True, **kw)

    def __enter__(self):
        try:
            self.rack('up', '--workers', str(self.workers), '--mode', self.mode,
                      '--rate', str(self.rate), '--mtu', str(self.mtu), *self.up_args)
            out = self.rack('env', capture_output=True, text=True).stdout
        except BaseException:
            self.down()
            raise
        for line in out.splitlines():
            k, _, v = line.partition('=')
            self.env[k] = v.strip('"')
        self.worker_ips = self.env['RACK_WORKER_IPS'].split()
        self.agg_ip = self.env['RACK_AGG_IP']
        # What the workers name as INCA's aggregator: the leaves of several
        # racks, the stripes of several aggregators, or incad.
        self.aggregator = self.env['RACK_AGGREGATOR']
        return self

    def down(self):
        subprocess.run([RACK, 'down', '--name', self.name], check=False)

    def __exit__(self, *exc):
        self.down()
        return False

    def ns(self, node):
        """A worker by index, any other node by name (agg, tor, leaf0, ...)."""
        return '%s-%s' % (self.name, node if isinstance(node, str) else 'w%d' % node)

    def run(self, node, argv, **kw):
        """Run argv in a node's namespace to completion."""
        return subprocess.run(['ip', 'netns', 'exec', self.ns(node)] + argv, **kw)

    def popen(self, node, argv, **kw):
        return subprocess.Popen(['ip', 'netns', 'exec', self.ns(node)] + argv, **kw)

    def conf(self, *args):
        return self.rack('conf', *args, capture_output=True, text=True).stdout


class Telemetry:
    """Client of DPDK's telemetry socket (JSON over SOCK_SEQPACKET)."""

    def __init__(self, file_prefix):
        self.path = '/var/run/dpdk/%s/dpdk_telemetry.v2' % file_prefix
        self.sock = None

    def connect(self, timeout=10.0):
        end = time.monotonic() + timeout
        while True:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                s.connect(self.path)
                break
            except OSError:
                s.close()
                if time.monotonic() > end:
                    raise
                time.sleep(0.1)
        self.sock = s
        self.info = json.loads(s.recv(1 << 16).decode())
        self.max_len = self.info.get('max_output_len', 1 << 16)
        return self

    def query(self, cmd):
        """The answer to one command (the reply is {"/cmd": answer})."""
        self.sock.send(cmd.encode())
        reply = json.loads(self.sock.recv(self.max_len + 1024).decode())
        return reply[cmd.split(',')[0]]

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None


class Incad:
    """incad running in a rack's agg namespace (or node's: leafK, aggS), its
    log in a temporary file; ip is its address (default the rack's incad's)."""

    def __init__(self, rack, exe, conf_args=(), extra_eal=(), extra_args=(), node='agg',
                 ip=None):
        self.rack = rack
        self.exe = exe
        self.node = node
        self.ip = ip
        self.prefix = rack.name if node == 'agg' else rack.name + node
        self.conf_args = list(conf_args)
        self.extra_eal = list(extra_eal)
        self.extra_args = list(extra_args)
        self.proc = None
        self.rc = None
        self.dir = tempfile.mkdtemp(prefix='inca-it-')
        self.conf_path = os.path.join(self.dir, 'incad.conf')
        self.log_path = os.path.join(self.dir, 'incad.log')

    def argv(self):
        # The ports are hot-plugged from the configuration (devargs), so EAL
        # needs no --vdev. One lcore: the main lcore does I/O (workers = 1).
        return [self.exe, '--no-huge', '-m', '512', '--no-pci', '--file-prefix', self.prefix,
                '-l', '0'] + self.extra_eal + ['--', '-c', self.conf_path, '--idle', 'adaptive'] \
            + self.extra_args

    def start(self):
        with open(self.conf_path, 'w') as f:
            f.write(self.rack.conf(*self.conf_args))
        self.logf = open(self.log_path, 'w')
        argv = self.argv()
        log('start:', ' '.join(argv))
        self.proc = self.rack.popen(self.node, argv, stdout=self.logf,
                                    stderr=subprocess.STDOUT)
        return self

    def wait_ready(self, node=0, timeout=20.0):
        """incad is ready when it answers a HELLO from a worker."""
        code = ('import sys; sys.path.insert(0, %r); import inca_proto as P; '
                'w = P.Worker(%r, 0, 0, 0, 1); print(w.hello())' % (HERE,
                                                                     self.ip or self.rack.agg_ip))
        end = time.monotonic() + timeout
        tel = Telemetry(self.prefix)
        # The telemetry socket appears when EAL is up, shortly before the
        # ports: probing earlier would only leave HELLOs queued behind ARP.
        while not os.path.exists(tel.path) and time.monotonic() < end:
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError('incad exited with %d:\n%s' % (self.proc.returncode,
                                                                    self.output()))
            r = self.rack.run(node, [PYTHON, '-c', code], capture_output=True, text=True,
                              timeout=30)
            if r.returncode == 0:
                return
        raise RuntimeError('incad did not answer HELLO in %.0f s:\n%s'
                           % (timeout, self.output()))

    def __enter__(self):
        try:
            self.start()
            self.wait_ready()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def stop(self, sig=signal.SIGTERM, grace=10.0):
        """Stop incad; returns its exit status (negative: killed by a signal)."""
        if self.proc is None:
            return self.rc
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                log('incad ignored signal %d for %.0f s: killing it' % (sig, grace))
                self.proc.kill()
                self.proc.wait()
        self.rc = self.proc.returncode
        self.proc = None
        self.logf.close()
        # EAL leaves its runtime directory behind; the prefix is ours alone.
        shutil.rmtree('/var/run/dpdk/%s' % self.prefix, ignore_errors=True)
        return self.rc

    def __exit__(self, *exc):
        self.stop()
        if exc[0] is not None:
            log('---- incad log ----\n%s' % self.output())
        shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def output(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ''

    def telemetry(self):
        return Telemetry(self.prefix).connect()


def run_workers(rack, specs, timeout=120):
    """Run workers in parallel: specs is a list of (node, worker argv).

    Returns the parsed JSON output of each, in order.
    """
    procs = []
    try:
        for node, args in specs:
            procs.append(rack.popen(node, [PYTHON, WORKER] + args, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True))
        outs = []
        end = time.monotonic() + timeout
        for p in procs:
            so, se = p.communicate(timeout=max(1, end - time.monotonic()))
            if se:
                log(se)
            try:
                outs.append(json.loads(so))
            except ValueError:
                raise AssertionError('worker printed no result (rc %d): %s %s'
                                     % (p.returncode, so, se))
        return outs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
