#!/usr/bin/env bash
# The main job: installs missing packages, builds, and runs posenc-report (CPU and ISA
# summary, every variant checked against the scalar reference, throughput per kernel and
# ISA against the machine's own limits). Extra arguments go to posenc-report (e.g. --quick).
# Usage: scripts/report.sh [--quick] [--json out.json]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-report

scripts/install-deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOSENC_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null
exec "$build/tools/posenc-report" "$@"
