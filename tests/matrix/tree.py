#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Aggregation trees: real incads as a spine and two leaves, libinca ranks.

    tree.py --incad PATH --worker PATH [--only CASE]

One L2 segment (a Linux bridge in a namespace of its own) joins a spine
incad, two leaf incads and a namespace holding every worker address; each
incad owns its af_packet port as on a rack host. The leaves' job has a
'parent' (the spine's job, docs/incad.md); the ranks are
tests/matrix/matrix_worker processes (libinca, a TCP group as oob and
fallback) given both leaves as INCA's aggregator list, so that rank r
joins leaf r / B (docs/libinca.md, "Trees"). Each case checks the outcome
users rely on: every collective exact, on the aggregators (not the
fallback) when nothing fails, with loss on every level or on the uplinks
only (1 % and 5 %), beyond 32 ranks
(40 on two leaves, 256 on eight), three levels deep, striped over two aggregators, through
the MPI interposer and the PyTorch hook; and every rank ending in the exact
result when a worker, a leaf, the spine or a stripe's aggregator dies
mid-run. Namespaces and daemons are removed however
a case ends.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'integration'))

from harness import Failed, Telemetry, check, log  # noqa: E402

NET = '10.%d'
SPINE, LEAF_A, LEAF_B = 1, 2, 3   # host numbers; leaf i is 2 + i, rank r 10 + r
MPI_HOST = 1000                   # the mpi case's namespace
JOB, TOKEN = 7, 0x54524545
POOL, ELEMS, WINDOW = 32, 256, 16
OPS = 'int32:sum:5000,fp32:sum:3000,int32:max:700,fp16:sum:900,int32:min:2000'
INCAD = WORKER = None
MPI_CHECK = MPI_PRELOAD = None   # --mpi-check, --mpi-preload: the mpi case
LIBINCA = None                   # --libinca: the torch case
_seq = [0]


def sh(*cmd, check_rc=True):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check_rc and r.returncode != 0:
        raise RuntimeError('%s: %s' % (' '.join(cmd), r.stderr.strip()))
    return r


