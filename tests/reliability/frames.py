# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Hand-made frames for the hostile-input and isolation cases, and a model
of how incad classifies a frame it receives.

The model is written from docs/protocol.md ("Frame checks", "Message
checks", in their order) and docs/incad.md (what incad does before them:
frames not to its MAC, IPv4 not to its addresses, non-IPv4 and non-UDP
traffic). It shares no code with lib/wire.c or daemon/dataplane.c, so a
test that compares incad's counters with it checks both against the
documents. It answers with the telemetry name of the counter a frame
ends in ('wire/IP_CSUM', 'incad/UNHANDLED', ...), or None for a frame that
passes every check and would be acted upon (the generators avoid those).
"""

import random
import struct

import relcommon  # noqa: F401  (puts tests/integration on sys.path)
import inca_proto as P

ETH_IPV4, ETH_ARP, ETH_VLAN = 0x0800, 0x0806, 0x8100
INCA_PORT = P.UDP_PORT
# incad's net_af_packet ports (as tools/rack configures them at MTU 1500)
# have 2048-byte ring frames, and the kernel stores a frame 66 bytes into
# one (docs/rack.md): a longer frame reaches incad cut to this length.
AF_PACKET_SNAP = 2048 - 66


def csum(b, s=0):
    if len(b) % 2:
        b += b'\0'
    s += sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def eth(dst, src, etype, payload, vlan=None):
    tag = struct.pack('!HH', ETH_VLAN, vlan) if vlan is not None else b''
    return P.mac_aton(dst) + P.mac_aton(src) + tag + struct.pack('!H', etype) + payload


def ipv4(src, dst, proto, payload, ihl=5, tot=None, good_csum=True, frag=0x4000,
         version=4, options=b''):
    """An IPv4 packet; by default a correct one."""
    options = options.ljust((ihl - 5) * 4, b'\0')[:max(ihl - 5, 0) * 4]
    tot = 4 * ihl + len(payload) if tot is None else tot
    h = struct.pack('!BBHHHBBHII', (version << 4) | (ihl & 0xf), 0, tot & 0xffff, 0, frag,
                    64, proto, 0, P.ip_aton(src), P.ip_aton(dst)) + options
    c = ~csum(h) & 0xffff
    if not good_csum:
        c ^= 0x5a5a
    return h[:10] + struct.pack('!H', c) + h[12:] + payload


def udp(src, dst, sport, dport, payload, length=None, csum_mode='good'):
    """A UDP datagram; csum_mode 'good', 'zero' (none) or 'bad'."""
    length = 8 + len(payload) if length is None else length
    h = struct.pack('!HHHH', sport, dport, length & 0xffff, 0)
    if csum_mode == 'zero':
        return h + payload
    pseudo = struct.pack('!IIBBH', P.ip_aton(src), P.ip_aton(dst), 0, 17, len(h + payload))
    c = ~csum(pseudo + h + payload) & 0xffff or 0xffff
    if csum_mode == 'bad':
        c = (c + 0x1234) & 0xffff or 0x1234
    return h[:6] + struct.pack('!H', c) + payload


def udp_frame(a, payload, dport=INCA_PORT, sport=40000, src_ip=None, csum_mode='good',
              dst_ip=None, src_mac=None, **ipkw):
    """Ethernet/IPv4/UDP from the attacker @a (dict: mac, ip, agg_mac,
    agg_ip) to incad."""
    s, d = src_ip or a['ip'], dst_ip or a['agg_ip']
    return eth(a['agg_mac'], src_mac or a['mac'], ETH_IPV4,
               ipv4(s, d, 17, udp(s, d, sport, dport, payload, csum_mode=csum_mode), **ipkw))


def msg(body=b'', **hdr):
    return P.hdr_pack(**hdr) + body


# ---- the model --------------------------------------------------------------

DATA = (P.MSG['CONTRIB'], P.MSG['RESULT'])
CTRL32 = (P.MSG['HELLO'], P.MSG['CAPS'], P.MSG['JOIN'], P.MSG['JOIN_ACK'])


def classify_msg(m, max_elems):
    """Message checks of docs/protocol.md on a UDP payload: the failing
    check's name, or None."""
    if len(m) < P.HDR_LEN:
        return 'SHORT'
    h = P.hdr_unpack(m)
    body = m[P.HDR_LEN:]
    if h['version'] != P.VERSION:
        return 'VERSION'
    if h['type'] not in P.MSG_NAME:
        return 'TYPE'
    if h['dtype'] not in P.DTYPE_SIZE:
        return 'DTYPE'
    if h['op'] not in P.OP.values():
        return 'OP'
    if h['flags'] & ~F_MASK:
        return 'FLAGS'
    if h['rank'] >= 32:
        return 'RANK'
    if h['job'] == 0 and h['type'] not in (P.MSG['HELLO'], P.MSG['CAPS']):
        return 'JOB'
    if h['type'] in DATA:
        size = P.DTYPE_SIZE[h['dtype']]
        if h['count'] == 0 or h['count'] > min(max_elems, 4096) or h['count'] * size > 8192:
            return 'COUNT'
        if len(body) != (0 if h['flags'] & F_BRIEF else h['count'] * size):
            return 'LEN'
    else:
        if h['count'] != 0:
            return 'COUNT'
        if h['type'] in CTRL32 and len(body) != P.CTRL_LEN:
            return 'CTRL_LEN'
        if len(body) not in (0, P.CTRL_LEN):
            return 'CTRL_LEN'
    if h['type'] == P.MSG['NACK']:
        if h['reason'] not in P.NACK_NAME:
            return 'REASON'
    elif h['reason'] != 0:
        return 'REASON'
    if h['type'] not in DATA and len(body) == P.CTRL_LEN:
        c = P.ctrl_unpack(body)
        if (c['ver_min'] > c['ver_max'] or c['nworkers'] > 32 or
                (h['type'] == P.MSG['JOIN'] and c['nworkers'] == 0) or
                (c['window'] and c['pool_size'] and c['window'] > c['pool_size']) or
                c['max_elems'] > 4096 or c['caps'] & ~0x7):
            return 'CTRL_FIELD'
    if h['flags'] & P.F_BFP and h['dtype'] != P.DTYPE['INT32']:
        return 'BFP_DTYPE'
    if h['type'] in DATA and not route_ok(h):
        return 'ROUTE'
    return None


