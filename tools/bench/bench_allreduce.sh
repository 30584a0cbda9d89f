#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
#
# INCA against Open MPI, side by side on the same emulated rack: fp32 sum
# allreduce through incad (inca-bench, one process per worker namespace)
# and Open MPI's MPI_Allreduce (mpi_allreduce_bench, one rank per worker
# namespace), ring algorithm forced and Open MPI's own choice. Prints
# figures and writes a CSV and a plot; asserts nothing (results are
# checked by both programs: a wrong element fails the run).
#
#   tools/bench/bench_allreduce.sh [--workers N[,N...]] [--mtu M[,M...]]
#       [--rate RATE] [--mode switch|aggregator] [--runs R]
#       [--sizes pow2|pow4|B,B,...] [--iters I] [--iters-large I]
#       [--systems inca,inca-nogso,inca-xdp,ompi-ring,ompi-default] [--window W]
#       [--max-elems E] [--collective allreduce|reduce_scatter|allgather]
#       [--mpi-busy-poll] [--inca-args "ARGS"] [--incad-args "ARGS"]
#       [--build DIR] [--out DIR]
#       [--name PREFIX] [--keep]
#
# --collective reduce_scatter (or allgather) measures inca_reduce_scatter()
# against MPI_Reduce_scatter_block (inca_allgather() against MPI_Allgather):
# a size is the whole tensor (a reduce-scatter's input, an all-gather's
# output), ratio_SB uses each collective's link bound (S/B, and
# (N-1)/N x S/B for the all-gather: docs/protocol.md, "Routed chunks"),
# ompi-ring forces Open MPI's ring for the all-gather and is not offered
# for the reduce-scatter (Open MPI 4.1 has no ring for it).
#
# Defaults: 4 workers, MTU 1500, 500mbit, switch mode, 3 runs, sizes 4 KiB
# to 64 MiB in steps of 4, systems inca, ompi-ring and ompi-default.
# inca-nogso is inca with INCA_UDP_GSO=0 (no UDP GSO / GRO in libinca), the
# baseline of the offloads; inca-xdp is inca with INCA_TRANSPORT=xdp (its
# frames bypass the worker's tbf qdisc: compare it with --rate 0). inca rows carry inca-bench's CPU-seconds per
# GiB reduced (user + system time of each worker process, mean over ranks).
#
# Method. For each (N, MTU) one rack (tools/rack up --rate, switch mode:
# incad is the ToR, so MPI's TCP traffic crosses the same tbf-limited links
# and incad's L2 forwarding) and one incad (one lcore, adaptive idle, its
# configuration from tools/rack conf with the largest payload the MTU
# allows). Each run executes the three systems one after the other, so
# that they share the host's load of the moment; R runs; every figure is
# the median over runs of each run's median over iterations of the
# slowest rank's time. The host's load at the start of each system's run
# is recorded with its rows: the 1-minute load average, and the runnable
# tasks of other jobs sampled over a second (the load average still holds
# the previous system's processes for a minute).
#
# At MTU 9000 the workers' route is capped at 8272 bytes: incad's
# af_packet ring frames hold at most 8286-byte Ethernet frames, so longer
# TCP segments would be cut (INCA's largest packet, 8 KiB of payload, is
# 8252 bytes).
#
# Open MPI needs its ranks on different "hosts": mpirun runs in worker 0's
# namespace and starts its daemons through an rsh agent (written into the
# output directory) that maps host 10.77.0.(10+i) to `ip netns exec
# PREFIX-wi`; out-of-band and BTL traffic stay on eth0 (btl self,tcp).
# Ranks yield the CPU when idle (mpi_yield_when_idle; --mpi-busy-poll
# turns that off): on a 2-core host shared with incad, spinning ranks
# starve the switch their own messages cross.
#
# Output in --out (default /tmp/inca-bench-allreduce): raw.csv (one row per
# system, size and run), summary.csv (medians over runs), allreduce_nN_mtuM.png
# (time against size, log-log, both systems, with the in-network bound S/B
# and the ring bound 2(N-1)/N x S/B), and the logs of every program.

set -o nounset -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"
RACK=$SRC/tools/rack

WORKERS=4
MTUS=1500
RATE=500mbit
MODE=switch
RUNS=3
SIZES=pow4
ITERS=30
ITERS_LARGE=3
SYSTEMS=inca,ompi-ring,ompi-default
WINDOW=
MAX_ELEMS=
COLL=allreduce
INCA_ARGS=
INCAD_ARGS=
MPI_YIELD=1
BUILD=
OUT=/tmp/inca-bench-allreduce
NAME=bar$$
KEEP=0

