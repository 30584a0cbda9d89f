#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
#
# FSDP-style training step time over the backend 'inca' against gloo, on
# the same emulated rack, in the same run. Prints figures; asserts nothing.
#
#   tools/bench/bench_torch_shard.sh [--build DIR] [--np N[,N...]] [--runs R]
#                                    [--steps S] [--warmup W] [--hidden H]
#                                    [--rate RATE] [--mtu MTU]
#
# The trainer is tests/torch/shard_check.py (docs/torch.md, "Sharded
# training"): parameters flat-sharded over the ranks, each step an
# all-gather of the parameters, forward and backward on the rank's batch,
# a reduce-scatter (SUM) of the gradient and an SGD update of the rank's
# shard. On 'inca' the two collectives are all_gather_into_tensor and
# reduce_scatter_tensor (inca_allgather(), inca_reduce_scatter(): routed
# chunks); gloo of torch 1.13 has neither, so on gloo they are the
# reference forms shard_check.py uses: all_gather into a list of views, and
# all_reduce of the whole gradient of which each rank keeps its shard. The
# figures therefore compare what a user of each backend can run here, not
# the same algorithm.
#
# Method. For each N a rack (tools/rack up --workers N --mode aggregator
# --rate RATE: one namespace per rank behind a kernel bridge, tbf-shaped
# links) and an incad in the agg namespace with a static job of N workers.
# Each rank is a process in its own namespace; gloo's traffic (and the
# rendezvous, at worker 0) crosses the same shaped links and the bridge,
# INCA's goes to incad over them. R runs; each run trains S steps once per
# backend, the order alternating between runs. A step's time is the
# slowest rank's sum of its three phases (the loss evaluation is left out);
# a run's figure is the median over steps W+1..S, and the table gives the
# median over runs, each phase's too, and inca / gloo. The model is
# train_check.py's MLP with H hidden units: (64 + 1) x H + (H + 1) x 10
# fp32 parameters (H = 16384: 1.23 M, 4.9 MB).

set -o nounset -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BUILD=
NPS=2,4
RUNS=3
STEPS=30
WARMUP=5
HIDDEN=16384
RATE=500mbit
MTU=1500

while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--np) NPS=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--steps) STEPS=$2; shift 2 ;;
	--warmup) WARMUP=$2; shift 2 ;;
	--hidden) HIDDEN=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--mtu) MTU=$2; shift 2 ;;
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
CHECK=$SRC/tests/torch/shard_check.py
[ -x "$INCAD" ] && [ -e "$LIBINCA" ] || die "no incad / libinca.so in '$BUILD' (--build DIR)"
[ "$(id -u)" = 0 ] || die "must run as root (network namespaces)"
[ "$WARMUP" -lt "$STEPS" ] || die "--warmup must be below --steps"
/usr/bin/python3 -c 'import torch' 2>/dev/null || die "python3-torch is not installed"

