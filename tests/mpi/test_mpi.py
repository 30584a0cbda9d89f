#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""MPI collectives through libinca-mpi against a real incad.

A rack of one worker namespace (aggregator mode) holds all ranks of an
mpirun job; libinca tells them apart by UDP port. incad runs in the agg
namespace with a static job of NP workers. mpi_check (plain MPI, comparing
every result with PMPI) runs under LD_PRELOAD=libinca-mpi.so:

 1. with incad: every result right, every eligible call went through
    libinca, on WORLD and on the communicators made from it (dup, split,
    re-created after MPI_Comm_free), none through its fallback, every
    MPI_Reduce in routed chunks (only its root received elements), and
    incad's counters of the job show the chunks the ranks completed: the
    test fails if the interposer silently used PMPI; the derived
    communicators' jobs appear on incad and are gone after the run;
 2. with incad stopped: every result right, through libinca's fallback
    (PMPI);
 3. with incad killed in the middle of the run: every result right, part
    through incad and the rest through the fallback.

usage: test_mpi.py --incad EXE --preload LIBINCA_MPI --check MPI_CHECK [--np N]
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rackctl  # noqa: E402
from rackctl import log  # noqa: E402

JOB = 7


def mpirun_argv(args, env):
    argv = ['mpirun', '--allow-run-as-root', '--oversubscribe', '-np', str(args.np),
            # One host: the TCP BTL over the namespace's interface; yield
            # when idle, since the ranks share two cores with incad.
            '--mca', 'btl', 'self,tcp', '--mca', 'btl_tcp_if_include', 'eth0',
            '--mca', 'oob_tcp_if_include', 'eth0', '--mca', 'mpi_yield_when_idle', '1']
    for k, v in env.items():
        argv += ['-x', '%s=%s' % (k, v)]
    return argv + [args.check]


def interposer_env(rack, args, stats):
    """The environment of ranks under the interposer on job JOB of @rack's
    incad, writing their statistics to @stats (removed first)."""
    if os.path.exists(stats):
        os.unlink(stats)
    return {
        'LD_PRELOAD': args.preload,
        'INCA_AGGREGATOR': rack.agg_ip,
        'INCA_JOB': str(JOB),
        'INCA_TOKEN': '0x%08x' % rackctl.TOKEN,
        'INCA_MPI_STATS': stats,
    }


def run_check(rack, args, stats, extra_env=None, during=None, timeout=600):
    """Run mpi_check in worker 0 under the interposer; return (expect, stats)."""
    env = interposer_env(rack, args, stats)
    env.update(extra_env or {})
    argv = rack.argv(0, mpirun_argv(args, env))
    log('run:', ' '.join(argv))
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        if during is not None:
            during(p)
        out, _ = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    log(out)
    assert p.returncode == 0, 'mpi_check failed (exit %d)' % p.returncode
    assert 'mpi_check: %d ranks: PASS' % args.np in out, 'mpi_check did not pass'
    expect = None
    for line in out.splitlines():
        if line.startswith('expect '):
            f = line.split()
            expect = {k: int(v) for k, v in zip(f[1::2], f[2::2])}
    assert expect is not None, 'mpi_check printed no "expect" line'
    with open(stats) as f:
        st = rackctl.parse_stats(f.read(), 'inca-mpi')
    assert sorted(st) == list(range(args.np)), 'stats of ranks %s' % sorted(st)
    return expect, st


KINDS = ('allreduce', 'iallreduce', 'bcast', 'barrier', 'reduce', 'reduce_scatter',
         'allgather', 'ibcast', 'ibarrier')


def check_routed(expect, st):
    """Every eligible call went through libinca (to incad or its fallback),
    on WORLD and on the communicators made from it."""
    for r, s in st.items():
        for k in KINDS:
            assert s[k + '_inca'] == expect[k], \
                'rank %d: %s_inca %d, mpi_check made %d' % (r, k, s[k + '_inca'], expect[k])
        assert s['bytes_inca'] == expect['bytes'], \
            'rank %d: bytes_inca %d, want %d' % (r, s['bytes_inca'], expect['bytes'])
        assert s['errors'] == 0
        # The dup, the halves and the re-created communicators had INCA
        # jobs of their own; the one beyond INCA_MPI_MAX_COMMS had not;
        # every INCA communicator was destroyed (MPI_Comm_free, or
        # MPI_Finalize for the dup).
        assert s['derived_inca'] == expect['derived'] and expect['derived'] > 0, \
            'rank %d: derived_inca %d, want %d' % (r, s['derived_inca'], expect['derived'])
        assert s['comms_inca'] == expect['comms_inca'], \
            'rank %d: comms_inca %d, want %d' % (r, s['comms_inca'], expect['comms_inca'])
        assert s['comms_pmpi'] == expect['comms_pmpi'], \
            'rank %d: comms_pmpi %d, want %d' % (r, s['comms_pmpi'], expect['comms_pmpi'])
        assert s['comms_freed'] == s['comms_inca']
        # The calls the interposer must leave alone: a double sum and a
        # short product on every communicator under test.
        assert s['passed'] >= 2, 'rank %d: passed %d' % (r, s['passed'])


def libinca_calls(expect):
    """The collectives the interposer handed to libinca: one each."""
    return sum(expect[k] for k in KINDS)


