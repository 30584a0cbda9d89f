# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""The torch.distributed backend "inca": a ProcessGroup whose collectives
go through libinca where that is exact and through an inner gloo group
otherwise.

    import inca_torch            # registers the backend
    dist.init_process_group('inca')
    dist.all_reduce(t)           # through incad
    DistributedDataParallel(net) # no hook: buckets through incad

PyTorch 1.13 lets Python subclass ProcessGroup (the PyProcessGroup
trampoline), so DDP's C++ reducer calls allreduce() below. Collectives
return a Work wrapping a torch.futures.Future that IncaState's worker
thread completes (docs/torch.md, "The backend").

Two inner gloo groups come from the same store: one for the operations
delegated from the caller's thread, one private to the worker thread for
libinca's fallback (two threads never share a group: the ranks could order
their collectives differently).
"""

import atexit
import contextlib
import functools
import logging
import os
import pickle
import threading
import weakref

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as C
from torch._C._distributed_c10d import ProcessGroup, _create_work_from_future

from . import _libinca as L
from .hook import _TORCH_DTYPES, IncaState, _pg_allreduce, read_conf
from .route import HOST, INCA, Selector, parse_mode

log = logging.getLogger('inca_torch')

NAME = 'inca'
_RO = dist.ReduceOp
_INCA_OPS = ((_RO.SUM, L.OP_SUM), (_RO.MIN, L.OP_MIN), (_RO.MAX, L.OP_MAX))
# AVG (a sum divided once at the end) only where the division is a float's.
_FLOATS = (torch.float32, torch.float16, torch.bfloat16, torch.float64)

# One INCA job per process: the first inca group created takes it (the
# default group, normally); later groups are gloo only while it lives.
_lock = threading.Lock()
_job_owner = None
_live = weakref.WeakSet()


def _inca_op(op):
    """(libinca op, average?) for a ReduceOp, or None for gloo's."""
    if op == _RO.AVG:
        return L.OP_SUM, True
    for r, i in _INCA_OPS:
        if op == r:
            return i, False
    return None


def _done(value):
    fut = torch.futures.Future()
    fut.set_result(value)
    return fut


def _work(fut):
    return _create_work_from_future(fut)


def _bytes(t):
    """The bytes of contiguous @t, as a uint8 view."""
    return t.reshape(-1).view(torch.uint8)


def _movable(tensors):
    """@tensors as gloo of 1.13 can move them: bool, int16 and bf16 (types
    it lacks) as the bytes of the same memory."""
    return [t.view(torch.uint8) if t.dtype in (torch.bool, torch.int16, torch.bfloat16)
            and t.is_contiguous() and t.dim() > 0 else t for t in tensors]


def _agree_on(group, times):
    """The selector's agreement: the slowest rank's @times (a list of
    floats), on @group, the delegate gloo group (issued from the caller's
    thread, in call order). A function of the group, not a method: the
    selector must not hold the ProcessGroup in a reference cycle, which
    would leave its gloo groups to the garbage collector at exit."""
    t = torch.tensor(times, dtype=torch.float64)
    _pg_allreduce(group, t, _RO.MAX)
    return t.tolist()


def _plain(t):
    return t.device.type == 'cpu' and t.is_contiguous() and not t.is_sparse \
        and t.dim() > 0 and not t.is_complex()


