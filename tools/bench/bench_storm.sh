#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
#
# Another job's goodput during a JOIN/LEAVE storm from one tenant, against
# the same job alone (issue 17). incad runs its control plane on the I/O
# lcore, the one that receives every packet: a tenant that loops JOIN
# (creating a dynamic job, whose slot pool is allocated and cleared) and
# LEAVE (resetting its sets after an RCU grace period, then deleting it)
# takes that lcore's time from every other job. This measures how much.
#
# Setup: an emulated rack in aggregator mode (tools/rack), incad on one
# lcore with two tenants. Tenant A: a static job of N workers (inca-bench,
# one per worker namespace, verified int32 sum allreduces of one size).
# Tenant B: dynamic jobs, and one more namespace, the storm host, with H
# source addresses; tools/bench/join_storm.py loops JOIN (a job of
# one worker, P slots of the configured max_elems) and LEAVE from each
# address, D jobs at a time, as fast as incad answers.
#
# Each run measures three conditions one after the other, in an order that
# rotates from run to run: A alone; A during the storm; A during "ping",
# the control experiment (the same client loop with cheap round trips:
# HEARTBEATs for a job that does not exist, answered with NACK UNKNOWN_JOB
# after one lookup), which separates the storm's control-plane work from
# its packets and its client's CPU. Per condition and incad meter setting
# it prints the medians over runs of A's goodput (message bytes / mean
# allreduce time), its median and slowest allreduce, the ratio to A alone,
# the storm's completed JOIN+LEAVE cycles per second, the I/O lcore's share
# of busy polls (/incad/lcores) and its thread's CPU use (/proc), and
# incad's drops during the runs (/incad/drops). --meter default keeps
# control.rate (1000 HELLO+JOIN per second per source, burst 256); off
# lifts it (control = { rate = 0; }), as a tenant with many hosts would
# get around a per-source meter. Asserts nothing: it prints figures (a
# wrong allreduce result, which inca-bench checks, stops it).
#
#   tools/bench/bench_storm.sh [--runs R] [--secs S] [--size B] [--workers N]
#       [--storm-hosts H] [--storm-depth D] [--pool-size P] [--meter default,off]
#       [--rate RATE] [--no-ping] [--perf] [--eal-args "ARGS"] [--incad-args "ARGS"]
#       [--build DIR] [--out DIR]
#
# Defaults: 3 runs of 4 s per condition, 256 KiB, 2 workers, 1 storm
# address, 4 jobs in flight per address, 64-slot pools, both meter
# settings, unlimited links: under 2 minutes on the 2-core host.
#
# CPUs: incad's lcore is pinned to CPU 0 (-l 0); the workers and the storm
# client are pinned to the other CPUs, so that the storm reaches incad only
# through its packets, as from another host. On a 2-core host they share
# one CPU: the figures are of a shared CPU, which "ping" makes visible.
#
# Needs root (network namespaces). Removes its rack, incad, the storm and
# its temporary files on every exit, Ctrl-C included; --out keeps the logs.

set -o nounset -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"
RACK=$SRC/tools/rack
INCACTL=$SRC/tools/incactl
PY=/usr/bin/python3

RUNS=3
SECS=4
SIZE=262144
NW=2
HOSTS=1
DEPTH=4
POOL=64
METERS=default,off
RATE=0
PING=1
PERF=0
PERF_PID=
STORM_RATE=0
INCAD_ARGS=
EAL_ARGS=
BUILD=
OUT=
NAME=storm$$
ELEMS=360
TOKEN_A=0x494E4341
TOKEN_B=0x53544F52
JOB_B=1000

usage()
{
	sed -n '/^#   tools\/bench/,/^$/s/^#   //p' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || [ "$1" = --no-ping ] || [ "$1" = --perf ] || usage
	case $1 in
	--runs) RUNS=$2; shift 2 ;;
	--secs) SECS=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--workers) NW=$2; shift 2 ;;
	--storm-hosts) HOSTS=$2; shift 2 ;;
	--storm-depth) DEPTH=$2; shift 2 ;;
	--pool-size) POOL=$2; shift 2 ;;
	--meter) METERS=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--no-ping) PING=0; shift ;;
	--perf) PERF=1; shift ;;
	--incad-args) INCAD_ARGS=$2; shift 2 ;;
	--eal-args) EAL_ARGS=$2; shift 2 ;;
	--build) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	*) usage ;;
	esac
done

