#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""incad on net_pcap ports: one case per behaviour (meson suite 'dpdk').

Usage: test_incad.py INCAD CASE
"""

import hashlib
import hmac
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from incadtest import (  # noqa: E402
    ARP, CAP_SEQ_CHECK, CAPS, CONTRIB, F_RETX, F_SET, FP16, FP32, HDR_FIELDS, HDR_FMT,
    HEARTBEAT, HEARTBEAT_ACK, HELLO, ICMP, INCA_PORT, INT32, IP, JOIN, JOIN_ACK, LEAVE, LEAVE_ACK,
    MAX, MIN, NACK, NACK_REASONS, RESULT, SUM, TOKEN, UDP, Ether, Raw, agg_ip,
    agg_mac, base_config, check, checksums_ok, contrib, ctrl, hdr, incad_path, join,
    main, member_secret, run_incad, session, udp_frame, worker_ip, worker_mac, SESSION_SEED,
    AGG_QKEY, AGG_QPN, CAP_ROCE, contrib_msg, ROCE_PORT, UD_SEND_ONLY, roce_ext, roce_frame,
    roce_icrc_ok, roce_msgs)

def results(run, port=0):
    return [m for m in run.msgs(port) if m.type == RESULT]


def of_type(run, mtype, port=0):
    return [m for m in run.msgs(port) if m.type == mtype]


def check_to_worker(m, rank, port=0, sport=None):
    """@m goes to worker @rank from incad's address and INCA port."""
    p = m.pkt
    check(p[Ether].dst == worker_mac(rank), '%r: wrong destination MAC' % m)
    check(p[Ether].src == agg_mac(port), '%r: wrong source MAC' % m)
    check(p[IP].dst == worker_ip(rank), '%r: wrong destination IP' % m)
    check(p[UDP].dport == (40000 + rank if sport is None else sport),
          '%r: wrong destination port' % m)
    check(p[UDP].sport == INCA_PORT, '%r: not from the INCA port' % m)
    check(checksums_ok(p), '%r: bad IPv4 or UDP checksum' % m)


def check_results(msgs, ranks, expect, slot, seq, dtype=INT32, flags=0, nworkers=None):
    """Exactly one RESULT per rank in @ranks for (slot, seq), with @expect."""
    mine = [m for m in msgs if m['slot'] == slot and m['seq'] == seq]
    got = sorted(m['rank'] for m in mine)
    check(got == sorted(ranks), 'slot %d seq %d: RESULTs for ranks %s, expected %s'
          % (slot, seq, got, sorted(ranks)))
    full = (1 << (nworkers or len(ranks))) - 1
    for m in mine:
        check_to_worker(m, m['rank'])
        check(m['bitmap'] == full, '%r: bitmap 0x%x, expected 0x%x' % (m, m['bitmap'], full))
        check(m['dtype'] == dtype, '%r: dtype' % m)
        check(m['flags'] == flags, '%r: flags 0x%x, expected 0x%x' % (m, m['flags'], flags))
        # A RESULT names the incarnation it belongs to.
        check(m['token'] == session(m['job']), '%r: token' % m)
        vals = m.values()
        if dtype == INT32:
            ok = vals == list(expect)
        else:
            ok = np.array_equal(np.array(vals, dtype=np.float64),
                                np.array(expect, dtype=np.float64))
        check(ok, 'slot %d: values %s, expected %s' % (slot, vals, list(expect)))


def case_help():
    p = subprocess.run([incad_path(), '--help'], capture_output=True, text=True, timeout=20)
    check(p.returncode == 0, '--help exited %d' % p.returncode)
    check('Usage:' in p.stdout and '-c' in p.stdout, 'no usage text on stdout')
    check('EAL' not in p.stderr, '--help started EAL')
    p = subprocess.run([incad_path(), '--no-huge', '--no-pci', '--', '--bogus'],
                       capture_output=True, text=True, timeout=20)
    check(p.returncode != 0, 'an unknown option was accepted')


BAD_CONFIGS = [
    # (config text, line of the error, text the message must contain)
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'roce = {\n enabled = true;\n qpn = 1; };\n', 4, 'out of range'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'roce = { enabled = true;\n qkey = 0x80000000; };\n', 3, 'out of range'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'inca_port = 4791;\nroce = { enabled = true; };\n', 3, 'RoCEv2 port'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'inca_port = 1;\nbogus_key = 3;\n', 3, "unknown key 'bogus_key'"),
    ('ports = (\n { name = "p0"; device = "x";\n ipv4 = "10.0.0.300"; }\n);\n', 3,
     'is not an IPv4 address'),
    ('ports = (\n { name = "p0"; device = "x"; ipv4 = "10.0.0.1";\n  colour = 1; }\n);\n',
     3, "unknown key 'colour'"),
    # The control thread's ring, its test hook and a tenant's JOIN meter.
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'control = {\n rate = 10;\n ring_size = 100; };\n', 4, 'not a power of two'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'control = {\n test_stall = 1; };\n', 3, "'test_stall' must be"),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'tenants = ( { name = "t"; token = 1;\n control_rate = 20000000; } );\n', 3,
     'out of range'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'tenants = ( { name = "t"; token = 1;\n control_burst = 0; } );\n', 3,
     'out of range'),
    ('workers = 1;\n', 0, "missing key 'ports'"),   # line 0: the file as a whole
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'aggregation = {\n max_elems = 5000;\n};\n', 3, 'out of range'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'memory = { ring_size = 1000; };\n', 2, 'not a power of two'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'workers = ;\n', 2, 'syntax error'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'tenants = ( { name = "t"; token = 5; job_ids = [1, 10]; } );\n'
     'jobs = (\n { id = 20; tenant = "t"; nworkers = 2; }\n);\n', 4, 'outside tenant'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'idle = { policy = "sometimes"; };\n', 2, 'idle policy'),
    ('ports = ( { name = "p0"; ipv4 = "10.0.0.1"; } );\n', 1, 'exactly one of device'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'tenants = (\n { name = "t"; dynamic_jobs = true; }\n);\n', 3, 'needs the tenant'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'tenants = (\n { name = "t"; dynamic_jobs = true; job_key = "00ff"; }\n);\n', 3,
     "'job_key' must be"),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'tenants = (\n { name = "t"; dynamic_jobs = true; job_key = "%s"; }\n);\n' % ('zz' * 16),
     3, "'job_key' must be"),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'tenants = ( { name = "t"; } );\n'
     'jobs = ( { id = 2; tenant = "t"; nworkers = 2; } );\n', 3, 'needs a token'),
    # A tree leaf's parent: unreachable, incad itself, incomplete, misnamed port.
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1/24"; } );\n'
     'tenants = ( { name = "t"; token = 5; } );\n'
     'jobs = ( { id = 2; tenant = "t"; nworkers = 2;\n'
     ' parent = { address = "10.9.0.1"; rank = 0; nworkers = 2; }; } );\n', 4,
     "no port's subnet holds the parent"),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1/24"; } );\n'
     'tenants = ( { name = "t"; token = 5; } );\n'
     'jobs = ( { id = 2; tenant = "t"; nworkers = 2;\n'
     ' parent = { address = "10.0.0.1"; rank = 0; nworkers = 2; }; } );\n', 4,
     "incad's own address"),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1/24"; } );\n'
     'tenants = ( { name = "t"; token = 5; } );\n'
     'jobs = ( { id = 2; tenant = "t"; nworkers = 2;\n'
     ' parent = { address = "10.0.0.2"; nworkers = 2; }; } );\n', 4, "missing key 'rank'"),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1/24"; } );\n'
     'tenants = ( { name = "t"; token = 5; } );\n'
     'jobs = ( { id = 2; tenant = "t"; nworkers = 2;\n'
     ' parent = { address = "10.0.0.2"; rank = 3; nworkers = 2; }; } );\n', 4,
     'not below the parent'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1/24"; } );\n'
     'tenants = ( { name = "t"; token = 5; } );\n'
     'jobs = ( { id = 2; tenant = "t"; nworkers = 2;\n'
     ' parent = { address = "10.0.0.2"; rank = 0; nworkers = 2;\n via = "up"; }; } );\n', 5,
     "no port named 'up'"),
    # Arbitration between priority classes (docs/incad.md, "Priorities and
    # arbitration"): a policy it does not know, wrr without weights, a
    # priority wrr gives no weight, weights under strict, no capacity.
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'arbitration = { capacity_mbps = 100;\n policy = "fair"; };\n', 3,
     'arbitration policy must be "strict" or "wrr", not "fair"'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'arbitration = {\n capacity_mbps = 100; policy = "wrr"; };\n', 2,
     "needs 'weights'"),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'tenants = ( { name = "t"; token = 5; } );\n'
     'jobs = ( { id = 2; tenant = "t"; nworkers = 2; priority = 3; } );\n'
     'arbitration = { capacity_mbps = 100; policy = "wrr"; weights = [1, 2]; };\n', 4,
     'job 2 has priority 3'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'arbitration = { capacity_mbps = 100; policy = "strict";\n weights = [1, 2]; };\n', 3,
     'only apply to policy "wrr"'),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'arbitration = { policy = "strict"; };\n', 2, "missing key 'capacity_mbps'"),
    ('ports = ( { name = "p0"; device = "x"; ipv4 = "10.0.0.1"; } );\n'
     'tenants = (\n { name = "t"; token = 5; priority = 8; }\n);\n', 3,
     "'priority' = 8 is out of range"),
]


