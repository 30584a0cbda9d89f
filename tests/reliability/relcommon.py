# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""What the reliability cases share: racks and incad (from the integration
harness), incad configurations with several tenants, inca-bench and python
workers as processes with their exit times, telemetry differences, and
nftables in the worker namespaces.

Everything a case starts lives in a rack's namespaces, so leaving the
rack's 'with' block (which kills every process in them and deletes the
namespaces with their nftables tables and qdiscs) cleans up whatever
happened; the Procs objects kill their own processes first.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, '..', '..'))
sys.path.insert(0, os.path.join(SRC, 'tests', 'integration'))

import inca_proto as P  # noqa: E402,F401
from harness import (  # noqa: E402,F401 (re-exported)
    PYTHON, Failed, Rack, Incad, Telemetry, check, log)

WORKER = os.path.join(SRC, 'tests', 'integration', 'inca_worker.py')
TOKEN = 0x494E4341  # tools/rack conf's token of job 1 (job 1 + k has TOKEN + k)
INCA_PORT = P.UDP_PORT


# ---- incad configurations -------------------------------------------------

def conf_text(rack, tenants, jobs=(), max_elems=256, pool_size=64, window=0,
              max_slots=4096, heartbeat_ms=None, evict_ms=None, session_seed=None,
              arbitration=None):
    """An incad configuration for @rack: its mode, one af_packet port per
    agg-side interface (as tools/rack conf writes them), and the given
    tenants and static jobs, each a dict of configuration keys (and the
    arbitration section's, when given)."""
    ifaces = rack.env['RACK_AGG_IFACES'].split()
    ips = rack.env['RACK_AGG_PORT_IPS'].split()
    af = ',framesz=8352,blocksz=1069056' if int(rack.env['RACK_MTU']) > 1500 else ''

    def value(v):
        if isinstance(v, bool):
            return 'true' if v else 'false'
        if isinstance(v, int):
            return '0x%08x' % v if v > 0xffff else str(v)
        if isinstance(v, (list, tuple)):
            if v and isinstance(v[0], int):
                return '[%s]' % ', '.join(str(x) for x in v)
            return '[%s]' % ', '.join('"%s"' % x for x in v)
        return '"%s"' % v

    def group(d):
        return '\t{ %s }' % ' '.join('%s = %s;' % (k, value(v)) for k, v in d.items())

    out = ['mode = "%s";' % rack.env['RACK_MODE'], 'workers = 1;',
           'idle = { policy = "adaptive"; };',
           'aggregation = { max_elems = %d; pool_size = %d; max_slots = %d;%s%s };'
           % (max_elems, pool_size, max_slots, ' window = %d;' % window if window else '',
              ' session_seed = 0x%08x;' % session_seed if session_seed is not None else '')]
    if heartbeat_ms is not None:
        out.append('timeouts = { heartbeat_ms = %d; evict_ms = %d; };' % (heartbeat_ms,
                                                                          evict_ms))
    out.append('ports = (')
    out.append(',\n'.join('\t{ name = "%s"; devargs = "net_af_packet%d,iface=%s,'
                          'qdisc_bypass=0%s"; ipv4 = "%s/24"; }' % (ifc, i, ifc, af, ips[i])
                          for i, ifc in enumerate(ifaces)))
    out.append(');')
    out.append('tenants = (\n%s\n);' % ',\n'.join(group(t) for t in tenants))
    if jobs:
        out.append('jobs = (\n%s\n);' % ',\n'.join(group(j) for j in jobs))
    if arbitration:
        out.append('arbitration = %s;' % group(arbitration).strip())
    return '\n'.join(out) + '\n'


