# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""A rack (tools/rack) with incad in it, for the MPI and PyTorch tests.

Rack and Incad are context managers: leaving the 'with' block, normally or
by an exception (Ctrl-C and SIGTERM included, see install_signal_handlers),
stops incad and removes the rack's namespaces.

incad's configuration is written here from docs/incad.md (aggregator mode,
one net_af_packet port, one tenant, static jobs), so that the jobs and their
counters outlive their members and can be read through telemetry after the
workers have left.
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

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, '..', '..'))
RACK = os.path.join(SRC, 'tools', 'rack')

SKIP = 77  # meson's exit status for a skipped test
TOKEN = 0x494E4341


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def skip(why):
    log('SKIP:', why)
    sys.exit(SKIP)


def install_signal_handlers():
    """Turn SIGTERM (meson's timeout) into an exception, so that the
    'with' blocks clean up."""
    def term(signum, frame):
        raise KeyboardInterrupt('signal %d' % signum)
    signal.signal(signal.SIGTERM, term)


def check_root():
    if os.geteuid() != 0:
        skip('needs root (network namespaces)')


class Rack:
    def __init__(self, tag, workers=1, mode='aggregator', rate='0'):
        self.name = '%s%d' % (tag[:12], os.getpid() % 1000000)
        self.workers, self.mode, self.rate = workers, mode, rate
        self.env = {}

    def _rack(self, *args, **kw):
        return subprocess.run([RACK, args[0], '--name', self.name] + list(args[1:]),
                              check=True, **kw)

    def __enter__(self):
        try:
            self._rack('up', '--workers', str(self.workers), '--mode', self.mode,
                       '--rate', str(self.rate))
            out = self._rack('env', capture_output=True, text=True).stdout
        except BaseException:
            self.down()
            raise
        for line in out.splitlines():
            k, _, v = line.partition('=')
            self.env[k] = v.strip('"')
        self.agg_ip = self.env['RACK_AGG_IP']
        self.worker_ips = self.env['RACK_WORKER_IPS'].split()
        return self

    def down(self):
        subprocess.run([RACK, 'down', '--name', self.name], check=False)

    def __exit__(self, *exc):
        self.down()
        return False

    def ns(self, node):
        return '%s-%s' % (self.name, node if node in ('agg', 'tor') else 'w%d' % node)

    def argv(self, node, argv):
        return ['ip', 'netns', 'exec', self.ns(node)] + list(argv)

    def popen(self, node, argv, **kw):
        return subprocess.Popen(self.argv(node, argv), **kw)

    def run(self, node, argv, **kw):
        return subprocess.run(self.argv(node, argv), **kw)


class Telemetry:
    """DPDK telemetry client: JSON over a SOCK_SEQPACKET Unix socket."""

    def __init__(self, prefix):
        self.path = '/var/run/dpdk/%s/dpdk_telemetry.v2' % prefix
        self.sock = None

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(self.path)
        except OSError:
            s.close()
            raise
        self.sock = s
        info = json.loads(s.recv(1 << 16).decode())
        self.max_len = info.get('max_output_len', 1 << 16)
        return self

    def query(self, cmd):
        self.sock.send(cmd.encode())
        reply = json.loads(self.sock.recv(self.max_len + 1024).decode())
        return reply.get(cmd.split(',')[0], reply)

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def incad_conf(agg_ip, ifaces, jobs, token=TOKEN):
    """incad configuration: one tenant, static jobs [(id, nworkers), ...]."""
    ports = ',\n'.join(
        '  { name = "p%d"; devargs = "net_af_packet%d,iface=%s,qdisc_bypass=0"; '
        'ipv4 = "%s/24"; }' % (i, i, ifc, agg_ip) for i, ifc in enumerate(ifaces))
    jl = ',\n'.join('  { id = %d; tenant = "t"; nworkers = %d; }' % j for j in jobs)
    return ('mode = "aggregator";\n'
            'ports = (\n%s\n);\n'
            'tenants = (\n  { name = "t"; token = 0x%08x; job_ids = [1, 1000]; '
            'dynamic_jobs = true; }\n);\n'
            'jobs = (\n%s\n);\n' % (ports, token, jl))


class Incad:
    """incad in the rack's agg namespace, with static jobs."""

    def __init__(self, rack, exe, jobs):
        self.rack, self.exe, self.jobs = rack, exe, jobs
        self.prefix = rack.name
        self.dir = tempfile.mkdtemp(prefix='inca-%s-' % rack.name)
        self.conf_path = os.path.join(self.dir, 'incad.conf')
        self.log_path = os.path.join(self.dir, 'incad.log')
        self.proc = None
        self.tel = None
        self.logf = None

    def start(self, timeout=30.0):
        with open(self.conf_path, 'w') as f:
            f.write(incad_conf(self.rack.agg_ip, self.rack.env['RACK_AGG_IFACES'].split(),
                               self.jobs))
        self.logf = open(self.log_path, 'a')
        argv = [self.exe, '--no-huge', '-m', '512', '--no-pci', '--file-prefix', self.prefix,
                '-l', '0', '--log-level', 'lib.eal:error', '--', '-c', self.conf_path]
        log('start incad:', ' '.join(argv))
        self.proc = self.rack.popen('agg', argv, stdout=self.logf, stderr=subprocess.STDOUT)
        # Ready when telemetry answers: incad registers its commands after
        # its ports have started.
        end = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError('incad exited with %d:\n%s' % (self.proc.returncode,
                                                                    self.output()))
            try:
                self.tel = Telemetry(self.prefix).connect()
                if self.tel.query('/incad/ports'):
                    break
            except (OSError, ValueError):
                self.close_tel()
            if time.monotonic() > end:
                raise RuntimeError('incad not ready after %.0f s:\n%s' % (timeout,
                                                                          self.output()))
            time.sleep(0.2)
        return self

    def job(self, job_id):
        return self.tel.query('/incad/job,%d' % job_id)

    def close_tel(self):
        if self.tel is not None:
            self.tel.close()
            self.tel = None

    def stop(self, sig=signal.SIGTERM, grace=10.0):
        self.close_tel()
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc, self.proc = self.proc.returncode, None
        self.logf.close()
        # DPDK leaves its runtime directory (and telemetry socket) behind.
        shutil.rmtree('/var/run/dpdk/%s' % self.prefix, ignore_errors=True)
        return rc

    def output(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ''

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
        if exc[0] is not None:
            log('---- incad log (%s) ----\n%s' % (self.log_path, self.output()))
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        return False


def parse_stats(text, prefix):
    """Lines 'PREFIX: rank R k v k v ...' -> {rank: {k: int or str}}."""
    out = {}
    for line in text.splitlines():
        if not line.startswith(prefix + ':'):
            continue
        f = line[len(prefix) + 1:].split()
        d = {}
        for k, v in zip(f[0::2], f[1::2]):
            try:
                d[k] = int(v)
            except ValueError:
                d[k] = v
        out[d['rank']] = d
    return out