def case_bad_config():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'bad.conf')
        for text, line, needle in BAD_CONFIGS:
            with open(path, 'w') as f:
                f.write(text)
            # EAL options as for a real run, in case the file were accepted.
            p = subprocess.run([incad_path(), '--no-huge', '-m', '128', '--no-pci',
                                '--file-prefix', 'incadt_bad%d' % os.getpid(), '--',
                                '-c', path], capture_output=True, text=True, timeout=20)
            check(p.returncode != 0, 'config accepted:\n%s' % text)
            want = '%s:%d: ' % (path, line)
            lines = [ln for ln in p.stderr.splitlines() if ln.startswith(want)]
            check(lines and any(needle in ln for ln in lines),
                  'expected "%s...%s" on stderr, got:\n%s' % (want, needle, p.stderr))
            check('EAL' not in p.stderr, 'EAL started despite a bad configuration')
        p = subprocess.run([incad_path(), '--no-huge', '--no-pci', '--',
                            '-c', os.path.join(tmp, 'missing.conf')],
                           capture_output=True, text=True, timeout=20)
        check(p.returncode != 0 and 'missing.conf:0:' in p.stderr,
              'a missing file is not reported as file:line: %r' % p.stderr)
    # The shipped example must load (it fails later only for want of the device).
    conf = os.path.join(os.path.dirname(__file__), '..', '..', 'conf', 'incad.conf')
    prefix = 'incadt_conf%d' % os.getpid()
    p = subprocess.run([incad_path(), '--no-huge', '-m', '128', '--no-pci',
                        '--file-prefix', prefix, '--', '-c', conf],
                       capture_output=True, text=True, timeout=30)
    shutil.rmtree('/var/run/dpdk/' + prefix, ignore_errors=True)
    check(p.returncode != 0 and "no ethdev named 'net_pcap0'" in p.stderr,
          'conf/incad.conf: %r' % p.stderr[-500:])


def case_join_ack():
    frames = [
        udp_frame(hdr(HELLO) + ctrl(dtypes=1, ops=1, max_elems=256), rank=0),
        join(7, 0, 2, pool_size=16, window=8, max_elems=256),
        join(7, 0, 2, pool_size=16, window=8, max_elems=256),           # repeated
        join(7, 0, 2, src_ip=worker_ip(5), src_mac=worker_mac(5)),    # rank held
        join(7, 1, 3),                                                 # nworkers differ
        join(7, 2, 2, sport=40002),                                    # rank >= nworkers
        join(7, 1, 2, src_ip='192.168.9.9'),                           # outside sources
        udp_frame(hdr(JOIN, job=7, rank=1) + ctrl(ver_min=3, ver_max=4, nworkers=2),
                  rank=1),                                             # bad version
        join(7, 1, 2, max_elems=128),                                  # less than the job's
        join(7, 1, 2, max_elems=4000, window=0),                       # clamped
        udp_frame(hdr(HELLO, version=3) + ctrl(ver_min=3, ver_max=3), rank=3),
    ]
    run = run_incad(base_config(), [frames])
    msgs = run.msgs()
    by_type = [(m.type, m['rank'], m['reason']) for m in msgs]
    expect = [(CAPS, 0, 0), (JOIN_ACK, 0, 0), (JOIN_ACK, 0, 0),
              (NACK, 0, NACK_REASONS['JOB_FULL']), (NACK, 1, NACK_REASONS['BAD_PARAMS']),
              (NACK, 2, NACK_REASONS['BAD_PARAMS']), (NACK, 1, NACK_REASONS['NOT_MEMBER']),
              (NACK, 1, NACK_REASONS['BAD_VERSION']), (NACK, 1, NACK_REASONS['BAD_PARAMS']),
              (JOIN_ACK, 1, 0), (CAPS, 0, 0)]
    check(by_type == expect, 'answers %s, expected %s' % (by_type, expect))
    caps = msgs[0].ctrl()
    check(caps['ver_min'] == 2 and caps['ver_max'] == 2, 'CAPS versions %s' % caps)
    check(caps['dtypes'] == 0x3f and caps['ops'] == 0x7, 'CAPS dtypes/ops %s' % caps)
    check(caps['caps'] & CAP_SEQ_CHECK, 'CAPS without SEQ_CHECK')
    check(caps['max_elems'] == 1024 and caps['hb_ms'] == 1000 and caps['evict_ms'] == 5000,
          'CAPS limits %s' % caps)
    check_to_worker(msgs[0], 0)
    ack = msgs[1]
    check_to_worker(ack, 0)
    check(ack['job'] == 7 and ack['token'] == TOKEN, 'JOIN_ACK header %r' % ack)
    a = ack.ctrl()
    check(a['pool_size'] == 16 and a['window'] == 8 and a['max_elems'] == 256 and
          a['nworkers'] == 2 and a['hb_ms'] == 1000 and a['evict_ms'] == 5000,
          'JOIN_ACK body %s' % a)
    check(a['dtypes'] == 1 and a['ops'] == 1, 'JOIN_ACK dtypes/ops %s' % a)
    check(a['session'] == session(7), 'JOIN_ACK session %#x, expected %#x'
          % (a['session'], session(7)))
    check(msgs[2].body == ack.body and msgs[2].h == ack.h,
          'a repeated JOIN got a different JOIN_ACK')
    check(msgs[3].dst[1] == worker_ip(5), 'JOB_FULL went to %s' % (msgs[3].dst,))
    check(msgs[6].dst[1] == '192.168.9.9', 'NOT_MEMBER went to %s' % (msgs[6].dst,))
    bv = msgs[7]
    check(len(bv.body) == 32 and bv.ctrl()['ver_max'] == 2,
          'BAD_VERSION NACK without a CAPS body')
    check(all(len(m.body) == 0 for m in msgs[3:7] + [msgs[8]]), 'NACK with a body')
    check(all(m['dtype'] == 0 and m['op'] == 0 for m in msgs if m.type == NACK),
          'a NACK echoes dtype/op')
    last = msgs[9].ctrl()
    # Window and max_elems are the incarnation's, which its first JOIN fixed.
    check(last['max_elems'] == 256 and last['window'] == 8 and last['pool_size'] == 16 and
          last['session'] == a['session'], 'second member grant %s' % last)
    v3 = msgs[10]
    check(v3['version'] == 2 and v3.ctrl()['ver_min'] == 2 and v3.ctrl()['ver_max'] == 2,
          'answer to a version 3 HELLO %r' % v3)
    check(v3.ctrl()['session'] == 0 and v3.ctrl()['pool_base'] == 0,
          'CAPS with a session or pool_base %s' % v3.ctrl())
    check_to_worker(v3, 3)
    check(run.drop('wire/VERSION') == 1, 'drops %s' % run.drops)
    check(run.nacks.get('BAD_PARAMS') == 3 and run.nacks.get('JOB_FULL') == 1,
          'NACKs counted %s' % run.nacks)


def join_all(job, nworkers, **kw):
    # The first JOIN fixes what a dynamic job aggregates: ask for all.
    kw.setdefault('dtypes', 0xf)
    kw.setdefault('ops', 0x7)
    return [join(job, r, nworkers, **kw) for r in range(nworkers)]


def case_aggregate2():
    big = 2**31 - 1
    frames = join_all(3, 2, pool_size=8) + [
        contrib(3, 0, [1, 2, 3, big, -5], slot=0, seq=0),
        contrib(3, 1, [10, 20, 30, 1, -7], slot=0, seq=0),
        contrib(3, 1, [1.5, -2.25, 1e30, 3e38], slot=1, seq=1, dtype=FP32),
        contrib(3, 0, [0.25, 2.25, 1e30, 3e38], slot=1, seq=1, dtype=FP32),
        contrib(3, 0, [5, -9], slot=2, seq=2, op=MIN),
        contrib(3, 1, [7, -3], slot=2, seq=2, op=MIN),
    ]
    run = run_incad(base_config(), [frames])
    res = results(run)
    check(len(res) == 6, '%d RESULTs, expected 6 (one per member and set)' % len(res))
    check_results(res, [0, 1], [11, 22, 33, -2**31, -12], 0, 0)
    big30 = float(np.float32(1e30) * np.float32(2))
    check_results(res, [0, 1], [1.75, 0.0, big30, float('inf')], 1, 1, dtype=FP32)
    check_results(res, [0, 1], [5, -9], 2, 2)
    check(run.counter('COMPLETE') == 3 and run.total_drops() == 0,
          'counters %s drops %s' % (run.counters, run.drops))