def pcap_ports(conf):
    """@conf with its net_af_packet ports turned into net_pcap ports on the
    same interfaces. libpcap reads a veth without the af_packet PMD's
    fanout group, whose DEFRAG flag has the kernel reassemble IPv4
    fragments before incad sees them, and it puts a VLAN tag the kernel
    took off back into the frame with its own TPID (802.1Q or 802.1ad),
    where net_af_packet reports both kinds as one stripped tag: the frame
    edges incad must count reach it as sent (docs/incad.md, "Ports")."""
    return re.sub(r'devargs = "net_af_packet(\d+),iface=([^,"]+)[^"]*"',
                  r'devargs = "net_pcap\1,iface=\2,phy_mac=1"', conf)


class Daemon(Incad):
    """incad in the rack's agg namespace with a configuration given as text
    (or tools/rack conf's, from conf_args, when @conf is None); with
    pcap=True its ports are net_pcap instead of net_af_packet."""

    def __init__(self, rack, exe, conf=None, conf_args=(), pcap=False):
        Incad.__init__(self, rack, exe, conf_args=conf_args)
        self.conf = conf
        self.pcap = pcap

    def start(self):
        conf = self.conf if self.conf is not None else self.rack.conf(*self.conf_args)
        with open(self.conf_path, 'w') as f:
            f.write(pcap_ports(conf) if self.pcap else conf)
        self.logf = open(self.log_path, 'w')
        argv = self.argv()
        log('start:', ' '.join(argv))
        self.proc = self.rack.popen('agg', argv, stdout=self.logf, stderr=subprocess.STDOUT)
        return self

    def tel(self):
        return Telemetry(self.prefix).connect()


def delta(after, before, keys=None):
    """Non-zero differences of two counter dictionaries."""
    keys = keys if keys is not None else after.keys()
    out = {}
    for k in keys:
        if not isinstance(after.get(k, 0), int):
            continue
        d = after.get(k, 0) - before.get(k, 0)
        if d:
            out[k] = d
    return out


# ---- processes ------------------------------------------------------------

class Procs:
    """Processes started in a rack's namespaces, their output in files and
    the time each one ended (to measure how long a failure took to show)."""

    def __init__(self, rack):
        self.rack = rack
        self.dir = tempfile.mkdtemp(prefix='inca-rel-')
        self.procs = []  # dicts: name, proc, out, err, t0, t_end

    def start(self, name, node, argv, env=None):
        out = open(os.path.join(self.dir, name + '.out'), 'w+')
        err = open(os.path.join(self.dir, name + '.err'), 'w+')
        p = self.rack.popen(node, argv, stdout=out, stderr=err, env=env)
        e = dict(name=name, proc=p, out=out, err=err, t0=time.monotonic(), t_end=None)
        self.procs.append(e)
        return e

    def poll(self):
        now = time.monotonic()
        for e in self.procs:
            if e['t_end'] is None and e['proc'].poll() is not None:
                e['t_end'] = now
        return all(e['t_end'] is not None for e in self.procs)

    def wait(self, timeout, which=None):
        """Wait for @which (default all) to end; returns False on timeout."""
        which = which if which is not None else self.procs
        end = time.monotonic() + timeout
        while True:
            self.poll()
            if all(e['t_end'] is not None for e in which):
                return True
            if time.monotonic() > end:
                return False
            time.sleep(0.02)

    def get(self, name):
        return next(e for e in self.procs if e['name'] == name)

    @staticmethod
    def text(e, stream='out'):
        f = e[stream]
        f.flush()
        f.seek(0)
        return f.read()

    def kill(self, name, sig=signal.SIGKILL):
        e = self.get(name)
        # ip netns exec execs the command: the pid is the worker's own.
        e['proc'].send_signal(sig)
        return time.monotonic()

    def close(self):
        for e in self.procs:
            if e['proc'].poll() is None:
                e['proc'].kill()
                e['proc'].wait()
            e['out'].close()
            e['err'].close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            for e in self.procs:
                log('---- %s (rc %s) ----\n%s%s' % (e['name'], e['proc'].poll(),
                                                   self.text(e, 'out')[-1500:],
                                                   self.text(e, 'err')[-1500:]))
        self.close()
        return False