usage()
{
	sed -n '/^#   tools\/bench/,/^$/s/^#   //p' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--workers) WORKERS=$2; shift 2 ;;
	--mtu) MTUS=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--mode) MODE=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--iters) ITERS=$2; shift 2 ;;
	--iters-large) ITERS_LARGE=$2; shift 2 ;;
	--systems) SYSTEMS=$2; shift 2 ;;
	--window) WINDOW=$2; shift 2 ;;
	--max-elems) MAX_ELEMS=$2; shift 2 ;;
	--collective) COLL=$2; shift 2 ;;
	--inca-args) INCA_ARGS=$2; shift 2 ;;
	--incad-args) INCAD_ARGS=$2; shift 2 ;;
	--mpi-busy-poll) MPI_YIELD=0; shift ;;
	--build) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--name) NAME=$2; shift 2 ;;
	--keep) KEEP=1; shift ;;
	*) usage ;;
	esac
done

[ "$(id -u)" -eq 0 ] || die "run as root (network namespaces, DPDK)"
find_build
MPIB=$BUILD/tools/mpi_allreduce_bench
case ",$SYSTEMS," in
*,ompi-*)
	[ -x "$MPIB" ] || die "no $MPIB (meson found no MPI?)"
	command -v mpirun >/dev/null || die "mpirun not found (apt-get install openmpi-bin)"
	;;
esac
command -v gnuplot >/dev/null || echo "bench_allreduce: no gnuplot: no plot" >&2

rate_mbit()
{
	local r=${1,,}
	case $r in
	*gbit) echo $((${r%gbit} * 1000)) ;;
	*mbit) echo "${r%mbit}" ;;
	*kbit) awk -v k="${r%kbit}" 'BEGIN { print k / 1000 }' ;;
	0) echo 0 ;; # unshaped links: no S/B bound, no plot
	*) die "--rate: give Mbit/s or Gbit/s (500mbit, 1gbit)" ;;
	esac
}
LINK=$(rate_mbit "$RATE")

size_list()
{
	local s=4096 l=""
	case $1 in
	pow2 | pow4)
		while [ $s -le $((64 << 20)) ]; do
			l=$l${l:+,}$s
			if [ "$1" = pow2 ]; then s=$((s * 2)); else s=$((s * 4)); fi
		done
		echo "$l"
		;;
	*) echo "$1" ;;
	esac
}
SIZE_LIST=$(size_list "$SIZES")

mkdir -p "$OUT" || die "cannot create $OUT"
RAW=$OUT/raw.csv
SUMMARY=$OUT/summary.csv
echo "workers,mtu,system,bytes,run,median_us,mean_us,min_us,ratio_SB,load1,runnable,cpu_s_per_GiB" \
	> "$RAW"

INCAD_PID=
CHILDREN=

