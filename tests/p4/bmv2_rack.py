#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""libinca workers allreduce through BMv2 running p4-reference, with the
switch control plane (p4-reference/control/switch_ctl.py) answering their
JOINs.

A switch namespace holds simple_switch (one port per worker, port 64 to
the CPU) and switch_ctl.py on the CPU port's peer; each worker namespace
holds one veth to the switch and runs inca-bench (int32 SUM, sizes that are
and are not multiples of the 64-element class, results verified by every
rank, no fallback configured: a result can only come from the switch).
Checks: every rank exits 0 with every row verified and no fallback call;
the switch counted CONTRIBs of every member (member_rx) and consumed some
(drop reason CONSUMED); then a worker LEAVEs (inca-bench exits) and joins
again under a new session for a second verified run.

With --incad, a second rack makes the switch a tree leaf (docs/protocol.md,
"Aggregation trees"): a real incad in its own namespace behind switch port
10 is the root, whose job has the switch as its one member; switch_ctl.py
joins it as the leaf's rank 0 and the workers' verified allreduce goes
through both levels (the switch's partials up, incad's RESULTs down).

    bmv2_rack.py --json inca_v1model.json --simple-switch PATH --cli PATH \\
        --bench build/tools/inca-bench [--workers 2] [--incad build/daemon/incad]

Needs root. Namespaces, interfaces and processes go however the run ends.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from nsrig import Rig, sh

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CTL = os.path.join(ROOT, 'p4-reference', 'control', 'switch_ctl.py')
INCACTL = os.path.join(ROOT, 'tools', 'incactl')
AGG_IP, AGG_MAC = '10.78.0.1', '02:00:00:00:aa:01'
JOB, TOKEN = 7, 0x494E4341
CPU_PORT = 64
DROP_CONSUMED = 9          # INCA_DROP_CONSUMED of headers.p4
EVICT_MS = 3000
JOB_KEY = bytes(range(0xa0, 0xc0))
DYN_JOB = 12
ROOT_IP, ROOT_MAC, ROOT_PORT = '10.78.0.100', '02:00:00:00:dd:00', 10
ROOT_JOB, ROOT_TOKEN, ROOT_EVICT_MS = 70, 0x524F4F54, 2000


def wire_like(ex, dev):
    """Make a veth end behave like a wire for the switch on the other end:
    no checksum offload, segmentation or receive coalescing. libinca sends
    with UDP GSO; with offloads on, a batch of datagrams crosses the veth
    as one buffer and simple_switch (or incad's af_packet port) reads it
    as one frame of up to 64 KB, which the switch drops, so every such
    batch came through only by retransmission (tools/rack does the same)."""
    sh(*ex, 'ethtool', '-K', dev, 'tx', 'off', 'rx', 'off', 'tso', 'off', 'gso', 'off',
       'gro', 'off')


