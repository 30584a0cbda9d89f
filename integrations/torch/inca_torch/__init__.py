# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""inca_torch: PyTorch over INCA.

The backend (importing the package registers it):

    import inca_torch
    dist.init_process_group('inca')          # job from INCA_* of rank 0
    dist.all_reduce(t)                        # through incad; gloo without it
    model = DistributedDataParallel(net)      # no hook needed
    ...train...
    inca_torch.shutdown()                     # leave the job, every rank
    dist.destroy_process_group()

Or the DDP communication hook on a gloo group:

    dist.init_process_group('gloo')
    state = IncaState()
    model.register_comm_hook(state, inca_allreduce_hook)
    ...train...
    state.close()

See docs/torch.md.
"""

from .hook import IncaState, inca_allreduce_hook, library
from .backend import ProcessGroupInca, register, shutdown, stats

register()

__all__ = ['IncaState', 'inca_allreduce_hook', 'library', 'ProcessGroupInca', 'register',
           'shutdown', 'stats']
