#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""The backend 'inca' in N processes (torch.multiprocessing.spawn).

  backend_check.py --world N --what ops|train --backend inca|gloo --out FILE
                   [--steps S] [--pause-at K --sync DIR]

ops (backend inca): every collective of the backend against the same call
on a gloo group of the same ranks, compared bit for bit (inputs of the
float sums chosen so that every order of summation is exact, as in
train_check.py): all_reduce of fp32, fp16, bf16, int32, fp64 and int64
with SUM, MIN, MAX and AVG (floats), int8 and uint8 (no int8 wire type:
delegated to gloo); broadcast,
all_gather and all_gather_into_tensor of several dtypes, odd byte
lengths, -0.0, NaN payloads and infinities; reduce, reduce_scatter,
reduce_scatter_tensor, barrier. The file holds the errors and each rank's
stats before and after the checks.

train: DDP without a hook on the backend, train_check.py's MLP and data,
the loss of every step. --pause-at K: after step K rank 0 creates
DIR/paused and every rank waits for DIR/go (the driver kills incad in
between).
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'integrations', 'torch'))
sys.path.insert(0, HERE)
from train_check import BATCH, CLASSES, FEATURES, HIDDEN, SAMPLES, make_data, \
    finish, mean_loss, spawn  # noqa: E402

RO = dist.ReduceOp
N = 3001  # odd: fp16/bf16 buffers that are not a multiple of 4 bytes


def bits(t):
    """Bit pattern of @t, for comparisons in which NaN == NaN and -0 != +0."""
    t = t.contiguous().reshape(-1)
    return t.view(torch.uint8) if t.numel() else t


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(bits(a), bits(b))


def sum_input(dtype, g, world):
    """Values whose sum over any order and any @world <= 4 is exact."""
    if dtype == torch.float16:
        v = torch.randint(-512, 512, (N,), generator=g) / 64.0
    elif dtype == torch.bfloat16:
        v = torch.randint(-128, 128, (N,), generator=g) / 32.0
    elif dtype in (torch.float32, torch.float64):
        v = torch.randint(-2**20, 2**20, (N,), generator=g) / 256.0
    else:
        v = torch.randint(-2**28, 2**28, (N,), generator=g)
    return v.to(dtype)


def minmax_input(dtype, g):
    if dtype.is_floating_point:
        return torch.randn(N, generator=g).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, (N,), generator=g, dtype=torch.int64).to(dtype)


def special_floats(rank, n=37):
    """fp32 with -0.0, +0.0, infinities, NaNs with payloads, subnormals."""
    t = torch.arange(n, dtype=torch.float32) * (rank + 1) - 5
    t[0] = -0.0
    t[1] = 0.0
    t[2] = float('inf')
    t[3] = float('-inf')
    t[4] = 1e-40
    b = t.view(torch.int32)
    b[5] = 0x7fc00000 + 12345 + rank   # a quiet NaN with a payload
    b[6] = 0xffa00001 - (1 << 32)      # a negative signalling-pattern NaN
    return t


def ref_all_reduce(t, op, ref):
    """gloo's all_reduce on @ref; bf16 (which gloo of 1.13 lacks) summed
    in fp32 and rounded once, as INCA does (exact inputs: same result)."""
    if t.dtype == torch.bfloat16:
        w = t.float()
        dist.all_reduce(w, op=op, group=ref)
        t.copy_(w)
    else:
        dist.all_reduce(t, op=op, group=ref)


def moved(t):
    """@t's bytes for gloo, which lacks bool (its data movement is exact)."""
    return t.view(torch.uint8) if t.dtype == torch.bool else t


def was_routed(s0, s1, root):
    """Between the stats @s0 and @s1, one call in routed chunks only, BRIEF
    everywhere but at the @root?"""
    chunks = s1['chunks'] - s0['chunks']
    rt = s1['routed_chunks'] - s0['routed_chunks']
    brief = s1['brief_results'] - s0['brief_results']
    return int(chunks > 0 and rt == chunks and brief == (0 if root else rt))


