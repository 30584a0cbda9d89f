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