[ "$(id -u)" -eq 0 ] || die "run as root (network namespaces, DPDK)"
for v in RUNS SECS SIZE NW HOSTS DEPTH POOL; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 1 ] || die "--${v,,}: a positive integer"
done
[ "$HOSTS" -le 50 ] || die "--storm-hosts: at most 50"
[ "$NW" -le 31 ] || die "--workers: at most 31"
IFS=, read -r -a METER_LIST <<<"$METERS"
for m in "${METER_LIST[@]}"; do
	case $m in default | off) ;; *) die "--meter: default, off or both (default,off)" ;; esac
done
find_build

TMP=$(mktemp -d /tmp/bench_storm.XXXXXX) || die "mktemp failed"
INCAD_PID=
STORM_PID=
BENCH_PIDS=

cleanup()
{
	set +e
	[ -n "$BENCH_PIDS" ] && kill -TERM $BENCH_PIDS 2>/dev/null
	[ -n "$PERF_PID" ] && kill -INT "$PERF_PID" 2>/dev/null && wait "$PERF_PID" 2>/dev/null
	[ -n "$STORM_PID" ] && kill -TERM "$STORM_PID" 2>/dev/null && wait "$STORM_PID" 2>/dev/null
	stop_incad
	"$RACK" down --name "$NAME" >/dev/null 2>&1
	rm -rf "/var/run/dpdk/$NAME"
	if [ -n "$OUT" ]; then
		mkdir -p "$OUT" && cp -r "$TMP"/. "$OUT"/
	fi
	rm -rf "$TMP"
}

trap cleanup EXIT
trap 'exit 130' INT TERM

# incad's lcore gets CPU 0; everything else the others (if there are any).
NCPU=$(nproc)
OTHERS=()
[ "$NCPU" -ge 2 ] && OTHERS=(taskset -c "1-$((NCPU - 1))")

# Workers 0..N-1 are tenant A's; worker N is the storm host, with its own
# address and H-1 more on the same interface.
"$RACK" up --name "$NAME" --workers $((NW + 1)) --mode aggregator --rate "$RATE" \
	>"$TMP/rack.log" 2>&1 || die "rack up failed: $(tail -2 "$TMP/rack.log")"
STORM_NS=$NAME-w$NW
SRCS=10.77.0.$((10 + NW))
for ((h = 1; h < HOSTS; h++)); do
	ip -n "$STORM_NS" addr add "10.77.0.$((200 + h))/24" dev eth0 ||
		die "cannot add a storm address"
	SRCS=$SRCS,10.77.0.$((200 + h))
done

# incad's configuration: tenant A with one static job, tenant B with
# dynamic jobs and room for every pool the storm holds at once.
write_conf()
{
	local meter=$1 quota=$((POOL * DEPTH * HOSTS))
	cat <<EOF
mode = "aggregator";
workers = 1;
idle = { policy = "adaptive"; };
aggregation = { max_elems = $ELEMS; max_slots = $((quota + 256 > 4096 ? quota + 256 : 4096)); };
EOF
	[ "$meter" = off ] && echo 'control = { rate = 0; };'
	cat <<EOF
ports = ( { name = "p0"; devargs = "net_af_packet0,iface=eth0,qdisc_bypass=0";
            ipv4 = "10.77.0.1/24"; } );
tenants = (
	{ name = "A"; token = $TOKEN_A; job_ids = [1, 1]; slot_quota = 256;
	  sources = ["10.77.0.0/24"]; },
	{ name = "B"; token = $TOKEN_B; job_ids = [$JOB_B, $((JOB_B + 999))];
	  slot_quota = $quota; dynamic_jobs = true; sources = ["10.77.0.0/24"]; }
);
jobs = ( { id = 1; tenant = "A"; nworkers = $NW; pool_size = 256; } );
EOF
}

start_incad()
{
	local meter=$1 _ extra=() eal=()
	write_conf "$meter" >"$TMP/incad_$meter.conf"
	[ -n "$INCAD_ARGS" ] && read -r -a extra <<<"$INCAD_ARGS"
	[ -n "$EAL_ARGS" ] && read -r -a eal <<<"$EAL_ARGS"
	"$RACK" exec --name "$NAME" agg "$INCAD" --no-huge -m 512 --no-pci -l 0 \
		--file-prefix "$NAME" --log-level lib.eal:error "${eal[@]}" -- \
		-c "$TMP/incad_$meter.conf" "${extra[@]}" >"$TMP/incad_$meter.log" 2>&1 &
	INCAD_PID=$!
	for _ in $(seq 100); do
		grep -q "lcore 0:" "$TMP/incad_$meter.log" 2>/dev/null && return 0
		kill -0 "$INCAD_PID" 2>/dev/null || break
		sleep 0.1
	done
	die "incad did not start: $(tail -3 "$TMP/incad_$meter.log")"
}

