#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Beyond one rack: the emulated fabrics of tools/rack (docs/rack.md,
"Several racks", "Several aggregators") with real incads, inca-bench ranks
and Open MPI.

    test_fabric.py --incad PATH --bench PATH [--mpi-bench PATH] TEST

fabric_tree: 2 racks of 4 workers under a spine, a leaf incad per rack and
  a spine incad; every dtype and op exact on 8 ranks naming the two leaves,
  every chunk completed by both levels; then 'tools/rack down' with the
  incads still running leaves no namespace, process or state file.
fabric_stripes: one ToR with two aggregators, each behind its own link; a
  job striped over both (INCA_AGGREGATOR=A+B) exact, each carrying a part.
fabric_mpi: the same 2-rack fabric with no incad running: Open MPI's
  allreduce over 8 ranks exact, its traffic across both shaped uplinks
  (kernel bridges only).
fabric_cleanup: an 'up' that fails half way (a command failing, or the
  shell giving up) removes what it had made.

Each TEST builds its own fabric (a unique name) and removes it however it
ends. Exit status 0: passed; 1: failed.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import RACK, Failed, Rack, Incad, Skip, check, log, run_test, unique_name  # noqa: E402
import test_libinca as L  # noqa: E402  (run_benches, check_sweep, SIZES)

INCAD = MPI_BENCH = None


STATE_DIR = os.environ.get('RACK_STATE_DIR', '/run/inca-rack')


def namespaces(name):
    out = subprocess.run(['ip', 'netns', 'list'], capture_output=True, text=True).stdout
    return [ln.split()[0] for ln in out.splitlines() if ln.startswith(name + '-')]


def job_of(incad, job=1):
    tel = incad.telemetry()
    try:
        return tel.query('/incad/job,%d' % job) or {}
    finally:
        tel.close()


def wait_parent_up(leaf, timeout=30):
    """A leaf holds its parent's session: first it waits out the spine's
    evict_ms (docs/incad.md, "Trees"), then joins."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if job_of(leaf).get('parent_state') == 'up':
            return
        time.sleep(0.1)
    raise Failed('%s did not join the spine in %d s: %s' % (leaf.node, timeout, job_of(leaf)))


def fabric(tag, **kw):
    return Rack(tag, workers=4, mode='aggregator', rate='500mbit',
                up_args=['--racks', '2', '--uplink-rate', '500mbit'], **kw)


def tree_incads(rack):
    """The spine and the two leaves of a 2-rack fabric (not started)."""
    check(rack.env['RACK_AGGREGATOR'] == '10.77.0.2,10.77.0.3', 'aggregator list %s',
          rack.env['RACK_AGGREGATOR'])
    # evict_ms 1500: the leaves' first JOIN waits for it, not for 5 s.
    spine = Incad(rack, INCAD, conf_args=['--spine', '--evict-ms', '1500'])
    leaves = [Incad(rack, INCAD, node='leaf%d' % k, ip='10.77.0.%d' % (2 + k),
                    conf_args=['--leaf', str(k), '--evict-ms', '1500']) for k in (0, 1)]
    return spine, leaves


def test_fabric_tree():
    with fabric('ftree') as rack:
        spine, leaves = tree_incads(rack)
        with spine, leaves[0], leaves[1]:
            for leaf in leaves:
                wait_parent_up(leaf)
            outs = L.run_benches(rack, [(1, 8, list(range(8)),
                                         ['-d', 'all', '-o', 'all', '-s', L.SIZES, '-i', '2',
                                          '-x', '1'])], timeout=240)
            L.check_sweep(outs[1], 8)
            sp = job_of(spine)
            lv = [job_of(leaf) for leaf in leaves]
            log('chunks completed: spine %s, leaves %s; spine members %s' % (
                sp.get('COMPLETE'), [j.get('COMPLETE') for j in lv], sp.get('nworkers')))
            check(sp['nworkers'] == 2 and sp['COMPLETE'] > 0, 'spine: %s', sp)
            for k, j in enumerate(lv):
                check(j['nworkers'] == 4 and j['COMPLETE'] == sp['COMPLETE'],
                      'leaf %d completed %s chunks, the spine %s: every chunk crosses both '
                      'levels', k, j['COMPLETE'], sp['COMPLETE'])
            # down with the incads still running: it stops them and
            # removes every namespace, the bridges and the state file.
            r = subprocess.run([RACK, 'down', '--name', rack.name], capture_output=True,
                               text=True, timeout=60)
            check(r.returncode == 0, 'down failed: %s', r.stderr)
            left = namespaces(rack.name)
            check(not left, 'namespaces left after down: %s', left)
            check(not os.path.exists(os.path.join(STATE_DIR, rack.name + '.env')),
                  'state file left after down')
            for d in [spine] + leaves:
                try:
                    d.proc.wait(10)
                except subprocess.TimeoutExpired:
                    raise Failed('incad %s still running after down' % d.node)


def uplink_counters(rack):
    """Bytes each rack's uplink carried so far: (up to the spine, down from it)."""
    out = []
    for k in (0, 1):
        r = rack.run('tor%d' % k, ['ip', '-s', '-j', 'link', 'show', 'dev', 'uplink'],
                     capture_output=True, text=True)
        st = json.loads(r.stdout)[0]['stats64']
        out.append((st['tx']['bytes'], st['rx']['bytes']))
    return out


