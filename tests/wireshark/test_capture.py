#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""The dissector on real traffic: incad in the emulated rack (tools/rack),
two python workers (tests/integration/inca_worker.py), dumpcap on worker 0's
interface during HELLO, JOIN, four small allreduces and LEAVE.

    test_capture.py --incad PATH --lua PATH

tshark with tools/wireshark/inca.lua must decode every datagram to or from
the INCA port as INCA, flag none as malformed, and show the fields the
workers sent and received: each chunk's header where the worker mapping
(decisions.md, "Slots") puts it, the first elements of every CONTRIB equal
to the worker's input, and of every RESULT equal to the exact reduction.
JOIN_ACK's body must equal what the worker parsed from it.

Needs root (namespaces), dumpcap and tshark. Exit status 0: pass, 1: fail,
77: skipped (no tshark/dumpcap, or not root).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'integration'))
import inca_proto as P  # noqa: E402
from harness import Rack, Incad, run_workers  # noqa: E402

TOKEN = 0x494E4341  # tools/rack conf's token of job 1
POOL = 8
SHOWN = 16          # inca.max_shown's default
NWORKERS = 2
# 3 + 2 + 3 + 2 = 10 chunks of at most 256 elements: more than the pool,
# so set 1 of the first slots is used too.
COLLS = ['int32:sum:600:1', 'fp32:max:300:2', 'fp16:sum:520:3', 'bf16:min:260:4']

failures = []


def fail(msg):
    failures.append(msg)
    if len(failures) <= 40:
        print('FAIL: ' + msg, flush=True)


def packets(pdml):
    """Per packet: {field name: [(show, showname), ...]} in tree order."""
    out = []
    for pkt in ET.fromstring(pdml).iter('packet'):
        d = {}
        for el in pkt.iter():
            if el.tag in ('field', 'proto'):
                d.setdefault(el.get('name', ''), []).append((el.get('show', ''),
                                                             el.get('showname', '')))
        out.append(d)
    return out


def val(p, name):
    return int(p[name][0][0], 0)


def fmt_float(x):
    """A float as the dissector writes it."""
    if x != x:
        return 'NaN'
    if x in (float('inf'), float('-inf')):
        return '-inf' if x < 0 else 'inf'
    if x == 0 and str(x).startswith('-'):
        return '-0'
    return '%.9g' % x


def elem_bits(p, dname):
    """Bit patterns of the elements shown, as the dissector shows them; a
    float shown with a value that is not its bit pattern's gives None."""
    conv = {'fp32': P.fp32_value, 'fp16': P.fp16_value, 'bf16': P.bf16_value}
    out = []
    for show, showname in p.get('inca.elem.' + dname, []):
        if dname == 'int32':
            out.append(int(show) & 0xffffffff)
            continue
        m = re.match(r'\[\d+\] (\S+) \((0x[0-9a-f]+)\)$', showname)
        bits = int(m.group(2), 16) if m else None
        if bits is None or m.group(1) != fmt_float(conv[dname](bits)):
            bits = None
        out.append(bits)
    return out


def capture(rack, lua, incad_exe, tmp):
    cap = os.path.join(tmp, 'w0.pcapng')
    errf = open(os.path.join(tmp, 'dumpcap.err'), 'w+')
    dumpcap = rack.popen(0, ['dumpcap', '-q', '-i', rack.env['RACK_WORKER_IFACE'],
                             '-f', 'udp port %d' % P.UDP_PORT, '-w', cap],
                         stdout=subprocess.DEVNULL, stderr=errf)
    try:
        # dumpcap says "Capturing on" once the filter is in place.
        end = time.monotonic() + 15
        while time.monotonic() < end:
            errf.seek(0)
            if 'Capturing on' in errf.read() or dumpcap.poll() is not None:
                break
            time.sleep(0.1)
        errf.seek(0)
        if dumpcap.poll() is not None or 'Capturing on' not in errf.read():
            errf.seek(0)
            raise RuntimeError('dumpcap did not start: %s' % errf.read())
        with Incad(rack, incad_exe, conf_args=['--pool-size', str(POOL)]):
            specs = [(r, ['--agg', rack.agg_ip, '--job', '1', '--rank', str(r),
                          '--token', hex(TOKEN), '--nworkers', str(NWORKERS), '--leave']
                      + COLLS) for r in range(NWORKERS)]
            outs = run_workers(rack, specs)
        # Let the last frames reach the capture file.
        time.sleep(0.5)
    finally:
        if dumpcap.poll() is None:
            dumpcap.send_signal(signal.SIGTERM)
            try:
                dumpcap.wait(10)
            except subprocess.TimeoutExpired:
                dumpcap.kill()
                dumpcap.wait()
        errf.close()
    return cap, outs


