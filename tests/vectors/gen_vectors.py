#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Generate the INCA conformance vectors from the protocol specification.

For every scenario this writes NAME.in.pcap (the frames workers send to the
aggregator, in order) and NAME.out.pcap (every frame a correct aggregator
sends back, in any order), plus vectors.json, which describes each
scenario's job, members and aggregator so that a runner can configure the
aggregator under test. Scenarios in the Tofino subset (int32 SUM, 64 or 256
elements, static membership, no control messages) also get NAME.p4in.pcap
and NAME.p4out.pcap: the same frames without the JOIN exchange, for a
switch whose control plane installs the members (p4-reference/README.md).
A scenario only a switch can replay (leaf_partial: a tree leaf, which incad
only becomes by joining its parent itself, over time) has only those two,
and "incad": false in vectors.json.

Everything here is written from docs/protocol.md: message layouts, the slot
and shadow-set rules, and the expected sums, which are computed from the
contributions each scenario records (wrapping modulo 2^32), never by running
INCA code. Output is deterministic: `gen_vectors.py --check DIR` regenerates
into a temporary directory and fails unless the committed files are equal.

Usage: gen_vectors.py [--out DIR] | --check DIR
"""

import argparse
import filecmp
import json
import os
import random
import shutil
import struct
import sys
import tempfile

from scapy.all import IP, UDP, Dot1Q, Ether, Raw  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402
from scapy.fields import ByteField, X3BytesField, XIntField  # noqa: E402
from scapy.packet import Packet, bind_layers  # noqa: E402
from scapy.utils import PcapWriter  # noqa: E402

# ---- Wire format (docs/protocol.md, "Header" and "Control body") ----

HDR = struct.Struct('!BBBBHHIHBbIIHHI')     # 32 bytes
CTRL = struct.Struct('!BBHHHHHHHIIII')      # 32 bytes
assert HDR.size == 32 and CTRL.size == 32

VERSION = 2
INCA_PORT = 18766
CONTRIB, RESULT, HELLO, CAPS, JOIN, JOIN_ACK, LEAVE, LEAVE_ACK = 1, 2, 3, 4, 5, 6, 7, 8
NACK = 11
NACK_TOO_LARGE, NACK_MEMBER_LOST, NACK_MISMATCH = 11, 14, 16
INT32, INT64, FP64 = 0, 4, 5
SUM, MIN, MAX = 0, 1, 2
DTYPE_NAMES = {INT32: 'int32', INT64: 'int64', FP64: 'fp64'}
OP_NAMES = {SUM: 'sum', MIN: 'min', MAX: 'max'}
CANON_NAN64 = 0x7FF8000000000000
F_SET, F_RETX, F_LAST, F_BFP = 0x01, 0x02, 0x04, 0x08
F_ROUTED, F_GATHER, F_BRIEF = 0x10, 0x20, 0x40
CAP_NATIVE_FLOAT, CAP_BFP, CAP_SEQ_CHECK, CAP_ROCE, CAP_ROUTED = 1, 2, 4, 0x10, 0x20

# RoCEv2 (docs/protocol.md, "RoCEv2 transport"): UD SEND only; the BTH and
# its ICRC are scapy's, the DETH is written here from the spec.
ROCE_PORT = 4791
UD_SEND_ONLY = 0x64


class DETH(Packet):
    name = 'DETH'
    fields_desc = [XIntField('qkey', 0), ByteField('resv', 0), X3BytesField('sqpn', 0)]


bind_layers(BTH, DETH, opcode=UD_SEND_ONLY)

# ---- The test network ----

AGG = {'ip': '10.77.0.1', 'mac': '02:00:00:00:aa:00', 'udp_port': INCA_PORT}
# The parent aggregator of a tree leaf (docs/protocol.md, "Aggregation trees").
PARENT = {'ip': '10.77.0.100', 'mac': '02:00:00:00:cc:00', 'udp_port': INCA_PORT,
          'switch_port': 1}
# The aggregator's queue pair and Q_Key for RoCE members (incad: roce.qpn,
# roce.qkey; the runner configures them).
AGG_ROCE = {'qpn': 0x00494E, 'qkey': 0x494E4341}
TIMEOUTS = {'heartbeat_ms': 1000, 'evict_ms': 600000}
# incad advertises every capability (docs/protocol.md, "Capability bits").
INCAD_CAPS = CAP_NATIVE_FLOAT | CAP_BFP | CAP_SEQ_CHECK | CAP_ROUTED
T0 = 1767225600  # pcap timestamps: fixed, so the files are reproducible
# The session token of a job's incarnation is the aggregator's choice
# (docs/protocol.md, "Sessions"); the vectors fix it, and a runner sets up
# the aggregator to choose the same: incad with aggregation.session_seed
# (docs/incad.md), a switch's control plane by writing it.
SESSION_SEED = 0x5E55104E


def session_token(job, n, token, prev=0):
    """incad's session token of incarnation n of a job under SESSION_SEED."""
    s = SESSION_SEED ^ ((job * 0x9E3779B1) & 0xFFFFFFFF) ^ ((n * 0x85EBCA77) & 0xFFFFFFFF)
    while s in (0, token, prev):
        s = (s + 1) & 0xFFFFFFFF
    return s


def member_secret(job, rank, n):
    """incad's member secret of @rank joining incarnation n of a job under
    SESSION_SEED (docs/protocol.md, "Member secrets": the aggregator's
    choice, fixed here as for the session)."""
    s = (SESSION_SEED ^ ((job * 0x9E3779B1) & 0xFFFFFFFF) ^ ((n * 0x85EBCA77) & 0xFFFFFFFF) ^
         (((rank + 1) * 0xC2B2AE3D) & 0xFFFFFFFF))
    return s or 1


def member(rank):
    return {'rank': rank, 'ip': '10.77.1.%d' % (10 + rank),
            'mac': '02:00:00:00:bb:%02x' % rank, 'udp_port': 40000 + rank,
            'switch_port': 1 + rank, 'vlan': 0}


def roce_member(rank):
    """A member whose NIC speaks RoCEv2: its UD queue pair and Q_Key."""
    m = member(rank)
    m['roce'] = {'qpn': 0x000200 + rank, 'qkey': 0x00001000 + rank}
    return m


def s32(v):
    """Two's complement int32 of an integer (wrapping modulo 2^32)."""
    v &= 0xffffffff
    return v - (1 << 32) if v & 0x80000000 else v


