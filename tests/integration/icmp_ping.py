# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""ICMP echo from a raw socket: icmp_ping.py DEST COUNT TIMEOUT_S.

Prints one JSON object: the number of replies from DEST among COUNT
requests. Exits 0 when every request got its reply. No dependency on the
ping program.
"""

import json
import os
import select
import socket
import struct
import sys
import time


def csum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def main():
    dest, count, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident = os.getpid() & 0xffff
    got = 0
    for seq in range(count):
        payload = struct.pack('!d', time.time()) + bytes(range(48))
        hdr = struct.pack('!BBHHH', 8, 0, 0, ident, seq)
        pkt = struct.pack('!BBHHH', 8, 0, csum(hdr + payload), ident, seq) + payload
        s.sendto(pkt, (dest, 0))
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            r, _, _ = select.select([s], [], [], end - time.monotonic())
            if not r:
                break
            data, addr = s.recvfrom(2048)
            ihl = (data[0] & 0xf) * 4
            icmp = data[ihl:]
            if addr[0] != dest or len(icmp) < 8:
                continue
            t, code, _, rid, rseq = struct.unpack('!BBHHH', icmp[:8])
            if t == 0 and rid == ident and rseq == seq:
                if icmp[8:] != payload or csum(icmp) != 0:
                    print(json.dumps({'error': 'corrupt echo reply'}))
                    return 2
                got += 1
                break
    print(json.dumps({'sent': count, 'received': got}))
    return 0 if got == count else 1


if __name__ == '__main__':
    sys.exit(main())
