# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""IncaState and the DDP communication hook that allreduces gradient
buckets through libinca.

Threads: libinca wants a communicator used by one thread at a time and
makes progress only inside its calls. An IncaState therefore owns one
worker thread that makes every libinca call on its communicator: the hook
queues a bucket and returns a torch.futures.Future at once, the worker
streams the queued buckets through libinca in order (several in flight in
one window, so communication overlaps the rest of the backward pass),
divides each result by the world size and completes its future.
libinca's keepalive thread sends heartbeats between steps, so long pauses
(evaluation, checkpoints) do not get the rank evicted.

Fallback: libinca calls back into Python (ctypes CFUNCTYPE, on the worker
thread) when the aggregator is absent, refuses the job or stops answering;
the callback runs an allreduce on a private gloo group created for this
state. The group is private because the worker thread issues its
collectives while the training thread may issue its own (DDP's buffer
broadcasts, the user's): two threads must never share one group, or the
ranks could order their collectives differently.
"""

import collections
import ctypes
import datetime
import logging
import os
import threading
import time

import torch
import torch.distributed as dist

from . import _libinca as L

log = logging.getLogger('inca_torch')

_TORCH_DTYPES = {
    torch.float32: L.DTYPE_FP32,
    torch.float16: L.DTYPE_FP16,
    torch.bfloat16: L.DTYPE_BF16,
    torch.int32: L.DTYPE_INT32,
    torch.int64: L.DTYPE_INT64,
    torch.float64: L.DTYPE_FP64,
}
# Types an aggregator may lack (a switch: 32-bit ALUs): they go to gloo
# when its CAPS lacked them (libinca would refuse them, INCA_ENOTSUP);
# with no aggregator reached (dtypes 0) libinca's fallback, gloo, has them.
_WIDE = (torch.int64, torch.float64)
_INCA_TO_TORCH = {v: k for k, v in _TORCH_DTYPES.items()}
_ELEM_SIZE = {L.DTYPE_INT32: 4, L.DTYPE_FP32: 4, L.DTYPE_FP16: 2, L.DTYPE_BF16: 2,
              L.DTYPE_INT64: 8, L.DTYPE_FP64: 8}
_OPS = {'sum': L.OP_SUM, 'min': L.OP_MIN, 'max': L.OP_MAX}
_DIST_OPS = {L.OP_SUM: dist.ReduceOp.SUM, L.OP_MIN: dist.ReduceOp.MIN,
             L.OP_MAX: dist.ReduceOp.MAX}
_PY_LOG = {L.LOG_ERR: logging.ERROR, L.LOG_WARN: logging.WARNING, L.LOG_INFO: logging.INFO,
           L.LOG_DEBUG: logging.DEBUG}

_lib = None
_log_cb = None


def _env_int(name, default, lo, hi):
    s = os.environ.get(name, '')
    if s == '':
        return default
    v = int(s, 0)
    if not lo <= v <= hi:
        raise ValueError('%s=%s: want %d..%d' % (name, s, lo, hi))
    return v


def library(path=None):
    """The process's libinca (loaded once), with its log routed to the
    'inca_torch' logger at the level INCA_TORCH_VERBOSE (0 errors, 1
    warnings (default), 2 info, 3 debug)."""
    global _lib, _log_cb
    if _lib is None:
        _lib = L.load(path)

        def _log(ctx, level, msg):
            log.log(_PY_LOG.get(level, logging.DEBUG), 'libinca: %s',
                    msg.decode(errors='replace'))
        _log_cb = L.LOG_FN(_log)
        _lib.inca_set_log_fn(_log_cb, None, _env_int('INCA_TORCH_VERBOSE', 1, 0, 3))
    return _lib


def _tensor_at(addr, count, dtype):
    """A tensor over @count elements of foreign memory at @addr (no copy)."""
    size = count * torch.tensor([], dtype=dtype).element_size()
    buf = (ctypes.c_char * size).from_address(addr)
    return torch.frombuffer(buf, dtype=dtype, count=count)


def _pg_allreduce(group, tensor, op):
    """Blocking allreduce on a ProcessGroup object itself: the groups of a
    backend are not registered with torch.distributed, so dist.all_reduce
    cannot be given them."""
    opts = torch._C._distributed_c10d.AllreduceOptions()
    opts.reduceOp = op
    group.allreduce([tensor], opts).wait()


class _Item:
    """One allreduce for the worker: @tensor is what libinca reduces in
    place; the future's value is post(tensor), or tensor without one. With
    @call, a blocking libinca collective instead (call(lib, comm) returns
    its result), run after every earlier item."""
    __slots__ = ('tensor', 'op', 'post', 'future', 'req', 'call')

    def __init__(self, tensor, op, post=None, call=None):
        self.tensor, self.op, self.post, self.call = tensor, op, post, call
        self.future = torch.futures.Future()
        self.req = ctypes.c_void_p()


def read_conf(lib_path=None):
    """Rank 0: the job's parameters from the environment, or None (no
    INCA_AGGREGATOR, INCA_TORCH_DISABLE=1, or invalid INCA_* values)."""
    if _env_int('INCA_TORCH_DISABLE', 0, 0, 1):
        return None
    if not os.environ.get('INCA_AGGREGATOR'):
        log.info('INCA_AGGREGATOR is not set: gradients go through gloo')
        return None
    lib = library(lib_path)
    o = L.opts_init(lib)
    ret = lib.inca_comm_opts_from_env(ctypes.byref(o))
    if ret != L.OK:
        log.error('bad INCA_* variable (%s): gradients go through gloo',
                  L.strerror(lib, ret))
        return None
    if o.job == 0:
        log.error('INCA_JOB is not set (1..65535): gradients go through gloo')
        return None
    conf = {f: getattr(o, f) for f in L.JOB_FIELDS}
    conf['aggregator'] = o.aggregator.decode()
    # Keys of this state's agreements in torch's store.
    conf['oob_prefix'] = 'inca/%d/%d.%d' % (o.job, os.getpid(), time.monotonic_ns())
    return conf


class IncaState:
    """One rank's membership in an INCA job, for the default process group.

    Create it on every rank after dist.init_process_group() (any backend;
    gloo is what PyTorch's CPU training uses). Rank 0 reads the job from
    its environment (INCA_AGGREGATOR, INCA_JOB, INCA_TOKEN and the other
    INCA_* variables of libinca, see docs/libinca.md) and broadcasts it, so
    every rank uses the same parameters. Without INCA_AGGREGATOR (or with
    INCA_TORCH_DISABLE=1) the state passes everything to gloo.

    Use it as the state of inca_allreduce_hook, or call allreduce() /
    allreduce_async() on CPU tensors. Call close() on every rank at the end
    (or use it as a context manager).
    """

    def __init__(self, lib_path=None):
        if not dist.is_initialized():
            raise RuntimeError('IncaState: call dist.init_process_group() first')
        rank = dist.get_rank()
        # Collective: every rank creates it, in the same order.
        group = dist.new_group(backend='gloo')
        conf = [read_conf(lib_path)] if rank == 0 else [None]
        dist.broadcast_object_list(conf, src=0, group=group)
        self._setup(conf[0], rank, dist.get_world_size(), group,
                    dist.distributed_c10d._get_default_store(), lib_path)

    @classmethod
    def for_group(cls, conf, rank, size, group, store, lib_path=None):
        """A state for a process group that torch.distributed does not know
        yet (the inca backend's): @conf is rank 0's read_conf(), the same
        on every rank; @group a private gloo ProcessGroup for the fallback;
        @store the group's store (the creation agreement's keys)."""
        self = cls.__new__(cls)
        self._setup(conf, rank, size, group, store, lib_path)
        return self

    def _setup(self, conf, rank, size, group, store, lib_path):
        self.rank = rank
        self.size = size
        self.group = group
        self._store = store
        self.calls = {'inca': 0, 'gloo': 0}
        self.comm = None
        self._agg_dtypes = 0
        self.job = 0
        self._closed = False
        self._thread = None
        if conf is None:
            return
        # Beyond 32 ranks the job needs a tree: INCA_AGGREGATOR lists its
        # leaves, and libinca refuses (logged; gloo then) a list too short.
        if self.size > 65535:
            if self.rank == 0:
                log.warning('%d ranks, INCA jobs have at most 65535: using gloo', self.size)
            return
        self.lib = library(lib_path)
        self.job = conf['job']
        self._create(conf)

    # ---- set-up ----------------------------------------------------------

    def _create(self, conf):
        lib = self.lib
        o = L.opts_init(lib)
        for f in L.JOB_FIELDS:
            setattr(o, f, conf[f])
        # Kept referenced: libinca copies the strings, ctypes needs the
        # callback objects alive as long as the communicator.
        self._agg = conf['aggregator'].encode()
        self._bind = os.environ.get('INCA_BIND', '').encode() or None
        self._fb = L.FALLBACK_FN(self._fallback)
        self._oob_fn = L.OOB_FN(self._oob)
        self._oob_prefix = conf['oob_prefix']
        self._oob_seq = 0
        o.aggregator = self._agg
        o.bind = self._bind
        o.rank = self.rank
        o.size = self.size
        o.fallback = self._fb
        o.oob = self._oob_fn
        comm = ctypes.c_void_p()
        # libinca agrees across the ranks inside creation (all or none,
        # through torch's store): every rank is on the aggregator or every
        # rank is in its fallback mode. Only invalid options or memory fail
        # before that agreement: then nobody uses INCA.
        ret = lib.inca_comm_create(ctypes.byref(o), ctypes.byref(comm))
        if ret != L.OK:
            log.error('rank %d: inca_comm_create: %s', self.rank, L.strerror(lib, ret))
            comm = ctypes.c_void_p()
        created = torch.tensor([int(ret == L.OK)], dtype=torch.int32)
        _pg_allreduce(self.group, created, dist.ReduceOp.MIN)
        if not created.item():
            if self.rank == 0:
                log.warning('job %d: a rank could not create its communicator: '
                            'gradients go through gloo', self.job)
            if comm.value:
                # Not every rank has one to tear down: no teardown round.
                lib.inca_comm_set_fallback(comm, L.FALLBACK_FN(), None)
                lib.inca_comm_destroy(comm)
            return
        self.comm = comm
        # The same CAPS on every rank (creation agrees all or none).
        self._agg_dtypes = self._info(comm).dtypes
        if self.rank == 0:
            log.info('job %d, %d ranks, aggregator %s: %s', self.job, self.size,
                     conf['aggregator'], 'joined' if not self._info(comm).in_fallback
                     else 'not on the aggregator, using the fallback')
        if _env_int('INCA_TORCH_KEEPALIVE', 1, 0, 1):
            ret = lib.inca_comm_keepalive(comm, 1)
            if ret != L.OK:
                log.warning('no keepalive thread: %s', L.strerror(lib, ret))
        self._lock = threading.Lock()      # every libinca call on comm
        self._cv = threading.Condition()   # the queue
        self._queue = collections.deque()
        self._stop = False
        self._thread = threading.Thread(target=self._worker, name='inca-%d' % self.rank,
                                        daemon=True)
        self._thread.start()

    def _info(self, comm):
        return L.comm_info(self.lib, comm)

    # ---- the out-of-band allgather: torch's store -------------------------

    def _oob(self, ctx, sendbuf, recvbuf, nbytes):
        # Bounded by the store's wait; an exception must not cross ctypes.
        try:
            self._oob_seq += 1
            keys = ['%s/%d/%d' % (self._oob_prefix, self._oob_seq, r) for r in range(self.size)]
            self._store.set(keys[self.rank], ctypes.string_at(sendbuf, nbytes))
            self._store.wait(keys, datetime.timedelta(
                milliseconds=_env_int('INCA_TORCH_OOB_TIMEOUT_MS', 60000, 1, 1 << 31)))
            for r, k in enumerate(keys):
                data = self._store.get(k)
                if len(data) != nbytes:
                    return -71
                ctypes.memmove(recvbuf + r * nbytes, data, nbytes)
            return 0
        except BaseException:
            log.exception('rank %d: out-of-band allgather through the store failed', self.rank)
            return -5

    # ---- the fallback (runs on the worker thread) -------------------------

    def _fallback(self, ctx, a_ptr):
        # An exception must not cross ctypes: it would return 0, "success".
        try:
            a = a_ptr.contents
            if a.count == 0:
                return 0
            dtype = _INCA_TO_TORCH[a.dtype]
            recv = _tensor_at(a.recvbuf, a.count, dtype)
            if a.sendbuf != a.recvbuf:
                recv.copy_(_tensor_at(a.sendbuf, a.count, dtype))
            op = _DIST_OPS[a.op]
            if dtype in (torch.float16, torch.bfloat16):
                # As the aggregator does: fp32 accumulation, one rounding.
                wide = recv.float()
                _pg_allreduce(self.group, wide, op)
                recv.copy_(wide)
            else:
                _pg_allreduce(self.group, recv, op)
            return 0
        except BaseException:
            log.exception('rank %d: fallback allreduce failed', self.rank)
            return -5

    # ---- the worker thread ------------------------------------------------

    def _worker(self):
        lib = self.lib
        pending = collections.deque()  # issued to libinca, in issue order
        while True:
            with self._cv:
                while not self._queue and not pending and not self._stop:
                    self._cv.wait()
                new = list(self._queue)
                self._queue.clear()
                stop = self._stop
            for it in new:
                self._issue(it, pending)
            if pending:
                it = pending.popleft()
                with self._lock:
                    ret = lib.inca_wait(ctypes.byref(it.req))
                self._finish(it, ret)
            elif stop:
                return

    def _issue(self, it, pending):
        if it.call is not None:
            # A blocking collective: the earlier ones complete first (libinca
            # would complete them inside the call anyway; their futures
            # are finished in order here).
            while pending:
                old = pending.popleft()
                with self._lock:
                    r = self.lib.inca_wait(ctypes.byref(old.req))
                self._finish(old, r)
            with self._lock:
                ret = it.call(self.lib, self.comm)
            self._finish(it, ret)
            return
        t = it.tensor
        dtype = _TORCH_DTYPES[t.dtype]
        while True:
            with self._lock:
                ret = self.lib.inca_iallreduce(self.comm, t.data_ptr(), t.data_ptr(),
                                               t.numel(), dtype, it.op, ctypes.byref(it.req))
            if ret != L.EBUSY or not pending:
                break
            # Too many in flight: finish the oldest first.
            old = pending.popleft()
            with self._lock:
                r = self.lib.inca_wait(ctypes.byref(old.req))
            self._finish(old, r)
        if ret == L.OK:
            pending.append(it)
        else:
            self._finish(it, ret)

    def _finish(self, it, ret):
        if ret != L.OK:
            it.future.set_exception(L.IncaError(self.lib, ret, 'inca allreduce'
                                                if it.call is None else 'inca collective'))
            return
        try:
            val = it.post(it.tensor) if it.post is not None else it.tensor
        except BaseException as e:
            it.future.set_exception(e)
            return
        it.future.set_result(val)

    # ---- interface ----------------------------------------------------------

    def supports(self, tensor):
        """True when @tensor goes through INCA (else through gloo)."""
        return (self.comm is not None and not self._closed and tensor.device.type == 'cpu'
                and tensor.dtype in _TORCH_DTYPES and tensor.is_contiguous() and
                (tensor.dtype not in _WIDE or self._agg_dtypes == 0 or
                 self._agg_dtypes & (1 << _TORCH_DTYPES[tensor.dtype]) != 0))

    def allreduce_async(self, tensor, op='sum', divide=False):
        """Allreduce @tensor in place; returns a torch.futures.Future whose
        value is @tensor (divided by the world size if @divide). Every rank
        must make the same calls in the same order."""
        if op not in _OPS:
            raise ValueError('op must be sum, min or max')
        if not self.supports(tensor):
            # Every rank decides alike: same dtype, device, layout.
            self.calls['gloo'] += 1
            work = dist.all_reduce(tensor, op=_DIST_OPS[_OPS[op]], async_op=True)
            size = self.size

            def done(fut):
                t = fut.value()[0]
                return t.div_(size) if divide else t
            return work.get_future().then(done)
        size = self.size
        return self.submit(tensor, _OPS[op], (lambda t: t.div_(size)) if divide else None)

    def submit(self, tensor, op, post=None):
        """Queue an allreduce (op: L.OP_*) of @tensor in place through
        libinca (supports(tensor) must hold); returns a Future whose value
        is post(tensor), or tensor without @post (run on the worker
        thread). Every rank must make the same calls in the same order."""
        self.calls['inca'] += 1
        it = _Item(tensor, op, post)
        with self._cv:
            self._queue.append(it)
            self._cv.notify()
        return it.future

    def submit_call(self, call, tensor, post=None):
        """Queue call(lib, comm), a blocking libinca collective on tensors
        the caller keeps alive (inca_reduce_scatter(), inca_allgather()),
        behind every earlier submission; returns a Future whose value is
        post(tensor), or tensor. Every rank must make the same calls in the
        same order."""
        self.calls['inca'] += 1
        it = _Item(tensor, None, post, call)
        with self._cv:
            self._queue.append(it)
            self._cv.notify()
        return it.future

    def allreduce(self, tensor, op='sum', divide=False):
        """Blocking allreduce_async(); returns @tensor."""
        return self.allreduce_async(tensor, op, divide).wait()

    def stats(self):
        """libinca's counters of this rank, plus in_fallback and the calls
        that went through INCA ('inca_calls') and gloo ('gloo_calls')."""
        out = {'rank': self.rank, 'job': self.job, 'inca_calls': self.calls['inca'],
               'gloo_calls': self.calls['gloo'], 'enabled': int(self.comm is not None)}
        if self.comm is None:
            return out
        names = L.stats_names(self.lib)
        raw = (ctypes.c_uint64 * (len(names) + 64))()
        with self._lock:
            self.lib.inca_comm_stats_sized(self.comm, raw, ctypes.sizeof(raw))
            info = self._info(self.comm)
        out.update({n: raw[i] for i, n in enumerate(names)})
        out['in_fallback'] = info.in_fallback
        out['float_native'] = info.float_native
        out['window'] = info.window
        return out

    def close(self):
        """Finish queued work, wait for every rank, leave the job. Collective."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            with self._cv:
                self._stop = True
                self._cv.notify()
            self._thread.join()
            self._thread = None
        if self.comm is not None:
            # No barrier of our own: a rank that lost its last result may
            # still recover it through gloo; inca_comm_destroy()'s teardown
            # round serves it before anyone leaves the job.
            with self._lock:
                self.lib.inca_comm_destroy(self.comm)
            self.comm = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def inca_allreduce_hook(state, bucket):
    """DDP communication hook: average a gradient bucket through INCA.

        state = IncaState()
        model = DistributedDataParallel(net)
        model.register_comm_hook(state, inca_allreduce_hook)

    fp32, fp16 and bf16 buckets travel through libinca (fp16/bf16 summed in
    fp32 by the aggregator, rounded once); other dtypes, or a state without
    INCA, use dist.all_reduce. The result is the sum divided by the world
    size, as with DDP's default allreduce.
    """
    return state.allreduce_async(bucket.buffer(), 'sum', divide=True)
