#!/usr/bin/env bash
# The aarch64 build and its whole ctest suite under qemu-aarch64, from an x86-64 (or any)
# Debian host: Debian's cross compilers, libsleef-dev:arm64, GoogleTest built from Debian's
# sources, cmake/toolchain-aarch64-linux-gnu.cmake. The dispatcher must pick neon by itself
# (POSENC_EXPECT_ISA), and every suite's isa_neon run compares neon with the scalar reference.
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
POSENC_EXPECT_ISA=neon ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
