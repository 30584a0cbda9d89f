# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""The worker side of INCA protocol v1 for the integration tests.

The layout of the header and of the control body, and the values of the
enums, are read from lib/include/inca/wire.h (the one C definition of the
wire format), so the tests cannot drift from it. What a worker does with
them (JOIN, the window of slots, retransmission, replays) is written here
from docs/brief decisions, independently of libinca and incad.
"""

import fractions
import math
import os
import random
import re
import select
import socket
import struct
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WIRE_H = os.path.join(HERE, '..', '..', 'lib', 'include', 'inca', 'wire.h')

_CTYPES = {'uint8_t': 'B', 'int8_t': 'b', 'uint16_t': 'H', 'int16_t': 'h',
           'uint32_t': 'I', 'int32_t': 'i'}


def _strip_comments(text):
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


def _struct_fields(text, name):
    """Field names and a big-endian struct format of 'struct name'."""
    m = re.search(r'struct\s+%s\s*\{(.*?)\};' % name, text, flags=re.S)
    if not m:
        raise RuntimeError('wire.h: no struct %s' % name)
    names, fmt = [], '!'
    for decl in m.group(1).split(';'):
        decl = decl.strip()
        if not decl:
            continue
        d = re.match(r'(\w+)\s+(.+)$', decl)
        if not d or d.group(1) not in _CTYPES:
            raise RuntimeError('wire.h: struct %s: cannot parse "%s"' % (name, decl))
        code = _CTYPES[d.group(1)]
        for var in d.group(2).split(','):
            var = var.strip()
            a = re.match(r'(\w+)\s*\[\s*(\d+)\s*\]$', var)
            if a:
                for i in range(int(a.group(2))):
                    names.append('%s%d' % (a.group(1), i))
                    fmt += code
            else:
                names.append(var)
                fmt += code
    return names, fmt


def _xmacro(text, macro):
    """X(NAME, value, ...) entries of '#define macro(X)' as a dict."""
    m = re.search(r'#define\s+%s\(X\)((?:[^\n]*\\\n)*[^\n]*)' % macro, text)
    if not m:
        raise RuntimeError('wire.h: no %s' % macro)
    out = {}
    for name, val in re.findall(r'X\(\s*(\w+)\s*,\s*(\d+)', m.group(1)):
        out[name] = int(val)
    return out


def _defines(text):
    out = {}
    for name, val in re.findall(r'#define\s+(INCA_\w+)\s+(0x[0-9a-fA-F]+|\d+)\b', text):
        out[name] = int(val, 0)
    return out


def _load():
    with open(WIRE_H) as f:
        text = _strip_comments(f.read())
    g = {}
    g['HDR_FIELDS'], g['HDR_FMT'] = _struct_fields(text, 'inca_hdr')
    g['CTRL_FIELDS'], g['CTRL_FMT'] = _struct_fields(text, 'inca_ctrl')
    d = _defines(text)
    for k, v in d.items():
        g[k[len('INCA_'):]] = v
    if struct.calcsize(g['HDR_FMT']) != d['INCA_HDR_LEN']:
        raise RuntimeError('wire.h: struct inca_hdr is %d bytes, INCA_HDR_LEN %d'
                           % (struct.calcsize(g['HDR_FMT']), d['INCA_HDR_LEN']))
    if struct.calcsize(g['CTRL_FMT']) != d['INCA_CTRL_LEN']:
        raise RuntimeError('wire.h: struct inca_ctrl is %d bytes, INCA_CTRL_LEN %d'
                           % (struct.calcsize(g['CTRL_FMT']), d['INCA_CTRL_LEN']))
    g['MSG'] = _xmacro(text, 'INCA_MSG_TYPES')
    g['DTYPE'] = _xmacro(text, 'INCA_DTYPES')
    g['DTYPE_SIZE'] = {}
    m = re.search(r'#define\s+INCA_DTYPES\(X\)((?:[^\n]*\\\n)*[^\n]*)', text)
    for name, val, size in re.findall(r'X\(\s*(\w+)\s*,\s*(\d+)\s*,\s*(\d+)', m.group(1)):
        g['DTYPE_SIZE'][int(val)] = int(size)
    g['OP'] = _xmacro(text, 'INCA_OPS')
    g['NACK'] = _xmacro(text, 'INCA_NACK_REASONS')
    return g


_W = _load()
HDR_FIELDS, HDR_FMT = _W['HDR_FIELDS'], _W['HDR_FMT']
CTRL_FIELDS, CTRL_FMT = _W['CTRL_FIELDS'], _W['CTRL_FMT']
HDR_LEN, CTRL_LEN = _W['HDR_LEN'], _W['CTRL_LEN']
MSG, DTYPE, OP, NACK = _W['MSG'], _W['DTYPE'], _W['OP'], _W['NACK']
DTYPE_SIZE = _W['DTYPE_SIZE']
NACK_NAME = {v: k for k, v in NACK.items()}
MSG_NAME = {v: k for k, v in MSG.items()}
F_SET, F_RETX, F_LAST, F_BFP = _W['F_SET'], _W['F_RETX'], _W['F_LAST'], _W['F_BFP']
VERSION = _W['PROTO_VERSION']
UDP_PORT = _W['UDP_PORT']
MAX_PAYLOAD = _W['MAX_PAYLOAD_BYTES']

# Element formats for struct, per data type: all big-endian on the wire.
_ELEM = {DTYPE['INT32']: 'I', DTYPE['FP32']: 'I', DTYPE['FP16']: 'H', DTYPE['BF16']: 'H',
         DTYPE['INT64']: 'Q', DTYPE['FP64']: 'Q'}
# Every data type wire.h defines, as a JOIN's dtypes mask.
ALL_DTYPES = (1 << len(DTYPE)) - 1


class Nacked(Exception):
    def __init__(self, hdr):
        self.hdr = hdr
        self.reason = NACK_NAME.get(hdr['reason'], str(hdr['reason']))
        Exception.__init__(self, 'NACK %s (job %d rank %d seq %d)'
                           % (self.reason, hdr['job'], hdr['rank'], hdr['seq']))


def session_token(seed, job, n, token, prev=0):
    """The session token incad hands out for incarnation @n of @job when it
    is configured with aggregation.session_seed = @seed (daemon/ctrl.c)."""
    s = seed ^ ((job * 0x9E3779B1) & 0xFFFFFFFF) ^ ((n * 0x85EBCA77) & 0xFFFFFFFF)
    while s in (0, token, prev):
        s = (s + 1) & 0xFFFFFFFF
    return s


def hdr_pack(**kw):
    h = dict.fromkeys(HDR_FIELDS, 0)
    h['version'] = VERSION
    for k, v in kw.items():
        if k not in h:
            raise KeyError(k)
        h[k] = v
    return struct.pack(HDR_FMT, *[h[f] for f in HDR_FIELDS])


def hdr_unpack(buf):
    if len(buf) < HDR_LEN:
        return None
    return dict(zip(HDR_FIELDS, struct.unpack(HDR_FMT, buf[:HDR_LEN])))


def ctrl_pack(**kw):
    c = dict.fromkeys(CTRL_FIELDS, 0)
    for k, v in kw.items():
        if k not in c:
            raise KeyError(k)
        c[k] = v
    return struct.pack(CTRL_FMT, *[c[f] for f in CTRL_FIELDS])


def ctrl_unpack(buf):
    return dict(zip(CTRL_FIELDS, struct.unpack(CTRL_FMT, buf[:CTRL_LEN])))


def elems_pack(dtype, elems):
    return struct.pack('!%d%s' % (len(elems), _ELEM[dtype]), *elems)


def elems_unpack(dtype, buf):
    n = len(buf) // DTYPE_SIZE[dtype]
    return list(struct.unpack('!%d%s' % (n, _ELEM[dtype]), buf[:n * DTYPE_SIZE[dtype]]))


# Bit patterns of the float formats. Python floats are binary64, so every
# fp32/fp16/bf16 value is exact in them; the conversions back are only used
# on values the tests choose to be exact in the target format.

def fp32_bits(x):
    return struct.unpack('!I', struct.pack('!f', x))[0]


def fp32_value(b):
    return struct.unpack('!f', struct.pack('!I', b))[0]


def fp64_bits(x):
    return struct.unpack('!Q', struct.pack('!d', x))[0]


def fp64_value(b):
    return struct.unpack('!d', struct.pack('!Q', b))[0]


def fp16_bits(x):
    return struct.unpack('!H', struct.pack('!e', x))[0]


def fp16_value(b):
    return struct.unpack('!e', struct.pack('!H', b))[0]


def bf16_bits(x):
    b = fp32_bits(x)
    if b & 0xffff and not math.isnan(x):
        raise ValueError('%r is not exact in bf16' % x)
    return b >> 16


def bf16_value(b):
    return fp32_value(b << 16)


def dtype_by_name(name):
    return DTYPE[name.upper()]


def op_by_name(name):
    return OP[name.upper()]


class Worker:
    """One worker of one job: a UDP socket to the aggregator and the job's
    chunk counter, slot mapping and window (decisions.md, "Slots")."""

    def __init__(self, agg_ip, job, rank, token, nworkers, port=UDP_PORT,
                 pool_size=0, window=0, max_elems=0, rto=0.05, bind_ip=''):
        self.agg = (agg_ip, port)
        self.job, self.rank, self.token = job, rank, token
        self.session = None     # the incarnation's, from JOIN_ACK
        self.secret = 0         # the member secret, likewise
        self.nworkers = nworkers
        self.want = dict(pool_size=pool_size, window=window, max_elems=max_elems)
        self.rto = rto
        self.k = 0
        self.ack = None
        self.retx = 0
        self.replays = 0
        self.last_tx = 0.0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        self.sock.bind((bind_ip, 0))
        self.sock.connect(self.agg)

    def close(self):
        self.sock.close()

    def _send(self, data):
        try:
            self.sock.send(data)
        except ConnectionRefusedError:
            # An ICMP error from before incad was up; the datagram is
            # lost like any other and retransmission covers it.
            pass
        self.last_tx = time.monotonic()

    def _recv(self, timeout):
        r, _, _ = select.select([self.sock], [], [], max(timeout, 0))
        if not r:
            return None, None
        try:
            buf = self.sock.recv(65536)
        except ConnectionRefusedError:
            return None, None
        h = hdr_unpack(buf)
        if h is None:
            return None, None
        return h, buf[HDR_LEN:]

    def _ctrl(self, mtype, answer, body=b'', tries=40, timeout=0.25):
        """Send a control message until its answer (or a NACK) arrives."""
        # JOIN proves the job token; later messages name the session.
        token = self.token if mtype == 'JOIN' or self.session is None else self.session
        # LEAVE and HEARTBEAT prove the membership with the JOIN_ACK's secret.
        secret = self.secret if mtype in ('LEAVE', 'HEARTBEAT') else 0
        msg = hdr_pack(type=MSG[mtype], job=self.job, rank=self.rank, token=token,
                       bitmap=secret) + body
        for _ in range(tries):
            self._send(msg)
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                h, b = self._recv(end - time.monotonic())
                if h is None:
                    break
                if h['type'] == MSG['NACK'] and h['job'] == self.job:
                    raise Nacked(h)
                if h['type'] == MSG[answer]:
                    return h, b
        raise TimeoutError('no %s from %s:%d' % (answer, self.agg[0], self.agg[1]))

    def hello(self):
        body = ctrl_pack(ver_min=VERSION, ver_max=VERSION, dtypes=ALL_DTYPES, ops=0x7)
        msg = hdr_pack(type=MSG['HELLO']) + body
        for _ in range(40):
            self._send(msg)
            h, b = self._recv(0.25)
            if h is not None and h['type'] == MSG['CAPS']:
                return ctrl_unpack(b)
        raise TimeoutError('no CAPS from %s:%d' % self.agg)

    def join(self, dtypes=ALL_DTYPES, ops=0x7):
        body = ctrl_pack(ver_min=VERSION, ver_max=VERSION, dtypes=dtypes, ops=ops,
                         nworkers=self.nworkers, **self.want)
        h, b = self._ctrl('JOIN', 'JOIN_ACK', body)
        self.ack = ctrl_unpack(b)
        self.session = self.ack['session']
        self.secret = h['bitmap']       # docs/protocol.md, "Member secrets"
        if self.ack['nworkers'] != self.nworkers:
            raise AssertionError('JOIN_ACK nworkers %d, asked %d'
                                 % (self.ack['nworkers'], self.nworkers))
        if not 1 <= self.ack['window'] <= self.ack['pool_size']:
            raise AssertionError('JOIN_ACK window %d pool %d'
                                 % (self.ack['window'], self.ack['pool_size']))
        self.k = 0
        return self.ack

    def leave(self):
        return self._ctrl('LEAVE', 'LEAVE_ACK')

    def heartbeat(self):
        return self._ctrl('HEARTBEAT', 'HEARTBEAT_ACK')

    def chunk_hdr(self, k, dtype, op, offset, count, flags=0):
        pool = self.ack['pool_size']
        setbit = F_SET if (k // pool) % 2 else 0
        return dict(type=MSG['CONTRIB'], dtype=dtype, op=op, job=self.job, rank=self.rank,
                    token=self.session, slot=k % pool, flags=setbit | flags,
                    seq=k & 0xffffffff, offset=offset, count=count)

    def allreduce(self, elems, dtype, op, chunk=None, deadline=30.0):
        """Allreduce a list of raw element bit patterns; returns the result's."""
        if self.ack is None:
            raise RuntimeError('join first')
        esz = DTYPE_SIZE[dtype]
        # max_elems counts 32-bit lanes: an 8-byte element takes two.
        chunk = chunk or min(self.ack['max_elems'] // max(esz // 4, 1), MAX_PAYLOAD // esz)
        chunks = [(o, min(chunk, len(elems) - o)) for o in range(0, len(elems), chunk)]
        n = len(chunks)
        W = self.ack['window']
        k0 = self.k
        hb = self.ack['hb_ms'] / 1000.0 if self.ack['hb_ms'] else 1.0
        out = [None] * len(elems)
        done = [False] * n
        sent_at = {}
        # Per-chunk timeout, doubled on every retransmission up to 0.5 s: a
        # worker that waits for a late peer must not flood the aggregator.
        rto = [self.rto] * n
        base = nxt = 0
        end = time.monotonic() + deadline

        def send(j, retx):
            o, c = chunks[j]
            flags = (F_LAST if j == n - 1 else 0) | (F_RETX if retx else 0)
            h = self.chunk_hdr(k0 + j, dtype, op, o, c, flags)
            self._send(hdr_pack(**h) + elems_pack(dtype, elems[o:o + c]))
            sent_at[j] = time.monotonic()
            if retx:
                rto[j] = min(rto[j] * 2, 0.5)

        while base < n:
            now = time.monotonic()
            if now > end:
                raise TimeoutError('allreduce: chunk %d of %d never completed' % (base, n))
            while nxt < n and nxt < base + W:
                send(nxt, False)
                nxt += 1
            due = min(sent_at[j] + rto[j] for j in range(base, nxt) if not done[j])
            if now >= due:
                for j in range(base, nxt):
                    if not done[j] and now - sent_at[j] >= rto[j]:
                        send(j, True)
                        self.retx += 1
                continue
            if now - self.last_tx > hb / 2:
                self._send(hdr_pack(type=MSG['HEARTBEAT'], job=self.job, rank=self.rank,
                                    token=self.session, bitmap=self.secret))
            h, body = self._recv(due - now)
            if h is None:
                continue
            if h['type'] == MSG['NACK']:
                raise Nacked(h)
            if h['type'] != MSG['RESULT'] or h['job'] != self.job:
                continue
            j = (h['seq'] - k0) & 0xffffffff
            if j >= nxt or done[j]:
                continue
            o, c = chunks[j]
            want = self.chunk_hdr(k0 + j, dtype, op, o, c)
            for f in ('slot', 'offset', 'count', 'dtype', 'op', 'token', 'rank'):
                if h[f] != want[f]:
                    raise AssertionError('RESULT seq %d: %s %d, expected %d'
                                         % (h['seq'], f, h[f], want[f]))
            if (h['flags'] & F_SET) != (want['flags'] & F_SET):
                raise AssertionError('RESULT seq %d: wrong SET flag' % h['seq'])
            if h['bitmap'] != (1 << self.nworkers) - 1:
                raise AssertionError('RESULT seq %d: bitmap %#x' % (h['seq'], h['bitmap']))
            if len(body) != c * DTYPE_SIZE[dtype]:
                raise AssertionError('RESULT seq %d: %d body bytes for %d elements'
                                     % (h['seq'], len(body), c))
            if h['flags'] & F_RETX:
                self.replays += 1
            out[o:o + c] = elems_unpack(dtype, body)
            done[j] = True
            while base < n and done[base]:
                base += 1
        self.k = k0 + n
        return out


# Test data whose reductions are exact, so the expectation does not depend
# on the order in which the aggregator adds the contributions.

def gen_data(dtype_name, op_name, rank, n, seed):
    """Raw elements of one worker's contribution."""
    rnd = random.Random('%s-%s-%d-%d' % (dtype_name, op_name, rank, seed))
    d = dtype_name.lower()
    if d == 'int32':
        # Full range: sums wrap modulo 2^32.
        return [rnd.getrandbits(32) for _ in range(n)]
    if d == 'fp32':
        # Multiples of 2^-8 up to 2^12 in magnitude: partial sums of up to 8
        # of them are multiples of 2^-8 below 2^15, exact in a 24-bit
        # significand. Every 97th element is (rank + 1) times a power of two
        # that is subnormal or large, the same power in every worker.
        out = []
        for i in range(n):
            if i % 97 == 13:
                x = math.ldexp(rank + 1, [-140, -130, 60, 90][(i // 97) % 4])
            elif i % 89 == 7 and op_name.lower() != 'sum':
                # Zeros of both signs: MIN/MAX order -0 below +0.
                x = math.copysign(0.0, -1 if (rank + i // 89) % 2 else 1)
            else:
                x = rnd.randint(-(1 << 20), 1 << 20) / 256.0
            out.append(fp32_bits(x))
        return out
    if d == 'fp16':
        # Multiples of 1/16 up to 16: any sum of up to 8 is below 128 and a
        # multiple of 1/16, exact in an 11-bit significand.
        return [fp16_bits(rnd.randint(-256, 256) / 16.0) for _ in range(n)]
    if d == 'bf16':
        # Multiples of 1/8 up to 4: sums of up to 8 are below 32, multiples of
        # 1/8, exact in an 8-bit significand.
        return [bf16_bits(rnd.randint(-32, 32) / 8.0) for _ in range(n)]
    if d == 'int64':
        # Full range: sums wrap modulo 2^64, carries cross the 32-bit halves.
        return [rnd.getrandbits(64) for _ in range(n)]
    if d == 'fp64':
        # Multiples of 2^-16 up to 2^28: partial sums of up to 8 are
        # multiples of 2^-16 below 2^31, 47 significant bits, exact in a
        # 53-bit significand whatever the order; every 97th element a
        # subnormal or huge power of two times (rank + 1), zeros of both
        # signs for MIN/MAX.
        out = []
        for i in range(n):
            if i % 97 == 13:
                x = math.ldexp(rank + 1, [-1070, -1060, 900, 1000][(i // 97) % 4])
            elif i % 89 == 7 and op_name.lower() != 'sum':
                x = math.copysign(0.0, -1 if (rank + i // 89) % 2 else 1)
            else:
                x = rnd.randint(-(1 << 44), 1 << 44) / 65536.0
            out.append(fp64_bits(x))
        return out
    raise ValueError(dtype_name)


SIGNIFICAND = {'fp64': 53, 'fp32': 24, 'fp16': 11, 'bf16': 8}


def order_free(xs, bits):
    """True when every sum of a subset of the finite values xs, in any
    order, is exact in a significand of bits bits (and xs has no inf/NaN)."""
    fs = [fractions.Fraction(x) for x in xs if x != 0]
    if not all(map(math.isfinite, xs)):
        return False
    if not fs:
        return True
    # The finest power of two dividing every element: numerators' lowest
    # set bit over the (power-of-two) denominators.
    grain = min(fractions.Fraction(f.numerator & -f.numerator, f.denominator)
                for f in map(abs, fs))
    return sum(map(abs, fs)) / grain < 2 ** bits


def expected(dtype_name, op_name, inputs):
    """Reduce the workers' raw inputs (list of lists) the way decisions.md says."""
    d, op = dtype_name.lower(), op_name.lower()
    n = len(inputs[0])
    if d in ('int32', 'int64'):
        w = 32 if d == 'int32' else 64
        mask = (1 << w) - 1
        if op == 'sum':
            return [sum(col) & mask for col in zip(*inputs)]
        f = min if op == 'min' else max
        signed = [[x - (1 << w) if x >> (w - 1) else x for x in col] for col in zip(*inputs)]
        return [f(col) & mask for col in signed]
    val = {'fp32': fp32_value, 'fp16': fp16_value, 'bf16': bf16_value, 'fp64': fp64_value}[d]
    bits = {'fp32': fp32_bits, 'fp16': fp16_bits, 'bf16': bf16_bits, 'fp64': fp64_bits}[d]
    out = []
    for i in range(n):
        xs = [val(inp[i]) for inp in inputs]
        if op == 'sum':
            s = math.fsum(xs)
            # The data is chosen so that the exact sum is the answer in
            # whatever order the aggregator adds; make sure of it rather
            # than trust the generator: every partial sum is a multiple of
            # the finest power of two among the elements and at most the
            # sum of their magnitudes, so it is exact when that many steps
            # fit the significand.
            if val(bits(s)) != s or not order_free(xs, SIGNIFICAND[d]):
                raise ValueError('test data: sum %r not exact in %s' % (s, d))
            out.append(bits(s))
        else:
            # IEEE 754-2019 minimum/maximum: -0 < +0.
            key = lambda x: (x, math.copysign(1.0, x))
            out.append(bits(min(xs, key=key) if op == 'min' else max(xs, key=key)))
    return out


# Whole frames, for tools that bypass the kernel's UDP stack (the benchmark
# writes them to a pcap file that a DPDK vdev replays).

def _csum(b, s=0):
    if len(b) % 2:
        b += b'\0'
    s += sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def ip_aton(a):
    return struct.unpack('!I', socket.inet_aton(a))[0]


def mac_aton(m):
    return bytes(int(x, 16) for x in m.split(':'))


def build_frame(dst_mac, src_mac, src_ip, dst_ip, sport, dport, payload, udp_csum=True):
    """Ethernet II / IPv4 (DF, TTL 64, checksum) / UDP (checksum unless
    udp_csum is false: 0, "none") / payload."""
    udp_len = 8 + len(payload)
    ip = struct.pack('!BBHHHBBHII', 0x45, 0, 20 + udp_len, 0, 0x4000, 64, 17, 0,
                     ip_aton(src_ip), ip_aton(dst_ip))
    ip = ip[:10] + struct.pack('!H', ~_csum(ip) & 0xffff) + ip[12:]
    pseudo = ip[12:20] + struct.pack('!BBH', 0, 17, udp_len)
    udp = struct.pack('!HHHH', sport, dport, udp_len, 0)
    if udp_csum:
        c = ~_csum(pseudo + udp + payload) & 0xffff
        udp = udp[:6] + struct.pack('!H', c or 0xffff)
    return mac_aton(dst_mac) + mac_aton(src_mac) + b'\x08\x00' + ip + udp + payload


ROCE_PORT = 4791


def build_roce_frame(dst_mac, src_mac, src_ip, dst_ip, sport, msg, dqpn, qkey, sqpn, psn=0):
    """Ethernet II / IPv4 / UDP to 4791 (checksum 0) / BTH (UD SEND only) /
    DETH / msg padded to whole words / ICRC (docs/protocol.md, "RoCEv2
    transport"); the ICRC is zlib's CRC-32 over the masked packet."""
    import zlib
    pad = (-len(msg)) % 4
    roce = (struct.pack('!BBHII', 0x64, pad << 4, 0xffff, dqpn & 0xffffff, psn & 0xffffff) +
            struct.pack('!II', qkey, sqpn & 0xffffff) + msg + b'\0' * pad)
    f = bytearray(build_frame(dst_mac, src_mac, src_ip, dst_ip, sport, ROCE_PORT,
                              roce + b'\0' * 4, udp_csum=False))
    ip = bytearray(f[14:-4])
    for off in (1, 8, 10, 11, 26, 27, 32):   # TOS, TTL, checksums, BTH byte 4
        ip[off] = 0xff
    f[-4:] = struct.pack('<I', zlib.crc32(b'\xff' * 8 + bytes(ip)) & 0xffffffff)
    return bytes(f)


def write_pcap(path, frames):
    with open(path, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack('<IIII', i // 1000000, i % 1000000, len(fr), len(fr)))
            f.write(fr)