def uplink_loss(rack, pct):
    """pct % of the frames lost both ways on each rack's uplink, in its ToR
    bridge: the leaves' partials and the spine's RESULTs (and the ranks' TCP
    group, which retransmits); the workers' links to their leaf untouched."""
    for k in (0, 1):
        rack.run('tor%d' % k, [
            'nft', 'add table bridge incaloss; '
            'add chain bridge incaloss fw { type filter hook forward priority 0; '
            'policy accept; }; '
            'add rule bridge incaloss fw oifname "uplink" udp dport 18766 '
            'numgen random mod 100 < %d counter drop; '
            'add rule bridge incaloss fw iifname "uplink" udp sport 18766 '
            'numgen random mod 100 < %d counter drop' % (pct, pct)], check=True,
            capture_output=True, text=True)


def uplink_lost(rack):
    """Frames the loss rules dropped, both racks, both ways."""
    n = 0
    for k in (0, 1):
        out = rack.run('tor%d' % k, ['nft', '-j', 'list', 'table', 'bridge', 'incaloss'],
                       capture_output=True, text=True).stdout
        for item in json.loads(out)['nftables']:
            for e in item.get('rule', {}).get('expr', []):
                n += e.get('counter', {}).get('packets', 0)
    return n


def settle(leaves, timeout=30):
    """Wait until every leaf holds a parent session and has not rejoined for
    a second: the tree's incarnations have stopped changing."""
    end = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < end:
        jobs = [job_of(leaf) for leaf in leaves]
        now = [(j.get('parent_state'), j.get('parent_joins')) for j in jobs]
        if now != last:
            last, since = now, time.monotonic()
        elif all(s == 'up' for s, _ in now) and time.monotonic() - since >= 1:
            return
        time.sleep(0.1)
    raise Failed('the leaves did not settle in %d s: %s' % (timeout, last))


def partials_resent(leaves):
    n = 0
    for leaf in leaves:
        tel = leaf.telemetry()
        try:
            n += tel.query('/incad/stats').get('PARTIAL_RETX', 0)
        finally:
            tel.close()
    return n


# Roots over both racks: ranks 0-3 are rack 0's, 4-7 rack 1's. A
# reduce-scatter's and an all-gather's chunks have every rank as a root.
ROUTED_RUNS = (('reduce_scatter', []), ('allgather', []), ('reduce', ['--root', '1']),
               ('reduce', ['--root', '6']))