cleanup()
{
	set +e
	[ -n "$CHILDREN" ] && kill -TERM $CHILDREN 2>/dev/null
	stop_incad
	if [ "$KEEP" = 0 ]; then
		"$RACK" down --name "$NAME" >/dev/null 2>&1
		rm -rf "/var/run/dpdk/$NAME"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

load1()
{
	cut -d' ' -f1 /proc/loadavg
}

# Other jobs' demand for the CPUs right now: runnable tasks (procs_running,
# less this sampler) averaged over 20 samples in a second. Unlike the load
# average, it carries no memory of the previous system's own processes.
runnable()
{
	local i t=0
	for i in $(seq 20); do
		t=$((t + $(awk '/^procs_running/ { print $2 }' /proc/stat) - 1))
		sleep 0.05
	done
	awk -v t=$t 'BEGIN { printf "%.1f", t / 20 }'
}

# The rsh agent Open MPI starts its daemons with: host 10.77.0.(10+i) is
# worker i's namespace; the rest of the line is the command, as ssh would
# hand it to a shell.
AGENT=$OUT/rack-rsh-agent
cat > "$AGENT" <<'EOF'
#!/bin/bash
host=$1
shift
[[ $host =~ ^10\.77\.0\.([0-9]+)$ ]] || { echo "rack-rsh-agent: unknown host $host" >&2; exit 255; }
exec ip netns exec "$BENCH_RACK-w$((BASH_REMATCH[1] - 10))" /bin/sh -c "$*"
EOF
chmod +x "$AGENT"

# run_inca N MTU RUN SYSTEM: one inca-bench per worker; rows into raw.csv.
run_inca()
{
	local n=$1 mtu=$2 run=$3 sys=$4 r pids=() fail=0 ld log gso=1 tp=udp
	local args=(-a 10.77.0.1 -j 1 -t 0x494E4341 -n "$n" -s "$SIZE_LIST" -d fp32 -o sum
		-i "$ITERS" -I "$ITERS_LARGE" -x 2 -L "$LINK" -U "$mtu" -C "$COLL" --csv)

	[ -n "$WINDOW" ] && args+=(-W "$WINDOW")
	[ -n "$INCA_ARGS" ] && read -r -a extra <<< "$INCA_ARGS" && args+=("${extra[@]}")
	[ "$sys" = inca-nogso ] && gso=0
	[ "$sys" = inca-xdp ] && tp=xdp
	ld=$(load1),$(runnable)
	log=$OUT/${sys}_n${n}_mtu${mtu}_run$run
	for ((r = 0; r < n; r++)); do
		INCA_UDP_GSO=$gso INCA_TRANSPORT=$tp "$RACK" exec --name "$NAME" "$r" "$BENCH" "${args[@]}" -r "$r" \
			-E "$ELEMS" \
			> "$log.r$r.out" 2> "$log.r$r.err" &
		pids+=($!)
	done
	for ((r = 0; r < n; r++)); do
		wait "${pids[$r]}" || fail=1
	done
	if [ "$fail" = 1 ]; then
		echo "bench_allreduce: inca-bench failed (N=$n MTU=$mtu run $run):" >&2
		tail -3 "$log".r*.err >&2
		return 1
	fi
	# dtype,op,bytes,count,avg,min,max,algbw,util,errors,median,ratio,cpu
	awk -F, -v n="$n" -v m="$mtu" -v run="$run" -v ld="$ld" -v s="$sys" \
		'NR > 1 { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", n, m, s, $3, run, $11, $5,
			 $6, $12, ld, $13 }' "$log.r0.out" >> "$RAW"
}

# run_mpi N MTU RUN SYSTEM: one mpirun across the worker namespaces.
run_mpi()
{
	local n=$1 mtu=$2 run=$3 sys=$4 r hosts="" ld log try pid t rc=1
	local mca=(--mca plm_rsh_agent "$AGENT" --mca plm_rsh_no_tree_spawn 1
		--mca btl self,tcp --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0
		--mca mpi_yield_when_idle "$MPI_YIELD")

	if [ "$sys" = ompi-ring ]; then
		case $COLL in
		allreduce) mca+=(--mca coll_tuned_use_dynamic_rules 1
				--mca coll_tuned_allreduce_algorithm 4) ;;
		allgather) mca+=(--mca coll_tuned_use_dynamic_rules 1
				--mca coll_tuned_allgather_algorithm 4) ;;
		*) echo "bench_allreduce: no ring for $COLL in Open MPI" >&2; return 1 ;;
		esac
	fi
	for ((r = 0; r < n; r++)); do
		hosts=$hosts${hosts:+,}10.77.0.$((10 + r))
	done
	ld=$(load1),$(runnable)
	log=$OUT/${sys}_n${n}_mtu${mtu}_run$run
	for try in 1 2; do
		BENCH_RACK=$NAME timeout 1800 "$RACK" exec --name "$NAME" 0 \
			mpirun --allow-run-as-root -np "$n" --host "$hosts" "${mca[@]}" \
			"$MPIB" -s "$SIZE_LIST" -i "$ITERS" -I "$ITERS_LARGE" -x 2 -L "$LINK" \
			-C "$COLL" --label "$sys" --csv > "$log.out" 2> "$log.err" &
		pid=$!
		CHILDREN="$CHILDREN $pid"
		# Now and then one of mpirun's daemons does not come up and
		# mpirun waits for it forever: no header within 120 s, start
		# again.
		for ((t = 0; t < 120; t++)); do
			grep -q '^system,' "$log.out" 2>/dev/null && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 1
		done
		if ! grep -q '^system,' "$log.out" 2>/dev/null && kill -0 "$pid" 2>/dev/null; then
			echo "   mpirun did not start its ranks in 120 s; again" >&2
			kill -TERM "$pid"
		fi
		wait "$pid"
		rc=$?
		CHILDREN=${CHILDREN/ $pid/}
		[ $rc = 0 ] && break
		grep -q '^system,' "$log.out" 2>/dev/null && break # failed while running
	done
	if [ $rc != 0 ]; then
		echo "bench_allreduce: mpirun failed (N=$n MTU=$mtu run $run $sys):" >&2
		grep -v setpgid "$log.err" | tail -5 >&2
		return 1
	fi
	# system,nranks,bytes,iters,median,mean,min,ratio,errors
	awk -F, -v n="$n" -v m="$mtu" -v run="$run" -v ld="$ld" \
		'$1 ~ /^ompi/ { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,\n", n, m, $1, $3, run, $5,
				$6, $7, $8, ld }' "$log.out" >> "$RAW"
}

