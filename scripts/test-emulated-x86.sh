#!/usr/bin/env bash
# The native x86-64 test binaries again, on emulated CPU models (qemu-x86_64, no rebuild):
# Haswell (AVX2, no AVX-512) must make the dispatcher pick avx2, Nehalem (SSE4 only) sse4
# (POSENC_EXPECT_ISA); every test must pass without an illegal instruction, and the runs
# forced to an ISA the model lacks are reported as skipped.
# Usage: scripts/test-emulated-x86.sh <native-build-dir> [Model:isa ...]
#        (default models: Haswell:avx2 Nehalem:sse4)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: $0 <native-build-dir> [Model:isa ...]}
shift
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(Haswell:avx2 Nehalem:sse4)

scripts/install-deps.sh --emulation
for model in "${models[@]}"; do
  cpu=${model%%:*} isa=${model#*:}
  echo "posenc: x86 suite under qemu-x86_64 -cpu $cpu (expected ISA: $isa)"
  qemu-x86_64 -cpu "$cpu" "$build/tools/posenc-info" 2>/dev/null
  POSENC_TEST_EMULATOR="qemu-x86_64 -cpu $cpu" POSENC_EXPECT_ISA="$isa" \
    ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
done
