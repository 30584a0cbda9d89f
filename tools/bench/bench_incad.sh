#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
#
# incad's packet rate on one lcore against dpdk-testpmd io forwarding on the
# same vdev, in the same run; then incad's memory footprint with the default
# configuration. Prints figures; asserts nothing.
#
#   tools/bench/bench_incad.sh [--incad PATH] [--runs N] [--secs S]
#                              [--workers N] [--elems E] [--lcore L] [--no-udp-csum]
#                              [--callgrind S [--callgrind-out FILE]] [--roce] [--arbitration]
#
# Method. Both programs read the same pcap through the same vdev,
# net_pcap0,rx_pcap=FILE,infinite_rx=1 with no tx stream: the PMD replays
# the file from memory forever and drops whatever is sent (DPDK's pcap
# guide recommends exactly this for throughput tests), so neither program
# pays for a kernel or a peer process, and both pay the same per-packet PMD
# cost. The pcap is one cycle of a real job: N workers JOIN job 1, send
# 256-element int32 CONTRIBs for chunks 0..4*pool-1 (every slot, both shadow
# sets, twice), and rank 0 LEAVEs, which resets the job's sets so the next
# cycle (JOIN again, chunks from 0) aggregates afresh instead of hitting
# stale sequence numbers. incad therefore validates, aggregates, completes
# sets and builds one RESULT per member for nearly every frame it reads.
# testpmd runs --forward-mode=io (rx burst, tx burst) on one forwarding
# lcore; incad runs one lcore (I/O, control and aggregation) in poll mode.
# Both are pinned to the same CPU. The rate is ethdev's ipackets over S
# seconds after a 1 s warm-up, read through each process's DPDK telemetry
# socket (/ethdev/stats,0) the same way; the median of N runs of each,
# alternated, is reported.
#
# On a shared host the CPU a poller gets varies from run to run, so each
# rate is also given per CPU-second the process used (utime + stime from
# /proc over the same interval): packets per second of CPU time, the
# inverse of the cost per packet, which the other processes on the host
# disturb far less. Both programs are busy polling and never idle here, so
# this is their rate on a CPU of their own.
#
# --callgrind S counts incad's instructions instead of measuring rates:
# incad runs under valgrind's callgrind, which counts for S seconds after
# the warm-up, and the count is divided by the frames incad handled.
# Instructions per frame are not time (a checksum or a copy runs several
# instructions per cycle, a cache miss none), but they are the same on
# every run: on a shared host they show what a change to the per-frame
# path saved when a rate cannot. incad's functions are listed by their
# --callgrind-out FILE keeps the dump (callgrind_annotate --inclusive=yes FILE).
# Since JOIN and LEAVE run on incad's control thread, which valgrind
# schedules one thread at a time (also with --fair-sched=yes), the thread
# answers a cycle's JOINs late and most frames are counted as held drops
# (CTRL_HOLD_FULL, ~14 instructions in incad_ctrl_hold): the count per frame
# then says little about the frame path (1016 on 2026-12-04, against 2026
# measured before the control thread).
# share. valgrind emulates no AVX-512, so the AVX2 versions run.
#
# --roce also runs incad on the same cycle as RoCEv2 members send it (JOIN
# binding a queue pair, every CONTRIB a UD SEND with its ICRC) in each run,
# so that incad receives the same payloads once as UDP and once as RoCEv2
# and builds RoCEv2 RESULTs (an ICRC per member): the cost of the RoCE
# envelope, above all the ICRCs, as a ratio of the two rates.
#
# --arbitration gives incad an arbitration section (docs/incad.md,
# "Priorities and arbitration") whose capacity is far above the rate, so
# that nothing is held back but every contribution runs its class's meter:
# with --callgrind, the instructions per frame that arbitration adds are
# the difference from a run without it.
#
# The cycle rejoins every 16392 frames (ROUNDS 16), which a real job does once;
# incad's INFO lines for those JOINs and LEAVEs (a console write and a
# syslog call each) are left out with --log-level incad.ctrl:notice so
# that they are not measured as packet cost.