class ProcessGroupInca(ProcessGroup):
    """A ProcessGroup over one INCA job. Created by torch.distributed
    (init_process_group('inca'), new_group(backend='inca')), not directly.

    Through libinca (CPU, contiguous tensors): allreduce of fp32, fp16,
    bf16, int32 with SUM, MIN, MAX, and AVG for the float types;
    broadcast of any dtype (an int32 sum of the raw bytes: bit-exact);
    all_gather and _allgather_base of any dtype (inca_allgather(): each
    rank sends its block and the aggregator replicates it where it says
    ROUTED, else an int32 sum of blocks each rank fills its own of;
    bit-exact); reduce_scatter and _reduce_scatter_base of the allreduce's
    dtypes and ops (inca_reduce_scatter(): each block's result to its rank
    only where the aggregator says ROUTED, else an allreduce of which each
    rank keeps its block); reduce (inca_reduce(): the result to the root
    only where the aggregator says ROUTED, else an allreduce); barrier.
    Everything else, and everything when the job is absent, goes to the
    inner gloo group; when incad fails mid-run, libinca finishes the
    collectives through gloo itself.

    INCA_TORCH_ROUTE (rank 0's): 'inca' (default) sends every call INCA can
    do through libinca; 'host' sends the same calls to the inner gloo group
    instead; 'auto' measures both routes per kind (allreduce; reduce;
    reduce_scatter; broadcast; all_gather) and size class and takes
    the faster (route.py). barrier always takes both.
    """

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        global _job_owner
        self._rank, self._size = rank, size
        self._timeout = timeout
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore('inca/gloo', store), rank, size,
                                           timeout)
        fb = dist.ProcessGroupGloo(dist.PrefixStore('inca/fallback', store), rank, size,
                                   timeout)
        # Rank 0 reads the job and the route mode and publishes them in
        # the group's store, so every rank uses rank 0's parameters (or
        # none), and a bad INCA_TORCH_ROUTE fails every rank alike.
        if rank == 0:
            with _lock:
                conf = read_conf() if _job_owner is None else None
            route = os.environ.get('INCA_TORCH_ROUTE', '')
            store.set('inca/conf', pickle.dumps((conf, route)))
        else:
            store.wait(['inca/conf'], timeout)
            conf, route = pickle.loads(store.get('inca/conf'))
        self._route = Selector(parse_mode(route), functools.partial(_agree_on, self._gloo),
                               timeout.total_seconds(),
                               'job %d ' % conf['job'] if conf else '')
        self._force = None
        self.state = IncaState.for_group(conf, rank, size, fb,
                                         dist.PrefixStore('inca/oob', store))
        if self.state.comm is not None:
            with _lock:
                _job_owner = self
        _live.add(self)

    # ---- torch's interface -------------------------------------------------

    def getBackendName(self):
        return NAME

    def _gloo_avg(self, tensors):
        """AVG through gloo, which has none in 1.13: a sum, then a division
        (floating types only, as for other backends)."""
        if not all(t.is_floating_point() or t.is_complex() for t in tensors):
            raise ValueError('inca: ReduceOp.AVG needs floating-point tensors')
        opts = C.AllreduceOptions()
        opts.reduceOp = _RO.SUM
        size = self._size

        def div(fut):
            for t in tensors:
                t.div_(size)
            return tensors
        return self._gloo.allreduce(tensors, opts).get_future().then(div)

    # ---- routes ------------------------------------------------------------

    def _routed(self, kind, nbytes, inca, host):
        """The Future of an eligible collective of @kind moving @nbytes
        through INCA: inca() or host() (each returning a Future), as the
        selector routes it; the call's time is measured for it."""
        if self._force is not None:
            return inca() if self._force == INCA else host()
        via, call = self._route.route(kind, nbytes)
        fut = inca() if via == INCA else host()
        if call is not None:
            done = self._route.done
            fut.add_done_callback(lambda f: done(call))
        return fut

    @contextlib.contextmanager
    def forced_route(self, via):
        """For benchmarks: every eligible call issued inside goes to @via
        ('inca' or 'host'), bypassing the selector (neither measured nor
        counted by it). Every rank must force the same calls."""
        self._force = {'inca': INCA, 'host': HOST}[via]
        try:
            yield
        finally:
            self._force = None

    # ---- collectives --------------------------------------------------------

    def _allreduce_fut(self, t, op, post=None):
        """A Future of allreduce(@t, @op) in place, through INCA or gloo
        as the selector routes it when INCA can do it, else gloo; post(t)
        runs on success. None: op unknown to both."""
        io = _inca_op(op)
        st = self.state
        if io is not None and st.supports(t) and _plain(t) and \
                not (io[1] and t.dtype not in _FLOATS):
            inca_op, avg = io
            size = self._size

            def fin(x):
                if avg:
                    x.div_(size)
                return post(x) if post is not None else [x]
            return self._routed('allreduce', t.numel() * t.element_size(),
                                lambda: st.submit(t, inca_op, fin),
                                lambda: self._gloo_allreduce_fut(t, op, io, post))
        st.calls['gloo'] += 1
        return self._gloo_allreduce_fut(t, op, io, post)

    def _gloo_allreduce_fut(self, t, op, io, post):
        """allreduce(@t, @op) through the inner gloo group."""
        if t.dtype in (torch.float16, torch.bfloat16) and _plain(t) and \
                (op == _RO.AVG or io is not None):
            # gloo of 1.13 has no bf16 and sums fp16 in fp16: as INCA
            # does, a sum in fp32 rounded once (then AVG's division), so
            # the result does not depend on where it was computed.
            wide = t.float()
            opts = C.AllreduceOptions()
            opts.reduceOp = _RO.SUM if op == _RO.AVG else op
            size = self._size

            def narrow(f):
                f.value()
                t.copy_(wide)
                if op == _RO.AVG:
                    t.div_(size)
                return post(t) if post is not None else [t]
            return self._gloo.allreduce([wide], opts).get_future().then(narrow)
        if op == _RO.AVG:
            fut = self._gloo_avg([t])
        else:
            opts = C.AllreduceOptions()
            opts.reduceOp = op
            fut = self._gloo.allreduce([t], opts).get_future()
        if post is None:
            return fut
        return fut.then(lambda f: (f.value(), post(t))[1])

    def allreduce(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else _RO.SUM
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        if len(tensors) != 1:
            self.state.calls['gloo'] += 1
            if op == _RO.AVG:
                return _work(self._gloo_avg(tensors))
            return self._gloo.allreduce(tensors, opts)
        return _work(self._allreduce_fut(tensors[0], op))

    def _raw_sum(self, nbytes, fill, post):
        """The int32 sum of @nbytes raw bytes (padded to 4) that fill(u8)
        writes into a zeroed scratch buffer; post(u8) reads the result."""
        scratch = torch.zeros((nbytes + 3) // 4, dtype=torch.int32)
        u8 = scratch.view(torch.uint8)
        fill(u8)
        return self.state.submit(scratch, L.OP_SUM, lambda s: post(u8))

    def broadcast(self, tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        if len(tensors) != 1 or (opts is not None and opts.rootTensor != 0) or \
                not self._raw_ok(tensors[0]):
            self.state.calls['gloo'] += 1
            return self._gloo.broadcast(_movable(tensors), opts or C.BroadcastOptions())
        t = tensors[0]
        tb = _bytes(t)
        n = tb.numel()

        def fill(u8):
            if self._rank == root:
                u8[:n].copy_(tb)

        def post(u8):
            if self._rank != root:
                tb.copy_(u8[:n])
            return [t]

        def host():
            w = self._gloo.broadcast(_movable(tensors), opts or C.BroadcastOptions())
            return w.get_future().then(lambda f: (f.value(), tensors)[1])
        return _work(self._routed('broadcast', n, lambda: self._raw_sum(n, fill, post), host))

    def _raw_ok(self, t):
        return self.state.comm is not None and not self.state._closed and _plain(t)

    def _gather_bytes(self, t, outs_bytes, block):
        """all_gather of @t's bytes: rank r's block at r * @block, through
        inca_allgather() (routed where the aggregator can)."""
        tb = _bytes(t).clone()
        u8 = torch.empty(block * self._size + 1, dtype=torch.uint8)

        def call(lib, comm):
            return lib.inca_allgather(comm, tb.data_ptr(), u8.data_ptr(), block)
        return self.state.submit_call(call, u8, outs_bytes)

    def allgather(self, output_tensors, input_tensors, opts=None):
        ok = len(input_tensors) == 1 and len(output_tensors) == 1 and \
            len(output_tensors[0]) == self._size and self._raw_ok(input_tensors[0]) and \
            all(o.dtype == input_tensors[0].dtype and o.numel() == input_tensors[0].numel()
                and _plain(o) for o in output_tensors[0])
        if not ok:
            self.state.calls['gloo'] += 1
            return self._gloo.allgather([_movable(o) for o in output_tensors],
                                        _movable(input_tensors), opts or C.AllgatherOptions())
        t = input_tensors[0]
        outs = output_tensors[0]
        block = _bytes(t).numel()

        def post(u8):
            for r, o in enumerate(outs):
                _bytes(o).copy_(u8[r * block:(r + 1) * block])
            return output_tensors

        def host():
            w = self._gloo.allgather([_movable(o) for o in output_tensors],
                                     _movable(input_tensors), opts or C.AllgatherOptions())
            return w.get_future().then(lambda f: (f.value(), output_tensors)[1])
        return _work(self._routed('allgather', block * self._size,
                                  lambda: self._gather_bytes(t, post, block), host))

    def _gloo_allgather_base(self, output, input, opts):
        # gloo of 1.13 has no _allgather_base: its allgather into views of
        # the output's blocks.
        return self._gloo.allgather([_movable(output.reshape(-1).chunk(self._size))],
                                    _movable([input.reshape(-1)]), opts or C.AllgatherOptions())

    def _allgather_base(self, output, input, opts=None):
        if not (self._raw_ok(input) and _plain(output) and output.dtype == input.dtype and
                output.numel() == input.numel() * self._size):
            self.state.calls['gloo'] += 1
            return self._gloo_allgather_base(output, input, opts)
        block = _bytes(input).numel()

        def post(u8):
            _bytes(output).copy_(u8[:block * self._size])
            return [output]

        def host():
            fut = self._gloo_allgather_base(output, input, opts).get_future()
            return fut.then(lambda f: (f.value(), [output])[1])
        return _work(self._routed('allgather', block * self._size,
                                  lambda: self._gather_bytes(input, post, block), host))

    def reduce(self, tensors, opts=None):
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        root = opts.rootRank if opts is not None else 0
        op = opts.reduceOp if opts is not None else _RO.SUM
        if len(tensors) != 1 or (opts is not None and opts.rootTensor != 0):
            self.state.calls['gloo'] += 1
            return self._gloo.reduce(tensors, opts)
        t = tensors[0]
        me = self._rank == root
        io = _inca_op(op)
        st = self.state
        if io is None or not st.supports(t) or not _plain(t) or \
                (io[1] and t.dtype not in _FLOATS):
            # gloo: an allreduce; the others reduce a copy and keep their
            # tensor, as gloo's reduce leaves it.
            return _work(self._allreduce_fut(t if me else t.clone(), op,
                                             None if me else lambda x: [t]))
        inca_op, avg = io
        dtype = _TORCH_DTYPES[t.dtype]
        n = t.numel()
        size = self._size
        # inca_reduce(): the root reduces from a copy into @t; the others'
        # @t is only read (their recvbuf is NULL: with ROUTED they receive
        # BRIEF results, no elements).
        src = t.clone() if me else t

        def call(lib, comm):
            return lib.inca_reduce(comm, src.data_ptr(), t.data_ptr() if me else None, n,
                                   dtype, inca_op, root)

        def fin(x):
            if avg and me:
                t.div_(size)
            return [t]

        def host():
            # gloo's allreduce, on a copy at the others.
            return self._gloo_allreduce_fut(t if me else t.clone(), op, io, lambda x: [t])
        return _work(self._routed('reduce', n * t.element_size(),
                                  lambda: st.submit_call(call, t, fin), host))

    def _scatter_fut(self, output, flat, op):
        """The reduce-scatter of @flat (a copy of the input) into @output:
        inca_reduce_scatter() where INCA takes the dtype and op (routed
        where the aggregator can), else an allreduce of which this rank
        keeps its block."""
        n = output.numel()
        me = self._rank
        io = _inca_op(op)
        st = self.state

        def keep(x):
            output.reshape(-1).copy_(x.reshape(-1)[me * n:(me + 1) * n])
            return [output]
        if io is not None and st.supports(flat) and _plain(output) and \
                not (io[1] and flat.dtype not in _FLOATS):
            inca_op, avg = io
            dtype = _TORCH_DTYPES[flat.dtype]
            out = output.reshape(-1) if output.is_contiguous() else output.clone()
            size = self._size

            def call(lib, comm):
                return lib.inca_reduce_scatter(comm, flat.data_ptr(), out.data_ptr(), n, dtype,
                                               inca_op)

            def fin(x):
                if avg:
                    x.div_(size)
                return [output]

            # The host route: gloo's allreduce of the whole input, of which
            # this rank keeps its block (gloo of 1.13 has no reduce_scatter).
            return self._routed('reduce_scatter', flat.numel() * flat.element_size(),
                                lambda: st.submit_call(call, out, fin),
                                lambda: self._gloo_allreduce_fut(flat, op, io, keep))

        return self._allreduce_fut(flat, op, keep)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        op = opts.reduceOp if opts is not None else _RO.SUM
        if len(output_tensors) != 1 or len(input_tensors) != 1 or \
                len(input_tensors[0]) != self._size:
            raise ValueError('inca: reduce_scatter takes one output tensor and one list of '
                             'world size inputs')
        out = output_tensors[0]
        ins = input_tensors[0]
        if any(i.numel() != out.numel() or i.dtype != out.dtype for i in ins):
            raise ValueError('inca: reduce_scatter inputs must match the output')
        # gloo of 1.13 has no reduce_scatter: an allreduce of the
        # concatenation, through INCA or gloo, of which each rank keeps its
        # block.
        flat = torch.cat([i.reshape(-1) for i in ins])
        return _work(self._scatter_fut(out, flat, op))

    def _reduce_scatter_base(self, output, input, opts=None):
        op = opts.reduceOp if opts is not None else _RO.SUM
        if input.numel() != output.numel() * self._size or input.dtype != output.dtype:
            raise ValueError('inca: _reduce_scatter_base: input must be world size x output')
        return _work(self._scatter_fut(output, input.reshape(-1).clone(), op))

    def barrier(self, opts=None):
        # Through gloo (which also waits for gloo's earlier work) and, when
        # INCA is on, an allreduce of one int32 queued behind every earlier
        # INCA collective of this group.
        g = self._gloo.barrier(opts or C.BarrierOptions()).get_future()
        if self.state.comm is None or self.state._closed:
            return _work(g)
        one = torch.ones(1, dtype=torch.int32)
        f = self.state.submit(one, L.OP_SUM)
        return _work(torch.futures.collect_all([g, f]).then(lambda c: [one]))

    def close(self):
        """Leave the INCA job (collective: every rank of the group). Done at
        exit by itself; call it, for instance through
        inca_torch.shutdown(), before dist.destroy_process_group() to leave
        the job at a point all ranks reach together."""
        global _job_owner
        self.state.close()
        with _lock:
            if _job_owner is self:
                _job_owner = None

    def stats(self):
        """IncaState.stats() and the selector's counters (route_mode,
        route_inca, route_host, route_agreements, route_switches,
        route_digest)."""
        out = self.state.stats()
        out.update(self._route.stats())
        return out

    def route_decisions(self):
        """The selector's agreements so far, in order: (kind, size class,
        call, agreed INCA ns, agreed host ns, route), the same on every
        rank."""
        return list(self._route.decisions)


def _delegate(name):
    def call(self, *args, **kwargs):
        self.state.calls['gloo'] += 1
        return getattr(self._gloo, name)(*args, **kwargs)
    call.__name__ = name
    call.__doc__ = 'Through the inner gloo group.'
    return call


for _n in ('allreduce_coalesced', 'allgather_coalesced', 'gather', 'scatter', 'alltoall',
           'alltoall_base', 'send', 'recv', 'recv_anysource', 'monitored_barrier'):
    setattr(ProcessGroupInca, _n, _delegate(_n))


def _create(store, rank, size, timeout):
    return ProcessGroupInca(store, rank, size, timeout)


def register():
    """Register the backend 'inca' with torch.distributed (done on import
    of inca_torch; harmless to repeat)."""
    if NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(NAME, _create)


def shutdown(group=None):
    """Leave the INCA job of @group (default: the default group), on every
    rank, before dist.destroy_process_group()."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if isinstance(pg, ProcessGroupInca):
        pg.close()


def stats(group=None):
    """IncaState.stats() of @group's (default: the default group's) job."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    return pg.stats() if isinstance(pg, ProcessGroupInca) else {}


@atexit.register
def _close_all():
    for pg in list(_live):
        try:
            pg.close()
        except Exception:
            log.exception('inca: closing a process group at exit')
