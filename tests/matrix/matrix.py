#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""The hang-and-corruption matrix and the randomised fault schedule.

    matrix.py --incad PATH --worker PATH rows [--only NAME]
    matrix.py --incad PATH --worker PATH random [--trials N] [--seed S] [--jobs K]

Every rank is a real process (tests/matrix/matrix_worker.c: libinca, a TCP
rendezvous group as out-of-band allgather and fallback) in its own network
namespace of an emulated rack in aggregator mode, talking to the real incad
(its traffic crosses a kernel bridge, so the fallback survives incad's
death). Each row ends on every rank in the exact result or a defined error
within a stated bound; a rank still running at the row's watchdog is a
hang and fails the suite. docs/libinca.md ("Failures") holds the table the
rows check and the times they measured.

The random schedule draws, per seed, the ranks, the collectives, the
fallback (on or off) and one fault: none, a late joiner, a slow rank, a
loss burst on a rank's link, a refused or lost JOIN, a different MTU or
window, a mismatched count/dtype/op, a rank that dies, a rank that stops
calling. Invariants, whatever the fault: no rank hangs; no collective
returns success with a wrong result; every rank gets the same answer at
creation; and the outcome the fault implies (every collective exact for
the benign faults with a fallback, an error at the faulty collective for
the malign ones). Each run draws its first seed (unless --seed or
$INCA_MATRIX_SEED gives it) and prints it, so that successive runs sample
new schedules and any run can be repeated. A failing seed is printed with
its command line: add it to REGRESSION_SEEDS.
"""

import argparse
import concurrent.futures
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'reliability'))
from relcommon import (  # noqa: E402
    PYTHON, Daemon, Failed, Rack, check, conf_text, log, nft)

INCAD = WORKER = None
TM = 0x4D545258       # tenant m: dynamic jobs 100..3999 from the rack's subnet
TN = 0x4E41524F       # tenant narrow: jobs 4000..4099, only workers 0 and 1
OK, EINVAL, ETIMEDOUT, EREFUSED, EUNREACH = 0, -1, -3, -4, -5
ECANCELED, EFALLBACK, EPROTO, EFAILED = -8, -9, -11, -12
ERRNAME = {0: 'OK', -3: 'ETIMEDOUT', -4: 'EREFUSED', -5: 'EUNREACH', -8: 'ECANCELED',
           -9: 'EFALLBACK', -11: 'EPROTO', -12: 'EFAILED'}
# Timers of every row: libinca's, incad's (conf below), the group's.
OP_TIMEOUT, GIVE_UP, EVICT, HEARTBEAT, GROUP_TIMEOUT = 1500, 600, 600, 100, 3000
COMMON = ['--op-timeout', str(OP_TIMEOUT), '--give-up', str(GIVE_UP),
          '--group-timeout', str(GROUP_TIMEOUT)]
# Seeds that once failed (none yet); they run first in every random run.
REGRESSION_SEEDS = []
FIGURES = []


def figure(fmt, *a):
    line = fmt % a if a else fmt
    FIGURES.append(line)
    log('figure: ' + line)


def matrix_conf(rack):
    w = rack.worker_ips
    return conf_text(rack, [
        dict(name='m', token=TM, job_ids=[100, 3999], slot_quota=16384, dynamic_jobs=True,
             sources=['10.77.0.0/24']),
        dict(name='narrow', token=TN, job_ids=[4000, 4099], slot_quota=1024,
             dynamic_jobs=True, sources=['%s/32' % w[0], '%s/32' % w[1]])],
        pool_size=32, max_slots=16384, heartbeat_ms=HEARTBEAT, evict_ms=EVICT)


class Run:
    """The ranks of one row or trial: processes, their events as they come
    (each with its arrival time), a watchdog."""

    def __init__(self, rack, job, token, n, per_rank, port, common=COMMON, nodes=None):
        self.rack, self.n = rack, n
        self.events = [[] for _ in range(n)]
        self.err = [[] for _ in range(n)]
        self.procs = []
        self.readers = [[] for _ in range(n)]
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        group = '%s:%d' % (rack.worker_ips[(nodes or list(range(n)))[0]], port)
        for r in range(n):
            node = nodes[r] if nodes else r
            argv = [WORKER, '--agg', rack.agg_ip, '--group', group, '--job', str(job),
                    '--rank', str(r), '--size', str(n), '--token', hex(token)] + \
                list(common) + list(per_rank[r])
            p = rack.popen(node, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
            self.procs.append(p)
            for f, is_err in ((p.stdout, False), (p.stderr, True)):
                t = threading.Thread(target=self._read, args=(r, f, is_err), daemon=True)
                t.start()
                self.readers[r].append(t)
        self.argv0 = argv

    def _read(self, r, f, is_err):
        for line in f:
            with self.lock:
                if is_err:
                    self.err[r].append(line.rstrip())
                    continue
                try:
                    e = json.loads(line)
                except ValueError:
                    self.err[r].append('bad line: ' + line)
                    continue
                e['t'] = time.monotonic() - self.t0
                self.events[r].append(e)

    def ev(self, r, kind):
        with self.lock:
            return [e for e in self.events[r] if e['ev'] == kind]

    def wait_event(self, r, kind, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.ev(r, kind):
                return True
            time.sleep(0.01)
        return False

    def wait(self, watchdog, ranks=None):
        """Wait for @ranks (default all) to exit; False on the watchdog."""
        ranks = ranks if ranks is not None else range(self.n)
        end = self.t0 + watchdog
        for r in ranks:
            while self.procs[r].poll() is None:
                if time.monotonic() > end:
                    return False
                time.sleep(0.01)
        # Every line a rank printed before it exited: its readers reach the
        # end of its pipes (a fixed pause lost lines on a loaded host).
        for r in ranks:
            for t in self.readers[r]:
                t.join(30)
        return True

    def kill(self, r):
        if self.procs[r].poll() is None:
            self.procs[r].send_signal(signal.SIGKILL)
            self.procs[r].wait()

    def close(self):
        for r in range(self.n):
            self.kill(r)

    def dump(self):
        return '\n'.join('rank %d (rc %s): %s\n  stderr: %s' % (
            r, self.procs[r].poll(), self.events[r], ' | '.join(self.err[r][-12:]))
            for r in range(self.n))

    # ---- what the ranks saw ------------------------------------------------

    def create(self, r):
        c = self.ev(r, 'create')
        return c[0] if c else None

    def colls(self, r):
        return self.ev(r, 'coll')

    def outcome(self, r):
        """(create ret, [(i, ret, exact, ms)], end event or None)"""
        c = self.create(r)
        end = self.ev(r, 'end')
        return (c['ret'] if c else None,
                [(e['i'], e['ret'], e['exact'], e['ms']) for e in self.colls(r)],
                end[0] if end else None)


def no_wrong_result(run, ranks=None):
    for r in (ranks if ranks is not None else range(run.n)):
        for e in run.colls(r):
            check(not (e['ret'] == OK and not e['exact']),
                  'rank %d: collective %d returned success with a wrong result\n%s',
                  r, e['i'], run.dump())


def all_exact(run, total, ranks=None, fallback=None):
    for r in (ranks if ranks is not None else range(run.n)):
        c = run.create(r)
        check(c is not None and c['ret'] == OK, 'rank %d: creation %s\n%s', r, c, run.dump())
        if fallback is not None:
            check(c['fallback'] == fallback, 'rank %d: fallback %s, expected %s\n%s', r,
                  c['fallback'], fallback, run.dump())
        cs = run.colls(r)
        check(len(cs) == total and all(e['ret'] == OK and e['exact'] for e in cs),
              'rank %d: not every collective exact: %s\n%s', r, cs, run.dump())
        check(run.ev(r, 'end'), 'rank %d did not finish\n%s', r, run.dump())


def same_create(run, ranks=None):
    ranks = list(ranks if ranks is not None else range(run.n))
    cs = [run.create(r) for r in ranks]
    check(all(c is not None for c in cs), 'a rank has no creation event\n%s', run.dump())
    rets = {c['ret'] for c in cs}
    modes = {c['fallback'] for c in cs if c['ret'] == OK}
    check(len(rets) == 1 and len(modes) <= 1,
          'ranks disagree at creation: %s\n%s', [(c['ret'], c['fallback']) for c in cs],
          run.dump())
    return cs[0]


def fails_at(run, i, ranks, allowed):
    """Every rank in @ranks: collectives before @i exact, @i an error in
    @allowed; returns the largest time to error (ms)."""
    worst = 0.0
    for r in ranks:
        cs = run.colls(r)
        check(len(cs) == i + 1, 'rank %d: %d collectives, expected an error at %d\n%s', r,
              len(cs), i, run.dump())
        check(all(e['ret'] == OK and e['exact'] for e in cs[:i]),
              'rank %d: an earlier collective failed\n%s', r, run.dump())
        check(cs[i]['ret'] in allowed, 'rank %d: collective %d returned %s, expected one of '
              '%s\n%s', r, i, cs[i]['ret'], allowed, run.dump())
        worst = max(worst, cs[i]['ms'])
    return worst


# ---- the rows ---------------------------------------------------------------

ROWS = []


def row(fn):
    ROWS.append(fn)
    return fn


class Ctx:
    def __init__(self, rack, daemon):
        self.rack, self.daemon = rack, daemon
        self.job = 100
        self.port = 21000

    def next(self):
        self.job += 1
        self.port += 1
        return self.job, self.port

    def run(self, per_rank, token=TM, job=None, watchdog=30, common=COMMON, nodes=None):
        j, port = self.next()
        return Run(self.rack, job or j, token, len(per_rank), per_rank, port, common,
                   nodes), watchdog


def finish(run_wd, ranks=None):
    run, wd = run_wd
    ok = run.wait(wd, ranks)
    if not ok:
        d = run.dump()
        run.close()
        raise Failed('HANG: ranks still running at the %d s watchdog\n%s' % (wd, d))
    return run


TOTAL = 8  # the worker's default: 4 collectives x --iters 2
IT = ['--iters', '2']


@row
def baseline(x):
    run = finish(x.run([IT] * 3))
    all_exact(run, TOTAL, fallback=0)
    figure('baseline: 3 ranks, 8 collectives, exact on the aggregator')


def partial(x, name, per_rank, token=TM, expect=EREFUSED):
    for fb in (True, False):
        extra = [] if fb else ['--no-fallback']
        run = finish(x.run([IT + extra + p for p in per_rank], token=token))
        c = same_create(run)
        if fb:
            all_exact(run, TOTAL, fallback=1)
            figure('%s, with fallback: every rank starts in the fallback (creation %.0f ms), '
                   '8 collectives exact', name, max(run.create(r)['ms'] for r in range(3)))
        else:
            check(c['ret'] == expect, '%s without fallback: creation %s, expected %s\n%s',
                  name, c['ret'], expect, run.dump())
            figure('%s, no fallback: every rank\'s creation returns %s after %.0f ms at most',
                   name, ERRNAME.get(c['ret'], c['ret']),
                   max(run.create(r)['ms'] for r in range(3)))


@row
def partial_join_token(x):
    """Rank 2's JOIN carries a wrong token: NACK BAD_TOKEN for it only."""
    partial(x, 'partial join (rank 2 wrong token)', [[], [], ['--token', '0x1']])


