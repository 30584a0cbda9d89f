#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
#
# The backend 'inca''s route selector (INCA_TORCH_ROUTE=auto, docs/torch.md)
# against each route alone, measured in the same run. Prints figures;
# asserts nothing.
#
#   tools/bench/bench_torch_route.sh [--build DIR] [--np N] [--runs R]
#                                    [--sizes B,B,...] [--min-time SEC] [--rate RATE]
#
# Method. A rack (tools/rack) of one worker namespace in aggregator mode,
# incad in the agg namespace with a static job of N workers; N processes of
# tools/bench/torch_route_bench.py in the worker namespace on the backend
# 'inca' with INCA_TORCH_ROUTE=auto, gloo on the namespace's loopback. For
# each size (default 4 B .. 64 MiB in powers of 4) R runs of rounds of three
# all_reduce calls: the INCA route alone, the host (gloo) route alone and
# auto, in a carry-over balanced order (torch_route_bench.py). It prints the
# medians of the slowest rank's time per call and auto / min(inca, host),
# with the date and the load average before and after.

set -o nounset -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BUILD=
NP=4
RUNS=5
SIZES=
MIN_TIME=0.5
RATE=0

while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--np) NP=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--min-time) MIN_TIME=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	*) sed -n 's/^#   //p' "$0" >&2; exit 2 ;;
	esac
done
. "$HERE/lib.sh"
if [ -z "$BUILD" ]; then
	for b in "$SRC"/build*; do
		[ -x "$b/daemon/incad" ] && [ -e "$b/lib/libinca.so" ] && BUILD=$b && break
	done
fi
INCAD=$BUILD/daemon/incad
LIBINCA=$BUILD/lib/libinca.so
[ -x "$INCAD" ] && [ -e "$LIBINCA" ] || die "no incad / libinca.so in '$BUILD' (--build DIR)"
[ "$(id -u)" = 0 ] || die "must run as root (network namespaces)"
/usr/bin/python3 -c 'import torch' 2>/dev/null || die "python3-torch is not installed"

NAME=jtrb$$
RACK="$SRC/tools/rack"
TMP=$(mktemp -d /tmp/bench_torch_route.XXXXXX)
INCAD_PID=
cleanup()
{
	stop_incad
	"$RACK" down --name "$NAME" 2>/dev/null
	rm -rf "$TMP" /var/run/dpdk/"$NAME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$RACK" up --name "$NAME" --workers 1 --mode aggregator --rate "$RATE" || exit 1
cat >"$TMP/incad.conf" <<EOF
mode = "aggregator";
ports = ( { name = "p0"; devargs = "net_af_packet0,iface=eth0,qdisc_bypass=0";
            ipv4 = "10.77.0.1/24"; } );
tenants = ( { name = "bench"; token = 0x494e4341; job_ids = [1, 1]; } );
jobs = ( { id = 1; tenant = "bench"; nworkers = $NP; } );
EOF
start_incad "$NAME-agg" "$TMP/incad.conf" "$NAME" "$TMP/incad.log"
sleep 0.5

echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)," \
	"$(nproc) CPUs; incad: $INCAD; rack $NAME, rate $RATE"
ip netns exec "$NAME-w0" env INCA_LIB="$LIBINCA" INCA_AGGREGATOR=10.77.0.1 INCA_JOB=1 \
	INCA_TOKEN=0x494e4341 INCA_TORCH_ROUTE="${INCA_TORCH_ROUTE:-auto}" OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo \
	/usr/bin/python3 "$HERE/torch_route_bench.py" --world "$NP" --runs "$RUNS" \
	--min-time "$MIN_TIME" ${SIZES:+--sizes "$SIZES"}
rc=$?
echo "# done $(date -u '+%H:%M:%S UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
