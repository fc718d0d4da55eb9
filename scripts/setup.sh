#!/usr/bin/env bash
# Installs every build and test dependency of strata from Debian 12's packages.
# Idempotent and silent when everything is already there.
set -euo pipefail

pkgs=(
  g++ cmake ninja-build pkg-config make git ca-certificates ccache
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcpp-httplib-dev libpcre2-dev libcli11-dev
  zlib1g-dev  # the request journal's record CRCs (src/server/journal_file.cpp)
  chromium  # headless, for the web chat page's test (tests/server/web_chat_test.cpp)
  clang libclang-rt-14-dev  # libFuzzer and the sanitizer runtimes for the fuzz targets (fuzz/)
  libopenmpi-dev openmpi-bin  # expert parallelism over MPI (src/dist) and its mpirun tests (tests/dist)
)
# Node.js and npm run the reference tokenizers and the OpenAI client in tests; a machine
# that already has them (any version >= 18) keeps its own.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  pkgs+=(nodejs npm)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}" >&2
$SUDO apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
