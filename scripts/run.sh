#!/usr/bin/env bash
# The main job: set up, build, create the default model (a random flash-tiny checkpoint in
# the official DeepSeek-V4 layout) if it is not there yet, and generate with it.
# Extra arguments go to `strata generate` (e.g. --max-tokens 64).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
out=$(scripts/build.sh release strata 2>&1) || { echo "$out" >&2; exit 1; }
model=models/flash-tiny
if [ ! -f "$model/model.safetensors.index.json" ]; then
  build/release/strata make-model --preset flash-tiny --seed 0 --out "$model"
fi
exec build/release/strata generate --model "$model" --prompt "The three changes in the new generation of open models are" --max-tokens 32 "$@"
