#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
#
# Where a small allreduce's time goes (issue 15): an emulated rack in
# aggregator mode (incad behind a Linux bridge), inca-bench doing one
# message size on every worker, and a packet capture on every port of the
# bridge, so that each INCA frame is seen twice with kernel timestamps:
# entering the bridge from its sender and leaving it towards its receiver.
# Per chunk and rank that splits the time into
#
#   up       CONTRIB: worker port in -> incad port out (bridge, both tbfs,
#            veth)
#   wait     the last rank's CONTRIB at incad minus this rank's (skew)
#   incad    last CONTRIB out to incad -> first RESULT in from incad (its
#            wake-up, aggregation, transmit)
#   repl     first RESULT -> this rank's RESULT, both leaving incad
#   down     RESULT: incad port in -> worker port out
#   worker   the RESULT of a collective's last chunk out to this rank ->
#            its first CONTRIB of the next collective in (the worker's
#            wake-up, receive, the application, the next send: the part no
#            capture sees into)
#
# and prints the medians with the whole period (one collective's last
# chunk to the next one's, per rank). Asserts nothing.
#
#   tools/bench/latency_breakdown.sh [--workers N] [--bytes B] [--iters I]
#       [--rate RATE] [--incad-args "ARGS"] [--build DIR] [--out DIR]

set -o nounset -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"
RACK=$SRC/tools/rack
WORKERS=4
BYTES=4
ITERS=300
RATE=500mbit
INCAD_ARGS=
BUILD=
OUT=/tmp/inca-latency
NAME=lat$$

while [ $# -gt 0 ]; do
	case $1 in
	--workers) WORKERS=$2; shift 2 ;;
	--bytes) BYTES=$2; shift 2 ;;
	--iters) ITERS=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--incad-args) INCAD_ARGS=$2; shift 2 ;;
	--build) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	*) sed -n '/^#   tools\/bench/,/^$/s/^#   //p' "$0" >&2; exit 2 ;;
	esac
done

[ "$(id -u)" -eq 0 ] || die "run as root (network namespaces, DPDK)"
find_build
command -v tcpdump >/dev/null || die "tcpdump not found (apt-get install tcpdump)"
command -v tshark >/dev/null || die "tshark not found (apt-get install tshark)"
mkdir -p "$OUT" || die "cannot create $OUT"