def s64(v):
    """Two's complement int64 of an integer (wrapping modulo 2^64)."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def f64_bits(x):
    return struct.unpack('!Q', struct.pack('!d', x))[0]


def bits_f64(u):
    return struct.unpack('!d', struct.pack('!Q', u))[0]


def is_nan64(u):
    return (u & ~(1 << 63)) > 0x7FF0000000000000


def f64_key(u):
    """binary64 bits to an integer in the total order, -0 below +0."""
    return -(u & ~(1 << 63)) - 1 if u >> 63 else u


def combine(dtype, op, elems):
    """One result element from the contributions' elements, in arrival
    order (docs/protocol.md, "Semantics"): int32 and int64 wrap, fp64 sums
    in order rounded to nearest even (Python's float), NaN wins and is the
    canonical one, min/max in the total order."""
    if dtype in (INT32, INT64):
        wrap = s32 if dtype == INT32 else s64
        return wrap(sum(elems)) if op == SUM else (min(elems) if op == MIN else max(elems))
    if any(is_nan64(u) for u in elems):
        return CANON_NAN64
    if op == SUM:
        acc = bits_f64(elems[0])
        for u in elems[1:]:
            acc += bits_f64(u)
        return CANON_NAN64 if acc != acc else f64_bits(acc)
    pick = min if op == MIN else max
    return pick(elems, key=f64_key)


def pack_elems(dtype, values):
    return struct.pack('!%d%s' % (len(values), {INT32: 'i', INT64: 'q', FP64: 'Q'}[dtype]),
                       *values)


def frame(src_mac, dst_mac, src_ip, dst_ip, sport, dport, payload, vlan=0):
    """Ethernet [/ 802.1Q VLAN] / IPv4 (TTL 64, DF, id 0) / UDP with checksums."""
    eth = Ether(src=src_mac, dst=dst_mac)
    if vlan:
        eth = eth / Dot1Q(vlan=vlan)
    return (eth / IP(src=src_ip, dst=dst_ip, ttl=64, flags='DF', id=0) /
            UDP(sport=sport, dport=dport) / Raw(payload))


def roce_frame(src_mac, dst_mac, src_ip, dst_ip, sport, msg, dqpn, qkey, sqpn):
    """Ethernet / IPv4 (TTL 64, DF, id 0) / UDP to 4791 (checksum 0) / BTH
    (UD SEND only, PSN = the low 24 bits of a data message's seq) / DETH /
    the INCA message, padded to whole words / ICRC."""
    mtype, seq = msg[1], struct.unpack('!I', msg[16:20])[0]
    psn = seq & 0xFFFFFF if mtype in (CONTRIB, RESULT) else 0
    pad = (-len(msg)) % 4
    return (Ether(src=src_mac, dst=dst_mac) /
            IP(src=src_ip, dst=dst_ip, ttl=64, flags='DF', id=0) /
            UDP(sport=sport, dport=ROCE_PORT, chksum=0) /
            BTH(opcode=UD_SEND_ONLY, padcount=pad, pkey=0xFFFF, dqpn=dqpn, psn=psn) /
            DETH(qkey=qkey, sqpn=sqpn) / Raw(msg + b'\0' * pad))


def hdr(mtype, job, rank, token, slot=0, flags=0, exp=0, seq=0, offset=0, count=0,
        dtype=INT32, op=SUM, reason=0, bitmap=0):
    return HDR.pack(VERSION, mtype, dtype, op, job, rank, token, slot, flags, exp, seq,
                    offset, count, reason, bitmap)


def ctrl(ver_min=VERSION, ver_max=VERSION, dtypes=0, ops=0, max_elems=0, nworkers=0,
         pool_size=0, window=0, caps=0, hb_ms=0, evict_ms=0, pool_base=0, session=0):
    return CTRL.pack(ver_min, ver_max, dtypes, ops, max_elems, nworkers, pool_size, window,
                     caps, hb_ms, evict_ms, pool_base, session)


class Scenario:
    """A job, the frames its workers send and what the aggregator must send."""

    def __init__(self, name, title, tofino, nworkers, pool_size, window, elems, job=7,
                 token=0xC0FFEE01, roce_ranks=(), incad=True, dtypes=(INT32,), ops=(SUM,)):
        self.name = name
        self.title = title
        self.tofino = tofino
        self.incad = incad    # False: only a switch can replay it (no in/out pcaps)
        self.parent = None    # a tree leaf's parent (leaf())
        self.final = {}       # chunk k -> (sums, exp) of the parent's RESULT
        self.job = {'id': job, 'token': token, 'nworkers': nworkers,
                    'pool_size': pool_size, 'window': window, 'max_elems': 256,
                    'elems': elems, 'session_seed': SESSION_SEED,
                    'session': session_token(job, 1, token)}
        if tuple(dtypes) != (INT32,) or tuple(ops) != (SUM,):
            # The job's configuration (run_vectors.py), only where not int32 sum.
            self.job['dtypes'] = [DTYPE_NAMES[d] for d in dtypes]
            self.job['ops'] = [OP_NAMES[o] for o in ops]
        self.dtypes = sum(1 << d for d in dtypes)
        self.ops = sum(1 << o for o in ops)
        self.kind = {}        # chunk k -> (dtype, op) where not int32 sum
        self.members = [roce_member(r) if r in roce_ranks else member(r)
                        for r in range(nworkers)]
        self.roce = bool(roce_ranks)
        self.inputs = []      # (frame, in the Tofino subset)
        self.outputs = []     # (frame, sent by incad, sent by a switch)
        self.counted = {}     # chunk k -> {rank: (values, exp)} the aggregator counted
        self.flags = {}       # chunk k -> SET | LAST | BFP | ROUTED | GATHER of its first copy
        self.roots = {}       # chunk k -> the root of a routed chunk
        self.rng = random.Random(name)
        self.ignore = []
        self.incarnation = 1  # of the job, for the member secrets
        self.secrets = {}     # rank -> the secret of its JOIN_ACK

    # -- chunk numbering (docs/protocol.md, "Worker mapping and window") --

    def slot(self, k):
        return k % self.job['pool_size']

    def set_flag(self, k):
        return F_SET if (k // self.job['pool_size']) % 2 else 0

    def values(self):
        """One chunk of one worker: int32 values that make sums wrap."""
        n = self.job['elems']
        return [s32(self.rng.getrandbits(32)) if i % 4 == 0 else
                self.rng.randint(-1000, 1000) for i in range(n)]

    # -- frames from workers --

    def join(self, rank):
        """JOIN (static job, defaults asked) and the JOIN_ACK it earns."""
        m, j = self.members[rank], self.job
        body = ctrl(dtypes=self.dtypes, ops=self.ops, nworkers=j['nworkers'])
        if 'roce' in m:     # the binding of its queue pair
            body += struct.pack('!IIII', m['roce']['qpn'], m['roce']['qkey'], 0, 0)
        self.inputs.append((frame(m['mac'], AGG['mac'], m['ip'], AGG['ip'], m['udp_port'],
                                  INCA_PORT, hdr(JOIN, j['id'], rank, j['token']) + body,
                                  m['vlan']), False))
        # JOIN_ACK: the JOIN's header, the job's grants (pool_base is the
        # aggregator's business: informational, not compared).
        ack = ctrl(dtypes=self.dtypes, ops=self.ops, max_elems=j['max_elems'],
                   nworkers=j['nworkers'], pool_size=j['pool_size'], window=j['window'],
                   caps=INCAD_CAPS | (CAP_ROCE if self.roce else 0),
                   hb_ms=TIMEOUTS['heartbeat_ms'], evict_ms=TIMEOUTS['evict_ms'])
        ack = ack[:28] + struct.pack('!I', j['session'])
        if 'roce' in m:     # the aggregator's queue pair and Q_Key
            ack += struct.pack('!IIII', AGG_ROCE['qpn'], AGG_ROCE['qkey'], 0, 0)
        # A repeated JOIN of the same incarnation gets the same secret.
        secret = member_secret(j['id'], rank, self.incarnation)
        self.secrets[rank] = secret
        self.expect_frame(rank, hdr(JOIN_ACK, j['id'], rank, j['token'], bitmap=secret) + ack,
                          'incad')
        if 'ctrl.pool_base' not in self.ignore:
            self.ignore.append('ctrl.pool_base')

    def contrib(self, rank, k, values=None, exp=0, flags=0, counted=True, token=None,
                src=None, root=None, gather=False, anon=False, dtype=INT32, op=SUM):
        """CONTRIB of chunk k from rank. counted: the aggregator must count
        it (False for copies the rules drop: duplicates, replays, forgeries).
        src: (mac, ip, udp_port[, vlan]) to forge the source. root: a routed
        chunk's root (docs/protocol.md, "Routed chunks"), gathered from it
        with gather: then another rank's CONTRIB is BRIEF (no body), which
        adds nothing to the result. anon: the anonymous root of a tree
        (bitmap 0, "Routed chunks in a tree"): the root is no member here;
        BRIEF when gathered."""
        m, j = self.members[rank] if rank < len(self.members) else member(rank), self.job
        bitmap, brief = 0, False
        if root is not None or anon:
            flags |= F_ROUTED | (F_GATHER if gather else 0)
            bitmap = 0 if anon else 1 << root
            brief = gather and (anon or rank != root)
            if brief:
                flags |= F_BRIEF
                values = [0] * j['elems']
        if values is None:
            values = self.values()
        if (dtype, op) != (INT32, SUM):
            self.kind.setdefault(k, (dtype, op))
        if counted:
            assert rank not in self.counted.setdefault(k, {}), 'counted twice'
            self.counted[k][rank] = (values, exp)
            self.flags.setdefault(k, (flags & (F_LAST | F_BFP | F_ROUTED | F_GATHER)) |
                                  self.set_flag(k))
            if root is not None:
                self.roots.setdefault(k, root)
        mac, ip, port, vlan = (tuple(src) + (0,))[:4] if src else (m['mac'], m['ip'],
                                                                    m['udp_port'], m['vlan'])
        body = b'' if brief else pack_elems(dtype, values)
        h = hdr(CONTRIB, j['id'], rank, j['session'] if token is None else token,
                slot=self.slot(k), flags=flags | self.set_flag(k), exp=exp, seq=k,
                offset=k * j['elems'], count=len(values), bitmap=bitmap, dtype=dtype, op=op)
        if 'roce' in m and src is None:
            # The NIC picks the UDP source port; the queue pair is the member.
            self.inputs.append((roce_frame(mac, AGG['mac'], ip, AGG['ip'], 0xC100 + rank,
                                           h + body, AGG_ROCE['qpn'], AGG_ROCE['qkey'],
                                           m['roce']['qpn']), False))
        else:
            self.inputs.append((frame(mac, AGG['mac'], ip, AGG['ip'], port, INCA_PORT,
                                      h + body, vlan), True))
        return values

    # -- what the aggregator sends --

    def expect_frame(self, rank, payload, by):
        """A frame the aggregator sends to rank; by: 'both' when incad and a
        switch running p4-reference send it, else 'incad' or 'switch'
        (where the Tofino subset differs from incad, docs/protocol.md)."""
        m = self.members[rank]
        if 'roce' in m and payload[1] in (RESULT, NACK):
            # Data answers to a RoCE member: a UD SEND to its queue pair.
            q = m['roce']['qpn']
            f = roce_frame(AGG['mac'], m['mac'], AGG['ip'], m['ip'],
                           0xC000 | ((AGG_ROCE['qpn'] ^ q) & 0x3FFF), payload, q,
                           m['roce']['qkey'], AGG_ROCE['qpn'])
            self.outputs.append((f, by in ('both', 'incad'), False))
            return
        self.outputs.append((frame(AGG['mac'], m['mac'], AGG['ip'], m['ip'], INCA_PORT,
                                   m['udp_port'], payload, m['vlan']), by in ('both', 'incad'),
                             by in ('both', 'switch')))

    def sums(self, k):
        """(wrapped sums, maximum exp) of what was counted for chunk k."""
        j, got = self.job, self.counted[k]
        assert len(got) == j['nworkers'], 'chunk %d is not complete' % k
        dtype, op = self.kind.get(k, (INT32, SUM))
        # dicts keep insertion order: the order in which the ranks counted.
        return ([combine(dtype, op, [v[i] for v, _ in got.values()])
                 for i in range(j['elems'])], max(e for _, e in got.values()))

    def result(self, k, to=None, replay=False, by='both'):
        """The RESULT of chunk k: the wrapped sum of what was counted (on a
        tree leaf: the parent's sum), to every member (complete) or to one
        rank (replay, with RETX); by as for expect_frame. A routed chunk's
        elements go only where its route says; the others get it BRIEF."""
        j, got = self.job, self.counted[k]
        sums, exp = self.final[k] if k in self.final else self.sums(k)
        bitmap = sum(1 << r for r in got)
        flags = self.flags[k] | (F_RETX if replay else 0)
        dtype, op = self.kind.get(k, (INT32, SUM))
        body = pack_elems(dtype, sums)
        for r in ([to] if to is not None else range(j['nworkers'])):
            full = True
            if flags & F_ROUTED:
                full = (r != self.roots[k]) if flags & F_GATHER else (r == self.roots[k])
            h = hdr(RESULT, j['id'], r, j['session'], slot=self.slot(k),
                    flags=flags | (0 if full else F_BRIEF), exp=exp, seq=k,
                    offset=k * j['elems'], count=j['elems'], bitmap=bitmap, dtype=dtype, op=op)
            self.expect_frame(r, h + (body if full else b''), by)

    # -- a tree leaf (docs/protocol.md, "Aggregation trees") --

    def leaf(self, job, rank, nworkers, token):
        """Make the aggregator a leaf: rank @rank of job @job (of @nworkers
        leaves, job token @token) at the parent PARENT, joined in the
        parent's first incarnation."""
        self.parent = dict(PARENT, job=job, rank=rank, nworkers=nworkers, token=token,
                           session=session_token(job, 1, token))

    def partial(self, k, retx=False, by='switch'):
        """The leaf's partial of chunk k to its parent: one CONTRIB in the
        parent's job as the leaf's rank, under the parent's session, with
        the chunk's slot, flags, seq, offset and count, exp = the maximum."""
        p, j = self.parent, self.job
        sums, exp = self.sums(k)
        h = hdr(CONTRIB, p['job'], p['rank'], p['session'], slot=self.slot(k),
                flags=self.flags[k] | (F_RETX if retx else 0), exp=exp, seq=k,
                offset=k * j['elems'], count=j['elems'])
        body = struct.pack('!%di' % len(sums), *sums)
        self.outputs.append((frame(AGG['mac'], p['mac'], AGG['ip'], p['ip'], INCA_PORT,
                                   p['udp_port'], h + body), by in ('both', 'incad'),
                             by in ('both', 'switch')))

    def parent_result(self, k, seq=None, token=None, retx=False, other_exp=0,
                      counted=True):
        """The parent's RESULT of chunk k to this leaf: its partial plus
        another leaf's (made up here), exp the maximum of both. counted: the
        leaf must take it (its set of k is PARTIAL); else it is a copy the
        leaf drops (a duplicate, another seq or session, a set not
        PARTIAL). seq, token: to forge a stale one."""
        p, j = self.parent, self.job
        other = self.values()
        if len(self.counted.get(k, {})) == j['nworkers']:
            mine, exp = self.sums(k)
            flags = self.flags[k]
        else:
            mine, exp, flags = [0] * j['elems'], 0, self.set_flag(k)
        sums = [s32(a + b) for a, b in zip(mine, other)]
        exp = max(exp, other_exp)
        if counted:
            assert k not in self.final, 'chunk %d completed twice' % k
            self.final[k] = (sums, exp)
        seq = k if seq is None else seq
        h = hdr(RESULT, p['job'], p['rank'], p['session'] if token is None else token,
                slot=self.slot(k), flags=flags | (F_RETX if retx else 0), exp=exp, seq=seq,
                offset=k * j['elems'], count=j['elems'],
                bitmap=(1 << p['nworkers']) - 1)
        self.inputs.append((frame(p['mac'], AGG['mac'], p['ip'], AGG['ip'], p['udp_port'],
                                  INCA_PORT, h + struct.pack('!%di' % len(sums), *sums)),
                            True))

    def leave(self, rank, token=None):
        """LEAVE with the session (or @token) and its LEAVE_ACK; a LEAVE of a
        member ends the incarnation: the next one has a new session."""
        m, j = self.members[rank], self.job
        tok = j['session'] if token is None else token
        self.inputs.append((frame(m['mac'], AGG['mac'], m['ip'], AGG['ip'], m['udp_port'],
                                  INCA_PORT, hdr(LEAVE, j['id'], rank, tok,
                                                 bitmap=self.secrets[rank]), m['vlan']),
                            False))
        self.expect_frame(rank, hdr(LEAVE_ACK, j['id'], rank, tok), 'incad')

    def nack(self, to, k, reason, token, flags=0, offset=None):
        """A NACK answering a CONTRIB of chunk k: the header echoes its job,
        slot, flags, seq, offset and token, with the addressee's rank."""
        j = self.job
        self.expect_frame(to, hdr(NACK, j['id'], to, token, slot=self.slot(k),
                                  flags=flags | self.set_flag(k), seq=k,
                                  offset=k * j['elems'] if offset is None else offset,
                                  reason=reason), 'incad')

    def manifest(self):
        files = {'in': self.name + '.in.pcap', 'out': self.name + '.out.pcap'} \
            if self.incad else {}
        if self.tofino:
            files.update({'p4_in': self.name + '.p4in.pcap',
                          'p4_out': self.name + '.p4out.pcap'})
        d = {'name': self.name, 'title': self.title, 'tofino': self.tofino,
             'job': self.job, 'members': self.members, 'timeouts': TIMEOUTS,
             'files': files, 'ignore': self.ignore}
        if self.roce:
            d['roce'] = AGG_ROCE
        if not self.incad:
            d['incad'] = False
        if self.parent:
            d['parent'] = self.parent
        return d


# ---- Scenarios ----

def join_static():
    s = Scenario('join_static', 'JOIN/JOIN_ACK for a static job; a repeated JOIN gets the '
                 'same JOIN_ACK', tofino=False, nworkers=2, pool_size=16, window=8, elems=64)
    s.join(0)
    s.join(1)
    s.join(0)   # idempotent: the same JOIN_ACK again
    return s


def sum2():
    s = Scenario('sum2', '2 workers, int32 SUM of 64-element chunks across a pool '
                 'wraparound; LAST copied into the RESULT', tofino=True, nworkers=2,
                 pool_size=4, window=4, elems=64)
    s.join(0)
    s.join(1)
    for k in range(4):          # rank 0 fills its window
        s.contrib(0, k)
    for k in (1, 0, 3, 2):      # rank 1 completes them out of order
        s.contrib(1, k)
        s.result(k)
    for k in (4, 5):            # set 1 of slots 0 and 1
        flags = F_LAST if k == 5 else 0
        s.contrib(1, k, flags=flags)
        s.contrib(0, k, flags=flags)
        s.result(k)
    return s


def sum4_bfp():
    s = Scenario('sum4_bfp', '4 workers, int32 SUM with BFP: exp of the RESULT is the '
                 'maximum of the signed exps', tofino=True, nworkers=4, pool_size=8,
                 window=8, elems=64)
    for r in range(4):
        s.join(r)
    exps = {0: (-3, 5, -128, 0), 1: (2, -7, 1, 2), 2: (-20, -9, -30, -10)}
    orders = {0: (0, 1, 2, 3), 1: (3, 1, 0, 2), 2: (2, 3, 1, 0)}
    for k in range(3):
        for r in orders[k]:
            s.contrib(r, k, exp=exps[k][r], flags=F_BFP)
        s.result(k)
    return s


def sum2_large():
    s = Scenario('sum2_large', '2 workers, int32 SUM of 256-element chunks (the large '
                 'switch class), set 1 of a slot reused', tofino=True, nworkers=2,
                 pool_size=2, window=2, elems=256)
    s.join(0)
    s.join(1)
    for k in range(2):
        s.contrib(0, k)
        s.contrib(1, k)
        s.result(k)
    s.contrib(1, 2)
    s.contrib(0, 2)
    s.result(2)
    return s


def replay():
    s = Scenario('replay', 'a retransmission into a complete set gets the RESULT, with '
                 'RETX, to its sender only; a retransmission that completes a set does not',
                 tofino=True, nworkers=2, pool_size=4, window=4, elems=64)
    s.join(0)
    s.join(1)
    v0 = s.contrib(0, 0)
    v1 = s.contrib(1, 0)
    s.result(0)
    s.contrib(1, 0, values=v1, flags=F_RETX, counted=False)   # lost its RESULT
    s.result(0, to=1, replay=True)
    s.contrib(0, 0, values=v0, flags=F_RETX, counted=False)
    s.result(0, to=0, replay=True)
    s.contrib(0, 1)
    # Rank 1's first copy of chunk 1 was lost; the retransmission counts.
    s.contrib(1, 1, flags=F_RETX)
    s.result(1)
    return s


def duplicate():
    s = Scenario('duplicate', 'duplicates while a set fills are dropped: counted once',
                 tofino=True, nworkers=3, pool_size=4, window=4, elems=64)
    for r in range(3):
        s.join(r)
    v0 = s.contrib(0, 0)
    s.contrib(0, 0, values=v0, flags=F_RETX, counted=False)
    v1 = s.contrib(1, 0)
    s.contrib(0, 0, values=v0, flags=F_RETX, counted=False)
    s.contrib(1, 0, values=v1, counted=False)
    s.contrib(2, 0)
    s.result(0)
    return s


def wraparound():
    s = Scenario('wraparound', 'pool of 2 slots, window 2: both shadow sets of each slot '
                 'reused twice, the other set emptied by rule 6; replay after reuse',
                 tofino=True, nworkers=2, pool_size=2, window=2, elems=64)
    s.join(0)
    s.join(1)
    base = {0: 0, 1: 0}
    sent = {0: 0, 1: 0}
    done = set()
    # Rank 1 lags: it sends one chunk per round, rank 0 fills its window;
    # each worker sends chunk j only while j < base + window.
    while len(done) < 8:
        for r, burst in ((0, 2), (1, 1)):
            for _ in range(burst):
                k = sent[r]
                if k < 8 and k < base[r] + s.job['window']:
                    s.contrib(r, k)
                    sent[r] += 1
                    if len(s.counted[k]) == 2:
                        s.result(k)
                        done.add(k)
        for r in (0, 1):
            while base[r] in done:
                base[r] += 1
    last = s.counted[7][0][0]
    s.contrib(0, 7, values=last, flags=F_RETX, counted=False)
    s.result(7, to=0, replay=True)
    return s


def non_member():
    s = Scenario('non_member', 'CONTRIBs from outside the job (other address, other UDP '
                 'port, rank beyond nworkers) are dropped silently and never counted',
                 tofino=True, nworkers=2, pool_size=4, window=4, elems=64)
    s.join(0)
    s.join(1)
    m0 = s.members[0]
    s.contrib(0, 0, counted=False, src=('02:00:00:00:bb:63', '10.77.1.99', 40000))
    s.contrib(0, 0, counted=False, src=(m0['mac'], m0['ip'], m0['udp_port'] + 100))
    s.contrib(1, 0)
    s.contrib(5, 0, counted=False, src=('02:00:00:00:bb:05', '10.77.1.15', 40005))
    s.contrib(0, 0, counted=False, src=(s.members[1]['mac'], s.members[1]['ip'],
                                        s.members[1]['udp_port']))
    s.contrib(0, 0)
    s.result(0)
    return s


def bad_token():
    s = Scenario('bad_token', 'CONTRIBs with a wrong token are dropped silently and never '
                 'counted', tofino=True, nworkers=2, pool_size=4, window=4, elems=64)
    s.join(0)
    s.join(1)
    s.contrib(0, 0, token=0xC0FFEE02, counted=False)
    s.contrib(0, 0)
    s.contrib(1, 0, token=0, counted=False)
    s.contrib(1, 0)
    s.result(0)
    return s


def late_copy_steps(s):
    """Chunk 0 complete, chunk P filling; a late copy of rank 0's chunk 0
    and rank 0's retransmission of P arrive before rank 2's P completes it.
    Returns each rank's values of chunk 0."""
    for r in range(3):
        s.join(r)
    p = s.job['pool_size']
    v = {r: s.contrib(r, 0) for r in range(3)}
    s.result(0)
    s.contrib(0, p)
    s.contrib(1, p)
    # Reordered: a copy of rank 0's chunk 0 arrives after its chunk P was
    # counted in the other set. incad: stale (rule 6 cleared its bit); a
    # switch (no rule 6): the set is still complete with chunk 0, so rank 0
    # gets a replay, which it ignores.
    s.contrib(0, 0, values=v[0], counted=False)
    s.result(0, to=0, replay=True, by='switch')
    # Rank 0 retransmits chunk P while the set fills: a duplicate.
    s.contrib(0, p, values=s.counted[p][0][0], flags=F_RETX, counted=False)
    s.contrib(2, p)
    s.result(p)
    return v


def late_copy():
    s = Scenario('late_copy', 'a late copy of a chunk and a retransmission after the '
                 'sender moved to the other shadow set are never counted again',
                 tofino=True, nworkers=3, pool_size=4, window=4, elems=64)
    late_copy_steps(s)
    return s


def late_reuse():
    s = Scenario('late_reuse', 'late copies and retransmissions around the reuse of a '
                 'shadow set: the reused set sums only its own chunk, copies of older '
                 'chunks are never counted in it', tofino=True, nworkers=3, pool_size=4,
                 window=4, elems=64)
    p = s.job['pool_size']
    v = late_copy_steps(s)
    # Rank 2 lost the RESULT of chunk P: a replay, in both.
    s.contrib(2, p, values=s.counted[p][2][0], flags=F_RETX, counted=False)
    s.result(p, to=2, replay=True)
    # Set 0 of slot 0 is reused by chunk 2P; copies of chunk 0 that arrive
    # during and after that use are older than it and never counted.
    s.contrib(1, 2 * p)
    s.contrib(1, 0, values=v[1], counted=False)
    s.contrib(0, 2 * p)
    s.contrib(2, 0, values=v[2], counted=False)
    s.contrib(2, 2 * p)
    s.result(2 * p)
    s.contrib(0, 0, values=v[0], flags=F_RETX, counted=False)
    # A late copy of rank 1's chunk P after it moved on: incad drops it
    # (rule 6), a switch replays it; neither counts it.
    s.contrib(1, p, values=s.counted[p][1][0], counted=False)
    s.result(p, to=1, replay=True, by='switch')
    return s


def vlan_tagged():
    s = Scenario('vlan_tagged', 'members on 802.1Q VLANs 10 and 20: every answer and RESULT '
                 'goes back tagged on the member\'s VLAN; a member\'s address on another '
                 'VLAN is not the member', tofino=True, nworkers=2, pool_size=4, window=4,
                 elems=64)
    s.members[0]['vlan'] = 10
    s.members[1]['vlan'] = 20
    s.join(0)
    s.join(1)
    s.contrib(0, 0)
    s.contrib(1, 0)
    s.result(0)
    m0 = s.members[0]
    # Rank 0's address, port and MAC, but on rank 1's VLAN: dropped.
    s.contrib(0, 1, counted=False, src=(m0['mac'], m0['ip'], m0['udp_port'], 20))
    s.contrib(1, 1)
    s.contrib(0, 1)
    s.result(1)
    return s


def stale_session():
    s = Scenario('stale_session', 'after a reset (a member left and all rejoined) the old '
                 'incarnation\'s CONTRIBs are answered MEMBER_LOST and never counted',
                 tofino=False, nworkers=2, pool_size=4, window=4, elems=64)
    j = s.job
    s1 = j['session']
    s.join(0)
    s.join(1)
    old0 = s.contrib(0, 0)
    s.contrib(1, 0)
    s.result(0)
    s.contrib(0, 1, counted=False)
    s.leave(1)                                  # incarnation 2 begins
    j['session'] = session_token(j['id'], 2, j['token'], prev=s1)
    s.incarnation = 2
    s.contrib(0, 1, counted=False, token=s1)    # rank 0 has not rejoined yet
    s.nack(0, 1, NACK_MEMBER_LOST, s1)
    s.join(1)
    s.join(0)
    s.counted = {}                              # the new stream starts at chunk 0
    s.contrib(0, 0, values=old0, counted=False, token=s1)   # a late copy
    s.nack(0, 0, NACK_MEMBER_LOST, s1)
    s.contrib(1, 0)
    s.contrib(0, 0)
    s.result(0)
    return s


def mismatch():
    s = Scenario('mismatch', 'contributions to one chunk that disagree (here the offset) '
                 'fail it: every member gets NACK MISMATCH, and so does every later copy',
                 tofino=False, nworkers=3, pool_size=4, window=4, elems=64)
    for r in range(3):
        s.join(r)
    s.contrib(0, 0, counted=False)
    m1 = s.members[1]
    bad = struct.pack('!64i', *s.values())
    h = hdr(CONTRIB, s.job['id'], 1, s.job['session'], slot=0, seq=0, offset=64, count=64)
    s.inputs.append((frame(m1['mac'], AGG['mac'], m1['ip'], AGG['ip'], m1['udp_port'],
                           INCA_PORT, h + bad), False))
    for r in range(3):
        s.nack(r, 0, NACK_MISMATCH, s.job['session'], offset=64)
    s.contrib(2, 0, counted=False)
    s.nack(2, 0, NACK_MISMATCH, s.job['session'])
    return s


def reduce_scatter():
    s = Scenario('reduce_scatter', 'routed chunks reduced to their root (ReduceScatter): '
                 'the sum goes to the chunk\'s root only, every other rank gets a BRIEF '
                 'RESULT; a retransmission gets the form its sender receives; ranks that '
                 'disagree on the root fail the chunk', tofino=False, nworkers=3,
                 pool_size=4, window=4, elems=64)
    for r in range(3):
        s.join(r)
    orders = ((0, 1, 2), (2, 0, 1), (1, 2, 0))
    sent = {}
    for k in range(3):
        flags = F_LAST if k == 2 else 0
        for r in orders[k]:
            sent[(k, r)] = s.contrib(r, k, flags=flags, root=k)
        s.result(k)
    # Rank 0 lost chunk 1's BRIEF RESULT, rank 2 chunk 2's sum.
    s.contrib(0, 1, values=sent[(1, 0)], flags=F_RETX, counted=False, root=1)
    s.result(1, to=0, replay=True)
    s.contrib(2, 2, values=sent[(2, 2)], flags=F_RETX | F_LAST, counted=False, root=2)
    s.result(2, to=2, replay=True)
    # Chunk 3: rank 1 names another root than rank 0.
    s.contrib(0, 3, counted=False, root=0)
    m1 = s.members[1]
    h = hdr(CONTRIB, s.job['id'], 1, s.job['session'], slot=3, flags=F_ROUTED, seq=3,
            offset=3 * 64, count=64, bitmap=1 << 1)
    s.inputs.append((frame(m1['mac'], AGG['mac'], m1['ip'], AGG['ip'], m1['udp_port'],
                           INCA_PORT, h + struct.pack('!64i', *s.values())), False))
    for r in range(3):
        s.nack(r, 3, NACK_MISMATCH, s.job['session'], flags=F_ROUTED)
    return s


def all_gather():
    s = Scenario('all_gather', 'routed chunks gathered from their root (AllGather): the '
                 'root sends its elements, the others BRIEF CONTRIBs; the root\'s elements '
                 'go unchanged to every other rank and the root gets a BRIEF RESULT; '
                 'duplicates are counted once, retransmissions replayed in their form',
                 tofino=False, nworkers=3, pool_size=2, window=2, elems=64)
    for r in range(3):
        s.join(r)
    orders = ((1, 0, 2), (0, 1, 2), (2, 1, 0), (1, 2, 0))
    for k in range(4):
        root = k % 3
        flags = F_LAST if k == 3 else 0
        for r in orders[k]:
            s.contrib(r, k, flags=flags, root=root, gather=True)
            if k == 0 and r == 1:
                # Duplicated in the net while the set fills: dropped.
                s.contrib(1, 0, flags=F_RETX, counted=False, root=0, gather=True)
        s.result(k)
        if k == 0:
            # Replays of chunk 0 before its set is reused: rank 2 lost the
            # elements, the root its BRIEF RESULT.
            s.contrib(2, 0, flags=F_RETX, counted=False, root=0, gather=True)
            s.result(0, to=2, replay=True)
            v = s.counted[0][0][0]
            s.contrib(0, 0, values=v, flags=F_RETX, counted=False, root=0, gather=True)
            s.result(0, to=0, replay=True)
    return s


def routed_parent():
    s = Scenario('routed_parent', 'routed chunks at a tree\'s parent (docs/protocol.md, '
                 '"Routed chunks in a tree"): the leaf holding the root names itself, the '
                 'others send the anonymous root (bitmap 0); a reduced chunk\'s sum goes to '
                 'the root\'s leaf only, a gathered chunk\'s elements to every other leaf; a '
                 'chunk nobody names, or one an anonymous member shares with a member naming '
                 'another, fails (NACK MISMATCH)', tofino=False, nworkers=3, pool_size=4,
                 window=4, elems=64)
    for r in range(3):
        s.join(r)
    # Chunk 0, reduced to a rank under leaf 1; chunk 1, gathered from one under leaf 2.
    for r in (0, 1, 2):
        s.contrib(r, 0, root=1 if r == 1 else None, anon=r != 1)
    s.result(0)
    for r in (2, 0, 1):
        s.contrib(r, 1, root=2 if r == 2 else None, anon=r != 2, gather=True)
    s.result(1)
    # Leaf 0 lost chunk 1's elements: a replay of its form.
    s.contrib(0, 1, flags=F_RETX, counted=False, anon=True, gather=True)
    s.result(1, to=0, replay=True)
    # Chunk 2: every leaf anonymous, the root is nobody's: failed at completion.
    for r in range(3):
        s.contrib(r, 2, counted=False, anon=True, flags=F_LAST)
    for r in range(3):
        s.nack(r, 2, NACK_MISMATCH, s.job['session'], flags=F_ROUTED | F_LAST)
    # Chunk 3: leaf 0 anonymous, leaf 1 names leaf 2: they disagree.
    s.contrib(0, 3, counted=False, anon=True)
    s.contrib(1, 3, counted=False, root=2)
    for r in range(3):
        s.nack(r, 3, NACK_MISMATCH, s.job['session'], flags=F_ROUTED)
    return s


def roce_sum3():
    s = Scenario('roce_sum3', 'RoCEv2: two members bound to UD queue pairs and one UDP '
                 'member; JOIN_ACK names the aggregator\'s queue pair; RESULTs go to each '
                 'member by its own transport, across both shadow sets',
                 tofino=False, nworkers=3, pool_size=2, window=2, elems=64, roce_ranks=(0, 1))
    for r in range(3):
        s.join(r)
    orders = ((0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0))
    for k in range(4):
        flags = F_LAST if k == 3 else 0
        for r in orders[k]:
            s.contrib(r, k, flags=flags)
        s.result(k)
    return s


def roce_replay():
    s = Scenario('roce_replay', 'RoCEv2: duplicates while a set fills are counted once; a '
                 'retransmission into a complete set gets its RESULT again, with RETX, as a '
                 'UD SEND to the sender only; a RoCE member\'s address by UDP is not the '
                 'member', tofino=False, nworkers=2, pool_size=4, window=4, elems=64,
                 roce_ranks=(0, 1))
    s.join(0)
    s.join(1)
    v0 = s.contrib(0, 0)
    s.contrib(0, 0, values=v0, flags=F_RETX, counted=False)    # duplicated in the net
    v1 = s.contrib(1, 0)
    s.result(0)
    s.contrib(1, 0, values=v1, flags=F_RETX, counted=False)    # its RESULT was lost
    s.result(0, to=1, replay=True)
    m0 = s.members[0]
    # Rank 0's address and the port it joined from, but by UDP: dropped.
    s.contrib(0, 1, counted=False, src=(m0['mac'], m0['ip'], m0['udp_port']))
    s.contrib(1, 1)
    s.contrib(0, 1, flags=F_RETX)   # its first copy was lost: this one counts
    s.result(1)
    return s


def leaf_partial():
    s = Scenario('leaf_partial', 'a switch as a tree leaf: a completed set is PARTIAL and '
                 'goes to the parent as one CONTRIB; a member\'s retransmission resends '
                 'it; the parent\'s RESULT completes the set and goes to every member; '
                 'duplicate and stale parent RESULTs are dropped',
                 tofino=True, nworkers=2, pool_size=4, window=4, elems=64, incad=False)
    # incad is a leaf too, but it HELLOs and JOINs its parent itself, over
    # its evict_ms, and answers its members' JOINs only once joined: a pcap
    # replay cannot sequence that, so these frames are the switch's only
    # (its control plane writes the parent session; incad's leaf runs in
    # tests/unit/test_sim.c and tests/matrix/tree.py).
    s.leaf(job=70, rank=1, nworkers=2, token=0xC0FFEE70)
    p = s.job['pool_size']
    v0 = s.contrib(0, 0)
    v1 = s.contrib(1, 0)
    s.partial(0)                    # PARTIAL: the members get nothing yet
    s.contrib(1, 0, values=v1, flags=F_RETX, counted=False)
    s.partial(0, retx=True)         # a member waits: the partial again
    s.parent_result(0)
    s.result(0)                     # the parent's sum, to every member
    s.parent_result(0, retx=True, counted=False)    # the parent's replay: COMPLETE now
    s.contrib(0, 0, values=v0, flags=F_RETX, counted=False)
    s.result(0, to=0, replay=True)  # the final sum again
    # BFP: the partial carries the leaf's maximum exp, the RESULT the tree's.
    s.contrib(1, 1, exp=-3, flags=F_BFP)
    s.contrib(0, 1, exp=4, flags=F_BFP)
    s.partial(1)
    s.parent_result(1, seq=1 + 2 * p, other_exp=9, counted=False)  # another use of the set
    s.parent_result(1, token=session_token(70, 0, 0xC0FFEE70), other_exp=9,
                    counted=False)  # another parent session
    s.parent_result(1, other_exp=9)
    s.result(1)
    # A parent RESULT for a set still filling is dropped.
    s.contrib(0, 2, flags=F_LAST)
    s.parent_result(2, counted=False)
    s.contrib(1, 2, flags=F_LAST)
    s.partial(2)
    s.parent_result(2)
    s.result(2)
    return s


def wide64():
    s = Scenario('wide64', 'int64 and fp64 (docs/protocol.md, "Semantics"): int64 SUM wraps '
                 'modulo 2^64 and carries across the 32-bit halves, MIN/MAX signed; fp64 SUM '
                 'in arrival order (-0 + -0 = -0, -0 + +0 = +0, inf + -inf and any NaN give '
                 'the canonical NaN, subnormals kept), MIN/MAX with -0 below +0; a 64-bit '
                 'CONTRIB of more than max_elems / 2 elements is TOO_LARGE',
                 tofino=False, nworkers=3, pool_size=4, window=4, elems=8,
                 dtypes=(INT32, INT64, FP64), ops=(SUM, MIN, MAX))
    # The job grants 64 lanes (32 int64 or fp64 elements) of the
    # aggregator's 256, so that 33 pass the frame checks and meet the job's.
    s.job['max_elems'], s.job['agg_max_elems'] = 64, 256
    for r in range(3):
        s.join(r)
    imax, imin = (1 << 63) - 1, -(1 << 63)
    ints = ([imax, 1, 0, 0xffffffff, imin, -1, 1 << 40, 5],
            [1, imax, 0, 1, -1, imin, -(1 << 41), -7],
            [0, 0, -1, 0x100000000, imin, 0, 1 << 40, 2])
    neg0, pos0 = 1 << 63, 0
    inf, ninf = 0x7FF0000000000000, 0xFFF0000000000000
    snan, sub = 0x7FF0000000000001, 0x0000000000000001
    f = f64_bits
    floats = ([neg0, neg0, inf, snan, sub, f(1.0), f(0.1), f(1e308)],
              [neg0, pos0, ninf, f(2.0), sub, f(2.0 ** -53), f(0.2), f(1e308)],
              [neg0, neg0, f(1.0), f(3.0), 0x800FFFFFFFFFFFFF, f(2.0 ** -53), f(0.3),
               f(-1e308)])
    orders = ((0, 1, 2), (2, 0, 1), (1, 2, 0))
    k = 0
    for dtype, vals in ((INT64, ints), (FP64, floats)):
        for op in (SUM, MIN, MAX):
            flags = F_LAST if k == 5 else 0
            for r in orders[k % 3]:
                s.contrib(r, k, values=list(vals[r]), flags=flags, dtype=dtype, op=op)
            s.result(k)
            k += 1
    # 33 int64 elements need 66 lanes; the job grants 64.
    m0 = s.members[0]
    h = hdr(CONTRIB, s.job['id'], 0, s.job['session'], slot=s.slot(6), flags=s.set_flag(6),
            seq=6, offset=6 * 8, count=33, dtype=INT64)
    s.inputs.append((frame(m0['mac'], AGG['mac'], m0['ip'], AGG['ip'], m0['udp_port'],
                           INCA_PORT, h + pack_elems(INT64, list(range(33)))), False))
    s.nack(0, 6, NACK_TOO_LARGE, s.job['session'], offset=6 * 8)
    return s


SCENARIOS = [join_static, sum2, sum4_bfp, sum2_large, replay, duplicate, wraparound,
             non_member, bad_token, late_copy, late_reuse, vlan_tagged, stale_session,
             mismatch, reduce_scatter, all_gather, routed_parent, roce_sum3, roce_replay,
             leaf_partial, wide64]


def write_pcap(path, frames):
    w = PcapWriter(path, linktype=1, sync=True)
    for i, f in enumerate(frames):
        p = Ether(bytes(f))     # checksums computed now
        p.time = T0 + i / 1000.0
        w.write(p)
    w.close()


def generate(out):
    manifest = {'aggregator': AGG, 'scenarios': []}
    for make in SCENARIOS:
        s = make()
        if s.incad:
            write_pcap(os.path.join(out, s.name + '.in.pcap'), [f for f, _ in s.inputs])
            write_pcap(os.path.join(out, s.name + '.out.pcap'),
                       [f for f, incad, _ in s.outputs if incad])
        if s.tofino:
            write_pcap(os.path.join(out, s.name + '.p4in.pcap'),
                       [f for f, t in s.inputs if t])
            write_pcap(os.path.join(out, s.name + '.p4out.pcap'),
                       [f for f, _, switch in s.outputs if switch])
        manifest['scenarios'].append(s.manifest())
    with open(os.path.join(out, 'vectors.json'), 'w') as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write('\n')
    return manifest


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=os.path.dirname(os.path.abspath(__file__)),
                    help='where to write the vectors (default: beside this script)')
    ap.add_argument('--check', metavar='DIR',
                    help='regenerate and compare with the vectors in DIR')
    args = ap.parse_args()
    if not args.check:
        m = generate(args.out)
        print('wrote %d scenarios to %s' % (len(m['scenarios']), args.out))
        return 0
    tmp = tempfile.mkdtemp(prefix='inca-vectors-')
    try:
        m = generate(tmp)
        names = sorted(os.listdir(tmp))
        committed = sorted(n for n in os.listdir(args.check)
                           if n.endswith('.pcap') or n == 'vectors.json')
        bad = [n for n in names if not os.path.exists(os.path.join(args.check, n)) or
               not filecmp.cmp(os.path.join(tmp, n), os.path.join(args.check, n),
                               shallow=False)]
        extra = sorted(set(committed) - set(names))
        for n in bad:
            print('FAIL: %s differs from what gen_vectors.py generates' % n)
        for n in extra:
            print('FAIL: %s is not generated by gen_vectors.py' % n)
        print('%d files of %d scenarios checked, %d differ, %d extra'
              % (len(names), len(m['scenarios']), len(bad), len(extra)))
        return 1 if bad or extra else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
