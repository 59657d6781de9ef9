#!/usr/bin/env bash
# The whole test suite, warnings as errors: the sources' format (clang-format); the native
# build's ctest suite (tests and examples; each test process tests one ISA) and a check that
# every exported function and kernel variant is defined literally (scripts/check-names.sh);
# the packaging consumers (find_package, pkg-config, add_subdirectory) against the native
# build installed into a prefix; the Python package's pytest suite; the whole ctest suite
# under ASan+UBSan (clang: every (test, ISA) pair); the dispatcher race test under TSan (100
# rounds); the libFuzzer differential targets on both cores, time-boxed, under ASan+UBSan (in
# the same sanitized build) and under MSan; then, on an x86-64 host, the aarch64 build under
# qemu-aarch64 (scripts/test-aarch64.sh: every neon pair; sve's at 256 bits, and its
# vector-length check at 128, 512 and 2048), the riscv64 build under qemu-riscv64
# (scripts/test-riscv64.sh: every rvv pair at VLEN 256, the vector-length check at 128 and
# 1024), and the native binaries on emulated Haswell and Nehalem CPUs
# (scripts/test-emulated-x86.sh: the dispatcher's choice and every kernel variant of their
# ISAs; an ISA's whole suite there only where this host lacks it). The emulated parts run
# what depends on their vector layer, not the native suite again (scripts/variant-check.sh).
# Installs what it needs. Stops at the first failing part; prints each part's wall time at
# the end (also when a part failed).
# The ASan+UBSan suite is clang's alone: clang's ASan checks AVX-512 masked loads and stores
# lane by lane (gcc's does not check them), its UBSan has float-cast-overflow and function
# (not in gcc's -fsanitize=undefined), and its build is the ASan fuzz targets' anyway; gcc's
# (scripts/test-sanitizers.sh build-san gcc) checked no pair that clang's does not.
# MSan runs on the fuzz targets (every kernel family through the public API, differential
# against the scalar reference); its whole ctest suite, a third run of every pair, is
# scripts/test-sanitizers.sh build-san msan.
# Fuzzing time per sanitizer: POSENC_FUZZ_SECONDS (default 60 for ASan+UBSan, MSan half).
# Usage: scripts/test.sh [--native-only] [build-dir]   (default: build-test)
set -euo pipefail
cd "$(dirname "$0")/.."
native_only=0
if [ "${1:-}" = "--native-only" ]; then native_only=1; shift; fi
build=${1:-build-test}
fuzz_seconds=${POSENC_FUZZ_SECONDS:-60}

names=() times=()
declare -A cross_pid=()
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
  for i in "${cross_pid[@]}"; do kill -0 "$i" 2>/dev/null && kill -- -"$i"; done
}
trap print_times EXIT

part "packages (one apt-get run for every part)"
if [ "$native_only" = 1 ]; then
  scripts/install-deps.sh --format
elif [ "$(uname -m)" = x86_64 ]; then
  riscv=()
  [ -x scripts/test-riscv64.sh ] && riscv=(--riscv64)
  scripts/install-deps.sh --format --sanitizers --aarch64 "${riscv[@]}" --emulation --python
else
  scripts/install-deps.sh --format --sanitizers --python
fi
# The cross builds start now, at the lowest priority, one after the other: they take the
# cores the parts before theirs leave idle (single-threaded pytest, configure steps, ctest's
# last tests), and each part waits for its own build, which it then finds done (or
# finishes). Each build runs in its own process group (job control on for the job), so
# that an early exit stops it with its compilers; in the same session, as a new one
# (setsid) would be a scheduler autogroup of its own, which Linux gives an equal share of
# the CPU whatever its nice.
declare -A cross_log=()
if [ "$native_only" = 0 ] && [ "$(uname -m)" = x86_64 ]; then
  set -m
  for arch in aarch64 riscv64; do
    [ -x "scripts/test-$arch.sh" ] || continue
    cross_log[$arch]=$(mktemp)
    after=${cross_pid[aarch64]:-}
    (
      while [ -n "$after" ] && kill -0 "$after" 2>/dev/null; do sleep 2; done
      start=$SECONDS
      nice -n 19 "scripts/test-$arch.sh" --build-only "$build-$arch"
      echo "posenc: the $arch build, in the background: $((SECONDS - start)) s"
    ) >"${cross_log[$arch]}" 2>&1 </dev/null &
    cross_pid[$arch]=$!
  done
  set +m
fi
# cross_wait <arch>: waits for that background build and prints its log.
cross_wait() {
  local status=0
  echo "posenc: waiting for the $1 build (started in the background at low priority)"
  wait "${cross_pid[$1]}" || status=$?
  unset "cross_pid[$1]"
  cat "${cross_log[$1]}"
  rm -f "${cross_log[$1]}"
  [ "$status" = 0 ] || { echo "posenc: the $1 build failed" >&2; exit "$status"; }
}
part "source format (clang-format --dry-run -Werror)"
git ls-files -z '*.c' '*.h' '*.cc' | xargs -0 -P "$(nproc)" -n 8 clang-format --dry-run -Werror
part "native suite ($(uname -m))"
scripts/test-native.sh "$build"
part "every exported function and kernel variant defined literally (git grep finds it)"
scripts/check-names.sh "$build"
if [ "$native_only" = 1 ]; then exit 0; fi
part "packaging: consumers of the installed library and of the source tree"
scripts/test-consumers.sh "$build"
part "Python package"
scripts/test-python.sh "$build-python" "$build"
part "sanitizers: ASan+UBSan (clang; also the fuzz targets' build)"
scripts/test-sanitizers.sh "$build-san" clang
part "dispatcher race under TSan"
scripts/test-tsan.sh "$build-tsan" 100
part "differential fuzzing under ASan+UBSan (${fuzz_seconds} s)"
scripts/test-fuzz.sh "$build-san-clang" "$fuzz_seconds"
part "differential fuzzing under MSan ($((fuzz_seconds / 2)) s)"
POSENC_FUZZ_SANITIZER=memory scripts/test-fuzz.sh "$build-san-msan" $((fuzz_seconds / 2))
if [ "$(uname -m)" = x86_64 ]; then
  part "aarch64 suites under qemu-aarch64"
  cross_wait aarch64
  scripts/test-aarch64.sh "$build-aarch64"
  if [ -x scripts/test-riscv64.sh ]; then
    part "riscv64 suites under qemu-riscv64"
    cross_wait riscv64
    scripts/test-riscv64.sh "$build-riscv64"
  fi
  part "x86 on emulated CPU models (dispatcher; every variant; suites of ISAs the host lacks)"
  scripts/test-emulated-x86.sh "$build"
fi
finish_part
echo; echo "=== posenc: all parts passed"
