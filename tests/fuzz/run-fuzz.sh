#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Build one INCA fuzz harness with clang and libFuzzer, and run it.
#
#   tests/fuzz/run-fuzz.sh HARNESS [SECONDS]   HARNESS: frame, msg or config
#   tests/fuzz/run-fuzz.sh --gen               rewrite the seed corpora
#
# SECONDS defaults to $INCA_FUZZ_SECONDS, else 60. The harness is compiled
# with ASan, UBSan and libFuzzer into a fresh directory (or $INCA_FUZZ_DIR),
# run on a copy of tests/fuzz/corpus/HARNESS plus tests/fuzz/regressions/
# HARNESS for SECONDS, and the executions and coverage are printed. A crash,
# leak, timeout (10 s per input) or out-of-memory (2 GB) fails the run; the
# directory is then kept with the input that triggered it, and its path is
# printed. Otherwise the directory is removed unless $INCA_FUZZ_DIR or
# INCA_FUZZ_KEEP=1 was given (the grown corpus is in it, under corpus/).
# The last line is "fuzz: 1 passed, 0 failed" or "fuzz: 0 passed, 1 failed".
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CLANG=${CLANG:-clang}

usage() {
    sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//'
}

fail() {
    echo "fuzz: $*" >&2
    echo "fuzz: 0 passed, 1 failed"
    exit 1
}

if [ $# -lt 1 ]; then
    usage >&2
    exit 2
fi

case "$1" in
-h|--help)
    usage
    exit 0
    ;;
--gen)
    tmp=$(mktemp -d /tmp/inca-gen-corpus.XXXXXX) || exit 1
    trap 'rm -rf "$tmp"' EXIT
    ${CC:-cc} -std=gnu11 -O1 -Wall -Wextra -I "$ROOT/lib/include" \
        "$HERE/gen_corpus.c" "$ROOT/lib/wire.c" "$ROOT/lib/dtype.c" -lm \
        -o "$tmp/gen_corpus" || exit 1
    mkdir -p "$HERE/corpus" && "$tmp/gen_corpus" "$HERE/corpus" "$ROOT/conf/incad.conf"
    exit
    ;;
esac

H=$1
SECS=${2:-${INCA_FUZZ_SECONDS:-60}}
case "$SECS" in
''|*[!0-9]*|0) echo "fuzz: SECONDS must be a positive integer, not '$SECS'" >&2; exit 2 ;;
esac

SRC=("$ROOT/lib/wire.c" "$ROOT/lib/dtype.c")
LIBS=(-lm)
EXTRA=()
case "$H" in
frame)
    SRC+=("$HERE/fuzz_frame.c" "$HERE/spec.c" "$ROOT/daemon/core/agg.c"
          "$ROOT/daemon/core/kernels.c")
    EXTRA+=(-max_len=24576)
    ;;
msg)
    SRC+=("$HERE/fuzz_msg.c" "$HERE/spec.c")
    EXTRA+=(-max_len=8300)
    ;;
config)
    SRC+=("$HERE/fuzz_config.c" "$ROOT/daemon/config.c")
    LIBS+=(-lconfig)
    EXTRA+=(-max_len=16384 "-dict=$HERE/config.dict")
    ;;
*)
    echo "fuzz: unknown harness '$H' (frame, msg or config)" >&2
    exit 2
    ;;
esac

if ! command -v "$CLANG" >/dev/null; then
    echo "fuzz: $CLANG not found: cannot build libFuzzer harnesses (skipped)"
    exit 77
fi

if [ -n "${INCA_FUZZ_DIR:-}" ]; then
    WORK=$INCA_FUZZ_DIR
    KEEP=1
    mkdir -p "$WORK" || fail "cannot create $WORK"
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/inca-fuzz-$H.XXXXXX") || fail "mktemp failed"
    KEEP=${INCA_FUZZ_KEEP:-0}
fi
BIN=$WORK/fuzz_$H
LOG=$WORK/fuzz.log

echo "fuzz: building $BIN"
"$CLANG" -std=gnu11 -O1 -g -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I "$ROOT/lib/include" -I "$ROOT/daemon/core" -I "$ROOT/daemon" -I "$HERE" \
    "${SRC[@]}" "${LIBS[@]}" -o "$BIN" || fail "build of the $H harness failed"

mkdir -p "$WORK/corpus" || fail "cannot create $WORK/corpus"
cp "$HERE/corpus/$H/"* "$WORK/corpus/" 2>/dev/null || fail "no seed corpus in $HERE/corpus/$H"
if [ -d "$HERE/regressions/$H" ]; then
    cp "$HERE/regressions/$H/"* "$WORK/corpus/" 2>/dev/null
fi
seeds=$(ls "$WORK/corpus" | wc -l)

echo "fuzz: running $H for $SECS s on $seeds inputs (log: $LOG)"
(
    cd "$WORK" &&
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
    LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$HERE/lsan.supp:print_suppressions=0} \
    "$BIN" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$WORK/" -print_final_stats=1 "${EXTRA[@]}" corpus
) >"$LOG" 2>&1
rc=$?

# libFuzzer's own figures: the last status line and the final statistics.
status=$(grep -E '^#[0-9]+.*cov: ' "$LOG" | tail -n 1)
stat() { sed -n "s/^stat::$1: *//p" "$LOG" | tail -n 1; }
execs=$(stat number_of_executed_units)
rate=$(stat average_exec_per_sec)
cov=$(sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\) corp: \([0-9]*\)\/\([^ ]*\).*/\1 \2 \3 \4/p' \
    <<<"$status")
read -r edges features units csize <<<"${cov:-? ? ? ?}"
echo "fuzz: $H: ${execs:-?} executions in $SECS s (${rate:-?} exec/s)," \
    "coverage: $edges edges, $features features, corpus $units inputs ($csize)"

artifacts=$(ls "$WORK" | grep -E '^(crash|leak|timeout|oom)-' || true)
if [ "$rc" -ne 0 ] || [ -n "$artifacts" ]; then
    echo "fuzz: $H failed (libFuzzer exit status $rc); the end of $LOG:"
    tail -n 60 "$LOG" | sed 's/^/    /'
    for a in $artifacts; do
        echo "fuzz: input that failed: $WORK/$a"
        echo "fuzz: reproduce with: $BIN $WORK/$a"
    done
    echo "fuzz: 0 passed, 1 failed"
    exit 1
fi
if [ "$KEEP" = 1 ]; then
    echo "fuzz: kept $WORK (grown corpus in $WORK/corpus)"
else
    rm -rf "$WORK"
fi
echo "fuzz: 1 passed, 0 failed"
