#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite: the release build at the best ISA, the
# ISA-dependent layers (kernels, models: every kernel and the forward pass with its goldens)
# again with the scalar (and AVX2) kernels forced, then everything under ASan+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
for f in scripts/setup.d/*.sh; do
  [ -e "$f" ] && bash "$f"
done
jobs=$(nproc)

run_suite() {  # label, build dir, ctest label regex ('' = all), extra env...
  local label="$1" dir="$2" layers="$3"; shift 3
  local select=()
  [ -n "$layers" ] && select=(-L "$layers")
  echo "== $label${layers:+ ($layers)}"
  if ! (cd "$dir" && env "$@" ctest --output-on-failure -j "$jobs" --timeout 900 "${select[@]}" > "ctest-$label.log" 2>&1); then
    cat "$dir/ctest-$label.log"
    echo "$label: FAILED"
    return 1
  fi
  grep -E "tests passed|tests failed" "$dir/ctest-$label.log"
}

scripts/build.sh release
run_suite release build/release ''
isa_layers='^(kernels|models)$'
run_suite scalar build/release "$isa_layers" STRATA_ISA=scalar
if build/release/strata --isa avx512 version >/dev/null 2>&1; then
  run_suite avx2 build/release "$isa_layers" STRATA_ISA=avx2
fi
scripts/build.sh sanitize
run_suite sanitize build/sanitize '' ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
