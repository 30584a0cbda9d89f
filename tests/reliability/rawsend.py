#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Send hand-made Ethernet frames from inside a namespace with a raw
AF_PACKET socket, and count what comes back.

    rawsend.py IFACE FRAMES.json [--listen-mac MAC] [--linger S] [--pace N]

FRAMES.json is a list of hex strings, one frame each. They are sent in
order, N frames per millisecond at most (default 4), so that incad's
af_packet ring never overflows and every frame is counted. Meanwhile
frames to MAC (default: the interface's own) that carry UDP from the INCA
port are collected; after the last frame the script listens S seconds more
(default 0.5) and prints one JSON object: frames sent, send errors (with
the errno of each kind) and the INCA messages received by type name.
"""

import json
import os
import select
import socket
import struct
import sys
import time

SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
sys.path.insert(0, os.path.join(SRC, 'tests', 'integration'))

import inca_proto as P  # noqa: E402

ETH_P_ALL = 0x0003


def main():
    argv = sys.argv[1:]
    opts = {'--listen-mac': None, '--linger': '0.5', '--pace': '4'}
    for k in list(opts):
        if k in argv:
            i = argv.index(k)
            opts[k] = argv[i + 1]
            del argv[i:i + 2]
    iface, path = argv
    with open(path) as f:
        frames = [bytes.fromhex(h) for h in json.load(f)]
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((iface, 0))
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    rx.bind((iface, 0))
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    mymac = rx.getsockname()[4]
    listen = P.mac_aton(opts['--listen-mac']) if opts['--listen-mac'] else mymac
    pace = max(1, int(opts['--pace']))
    got, errors = {}, {}
    sent = 0

    def drain(timeout):
        while select.select([rx], [], [], timeout)[0]:
            fr, addr = rx.recvfrom(65536)
            timeout = 0
            # Only frames arriving on the interface (not our own, which a
            # packet socket also sees as PACKET_OUTGOING).
            if addr[2] == socket.PACKET_OUTGOING or fr[:6] != listen:
                continue
            if len(fr) < 42 + P.HDR_LEN or fr[12:14] != b'\x08\x00' or fr[23] != 17:
                continue
            ihl = (fr[14] & 0xf) * 4
            sport = struct.unpack('!H', fr[14 + ihl:16 + ihl])[0]
            if sport != P.UDP_PORT:
                continue
            h = P.hdr_unpack(fr[14 + ihl + 8:])
            name = P.MSG_NAME.get(h['type'], str(h['type']))
            if h['type'] == P.MSG['NACK']:
                name += '/' + P.NACK_NAME.get(h['reason'], str(h['reason']))
            got[name] = got.get(name, 0) + 1

    t0 = time.monotonic()
    for i, fr in enumerate(frames):
        try:
            tx.send(fr)
            sent += 1
        except OSError as e:
            errors[e.strerror] = errors.get(e.strerror, 0) + 1
        if (i + 1) % pace == 0:
            drain(0)
            # Sleep off the rest of the millisecond this batch was given.
            due = t0 + (i + 1) / pace / 1000.0
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    end = time.monotonic() + float(opts['--linger'])
    while time.monotonic() < end:
        drain(end - time.monotonic())
    print(json.dumps({'sent': sent, 'errors': errors, 'answers': got,
                      'seconds': round(time.monotonic() - t0, 3)}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