# One JSON object with what the I/O lcore and incad have counted so far
# and its thread's CPU time (ticks).
sample()
{
	local ticks
	ticks=$(awk '{ print $14 + $15 }' "/proc/$INCAD_PID/task/$INCAD_PID/stat" 2>/dev/null)
	"$PY" - "$INCACTL" "$NAME" "${ticks:-0}" <<'EOF'
import json, subprocess, sys, time
ctl, prefix, ticks = sys.argv[1], sys.argv[2], int(sys.argv[3])
def q(*cmd):
    return json.loads(subprocess.run([ctl, '--prefix', prefix, '--json'] + list(cmd),
                                     check=True, capture_output=True, text=True).stdout)
lc = q('lcores')['0']
drops = q('drops', '--all')['drops']
print(json.dumps({'t': time.monotonic(), 'ticks': ticks, 'busy': lc['busy_polls'],
                  'empty': lc['empty_polls'], 'drops': drops}))
EOF
}

# Tenant B holds no slots (the storm's last jobs are gone), or 3 s passed.
wait_b_idle()
{
	local _
	for _ in $(seq 30); do
		"$INCACTL" --prefix "$NAME" --json tenants 2>/dev/null |
			"$PY" -c 'import json,sys; sys.exit(json.load(sys.stdin)["B"]["slots_used"] != 0)' &&
			return 0
		sleep 0.1
	done
	echo "bench_storm: tenant B still holds slots" >&2
}

# run_bench ITERS TAG: tenant A's allreduces; rank 0's JSON in $TMP/TAG.json.
run_bench()
{
	local iters=$1 tag=$2 r pids=() rc=0
	for ((r = 0; r < NW; r++)); do
		"${OTHERS[@]}" "$RACK" exec --name "$NAME" "$r" "$BENCH" -a 10.77.0.1 -j 1 \
			-t "$TOKEN_A" -n "$NW" -r "$r" -s "$SIZE" -d int32 -o sum -i "$iters" \
			-I "$iters" -x 2 -E "$ELEMS" -U 1500 --json \
			>"$TMP/$tag.r$r.out" 2>"$TMP/$tag.r$r.err" &
		pids+=($!)
	done
	BENCH_PIDS="${pids[*]}"
	for r in "${pids[@]}"; do
		wait "$r" || rc=1
	done
	BENCH_PIDS=
	[ $rc = 0 ] || { tail -n 3 "$TMP/$tag".r*.err >&2; return 1; }
	cp "$TMP/$tag.r0.out" "$TMP/$tag.json"
}

# start_storm MODE TAG [RATE]: the storm (or ping) client, in the background.
start_storm()
{
	local mode=$1 tag=$2 rate=${3:-0}
	"${OTHERS[@]}" "$RACK" exec --name "$NAME" "$NW" "$PY" "$HERE/join_storm.py" \
		--agg 10.77.0.1 --token "$TOKEN_B" --first-job "$JOB_B" --src "$SRCS" \
		--depth "$DEPTH" --pool-size "$POOL" --mode "$mode" --rate "$rate" \
		--out "$TMP/$tag.storm" >"$TMP/$tag.storm.log" 2>&1 &
	STORM_PID=$!
	# Let it reach its pace (and the meter its steady state) first.
	sleep 0.5
}

stop_storm()
{
	[ -n "$STORM_PID" ] || return 0
	kill -TERM "$STORM_PID" 2>/dev/null
	wait "$STORM_PID" 2>/dev/null
	STORM_PID=
}

