#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""libinca against the real incad: inca-bench processes, one per worker
namespace of an emulated rack (tools/rack), every dtype and op, results
checked by every rank.

    test_libinca.py --incad PATH --bench PATH TEST

Each TEST builds its own rack and incad and removes both when it ends.
Exit status 0: passed; 1: failed (reason, worker output and incad's log on
stderr).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Rack, Incad, check, log, run_test  # noqa: E402
from inca_proto import DTYPE  # noqa: E402

TOKEN = 0x494E4341  # tools/rack conf: job 1's token; job 1 + k has TOKEN + k
# Byte sizes, not multiples of a chunk: 1 element, a few, just over one
# packet, many packets with a short last one.
SIZES = '1,12,1030,70001,300001'
INCAD = BENCH = None


def bench_argv(rack, job, rank, n, extra):
    return [BENCH, '-a', rack.aggregator, '-j', str(job), '-t', hex(TOKEN + job - 1),
            '-r', str(rank), '-n', str(n), '--json', '-G', '5000'] + list(extra)


def run_benches(rack, groups, timeout, env=None):
    """groups: list of (job, nworkers, nodes, extra args). Runs every
    worker of every group at once (in environment env, default ours);
    returns rank 0's JSON of each group."""
    procs = []
    try:
        for job, n, nodes, extra in groups:
            for rank in range(n):
                p = rack.popen(nodes[rank], bench_argv(rack, job, rank, n, extra),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
                procs.append((job, rank, p))
        end = time.monotonic() + timeout
        outs, bad = {}, []
        for job, rank, p in procs:
            try:
                so, se = p.communicate(timeout=max(1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                so, se = p.communicate()
                bad.append('job %d rank %d: timed out' % (job, rank))
            if se:
                log('job %d rank %d stderr: %s' % (job, rank, se.strip()))
            if p.returncode != 0:
                bad.append('job %d rank %d: exit status %d' % (job, rank, p.returncode))
            if rank == 0:
                try:
                    outs[job] = json.loads(so)
                except ValueError:
                    bad.append('job %d rank 0 printed no JSON: %r' % (job, so[-500:]))
        check(not bad, '; '.join(bad))
        return outs
    finally:
        for _, _, p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def check_sweep(out, n, dtypes=len(DTYPE), ops=3, nsizes=len(SIZES.split(','))):
    rows = out['results']
    check(out['nworkers'] == n, 'nworkers %s, want %d', out['nworkers'], n)
    check(len(rows) == dtypes * ops * nsizes, '%d rows, want %d', len(rows),
          dtypes * ops * nsizes)
    for r in rows:
        check(r['errors'] == 0, '%s %s %d bytes: %d wrong elements', r['dtype'], r['op'],
              r['bytes'], r['errors'])
    check(out['stats']['recoveries'] == 0, 'fell back: %s', out['stats'])
    combos = {(r['dtype'], r['op']) for r in rows}
    check(len(combos) == dtypes * ops, 'combinations %s', sorted(combos))


def sweep(n, extra_groups=()):
    with Rack('lib%d' % n, workers=n) as rack, \
            Incad(rack, INCAD, conf_args=['--jobs', '1', '--nworkers', str(n)]):
        outs = run_benches(rack, [(1, n, list(range(n)),
                                   ['-d', 'all', '-o', 'all', '-s', SIZES, '-i', '2',
                                    '-x', '1'])], timeout=240)
        check_sweep(outs[1], n)
        log('%d workers: %d results exact' % (n, len(outs[1]['results'])))
        for job, args in extra_groups:
            outs = run_benches(rack, [(job, n, list(range(n)), args)], timeout=240)
            for r in outs[job]['results']:
                check(r['errors'] == 0, '%s %s %d bytes wrong', r['dtype'], r['op'],
                      r['bytes'])
                log('%d workers: %s %s %d bytes in %.0f us, %.1f MB/s'
                    % (n, r['dtype'], r['op'], r['bytes'], r['avg_us'], r['algbw_MBps']))


def test_libinca_2():
    # One case of the largest size: 64 MiB of int32.
    sweep(2, extra_groups=[(1, ['-d', 'int32', '-o', 'sum', '-s', str(64 << 20), '-I', '1',
                                '-x', '0'])])


def test_libinca_4():
    sweep(4)


def test_libinca_8():
    sweep(8)


def test_libinca_gso():
    """UDP GSO on send and UDP GRO on receive, with GRO on the workers'
    links as a NIC has it (the rack turns it off): every dtype and op exact
    through incad with both on, and contributions left as GSO buffers.
    INCA_UDP_GSO=0 turns them off, and results stay exact.

    Results are not asserted to arrive in GRO trains: incad's af_packet
    port sends frame by frame and the worker's veth runs its NAPI poll
    after each one, so there is never a second frame to merge with
    (test_udp shows the trains through the loopback)."""
    n = 4
    with Rack('libgso', workers=n) as rack, \
            Incad(rack, INCAD, conf_args=['--jobs', '1', '--nworkers', str(n)]):
        for i in range(n):
            rack.run(i, ['ethtool', '-K', 'eth0', 'gro', 'on'], check=True,
                     capture_output=True)
        out = run_benches(rack, [(1, n, list(range(n)),
                                  ['-d', 'all', '-o', 'all', '-s', SIZES, '-i', '2',
                                   '-x', '1'])], timeout=240,
                          env=dict(os.environ, INCA_UDP_GSO='1'))[1]
        check_sweep(out, n)
        st = out['stats']
        log('offloads on: udp_gso %s, udp_gro %s, stats of rank 0: %s'
            % (out['udp_gso'], out['udp_gro'], st))
        check(out['udp_gso'] and out['udp_gro'], 'offloads not on: %s', out)
        check(st['gso_sends'] > 0, 'no GSO send: %s', st)

        out = run_benches(rack, [(1, n, list(range(n)),
                                  ['-d', 'int32,fp32', '-o', 'sum', '-s', SIZES, '-i', '2',
                                   '-x', '1'])], timeout=240,
                          env=dict(os.environ, INCA_UDP_GSO='0'))[1]
        check_sweep(out, n, dtypes=2, ops=1)
        st = out['stats']
        check(not out['udp_gso'] and not out['udp_gro'], 'INCA_UDP_GSO=0 ignored: %s', out)
        check(st['gso_sends'] == 0 and st['gro_pkts'] == 0, 'offloads used: %s', st)
        log('INCA_UDP_GSO=0: %d results exact, no offload used' % len(out['results']))


def xdp_programs(rack, n):
    """Workers whose eth0 still has an XDP program attached."""
    left = []
    for i in range(n):
        out = rack.run(i, ['ip', '-d', 'link', 'show', 'dev', 'eth0'], check=True,
                       capture_output=True, text=True).stdout
        if 'prog/xdp' in out or 'xdpgeneric' in out:
            left.append(i)
    return left


def test_libinca_xdp():
    """INCA_TRANSPORT=xdp: every dtype and op exact through incad with
    contributions and results through AF_XDP sockets on the workers' veths
    (generic XDP, copy mode), control on UDP; the XDP program is gone from
    the interfaces when the workers end."""
    n = 4
    with Rack('libxdp', workers=n) as rack, \
            Incad(rack, INCAD, conf_args=['--jobs', '1', '--nworkers', str(n)]):
        out = run_benches(rack, [(1, n, list(range(n)),
                                  ['-d', 'all', '-o', 'all', '-s', SIZES, '-i', '2',
                                   '-x', '1'])], timeout=240,
                          env=dict(os.environ, INCA_TRANSPORT='xdp'))[1]
        check_sweep(out, n)
        st = out['stats']
        log('xdp: transport %s, stats of rank 0: %s' % (out['transport'], st))
        check(out['transport'] == 'xdp', 'rank 0 runs %s, not xdp', out['transport'])
        check(st['xdp_tx_pkts'] > 0 and st['xdp_rx_pkts'] > 0,
              'no datagram through the AF_XDP socket: %s', st)
        left = xdp_programs(rack, n)
        check(not left, 'XDP program left on the eth0 of workers %s', left)


def test_libinca_xdp_jumbo():
    """INCA_TRANSPORT=xdp at MTU 9000: full 8 KiB datagrams are longer than
    a UMEM frame holds, so they go on the udp socket and their results
    reach it past the XDP filter, while short ones use the AF_XDP socket;
    every result exact."""
    n = 2
    with Rack('libxjb', workers=n, mtu=9000) as rack, \
            Incad(rack, INCAD, conf_args=['--jobs', '1', '--nworkers', str(n),
                                          '--max-elems', '2048']):
        out = run_benches(rack, [(1, n, list(range(n)),
                                  ['-d', 'int32,fp32', '-o', 'sum', '-s', SIZES, '-i', '2',
                                   '-x', '1', '-U', '9000'])], timeout=120,
                          env=dict(os.environ, INCA_TRANSPORT='xdp'))[1]
        check_sweep(out, n, dtypes=2, ops=1)
        st = out['stats']
        log('xdp at MTU 9000: max_elems %d, stats of rank 0: %s' % (out['max_elems'], st))
        check(out['transport'] == 'xdp' and out['max_elems'] == 2048, 'not xdp with 8 KiB: %s',
              out)
        check(st['xdp_rx_pkts'] > 0, 'nothing through the AF_XDP socket: %s', st)
        check(st['gso_sends'] > 0, 'no full datagram on the udp socket: %s', st)


def test_libinca_xdp_fallback():
    """INCA_TRANSPORT=xdp where it cannot start: rank 0 runs without
    CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF and CAP_SYS_ADMIN, logs one warning
    and runs over udp in the same job as three xdp ranks; every result is
    exact."""
    n = 4
    env = dict(os.environ, INCA_TRANSPORT='xdp')
    args = ['-d', 'int32,fp32', '-o', 'sum', '-s', SIZES, '-i', '2', '-x', '1']
    with Rack('libxfb', workers=n) as rack, \
            Incad(rack, INCAD, conf_args=['--jobs', '1', '--nworkers', str(n)]):
        procs = []
        try:
            for rank in range(n):
                argv = bench_argv(rack, 1, rank, n, args)
                if rank == 0:
                    argv = ['setpriv', '--inh-caps=-all',
                            '--bounding-set=-net_admin,-net_raw,-bpf,-sys_admin,-perfmon',
                            '--'] + argv + ['-v']
                procs.append(rack.popen(rank, argv, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env))
            outs = [p.communicate(timeout=120) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        for rank, p in enumerate(procs):
            check(p.returncode == 0, 'rank %d: exit status %d: %s', rank, p.returncode,
                  outs[rank][1][-1000:])
        warn = [line for line in outs[0][1].splitlines() if 'INCA_TRANSPORT=xdp' in line]
        log('rank 0: %s' % warn)
        check(len(warn) == 1 and 'using udp' in warn[0],
              'rank 0 did not warn once of the fallback: %r', outs[0][1][-2000:])
        out = json.loads(outs[0][0])
        check_sweep(out, n, dtypes=2, ops=1)
        check(out['transport'] == 'udp' and out['stats']['xdp_tx_pkts'] == 0,
              'rank 0 did not fall back to udp: %s', out)


def test_libinca_two_jobs():
    """Two jobs of 4 workers on the same 4 hosts at once: each gets its
    own exact results."""
    n = 4
    with Rack('lib2j', workers=n) as rack, \
            Incad(rack, INCAD, conf_args=['--jobs', '2', '--nworkers', str(n)]):
        args = ['-d', 'int32,fp32', '-o', 'all', '-s', SIZES, '-i', '3', '-x', '1']
        outs = run_benches(rack, [(1, n, list(range(n)), args),
                                  (2, n, list(range(n)), args)], timeout=240)
        for job in (1, 2):
            check_sweep(outs[job], n, dtypes=2)
        log('two jobs: %d + %d results exact'
            % (len(outs[1]['results']), len(outs[2]['results'])))


def test_libinca_wrong_token():
    """A worker with the wrong token is not admitted: it reports an error
    instead of hanging."""
    with Rack('libtok', workers=2) as rack, \
            Incad(rack, INCAD, conf_args=['--jobs', '1', '--nworkers', '2']):
        t0 = time.monotonic()
        r = rack.run(0, [BENCH, '-a', rack.agg_ip, '-j', '1', '-t', '0x1234', '-r', '0',
                         '-n', '2', '-G', '1500', '-s', '4'],
                     capture_output=True, text=True, timeout=60)
        dt = time.monotonic() - t0
        log(r.stderr.strip())
        check(r.returncode == 1, 'exit status %d', r.returncode)
        check('cannot join' in r.stderr, 'no join error: %r', r.stderr)
        check(dt < 30, 'took %.1f s', dt)


def across_restart(tag, n, runs):
    """inca-bench workers of each (job, args) in @runs, n ranks each, in an
    aggregator-mode rack while incad is killed with SIGKILL and started
    again: every worker must exit 0. Their standard outputs, in order."""
    jobs = str(len(runs))
    with Rack(tag, workers=n, mode='aggregator') as rack:
        first = Incad(rack, INCAD, conf_args=['--jobs', jobs, '--nworkers', str(n)])
        first.start()
        first.wait_ready()
        second = None
        procs = []
        env = dict(os.environ, INCA_PROBE_EVERY='16')
        try:
            for k, (job, args) in enumerate(runs):
                args = args + ['--fallback-tcp', '%s:%d' % (rack.worker_ips[0], 7777 + k)]
                for rank in range(n):
                    procs.append(rack.popen(rank, bench_argv(rack, job, rank, n, args),
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            text=True, env=env))
            time.sleep(2.0)
            check(all(p.poll() is None for p in procs), 'a worker ended before the kill')
            log('killing incad')
            first.stop(signal.SIGKILL)
            time.sleep(2.5)
            log('starting incad again')
            second = Incad(rack, INCAD, conf_args=['--jobs', jobs, '--nworkers', str(n)])
            second.start()
            second.wait_ready(node=0)
            outs = []
            for i, p in enumerate(procs):
                so, se = p.communicate(timeout=240)
                if se:
                    log('worker %d stderr: %s' % (i, se.strip()[-2000:]))
                check(p.returncode == 0, 'worker %d: exit status %d', i, p.returncode)
                outs.append(so)
            return outs
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            if second is not None:
                second.__exit__(None, None, None)
            first.__exit__(None, None, None)


def test_libinca_fallback():
    """incad is killed while the workers stream, and started again later:
    every iteration is still exact (through the TCP host allreduce of
    inca-bench, then through incad again after the workers rejoin).
    Aggregator mode, so that workers reach each other without incad."""
    out = json.loads(across_restart('libfb', 4, [(1, [
        '-d', 'int32,fp32,bf16', '-o', 'sum', '-s', '262145', '-i', '300', '-x', '0',
        '--verify-each', '--in-place', '-G', '1000'])])[0])
    for r in out['results']:
        check(r['errors'] == 0, '%s %d bytes: %d wrong', r['dtype'], r['bytes'], r['errors'])
    st = out['stats']
    log('stats of rank 0: %s' % st)
    check(st['recoveries'] >= 1, 'never fell back: %s', st)
    check(st['fallback_collectives'] > 0, 'no collective through the fallback: %s', st)
    check(st['rejoins'] >= 1, 'never returned to incad: %s', st)


def test_libinca_routed():
    """inca_reduce_scatter() and inca_allgather() through incad, which says
    ROUTED: every dtype and op exact, then one large size of each whose
    traffic shows the routing: a reduce-scatter rank receives about S / N
    (its block and header-only BRIEF results), not the allreduce's S, and
    an all-gather rank sends about S / N, not S."""
    n = 4
    big = 1 << 20
    with Rack('librt', workers=n) as rack, \
            Incad(rack, INCAD, conf_args=['--jobs', '1', '--nworkers', str(n)]):
        for coll in ('reduce_scatter', 'allgather'):
            out = run_benches(rack, [(1, n, list(range(n)),
                                      ['-C', coll, '-d', 'all', '-o', 'all', '-s', SIZES,
                                       '-i', '2', '-x', '1'])], timeout=240)[1]
            check_sweep(out, n)
            check(out['stats']['caps'] & 0x20, 'incad did not say ROUTED: %s', out['stats'])
            check(all(r['collective'] == coll for r in out['results']), 'rows of %s', coll)
            log('%s: %d results exact' % (coll, len(out['results'])))
        traffic = {}
        for coll in ('allreduce', 'reduce_scatter', 'allgather'):
            out = run_benches(rack, [(1, n, list(range(n)),
                                      ['-C', coll, '-s', str(big), '-i', '1', '-x', '0'])],
                              timeout=240)[1]
            check(out['results'][0]['errors'] == 0, '%s wrong', coll)
            traffic[coll] = out['stats']
            log('%s of %d bytes: rank 0 sent %d, received %d bytes in all' %
                (coll, big, out['stats']['tx_bytes'], out['stats']['rx_bytes']))
        # Each run also exchanges the figures with small allreduces: compare
        # with the allreduce run's bytes, not with absolute numbers.
        ar = traffic['allreduce']
        check(traffic['reduce_scatter']['rx_bytes'] < ar['rx_bytes'] * 0.5,
              'reduce-scatter received %d bytes, the allreduce %d',
              traffic['reduce_scatter']['rx_bytes'], ar['rx_bytes'])
        check(traffic['allgather']['tx_bytes'] < ar['tx_bytes'] * 0.5,
              'all-gather sent %d bytes, the allreduce %d',
              traffic['allgather']['tx_bytes'], ar['tx_bytes'])


def test_libinca_routed_fallback():
    """incad is killed while the workers run reduce-scatters and
    all-gathers, and started again: every iteration exact, through the TCP
    host allreduce and then incad again."""
    n = 4
    outs = across_restart('librtfb', n, [
        (1 + k, ['-C', coll, '-d', 'int32,fp32', '-o', 'sum', '-s', '262144', '-i', '200',
                 '-x', '0', '--verify-each', '-G', '1000'])
        for k, coll in enumerate(('reduce_scatter', 'allgather'))])
    for k in (0, n):
        out = json.loads(outs[k])
        for r in out['results']:
            check(r['errors'] == 0, '%s %s %d bytes: %d wrong', r['collective'],
                  r['dtype'], r['bytes'], r['errors'])
        st = out['stats']
        log('%s: stats of rank 0: %s' % (out['results'][0]['collective'], st))
        check(st['recoveries'] >= 1, 'never fell back: %s', st)
        check(st['fallback_collectives'] > 0, 'no collective through the fallback: %s',
              st)


TESTS = {name[5:]: fn for name, fn in globals().items() if name.startswith('test_')}


def main():
    global INCAD, BENCH
    ap = argparse.ArgumentParser()
    ap.add_argument('--incad', required=True)
    ap.add_argument('--bench', required=True)
    ap.add_argument('test', choices=sorted(TESTS))
    a = ap.parse_args()
    INCAD = os.path.abspath(a.incad)
    BENCH = os.path.abspath(a.bench)
    return run_test(a.test, TESTS[a.test])


if __name__ == '__main__':
    sys.exit(main())
