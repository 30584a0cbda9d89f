#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Replay the INCA conformance vectors through an aggregator and compare.

incad mode: for each scenario of vectors.json, write an incad configuration
for its job and members, run the real incad on one net_pcap port
(rx_pcap = NAME.in.pcap, tx_pcap = a temporary file), wait through the
telemetry socket until it has received every input frame, stop it with
SIGTERM and compare what it sent with NAME.out.pcap.

    run_vectors.py --incad build/daemon/incad [--scenario NAME]...

compare mode: compare any capture with an expected pcap, for example what
BMv2 running p4-reference/v1model sent for NAME.p4in.pcap:

    run_vectors.py --compare NAME.p4out.pcap captured.pcap [captured2.pcap...]

Frames are compared field by field, as a multiset (the order of copies is
the aggregator's business): Ethernet addresses and type; every IPv4 field
but the identification, and a right header checksum; UDP ports, length and
a checksum that is 0 or right; every INCA header field; the body (control
bodies field by field, minus what the scenario marks as informational).
"""

import argparse
import collections
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

from scapy.all import IP, UDP, Dot1Q, Ether, rdpcap  # noqa: E402

HDR = struct.Struct('!BBBBHHIHBbIIHHI')
HDR_FIELDS = ('version', 'type', 'dtype', 'op', 'job', 'rank', 'token', 'slot', 'flags',
              'exp', 'seq', 'offset', 'count', 'reason', 'bitmap')
CTRL = struct.Struct('!BBHHHHHHHIIII')
CTRL_FIELDS = ('ver_min', 'ver_max', 'dtypes', 'ops', 'max_elems', 'nworkers', 'pool_size',
               'window', 'caps', 'hb_ms', 'evict_ms', 'pool_base', 'session')
CTRL_TYPES = (3, 4, 5, 6, 7, 8, 9, 10, 11)
TYPE_NAMES = {1: 'CONTRIB', 2: 'RESULT', 3: 'HELLO', 4: 'CAPS', 5: 'JOIN', 6: 'JOIN_ACK',
              7: 'LEAVE', 8: 'LEAVE_ACK', 9: 'HEARTBEAT', 10: 'HEARTBEAT_ACK', 11: 'NACK'}


def csum16(data):
    if len(data) % 2:
        data += b'\0'
    s = sum(struct.unpack('!%dH' % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


ROCE_PORT = 4791


def roce_icrc(ip_bytes, ihl):
    """The ICRC of a RoCEv2 IPv4 packet (its last 4 bytes excluded), written
    from docs/protocol.md: CRC-32 over 8 bytes of ones and the packet with
    TOS, TTL, the IPv4 and UDP checksums and BTH byte 4 taken as ones."""
    b = bytearray(ip_bytes[:-4])
    for off in (1, 8, 10, 11, ihl + 6, ihl + 7, ihl + 8 + 4):
        b[off] = 0xFF
    return zlib.crc32(b'\xff' * 8 + bytes(b)) & 0xFFFFFFFF


def describe_roce(ip, ip_bytes, seg, f):
    """The RoCEv2 fields of a UDP segment to port 4791, then its INCA message."""
    r = seg[8:]
    if len(r) < 24:
        return None
    bth, deth = r[:12], r[12:20]
    pad = (bth[1] >> 4) & 3
    icrc = struct.unpack('<I', r[-4:])[0]
    f += [('roce.opcode', bth[0]), ('roce.pad', pad), ('roce.tver', bth[1] & 0xF),
          ('roce.pkey', struct.unpack('!H', bth[2:4])[0]),
          ('roce.dqpn', struct.unpack('!I', bth[4:8])[0] & 0xFFFFFF),
          ('roce.psn', struct.unpack('!I', bth[8:12])[0] & 0xFFFFFF),
          ('roce.qkey', struct.unpack('!I', deth[:4])[0]),
          ('roce.sqpn', struct.unpack('!I', deth[4:8])[0] & 0xFFFFFF),
          ('roce.icrc_ok', icrc == roce_icrc(ip_bytes, ip.ihl * 4))]
    return r[20:len(r) - 4 - pad]


def describe(raw, ignore=()):
    """The comparable fields of one frame, as an ordered tuple of pairs."""
    f = []
    p = Ether(raw)
    f += [('eth.dst', p.dst), ('eth.src', p.src), ('eth.type', hex(p.type))]
    if Dot1Q in p:
        f += [('vlan.id', p[Dot1Q].vlan), ('vlan.prio', p[Dot1Q].prio),
              ('vlan.type', hex(p[Dot1Q].type))]
    if IP not in p:
        return tuple(f + [('raw', raw.hex())])
    ip = p[IP]
    ip_bytes = bytes(ip)[:ip.ihl * 4]
    f += [('ip.version', ip.version), ('ip.ihl', ip.ihl), ('ip.tos', ip.tos),
          ('ip.len', ip.len), ('ip.flags', int(ip.flags)), ('ip.frag', ip.frag),
          ('ip.ttl', ip.ttl), ('ip.proto', ip.proto), ('ip.src', ip.src), ('ip.dst', ip.dst),
          ('ip.csum_ok', csum16(ip_bytes) == 0xffff)]
    if UDP not in p:
        return tuple(f + [('ip.payload', bytes(ip.payload).hex())])
    udp = p[UDP]
    seg = bytes(udp)[:udp.len] if udp.len >= 8 else bytes(udp)
    pseudo = (bytes(map(int, ip.src.split('.'))) + bytes(map(int, ip.dst.split('.'))) +
              struct.pack('!BBH', 0, 17, len(seg)))
    udp_ok = udp.chksum == 0 or csum16(pseudo + seg) == 0xffff
    f += [('udp.sport', udp.sport), ('udp.dport', udp.dport), ('udp.len', udp.len),
          ('udp.csum_ok', udp_ok)]
    msg = seg[8:]
    if udp.dport == ROCE_PORT:
        msg = describe_roce(ip, bytes(ip)[:ip.len], seg, f)
        if msg is None:
            return tuple(f + [('udp.payload', seg[8:].hex())])
    if len(msg) < HDR.size:
        return tuple(f + [('udp.payload', msg.hex())])
    h = dict(zip(HDR_FIELDS, HDR.unpack(msg[:HDR.size])))
    f += [('inca.' + k, h[k]) for k in HDR_FIELDS]
    body = msg[HDR.size:]
    if h['type'] in CTRL_TYPES and len(body) in (CTRL.size, CTRL.size + 16):
        c = dict(zip(CTRL_FIELDS, CTRL.unpack(body[:CTRL.size])))
        f += [('ctrl.' + k, c[k]) for k in CTRL_FIELDS if 'ctrl.' + k not in ignore]
        if len(body) > CTRL.size:   # a RoCEv2 binding (JOIN, JOIN_ACK)
            f += [('roce_ext', body[CTRL.size:].hex())]
    else:
        f += [('body', body.hex())]
    return tuple(f)


def short(d):
    d = dict(d)
    return '%s to %s:%s rank %s slot %s seq %s' % (
        TYPE_NAMES.get(d.get('inca.type'), d.get('inca.type')), d.get('ip.dst'),
        d.get('udp.dport'), d.get('inca.rank'), d.get('inca.slot'), d.get('inca.seq'))


def diff(expected, actual):
    """Field-level differences between two described frames."""
    a = dict(actual)
    out = []
    for k, v in expected:
        if a.get(k) != v:
            if k == 'body':
                out.append('body differs')
            else:
                out.append('%s: expected %r, got %r' % (k, v, a.get(k)))
    return out


def compare(expected_frames, actual_frames, ignore=()):
    """List of failures; empty when the two multisets of frames agree."""
    exp = collections.Counter(describe(bytes(p), ignore) for p in expected_frames)
    act = collections.Counter(describe(bytes(p), ignore) for p in actual_frames)
    missing = list((exp - act).elements())
    extra = list((act - exp).elements())
    fails = []
    for m in missing:
        md = dict(m)
        # The closest unexplained frame: same addressee and message.
        near = [x for x in extra if all(dict(x).get(k) == md.get(k) for k in
                                        ('ip.dst', 'inca.type', 'inca.slot', 'inca.seq'))]
        if near:
            fails.append('%s: %s' % (short(m), '; '.join(diff(m, near[0]))))
            extra.remove(near[0])
        else:
            fails.append('missing: %s' % short(m))
    for x in extra:
        fails.append('unexpected: %s' % short(x))
    return fails


def telemetry(prefix, cmd):
    path = '/var/run/dpdk/%s/dpdk_telemetry.v2' % prefix
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(2.0)
        s.connect(path)
        s.recv(16384)
        s.send(cmd.encode())
        reply = json.loads(s.recv(1 << 20).decode())
        s.close()
    except (OSError, ValueError):
        return None
    return reply.get(cmd.split(',')[0])


def incad_config(agg, sc):
    """An incad configuration (docs/incad.md) holding the scenario's job."""
    j = sc['job']
    roce = ('roce = { enabled = true; qpn = 0x%06X; qkey = 0x%08X; };'
            % (sc['roce']['qpn'], sc['roce']['qkey'])) if 'roce' in sc else ''
    members = ',\n\t\t\t'.join('{ rank = %d; ipv4 = "%s"; udp_port = %d; }'
                               % (m['rank'], m['ip'], m['udp_port']) for m in sc['members'])
    return '''# incad configuration of conformance vector "%(name)s"
mode = "aggregator";
workers = 1;
idle = { policy = "adaptive"; };
aggregation = { max_elems = %(agg_max_elems)d; session_seed = 0x%(seed)08X; };
timeouts = { heartbeat_ms = %(hb)d; evict_ms = %(evict)d; };
%(roce)s
ports = (
	{ name = "p0"; device = "net_pcap0"; ipv4 = "%(agg_ip)s/16"; mac = "%(agg_mac)s"; }
);
tenants = (
	{ name = "vectors"; token = 0x%(token)08X; job_ids = [%(job)d, %(job)d];
	  dynamic_jobs = false; }
);
jobs = (
	{
		id = %(job)d;
		tenant = "vectors";
		nworkers = %(nworkers)d;
		pool_size = %(pool_size)d;
		window = %(window)d;
		max_elems = %(max_elems)d;
		dtypes = [%(dtypes)s];
		ops = [%(ops)s];
		members = (
			%(members)s
		);
	}
);
''' % {'name': sc['name'], 'max_elems': j['max_elems'],
       'agg_max_elems': j.get('agg_max_elems', j['max_elems']), 'hb': sc['timeouts']['heartbeat_ms'],
       'evict': sc['timeouts']['evict_ms'], 'agg_ip': agg['ip'], 'agg_mac': agg['mac'],
       'token': j['token'], 'job': j['id'], 'nworkers': j['nworkers'],
       'pool_size': j['pool_size'], 'window': j['window'], 'members': members,
       'seed': j['session_seed'], 'roce': roce,
       'dtypes': ', '.join('"%s"' % d for d in j.get('dtypes', ['int32'])),
       'ops': ', '.join('"%s"' % o for o in j.get('ops', ['sum']))}


def run_incad(incad, vec_dir, agg, sc, timeout):
    """Run incad on the scenario's input; return (output frames, stdout)."""
    tmp = tempfile.mkdtemp(prefix='inca-vec-')
    prefix = 'vec%d_%s' % (os.getpid(), sc['name'])
    try:
        conf = os.path.join(tmp, 'incad.conf')
        with open(conf, 'w') as f:
            f.write(incad_config(agg, sc))
        fin = os.path.join(vec_dir, sc['files']['in'])
        fout = os.path.join(tmp, 'out.pcap')
        n_in = len(rdpcap(fin))
        cmd = [incad, '--no-huge', '-m', '256', '--no-pci', '--file-prefix', prefix,
               '--log-level', 'lib.eal:warning',
               '--vdev', 'net_pcap0,rx_pcap=%s,tx_pcap=%s' % (fin, fout), '--', '-c', conf]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + timeout
            while p.poll() is None:
                ports = telemetry(prefix, '/incad/ports')
                if ports and ports.get('p0', {}).get('rx', -1) >= n_in:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError('incad did not receive the %d input frames in %d s'
                                       % (n_in, timeout))
                time.sleep(0.05)
            # Every frame is answered in the poll loop that received it;
            # leave the transmit path a moment before stopping.
            time.sleep(0.2)
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=20)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        if p.returncode != 0:
            raise RuntimeError('incad exited with status %d:\n%s' % (p.returncode, err))
        frames = list(rdpcap(fout)) if os.path.getsize(fout) > 24 else []
        return frames, out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree('/var/run/dpdk/%s' % prefix, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--incad', help='incad binary: run the scenarios through it')
    ap.add_argument('--vectors', default=os.path.dirname(os.path.abspath(__file__)),
                    help='directory of vectors.json and the pcaps')
    ap.add_argument('--scenario', action='append', help='run only these (repeatable)')
    ap.add_argument('--timeout', type=int, default=60, help='seconds per incad run')
    ap.add_argument('--compare', nargs='+', metavar='PCAP',
                    help='EXPECTED ACTUAL...: compare captures with an expected pcap')
    ap.add_argument('--ignore', action='append', default=[],
                    help='compare mode: field to leave out, e.g. ctrl.pool_base')
    args = ap.parse_args()

    if args.compare:
        if len(args.compare) < 2:
            ap.error('--compare needs EXPECTED and at least one ACTUAL pcap')
        actual = [p for path in args.compare[1:] for p in rdpcap(path)]
        fails = compare(rdpcap(args.compare[0]), actual, args.ignore)
        for f in fails:
            print('FAIL: ' + f)
        print('%d expected frames, %d captured, %d differences'
              % (len(rdpcap(args.compare[0])), len(actual), len(fails)))
        return 1 if fails else 0

    if not args.incad:
        ap.error('give --incad or --compare')
    with open(os.path.join(args.vectors, 'vectors.json')) as f:
        manifest = json.load(f)
    scenarios = manifest['scenarios']
    if args.scenario:
        known = {s['name'] for s in scenarios}
        unknown = set(args.scenario) - known
        if unknown:
            ap.error('unknown scenario(s) %s; known: %s'
                     % (' '.join(sorted(unknown)), ' '.join(sorted(known))))
        scenarios = [s for s in scenarios if s['name'] in args.scenario]
    # A switch-only scenario (a tree leaf: incad joins its parent itself,
    # which a replayed pcap cannot sequence) has no incad files.
    for sc in [s for s in scenarios if not s.get('incad', True)]:
        print('SKIP %s: switch only (%s)' % (sc['name'], sc['title']))
    scenarios = [s for s in scenarios if s.get('incad', True)]

    failed = 0
    for sc in scenarios:
        expected = rdpcap(os.path.join(args.vectors, sc['files']['out']))
        try:
            actual, stdout = run_incad(args.incad, args.vectors, manifest['aggregator'], sc,
                                       args.timeout)
            fails = compare(expected, actual, sc['ignore'])
        except RuntimeError as e:
            fails = [str(e)]
            stdout = ''
        if fails:
            failed += 1
            print('FAIL %s (%s)' % (sc['name'], sc['title']))
            for f in fails:
                print('  ' + f)
            if stdout:
                print('  incad statistics:\n    ' + stdout.strip().replace('\n', '\n    '))
        else:
            print('PASS %s: %d frames as expected (%s)' % (sc['name'], len(expected),
                                                          sc['title']))
    print('%d passed, %d failed' % (len(scenarios) - failed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