# measure METER COND RUN ITERS: one condition's figures into $TMP/rows.
measure()
{
	local meter=$1 cond=$2 run=$3 iters=$4 tag=$1.$2.$3 before after ld
	ld=$(cut -d' ' -f1 /proc/loadavg)
	case $cond in
	storm) start_storm storm "$tag" ;;
	# As many cycles as the last storm completed, without their work.
	ping) start_storm ping "$tag" "$STORM_RATE" ;;
	esac
	before=$(sample) || die "telemetry failed"
	if [ "$PERF" = 1 ] && [ "$cond" = storm ] && [ "$run" = $((RUNS - 1)) ]; then
		perf record -F 4999 -g -t "$INCAD_PID" -o "$TMP/perf.$meter.data" \
			>"$TMP/perf.$meter.log" 2>&1 &
		PERF_PID=$!
	fi
	run_bench "$iters" "$tag" || die "inca-bench failed ($tag)"
	if [ -n "$PERF_PID" ]; then
		kill -INT "$PERF_PID" 2>/dev/null
		wait "$PERF_PID" 2>/dev/null
		PERF_PID=
	fi
	after=$(sample) || die "telemetry failed"
	stop_storm
	[ "$cond" = alone ] || wait_b_idle
	"$PY" - "$meter" "$cond" "$run" "$ld" "$before" "$after" "$TMP/$tag.json" \
		"$TMP/$tag.storm" "$(getconf CLK_TCK)" >>"$TMP/rows" <<'EOF' || die "bad figures ($tag)"
import json, os, sys
meter, cond, run, ld, b, a, bench, storm, hz = sys.argv[1:]
b, a = json.loads(b), json.loads(a)
res = json.load(open(bench))['results'][0]
if res['errors']:
    sys.exit('bench_storm: wrong allreduce results (%s %s run %s)' % (meter, cond, run))
dt = a['t'] - b['t']
polls = (a['busy'] - b['busy']) + (a['empty'] - b['empty'])
row = {'meter': meter, 'cond': cond, 'run': int(run), 'load1': float(ld),
       'bytes': res['bytes'], 'avg_us': res['avg_us'], 'median_us': res['median_us'],
       'max_us': res['max_us'], 'goodput_MBps': res['bytes'] / res['avg_us'],
       'busy_pct': 100.0 * (a['busy'] - b['busy']) / polls if polls else 0.0,
       'cpu_pct': 100.0 * (a['ticks'] - b['ticks']) / int(hz) / dt,
       'drops': {k: v - b['drops'].get(k, 0) for k, v in a['drops'].items()
                 if v != b['drops'].get(k, 0)}}
if os.path.exists(storm):
    s = json.load(open(storm))
    row['storm_cycles_per_s'] = s['cycles'] / s['secs'] if s['secs'] else 0.0
    row['storm'] = s
print(json.dumps(row))
EOF
	[ "$cond" = storm ] && STORM_RATE=$(tail -1 "$TMP/rows" |
		"$PY" -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["storm_cycles_per_s"])')
	return 0
}

