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
#       [--max-elems E] [--racks R --uplink-rate RATE] [--stripes K[,K...]]
#       [--agg-rate RATE] [--collective allreduce|reduce_scatter|allgather|reduce]
#       [--mpi-busy-poll] [--inca-args "ARGS"] [--incad-args "ARGS"]
#       [--build DIR] [--out DIR]
#       [--name PREFIX] [--keep]
#
# --collective reduce_scatter (or allgather, reduce) measures
# inca_reduce_scatter() against MPI_Reduce_scatter_block (inca_allgather()
# against MPI_Allgather, inca_reduce() against MPI_Reduce, both to rank 0):
# a size is the whole tensor (a reduce-scatter's input, an all-gather's
# output, a reduce's input), ratio_SB uses each collective's link bound
# (S/B, and (N-1)/N x S/B for the all-gather: docs/protocol.md, "Routed
# chunks"), ompi-ring forces Open MPI's ring for the all-gather and is not
# offered for the reduce-scatter or the reduce (Open MPI 4.1's tuned
# component has none for them). The table's last columns are each INCA
# system's time over the best Open MPI system's in the same runs.
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
# Beyond one aggregator (docs/rack.md, "Several racks", "Several
# aggregators"), both in aggregator mode, where Open MPI's traffic crosses
# kernel bridges only:
#
# --racks R: R racks of N/R workers under a spine (tools/rack up --racks),
# worker links at --rate, ToR-spine uplinks at --uplink-rate, a leaf incad
# per rack and a spine incad (tools/rack conf --leaf K / --spine); INCA's
# ranks name the leaves (INCA_AGGREGATOR=leaf0,leaf1,...), so every chunk
# crosses both levels. Oversubscription = (N/R x rate) / uplink rate.
#
# --stripes K,K...: one rack with max(K) aggregators on the ToR, each
# behind its own link at --agg-rate; system inca runs once per K as
# inca-sK, striped over the first K (INCA_AGGREGATOR=A+B+...), and the
# table gives each K's speed-up over K = 1.
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
RACKS=1
UPLINK_RATE=0
AGG_RATE=0
STRIPES=
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
	--racks) RACKS=$2; shift 2 ;;
	--uplink-rate) UPLINK_RATE=$2; shift 2 ;;
	--agg-rate) AGG_RATE=$2; shift 2 ;;
	--stripes) STRIPES=$2; shift 2 ;;
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
[ "$RACKS" -eq 1 ] || [ -z "$STRIPES" ] || die "--racks and --stripes: one or the other"
[ "$RACKS" -eq 1 ] && [ -z "$STRIPES" ] || MODE=aggregator
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
INCAD_PIDS=
CHILDREN=

