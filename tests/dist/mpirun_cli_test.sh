#!/usr/bin/env bash
# `mpirun -np N strata ...` against one process on a random flash-tiny checkpoint: the token ids
# of greedy and seeded generation and the logits file must be byte for byte the same; a
# command that runs in one process only, and ranks given different checkpoints, must fail at
# once with a clear error instead of hanging.
# Usage: tests/dist/mpirun_cli_test.sh MPIEXEC STRATA_BINARY NP
set -euo pipefail
mpiexec="$1"; strata="$(realpath "$2")"; np="$3"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
run() { timeout 120 "$mpiexec" --oversubscribe -np "$np" "$strata" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

"$strata" make-model --preset flash-tiny --seed 3 --out "$work/m" >/dev/null
ids=$(seq -s, 5 11 400)

for sampling in "--temperature 0" "--temperature 0.9 --top-p 0.95 --seed 77"; do
  # shellcheck disable=SC2086
  "$strata" generate --model "$work/m" --ids "$ids" --max-tokens 16 --print-ids $sampling >"$work/one.txt" 2>/dev/null
  # shellcheck disable=SC2086
  run generate --model "$work/m" --ids "$ids" --max-tokens 16 --print-ids $sampling >"$work/many.txt" 2>"$work/err.txt" ||
    { cat "$work/err.txt" >&2; fail "generate $sampling over $np ranks"; }
  [ "$(wc -l <"$work/one.txt")" -eq 16 ] || fail "generate printed $(wc -l <"$work/one.txt") ids, not 16"
  cmp -s "$work/one.txt" "$work/many.txt" || fail "generate $sampling: $np ranks differ from one process"
done

# replicas of the hottest experts from a sample text's token frequencies: the same output
printf 'the cat sat on the mat and the dog sat on the log, and the cat and the dog sat %.0s' $(seq 50) >"$work/sample.txt"
run generate --model "$work/m" --ids "$ids" --max-tokens 16 --print-ids --ep-balance "$work/sample.txt" --ep-extra-slots 3 \
  >"$work/many.txt" 2>"$work/err.txt" || { cat "$work/err.txt" >&2; fail "generate --ep-balance over $np ranks"; }
"$strata" generate --model "$work/m" --ids "$ids" --max-tokens 16 --print-ids >"$work/one.txt" 2>/dev/null
grep -q "expert balance, layer 0" "$work/err.txt" || { cat "$work/err.txt" >&2; fail "--ep-balance: no balance report"; }
cmp -s "$work/one.txt" "$work/many.txt" || fail "generate --ep-balance: $np ranks differ from one process"

for numerics in exact fast; do
  "$strata" logits --model "$work/m" --ids "$ids" --prefill 30 --numerics "$numerics" --out "$work/one.npy" 2>/dev/null
  run logits --model "$work/m" --ids "$ids" --prefill 30 --chunk 13 --numerics "$numerics" --out "$work/many.npy" 2>/dev/null ||
    fail "logits over $np ranks"
  cmp -s "$work/one.npy" "$work/many.npy" || fail "logits ($numerics): $np ranks differ from one process"
done

# bench: prefill, decode and lockstep batches over the ranks; the engine's modes refused
run bench --model "$work/m" --skip-probes --json --prompt-tokens 6 --decode-tokens 3 --batches 1,3 >"$work/bench.json" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "bench over $np ranks"; }
grep -q "\"ranks\": $np" "$work/bench.json" || fail "bench: no lockstep rows over $np ranks"
if run bench --model "$work/m" --skip-probes --prefix-tokens 8 >/dev/null 2>"$work/err.txt"; then fail "bench --prefix-tokens over $np ranks succeeded"; fi
grep -q "run in one process" "$work/err.txt" || { cat "$work/err.txt" >&2; fail "bench --prefix-tokens: no clear error"; }

# serve is one process only: a clear error, no hang
if run serve --model "$work/m" --port 0 >/dev/null 2>"$work/err.txt"; then fail "serve over $np ranks succeeded"; fi
grep -q "serve runs in one process" "$work/err.txt" || { cat "$work/err.txt" >&2; fail "serve: no clear error"; }

# the last rank reads a checkpoint whose config differs
cp -r "$work/m" "$work/m2"
sed -i 's/"rms_norm_eps": [0-9.e-]*/"rms_norm_eps": 2e-06/' "$work/m2/config.json"
cmp -s "$work/m/config.json" "$work/m2/config.json" && fail "the test could not alter config.json"
if timeout 120 "$mpiexec" --oversubscribe -np $((np - 1)) "$strata" logits --model "$work/m" --ids 1,2 --out "$work/x.npy" : \
     -np 1 "$strata" logits --model "$work/m2" --ids 1,2 --out "$work/x.npy" >/dev/null 2>"$work/err.txt"; then
  fail "ranks with different checkpoints succeeded"
fi
grep -q "rank $((np - 1))'s model differs from rank 0's" "$work/err.txt" || { cat "$work/err.txt" >&2; fail "mismatch: no clear error"; }
echo "mpirun -np $np: generate and logits equal one process; bench runs in lockstep; serve and mismatched checkpoints refused"