def aggregate4(workers, eal=()):
    n = 4
    frames = join_all(9, n, pool_size=4, window=4)
    expect = {}
    rng = np.random.default_rng(7)
    for k in range(8):
        slot, flags = k % 4, F_SET if (k // 4) % 2 else 0
        dtype = [INT32, FP32, FP16, INT32][k % 4]
        op = [SUM, SUM, SUM, MAX][k % 4]
        contribs = []
        for r in range(n):
            if dtype == INT32:
                v = [int(x) for x in rng.integers(-2**31, 2**31, 6)]
            elif dtype == FP32:
                v = [float(np.float32(x)) for x in rng.normal(0, 100, 6)]
            else:
                v = [float(np.float16(x)) for x in rng.normal(0, 10, 6)]
            contribs.append(v)
        order = list(rng.permutation(n))
        acc = None
        for r in order:
            frames.append(contrib(9, int(r), contribs[r], slot=slot, seq=k, flags=flags,
                                  dtype=dtype, op=op))
            if dtype == INT32:
                a = np.array(contribs[r], dtype=np.int64)
                acc = a if acc is None else (np.maximum(acc, a) if op == MAX else acc + a)
            else:
                a = np.array(contribs[r], dtype=np.float32)
                acc = a if acc is None else (acc + a).astype(np.float32)
        if dtype == INT32:
            acc = [int(x) for x in ((acc + 2**31) % 2**32 - 2**31)]
        elif dtype == FP16:
            acc = [float(x) for x in acc.astype(np.float16)]
        else:
            acc = [float(x) for x in acc]
        expect[k] = (slot, flags, dtype, acc)
    run = run_incad(base_config(workers=workers), [frames], eal=eal)
    res = results(run)
    check(len(res) == 8 * n, '%d RESULTs, expected %d' % (len(res), 8 * n))
    for k, (slot, flags, dtype, acc) in expect.items():
        check_results(res, range(n), acc, slot, k, dtype=dtype, flags=flags)
    check(run.total_drops() == 0, 'drops %s' % run.drops)
    return run


def case_aggregate4():
    aggregate4(1)


def case_aggregate4_main_lcore():
    # EAL gives one lcore: the main lcore runs I/O, control and aggregation.
    run = aggregate4(1, eal=('-l', '0'))
    check('main lcore does I/O' in run.stdout, 'start-up line: %r' % run.stdout[:300])


def case_aggregate4_2lcores():
    # Two dataplane lcores on EAL's two: the main lcore does I/O and owns
    # the even (job + slot) sums, lcore 1 the odd ones.
    run = aggregate4(2, eal=('-l', '0-1'))
    check(run.counter('DISPATCH') == 16, 'DISPATCH %d, expected 16 (half of 32)'
          % run.counter('DISPATCH'))


def case_result_replica():
    # K members' RESULTs of a set, byte for byte, against the RESULT a
    # single-member job gets for the same sums, its addresses, rank and
    # bitmap rewritten (and a member's VLAN tag added) and its checksums
    # computed anew by scapy. Payloads of 2 KiB and more go out as a header
    # mbuf per member chained to the set's one payload (RESULT_CHAINED),
    # smaller ones as copies: both ways must put the same bytes on the
    # wire, the UDP checksum included.
    k, job = 6, 11
    extra = 'aggregation = { session_seed = 0x%08X; max_elems = 2048; };' % SESSION_SEED
    rng = np.random.default_rng(15)
    sets = [(INT32, 1024), (FP16, 2047), (INT32, 100)]   # 4096, 4094 (odd), 400 bytes
    vals, single = [], join_all(job, 1, pool_size=4)
    for seq, (dtype, n) in enumerate(sets):
        # Small integers: every fp16 sum is exact, whatever the order.
        v = [[int(x) for x in rng.integers(-60, 60, n)] for _ in range(k)]
        if dtype == FP16:
            v = [[float(x) for x in c] for c in v]
        vals.append(v)
        single.append(contrib(job, 0, [sum(col) for col in zip(*v)], slot=seq, seq=seq,
                              dtype=dtype))
    ref = run_incad(base_config(extra=extra), [single])
    want = results(ref)
    check(len(want) == len(sets), '%d single-member RESULTs' % len(want))
    chained = sum(k - 1 for dt, n in sets if n * (4 if dt == INT32 else 2) >= 2048)
    # One lcore; two, where lcore 1 builds its slots' RESULTs and hands the
    # chains to the I/O lcore through its ring; and ranks 0 (whose RESULT
    # is the template the others share) and 3 on VLAN 10.
    for workers, eal, tagged in ((1, (), ()), (2, ('-l', '0-1'), ()), (1, (), (0, 3))):
        def tag(fr, r):
            return vlan_of(fr, 10) if r in tagged else fr
        many = [tag(fr, r) for r, fr in enumerate(join_all(job, k, pool_size=4))]
        for seq, (dtype, n) in enumerate(sets):
            many += [tag(contrib(job, r, vals[seq][r], slot=seq, seq=seq, dtype=dtype), r)
                     for r in range(k)]
        run = run_incad(base_config(extra=extra, workers=workers), [many], eal=eal)
        res = results(run)
        check(len(res) == k * len(sets), '%d lcores: %d RESULTs, expected %d'
              % (workers, len(res), k * len(sets)))
        check(run.counter('RESULT_CHAINED') == chained,
              'RESULT_CHAINED %d, expected %d' % (run.counter('RESULT_CHAINED'), chained))
        check(run.total_drops() == 0, 'drops %s' % run.drops)
        compare_replicas(res, want, k, tagged)


def compare_replicas(res, want, k, tagged):
    """Each of @k members' RESULTs in @res is the single-member RESULT in
    @want of its seq with the member's addresses, rank, bitmap and (ranks
    in @tagged) VLAN 10."""
    for w in want:
        for r in range(k):
            got = [m for m in res if m['seq'] == w['seq'] and m['rank'] == r]
            check(len(got) == 1, 'seq %d rank %d: %d RESULTs' % (w['seq'], r, len(got)))
            h = dict(w.h, rank=r, bitmap=(1 << k) - 1)
            e = (Ether(src=w.pkt[Ether].src, dst=worker_mac(r)) /
                 IP(src=w.pkt[IP].src, dst=worker_ip(r), flags=w.pkt[IP].flags, ttl=64,
                    id=w.pkt[IP].id) /
                 UDP(sport=INCA_PORT, dport=40000 + r) /
                 Raw(struct.pack(HDR_FMT, *(h[f] for f in HDR_FIELDS)) + w.body))
            if r in tagged:
                e = vlan_of(Ether(bytes(e)), 10)
            check(bytes(got[0].pkt) == bytes(e),
                  'seq %d rank %d: RESULT differs from the single-member one rewritten'
                  % (w['seq'], r))


def case_replay():
    frames = join_all(4, 2) + [
        contrib(4, 0, [1, 2], slot=3, seq=3),
        contrib(4, 1, [3, 4], slot=3, seq=3),
        contrib(4, 1, [3, 4], slot=3, seq=3, flags=F_RETX),   # its result was lost
    ]
    run = run_incad(base_config(), [frames])
    res = results(run)
    check(len(res) == 3, '%d RESULTs, expected 2 + 1 replay' % len(res))
    check_results(res[:2], [0, 1], [4, 6], 3, 3)
    r = res[2]
    check(r['rank'] == 1 and r['flags'] == F_RETX and r.values() == [4, 6],
          'replay %r' % r)
    check_to_worker(r, 1)
    check(run.counter('REPLAY_TX') == 1, 'REPLAY_TX %s' % run.counters)


def case_duplicate():
    frames = join_all(4, 2) + [
        contrib(4, 0, [1, 2], slot=0, seq=0),
        contrib(4, 0, [1, 2], slot=0, seq=0),   # duplicate while filling
        contrib(4, 1, [3, 4], slot=0, seq=0),
    ]
    run = run_incad(base_config(), [frames])
    res = results(run)
    check(len(res) == 2, '%d RESULTs, expected 2' % len(res))
    check_results(res, [0, 1], [4, 6], 0, 0)
    check(run.drop('core/DUPLICATE') == 1, 'drops %s' % run.drops)


def case_spoof():
    frames = join_all(4, 2) + [
        contrib(4, 0, [100, 100], src_ip='10.77.1.99', src_mac='02:00:00:00:bb:99'),
        contrib(4, 0, [100, 100], sport=41234),
        contrib(4, 0, [100, 100], token=TOKEN ^ 1),
        contrib(4, 1, [100, 100], src_ip=worker_ip(0), sport=40000),   # rank 1 as rank 0
        contrib(4, 0, [1, 2]),
        contrib(4, 1, [3, 4]),
    ]
    run = run_incad(base_config(), [frames])
    res = results(run)
    check(len(res) == 2, '%d RESULTs, expected 2' % len(res))
    check_results(res, [0, 1], [4, 6], 0, 0)
    check(run.drop('incad/NOT_MEMBER_ADDR') == 3, 'drops %s' % run.drops)
    check(run.drop('core/BAD_TOKEN') == 1, 'drops %s' % run.drops)
    sent_to = {m.dst[1] for m in run.msgs()}
    check('10.77.1.99' not in sent_to, 'incad answered a spoofed source')
    check(not of_type(run, NACK), 'a NACK answered a data message from a non-member')


def case_quota():
    tenants = ('{ name = "t1"; token = 0x%08X; job_ids = [1, 99]; slot_quota = 16; '
               'dynamic_jobs = true; }' % TOKEN)
    frames = [
        join(1, 0, 1, pool_size=16),
        join(2, 0, 1, pool_size=8, sport=41000),       # quota used up
        udp_frame(hdr(LEAVE, job=1, rank=0), rank=0),  # job 1 goes, slots return
        join(2, 0, 1, pool_size=8, sport=41000),
        join(3, 0, 1, pool_size=16, sport=42000),      # only 8 left: granted 8
        join(4, 0, 1, pool_size=1, sport=43000),       # none left
    ]
    run = run_incad(base_config(tenants=tenants), [frames], ask=['/incad/tenants'])
    got = [(m.type, m['job'], m['reason']) for m in run.msgs()]
    q = NACK_REASONS['QUOTA_EXHAUSTED']
    expect = [(JOIN_ACK, 1, 0), (NACK, 2, q), (LEAVE_ACK, 1, 0), (JOIN_ACK, 2, 0),
              (JOIN_ACK, 3, 0), (NACK, 4, q)]
    check(got == expect, 'answers %s, expected %s' % (got, expect))
    msgs = run.msgs()
    check(msgs[0].ctrl()['pool_size'] == 16 and msgs[3].ctrl()['pool_size'] == 8 and
          msgs[4].ctrl()['pool_size'] == 8, 'granted pools %s' %
          [msgs[i].ctrl()['pool_size'] for i in (0, 3, 4)])
    check(msgs[1].dst[2] == 41000, 'QUOTA_EXHAUSTED to %s' % (msgs[1].dst,))
    t = run.telemetry['/incad/tenants']
    check(t and t['t1']['slots_used'] == 16 and t['t1']['slot_quota'] == 16,
          '/incad/tenants %s' % t)
    check(run.nacks.get('QUOTA_EXHAUSTED') == 2, 'nacks %s' % run.nacks)


def case_unknown_job():
    tenants = ('{ name = "t1"; token = 0x%08X; job_ids = [1, 99]; dynamic_jobs = true; },'
               '{ name = "t2"; token = 77; job_ids = [100, 199]; dynamic_jobs = false; },'
               '{ name = "t3"; job_ids = [200, 299]; }' % TOKEN)
    jobs = ('{ id = 150; tenant = "t2"; nworkers = 2; },'
            '{ id = 250; tenant = "t3"; token = 0x55; nworkers = 1; }')
    u = NACK_REASONS['UNKNOWN_JOB']
    frames = [
        join(300, 0, 2),                       # no tenant has job 300
        join(5, 0, 2, token=TOKEN + 1),        # token of no tenant for job 5
        join(120, 0, 2, token=77),             # tenant t2 has no dynamic jobs
        join(150, 0, 2, token=TOKEN),          # static job, wrong token
        join(150, 0, 2, token=77),             # static job, right token
        udp_frame(hdr(HEARTBEAT, job=60, rank=0), rank=0),
        contrib(61, 0, [1]),                   # data for no job: dropped, no NACK
        join(250, 0, 1, token=0x55),           # static job with its own token
        join(251, 0, 1, token=0x55),           # t3 creates no jobs
    ]
    run = run_incad(base_config(tenants=tenants, jobs=jobs), [frames])
    got = [(m.type, m['job'], m['reason']) for m in run.msgs()]
    expect = [(NACK, 300, u), (NACK, 5, u), (NACK, 120, u),
              (NACK, 150, NACK_REASONS['BAD_TOKEN']), (JOIN_ACK, 150, 0), (NACK, 60, u),
              (JOIN_ACK, 250, 0), (NACK, 251, u)]
    check(got == expect, 'answers %s, expected %s' % (got, expect))
    check(run.drop('incad/UNKNOWN_JOB') == 1, 'drops %s' % run.drops)


def job_token(key, job):
    """Written from docs/incad.md ("job_key"), not from incad or incactl."""
    mac = hmac.new(key, b'INCA job token' + struct.pack('!H', job), hashlib.sha256).digest()
    return struct.unpack('!I', mac[:4])[0] or 1


def case_job_key():
    """A tenant with a job_key: a dynamic job is created only with its own
    derived token; another job's token, or the tenant token, creates
    nothing; incactl job-token agrees with the derivation."""
    key = bytes(range(0x40, 0x60))
    tenants = ('{ name = "t1"; token = 0x%08X; job_ids = [1, 99]; dynamic_jobs = true; '
               'job_key = "%s"; }' % (TOKEN, key.hex()))
    t5, t6 = job_token(key, 5), job_token(key, 6)
    u = NACK_REASONS['UNKNOWN_JOB']
    frames = [
        join(6, 0, 1, token=t5),               # job 5's token for job 6
        join(5, 0, 1, token=TOKEN),            # the tenant token creates nothing
        join(5, 0, 1, token=t5),
        join(6, 0, 1, token=t6, sport=41000),
        join(5, 0, 1, token=t6, sport=42000),  # job 5 exists: wrong token
    ]
    run = run_incad(base_config(tenants=tenants), [frames])
    got = [(m.type, m['job'], m['reason']) for m in run.msgs()]
    expect = [(NACK, 6, u), (NACK, 5, u), (JOIN_ACK, 5, 0), (JOIN_ACK, 6, 0),
              (NACK, 5, NACK_REASONS['BAD_TOKEN'])]
    check(got == expect, 'answers %s, expected %s' % (got, expect))
    incactl = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools',
                           'incactl')
    out = subprocess.run(['/usr/bin/python3', incactl, 'job-token', '--key', key.hex(), '6'],
                         stdout=subprocess.PIPE, text=True).stdout.strip()
    check(out == '0x%08x' % t6, 'incactl job-token says %r, the derivation 0x%08x'
          % (out, t6))


