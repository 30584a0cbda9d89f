# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Set up (or tear down) one INCA job on a Tofino running p4-reference/inca.p4.

A bfrt_python script: run it inside the SDE's bfshell, where the `bfrt`
object exists, with the job described in a JSON file:

    INCA_JOB=job.json bfshell -b p4-reference/control/setup_job.py
    INCA_JOB=job.json INCA_TEARDOWN=1 bfshell -b p4-reference/control/setup_job.py

or, for a conformance vector (tests/vectors/vectors.json):

    INCA_MANIFEST=tests/vectors/vectors.json INCA_SCENARIO=sum2 bfshell -b ...

job.json holds what a scenario of vectors.json holds, plus where the job goes:

    {"aggregator": {"ip": "10.77.0.1", "mac": "02:00:00:00:aa:00", "udp_port": 18766},
     "job": {"id": 7, "token": 3237998081, "nworkers": 2, "pool_size": 64, "elems": 64},
     "members": [{"rank": 0, "ip": "10.77.1.10", "mac": "02:00:00:00:bb:00",
                  "udp_port": 40000, "switch_port": 1}, ...],
     "pool_base": 0, "lane_base": 0, "home_pipe": 0, "pipes": [0, 1],
     "cpu_port": 192, "program": "inca"}

What it programs (README.md, "Setting up a job"):
  - once per switch: agg_addr (the aggregator's IPv4), Egress.aggregator
    (source MAC, IPv4, UDP port of RESULTs), cpu (port of control messages),
    the recirculation ports of every pipe in the parser value set;
  - Ingress.job: (job, token, pipe) -> job_home(members bitmap, nworkers - 1, mgid, home
    recirculation port) for the home pipe, job_remote(home recirculation
    port) for the others;
  - Ingress.member: (job, rank, IPv4, UDP port) of every member;
  - Ingress.slot_map: (job, slot, count, set) -> (set_index = 2 pool_index
    + set, lane_idx = the lane entry of the set's group 0);
  - Egress.member_addr: (job, rank) -> the member's MAC, IPv4, UDP port;
  - $pre.node per member (RID = rank, its port) and $pre.mgid = the job's
    group of those nodes;
  - zeroes the seq, bitmap, remaining count and exponent of
    every set of the job's slots: a zeroed set is older than any chunk
    (bitmap.p4);
  - a tree leaf (a "parent": {"ip", "udp_port", "mac", "switch_port", "job",
    "rank", "session"}, as a leaf vector has it): Ingress.uplink (job ->
    leaf_up(the parent's port), or leaf_down without a session),
    Ingress.parent ((parent IPv4, UDP port, VLAN 0, parent job, parent
    session, pipe) -> from_parent(job, the job's session, members,
    home recirculation port), in every pipe) and
    Egress.parent_addr (job -> the parent's MAC, IPv4, UDP port, job, this
    leaf's rank, session). switch_ctl.py does the same when it joins a
    parent itself.

Written against the SDE 9.x bfrt_python API; not run here (no SDE).
"""

import json
import os

RECIRC_PORT = 68          # recirculation port of each Tofino-1 pipe (pipe << 7 | 68)
NUM_SLOTS = 8192          # INCA_NUM_SLOTS of headers.p4
LANE_ENTRIES = 16384      # INCA_LANE_ENTRIES of headers.p4
ELEMS_STRIDE = {64: 2, 256: 8}   # lane entries per slot: 2 sets x groups
MAX_WORKERS = 32          # PRE node ids: room per job
SWITCH_MAX_RANKS = 31     # INCA_SWITCH_MAX_RANKS of headers.p4


def ip2int(ip):
    a, b, c, d = (int(x) for x in ip.split('.'))
    return (a << 24) | (b << 16) | (c << 8) | d


def mac2int(mac):
    return int(mac.replace(':', ''), 16)


def recirc_port(pipe):
    return (pipe << 7) | RECIRC_PORT


def node_id(job, rank):
    """PRE node ids are global: one per (job, rank)."""
    return job * MAX_WORKERS + rank + 1


def layout(pool_size, elems, pool_base, lane_base):
    """(slot, pool_index, lane_base) of each slot of the job."""
    stride = ELEMS_STRIDE[elems]
    if lane_base % stride:
        raise ValueError('lane_base %d must be a multiple of %d' % (lane_base, stride))
    if pool_base + pool_size > NUM_SLOTS:
        raise ValueError('slots %d.. beyond the %d slot entries' % (pool_base, NUM_SLOTS))
    if lane_base + pool_size * stride > LANE_ENTRIES:
        raise ValueError('lanes %d.. beyond the %d lane entries' % (lane_base, LANE_ENTRIES))
    return [(s, pool_base + s, lane_base + s * stride) for s in range(pool_size)]


def load():
    if os.environ.get('INCA_MANIFEST'):
        with open(os.environ['INCA_MANIFEST']) as f:
            man = json.load(f)
        name = os.environ.get('INCA_SCENARIO')
        scs = [s for s in man['scenarios'] if s['name'] == name]
        if not scs:
            raise ValueError('no scenario %r in %s' % (name, os.environ['INCA_MANIFEST']))
        desc = dict(scs[0])
        desc['aggregator'] = man['aggregator']
        return desc
    with open(os.environ['INCA_JOB']) as f:
        return json.load(f)


def setup_switch(p4, desc):
    """Switch-wide entries: idempotent, so every job setup may run them."""
    agg = desc['aggregator']
    try:
        p4.Ingress.agg_addr.add_with_is_aggregator(ip=ip2int(agg['ip']))
    except Exception:
        pass   # already there (another job)
    p4.Egress.aggregator.set_default_with_set_source(
        mac=mac2int(agg['mac']), ip=ip2int(agg['ip']), udp_port=agg.get('udp_port', 18766))
    if 'cpu_port' in desc:
        p4.Ingress.cpu.set_default_with_to_cpu(port=desc['cpu_port'])
    for pipe in desc.get('pipes', [0]):
        try:
            p4.IngressParser.recirc_ports.add(f1=recirc_port(pipe))
        except Exception as e:
            print('recirculation port %d not added to the parser value set (%s): add it '
                  'by hand' % (recirc_port(pipe), e))


def data_token(j):
    """What the job's CONTRIBs carry: the incarnation's session when the
    description has one (docs/protocol.md, "Sessions"), else the token."""
    return j.get('session') or j['token']


def setup_job(p4, pre, desc):
    j = desc['job']
    job, token, members = j['id'], data_token(j), desc['members']
    if sorted(m['rank'] for m in members) != list(range(j['nworkers'])):
        raise ValueError('members must be ranks 0..nworkers-1')
    if not 1 <= j['nworkers'] <= SWITCH_MAX_RANKS:
        raise ValueError('a switch job has 1..%d members' % SWITCH_MAX_RANKS)
    home = desc.get('home_pipe', 0)
    mgid = desc.get('mgid', job)
    slots = layout(j['pool_size'], j['elems'], desc.get('pool_base', 0),
                   desc.get('lane_base', desc.get('pool_base', 0) * ELEMS_STRIDE[j['elems']]))

    for pipe in desc.get('pipes', [0]):
        if pipe == home:
            p4.Ingress.job.add_with_job_home(job=job, token=token, pipe=pipe,
                                             members=(1 << j['nworkers']) - 1,
                                             nworkers_m1=j['nworkers'] - 1, mgid=mgid,
                                             recirc_port=recirc_port(home))
        else:
            p4.Ingress.job.add_with_job_remote(job=job, token=token, pipe=pipe,
                                               home_recirc_port=recirc_port(home))
    for m in members:
        p4.Ingress.member.add_with_member_ok(job=job, rank=m['rank'], ip=ip2int(m['ip']),
                                            udp_port=m['udp_port'], vlan=m.get('vlan', 0),
                                            idx=desc.get('member_base', 0) + m['rank'])
        p4.Egress.member_addr.add_with_set_member(job=job, rank=m['rank'],
                                                 mac=mac2int(m['mac']), ip=ip2int(m['ip']),
                                                 udp_port=m['udp_port'],
                                                 vid=m.get('vlan', 0))
    bm = p4.Ingress.bitmap
    max_exp = p4.Ingress.bitmap.max_exp
    for slot, pool_index, lane_base in slots:
        for s in (0, 1):
            p4.Ingress.slot_map.add_with_slot_entry(
                job=job, slot=slot, count=j['elems'], set=s, set_index=2 * pool_index + s,
                lane_idx=lane_base + s * ELEMS_STRIDE[j['elems']] // 2)
            # Both sets zeroed: older than any chunk, so the first
            # contribution of each starts a use.
            for reg in (bm.set_seq, bm.set_bitmap, bm.remaining):
                reg.mod(REGISTER_INDEX=2 * pool_index + s, f1=0)
            max_exp.mod(REGISTER_INDEX=2 * pool_index + s, f1=0)

    # Multicast: one node per member, RID = rank, so that egress_rid names
    # the member a copy is for.
    nodes = []
    for m in members:
        nid = node_id(job, m['rank'])
        pre.node.entry(multicast_node_id=nid, multicast_rid=m['rank'], multicast_lag_id=[],
                       dev_port=[m['switch_port']]).push()
        nodes.append(nid)
    pre.mgid.entry(mgid=mgid, multicast_node_id=nodes,
                   multicast_node_l1_xid_valid=[False] * len(nodes),
                   multicast_node_l1_xid=[0] * len(nodes)).push()
    if desc.get('parent'):
        setup_leaf(p4, desc)


def setup_leaf(p4, desc):
    """A tree leaf's uplink (docs/protocol.md, "Aggregation trees")."""
    j, par = desc['job'], desc['parent']
    job, home = j['id'], desc.get('home_pipe', 0)
    if not par.get('session'):
        p4.Ingress.uplink.add_with_leaf_down(job=job)
        return
    p4.Ingress.uplink.add_with_leaf_up(job=job, port=par['switch_port'])
    # Every pipe rewrites the parent's RESULT and sends it to the home
    # pipe, where it is admitted in the leaf job (inca.p4).
    for pipe in desc.get('pipes', [0]):
        p4.Ingress.parent.add_with_from_parent(
            leaf_job=job, session=data_token(j), members=(1 << j['nworkers']) - 1,
            recirc_port=recirc_port(home), ip=ip2int(par['ip']), udp_port=par['udp_port'],
            vlan=0, job=par['job'], token=par['session'], pipe=pipe)
    p4.Egress.parent_addr.add_with_set_parent(job=job, mac=mac2int(par['mac']),
                                              ip=ip2int(par['ip']), udp_port=par['udp_port'],
                                              parent_job=par['job'], rank=par['rank'],
                                              session=par['session'])


def teardown_job(p4, pre, desc):
    j = desc['job']
    job, token = j['id'], data_token(j)
    mgid = desc.get('mgid', job)
    for pipe in desc.get('pipes', [0]):
        p4.Ingress.job.delete(job=job, token=token, pipe=pipe)
    for m in desc['members']:
        p4.Ingress.member.delete(job=job, rank=m['rank'], ip=ip2int(m['ip']),
                                 udp_port=m['udp_port'], vlan=m.get('vlan', 0))
        p4.Egress.member_addr.delete(job=job, rank=m['rank'])
    for slot in range(j['pool_size']):
        for s in (0, 1):
            p4.Ingress.slot_map.delete(job=job, slot=slot, count=j['elems'], set=s)
    pre.mgid.delete(mgid=mgid)
    for m in desc['members']:
        pre.node.delete(multicast_node_id=node_id(job, m['rank']))


def main():
    desc = load()
    p4 = getattr(bfrt, desc.get('program', 'inca')).pipe   # noqa: F821 (bfshell's)
    pre = bfrt.pre                                          # noqa: F821
    if os.environ.get('INCA_TEARDOWN'):
        teardown_job(p4, pre, desc)
        print('INCA job %d removed' % desc['job']['id'])
    else:
        setup_switch(p4, desc)
        setup_job(p4, pre, desc)
        print('INCA job %d: %d members, %d slots of %d elements'
              % (desc['job']['id'], len(desc['members']), desc['job']['pool_size'],
                 desc['job']['elems']))
    bfrt.complete_operations()                               # noqa: F821


main()