start_incad()
{
	local conf=$OUT/incad_$NAME.conf i
	local cargs=(--jobs 1 --nworkers "$1" --max-elems "$ELEMS" --pool-size "$POOL") extra=()

	"$RACK" conf --name "$NAME" "${cargs[@]}" > "$conf" || return 1
	[ -n "$INCAD_ARGS" ] && read -r -a extra <<< "$INCAD_ARGS"
	"$RACK" exec --name "$NAME" agg "$INCAD" --no-huge -m 512 --no-pci -l 0 \
		--file-prefix "$NAME" --log-level lib.eal:error -- -c "$conf" "${extra[@]}" \
		> "$OUT/incad_n$1_mtu$2.log" 2>&1 &
	INCAD_PID=$!
	for i in $(seq 100); do
		grep -q "lcore 0:" "$OUT/incad_n$1_mtu$2.log" 2>/dev/null && return 0
		kill -0 "$INCAD_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$OUT/incad_n$1_mtu$2.log" >&2
	return 1
}

# Medians over runs: one row per (workers, mtu, system, bytes).
summarise()
{
	/usr/bin/python3 - "$RAW" "$SUMMARY" <<'EOF'
import csv, statistics, sys
rows = {}
with open(sys.argv[1]) as f:
    for r in csv.DictReader(f):
        key = (int(r['workers']), int(r['mtu']), r['system'], int(r['bytes']))
        rows.setdefault(key, []).append(r)
with open(sys.argv[2], 'w') as f:
    f.write('workers,mtu,system,bytes,runs,median_us,ratio_SB,load1_median,'
            'runnable_median,cpu_s_per_GiB_median\n')
    for key in sorted(rows):
        rs = rows[key]
        med = statistics.median(float(r['median_us']) for r in rs)
        ratio = statistics.median(float(r['ratio_SB']) for r in rs)
        load = statistics.median(float(r['load1']) for r in rs)
        runq = statistics.median(float(r['runnable']) for r in rs)
        cpu = [float(r['cpu_s_per_GiB']) for r in rs if r['cpu_s_per_GiB']]
        f.write('%d,%d,%s,%d,%d,%.1f,%.4f,%.2f,%.1f,%s\n'
                % (key + (len(rs), med, ratio, load, runq,
                          '%.4f' % statistics.median(cpu) if cpu else '')))
EOF
}

plot()
{
	local n=$1 mtu=$2 png=$OUT/${COLL}_n$1_mtu$2.png dat=$OUT/plot_n$1_mtu$2 s
	command -v gnuplot >/dev/null || return 0
	[ "$LINK" != 0 ] || return 0
	for s in inca ompi-ring ompi-default; do
		awk -F, -v n="$n" -v m="$mtu" -v s="$s" \
			'$1 == n && $2 == m && $3 == s { print $4, $6 / 1000 }' "$SUMMARY" \
			> "$dat.$s"
	done
	gnuplot <<EOF
set terminal pngcairo size 760,480 font "sans,10"
set output "$png"
set title "fp32 $COLL, $n workers, $RATE links (tc tbf), MTU $mtu, $MODE mode: median of $RUNS runs"
set logscale xy
set xlabel "message size S per worker (bytes)"
set ylabel "time (ms)"
set xtics ("4 KiB" 4096, "16 KiB" 16384, "64 KiB" 65536, "256 KiB" 262144, \\
	"1 MiB" 1048576, "4 MiB" 4194304, "16 MiB" 16777216, "64 MiB" 67108864)
set mxtics 1
set key top left
set grid
set xrange [3000:100000000]
sb(x) = x * 8 / ($LINK * 1000.0)
plot $( [ "$COLL" = allgather ] && echo "($n - 1.0) / $n *" ) sb(x) title "link bound" with lines dt 2 lc rgb "gray40", \
     $( [ "$COLL" = allreduce ] && echo 2.0 || echo 1.0 ) * ($n - 1) / $n * sb(x) title "ring bound" with lines dt 3 lc rgb "gray20", \
     "$dat.inca" using 1:2 title "INCA (incad + libinca)" with linespoints lw 2 pt 7 lc rgb "#1f77b4", \
     "$dat.ompi-ring" using 1:2 title "Open MPI ring" with linespoints lw 2 pt 5 lc rgb "#d62728", \
     "$dat.ompi-default" using 1:2 title "Open MPI default" with linespoints lw 2 pt 9 lc rgb "#ff7f0e"
EOF
	rm -f "$dat".*
	echo "plot: $png"
}