def bench_argv(bench, rack, job, token, rank, n, args):
    return [bench, '-a', rack.agg_ip, '-j', str(job), '-t', hex(token), '-r', str(rank),
            '-n', str(n), '--json'] + list(args)


def start_benches(procs, bench, rack, job, token, nodes, args, env=None, tag=None):
    """One inca-bench per rank of a job, rank r on node nodes[r]."""
    n = len(nodes)
    return [procs.start('%s-r%d' % (tag or 'job%d' % job, r), nodes[r],
                        bench_argv(bench, rack, job, token, r, n, args), env=env)
            for r in range(n)]


def bench_result(procs, entries, what):
    """Every rank exited 0; rank 0's JSON."""
    for r, e in enumerate(entries):
        rc = e['proc'].returncode
        check(rc == 0, '%s rank %d: exit status %s: %s', what, r, rc,
              Procs.text(e, 'err').strip()[-800:])
    try:
        return json.loads(Procs.text(entries[0]))
    except ValueError:
        raise Failed('%s rank 0 printed no JSON: %r' % (what, Procs.text(entries[0])[-500:]))


def check_rows(out, what, dtypes=None, ops=None):
    rows = out['results']
    check(rows, '%s: no results', what)
    for r in rows:
        check(r['errors'] == 0, '%s: %s %s %d bytes: %d wrong elements', what, r['dtype'],
              r['op'], r['bytes'], r['errors'])
    combos = {(r['dtype'], r['op']) for r in rows}
    if dtypes and ops:
        check(len(combos) == len(dtypes) * len(ops), '%s: combinations %s', what,
              sorted(combos))
    return rows


def worker_argv(rack, job, rank, n, token, colls, extra=()):
    return [PYTHON, WORKER, '--agg', rack.agg_ip, '--job', str(job), '--rank', str(rank),
            '--token', hex(token), '--nworkers', str(n)] + list(extra) + list(colls)


def worker_outputs(entries, what):
    outs = []
    for e in entries:
        try:
            outs.append(json.loads(Procs.text(e)))
        except ValueError:
            raise Failed('%s: %s printed no result (rc %s): %s' % (
                what, e['name'], e['proc'].returncode, Procs.text(e, 'err')[-800:]))
    return outs


def check_exact(outs, colls, n, what):
    """Every python worker got the exact reduction of all ranks' inputs."""
    for spec in colls:
        d, op, cnt, seed = spec.split(':')
        want = P.expected(d, op, [P.gen_data(d, op, r, int(cnt), int(seed))
                                  for r in range(n)])
        for o in outs:
            check('error' not in o, '%s rank %d: %s', what, o['rank'], o.get('error'))
            got = o['results'][spec]
            bad = [i for i in range(len(want)) if got[i] != want[i]]
            check(not bad, '%s rank %d %s: %d wrong elements (first at %d)', what, o['rank'],
                  spec, len(bad), bad[0] if bad else -1)


# ---- nftables in worker namespaces ---------------------------------------

def nft(rack, node, script):
    r = rack.run(node, ['nft', '-f', '-'], input=script, text=True, capture_output=True)
    check(r.returncode == 0, 'nft in node %s: %s\n%s', node, r.stderr.strip(), script)


def nft_counters(rack, node, table, family='inet'):
    """{comment: packets} of the commented counters of a table."""
    r = rack.run(node, ['nft', '-j', 'list', 'table', family, table], capture_output=True,
                 text=True, check=True)
    out = {}
    for item in json.loads(r.stdout)['nftables']:
        rule = item.get('rule')
        if not rule or 'comment' not in rule:
            continue
        for st in rule['expr']:
            if 'counter' in st:
                out[rule['comment']] = st['counter']['packets']
    return out