set -o nounset -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
INCAD=${INCAD:-}
RUNS=5
SECS=3
NW=4
ELEMS=256
LCORE=1
POOL=64
# Chunks per JOIN: ROUNDS times every slot and both shadow sets twice.
# JOIN and LEAVE go to incad's control thread, and a job's data waits
# behind them (docs/incad.md, "Threads"): a cycle that rejoined every
# 1029 frames, as this one did before the control thread, measured the
# thread's wake-ups (its held data overflowing) instead of the frame path.
ROUNDS=16
CSUM=1
CALLGRIND=0
CG_OUT=
ROCE=0
ARB=0

while [ $# -gt 0 ]; do
	case $1 in
	--incad) INCAD=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--secs) SECS=$2; shift 2 ;;
	--workers) NW=$2; shift 2 ;;
	--elems) ELEMS=$2; shift 2 ;;
	--lcore) LCORE=$2; shift 2 ;;
	--no-udp-csum) CSUM=0; shift ;;
	--callgrind) CALLGRIND=$2; shift 2 ;;
	--callgrind-out) CG_OUT=$2; shift 2 ;;
	--roce) ROCE=1; shift ;;
	--arbitration) ARB=1; shift ;;
	*) sed -n 's/^#   //p' "$0" >&2; exit 2 ;;
	esac
done
if [ -z "$INCAD" ]; then
	for b in "$SRC"/build/daemon/incad "$SRC"/build*/daemon/incad; do
		[ -x "$b" ] && INCAD=$b && break
	done
fi
[ -x "$INCAD" ] || { echo "bench_incad: no incad (--incad PATH)" >&2; exit 1; }
TESTPMD=$(command -v dpdk-testpmd) ||
	{ echo "bench_incad: dpdk-testpmd not found (apt-get install dpdk-dev)" >&2; exit 1; }

TMP=$(mktemp -d /tmp/bench_incad.XXXXXX)
PREFIX=bench_incad_$$
PIDS=()
cleanup()
{
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$TMP" /var/run/dpdk/"$PREFIX"_*
}
trap cleanup EXIT
trap 'exit 130' INT TERM

MAC=02:00:00:00:00:01
AGG_IP=10.77.0.1
TOKEN=0x494e4341
SEED=0x5e55104e
PCAP=$TMP/cycle.pcap

