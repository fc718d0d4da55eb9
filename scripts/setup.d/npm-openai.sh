#!/usr/bin/env bash
# Installs the official OpenAI client (openai, pinned by tests/server/npm/package-lock.json)
# that tests/server/e2e.test.mjs drives `strata serve` with. Idempotent; silent when installed.
set -euo pipefail
cd "$(dirname "$0")/../../tests/server/npm"
if [ -f node_modules/openai/package.json ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  exit 0
fi
echo "setup: npm ci in tests/server/npm" >&2
npm ci --no-audit --no-fund --loglevel=error >/dev/null
