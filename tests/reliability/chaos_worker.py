#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""tests/integration/inca_worker.py with a sender that misbehaves the way a
network can: it duplicates datagrams, swaps neighbours (reordering) and
now and then sends again a contribution it sent long ago, after its slot
may have been reused through both shadow sets (a very late copy). The
seed makes a run repeatable.

    chaos_worker.py --chaos-seed S [--dup P] [--swap P] [--stale P] <inca_worker options>

Prints inca_worker's JSON with a "chaos" object of what was done.
"""

import collections
import os
import random
import sys

SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
sys.path.insert(0, os.path.join(SRC, 'tests', 'integration'))

import inca_proto as P  # noqa: E402
import inca_worker  # noqa: E402


def take(argv, name, conv):
    if name in argv:
        i = argv.index(name)
        v = conv(argv[i + 1])
        del argv[i:i + 2]
        return v
    return None


class ChaosWorker(P.Worker):
    opts = {}
    stats = collections.Counter()

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        o = self.opts
        self.rnd = random.Random('%s-%d' % (o['seed'], self.rank))
        self.history = collections.deque(maxlen=256)
        self.held = None

    def _raw(self, data):
        super()._send(data)

    def _send(self, data):
        o, st = self.opts, self.stats
        if data[1] != P.MSG['CONTRIB']:
            # Control messages go out as they are (a JOIN or HEARTBEAT
            # held back would only slow the test down).
            self._flush()
            self._raw(data)
            return
        self.history.append(data)
        if self.held is None and self.rnd.random() < o['swap']:
            self.held = data
            st['held'] += 1
            return
        self._raw(data)
        if self.rnd.random() < o['dup']:
            self._raw(data)
            st['dup'] += 1
        self._flush()
        if len(self.history) > 40 and self.rnd.random() < o['stale']:
            # A copy from 33 to 256 datagrams ago, further back than the
            # two shadow sets of a 16-slot pool: its set has been reused
            # (a STALE drop) or still holds it complete (a replay).
            old = self.history[self.rnd.randrange(0, len(self.history) - 32)]
            self._raw(old)
            st['stale'] += 1

    def _flush(self):
        if self.held is not None:
            self._raw(self.held)
            self.held = None

    def _recv(self, timeout):
        # Nothing stays held while the worker waits for answers.
        self._flush()
        return super()._recv(timeout)


def main():
    argv = sys.argv[1:]
    ChaosWorker.opts = dict(seed=take(argv, '--chaos-seed', int) or 1,
                            dup=take(argv, '--dup', float) or 0.0,
                            swap=take(argv, '--swap', float) or 0.0,
                            stale=take(argv, '--stale', float) or 0.0)
    P.Worker = ChaosWorker
    sys.argv = [sys.argv[0]] + argv
    # inca_worker prints its JSON and returns; the chaos figures go on
    # stderr, one JSON line, for the test to read.
    rc = inca_worker.main()
    sys.stderr.write('CHAOS %s\n' % dict(ChaosWorker.stats))
    return rc


if __name__ == '__main__':
    sys.exit(main())
