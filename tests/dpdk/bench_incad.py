#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Packet rate of incad against dpdk-testpmd io forwarding, same vdev.

Both read the same pcap of contributions in a loop (net_pcap infinite_rx,
transmit dropped) on the same lcores, one after the other. The pcap holds
JOINs and 2 rounds of the job's pool for N workers; after the first pass
every contribution lands on a COMPLETE set: the last-used set of a slot
answers with a replay (one RESULT built, checksummed and sent per
contribution, as in steady-state aggregation), the other set drops it as
STALE. Prints figures; asserts nothing (meson benchmark, or run by hand):

    bench_incad.py INCAD [--seconds S] [--lcores 0-1] [--workers N]
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

from incadtest import base_config, contrib, join, telemetry  # noqa: E402
from scapy.all import wrpcap  # noqa: E402


def make_pcap(path, nworkers, elems, pool=64):
    frames = [join(5, r, nworkers, pool_size=pool) for r in range(nworkers)]
    for k in range(2 * pool):
        for r in range(nworkers):
            frames.append(contrib(5, r, list(range(elems)), slot=k % pool, seq=k,
                                  flags=(k // pool) & 1))
    wrpcap(path, frames)
    return len(bytes(frames[-1]))


def vdev(pcap):
    return 'net_pcap0,rx_pcap=%s,infinite_rx=1' % pcap


def run_testpmd(pcap, lcores, seconds):
    exe = shutil.which('dpdk-testpmd')
    if exe is None:
        return None
    prefix = 'incadbench_tp%d' % os.getpid()
    cmd = [exe, '-l', lcores, '--no-huge', '-m', '512', '--no-pci', '--file-prefix', prefix,
           '--log-level', 'lib.eal:warning', '--vdev', vdev(pcap), '--',
           '--forward-mode=io', '--port-topology=loop', '--stats-period', '1',
           '--auto-start', '--total-num-mbufs=16384', '--mbuf-size=2176']
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(seconds + 2)
    p.send_signal(signal.SIGINT)
    out = p.communicate(timeout=20)[0]
    shutil.rmtree('/var/run/dpdk/' + prefix, ignore_errors=True)
    rates = [int(line.split()[1]) for line in out.splitlines()
             if line.strip().startswith('Rx-pps:')]
    # The first periods include start-up; keep the last few.
    rates = rates[2:] or rates
    return sum(rates) / len(rates) / 1e6 if rates else None


def run_incad(incad, pcap, lcores, seconds, workers):
    prefix = 'incadbench%d' % os.getpid()
    tmp = tempfile.mkdtemp(prefix='incad-bench-')
    conf = os.path.join(tmp, 'incad.conf')
    with open(conf, 'w') as f:
        f.write(base_config(workers=workers))
    cmd = [incad, '-l', lcores, '--no-huge', '-m', '512', '--no-pci', '--file-prefix', prefix,
           '--log-level', 'lib.eal:warning', '--vdev', vdev(pcap), '--', '-c', conf,
           '--idle', 'poll']
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1.5)
        a, t0 = telemetry(prefix, '/incad/ports'), time.monotonic()
        time.sleep(seconds)
        b, t1 = telemetry(prefix, '/incad/ports'), time.monotonic()
    finally:
        p.send_signal(signal.SIGTERM)
        out = p.communicate(timeout=20)[0]
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree('/var/run/dpdk/' + prefix, ignore_errors=True)
    if not a or not b:
        sys.stderr.write(out)
        return None, None
    dt = t1 - t0
    return ((b['p0']['rx'] - a['p0']['rx']) / dt / 1e6,
            (b['p0']['tx'] - a['p0']['tx']) / dt / 1e6)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('incad')
    ap.add_argument('--seconds', type=float, default=3)
    ap.add_argument('--lcores', default='0-1')
    ap.add_argument('--workers', type=int, default=1, help='incad dataplane lcores')
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix='incad-bench-')
    try:
        for nworkers, elems in ((4, 64), (2, 256)):
            pcap = os.path.join(tmp, 'c%d_%d.pcap' % (nworkers, elems))
            size = make_pcap(pcap, nworkers, elems)
            tp = run_testpmd(pcap, args.lcores, args.seconds)
            rx, tx = run_incad(args.incad, pcap, args.lcores, args.seconds, args.workers)
            line = ('%d int32 (%d-byte frames), %d workers: incad rx %.2f Mpps (tx %.2f)'
                    % (elems, size, nworkers, rx or 0, tx or 0))
            if tp:
                line += ', testpmd io %.2f Mpps, ratio %.2f' % (tp, (rx or 0) / tp)
            print(line, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