@row
def partial_join_source(x):
    """Rank 2's address is outside the tenant's sources: NACK NOT_MEMBER."""
    x.job = max(x.job, 4000)
    partial(x, 'partial join (rank 2 address not allowed)', [[], [], []], token=TN)
    x.job = 200 if x.job < 4100 else x.job


@row
def partial_join_lost(x):
    """Rank 2's HELLO and JOIN go nowhere (silent port): ETIMEDOUT for it."""
    partial(x, 'partial join (rank 2 JOIN lost)',
            [[], [], ['--agg', x.rack.agg_ip + ':9']], expect=ETIMEDOUT)


HOLDER = '''
import sys, time
sys.path.insert(0, %r)
import inca_proto as P
w = P.Worker(%r, %d, 2, %d, 3)
w.join()
print('joined', flush=True)
end = time.monotonic() + 20
while time.monotonic() < end:
    try:
        w.heartbeat()
    except P.Nacked:
        break  # the job moved on (the others left): nothing more to hold
    time.sleep(0.05)
'''


@row
def partial_join_full(x):
    """Rank 2 of the job is held by a live member at another address (a
    stale process on node 0 that joined as rank 2 and keeps heartbeating):
    the real rank 2 gets NACK JOB_FULL."""
    import subprocess as sp
    for fb in (True, False):
        job, port = x.next()
        holder = x.rack.popen(0, [PYTHON, '-c', HOLDER % (
            os.path.join(HERE, '..', 'integration'), x.rack.agg_ip, job, TM)],
            stdout=sp.PIPE, text=True)
        try:
            check(holder.stdout.readline().strip() == 'joined', 'the holder did not join')
            extra = [] if fb else ['--no-fallback']
            run = finish((Run(x.rack, job, TM, 3, [IT + extra] * 3, port), 30))
        finally:
            holder.kill()
            holder.wait()
        c = same_create(run)
        if fb:
            all_exact(run, TOTAL, fallback=1)
        else:
            check(c['ret'] == EREFUSED, 'job full, no fallback: creation %s' % c['ret'])
    figure('partial join (rank 2 held by another address, JOB_FULL): with fallback every '
           'rank starts in the fallback, exact; without, every rank EREFUSED')


