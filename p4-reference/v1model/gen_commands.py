#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Print the simple_switch_CLI commands that set up one INCA job on BMv2.

For inca_v1model.p4: the aggregator's address, the job's (job, token) entry,
one member entry per rank (job, rank, source IPv4, source UDP port), the
job's slots, each member's RESULT address, and the job's multicast group
with one PRE node per member whose RID is its rank (egress rewrites each
copy by egress_rid). The state (seq + 1, bitmap) and exponent of every set
of the job's slots are zeroed, which makes them older than any chunk, so a
slot range can be reused by a later job or incarnation.

    gen_commands.py --job 7 --token 0xc0ffee01 \\
        --member 0=10.77.1.10:40000,02:00:00:00:bb:00,1 \\
        --member 1=10.77.1.11:40001,02:00:00:00:bb:01,2 \\
        --aggregator 10.77.0.1,02:00:00:00:aa:00 | simple_switch_CLI

A member is RANK=IP[:UDP_PORT],MAC,SWITCH_PORT[,VLAN] (UDP port default
18766; VLAN: its 802.1Q VLAN, default 0 = untagged).

--parent IP[:UDP_PORT],MAC,SWITCH_PORT,JOB,RANK,SESSION makes the job a
tree leaf (docs/protocol.md, "Aggregation trees"): its completed sets go to
that parent as rank RANK of its job JOB in parent session SESSION, and the
parent's RESULTs from that address are written into the waiting sets and
multicast to the members. The session is the parent's JOIN_ACK's: a static
set-up takes it from elsewhere (a vector's manifest, or switch_ctl.py, which
joins the parent itself).
--manifest tests/vectors/vectors.json --scenario NAME takes everything from
a conformance vector instead (keyed by the scenario's session token, what
its CONTRIBs carry); --port P then puts every member on switch port P
(default: member r on port r + 1).
"""

import argparse
import json
import sys

INCA_UDP_PORT = 18766
MAX_WORKERS = 31  # INCA_SWITCH_MAX_RANKS: bit 31 of a set's state is not a rank
# Register sizes of inca_v1model.p4 (V1_NUM_SLOTS, V1_ACC_WORDS / 64).
V1_NUM_SLOTS = 1024
V1_GROUP_ENTRIES = 2048
ELEMS_STRIDE = {64: 2, 256: 8}  # group entries per slot: sets x groups

ING = 'IncaIngress'
EGR = 'IncaEgress'


def parse_member(text):
    try:
        rank, rest = text.split('=', 1)
        fields = rest.split(',')
        if len(fields) not in (3, 4):
            raise ValueError(text)
        addr, mac, port = fields[:3]
        ip, _, udp = addr.partition(':')
        return {'rank': int(rank), 'ip': ip, 'udp_port': int(udp) if udp else INCA_UDP_PORT,
                'mac': mac, 'switch_port': int(port),
                'vlan': int(fields[3]) if len(fields) == 4 else 0}
    except ValueError:
        raise argparse.ArgumentTypeError('member %r is not RANK=IP[:UDP],MAC,PORT[,VLAN]'
                                         % text)


def layout(pool_size, elems, pool_base, lane_base):
    """(slot, pool_index, lane_base) of each slot, within the registers."""
    stride = ELEMS_STRIDE[elems]
    if lane_base % stride:
        raise ValueError('lane base %d is not a multiple of %d' % (lane_base, stride))
    if pool_base + pool_size > V1_NUM_SLOTS:
        raise ValueError('slots %d..%d beyond the %d slot entries'
                         % (pool_base, pool_base + pool_size - 1, V1_NUM_SLOTS))
    if lane_base + pool_size * stride > V1_GROUP_ENTRIES:
        raise ValueError('lanes %d..%d beyond the %d group entries'
                         % (lane_base, lane_base + pool_size * stride - 1, V1_GROUP_ENTRIES))
    return [(s, pool_base + s, lane_base + s * stride) for s in range(pool_size)]


def parse_parent(text):
    try:
        addr, mac, port, job, rank, session = text.split(',')
        ip, _, udp = addr.partition(':')
        return {'ip': ip, 'udp_port': int(udp) if udp else INCA_UDP_PORT, 'mac': mac,
                'switch_port': int(port), 'job': int(job), 'rank': int(rank),
                'session': int(session, 0)}
    except ValueError:
        raise argparse.ArgumentTypeError('parent %r is not IP[:UDP],MAC,PORT,JOB,RANK,SESSION'
                                         % text)


def leaf_commands(job, session, nmembers, mgid, parent):
    """The entries that make job a tree leaf of @parent (a dict: ip,
    udp_port, mac, switch_port, job, rank, session; session 0: not joined,
    partials wait)."""
    members = (1 << nmembers) - 1
    if parent['session'] == 0:
        return ['table_add %s.uplink %s.leaf_down %d =>' % (ING, ING, job)]
    return ['table_add %s.uplink %s.leaf_up %d => %d' % (ING, ING, job, parent['switch_port']),
            'table_add %s.parent %s.from_parent %s %d 0 %d 0x%08x => %d 0x%08x 0x%08x %d'
            % (ING, ING, parent['ip'], parent['udp_port'], parent['job'], parent['session'],
               job, session, members, mgid),
            'table_add %s.parent_addr %s.set_parent %d => %s %s %d %d %d 0x%08x'
            % (EGR, EGR, job, parent['mac'], parent['ip'], parent['udp_port'], parent['job'],
               parent['rank'], parent['session'])]


def commands(job, token, members, agg_ip, agg_mac, pool_size, elems, pool_base=0,
             lane_base=None, mgid=None, first_node=0, cpu_port=None, member_base=0,
             parent=None):
    ranks = sorted(m['rank'] for m in members)
    if ranks != list(range(len(members))) or not 1 <= len(members) <= MAX_WORKERS:
        raise ValueError('members must be ranks 0..N-1 once each, N <= %d' % MAX_WORKERS)
    if not 1 <= job <= 65535:
        raise ValueError('job id %d outside 1..65535' % job)
    if lane_base is None:
        lane_base = pool_base * ELEMS_STRIDE[elems]
    mgid = job if mgid is None else mgid
    out = ['# INCA job %d: %d members, %d slots of %d elements' % (job, len(members),
                                                                   pool_size, elems),
           'table_set_default %s.aggregator %s.set_source %s %s %d'
           % (EGR, EGR, agg_mac, agg_ip, INCA_UDP_PORT),
           'table_add %s.agg_addr NoAction %s =>' % (ING, agg_ip)]
    if cpu_port is not None:
        out.append('table_set_default %s.cpu %s.to_cpu %d' % (ING, ING, cpu_port))
    out.append('table_add %s.job %s.job_ok %d 0x%08x => 0x%08x %d'
               % (ING, ING, job, token, (1 << len(members)) - 1, mgid))
    for m in sorted(members, key=lambda m: m['rank']):
        vid = m.get('vlan', 0)
        out.append('table_add %s.member %s.member_ok %d %d %s %d %d => %d'
                   % (ING, ING, job, m['rank'], m['ip'], m['udp_port'], vid,
                      member_base + m['rank']))
        out.append('table_add %s.member_addr %s.set_member %d %d => %s %s %d %d'
                   % (EGR, EGR, job, m['rank'], m['mac'], m['ip'], m['udp_port'], vid))
    for slot, pool_index, lanes in layout(pool_size, elems, pool_base, lane_base):
        out.append('table_add %s.slot_map %s.slot_entry %d %d %d => %d %d'
                   % (ING, ING, job, slot, elems, pool_index, lanes))
        # Zeroed sets are older than any chunk: the first contribution
        # of each starts a use.
        for s in (0, 1):
            out.append('register_write %s.set_seq %d 0' % (ING, 2 * pool_index + s))
            out.append('register_write %s.set_bitmap %d 0' % (ING, 2 * pool_index + s))
            out.append('register_write %s.max_exp %d 0' % (ING, 2 * pool_index + s))
            out.append('register_write %s.set_partial %d 0' % (ING, 2 * pool_index + s))
    if parent is not None:
        out += leaf_commands(job, token, len(members), mgid, parent)
    # One node per member, RID = rank; node handles are numbered from 0 in
    # a fresh simple_switch, in creation order.
    out.append('mc_mgrp_create %d' % mgid)
    for i, m in enumerate(sorted(members, key=lambda m: m['rank'])):
        out.append('mc_node_create %d %d' % (m['rank'], m['switch_port']))
        out.append('mc_node_associate %d %d' % (mgid, first_node + i))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog='\n'.join(__doc__.splitlines()[2:]))
    ap.add_argument('--job', type=int, help='job id, 1..65535')
    ap.add_argument('--token', type=lambda s: int(s, 0), help='32-bit job token')
    ap.add_argument('--member', type=parse_member, action='append', default=[],
                    help='RANK=IP[:UDP_PORT],MAC,SWITCH_PORT (repeat for each rank)')
    ap.add_argument('--aggregator', help='IP,MAC of the aggregator')
    ap.add_argument('--pool-size', type=int, default=64, help='slots of the job')
    ap.add_argument('--elems', type=int, choices=(64, 256), default=64,
                    help='the payload class the job uses')
    ap.add_argument('--pool-base', type=int, default=0, help='first slot entry of the job')
    ap.add_argument('--lane-base', type=int, help='first group entry (default from pool base)')
    ap.add_argument('--mgid', type=int, help='multicast group (default: the job id)')
    ap.add_argument('--member-base', type=int, default=0,
                    help='first index of the job\'s members in the member_rx counter')
    ap.add_argument('--first-node-handle', type=int, default=0,
                    help='handle simple_switch gives the first node created here')
    ap.add_argument('--cpu-port', type=int, help='port control messages are sent to')
    ap.add_argument('--parent', type=parse_parent,
                    help='IP[:UDP_PORT],MAC,SWITCH_PORT,JOB,RANK,SESSION: the job is a tree '
                    'leaf of this parent')
    ap.add_argument('--manifest', help='vectors.json of the conformance vectors')
    ap.add_argument('--scenario', help='scenario of --manifest')
    ap.add_argument('--port', type=int,
                    help='with --manifest: the switch port of every member')
    args = ap.parse_args()

    if args.manifest:
        with open(args.manifest) as f:
            man = json.load(f)
        sc = [s for s in man['scenarios'] if s['name'] == args.scenario]
        if not sc:
            ap.error('no scenario %r in %s' % (args.scenario, args.manifest))
        sc = sc[0]
        j = sc['job']
        args.job, args.token, args.member = j['id'], j.get('session') or j['token'], \
            [dict(m) for m in sc['members']]
        if args.port is not None:
            for m in args.member:
                m['switch_port'] = args.port
        args.pool_size, args.elems = j['pool_size'], j['elems']
        if 'parent' in sc:
            args.parent = dict(sc['parent'])
            if args.port is not None:
                args.parent['switch_port'] = args.port
        agg_ip, agg_mac = man['aggregator']['ip'], man['aggregator']['mac']
    else:
        if args.job is None or args.token is None or not args.member or not args.aggregator:
            ap.error('give --job, --token, --member... and --aggregator (or --manifest)')
        agg_ip, _, agg_mac = args.aggregator.partition(',')
    try:
        lines = commands(args.job, args.token, args.member, agg_ip, agg_mac, args.pool_size,
                         args.elems, args.pool_base, args.lane_base, args.mgid,
                         args.first_node_handle, args.cpu_port, args.member_base,
                         args.parent)
    except ValueError as e:
        ap.error(str(e))
    print('\n'.join(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
