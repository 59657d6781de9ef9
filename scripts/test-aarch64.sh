#!/usr/bin/env bash
# The aarch64 build and its ctest suite under qemu-aarch64, from an x86-64 (or any) Debian
# host: Debian's cross compilers, libsleef-dev:arm64, GoogleTest built from Debian's sources,
# cmake/toolchain-aarch64-linux-gnu.cmake. Two parts, each on an emulated CPU chosen with
# QEMU_CPU (qemu-user's -cpu, which ctest's emulator runs inherit):
#  1. a CPU without SVE (max,sve=off): the dispatcher must pick neon by itself
#     (POSENC_EXPECT_ISA; the api suite's plain run), and every suite's isa_scalar and
#     isa_neon processes run every (test, ISA) pair of the aarch64 scalar and neon code. The
#     plain processes of the other suites repeat the isa_neon tests on the ISA the dispatcher
#     picks (neon), so they are left out here, as in scripts/test-emulated-x86.sh;
#  2. SVE at 128, 256, 512 and 2048 bits (max,sve-default-vector-length=<bytes>: the
#     property is in bytes in qemu-user): every suite's isa_sve process, the api suite's
#     plain run (the dispatcher picks sve; include/posenc.h's rule serves its kernels from
#     neon at 128 bits, which dispatch_rules checks on this CPU) and dispatch_rules. Each
#     length's pass count and wall time are printed (emulated: the times say nothing of
#     speed).
# Usage: scripts/test-aarch64.sh [build-dir]   (default: build-aarch64)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-aarch64}

scripts/install-deps.sh --aarch64
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake -DPOSENC_BUILD_BENCH=OFF
cmake --build "$build" -j "$(nproc)"

echo "posenc: aarch64 suite under qemu-aarch64, a CPU without SVE"
export QEMU_CPU=max,sve=off
qemu-aarch64 "$build/tools/posenc-info"
POSENC_EXPECT_ISA=neon ctest --test-dir "$build" --output-on-failure -j "$(nproc)" \
  -R '^(api|api\.isa_empty|isa_fallback\..+|example\..+|posenc_report)$|\.isa_' -E '\.isa_sve$'

log=$(mktemp)
trap 'rm -f "$log"' EXIT
summary=()
failed=0
for bits in 128 256 512 2048; do
  echo "posenc: sve suites under qemu-aarch64, SVE at $bits bits"
  export QEMU_CPU=max,sve-default-vector-length=$((bits / 8))
  qemu-aarch64 "$build/tools/posenc-info"
  start=$(date +%s)
  status=0
  POSENC_EXPECT_ISA=sve ctest --test-dir "$build" --output-on-failure -j "$(nproc)" \
    -R '^(api|dispatch_rules)$|\.isa_sve$' >"$log" 2>&1 || status=$?
  cat "$log"
  result=$(grep -E 'tests passed' "$log" || echo "no result")
  summary+=("sve $bits bits: $result ($(($(date +%s) - start)) s)")
  [ "$status" -eq 0 ] || failed=1
done
printf 'posenc: %s\n' "${summary[@]}"
exit "$failed"