def add_loss(rack, node, permille):
    """Drop @permille / 1000 of the INCA datagrams a worker sends and of
    those it receives, each independently, with counters of what passed by
    and what was dropped. The rules sit on the device (netdev ingress and
    egress of eth0), so the loss is the link's: the sender's socket sees
    no error, as with a frame lost on the wire."""
    nft(rack, node, '''
table netdev inca_loss {
	chain in {
		type filter hook ingress device eth0 priority 0; policy accept;
		udp sport %(port)d counter comment "in_seen"
		udp sport %(port)d numgen random mod 1000 < %(k)d counter drop comment "in_drop"
	}
	chain out {
		type filter hook egress device eth0 priority 0; policy accept;
		udp dport %(port)d counter comment "out_seen"
		udp dport %(port)d numgen random mod 1000 < %(k)d counter drop comment "out_drop"
	}
}
''' % dict(port=INCA_PORT, k=permille))


def quiet_icmp(rack, node):
    """An attacker sending from addresses and ports where nothing listens
    would have its kernel answer incad's replies with ICMP port
    unreachable, which incad counts (incad/ICMP_INVALID): drop them."""
    nft(rack, node, 'table inet quiet { chain out { type filter hook output priority 0; '
        'meta l4proto icmp drop; }; }')


def add_chaos_lane(rack, node, dup_permille, delay_permille, lane_rate='40mbit'):
    """Duplication and reordering inside a worker's namespace, both ways.

    A second veth pair (ra, rb) in the namespace is a slow lane with a
    token bucket on each end: a datagram sent into it comes out a few
    packets' time later, behind datagrams that went straight. Outgoing INCA
    datagrams are copied into the lane (dup) or moved into it (delay) at
    eth0's egress and sent on from rb's ingress through eth0; incoming ones
    likewise at eth0's ingress, the lane delivering them to the stack at
    ra (which carries eth0's MAC so the stack takes them). netem is not in
    this kernel; nftables' netdev dup/fwd and tbf are."""
    ns = rack.ns(node)
    mac = json.loads(rack.run(node, ['ip', '-j', 'link', 'show', 'eth0'], capture_output=True,
                              text=True, check=True).stdout)[0]['address']
    burst = 4000
    for cmd in (['ip', 'link', 'add', 'ra', 'address', mac, 'type', 'veth', 'peer', 'name',
                 'rb'],
                ['ip', 'link', 'set', 'ra', 'up'], ['ip', 'link', 'set', 'rb', 'up'],
                ['sysctl', '-qw', 'net.ipv4.conf.all.rp_filter=0',
                 'net.ipv4.conf.ra.rp_filter=0', 'net.ipv4.conf.rb.rp_filter=0'],
                ['tc', 'qdisc', 'add', 'dev', 'ra', 'root', 'tbf', 'rate', lane_rate,
                 'burst', str(burst), 'limit', '60000'],
                ['tc', 'qdisc', 'add', 'dev', 'rb', 'root', 'tbf', 'rate', lane_rate,
                 'burst', str(burst), 'limit', '60000']):
        r = subprocess.run(['ip', 'netns', 'exec', ns] + cmd, capture_output=True, text=True)
        check(r.returncode == 0, '%s: %s: %s', ns, ' '.join(cmd), r.stderr.strip())
    sel = 'numgen random mod 1000 <'
    nft(rack, node, '''
table netdev inca_chaos {
	chain eg {
		type filter hook egress device eth0 priority 0; policy accept;
		meta mark 0x5a5a return
		udp dport %(port)d %(sel)s %(d)d meta mark set 0x5a5a counter dup to ra comment "out_dup"
		udp dport %(port)d %(sel)s %(r)d meta mark set 0x5a5a counter fwd to ra comment "out_delay"
	}
	chain lane_out {
		type filter hook ingress device rb priority 0; policy accept;
		fwd to eth0
	}
	chain ing {
		type filter hook ingress device eth0 priority 0; policy accept;
		udp sport %(port)d %(sel)s %(d)d counter dup to rb comment "in_dup"
		udp sport %(port)d %(sel)s %(r)d counter fwd to rb comment "in_delay"
	}
}
''' % dict(port=INCA_PORT, d=dup_permille, r=delay_permille, sel=sel))