def case_arp():
    req = (Ether(src=worker_mac(0), dst='ff:ff:ff:ff:ff:ff') /
           ARP(op=1, hwsrc=worker_mac(0), psrc=worker_ip(0), pdst=agg_ip(0)))
    other = (Ether(src=worker_mac(1), dst='ff:ff:ff:ff:ff:ff') /
             ARP(op=1, hwsrc=worker_mac(1), psrc=worker_ip(1), pdst='10.77.0.200'))
    grat = (Ether(src=worker_mac(2), dst=agg_mac(0)) /
            ARP(op=2, hwsrc=worker_mac(2), psrc=worker_ip(2), hwdst=agg_mac(0),
                pdst=agg_ip(0)))
    run = run_incad(base_config(), [[req, other, grat]])
    out = run.out[0]
    check(len(out) == 1, '%d frames out, expected one ARP reply' % len(out))
    a = out[0]
    check(ARP in a and a[ARP].op == 2, 'not an ARP reply: %s' % a.summary())
    check(a[Ether].dst == worker_mac(0) and a[Ether].src == agg_mac(0), 'Ethernet %s'
          % a.summary())
    check(a[ARP].hwsrc == agg_mac(0) and a[ARP].psrc == agg_ip(0) and
          a[ARP].hwdst == worker_mac(0) and a[ARP].pdst == worker_ip(0),
          'ARP fields %s' % a[ARP].fields)
    check(run.counter('ARP_REPLY') == 1 and run.counter('ARP_LEARN') == 2,
          'counters %s' % run.counters)
    check(run.drop('incad/NOT_LOCAL') == 1, 'drops %s' % run.drops)


def case_icmp():
    ping = (Ether(src=worker_mac(0), dst=agg_mac(0)) /
            IP(src=worker_ip(0), dst=agg_ip(0), ttl=9) /
            ICMP(type=8, id=0x4242, seq=7) / Raw(b'incad ping payload'))
    other = (Ether(src=worker_mac(0), dst=agg_mac(0)) /
             IP(src=worker_ip(0), dst='10.77.0.77') / ICMP(type=8, id=1, seq=1))
    bad = Ether(bytes(ping))
    bad[ICMP].chksum ^= 0x1111
    run = run_incad(base_config(), [[ping, other, bad]])
    out = run.out[0]
    check(len(out) == 1, '%d frames out, expected one echo reply' % len(out))
    r = out[0]
    check(ICMP in r and r[ICMP].type == 0 and r[ICMP].id == 0x4242 and r[ICMP].seq == 7,
          'not the echo reply: %s' % r.summary())
    check(bytes(r[ICMP].payload) == b'incad ping payload', 'payload changed')
    check(r[IP].src == agg_ip(0) and r[IP].dst == worker_ip(0), 'addresses %s' % r.summary())
    check(r[Ether].dst == worker_mac(0) and r[Ether].src == agg_mac(0), 'MACs')
    check(checksums_ok(r), 'bad checksum in the echo reply')
    check(run.drop('incad/NOT_LOCAL') == 1 and run.drop('incad/ICMP_INVALID') == 1,
          'drops %s' % run.drops)


def tagged(src, dst, tag, ethertype=0x88b5):
    return Ether(src=src, dst=dst, type=ethertype) / Raw(b'incad-test:' + tag.encode())


def tags(pkts):
    return [bytes(p[Raw]).split(b':', 1)[1].decode() for p in pkts
            if Raw in p and bytes(p[Raw]).startswith(b'incad-test:')]


def case_switch_forward():
    a, b, c = '02:00:00:00:cc:0a', '02:00:00:00:cc:0b', '02:00:00:00:cc:0c'
    # Port 0 starts with more frames than one rx burst, so that port 1's
    # first frame (which teaches incad where b is) is handled before
    # port 0's frames to b. The fillers (to incad, unknown ethertype)
    # teach it where a is.
    fillers = [tagged(a, agg_mac(0), 'filler%d' % i) for i in range(64)]
    arp = (Ether(src=a, dst='ff:ff:ff:ff:ff:ff') /
           ARP(op=1, hwsrc=a, psrc='10.77.2.10', pdst='10.77.2.11'))
    p0 = fillers + [tagged(a, c, 'a-to-unknown'), tagged(a, b, 'a-to-b'), arp,
                    tagged(a, 'ff:ff:ff:ff:ff:ff', 'a-broadcast')]
    p1 = [tagged(b, a, 'b-to-a')]
    run = run_incad(base_config(nports=3, mode='switch'), [p0, p1, []])
    t0, t1, t2 = (tags(run.out[i]) for i in range(3))
    check(t0 == ['b-to-a'], 'port 0 sent %s, expected only b-to-a (a is known there)' % t0)
    check(t1 == ['a-to-unknown', 'a-to-b', 'a-broadcast'],
          'port 1 sent %s, expected the flood, the frame to b and the broadcast' % t1)
    check(t2 == ['a-to-unknown', 'a-broadcast'],
          'port 2 sent %s: a frame to a learned MAC must not be flooded' % t2)
    arps = [[p for p in run.out[i] if ARP in p] for i in range(3)]
    check(len(arps[0]) == 0 and len(arps[1]) == 1 and len(arps[2]) == 1,
          'ARP request for another host not flooded to the other ports only')
    check(run.counter('L2_FLOOD') == 3 and run.counter('L2_FWD') == 2,
          'counters %s' % run.counters)
    check(run.drop('incad/UNHANDLED') == 64, 'drops %s' % run.drops)


def case_switch_table_full():
    # 40 hosts behind port 1 through a table of 16 MACs: a full table still
    # learns every new source (it replaces the one seen longest ago of a
    # sample), so the last host is known and a frame to it goes out of
    # port 1 only, not flooded; the table never holds more than its size.
    a = '02:00:00:00:cc:0a'
    hosts = ['02:00:00:00:dd:%02x' % i for i in range(40)]
    p0 = [tagged(a, agg_mac(0), 'filler%d' % i) for i in range(96)]
    p0 += [tagged(a, hosts[-1], 'a-to-last'), tagged(a, hosts[-2], 'a-to-last-but-one')]
    p1 = [tagged(h, agg_mac(1), 'from-%d' % i) for i, h in enumerate(hosts)]
    extra = 'switch = { mac_table_size = 16; };'
    run = run_incad(base_config(nports=3, mode='switch', extra=extra), [p0, p1, []],
                    ask=['/incad/stats'])
    t1, t2 = tags(run.out[1]), tags(run.out[2])
    check(t1 == ['a-to-last', 'a-to-last-but-one'], 'port 1 sent %s' % t1)
    check(t2 == [], 'port 2 sent %s: frames to learned hosts were flooded' % t2)
    macs = run.telemetry['/incad/stats']['mac_entries']
    check(macs == 16, 'mac_entries %d, expected the table full at 16' % macs)
    check(run.counter('L2_FWD') == 2 and run.counter('L2_FLOOD') == 0,
          'counters %s' % run.counters)


def case_switch_aggregate():
    # Worker 0 on port 0, worker 1 on port 1, both talking to incad's
    # address on port 0: each gets its RESULT out of its own port.
    p0 = [join(6, 0, 2), contrib(6, 0, [1, 1], slot=1, seq=1)]
    p1 = [join(6, 1, 2, port=1, dst_ip=agg_ip(0)),
          contrib(6, 1, [2, 2], slot=1, seq=1, port=1, dst_ip=agg_ip(0))]
    run = run_incad(base_config(nports=2, mode='switch'), [p0, p1])
    r0, r1 = results(run, 0), results(run, 1)
    check(len(r0) == 1 and len(r1) == 1, 'RESULTs per port %d, %d' % (len(r0), len(r1)))
    check(r0[0]['rank'] == 0 and r1[0]['rank'] == 1, 'ranks on the wrong ports')
    check_to_worker(r0[0], 0, port=0)
    p = r1[0].pkt
    check(p[Ether].dst == worker_mac(1) and p[Ether].src == agg_mac(1),
          'port 1 RESULT MACs %s' % p.summary())
    check(p[IP].src == agg_ip(0) and p[IP].dst == worker_ip(1),
          'port 1 RESULT must come from the address the worker used: %s' % p.summary())
    check(checksums_ok(p), 'patched RESULT copy has a bad checksum')
    check(r0[0].values() == [3, 3] and r1[0].values() == [3, 3], 'sums')