# A table of the summary for one (N, MTU): time and x S/B per system.
table()
{
	/usr/bin/python3 - "$SUMMARY" "$1" "$2" <<'EOF'
import csv, sys
t, loads, systems = {}, [], []
with open(sys.argv[1]) as f:
    for r in csv.DictReader(f):
        if r['workers'] == sys.argv[2] and r['mtu'] == sys.argv[3]:
            t[(int(r['bytes']), r['system'])] = (float(r['median_us']), float(r['ratio_SB']),
                                                 r['cpu_s_per_GiB_median'] or '-')
            loads.append(float(r['runnable_median']))
            if r['system'] not in systems:
                systems.append(r['system'])
print('# N=%s MTU=%s: median time (us), time / (S/B) and CPU-s per GiB reduced; '
      'other runnable tasks %.1f-%.1f'
      % (sys.argv[2], sys.argv[3], min(loads or [0]), max(loads or [0])))
print('%10s' % 'bytes' + ''.join('%14s %7s %8s' % (s, 'xS/B', 'cpu/GiB') for s in systems))
for b in sorted({k[0] for k in t}):
    line = '%10d' % b
    for s in systems:
        v = t.get((b, s))
        line += '%14.1f %7.3f %8s' % v if v else '%14s %7s %8s' % ('-', '-', '-')
    print(line)
EOF
}

IFS=, read -r -a NLIST <<< "$WORKERS"
IFS=, read -r -a MLIST <<< "$MTUS"
IFS=, read -r -a SLIST <<< "$SYSTEMS"
status=0
for n in "${NLIST[@]}"; do
	for mtu in "${MLIST[@]}"; do
		# The largest 32-bit payload in one frame: MTU less IPv4, UDP and
		# INCA headers, at most 2048 elements (8 KiB).
		ELEMS=${MAX_ELEMS:-$(((mtu - 60) / 4 > 2048 ? 2048 : (mtu - 60) / 4))}
		# Slots: room for any window libinca or --window asks for.
		POOL=256
		[ -n "$WINDOW" ] && [ "$WINDOW" -gt "$POOL" ] && POOL=$WINDOW
		echo "== N=$n MTU=$mtu: $COLL, rack $NAME, $RATE, $MODE mode, $ELEMS elements per packet"
		echo "   $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
		"$RACK" up --name "$NAME" --workers "$n" --rate "$RATE" --mode "$MODE" \
			--mtu "$mtu" > /dev/null || die "rack up failed"
		# incad's af_packet ring frames hold Ethernet frames of at most
		# 8286 bytes (docs/rack.md): longer TCP segments would be cut, so
		# the workers' route caps IP packets at 8272 bytes. INCA's largest
		# (8 KiB payload) is 8252.
		if [ "$mtu" -gt 8272 ]; then
			for ((r = 0; r < n; r++)); do
				"$RACK" exec --name "$NAME" "$r" ip route change 10.77.0.0/24 \
					dev eth0 proto kernel scope link src 10.77.0.$((10 + r)) \
					mtu 8272 || die "cannot set the route MTU"
			done
		fi
		start_incad "$n" "$mtu" || die "incad did not start"
		for ((run = 1; run <= RUNS; run++)); do
			for sys in "${SLIST[@]}"; do
				echo "   run $run/$RUNS: $sys (load $(load1))"
				case $sys in
				inca | inca-nogso | inca-xdp) run_inca "$n" "$mtu" "$run" "$sys" || status=1 ;;
				ompi-ring | ompi-default) run_mpi "$n" "$mtu" "$run" "$sys" || status=1 ;;
				*) die "unknown system $sys" ;;
				esac
			done
		done
		stop_incad
		grep -E "^(drop|drops) " "$OUT/incad_n${n}_mtu${mtu}.log" | sed 's/^/   incad: /'
		summarise
		table "$n" "$mtu"
		plot "$n" "$mtu"
	done
done
echo "raw: $RAW"
echo "summary: $SUMMARY"
exit $status
