#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""INCA_TORCH_ROUTE against a real incad: where the backend's calls go.

route_check.py (ROUNDS rounds of all_reduce of 4 B, 4 KiB and 16 KiB, a
broadcast of 4 KiB and an all_gather of 1 KiB per rank, each result checked
bit for bit) runs on the backend 'inca' in a rack of one worker namespace
(aggregator mode), incad in the agg namespace, the ranks' gloo traffic on
the namespace's loopback:

 1. INCA_TORCH_ROUTE=inca: every call through libinca; incad counts the
    chunks the ranks completed;
 2. host: every call through gloo, not one chunk reaches incad (but
    libinca's closing round before LEAVE);
 3. auto (with a gloo group as reference): results bit-identical to gloo's
    and the exact ones, both routes explored in every class, every rank
    made the same agreements with the same numbers at the same calls and
    took the same route for every call (route_digest), agreements where
    the rule puts them;
 4. auto with loopback rate-limited (tbf), which carries the host route:
    the classes of 4 KiB and more decide for INCA at every agreement;
 5. auto with the worker's link to the aggregator rate-limited instead:
    the same classes decide for the host route at every agreement.
The selector follows the measurements both ways, whichever route is the
faster one on the unloaded rack. Decisions and outcomes only, no timing.

Also: a bad INCA_TORCH_ROUTE fails the group's creation on every rank.

usage: test_route.py --incad EXE --libinca LIBINCA_SO [--worlds N]
"""

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'mpi'))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'integrations', 'torch'))
import rackctl  # noqa: E402
from rackctl import log  # noqa: E402
from test_torch import job_of, setup  # noqa: E402
from inca_torch.route import EXPLORE, reeval_calls, size_class  # noqa: E402
from route_check import CALLS  # noqa: E402

PYTHON = '/usr/bin/python3'
CHECK = os.path.join(HERE, 'route_check.py')
ROUNDS = 200


def classes(world):
    """The selector's classes of route_check's calls: {(kind, log2 bytes)}."""
    return sorted({(k, size_class(b(world))) for k, b in CALLS})


def run(rack, args, tmp, world, route, ref=False, expect_fail=False):
    import torch
    out = os.path.join(tmp, 'route-%s-%d.pt' % (route, world))
    env = dict(os.environ, INCA_LIB=args.libinca, INCA_AGGREGATOR=rack.agg_ip,
               INCA_JOB=str(job_of(world)), INCA_TOKEN='0x%08x' % rackctl.TOKEN,
               OMP_NUM_THREADS='1', GLOO_SOCKET_IFNAME='lo', INCA_TORCH_ROUTE=route,
               INCA_TORCH_VERBOSE='2', INCA_TIMEOUT_MS='500')
    argv = rack.argv(0, [PYTHON, CHECK, '--world', str(world), '--rounds', str(ROUNDS),
                         '--out', out] + (['--ref'] if ref else []))
    log('run:', ' '.join(argv))
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    if expect_fail:
        return p
    log(p.stdout)
    assert p.returncode == 0, 'route_check %s %d failed (exit %d)' % (route, world,
                                                                     p.returncode)
    outs = torch.load(out)
    for r, o in enumerate(outs):
        assert not o['errors'], '%s: %s' % (route, o['errors'])
        s = o['stats']
        assert s['route_mode'] == route and s['in_fallback'] == 0 and \
            s['fallback_collectives'] == 0, 'rank %d: %s' % (r, s)
        assert s['route_inca'] + s['route_host'] == ROUNDS * len(CALLS), \
            'rank %d: %d + %d routed calls, route_check made %d' % (
                r, s['route_inca'], s['route_host'], ROUNDS * len(CALLS))
    s = outs[0]['stats']
    log('%s: rank 0 route_inca %d route_host %d agreements %d switches %d' % (
        route, s['route_inca'], s['route_host'], s['route_agreements'], s['route_switches']))
    return outs


def check_auto(outs, world):
    """Both routes explored in every class; the same agreements, numbers
    and routes on every rank; agreements at the calls the rule says."""
    dec0 = outs[0]['decisions']
    for r, o in enumerate(outs):
        s = o['stats']
        assert s['route_inca'] >= EXPLORE * len(classes(world)) and \
            s['route_host'] >= EXPLORE * len(classes(world)), 'rank %d: %s' % (r, s)
        assert s['route_digest'] == outs[0]['stats']['route_digest'], \
            'rank %d took other routes than rank 0' % r
        assert s['route_agreements'] == len(o['decisions']), s
        assert o['decisions'] == dec0, 'rank %d decided %s, rank 0 %s' % (
            r, o['decisions'], dec0)
    # Every decision had measured both routes.
    for d in dec0:
        assert d[3] > 0 and d[4] > 0, 'decided without measuring both routes: %s' % (d,)
    for kind, c in classes(world):
        calls = ROUNDS * sum(1 for k, b in CALLS if (k, size_class(b(world))) == (kind, c))
        mine = [d for d in dec0 if (d[0], d[1]) == (kind, c)]
        # The agreement owed after call d (the exploration's last, then
        # each probe) is made at the issue of call d + 1: the decisions
        # record that call, so the next one comes K calls after it.
        want = [2 * EXPLORE]
        for d in mine:
            ti, th, ta = d[3], d[4], d[5]
            nxt = d[2] + (reeval_calls(th, ti, ta) if th < ti else reeval_calls(ti, th, ta))
            if nxt > calls - 1:
                break
            want.append(nxt)
        got = [d[2] for d in mine]
        assert got == want, '%s 2^%d agreed before calls %s, want %s' % (kind, c, got, want)


def slow_route(outs, world, want):
    """Every agreement of the classes of 4 KiB and more went to @want."""
    for d in outs[0]['decisions']:
        if d[1] >= 12:
            assert d[6] == want, '%s 2^%d decided %s with the other route slow: %s' % (
                d[0], d[1], d[6], d)
    log('decisions:', outs[0]['decisions'])


def main():
    args, worlds, tmp = setup('route')
    world = worlds[-1]
    tbf = None
    with rackctl.Rack('jtrt', workers=1, mode='aggregator') as rack:
        try:
            with rackctl.Incad(rack, args.incad, [(job_of(world), world)]) as incad:
                p = run(rack, args, tmp, world, 'fast', expect_fail=True)
                assert p.returncode != 0 and 'INCA_TORCH_ROUTE=fast: want inca, host or ' \
                    'auto' in p.stdout, 'a bad INCA_TORCH_ROUTE was accepted:\n' + p.stdout
                log('bad INCA_TORCH_ROUTE: refused')

                j0 = incad.job(job_of(world))
                outs = run(rack, args, tmp, world, 'inca')
                j1 = incad.job(job_of(world))
                for r, o in enumerate(outs):
                    s = o['stats']
                    assert s['route_inca'] == ROUNDS * len(CALLS) and s['route_host'] == 0 \
                        and s['inca_calls'] == ROUNDS * len(CALLS) and s['chunks'] > 0, \
                        'rank %d: %s' % (r, s)
                    assert not o['decisions'], 'rank %d decided with the route pinned' % r
                done = j1['COMPLETE'] - j0['COMPLETE']
                assert done >= outs[0]['stats']['chunks'] and \
                    j1['CONTRIB'] - j0['CONTRIB'] == world * done, \
                    'incad completed %d sets, the ranks %d chunks' % (
                        done, outs[0]['stats']['chunks'])
                log('run 1 (inca): PASS, %d sets completed by incad' % done)

                j0 = incad.job(job_of(world))
                outs = run(rack, args, tmp, world, 'host')
                j1 = incad.job(job_of(world))
                for r, o in enumerate(outs):
                    s = o['stats']
                    assert s['route_host'] == ROUNDS * len(CALLS) and s['route_inca'] == 0 \
                        and s['inca_calls'] == 0 and s['chunks'] == 0, 'rank %d: %s' % (r, s)
                    assert not o['decisions'], 'rank %d decided with the route pinned' % r
                # Only libinca's closing round before LEAVE: a window of
                # one-element chunks (docs/libinca.md).
                win = outs[0]['stats']['window']
                assert j1['COMPLETE'] - j0['COMPLETE'] == win and \
                    j1['CONTRIB'] - j0['CONTRIB'] == world * win, \
                    'incad completed %d sets with the host route pinned, the closing ' \
                    'round is %d' % (j1['COMPLETE'] - j0['COMPLETE'], win)
                log('run 2 (host): PASS, nothing but the closing round reached incad')

                check_auto(run(rack, args, tmp, world, 'auto', ref=True), world)
                log('run 3 (auto): PASS')

                # The ranks' gloo traffic (TCP over loopback, its MTU cut
                # to 1500 so that a small bucket shapes it from the first
                # byte) at 1 Mbit/s: a 4 KiB call takes about 70 ms that
                # way, tens of times more than through incad, beyond what
                # a loaded host adds to a call.
                rack.run(0, ['ip', 'link', 'set', 'dev', 'lo', 'mtu', '1500'], check=True)
                tbf = ['tc', 'qdisc', 'add', 'dev', 'lo', 'root', 'tbf', 'rate', '1mbit',
                       'burst', '4kb', 'latency', '2s']
                rack.run(0, tbf, check=True)
                outs = run(rack, args, tmp, world, 'auto')
                check_auto(outs, world)
                slow_route(outs, world, 'inca')
                rack.run(0, ['tc', 'qdisc', 'del', 'dev', 'lo', 'root'], check=True)
                log('run 4 (auto, host route rate-limited): PASS')

                # The worker's link to incad at 1 Mbit/s instead: a 4 KiB
                # call of the ranks takes about 70 ms that way.
                tbf[4] = 'eth0'
                rack.run(0, tbf, check=True)
                outs = run(rack, args, tmp, world, 'auto')
                check_auto(outs, world)
                slow_route(outs, world, 'host')
                log('run 5 (auto, INCA route rate-limited): PASS')
        finally:
            # The qdiscs go with the rack's namespaces.
            shutil.rmtree(tmp, ignore_errors=True)
    print('test_route: PASS')


if __name__ == '__main__':
    main()