cleanup()
{
	set +e
	[ -n "$CHILDREN" ] && kill -TERM $CHILDREN 2>/dev/null
	stop_incads
	if [ "$KEEP" = 0 ]; then
		"$RACK" down --name "$NAME" >/dev/null 2>&1
		rm -rf "/var/run/dpdk/$NAME" "/var/run/dpdk/$NAME"-*
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

# What INCA's ranks are given as their aggregator for SYSTEM: the leaves
# of a fabric, the first K aggregators of inca-sK as stripes, or the one.
aggregator_of()
{
	local k
	if [ "$RACKS" -gt 1 ]; then
		echo "$RACK_AGGREGATOR"
	elif [[ $1 =~ ^inca-s([0-9]+)$ ]]; then
		k=${BASH_REMATCH[1]}
		cut -d+ -f1-"$k" <<<"$RACK_AGGREGATOR"
	else
		echo 10.77.0.1
	fi
}

# run_inca N MTU RUN SYSTEM: one inca-bench per worker; rows into raw.csv.
run_inca()
{
	local n=$1 mtu=$2 run=$3 sys=$4 r pids=() fail=0 ld log gso=1 tp=udp
	local args=(-a "$(aggregator_of "$sys")" -j 1 -t 0x494E4341 -n "$n" -s "$SIZE_LIST" -d fp32 -o sum
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
		tail -n 3 "$log".r*.err >&2
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

# start_incad N MTU NODE LCORE CONF-ARGS...: one incad in NODE's namespace
# (agg, aggS, leafK), its log incad_nN_mtuM[_NODE].log.
start_incad()
{
	local n=$1 mtu=$2 node=$3 lcore=$4 conf log i prefix=$NAME extra=()
	shift 4
	conf=$OUT/incad_${NAME}_$node.conf
	log=$OUT/incad_n${n}_mtu$mtu.log
	if [ "$RACKS" -gt 1 ] || [ -n "$STRIPES" ]; then
		log=$OUT/incad_n${n}_mtu${mtu}_$node.log
		prefix=$NAME-$node
	fi
	"$RACK" conf --name "$NAME" --max-elems "$ELEMS" --pool-size "$POOL" "$@" > "$conf" ||
		return 1
	[ -n "$INCAD_ARGS" ] && read -r -a extra <<< "$INCAD_ARGS"
	"$RACK" exec --name "$NAME" "$node" "$INCAD" --no-huge -m 512 --no-pci -l "$lcore" \
		--file-prefix "$prefix" --log-level lib.eal:error -- -c "$conf" "${extra[@]}" \
		> "$log" 2>&1 &
	INCAD_PIDS="$INCAD_PIDS $!"
	for i in $(seq 100); do
		grep -q "lcore $lcore:" "$log" 2>/dev/null && return 0
		kill -0 "$!" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log" >&2
	return 1
}

# The incads of one (N, MTU): one, a spine and a leaf per rack, or the
# stripes' aggregators; spread over the CPUs (each polls its own lcore).
# Leaves must hold their parent's session before a rank joins them: up
# to 30 s (a leaf first waits out the spine's evict_ms, docs/incad.md).
start_incads()
{
	local n=$1 mtu=$2 k t ncpu
	ncpu=$(nproc)
	if [ "$RACKS" -gt 1 ]; then
		start_incad "$n" "$mtu" agg $((RACKS % ncpu)) --spine || return 1
		for ((k = 0; k < RACKS; k++)); do
			start_incad "$n" "$mtu" "leaf$k" $((k % ncpu)) --leaf "$k" || return 1
		done
		for ((k = 0; k < RACKS; k++)); do
			for ((t = 0; t < 300; t++)); do
				/usr/bin/python3 "$SRC/tools/incactl" --prefix "$NAME-leaf$k" job 1 \
					2>/dev/null | grep -q '^parent: .*, up ' && break
				sleep 0.1
			done
			[ "$t" -lt 300 ] || { echo "leaf $k did not join the spine in 30 s" >&2; return 1; }
		done
	elif [ -n "$STRIPES" ]; then
		for ((k = 0; k < NSTRIPES; k++)); do
			start_incad "$n" "$mtu" "$( [ $k = 0 ] && echo agg || echo "agg$k")" \
				$((k % ncpu)) --stripe "$k" --nworkers "$n" || return 1
		done
	else
		start_incad "$n" "$mtu" agg 0 --jobs 1 --nworkers "$n" || return 1
	fi
}

stop_incads()
{
	local p
	for p in $INCAD_PIDS; do
		INCAD_PID=$p
		stop_incad
	done
	INCAD_PIDS=
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

# The title and colour of SYSTEM's line.
style_of()
{
	case $1 in
	inca) echo 'INCA (incad + libinca)" with linespoints lw 2 pt 7 lc rgb "#1f77b4' ;;
	inca-s1) echo 'INCA, 1 aggregator" with linespoints lw 2 pt 7 lc rgb "#1f77b4' ;;
	inca-s2) echo 'INCA, 2 stripes" with linespoints lw 2 pt 5 lc rgb "#2ca02c' ;;
	inca-s3) echo 'INCA, 3 stripes" with linespoints lw 2 pt 9 lc rgb "#9467bd' ;;
	inca-s[0-9]) echo "INCA, ${1#inca-s} stripes\" with linespoints lw 2 pt 11 lc rgb \"gray30" ;;
	ompi-ring) echo 'Open MPI ring" with linespoints lw 2 pt 5 lc rgb "#d62728' ;;
	ompi-default) echo 'Open MPI default" with linespoints lw 2 pt 9 lc rgb "#ff7f0e' ;;
	*) echo "$1\" with linespoints lw 2 lc rgb \"gray50" ;;
	esac
}

