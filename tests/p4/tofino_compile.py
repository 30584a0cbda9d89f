#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Compile p4-reference/inca.p4 for Tofino-1 and check that it fits.

Runs p4c's Tofino back end (p4c-barefoot, built by tools/p4-toolchain
--tofino) on the TNA program, reads the stages the compiler placed the
tables in from the assembly it wrote (OUT/<pipe>/<program>.bfa: "stage N
ingress:" / "stage N egress:"), and fails unless every table is in stages
0..MAX-1 (Tofino-1: 12 MAU stages, shared by ingress and egress). With -g
the compiler also writes OUT/<pipe>/logs/resources.json, from which the
stateful ALUs, SRAM and map RAM blocks, TCAM blocks, hash distribution
units, logical tables and PHV containers used are printed per stage. With
--bfas, the assembler must accept the output too.

Usage: tofino_compile.py --p4c-barefoot PATH --program inca.p4 --out DIR
       [--bfas PATH] [--max-stages 12] [--timeout SECONDS]
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time


def bfa_stages(path):
    """{gress: sorted stage numbers} of the tables in a .bfa file."""
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"stage (\d+) (ingress|egress|ghost):", line)
            if m:
                out.setdefault(m.group(2), set()).add(int(m.group(1)))
    return {g: sorted(s) for g, s in out.items()}


def count(stage, section, items):
    """Entries of one resource list of a resources.json stage."""
    v = stage.get(section, {})
    return len(v.get(items, [])) if isinstance(v, dict) else 0


def report_resources(path):
    """Print what resources.json says the program uses, per stage."""
    with open(path) as f:
        res = json.load(f)['resources']
    mau = res.get('mau', {})
    cols = (('SALU', 'meter_alus', 'meters'), ('SRAM', 'rams', 'srams'),
            ('mapRAM', 'map_rams', 'maprams'), ('TCAM', 'tcams', 'tcams'),
            ('hashdist', 'hash_distribution_units', 'units'),
            ('ltables', 'logical_tables', 'ids'), ('gateways', 'gateways', 'gateways'))
    print('resources.json (%s): %s stages available' % (path, mau.get('nStages')))
    print('stage ' + ' '.join('%8s' % c[0] for c in cols))
    total = [0] * len(cols)
    for st in sorted(mau.get('mau_stages', []), key=lambda s: s['stage_number']):
        row = [count(st, sec, items) for _, sec, items in cols]
        total = [a + b for a, b in zip(total, row)]
        print('%5d ' % st['stage_number'] + ' '.join('%8d' % n for n in row))
    print('total ' + ' '.join('%8d' % n for n in total))

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--p4c-barefoot', required=True)
    ap.add_argument('--bfas')
    ap.add_argument('--program', required=True)
    ap.add_argument('--out', required=True, help='output directory (emptied first)')
    ap.add_argument('--max-stages', type=int, default=12)
    ap.add_argument('--timeout', type=int, default=3000,
                    help='seconds the compiler may take (35 s on 2 cores for inca.p4 '
                    'as it is; the 17-stage program of stop 22 took 10 min)')
    args = ap.parse_args()

    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    cmd = [args.p4c_barefoot, '--target', 'tofino', '--arch', 'tna', '-g',
           '-o', args.out, args.program]
    print(' '.join(cmd), flush=True)
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print('FAIL: p4c-barefoot did not finish in %d s' % args.timeout)
        return 1
    took = time.monotonic() - t0
    sys.stdout.write(r.stdout.decode(errors='replace')[-20000:])
    print('p4c-barefoot exited %d after %.0f s' % (r.returncode, took))
    bfas = glob.glob(os.path.join(args.out, '**', '*.bfa'), recursive=True)
    if r.returncode != 0 or not bfas:
        print('FAIL: p4c-barefoot did not compile %s (%d .bfa files)'
              % (args.program, len(bfas)))
        return 1

    failures = 0
    for bfa in bfas:
        stages = bfa_stages(bfa)
        for gress, st in sorted(stages.items()):
            print('%s: %s in %d stages (%s)' % (os.path.relpath(bfa, args.out), gress,
                                                 max(st) + 1, ' '.join(map(str, st))))
        top = max((max(s) for s in stages.values()), default=-1)
        if top < 0:
            print('FAIL: %s places no table' % bfa)
            failures += 1
        elif top >= args.max_stages:
            print('FAIL: %s uses stage %d: %d stages, Tofino-1 has %d'
                  % (bfa, top, top + 1, args.max_stages))
            failures += 1
    for res in glob.glob(os.path.join(args.out, '**', 'logs', 'resources.json'),
                         recursive=True):
        try:
            report_resources(res)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print('resources.json not summarised (%s)' % e)

    if args.bfas and not failures:
        for bfa in bfas:
            acmd = [args.bfas, '-o', os.path.dirname(bfa), bfa]
            print(' '.join(acmd), flush=True)
            try:
                a = subprocess.run(acmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   timeout=args.timeout)
            except subprocess.TimeoutExpired:
                print('FAIL: bfas did not finish in %d s' % args.timeout)
                return 1
            sys.stdout.write(a.stdout.decode(errors='replace')[-5000:])
            if a.returncode != 0:
                print('FAIL: bfas refused %s (exit %d)' % (bfa, a.returncode))
                failures += 1
    print('%d passed, %d failed' % (0 if failures else 1, 1 if failures else 0))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