def routed_exact(rack, runs, sizes, tag):
    """Routed collectives (runs: (-C list, extra args), one job each), int32
    and fp32 sums, exact on all 8 ranks, through the tree (ROUTED granted,
    no fallback)."""
    for coll, extra in runs:
        out = L.run_benches(rack, [(1, 8, list(range(8)),
                                    ['-C', coll, '-d', 'int32,fp32', '-o', 'sum', '-s', sizes,
                                     '-i', '2', '-x', '1'] + extra)], timeout=120)[1]
        colls = coll.split(',')
        L.check_sweep(out, 8, dtypes=2, ops=1, nsizes=len(sizes.split(',')) * len(colls))
        check(sorted({r['collective'] for r in out['results']}) == sorted(colls),
              '%s: rows of %s', tag, [r['collective'] for r in out['results']])
        st = out['stats']
        check(st['caps'] & 0x20, '%s: the leaf did not grant ROUTED: %s', tag, st)
        check(st['fallback_collectives'] == 0, '%s %s: fallback used: %s', tag, coll, st)
        log('%s: %s %s: %d results exact' % (tag, coll, ' '.join(extra), len(out['results'])))


def test_fabric_tree_routed():
    """ReduceScatter, AllGather and Reduce through the tree in routed chunks
    (docs/protocol.md, "Routed chunks in a tree"): exact on 8 ranks with the
    roots in both racks; one MiB of each shows the savings against the
    allreduce (the form without routing): a reduce-scatter rank receives
    about S / N and each uplink carries the partial's S up but only its
    rack's S / 2 down, an all-gather's uplinks carry S / 2 up, a reduce's
    sum goes down the root's rack's uplink only; then the same collectives
    exact in one job with 5 % loss on both uplinks, both ways, the leaves
    resending partials."""
    big = 1 << 20
    with fabric('froute') as rack:
        spine, leaves = tree_incads(rack)
        with spine, leaves[0], leaves[1]:
            for leaf in leaves:
                wait_parent_up(leaf)
            routed_exact(rack, ROUTED_RUNS, L.SIZES, 'no loss')
            traffic = {}
            for coll, extra in (('allreduce', []),) + ROUTED_RUNS[:2] + ROUTED_RUNS[3:]:
                before = uplink_counters(rack)
                out = L.run_benches(rack, [(1, 8, list(range(8)),
                                            ['-C', coll, '-s', str(big), '-i', '1', '-x', '0',
                                             '-d', 'int32', '-o', 'sum'] + extra)],
                                    timeout=120)[1]
                check(out['results'][0]['errors'] == 0, '%s wrong', coll)
                after = uplink_counters(rack)
                ul = [(a[0] - b[0], a[1] - b[1]) for a, b in zip(after, before)]
                traffic[coll] = (out['stats'], ul)
                log('%s of %d bytes: rank 0 sent %d, received %d; uplinks (up, down) %s' %
                    (coll, big, out['stats']['tx_bytes'], out['stats']['rx_bytes'], ul))
            # Each run also creates the job and exchanges its figures: compare
            # with the allreduce run, not with absolute numbers.
            ar, ar_ul = traffic['allreduce']
            rs, rs_ul = traffic['reduce_scatter']
            ag, ag_ul = traffic['allgather']
            rd, rd_ul = traffic['reduce']
            check(rs['rx_bytes'] < ar['rx_bytes'] * 0.3,
                  'reduce-scatter: rank 0 received %d bytes, the allreduce %d', rs['rx_bytes'],
                  ar['rx_bytes'])
            check(ag['tx_bytes'] < ar['tx_bytes'] * 0.3,
                  'all-gather: rank 0 sent %d bytes, the allreduce %d', ag['tx_bytes'],
                  ar['tx_bytes'])
            for k in (0, 1):
                check(rs_ul[k][0] > big and rs_ul[k][1] < ar_ul[k][1] * 0.75,
                      'reduce-scatter, rack %d uplink (up, down) %s, the allreduce\'s %s', k,
                      rs_ul[k], ar_ul[k])
                check(ag_ul[k][0] < ar_ul[k][0] * 0.75 and ag_ul[k][1] < ar_ul[k][1] * 0.75,
                      'all-gather, rack %d uplink (up, down) %s, the allreduce\'s %s', k,
                      ag_ul[k], ar_ul[k])
            # The reduce's root is rank 6, in rack 1: rack 0 gets BRIEF.
            check(rd_ul[0][1] < big * 0.1 and rd_ul[1][1] > big,
                  'reduce to rank 6: uplinks (up, down) %s', rd_ul)
            check(rd['rx_bytes'] < ar['rx_bytes'] * 0.1,
                  'reduce: rank 0 (not the root) received %d bytes, the allreduce %d',
                  rd['rx_bytes'], ar['rx_bytes'])

            # One job under loss, begun once both leaves have rejoined
            # the spine after the last job's LEAVEs (each resets the tree).
            settle(leaves)
            uplink_loss(rack, 5)
            resent0 = partials_resent(leaves)
            routed_exact(rack, [('reduce_scatter,allgather,reduce', ['--root', '6'])],
                         '1030,70001,300001', 'uplink loss 5 %')
            lost = uplink_lost(rack)
            resent = partials_resent(leaves)
            log('uplink loss: %d INCA frames dropped on the uplinks, %d partials resent' % (
                lost, resent))
            check(lost > 0 and resent > resent0, 'no loss on the uplinks (%d) or no partial '
                  'resent (%d)', lost, resent)


