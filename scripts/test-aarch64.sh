#!/usr/bin/env bash
# The aarch64 build and its ctest suite under qemu-aarch64, from an x86-64 (or any) Debian
# host: Debian's cross compilers, libsleef-dev:arm64, GoogleTest built from Debian's sources,
# cmake/toolchain-aarch64-linux-gnu.cmake. The dispatcher must pick neon by itself
# (POSENC_EXPECT_ISA; the api suite's plain run), and every suite's isa_scalar and isa_neon
# processes run every (test, ISA) pair of the aarch64 scalar and neon code. The plain
# processes of the other suites repeat the isa_neon tests on the ISA the dispatcher picks
# (neon), so they are left out here, as in scripts/test-emulated-x86.sh.
# Usage: scripts/test-aarch64.sh [build-dir]   (default: build-aarch64)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-aarch64}

scripts/install-deps.sh --aarch64
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake -DPOSENC_BUILD_BENCH=OFF
cmake --build "$build" -j "$(nproc)"
echo "posenc: aarch64 suite under qemu-aarch64"
qemu-aarch64 "$build/tools/posenc-info"
POSENC_EXPECT_ISA=neon ctest --test-dir "$build" --output-on-failure -j "$(nproc)" \
  -R '^(api|api\.isa_empty|isa_fallback\..+|example\..+|posenc_report)$|\.isa_'

