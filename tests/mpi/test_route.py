#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""INCA_MPI_ROUTE against a real incad: where MPI_Allreduce goes.

route_check (MPI_Allreduce of 4 B, 4 KiB and 16 KiB, ROUNDS rounds, each
result compared bit for bit with PMPI's) runs under libinca-mpi in a rack
of one worker namespace (aggregator mode), incad in the agg namespace:

 1. INCA_MPI_ROUTE=inca: every call through libinca, chunks seen by incad;
 2. INCA_MPI_ROUTE=host: every call through PMPI, not one chunk sent;
 3. auto: right results, both routes explored in every class, and every
    rank logged the same decisions, with the same numbers, at the same
    calls, and took the same route for every call (route_digest);
 4. auto with loopback rate-limited (tbf), which carries the ranks' host
    route: the 4 KiB and 16 KiB classes decide for INCA at every agreement;
 5. auto with the worker's link to the aggregator rate-limited instead: the
    same classes decide for the host route at every agreement.
The selector follows the measurements both ways, whichever route is the
faster one on the unloaded rack.

usage: test_route.py --incad EXE --preload LIBINCA_MPI --check ROUTE_CHECK [--np N]
"""

import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rackctl  # noqa: E402
from rackctl import log  # noqa: E402
from test_mpi import JOB, interposer_env, mpirun_argv, setup  # noqa: E402

ROUNDS = 200             # route_check's default
CLASSES = (2, 12, 14)    # log2 of 4 B, 4 KiB, 16 KiB
# IM_EXPLORE, IM_REEVAL, IM_REEVAL_MAX, IM_PROBE_COST in inca_mpi.c
EXPLORE, REEVAL, REEVAL_MAX, PROBE_COST = 3, 64, 4096, 50
DECISION = re.compile(r'inca-mpi\[(\d+)\]: route: job (\d+) class 2\^(\d+) call (\d+) '
                      r'inca (\d+) ns host (\d+) ns -> (inca|host)')


def reeval_calls(lo, hi):
    """inca_mpi.c's reeval_calls(): calls from an agreement to the next."""
    k = PROBE_COST * (hi - lo) // lo if lo else REEVAL_MAX
    return min(max(k, REEVAL), REEVAL_MAX)


def run(rack, args, stats, route):
    env = interposer_env(rack, args, stats)
    env.update({
        'INCA_MPI_ROUTE': route,
        'INCA_MPI_VERBOSE': '2',  # INCA_LOG_INFO: the decisions
        'INCA_TIMEOUT_MS': '500',
    })
    argv = mpirun_argv(args, env)
    log('run:', ' '.join(argv))
    p = rack.run(0, argv, capture_output=True, text=True, timeout=240)
    out = p.stdout + p.stderr
    assert p.returncode == 0 and 'route_check: %d ranks: PASS' % args.np in out, \
        'route_check failed (exit %d):\n%s' % (p.returncode, out)
    with open(stats) as f:
        st = rackctl.parse_stats(f.read(), 'inca-mpi')
    assert sorted(st) == list(range(args.np)), 'stats of ranks %s' % sorted(st)
    dec = {r: [] for r in range(args.np)}
    for m in DECISION.finditer(out):
        dec[int(m.group(1))].append(m.groups()[1:])
    log('%s: rank 0 allreduce_inca %d allreduce_host %d, decisions %s' %
        (route, st[0]['allreduce_inca'], st[0]['allreduce_host'], dec[0]))
    return st, dec


def check_auto(st, dec, np):
    """Both routes explored, the same decisions and routes on every rank,
    and agreements where the rule puts them, from the agreed numbers."""
    for r in range(np):
        s = st[r]
        assert s['allreduce_inca'] + s['allreduce_host'] == ROUNDS * len(CLASSES), s
        assert s['allreduce_inca'] >= EXPLORE * len(CLASSES) and \
            s['allreduce_host'] >= EXPLORE * len(CLASSES), s
        assert s['route_digest'] == st[0]['route_digest'], \
            'rank %d took other routes than rank 0' % r
        assert s['route_agreements'] == len(dec[0]), s
        assert dec[r] == dec[0], 'rank %d decided %s, rank 0 %s' % (r, dec[r], dec[0])
    for c in CLASSES:
        mine = [d for d in dec[0] if int(d[1]) == c]
        want = [2 * EXPLORE]
        for d in mine:
            ti, th = int(d[3]), int(d[4])
            nxt = int(d[2]) + (reeval_calls(th, ti) if th < ti else reeval_calls(ti, th))
            if nxt > ROUNDS:
                break
            want.append(nxt)
        got = [int(d[2]) for d in mine]
        assert got == want, 'class 2^%d agreed after calls %s, want %s' % (c, got, want)


def slow_route(dec, want):
    """Every decision of the 4 KiB and 16 KiB classes went to @want."""
    for d in dec:
        if int(d[1]) in (12, 14):
            assert d[5] == want, 'class 2^%s decided %s with the other route slow: %s' % (
                d[1], d[5], d)


def main():
    args = setup()
    tmp = tempfile.mkdtemp(prefix='inca-route-test-')
    stats = os.path.join(tmp, 'stats')
    try:
        with rackctl.Rack('jroute', workers=1, mode='aggregator') as rack:
            with rackctl.Incad(rack, args.incad, [(JOB, args.np)]):
                st, dec = run(rack, args, stats, 'inca')
                for r, s in st.items():
                    assert s['allreduce_inca'] == ROUNDS * len(CLASSES) and \
                        s['allreduce_host'] == 0 and s['world_chunks'] > 0 and \
                        s['fallback_collectives'] == 0, 'rank %d: %s' % (r, s)
                    assert not dec[r], 'rank %d decided with the route pinned' % r
                log('run 1 (inca): PASS')

                st, dec = run(rack, args, stats, 'host')
                for r, s in st.items():
                    assert s['allreduce_host'] == ROUNDS * len(CLASSES) and \
                        s['allreduce_inca'] == 0 and s['world_chunks'] == 0, \
                        'rank %d: %s' % (r, s)
                    assert not dec[r], 'rank %d decided with the route pinned' % r
                log('run 2 (host): PASS')

                st, dec = run(rack, args, stats, 'auto')
                check_auto(st, dec, args.np)
                log('run 3 (auto): PASS')

                # The ranks' host traffic (TCP over loopback) at 40 Mbit/s:
                # a 4 KiB call of 4 ranks takes milliseconds that way,
                # through incad a fraction of one; the burst covers one
                # loopback frame (64 KiB MTU).
                tbf = ['tc', 'qdisc', 'add', 'dev', 'lo', 'root', 'tbf', 'rate', '40mbit',
                       'burst', '70kb', 'latency', '2s']
                rack.run(0, tbf, check=True)
                st, dec = run(rack, args, stats, 'auto')
                check_auto(st, dec, args.np)
                slow_route(dec[0], 'inca')
                rack.run(0, ['tc', 'qdisc', 'del', 'dev', 'lo', 'root'], check=True)
                log('run 4 (auto, host route rate-limited): PASS')

                # The worker's link to incad at 4 Mbit/s: a 4 KiB call
                # of 4 ranks takes >= 33 ms that way.
                tbf[4], tbf[8] = 'eth0', '4mbit'
                rack.run(0, tbf, check=True)
                st, dec = run(rack, args, stats, 'auto')
                check_auto(st, dec, args.np)
                slow_route(dec[0], 'host')
                log('run 5 (auto, INCA route rate-limited): PASS')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print('test_route: PASS')


if __name__ == '__main__':
    main()
