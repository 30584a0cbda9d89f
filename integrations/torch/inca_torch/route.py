# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Dynamic path selection for the backend "inca" (INCA_TORCH_ROUTE).

Each eligible collective has two routes: through libinca and the
aggregator, or through the group's inner gloo group (the host). With
INCA_TORCH_ROUTE=auto the Selector measures both per kind of collective
and size class and sends each call to the faster one, with the rule of the
MPI interposer's selector (docs/mpi.md, "Dynamic path selection"; the
constants are the same):

1. calls 0..5 of a class alternate, INCA first (3 calls per route);
2. the ranks then agree: one allreduce (MAX) of the two times on the gloo
   group, truncated to whole nanoseconds; the host route wins if its time
   is lower (ties stay on INCA);
3. every later call takes the winner, except call probe = (the agreeing
   call) + K, which takes the other route and is followed by a new
   agreement. K = 50 * (slow - fast + A) / fast clamped to 64..4096, A
   the agreed duration of the class's previous agreement (0 at first, at
   most slow):
   the MPI selector's K without A, since its agreement (one
   PMPI_Allreduce of two doubles) costs little next to a call, where
   here it is a gloo collective issued from Python, as costly as a small
   host call.

Each rank's time of a route: the median of its 3 exploration calls, then
an EWMA (weight 1/4 for the newest) of samples clamped to 4 times the
estimate. The MPI selector takes the mean and an unclamped EWMA; Python
ranks on a shared host see single calls descheduled for tens or hundreds
of milliseconds, which must not decide a route.