@row
def different_mtu(x):
    """Rank 2 has a smaller MTU and joins last: it asks for fewer elements
    than the job's grant, NACK BAD_PARAMS; all or none: nobody streams."""
    partial(x, 'different MTU (rank 2 mtu 600, joins last)',
            [[], [], ['--mtu', '600', '--join-delay', '300']])


@row
def different_window(x):
    """Rank 0 wants window 4, the others the default: whoever joins first
    fixes the job's window; a smaller later ask is refused. Either way
    every rank takes the same path and every result is exact."""
    first = finish(x.run([IT + ['--window', '4'], IT + ['--join-delay', '300'],
                          IT + ['--join-delay', '300']]))
    c = same_create(first)
    all_exact(first, TOTAL, fallback=0)
    check(c['window'] == 4, 'rank 0 joined first with window 4, the job has %s' % c['window'])
    last = finish(x.run([IT + ['--window', '4', '--join-delay', '300'], IT, IT]))
    all_exact(last, TOTAL, fallback=1)
    figure('different window (rank 0 asks 4): joining first, every rank streams with window '
           '4; joining last, refused (BAD_PARAMS) and every rank falls back; results exact')


def mismatch(x, kind):
    for fb in (True, False):
        extra = [] if fb else ['--no-fallback']
        run = finish(x.run([IT + extra, IT + extra + ['--mismatch-at', '3:' + kind],
                            IT + extra]))
        no_wrong_result(run)
        ms = fails_at(run, 3, range(3), (EPROTO,))
        figure('mismatched %s at collective 3 (%s fallback): every rank EPROTO after %.1f ms '
               'at most', kind, 'with' if fb else 'no', ms)