def case_malformed():
    good = contrib(8, 0, [5, 6])
    raw = bytes(good)

    def patched(off, data):
        b = bytearray(raw)
        b[off:off + len(data)] = data
        return Ether(bytes(b))

    ip_csum = patched(24, b'\x00\x00')                   # IPv4 checksum zeroed
    frag = Ether(src=worker_mac(0), dst=agg_mac(0)) / IP(
        src=worker_ip(0), dst=agg_ip(0), flags='MF') / UDP(sport=40000, dport=INCA_PORT) / \
        Raw(hdr(CONTRIB, job=8, count=1) + b'\0\0\0\1')
    udp_csum = patched(40, b'\x12\x34')                   # wrong UDP checksum
    frames = [
        Raw(raw[:10]),                                    # runt
        Raw(raw[:20]),                                    # truncated IPv4 header
        ip_csum,
        frag,
        udp_csum,
        udp_frame(hdr(CONTRIB, job=8, count=2, version=1) + b'\0' * 8),
        udp_frame(hdr(99, job=8)),
        udp_frame(hdr(CONTRIB, job=8, count=3) + b'\0' * 8),   # body != count
        udp_frame(b'\x01\x01\x00'),                            # shorter than a header
        udp_frame(hdr(CONTRIB, job=8, count=2, flags=0x80) + b'\0' * 8),
        # A routed CONTRIB (ROUTED 0x10) naming two roots: the codec's
        # ROUTE check, not incad's CONTRIB fast path, decides.
        udp_frame(hdr(CONTRIB, job=8, count=2, flags=0x10, bitmap=0x3) + b'\0' * 8),
        udp_frame(hdr(RESULT, job=8, count=1) + b'\0' * 4),    # incad never takes these
        join(8, 0, 1),
        good,
    ]
    run = run_incad(base_config(), [frames])
    for reason in ('ETH_SHORT', 'IP_SHORT', 'IP_CSUM', 'IP_FRAGMENT', 'UDP_CSUM', 'VERSION',
                   'TYPE', 'LEN', 'SHORT', 'FLAGS', 'ROUTE'):
        check(run.drop('wire/' + reason) == 1, 'wire/%s not counted once: %s'
              % (reason, run.drops))
    check(run.drop('incad/UNEXPECTED_MSG') == 1, 'drops %s' % run.drops)
    res = results(run)
    check(len(res) == 1 and res[0].values() == [5, 6],
          'incad stopped serving after malformed input: %s' % res)
    check(len(run.out[0]) == 2, 'answers to malformed frames: %s'
          % [p.summary() for p in run.out[0]])


def case_leave():
    s1 = session(5)
    s2 = session(5, 2, prev=s1)
    frames = join_all(5, 2) + [
        contrib(5, 0, [1], slot=0, seq=0),
        udp_frame(hdr(HEARTBEAT, job=5, rank=0), rank=0),
        # The member's address and session but not its secret: no effect.
        udp_frame(hdr(LEAVE, job=5, rank=0, bitmap=0), rank=0),
        udp_frame(hdr(HEARTBEAT, job=5, rank=0, bitmap=member_secret(5, 0) ^ 1), rank=0),
        udp_frame(hdr(HEARTBEAT, job=5, rank=1), rank=1, sport=45000),   # not its address
        udp_frame(hdr(HEARTBEAT, job=5, rank=0, token=1), rank=0),       # bad token
        udp_frame(hdr(HEARTBEAT, job=5, rank=0, token=TOKEN), rank=0),   # the job token
        udp_frame(hdr(LEAVE, job=5, rank=1), rank=1),      # a new incarnation begins
        contrib(5, 0, [2], slot=1, seq=1),        # rank 0 is in the old one: MEMBER_LOST
        join(5, 1, 2),
        join(5, 0, 2),
        contrib(5, 0, [100], slot=0, seq=0, token=s2),     # the sets were reset
        contrib(5, 0, [1000], slot=0, seq=0, token=s1),    # the old stream's late copy
        udp_frame(hdr(LEAVE, job=5, rank=1, token=s1), rank=1),   # a late copy of the LEAVE
        contrib(5, 1, [10], slot=0, seq=0, token=s2),
        udp_frame(hdr(LEAVE, job=50, rank=0), rank=0),   # nothing to leave: still acked
    ]
    run = run_incad(base_config(), [frames])
    got = [(m.type, m['rank'], m['reason']) for m in run.msgs()]
    lost = NACK_REASONS['MEMBER_LOST']
    expect = [(JOIN_ACK, 0, 0), (JOIN_ACK, 1, 0), (HEARTBEAT_ACK, 0, 0),
              (LEAVE_ACK, 1, 0), (NACK, 0, lost), (JOIN_ACK, 1, 0), (JOIN_ACK, 0, 0),
              (NACK, 0, lost), (LEAVE_ACK, 1, 0), (RESULT, 1, 0), (RESULT, 0, 0),
              (LEAVE_ACK, 0, 0)]
    check(got == expect, 'answers %s, expected %s' % (got, expect))
    acks = [m for m in run.msgs() if m.type == JOIN_ACK]
    check([m.ctrl()['session'] for m in acks] == [s1, s1, s2, s2],
          'sessions %s' % [hex(m.ctrl()['session']) for m in acks])
    secrets = [member_secret(5, 0), member_secret(5, 1), member_secret(5, 1, 2),
               member_secret(5, 0, 2)]
    check([m['bitmap'] for m in acks] == secrets and len(set(secrets)) == 4,
          'member secrets %s' % [hex(m['bitmap']) for m in acks])
    check(run.drop('incad/CTRL_BAD_SECRET') == 2, 'drops %s' % run.drops)
    res = results(run)
    check(len(res) == 2 and all(m.values() == [110] and m['token'] == s2 for m in res),
          'sum after the reset %s' % [(m.values(), hex(m['token'])) for m in res])
    check(run.drop('incad/CTRL_BAD_TOKEN') == 2 and run.drop('incad/CTRL_NOT_MEMBER') == 1 and
          run.drop('incad/STALE_SESSION') == 3, 'drops %s' % run.drops)
    nack = [m for m in run.msgs() if m.type == NACK and m['reason'] == lost][0]
    check(nack['slot'] == 1 and nack['seq'] == 1, 'MEMBER_LOST does not echo the CONTRIB')
    check_to_worker(nack, 0)


def case_nack_grants():
    """The NACK rows the other cases do not reach: a JOIN asking for a
    dtype or op the job does not aggregate, a contribution beyond the
    grant or of another dtype or op, a job that finds no slot memory."""
    tenants = ('{ name = "t1"; token = 0x%08X; job_ids = [1, 99]; dynamic_jobs = true; '
               'sources = ["10.77.0.0/16"]; },'
               '{ name = "t2"; token = 0x%08X; job_ids = [100, 199]; dynamic_jobs = true; '
               'sources = ["10.77.0.0/16"]; }' % (TOKEN, TOKEN + 1))
    jobs = ('{ id = 20; tenant = "t1"; nworkers = 2; max_elems = 64; pool_size = 32; '
            'dtypes = ["int32"]; ops = ["sum"]; }')
    extra = ('aggregation = { session_seed = 0x%08X; max_slots = 48; pool_size = 32; };'
             % SESSION_SEED)
    s20 = session(20)
    frames = [
        join(20, 0, 2, dtypes=2, ops=1),                  # fp32: not this job's
        join(20, 0, 2, dtypes=1, ops=4),                  # max: not this job's
        join(20, 0, 2, dtypes=1, ops=1, max_elems=64),
        join(20, 1, 2, dtypes=1, ops=1, max_elems=64),
        contrib(20, 0, [1] * 65, token=s20),              # beyond max_elems
        contrib(20, 0, [1.0], dtype=FP32, token=s20),     # a dtype not granted
        contrib(20, 0, [1], op=MAX, token=s20),           # an op not granted
        join(150, 0, 2, token=TOKEN + 1, pool_size=32),   # 16 slots left of 48
    ]
    run = run_incad(base_config(tenants=tenants, jobs=jobs, extra=extra), [frames])
    got = [(m.type, m['rank'], m['reason']) for m in run.msgs()]
    R = NACK_REASONS
    expect = [(NACK, 0, R['UNSUPPORTED_DTYPE']), (NACK, 0, R['UNSUPPORTED_OP']),
              (JOIN_ACK, 0, 0), (JOIN_ACK, 1, 0), (NACK, 0, R['TOO_LARGE']),
              (NACK, 0, R['UNSUPPORTED_DTYPE']), (NACK, 0, R['UNSUPPORTED_OP']),
              (NACK, 0, R['NO_SLOTS'])]
    check(got == expect, 'answers %s, expected %s' % (got, expect))
    msgs = run.msgs()
    for m in msgs[4:7]:
        check(m['slot'] == 0 and m['seq'] == 0 and m['job'] == 20,
              'a data NACK does not echo the CONTRIB: %r' % m)
    check(all(m['dtype'] == 0 and m['op'] == 0 for m in msgs if m.type == NACK),
          'a NACK echoes dtype/op')
    check(not results(run), 'a refused contribution was aggregated')


