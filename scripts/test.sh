#!/usr/bin/env bash
# The whole test suite, warnings as errors: the native build's ctest suite (tests and
# examples); the packaging consumers (find_package, pkg-config, add_subdirectory) against
# an installed prefix; the Python package's pytest suite; the whole ctest suite under
# ASan+UBSan (gcc and clang) and MSan (clang); the dispatcher race test under TSan (100
# rounds); the libFuzzer differential target under ASan+UBSan (1,000,000 executions) and
# MSan (200,000); then, on an x86-64 host, the aarch64 build's suite under qemu-aarch64 and
# the native suite again on emulated Haswell (avx2) and Nehalem (sse4) CPUs. Installs what
# it needs. Stops at the first failing part.
# Usage: scripts/test.sh [--native-only] [build-dir]   (default: build-test)
set -euo pipefail
cd "$(dirname "$0")/.."
native_only=0
if [ "${1:-}" = "--native-only" ]; then native_only=1; shift; fi
build=${1:-build-test}

part() { echo; echo "=== posenc: $1"; }
part "native suite ($(uname -m))"
scripts/test-native.sh "$build"
if [ "$native_only" = 1 ]; then exit 0; fi
part "packaging: consumers of the installed library and of the source tree"
scripts/test-consumers.sh "$build-consumers"
part "Python package"
scripts/test-python.sh "$build-python"
part "sanitizers: ASan+UBSan (gcc, clang), MSan (clang)"
scripts/test-sanitizers.sh "$build-san"
part "dispatcher race under TSan"
scripts/test-tsan.sh "$build-tsan" 100
part "differential fuzzing under ASan+UBSan"
scripts/test-fuzz.sh "$build-fuzz" 1000000
part "differential fuzzing under MSan"
POSENC_FUZZ_SANITIZER=memory scripts/test-fuzz.sh "$build-fuzz-msan" 200000
if [ "$(uname -m)" = x86_64 ]; then
  part "aarch64 suite under qemu-aarch64"
  scripts/test-aarch64.sh "$build-aarch64"
  part "x86 suite on emulated CPU models"
  scripts/test-emulated-x86.sh "$build"
fi
part "all parts passed"
