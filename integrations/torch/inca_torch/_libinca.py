# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""ctypes bindings of libinca (lib/include/inca/inca.h).

Only what the PyTorch integration needs: options, create/destroy,
allreduce (blocking and not), progress, fallback, statistics and info.
The structures mirror the C header field by field; ctypes lays them out
as the C compiler does on the same platform.
"""

import ctypes
import ctypes.util
import glob
import os

# enum inca_dtype, enum inca_op, enum inca_float_mode (lib/include/inca/wire.h)
DTYPE_INT32, DTYPE_FP32, DTYPE_FP16, DTYPE_BF16, DTYPE_INT64, DTYPE_FP64 = 0, 1, 2, 3, 4, 5
OP_SUM, OP_MIN, OP_MAX = 0, 1, 2
FLOAT_AUTO, FLOAT_NATIVE, FLOAT_BFP = 0, 1, 2
LOG_ERR, LOG_WARN, LOG_INFO, LOG_DEBUG = 0, 1, 2, 3
OK = 0
EBUSY = -7
ENOTSUP = -10

DTYPE_NAMES = {DTYPE_INT32: 'int32', DTYPE_FP32: 'fp32', DTYPE_FP16: 'fp16', DTYPE_BF16: 'bf16',
               DTYPE_INT64: 'int64', DTYPE_FP64: 'fp64'}


class FallbackArgs(ctypes.Structure):
    """struct inca_fallback_args"""
    _fields_ = [
        ('sendbuf', ctypes.c_void_p),
        ('recvbuf', ctypes.c_void_p),
        ('count', ctypes.c_size_t),
        ('dtype', ctypes.c_uint),
        ('op', ctypes.c_uint),
    ]


# typedef int inca_fallback_fn(void *ctx, const struct inca_fallback_args *a);
FALLBACK_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(FallbackArgs))
# typedef int inca_oob_allgather_fn(void *ctx, const void *sendbuf, void *recvbuf,
#                                   size_t bytes);
OOB_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_size_t)
# typedef void inca_log_fn(void *ctx, int level, const char *msg);
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


class CommOpts(ctypes.Structure):
    """struct inca_comm_opts (libinca reads the first struct_size bytes, so
    a library with more fields still works with this mirror)"""
    _fields_ = [
        ('struct_size', ctypes.c_uint32),
        ('aggregator', ctypes.c_char_p),
        ('bind', ctypes.c_char_p),
        ('job', ctypes.c_uint16),
        ('rank', ctypes.c_uint16),
        ('size', ctypes.c_uint16),
        ('token', ctypes.c_uint32),
        ('window', ctypes.c_uint16),
        ('pool_size', ctypes.c_uint16),
        ('max_elems', ctypes.c_uint16),
        ('mtu', ctypes.c_uint16),
        ('timeout_ms', ctypes.c_uint32),
        ('give_up_ms', ctypes.c_uint32),
        ('float_mode', ctypes.c_int),
        ('probe_every', ctypes.c_uint32),
        ('fallback', FALLBACK_FN),
        ('fallback_ctx', ctypes.c_void_p),
        ('op_timeout_ms', ctypes.c_uint32),
        ('oob', OOB_FN),
        ('oob_ctx', ctypes.c_void_p),
    ]


# Numeric job parameters that rank 0 reads from INCA_* and every rank uses.
JOB_FIELDS = ('job', 'token', 'window', 'pool_size', 'max_elems', 'mtu', 'timeout_ms',
              'give_up_ms', 'float_mode', 'probe_every', 'op_timeout_ms')


class CommInfo(ctypes.Structure):
    """struct inca_comm_info"""
    _fields_ = [
        ('in_fallback', ctypes.c_int),
        ('float_native', ctypes.c_int),
        ('window', ctypes.c_uint16),
        ('pool_size', ctypes.c_uint16),
        ('max_elems', ctypes.c_uint16),
        ('caps', ctypes.c_uint16),
        ('hb_ms', ctypes.c_uint32),
        ('evict_ms', ctypes.c_uint32),
        ('footprint', ctypes.c_size_t),
        ('session', ctypes.c_uint32),
        ('transport', ctypes.c_int),
        ('udp_gso', ctypes.c_int),
        ('udp_gro', ctypes.c_int),
        ('gso_sends', ctypes.c_uint64),
        ('gro_pkts', ctypes.c_uint64),
        ('xdp_tx_pkts', ctypes.c_uint64),
        ('xdp_rx_pkts', ctypes.c_uint64),
        ('dtypes', ctypes.c_uint16),
        ('ops', ctypes.c_uint16),
    ]


def _candidates():
    env = os.environ.get('INCA_LIB')
    if env:
        yield env
    found = ctypes.util.find_library('inca')
    if found:
        yield found
    # A source tree's build directories, for use without installing.
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, '..', '..', '..'))
    for p in sorted(glob.glob(os.path.join(root, 'build*', 'lib', 'libinca.so'))):
        yield p


def load(path=None):
    """Load libinca.so: @path, else $INCA_LIB, the system's, or a build tree's."""
    errors = []
    for p in ([path] if path else _candidates()):
        try:
            lib = ctypes.CDLL(p)
            break
        except OSError as e:
            errors.append('%s: %s' % (p, e))
    else:
        raise OSError('libinca.so not found (set INCA_LIB=/path/to/libinca.so): %s'
                      % '; '.join(errors) if errors else 'libinca.so not found '
                      '(set INCA_LIB=/path/to/libinca.so or install it)')
    c_void_pp = ctypes.POINTER(ctypes.c_void_p)
    sig = {
        'inca_version_string': (ctypes.c_char_p, []),
        'inca_strerror': (ctypes.c_char_p, [ctypes.c_int]),
        'inca_set_log_fn': (None, [LOG_FN, ctypes.c_void_p, ctypes.c_int]),
        'inca_comm_opts_init_sized': (None, [ctypes.POINTER(CommOpts), ctypes.c_size_t]),
        'inca_comm_opts_from_env': (ctypes.c_int, [ctypes.POINTER(CommOpts)]),
        'inca_comm_create': (ctypes.c_int, [ctypes.POINTER(CommOpts), c_void_pp]),
        'inca_comm_destroy': (None, [ctypes.c_void_p]),
        'inca_comm_set_fallback': (None, [ctypes.c_void_p, FALLBACK_FN, ctypes.c_void_p]),
        'inca_allreduce': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.c_size_t, ctypes.c_uint, ctypes.c_uint]),
        'inca_iallreduce': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                           ctypes.c_size_t, ctypes.c_uint, ctypes.c_uint,
                                           c_void_pp]),
        'inca_reduce_scatter': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p,
                                               ctypes.c_void_p, ctypes.c_size_t,
                                               ctypes.c_uint, ctypes.c_uint]),
        'inca_reduce': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_size_t, ctypes.c_uint, ctypes.c_uint,
                                       ctypes.c_uint]),
        'inca_allgather': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.c_size_t]),
        'inca_test': (ctypes.c_int, [c_void_pp, ctypes.POINTER(ctypes.c_int)]),
        'inca_wait': (ctypes.c_int, [c_void_pp]),
        'inca_comm_progress': (ctypes.c_int, [ctypes.c_void_p]),
        'inca_comm_keepalive': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int]),
        'inca_comm_stats_sized': (None, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]),
        'inca_stats_name': (ctypes.c_char_p, [ctypes.c_uint]),
        'inca_comm_info_sized': (None, [ctypes.c_void_p, ctypes.POINTER(CommInfo),
                                        ctypes.c_size_t]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


def opts_init(lib):
    """A CommOpts with libinca's defaults (struct_size set)."""
    o = CommOpts()
    lib.inca_comm_opts_init_sized(ctypes.byref(o), ctypes.sizeof(o))
    return o


def comm_info(lib, comm):
    info = CommInfo()
    lib.inca_comm_info_sized(comm, ctypes.byref(info), ctypes.sizeof(info))
    return info


def strerror(lib, err):
    return lib.inca_strerror(err).decode()


def stats_names(lib):
    names = []
    while True:
        n = lib.inca_stats_name(len(names))
        if n is None:
            return names
        names.append(n.decode())


class IncaError(RuntimeError):
    def __init__(self, lib, err, what):
        super().__init__('%s: %s (%d)' % (what, strerror(lib, err), err))
        self.err = err