@row
def mismatch_count(x):
    mismatch(x, 'count')


@row
def mismatch_dtype(x):
    mismatch(x, 'dtype')


@row
def mismatch_op(x):
    mismatch(x, 'op')


def survivors_fail(x, per_rank, victim, at, allowed):
    """Run @per_rank, where rank @victim brings a fault: every other rank
    ends with an error in @allowed at collective @at (the victim is killed
    once they are done). Returns the run, the worst time to error (ms) and
    the errors seen."""
    run, wd = x.run(per_rank)
    alive = [r for r in range(len(per_rank)) if r != victim]
    finish((run, wd), ranks=alive)
    run.close()
    no_wrong_result(run)
    ms = fails_at(run, at, alive, allowed)
    return run, ms, '/'.join(sorted({ERRNAME[run.colls(r)[at]['ret']] for r in alive}))


@row
def rank_stops(x):
    """Rank 2 stops calling at collective 3 (alive, no heartbeats)."""
    for fb in (True, False):
        extra = [] if fb else ['--no-fallback']
        _, ms, errs = survivors_fail(x, [IT + extra, IT + extra, IT + extra + ['--stop-at', '3']],
                                     2, 3, (ETIMEDOUT, EFALLBACK, EREFUSED))
        figure('a rank stops calling at collective 3 (%s fallback): the others get %s after '
               '%.0f ms at most', 'with' if fb else 'no', errs, ms)


@row
def rank_stops_alive(x):
    """Rank 2 stops calling at collective 3 but its keepalive thread keeps
    its membership: nothing is evicted, the others' op_timeout_ms ends it."""
    extra = ['--no-fallback', '--keepalive']
    _, ms, _ = survivors_fail(x, [IT + extra, IT + extra, IT + extra + ['--stop-at', '3']],
                              2, 3, (ETIMEDOUT,))
    figure('a rank stops calling at collective 3, its heartbeats go on: the others get '
           'ETIMEDOUT after %.0f ms at most (op_timeout_ms %d)', ms, OP_TIMEOUT)


