#!/usr/bin/env bash
# The main job: installs missing packages (Python's matplotlib too, for the plots), builds
# posenc-report and runs it: CPU and ISA summary, every variant checked against the scalar
# reference, throughput per kernel, ISA and shape against the machine's own limits, saved into
# report/ (posenc-report.txt, posenc-report.json, plots/*.png and *.svg). Arguments go to
# posenc-report; paths in them are relative to the current directory.
# Usage: scripts/report.sh [--quick] [--out DIR] [--filter REGEX] [--no-plots] ...
#        scripts/report.sh compare A.json B.json ... [--out DIR]
# Needs no terminal and no stdin (packages come from apt-get, as root or through sudo).
# POSENC_REPORT_BUILD: the build directory (default: build-report in the repository).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${POSENC_REPORT_BUILD:-$root/build-report}

"$root/scripts/install-deps.sh" --plots </dev/null
echo "posenc: building posenc-report in $build" >&2
mkdir -p "$build"
log=$build/report-build.log
# Quiet unless it fails: then the whole log.
if ! { cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
         -DPOSENC_BUILD_TESTS=OFF -DPOSENC_BUILD_EXAMPLES=OFF &&
       cmake --build "$build" -j "$(nproc)" --target posenc-report; } >"$log" 2>&1 </dev/null; then
  cat "$log" >&2
  echo "posenc: building posenc-report failed (log: $log)" >&2
  exit 1
fi
exec "$build/tools/posenc-report" "$@"