# The storm's pace with nothing else on incad: STORM_RATE, and a line.
storm_capacity()
{
	local meter=$1 tag=$1.capacity
	start_storm storm "$tag"
	sleep 2
	stop_storm
	wait_b_idle
	STORM_RATE=$("$PY" -c 'import json,sys; s = json.load(open(sys.argv[1]))
print("%.1f" % (s["cycles"] / s["secs"]))' "$TMP/$tag.storm") || die "storm failed ($tag)"
	echo "# meter $meter: the storm alone completes $STORM_RATE JOIN+LEAVE cycles/s"
}

# The I/O lcore's profile during the last storm run: the top symbols.
perf_report()
{
	[ -s "$TMP/perf.$1.data" ] || return 0
	echo "# meter $1: incad's I/O lcore during the last storm run (perf, self time, top 15)"
	perf report -i "$TMP/perf.$1.data" --no-children --sort dso,sym --stdio 2>/dev/null |
		grep -E '^ +[0-9.]+%' | head -15 | sed 's/^/#   /'
	# Costs of the control path seen from below (incad has no frame
	# pointers, so its own callers are not unwound): with callees. The
	# slot pool's clearing is memset; the log's are write (stdout) and
	# socket/connect/close (glibc's syslog without /dev/log); packet
	# send/receive is the rack's kernel path every frame takes.
	local syms='__memset_avx2_unaligned_erms|__GI___libc_write|__socket|__libc_connect|__close'
	syms+='|__libc_sendto|__sched_yield|agg_job_create|agg_job_reset|agg_contribute'
	echo "# meter $1: the same with callees, selected symbols"
	perf report -i "$TMP/perf.$1.data" --children --sort sym --stdio 2>/dev/null |
		grep -E "^ +[0-9.]+% +[0-9.]+% +\[.\] ($syms)\$" | sed 's/^/#   /'
}

summarise()
{
	"$PY" - "$TMP/rows" <<'EOF'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
med = lambda xs: st.median(xs) if xs else float('nan')
print('%-8s %-6s %5s %9s %7s %10s %10s %11s %7s %7s  %s'
      % ('meter', 'cond', 'runs', 'MB/s', 'ratio', 'median_us', 'max_us', 'cycles/s',
         'busy%', 'cpu%', 'incad drops per run (median), storm NACKs per run'))
for meter in dict.fromkeys(r['meter'] for r in rows):
    alone = med([r['goodput_MBps'] for r in rows if r['meter'] == meter and
                 r['cond'] == 'alone'])
    for cond in ('alone', 'storm', 'ping'):
        rs = [r for r in rows if r['meter'] == meter and r['cond'] == cond]
        if not rs:
            continue
        gp = med([r['goodput_MBps'] for r in rs])
        cyc = med([r.get('storm_cycles_per_s', 0) for r in rs])
        drops = {}
        for k in sorted({k for r in rs for k in r['drops']}):
            drops[k] = med([r['drops'].get(k, 0) for r in rs])
        nacks = {}
        for k in sorted({k for r in rs for k in r.get('storm', {}).get('nacks', {})}):
            nacks[k] = med([r['storm']['nacks'].get(k, 0) for r in rs])
        extra = ' '.join('%s=%d' % kv for kv in drops.items() if kv[1])
        if nacks:
            extra += (' | ' if extra else '') + ' '.join('NACK %s=%d' % kv
                                                          for kv in nacks.items())
        print('%-8s %-6s %5d %9.1f %7.3f %10.1f %10.1f %11s %7.1f %7.1f  %s'
              % (meter, cond, len(rs), gp, gp / alone, med([r['median_us'] for r in rs]),
                 med([r['max_us'] for r in rs]), '-' if cond == 'alone' else '%.0f' % cyc,
                 med([r['busy_pct'] for r in rs]), med([r['cpu_pct'] for r in rs]),
                 extra or '-'))
EOF
}

CONDS=(alone storm)
[ "$PING" = 1 ] && CONDS+=(ping)
echo "# bench_storm: $(date -u '+%Y-%m-%d %H:%M UTC'), $NCPU CPUs," \
	"load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# tenant A: static job of $NW workers, int32 sum of $SIZE bytes (inca-bench, verified);" \
	"links ${RATE/#0/unlimited}"
echo "# tenant B: $HOSTS storm address(es), $DEPTH jobs in flight each, pools of $POOL x" \
	"$ELEMS elements; conditions ${CONDS[*]}, $RUNS runs of ~${SECS} s each, rotating order"
if [ "$NCPU" -ge 2 ]; then
	echo "# incad's lcore on CPU 0; workers and storm client on CPUs 1-$((NCPU - 1))" \
		"$([ "$NCPU" -le 2 ] && echo '(one shared CPU: figures of a shared CPU)')"
else
	echo "# one CPU: incad, workers and storm all share it"
fi
: >"$TMP/rows"
for meter in "${METER_LIST[@]}"; do
	start_incad "$meter"
	# Calibration (discarded): the iterations that take about --secs alone.
	run_bench 20 "$meter.calib" || die "inca-bench failed (calibration)"
	ITERS=$("$PY" -c "import json,sys; r = json.load(open(sys.argv[1]))['results'][0]
print(max(20, int($SECS * 1e6 / r['avg_us'])))" "$TMP/$meter.calib.json")
	echo "# meter $meter: $ITERS iterations per run"
	storm_capacity "$meter"
	for ((run = 0; run < RUNS; run++)); do
		for ((k = 0; k < ${#CONDS[@]}; k++)); do
			cond=${CONDS[$(((k + run) % ${#CONDS[@]}))]}
			measure "$meter" "$cond" "$run" "$ITERS"
			tail -1 "$TMP/rows" | "$PY" -c 'import json,sys; r = json.loads(sys.stdin.read())
print("#   run %d %-5s %8.1f MB/s  max %8.1f us  cycles/s %s" % (r["run"] + 1, r["cond"],
      r["goodput_MBps"], r["max_us"], "%.0f" % r["storm_cycles_per_s"]
      if "storm_cycles_per_s" in r else "-"))'
		done
	done
	stop_incad
	perf_report "$meter"
done
summarise
echo "# MB/s: message bytes / mean allreduce time (rank 0's view of all ranks); ratio: to" \
	"alone with the same meter; cycles/s: storm JOIN+LEAVE (ping: two round trips) per s;" \
	"busy%: I/O lcore's polls that found work; cpu%: its thread's CPU time"
