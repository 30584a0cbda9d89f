#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""The backend 'inca''s INCA_TORCH_ROUTE=auto against each route alone, in
one run (tools/bench/bench_torch_route.sh runs it in a rack with incad).
Prints figures; asserts nothing.

  torch_route_bench.py --world N [--sizes B,...] [--runs R] [--min-time S]

N processes (torch.multiprocessing) on the backend 'inca' with
INCA_TORCH_ROUTE=auto (the caller's environment, rank 0's) and the job of
INCA_AGGREGATOR / INCA_JOB / INCA_TOKEN. For each size: 8 untimed auto
calls (the selector's exploration and first agreement), then R runs, each
a number of rounds of three in-place all_reduce calls of an int32 tensor
of that size (int32 wraps, so repeated in-place sums cost the same every
time): the INCA route alone (forced_route('inca'): libinca), the host
route alone (forced_route('host'): the inner gloo group) and auto (the
selector, its probes and agreements included). The order of the three
follows a cyclic sequence of 18 calls in which each side follows each
other side equally often, so that no side inherits the rank skew or
cache state another side leaves more often than the others. Per run the
slowest rank's time per call of each side; the medians over the runs and
auto / min(inca, host).
"""

import argparse
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'integrations', 'torch'))

SIDES = ('inca', 'host', 'auto')
# Each side follows each other side 3 times in a cycle of 18 calls, never
# itself: 012 021 210 102 120 201.
ORDER = (0, 1, 2, 0, 2, 1, 2, 1, 0, 1, 0, 2, 1, 2, 0, 2, 0, 1)


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def one_run(pg, t, iters, agree):
    """@iters rounds of the three sides; the slowest rank's seconds per
    call of each."""
    tot = [0.0, 0.0, 0.0]
    for i in range(iters):
        for k in range(3):
            side = ORDER[(i % 6) * 3 + k]
            if side == 2:
                t0 = time.perf_counter()
                dist.all_reduce(t)
                tot[2] += time.perf_counter() - t0
            else:
                with pg.forced_route(SIDES[side]):
                    t0 = time.perf_counter()
                    dist.all_reduce(t)
                    tot[side] += time.perf_counter() - t0
    x = torch.tensor(tot, dtype=torch.float64)
    dist.all_reduce(x, op=dist.ReduceOp.MAX, group=agree)
    return [v / iters for v in x.tolist()]


def worker(rank, world, port, a):
    torch.set_num_threads(1)
    os.environ['MASTER_ADDR'] = '127.0.0.1'
    os.environ['MASTER_PORT'] = str(port)
    import inca_torch
    dist.init_process_group('inca', rank=rank, world_size=world)
    pg = dist.distributed_c10d._get_default_group()
    agree = dist.new_group(backend='gloo')
    if rank == 0:
        print('# torch_route_bench: %d ranks, route mode %s, %d runs of rounds of three '
              'calls (inca, host, auto),\n# the order carry-over balanced; medians over runs '
              'of the slowest rank\'s time per call;\n# auto/best = auto / min(inca, host); '
              'auto inca/host: calls auto routed each way\n'
              '# %10s %6s %10s %10s %10s %9s %5s %10s' % (
                  world, inca_torch.stats().get('route_mode'), a.runs, 'bytes', 'iters',
                  'inca ms', 'host ms', 'auto ms', 'auto/best', 'best', 'auto i/h'),
              flush=True)
    for nbytes in a.sizes:
        t = torch.randint(-2**31, 2**31 - 1, (max(nbytes // 4, 1),), dtype=torch.int32)
        for _ in range(8):
            dist.all_reduce(t)
        s0 = inca_torch.stats()
        per = one_run(pg, t, 1, agree)
        iters = max(2, int(a.min_time / max(sum(per), 1e-6)))
        runs = [one_run(pg, t, iters, agree) for _ in range(a.runs)]
        s1 = inca_torch.stats()
        m = [median([r[k] for r in runs]) for k in range(3)]
        best = min(m[0], m[1])
        if rank == 0:
            print('  %10d %6d %10.3f %10.3f %10.3f %9.3f %5s %5d/%d' % (
                nbytes, iters, m[0] * 1e3, m[1] * 1e3, m[2] * 1e3, m[2] / best,
                'inca' if m[0] < m[1] else 'host', s1['route_inca'] - s0['route_inca'],
                s1['route_host'] - s0['route_host']), flush=True)
    s = inca_torch.stats()
    if rank == 0:
        # The agreements, to tell a size's figure from its decisions.
        for d in pg.route_decisions():
            print('# decision: %s 2^%d call %d inca %.3f ms host %.3f ms agreement %.3f ms '
                  '-> %s' % (d[0], d[1], d[2], d[3] / 1e6, d[4] / 1e6, d[5] / 1e6, d[6]))
    if rank == 0 and (s.get('fallback_collectives') or s.get('in_fallback')):
        print('# warning: libinca used its fallback: the INCA figures are not INCA\'s')
    inca_torch.shutdown()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--world', type=int, default=4)
    ap.add_argument('--sizes', default=','.join(str(4 ** i) for i in range(1, 14)))
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--min-time', type=float, default=0.5)
    a = ap.parse_args()
    a.sizes = [int(x) for x in a.sizes.split(',')]
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(a.world, port, a), nprocs=a.world, join=True)


if __name__ == '__main__':
    main()
