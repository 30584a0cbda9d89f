# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Run the real incad on net_pcap ports and look at what it sent.

A test writes one input pcap per port, starts incad with
--no-huge --no-pci --vdev net_pcapN,rx_pcap=IN,tx_pcap=OUT, waits (through
the telemetry socket) until incad has received every input frame, stops it
with SIGTERM and reads the output pcaps and the final statistics incad
printed. Message layouts and values are written here from
docs/protocol.md, independently of the C code.
"""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

from scapy.all import ARP, ICMP, IP, UDP, Ether, Raw, rdpcap, wrpcap  # noqa: F401 (re-exported)

INCA_PORT = 18766
HDR_FMT = '!BBBBHHIHBbIIHHI'        # struct inca_hdr, 32 bytes
CTRL_FMT = '!BBHHHHHHHIIII'         # struct inca_ctrl, 32 bytes
HDR_FIELDS = ('version', 'type', 'dtype', 'op', 'job', 'rank', 'token', 'slot',
              'flags', 'exp', 'seq', 'offset', 'count', 'reason', 'bitmap')
CTRL_FIELDS = ('ver_min', 'ver_max', 'dtypes', 'ops', 'max_elems', 'nworkers',
               'pool_size', 'window', 'caps', 'hb_ms', 'evict_ms', 'pool_base',
               'session')
assert struct.calcsize(HDR_FMT) == 32 and struct.calcsize(CTRL_FMT) == 32

# Message types, dtypes, ops, flags and NACK reasons (docs/protocol.md).
CONTRIB, RESULT, HELLO, CAPS, JOIN, JOIN_ACK, LEAVE, LEAVE_ACK = 1, 2, 3, 4, 5, 6, 7, 8
HEARTBEAT, HEARTBEAT_ACK, NACK = 9, 10, 11
INT32, FP32, FP16, BF16 = 0, 1, 2, 3
SUM, MIN, MAX = 0, 1, 2
F_SET, F_RETX, F_LAST, F_BFP = 1, 2, 4, 8
NACK_REASONS = {'BAD_VERSION': 1, 'UNKNOWN_JOB': 2, 'NOT_MEMBER': 3, 'BAD_TOKEN': 4,
                'QUOTA_EXHAUSTED': 5, 'NO_SLOTS': 6, 'JOB_FULL': 7, 'BAD_PARAMS': 8,
                'UNSUPPORTED_DTYPE': 9, 'UNSUPPORTED_OP': 10, 'TOO_LARGE': 11,
                'SHUTTING_DOWN': 12, 'EVICTED': 13, 'MEMBER_LOST': 14,
                'RATE_LIMITED': 15, 'MISMATCH': 16, 'HELD': 17}
CAP_NATIVE_FLOAT, CAP_BFP, CAP_SEQ_CHECK = 1, 2, 4

AGG_MAC = '02:00:00:00:aa:00'       # incad's MAC on port i: ...:aa:0i
AGG_IP = '10.77.0.1'                # incad's address on port i: 10.77.0.(1+i)
TOKEN = 0xC0FFEE01
VERSION = 2
# base_config() sets aggregation.session_seed, so that tests know the
# session tokens incad hands out (docs/incad.md).
SESSION_SEED = 0x5E55104E


def session(job, n=1, token=TOKEN, prev=0, seed=SESSION_SEED):
    """The session token of incarnation @n of @job (incad's new_session())."""
    s = (seed ^ ((job * 0x9E3779B1) & 0xFFFFFFFF) ^ ((n * 0x85EBCA77) & 0xFFFFFFFF))
    while s in (0, token, prev):
        s = (s + 1) & 0xFFFFFFFF
    return s


def member_secret(job, rank, n=1, seed=SESSION_SEED):
    """The member secret of @rank joining incarnation @n of @job (incad's
    new_secret() under aggregation.session_seed)."""
    s = (seed ^ ((job * 0x9E3779B1) & 0xFFFFFFFF) ^ ((n * 0x85EBCA77) & 0xFFFFFFFF) ^
         (((rank + 1) * 0xC2B2AE3D) & 0xFFFFFFFF))
    return s or 1


def agg_mac(port=0):
    return '02:00:00:00:aa:%02x' % port


def agg_ip(port=0):
    return '10.77.0.%d' % (1 + port)


def worker_mac(rank):
    return '02:00:00:00:bb:%02x' % rank


def worker_ip(rank):
    return '10.77.1.%d' % (10 + rank)


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def hdr(mtype, job=0, rank=0, token=None, slot=0, flags=0, exp=0, seq=0, offset=0,
        count=0, dtype=INT32, op=SUM, reason=0, bitmap=None, version=VERSION):
    """An INCA header; token: the job token for HELLO and JOIN, else the
    session token of the job's first incarnation, unless given; bitmap of
    a LEAVE or HEARTBEAT: the member secret of that incarnation, unless
    given."""
    if token is None:
        token = TOKEN if mtype in (HELLO, JOIN) else session(job)
    if bitmap is None:
        bitmap = member_secret(job, rank) if mtype in (LEAVE, HEARTBEAT) else 0
    return struct.pack(HDR_FMT, version, mtype, dtype, op, job, rank, token, slot, flags,
                       exp, seq, offset, count, reason, bitmap)


def ctrl(ver_min=VERSION, ver_max=VERSION, dtypes=0, ops=0, max_elems=0, nworkers=0,
         pool_size=0, window=0, caps=0, hb_ms=0, evict_ms=0, pool_base=0, session=0):
    return struct.pack(CTRL_FMT, ver_min, ver_max, dtypes, ops, max_elems, nworkers,
                       pool_size, window, caps, hb_ms, evict_ms, pool_base, session)


def udp_frame(payload, rank=0, sport=None, port=0, src_ip=None, src_mac=None,
              dst_ip=None, dport=INCA_PORT):
    """An Ethernet/IPv4/UDP frame from worker @rank to incad's port @port."""
    return (Ether(src=src_mac or worker_mac(rank), dst=agg_mac(port)) /
            IP(src=src_ip or worker_ip(rank), dst=dst_ip or agg_ip(port)) /
            UDP(sport=sport if sport is not None else 40000 + rank, dport=dport) /
            Raw(payload))


def join(job, rank, nworkers, token=TOKEN, pool_size=0, window=0, max_elems=0,
         dtypes=0, ops=0, **kw):
    return udp_frame(hdr(JOIN, job=job, rank=rank, token=token) +
                     ctrl(nworkers=nworkers, pool_size=pool_size, window=window,
                          max_elems=max_elems, dtypes=dtypes, ops=ops), rank=rank, **kw)


def contrib_msg(job, rank, values, slot=0, seq=0, flags=0, token=None, dtype=INT32, op=SUM,
                offset=0, exp=0):
    """A CONTRIB message (header and body) of @values."""
    fmt = {INT32: '!%di', FP32: '!%df', FP16: '!%de'}[dtype] % len(values)
    return hdr(CONTRIB, job=job, rank=rank, token=token, slot=slot, seq=seq, flags=flags,
               count=len(values), dtype=dtype, op=op, offset=offset,
               exp=exp) + struct.pack(fmt, *values)


def contrib(job, rank, values, slot=0, seq=0, flags=0, token=None, dtype=INT32, op=SUM,
            offset=0, exp=0, **kw):
    return udp_frame(contrib_msg(job, rank, values, slot, seq, flags, token, dtype, op,
                                 offset, exp), rank=rank, **kw)


class Msg:
    """An INCA message incad sent, with its frame."""

    def __init__(self, pkt):
        self.pkt = pkt
        raw = bytes(pkt[UDP].payload)
        check(len(raw) >= 32, 'INCA message shorter than its header')
        self.h = dict(zip(HDR_FIELDS, struct.unpack(HDR_FMT, raw[:32])))
        self.body = raw[32:]
        self.type = self.h['type']

    def __getitem__(self, k):
        return self.h[k]

    def ctrl(self):
        check(len(self.body) == 32, 'control body of %d bytes' % len(self.body))
        return dict(zip(CTRL_FIELDS, struct.unpack(CTRL_FMT, self.body)))

    def values(self, dtype=None):
        dtype = self.h['dtype'] if dtype is None else dtype
        n = self.h['count']
        fmt = {INT32: '!%di', FP32: '!%df', FP16: '!%de'}[dtype] % n
        return list(struct.unpack(fmt, self.body))

    @property
    def dst(self):
        return (self.pkt[Ether].dst, self.pkt[IP].dst, self.pkt[UDP].dport)

    def __repr__(self):
        return 'Msg(%s to %s)' % (self.h, self.dst)


def checksums_ok(pkt):
    """True when the IPv4 and UDP/ICMP checksums of @pkt are right."""
    p = Ether(bytes(pkt))
    ip_sum = p[IP].chksum
    del p[IP].chksum
    if UDP in p:
        l4, l4_sum = UDP, p[UDP].chksum
        del p[UDP].chksum
    else:
        l4, l4_sum = ICMP, p[ICMP].chksum
        del p[ICMP].chksum
    q = Ether(bytes(p))
    return q[IP].chksum == ip_sum and (q[l4].chksum == l4_sum or
                                       (l4 is UDP and l4_sum == 0))


def inca_msgs(pkts):
    return [Msg(p) for p in pkts if UDP in p and p[UDP].sport == INCA_PORT]


def base_config(nports=1, mode='aggregator', extra='', tenants=None, jobs='',
                workers=1):
    ports = ',\n'.join(
        '{ name = "p%d"; device = "net_pcap%d"; ipv4 = "%s/16"; mac = "%s"; }'
        % (i, i, agg_ip(i), agg_mac(i)) for i in range(nports))
    if tenants is None:
        tenants = ('{ name = "t1"; token = 0x%08X; job_ids = [1, 99]; slot_quota = 256; '
                   'dynamic_jobs = true; sources = ["10.77.0.0/16"]; }' % TOKEN)
    if 'aggregation' not in extra:
        extra = 'aggregation = { session_seed = 0x%08X; };\n%s' % (SESSION_SEED, extra)
    return ('mode = "%s";\nworkers = %d;\nports = (\n%s\n);\ntenants = ( %s );\n'
            'jobs = ( %s );\n%s\n' % (mode, workers, ports, tenants, jobs, extra))


def telemetry(prefix, cmd, timeout=2.0):
    """One telemetry command; None if incad does not answer (yet)."""
    path = '/var/run/dpdk/%s/dpdk_telemetry.v2' % prefix
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(timeout)
        s.connect(path)
        s.recv(16384)
        s.send(cmd.encode())
        reply = json.loads(s.recv(65536).decode())
        s.close()
    except (OSError, ValueError):
        return None
    key = cmd.split(',')[0]
    return reply.get(key)


class Run:
    """Result of one incad run."""

    def __init__(self, rc, stdout, stderr, outputs, prefix, telem):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.out = outputs            # port -> list of scapy packets
        self.prefix = prefix
        self.telemetry = telem        # what the test asked while incad ran
        self.drops = {}
        self.counters = {}
        self.nacks = {}
        self.jobs = {}
        for line in stdout.splitlines():
            m = re.match(r'drop (\S+) (\d+)$', line)
            if m:
                self.drops[m.group(1)] = int(m.group(2))
            m = re.match(r'counter (\S+) (\d+)$', line)
            if m:
                self.counters[m.group(1)] = int(m.group(2))
            m = re.match(r'nack (\S+) (\d+)$', line)
            if m:
                self.nacks[m.group(1)] = int(m.group(2))
            m = re.match(r'job (\d+): (.*)$', line)
            if m:
                self.jobs[int(m.group(1))] = m.group(2)

    def msgs(self, port=0):
        return inca_msgs(self.out[port])

    def drop(self, name):
        return self.drops.get(name, 0)

    def counter(self, name):
        return self.counters.get(name, 0)

    def total_drops(self):
        return sum(self.drops.values())


def incad_path():
    return os.environ['INCAD']


def run_incad(config, inputs, eal=(), ask=(), app=(), timeout=20.0):
    """Run incad with @config on len(@inputs) net_pcap ports.

    @inputs is a list (one per port) of lists of frames. @ask lists
    telemetry commands to send once every frame has been received.
    """
    tmp = tempfile.mkdtemp(prefix='incad-dpdk-')
    prefix = 'incadt%d_%d' % (os.getpid(), int(time.time() * 1000) % 100000)
    try:
        conf = os.path.join(tmp, 'incad.conf')
        with open(conf, 'w') as f:
            f.write(config)
        vdevs = []
        for i, frames in enumerate(inputs):
            fin = os.path.join(tmp, 'in%d.pcap' % i)
            wrpcap(fin, frames, linktype=1) if frames else _empty_pcap(fin)
            vdevs += ['--vdev', 'net_pcap%d,rx_pcap=%s,tx_pcap=%s'
                      % (i, fin, os.path.join(tmp, 'out%d.pcap' % i))]
        cmd = ([incad_path(), '--no-huge', '-m', '256', '--no-pci', '--file-prefix', prefix,
                '--log-level', 'lib.eal:warning'] + list(eal) + vdevs +
               ['--', '-c', conf] + list(app))
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        telem = {}
        try:
            want = [len(fr) for fr in inputs]
            deadline = time.monotonic() + timeout
            while True:
                if p.poll() is not None:
                    break
                ports = telemetry(prefix, '/incad/ports')
                if ports and all(ports.get('p%d' % i, {}).get('rx', -1) >= n
                                 for i, n in enumerate(want)):
                    break
                if time.monotonic() > deadline:
                    raise Fail('incad did not receive every input frame within %.0f s'
                               % timeout)
                time.sleep(0.05)
            # Every frame was handled in the loop that received it; give
            # the tx path one more moment before stopping.
            time.sleep(0.1)
            for c in ask:
                telem[c] = telemetry(prefix, c)
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=15)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        outputs = []
        for i in range(len(inputs)):
            fout = os.path.join(tmp, 'out%d.pcap' % i)
            outputs.append(list(rdpcap(fout)) if os.path.exists(fout) and
                           os.path.getsize(fout) > 24 else [])
        run = Run(p.returncode, out, err, outputs, prefix, telem)
        if p.returncode != 0:
            sys.stderr.write(err)
            raise Fail('incad exited with status %d' % p.returncode)
        return run
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree('/var/run/dpdk/%s' % prefix, ignore_errors=True)