def case_martian():
    """INCA messages from sources no worker can have, or to a group MAC:
    counted drops, never answered, never admitted; the same messages from
    a worker's address are answered."""
    hello = hdr(HELLO) + ctrl(dtypes=1, ops=1)
    bad_src = ['0.0.0.0', '0.1.2.3', '127.0.0.1', '224.0.0.1', '239.1.1.1',
               '255.255.255.255', '240.0.0.9', agg_ip(0), '10.77.255.255']
    frames = [udp_frame(hello, src_ip=ip) for ip in bad_src]
    frames += [join(9, 0, 1, src_ip=ip) for ip in ('127.0.0.1', agg_ip(0), '10.77.255.255')]
    frames += [udp_frame(hello, rank=1), join(9, 1, 2)]   # from a worker: answered
    group = [(Ether(src=worker_mac(2), dst=mac) / IP(src=worker_ip(2), dst=agg_ip(0)) /
              UDP(sport=40002, dport=INCA_PORT) / Raw(p))
             for mac in ('ff:ff:ff:ff:ff:ff', '01:00:5e:00:00:01')
             for p in (hello, hdr(CONTRIB, job=9, rank=0, count=1) + b'\0\0\0\1')]
    run = run_incad(base_config(), [frames + group])
    got = [(m.type, m['rank']) for m in run.msgs()]
    check(got == [(CAPS, 0), (JOIN_ACK, 1)], 'answers %s' % got)
    check(all(m.dst[1] == worker_ip(1) for m in run.msgs()),
          'an answer went to %s' % [m.dst for m in run.msgs()])
    check(run.drop('incad/MARTIAN_SRC') == len(bad_src) + 3 and
          run.drop('incad/GROUP_DST') == 4, 'drops %s' % run.drops)


def vlan_of(fr, vid):
    """Frame @fr with an 802.1Q tag of VLAN @vid."""
    from scapy.all import Dot1Q
    e = fr[Ether]
    return Ether(src=e.src, dst=e.dst) / Dot1Q(vlan=vid) / fr[IP]


def tag_of(m):
    from scapy.all import Dot1Q
    return m.pkt[Dot1Q].vlan if Dot1Q in m.pkt else 0


def case_vlan():
    """A tenant bound to VLANs 10 and 20: a member is its address and its
    VLAN; every answer and RESULT goes back tagged on the member's VLAN; a
    JOIN from another VLAN (or untagged) is refused, a contribution from a
    member's address on another VLAN is a counted drop."""
    tenants = ('{ name = "t1"; token = 0x%08X; job_ids = [1, 99]; dynamic_jobs = true; '
               'sources = ["10.77.0.0/16"]; vlans = [10, 20]; }' % TOKEN)
    s5 = session(5)
    frames = [
        vlan_of(join(5, 0, 2, dtypes=0xf, ops=0x7), 10),
        vlan_of(join(5, 1, 2), 20),
        vlan_of(join(6, 0, 1), 30),                        # not the tenant's VLAN
        join(6, 0, 1),                                     # untagged: neither
        vlan_of(contrib(5, 0, [1], token=s5), 10),
        vlan_of(contrib(5, 1, [1000], token=s5), 10),      # rank 1's address, VLAN 10
        vlan_of(contrib(5, 1, [2], token=s5), 20),
    ]
    run = run_incad(base_config(tenants=tenants), [frames])
    got = [(m.type, m['rank'], m['reason'], tag_of(m)) for m in run.msgs()]
    nm = NACK_REASONS['NOT_MEMBER']
    expect = [(JOIN_ACK, 0, 0, 10), (JOIN_ACK, 1, 0, 20), (NACK, 0, nm, 30), (NACK, 0, nm, 0),
              (RESULT, 0, 0, 10), (RESULT, 1, 0, 20)]
    check(sorted(got) == sorted(expect), 'answers %s, expected %s' % (got, expect))
    res = results(run)
    check(all(m.values() == [3] for m in res), 'sums %s' % [m.values() for m in res])
    check(all(checksums_ok(m.pkt) for m in res), 'a tagged RESULT has a bad checksum')
    check(run.drop('incad/NOT_MEMBER_ADDR') == 1, 'drops %s' % run.drops)


def case_rate_limit():
    """HELLO and JOIN per source are metered (control.rate, control.burst):
    within the burst they are answered, in the excess burst they get NACK
    RATE_LIMITED, beyond it nothing (a counted drop); another source keeps
    its own budget. The rate is 1/s, so the refill while the frames are
    read is at most one message."""
    hello = hdr(HELLO) + ctrl(dtypes=1, ops=1)
    frames = [udp_frame(hello, rank=0) for _ in range(20)] + \
        [udp_frame(hello, rank=1) for _ in range(2)]
    extra = 'control = { rate = 1; burst = 5; };'
    run = run_incad(base_config(extra=extra), [frames])
    caps0 = [m for m in run.msgs() if m.type == CAPS and m.dst[1] == worker_ip(0)]
    caps1 = [m for m in run.msgs() if m.type == CAPS and m.dst[1] == worker_ip(1)]
    limited = [m for m in run.msgs() if m.type == NACK and
               m['reason'] == NACK_REASONS['RATE_LIMITED']]
    check(len(caps0) in (5, 6) and len(limited) == 5 and len(caps1) == 2,
          'answers: %d CAPS, %d RATE_LIMITED to source 0, %d CAPS to source 1'
          % (len(caps0), len(limited), len(caps1)))
    check(all(m.dst[1] == worker_ip(0) for m in limited), 'RATE_LIMITED to another source')
    check(run.drop('incad/CTRL_RATE_LIMITED') == 20 - len(caps0) - len(limited),
          'drops %s' % run.drops)


def case_telemetry():
    frames = join_all(7, 2) + [
        contrib(7, 0, [1]), contrib(7, 1, [2]),
        contrib(7, 0, [1], src_ip='10.77.1.99'),
    ]
    cmds = ['/incad/job,7', '/incad/jobs', '/incad/drops', '/incad/stats', '/incad/lcores',
            '/incad/ports', '/incad/job,8']
    run = run_incad(base_config(), [frames], ask=cmds)
    t = run.telemetry
    j = t['/incad/job,7']
    check(j and j['members'] == 2 and j['nworkers'] == 2 and j['COMPLETE'] == 1 and
          j['CONTRIB'] == 2 and j['DROP'] == 1 and j['kind'] == 'dynamic',
          '/incad/job,7: %s' % j)
    check(j['member_addrs']['1'].startswith(worker_ip(1) + ':40001'),
          'member addresses %s' % j.get('member_addrs'))
    check('7' in t['/incad/jobs'] and 'members=2/2' in t['/incad/jobs']['7'],
          '/incad/jobs: %s' % t['/incad/jobs'])
    d = t['/incad/drops']
    check(d['incad/NOT_MEMBER_ADDR'] == 1 and d['wire/IP_CSUM'] == 0 and
          'core/DUPLICATE' in d, '/incad/drops: %s' % d)
    s = t['/incad/stats']
    check(s['CONTRIB'] == 2 and s['RESULT_TX'] == 2 and s['jobs'] == 1 and
          s['mem_mbufs_bytes'] > 0 and s['mode'] == 'aggregator', '/incad/stats: %s' % s)
    lc = t['/incad/lcores']
    check(lc and lc['0']['contributions'] == 2, '/incad/lcores: %s' % lc)
    p = t['/incad/ports']
    check(p['p0']['rx'] == len(frames) and p['p0']['ipv4'] == agg_ip(0) and
          p['p0']['mac'].lower() == agg_mac(0), '/incad/ports: %s' % p)
    check(t['/incad/job,8'] == 'no such job', '/incad/job,8: %s' % t['/incad/job,8'])
    # The final statistics say the same.
    check(run.drop('incad/NOT_MEMBER_ADDR') == 1 and 'members 0x3' in run.jobs.get(7, ''),
          'final statistics %r' % run.stdout)
    check(re.search(r'^port p0: rx %d tx 4 ' % len(frames), run.stdout, re.M),
          'final port line: %r' % run.stdout)


ROCE_CONF = 'roce = { enabled = true; };'


def roce_join(job, rank, nworkers, qpn, qkey, max_elems=0, **kw):
    """JOIN binding queue pair @qpn (Q_Key @qkey), by UDP as every JOIN."""
    return udp_frame(hdr(JOIN, job=job, rank=rank, token=TOKEN) +
                     ctrl(nworkers=nworkers, dtypes=0xf, ops=0x7, max_elems=max_elems) +
                     roce_ext(qpn, qkey),
                     rank=rank, **kw)


def roce_contrib(job, rank, values, qpn, slot=0, seq=0, flags=0, dtype=INT32, op=SUM, **kw):
    msg = contrib_msg(job, rank, values, slot=slot, seq=seq, flags=flags, dtype=dtype, op=op)
    return roce_frame(msg, rank=rank, qpn=qpn, psn=seq & 0xffffff, **kw)