plot()
{
	local n=$1 mtu=$2 png=$OUT/${COLL}_n$1_mtu$2.png dat=$OUT/plot_n$1_mtu$2 s
	local lines="" what="$MODE mode"
	command -v gnuplot >/dev/null || return 0
	[ "$LINK" != 0 ] || return 0
	for s in "${SLIST[@]}"; do
		awk -F, -v n="$n" -v m="$mtu" -v s="$s" \
			'$1 == n && $2 == m && $3 == s { print $4, $6 / 1000 }' "$SUMMARY" \
			> "$dat.$s"
		lines="$lines, \"$dat.$s\" using 1:2 title \"$(style_of "$s")\""
	done
	[ "$RACKS" -gt 1 ] && what="$RACKS racks, uplinks $UPLINK_RATE"
	if [ -n "$STRIPES" ]; then
		what="aggregator links $AGG_RATE"
		# The aggregators' links are the bound: N S / (K A).
		for s in "${KLIST[@]}"; do
			lines="$lines, $n * x * 8 / ($s * $(rate_mbit "$AGG_RATE") * 1000.0) title"
			lines="$lines \"N S / (K A), K = $s\" with lines dt 4 lc rgb \"gray60\""
		done
	fi
	gnuplot <<EOF
set terminal pngcairo size 760,480 font "sans,10"
set output "$png"
set title "fp32 $COLL, $n workers, $RATE links (tc tbf), MTU $mtu, $what: median of $RUNS runs"
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
plot $( [ "$COLL" = allgather ] && echo "($n - 1.0) / $n *" ) sb(x) title "link bound" with lines dt 2 lc rgb "gray40", \\
     $( [ "$COLL" = allreduce ] && echo 2.0 || echo 1.0 ) * ($n - 1) / $n * sb(x) title "ring bound" with lines dt 3 lc rgb "gray20"$lines
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
# Each INCA system's time over the best Open MPI system's (< 1: INCA faster).
incas = [s for s in systems if s.startswith('inca')]
ompis = [s for s in systems if s.startswith('ompi')]
ratios = incas if ompis else []
print('%10s' % 'bytes' + ''.join('%14s %7s %8s' % (s, 'xS/B', 'cpu/GiB') for s in systems)
      + ''.join('%14s' % ('%s/ompi' % s) for s in ratios))
for b in sorted({k[0] for k in t}):
    line = '%10d' % b
    for s in systems:
        v = t.get((b, s))
        line += '%14.1f %7.3f %8s' % v if v else '%14s %7s %8s' % ('-', '-', '-')
    best = min([t[(b, s)][0] for s in ompis if (b, s) in t] or [0])
    for s in ratios:
        line += '%14.3f' % (t[(b, s)][0] / best) if (b, s) in t and best else '%14s' % '-'
    print(line)
EOF
}

# Striping: each K's time against K = 1's, measured in the same runs.
speedup()
{
	/usr/bin/python3 - "$SUMMARY" "$1" "$2" <<'EOF'
import csv, sys
t = {}
with open(sys.argv[1]) as f:
    for r in csv.DictReader(f):
        if r['workers'] == sys.argv[2] and r['mtu'] == sys.argv[3] and \
                r['system'].startswith('inca-s'):
            t[(int(r['bytes']), int(r['system'][6:]))] = float(r['median_us'])
ks = sorted({k for _, k in t})
print('# striping: speed-up t(1) / t(K) and its share of K (1.00: in proportion)')
print('%10s' % 'bytes' + ''.join('%10s %6s' % ('K=%d' % k, 'of K') for k in ks))
for b in sorted({b for b, _ in t}):
    line = '%10d' % b
    for k in ks:
        if (b, 1) in t and (b, k) in t:
            x = t[(b, 1)] / t[(b, k)]
            line += '%10.2f %6.2f' % (x, x / k)
        else:
            line += '%10s %6s' % ('-', '-')
    print(line)
EOF
}

