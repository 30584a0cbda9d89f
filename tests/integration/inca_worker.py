# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""One INCA worker, run inside a worker namespace by the integration tests.

Joins a job on the aggregator, runs the allreduces it is given in order and
prints one JSON object on stdout: the JOIN_ACK, the results (raw element bit
patterns per collective) and its retransmission counts. Each collective is
"dtype:op:count:seed"; the worker's data is inca_proto.gen_data(dtype, op,
rank, count, seed), which the test recomputes to form its expectation.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inca_proto as P  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--agg', required=True)
    ap.add_argument('--port', type=int, default=P.UDP_PORT)
    ap.add_argument('--job', type=int, required=True)
    ap.add_argument('--rank', type=int, required=True)
    ap.add_argument('--token', type=lambda s: int(s, 0), required=True)
    ap.add_argument('--nworkers', type=int, required=True)
    ap.add_argument('--pool-size', type=int, default=0)
    ap.add_argument('--window', type=int, default=0)
    ap.add_argument('--chunk', type=int, default=0)
    ap.add_argument('--leave', action='store_true')
    ap.add_argument('--wait-file', help='after joining, create FILE.joined.RANK and '
                    'wait for FILE to exist (heartbeating) before the collectives')
    ap.add_argument('--deadline', type=float, default=60.0)
    ap.add_argument('coll', nargs='*')
    a = ap.parse_args()

    w = P.Worker(a.agg, a.job, a.rank, a.token, a.nworkers, port=a.port,
                 pool_size=a.pool_size, window=a.window)
    out = {'rank': a.rank, 'results': {}}
    try:
        out['ack'] = w.join()
        if a.wait_file:
            open('%s.joined.%d' % (a.wait_file, a.rank), 'w').close()
            hb = max(out['ack']['hb_ms'], 100) / 1000.0
            end = time.monotonic() + a.deadline
            while not os.path.exists(a.wait_file):
                if time.monotonic() > end:
                    raise TimeoutError('%s never appeared' % a.wait_file)
                w.heartbeat()
                time.sleep(min(hb / 2, 0.1))
        for spec in a.coll:
            d, op, n, seed = spec.split(':')
            data = P.gen_data(d, op, a.rank, int(n), int(seed))
            out['results'][spec] = w.allreduce(data, P.dtype_by_name(d), P.op_by_name(op),
                                               chunk=a.chunk or None, deadline=a.deadline)
        if a.leave:
            w.leave()
    except (P.Nacked, TimeoutError, AssertionError) as e:
        out['error'] = '%s: %s' % (type(e).__name__, e)
    out['retx'] = w.retx
    out['replays'] = w.replays
    w.close()
    json.dump(out, sys.stdout)
    return 1 if 'error' in out else 0


if __name__ == '__main__':
    sys.exit(main())