@row
def rank_dies(x):
    """Rank 1 exits at collective 3 without LEAVE (as SIGKILL)."""
    for fb in (True, False):
        extra = [] if fb else ['--no-fallback']
        _, ms, errs = survivors_fail(x, [IT + extra, IT + extra + ['--die-at', '3'], IT + extra],
                                     1, 3, (ETIMEDOUT, EFALLBACK, EREFUSED))
        figure('a rank dies at collective 3 (%s fallback): the others get %s after %.0f ms '
               'at most', 'with' if fb else 'no', errs, ms)


@row
def abort(x):
    """Rank 2 stops; ranks 0 and 1 call inca_comm_abort() from another
    thread 400 ms after creation: their blocked call returns ECANCELED."""
    run, _, _ = survivors_fail(x, [IT + ['--abort-after', '400']] * 2 +
                               [IT + ['--stop-at', '2']], 2, 2, (ECANCELED,))
    t = max(run.ev(r, 'end')[0]['t'] - run.create(r)['t'] for r in (0, 1))
    figure('inca_comm_abort() 400 ms after creation: the blocked collective returned '
           'ECANCELED, the rank was done %.0f ms after creation', t * 1000)


@row
def incad_killed_mid_run(x):
    """incad is SIGKILLed while the ranks stream (rank 2 slows them):
    every rank finishes through the fallback, exact."""
    run, wd = x.run([['--iters', '6']] * 2 + [['--iters', '6', '--sleep-at', '10:800']])
    check(run.wait_event(2, 'sleep', 20), 'rank 2 never reached its sleep\n%s' % run.dump())
    t_kill = time.monotonic()
    x.daemon.stop(signal.SIGKILL)
    finish((run, wd))
    all_exact(run, 24)
    check(all(run.ev(r, 'end')[0]['recoveries'] == 1 for r in range(3)),
          'not every rank recovered once\n%s' % run.dump())
    figure('incad killed mid-run: every rank recovered through the fallback, 24 collectives '
           'exact, done %.0f ms after the kill',
           max(run.ev(r, 'end')[0]['t'] + run.t0 - t_kill for r in range(3)) * 1000)
    x.daemon.start()
    x.daemon.wait_ready()


@row
def incad_killed_in_teardown(x):
    """Rank 2 loses its last collective's results (its link drops everything
    from incad); ranks 0 and 1 finish and enter teardown; incad is killed.
    Rank 2 recovers through the fallback while the others sit in teardown:
    their teardown round serves it, every result exact, nobody hangs."""
    run, wd = x.run([IT, IT, IT + ['--sleep-at', '7:300']])
    check(run.wait_event(2, 'sleep', 20), 'rank 2 never reached its sleep\n%s' % run.dump())
    nft(x.rack, 2, 'table netdev mtx_td { chain in { type filter hook ingress device eth0 '
        'priority 0; policy accept; udp sport 18766 drop; }; }')
    try:
        end = time.monotonic() + 20
        while not all(len(run.colls(r)) == TOTAL for r in (0, 1)):
            check(time.monotonic() < end, 'ranks 0 and 1 never finished\n%s' % run.dump())
            time.sleep(0.01)
        time.sleep(0.1)
        x.daemon.stop(signal.SIGKILL)
        finish((run, wd))
    finally:
        nft(x.rack, 2, 'delete table netdev mtx_td')
    all_exact(run, TOTAL, fallback=0)
    e2 = run.ev(2, 'end')[0]
    check(e2['recoveries'] == 1, 'rank 2 did not recover: %s' % e2)
    figure('incad killed while ranks 0, 1 tear down and rank 2 misses its last results: rank 2 '
           'recovered through the fallback, every result exact; teardown took %.0f ms at most',
           max(run.ev(r, 'end')[0]['destroy_ms'] for r in range(3)))
    x.daemon.start()
    x.daemon.wait_ready()


def rows(only):
    with Rack('matrix', workers=3, mode='aggregator') as rack:
        d = Daemon(rack, INCAD, conf=matrix_conf(rack))
        with d:
            x = Ctx(rack, d)
            for fn in ROWS:
                if only and fn.__name__ != only:
                    continue
                log('---- row %s' % fn.__name__)
                t = time.monotonic()
                fn(x)
                log('---- row %s passed in %.1f s' % (fn.__name__, time.monotonic() - t))


# ---- the random schedule ----------------------------------------------------

