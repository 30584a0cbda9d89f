#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Fully sharded data-parallel training in N processes on a backend.

  shard_check.py --world N --backend inca|gloo --steps S --out FILE
                 [--hidden H] [--loss-every K] [--rank R --master IP:PORT]

--hidden widens the model's hidden layer (tools/bench/bench_torch_shard.sh
uses a few MB of parameters); --rank runs rank R alone in this process,
its rendezvous at IP:PORT (one process per namespace), instead of
spawning all N here. Every rank records the seconds of each step's
all-gather, forward and backward, and reduce-scatter with the update
("times": the benchmark reads them; the test does not).

Why not torch's FSDP: Debian's torch 1.13 cannot run it here. Under
Python 3.11 `import torch.distributed.fsdp` fails (a dataclass with a
mutable default in torch/distributed/_shard, fixed upstream in 2.0), and
past that, FullyShardedDataParallel of 1.13 takes its compute device from
torch.cuda unconditionally, which this CPU-only build has not. So this
script trains the way FSDP (ZeRO stage 3) does, with the same two
collectives FSDP calls on its process group, written out:

 * the parameters live as one flat fp32 vector, padded to a multiple of N
   and cut into N shards; rank r keeps shard r and its momentum only;
 * every step all-gathers the shards into the full vector
   (all_gather_into_tensor), runs forward and backward on rank r's batch,
   reduce-scatters the flat gradient (reduce_scatter_tensor, SUM) so rank r
   receives the sum of shard r only, divides by N, and updates its shard
   with SGD and momentum.

On --backend gloo the two calls are the reference forms torch 1.13's gloo
has (it has neither): all_gather into a list of views, and all_reduce
followed by taking one's own shard. The file holds rank 0's loss of every
step (the mean over ranks of the loss on each rank's whole data set), the
final full parameter vector as every rank sees it, and each rank's
inca_torch stats.
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

LR, MOMENTUM = 0.05, 0.9


def all_gather_flat(full, shard, backend):
    if backend == 'inca':
        dist.all_gather_into_tensor(full, shard)
    else:
        dist.all_gather(list(full.chunk(dist.get_world_size())), shard)


def reduce_scatter_flat(shard, full, backend):
    if backend == 'inca':
        dist.reduce_scatter_tensor(shard, full, op=dist.ReduceOp.SUM)
    else:
        dist.all_reduce(full)
        shard.copy_(full.chunk(dist.get_world_size())[dist.get_rank()])


def worker(rank, world, port, a):
    torch.set_num_threads(1)
    os.environ['MASTER_ADDR'] = a.master.rsplit(':', 1)[0] if a.master else '127.0.0.1'
    os.environ['MASTER_PORT'] = str(port)
    import inca_torch
    dist.init_process_group(a.backend, rank=rank, world_size=world)

    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(FEATURES, a.hidden), nn.ReLU(), nn.Linear(a.hidden, CLASSES))
    params = list(net.parameters())
    n = sum(p.numel() for p in params)
    per = (n + world - 1) // world
    flat = torch.zeros(per * world)
    flat[:n] = nn.utils.parameters_to_vector(params).detach()
    shard = flat.chunk(world)[rank].clone()
    velocity = torch.zeros_like(shard)
    del flat

    x, y = make_data(rank)
    loss_fn = nn.CrossEntropyLoss()
    full = torch.empty(per * world)
    grad = torch.zeros(per * world)
    gshard = torch.empty(per)
    losses, times = [], []
    stats0 = inca_torch.stats() if a.backend == 'inca' else None
    for step in range(a.steps + 1):
        t0 = time.perf_counter()
        all_gather_flat(full, shard, a.backend)
        with torch.no_grad():
            nn.utils.vector_to_parameters(full[:n], params)
        t1 = time.perf_counter()
        if step % a.loss_every == 0 or step == a.steps:
            losses.append((step, mean_loss(net, x, y, loss_fn)))
        if step == a.steps:
            break
        t2 = time.perf_counter()
        i = (step * BATCH) % SAMPLES
        net.zero_grad()
        loss_fn(net(x[i:i + BATCH]), y[i:i + BATCH]).backward()
        grad[:n] = torch.cat([p.grad.reshape(-1) for p in params])
        t3 = time.perf_counter()
        reduce_scatter_flat(gshard, grad, a.backend)
        gshard /= world
        velocity.mul_(MOMENTUM).add_(gshard)
        shard.add_(velocity, alpha=-LR)
        # (all-gather, forward and backward, reduce-scatter and update);
        # the loss's evaluation is left out.
        times.append((t1 - t0, t3 - t2, time.perf_counter() - t3))

    out = {'rank': rank, 'params': full[:n].clone(), 'losses': losses, 'times': times,
           'nparams': n,
           'stats0': stats0, 'stats1': inca_torch.stats() if a.backend == 'inca' else None}
    finish(out, a.out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--world', type=int, required=True)
    ap.add_argument('--backend', choices=('inca', 'gloo'), default='inca')
    ap.add_argument('--steps', type=int, default=200)
    ap.add_argument('--loss-every', type=int, default=10)
    ap.add_argument('--hidden', type=int, default=HIDDEN)
    ap.add_argument('--rank', type=int)
    ap.add_argument('--master', help='IP:PORT of rank 0 (with --rank)')
    ap.add_argument('--out', required=True)
    a = ap.parse_args()
    if a.rank is None:
        spawn(worker, a.world, a)
    elif a.master is None:
        ap.error('--rank needs --master')
    else:
        worker(a.rank, a.world, int(a.master.rsplit(':', 1)[1]), a)


if __name__ == '__main__':
    main()
