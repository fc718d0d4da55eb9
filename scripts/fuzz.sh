#!/usr/bin/env bash
# Runs one libFuzzer target (fuzz/) for a while, with ASan and UBSan; fails on a crash, a leak,
# a hang (an input over 10 s) or an input over the memory limit.
# Usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]
#        scripts/fuzz.sh --list
# TARGET is a fuzz/<TARGET>_fuzz.cpp. Inputs the fuzzer finds are kept in build/fuzz/corpus/TARGET
# (the committed seeds in fuzz/corpus/TARGET are only read); a failing input is written to
# build/fuzz/artifacts/TARGET/ -- copy it into fuzz/regressions/TARGET/ with the fix, and ctest
# replays it in every build from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=$(sed -n 's/^  \([a-z_]*\):[a-z]*)\?$/\1/p' fuzz/CMakeLists.txt)
if [ "${1:-}" = "--list" ]; then echo "$targets"; exit 0; fi
if [ $# -lt 2 ]; then echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...] (targets: $(echo $targets))" >&2; exit 2; fi
target="$1" seconds="$2"; shift 2
if ! grep -qx "$target" <<<"$targets"; then echo "unknown fuzz target '$target' (known: $(echo $targets))" >&2; exit 2; fi
[ -n "${STRATA_FUZZ_NO_BUILD:-}" ] || scripts/build.sh fuzz "fuzz_$target" >/dev/null
work="build/fuzz/corpus/$target" artifacts="build/fuzz/artifacts/$target/"
mkdir -p "$work" "$artifacts"
mkdir -p "fuzz/corpus/$target"
log="build/fuzz/$target.log"
status=0
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
  "build/fuzz/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=3072 \
  -artifact_prefix="$artifacts" -print_final_stats=1 "$@" "$work" "fuzz/corpus/$target" >"$log" 2>&1 || status=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 || true)
if [ "$status" -ne 0 ]; then
  tail -60 "$log"
  echo "fuzz $target: FAILED after ${execs:-?} runs (${cov:-no coverage line}); inputs in $artifacts" >&2
  exit 1
fi
echo "fuzz $target: ${execs:-?} runs in ${seconds} s, ${cov:-?}, no failure"
