#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""incad on a net_tap port talking to real kernel sockets, over time.

What a pcap cannot show needs time to pass: heartbeats, eviction, periodic
statistics. This test runs in a network namespace of its own (meson starts
it under 'unshare -n'), gives incad a net_tap port, puts the worker
addresses on the kernel side of the tap and talks to incad with ordinary
UDP sockets, which also makes the kernel resolve incad's address with ARP
and ping it.

Usage: unshare -n test_incad_live.py INCAD CASE
"""

import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from incadtest import (  # noqa: E402
    CONTRIB, HEARTBEAT, HEARTBEAT_ACK, HDR_FIELDS, HDR_FMT, INCA_PORT, JOIN, JOIN_ACK, LEAVE,
    NACK, NACK_REASONS, RESULT, TOKEN, check, ctrl, hdr, incad_path, main, telemetry)

import struct  # noqa: E402

TAP = 'incatap0'
AGG = '10.77.0.1'
WORKER = '10.77.1.10'


def sh(*cmd):
    subprocess.run(cmd, check=True, capture_output=True, timeout=10)


class Worker:
    def __init__(self, rank, job, nworkers):
        self.rank, self.job, self.nworkers = rank, job, nworkers
        self.session = None     # from the last JOIN_ACK
        self.secret = 0         # likewise, for LEAVE and HEARTBEAT
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.bind((WORKER, 40000 + rank))
        self.s.connect((AGG, INCA_PORT))

    def send(self, mtype, body=b'', **kw):
        kw.setdefault('job', self.job)
        kw.setdefault('rank', self.rank)
        if mtype != JOIN:
            kw.setdefault('token', self.session)
        if mtype in (LEAVE, HEARTBEAT):
            kw.setdefault('bitmap', self.secret)
        self.s.send(hdr(mtype, **kw) + body)

    def join(self):
        self.send(JOIN, ctrl(nworkers=self.nworkers))

    def contrib(self, values, slot, seq):
        self.send(CONTRIB, struct.pack('!%di' % len(values), *values), slot=slot, seq=seq,
                  count=len(values))

    def recv(self, timeout=2.0):
        r, _, _ = select.select([self.s], [], [], timeout)
        if not r:
            return None
        data = self.s.recv(65536)
        h = dict(zip(HDR_FIELDS, struct.unpack(HDR_FMT, data[:32])))
        h['body'] = data[32:]
        return h

    def expect(self, mtype, reason=0, timeout=2.0, what=''):
        m = self.recv(timeout)
        check(m is not None, 'rank %d: no answer %s' % (self.rank, what))
        check(m['type'] == mtype and m['reason'] == reason,
              'rank %d %s: got type %d reason %d, expected type %d reason %d'
              % (self.rank, what, m['type'], m['reason'], mtype, reason))
        if mtype == JOIN_ACK:
            self.session = struct.unpack('!I', m['body'][28:32])[0]
            self.secret = m['bitmap']
            check(self.session not in (0, TOKEN), 'rank %d: session %#x' % (self.rank,
                                                                          self.session))
        return m


class Incad:
    def __init__(self, config, app=()):
        self.tmp = tempfile.mkdtemp(prefix='incad-live-')
        self.prefix = 'incadlive%d' % os.getpid()
        conf = os.path.join(self.tmp, 'incad.conf')
        with open(conf, 'w') as f:
            f.write(config)
        self.out = open(os.path.join(self.tmp, 'stdout'), 'w+')
        self.p = subprocess.Popen(
            [incad_path(), '--no-huge', '-m', '256', '--no-pci', '--file-prefix', self.prefix,
             '--log-level', 'lib.eal:warning', '--vdev', 'net_tap0,iface=%s' % TAP, '--',
             '-c', conf] + list(app), stdout=self.out, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 15
        while telemetry(self.prefix, '/incad/stats') is None:
            check(self.p.poll() is None, 'incad exited: %s' % self.output())
            check(time.monotonic() < deadline, 'incad did not start')
            time.sleep(0.05)
        # The kernel side of the tap: the workers' address.
        sh('ip', 'link', 'set', 'lo', 'up')
        sh('sysctl', '-qw', 'net.ipv6.conf.%s.disable_ipv6=1' % TAP)
        sh('ip', 'addr', 'add', WORKER + '/16', 'dev', TAP)
        sh('ip', 'link', 'set', TAP, 'up')

    def output(self):
        self.out.flush()
        self.out.seek(0)
        return self.out.read()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        out = self.output()
        self.out.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        shutil.rmtree('/var/run/dpdk/' + self.prefix, ignore_errors=True)
        return self.p.returncode, out


def config(extra=''):
    return ('ports = ( { name = "tap"; device = "net_tap0"; ipv4 = "%s/16"; '
            'mac = "02:00:00:00:aa:00"; } );\n'
            'tenants = ( { name = "t"; token = 0x%08X; job_ids = [1, 9]; '
            'dynamic_jobs = true; } );\n'
            'timeouts = { heartbeat_ms = 100; evict_ms = 500; };\n%s' % (AGG, TOKEN, extra))


def case_evict():
    incad = Incad(config(), app=['--stats-interval', '1'])
    try:
        w0, w1 = Worker(0, 3, 2), Worker(1, 3, 2)
        # The first datagram makes the kernel ARP for incad's address.
        w0.join()
        w0.expect(JOIN_ACK, what='to JOIN')
        w1.join()
        w1.expect(JOIN_ACK, what='to JOIN')
        w0.contrib([1, 2], 0, 0)
        w1.contrib([3, 4], 0, 0)
        for w in (w0, w1):
            m = w.expect(RESULT, what='to the first set')
            check(struct.unpack('!2i', m['body']) == (4, 6) and m['rank'] == w.rank,
                  'RESULT %s' % m)
        # Rank 1 keeps heartbeating, rank 0 goes silent past evict_ms.
        t_end = time.monotonic() + 0.9
        answers = []
        while time.monotonic() < t_end:
            w1.send(HEARTBEAT)
            m = w1.recv()
            check(m is not None, 'rank 1: no answer to HEARTBEAT')
            answers.append((m['type'], m['reason']))
            time.sleep(0.1)
        # Acknowledged until rank 0's eviction ended the incarnation, then
        # told to rejoin (its session is the previous one's).
        lost = (NACK, NACK_REASONS['MEMBER_LOST'])
        k = answers.index(lost) if lost in answers else len(answers)
        check(k >= 1 and all(a == (HEARTBEAT_ACK, 0) for a in answers[:k]) and
              all(a == lost for a in answers[k:]) and k < len(answers),
              'answers to the heartbeats %s' % answers)
        j = telemetry(incad.prefix, '/incad/job,3')
        check(j and j['live_mask'] == 2 and j['evicted_mask'] == 1 and j['resets'] == 1,
              'after the eviction: %s' % j)
        w1.contrib([5], 1, 1)
        w1.expect(NACK, NACK_REASONS['MEMBER_LOST'], what='to a CONTRIB without rank 0')
        w0.send(HEARTBEAT)
        w0.expect(NACK, NACK_REASONS['EVICTED'], what='to the evicted HEARTBEAT')
        w0.contrib([5], 1, 1)
        w0.expect(NACK, NACK_REASONS['EVICTED'], what='to the evicted CONTRIB')
        # Rejoining mends the job: a new incarnation, which rank 1 joins too.
        old = w0.session
        w0.join()
        w0.expect(JOIN_ACK, what='to the second JOIN')
        check(w0.session != old, 'the same session after an eviction')
        w1.join()
        w1.expect(JOIN_ACK, what='to the JOIN into the new incarnation')
        check(w1.session == w0.session, 'two sessions in one incarnation')
        w0.contrib([5], 1, 1)
        w1.contrib([6], 1, 1)
        for w in (w0, w1):
            m = w.expect(RESULT, what='after rejoining')
            check(struct.unpack('!i', m['body']) == (11,), 'RESULT %s' % m)
        # Both silent: the dynamic job goes and its slots with it.
        time.sleep(0.9)
        s = telemetry(incad.prefix, '/incad/stats')
        check(s and s['jobs'] == 0 and s['slots_used'] == 0 and s['EVICT'] == 3,
              'after everyone went silent: %s' % s)
        w1.send(HEARTBEAT)
        w1.expect(NACK, NACK_REASONS['UNKNOWN_JOB'], what='to a HEARTBEAT for a deleted job')
        # A real ping through the kernel.
        p = subprocess.run(['ping', '-c', '1', '-W', '2', AGG], capture_output=True)
        check(p.returncode == 0, 'ping to incad failed: %s' % p.stdout)
    finally:
        rc, out = incad.stop()
    check(rc == 0, 'incad exited %d:\n%s' % (rc, out))
    check(out.count('incad: statistics after') >= 1,
          '--stats-interval 1 printed nothing in more than 2 s')
    check('counter EVICT 3' in out and 'counter ICMP_REPLY 1' in out,
          'final statistics:\n%s' % out)


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith('case_')}

if __name__ == '__main__':
    main(CASES)