IFS=, read -r -a NLIST <<< "$WORKERS"
IFS=, read -r -a MLIST <<< "$MTUS"
IFS=, read -r -a SLIST <<< "$SYSTEMS"
# --stripes: system inca once per K, as inca-sK.
NSTRIPES=0
if [ -n "$STRIPES" ]; then
	IFS=, read -r -a KLIST <<< "$STRIPES"
	l=()
	for sys in "${SLIST[@]}"; do
		if [ "$sys" = inca ]; then
			for k in "${KLIST[@]}"; do
				[[ $k =~ ^[1-8]$ ]] || die "--stripes: 1..8 aggregators"
				l+=("inca-s$k")
				[ "$k" -le $NSTRIPES ] || NSTRIPES=$k
			done
		else
			l+=("$sys")
		fi
	done
	SLIST=("${l[@]}")
fi
status=0
when()
{
	echo "# $1 $(date -u '+%F %T UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
}
when start
for n in "${NLIST[@]}"; do
	for mtu in "${MLIST[@]}"; do
		# The largest 32-bit payload in one frame: MTU less IPv4, UDP and
		# INCA headers, at most 2048 elements (8 KiB).
		ELEMS=${MAX_ELEMS:-$(((mtu - 60) / 4 > 2048 ? 2048 : (mtu - 60) / 4))}
		# Slots: room for any window libinca or --window asks for.
		POOL=256
		[ -n "$WINDOW" ] && [ "$WINDOW" -gt "$POOL" ] && POOL=$WINDOW
		up=(--workers "$n")
		if [ "$RACKS" -gt 1 ]; then
			[ $((n % RACKS)) = 0 ] || die "$n workers in $RACKS racks: not a whole number per rack"
			up=(--racks "$RACKS" --workers $((n / RACKS)) --uplink-rate "$UPLINK_RATE")
		fi
		[ -z "$STRIPES" ] || up+=(--aggs "$NSTRIPES")
		echo "== N=$n MTU=$mtu: $COLL, rack $NAME, $RATE, $MODE mode, $ELEMS elements per" \
			"packet${STRIPES:+, $NSTRIPES aggregators at $AGG_RATE}$([ "$RACKS" -gt 1 ] &&
				echo ", $RACKS racks, uplinks $UPLINK_RATE")"
		"$RACK" up --name "$NAME" "${up[@]}" --rate "$RATE" --mode "$MODE" \
			--agg-rate "$AGG_RATE" --mtu "$mtu" > /dev/null || die "rack up failed"
		eval "$("$RACK" env --name "$NAME" | grep '^RACK_AGGREGATOR=')"
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
		start_incads "$n" "$mtu" || die "incad did not start"
		for ((run = 1; run <= RUNS; run++)); do
			for sys in "${SLIST[@]}"; do
				echo "   run $run/$RUNS: $sys (load $(load1))"
				case $sys in
				inca | inca-nogso | inca-xdp | inca-s[0-9]) run_inca "$n" "$mtu" "$run" "$sys" || status=1 ;;
				ompi-ring | ompi-default) run_mpi "$n" "$mtu" "$run" "$sys" || status=1 ;;
				*) die "unknown system $sys" ;;
				esac
			done
		done
		stop_incads
		for f in "$OUT/incad_n${n}_mtu${mtu}"*.log; do
			grep -E "^(drop|drops) " "$f" | sed "s/^/   incad $(basename "$f" .log): /"
		done
		summarise
		table "$n" "$mtu"
		[ -z "$STRIPES" ] || speedup "$n" "$mtu"
		plot "$n" "$mtu"
	done
done
when end
echo "raw: $RAW"
echo "summary: $SUMMARY"
exit $status
