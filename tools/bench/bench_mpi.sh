#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
#
# What libinca-mpi (the PMPI interposer) costs on top of libinca called
# directly, for large messages. Prints figures; asserts nothing.
#
#   tools/bench/bench_mpi.sh [--build DIR] [--np N] [--runs R] [--sizes B,B,...]
#                            [--rate RATE] [--min-time SEC] [--spread] [--routes]
#                            [--order rotate|balanced]
#
# Method. A rack (tools/rack) of one worker namespace in aggregator mode,
# incad in the agg namespace with two static jobs of N workers. One mpirun
# of N ranks in the worker namespace runs bench_mpi under
# LD_PRELOAD=libinca-mpi.so: the interposer joins job 1, bench_mpi joins job
# 2 itself, and for each size it makes R runs of pairs of calls on the same
# buffers: MPI_Allreduce (fp32 sum, through the interposer and job 1) and
# inca_allreduce (job 2), the order alternating from pair to pair, each run
# long enough for --min-time. It prints the median time per call of both
# and the overhead, median(mpi) / median(direct) - 1, and the median of the
# per-run ratios ("paired"). The same aggregator, buffers and
# process serve both sides, so the difference is the interposer's.
#
# --spread puts each rank in its own worker namespace (its own address and
# link, limited to --rate), as on separate hosts: mpirun runs in the
# bridge's namespace, which gets the address 10.77.0.250 so that the ranks
# reach its PMIx server, and starts rank i as 'ip netns exec NAME-wi'.
# Without it all ranks share worker 0's namespace and link.
# --routes: dynamic path selection instead (docs/mpi.md): the interposer
# runs with INCA_MPI_ROUTE=auto and bench_mpi --routes times, in triples of
# calls, job 2's inca_allreduce (the INCA route alone), PMPI_Allreduce (the
# host route alone) and MPI_Allreduce (auto, unless BENCH_ENV sets
# INCA_MPI_ROUTE); default sizes 4 B .. 64 MiB in
# powers of 4. It prints auto / min(inca, host) per size. The triples
# follow a carry-over balanced order (each side after each other side
# equally often); --order rotate takes the (i + k) mod 3 rotation of
# earlier versions, which let MPI_Allreduce follow inca_allreduce twice as
# often as PMPI_Allreduce (docs/benchmarks.md, "The interposer's overhead").
# BENCH_ENV adds mpirun options (without --spread), e.g.
# BENCH_ENV='-x INCA_MPI_KEEPALIVE=0'.

set -o nounset -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BUILD=
NP=4
RUNS=7
SIZES=1048576,4194304,16777216
RATE=0
MIN_TIME=0.5
SPREAD=0
ROUTES=
ORDER=balanced

while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--np) NP=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--min-time) MIN_TIME=$2; shift 2 ;;
	--spread) SPREAD=1; shift ;;
	--routes) ROUTES=--routes; shift ;;
	--order) ORDER=$2; shift 2 ;;
	*) sed -n 's/^#   //p' "$0" >&2; exit 2 ;;
	esac
done
if [ -n "$ROUTES" ]; then
	[ "$SIZES" = 1048576,4194304,16777216 ] &&
		SIZES=4,16,64,256,1024,4096,16384,65536,262144,1048576,4194304,16777216,67108864
	# BENCH_ENV='-x INCA_MPI_ROUTE=host' times the interposer's pinned
	# route against PMPI instead (an A/A check of the method).
	case ${BENCH_ENV:-} in
	*INCA_MPI_ROUTE=*) ;;
	*) BENCH_ENV="${BENCH_ENV:-} -x INCA_MPI_ROUTE=auto" ;;
	esac
fi
if [ -z "$BUILD" ]; then
	for b in "$SRC"/build "$SRC"/build*; do
		[ -e "$b/integrations/mpi/libinca-mpi.so" ] && BUILD=$b && break
	done
fi
PRELOAD=$BUILD/integrations/mpi/libinca-mpi.so
BENCH=$BUILD/integrations/mpi/bench_mpi
INCAD=$BUILD/daemon/incad
for f in "$PRELOAD" "$BENCH" "$INCAD"; do
	[ -e "$f" ] || { echo "bench_mpi: $f not built (--build DIR)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench_mpi: must run as root (network namespaces)" >&2; exit 1; }

