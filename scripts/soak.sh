#!/usr/bin/env bash
# Soak test of `strata serve`: MINUTES of 32 concurrent clients against a random flash-tiny
# model, checking outputs against each request run alone, flat RSS, the pool back to its prefix
# checkpoints, a steady p99 and a live server (tests/soak/soak.mjs; docs/server.md, "Soak test").
# Usage: scripts/soak.sh MINUTES [soak.mjs options: --seed N, --json FILE, ...]
# SOAK_JSON=FILE also writes the summary as JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:?usage: scripts/soak.sh MINUTES [--seed N] [--json FILE]}"; shift
[ -x build/release/strata ] || scripts/build.sh release strata
tmp="$(mktemp -d /tmp/strata-soak.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
build/release/strata make-model --preset flash-tiny --seed 1 --out "$tmp/flash-tiny" >/dev/null
# The server log is kept when the soak fails (it names it).
if node tests/soak/soak.mjs --binary build/release/strata --model "$tmp/flash-tiny" --minutes "$minutes" \
     --log "$tmp/serve.log" "$@"; then
  exit 0
fi
cp "$tmp/serve.log" /tmp/strata-soak-serve.log 2>/dev/null && echo "soak: server log kept in /tmp/strata-soak-serve.log" >&2
exit 1
