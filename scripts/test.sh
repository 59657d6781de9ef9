#!/usr/bin/env bash
# The whole test suite, warnings as errors: the sources' format (clang-format); the native
# build's ctest suite (tests and examples; each test process tests one ISA) and a check that
# every exported function and kernel variant is defined literally (scripts/check-names.sh);
# the packaging consumers (find_package, pkg-config, add_subdirectory) against the native
# build installed into a prefix; the Python package's pytest suite; the whole ctest suite
# under ASan+UBSan (gcc, clang) and MSan (clang); the dispatcher race test under
# TSan (100 rounds); the libFuzzer differential targets on both cores, time-boxed, under
# ASan+UBSan and MSan (in the clang and MSan builds of the sanitizer suite); then, on an
# x86-64 host, the aarch64 build's suite under qemu-aarch64 and the native binaries again on
# emulated Haswell (avx2) and Nehalem (scalar, sse4) CPUs (scripts/test-emulated-x86.sh). Installs what it needs. Stops at the first
# failing part; prints each part's wall time at the end (also when a part failed).
# Fuzzing time per sanitizer: POSENC_FUZZ_SECONDS (default 120 for ASan+UBSan, MSan half).
# Usage: scripts/test.sh [--native-only] [build-dir]   (default: build-test)
set -euo pipefail
cd "$(dirname "$0")/.."
native_only=0
if [ "${1:-}" = "--native-only" ]; then native_only=1; shift; fi
build=${1:-build-test}
fuzz_seconds=${POSENC_FUZZ_SECONDS:-120}

names=() times=()
current="" current_start=$SECONDS
part() {
  finish_part
  current=$1 current_start=$SECONDS
  echo; echo "=== posenc: $1"
}
finish_part() {
  if [ -n "$current" ]; then names+=("$current"); times+=($((SECONDS - current_start))); fi
  current=""
}
print_times() {
  local rc=$? i
  [ -n "$current" ] && [ $rc -ne 0 ] && current="$current (FAILED)"
  finish_part
  echo; echo "=== posenc: wall time per part"
  for i in "${!names[@]}"; do printf '%6d s  %s\n' "${times[$i]}" "${names[$i]}"; done
  printf '%6d s  total\n' "$SECONDS"
}
trap print_times EXIT

part "packages (one apt-get run for every part)"
if [ "$native_only" = 1 ]; then
  scripts/install-deps.sh --format
elif [ "$(uname -m)" = x86_64 ]; then
  scripts/install-deps.sh --format --sanitizers --aarch64 --emulation --python
else
  scripts/install-deps.sh --format --sanitizers --python
fi
part "source format (clang-format --dry-run -Werror)"
git ls-files -z '*.c' '*.h' '*.cc' | xargs -0 clang-format --dry-run -Werror
part "native suite ($(uname -m))"
scripts/test-native.sh "$build"
part "every exported function and kernel variant defined literally (git grep finds it)"
scripts/check-names.sh "$build"
if [ "$native_only" = 1 ]; then exit 0; fi
part "packaging: consumers of the installed library and of the source tree"
scripts/test-consumers.sh "$build"
part "Python package"
scripts/test-python.sh "$build-python" "$build"
part "sanitizers: ASan+UBSan (gcc)"
scripts/test-sanitizers.sh "$build-san" gcc
part "sanitizers: ASan+UBSan (clang)"
scripts/test-sanitizers.sh "$build-san" clang
part "sanitizers: MSan (clang)"
scripts/test-sanitizers.sh "$build-san" msan
part "dispatcher race under TSan"
scripts/test-tsan.sh "$build-tsan" 100
part "differential fuzzing under ASan+UBSan (${fuzz_seconds} s)"
scripts/test-fuzz.sh "$build-san-clang" "$fuzz_seconds"
part "differential fuzzing under MSan ($((fuzz_seconds / 2)) s)"
POSENC_FUZZ_SANITIZER=memory scripts/test-fuzz.sh "$build-san-msan" $((fuzz_seconds / 2))
if [ "$(uname -m)" = x86_64 ]; then
  part "aarch64 suite under qemu-aarch64"
  scripts/test-aarch64.sh "$build-aarch64"
  part "x86 suite on emulated CPU models"
  scripts/test-emulated-x86.sh "$build"
fi
finish_part
echo; echo "=== posenc: all parts passed"