class Tree:
    """The segment, three incads and the workers' namespace."""

    def __init__(self, nleaf_workers=(2, 2), extra_nodes=(), evict_ms=1500):
        _seq[0] += 1
        self.name = 'tr%d%d' % (os.getpid() % 10000, _seq[0])
        self.net = NET % (_seq[0] % 100 + 130)
        # Two leaves are 'la' and 'lb'; more are 'l0', 'l1', ...
        self.leaves = (['la', 'lb'] if len(nleaf_workers) == 2 else
                       ['l%d' % i for i in range(len(nleaf_workers))])
        # 'w' holds every worker address; 'm' one address, for mpirun
        # (Open MPI's TCP transport wants one address per interface).
        self.nodes = ['br', 'sp'] + list(extra_nodes) + self.leaves + ['w', 'm']
        self.incads = {}
        self.dir = tempfile.mkdtemp(prefix='inca-tree-')
        self.sizes = nleaf_workers
        self.evict_ms = evict_ms

    def ns(self, node):
        return '%s-%s' % (self.name, node)

    def ip(self, host):
        # A /16: room for 256 ranks and more.
        return '%s.%d.%d' % (self.net, host // 200, host % 200 + 1)

    def up(self):
        br = self.ns('br')
        for n in self.nodes:
            sh('ip', 'netns', 'add', self.ns(n))
        sh('ip', '-n', br, 'link', 'add', 'br0', 'type', 'bridge')
        sh('ip', '-n', br, 'link', 'set', 'br0', 'up')
        for n in self.nodes[1:]:
            outer = '%s%s' % (self.name, n)
            sh('ip', 'link', 'add', outer, 'netns', br, 'type', 'veth', 'peer', 'name', 'v0',
               'netns', self.ns(n))
            sh('ip', '-n', br, 'link', 'set', outer, 'master', 'br0', 'up')
            # Checksums in the frames, not left to an offload that an
            # af_packet reader would see unfinished.
            for ns, dev in ((br, outer), (self.ns(n), 'v0')):
                sh('ip', 'netns', 'exec', ns, 'ethtool', '-K', dev, 'tx', 'off', 'rx', 'off',
                   'tso', 'off', 'gso', 'off', 'gro', 'off', check_rc=False)
            sh('ip', '-n', self.ns(n), 'link', 'set', 'v0', 'up')
            sh('ip', '-n', self.ns(n), 'link', 'set', 'lo', 'up')
        # Every worker address on the workers' side, as on one host each.
        for r in range(sum(self.sizes)):
            sh('ip', '-n', self.ns('w'), 'addr', 'add', '%s/16' % self.ip(10 + r), 'dev', 'v0')
        sh('ip', '-n', self.ns('m'), 'addr', 'add', '%s/16' % self.ip(MPI_HOST), 'dev', 'v0')

    def down(self):
        for d in list(self.incads.values()):
            d.stop()
        for n in self.nodes:
            sh('ip', 'netns', 'del', self.ns(n), check_rc=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            for k, d in self.incads.items():
                log('---- incad %s log ----\n%s' % (k, d.output()[-6000:]))
        self.down()
        return False

    def conf(self, node, host, nworkers, parent_rank=None, job=JOB, parent_host=SPINE,
             parent_n=None):
        parent = ''
        if parent_rank is not None:
            parent = ('parent = { address = "%s"; job = %d; token = 0x%x; rank = %d; '
                      'nworkers = %d; };' % (self.ip(parent_host), JOB, TOKEN, parent_rank,
                                              parent_n or len(self.leaves)))
        return '''
mode = "aggregator";
idle = { policy = "adaptive"; max_sleep_us = 100; };
aggregation = { pool_size = %d; max_elems = %d; window = %d; max_slots = 1024; };
timeouts = { heartbeat_ms = 100; evict_ms = %d; };
ports = ( { name = "p0"; devargs = "net_af_packet%s,iface=v0"; ipv4 = "%s/16"; } );
tenants = ( { name = "t"; token = 0x%x; job_ids = [1, 100]; dynamic_jobs = false; } );
jobs = ( { id = %d; tenant = "t"; nworkers = %d; pool_size = %d; max_elems = %d;
           window = %d; %s } );
''' % (POOL, ELEMS, WINDOW, self.evict_ms, node, self.ip(host), TOKEN, job, nworkers, POOL,
       ELEMS, WINDOW, parent)

    def start(self, node, host, nworkers, parent_rank=None, job=JOB, parent_host=SPINE,
              parent_n=None):
        d = Daemon(self, node, self.conf(node, host, nworkers, parent_rank, job, parent_host,
                                         parent_n))
        d.jobid = job
        self.incads[node] = d
        return d.start()

    def start_all(self):
        self.start('sp', SPINE, len(self.leaves))
        for i, k in enumerate(self.leaves):
            self.start(k, LEAF_A + i, self.sizes[i], i)
        for k in self.leaves:
            self.incads[k].wait_parent_up()

    def run(self, common, aggs=None, during=None, watchdog=120):
        """The ranks run to their end; @during is done once rank 0 has 10
        collectives behind it. They are killed however this ends."""
        run = self.workers(common=common, aggs=aggs)
        try:
            if during is not None:
                run.wait_colls(0, 10)
                during()
            run.wait(watchdog=watchdog)
        finally:
            kill_all(run)
        return run

    def workers(self, per_rank=None, common=(), aggs=None):
        n = sum(self.sizes)
        aggs = aggs or ','.join(self.ip(LEAF_A + i) for i in range(len(self.leaves)))
        group = '%s:%d' % (self.ip(10), 47000 + _seq[0])
        return Run(self, n, aggs, group, per_rank or [[] for _ in range(n)], common)


class Daemon:
    def __init__(self, tree, node, conf):
        self.tree, self.node = tree, node
        self.prefix = '%s%s' % (tree.name, node)
        self.conf_path = os.path.join(tree.dir, node + '.conf')
        self.log_path = os.path.join(tree.dir, node + '.log')
        with open(self.conf_path, 'w') as f:
            f.write(conf)
        self.proc = None
        self.jobid = JOB

    def start(self):
        argv = ['ip', 'netns', 'exec', self.tree.ns(self.node), INCAD, '--no-huge', '-m', '256',
                '--no-pci', '--file-prefix', self.prefix, '-l', '0', '--', '-c',
                self.conf_path, '--idle', 'adaptive']
        self.logf = open(self.log_path, 'w')
        self.proc = subprocess.Popen(argv, stdout=self.logf, stderr=subprocess.STDOUT)
        self.tel = Telemetry(self.prefix)
        end = time.monotonic() + 30
        while True:
            check(self.proc.poll() is None, 'incad %s exited: %s', self.node, self.output())
            try:
                self.tel.connect(timeout=0.5)
                break
            except OSError:
                check(time.monotonic() < end, 'incad %s: no telemetry socket', self.node)
        return self

    def job(self):
        # None until incad has registered its commands.
        return self.tel.query('/incad/job,%d' % self.jobid) or {}

    def wait_parent_up(self, timeout=20):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.job().get('parent_state') == 'up':
                return
            time.sleep(0.05)
        raise Failed('leaf %s did not join its parent: %s' % (self.node, self.job()))

    def stop(self, sig=signal.SIGTERM):
        if self.proc is None:
            return
        if self.tel.sock:
            self.tel.close()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self.logf.close()
        shutil.rmtree('/var/run/dpdk/%s' % self.prefix, ignore_errors=True)

    def output(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ''


class Skip(Exception):
    """A case that cannot run here (what it needs is not built)."""


class Run:
    """The ranks: real processes in the workers' namespace, events as they come."""

    def __init__(self, tree, n, aggs, group, per_rank, common):
        self.n = n
        self.events = [[] for _ in range(n)]
        self.err = [[] for _ in range(n)]
        self.lock = threading.Lock()
        self.procs = []
        self.readers = []
        for r in range(n):
            argv = ['ip', 'netns', 'exec', tree.ns('w'), WORKER, '--agg', aggs, '--group',
                    group, '--job', str(JOB), '--rank', str(r), '--size', str(n), '--token',
                    hex(TOKEN), '--bind', '%s:%d' % (tree.ip(10 + r), 41000 + r), '--ops',
                    OPS, '--op-timeout', '20000', '--give-up', '1500',
                    '--group-timeout', '60000'] + list(common) + list(per_rank[r])
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
            self.procs.append(p)
            for f, e in ((p.stdout, False), (p.stderr, True)):
                t = threading.Thread(target=self._read, args=(r, f, e), daemon=True)
                t.start()
                self.readers.append(t)

    def _read(self, r, f, is_err):
        for line in f:
            with self.lock:
                if is_err:
                    self.err[r].append(line.rstrip())
                    continue
                try:
                    self.events[r].append(json.loads(line))
                except ValueError:
                    self.err[r].append('bad line: ' + line)

    def ev(self, r, kind):
        with self.lock:
            return [e for e in self.events[r] if e['ev'] == kind]

    def wait_colls(self, r, k, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end and len(self.ev(r, 'coll')) < k:
            time.sleep(0.01)

    def wait(self, watchdog=120):
        end = time.monotonic() + watchdog
        hung = []
        for r, p in enumerate(self.procs):
            try:
                p.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                hung.append(r)
        for r in hung:
            self.procs[r].kill()
            self.procs[r].wait()
        if hung:
            for r in hung[:3]:
                log('rank %d events %s\nstderr %s' % (r, self.ev(r, 'coll')[-3:],
                                                      '\n'.join(self.err[r][-15:])))
        check(not hung, 'ranks %s still running after %d s: a hang', hung, watchdog)
        # Every line the ranks printed: their readers reach the pipes' end.
        for t in self.readers:
            t.join(30)

    def check_exact(self, total, on_aggregator):
        for r in range(self.n):
            c = self.ev(r, 'create')
            check(c and c[0]['ret'] == 0, 'rank %d: create %s %s', r, c, self.err[r][-5:])
            colls = self.ev(r, 'coll')
            check(len(colls) == total, 'rank %d ran %d of %d collectives: %s', r, len(colls),
                  total, self.err[r][-10:])
            bad = [e for e in colls if e['ret'] != 0 or not e['exact']]
            check(not bad, 'rank %d: collectives not exact: %s %s', r, bad[:3],
                  self.err[r][-10:])
            end = self.ev(r, 'end')
            check(end, 'rank %d printed no end', r)
            if on_aggregator:
                check(not c[0]['fallback'] and not end[0]['fallback'],
                      'rank %d used the fallback: %s %s', r, c[0], end[0])


def check_fell_back(run, msg):
    """Every rank ran some collectives through the fallback: the fault came
    during the run, not after it."""
    fb = [run.ev(r, 'end')[0]['fallback_collectives'] for r in range(run.n)]
    log('fallback collectives per rank after the fault: %s' % fb)
    check(all(f > 0 for f in fb), msg, fb)


def kill_all(run):
    for p in run.procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def case_basic():
    """2 + 2 ranks on two leaves under a spine: every collective exact, none
    on the fallback; the spine saw one member per leaf and completed what
    the leaves sent up."""
    with Tree() as t:
        t.start_all()
        iters = 6
        run = t.run(['--iters', str(iters)])
        run.check_exact(5 * iters, on_aggregator=True)
        # The ranks' LEAVEs reset the leaves, which leave the spine's
        # incarnation and join the next one.
        for k in ('la', 'lb'):
            t.incads[k].wait_parent_up()
        sp = t.incads['sp'].job()
        la = t.incads['la'].job()
        log('spine job: %s' % {k: sp.get(k) for k in ('members', 'COMPLETE', 'DROP')})
        log('leaf a job: %s' % {k: la.get(k) for k in ('members', 'COMPLETE', 'parent_state',
                                                        'parent_joins', 'parent_losses')})
        check(sp['nworkers'] == 2 and sp['COMPLETE'] > 0, 'spine: %s', sp)
        check(la['parent_state'] == 'up' and la['parent_rank'] == 0, 'leaf a: %s', la)
        check(la['COMPLETE'] == sp['COMPLETE'],
              'leaf a completed %d chunks, the spine %d: every chunk crosses both levels',
              la['COMPLETE'], sp['COMPLETE'])
        # What an operator sees: the leaf's parent, and the job list.
        ctl = os.path.join(HERE, '..', '..', 'tools', 'incactl')
        out = subprocess.run(['/usr/bin/python3', ctl, '--prefix', t.incads['la'].prefix, 'job',
                              str(JOB)], capture_output=True, text=True, timeout=30).stdout
        log(out)
        check('parent: %s:18766 job %d, this job its rank 0, up' % (t.ip(SPINE), JOB) in out,
              'incactl job does not show the parent: %s', out)
        out = subprocess.run(['/usr/bin/python3', ctl, '--prefix', t.incads['lb'].prefix,
                              'jobs'], capture_output=True, text=True, timeout=30).stdout
        check('%s/%d up' % (t.ip(SPINE), JOB) in out, 'incactl jobs: %s', out)
        st = t.incads['la'].tel.query('/incad/stats')
        log('leaf a stats: partial_tx=%s parent_result=%s' % (
            st.get('counters', st).get('PARTIAL_TX'), st.get('counters', st).get('PARENT_RESULT')))


def set_loss(d, p):
    r = d.tel.query('/incad/drop_prob,%g' % p)
    check(r is not None, 'drop_prob refused: %s', r)


def case_loss():
    """5% contributions (and parent RESULTs) lost in every incad: still
    exact everywhere, still on the aggregators."""
    with Tree() as t:
        t.start_all()
        for d in t.incads.values():
            set_loss(d, 0.05)
        iters = 4
        run = t.run(['--iters', str(iters)])
        run.check_exact(5 * iters, on_aggregator=True)
        lost = sum(d.tel.query('/incad/drops').get('incad/INJECTED_LOSS', 0)
                   for d in t.incads.values())
        resent = sum(d.tel.query('/incad/stats').get('PARTIAL_RETX', 0)
                     for k, d in t.incads.items() if k != 'sp')
        log('loss: %d frames dropped on purpose, %d partials resent' % (lost, resent))
        check(lost > 0 and resent > 0, 'no loss injected (%d) or no partial resent (%d)',
              lost, resent)


def uplink_loss(t, pct):
    """Loss of pct % in both directions of the uplinks only: nftables
    numgen on the bridge's port to the spine, which carries nothing but the
    leaves' traffic with their parent (partials, JOINs and heartbeats up;
    RESULTs, ACKs down); the workers' links to the leaves are untouched."""
    port = '%ssp' % t.name
    sh('ip', 'netns', 'exec', t.ns('br'), 'nft',
       'add table bridge incaloss; '
       'add chain bridge incaloss fw { type filter hook forward priority 0; policy accept; }; '
       'add rule bridge incaloss fw oifname "%s" numgen random mod 100 < %d counter drop; '
       'add rule bridge incaloss fw iifname "%s" numgen random mod 100 < %d counter drop'
       % (port, pct, port, pct))


def uplink_drops(t):
    """Frames dropped on the way up (to the spine) and down, in that order."""
    out = sh('ip', 'netns', 'exec', t.ns('br'), 'nft', '-j', 'list', 'table', 'bridge',
             'incaloss').stdout
    drops = {}
    for item in json.loads(out)['nftables']:
        expr = item.get('rule', {}).get('expr', [])
        way = [e['match']['left']['meta']['key'] for e in expr
               if 'meta' in e.get('match', {}).get('left', {})]
        packets = [e['counter']['packets'] for e in expr if 'counter' in e]
        if way and packets:
            drops[way[0]] = packets[0]
    return drops.get('oifname', 0), drops.get('iifname', 0)


def uplink_loss_case(pct, iters):
    with Tree() as t:
        uplink_loss(t, pct)
        t.start_all()
        run = t.run(['--iters', str(iters)], watchdog=240)
        run.check_exact(5 * iters, on_aggregator=True)
        up, down = uplink_drops(t)
        resent = sum(t.incads[k].tel.query('/incad/stats').get('PARTIAL_RETX', 0)
                     for k in t.leaves)
        injected = sum(d.tel.query('/incad/drops').get('incad/INJECTED_LOSS', 0)
                       for d in t.incads.values())
        log('uplink loss %d %%: %d frames lost up, %d down, %d partials resent' % (
            pct, up, down, resent))
        check(up > 0 and down > 0 and resent > 0,
              'no loss on the uplinks (up %d, down %d) or no partial resent (%d)',
              up, down, resent)
        check(injected == 0, 'loss injected inside an incad: %d', injected)


def case_uplink_loss1():
    """1 % of the frames lost in both directions between the leaves and
    the spine, none on the workers' links: every collective exact, on the
    aggregators (the leaves resend their partials)."""
    uplink_loss_case(1, 10)


def case_uplink_loss5():
    """5 % lost on the uplinks only: exact, on the aggregators."""
    uplink_loss_case(5, 4)


def case_wide():
    """40 ranks, 20 per leaf: beyond one aggregator's 32; every collective
    exact on the aggregators."""
    with Tree(nleaf_workers=(20, 20)) as t:
        t.start_all()
        run = t.run(['--iters', '2'], watchdog=240)
        run.check_exact(10, on_aggregator=True)
        sp, la = t.incads['sp'].job(), t.incads['la'].job()
        check(la['nworkers'] == 20 and la['COMPLETE'] > 0 and la['COMPLETE'] == sp['COMPLETE'],
              'leaf a %s/%s chunks, spine %s', la['nworkers'], la['COMPLETE'], sp['COMPLETE'])


def case_leaf_dies():
    """Leaf B killed mid-run: every rank, under either leaf, ends with every
    collective exact (the rest on the fallback), none hangs."""
    with Tree() as t:
        t.start_all()
        iters = 40

        def during():
            t.incads['lb'].stop(signal.SIGKILL)

        run = t.run(['--iters', str(iters)], during=during, watchdog=180)
        run.check_exact(5 * iters, on_aggregator=False)
        check_fell_back(run, 'the leaf died after the run, not in it: %s')


def case_leaf_restarts():
    """Leaf B killed and started again at once, before the spine could
    evict it, mid-run: the new leaf must not join the spine's running
    incarnation (its workers restart their numbering); every rank ends
    exact, none hangs."""
    with Tree() as t:
        t.start_all()
        iters = 60

        def during():
            t.incads['lb'].stop(signal.SIGKILL)
            t.start('lb', LEAF_B, t.sizes[1], 1)

        run = t.run(['--iters', str(iters)], during=during, watchdog=180)
        run.check_exact(5 * iters, on_aggregator=False)


def case_leaf_stops():
    """Leaf B stopped (SIGTERM) mid-run: it LEAVEs the spine on its way
    out, so the spine resets at once instead of evicting it; every rank
    ends exact, none hangs."""
    with Tree() as t:
        t.start_all()
        iters = 40

        def during():
            t.incads['lb'].stop(signal.SIGTERM)

        run = t.run(['--iters', str(iters)], during=during, watchdog=180)
        run.check_exact(5 * iters, on_aggregator=False)
        st = t.incads['sp'].tel.query('/incad/stats')
        sp = t.incads['sp'].job()
        log('spine after the leaf stopped: evictions %s, resets %s' % (st.get('EVICT', 0),
                                                                     sp['resets']))
        check(st.get('EVICT', 0) == 0 and sp['resets'] >= 1,
              'the stopping leaf did not leave the spine (evictions %s, resets %s)',
              st.get('EVICT', 0), sp['resets'])


def case_worker_leaves():
    """A rank under leaf A leaves between two runs (its job resets): the
    spine's job resets through leaf A's LEAVE, and a second run on every
    rank again completes on the aggregators, exact."""
    with Tree() as t:
        t.start_all()
        run = t.run(['--iters', '2'])
        run.check_exact(10, on_aggregator=True)
        before = t.incads['sp'].job()['incarnation']
        run = t.run(['--iters', '2'])
        run.check_exact(10, on_aggregator=True)
        # The leaves LEAVE the spine when their workers have left, which
        # the runs do not wait for: look until it shows (bounded).
        end = time.monotonic() + 30
        while True:
            sp, la = t.incads['sp'].job(), t.incads['la'].job()
            if sp['incarnation'] > before and la['parent_joins'] >= 2:
                break
            check(time.monotonic() < end, 'spine incarnation %s -> %s, leaf a joins %s: the '
                  'leaves did not rejoin', before, sp['incarnation'], la['parent_joins'])
            time.sleep(0.1)


def case_spine_restarts():
    """The spine killed mid-run: the leaves find it silent (its evict_ms),
    end their incarnation, and every rank ends exact on the fallback, none
    hangs; a spine started again is joined by both leaves, and the next run
    is on the aggregators again."""
    with Tree() as t:
        t.start_all()
        iters = 40

        def during():
            t.incads['sp'].stop(signal.SIGKILL)

        run = t.run(['--iters', str(iters)], during=during, watchdog=180)
        run.check_exact(5 * iters, on_aggregator=False)
        la = t.incads['la'].job()
        check(la['parent_losses'] >= 1, 'leaf a never noticed its parent die: %s', la)
        t.start('sp', SPINE, 2)
        for k in ('la', 'lb'):
            t.incads[k].wait_parent_up(timeout=30)
        run = t.run(['--iters', '2'])
        run.check_exact(10, on_aggregator=True)


def stripes(t):
    """Two aggregators, each a stripe: job JOB on the one, JOB + 1 on the other."""
    n = sum(t.sizes)
    t.start('sp', SPINE, n)
    t.start('la', LEAF_A, n, job=JOB + 1)
    return '%s+%s' % (t.ip(SPINE), t.ip(LEAF_A))


def case_stripes():
    """One job striped over two aggregators (INCA_AGGREGATOR "A+B"): every
    collective exact, on the aggregators, each aggregator carrying a part."""
    with Tree() as t:
        aggs = stripes(t)
        iters = 6
        run = t.run(['--iters', str(iters)], aggs=aggs)
        run.check_exact(5 * iters, on_aggregator=True)
        a, b = t.incads['sp'].job(), t.incads['la'].job()
        log('stripe 0: %s chunks, stripe 1: %s chunks' % (a['COMPLETE'], b['COMPLETE']))
        check(a['COMPLETE'] > 0 and b['COMPLETE'] > 0 and
              abs(a['COMPLETE'] - b['COMPLETE']) <= 5 * iters,
              'the stripes did not share the collectives: %s and %s chunks',
              a['COMPLETE'], b['COMPLETE'])


def case_stripe_dies():
    """The second stripe's aggregator killed mid-run: every rank ends with
    every collective exact (the rest on the fallback, both stripes), none
    hangs."""
    with Tree() as t:
        aggs = stripes(t)
        iters = 40

        def during():
            t.incads['la'].stop(signal.SIGKILL)

        run = t.run(['--iters', str(iters)], aggs=aggs, during=during, watchdog=180)
        run.check_exact(5 * iters, on_aggregator=False)
        check_fell_back(run, 'the aggregator died after the run: %s')


def case_stripe_returns():
    """The second stripe's aggregator killed mid-run and started again: every
    rank falls back with both stripes, and once it is back the stripes
    return together (a probe every 10 collectives): every collective exact,
    the run ending on the aggregators."""
    with Tree() as t:
        aggs = stripes(t)
        iters = 300

        def during():
            t.incads['la'].stop(signal.SIGKILL)
            time.sleep(2.5)
            t.start('la', LEAF_A, sum(t.sizes), job=JOB + 1)

        run = t.run(['--iters', str(iters), '--probe-every', '10'], aggs=aggs, during=during,
                    watchdog=240)
        run.check_exact(5 * iters, on_aggregator=False)
        ends = [run.ev(r, 'end')[0] for r in range(run.n)]
        log('after the restart: %s' % [(e['fallback'], e['fallback_collectives'])
                                        for e in ends])
        check(all(e['fallback_collectives'] > 0 and not e['fallback'] for e in ends),
              'the stripes did not fall back and return: %s', ends)
        check(t.incads['la'].job().get('COMPLETE', 0) > 0,
              'the restarted aggregator carried nothing')


def case_mpi():
    """mpi_check (plain MPI, every result compared with PMPI) under
    mpirun with the interposer, 4 ranks in one namespace, INCA_AGGREGATOR
    naming two leaves: every eligible call through libinca and none
    through its fallback, the spine completing what the leaves sent up."""
    if not MPI_CHECK or not MPI_PRELOAD or shutil.which('mpirun') is None:
        raise Skip('no mpirun, mpi_check or libinca-mpi')
    with Tree() as t:
        t.start_all()
        stats = os.path.join(t.dir, 'mpi.stats')
        env = {'LD_PRELOAD': MPI_PRELOAD, 'INCA_JOB': str(JOB), 'INCA_TOKEN': hex(TOKEN),
               'INCA_AGGREGATOR': '%s,%s' % (t.ip(LEAF_A), t.ip(LEAF_B)),
               'INCA_MPI_STATS': stats}
        argv = ['ip', 'netns', 'exec', t.ns('m'), 'mpirun', '--allow-run-as-root',
                '--oversubscribe', '-np', '4', '--mca', 'btl', 'self,tcp',
                '--mca', 'btl_tcp_if_include', 'v0', '--mca', 'oob_tcp_if_include', 'v0',
                '--mca', 'mpi_yield_when_idle', '1']
        for k, v in env.items():
            argv += ['-x', '%s=%s' % (k, v)]
        p = subprocess.run(argv + [MPI_CHECK], capture_output=True, text=True, timeout=300)
        out = p.stdout + p.stderr
        check(p.returncode == 0 and 'mpi_check: 4 ranks: PASS' in out,
              'mpi_check failed (%d): %s', p.returncode, out[-3000:])
        st = {}
        with open(stats) as f:
            for line in f:
                if line.startswith('inca-mpi:'):
                    v = line.split()[1:]
                    d = dict(zip(v[0::2], v[1::2]))
                    st[int(d['rank'])] = d
        check(sorted(st) == [0, 1, 2, 3], 'stats of ranks %s', sorted(st))
        for r, d in st.items():
            check(int(d['chunks']) > 0 and int(d['fallback_collectives']) == 0 and
                  int(d['in_fallback']) == 0, 'rank %d did not stay on the tree: %s', r, d)
        sp, la = t.incads['sp'].job(), t.incads['la'].job()
        log('mpi over the tree: %s chunks per rank, spine %s, leaf a %s' % (
            st[0]['chunks'], sp['COMPLETE'], la['COMPLETE']))
        check(sp['COMPLETE'] >= int(st[0]['chunks']) and la['COMPLETE'] == sp['COMPLETE'],
              'spine %s, leaf a %s, ranks %s chunks', sp['COMPLETE'], la['COMPLETE'],
              st[0]['chunks'])


def case_torch():
    """DDP through the inca_torch hook (tests/torch/train_check.py, 4
    processes) with INCA_AGGREGATOR naming two leaves: every rank ends with
    identical parameters, the loss halves, every bucket went through
    libinca and none through gloo or the fallback."""
    train = os.path.join(HERE, '..', 'torch', 'train_check.py')
    try:
        import torch
    except ImportError:
        raise Skip('python3-torch is not installed')
    if not LIBINCA:
        raise Skip('no --libinca')
    with Tree() as t:
        t.start_all()
        out = os.path.join(t.dir, 'torch.pt')
        env = dict(os.environ, INCA_LIB=LIBINCA, INCA_JOB=str(JOB), INCA_TOKEN=hex(TOKEN),
                   INCA_AGGREGATOR='%s,%s' % (t.ip(LEAF_A), t.ip(LEAF_B)),
                   OMP_NUM_THREADS='1', GLOO_SOCKET_IFNAME='lo')
        p = subprocess.run(['ip', 'netns', 'exec', t.ns('m'), '/usr/bin/python3', train,
                            '--world', '4', '--mode', 'inca', '--steps', '40', '--out', out],
                           env=env, capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, 'train_check failed (%d): %s', p.returncode,
              (p.stdout + p.stderr)[-3000:])
        r = torch.load(out)
        check(r['identical'] and r['loss1'] < 0.5 * r['loss0'] and not r['dtype_errors'],
              'training over the tree: identical %s, loss %.4f -> %.4f, dtype errors %s',
              r['identical'], r['loss0'], r['loss1'], r['dtype_errors'])
        for st in r['stats']:
            check(st['enabled'] and st['in_fallback'] == 0 and st['fallback_collectives'] == 0
                  and st['gloo_calls'] == 0 and st['inca_calls'] >= 40 and st['chunks'] > 0,
                  'rank %d did not train through the tree: %s', st['rank'], st)
        sp = t.incads['sp'].job()
        log('torch over the tree: loss %.4f -> %.4f, %d chunks per rank, spine %s' % (
            r['loss0'], r['loss1'], r['stats'][0]['chunks'], sp['COMPLETE']))
        check(sp['COMPLETE'] >= r['stats'][0]['chunks'], 'spine completed %s', sp['COMPLETE'])


MID = 9   # host number of the middle level in depth3


def case_depth3():
    """Three levels: the leaves' parent is a middle incad whose own job has
    the spine as its parent (the spine's job: one member). Every
    collective exact, on the aggregators; every level completed every
    chunk."""
    with Tree(extra_nodes=('mid',)) as t:
        t.start('sp', SPINE, 1)
        t.start('mid', MID, 2, parent_rank=0, parent_n=1)
        t.start('la', LEAF_A, t.sizes[0], 0, parent_host=MID)
        t.start('lb', LEAF_B, t.sizes[1], 1, parent_host=MID)
        for k in ('mid', 'la', 'lb'):
            t.incads[k].wait_parent_up()
        iters = 4
        run = t.run(['--iters', str(iters)])
        run.check_exact(5 * iters, on_aggregator=True)
        c = {k: t.incads[k].job()['COMPLETE'] for k in ('sp', 'mid', 'la', 'lb')}
        log('depth 3: chunks completed per level: %s' % c)
        check(c['sp'] > 0 and c['sp'] == c['mid'] == c['la'] == c['lb'],
              'every level must complete every chunk: %s', c)


def case_r256():
    """256 ranks (processes) on 8 leaves of 32 under one spine, each incad
    seeing at most its own 32 children: every collective exact, on the
    aggregators."""
    # 256 processes on two cores starve the incads' timers too: evict_ms of
    # 6 s (as in production, 5 s) keeps a leaf whose heartbeat came late
    # from being evicted by the spine, which would send everybody to the
    # fallback.
    with Tree(nleaf_workers=(32,) * 8, evict_ms=6000) as t:
        t.start_all()
        # A rank that joined early waits long for the last one in the
        # creation agreement; its keepalive thread keeps it a member.
        run = t.run(['--iters', '1', '--keepalive', '--give-up', '10000'], watchdog=600)
        run.check_exact(5, on_aggregator=True)
        sp = t.incads['sp'].job()
        log('r256: spine %s chunks, nworkers %s; leaf 0 nworkers %s' % (
            sp['COMPLETE'], sp['nworkers'], t.incads['l0'].job()['nworkers']))
        check(sp['COMPLETE'] > 0 and sp['nworkers'] == 8, 'spine: %s', sp)


EXTRA = ()
CASES = {k[5:]: v for k, v in globals().items() if k.startswith('case_')}


def main():
    global INCAD, WORKER, MPI_CHECK, MPI_PRELOAD, LIBINCA
    ap = argparse.ArgumentParser()
    ap.add_argument('--incad', required=True)
    ap.add_argument('--worker', required=True)
    ap.add_argument('--mpi-check')
    ap.add_argument('--mpi-preload')
    ap.add_argument('--libinca')
    ap.add_argument('--only')
    a = ap.parse_args()
    INCAD, WORKER = os.path.abspath(a.incad), os.path.abspath(a.worker)
    MPI_CHECK = a.mpi_check and os.path.abspath(a.mpi_check)
    MPI_PRELOAD = a.mpi_preload and os.path.abspath(a.mpi_preload)
    LIBINCA = a.libinca and os.path.abspath(a.libinca)
    # A watchdog's SIGTERM unwinds the cases, so their 'with' blocks remove
    # the namespaces and daemons.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit('tree.py: terminated'))
    names = [a.only] if a.only else [c for c in CASES if c not in EXTRA]
    passed = failed = skipped = 0
    for name in names:
        t0 = time.monotonic()
        try:
            CASES[name]()
            passed += 1
            log('PASS %s (%.1f s)' % (name, time.monotonic() - t0))
        except Skip as e:
            skipped += 1
            log('SKIP %s: %s' % (name, e))
        except Exception as e:  # noqa: BLE001 (report every failure, then go on)
            failed += 1
            log('FAIL %s: %s' % (name, e))
    print('%d passed, %d failed, %d skipped' % (passed, failed, skipped))
    return 0 if failed == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
