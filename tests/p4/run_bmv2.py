#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Run the Tofino-subset conformance vectors through BMv2 simple_switch.

For each scenario: a network namespace with one veth pair (the switch's
port 1 and the workers' side), simple_switch running the compiled
p4-reference/v1model program on port 1, the scenario's job installed by
gen_commands.py through simple_switch_CLI (every member on port 1), then
every frame of NAME.p4in.pcap sent in order from the workers' side, and a
marker frame behind them that the switch forwards back by its l2 table.
The switch handles one port's frames in order and queues everything for
that port in order, so when the marker comes back every answer to the
vector's frames has been sent. What came back before it is compared with
NAME.p4out.pcap by tests/vectors/run_vectors.py's comparison.

    run_bmv2.py --json build/tests/p4/inca_v1model.json \\
        --simple-switch PREFIX/bin/simple_switch --cli PREFIX/bin/simple_switch_CLI \\
        --vectors tests/vectors [--scenario NAME]...

Needs root (namespaces) and Debian's /usr/bin/python3 (scapy, thrift).
The namespace, its interfaces and the switch are removed however the run
ends.
"""

import argparse
import importlib.util
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

from nsrig import Rig, sh

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MARKER_MAC = '02:00:00:00:ee:ee'
MARKER_TYPE = 0x88b5       # IEEE local experimental: never INCA
SWITCH_PORT = 1


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def with_vlan_tag(ctl, data, anc):
    """The frame as it was on the wire: its VLAN tag, which the kernel
    stripped into the packet's auxdata, put back after the MAC addresses."""
    tag = ctl.vlan_tag(anc)
    return data if tag is None else data[:12] + struct.pack('!HH', *tag) + data[12:]


def io_main(args):
    """Inside the namespace: send the vector's frames and the marker on
    the workers' interface, write what comes back before the marker."""
    from scapy.all import Ether, rdpcap, wrpcap
    frames = [bytes(p) for p in rdpcap(args.io_in)]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((args.iface, 0))
    # The kernel moves a received 802.1Q tag into metadata; ask for it.
    ctl = load('switch_ctl', os.path.join(ROOT, 'p4-reference', 'control', 'switch_ctl.py'))
    s.setsockopt(ctl.SOL_PACKET, ctl.PACKET_AUXDATA, 1)
    s.settimeout(0.5)
    for f in frames:
        s.send(f)
    marker = (bytes.fromhex(MARKER_MAC.replace(':', '')) + bytes.fromhex('020000000001') +
              MARKER_TYPE.to_bytes(2, 'big') + b'inca-bmv2-marker'.ljust(46, b'\0'))
    s.send(marker)
    got = []
    deadline = time.monotonic() + args.io_timeout
    while time.monotonic() < deadline:
        try:
            data, anc, _, addr = s.recvmsg(65536, socket.CMSG_SPACE(ctl.AUXDATA.size))
        except socket.timeout:
            continue
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        data = with_vlan_tag(ctl, data, anc)
        if data[12:14] == MARKER_TYPE.to_bytes(2, 'big'):
            wrpcap(args.io_out, [Ether(g) for g in got])
            print('%d frames sent, %d received before the marker' % (len(frames), len(got)))
            return 0
        got.append(data)
    wrpcap(args.io_out, [Ether(g) for g in got])
    print('the marker did not come back within %d s (%d frames received)'
          % (args.io_timeout, len(got)))
    return 2


class Switch(Rig):
    """simple_switch in its own namespace, with one veth pair."""

    def __init__(self, args, tag):
        super().__init__()
        self.args = args
        self.name = 'p4v%d%s' % (os.getpid() % 100000, tag)
        self.tmp = tempfile.mkdtemp(prefix='inca-bmv2-')
        self.proc = None

    def setup(self):
        self.ex = self.netns(self.name)
        sh(*self.ex, 'ip', 'link', 'add', 'sw1', 'type', 'veth', 'peer', 'name', 'wk1')
        for i in ('sw1', 'wk1'):
            sh(*self.ex, 'sysctl', '-qw', 'net.ipv6.conf.%s.disable_ipv6=1' % i)
            sh(*self.ex, 'ip', 'link', 'set', i, 'up')
        sh(*self.ex, 'ip', 'link', 'set', 'lo', 'up')
        self.proc = self.start('simple_switch', self.ex + [
            self.args.simple_switch, '--device-id', '0', '--thrift-port', '9090',
            '--notifications-addr', 'ipc://%s/notifications.ipc' % self.tmp,
            '-i', '%d@sw1' % SWITCH_PORT, self.args.json],
            os.path.join(self.tmp, 'switch.log'))

    def cli(self, commands):
        """Feed commands to simple_switch_CLI; retried until the switch's
        thrift server answers (bounded)."""
        cmd = self.ex + ['/usr/bin/python3', self.args.cli, '--thrift-port', '9090']
        out = ''
        for _ in range(100):
            if self.proc.poll() is not None:
                raise RuntimeError('simple_switch exited with %d: %s'
                                   % (self.proc.returncode, self.tail(self.proc)))
            r = subprocess.run(cmd, input='\n'.join(commands) + '\n', text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            out = r.stdout
            if 'Could not connect' not in out and 'TTransportException' not in out:
                break
            time.sleep(0.2)
        else:
            raise RuntimeError('simple_switch_CLI never reached the switch: %s' % out[-500:])
        bad = [ln for ln in out.splitlines()
               if 'Error' in ln or 'Invalid' in ln or 'error' in ln or 'not' in ln.split()]
        if bad:
            raise RuntimeError('simple_switch_CLI refused commands: %s' % '; '.join(bad[:5]))
        return out

    def io(self, p4in, captured):
        r = subprocess.run(self.ex + ['/usr/bin/python3', os.path.abspath(__file__),
                                      '--io-in', p4in, '--io-out', captured, '--iface', 'wk1',
                                      '--io-timeout', str(self.args.timeout)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return r.returncode, r.stdout.strip()

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def run_scenario(args, gen, rv, manifest, sc, tag):
    agg = manifest['aggregator']
    j = sc['job']
    members = [dict(m, switch_port=SWITCH_PORT) for m in sc['members']]
    # A tree leaf's parent is behind port 1 too: one port keeps the order.
    parent = dict(sc['parent'], switch_port=SWITCH_PORT) if 'parent' in sc else None
    cmds = gen.commands(j['id'], j.get('session') or j['token'], members, agg['ip'],
                        agg['mac'], j['pool_size'], j['elems'], parent=parent)
    cmds.append('table_add IncaIngress.l2 IncaIngress.l2_forward %s => %d'
                % (MARKER_MAC, SWITCH_PORT))
    with tempfile.TemporaryDirectory(prefix='inca-bmv2-') as tmp, Switch(args, tag) as sw:
        sw.cli(cmds)
        captured = os.path.join(tmp, 'captured.pcap')
        rc, out = sw.io(os.path.join(args.vectors, sc['files']['p4_in']), captured)
        if rc != 0:
            return ['%s (switch log: %s)' % (out, sw.tail(sw.proc))]
        from scapy.all import rdpcap
        expected = rdpcap(os.path.join(args.vectors, sc['files']['p4_out']))
        return rv.compare(expected, rdpcap(captured), sc['ignore'])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--json', help='inca_v1model.json compiled by p4c-bm2-ss')
    ap.add_argument('--simple-switch', help='BMv2 simple_switch')
    ap.add_argument('--cli', help='BMv2 simple_switch_CLI (run with /usr/bin/python3)')
    ap.add_argument('--vectors', default=os.path.join(ROOT, 'tests', 'vectors'))
    ap.add_argument('--scenario', action='append', help='only these (repeatable)')
    ap.add_argument('--timeout', type=int, default=60,
                    help='seconds to wait for the marker frame')
    ap.add_argument('--io-in', help=argparse.SUPPRESS)
    ap.add_argument('--io-out', help=argparse.SUPPRESS)
    ap.add_argument('--io-timeout', type=int, default=60, help=argparse.SUPPRESS)
    ap.add_argument('--iface', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.io_in:
        return io_main(args)
    if not (args.json and args.simple_switch and args.cli):
        ap.error('give --json, --simple-switch and --cli')
    if os.geteuid() != 0:
        print('run_bmv2.py needs root for its network namespace')
        return 1

    gen = load('gen_commands', os.path.join(ROOT, 'p4-reference', 'v1model',
                                            'gen_commands.py'))
    rv = load('run_vectors', os.path.join(ROOT, 'tests', 'vectors', 'run_vectors.py'))
    with open(os.path.join(args.vectors, 'vectors.json')) as f:
        manifest = json.load(f)
    scenarios = [s for s in manifest['scenarios'] if s['tofino']]
    if args.scenario:
        unknown = set(args.scenario) - {s['name'] for s in scenarios}
        if unknown:
            ap.error('not Tofino-subset scenarios: %s' % ' '.join(sorted(unknown)))
        scenarios = [s for s in scenarios if s['name'] in args.scenario]

    failed = 0
    for i, sc in enumerate(scenarios):
        try:
            fails = run_scenario(args, gen, rv, manifest, sc, 'x%d' % i)
        except (RuntimeError, subprocess.CalledProcessError) as e:
            fails = [str(e) + (' ' + e.stdout if getattr(e, 'stdout', None) else '')]
        if fails:
            failed += 1
            print('FAIL %s (%s)' % (sc['name'], sc['title']))
            for f in fails:
                print('  ' + f)
        else:
            print('PASS %s on BMv2 (%s)' % (sc['name'], sc['title']))
    print('%d passed, %d failed' % (len(scenarios) - failed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