NAME=jtsb$$
RACK="$SRC/tools/rack"
TMP=$(mktemp -d /tmp/bench_torch_shard.XXXXXX)
INCAD_PID=
PIDS=
cleanup()
{
	[ -n "$PIDS" ] && kill -TERM $PIDS 2>/dev/null
	stop_incad
	"$RACK" down --name "$NAME" >/dev/null 2>&1
	rm -rf "$TMP" /var/run/dpdk/"$NAME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# train N BACKEND RUN: one training of N ranks, each in its own namespace;
# rank 0 writes every rank's record to $TMP/BACKEND_nN_runRUN.pt.
train()
{
	local n=$1 be=$2 run=$3 r rc=0 port out
	port=$((20000 + ($$ + 97 * run + 7 * n) % 20000))
	[ "$be" = gloo ] && port=$((port + 1))
	out=$TMP/${be}_n${n}_run$run
	PIDS=
	for ((r = 0; r < n; r++)); do
		INCA_LIB="$LIBINCA" INCA_AGGREGATOR=10.77.0.1 INCA_JOB=1 INCA_TOKEN=0x494E4341 \
			INCA_MTU="$MTU" INCA_GIVE_UP_MS=15000 OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=eth0 \
			timeout 900 "$RACK" exec --name "$NAME" "$r" /usr/bin/python3 "$CHECK" \
			--world "$n" --backend "$be" --steps "$STEPS" --loss-every "$STEPS" \
			--hidden "$HIDDEN" --rank "$r" --master "10.77.0.10:$port" --out "$out.pt" \
			> "$out.r$r.log" 2>&1 &
		PIDS="$PIDS $!"
	done
	for r in $PIDS; do
		wait "$r" || rc=1
	done
	PIDS=
	if [ $rc != 0 ]; then
		echo "$ME: $be, N=$n, run $run failed:" >&2
		tail -n 5 "$out".r*.log >&2
	fi
	return $rc
}

echo "# start $(date -u '+%F %T UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)," \
	"$(nproc) CPUs; $RATE links, MTU $MTU, aggregator mode; $STEPS steps ($WARMUP" \
	"warm-up), hidden $HIDDEN"
status=0
IFS=, read -r -a NLIST <<< "$NPS"
for n in "${NLIST[@]}"; do
	"$RACK" up --name "$NAME" --workers "$n" --mode aggregator --rate "$RATE" --mtu "$MTU" \
		> /dev/null || die "rack up failed"
	# As bench_allreduce.sh: the largest 32-bit payload one frame holds.
	"$RACK" conf --name "$NAME" --jobs 1 --nworkers "$n" --pool-size 256 \
		--max-elems $(((MTU - 60) / 4 > 2048 ? 2048 : (MTU - 60) / 4)) \
		> "$TMP/incad.conf" || die "rack conf failed"
	start_incad "$NAME-agg" "$TMP/incad.conf" "$NAME" "$TMP/incad_n$n.log"
	for ((run = 1; run <= RUNS; run++)); do
		order="inca gloo"
		[ $((run % 2)) = 0 ] && order="gloo inca"
		for be in $order; do
			echo "   N=$n run $run/$RUNS: $be (load $(cut -d' ' -f1 /proc/loadavg))"
			train "$n" "$be" "$run" || status=1
		done
	done
	stop_incad
	"$RACK" down --name "$NAME" > /dev/null 2>&1
done

/usr/bin/python3 - "$TMP" "$WARMUP" "$NPS" <<'EOF' || status=1
import glob, os, statistics, sys
import torch
tmp, warm, nps = sys.argv[1], int(sys.argv[2]), [int(n) for n in sys.argv[3].split(',')]
med = statistics.median
rows = {}
nparams = 0
for path in sorted(glob.glob(os.path.join(tmp, '*_n*_run*.pt'))):
    be, n, run = os.path.basename(path)[:-3].split('_')
    outs = torch.load(path)
    nparams = outs[0]['nparams']
    # Per step the slowest rank: of the step and of each phase.
    steps = list(zip(*[o['times'] for o in outs]))[warm:]
    step = med(max(sum(t) for t in ranks) for ranks in steps)
    phases = [med(max(t[k] for t in ranks) for ranks in steps) for k in range(3)]
    rows.setdefault((int(n[1:]), be), []).append([step] + phases)
print('# model: %d fp32 parameters (%.2f MB); times in ms, medians over runs of each run\'s '
      'median over steps of the slowest rank' % (nparams, nparams * 4 / 1e6))
print('%3s %-7s %4s %10s %10s %10s %10s   %s' % ('N', 'backend', 'runs', 'step', 'gather',
                                                'fwd+bwd', 'rs+update', 'each run (step)'))
for n in nps:
    for be in ('inca', 'gloo'):
        rs = rows.get((n, be), [])
        if not rs:
            continue
        m = [med(r[k] for r in rs) * 1e3 for k in range(4)]
        print('%3d %-7s %4d %10.1f %10.1f %10.1f %10.1f   %s' % (
            n, be, len(rs), m[0], m[1], m[2], m[3],
            ', '.join('%.1f' % (r[0] * 1e3) for r in rs)))
    if rows.get((n, 'inca')) and rows.get((n, 'gloo')):
        i = med(r[0] for r in rows[(n, 'inca')])
        g = med(r[0] for r in rows[(n, 'gloo')])
        print('%3d inca / gloo step time: %.3f' % (n, i / g))
EOF
echo "# end $(date -u '+%F %T UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
