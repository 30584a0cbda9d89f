#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""incactl against a real incad in an emulated rack (tools/rack).

    test_incactl.py --incad PATH [--incactl PATH] TEST

Workers (inca_worker.py) run allreduces in the rack's worker namespaces;
incactl's answers (--json, parsed) are checked against what the workers
did: contributions and completions per job, ports, member addresses and
states, eviction, injected loss, and the Prometheus exporter's text.
Each TEST builds its own rack and incad and removes both, and kills every
process it started, whether it passes or not. Exit status 0: passed; 1:
failed (the reason and incad's log on stderr).
"""

import argparse
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inca_proto as P  # noqa: E402
from harness import PYTHON, SRC, WORKER, Failed, Rack, Incad, check, log  # noqa: E402

TOKEN = 0x494E4341  # tools/rack conf: job 1's token; job 1 + k has TOKEN + k
CHUNK = 100         # elements per contribution the workers send
INCAD = None
INCACTL = os.path.join(SRC, 'tools', 'incactl')
# Straight to the exporter on loopback, whatever http_proxy says.
HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def chunks(spec):
    return math.ceil(int(spec.split(':')[2]) / CHUNK)


# ------------------------------------------------------------------ helpers

def incactl(inc, *args, rc=0, parse=None):
    """Run incactl on incad's prefix; returns stdout (parsed with --json)."""
    argv = [INCACTL, '--prefix', inc.prefix] + [str(a) for a in args]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    check(r.returncode == rc, '%s: exit status %d, want %d; stderr: %s stdout: %s',
          ' '.join(argv[3:]), r.returncode, rc, r.stderr.strip(), r.stdout[-500:])
    if rc != 0:
        return r.stderr
    if parse is None:
        parse = '--json' in args
    return json.loads(r.stdout) if parse else r.stdout


class Workers:
    """One job's workers, rank r in worker namespace r, each running the
    collectives given; with wait=True they join and heartbeat until
    release()."""

    def __init__(self, rack, job, n, colls, wait=False, tmp=None):
        self.rack, self.job, self.n, self.colls = rack, job, n, colls
        self.wait_file = os.path.join(tmp, 'go%d' % job) if wait else None
        self.procs = []
        for r in range(n):
            argv = [PYTHON, WORKER, '--agg', rack.agg_ip, '--job', str(job), '--rank', str(r),
                    '--token', hex(TOKEN + job - 1), '--nworkers', str(n), '--chunk',
                    str(CHUNK), '--deadline', '60']
            if wait:
                argv += ['--wait-file', self.wait_file]
            self.procs.append(rack.popen(r, argv + colls, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True))

    def joined(self, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if all(os.path.exists('%s.joined.%d' % (self.wait_file, r))
                   for r in range(self.n)):
                return
            check(all(p.poll() is None for p in self.procs), 'a worker of job %d ended '
                  'before the others joined', self.job)
            time.sleep(0.05)
        raise Failed('job %d: workers did not join in %d s' % (self.job, timeout))

    def release(self):
        open(self.wait_file, 'w').close()

    def finish(self, timeout=120, ok=True):
        """Every worker's JSON output, in rank order."""
        outs = []
        end = time.monotonic() + timeout
        for r, p in enumerate(self.procs):
            try:
                so, se = p.communicate(timeout=max(1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise Failed('job %d rank %d: timed out' % (self.job, r))
            if se.strip():
                log('job %d rank %d stderr: %s' % (self.job, r, se.strip()[-1000:]))
            try:
                outs.append(json.loads(so))
            except ValueError:
                raise Failed('job %d rank %d printed no JSON: %r' % (self.job, r, so[-300:]))
            if ok:
                check('error' not in outs[-1], 'job %d rank %d: %s', self.job, r,
                      outs[-1].get('error'))
        return outs

    def kill(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def check_exact(outs, colls, n):
    for spec in colls:
        d, op, cnt, seed = spec.split(':')
        want = P.expected(d, op, [P.gen_data(d, op, r, int(cnt), int(seed))
                                  for r in range(n)])
        for o in outs:
            check(o['results'][spec] == want, 'rank %d: %s result wrong', o['rank'], spec)


def job_of(jobs, jid):
    for j in jobs:
        if j['id'] == jid:
            return j
    raise Failed('job %d missing from %s' % (jid, [j['id'] for j in jobs]))


# ------------------------------------------------- Prometheus text format

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
SAMPLE_RE = re.compile(r'^(%s)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$' % NAME)
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def parse_prometheus(text):
    """Text exposition format 0.0.4: {(name, frozenset(labels)): value}.
    Raises Failed on anything malformed: a sample without a TYPE, a TYPE
    after its samples, a family split in two, bad label syntax, a
    duplicate series, a value that is not a float."""
    types, series, seen_fams, last = {}, {}, set(), None
    check(text.endswith('\n'), 'exposition does not end with a newline')
    for n, line in enumerate(text.split('\n')[:-1], 1):
        if line.startswith('#'):
            m = re.match(r'^# (HELP|TYPE) (%s) (.*)$' % NAME, line)
            check(m is not None, 'line %d: bad comment %r', n, line)
            if m.group(1) == 'TYPE':
                check(m.group(3) in ('counter', 'gauge', 'histogram', 'summary', 'untyped'),
                      'line %d: type %r', n, m.group(3))
                check(m.group(2) not in types, 'line %d: second TYPE of %s', n, m.group(2))
                types[m.group(2)] = m.group(3)
            continue
        check(line != '', 'line %d: empty line', n)
        m = SAMPLE_RE.match(line)
        check(m is not None, 'line %d: bad sample %r', n, line)
        name, labels, value = m.group(1), m.group(2), m.group(3)
        check(name in types, 'line %d: %s has no TYPE before it', n, name)
        if name != last:
            check(name not in seen_fams, 'line %d: family %s split', n, name)
            seen_fams.add(name)
            last = name
        if types[name] == 'counter':
            check(name.endswith('_total'), 'line %d: counter %s without _total', n, name)
        lab = {}
        if labels:
            pos = 0
            while pos < len(labels):
                lm = LABEL_RE.match(labels, pos)
                check(lm is not None, 'line %d: bad labels %r', n, labels)
                check(lm.group(1) not in lab, 'line %d: label %s twice', n, lm.group(1))
                lab[lm.group(1)] = re.sub(r'\\(.)', lambda x: {'n': '\n'}.get(x.group(1),
                                                                            x.group(1)),
                                          lm.group(2))
                pos = lm.end()
        try:
            v = float(value)
        except ValueError:
            raise Failed('line %d: value %r' % (n, value))
        key = (name, frozenset(lab.items()))
        check(key not in series, 'line %d: duplicate series %s', n, line)
        series[key] = v
    return series


def metric(series, name, **labels):
    key = (name, frozenset((k, str(v)) for k, v in labels.items()))
    check(key in series, 'no series %s%s', name, labels)
    return series[key]


# -------------------------------------------------------------------- tests

def test_incactl_read():
    """status, ports, jobs, job and drops agree with what two jobs of three
    workers did: contributions K x N per job, completions K, results, member
    addresses and states."""
    n = 3
    c1, c2 = ['int32:sum:1234:1'], ['int32:sum:450:2', 'fp32:sum:301:3']
    k1, k2 = sum(map(chunks, c1)), sum(map(chunks, c2))
    tmp = tempfile.mkdtemp(prefix='incactl-')
    w1 = w2 = None
    try:
        with Rack('ctlrd', workers=n) as rack, \
                Incad(rack, INCAD, conf_args=['--jobs', '2', '--nworkers', str(n)]) as inc:
            st = incactl(inc, 'status', '--json')
            check(st['mode'] == 'switch' and st['jobs'] == 2 and st['lcores'] == 1,
                  'status: %s', st)
            check(st['ports'] == n, 'status: %d ports', st['ports'])
            check(st['mem_mbufs_bytes'] > 0 and st['mem_tables_bytes'] > 0, 'footprint %s', st)
            check(float(st['drop_prob']) == 0, 'drop_prob %s', st['drop_prob'])
            check(st['counters']['CONTRIB'] == 0, 'contributions before any worker')

            w1 = Workers(rack, 1, n, c1, wait=True, tmp=tmp)
            w1.joined()
            j = incactl(inc, 'job', '1', '--json')
            check(j['members'] == n and not j['blocked'], 'job 1 after join: %s', j)
            check(j['priority'] == 0, 'job 1 priority %s (the default is 0)', j.get('priority'))
            for m in j['ranks']:
                r = m['rank']
                check(m['state'] == 'live', 'rank %d state %s', r, m['state'])
                check(m['address'] == rack.worker_ips[r], 'rank %d address %s, worker %s',
                      r, m['address'], rack.worker_ips[r])
                check(m['port'] == 'w%d' % r, 'rank %d via %s', r, m['port'])
                check(m['incad_address'] == rack.agg_ip, 'rank %d to %s', r,
                      m['incad_address'])
                check(0 < m['udp_port'] < 65536, 'rank %d udp port', r)
                # Heartbeats every 100 ms while they wait.
                check(m['last_seen_ms'] < 3000, 'rank %d last seen %d ms ago', r,
                      m['last_seen_ms'])
            txt = incactl(inc, 'job', '1')
            for r in range(n):
                check(re.search(r'^\s*%d\s+live\s+%s:\d+\s+w%d\b' % (r, re.escape(
                    rack.worker_ips[r]), r), txt, re.M), 'job 1 text, rank %d:\n%s', r, txt)

            w2 = Workers(rack, 2, n, c2)
            w1.release()
            check_exact(w1.finish(), c1, n)
            check_exact(w2.finish(), c2, n)

            st = incactl(inc, 'status', '--json')
            cnt = st['counters']
            check(cnt['CONTRIB'] == (k1 + k2) * n, 'CONTRIB %d, want %d', cnt['CONTRIB'],
                  (k1 + k2) * n)
            check(cnt['COMPLETE'] == k1 + k2, 'COMPLETE %d, want %d', cnt['COMPLETE'],
                  k1 + k2)
            check(cnt['RESULT_TX'] == (k1 + k2) * n, 'RESULT_TX %d', cnt['RESULT_TX'])

            jobs = incactl(inc, 'jobs', '--json')
            check(sorted(j['id'] for j in jobs) == [1, 2], 'jobs %s', jobs)
            for jid, k in ((1, k1), (2, k2)):
                jc = job_of(jobs, jid)['counters']
                check(jc['CONTRIB'] == k * n, 'job %d CONTRIB %d, want %d x %d', jid,
                      jc['CONTRIB'], k, n)
                check(jc['COMPLETE'] == k, 'job %d COMPLETE %d, want %d', jid,
                      jc['COMPLETE'], k)
                one = incactl(inc, 'job', jid, '--json')
                check(one['counters']['CONTRIB'] == k * n, 'job %d alone: %s', jid,
                      one['counters'])
            txt = incactl(inc, 'jobs')
            check(re.search(r'^\s*1\s+rack\s+static\s+0\s+\d/3\s+\d+\s+\d+\s+%d\s+%d\b'
                            % (k1 * n, k1), txt, re.M), 'jobs text:\n%s', txt)

            ports = incactl(inc, 'ports', '--json')
            check(sorted(ports) == ['w%d' % i for i in range(n)], 'ports %s', sorted(ports))
            check(ports['w0']['ipv4'] == rack.agg_ip, 'w0 address %s', ports['w0']['ipv4'])
            check(sum(p['rx'] for p in ports.values()) == cnt['RX'],
                  'ports rx %d, counter RX %d', sum(p['rx'] for p in ports.values()),
                  cnt['RX'])
            for i in range(n):
                # Each worker's contributions come in on its own port.
                check(ports['w%d' % i]['rx'] >= k1 + k2, 'w%d rx %d', i,
                      ports['w%d' % i]['rx'])

            d_all = incactl(inc, 'drops', '--all', '--json')
            d = incactl(inc, 'drops', '--json')
            check('incad/INJECTED_LOSS' in d_all['drops'] and 'core/DUPLICATE' in
                  d_all['drops'], 'drops --all: %s', sorted(d_all['drops']))
            check(d_all['drops']['incad/INJECTED_LOSS'] == 0, 'injected loss while off')
            check(all(v > 0 for v in d['drops'].values()), 'zeros without --all: %s', d)
            check(d['total'] == sum(d['drops'].values()), 'total %d of %s', d['total'], d)
            check(st['drops_total'] == d['total'], 'status drops %d, drops %d',
                  st['drops_total'], d['total'])

            txt = incactl(inc, 'status')
            check('switch mode' in txt and 'contributions %d' % ((k1 + k2) * n) in txt,
                  'status text:\n%s', txt)
            watch = incactl(inc, 'watch', '-i', '0.3', '-c', '2', '--json', parse=False)
            lines = [json.loads(x) for x in watch.splitlines()]
            check(len(lines) == 2, 'watch printed %d lines', len(lines))
            for x in lines:
                check(x['interval_s'] > 0.2 and x['counters']['CONTRIB'] == 0 and
                      set(x['jobs']) == {'1', '2'}, 'watch %s', x)

            # No arbitration section: nothing is held back, and it says so.
            arb = incactl(inc, 'arbitration', '--json')
            check(arb == {'policy': 'off'}, 'arbitration without a section: %s', arb)
            txt = incactl(inc, 'arbitration')
            check('no arbitration configured' in txt, 'arbitration text: %s', txt)

            err = incactl(inc, 'job', '999', rc=1)
            check('no job 999' in err, 'job 999: %s', err)
            err = incactl(inc, 'evict', '1', '7', rc=1)
            check('not a live member' in err, 'evict 1 7: %s', err)
            r = subprocess.run([INCACTL, '--prefix', inc.prefix + 'x', 'status'],
                               capture_output=True, text=True, timeout=30)
            check(r.returncode == 1 and 'no telemetry socket' in r.stderr,
                  'wrong prefix: %d %s', r.returncode, r.stderr)
    finally:
        for w in (w1, w2):
            if w is not None:
                w.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def test_incactl_evict():
    """incactl evict removes a live member: job shows it evicted, its next
    message gets NACK EVICTED, the other rank's contributions get NACK
    MEMBER_LOST, and EVICT counts it."""
    n = 2
    colls = ['int32:sum:300:1']
    tmp = tempfile.mkdtemp(prefix='incactl-')
    w = None
    try:
        with Rack('ctlev', workers=n) as rack, \
                Incad(rack, INCAD, conf_args=['--jobs', '1', '--nworkers', str(n)]) as inc:
            w = Workers(rack, 1, n, colls, wait=True, tmp=tmp)
            w.joined()
            out = incactl(inc, 'evict', '1', '1', '--json')
            check(out['evicted'], 'evict: %s', out)
            j = incactl(inc, 'job', '1', '--json')
            states = [m['state'] for m in j['ranks']]
            check(states == ['live', 'evicted'], 'states %s', states)
            check(j['blocked'] and j['members'] == 1, 'job after evict: %s', j)
            check(j['ranks'][1]['address'] == rack.worker_ips[1], 'evicted rank address')
            # Rank 1 heartbeats while it waits: its next one is refused.
            w.release()
            outs = w.finish(ok=False)
            check('EVICTED' in outs[1].get('error', ''), 'rank 1: %s', outs[1].get('error'))
            check('MEMBER_LOST' in outs[0].get('error', ''), 'rank 0: %s',
                  outs[0].get('error'))
            c = incactl(inc, 'counters', '--json')
            check(c['counters']['EVICT'] == 1, 'EVICT %d', c['counters']['EVICT'])
            check(c['nacks'].get('EVICTED', 0) >= 1, 'nacks %s', c['nacks'])
            check(c['nacks'].get('MEMBER_LOST', 0) >= 1, 'nacks %s', c['nacks'])
            txt = incactl(inc, 'job', '1')
            check(re.search(r'^\s*1\s+evicted\s+%s:' % re.escape(rack.worker_ips[1]), txt,
                            re.M), 'job text:\n%s', txt)
            err = incactl(inc, 'evict', '1', '1', rc=1)
            check('not a live member' in err, 'second evict: %s', err)
    finally:
        if w is not None:
            w.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def test_incactl_loss():
    """set-drop 0.2: contributions are dropped (INJECTED_LOSS), the
    workers retransmit and the allreduce is still exact, each contribution
    counted once; set-drop 0 stops it; incad refuses values outside [0, 1]."""
    n = 2
    colls = ['int32:sum:4000:1', 'fp32:sum:1000:2']
    k = sum(map(chunks, colls))
    w = None
    try:
        with Rack('ctlls', workers=n) as rack, \
                Incad(rack, INCAD, conf_args=['--jobs', '2', '--nworkers', str(n)]) as inc:
            out = incactl(inc, 'set-drop', '0.2', '--json')
            check(out == {'drop_prob': 0.2, 'previous': 0.0}, 'set-drop: %s', out)
            check(float(incactl(inc, 'status', '--json')['drop_prob']) == 0.2, 'status')
            w = Workers(rack, 1, n, colls)
            outs = w.finish()
            check_exact(outs, colls, n)
            lost = incactl(inc, 'drops', '--json')['drops'].get('incad/INJECTED_LOSS', 0)
            # About 0.2 of k x n first copies and of the retransmissions.
            check(lost >= 5, 'INJECTED_LOSS %d of %d contributions', lost, k * n)
            # A dropped copy is always followed by another of the same chunk.
            check(sum(o['retx'] for o in outs) >= lost, 'retransmissions %s, lost %d',
                  [o['retx'] for o in outs], lost)
            j = incactl(inc, 'job', '1', '--json')
            check(j['counters']['CONTRIB'] == k * n, 'CONTRIB %d, want %d',
                  j['counters']['CONTRIB'], k * n)
            log('drop 0.2: %d contributions of %d lost, %d retransmitted'
                % (lost, k * n, sum(o['retx'] for o in outs)))

            # incad refuses what incactl would: straight to the socket.
            tel = inc.telemetry()
            try:
                for bad in ('1.5', '-0.1', 'nan', 'inf', 'abc', '0.5x', ''):
                    if bad:
                        check(tel.query('/incad/drop_prob,%s' % bad) is None,
                              'incad accepted drop_prob %r', bad)
                check(tel.query('/incad/drop_prob')['drop_prob'] == '0.2',
                      'drop_prob changed by a refused value')
            finally:
                tel.close()
            for bad in ('1.5', '-0.1', 'nan', 'x'):
                incactl(inc, 'set-drop', bad, rc=2)

            out = incactl(inc, 'set-drop', '0', '--json')
            check(out == {'drop_prob': 0.0, 'previous': 0.2}, 'set-drop 0: %s', out)
            # Job 2: job 1's workers are still members (no LEAVE, which
            # could hit a rank still retransmitting with MEMBER_LOST).
            w = Workers(rack, 2, n, ['int32:sum:2000:3'])
            outs = w.finish()
            check_exact(outs, ['int32:sum:2000:3'], n)
            after = incactl(inc, 'drops', '--json')['drops'].get('incad/INJECTED_LOSS', 0)
            check(after == lost, 'INJECTED_LOSS went from %d to %d with set-drop 0', lost,
                  after)
    finally:
        if w is not None:
            w.kill()


def test_incactl_prometheus():
    """prometheus --once and the HTTP exporter print valid text format with
    the values incactl's JSON shows; incad_up is 0 once incad is gone."""
    n = 2
    colls = ['int32:sum:700:1']
    k = sum(map(chunks, colls))
    srv = w = None
    try:
        with Rack('ctlpr', workers=n) as rack:
            inc = Incad(rack, INCAD, conf_args=['--jobs', '2', '--nworkers', str(n)])
            with inc:
                w = Workers(rack, 1, n, colls)
                check_exact(w.finish(), colls, n)
                incactl(inc, 'set-drop', '0.125')
                text = incactl(inc, 'prometheus', '--once', parse=False)
                s = parse_prometheus(text)
                st = incactl(inc, 'status', '--json')
                drops = incactl(inc, 'drops', '--all', '--json')['drops']
                jobs = incactl(inc, 'jobs', '--json')
                ports = incactl(inc, 'ports', '--json')

                check(metric(s, 'incad_up') == 1, 'incad_up')
                check(metric(s, 'incad_jobs') == 2, 'incad_jobs')
                check(metric(s, 'incad_injected_drop_probability') == 0.125, 'drop prob')
                for c in ('CONTRIB', 'COMPLETE', 'RESULT_TX', 'NACK_TX', 'EVICT'):
                    check(metric(s, 'incad_%s_total' % c.lower()) == st['counters'][c],
                          '%s: %s vs %s', c, metric(s, 'incad_%s_total' % c.lower()),
                          st['counters'][c])
                check(metric(s, 'incad_contrib_total') == k * n, 'contributions')
                for key, v in drops.items():
                    layer, reason = key.split('/')
                    check(metric(s, 'incad_drops_total', layer=layer, reason=reason) == v,
                          'drop %s', key)
                for j in jobs:
                    for c, v in j['counters'].items():
                        check(metric(s, 'incad_job_%s_total' % c.lower(), job=j['id'],
                                     tenant=j['tenant']) == v, 'job %d %s', j['id'], c)
                check(metric(s, 'incad_job_contrib_total', job=1, tenant='rack') == k * n,
                      'job 1 contributions')
                check(metric(s, 'incad_job_complete_total', job=2, tenant='rack') == 0,
                      'job 2 completions')
                for name, p in ports.items():
                    check(metric(s, 'incad_port_rx_total', port=name) == p['rx'],
                          'port %s rx', name)
                    check(metric(s, 'incad_port_info', port=name, ipv4=p['ipv4'],
                                 mac=p['mac'], device=p['device']) == 1, 'port info')
                check(metric(s, 'incad_memory_bytes', kind='mbufs') == st['mem_mbufs_bytes'],
                      'memory')

                # The exporter: a free port on loopback, scraped over HTTP.
                with socket.socket() as probe:
                    probe.bind(('127.0.0.1', 0))
                    port = probe.getsockname()[1]
                srv = subprocess.Popen([INCACTL, '--prefix', inc.prefix, 'prometheus',
                                        '--listen', '127.0.0.1:%d' % port],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       text=True)
                body = None
                end = time.monotonic() + 20
                while body is None and time.monotonic() < end:
                    if srv.poll() is not None:
                        raise Failed('exporter exited: %s' % srv.stderr.read())
                    try:
                        with HTTP.open('http://127.0.0.1:%d/metrics' % port,
                                                    timeout=10) as resp:
                            check(resp.headers['Content-Type'].startswith('text/plain'),
                                  'content type %s', resp.headers['Content-Type'])
                            body = resp.read().decode()
                    except urllib.error.URLError:
                        time.sleep(0.1)
                check(body is not None, 'exporter never answered')
                s2 = parse_prometheus(body)
                check(metric(s2, 'incad_contrib_total') == k * n, 'scraped contributions')
                check(metric(s2, 'incad_job_contrib_total', job=1, tenant='rack') == k * n,
                      'scraped job 1')
                try:
                    HTTP.open('http://127.0.0.1:%d/nothing' % port, timeout=10)
                    raise Failed('/nothing answered')
                except urllib.error.HTTPError as e:
                    check(e.code == 404, '/nothing: %d', e.code)
            # incad has stopped: the exporter says so instead of failing.
            with HTTP.open('http://127.0.0.1:%d/metrics' % port, timeout=10) as resp:
                s3 = parse_prometheus(resp.read().decode())
            check(metric(s3, 'incad_up') == 0 and len(s3) == 1, 'after stop: %s', s3)
            r = subprocess.run([INCACTL, '--prefix', inc.prefix, 'prometheus', '--once'],
                               capture_output=True, text=True, timeout=30)
            check(r.returncode == 0 and metric(parse_prometheus(r.stdout), 'incad_up') == 0,
                  '--once without incad: %d %r', r.returncode, r.stdout)
    finally:
        if w is not None:
            w.kill()
        if srv is not None and srv.poll() is None:
            srv.terminate()
            srv.wait()


def test_incactl_prom_parser():
    """The parser above refuses what Prometheus would (so the checks that
    use it mean something)."""
    good = '# HELP a_total x\n# TYPE a_total counter\na_total{l="v\\"1"} 3\n'
    check(metric(parse_prometheus(good), 'a_total', l='v"1') == 3, 'good text')
    for bad in ('a 1\n',                                        # no TYPE
                '# TYPE a counter\na 1\n',                      # counter without _total
                '# TYPE a gauge\na{l=v} 1\n',                   # unquoted label
                '# TYPE a gauge\na 1\na 2\n',                   # duplicate series
                '# TYPE a gauge\na one\n',                      # not a number
                '# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na{x="1"} 1\n',  # split family
                '# TYPE a gauge\na 1'):                         # no final newline
        try:
            parse_prometheus(bad)
        except Failed:
            continue
        raise Failed('parser accepted %r' % bad)


TESTS = {name[5:]: fn for name, fn in globals().items() if name.startswith('test_')}


def main():
    global INCAD, INCACTL
    ap = argparse.ArgumentParser()
    ap.add_argument('--incad', required=True)
    ap.add_argument('--incactl', default=INCACTL)
    ap.add_argument('test', choices=sorted(TESTS))
    a = ap.parse_args()
    INCAD = os.path.abspath(a.incad)
    INCACTL = os.path.abspath(a.incactl)
    if a.test != 'incactl_prom_parser' and os.geteuid() != 0:
        log('integration tests need root (network namespaces)')
        return 1

    # meson stops an overrunning test with SIGTERM: unwind so that the
    # 'with' blocks remove the rack and stop incad.
    def stop(sig, frame):
        raise Failed('stopped by signal %d' % sig)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    t0 = time.monotonic()
    try:
        TESTS[a.test]()
    except Exception as e:
        if not isinstance(e, Failed):
            traceback.print_exc()
        log('FAIL %s: %s (%.1f s)' % (a.test, e, time.monotonic() - t0))
        return 1
    log('PASS %s (%.1f s)' % (a.test, time.monotonic() - t0))
    return 0


if __name__ == '__main__':
    sys.exit(main())