NAME=jbench$$
RACK="$SRC/tools/rack"
TMP=$(mktemp -d /tmp/bench_mpi.XXXXXX)
INCAD_PID=
cleanup()
{
	[ -n "$INCAD_PID" ] && kill -TERM "$INCAD_PID" 2>/dev/null && wait "$INCAD_PID" 2>/dev/null
	"$RACK" down --name "$NAME" 2>/dev/null
	rm -rf "$TMP" /var/run/dpdk/"$NAME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

WORKERS=1
[ "$SPREAD" = 1 ] && WORKERS=$NP
"$RACK" up --name "$NAME" --workers "$WORKERS" --mode aggregator --rate "$RATE" || exit 1
cat >"$TMP/incad.conf" <<EOF
mode = "aggregator";
ports = ( { name = "p0"; devargs = "net_af_packet0,iface=eth0,qdisc_bypass=0";
            ipv4 = "10.77.0.1/24"; } );
tenants = ( { name = "bench"; token = 0x494e4341; job_ids = [1, 2]; } );
jobs = ( { id = 1; tenant = "bench"; nworkers = $NP; },
         { id = 2; tenant = "bench"; nworkers = $NP; } );
EOF
ip netns exec "$NAME-agg" "$INCAD" --no-huge -m 512 --no-pci --file-prefix "$NAME" -l 0 \
	--log-level lib.eal:error -- -c "$TMP/incad.conf" >"$TMP/incad.log" 2>&1 &
INCAD_PID=$!
for _ in $(seq 1 100); do
	[ -S /var/run/dpdk/"$NAME"/dpdk_telemetry.v2 ] && break
	kill -0 "$INCAD_PID" 2>/dev/null || { cat "$TMP/incad.log" >&2; exit 1; }
	sleep 0.2
done
sleep 0.5

ENVS=(-x INCA_AGGREGATOR=10.77.0.1 -x INCA_JOB=1 -x INCA_BENCH_JOB=2 -x INCA_TOKEN=0x494e4341)
MCA=(--mca btl self,tcp --mca mpi_yield_when_idle 1)
echo "# incad: $INCAD; rack $NAME, $WORKERS worker namespace(s), rate $RATE; $(nproc) CPUs"
if [ "$SPREAD" = 1 ]; then
	ip -n "$NAME-tor" addr add 10.77.0.250/24 dev br0 || exit 1
	APPS=()
	for ((i = 0; i < NP; i++)); do
		[ $i -gt 0 ] && APPS+=(:)
		# -x reaches only the first app context of an MPMD line: each
		# rank gets its environment from env(1) instead.
		APPS+=(-np 1 ip netns exec "$NAME-w$i" env LD_PRELOAD="$PRELOAD" INCA_JOB=1
			INCA_AGGREGATOR=10.77.0.1 INCA_BENCH_JOB=2 INCA_TOKEN=0x494e4341
			INCA_MPI_ROUTE=${ROUTES:+auto} "$BENCH" --sizes "$SIZES" --runs "$RUNS"
			--min-time "$MIN_TIME" $ROUTES --order "$ORDER")
	done
	# shellcheck disable=SC2086
	PMIX_MCA_ptl_tcp_if_include=br0 ip netns exec "$NAME-tor" mpirun --allow-run-as-root \
		--oversubscribe "${MCA[@]}" --mca btl_tcp_if_include 10.77.0.0/24 \
		--mca oob_tcp_if_include br0 ${BENCH_ENV:-} "${APPS[@]}"
else
	# shellcheck disable=SC2086
	ip netns exec "$NAME-w0" mpirun --allow-run-as-root --oversubscribe -np "$NP" \
		"${MCA[@]}" --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
		-x LD_PRELOAD="$PRELOAD" "${ENVS[@]}" ${BENCH_ENV:-} \
		"$BENCH" --sizes "$SIZES" --runs "$RUNS" --min-time "$MIN_TIME" $ROUTES --order "$ORDER"
fi