def _empty_pcap(path):
    # Global header only: net_pcap needs a readable file.
    with open(path, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))


def main(cases):
    """Run the case named on the command line; exit 0 on success."""
    if len(sys.argv) != 3:
        sys.exit('usage: %s INCAD CASE' % sys.argv[0])
    os.environ['INCAD'] = sys.argv[1]
    name = sys.argv[2]
    if name not in cases:
        sys.exit('unknown case %s (known: %s)' % (name, ' '.join(sorted(cases))))
    try:
        cases[name]()
    except Fail as e:
        print('FAIL %s: %s' % (name, e))
        sys.exit(1)
    print('PASS %s' % name)


# RoCEv2 (docs/protocol.md, "RoCEv2 transport"): the BTH and its ICRC are
# scapy's (scapy.contrib.roce), an implementation independent of incad's;
# the DETH is written here from the spec.
ROCE_PORT = 4791
AGG_QPN, AGG_QKEY = 0x494e, 0x494e4341
UD_SEND_ONLY = 0x64
CAP_ROCE = 0x10


def _roce_layers():
    from scapy.contrib.roce import BTH
    from scapy.fields import ByteField, X3BytesField, XIntField
    from scapy.packet import Packet, bind_layers

    class DETH(Packet):
        name = 'DETH'
        fields_desc = [XIntField('qkey', 0), ByteField('resv', 0), X3BytesField('sqpn', 0)]

    bind_layers(BTH, DETH, opcode=UD_SEND_ONLY)
    return BTH, DETH