BENIGN = ('none', 'late_join', 'slow_rank', 'loss_burst', 'wrong_token', 'join_lost',
          'mtu', 'window')
MALIGN = ('mismatch', 'die', 'stop')
DT_OPS = ['int32:sum', 'int32:min', 'int32:max', 'fp32:sum', 'fp32:max', 'fp16:sum',
          'bf16:sum', 'fp16:min']


def draw(seed):
    rnd = random.Random(seed)
    n = rnd.choice((2, 3, 3))
    ops = ','.join('%s:%d' % (rnd.choice(DT_OPS), rnd.choice((1, 7, 300, 1000, 2500)))
                   for _ in range(rnd.randint(1, 3)))
    nops = ops.count(',') + 1
    iters = rnd.randint(1, 3)
    fb = rnd.random() < 0.7
    fault = rnd.choice(BENIGN + MALIGN + MALIGN)
    if fault == 'loss_burst':
        # Long enough to be streaming when the burst comes.
        iters = rnd.randint(30, 60)
    total = nops * iters
    victim = rnd.randrange(n)
    at = rnd.randrange(total)
    t = dict(seed=seed, n=n, ops=ops, iters=iters, total=total, fb=fb, fault=fault,
             victim=victim, at=at, per_rank=[[] for _ in range(n)])
    common = ['--ops', ops, '--iters', str(iters), '--probe-every', '2'] + \
        ([] if fb else ['--no-fallback'])
    for r in range(n):
        t['per_rank'][r] += common
    v = t['per_rank'][victim]
    if fault == 'late_join':
        v += ['--join-delay', str(rnd.randint(50, 400))]
    elif fault == 'slow_rank':
        v += ['--sleep-at', '%d:%d' % (at, rnd.randint(10, 400))]
    elif fault == 'loss_burst':
        t['burst'] = (rnd.uniform(0, 0.05), rnd.choice((300, 1000)), rnd.uniform(0.1, 1.2))
    elif fault == 'wrong_token':
        v += ['--token', hex(rnd.randrange(1, 1 << 32))]
    elif fault == 'join_lost':
        v += ['--agg', 'AGG:9']
    elif fault == 'mtu':
        v += ['--mtu', str(rnd.choice((600, 1000))), '--join-delay', '200']
    elif fault == 'window':
        v += ['--window', str(rnd.choice((2, 4, 8)))]
    elif fault == 'mismatch':
        v += ['--mismatch-at', '%d:%s' % (at, rnd.choice(('count', 'dtype', 'op')))]
    elif fault == 'die':
        v += ['--die-at', str(at)]
    elif fault == 'stop':
        v += ['--stop-at', str(at)]
    return t


def trial(rack, t):
    seed, n = t['seed'], t['n']
    job, port = 100 + seed % 3800, 30000 + seed % 20000
    per = [[a.replace('AGG', rack.agg_ip) for a in p] for p in t['per_rank']]
    for r in range(n):
        per[r] += ['--bind', '%s:%d' % (rack.worker_ips[r], 40000 + (seed % 6000) * 4 + r)]
    run = Run(rack, job, TM, n, per, port)
    table = None
    try:
        if 'burst' in t:
            delay, permille, dur = t['burst']
            bport = 40000 + (seed % 6000) * 4 + t['victim']
            time.sleep(delay)
            name = 'mtx%d' % seed
            rnd = '' if permille >= 1000 else 'numgen random mod 1000 < %d' % permille
            nft(rack, t['victim'], '''
table netdev %(t)s {
	chain in { type filter hook ingress device eth0 priority 0; policy accept;
		udp dport %(p)d %(r)s drop; }
	chain out { type filter hook egress device eth0 priority 0; policy accept;
		udp sport %(p)d %(r)s drop; }
}''' % dict(t=name, p=bport, r=rnd))
            table = name
            time.sleep(dur)
            nft(rack, t['victim'], 'delete table netdev %s' % table)
            table = None
        live = [r for r in range(n) if not (t['fault'] == 'stop' and r == t['victim'])]
        if not run.wait(40, live):
            raise Failed('HANG (seed %d): ranks still running at the 40 s watchdog\n%s'
                         % (seed, run.dump()))
        run.close()
        judge(run, t)
    finally:
        if table:
            nft(rack, t['victim'], 'delete table netdev %s' % table)
        run.close()
    return t['fault'], max((e['ms'] for r in range(n) for e in run.colls(r)), default=0)


