#!/usr/bin/env bash
# The native x86-64 test binaries again, on emulated CPU models (qemu-x86_64, no rebuild).
# Each model runs:
#  - the dispatcher's own choice: the api suite with POSENC_ISA unset and empty
#    (PicksTheExpectedIsaForThisCpu: POSENC_EXPECT_ISA, e.g. avx2 on Haswell, sse4 on
#    Nehalem) and the isa_fallback runs, and the examples (each on the ISA it picks there);
#  - every suite's process for each ISA of its list (ctest's <suite>.isa_<isa>): every
#    (test, ISA) pair of those ISAs, with no illegal instruction on a CPU without the tiers
#    above it.
# By default Haswell runs the avx2 processes and Nehalem the scalar and sse4 ones: each ISA
# on the smallest model that has it (an ISA's code does not depend on the CPU beyond what
# the dispatcher reads, which the api runs check on both). The plain processes of the other
# suites repeat, on the ISA the dispatcher picks, the tests of that ISA's process, so they run
# natively only. Runs forced to an ISA a model lacks are reported as skipped.
# Usage: scripts/test-emulated-x86.sh <native-build-dir> [Model:expected-isa[:isa,...] ...]
#        (default: Haswell:avx2:avx2 Nehalem:sse4:scalar,sse4)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: $0 <native-build-dir> [Model:expected-isa[:isa,...] ...]}
shift
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(Haswell:avx2:avx2 Nehalem:sse4:scalar,sse4)

scripts/install-deps.sh --emulation
for model in "${models[@]}"; do
  IFS=: read -r cpu isa suites <<<"$model"
  suites=${suites:-$isa}
  echo "posenc: x86 suite under qemu-x86_64 -cpu $cpu (expected ISA: $isa; suites run for" \
    "${suites//,/, })"
  qemu-x86_64 -cpu "$cpu" "$build/tools/posenc-info" 2>/dev/null
  POSENC_TEST_EMULATOR="qemu-x86_64 -cpu $cpu" POSENC_EXPECT_ISA="$isa" \
    ctest --test-dir "$build" --output-on-failure -j "$(nproc)" \
    -R "^(api|api\.isa_empty|isa_fallback\..+|example\..+)\$|\.isa_(${suites//,/|})\$"
done