BTH, DETH = _roce_layers()


def roce_ext(qpn, qkey):
    """The 16-byte RoCEv2 extension after a JOIN's control body."""
    return struct.pack('!IIII', qpn, qkey, 0, 0)


def roce_frame(msg, rank=0, qpn=0x100, dqpn=AGG_QPN, qkey=AGG_QKEY, opcode=UD_SEND_ONLY,
               pkey=0xffff, tver=0, pad=None, psn=0, icrc=None, sport=0xc123, src_ip=None,
               src_mac=None, port=0, dst_ip=None, dst_mac=None):
    """A RoCEv2 UD SEND of INCA message @msg from worker @rank's queue pair @qpn."""
    npad = (-len(msg)) % 4 if pad is None else pad
    return (Ether(src=src_mac or worker_mac(rank), dst=dst_mac or agg_mac(port)) /
            IP(src=src_ip or worker_ip(rank), dst=dst_ip or agg_ip(port)) /
            UDP(sport=sport, dport=ROCE_PORT, chksum=0) /
            BTH(opcode=opcode, padcount=npad, version=tver, pkey=pkey, dqpn=dqpn, psn=psn,
                icrc=icrc) /
            DETH(qkey=qkey, sqpn=qpn) / Raw(msg + b'\0' * ((-len(msg)) % 4)))


def roce_icrc_ok(pkt):
    """The ICRC of @pkt is what scapy computes for it."""
    p = Ether(bytes(pkt))
    got = p[BTH].icrc
    p[BTH].icrc = None
    return Ether(bytes(p))[BTH].icrc == got


class RoceMsg(Msg):
    """An INCA message incad sent inside a RoCEv2 UD SEND."""

    def __init__(self, pkt):
        self.pkt = pkt
        self.bth = pkt[BTH]
        self.deth = pkt[DETH]
        raw = bytes(pkt[DETH].payload)
        check(len(raw) >= 32 + self.bth.padcount, 'RoCE payload shorter than a header')
        raw = raw[:len(raw) - self.bth.padcount]
        self.h = dict(zip(HDR_FIELDS, struct.unpack(HDR_FMT, raw[:32])))
        self.body = raw[32:]
        self.type = self.h['type']


def roce_msgs(pkts):
    """The INCA messages in UD SENDs among @pkts (not other RDMA traffic)."""
    return [RoceMsg(p) for p in pkts if UDP in p and p[UDP].dport == ROCE_PORT and
            BTH in p and p[BTH].opcode == UD_SEND_ONLY]
