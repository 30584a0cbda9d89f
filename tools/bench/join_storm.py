#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""A tenant's JOIN/LEAVE storm against incad, for tools/bench/bench_storm.sh.

    join_storm.py --agg IP --token T --first-job J --src IP[,IP...]
                  [--depth D] [--pool-size P] [--max-elems E] [--mode storm|ping]
                  [--rate CYCLES_PER_S] [--secs S] [--out FILE]

From every source address (a UDP socket bound to it), D jobs at a time, each
in a closed loop: JOIN a job of one worker (which creates a dynamic job of P
slots, since nobody holds it), LEAVE it with the session and the member
secret of the JOIN_ACK (which deletes it), JOIN it again, as fast as incad
answers. A NACK is answered at once with the same request (a storm does not
back off); a request unanswered for 20 ms is sent again (incad's meter drops
red messages without an answer). Mode "ping" is the control experiment: the
same loop of two round trips per cycle, but HEARTBEATs for a job that does
not exist, which incad answers (NACK UNKNOWN_JOB) after one table lookup
and which its meter does not count: the packets and the client's CPU of a
storm without its control-plane work.

Runs until --secs have passed or SIGTERM/SIGINT, then stops creating jobs,
leaves the ones it holds (waiting up to a second for answers), and writes
one JSON object (to --out, or stdout): the cycles completed, requests,
answers by type, NACKs by reason, timeouts and the seconds it ran.
"""

import argparse
import json
import os
import select
import signal
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                'tests', 'integration'))
import inca_proto as P  # noqa: E402  (the wire layout, read from wire.h)

RTO = 0.020
JOIN_SENT, LEAVE_SENT, IDLE = 0, 1, 2


class Entry:
    """One job id of one source address and where its loop is."""
    __slots__ = ('job', 'state', 'sent_at', 'session', 'secret', 'msg')

    def __init__(self, job):
        self.job, self.state, self.sent_at = job, IDLE, 0.0
        self.session = self.secret = 0
        self.msg = b''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--agg', required=True)
    ap.add_argument('--port', type=int, default=P.UDP_PORT)
    ap.add_argument('--token', type=lambda s: int(s, 0), required=True)
    ap.add_argument('--first-job', type=int, required=True)
    ap.add_argument('--src', required=True, help='source addresses, comma separated')
    ap.add_argument('--depth', type=int, default=4)
    ap.add_argument('--pool-size', type=int, default=64)
    ap.add_argument('--max-elems', type=int, default=0)
    ap.add_argument('--mode', choices=('storm', 'ping'), default='storm')
    ap.add_argument('--rate', type=float, default=0, help='cycles per second, 0: no limit')
    ap.add_argument('--secs', type=float, default=3600)
    ap.add_argument('--out')
    a = ap.parse_args()

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))

    st = {'mode': a.mode, 'sources': 0, 'depth': a.depth, 'cycles': 0, 'requests': 0,
          'answers': {}, 'nacks': {}, 'timeouts': 0, 'secs': 0.0, 'left_at_exit': 0,
          'unanswered_at_exit': 0}
    join_body = P.ctrl_pack(ver_min=P.VERSION, ver_max=P.VERSION, dtypes=0xf, ops=0x7,
                            nworkers=1, pool_size=a.pool_size, max_elems=a.max_elems)
    hdr = struct.Struct(P.HDR_FMT)
    fields = {f: i for i, f in enumerate(P.HDR_FIELDS)}
    t_type, t_job, t_reason, t_bitmap = (fields[k] for k in ('type', 'job', 'reason', 'bitmap'))
    ctrl = struct.Struct(P.CTRL_FMT)
    c_session = P.CTRL_FIELDS.index('session')
    M = P.MSG
    answer_name = {v: k for k, v in M.items()}

    socks, by_fd = [], {}
    ep = select.epoll()
    job = a.first_job
    for ip in a.src.split(','):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.bind((ip, 0))
        s.connect((a.agg, a.port))
        s.setblocking(False)
        entries = {}
        for _ in range(a.depth):
            entries[job] = Entry(job)
            job += 1
        socks.append((s, entries))
        by_fd[s.fileno()] = (s, entries)
        ep.register(s.fileno(), select.EPOLLIN)
    st['sources'] = len(socks)

    def send(s, e, msg, state, now):
        e.msg, e.state, e.sent_at = msg, state, now
        try:
            s.send(msg)
        except (BlockingIOError, ConnectionRefusedError):
            pass    # lost like any datagram: the timeout sends it again
        st['requests'] += 1

    def first_request(e):
        if a.mode == 'ping':
            return P.hdr_pack(type=M['HEARTBEAT'], job=e.job, token=a.token)
        return P.hdr_pack(type=M['JOIN'], job=e.job, token=a.token) + join_body

    def leave(e):
        return P.hdr_pack(type=M['LEAVE'], job=e.job, token=e.session, bitmap=e.secret)

    # Pacing: a cycle starts when a token is there; tokens accrue at
    # --rate, up to 5 ms of them (epoll sleeps whole milliseconds, so a
    # smaller bucket would cap the rate below what was asked).
    pending = []
    cap = max(float(len(socks) * a.depth), a.rate * 0.005)
    tokens, t_tok = 1.0, time.monotonic()

    def refill(now):
        nonlocal tokens, t_tok
        tokens = min(cap, tokens + (now - t_tok) * a.rate)
        t_tok = now

    def start(s, e, now):
        nonlocal tokens
        if a.rate > 0:
            refill(now)
            if tokens < 1.0:
                e.state = IDLE
                pending.append((s, e))
                return
            tokens -= 1.0
        send(s, e, first_request(e), JOIN_SENT, now)

    t0 = time.monotonic()
    for s, entries in socks:
        for e in entries.values():
            start(s, e, t0)

    draining = False
    drain_end = 0.0
    next_check = t0 + RTO / 2
    while True:
        now = time.monotonic()
        if not draining and (stop or now - t0 >= a.secs):
            draining = True
            drain_end = now + 1.0
            st['secs'] = now - t0
        if draining:
            busy = sum(1 for _, es in socks for e in es.values() if e.state != IDLE)
            if busy == 0 or now >= drain_end:
                st['unanswered_at_exit'] = busy
                break
        wait = RTO / 4
        if pending and a.rate > 0:
            wait = min(wait, max(0.0, (1.0 - tokens) / a.rate))
        for fd, _ in ep.poll(wait):
            s, entries = by_fd[fd]
            for _ in range(64):
                try:
                    buf = s.recv(2048)
                except (BlockingIOError, ConnectionRefusedError):
                    break
                if len(buf) < P.HDR_LEN:
                    continue
                h = hdr.unpack_from(buf)
                e = entries.get(h[t_job])
                if e is None or e.state == IDLE:
                    continue
                typ = h[t_type]
                name = answer_name.get(typ, str(typ))
                st['answers'][name] = st['answers'].get(name, 0) + 1
                now = time.monotonic()
                if typ == M['NACK']:
                    r = P.NACK_NAME.get(h[t_reason], str(h[t_reason]))
                    st['nacks'][r] = st['nacks'].get(r, 0) + 1
                    if a.mode == 'ping':
                        # The cheap round trip's answer; as a LEAVE's
                        # would, it ends a cycle every other time.
                        if e.state == LEAVE_SENT:
                            st['cycles'] += 1
                            if draining:
                                e.state = IDLE
                            else:
                                start(s, e, now)
                            continue
                        send(s, e, e.msg, LEAVE_SENT, now)
                    elif e.state == JOIN_SENT and not draining:
                        send(s, e, e.msg, JOIN_SENT, now)
                    elif e.state == JOIN_SENT:
                        e.state = IDLE
                    continue
                if typ == M['JOIN_ACK'] and e.state == JOIN_SENT:
                    e.session = ctrl.unpack_from(buf, P.HDR_LEN)[c_session]
                    e.secret = h[t_bitmap]
                    send(s, e, leave(e), LEAVE_SENT, now)
                    if draining:
                        st['left_at_exit'] += 1
                elif typ == M['LEAVE_ACK'] and e.state == LEAVE_SENT:
                    st['cycles'] += 1
                    if draining:
                        e.state = IDLE
                    else:
                        start(s, e, now)
        now = time.monotonic()
        if a.rate > 0:
            refill(now)
            while pending and tokens >= 1.0 and not draining:
                ps, pe = pending.pop(0)
                start(ps, pe, now)
        if now >= next_check:
            next_check = now + RTO / 2
            for s, entries in socks:
                for e in entries.values():
                    if e.state != IDLE and now - e.sent_at >= RTO:
                        st['timeouts'] += 1
                        send(s, e, e.msg, e.state, now)
    out = json.dumps(st)
    if a.out:
        with open(a.out, 'w') as f:
            f.write(out + '\n')
    else:
        print(out)


if __name__ == '__main__':
    main()
