#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Data-parallel training whose gradients are averaged by an INCA aggregator.

Launch it with torchrun (one process per rank; gloo is the process group
that bootstraps INCA and stands in for it when the aggregator is absent):

    export INCA_AGGREGATOR=10.77.0.1 INCA_JOB=42 INCA_TOKEN=0x494e4341
    torchrun --standalone --nproc_per_node 4 --redirects 1 --tee 1 \
        train_ddp.py --steps 100

(--redirects 1 --tee 1 works around a crash of Debian's torchrun, PyTorch
1.13 under Python 3.11, on the default value of those options.)

Without INCA_AGGREGATOR the same script trains over plain gloo. Copy it and
replace the model and the data with yours: the INCA part is the four
lines marked "INCA".
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

# Where inca_torch lives if it is not installed: this file's parent directory.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from inca_torch import IncaState, inca_allreduce_hook  # noqa: E402  INCA


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--steps', type=int, default=100)
    ap.add_argument('--batch', type=int, default=64)
    ap.add_argument('--lr', type=float, default=0.1)
    args = ap.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group('gloo')  # torchrun sets RANK, WORLD_SIZE, MASTER_*
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)  # DDP broadcasts rank 0's weights anyway
    net = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10))
    model = nn.parallel.DistributedDataParallel(net)
    state = IncaState()                                    # INCA
    model.register_comm_hook(state, inca_allreduce_hook)   # INCA

    # Synthetic data: each rank its own shard of a linearly separable task.
    g = torch.Generator().manual_seed(1)
    w_true = torch.randn(128, 10, generator=g)
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(4096, 128, generator=g)
    y = (x @ w_true).argmax(dim=1)

    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(args.steps):
        i = (step * args.batch) % len(x)
        opt.zero_grad()
        loss = loss_fn(model(x[i:i + args.batch]), y[i:i + args.batch])
        loss.backward()
        opt.step()
        if rank == 0 and (step % 10 == 0 or step == args.steps - 1):
            print('step %4d  loss %.4f' % (step, loss.item()), flush=True)

    st = state.stats()
    every = [None] * world
    dist.all_gather_object(every, st)
    if rank == 0:
        chunks = every[0].get('chunks', 0)
        fb = sum(s.get('fallback_collectives', 0) for s in every)
        print('INCA carried %d chunks, fallback %d collectives, %s' % (
            chunks, fb, 'INCA enabled' if st['enabled'] else 'INCA disabled (gloo only)'))
    state.close()                                          # INCA
    # Free DDP before its process group: freeing it afterwards (when main
    # returns) sometimes hangs in gloo (PyTorch 1.13).
    del model, opt
    dist.destroy_process_group()


if __name__ == '__main__':
    main()
