# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
#
# Shared by the benchmark scripts that run incad and inca-bench: sourced
# with "$HERE/lib.sh" after SRC (the source tree) and BUILD (--build, may be
# empty) are set. ME names the script in its messages.

ME=$(basename "$0" .sh)

die()
{
	echo "$ME: $*" >&2
	exit 1
}

# INCAD and BENCH from BUILD, or from the first build directory of the
# source tree that has both.
find_build()
{
	local b
	if [ -z "$BUILD" ]; then
		for b in "$SRC"/build*; do
			[ -x "$b/daemon/incad" ] && [ -x "$b/tools/inca-bench" ] && BUILD=$b && break
		done
	fi
	INCAD=$BUILD/daemon/incad
	BENCH=$BUILD/tools/inca-bench
	[ -x "$INCAD" ] && [ -x "$BENCH" ] || die "no incad / inca-bench in '$BUILD' (--build DIR)"
}

# Stop the incad of INCAD_PID: SIGTERM, up to 10 s for its clean exit (it
# releases its DPDK files), then SIGKILL.
stop_incad()
{
	local _
	[ -n "$INCAD_PID" ] || return 0
	kill -TERM "$INCAD_PID" 2>/dev/null
	for _ in $(seq 100); do
		kill -0 "$INCAD_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$INCAD_PID" 2>/dev/null
	wait "$INCAD_PID" 2>/dev/null
	INCAD_PID=
}

# Start incad in namespace NS with config CONF and DPDK file prefix PREFIX,
# its output in LOG; sets INCAD_PID and returns once its telemetry socket
# exists (at most 20 s, then the script dies with incad's log).
start_incad()
{
	local ns=$1 conf=$2 prefix=$3 out=$4 _
	ip netns exec "$ns" "$INCAD" --no-huge -m 512 --no-pci --file-prefix "$prefix" -l 0 \
		--log-level lib.eal:error -- -c "$conf" >"$out" 2>&1 &
	INCAD_PID=$!
	for _ in $(seq 1 100); do
		[ -S /var/run/dpdk/"$prefix"/dpdk_telemetry.v2 ] && return 0
		kill -0 "$INCAD_PID" 2>/dev/null || { cat "$out" >&2; die "incad did not start"; }
		sleep 0.2
	done
	cat "$out" >&2
	die "incad's telemetry socket did not appear within 20 s"
}