def case_roce():
    """Two RoCE members and one UDP member in one job (docs/protocol.md,
    "RoCEv2 transport"): JOIN binds a queue pair and JOIN_ACK names incad's;
    RoCE contributions (int32, and fp16 with an odd count: padded) aggregate
    with the UDP one; every RoCE member gets its RESULT as a UD SEND to its
    queue pair with its Q_Key and a valid ICRC, the UDP member by UDP; a
    retransmission gets a replay over RoCE; a NACK about a RoCE member's
    chunk goes over RoCE; a RoCE member's CONTRIB by UDP, or from another
    queue pair, is not the member."""
    q0, q1, k0, k1 = 0x000201, 0xfffffe, 0x1111, 0x7fffffff
    frames = [
        udp_frame(hdr(HELLO) + ctrl(), rank=0),
        roce_join(4, 0, 3, q0, k0, max_elems=8),
        roce_join(4, 1, 3, q1, k1),
        join(4, 2, 3),
        roce_contrib(4, 0, [1, -2, 2**31 - 1], q0, slot=0, seq=0),
        roce_contrib(4, 1, [10, 20, 1], q1, slot=0, seq=0),
        contrib(4, 2, [100, 200, 0], slot=0, seq=0, token=session(4)),
        roce_contrib(4, 0, [1.5, 2.0, -1.0], q0, slot=1, seq=1, dtype=FP16),
        contrib(4, 2, [0.25, 0.5, 4.0], slot=1, seq=1, dtype=FP16, token=session(4)),
        roce_contrib(4, 1, [0.25, 0.5, 2.0], q1, slot=1, seq=1, dtype=FP16),
        # Rank 0 retransmits chunk 0: a replay to it alone, by RoCE.
        roce_contrib(4, 0, [1, -2, 2**31 - 1], q0, slot=0, seq=0, flags=F_RETX),
        # Rank 0's address by UDP, and rank 0 from another queue pair.
        contrib(4, 0, [7], slot=2, seq=2, token=session(4)),
        roce_contrib(4, 0, [7], q0 + 1, slot=2, seq=2),
        # A chunk of rank 1 larger than the grant: NACK TOO_LARGE by RoCE.
        roce_contrib(4, 1, list(range(9)), q1, slot=3, seq=3),
        # The other operations and fp32.
        roce_contrib(4, 0, [5, -9], q0, slot=4, seq=4, op=MIN),
        roce_contrib(4, 1, [7, -3], q1, slot=4, seq=4, op=MIN),
        contrib(4, 2, [-1, 0], slot=4, seq=4, op=MIN, token=session(4)),
        roce_contrib(4, 1, [1.5, -2.0], q1, slot=5, seq=5, dtype=FP32, op=MAX),
        contrib(4, 2, [0.5, -1.0], slot=5, seq=5, dtype=FP32, op=MAX, token=session(4)),
        roce_contrib(4, 0, [-0.5, -0.25], q0, slot=5, seq=5, dtype=FP32, op=MAX),
    ]
    run = run_incad(base_config(extra=ROCE_CONF), [frames],
                    ask=('/incad/job,4', '/incad/stats'))
    addrs = run.telemetry['/incad/job,4']['member_addrs']
    check(addrs['0'].endswith(' roce qp 0x000201') and addrs['1'].endswith(' roce qp 0xfffffe')
          and 'roce' not in addrs['2'], 'member addresses %s' % addrs)
    st = run.telemetry['/incad/stats']
    check(st['roce_qpn'] == AGG_QPN and st['roce_qkey'] == AGG_QKEY, 'stats %s' % st)
    udp = run.msgs()
    caps = udp[0].ctrl()
    check(udp[0].type == CAPS and caps['caps'] & CAP_ROCE, 'CAPS without ROCE: %s' % caps)
    acks = [m for m in udp if m.type == JOIN_ACK]
    check([m['rank'] for m in acks] == [0, 1, 2], 'JOIN_ACKs %s' % acks)
    for m in acks[:2]:
        check(len(m.body) == 48, 'JOIN_ACK of a RoCE member: %d-byte body' % len(m.body))
        qpn, qkey, r0, r1 = struct.unpack('!IIII', m.body[32:])
        check((qpn, qkey, r0, r1) == (AGG_QPN, AGG_QKEY, 0, 0),
              'JOIN_ACK extension %x %x %x %x' % (qpn, qkey, r0, r1))
    check(len(acks[2].body) == 32, 'a UDP member got a RoCE extension')
    roce = roce_msgs(run.out[0])
    for m in roce:
        check(roce_icrc_ok(m.pkt), '%r: bad ICRC' % m)
        check(m.bth.opcode == UD_SEND_ONLY and m.bth.pkey == 0xffff and m.bth.version == 0,
              '%r: BTH %s' % (m, m.bth.summary()))
        check(m.deth.sqpn == AGG_QPN, '%r: source QP %#x' % (m, m.deth.sqpn))
        qpn, qkey = (q0, k0) if m['rank'] == 0 else (q1, k1)
        check(m.bth.dqpn == qpn and m.deth.qkey == qkey,
              '%r: to QP %#x Q_Key %#x' % (m, m.bth.dqpn, m.deth.qkey))
        check(m.pkt[IP].dst == worker_ip(m['rank']) and m.pkt[IP].src == agg_ip(0),
              '%r: addresses' % m)
        check(m.pkt[UDP].chksum == 0 and 0xc000 <= m.pkt[UDP].sport, '%r: UDP' % m)
        check(m.type != RESULT or m.bth.psn == m['seq'], '%r: PSN %d' % (m, m.bth.psn))
    got = sorted((m.type, m['rank'], m['seq'], m['flags'] & F_RETX) for m in roce)
    expect = sorted([(RESULT, 0, 0, 0), (RESULT, 1, 0, 0), (RESULT, 0, 1, 0),
                     (RESULT, 1, 1, 0), (RESULT, 0, 0, F_RETX), (NACK, 1, 3, 0),
                     (RESULT, 0, 4, 0), (RESULT, 1, 4, 0), (RESULT, 0, 5, 0),
                     (RESULT, 1, 5, 0)])
    check(got == expect, 'RoCE messages %s, expected %s' % (got, expect))
    for m in roce:
        if m.type == RESULT and m['seq'] == 0:
            check(m.values() == [111, 218, -2**31], 'int32 sum %s' % m.values())
        if m.type == RESULT and m['seq'] == 1:
            check(m.bth.padcount == 2 and m.values() == [2.0, 3.0, 5.0],
                  'fp16 sum %s pad %d' % (m.values(), m.bth.padcount))
        if m.type == NACK:
            check(m['reason'] == NACK_REASONS['TOO_LARGE'], 'NACK %r' % m)
        if m.type == RESULT and m['seq'] == 4:
            check(m.values() == [-1, -9], 'int32 MIN %s' % m.values())
        if m.type == RESULT and m['seq'] == 5:
            check(m.values() == [1.5, -0.25], 'fp32 MAX %s' % m.values())
    res2 = [m for m in udp if m.type == RESULT]
    check(sorted((m['rank'], m['seq']) for m in res2) == [(2, 0), (2, 1), (2, 4), (2, 5)],
          'UDP RESULTs %s' % res2)
    check(res2[0].values() == [111, 218, -2**31], 'UDP member sum %s' % res2[0].values())
    check(run.drop('incad/NOT_MEMBER_ADDR') == 2, 'drops %s' % run.drops)
    check(run.counter('ROCE_RX') == 11 and run.counter('ROCE_TX') == 10,
          'RoCE counters %s' % run.counters)


def case_roce_hostile():
    """Each malformed or foreign RoCE packet is dropped on its own counter
    (docs/protocol.md, "RoCEv2 checks"), nothing is answered, and a good
    one still aggregates after them. Without roce.enabled, port 4791 is
    not incad's and a JOIN binding a queue pair is not understood."""
    q0 = 0x300
    good = roce_contrib(5, 0, [42], q0)
    raw = bytes(good)
    bad_icrc = Ether(raw[:-1] + bytes([raw[-1] ^ 0x01]))
    msg = hdr(CONTRIB, job=5, rank=0, token=session(5), count=1) + b'\0\0\0\1'
    frames = [
        roce_join(5, 0, 1, q0, 0x42),
        udp_frame(raw[42:42 + 20 + 30], sport=0xc001, dport=ROCE_PORT),     # ROCE_SHORT
        roce_frame(msg, qpn=q0, opcode=0x04),                  # RC SEND only
        roce_frame(msg, qpn=q0, opcode=0x81),                  # a CNP
        roce_frame(msg, qpn=q0, tver=1),
        roce_frame(msg, qpn=q0, pkey=0x7fff),
        roce_frame(msg[:32], qpn=q0, pad=3),                   # pad eats the header
        bad_icrc,
        roce_frame(msg, qpn=q0, dqpn=AGG_QPN + 1),
        roce_frame(msg, qpn=q0, qkey=AGG_QKEY ^ 1),
        roce_frame(hdr(HEARTBEAT, job=5, rank=0, token=session(5)), qpn=q0),
        good,
    ]
    run = run_incad(base_config(extra=ROCE_CONF), [frames])
    for reason in ('ROCE_SHORT', 'ROCE_TVER', 'ROCE_PKEY', 'ROCE_PAD', 'ROCE_ICRC',
                   'ROCE_QPN', 'ROCE_QKEY'):
        check(run.drop('wire/' + reason) == 1, 'wire/%s not counted once: %s'
              % (reason, run.drops))
    check(run.drop('wire/ROCE_OPCODE') == 2, 'drops %s' % run.drops)
    check(run.drop('incad/ROCE_NOT_DATA') == 1, 'drops %s' % run.drops)
    roce = roce_msgs(run.out[0])
    check([(m.type, m.values()) for m in roce] == [(RESULT, [42])],
          'answers %s' % roce)

    # Without roce.enabled.
    frames = [
        roce_join(6, 0, 1, q0, 0x42),
        udp_frame(hdr(HELLO) + ctrl(), rank=0),
        roce_contrib(6, 0, [1], q0),
    ]
    run = run_incad(base_config(), [frames])
    msgs = run.msgs()
    check([m.type for m in msgs] == [CAPS] and not msgs[0].ctrl()['caps'] & CAP_ROCE,
          'answers without RoCE: %s' % msgs)
    check(run.drop('wire/CTRL_LEN') == 1 and run.drop('wire/WRONG_PORT') == 1,
          'drops %s' % run.drops)
    check(not roce_msgs(run.out[0]), 'RoCE output without roce.enabled')


def case_roce_switch():
    """Switch mode (incad is the ToR): RoCE members on two ports get their
    RESULTs as UD SENDs out of their own ports, from the address they sent
    to; another RDMA flow between two hosts (an RC SEND from worker 0 to
    worker 1) is not incad's and is switched through unchanged."""
    q0, q1 = 0x000301, 0x000302
    rc = roce_frame(b'\x02' + b'\0' * 39, rank=0, qpn=q0, dqpn=0x777, opcode=0x04,
                    dst_ip=worker_ip(1), dst_mac=worker_mac(1))
    p0 = [roce_join(6, 0, 2, q0, 0x10),
          roce_contrib(6, 0, [1, 1], q0, slot=1, seq=1)]
    p1 = [roce_join(6, 1, 2, q1, 0x11, port=1, dst_ip=agg_ip(0)),
          roce_contrib(6, 1, [2, 2], q1, slot=1, seq=1, port=1, dst_ip=agg_ip(0)), ]
    run = run_incad(base_config(nports=2, mode='switch', extra=ROCE_CONF), [p0 + [rc], p1])
    for port, rank, q, k in ((0, 0, q0, 0x10), (1, 1, q1, 0x11)):
        res = [m for m in roce_msgs(run.out[port]) if m.type == RESULT]
        check(len(res) == 1 and res[0]['rank'] == rank, 'port %d RoCE RESULTs %s' % (port, res))
        m = res[0]
        check(m.bth.dqpn == q and m.deth.qkey == k and m.values() == [3, 3] and
              roce_icrc_ok(m.pkt), 'port %d RESULT %r' % (port, m))
        check(m.pkt[IP].src == agg_ip(0) and m.pkt[Ether].src == agg_mac(port) and
              m.pkt[Ether].dst == worker_mac(rank), 'port %d addresses %s'
              % (port, m.pkt.summary()))
    fwd = [p for p in run.out[1] if bytes(p) == bytes(rc)]
    check(len(fwd) == 1, 'the other hosts\' RDMA flow was not switched through unchanged')
    check(run.drop('wire/ROCE_OPCODE') == 0, 'drops %s' % run.drops)