def setup():
    """The command line of the mpi suite's tests (--incad, --preload,
    --check, --np), after their prerequisites: root, mpirun and the built
    programs, else SKIP (exit 77) with the reason."""
    ap = argparse.ArgumentParser()
    ap.add_argument('--incad', required=True)
    ap.add_argument('--preload', required=True)
    ap.add_argument('--check', required=True)
    ap.add_argument('--np', type=int, default=4)
    args = ap.parse_args()
    rackctl.check_root()
    rackctl.install_signal_handlers()
    if shutil.which('mpirun') is None:
        rackctl.skip('mpirun not found (apt-get install openmpi-bin)')
    for f in (args.incad, args.preload, args.check):
        if not os.path.exists(f):
            rackctl.skip('%s not built' % f)
    return args


def main():
    args = setup()
    tmp = tempfile.mkdtemp(prefix='inca-mpi-test-')
    stats = os.path.join(tmp, 'stats')

    with rackctl.Rack('jmpi', workers=1, mode='aggregator') as rack:
        incad = rackctl.Incad(rack, args.incad, [(JOB, args.np)])
        with incad:
            # 1. Through incad. Meanwhile, watch the jobs incad has: the
            # derived communicators' jobs must appear, and all be gone
            # (freed, LEAVE) once the run ends.
            seen = set()

            def watch_jobs(p):
                while p.poll() is None:
                    try:
                        seen.update(int(j) for j in incad.tel.query('/incad/jobs'))
                    except (OSError, ValueError, TypeError):
                        pass
                    time.sleep(0.05)
            expect, st = run_check(rack, args, stats, during=watch_jobs)
            check_routed(expect, st)
            log('rank 0 statistics: %s' % ' '.join('%s %s' % kv for kv in st[0].items()))
            left = sorted(int(j) for j in incad.tel.query('/incad/jobs'))
            log('incad jobs seen during the run: %s; left after it: %s' % (sorted(seen), left))
            assert left == [JOB], 'jobs left on incad after the run: %s' % left
            assert len(seen - {JOB}) >= 3, 'derived jobs seen on incad: %s' % (seen - {JOB})
            for r, s in st.items():
                assert s['in_fallback'] == 0 and s['fallback_collectives'] == 0 and \
                    s['recoveries'] == 0, 'rank %d used the fallback: %s' % (r, s)
                assert s['chunks'] > 0 and s['tx_bytes'] > expect['bytes'], \
                    'rank %d: chunks %d tx_bytes %d' % (r, s['chunks'], s['tx_bytes'])
                assert s['chunks'] == st[0]['chunks']
                assert s['world_chunks'] == st[0]['world_chunks']
                # MPI_Reduce as Reduce in routed chunks: every call's
                # result went to its root alone, the others' were BRIEF.
                assert s['reduce_routed'] == expect['reduce'] > 0, \
                    'rank %d: %d of %d MPI_Reduce calls routed' % (r, s['reduce_routed'],
                                                                   expect['reduce'])
            job = incad.job(JOB)
            log('incad job %d: %s' % (JOB, job))
            # At least every chunk the ranks completed (libinca adds a
            # closing round of its own before leaving).
            assert job['COMPLETE'] >= st[0]['world_chunks'], \
                'incad completed %d sets, ranks completed %d chunks' % (job['COMPLETE'],
                                                                       st[0]['world_chunks'])
            assert job['CONTRIB'] == args.np * job['COMPLETE']
            log('run 1 (incad): PASS, %d sets completed by incad' % job['COMPLETE'])

        # 2. incad stopped: the same program through libinca's fallback.
        expect, st = run_check(rack, args, stats, {'INCA_GIVE_UP_MS': '1000'})
        check_routed(expect, st)
        for r, s in st.items():
            assert s['chunks'] == 0 and s['in_fallback'] == 1, 'rank %d: %s' % (r, s)
            assert s['fallback_collectives'] == libinca_calls(expect), 'rank %d: %s' % (r, s)
            assert s['reduce_routed'] == 0 and s['routed_chunks'] == 0, 'rank %d: %s' % (r, s)
        log('run 2 (no incad): PASS through the PMPI fallback')

        # 3. incad killed once the run is under way.
        incad = rackctl.Incad(rack, args.incad, [(JOB, args.np)])
        with incad:
            def kill_midway(p):
                end = time.monotonic() + 120
                while time.monotonic() < end and p.poll() is None:
                    try:
                        if incad.job(JOB)['COMPLETE'] >= 2000:
                            break
                    except (OSError, ValueError, KeyError):
                        pass
                    time.sleep(0.05)
                log('killing incad')
                incad.stop(signal.SIGKILL)
            expect, st = run_check(rack, args, stats, {'INCA_GIVE_UP_MS': '1000'},
                                   during=kill_midway)
        check_routed(expect, st)
        for r, s in st.items():
            assert s['chunks'] >= 1000 and s['recoveries'] >= 1 and \
                s['fallback_collectives'] > 0, 'rank %d: %s' % (r, s)
        log('run 3 (incad killed mid-run): PASS, %d chunks through incad before the kill'
            % st[0]['chunks'])
    shutil.rmtree(tmp, ignore_errors=True)
    print('test_mpi: PASS')


if __name__ == '__main__':
    main()
