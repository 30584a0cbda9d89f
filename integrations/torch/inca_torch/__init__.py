# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""inca_torch: PyTorch DistributedDataParallel over INCA.

    import torch.distributed as dist
    from inca_torch import IncaState, inca_allreduce_hook

    dist.init_process_group('gloo')          # torchrun or mp.spawn set it up
    state = IncaState()                       # job from INCA_* of rank 0
    model = torch.nn.parallel.DistributedDataParallel(net)
    model.register_comm_hook(state, inca_allreduce_hook)
    ...train...
    state.close()

See docs/torch.md.
"""

from .hook import IncaState, inca_allreduce_hook, library

__all__ = ['IncaState', 'inca_allreduce_hook', 'library']