def case_tenant_rate():
    """Tenant B has rate_mbps = 1 (and the smallest burst): of 40 back-to-back
    contributions of 1 KiB from its one-rank job only the burst's worth is
    aggregated, the rest are counted incad/TENANT_RATE drops, each answered
    with one NACK HELD to B's worker echoing its seq; tenant A, unlimited,
    streaming beside it, loses nothing and gets no NACK; /incad/tenants
    accounts for both."""
    tb = 0x0B0B0B0B
    tenants = ('{ name = "A"; token = 0x%08X; job_ids = [1, 9]; dynamic_jobs = true; }, '
               '{ name = "B"; token = 0x%08X; job_ids = [10, 19]; dynamic_jobs = true; '
               'rate_mbps = 1; burst_kb = 1; }' % (TOKEN, tb))
    vals = list(range(256))
    frames = [join(1, 0, 1, dtypes=1, ops=1),
              join(10, 0, 1, dtypes=1, ops=1, token=tb, sport=41000)]
    for k in range(40):
        frames.append(contrib(1, 0, vals, slot=k, seq=k))
        frames.append(contrib(10, 0, vals, slot=k, seq=k, token=session(10, token=tb),
                              sport=41000))
    run = run_incad(base_config(tenants=tenants), [frames], ask=['/incad/tenants'])
    res = results(run)
    a = [m for m in res if m['job'] == 1]
    b = [m for m in res if m['job'] == 10]
    dropped = run.drop('incad/TENANT_RATE')
    check(len(a) == 40, 'tenant A: %d of 40 RESULTs' % len(a))
    # The burst (one largest frame, 8270 bytes) lets 7 through at once; the
    # rate adds 125 bytes a millisecond while the 80 frames are replayed.
    check(1 <= len(b) <= 12 and len(b) + dropped == 40,
          'tenant B: %d RESULTs, %d rate drops' % (len(b), dropped))
    nacks = [m for m in run.msgs() if m.type == NACK]
    check(all(m['job'] == 10 and m['reason'] == NACK_REASONS['HELD'] for m in nacks),
          'NACKs other than HELD to job 10: %s' % nacks)
    check(sorted(m['seq'] for m in nacks) ==
          sorted(set(range(40)) - set(m['seq'] for m in b)),
          'NACK HELD for seqs %s, RESULTs for %s'
          % (sorted(m['seq'] for m in nacks), sorted(m['seq'] for m in b)))
    ten = run.telemetry['/incad/tenants']
    flen = len(frames[2])
    check(ten['B']['rate_mbps'] == 1 and ten['B']['rate_drops'] == dropped and
          ten['B']['contrib_bytes'] == len(b) * flen, 'tenant B accounting %s' % ten['B'])
    check(ten['A']['rate_mbps'] == 0 and ten['A']['rate_drops'] == 0 and
          ten['A']['contrib_bytes'] == 40 * flen, 'tenant A accounting %s' % ten['A'])


def case_arbitration():
    """An arbitration section with capacity_mbps = 1 and the smallest burst,
    on two dataplane lcores: of 40 back-to-back 1 KiB contributions of a
    priority-3 job (its tenant's priority) only the buckets' worth is
    aggregated; every other one is held back, never counted, and answered
    with one NACK HELD to its sender that echoes its job, rank, session,
    slot and seq; /incad/arbitration, /incad/job and the drop counter
    account for each."""
    tenants = ('{ name = "t1"; token = 0x%08X; job_ids = [1, 99]; dynamic_jobs = true; '
               'priority = 3; }' % TOKEN)
    extra = 'arbitration = { capacity_mbps = 1; burst_kb = 1; policy = "strict"; };'
    vals = list(range(256))
    frames = [join(1, 0, 1, dtypes=1, ops=1, pool_size=64, window=64)]
    frames += [contrib(1, 0, vals, slot=k, seq=k, offset=256 * k) for k in range(40)]
    run = run_incad(base_config(tenants=tenants, extra=extra, workers=2), [frames],
                    eal=('-l', '0-1'), ask=['/incad/arbitration', '/incad/job,1'])
    done = sorted(m['seq'] for m in results(run))
    nacks = [m for m in run.msgs() if m.type == NACK]
    held = sorted(m['seq'] for m in nacks)
    check(all(m['reason'] == NACK_REASONS['HELD'] for m in nacks), 'NACKs %r' % nacks)
    # Each lcore's bucket holds one largest frame (8270 bytes): 7 pass at
    # once on each, and the rate adds 62 bytes a millisecond per lcore.
    check(2 <= len(done) <= 24 and sorted(done + held) == list(range(40)),
          'RESULTs for %s, NACK HELD for %s' % (done, held))
    for m in nacks:
        check_to_worker(m, 0)
        check(m['job'] == 1 and m['rank'] == 0 and m['token'] == session(1) and
              m['slot'] == m['seq'] and m['offset'] == 256 * m['seq'],
              'NACK HELD does not echo its contribution: %r' % m)
    arb = run.telemetry['/incad/arbitration']
    job = run.telemetry['/incad/job,1']
    flen = len(frames[1])
    check(arb['policy'] == 'strict' and arb['3']['held'] == len(held) and
          arb['3']['passed_bytes'] == len(done) * flen and
          arb['3']['offered_bytes'] == 40 * flen and
          all(arb[str(c)]['offered_bytes'] == 0 for c in range(8) if c != 3),
          'arbitration %s' % arb)
    check(job['priority'] == 3 and job['PRIO_HELD'] == len(held) and
          run.drop('incad/PRIO_HELD') == len(held) and
          run.counter('CONTRIB') == len(done), 'job %s, drops %s' % (job, run.drops))


def case_log_budget():
    """A tenant looping JOIN and LEAVE (300 one-rank dynamic jobs created and
    deleted, four membership log lines each) gets every answer, but incad
    writes at most its burst of 100 membership lines plus 20 a second, and
    says how many it left out."""
    n = 300
    frames = []
    for k in range(n):
        job = 1 + k % 90
        frames.append(join(job, 0, 1, dtypes=1, ops=1, pool_size=2, window=2))
        frames.append(udp_frame(hdr(LEAVE, job=job, rank=0, token=session(job),
                                    bitmap=member_secret(job, 0)), rank=0))
    t0 = time.monotonic()
    run = run_incad(base_config(extra='control = { rate = 0; };'), [frames])
    elapsed = time.monotonic() - t0
    got = [m.type for m in run.msgs()]
    check(got.count(JOIN_ACK) == n and got.count(LEAVE_ACK) == n,
          '%d JOIN_ACKs and %d LEAVE_ACKs for %d cycles' % (got.count(JOIN_ACK),
                                                          got.count(LEAVE_ACK), n))
    lines = [ln for ln in (run.stdout + run.stderr).splitlines()
             if re.search(r'incad\.ctrl: job \d+ (created|deleted)|rank \d+ (joined|left)', ln)]
    check(len(lines) <= 100 + 20 * (elapsed + 1), '%d membership lines in %.1f s'
          % (len(lines), elapsed))
    check(len(lines) < 4 * n, 'no membership line was left out')
    check(re.search(r'\d+ membership log lines suppressed', run.stdout + run.stderr),
          'the suppressed lines were not counted in the log')


def case_fuzz():
    """Mutated frames, checksums fixed or not: incad drops them, counts them
    and keeps serving."""
    rng = np.random.default_rng(12345)
    templates = join_all(2, 2) + [
        contrib(2, 0, [1, 2, 3], slot=1, seq=1), contrib(2, 1, [1.0, 2.0], dtype=FP32),
        udp_frame(hdr(HELLO) + ctrl()), udp_frame(hdr(LEAVE, job=2, rank=1), rank=1),
        udp_frame(hdr(HEARTBEAT, job=2, rank=0)),
        join(3, 0, 2, src_ip='10.77.1.50', src_mac='02:00:00:00:bb:50'),
        Ether(src=worker_mac(0), dst='ff:ff:ff:ff:ff:ff') /
        ARP(op=1, hwsrc=worker_mac(0), psrc=worker_ip(0), pdst=agg_ip(0)),
        Ether(src=worker_mac(0), dst=agg_mac(0)) / IP(src=worker_ip(0), dst=agg_ip(0)) /
        ICMP(type=8) / Raw(b'x' * 20),
    ]
    frames = list(templates)
    for i in range(3000):
        t = templates[rng.integers(len(templates))]
        raw = bytearray(bytes(t))
        fix = rng.random() < 0.6 and UDP in t
        # Mutate the INCA part (and let the checksums be recomputed) or
        # anything at all.
        lo = 42 if fix else 0
        for _ in range(int(rng.integers(1, 6))):
            if len(raw) > lo:
                raw[int(rng.integers(lo, len(raw)))] = int(rng.integers(256))
        if rng.random() < 0.2:
            raw = raw[:int(rng.integers(1, len(raw) + 1))]
        if rng.random() < 0.1:
            raw += bytes(int(rng.integers(1, 64)))
        if fix and len(raw) >= 42:
            p = Ether(bytes(raw))
            if IP in p and UDP in p:
                del p[IP].chksum, p[IP].len, p[UDP].chksum, p[UDP].len
                raw = bytes(p)
        frames.append(Raw(bytes(raw)))
    frames += [join(9, 0, 1, sport=49000), contrib(9, 0, [7], sport=49000)]
    run = run_incad(base_config(), [frames], timeout=40)
    p = [m for m in run.msgs() if m['job'] == 9]
    check([m.type for m in p] == [JOIN_ACK, RESULT] and p[1].values() == [7],
          'incad does not serve after %d mutated frames: %s' % (len(frames), p))
    check(run.counter('RX') == len(frames), 'RX %d of %d' % (run.counter('RX'), len(frames)))
    check(run.total_drops() > 1000, 'only %d drops' % run.total_drops())


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith('case_')}

if __name__ == '__main__':
    main(CASES)