def check(cap, lua, outs, tmp):
    env = dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=os.path.join(tmp, '.config'))
    base = ['tshark', '-X', 'lua_script:' + lua, '-r', cap]
    r = subprocess.run(base + ['-T', 'pdml'], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        fail('tshark: %s' % r.stderr)
        return
    pk = packets(r.stdout)
    r = subprocess.run(base + ['-T', 'fields', '-e', '_ws.col.Info'], env=env,
                       capture_output=True, text=True)
    infos = r.stdout.splitlines()

    for o in outs:
        if 'error' in o:
            fail('worker %d: %s' % (o['rank'], o['error']))
    ack = outs[0].get('ack', {})
    w0 = outs[0]

    by_type = {}
    for i, p in enumerate(pk, 1):
        where = 'frame %d' % i
        for name, items in p.items():
            for show, showname in items:
                if 'Lua Error' in showname or 'Lua Error' in show:
                    fail('%s: %s' % (where, showname))
                if name.startswith('inca.err.'):
                    fail('%s: malformed: %s' % (where, showname))
        if 'inca' not in p:
            fail('%s: a datagram of the INCA port not decoded as INCA' % where)
            continue
        by_type.setdefault(val(p, 'inca.type'), []).append((i, p))

    for t in ('HELLO', 'CAPS', 'JOIN', 'JOIN_ACK', 'CONTRIB', 'RESULT', 'LEAVE', 'LEAVE_ACK'):
        if not by_type.get(P.MSG[t]):
            fail('no %s in the capture' % t)
    if failures:
        return

    for i, p in by_type[P.MSG['CAPS']]:
        if not val(p, 'inca.ctrl.ver_min') <= P.VERSION <= val(p, 'inca.ctrl.ver_max'):
            fail('frame %d: CAPS versions %d-%d' % (i, val(p, 'inca.ctrl.ver_min'),
                                                    val(p, 'inca.ctrl.ver_max')))
    for i, p in by_type[P.MSG['JOIN']]:
        got = (val(p, 'inca.job'), val(p, 'inca.rank'), val(p, 'inca.token'),
               val(p, 'inca.ctrl.nworkers'))
        if got != (1, 0, TOKEN, NWORKERS):
            fail('frame %d: JOIN job/rank/token/nworkers %s' % (i, got))
    for i, p in by_type[P.MSG['JOIN_ACK']]:
        for k, v in ack.items():
            if val(p, 'inca.ctrl.' + k) != v:
                fail('frame %d: JOIN_ACK %s = %d, the worker read %d' %
                     (i, k, val(p, 'inca.ctrl.' + k), v))
        if (val(p, 'inca.job'), val(p, 'inca.rank'), val(p, 'inca.token')) != (1, 0, TOKEN):
            fail('frame %d: JOIN_ACK not addressed to job 1 rank 0' % i)

    # The chunks: k counts across the collectives, as the worker numbers them;
    # they carry the session token JOIN_ACK gave.
    session = val(by_type[P.MSG['JOIN_ACK']][0][1], 'inca.ctrl.session')
    chunk = ack['max_elems']
    k = 0
    for spec in COLLS:
        d, op, n, seed = spec.split(':')
        n, seed = int(n), int(seed)
        mine = P.gen_data(d, op, 0, n, seed)
        want_res = P.expected(d, op, [P.gen_data(d, op, r, n, seed)
                                      for r in range(NWORKERS)])
        if w0['results'].get(spec) != want_res:
            fail('worker 0 %s: wrong result' % spec)
        offs = list(range(0, n, chunk))
        for j, o in enumerate(offs):
            c = min(chunk, n - o)
            hdr = {'inca.job': 1, 'inca.rank': 0, 'inca.token': session, 'inca.seq': k,
                   'inca.slot': k % POOL, 'inca.flags.set': (k // POOL) % 2,
                   'inca.offset': o, 'inca.count': c, 'inca.dtype': P.DTYPE[d.upper()],
                   'inca.op': P.OP[op.upper()]}
            for typ, data in (('CONTRIB', mine), ('RESULT', want_res)):
                frames = [(i, p) for i, p in by_type[P.MSG[typ]] if val(p, 'inca.seq') == k]
                if not frames:
                    fail('%s seq %d (%s chunk %d) not captured' % (typ, k, spec, j))
                    continue
                for i, p in frames:
                    for f, v in hdr.items():
                        if val(p, f) != v:
                            fail('frame %d: %s seq %d: %s = %d, want %d' %
                                 (i, typ, k, f, val(p, f), v))
                    if val(p, 'inca.flags.last') != (j == len(offs) - 1):
                        fail('frame %d: %s seq %d: LAST %d' %
                             (i, typ, k, val(p, 'inca.flags.last')))
                    if typ == 'RESULT' and val(p, 'inca.bitmap') != (1 << NWORKERS) - 1:
                        fail('frame %d: RESULT seq %d: bitmap %#x' %
                             (i, k, val(p, 'inca.bitmap')))
                    got = elem_bits(p, d)
                    if got != data[o:o + min(c, SHOWN)]:
                        fail('frame %d: %s seq %d elements %s, want %s' %
                             (i, typ, k, got, data[o:o + min(c, SHOWN)]))
                    if c > SHOWN and val(p, 'inca.payload.not_shown') != c - SHOWN:
                        fail('frame %d: not_shown %d' % (i, val(p, 'inca.payload.not_shown')))
                    info = infos[i - 1] if i - 1 < len(infos) else ''
                    want = '%s job=1 rank=0 slot=%d set=%d seq=%d n=%d %s %s' % (
                        typ, k % POOL, (k // POOL) % 2, k, c, d, op)
                    if not info.startswith(want):
                        fail('frame %d: Info %r, want %r...' % (i, info, want))
            k += 1
    print('capture: %d frames, %d chunks with their CONTRIB and RESULT checked; '
          'retransmissions of rank 0: %d' % (len(pk), k, w0.get('retx', 0)), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--incad', required=True)
    ap.add_argument('--lua', required=True)
    a = ap.parse_args()
    for tool in ('tshark', 'dumpcap'):
        if shutil.which(tool) is None:
            print('SKIP: %s is not installed (tools/install-deps)' % tool)
            return 77
    if os.geteuid() != 0:
        print('SKIP: needs root for network namespaces')
        return 77
    lua = os.path.abspath(a.lua)
    tmp = tempfile.mkdtemp(prefix='inca-ws-capture-')
    try:
        with Rack('wshark', workers=NWORKERS) as rack:
            cap, outs = capture(rack, lua, a.incad, tmp)
        check(cap, lua, outs, tmp)
    except Exception as e:  # noqa: BLE001 - report any failure as the test's
        fail('%s: %s' % (type(e).__name__, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print('%d failures' % len(failures))
        return 1
    print('ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
