#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""The torch.distributed backend 'inca' against a real incad.

A rack of one worker namespace (aggregator mode) holds every process of a
torch.multiprocessing job; incad runs in the agg namespace with one static
job per world size. backend_check.py does the work:

 * for 2 and 4 processes, with incad: every collective of the backend
   equals gloo's bit for bit (backend_check.py says which inputs), the ones
   INCA carries went through incad with no fallback, every reduce in routed
   chunks (only its root received elements), and only the
   delegated ones (fp64, int64 all_reduce) went to gloo; DDP with no hook
   trains as over plain gloo: every rank ends with bit-identical
   parameters, the loss at least halves, parameters within TOL of gloo's
   and the loss of every step within LOSS_TOL;
 * 2 processes, incad killed with SIGKILL after step PAUSE of 40: training
   continues through libinca's gloo fallback, same tolerances;
 * 2 processes, no incad: the collectives (bit for bit) and the training,
   all through the fallback from the start.

TOL: as for the hook (test_torch.py): INCA and gloo add the same fp32
gradients in another order, a few units in the last place per step; 40
steps keep parameter differences below 1e-7, while real errors move them
by 0.08 or more. LOSS_TOL 1e-4 on a loss of 0.2 to 2.3, for the same
reason.

usage: test_backend.py --incad EXE --libinca LIBINCA_SO
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'mpi'))
import rackctl  # noqa: E402
from rackctl import log  # noqa: E402
from test_torch import job_of, setup  # noqa: E402

PYTHON = '/usr/bin/python3'
CHECK = os.path.join(HERE, 'backend_check.py')
TOL = 1e-4
LOSS_TOL = 1e-4
STEPS = 40
PAUSE = 15


# Calls of backend_check.py's ops on each rank that go to gloo: all_reduce
# of int8 and uint8 (SUM).
def gloo_calls(world):
    return 2


# ... and through libinca: all_reduce of fp32, fp16, bf16, fp64 (4 ops
# each), int32 and int64 (3 each), 5 asynchronous ones, 6 broadcasts from
# every root, 6 all_gathers and 6 all_gather_into_tensors, reduce (fp32 SUM
# and AVG, int32 SUM and MAX, fp64 SUM) to every root, 16 reduce_scatters
# (int64's included), 3 barriers.
def inca_calls(world):
    return 22 + 5 + 6 * world + 12 + reduce_calls(world) + 16 + 3


# The reduces through inca_reduce(): with incad, every one in routed chunks.
def reduce_calls(world):
    return 5 * world


def run(rack, args, tmp, world, what, backend='inca', extra_env=None, argv_extra=(),
        during=None):
    import torch
    out = os.path.join(tmp, '%s-%s-%d.pt' % (what, backend, world))
    env = dict(os.environ, INCA_LIB=args.libinca, INCA_AGGREGATOR=rack.agg_ip,
               INCA_JOB=str(job_of(world)), INCA_TOKEN='0x%08x' % rackctl.TOKEN,
               OMP_NUM_THREADS='1', GLOO_SOCKET_IFNAME='lo')
    env.update(extra_env or {})
    argv = rack.argv(0, [PYTHON, CHECK, '--world', str(world), '--what', what,
                         '--backend', backend, '--steps', str(STEPS), '--out', out]
                     + list(argv_extra))
    log('run:', ' '.join(argv))
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    th = None
    if during is not None:
        th = threading.Thread(target=during, daemon=True)
        th.start()
    try:
        text, _ = p.communicate(timeout=600)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if th is not None:
        th.join(60)
    log(text)
    assert p.returncode == 0, 'backend_check %s %s %d failed (exit %d)' % (
        what, backend, world, p.returncode)
    return torch.load(out)


def check_ops(outs, what, through_inca):
    for r, o in enumerate(outs):
        assert not o['errors'], '%s: %s' % (what, o['errors'])
        s0, s1 = o['stats0'], o['stats1']
        inca = s1['inca_calls'] - s0['inca_calls']
        gloo = s1['gloo_calls'] - s0['gloo_calls']
        assert gloo == gloo_calls(len(outs)), '%s: rank %d: %d calls to gloo, want %d' % (
            what, r, gloo, gloo_calls(len(outs)))
        assert inca == inca_calls(len(outs)), '%s: rank %d: %d calls through libinca, ' \
            'want %d' % (what, r, inca, inca_calls(len(outs)))
        coll = s1['collectives'] - s0['collectives']
        assert coll == inca, '%s: rank %d: libinca made %d collectives for %d calls' % (
            what, r, coll, inca)
        fb = s1['fallback_collectives'] - s0['fallback_collectives']
        if through_inca:
            assert s1['in_fallback'] == 0 and fb == 0 and s1['recoveries'] == 0, \
                '%s: rank %d used the fallback: %s' % (what, r, s1)
            # dist.reduce as Reduce in routed chunks: the result went to
            # the root alone, the other ranks' results were BRIEF.
            assert o['reduce_routed'] == reduce_calls(len(outs)), \
                '%s: rank %d: %d of %d reduces routed' % (what, r, o['reduce_routed'],
                                                          reduce_calls(len(outs)))
        else:
            assert s1['in_fallback'] == 1 and fb == coll and s1['chunks'] == 0 and \
                o['reduce_routed'] == 0, '%s: rank %d: %s' % (what, r, s1)
    log('%s: every collective equals gloo\'s; %d through libinca, %d to gloo, per rank'
        % (what, inca, gloo))