# The flags of routed chunks (docs/protocol.md, "Routed chunks").
F_ROUTED, F_GATHER, F_BRIEF, F_MASK = 0x10, 0x20, 0x40, 0x7f


def route_ok(h):
    """The ROUTE check of a data message: GATHER and BRIEF only with
    ROUTED, never GATHER with BFP; a CONTRIB names at most one root in its
    bitmap (0: the anonymous root of a tree), and of a gathered chunk only
    the root sends elements."""
    f = h['flags']
    if not f & F_ROUTED:
        return not f & (F_GATHER | F_BRIEF)
    if f & F_GATHER and f & P.F_BFP:
        return False
    if h['type'] != P.MSG['CONTRIB']:
        return True
    b = h['bitmap']
    if b & (b - 1):
        return False
    if not f & F_GATHER:
        return not f & F_BRIEF
    return (not f & F_BRIEF) if b == 1 << h['rank'] else bool(f & F_BRIEF)


def kernel_holds(fr):
    """True for a frame that never reaches incad through net_af_packet:
    DPDK 22.11's af_packet PMD joins its sockets to a fanout group with
    PACKET_FANOUT_FLAG_DEFRAG, so the kernel takes every IPv4 fragment whose
    header is plausible (version 4, IHL >= 5, total length within the
    frame) into its reassembly queues (ip_check_defrag): incomplete sets
    are dropped there, complete ones reach incad reassembled."""
    l3 = 18 if fr[12:14] == b'\x81\x00' and len(fr) >= 18 else 14
    if fr[l3 - 2:l3] != b'\x08\x00' or len(fr) < l3 + 20:
        return False
    ip = fr[l3:]
    ihl, tot = (ip[0] & 0xf) * 4, struct.unpack('!H', ip[2:4])[0]
    if ip[0] >> 4 != 4 or ihl < 20 or tot > len(ip) or tot < ihl:
        return False
    return struct.unpack('!H', ip[6:8])[0] & 0x3fff != 0


