#!/usr/bin/env bash
# Configures and builds one flavour of strata: release (default) or sanitize (ASan+UBSan).
# Usage: scripts/build.sh [release|sanitize] [ninja targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-release}"; shift || true
case "$kind" in
  release)  flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  sanitize) flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_SANITIZE=ON -DSTRATA_BENCH=OFF) ;;
  *) echo "unknown build kind '$kind' (release|sanitize)" >&2; exit 2 ;;
esac
dir="build/$kind"
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja "${flags[@]}" >/dev/null
fi
ninja -C "$dir" "$@"