def test_fabric_stripes():
    with Rack('fstripe', workers=4, mode='aggregator', rate='500mbit',
              up_args=['--aggs', '2', '--agg-rate', '500mbit']) as rack:
        check(rack.aggregator == '10.77.0.1+10.77.0.2', 'aggregator %s', rack.aggregator)
        a = Incad(rack, INCAD, conf_args=['--stripe', '0'])
        b = Incad(rack, INCAD, conf_args=['--stripe', '1'], node='agg1', ip='10.77.0.2')
        with a, b:
            outs = L.run_benches(rack, [(1, 4, list(range(4)),
                                         ['-d', 'all', '-o', 'all', '-s', L.SIZES, '-i', '2',
                                          '-x', '1'])], timeout=240)
            L.check_sweep(outs[1], 4)
            ca, cb = job_of(a, 1).get('COMPLETE', 0), job_of(b, 2).get('COMPLETE', 0)
            log('stripe 0 completed %d chunks, stripe 1 %d' % (ca, cb))
            check(ca > 0 and cb > 0, 'a stripe carried nothing: %d and %d chunks', ca, cb)


# Open MPI starts its daemons through this agent: host 10.77.0.(10+i) is
# worker i's namespace.
AGENT = '''#!/bin/bash
host=$1
shift
[[ $host =~ ^10\\.77\\.0\\.([0-9]+)$ ]] || exit 255
exec ip netns exec "%s-w$((BASH_REMATCH[1] - 10))" /bin/sh -c "$*"
'''


def uplink_bytes(rack):
    """Bytes sent into each rack's uplink, from its ToR's tbf."""
    sent = []
    for k in (0, 1):
        out = rack.run('tor%d' % k, ['tc', '-s', 'qdisc', 'show', 'dev', 'uplink'],
                       capture_output=True, text=True).stdout
        m = re.search(r'Sent (\d+) bytes', out)
        sent.append(int(m.group(1)) if m else 0)
    return sent