def classify(fr, port_mac, local_ips, max_elems, mode='switch', snap=AF_PACKET_SNAP,
             bcasts=()):
    """The counters incad puts frame @fr in when it arrives on a port whose
    MAC is @port_mac: a list whose first entry is the drop reason (or
    'forwarded', 'arp', 'icmp'), followed by what else incad counts for
    it; ['held'] for a fragment the kernel keeps (kernel_holds); None
    when the frame passes every check. @bcasts: the broadcast addresses
    of incad's subnets (sources incad drops as martian)."""
    fr = fr[:snap]
    if kernel_holds(fr):
        return ['held']
    if len(fr) < 14:
        return ['wire/ETH_SHORT']
    group = fr[0] & 1
    if not group and fr[:6] != P.mac_aton(port_mac):
        return ['forwarded' if mode == 'switch' else 'incad/NOT_LOCAL']
    etype = struct.unpack('!H', fr[12:14])[0]
    l3 = 14
    if etype == ETH_VLAN and len(fr) >= 18:
        etype = struct.unpack('!H', fr[16:18])[0]
        l3 = 18
    if etype == ETH_ARP:
        return ['arp']
    if etype != ETH_IPV4:
        return ['flooded' if group and mode == 'switch' else 'incad/UNHANDLED']
    ip = fr[l3:]
    if len(ip) >= 20 and struct.unpack('!I', ip[16:20])[0] not in local_ips:
        return ['flooded' if group and mode == 'switch' else 'incad/NOT_LOCAL']
    # Frame checks, in the order of the table.
    if len(ip) < 20:
        return ['wire/IP_SHORT']
    if ip[0] >> 4 != 4:
        return ['wire/IP_VERSION']
    ihl = (ip[0] & 0xf) * 4
    if ihl < 20 or ihl > len(ip):
        return ['wire/IP_HDR_LEN']
    tot = struct.unpack('!H', ip[2:4])[0]
    if tot < ihl or tot > len(ip):
        return ['wire/IP_TOTAL_LEN']
    if csum(ip[:ihl]) != 0xffff:
        return ['wire/IP_CSUM']
    if struct.unpack('!H', ip[6:8])[0] & 0x3fff:
        return ['wire/IP_FRAGMENT']
    if ip[9] != 17:
        # incad answers ICMP itself and counts other protocols as its own.
        return ['icmp' if ip[9] == 1 else 'incad/UNHANDLED']
    if tot - ihl < 8:
        return ['wire/UDP_SHORT']
    u = ip[ihl:tot]
    ulen = struct.unpack('!H', u[4:6])[0]
    if ulen != tot - ihl:
        return ['wire/UDP_LEN']
    if struct.unpack('!H', u[2:4])[0] != INCA_PORT:
        return ['wire/WRONG_PORT']
    if struct.unpack('!H', u[6:8])[0] != 0:
        pseudo = ip[12:20] + struct.pack('!BBH', 0, 17, ulen)
        if csum(pseudo + u) != 0xffff:
            return ['wire/UDP_CSUM']
    m = u[8:]
    r = classify_msg(m, max_elems)
    if r is None:
        # docs/protocol.md, after the message checks: group destinations
        # and sources no worker can have.
        src = struct.unpack('!I', ip[12:16])[0]
        if group:
            return ['incad/GROUP_DST']
        if m[1] != P.MSG['CONTRIB'] and (src >> 24 in (0, 127) or src >> 24 >= 224 or
                                         src in local_ips or src in bcasts):
            return ['incad/MARTIAN_SRC']
        return None
    if (r == 'VERSION' and len(m) >= P.HDR_LEN + P.CTRL_LEN and
            m[1] in (P.MSG['HELLO'], P.MSG['JOIN'])):
        # docs/protocol.md: a HELLO of another version, long enough to be
        # one, is answered with CAPS; a JOIN with NACK BAD_VERSION.
        if m[1] == P.MSG['HELLO']:
            return ['wire/VERSION']
        return ['wire/VERSION', 'incad/CTRL_REFUSED', 'nack/BAD_VERSION']
    return ['wire/' + r]


# ---- random frames ------------------------------------------------------------

def random_frames(a, rnd, count, local_ips, max_elems):
    """@count random frames from attacker @a in four families (random
    ethertype; random IPv4 header; random UDP header; random INCA
    header), fields drawn so that every check of the tables is reached,
    each with the counters the model expects. Frames the model would pass,
    or send to ARP or ICMP handling, are drawn again."""
    out = []
    while len(out) < count:
        fam = rnd.randrange(4)
        if fam == 0:
            etype = rnd.getrandbits(16)
            if etype in (ETH_IPV4, ETH_ARP, ETH_VLAN):
                continue
            fr = eth(a['agg_mac'], a['mac'], etype, rnd.randbytes(rnd.randrange(0, 200)))
        elif fam == 1:
            fr = random_ip(a, rnd)
        else:
            body = random_udp(a, rnd) if fam == 2 else random_inca(a, rnd, max_elems)
            fr = body
        want = classify(fr, a['agg_mac'], local_ips, max_elems)
        if want is None or not want[0].startswith(('wire/', 'incad/', 'held')):
            continue
        out.append((fr, want))
    return out


