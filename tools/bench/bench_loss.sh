#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
#
# Allreduce goodput against random loss: 4 workers (inca-bench, libinca) and
# incad in an emulated rack (tools/rack) with rate-limited links, nftables
# dropping the same fraction of INCA datagrams in each direction on every
# worker link. Prints one table row per loss rate and size: the median over
# RUNS runs of the mean allreduce time, the goodput S/time and its ratio to
# the link rate (1.0 = the in-network bound S/B), and the retransmissions.
# Every result is checked by inca-bench; a wrong one stops the benchmark.
# Asserts nothing else: it prints figures.
#
#   tools/bench/bench_loss.sh [--build DIR] [--runs N] [--rate MBIT] [--workers N]
#                             [--sizes B,B,...] [--loss P,P,...]   (P in per mille)
#
# Needs root (network namespaces, nftables). Removes its rack and incad on
# exit, Ctrl-C included.

set -o nounset -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
RACK=$SRC/tools/rack
PY=/usr/bin/python3
BUILD=
RUNS=3
RATE=500
NW=4
SIZES=65536,1048576,8388608
LOSS=0,1,10,50
PORT=18766

while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--workers) NW=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--loss) LOSS=$2; shift 2 ;;
	*) sed -n 's/^#   //p' "$0" >&2; exit 2 ;;
	esac
done
if [ -z "$BUILD" ]; then
	for b in "$SRC"/build*/; do
		[ -x "$b/daemon/incad" ] && [ -x "$b/tools/inca-bench" ] && BUILD=$b && break
	done
fi
INCAD=$BUILD/daemon/incad
BENCH=$BUILD/tools/inca-bench
[ -x "$INCAD" ] && [ -x "$BENCH" ] || { echo "bench_loss: no build (--build DIR)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench_loss: must run as root" >&2; exit 1; }

NAME=bloss$$
TMP=$(mktemp -d /tmp/bench_loss.XXXXXX)
INCAD_PID=

cleanup()
{
	[ -n "$INCAD_PID" ] && kill "$INCAD_PID" 2>/dev/null && wait "$INCAD_PID" 2>/dev/null
	"$RACK" down --name "$NAME" >/dev/null 2>&1
	rm -rf "$TMP" "/var/run/dpdk/$NAME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$RACK" up --name "$NAME" --workers "$NW" --rate "${RATE}mbit" >/dev/null 2>&1 ||
	{ echo "bench_loss: rack up failed" >&2; exit 1; }
eval "$("$RACK" env --name "$NAME")"
"$RACK" conf --name "$NAME" --nworkers "$NW" >"$TMP/incad.conf"
ip netns exec "$RACK_AGG_NS" "$INCAD" --no-huge -m 512 --no-pci -l 0 --file-prefix "$NAME" \
	-- -c "$TMP/incad.conf" >"$TMP/incad.log" 2>&1 &
INCAD_PID=$!
read -r -a NSS <<<"$RACK_WORKER_NS"

# Loss on the link: netdev ingress/egress of each worker's eth0, so that a
# sender sees no error, as with a frame lost on the wire.
set_loss()
{
	local ns k=$1
	for ns in "${NSS[@]}"; do
		ip netns exec "$ns" nft delete table netdev inca_loss 2>/dev/null
		[ "$k" -eq 0 ] && continue
		ip netns exec "$ns" nft -f - <<EOF || return 1
table netdev inca_loss {
	chain in {
		type filter hook ingress device eth0 priority 0; policy accept;
		udp sport $PORT numgen random mod 1000 < $k drop
	}
	chain out {
		type filter hook egress device eth0 priority 0; policy accept;
		udp dport $PORT numgen random mod 1000 < $k drop
	}
}
EOF
	done
}

# One run: every rank in its namespace; rank 0's JSON in $TMP/out.
run_once()
{
	local r pids=() rc=0
	for ((r = 0; r < NW; r++)); do
		ip netns exec "${NSS[$r]}" "$BENCH" -a "$RACK_AGG_IP" -j 1 -t 0x494E4341 -r $r \
			-n "$NW" -s "$SIZES" -i 10 -I 3 -x 1 -L "$RATE" -G 5000 --json \
			>"$TMP/out.$r" 2>"$TMP/err.$r" &
		pids+=($!)
	done
	for r in "${pids[@]}"; do
		wait "$r" || rc=1
	done
	[ $rc = 0 ] || { cat "$TMP"/err.* >&2; return 1; }
	cp "$TMP/out.0" "$TMP/out"
}

# incad is up when a HELLO is answered.
for i in $(seq 1 100); do
	ip netns exec "${NSS[0]}" "$PY" -c "import sys; sys.path.insert(0, '$SRC/tests/integration')
import inca_proto as P; P.Worker('$RACK_AGG_IP', 0, 0, 0, 1).hello()" >/dev/null 2>&1 && break
	kill -0 "$INCAD_PID" 2>/dev/null || { cat "$TMP/incad.log" >&2; exit 1; }
done

echo "# bench_loss: $NW workers, ${RATE} Mbit/s links, loss each way on every worker link," \
	"median of $RUNS runs"
printf '%8s %10s %12s %14s %8s %12s\n' loss_% bytes time_us goodput_Mbit util retx/run
IFS=, read -r -a LOSSES <<<"$LOSS"
for k in "${LOSSES[@]}"; do
	set_loss "$k" || { echo "bench_loss: nft failed" >&2; exit 1; }
	: >"$TMP/runs"
	for ((n = 0; n < RUNS; n++)); do
		run_once || { echo "bench_loss: a run failed (loss $k per mille)" >&2; exit 1; }
		cat "$TMP/out" >>"$TMP/runs"
		echo >>"$TMP/runs"
	done
	"$PY" - "$TMP/runs" "$k" "$RATE" <<'EOF' || exit 1
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
k, rate = int(sys.argv[2]), float(sys.argv[3])
for i, row in enumerate(runs[0]['results']):
    rows = [r['results'][i] for r in runs]
    if any(x['errors'] for x in rows):
        sys.exit('bench_loss: wrong results at %d bytes' % row['bytes'])
    t = statistics.median(x['avg_us'] for x in rows)
    gp = row['bytes'] * 8 / t
    retx = statistics.median(r['stats']['retransmits'] for r in runs)
    print('%8.1f %10d %12.1f %14.1f %8.3f %12d' % (k / 10, row['bytes'], t, gp, gp / rate,
                                                    retx))
EOF
done