def check_train(r, base, what):
    outs = r
    o = outs[0]
    assert all(x['identical'] for x in outs), '%s: ranks ended apart' % what
    loss0, loss1 = o['losses'][0], o['losses'][-1]
    assert loss1 < 0.5 * loss0, '%s: loss %.4f -> %.4f did not halve' % (what, loss0, loss1)
    diff = (o['params'] - base[0]['params']).abs().max().item()
    ldiff = max(abs(a - b) for a, b in zip(o['losses'], base[0]['losses']))
    log('%s: loss %.4f -> %.4f; vs gloo: max |param diff| %.3g (tol %g), max |loss diff| '
        '%.3g (tol %g)' % (what, loss0, loss1, diff, TOL, ldiff, LOSS_TOL))
    assert diff <= TOL and ldiff <= LOSS_TOL, '%s: apart from gloo' % what
    return [x['stats1'] for x in outs]


def main():
    args, worlds, tmp = setup('backend')

    with rackctl.Rack('jtbk', workers=1, mode='aggregator') as rack:
        base = {w: run(rack, args, tmp, w, 'train', 'gloo') for w in worlds}

        incad = rackctl.Incad(rack, args.incad, [(job_of(w), w) for w in worlds])
        with incad:
            for w in worlds:
                check_ops(run(rack, args, tmp, w, 'ops'), 'ops, %d ranks' % w, True)
                what = 'DDP without a hook, %d ranks' % w
                for s in check_train(run(rack, args, tmp, w, 'train'), base[w], what):
                    assert s['in_fallback'] == 0 and s['fallback_collectives'] == 0 and \
                        s['gloo_calls'] == 0 and s['collectives'] >= STEPS, \
                        '%s: rank %d: %s' % (what, s['rank'], s)
                log('%s: PASS, %d collectives through incad per rank'
                    % (what, s['collectives']))

        # incad killed while DDP trains.
        w = worlds[0]
        sync = os.path.join(tmp, 'sync')
        os.makedirs(sync)
        incad = rackctl.Incad(rack, args.incad, [(job_of(w), w)])
        with incad:
            def kill_at_pause():
                end = time.monotonic() + 300
                while not os.path.exists(os.path.join(sync, 'paused')):
                    if time.monotonic() > end:
                        break
                    time.sleep(0.05)
                log('killing incad after step %d' % PAUSE)
                incad.stop(signal.SIGKILL)
                open(os.path.join(sync, 'go'), 'w').close()
            what = 'DDP, incad killed after step %d of %d, %d ranks' % (PAUSE, STEPS, w)
            r = run(rack, args, tmp, w, 'train', extra_env={'INCA_GIVE_UP_MS': '1000'},
                    argv_extra=('--pause-at', str(PAUSE), '--sync', sync),
                    during=kill_at_pause)
        for s in check_train(r, base[w], what):
            assert s['chunks'] > 0 and s['fallback_collectives'] > 0, \
                '%s: rank %d: %s' % (what, s['rank'], s)
        log('%s: PASS, %d chunks through incad, %d collectives through the fallback'
            % (what, s['chunks'], s['fallback_collectives']))

        # No incad from the start.
        env = {'INCA_GIVE_UP_MS': '1000'}
        check_ops(run(rack, args, tmp, w, 'ops', extra_env=env),
                  'ops without incad, %d ranks' % w, False)
        what = 'DDP without incad, %d ranks' % w
        for s in check_train(run(rack, args, tmp, w, 'train', extra_env=env), base[w], what):
            assert s['in_fallback'] == 1 and s['chunks'] == 0 and \
                s['fallback_collectives'] == s['collectives'] > 0, s
        log('%s: PASS through the gloo fallback' % what)
    shutil.rmtree(tmp, ignore_errors=True)
    print('test_backend: PASS')


if __name__ == '__main__':
    main()