class Rack(Rig):
    def __init__(self, args, leaf=False):
        super().__init__()
        self.args = args
        self.leaf = leaf            # the switch is a tree leaf of an incad root
        tag = 'p4%s%d' % ('l' if leaf else 'r', os.getpid() % 100000)
        self.sw_ns = tag + 's'
        self.root_ns = tag + 'root'  # the incad root's, and its EAL --file-prefix
        self.wk_ns = ['%sw%d' % (tag, i) for i in range(args.workers)]
        self.tmp = tempfile.mkdtemp(prefix='inca-bmv2-rack-')

    def ex(self, ns):
        return ['ip', 'netns', 'exec', ns]

    def setup(self):
        sw = self.netns(self.sw_ns)
        sh(*sw, 'ip', 'link', 'set', 'lo', 'up')
        sh(*sw, 'ip', 'link', 'add', 'cpu0', 'type', 'veth', 'peer', 'name', 'cpu1')
        ports = ['-i', '%d@cpu0' % CPU_PORT]
        for i, ns in enumerate(self.wk_ns):
            self.netns(ns)
            sh(*sw, 'ip', 'link', 'add', 'swp%d' % (i + 1), 'type', 'veth', 'peer', 'name',
               'eth0', 'netns', ns)
            ports += ['-i', '%d@swp%d' % (i + 1, i + 1)]
            w = self.ex(ns)
            sh(*w, 'sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1')
            sh(*w, 'ip', 'link', 'set', 'eth0', 'address', self.mac(i))
            sh(*w, 'ip', 'addr', 'add', '10.78.0.%d/24' % (10 + i), 'dev', 'eth0')
            sh(*w, 'ip', 'link', 'set', 'eth0', 'up')
            sh(*w, 'ip', 'link', 'set', 'lo', 'up')
            wire_like(w, 'eth0')
            wire_like(sw, 'swp%d' % (i + 1))
        if self.leaf:
            ports += self.setup_root(sw)
        sh(*sw, 'sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1')
        for i in ['cpu0', 'cpu1'] + ['swp%d' % (i + 1) for i in range(len(self.wk_ns))]:
            sh(*sw, 'ip', 'link', 'set', i, 'up')
        self.switch = self.start('switch', sw + [self.args.simple_switch, '--device-id', '0',
                                   '--thrift-port', '9090', '--notifications-addr',
                                   'ipc://%s/notifications.ipc' % self.tmp]
                   + ports + [self.args.json], os.path.join(self.tmp, 'switch.log'))
        conf = {'aggregator': {'ip': AGG_IP, 'mac': AGG_MAC}, 'cpu_port': CPU_PORT,
                'hb_ms': 500, 'evict_ms': EVICT_MS,
                'hosts': [{'mac': self.mac(i), 'port': i + 1} for i in range(len(self.wk_ns))],
                'jobs': [{'id': JOB, 'token': TOKEN, 'nworkers': len(self.wk_ns),
                          'pool_size': 32, 'window': 32, 'elems': 64}],
                'dynamic': {'job_ids': [10, 19], 'job_key': JOB_KEY.hex(), 'pool_size': 16,
                            'slots': [32, 64], 'member_base': 32}}
        if self.leaf:
            conf['jobs'][0]['parent'] = {'ip': ROOT_IP, 'mac': ROOT_MAC, 'port': ROOT_PORT,
                                         'job': ROOT_JOB, 'token': ROOT_TOKEN, 'rank': 0,
                                         'nworkers': 1}
            del conf['dynamic']
        path = os.path.join(self.tmp, 'ctl.json')
        with open(path, 'w') as f:
            json.dump(conf, f)
        self.ctl = self.start('switch_ctl', sw + ['/usr/bin/python3', CTL, '--config', path,
                                                '--iface', 'cpu1', '--bmv2-python',
                                                self.bmv2_python()],
                              os.path.join(self.tmp, 'switch_ctl.log'))
        self.wait_ready()

    def setup_root(self, sw):
        """The root: incad on an af_packet port behind switch port 10, with
        a static job of one member (the switch) and the leaf's pool."""
        ns = self.root_ns
        ex = self.netns(ns)
        sh(*self.ex(self.sw_ns), 'ip', 'link', 'add', 'swp%d' % ROOT_PORT, 'type', 'veth',
           'peer', 'name', 'v0', 'netns', ns)
        sh(*ex, 'sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1')
        sh(*ex, 'ip', 'link', 'set', 'v0', 'address', ROOT_MAC)
        sh(*ex, 'ip', 'link', 'set', 'v0', 'up')
        sh(*ex, 'ip', 'link', 'set', 'lo', 'up')
        sh(*self.ex(self.sw_ns), 'ip', 'link', 'set', 'swp%d' % ROOT_PORT, 'up')
        wire_like(ex, 'v0')
        wire_like(self.ex(self.sw_ns), 'swp%d' % ROOT_PORT)
        conf = os.path.join(self.tmp, 'root.conf')
        with open(conf, 'w') as f:
            f.write('''mode = "aggregator";
idle = { policy = "adaptive"; max_sleep_us = 100; };
aggregation = { pool_size = 32; max_elems = 64; window = 32; max_slots = 64; };
timeouts = { heartbeat_ms = 500; evict_ms = %d; };
ports = ( { name = "p0"; devargs = "net_af_packet0,iface=v0"; ipv4 = "%s/24"; } );
tenants = ( { name = "t"; token = 0x%x; job_ids = [%d, %d]; dynamic_jobs = false; } );
jobs = ( { id = %d; tenant = "t"; nworkers = 1; pool_size = 32; max_elems = 64;
           window = 32; dtypes = ["int32"]; ops = ["sum"]; } );
''' % (ROOT_EVICT_MS, ROOT_IP, ROOT_TOKEN, ROOT_JOB, ROOT_JOB, ROOT_JOB))
        self.root = self.start('incad', ex + [self.args.incad, '--no-huge', '-m', '256',
                                              '--no-pci', '--file-prefix', ns, '-l', '0', '--',
                                              '-c', conf],
                               os.path.join(self.tmp, 'incad.log'))
        return ['-i', '%d@swp%d' % (ROOT_PORT, ROOT_PORT)]

    def wait_leaf_up(self, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if 'joined parent job' in self.tail(self.ctl, 100000):
                return
            time.sleep(0.1)
        raise RuntimeError('the switch did not join the incad root: %s\nincad: %s'
                           % (self.tail(self.ctl), self.tail(self.root)))

    @staticmethod
    def mac(i):
        return '02:00:00:00:cc:%02x' % i

    def bmv2_python(self):
        """Where simple_switch_CLI finds runtime_CLI (its sys.path line)."""
        with open(self.args.cli) as f:
            for line in f:
                if 'sys.path.append' in line:
                    return line.split('"')[1]
        return ''

    def wait_ready(self):
        for _ in range(300):
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError('%s exited with %d: %s'
                                       % (p.name, p.returncode, self.tail(p)))
            if 'ready on' in self.tail(self.ctl, 100000):
                return
            time.sleep(0.1)
        raise RuntimeError('switch_ctl not ready: %s' % self.tail(self.ctl))

    def bench(self, sizes, iters=3, kill=None, job=JOB, token=TOKEN):
        """One inca-bench per worker; (rc, json of rank 0, outputs).
        kill: (rank, seconds): SIGKILL that rank's process after that long."""
        ps = []
        for i, ns in enumerate(self.wk_ns):
            cmd = self.ex(ns) + [self.args.bench, '-a', AGG_IP, '-j', str(job), '-r', str(i),
                                 '-n', str(len(self.wk_ns)), '-t', '0x%x' % token,
                                 '-d', 'int32', '-o', 'sum', '-s', sizes, '-i', str(iters),
                                 '-x', '1', '-T', '200', '-G', '20000', '--verify-each',
                                 '--json']
            if os.environ.get('INCA_RACK_VERBOSE'):
                cmd.append('-v')
            ps.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True))
        if kill is not None:
            time.sleep(kill[1])
            ps[kill[0]].kill()
        outs, rcs = [], []
        for p in ps:
            try:
                out, _ = p.communicate(timeout=self.args.timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
                out += '\n(killed after %d s)' % self.args.timeout
            outs.append(out)
            rcs.append(p.returncode)
        report = None
        for line in outs[0].splitlines():
            if line.startswith('{"tool"'):
                try:
                    report = json.loads(line)
                except ValueError:
                    # An error message written into the report's line
                    # (stderr is merged): no report, and the caller
                    # shows the output.
                    report = None
        return rcs, report, outs

    def counter(self, name, index):
        r = subprocess.run(self.ex(self.sw_ns) + ['/usr/bin/python3', self.args.cli,
                                                  '--thrift-port', '9090'],
                           input='counter_read %s %d\n' % (name, index), text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for line in r.stdout.splitlines():
            if '%s[%d]' % (name, index) in line and 'packets' in line:
                return int(line.split(',')[1].split()[0])
        raise RuntimeError('counter_read %s %d: %s' % (name, index, r.stdout[-300:]))

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.leaf:
            # EAL's runtime directory of the root incad.
            shutil.rmtree('/var/run/dpdk/' + self.root_ns, ignore_errors=True)


def check_run(rack, what, sizes, fails, **kw):
    rcs, report, outs = rack.bench(sizes, **kw)
    for i, (rc, out) in enumerate(zip(rcs, outs)):
        if rc != 0:
            fails.append('%s: rank %d exited %s: %s' % (what, i, rc, out[-800:]))
    if report is None:
        fails.append('%s: rank 0 printed no report: %s' % (what, outs[0][-800:]))
        return
    rows = report['results']
    bad = [r for r in rows if r['errors']]
    if bad:
        fails.append('%s: rows with wrong results: %s' % (what, bad))
    if len(rows) != len(sizes.split(',')):
        fails.append('%s: %d rows for %d sizes' % (what, len(rows), len(sizes.split(','))))
    st = report['stats']
    if st['fallback_calls'] or st['recoveries'] or not st['chunks']:
        fails.append('%s: not all through the switch: %s' % (what, st))
    print('%s: %d sizes verified by %d ranks, %d chunks, %d retransmits, %d replays'
          % (what, len(rows), len(rcs), st['chunks'], st['retransmits'], st['replays']))
    for r in rows:
        print('  %8d bytes  median %9.1f us' % (r['bytes'], r['median_us']))


def leaf_case(args, fails):
    """The switch as a tree leaf under a real incad root."""
    try:
        with Rack(args, leaf=True) as rack:
            rack.wait_leaf_up()
            check_run(rack, 'leaf under an incad root', '256,1000,65536', fails)
            partials = rack.counter('IncaIngress.drops', DROP_CONSUMED)
            log = rack.tail(rack.ctl, 100000)
            print('leaf: %s; %d contributions consumed at the leaf'
                  % ([ln for ln in log.splitlines() if 'joined parent' in ln][-1:],
                     partials))
            if partials == 0:
                fails.append('leaf: the switch consumed no contribution')
            if 'lost' in log:
                fails.append('leaf: the parent session was lost: %s' % log[-800:])
    except (RuntimeError, subprocess.CalledProcessError) as e:
        fails.append('leaf: ' + str(e) + (' ' + e.stdout if getattr(e, 'stdout', None)
                                          else ''))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--json', required=True)
    ap.add_argument('--simple-switch', required=True)
    ap.add_argument('--cli', required=True)
    ap.add_argument('--bench', required=True)
    ap.add_argument('--workers', type=int, default=2)
    ap.add_argument('--timeout', type=int, default=240, help='seconds per inca-bench run')
    ap.add_argument('--incad', help='incad: also run the switch as a leaf of an incad root')
    ap.add_argument('--only-leaf', action='store_true', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print('bmv2_rack.py needs root')
        return 1
    fails = []
    # 1000 bytes = 250 elements: padded to the 64-element class.
    sizes = '256,1000,4096,65536'
    if args.incad:
        leaf_case(args, fails)
    if args.only_leaf:
        for f in fails:
            print('FAIL: ' + f)
        return 1 if fails else 0
    try:
        with Rack(args) as rack:
            check_run(rack, 'first run', sizes, fails)
            for i in range(args.workers):
                rx = rack.counter('IncaIngress.member_rx', i)
                if rx == 0:
                    fails.append('member_rx[%d] is 0: rank %d sent nothing the switch saw'
                                 % (i, i))
            consumed = rack.counter('IncaIngress.drops', DROP_CONSUMED)
            if consumed == 0:
                fails.append('the switch consumed no contribution')
            print('switch: %d contributions consumed, member_rx %s' % (
                consumed, [rack.counter('IncaIngress.member_rx', i)
                           for i in range(args.workers)]))
            # The first run's workers LEFT when they exited: the job was
            # reset, and the same workers join its new incarnation.
            check_run(rack, 'after LEAVE and rejoin', '4096,12344', fails)
            log = rack.tail(rack.ctl, 100000)
            if 'new incarnation' not in log:
                fails.append('switch_ctl started no new incarnation after the LEAVEs: %s'
                             % log[-800:])
            # A dynamic job: created by its first JOIN with its own token
            # (incactl job-token derives it, as for incad), deleted when
            # its last member leaves; another job's token creates nothing.
            tok = int(subprocess.run(['/usr/bin/python3', INCACTL, 'job-token', '--key',
                                      JOB_KEY.hex(), str(DYN_JOB)],
                                     stdout=subprocess.PIPE, text=True).stdout, 16)
            check_run(rack, 'dynamic job %d' % DYN_JOB, '4096', fails, job=DYN_JOB,
                      token=tok)
            rcs, _, outs = rack.bench('4096', job=DYN_JOB + 1, token=tok)
            if any(rc == 0 for rc in rcs):
                fails.append('job %d was created with job %d\'s token: %s'
                             % (DYN_JOB + 1, DYN_JOB, outs[0][-300:]))
            log = rack.tail(rack.ctl, 100000)
            for what in ('job %d created (dynamic)' % DYN_JOB,
                         'job %d deleted' % DYN_JOB):
                if what not in log:
                    fails.append('switch_ctl log lacks "%s": %s' % (what, log[-800:]))
            if 'job %d created' % (DYN_JOB + 1) in log:
                fails.append('job %d created with a wrong token' % (DYN_JOB + 1))
            # The last rank dies without a LEAVE mid-run: the control plane
            # evicts it after evict_ms (its member_rx stops moving), and the
            # others' collective ends with an error (no fallback here)
            # instead of waiting for ever.
            last = args.workers - 1
            rcs, _, outs = rack.bench('65536', iters=200, kill=(last, 2))
            if rcs[0] == 0:
                fails.append('rank 0 finished although rank %d was killed: %s'
                             % (last, outs[0][-500:]))
            if 'killed after' in outs[0]:
                fails.append('rank 0 did not end by itself: %s' % outs[0][-500:])
            log = rack.tail(rack.ctl, 100000)
            if 'rank %d evicted' % last not in log:
                fails.append('switch_ctl did not evict rank %d: %s' % (last, log[-800:]))
            err = [ln for ln in outs[0].splitlines() if ln.startswith('inca-bench:')]
            print('killed rank %d: evicted by the control plane; rank 0: %s'
                  % (last, err[0] if err else '-'))
    except (RuntimeError, subprocess.CalledProcessError) as e:
        fails.append(str(e) + (' ' + e.stdout if getattr(e, 'stdout', None) else ''))
    for f in fails:
        print('FAIL: ' + f)
    print('%d passed, %d failed' % (0 if fails else 1, 1 if fails else 0))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