Collectives here are asynchronous: a call's time runs from its issue to
the completion of its future, and the agreement owed after call d is made
when call d + 1 of the class is issued, after the calls it measures have
completed. So the route of a call is a function of (seq, via, probe) of
its class only, which change only at an agreement, made before the same
call on every rank from the output of one collective: every rank takes
the same route for the same call (docs/torch.md, "Dynamic path
selection").
"""

import collections
import logging
import threading
import time

log = logging.getLogger('inca_torch')

INCA, HOST = 0, 1
VIAS = ('inca', 'host')
MODES = ('inca', 'host', 'auto')

# As IM_EXPLORE, IM_REEVAL, IM_REEVAL_MAX and IM_PROBE_COST in
# integrations/mpi/inca_mpi.c.
EXPLORE = 3
REEVAL = 64
REEVAL_MAX = 4096
PROBE_COST = 50
# A sample counts at most this many times the route's estimate.
CLAMP = 4

_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211
_M64 = (1 << 64) - 1


def parse_mode(s):
    """The route mode of INCA_TORCH_ROUTE's value @s ('' or None: inca);
    ValueError for anything else."""
    s = (s or 'inca').strip()
    if s not in MODES:
        raise ValueError('INCA_TORCH_ROUTE=%s: want inca, host or auto' % s)
    return s


def size_class(nbytes):
    """log2 of the payload bytes, rounded down (0 for 0 and 1), at most 63."""
    return min(max(int(nbytes), 1).bit_length() - 1, 63)


def reeval_calls(lo, hi, agree=0):
    """Calls from an agreement to the next probe, from the agreed whole
    nanoseconds @lo of the winner, @hi of the loser and @agree of the last
    agreement: a probe and its agreement cost hi - lo + agree more than a
    call of the winner; PROBE_COST * (hi - lo + agree) / lo calls keep that
    under 2 %. @agree counts at most @hi (the agreement is a host
    collective of 24 bytes, no dearer than a call of either route unless
    the host stalled it): one slow agreement must not put off the next
    probe, which is what corrects a wrong decision."""
    agree = min(agree, hi)
    k = PROBE_COST * (hi - lo + agree) // lo if lo else REEVAL_MAX
    return min(max(k, REEVAL), REEVAL_MAX)


class _Call:
    """One measured call: its route, issue and completion times."""
    __slots__ = ('via', 't0', 't1')

    def __init__(self, via):
        self.via = via
        self.t1 = None
        self.t0 = time.perf_counter_ns()


class _Class:
    """The state of one (kind, size class). @seq, @via and @probe are the
    same on every rank before every call; @ns, @n and @agree_ns are this
    rank's."""
    __slots__ = ('seq', 'ns', 'n', 'first', 'via', 'probe', 'due', 'open', 'agree_ns')

    def __init__(self):
        self.seq = 0
        self.ns = [0.0, 0.0]
        self.n = [0, 0]
        self.first = ([], [])  # the exploration's times of each route
        self.via = INCA
        self.probe = 0
        self.due = False       # an agreement is owed before call seq
        self.open = collections.deque()  # calls not folded into ns yet, in call order
        self.agree_ns = 0      # how long the last agreement took here

    def route(self):
        if self.seq < 2 * EXPLORE:
            return self.seq & 1
        return 1 - self.via if self.seq == self.probe else self.via


class Selector:
    """Routes of one process group's eligible collectives.

    @mode: 'inca', 'host' or 'auto'. @agree(values) runs the agreement: an
    allreduce (MAX) of a list of floats on a group of every rank, returning
    the result. @timeout (seconds) bounds the wait for a measured call
    before an agreement. Not thread-safe for route(): one thread issues a
    group's collectives, as torch.distributed requires; done() may be
    called from any thread.
    """

    def __init__(self, mode, agree, timeout, name=''):
        self.mode = parse_mode(mode)
        self._agree = agree
        self._timeout = timeout
        self._name = name
        self._cls = {}
        self._cv = threading.Condition()  # calls completing
        self.calls = [0, 0]
        self.agreements = 0
        self.switches = 0
        self.digest = 0
        # (kind, class, call, inca ns, host ns, agreement ns, route)
        self.decisions = []

    def route(self, kind, nbytes):
        """The route of the next call of @kind moving @nbytes through INCA:
        (via, call); hand call to done() when it completes (None: the
        route is pinned, nothing to measure)."""
        call = None
        if self.mode == 'auto':
            key = (kind, size_class(nbytes))
            k = self._cls.get(key)
            if k is None:
                k = self._cls[key] = _Class()
            if k.open:
                self._fold(k, False)
            if k.due:
                self._decide(key, k)
            via = k.route()
            call = _Call(via)
            k.open.append(call)
            k.due = k.seq + 1 == 2 * EXPLORE or (k.seq >= 2 * EXPLORE and k.seq == k.probe)
            k.seq += 1
        else:
            via = HOST if self.mode == 'host' else INCA
        self.calls[via] += 1
        self.digest = ((self.digest or _FNV_OFFSET) ^ (via + 1)) * _FNV_PRIME & _M64
        return via, call

    def done(self, call):
        """@call (from route()) has completed, successfully or not."""
        t1 = time.perf_counter_ns()
        with self._cv:
            call.t1 = t1
            self._cv.notify_all()

    def _fold(self, k, wait):
        """Fold the completed calls of @k into its times, in call order (all
        of them if @wait: the agreement needs them)."""
        while k.open:
            c = k.open[0]
            if c.t1 is None:
                if not wait:
                    return
                with self._cv:
                    if not self._cv.wait_for(lambda: c.t1 is not None, self._timeout):
                        raise RuntimeError('inca: route selection: a call did not complete '
                                           'within %g s' % self._timeout)
            k.open.popleft()
            ns = c.t1 - c.t0
            # The median of the exploration's calls, then an EWMA (recent
            # load counts) of samples clamped to CLAMP times the estimate:
            # one call descheduled for a while (a loaded host, a garbage
            # collection) must not decide a route, where a lasting change
            # moves the estimate by up to (CLAMP - 1) / 4 per call.
            v = c.via
            if k.n[v] < EXPLORE:
                k.first[v].append(ns)
                if len(k.first[v]) == EXPLORE:
                    k.ns[v] = float(sorted(k.first[v])[EXPLORE // 2])
            else:
                k.ns[v] = 0.75 * k.ns[v] + 0.25 * min(ns, CLAMP * k.ns[v])
            k.n[v] += 1

    def _decide(self, key, k):
        """The agreement owed after call k.seq - 1: every rank decides on
        the slowest rank's times with the same rule. The duration of the
        class's previous agreement is agreed too: a gloo collective issued
        from Python costs about what a small host call does, and the
        back-off must pay for it."""
        self._fold(k, True)
        t0 = time.perf_counter_ns()
        t = self._agree([k.ns[INCA], k.ns[HOST], float(k.agree_ns)])
        k.agree_ns = time.perf_counter_ns() - t0
        ti, th, ta = int(t[INCA]), int(t[HOST]), int(t[2])
        prev = k.via
        k.via = HOST if th < ti else INCA
        k.probe = k.seq - 1 + (reeval_calls(th, ti, ta) if th < ti else
                               reeval_calls(ti, th, ta))
        k.due = False
        self.agreements += 1
        if k.seq > 2 * EXPLORE and prev != k.via:
            self.switches += 1
        self.decisions.append((key[0], key[1], k.seq, ti, th, ta, VIAS[k.via]))
        log.info('route: %s%s class 2^%d call %d inca %d ns host %d ns agreement %d ns -> %s',
                 self._name, key[0], key[1], k.seq, ti, th, ta, VIAS[k.via])

    def stats(self):
        """The counters: calls per route, agreements, switches, digest (an
        FNV-1a hash of the route of every routed call, in order: equal on
        every rank when they took the same routes)."""
        return {'route_mode': self.mode, 'route_inca': self.calls[INCA],
                'route_host': self.calls[HOST], 'route_agreements': self.agreements,
                'route_switches': self.switches, 'route_digest': self.digest}
