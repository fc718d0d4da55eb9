#!/usr/bin/env bash
# Installs puppeteer-core (pinned by tests/server/web/package-lock.json), which
# tests/server/web/web_chat.test.mjs drives the system's Chromium with (scripts/setup.sh installs
# Debian's chromium; puppeteer-core downloads no browser). Idempotent; silent when installed.
set -euo pipefail
cd "$(dirname "$0")/../../tests/server/web"
if [ -f node_modules/puppeteer-core/package.json ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  exit 0
fi
echo "setup: npm ci in tests/server/web" >&2
npm ci --no-audit --no-fund --loglevel=error >/dev/null
