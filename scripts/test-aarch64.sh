#!/usr/bin/env bash
# The aarch64 build and its suites under qemu-aarch64, from an x86-64 (or any) Debian host:
# Debian's cross compilers, libsleef-dev:arm64, GoogleTest built from Debian's sources,
# cmake/toolchain-aarch64-linux-gnu.cmake. Each part runs on an emulated CPU chosen with
# QEMU_CPU (qemu-user's -cpu, which ctest's emulator runs inherit) and prints its pass count
# and wall time (emulated: the times say nothing of speed):
#  1. a CPU without SVE (max,sve=off): the dispatcher must pick neon by itself
#     (POSENC_EXPECT_ISA: the api suite with POSENC_ISA unset and empty, the isa_fallback
#     runs, the examples, the report); every suite's isa_neon process, i.e. every
#     (test, neon) pair; and the variant check of the aarch64 scalar code
#     (scripts/variant-check.sh: it is the portable C that every build's whole suite runs,
#     compiled with -ffp-contract=off, so its arithmetic is the same here);
#  2. SVE at 128, 256, 512 and 2048 bits (max,sve-default-vector-length=<bytes>: the
#     property is in bytes in qemu-user), each with the api suite's plain run (the dispatcher
#     picks sve; include/posenc.h's rule serves its kernels from neon at 128 bits, which
#     dispatch_rules checks on this CPU) and dispatch_rules: at one length
#     (POSENC_SVE_FULL_BITS, default 256) every suite's isa_sve process, every (test, sve)
#     pair; at the others the vector-length check of scripts/variant-check.sh (the tests
#     whose results depend on the number of lanes, and every kernel variant).
# POSENC_EMULATED_FULL=1 runs every suite's whole process at every length and the scalar one.
# Usage: scripts/test-aarch64.sh [--build-only] [build-dir]   (default: build-aarch64)
#   --build-only: the build alone (scripts/test.sh makes it early, in the background)
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [ "${1:-}" = "--build-only" ]; then build_only=1; shift; fi
build=${1:-build-aarch64}
full_bits=${POSENC_SVE_FULL_BITS:-256}
all=${POSENC_EMULATED_FULL:-0}
# shellcheck source=scripts/variant-check.sh
source scripts/variant-check.sh

scripts/install-deps.sh --aarch64
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake -DPOSENC_BUILD_BENCH=OFF
cmake --build "$build" -j "$(nproc)"
[ "$build_only" = 0 ] || exit 0
list_emulated() {
  POSENC_ISA=scalar GTEST_FILTER=$2 qemu-aarch64 "$build/tests/$1_test" --gtest_list_tests
}
QEMU_CPU=max,sve=off variant_check_listed list_emulated

summary=()
failed=0
# run <label> <ctest -R regex> [GTEST_FILTER]: one ctest run, its pass count and wall time.
run() {
  local log=$build/ctest-aarch64-${1//[^a-z0-9]/_}.log start=$SECONDS rc=0 line
  echo "posenc: aarch64 $1 under qemu-aarch64 (QEMU_CPU=$QEMU_CPU)"
  local filter=()
  [ -z "${3:-}" ] || filter=(GTEST_FILTER="$3")
  env "${filter[@]}" ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -R "$2" \
    >"$log" 2>&1 || rc=$?
  cat "$log"
  line=$(grep -E '^[0-9]+% tests passed' "$log" || echo "no result (ctest exit $rc)")
  summary+=("$(printf '%-44s %s; %d s' "$1:" "$line" $((SECONDS - start)))")
  grep -qE '^100% tests passed' "$log" && [ "$rc" -eq 0 ] || failed=1
}

export QEMU_CPU=max,sve=off POSENC_EXPECT_ISA=neon
qemu-aarch64 "$build/tools/posenc-info"
run "no SVE: dispatcher, every neon suite" \
  '^(api|api\.isa_empty|isa_fallback\..+|example\..+|posenc_report)$|\.isa_neon$'
if [ "$all" = 1 ]; then
  run "no SVE: every scalar suite" '\.isa_scalar$'
else
  run "no SVE: variant check of scalar" "^($variant_suites)\.isa_scalar\$" "$variant_filter"
fi

export POSENC_EXPECT_ISA=sve
for bits in 128 256 512 2048; do
  export QEMU_CPU=max,sve-default-vector-length=$((bits / 8))
  qemu-aarch64 "$build/tools/posenc-info"
  if [ "$all" = 1 ] || [ "$bits" = "$full_bits" ]; then
    run "sve at $bits bits: every sve suite" '^(api|dispatch_rules)$|\.isa_sve$'
  else
    run "sve at $bits bits: dispatcher" '^(api|dispatch_rules)$'
    run "sve at $bits bits: vector-length check" "^($width_suites)\.isa_sve\$" "$width_filter"
  fi
done
echo "posenc: aarch64 summary"
printf '  %s\n' "${summary[@]}"
exit "$failed"
