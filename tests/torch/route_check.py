#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""The backend 'inca''s route selection (INCA_TORCH_ROUTE) in N processes.

  route_check.py --world N --rounds R --out FILE [--ref]

Each of R rounds makes, on the backend 'inca', the calls of CALLS: int32
all_reduce (SUM) of 4 B and 4 KiB, fp32 all_reduce of 16 KiB, a broadcast
of 4 KiB from root round % N and an all_gather of 1 KiB per rank. Every
rank computes every rank's inputs, so each result is checked bit for bit
against the exact one (int32 sums wrap; the fp32 inputs are multiples of
1/256 below 2^11, whose sums are exact in any order); with --ref each call
is also made on a gloo group and the results compared bit for bit. The file
holds, per rank, the errors, the stats and the selector's decisions.
"""

import argparse
import datetime
import logging
import os
import sys

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'integrations', 'torch'))
sys.path.insert(0, HERE)
from train_check import finish, spawn  # noqa: E402

# (kind, bytes through INCA per rank, for a world of w): the selector's
# classes are (kind, log2 of the bytes).
CALLS = (('allreduce', lambda w: 4), ('allreduce', lambda w: 4096),
         ('allreduce', lambda w: 16384), ('broadcast', lambda w: 4096),
         ('allgather', lambda w: 1024 * w))


def ints(n, r, rnd):
    """Rank @r's int32 input of round @rnd, as int64 (for the exact sum)."""
    x = (torch.arange(n, dtype=torch.int64) * 7 + rnd) * (2654435761 * (r + 1) + 12345)
    return x % (1 << 32) - (1 << 31)


def wrap32(x):
    return ((x + (1 << 31)) % (1 << 32) - (1 << 31)).to(torch.int32)


def floats(n, r, rnd):
    x = (torch.arange(n, dtype=torch.int64) * (2 * r + 3) + 97 * rnd) % (1 << 20) - (1 << 19)
    return x.to(torch.float32) / 256.0


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and \
        torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))


def one_round(rank, world, rnd, ref, note):
    # all_reduce, int32 4 B and 4 KiB, fp32 16 KiB.
    for n, kind in ((1, 'i'), (1024, 'i'), (4096, 'f')):
        gen = ints if kind == 'i' else floats
        mine = gen(n, rank, rnd)
        mine = wrap32(mine) if kind == 'i' else mine
        want = sum(gen(n, r, rnd) for r in range(world))
        want = wrap32(want) if kind == 'i' else want
        x = mine.clone()
        dist.all_reduce(x)
        note('round %d all_reduce %d B' % (rnd, n * 4), same(x, want))
        if ref is not None:
            y = mine.clone()
            dist.all_reduce(y, group=ref)
            note('round %d all_reduce %d B against gloo' % (rnd, n * 4), same(x, y))
    # broadcast of 4 KiB from a rotating root.
    root = rnd % world
    x = floats(1024, rank, rnd)
    dist.broadcast(x, root)
    note('round %d broadcast' % rnd, same(x, floats(1024, root, rnd)))
    if ref is not None:
        y = floats(1024, rank, rnd)
        dist.broadcast(y, root, group=ref)
        note('round %d broadcast against gloo' % rnd, same(x, y))
    # all_gather of 1 KiB per rank.
    mine = wrap32(ints(256, rank, rnd))
    outs = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(outs, mine)
    note('round %d all_gather' % rnd,
         all(same(o, wrap32(ints(256, r, rnd))) for r, o in enumerate(outs)))
    if ref is not None:
        ys = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(ys, mine, group=ref)
        note('round %d all_gather against gloo' % rnd,
             all(same(a, b) for a, b in zip(outs, ys)))


def worker(rank, world, port, a):
    torch.set_num_threads(1)
    # The selector's agreements (INFO) in the output, as the driver's log.
    logging.basicConfig(level=logging.INFO if os.environ.get('INCA_TORCH_VERBOSE') == '2'
                        else logging.DEBUG if os.environ.get('INCA_TORCH_VERBOSE') == '3'
                        else logging.WARNING, format='rank %d: %%(message)s' % rank)
    os.environ['MASTER_ADDR'] = '127.0.0.1'
    os.environ['MASTER_PORT'] = str(port)
    import inca_torch
    # A bound on every wait: ranks that took different routes for one call
    # (a broken selector) fail with gloo's timeout instead of hanging.
    timeout = datetime.timedelta(seconds=120)
    dist.init_process_group('inca', rank=rank, world_size=world, timeout=timeout)
    ref = dist.new_group(backend='gloo', timeout=timeout) if a.ref else None
    errors = []

    def note(what, ok):
        if not ok and len(errors) < 20:
            errors.append('rank %d: %s: wrong result' % (rank, what))
    for rnd in range(a.rounds):
        one_round(rank, world, rnd, ref, note)
    pg = dist.distributed_c10d._get_default_group()
    out = {'errors': errors, 'stats': inca_torch.stats(), 'decisions': pg.route_decisions()}
    finish(out, a.out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--world', type=int, required=True)
    ap.add_argument('--rounds', type=int, default=200)
    ap.add_argument('--ref', action='store_true')
    ap.add_argument('--out', required=True)
    a = ap.parse_args()
    spawn(worker, a.world, a)


if __name__ == '__main__':
    main()