INCAD_PID= CAP_PID=
cleanup()
{
	[ -n "$CAP_PID" ] && kill -INT "$CAP_PID" 2>/dev/null && wait "$CAP_PID" 2>/dev/null
	if [ -n "$INCAD_PID" ]; then
		kill -TERM "$INCAD_PID" 2>/dev/null
		wait "$INCAD_PID" 2>/dev/null
	fi
	rm -rf "/var/run/dpdk/$NAME"
	"$RACK" down --name "$NAME" >/dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 1' INT TERM

"$RACK" up --name "$NAME" --workers "$WORKERS" --mode aggregator --rate "$RATE" ||
	die "rack up failed"
"$RACK" conf --name "$NAME" --jobs 1 --nworkers "$WORKERS" --max-elems 360 --pool-size 256 \
	> "$OUT/incad.conf" || die "rack conf failed"
read -r -a extra <<< "$INCAD_ARGS"
"$RACK" exec --name "$NAME" agg "$INCAD" --no-huge -m 512 --no-pci -l 0 --file-prefix "$NAME" \
	--log-level lib.eal:error -- -c "$OUT/incad.conf" "${extra[@]}" > "$OUT/incad.log" 2>&1 &
INCAD_PID=$!
for _ in $(seq 100); do
	grep -q "lcore 0:" "$OUT/incad.log" 2>/dev/null && break
	sleep 0.1
done
grep -q "lcore 0:" "$OUT/incad.log" || die "incad did not start: $(tail -3 "$OUT/incad.log")"

# Every port of the bridge, with the kernel's timestamps and directions.
ip netns exec "$NAME-tor" tcpdump -i any -nn -s 128 --immediate-mode \
	-j adapter_unsynced --time-stamp-precision=nano -w "$OUT/cap.pcap" \
	udp port 18766 2> "$OUT/tcpdump.log" &
CAP_PID=$!
sleep 1
pids=()
for ((r = 0; r < WORKERS; r++)); do
	"$RACK" exec --name "$NAME" "$r" "$BENCH" -a 10.77.0.1 -j 1 -t 0x494E4341 -n "$WORKERS" \
		-r "$r" -s "$BYTES" -d fp32 -o sum -i "$ITERS" -x 20 -U 1500 -E 360 --csv \
		> "$OUT/bench.r$r.out" 2> "$OUT/bench.r$r.err" &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || die "inca-bench failed: $(tail -2 "$OUT"/bench.r*.err)"
done
sleep 0.5
kill -INT "$CAP_PID" 2>/dev/null
wait "$CAP_PID" 2>/dev/null
CAP_PID=
IFMAP=$(ip -n "$NAME-tor" -o link show | awk -F': ' '{ split($2, a, "@"); print $1 "=" a[1] }' |
	tr '\n' ' ')

tshark -r "$OUT/cap.pcap" -T fields -E separator=, -e frame.time_epoch -e sll.ifindex \
	-e sll.pkttype -e udp.payload > "$OUT/frames.csv" 2> "$OUT/tshark.log" ||
	die "tshark failed: $(tail -2 "$OUT/tshark.log")"

/usr/bin/python3 - "$OUT/frames.csv" "$WORKERS" "$BYTES" "$IFMAP" \
	"$(awk -F, 'NR == 2 { print $11 }' "$OUT/bench.r0.out")" <<'EOF'
import statistics as st
import sys

path, n, nbytes, ifmap, bench_median = sys.argv[1], int(sys.argv[2]), sys.argv[3], \
    sys.argv[4], sys.argv[5]
names = dict(kv.split('=') for kv in ifmap.split())
CONTRIB, RESULT = 1, 2
# (type, rank, seq) -> {'w_in','agg_out'} or {'agg_in','w_out'}: the bridge's view
ev = {}
last_chunks = set()   # seq of each collective's last chunk (flag LAST)
for line in open(path):
    t, ifi, pkttype, payload = line.strip().split(',')
    if not payload:
        continue
    b = bytes.fromhex(payload.replace(':', ''))
    if len(b) < 32:
        continue
    mtype, rank, seq = b[1], int.from_bytes(b[6:8], 'big'), int.from_bytes(b[16:20], 'big')
    if mtype == CONTRIB and b[14] & 0x04:
        last_chunks.add(seq)
    if mtype not in (CONTRIB, RESULT) or b[14] & 0x02:      # skip retransmissions, replays
        continue
    port = names.get(ifi, ifi)
    into_bridge = pkttype != '4'          # 4: outgoing from this namespace
    key = (mtype, rank, seq)
    d = ev.setdefault(key, {})
    if mtype == CONTRIB:
        d.setdefault('w_in' if into_bridge else 'agg_out', float(t))
    else:
        d.setdefault('agg_in' if into_bridge else 'w_out', float(t))

seqs = sorted({k[2] for k in ev})
parts = {k: [] for k in ('up', 'wait', 'incad', 'repl', 'down', 'worker', 'period')}
for s in seqs:
    c = [ev.get((CONTRIB, r, s), {}) for r in range(n)]
    res = [ev.get((RESULT, r, s), {}) for r in range(n)]
    if not all('w_in' in x and 'agg_out' in x for x in c) or \
       not all('agg_in' in x and 'w_out' in x for x in res):
        continue
    last_in = max(x['agg_out'] for x in c)
    first_out = min(x['agg_in'] for x in res)
    for r in range(n):
        nxt = ev.get((CONTRIB, r, s + 1), {})
        parts['up'].append(c[r]['agg_out'] - c[r]['w_in'])
        parts['wait'].append(last_in - c[r]['agg_out'])
        parts['repl'].append(res[r]['agg_in'] - first_out)
        parts['down'].append(res[r]['w_out'] - res[r]['agg_in'])
        nlast = min((x for x in last_chunks if x > s), default=None)
        if s in last_chunks and 'w_in' in nxt:
            parts['worker'].append(nxt['w_in'] - res[r]['w_out'])
            if nlast is not None and 'w_in' in ev.get((CONTRIB, r, nlast), {}):
                parts['period'].append(ev[(CONTRIB, r, nlast)]['w_in'] - c[r]['w_in'])
    parts['incad'].append(first_out - last_in)

print('# %d workers, %s bytes, %d chunks seen whole; inca-bench median %s us per allreduce'
      % (n, nbytes, len(parts['incad']), bench_median))
print('# worker and period per collective; the others per chunk')
print('# medians in microseconds (per rank and chunk; incad per chunk)')
for k in ('worker', 'up', 'wait', 'incad', 'repl', 'down', 'period'):
    v = parts[k]
    if v:
        print('%-8s %9.1f   (p10 %.1f, p90 %.1f)' % (k, st.median(v) * 1e6,
              st.quantiles(v, n=10)[0] * 1e6, st.quantiles(v, n=10)[-1] * 1e6))
EOF
