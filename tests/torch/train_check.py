#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Train a small MLP with DDP in N processes (torch.multiprocessing.spawn)
and save what the test compares.

  train_check.py --world N --mode inca|gloo --out FILE [--steps S]

--mode inca registers inca_torch's hook (job from the INCA_* variables);
--mode gloo is plain DDP over gloo. The data, the initial weights and the
order of the batches are fixed by seeds, so the two modes see the same
training and may differ only by the order of the fp32 sums.

The file (torch.save) holds: params (rank 0's final parameters, flattened),
identical (every rank ended with bit-identical parameters), loss0 / loss1
(mean loss over all ranks' data before and after training), stats (each
rank's IncaState.stats()), and dtype_errors (inca mode: allreduces of
fp16, bf16, fp32 and int32 tensors through the state that did not give the
exact expected result).
"""

import argparse
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'integrations', 'torch'))

FEATURES, HIDDEN, CLASSES, SAMPLES, BATCH = 64, 256, 10, 512, 64


def make_data(rank):
    g = torch.Generator().manual_seed(7)
    w_true = torch.randn(FEATURES, CLASSES, generator=g)
    g = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(SAMPLES, FEATURES, generator=g)
    y = (x @ w_true).argmax(dim=1)
    return x, y


def mean_loss(model, x, y, loss_fn):
    with torch.no_grad():
        t = loss_fn(model(x), y).reshape(1)
    dist.all_reduce(t)
    return t.item() / dist.get_world_size()


def dtype_checks(state, rank, world):
    """Allreduce tensors of each dtype through the state; compare with the
    exact result (inputs chosen so that fp32 sums are exact)."""
    errors = []
    g = torch.Generator().manual_seed(500 + rank)
    n = 3000
    cases = [
        (torch.float16, 'sum', (torch.randint(-512, 512, (n,), generator=g) / 64.0)),
        (torch.bfloat16, 'sum', (torch.randint(-128, 128, (n,), generator=g) / 32.0)),
        (torch.float32, 'sum', (torch.randint(-2**20, 2**20, (n,), generator=g) / 256.0)),
        (torch.float32, 'max', torch.randn(n, generator=g)),
        (torch.float32, 'min', torch.randn(n, generator=g)),
        (torch.int32, 'sum', torch.randint(-2**28, 2**28, (n,), generator=g)),
    ]
    for dtype, op, base in cases:
        mine = base.to(dtype)
        every = [torch.empty(n, dtype=torch.float64) for _ in range(world)]
        dist.all_gather(every, mine.to(torch.float64))
        stack = torch.stack(every)
        want = {'sum': stack.sum(0), 'min': stack.min(0).values,
                'max': stack.max(0).values}[op].to(dtype)
        got = state.allreduce(mine.clone(), op)
        if not torch.equal(got, want):
            bad = (got != want).nonzero()
            errors.append('%s %s: %d elements differ, first %d: %s want %s'
                          % (dtype, op, len(bad), bad[0].item(), got[bad[0]].item(),
                             want[bad[0]].item()))
    return errors


def worker(rank, world, port, mode, steps, out):
    torch.set_num_threads(1)
    os.environ['MASTER_ADDR'] = '127.0.0.1'
    os.environ['MASTER_PORT'] = str(port)
    dist.init_process_group('gloo', rank=rank, world_size=world)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES))
    # Small buckets: several gradient buckets per step, in flight together.
    model = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.02)
    state = None
    if mode == 'inca':
        from inca_torch import IncaState, inca_allreduce_hook
        state = IncaState()
        model.register_comm_hook(state, inca_allreduce_hook)
    x, y = make_data(rank)
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss0 = mean_loss(model, x, y, loss_fn)
    for step in range(steps):
        i = (step * BATCH) % SAMPLES
        opt.zero_grad()
        loss_fn(model(x[i:i + BATCH]), y[i:i + BATCH]).backward()
        opt.step()
    loss1 = mean_loss(model, x, y, loss_fn)

    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    every = [torch.empty_like(params) for _ in range(world)]
    dist.all_gather(every, params)
    identical = all(torch.equal(every[0], e) for e in every)
    errors = dtype_checks(state, rank, world) if state is not None else []
    stats = state.stats() if state is not None else {}
    all_stats = [None] * world
    dist.all_gather_object(all_stats, stats)
    all_errors = [None] * world
    dist.all_gather_object(all_errors, errors)
    if state is not None:
        state.close()
    if rank == 0:
        torch.save({'params': params, 'identical': identical, 'loss0': loss0,
                    'loss1': loss1, 'stats': all_stats,
                    'dtype_errors': [e for r in all_errors for e in r]}, out)
    # The DDP reducer must go before its process group: destroying it
    # afterwards (when the function returns) sometimes hangs in gloo.
    del model, opt, net
    dist.destroy_process_group()


def finish(out, path):
    """The end of a check's worker: every rank's @out gathered, the INCA
    job left (inca_torch.shutdown(): nothing on another backend), rank 0
    saves the list to @path, and the group is destroyed."""
    import inca_torch
    outs = [None] * dist.get_world_size()
    dist.all_gather_object(outs, out)
    inca_torch.shutdown()
    if dist.get_rank() == 0:
        torch.save(outs, path)
    dist.destroy_process_group()


def spawn(worker, world, *args):
    """worker(rank, world, port, *args) in @world processes, with a free
    loopback port for the default group's rendezvous."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(world, port) + args, nprocs=world, join=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--world', type=int, required=True)
    ap.add_argument('--mode', choices=('inca', 'gloo'), required=True)
    ap.add_argument('--steps', type=int, default=40)
    ap.add_argument('--out', required=True)
    args = ap.parse_args()
    spawn(worker, args.world, args.mode, args.steps, args.out)


if __name__ == '__main__':
    main()