def check_ops(rank, world, ref, errors):
    """The checks of ops; returns the reduce calls that went routed."""
    import inca_torch
    g = torch.Generator().manual_seed(300 + rank)

    def note(what, ok):
        if not ok:
            errors.append('rank %d: %s differs from gloo' % (rank, what))

    # all_reduce: every dtype and op against gloo (AVG against gloo's SUM
    # divided by the world size: gloo of 1.13 has no AVG).
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.float64,
                  torch.int64):
        for op, name in ((RO.SUM, 'sum'), (RO.MIN, 'min'), (RO.MAX, 'max'), (RO.AVG, 'avg')):
            if op == RO.AVG and not dtype.is_floating_point:
                continue
            x = sum_input(dtype, g, world) if op in (RO.SUM, RO.AVG) else \
                minmax_input(dtype, g)
            mine = x.clone()
            dist.all_reduce(mine, op=op)
            want = x.clone()
            ref_all_reduce(want, RO.SUM if op == RO.AVG else op, ref)
            if op == RO.AVG:
                want.div_(world)
            note('all_reduce %s %s' % (dtype, name), same(mine, want))
    # Quantised integers stay gloo's (docs/protocol.md, "Why there is no
    # int8"): small values, so that the sums do not wrap.
    for dtype in (torch.int8, torch.uint8):
        x = (torch.arange(N) % 5 + rank).to(dtype)
        mine = x.clone()
        dist.all_reduce(mine)
        want = x.clone()
        dist.all_reduce(want, group=ref)
        note('all_reduce %s sum' % dtype, same(mine, want))
    # Several at once, asynchronously, completed in any order.
    xs = [sum_input(torch.float32, g, world) for _ in range(5)]
    mine = [x.clone() for x in xs]
    works = [dist.all_reduce(m, async_op=True) for m in mine]
    for w in reversed(works):
        w.wait()
    for i, x in enumerate(xs):
        dist.all_reduce(x, group=ref)
        note('async all_reduce %d' % i, same(mine[i], x))

    # broadcast: raw bytes, any dtype and length, from every root.
    cases = [special_floats(rank), torch.arange(7, dtype=torch.uint8) + rank,
             torch.tensor([True, False, rank == 1]), torch.arange(5, dtype=torch.int64) * rank,
             sum_input(torch.float16, g, world), torch.randn(3, 4, generator=g)]
    for i, x in enumerate(cases):
        for root in range(world):
            mine = x.clone()
            dist.broadcast(mine, root)
            want = x.clone()
            dist.broadcast(moved(want), root, group=ref)
            note('broadcast case %d from %d' % (i, root), same(mine, want))

    # all_gather and all_gather_into_tensor: the same cases.
    for i, x in enumerate(cases):
        mine = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(mine, x)
        want = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather([moved(w) for w in want], moved(x), group=ref)
        note('all_gather case %d' % i, all(same(a, b) for a, b in zip(mine, want)))
        out = torch.empty((world * x.numel(),), dtype=x.dtype)
        dist.all_gather_into_tensor(out, x.reshape(-1))
        note('all_gather_into_tensor case %d' % i, same(out, torch.cat(
            [w.reshape(-1) for w in want])))

    # reduce to every root: the root has the result, the others' tensors
    # are unchanged. fp32 SUM and AVG, int32 SUM and MAX, fp64 SUM through
    # inca_reduce() (fp64 to gloo when the aggregator lacks it). A call counts as routed when libinca
    # completed all its chunks as routed chunks and, at a rank other than
    # the root, every result came BRIEF (no elements received).
    routed = 0
    for dtype, op in ((torch.float32, RO.SUM), (torch.float32, RO.AVG), (torch.int32, RO.SUM),
                      (torch.int32, RO.MAX), (torch.float64, RO.SUM)):
        x = sum_input(dtype, g, world)
        for root in range(world):
            mine = x.clone()
            s0 = inca_torch.stats()
            dist.reduce(mine, root, op=op)
            routed += was_routed(s0, inca_torch.stats(), rank == root)
            want = x.clone()
            if op == RO.AVG:
                dist.all_reduce(want, group=ref)
                want.div_(world)
            else:
                dist.all_reduce(want, op=op, group=ref)
            note('reduce %s %s to %d' % (dtype, op, root),
                 same(mine, want if rank == root else x))

    # reduce_scatter / reduce_scatter_tensor (gloo of 1.13 has neither:
    # against its all_reduce, of which each rank keeps its block).
    for dtype in (torch.float32, torch.bfloat16, torch.int32, torch.int64):
        for op in (RO.SUM, RO.MAX):
            x = sum_input(dtype, g, world)[:world * 100]
            want = x.clone()
            ref_all_reduce(want, op, ref)
            want = want[rank * 100:(rank + 1) * 100]
            out = torch.empty(100, dtype=dtype)
            dist.reduce_scatter(out, list(x.clone().chunk(world)), op=op)
            note('reduce_scatter %s %s' % (dtype, op), same(out, want))
            out = torch.empty(100, dtype=dtype)
            xin = x.clone()
            dist.reduce_scatter_tensor(out, xin, op=op)
            note('reduce_scatter_tensor %s %s' % (dtype, op), same(out, want) and
                 same(xin, x))
    for _ in range(3):
        dist.barrier()
    return routed


def worker(rank, world, port, a):
    torch.set_num_threads(1)
    os.environ['MASTER_ADDR'] = '127.0.0.1'
    os.environ['MASTER_PORT'] = str(port)
    import inca_torch
    dist.init_process_group(a.backend, rank=rank, world_size=world)
    out = {'errors': []}
    if a.what == 'ops':
        ref = dist.new_group(backend='gloo')
        before = inca_torch.stats()
        out['reduce_routed'] = check_ops(rank, world, ref, out['errors'])
        out['stats0'], out['stats1'] = before, inca_torch.stats()
    else:
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(),
                            nn.Linear(HIDDEN, CLASSES))
        model = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.02)
        x, y = make_data(rank)
        loss_fn = nn.CrossEntropyLoss()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        losses = [mean_loss(model, x, y, loss_fn)]
        for step in range(a.steps):
            i = (step * BATCH) % SAMPLES
            opt.zero_grad()
            loss_fn(model(x[i:i + BATCH]), y[i:i + BATCH]).backward()
            opt.step()
            losses.append(mean_loss(model, x, y, loss_fn))
            if step + 1 == a.pause_at:
                if rank == 0:
                    open(os.path.join(a.sync, 'paused'), 'w').close()
                while not os.path.exists(os.path.join(a.sync, 'go')):
                    time.sleep(0.05)
        params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        every = [torch.empty_like(params) for _ in range(world)]
        dist.all_gather(every, params)
        out.update(params=params, losses=losses,
                   identical=all(torch.equal(every[0], e) for e in every),
                   stats1=inca_torch.stats())
        del model, opt, net
    finish(out, a.out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--world', type=int, required=True)
    ap.add_argument('--what', choices=('ops', 'train'), required=True)
    ap.add_argument('--backend', choices=('inca', 'gloo'), default='inca')
    ap.add_argument('--steps', type=int, default=40)
    ap.add_argument('--pause-at', type=int, default=0)
    ap.add_argument('--sync', default='')
    ap.add_argument('--out', required=True)
    a = ap.parse_args()
    spawn(worker, a.world, a)


if __name__ == '__main__':
    main()
