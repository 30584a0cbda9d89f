#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""The switch control plane: BMv2 simple_switch running inca_v1model, or a
Tofino running inca.p4 (from bfshell).

The data plane aggregates CONTRIBs; every other INCA message to the
aggregator's address goes to the switch's CPU port, and so do ARP requests.
This program sits on the other end of that port and does what incad's
control plane does for static jobs (docs/protocol.md, "Job lifecycle"):

- ARP for the aggregator's IPv4; HELLO -> CAPS (int32 SUM, BFP, FIXED_COUNT and
  SEQ_CHECK, the job's payload class);
- JOIN -> JOIN_ACK with the incarnation's session, after installing the
  member (member and member_addr entries, a multicast node with RID = rank
  in the job's group); a repeated JOIN from the same address gets the same
  answer, one from another address JOB_FULL;
- LEAVE -> LEAVE_ACK and a reset; HEARTBEAT -> HEARTBEAT_ACK, or NACK
  MEMBER_LOST / EVICTED / NOT_MEMBER / UNKNOWN_JOB;
- eviction: a member whose member_rx counter (its CONTRIBs, which never
  reach the CPU) and control messages have been silent for evict_ms loses
  its rank, and the job is reset;
- a reset (LEAVE, eviction) starts a new incarnation: a new random session
  replaces the job entry's token, the job's sets are zeroed, and every
  member must JOIN again (its HEARTBEATs get MEMBER_LOST until then);
- a job with a "parent" is a tree leaf (docs/protocol.md, "Aggregation
  trees"), as incad's daemon/uplink.c: HELLO the parent once, wait its
  evict_ms, JOIN it as "rank", keep its session and the member secret of
  its JOIN_ACK, HEARTBEAT it, and write the session into the uplink,
  parent and parent_addr entries (the data plane sends the partials and
  takes the parent's RESULTs); no JOIN of a member is answered while the
  leaf holds no parent session; a reset of the leaf takes the uplink down
  and LEAVEs the parent's incarnation before joining the next; the
  parent's incarnation ending (NACK MEMBER_LOST, EVICTED, NOT_MEMBER,
  UNKNOWN_JOB, or silence for its evict_ms) ends the leaf's.

The protocol side (class Control) is one for both targets; a driver does
the tables: Bmv2Switch through simple_switch's Thrift API (BMv2's own
runtime_CLI module), TofinoSwitch through bfrt_python with setup_job.py's
names. Answers go into the CPU port, from where the switch's l2 table
forwards them. Configuration (JSON):

    {"aggregator": {"ip": "10.77.0.1", "mac": "02:00:00:00:aa:00"},
     "cpu_port": 64, "hb_ms": 1000, "evict_ms": 5000,
     "hosts": [{"mac": "02:00:00:00:bb:00", "port": 1}, ...],
     "jobs": [{"id": 7, "token": 3221225473, "nworkers": 2, "pool_size": 64,
               "window": 64, "elems": 64, "pool_base": 0, "member_base": 0,
               "parent": {"ip": "10.0.100.1", "mac": "02:00:00:00:cc:00", "port": 3,
                          "rank": 2, "nworkers": 8}}],
     "dynamic": {"job_ids": [10, 99], "job_key": "<32..128 hex digits>",
                 "pool_size": 32, "elems": 64, "slots": [64, 512],
                 "member_base": 64}}

"jobs" are static ("parent", optional: the parent aggregator's IPv4, MAC
and switch port, this leaf's rank in its job and the job's size; "job",
"token" and "udp_port" default to this job's id and token and 18766);
"dynamic" lets a first JOIN of an id in job_ids create a
job (nworkers from the JOIN) with its own token, HMAC-SHA256 of the id
under job_key as incad's tenant job_key (`incactl job-token`), or one
"token" for all; each gets one block of pool_size slots from "slots"
[base, count] and is deleted when its last member leaves or is evicted.

    switch_ctl.py --config ctl.json --iface cpu1 --thrift-port 9090 \\
        --bmv2-python PREFIX/lib/python3.11/site-packages

    INCA_CTL_CONFIG=ctl.json INCA_CTL_IFACE=ens1 bfshell -b switch_ctl.py

(on a Tofino, the config may add "program", "pipes" and "home_pipe"; the
interface is the one the CPU port's frames reach, e.g. the PCIe CPU
port's netdev). SIGTERM or SIGINT ends it. The Tofino form is checked here
against a recording stand-in for bfrt only: no Tofino and no SDE here.
"""

import argparse
import contextlib
import hashlib
import hmac
import io
import json
import logging
import os
import secrets
import select
import signal
import socket
import struct
import sys
import time

VERSION = 2
INCA_PORT = 18766
HDR = struct.Struct('!BBBBHHIHBbIIHHI')
CTRL = struct.Struct('!BBHHHHHHHIIII')
(CONTRIB, RESULT, HELLO, CAPS, JOIN, JOIN_ACK, LEAVE, LEAVE_ACK, HEARTBEAT,
 HEARTBEAT_ACK, NACK) = range(1, 12)
NACK_BAD_VERSION, NACK_UNKNOWN_JOB, NACK_NOT_MEMBER, NACK_BAD_TOKEN = 1, 2, 3, 4
NACK_NO_SLOTS = 6
NACK_JOB_FULL, NACK_BAD_PARAMS, NACK_UNSUPPORTED_DTYPE, NACK_UNSUPPORTED_OP = 7, 8, 9, 10
NACK_SHUTTING_DOWN, NACK_EVICTED, NACK_MEMBER_LOST = 12, 13, 14
DTYPE_INT32, OP_SUM = 0, 0
CAP_BFP, CAP_SEQ_CHECK, CAP_FIXED_COUNT = 0x2, 0x4, 0x8
SWITCH_MAX_RANKS = 31
ELEMS_STRIDE = {64: 2, 256: 8}
ING, EGR = 'IncaIngress', 'IncaEgress'

log = logging.getLogger('switch_ctl')

SOL_PACKET, PACKET_AUXDATA = 263, 8
TP_STATUS_VLAN_VALID, TP_STATUS_VLAN_TPID_VALID = 0x10, 0x40
AUXDATA = struct.Struct('IIIHHHH')   # struct tpacket_auxdata


def vlan_tag(anc):
    """(TPID, TCI) of the tag the kernel stripped from a received frame
    into its auxdata (recvmsg's ancillary data), or None."""
    for level, kind, raw in anc:
        if level == SOL_PACKET and kind == PACKET_AUXDATA and len(raw) >= AUXDATA.size:
            status, _, _, _, _, tci, tpid = AUXDATA.unpack(raw[:AUXDATA.size])
            if status & TP_STATUS_VLAN_VALID:
                return (tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100), tci
    return None


def vlan_of(anc):
    """The VLAN id the kernel stripped from a received frame, or 0."""
    tag = vlan_tag(anc)
    return tag[1] & 0xfff if tag else 0


def csum16(data):
    if len(data) % 2:
        data += b'\0'
    s = sum(struct.unpack('!%dH' % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def mac_bytes(mac):
    return bytes.fromhex(mac.replace(':', ''))


def mac_str(b):
    return ':'.join('%02x' % x for x in b)


def udp_frame(src_mac, dst_mac, src_ip, dst_ip, sport, dport, payload):
    udp_len = 8 + len(payload)
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + udp_len, 0, 0x4000, 64, 17, 0,
                     src_ip, dst_ip)
    ip = ip[:10] + struct.pack('!H', csum16(ip)) + ip[12:]
    pseudo = src_ip + dst_ip + struct.pack('!BBH', 0, 17, udp_len)
    udp = struct.pack('!HHHH', sport, dport, udp_len, 0) + payload
    c = csum16(pseudo + udp) or 0xffff
    udp = udp[:6] + struct.pack('!H', c) + udp[8:]
    return dst_mac + src_mac + b'\x08\x00' + ip + udp


class Bmv2Switch:
    """simple_switch (inca_v1model) through BMv2's runtime_CLI module, in
    this process."""

    def __init__(self, bmv2_python, thrift_port):
        if bmv2_python:
            sys.path.insert(0, bmv2_python)
        import runtime_CLI
        import sswitch_CLI
        pre = runtime_CLI.PreType.SimplePreLAG
        services = runtime_CLI.RuntimeAPI.get_thrift_services(pre)
        services.extend(sswitch_CLI.SimpleSwitchAPI.get_thrift_services())
        with contextlib.redirect_stdout(io.StringIO()):
            std, mc, ss = runtime_CLI.thrift_connect('127.0.0.1', thrift_port, services)
            runtime_CLI.load_json_config(std, None)
        self.api = sswitch_CLI.SimpleSwitchAPI(pre, std, mc, ss)
        self.client = std

    def cmd(self, line):
        """One runtime_CLI command; its output, or RuntimeError."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.api.onecmd(line)
        text = out.getvalue()
        if 'Error' in text or 'Invalid' in text:
            raise RuntimeError('%s: %s' % (line, text.strip()))
        return text

    def handle(self, line):
        """Run a command that creates something; the handle it printed."""
        text = self.cmd(line)
        for tok in reversed(text.replace(',', ' ').split()):
            if tok.isdigit():
                return int(tok)
        raise RuntimeError('%s: no handle in %r' % (line, text))

    def setup(self, agg_mac, agg_ip, agg_port, cpu_port, l2):
        self.cmd('table_set_default %s.aggregator %s.set_source %s %s %d'
                 % (EGR, EGR, agg_mac, agg_ip, agg_port))
        self.cmd('table_add %s.agg_addr NoAction %s =>' % (ING, agg_ip))
        self.cmd('table_set_default %s.cpu %s.to_cpu %d' % (ING, ING, cpu_port))
        for mac, port in l2:
            self.cmd('table_add %s.l2 %s.l2_forward %s => %d' % (ING, ING, mac, port))

    def add_job(self, j):
        j.handles['slots'] = [
            self.handle('table_add %s.slot_map %s.slot_entry %d %d %d => %d %d'
                        % (ING, ING, j.id, s, j.elems, j.pool_base + s,
                           j.lane_base + s * ELEMS_STRIDE[j.elems]))
            for s in range(j.pool_size)]
        self.cmd('mc_mgrp_create %d' % j.mgid)

    def remove_job(self, j):
        """A job whose members are all gone: its entries and group."""
        if 'job' in j.handles:
            self.cmd('table_delete %s.job %d' % (ING, j.handles.pop('job')))
        for h in j.handles.pop('slots', []):
            self.cmd('table_delete %s.slot_map %d' % (ING, h))
        self.cmd('mc_mgrp_destroy %d' % j.mgid)

    def set_session(self, j, old, new):
        """The job entry keyed by session new instead of old (0: none)."""
        if old:
            self.cmd('table_delete %s.job %d' % (ING, j.handles.pop('job')))
        j.handles['job'] = self.handle('table_add %s.job %s.job_ok %d 0x%08x => 0x%08x %d'
                                       % (ING, ING, j.id, new, (1 << j.nworkers) - 1,
                                          j.mgid))

    def zero_sets(self, j):
        for i in range(2 * j.pool_base, 2 * (j.pool_base + j.pool_size)):
            for reg in ('set_seq', 'set_bitmap', 'max_exp', 'set_partial'):
                self.client.bm_register_write(0, '%s.%s' % (ING, reg), i, 0)

    def set_uplink(self, j, session):
        """Leaf job j's uplink under parent session @session (0: none, its
        partials wait)."""
        for key, ctl in (('uplink', ING), ('parent', ING), ('parent_addr', EGR)):
            if key in j.handles:
                self.cmd('table_delete %s.%s %d' % (ctl, key, j.handles.pop(key)))
        p = j.parent
        if not session:
            j.handles['uplink'] = self.handle('table_add %s.uplink %s.leaf_down %d =>'
                                              % (ING, ING, j.id))
            return
        ip = socket.inet_ntoa(p['ip'])
        j.handles['parent_addr'] = self.handle(
            'table_add %s.parent_addr %s.set_parent %d => %s %s %d %d %d 0x%08x'
            % (EGR, EGR, j.id, mac_str(p['mac']), ip, p['udp_port'], p['job'], p['rank'],
               session))
        j.handles['parent'] = self.handle(
            'table_add %s.parent %s.from_parent %s %d 0 %d 0x%08x => %d 0x%08x 0x%08x %d'
            % (ING, ING, ip, p['udp_port'], p['job'], session, j.id, j.session,
               (1 << j.nworkers) - 1, j.mgid))
        j.handles['uplink'] = self.handle('table_add %s.uplink %s.leaf_up %d => %d'
                                          % (ING, ING, j.id, p['port']))

    def add_member(self, j, rank, m, port):
        ip = socket.inet_ntoa(m.ip)
        m.handles['member'] = self.handle(
            'table_add %s.member %s.member_ok %d %d %s %d 0 => %d'
            % (ING, ING, j.id, rank, ip, m.udp_port, j.member_base + rank))
        m.handles['member_addr'] = self.handle(
            'table_add %s.member_addr %s.set_member %d %d => %s %s %d 0'
            % (EGR, EGR, j.id, rank, mac_str(m.mac), ip, m.udp_port))
        m.handles['node'] = self.handle('mc_node_create %d %d' % (rank, port))
        self.cmd('mc_node_associate %d %d' % (j.mgid, m.handles['node']))

    def remove_member(self, j, rank, m):
        for key, ctl in (('member', ING), ('member_addr', EGR)):
            if key in m.handles:
                self.cmd('table_delete %s.%s %d' % (ctl, key, m.handles.pop(key)))
        if 'node' in m.handles:
            node = m.handles.pop('node')
            self.cmd('mc_node_dissociate %d %d' % (j.mgid, node))
            self.cmd('mc_node_destroy %d' % node)

    def member_rx(self, j, rank):
        return self.client.bm_counter_read(0, '%s.member_rx' % ING,
                                           j.member_base + rank).packets


class TofinoSwitch:
    """A Tofino running inca.p4, through bfshell's bfrt_python object (the
    tables and names of setup_job.py). Written against the SDE 9.x API and
    checked here against a recording stand-in only (no Tofino, no SDE)."""

    NODE_ROOM = 32   # PRE node ids: job * NODE_ROOM + rank + 1

    def __init__(self, bfrt, program='inca', pipes=(0,), home_pipe=0):
        self.p4 = getattr(bfrt, program).pipe
        self.pre = bfrt.pre
        self.bfrt = bfrt
        self.pipes, self.home = list(pipes), home_pipe

    @staticmethod
    def recirc_port(pipe):
        return (pipe << 7) | 68

    def setup(self, agg_mac, agg_ip, agg_port, cpu_port, l2):
        ing, egr = self.p4.Ingress, self.p4.Egress
        ing.agg_addr.add_with_is_aggregator(ip=ip2int(agg_ip))
        egr.aggregator.set_default_with_set_source(mac=mac2int(agg_mac), ip=ip2int(agg_ip),
                                                   udp_port=agg_port)
        ing.cpu.set_default_with_to_cpu(port=cpu_port)
        for mac, port in l2:
            ing.l2.add_with_l2_forward(mac=mac2int(mac), port=port)
        for pipe in self.pipes:
            self.p4.IngressParser.recirc_ports.add(f1=self.recirc_port(pipe))

    def add_job(self, j):
        stride = ELEMS_STRIDE[j.elems]
        for s in range(j.pool_size):
            for st in (0, 1):
                self.p4.Ingress.slot_map.add_with_slot_entry(
                    job=j.id, slot=s, count=j.elems, set=st,
                    set_index=2 * (j.pool_base + s) + st,
                    lane_idx=j.lane_base + s * stride + st * stride // 2)
        self.pre.mgid.entry(mgid=j.mgid, multicast_node_id=[],
                            multicast_node_l1_xid_valid=[],
                            multicast_node_l1_xid=[]).push()

    def remove_job(self, j):
        for pipe in self.pipes:
            self.p4.Ingress.job.delete(job=j.id, token=j.session, pipe=pipe)
        for s in range(j.pool_size):
            for st in (0, 1):
                self.p4.Ingress.slot_map.delete(job=j.id, slot=s, count=j.elems, set=st)
        self.pre.mgid.delete(mgid=j.mgid)

    def set_session(self, j, old, new):
        job = self.p4.Ingress.job
        for pipe in self.pipes:
            if old:
                job.delete(job=j.id, token=old, pipe=pipe)
            if pipe == self.home:
                job.add_with_job_home(job=j.id, token=new, pipe=pipe,
                                      members=(1 << j.nworkers) - 1,
                                      nworkers_m1=j.nworkers - 1, mgid=j.mgid,
                                      recirc_port=self.recirc_port(self.home))
            else:
                job.add_with_job_remote(job=j.id, token=new, pipe=pipe,
                                        home_recirc_port=self.recirc_port(self.home))

    def zero_sets(self, j):
        bm = self.p4.Ingress.bitmap
        for i in range(2 * j.pool_base, 2 * (j.pool_base + j.pool_size)):
            for reg in (bm.set_seq, bm.set_bitmap, bm.remaining, bm.max_exp):
                reg.mod(REGISTER_INDEX=i, f1=0)

    def set_uplink(self, j, session):
        ing, egr, p = self.p4.Ingress, self.p4.Egress, j.parent
        ip = ip2int(socket.inet_ntoa(p['ip']))
        old = j.handles.pop('uplink', None)
        if old is not None:
            ing.uplink.delete(job=j.id)
        if old:
            for pipe in self.pipes:
                ing.parent.delete(ip=ip, udp_port=p['udp_port'], vlan=0, job=p['job'],
                                  token=old, pipe=pipe)
            egr.parent_addr.delete(job=j.id)
        j.handles['uplink'] = session
        if not session:
            ing.uplink.add_with_leaf_down(job=j.id)
            return
        egr.parent_addr.add_with_set_parent(job=j.id, mac=mac2int(mac_str(p['mac'])), ip=ip,
                                            udp_port=p['udp_port'], parent_job=p['job'],
                                            rank=p['rank'], session=session)
        # Every pipe rewrites the parent's RESULT into the leaf job and
        # sends it to the home pipe (inca.p4).
        for pipe in self.pipes:
            ing.parent.add_with_from_parent(leaf_job=j.id, session=j.session,
                                            members=(1 << j.nworkers) - 1,
                                            recirc_port=self.recirc_port(self.home),
                                            ip=ip, udp_port=p['udp_port'], vlan=0,
                                            job=p['job'], token=session, pipe=pipe)
        ing.uplink.add_with_leaf_up(job=j.id, port=p['port'])

    def node_id(self, j, rank):
        return j.id * self.NODE_ROOM + rank + 1

    def add_member(self, j, rank, m, port):
        ip = ip2int(socket.inet_ntoa(m.ip))
        self.p4.Ingress.member.add_with_member_ok(job=j.id, rank=rank, ip=ip,
                                                 udp_port=m.udp_port, vlan=0,
                                                 idx=j.member_base + rank)
        self.p4.Egress.member_addr.add_with_set_member(job=j.id, rank=rank,
                                                      mac=mac2int(mac_str(m.mac)), ip=ip,
                                                      udp_port=m.udp_port, vid=0)
        nid = self.node_id(j, rank)
        self.pre.node.entry(multicast_node_id=nid, multicast_rid=rank, multicast_lag_id=[],
                            dev_port=[port]).push()
        self.pre.mgid.mod_inc(mgid=j.mgid, multicast_node_id=[nid],
                              multicast_node_l1_xid_valid=[False], multicast_node_l1_xid=[0])
        m.handles['tofino'] = (ip, nid)

    def remove_member(self, j, rank, m):
        if 'tofino' not in m.handles:
            return
        ip, nid = m.handles.pop('tofino')
        self.p4.Ingress.member.delete(job=j.id, rank=rank, ip=ip, udp_port=m.udp_port,
                                      vlan=0)
        self.p4.Egress.member_addr.delete(job=j.id, rank=rank)
        self.pre.mgid.mod_dec(mgid=j.mgid, multicast_node_id=[nid],
                              multicast_node_l1_xid_valid=[False], multicast_node_l1_xid=[0])
        self.pre.node.delete(multicast_node_id=nid)

    def member_rx(self, j, rank):
        e = self.p4.Ingress.member_rx.get(COUNTER_INDEX=j.member_base + rank, from_hw=True,
                                          print_ents=False)
        try:
            return int(e.data[b'$COUNTER_SPEC_PKTS'])
        except (AttributeError, KeyError, TypeError, ValueError):
            return 0


def ip2int(ip):
    return int.from_bytes(socket.inet_aton(ip), 'big')


def mac2int(mac):
    return int(mac.replace(':', ''), 16)


class Member:
    def __init__(self, ip, udp_port, mac):
        self.ip, self.udp_port, self.mac = ip, udp_port, mac
        self.inc = 0            # incarnation it last joined
        self.secret = 0         # member secret of that JOIN (its LEAVE, HEARTBEAT)
        self.handles = {}       # the switch driver's entries for it
        self.rx = 0             # member_rx at the last look
        self.seen = time.monotonic()


class Job:
    def __init__(self, conf):
        self.id = conf['id']
        self.token = conf['token']
        self.nworkers = conf['nworkers']
        self.pool_size = conf['pool_size']
        self.window = min(conf.get('window', self.pool_size), self.pool_size)
        self.elems = conf.get('elems', 64)
        self.pool_base = conf.get('pool_base', 0)
        self.lane_base = conf.get('lane_base', self.pool_base * ELEMS_STRIDE[self.elems])
        self.member_base = conf.get('member_base', 0)
        self.mgid = conf.get('mgid', self.id)
        if not 1 <= self.nworkers <= SWITCH_MAX_RANKS:
            raise ValueError('job %d: nworkers must be 1..%d' % (self.id, SWITCH_MAX_RANKS))
        if self.elems not in ELEMS_STRIDE:
            raise ValueError('job %d: elems must be 64 or 256' % self.id)
        self.dynamic = conf.get('dynamic', False)   # deleted when its last member goes
        self.block = conf.get('block')              # dynamic: its slot block
        self.session = 0
        self.prev = 0
        self.inc = 0
        self.handles = {}       # the switch driver's entries for the job
        self.members = {}       # rank -> Member (admitted)
        self.evicted = {}       # rank -> (ip, udp_port) evicted, not rejoined
        self.parent = None      # a tree leaf's parent (Uplink)
        self.up = None
        pc = conf.get('parent')
        if pc is not None:
            if self.dynamic:
                raise ValueError('job %d: only static jobs can be leaves' % self.id)
            self.parent = {'ip': socket.inet_aton(pc['ip']), 'mac': mac_bytes(pc['mac']),
                           'port': pc['port'], 'udp_port': pc.get('udp_port', INCA_PORT),
                           'job': pc.get('job', self.id), 'rank': pc['rank'],
                           'nworkers': pc['nworkers'], 'token': pc.get('token', self.token)}

    def granted_window(self):
        """A leaf grants its members no larger window than its parent did."""
        if self.up is not None and self.up.window:
            return min(self.window, self.up.window)
        return self.window


class Uplink:
    """A leaf job's membership in its parent's job (docs/protocol.md,
    "Aggregation trees"), as incad's daemon/uplink.c keeps it: one worker
    of the parent's job, whose data the data plane sends."""

    FIRST_RETRY, MAX_RETRY = 0.02, 1.0

    def __init__(self, ctl, j):
        self.ctl, self.j, self.p = ctl, j, j.parent
        self.session = 0        # the parent session held (0: none)
        self.left = 0           # the one last left: a late JOIN_ACK of it is ignored
        self.secret = 0         # the member secret of its JOIN_ACK
        self.window = 0
        self.hb, self.evict = ctl.hb_ms / 1000.0, ctl.evict_ms / 1000.0
        self.last_rx = 0.0
        self.enter('hello')     # first start: wait out a previous run's membership

    def enter(self, state):
        self.state, self.since = state, time.monotonic()
        self.next_tx, self.backoff = self.since, self.FIRST_RETRY

    def retry_later(self, now):
        self.next_tx = now + self.backoff
        self.backoff = min(self.backoff * 2, self.MAX_RETRY)

    def send(self, mtype, token, body=b''):
        p = self.p
        h = HDR.pack(VERSION, mtype, DTYPE_INT32 if mtype == JOIN else 0, 0, p['job'],
                     p['rank'], token, 0, 0, 0, 0, 0, 0, 0,
                     self.secret if mtype in (LEAVE, HEARTBEAT) else 0)
        self.ctl.send(p['mac'], p['ip'], p['udp_port'], h + body)

    def join_body(self, mtype):
        j = self.j
        if mtype == HELLO:
            return CTRL.pack(VERSION, VERSION, 1 << DTYPE_INT32, 1 << OP_SUM, j.elems,
                             0, 0, 0, 0, 0, 0, 0, 0)
        return CTRL.pack(VERSION, VERSION, 1 << DTYPE_INT32, 1 << OP_SUM, j.elems,
                         self.p['nworkers'], j.pool_size, j.window, 0, 0, 0, 0, 0)

    def down(self):
        """Stop sending under the parent session at once."""
        if self.session:
            self.ctl.sw.set_uplink(self.j, 0)
            self.left, self.session = self.session, 0

    def reset(self):
        """The leaf's own incarnation ends: leave the parent's."""
        if self.session:
            self.down()
            log.info('job %d: reset here, leaving parent session 0x%08x', self.j.id,
                     self.left)
            self.enter('leaving')

    def lost(self, why):
        log.info('job %d: parent job %d session 0x%08x lost (%s): members rejoin',
                 self.j.id, self.p['job'], self.session, why)
        self.down()
        self.enter('joining')
        self.ctl.new_incarnation(self.j)

    def timer(self, now):
        if self.state == 'up':
            if now - self.last_rx > self.evict:
                self.lost('the parent is silent')
            elif now >= self.next_tx:
                self.send(HEARTBEAT, self.session)
                self.next_tx = now + min(self.hb, self.evict / 3)
        elif self.state == 'hold':
            if now >= self.hold_until:
                self.enter('joining')
        elif self.state == 'leaving' and now - self.since > self.evict:
            self.enter('joining')   # the parent evicts this leaf anyway
        elif now >= self.next_tx and self.state in ('hello', 'joining', 'leaving'):
            if self.state == 'leaving':
                self.send(LEAVE, self.left)
            else:
                mtype = HELLO if self.state == 'hello' else JOIN
                self.send(mtype, self.p['token'], self.join_body(mtype))
            self.retry_later(now)

    def on_message(self, h, body):
        mtype, token, now = h[1], h[6], time.monotonic()
        c = CTRL.unpack(body) if len(body) >= CTRL.size else None
        if mtype == CAPS and self.state == 'hello' and c is not None:
            # Its evict_ms, its timer and a margin, as incad waits.
            wait = (c[10] + c[10] / 8 + 100) / 1000.0
            log.info('job %d: first JOIN to the parent in %d ms', self.j.id, wait * 1000)
            self.enter('hold')
            self.hold_until = now + wait
        elif mtype == JOIN_ACK and self.state == 'joining' and token == self.p['token'] \
                and c is not None and c[12] not in (0, self.left):
            self.join_ack(h, c, now)
        elif mtype == LEAVE_ACK and self.state == 'leaving' and token == self.left:
            self.enter('joining')
        elif mtype == HEARTBEAT_ACK and self.state == 'up' and token == self.session:
            self.last_rx = now
        elif mtype == NACK and self.state == 'joining' and token == self.p['token']:
            log.error('job %d: parent job %d refused the JOIN (reason %d)', self.j.id,
                      self.p['job'], h[13])
            self.next_tx, self.backoff = now + self.MAX_RETRY, self.MAX_RETRY
        elif mtype == NACK and self.state == 'up' and token == self.session and \
                h[13] in (NACK_MEMBER_LOST, NACK_EVICTED, NACK_NOT_MEMBER, NACK_UNKNOWN_JOB):
            self.lost('NACK %d' % h[13])
        elif mtype == NACK and token == self.session:
            # About one chunk (MISMATCH, TOO_LARGE, ...): the Tofino subset
            # has no MISMATCH; its set stays PARTIAL, its members time out.
            log.warning('job %d: the parent refused slot %d seq %d (reason %d)', self.j.id,
                        h[7], h[10], h[13])

    def join_ack(self, h, c, now):
        j = self.j
        max_elems, pool, window, hb_ms, evict_ms, session = c[4], c[6], c[7], c[9], c[10], c[12]
        if pool != j.pool_size or max_elems < j.elems or not 0 < window <= pool:
            # Chunk k must land in the same slot and set on both levels,
            # and the partial is a whole payload class.
            log.error('job %d: the parent grants pool %d, window %d, max_elems %d; this job '
                      'has pool %d of %d elements: fix the configurations', j.id, pool,
                      window, max_elems, j.pool_size, j.elems)
            self.next_tx, self.backoff = now + self.MAX_RETRY, self.MAX_RETRY
            return
        self.secret, self.window = h[14], window
        self.hb = (hb_ms or self.ctl.hb_ms) / 1000.0
        self.evict = (evict_ms or self.ctl.evict_ms) / 1000.0
        self.session = session
        self.ctl.sw.set_uplink(j, session)
        self.enter('up')
        self.last_rx = now
        self.next_tx = now + min(self.hb, self.evict / 3)
        log.info('job %d: joined parent job %d as rank %d, session 0x%08x, window %d',
                 j.id, self.p['job'], self.p['rank'], session, window)

    def stop(self):
        """Best effort, once: the parent resets now rather than evicting."""
        if self.session:
            self.down()
            self.send(LEAVE, self.left)


class Control:
    def __init__(self, conf, sw, sock):
        self.sw, self.sock = sw, sock
        agg = conf['aggregator']
        self.agg_ip = socket.inet_aton(agg['ip'])
        self.agg_mac = mac_bytes(agg['mac'])
        self.agg_port = agg.get('udp_port', INCA_PORT)
        self.cpu_port = conf.get('cpu_port', 64)
        self.hb_ms = conf.get('hb_ms', 1000)
        self.evict_ms = max(1, conf.get('evict_ms', 5000))
        self.hosts = {h['mac'].lower(): h['port'] for h in conf.get('hosts', [])}
        self.jobs = {}
        for jc in conf.get('jobs', []):
            j = Job(jc)
            self.jobs[j.id] = j
            if j.parent is not None:
                self.hosts.setdefault(mac_str(j.parent['mac']), j.parent['port'])
        self.dyn = self.dynamic_conf(conf.get('dynamic'))
        self.setup()

    def dynamic_conf(self, d):
        """The "dynamic" block: job ids [lo, hi] whose first JOIN creates
        the job, with a token ("token", the same for all) or per-job tokens
        ("job_key", hex: HMAC-SHA256 as incad's tenant job_key); jobs of
        "pool_size" slots of "elems" elements each, from "slots": [base,
        count] of the slot registers (one fixed block per job)."""
        if d is None:
            return None
        d = dict(d)
        lo, hi = d['job_ids']
        if not 1 <= lo <= hi <= 65535 or any(lo <= i <= hi for i in self.jobs):
            raise ValueError('dynamic job_ids %s: out of 1..65535 or over a static job'
                             % d['job_ids'])
        if 'job_key' in d:
            d['key'] = bytes.fromhex(d['job_key'])
            if not 16 <= len(d['key']) <= 64:
                raise ValueError('dynamic job_key: 16 to 64 bytes in hex')
        elif 'token' not in d:
            raise ValueError('dynamic jobs need a token or a job_key')
        d.setdefault('elems', 64)
        d.setdefault('pool_size', 32)
        base, count = d['slots']
        d['free'] = list(range(count // d['pool_size']))
        d['base'] = base
        return d

    def dynamic_token(self, job):
        d = self.dyn
        if 'key' in d:
            mac = hmac.new(d['key'], b'INCA job token' + job.to_bytes(2, 'big'),
                           hashlib.sha256).digest()
            return int.from_bytes(mac[:4], 'big') or 1
        return d['token']

    def create_job(self, job, token, nworkers):
        """A dynamic job for a JOIN of an unknown id: the Job, or a NACK
        reason."""
        d = self.dyn
        if d is None or not d['job_ids'][0] <= job <= d['job_ids'][1] or \
                token != self.dynamic_token(job):
            return NACK_UNKNOWN_JOB
        if not 1 <= nworkers <= SWITCH_MAX_RANKS:
            return NACK_BAD_PARAMS
        if not d['free']:
            return NACK_NO_SLOTS
        block = d['free'].pop(0)
        j = Job({'id': job, 'token': token, 'nworkers': nworkers,
                 'pool_size': d['pool_size'], 'window': d.get('window', d['pool_size']),
                 'elems': d['elems'], 'pool_base': d['base'] + block * d['pool_size'],
                 'member_base': d.get('member_base', 0) + block * SWITCH_MAX_RANKS,
                 'dynamic': True, 'block': block})
        self.sw.add_job(j)
        self.new_incarnation(j)
        self.jobs[job] = j
        log.info('job %d created (dynamic): %d ranks, %d slots at %d', job, nworkers,
                 j.pool_size, j.pool_base)
        return j

    def delete_job(self, j):
        self.sw.remove_job(j)
        del self.jobs[j.id]
        self.dyn['free'].append(j.block)
        log.info('job %d deleted (its last member went)', j.id)

    # -- switch state --

    def setup(self):
        l2 = [(mac_str(self.agg_mac), self.cpu_port), ('ff:ff:ff:ff:ff:ff', self.cpu_port)]
        l2 += sorted(self.hosts.items())
        # ARP and anything else for the aggregator's MAC go to the CPU.
        self.sw.setup(mac_str(self.agg_mac), socket.inet_ntoa(self.agg_ip), self.agg_port,
                      self.cpu_port, l2)
        for j in self.jobs.values():
            self.sw.add_job(j)
            self.new_incarnation(j)
            if j.parent is not None:
                self.sw.set_uplink(j, 0)
                j.up = Uplink(self, j)
            log.info('job %d: %d ranks, %d slots of %d elements, session 0x%08x',
                     j.id, j.nworkers, j.pool_size, j.elems, j.session)

    def new_incarnation(self, j):
        """Session n+1: the old one's CONTRIBs miss the job table, the sets
        are zeroed (IDLE), every member must JOIN again."""
        if j.up is not None:
            j.up.reset()
        s = 0
        while s in (0, j.token, j.session):
            s = secrets.randbits(32)
        # The old session's CONTRIBs miss the job table before the sets are
        # zeroed: none can start a use in the new incarnation's sets.
        self.sw.set_session(j, j.session, s)
        self.sw.zero_sets(j)
        j.prev, j.session, j.inc = j.session, s, j.inc + 1

    def admit(self, j, rank, m, port):
        self.sw.add_member(j, rank, m, port)
        m.rx = self.sw.member_rx(j, rank)

    def remove(self, j, rank):
        m = j.members.pop(rank)
        self.sw.remove_member(j, rank, m)
        return m

    def reset(self, j, why):
        if any(m.inc == j.inc for m in j.members.values()):
            self.new_incarnation(j)
            log.info('job %d: %s; new incarnation, session 0x%08x', j.id, why, j.session)

    # -- messages --

    def send(self, dst_mac, dst_ip, dport, payload):
        self.sock.send(udp_frame(self.agg_mac, dst_mac, self.agg_ip, dst_ip,
                                 self.agg_port, dport, payload))

    def reply(self, src, h, mtype, reason=0, body=b'', bitmap=0):
        """Answer message h from src = (mac, ip, port): the header echoed,
        with type, reason and bitmap (a JOIN_ACK's member secret, else 0);
        a NACK zeroes dtype, op, exp and count too."""
        f = list(h)
        f[1] = mtype
        f[13] = reason
        f[14] = bitmap
        if mtype == NACK:
            f[2] = f[3] = f[9] = f[12] = 0
        self.send(src[0], src[1], src[2], HDR.pack(*f) + body)

    def caps_body(self, j=None, session=0):
        e = j.elems if j else max([x.elems for x in self.jobs.values()] or [64])
        pool = j.pool_size if j else 0
        win = j.granted_window() if j else 0
        return CTRL.pack(VERSION, VERSION, 1 << DTYPE_INT32, 1 << OP_SUM, e,
                         j.nworkers if j else 0, pool, win,
                         CAP_BFP | CAP_SEQ_CHECK | CAP_FIXED_COUNT,
                         self.hb_ms, self.evict_ms, j.pool_base if j else 0, session)

    def on_frame(self, data):
        if len(data) < 14:
            return
        etype = struct.unpack('!H', data[12:14])[0]
        if etype == 0x0806:
            self.on_arp(data)
            return
        if etype != 0x0800 or len(data) < 42 or data[14] != 0x45 or data[23] != 17:
            return
        src_ip, dst_ip = data[26:30], data[30:34]
        sport, dport = struct.unpack('!HH', data[34:38])
        if dst_ip != self.agg_ip or dport != self.agg_port or len(data) < 42 + HDR.size:
            return
        h = HDR.unpack(data[42:42 + HDR.size])
        body = data[42 + HDR.size:42 + HDR.size + CTRL.size]
        src = (data[6:12], src_ip, sport)
        for j in self.jobs.values():
            p = j.parent
            if p is not None and (p['ip'], p['udp_port'], p['job']) == (src_ip, sport, h[4]):
                j.up.on_message(h, body)
                return
        if h[1] == HELLO:
            self.reply(src, h, CAPS, body=self.caps_body())
            return
        if h[0] != VERSION:
            if h[1] in (JOIN, LEAVE, HEARTBEAT):
                self.reply(src, h, NACK, NACK_BAD_VERSION, self.caps_body())
            return
        handler = {JOIN: self.on_join, LEAVE: self.on_leave,
                   HEARTBEAT: self.on_heartbeat}.get(h[1])
        if handler is None:
            return
        j = self.jobs.get(h[4])
        if j is None and h[1] == JOIN and len(body) >= CTRL.size:
            j = self.create_job(h[4], h[6], CTRL.unpack(body)[5])
            if not isinstance(j, Job):
                self.reply(src, h, NACK, j)
                return
        if j is None:
            # A LEAVE of a job that does not exist is done already.
            if h[1] == LEAVE:
                self.reply(src, h, LEAVE_ACK)
            else:
                self.reply(src, h, NACK, NACK_UNKNOWN_JOB)
            return
        handler(src, h, body, j)
        if j.dynamic and not j.members and j.id in self.jobs:
            self.delete_job(j)

    def on_arp(self, data):
        if len(data) < 42 or data[20:22] != b'\x00\x01' or data[38:42] != self.agg_ip:
            return
        sha, spa = data[22:28], data[28:32]
        arp = (b'\x00\x01\x08\x00\x06\x04\x00\x02' + self.agg_mac + self.agg_ip + sha + spa)
        self.sock.send(sha + self.agg_mac + b'\x08\x06' + arp + b'\0' * 18)

    def member_of(self, j, rank, src):
        m = j.members.get(rank)
        return m if m is not None and (m.ip, m.udp_port) == (src[1], src[2]) else None

    def on_join(self, src, h, body, j):
        job, rank, token = h[4], h[5], h[6]
        if token != j.token:
            self.reply(src, h, NACK, NACK_BAD_TOKEN)
            return
        if len(body) < CTRL.size:
            self.reply(src, h, NACK, NACK_BAD_PARAMS)
            return
        c = CTRL.unpack(body)
        ver_min, ver_max, dtypes, ops, max_elems, nworkers = c[:6]
        if ver_min > VERSION or ver_max < VERSION:
            self.reply(src, h, NACK, NACK_BAD_VERSION, self.caps_body())
            return
        if nworkers != j.nworkers or rank >= j.nworkers:
            self.reply(src, h, NACK, NACK_BAD_PARAMS)
            return
        if (dtypes or 1 << h[2]) & ~(1 << DTYPE_INT32):
            self.reply(src, h, NACK, NACK_UNSUPPORTED_DTYPE)
            return
        if (ops or 1 << h[3]) & ~(1 << OP_SUM):
            self.reply(src, h, NACK, NACK_UNSUPPORTED_OP)
            return
        if j.up is not None and not j.up.session:
            # A leaf without a parent session: the worker retries.
            return
        if max_elems and max_elems < j.elems:
            # The switch adds exactly its payload class.
            self.reply(src, h, NACK, NACK_BAD_PARAMS)
            return
        port = self.hosts.get(mac_str(src[0]))
        if port is None:
            log.warning('job %d rank %d: JOIN from %s, a MAC not in "hosts"', job, rank,
                        mac_str(src[0]))
            self.reply(src, h, NACK, NACK_NOT_MEMBER)
            return
        m = j.members.get(rank)
        if m is not None and (m.ip, m.udp_port) != (src[1], src[2]):
            self.reply(src, h, NACK, NACK_JOB_FULL)
            return
        if m is None:
            m = Member(src[1], src[2], src[0])
            try:
                self.admit(j, rank, m, port)
            except RuntimeError as e:
                log.error('job %d rank %d: %s', job, rank, e)
                j.members[rank] = m
                self.remove(j, rank)
                self.reply(src, h, NACK, NACK_BAD_PARAMS)
                return
            j.members[rank] = m
            j.evicted.pop(rank, None)
            log.info('job %d: rank %d joined from %s:%d (port %d)', job, rank,
                     socket.inet_ntoa(src[1]), src[2], port)
        if m.inc != j.inc:
            # Joining this incarnation: a new member secret (docs/protocol.md,
            # "Member secrets"); a repeated JOIN gets the same one.
            m.secret = secrets.randbits(32) or 1
        m.inc = j.inc
        m.seen = time.monotonic()
        self.reply(src, h, JOIN_ACK, body=self.caps_body(j, j.session), bitmap=m.secret)

    def on_leave(self, src, h, body, j):
        job, rank, token = h[4], h[5], h[6]
        m = self.member_of(j, rank, src)
        if m is None or token not in (j.session, j.prev):
            return      # forged or stray: no answer
        if token == j.session or m.inc != j.inc:
            if h[14] != m.secret:
                return  # the member's addresses and session, not its secret
            self.remove(j, rank)
            log.info('job %d: rank %d left', job, rank)
            self.reset(j, 'rank %d left' % rank)
        self.reply(src, h, LEAVE_ACK)

    def on_heartbeat(self, src, h, body, j):
        rank, token = h[5], h[6]
        m = self.member_of(j, rank, src)
        if m is None:
            if j.evicted.get(rank) == (src[1], src[2]) and token in (j.session, j.prev):
                self.reply(src, h, NACK, NACK_EVICTED)
            return
        if h[14] != m.secret:
            return      # not the member's: no effect, no answer
        if token == j.session and m.inc == j.inc:
            m.seen = time.monotonic()
            self.reply(src, h, HEARTBEAT_ACK)
        elif token in (j.session, j.prev):
            self.reply(src, h, NACK, NACK_MEMBER_LOST)

    # -- liveness --

    def check_liveness(self):
        now = time.monotonic()
        for j in self.jobs.values():
            gone = []
            for rank, m in j.members.items():
                rx = self.sw.member_rx(j, rank)
                if rx != m.rx:
                    m.rx, m.seen = rx, now
                elif (now - m.seen) * 1000 > self.evict_ms:
                    gone.append(rank)
            for rank in gone:
                m = self.remove(j, rank)
                j.evicted[rank] = (m.ip, m.udp_port)
                log.info('job %d: rank %d evicted (silent %d ms)', j.id, rank,
                         self.evict_ms)
            if gone:
                self.reset(j, 'rank(s) %s evicted' % gone)
        for j in [j for j in self.jobs.values() if j.dynamic and not j.members]:
            self.delete_job(j)

    def run(self, stop):
        period = max(0.01, min(self.hb_ms, self.evict_ms) / 2000.0)
        next_check = time.monotonic() + period
        uplinks = [j.up for j in self.jobs.values() if j.up is not None]
        while not stop:
            for u in uplinks:
                u.timer(time.monotonic())
            r, _, _ = select.select([self.sock], [], [], min(period, 0.02) if uplinks
                                    else period)
            if r:
                data, anc, _, addr = self.sock.recvmsg(65536, socket.CMSG_SPACE(AUXDATA.size))
                if addr[2] == socket.PACKET_OUTGOING:
                    continue
                vid = vlan_of(anc)
                if vid:
                    # Tagged members need their VLAN in the member and
                    # member_addr entries (gen_commands.py does that for
                    # static set-ups); this control plane admits untagged
                    # ones only, rather than a member whose data would
                    # then miss the member table.
                    log.warning('ignored a frame on VLAN %d: untagged members only', vid)
                    continue
                self.on_frame(data)
            if time.monotonic() >= next_check:
                self.check_liveness()
                next_check = time.monotonic() + period


def serve(conf, sw, iface):
    """Answer on @iface until SIGTERM or SIGINT; the exit code."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    sock.bind((iface, 0))
    sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    try:
        ctl = Control(conf, sw, sock)
    except (ValueError, RuntimeError, KeyError) as e:
        log.error('configuration: %s', e)
        return 1
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    signal.signal(signal.SIGINT, lambda *a: stop.append(1))
    log.info('ready on %s', iface)
    ctl.run(stop)
    for j in ctl.jobs.values():
        if j.up is not None:
            j.up.stop()
    log.info('stopped')
    return 0


def bfshell_main(bfrt):
    """Under bfshell -b: the Tofino driver, configuration from the
    environment."""
    logging.basicConfig(level=logging.INFO, format='switch_ctl: %(message)s')
    with open(os.environ['INCA_CTL_CONFIG']) as f:
        conf = json.load(f)
    sw = TofinoSwitch(bfrt, conf.get('program', 'inca'), conf.get('pipes', [0]),
                      conf.get('home_pipe', 0))
    return serve(conf, sw, os.environ['INCA_CTL_IFACE'])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog='\n'.join(__doc__.splitlines()[2:]))
    ap.add_argument('--config', required=True, help='JSON configuration (see above)')
    ap.add_argument('--iface', required=True, help='interface on the switch\'s CPU port')
    ap.add_argument('--thrift-port', type=int, default=9090)
    ap.add_argument('--bmv2-python', help='site-packages directory with runtime_CLI.py')
    ap.add_argument('--connect-timeout', type=float, default=30,
                    help='seconds to wait for the switch\'s Thrift server')
    ap.add_argument('-v', '--verbose', action='store_true')
    args = ap.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format='switch_ctl: %(message)s')
    with open(args.config) as f:
        conf = json.load(f)

    deadline = time.monotonic() + args.connect_timeout
    while True:
        try:
            sw = Bmv2Switch(args.bmv2_python, args.thrift_port)
            break
        except (Exception, SystemExit) as e:  # runtime_CLI exits when it cannot connect
            if time.monotonic() > deadline:
                log.error('no switch on thrift port %d: %s', args.thrift_port, e)
                return 1
            time.sleep(0.2)
    return serve(conf, sw, args.iface)


if 'bfrt' in globals():
    bfshell_main(bfrt)          # noqa: F821 (bfshell's)
elif __name__ == '__main__':
    sys.exit(main())