# One cycle of the job, as the workers would send it (ROCE 1: RoCEv2 members).
cycle()
{
$PY - "$SRC/tests/integration" "$1" "$NW" "$ELEMS" "$POOL" "$MAC" "$AGG_IP" "$TOKEN" "$CSUM" "$SEED" \
	"$2" "$ROUNDS" <<'EOF'
import struct
import sys
sys.path.insert(0, sys.argv[1])
import inca_proto as P
path, nw, elems, pool, mac, agg, token = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \
    int(sys.argv[5]), sys.argv[6], sys.argv[7], int(sys.argv[8], 0)
csum = sys.argv[9] == '1'
# Every cycle creates the dynamic job anew (all ranks leave at its end), so
# each cycle is the job's first incarnation and has the same session.
session = P.session_token(int(sys.argv[10], 0), 1, 1, token)
roce = sys.argv[11] == '1'
rounds = int(sys.argv[12])
AGG_QPN, AGG_QKEY = 0x494e, 0x494e4341

frames = []
def send(rank, msg, data=False):
    src = ('02:77:00:00:00:%02x' % (10 + rank), '10.77.0.%d' % (10 + rank))
    if roce and data:
        frames.append(P.build_roce_frame(mac, src[0], src[1], agg, 0xc100 + rank, msg,
                                         AGG_QPN, AGG_QKEY, 0x200 + rank,
                                         struct.unpack('!I', msg[16:20])[0]))
        return
    frames.append(P.build_frame(mac, src[0], src[1], agg, 40000 + rank, P.UDP_PORT, msg,
                                udp_csum=csum))
ctrl = P.ctrl_pack(ver_min=P.VERSION, ver_max=P.VERSION, dtypes=1, ops=1, nworkers=nw,
                   pool_size=pool)
for r in range(nw):
    ext = struct.pack('!IIII', 0x200 + r, 0x1000 + r, 0, 0) if roce else b''
    send(r, P.hdr_pack(type=P.MSG['JOIN'], job=1, rank=r, token=token) + ctrl + ext)
body = P.elems_pack(P.DTYPE['INT32'], list(range(elems)))
for k in range(4 * pool * rounds):
    for r in range(nw):
        send(r, P.hdr_pack(type=P.MSG['CONTRIB'], dtype=P.DTYPE['INT32'], op=P.OP['SUM'],
                           job=1, rank=r, token=session, slot=k % pool,
                           flags=P.F_SET if (k // pool) % 2 else 0, seq=k,
                           offset=k * elems, count=elems) + body, data=True)
# A LEAVE without the member secret of its JOIN_ACK is dropped (issue 17):
# the job would never reset, and every later cycle would measure STALE drops.
sys.path.insert(0, sys.argv[1] + '/../dpdk')
from incadtest import member_secret  # noqa: E402
for r in range(nw):
    send(r, P.hdr_pack(type=P.MSG['LEAVE'], job=1, rank=r, token=session,
                       bitmap=member_secret(1, r, seed=int(sys.argv[10], 0))))
P.write_pcap(path, frames)
print('pcap%s: %d frames per cycle, %d contributions of %d bytes'
      % (' (RoCEv2)' if roce else '', len(frames), 4 * pool * nw * rounds, len(frames[nw])),
      file=sys.stderr)
EOF
}
cycle "$PCAP" 0
[ -s "$PCAP" ] || exit 1
if [ "$ROCE" = 1 ]; then
	cycle "$TMP/cycle_roce.pcap" 1
	[ -s "$TMP/cycle_roce.pcap" ] || exit 1
fi

cat >"$TMP/bench.conf" <<EOF
mode = "aggregator";
workers = 1;
memory = { mbufs = 32767; };
idle = { policy = "poll"; };
aggregation = { max_elems = $ELEMS; session_seed = $SEED; };
timeouts = { evict_ms = 86400000; };
# Every cycle JOINs anew, thousands of times a second: the per-source JOIN
# meter would refuse most cycles and leave incad dropping their CONTRIBs
# as UNKNOWN_JOB, a far cheaper path than the one measured here.
control = { rate = 0; };
ports = ( { name = "p0"; device = "net_pcap0"; ipv4 = "$AGG_IP/24"; mac = "$MAC"; } );
tenants = ( { name = "bench"; token = $TOKEN; job_ids = [1, 1]; dynamic_jobs = true;
	      slot_quota = $POOL; } );
EOF
[ "$ARB" = 1 ] &&
	echo 'arbitration = { capacity_mbps = 1000000; policy = "strict"; };' >>"$TMP/bench.conf"

EAL=(--no-huge -m 512 --no-pci --log-level lib.eal:error
	--vdev "net_pcap0,rx_pcap=$PCAP,infinite_rx=1")
EAL_ROCE=(--no-huge -m 512 --no-pci --log-level lib.eal:error
	--vdev "net_pcap0,rx_pcap=$TMP/cycle_roce.pcap,infinite_rx=1")

# Counters of a DPDK process through its telemetry socket, and the CPU
# time process PID has used: "time ipackets opackets cpu_s [contrib result]".
sample()
{
	$PY - "$1" "$SRC/tests/integration" "${2:-0}" <<'EOF'
import os, sys, time
sys.path.insert(0, sys.argv[2])
from harness import Telemetry
t = Telemetry(sys.argv[1]).connect(timeout=int(os.environ.get('BENCH_WAIT', '20')))
s = t.query('/ethdev/stats,0')
cpu = 0.0
if sys.argv[3] != '0':
    f = open('/proc/%s/stat' % sys.argv[3]).read().rsplit(')', 1)[1].split()
    cpu = (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')
extra = ''
if '/incad/' in str(t.query('/')):
    st = t.query('/incad/stats')
    extra = ' %d %d' % (st['CONTRIB'], st['RESULT_TX'])
print('%.6f %d %d %.2f%s' % (time.monotonic(), s['ipackets'], s['opackets'], cpu, extra))
EOF
}

# measure NAME FILE_PREFIX CMD...: start, warm up, sample twice, stop.
# Prints "pps opps pps_per_cpu_second [contrib_per_s result_per_s]".
measure()
{
	local prefix=$1 pid a b
	shift
	"$@" >"$TMP/$prefix.log" 2>&1 </dev/null &
	pid=$!
	PIDS+=("$pid")
	a=$(sample "$prefix") || { cat "$TMP/$prefix.log" >&2; return 1; }
	sleep 1
	a=$(sample "$prefix" "$pid")
	sleep "$SECS"
	b=$(sample "$prefix" "$pid")
	kill -INT "$pid"
	wait "$pid" 2>/dev/null
	PIDS=("${PIDS[@]/$pid/}")
	rm -rf /var/run/dpdk/"$prefix"
	$PY -c "
a = [float(x) for x in '$a'.split()]; b = [float(x) for x in '$b'.split()]
dt = b[0] - a[0]
r = [(b[i] - a[i]) / dt for i in (1, 2)]
r.append((b[1] - a[1]) / max(b[3] - a[3], 0.01))
r += [(b[i] - a[i]) / dt for i in range(4, len(a))]
print(' '.join('%.0f' % x for x in r))"
}

median()
{
	sort -g | awk '{v[NR] = $1}
		END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

TESTPMD_ARGS=(-- --forward-mode=io --auto-start --stats-period 3600 --total-num-mbufs 32767
	--txd 1024 --rxd 1024)

# instructions FILE_PREFIX CMD...: incad's instructions per frame under
# callgrind, in all and by function. The counters are zeroed after the
# warm-up and dumped (to $out.1) S seconds later; the frames are the calls
# to inca_input() in that dump (every frame of the pcap is an INCA message
# and goes through it once; inca_msg_decode() in builds before the CONTRIB
# fast path, which decodes contributions without it), so both counts cover
# the same instructions however late valgrind acts on the commands.
instructions()
{
	local prefix=$1 pid i out=$TMP/$1.cg
	shift
	valgrind --tool=callgrind --callgrind-out-file="$out" \
		"$@" >"$TMP/$prefix.log" 2>&1 </dev/null &
	pid=$!
	PIDS+=("$pid")
	BENCH_WAIT=120 sample "$prefix" >/dev/null || { cat "$TMP/$prefix.log" >&2; return 1; }
	sleep 2
	callgrind_control -z "$pid" >/dev/null
	sleep "$CALLGRIND"
	callgrind_control -d "$pid" >/dev/null
	for ((i = 0; i < 600; i++)); do [ -s "$out.1" ] && break; sleep 0.1; done
	kill -INT "$pid"
	wait "$pid" 2>/dev/null
	PIDS=("${PIDS[@]/$pid/}")
	rm -rf /var/run/dpdk/"$prefix"
	callgrind_annotate --threshold=100 --auto=no "$out.1" >"$out.txt" 2>/dev/null
	# Kept for callgrind_annotate --inclusive=yes and friends.
	[ -z "$CG_OUT" ] || cp "$out.1" "$CG_OUT"
	$PY - "$out.1" "$out.txt" <<'EOF'
import re, sys
from collections import defaultdict
names, calls, total, want = {}, defaultdict(int), 0, None
for line in open(sys.argv[1]):
    m = re.match(r'c?fn=\((\d+)\)(?: (.*))?', line)
    if m:
        if m.group(2):
            names[m.group(1)] = m.group(2).strip()
        want = names.get(m.group(1)) if line.startswith('cfn') else None
    elif line.startswith('calls=') and want:
        calls[want] += int(line.split()[0][6:])
    elif line.startswith('totals:'):
        total = int(line.split()[1])
frames = calls['inca_input'] or calls['inca_msg_decode']
if frames == 0:
    sys.exit('bench_incad: no frames in the callgrind dump')
by_fn = defaultdict(int)
for line in open(sys.argv[2]):
    m = re.match(r'\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S+)', line)
    if m and 'PROGRAM' not in line:
        by_fn[m.group(2).rsplit(':', 1)[-1]] += int(m.group(1).replace(',', ''))
print('incad: %.0f instructions per frame (%d frames)' % (total / frames, frames))
for fn, v in sorted(by_fn.items(), key=lambda kv: -kv[1]):
    # main() and the lcore's entry hold the cost of the rest when the dump
    # is taken mid-run: not a function's own.
    if v < total * 0.5 and v / frames >= 2:
        print('  %7.1f  %s' % (v / frames, fn))
EOF
}

if [ "$CALLGRIND" -gt 0 ]; then
	command -v valgrind >/dev/null && command -v callgrind_control >/dev/null ||
		{ echo "bench_incad: --callgrind needs valgrind" >&2; exit 1; }
	echo "incad under callgrind for $CALLGRIND s, $NW workers, $ELEMS int32 elements" \
		"$([ "$ARB" = 1 ] && echo ', arbitration on (nothing held back)')"
	instructions "${PREFIX}_i" "$INCAD" "${EAL[@]}" --log-level incad.ctrl:notice \
		-l "$LCORE" --file-prefix "${PREFIX}_i" -- -c "$TMP/bench.conf" || exit 1
	echo "  (instructions per frame by function; unnamed ones are in DPDK's shared objects)"
	exit 0
fi

echo "incad: $INCAD"
echo "testpmd: $TESTPMD"
echo "vdev: net_pcap0,rx_pcap=<cycle>,infinite_rx=1 (tx dropped), $NW workers," \
	"$ELEMS int32 elements, pool $POOL, lcore $LCORE, $RUNS runs of $SECS s," \
	"arbitration $([ "$ARB" = 1 ] && echo 'on (nothing held back)' || echo off)," \
	"workers' UDP checksums $([ $CSUM = 1 ] && echo on || echo 'off (0)')"
: >"$TMP/incad.txt"
: >"$TMP/testpmd.txt"
: >"$TMP/ratio.txt"
: >"$TMP/ratio_cpu.txt"
: >"$TMP/roce.txt"
: >"$TMP/roce_ratio.txt"
{ cat "$TMP/bench.conf"; echo 'roce = { enabled = true; };'; } >"$TMP/bench_roce.conf"
for ((i = 1; i <= RUNS; i++)); do
	t=$(measure "${PREFIX}_t$i" "$TESTPMD" "${EAL[@]}" -l "0,$LCORE" --main-lcore 0 \
		--file-prefix "${PREFIX}_t$i" "${TESTPMD_ARGS[@]}") || exit 1
	n=$(measure "${PREFIX}_i$i" "$INCAD" "${EAL[@]}" --log-level incad.ctrl:notice \
		-l "$LCORE" --file-prefix "${PREFIX}_i$i" -- -c "$TMP/bench.conf") || exit 1
	echo "$t" >>"$TMP/testpmd.txt"
	echo "$n" >>"$TMP/incad.txt"
	read -r tp _ tc <<<"$t"
	read -r ip _ icpu ic ir <<<"$n"
	echo "$ip / $tp" | bc -l >>"$TMP/ratio.txt"
	echo "$icpu / $tc" | bc -l >>"$TMP/ratio_cpu.txt"
	printf 'run %d: testpmd %.2f Mpps, incad %.2f Mpps (contributions %.2f M/s,' \
		"$i" "$(echo "$tp / 1000000" | bc -l)" "$(echo "$ip / 1000000" | bc -l)" \
		"$(echo "$ic / 1000000" | bc -l)"
	printf ' results %.2f M/s), ratio %.2f;' "$(echo "$ir / 1000000" | bc -l)" \
		"$(tail -1 "$TMP/ratio.txt")"
	printf ' per CPU-second %.2f and %.2f Mpps, ratio %.2f\n' \
		"$(echo "$tc / 1000000" | bc -l)" "$(echo "$icpu / 1000000" | bc -l)" \
		"$(tail -1 "$TMP/ratio_cpu.txt")"
	if [ "$ROCE" = 1 ]; then
		n=$(measure "${PREFIX}_r$i" "$INCAD" "${EAL_ROCE[@]}" --log-level incad.ctrl:notice \
			-l "$LCORE" --file-prefix "${PREFIX}_r$i" -- -c "$TMP/bench_roce.conf") || exit 1
		echo "$n" >>"$TMP/roce.txt"
		read -r rp _ rcpu _ <<<"$n"
		echo "$rcpu / $icpu" | bc -l >>"$TMP/roce_ratio.txt"
		printf '       incad on RoCEv2 %.2f Mpps, per CPU-second %.2f Mpps, RoCE/UDP %.2f\n' \
			"$(echo "$rp / 1000000" | bc -l)" "$(echo "$rcpu / 1000000" | bc -l)" \
			"$(tail -1 "$TMP/roce_ratio.txt")"
	fi
done
tp=$(cut -d' ' -f1 "$TMP/testpmd.txt" | median)
ip=$(cut -d' ' -f1 "$TMP/incad.txt" | median)
ic=$(cut -d' ' -f4 "$TMP/incad.txt" | median)
tc=$(cut -d' ' -f3 "$TMP/testpmd.txt" | median)
icpu=$(cut -d' ' -f3 "$TMP/incad.txt" | median)
printf 'median: testpmd io %.2f Mpps, incad %.2f Mpps (%.2f M contributions/s)\n' \
	"$(echo "$tp / 1000000" | bc -l)" "$(echo "$ip / 1000000" | bc -l)" \
	"$(echo "$ic / 1000000" | bc -l)"
# The runs are paired (back to back), so the median of their ratios is
# less exposed to the load of a shared host than the ratio of medians.
printf 'ratio incad/testpmd: %.2f (median of the runs'"'"' ratios; ratio of medians %.2f)\n' \
	"$(median <"$TMP/ratio.txt")" "$(echo "$ip / $tp" | bc -l)"
printf 'per CPU-second: testpmd %.2f Mpps (%.0f ns/packet), incad %.2f Mpps' \
	"$(echo "$tc / 1000000" | bc -l)" "$(echo "1000000000 / $tc" | bc -l)" \
	"$(echo "$icpu / 1000000" | bc -l)"
printf ' (%.0f ns/packet), ratio %.2f (median of the runs'"'"' ratios)\n' \
	"$(echo "1000000000 / $icpu" | bc -l)" "$(median <"$TMP/ratio_cpu.txt")"
grep -E '^(drop|counter (CONTRIB|COMPLETE|RESULT_TX|RX)) ' "$TMP/${PREFIX}_i$RUNS.log" |
	sed 's/^/  last incad run: /'

if [ "$ROCE" = 1 ]; then
	rcpu=$(cut -d' ' -f3 "$TMP/roce.txt" | median)
	printf 'RoCEv2: incad %.2f Mpps per CPU-second (%.0f ns/packet), RoCE/UDP %.2f' \
		"$(echo "$rcpu / 1000000" | bc -l)" "$(echo "1000000000 / $rcpu" | bc -l)" \
		"$(median <"$TMP/roce_ratio.txt")"
	printf " (median of the runs' ratios, per CPU-second)\n"
	grep -E '^(drop|counter (CONTRIB|COMPLETE|RESULT_TX|ROCE_RX|ROCE_TX)) ' \
		"$TMP/${PREFIX}_r$RUNS.log" | sed 's/^/  last RoCE run: /'
fi

# Footprint: incad with conf/incad.conf as shipped, idle, on an empty pcap.
$PY -c "
import sys; sys.path.insert(0, '$SRC/tests/integration'); import inca_proto as P
P.write_pcap('$TMP/empty.pcap', [])"
fp=${PREFIX}_m
"$INCAD" --no-huge -m 512 --no-pci -l "$LCORE" --file-prefix "$fp" \
	--vdev "net_pcap0,rx_pcap=$TMP/empty.pcap" -- -c "$SRC/conf/incad.conf" \
	>"$TMP/mem.log" 2>&1 </dev/null &
pid=$!
PIDS+=("$pid")
sample "$fp" >/dev/null || { cat "$TMP/mem.log" >&2; exit 1; }
sleep 1
echo "footprint with conf/incad.conf (-m 512, --no-huge):"
grep 'memory footprint' "$TMP/mem.log" | sed 's/^/  incad says: /'
grep -E '^(VmRSS|VmHWM|RssAnon|RssFile|RssShmem|VmSize)' /proc/$pid/status | sed 's/^/  /'
$PY - "$fp" "$SRC/tests/integration" <<'EOF'
import sys
sys.path.insert(0, sys.argv[2])
from harness import Telemetry
t = Telemetry(sys.argv[1]).connect()
st = t.query('/incad/stats')
print('  /incad/stats: ' + ', '.join('%s %.1f MiB' % (k, st[k] / 1048576.0)
                                     for k in sorted(st) if k.startswith('mem_')))
EOF
kill -INT "$pid"
wait "$pid" 2>/dev/null
PIDS=()
