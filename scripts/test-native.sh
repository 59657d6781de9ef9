#!/usr/bin/env bash
# The native test suite: installs missing packages, builds with warnings as errors, and runs
# ctest (every test binary once per ISA; ISAs this CPU lacks are reported as skipped).
# Prints the build's and the ctest run's wall times.
# Usage: scripts/test-native.sh [build-dir]   (default: build-test)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-test}

scripts/install-deps.sh
start=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON
cmake --build "$build" -j "$(nproc)"
built=$SECONDS
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
echo "posenc: native build $((built - start)) s, ctest $((SECONDS - built)) s"
