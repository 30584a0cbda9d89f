#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""The completion-time model of docs/scale.md: an allreduce through an
aggregation tree as a pipeline of chunks over a window.

    scale_model.py predict
    scale_model.py check [--tree DIR] [--stripes DIR] [--window W] [--latency-us L]

predict: the model's times for 512 and 4096 ranks on the fat-tree that
docs/scale.md states, with switches (Tofino) and with incad hosts as the
aggregators.

check: the model against tools/bench/bench_allreduce.sh's summary.csv of
the two-rack tree (--racks 2) and of the striping run (--stripes 1,2,3):
the one-chunk time L is the smallest measured size's time when that is one
chunk (the only parameter fitted), or --latency-us; everything else comes
from the set-up's link rates; the predicted time of every size of at least
one window is printed beside the measured one with the error.
"""

import argparse
import csv
import math
import os
import sys

HDR = 74   # Ethernet 14 + IPv4 20 + UDP 8 + INCA header 32: frame = payload + 74


def frame(p):
    return p + HDR


def chunk_time(levels, p, stripes=1):
    """tau: the service time per chunk of one stripe's stream at the
    slowest resource. levels: dicts from the workers up, each with
    'fanin' (children per aggregator), 'link' (bit/s of each child's link
    to it), 'port' (bit/s of the aggregator's own port, None when each
    child has its own port, as in a switch), 'pps' (the aggregator's
    packet rate, None when it runs at line rate), 'share' (streams sharing
    a child link; default 1, the tree's own)."""
    f8 = 8.0 * frame(p)
    tau = 0.0
    for i, lv in enumerate(levels):
        share = lv.get('share', 1) * (stripes if i == 0 else 1)
        tau = max(tau, share * f8 / lv['link'])
        if lv.get('port'):
            # The children's streams share the aggregator's port (each
            # stripe has its own aggregators).
            tau = max(tau, lv['fanin'] * f8 / lv['port'])
        if lv.get('pps'):
            # k contributions in, k results out, and a leaf's partial up
            # and the parent's result in.
            root = i == len(levels) - 1
            tau = max(tau, (2 * lv['fanin'] + (0 if root else 2)) / lv['pps'])
    return tau


def completion(s, p, w, lat, levels, stripes=1, host=0.0):
    """T(S) = L + (n - 1) max(tau, L_ss / W): the first chunk's round trip,
    then one chunk per tau, unless the window of W chunks runs dry within
    a loaded round trip L_ss (L plus every link's serialisation, both
    ways)."""
    n = math.ceil(s / stripes / p)
    tau = max(chunk_time(levels, p, stripes), host)
    lss = lat + 2 * sum(8.0 * frame(p) / lv['link'] for lv in levels)
    return lat + (n - 1) * max(tau, lss / w), tau, lss


def fat_tree(ranks, kind, stripes=1):
    """The fat-tree of docs/scale.md: 32 hosts per rack on 100 Gbit/s,
    16 racks per pod (512 hosts), 8 pods (4096); one level of the tree per
    level of the fabric the job spans."""
    g = 100e9
    if kind == 'switch':
        # Tofino at every level, switch mode: each child its own port,
        # aggregation at line rate (256-element payloads).
        mk = lambda k: {'fanin': k, 'link': g}   # noqa: E731
        p = 1024
    else:
        # incad on a host per rack / pod / core, aggregator mode: its
        # children share its 2 x 100 Gbit/s, 8 lcores of 4.1 Mpps (the
        # per-CPU-second rate measured here, docs/incad.md).
        mk = lambda k: {'fanin': k, 'link': g, 'port': 200e9, 'pps': 8 * 4.1e6}  # noqa: E731
        p = 8192
    levels = [mk(32), mk(16)] + ([mk(8)] if ranks > 512 else [])
    return p, levels


def predict():
    h0, h = 5e-6, 1e-6   # host stack per end (kernel bypass), per switch hop
    print('# fat-tree: 32 hosts x 100 Gbit/s per rack, ToR 8 x 100G up (4:1), 16 racks per '
          'pod, 8 pods')
    print('# %5s %-8s %3s %4s %8s %9s %9s %10s %8s %12s' % (
        'ranks', 'aggs', 'K', 'W', 'S', 'L_us', 'tau_ns', 'T_ms', 'x S/B', 'ring_ms'))
    for ranks in (512, 4096):
        for kind, k in (('switch', 1), ('incad', 1), ('incad', 16)):
            p, levels = fat_tree(ranks, kind)
            # Links up from a worker to the root: one per level when the
            # switches aggregate; through a switch to each incad host
            # and back out, two, plus 5 us of incad per level.
            if kind == 'switch':
                lat = 2 * h0 + 2 * len(levels) * h
            else:
                lat = 2 * h0 + 2 * len(levels) * (2 * h + 5e-6)
            for w in (32, 256):
                for s in (64 << 20, 1 << 30):
                    t, tau, _ = completion(s, p, w, lat, levels, stripes=k)
                    sb = s * 8 / 100e9
                    # Open MPI's ring on the same fabric, unhindered by
                    # the 4:1 uplinks (a ring crosses each once): the
                    # bandwidth bound plus 2(N-1) steps of alpha = 10 us.
                    ring = 2 * (ranks - 1) / ranks * sb + 2 * (ranks - 1) * 10e-6
                    print('  %5d %-8s %3d %4d %8s %9.1f %9.1f %10.2f %8.2f %12.2f' % (
                        ranks, kind, k, w, '%dMiB' % (s >> 20), lat * 1e6, tau * 1e9,
                        t * 1e3, t / sb, ring * 1e3))


def read_summary(d):
    rows = []
    with open(os.path.join(d, 'summary.csv')) as f:
        for r in csv.DictReader(f):
            rows.append(r)
    return rows


def check(tree, stripes, w, lat_us):
    """Prints predicted against measured; returns the largest |error|."""
    worst = 0.0
    if tree:
        rows = [r for r in read_summary(tree) if r['system'] == 'inca']
        n = int(rows[0]['workers'])
        mtu = int(rows[0]['mtu'])
        p = min(2048, (mtu - 60) // 4) * 4
        b = 500e6
        # Two racks of n/2: worker links and uplinks at 500 Mbit/s, the
        # aggregators' links unshaped (their packet rate is not the
        # limit: 10 packets per chunk against 4.1 Mpps).
        levels = [{'fanin': n // 2, 'link': b, 'pps': 4.1e6}, {'fanin': 2, 'link': b,
                                                                'pps': 4.1e6}]
        worst = max(worst, compare('tree (a)', rows, p, w, levels, 1, lat_us))
    if stripes:
        rows = [r for r in read_summary(stripes) if r['system'].startswith('inca-s')]
        n = int(rows[0]['workers'])
        mtu = int(rows[0]['mtu'])
        p = min(2048, (mtu - 60) // 4) * 4
        for k in sorted({int(r['system'][6:]) for r in rows}):
            rk = [r for r in rows if r['system'] == 'inca-s%d' % k]
            # One level: n workers on 1 Gbit/s links, each aggregator
            # behind its own 250 Mbit/s link (bench command in
            # docs/benchmarks.md).
            levels = [{'fanin': n, 'link': 1e9, 'port': 250e6, 'pps': 4.1e6}]
            worst = max(worst, compare('stripes (b), K=%d' % k, rk, p, w, levels, k, lat_us))
    return worst


def compare(what, rows, p, w, levels, k, lat_us):
    rows = sorted(rows, key=lambda r: int(r['bytes']))
    if int(rows[0]['bytes']) <= p * k:
        # L: the smallest size's measured time, one chunk (or less) per
        # stripe; that size is not predicted.
        lat = float(rows[0]['median_us']) * 1e-6
        how = 'measured at %s bytes' % rows[0]['bytes']
        rows = rows[1:]
    elif lat_us is not None:
        lat = lat_us * 1e-6
        how = 'given'
    else:
        sys.exit('%s: no one-chunk size measured: give --latency-us' % what)
    print('# %s: L = %.0f us (%s), W = %d, payload %d' % (what, lat * 1e6, how, w, p))
    print('# %10s %12s %12s %8s' % ('bytes', 'measured_us', 'model_us', 'error'))
    worst = 0.0
    for r in rows:
        s = int(r['bytes'])
        if s < w * p * k:
            continue   # below one window the pipeline is not in steady state
        t, _, _ = completion(s, p, w, lat, levels, stripes=k)
        m = float(r['median_us']) * 1e-6
        err = (t - m) / m
        worst = max(worst, abs(err))
        print('  %10d %12.0f %12.0f %+7.1f%%' % (s, m * 1e6, t * 1e6, 100 * err))
    return worst


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest='cmd', required=True)
    sub.add_parser('predict')
    c = sub.add_parser('check')
    c.add_argument('--tree')
    c.add_argument('--stripes')
    c.add_argument('--window', type=int, default=32)
    c.add_argument('--latency-us', type=float)
    a = ap.parse_args()
    if a.cmd == 'predict':
        predict()
        return 0
    worst = check(a.tree, a.stripes, a.window, a.latency_us)
    print('largest |error|: %.1f%%' % (100 * worst))
    return 0


if __name__ == '__main__':
    sys.exit(main())