def judge(run, t):
    n, total, fault, v, at = t['n'], t['total'], t['fault'], t['victim'], t['at']
    what = 'seed %d (%s, fallback %s, victim %d, at %d)' % (t['seed'], fault, t['fb'], v, at)
    try:
        alive = [r for r in range(n) if not (fault in ('die', 'stop') and r == v)]
        no_wrong_result(run)
        c = same_create(run)
        if fault in ('none', 'late_join', 'slow_rank'):
            all_exact(run, total)
        elif fault in ('wrong_token', 'join_lost', 'mtu') and not t['fb']:
            check(c['ret'] < 0, 'creation succeeded despite the refused rank')
        elif fault in BENIGN and t['fb']:
            all_exact(run, total)
        elif fault in MALIGN and c['ret'] == OK:
            # Collectives before the fault exact; at the fault an error on
            # every live rank (no rank can have a result without the
            # victim's contribution or with a mismatched one).
            for r in alive:
                cs = run.colls(r)
                check(len(cs) > at or (fault == 'mismatch' and len(cs) == at + 1),
                      'rank %d stopped before the fault', r)
                check(all(e['ret'] == OK for e in cs[:at]), 'rank %d: an error before the '
                      'fault', r)
                check(cs[at]['ret'] != OK, 'rank %d: collective %d succeeded despite the '
                      'fault', r, at)
        else:
            # Benign without a fallback (loss, window): exact or an error,
            # never wrong (checked above), never a hang (the watchdog).
            pass
    except Failed as e:
        raise Failed('%s: %s' % (what, e))


def random_schedule(trials, seed0, jobs):
    seeds = REGRESSION_SEEDS + list(range(seed0, seed0 + trials))
    counts, worst = {}, {}
    log('random schedule: seeds %d..%d; this run again: random --seed %d --trials %d'
        % (seed0, seed0 + trials - 1, seed0, trials))
    t_start = time.monotonic()
    with Rack('mtxrnd', workers=3, mode='aggregator') as rack:
        d = Daemon(rack, INCAD, conf=matrix_conf(rack))
        with d:
            with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
                futs = {ex.submit(trial, rack, draw(s)): s for s in seeds}
                for f in concurrent.futures.as_completed(futs):
                    fault, ms = f.result()
                    counts[fault] = counts.get(fault, 0) + 1
                    worst[fault] = max(worst.get(fault, 0), ms)
            check(d.proc.poll() is None, 'incad died during the schedule')
    figure('random schedule: %d trials (seeds %d..%d), 0 hangs, 0 wrong results, %.0f s; '
           'by fault (trials, longest collective ms): %s', len(seeds), seed0,
           seed0 + trials - 1, time.monotonic() - t_start,
           ', '.join('%s %d/%.0f' % (k, counts[k], worst[k]) for k in sorted(counts)))


def main():
    global INCAD, WORKER
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--incad', required=True)
    ap.add_argument('--worker', required=True)
    ap.add_argument('what', choices=('rows', 'random'))
    ap.add_argument('--only')
    ap.add_argument('--trials', type=int, default=200)
    ap.add_argument('--seed', type=int,
                    default=int(os.environ.get('INCA_MATRIX_SEED') or 0) or None)
    ap.add_argument('--jobs', type=int, default=3)
    a = ap.parse_args()
    INCAD, WORKER = a.incad, a.worker
    if os.geteuid() != 0:
        print('matrix: needs root (network namespaces)', file=sys.stderr)
        return 1
    try:
        if a.what == 'rows':
            rows(a.only)
        else:
            if a.seed is None:
                # Seeds up to 10^6: job, ports and names derive from them.
                a.seed = random.SystemRandom().randrange(1, 1000000)
            random_schedule(a.trials, a.seed, a.jobs)
    except Failed as e:
        log('FAILED: %s' % e)
        if a.what == 'random':
            log('this run again: INCA_MATRIX_SEED=%d meson test matrix_random; a failing '
                'seed S alone: matrix.py --incad %s --worker %s random --seed S --trials 1'
                % (a.seed, INCAD, WORKER))
        for f in FIGURES:
            print(f)
        return 1
    for f in FIGURES:
        print(f)
    print('matrix %s: passed' % a.what)
    return 0


if __name__ == '__main__':
    sys.exit(main())