def random_ip(a, rnd):
    ihl = 5 if rnd.random() < 0.6 else rnd.randrange(16)
    version = 4 if rnd.random() < 0.8 else rnd.randrange(16)
    plen = rnd.randrange(0, 80)
    payload = rnd.randbytes(plen)
    tot = None if rnd.random() < 0.5 else rnd.getrandbits(16) % 200
    proto = rnd.choice((17, 17, 6, 47, rnd.getrandbits(8)))
    if proto == 1:
        proto = 2
    frag = rnd.choice((0x4000, 0x4000, 0x2000, 0x0001, rnd.getrandbits(16)))
    dst = a['agg_ip'] if rnd.random() < 0.8 else '10.77.%d.%d' % (rnd.randrange(256),
                                                                  rnd.randrange(256))
    pkt = ipv4(a['ip'], dst, proto, payload, ihl=max(ihl, 5), tot=tot,
               good_csum=rnd.random() < 0.6, frag=frag, version=version,
               options=rnd.randbytes(40))
    if ihl < 5:
        # An IHL below 5 in a header that is otherwise whole.
        pkt = bytes([(pkt[0] & 0xf0) | ihl]) + pkt[1:]
    cut = len(pkt) if rnd.random() < 0.7 else rnd.randrange(len(pkt) + 1)
    vlan = rnd.randrange(4096) if rnd.random() < 0.2 else None
    return eth(a['agg_mac'], a['mac'], ETH_IPV4, pkt[:cut], vlan=vlan)


def random_udp(a, rnd):
    payload = rnd.randbytes(rnd.randrange(0, 120))
    length = None if rnd.random() < 0.6 else rnd.getrandbits(16) % 160
    dport = INCA_PORT if rnd.random() < 0.6 else rnd.getrandbits(16)
    mode = rnd.choice(('good', 'zero', 'bad'))
    u = udp(a['ip'], a['agg_ip'], rnd.getrandbits(16), dport, payload, length=length,
            csum_mode=mode)
    return eth(a['agg_mac'], a['mac'], ETH_IPV4, ipv4(a['ip'], a['agg_ip'], 17, u))


def random_inca(a, rnd, max_elems):
    """A valid Ethernet/IPv4/UDP frame to incad's INCA port carrying a
    random message of version 1 whose fields are drawn near the limits."""
    types = list(P.MSG.values()) + [0, 12, rnd.getrandbits(8)]
    t = rnd.choice(types)
    h = dict(type=t, dtype=rnd.choice(tuple(range(len(P.DTYPE) + 1)) + (rnd.getrandbits(8),)),
             op=rnd.choice((0, 1, 2, 3, rnd.getrandbits(8))),
             job=rnd.choice((0, 4000 + rnd.randrange(1000), rnd.getrandbits(16))),
             rank=rnd.choice((0, 1, 31, 32, rnd.getrandbits(16))),
             token=rnd.getrandbits(32), slot=rnd.getrandbits(16),
             flags=rnd.choice((0, 1, 8, 0x10, rnd.getrandbits(8))),
             seq=rnd.getrandbits(32), offset=rnd.getrandbits(32),
             count=rnd.choice((0, 1, 64, max_elems, max_elems + 1, 4096, rnd.getrandbits(16))),
             reason=rnd.choice((0, 0, 1, 15, 16, rnd.getrandbits(16))),
             bitmap=rnd.getrandbits(32))
    size = P.DTYPE_SIZE.get(h['dtype'], 4)
    blen = rnd.choice((0, P.CTRL_LEN, h['count'] * size, h['count'] * size - 1,
                       rnd.randrange(0, 300)))
    if blen == P.CTRL_LEN and rnd.random() < 0.5:
        body = P.ctrl_pack(ver_min=rnd.choice((1, 2)), ver_max=rnd.choice((0, 1, 3)),
                           nworkers=rnd.choice((0, 2, 33)), pool_size=rnd.choice((0, 8)),
                           window=rnd.choice((0, 4, 16)), max_elems=rnd.choice((0, 5000)),
                           caps=rnd.choice((0, 8)))
    else:
        body = rnd.randbytes(max(0, min(blen, 1400)))
    payload = (P.hdr_pack(**h) + body)
    if rnd.random() < 0.1:
        payload = payload[:rnd.randrange(P.HDR_LEN)]
    return udp_frame(a, payload, sport=40000 + rnd.randrange(1000),
                     csum_mode=rnd.choice(('good', 'zero')))


def rng(seed):
    return random.Random(seed)