def test_fabric_mpi():
    if not MPI_BENCH:
        raise Skip('no --mpi-bench (meson found no MPI)')
    size = 1 << 20
    with fabric('fmpi') as rack, tempfile.TemporaryDirectory(prefix='inca-fab-') as tmp:
        agent = os.path.join(tmp, 'agent')
        with open(agent, 'w') as f:
            f.write(AGENT % rack.name)
        os.chmod(agent, 0o755)
        # No incad anywhere: the aggregators' namespaces hold no process.
        for node in ('agg', 'leaf0', 'leaf1'):
            pids = subprocess.run(['ip', 'netns', 'pids', rack.ns(node)], capture_output=True,
                                  text=True).stdout.split()
            check(not pids, '%s runs %s', node, pids)
        before = uplink_bytes(rack)
        hosts = ','.join(rack.worker_ips)
        argv = ['mpirun', '--allow-run-as-root', '-np', '8', '--host', hosts,
                '--mca', 'plm_rsh_agent', agent, '--mca', 'plm_rsh_no_tree_spawn', '1',
                '--mca', 'btl', 'self,tcp', '--mca', 'btl_tcp_if_include', 'eth0',
                '--mca', 'oob_tcp_if_include', 'eth0', '--mca', 'mpi_yield_when_idle', '1',
                MPI_BENCH, '-s', '4096,%d' % size, '-i', '2', '-I', '2', '-x', '1',
                '--label', 'ompi', '--csv']
        # Now and then one of mpirun's daemons does not come up and mpirun
        # waits for it for ever (tools/bench/bench_allreduce.sh): once more.
        for attempt in (1, 2):
            try:
                r = rack.run(0, argv, capture_output=True, text=True, timeout=120)
                break
            except subprocess.TimeoutExpired:
                check(attempt == 1, 'mpirun did not finish in 120 s, twice')
                log('mpirun did not finish in 120 s; again')
        rows = [ln.split(',') for ln in r.stdout.splitlines() if ln.startswith('ompi,')]
        log(r.stdout.strip())
        check(r.returncode == 0 and len(rows) == 2, 'mpirun failed (%d): %s %s', r.returncode,
              r.stdout[-1000:], r.stderr[-2000:])
        # system,nranks,bytes,iters,median,mean,min,ratio,errors
        for row in rows:
            check(row[1] == '8' and row[8] == '0', 'wrong result: %s', row)
        after = uplink_bytes(rack)
        crossed = [a - b for a, b in zip(after, before)]
        log('bytes into the uplinks during the allreduces: %s' % crossed)
        # Each rack's result depends on S bytes of the other's data: an
        # allreduce moves at least S each way between the racks, whichever
        # algorithm Open MPI picks.
        check(all(c >= size for c in crossed), 'the uplinks carried %s bytes', crossed)


def test_fabric_cleanup():
    # Two ways for up to fail half way, after the spine, a ToR, a leaf and
    # their links exist: tc refusing a burst of 0 (a failed command), and
    # the shell giving up on a burst that is no number (an unset name in
    # its arithmetic, which runs no ERR trap). Either way up must remove
    # all it made, and down after it must succeed.
    for burst in ('0', 'not-a-number'):
        name = unique_name('fclean')
        env = dict(os.environ, RACK_TBF_BURST=burst)
        r = subprocess.run([RACK, 'up', '--name', name, '--racks', '2', '--workers', '2',
                            '--rate', '500mbit', '--uplink-rate', '500mbit'], env=env,
                           capture_output=True, text=True, timeout=120)
        try:
            check(r.returncode != 0, 'up with burst %s succeeded', burst)
            check('cleaning up' in r.stderr, 'burst %s: up did not clean up: %s', burst,
                  r.stderr)
            left = namespaces(name)
            check(not left, 'burst %s: a failed up left %s', burst, left)
            check(not os.path.exists(os.path.join(STATE_DIR, name + '.env')),
                  'burst %s: a failed up left its state file', burst)
            r = subprocess.run([RACK, 'down', '--name', name], capture_output=True, text=True,
                               timeout=60)
            check(r.returncode == 0, 'down after a failed up: %s', r.stderr)
        finally:
            subprocess.run([RACK, 'down', '--name', name], capture_output=True, timeout=60)


TESTS = {k[5:]: v for k, v in globals().items() if k.startswith('test_')}


def main():
    global INCAD, MPI_BENCH
    ap = argparse.ArgumentParser()
    ap.add_argument('--incad', required=True)
    ap.add_argument('--bench', required=True)
    ap.add_argument('--mpi-bench')
    ap.add_argument('test', choices=sorted(TESTS))
    a = ap.parse_args()
    INCAD = L.INCAD = os.path.abspath(a.incad)
    L.BENCH = os.path.abspath(a.bench)
    MPI_BENCH = a.mpi_bench and os.path.abspath(a.mpi_bench)
    return run_test(a.test, TESTS[a.test])


if __name__ == '__main__':
    sys.exit(main())
