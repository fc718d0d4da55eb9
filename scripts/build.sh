#!/usr/bin/env bash
# Configures and builds one flavour of strata: release (default) or sanitize (ASan+UBSan).
# Usage: scripts/build.sh [release|sanitize|fuzz] [ninja targets...]
# fuzz: the libFuzzer targets under fuzz/, with clang, ASan and UBSan (scripts/fuzz.sh runs them).
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-release}"; shift || true
case "$kind" in
  release)  flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  sanitize) flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_SANITIZE=ON -DSTRATA_BENCH=OFF) ;;
  # -O1: OSS-Fuzz's level, where sanitizers and coverage keep their precision.
  fuzz)     flags=(-DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_CXX_COMPILER=clang++ -DSTRATA_FUZZ=ON) ;;
  *) echo "unknown build kind '$kind' (release|sanitize|fuzz)" >&2; exit 2 ;;
esac
# ccache, where installed (scripts/setup.sh installs it): a build of sources compiled before,
# in any checkout of the project on this machine, takes the objects from the cache. Paths are
# made relative to the checkout (CCACHE_BASEDIR) and the build directory is left out of the
# hash (CCACHE_NOHASHDIR), so a fresh clone elsewhere hits the same entries.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
fi
dir="build/$kind"
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja "${flags[@]}" "${launcher[@]}" >/dev/null
fi
ninja -C "$dir" "$@"
