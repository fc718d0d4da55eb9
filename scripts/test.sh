#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite: the release build at the best ISA, the
# ISA-dependent layers (kernels, models: every kernel and the forward pass with its goldens)
# again with the scalar (and AVX2) kernels forced, then everything under ASan+UBSan but the
# whole-model cases that add no sanitizer coverage (below), then every
# fuzz target (fuzz/) for STRATA_FUZZ_SECONDS (30) from its seeds, then a STRATA_SOAK_MINUTES (2)
# soak of the server (scripts/soak.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
for f in scripts/setup.d/*.sh; do
  [ -e "$f" ] && bash "$f"
done
jobs=$(nproc)

run_suite() {  # label, build dir, ctest label regex ('' = all), test name regex to leave out ('' = none), extra env...
  local label="$1" dir="$2" layers="$3" skip="$4"; shift 4
  local select=()
  [ -n "$layers" ] && select=(-L "$layers")
  [ -n "$skip" ] && select+=(-E "$skip")
  echo "== $label${layers:+ ($layers)}"
  local start=$SECONDS
  if ! (cd "$dir" && env "$@" ctest --output-on-failure -j "$jobs" --timeout 900 "${select[@]}" > "ctest-$label.log" 2>&1); then
    cat "$dir/ctest-$label.log"
    echo "$label: FAILED"
    return 1
  fi
  echo "$(grep -E "tests passed|tests failed" "$dir/ctest-$label.log") in $((SECONDS - start)) s"
}

timed_build() {  # kind, targets...: a build, with its time (most of it is ccache hits after the first)
  local start=$SECONDS log
  log=$(mktemp)
  if ! scripts/build.sh "$@" > "$log" 2>&1; then
    cat "$log"; rm -f "$log"
    echo "build $1: FAILED"
    return 1
  fi
  rm -f "$log"
  echo "build $1: $((SECONDS - start)) s"
}

timed_build release
run_suite release build/release '' ''
isa_layers='^(kernels|models)$'
# Under the scalar and AVX2 kernels the fast profile's bf16 unit is emulated lane by lane (4-5x
# slower than the instruction). Every kernel is still checked against the definition on every
# ISA (FastLinear*), and the shorter whole-model fast goldens still run on each; the long
# whole-model fast cases (300-token decodes, the profile-parameterised forward and batch tests)
# run at the best ISA only.
emulated_skip='GoldenFast\.(ProTiny300|FlashTiny300|ProTinyPrefill120|TinyDecodeFromPosition1|MoeTinyDecodeFromPosition1|V32DecodeFromPosition1|V32Prefill150ThenDecodeTo300|Glm5Prefill75ThenDecodeTo300)|^Profiles/Dsv4(Forward|Batch)EveryProfile\..*/fast'
run_suite scalar build/release "$isa_layers" "$emulated_skip" STRATA_ISA=scalar
if build/release/strata --isa avx512 version >/dev/null 2>&1; then
  run_suite avx2 build/release "$isa_layers" "$emulated_skip" STRATA_ISA=avx2
fi
timed_build sanitize
# Under ASan+UBSan the kernels run uninstrumented (CMakeLists.txt) and the model code is the same
# in both profiles, so a whole-model test's fast case checks no memory access its exact case
# does not; the long goldens repeat the code paths of the short ones, pro-tiny's speculation
# cases flash-tiny's, and the Qwen3.5 client test the server code of the DeepSeek-V4 one. They
# run in the release suites above; here they would be a sixth of the sanitized suite's time.
# So do the command-line cases that check which value a choice takes (numerics flag against
# environment, a seed given or drawn) or that one command's output equals another's (MTP
# speculation, a checkpoint without MTP, the chat template, make-model's thread count, bench's
# structured-output cost): each runs whole generations in sanitized subprocesses, 15-35 s apiece,
# through code the in-process engine and server cases and the other command-line cases run too.
sanitize_skip='^Profiles/(Dsv4Forward|Dsv4Batch|Qwen35Model|Qwen35Engine|DsaEngine|Engine)EveryProfile\..*/fast( |$)|^(Dsv4|Qwen35)LogitsGoldenFast\.|^(Dsv4|Qwen35)LogitsGolden\..*(300|Across128|Prefill1[2-5]0)|^ServerEndToEnd\.OpenAIClientAgainstQwen35$|^Presets/SpeculativeModel\..*"pro-tiny"$'
sanitize_skip+='|^NumericsCli\.(WithoutTheFlagStrataNumericsChooses|TheFlagBeatsStrataNumerics|WithNeitherTheCommandsDefault)$|^ServeNumerics\.FlagThenEnvironmentThenDefault$|^Generate\.RandomSeedWithoutSeedOptionSameOutputWithIt$'
sanitize_skip+='|^Qwen35Cli\.(SpeculativeGenerationPrintsTheSameIds|CheckpointWithoutMtpDecodesAndRefusesSpeculation|ChatUsesTheCheckpointsTemplate)$|^MakeModel\.SameSeedSameBytesAtAnyThreadCount$|^Bench\.StructuredOutputCostAgainstFreeDecoding$'
run_suite sanitize build/sanitize '' "$sanitize_skip" ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

echo "== fuzz (${STRATA_FUZZ_SECONDS:-30} s a target)"
targets=$(scripts/fuzz.sh --list)
timed_build fuzz $(sed 's/^/fuzz_/' <<<"$targets")
STRATA_FUZZ_NO_BUILD=1 xargs -P "$jobs" -I{} scripts/fuzz.sh {} "${STRATA_FUZZ_SECONDS:-30}" <<<"$targets"

echo "== soak (${STRATA_SOAK_MINUTES:-2} minutes)"
scripts/soak.sh "${STRATA_SOAK_MINUTES:-2}"
