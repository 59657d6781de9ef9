#!/usr/bin/env bash
# The riscv64 build and its rvv suites under qemu-riscv64, from an x86-64 (or any) Debian 12
# host: clang-16 for C (Debian 12's riscv64 gcc has no RVV intrinsics), riscv64-linux-gnu-g++
# for the C++ tests, GoogleTest built from Debian's sources, cmake/toolchain-riscv64-linux-gnu.cmake.
# SLEEF: Debian 12 has no riscv64 port, so Debian 13's libsleef-dev and libsleef3 (riscv64,
# with SLEEF's RVV functions) are fetched from deb.debian.org with apt-get through a private
# configuration (the system's sources, lists and packages untouched) and unpacked under the
# build directory, once (the build tree's RUNPATH finds libsleef.so.3 there; the programs
# run on the cross sysroot /usr/riscv64-linux-gnu, qemu's -L prefix).
# Runs, each with its pass count and wall time (emulated: the times say nothing of speed):
#  - the dispatcher's own choice, once on a CPU without V (it must pick scalar) and once with
#    V (rvv): the api suite with POSENC_ISA unset and empty (POSENC_EXPECT_ISA), the
#    isa_fallback runs and the examples;
#  - at VLEN 128, 256 and 1024 bits (QEMU_CPU=rv64,v=true,vlen=<bits>,elen=64,vext_spec=v1.0;
#    qemu 7.2 emulates VLEN 128 to 1024): at one VLEN (POSENC_RVV_FULL_VLEN, default 256)
#    every suite's rvv process (ctest's <suite>.isa_rvv: every (test, rvv) pair, the
#    parameterised tests against the scalar reference in the same process); at the others
#    the vector-length check of scripts/variant-check.sh (the tests whose results depend on
#    the number of lanes, and every kernel variant).
# The scalar processes (<suite>.isa_scalar) are not run: that code is the portable C of every
# other build, compiled with -ffp-contract=off; run them with ctest -R '\.isa_scalar$' if
# needed.
# Usage: scripts/test-riscv64.sh [--build-only] [build-dir]   (default: build-riscv64)
#   --build-only: the build alone (scripts/test.sh makes it early, in the background)
#   POSENC_RVV_VLENS      the VLENs, default "128 256 1024"
#   POSENC_RVV_FULL_VLEN  the VLEN of the whole rvv suite, default 256 (the cheapest to
#                         emulate: 520 s of CPU on this machine kind, 60 s for the check)
#   POSENC_EMULATED_FULL  1: the whole rvv suite at every VLEN
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [ "${1:-}" = "--build-only" ]; then build_only=1; shift; fi
build=${1:-build-riscv64}
vlens=${POSENC_RVV_VLENS:-128 256 1024}
full_vlen=${POSENC_RVV_FULL_VLEN:-256}
all=${POSENC_EMULATED_FULL:-0}
# shellcheck source=scripts/variant-check.sh
source scripts/variant-check.sh

scripts/install-deps.sh --riscv64
mkdir -p "$build"
build=$(cd "$build" && pwd)

# Debian 13's SLEEF for riscv64, under $build/riscv64-debs.
debs=$build/riscv64-debs
sleef=$debs/root/usr
if [ ! -e "$sleef/lib/riscv64-linux-gnu/libsleef.so" ]; then
  echo "posenc: fetching Debian 13's libsleef-dev and libsleef3 for riscv64 into $debs"
  rm -rf "$debs"
  mkdir -p "$debs/lists/partial" "$debs/cache/archives/partial" "$debs/pkgs" "$debs/root"
  echo "deb [arch=riscv64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
    "http://deb.debian.org/debian trixie main" >"$debs/sources.list"
  apt_opts=(-q -oDir::Etc::SourceList="$debs/sources.list" -oDir::Etc::SourceParts=/dev/null
            -oDir::State::Lists="$debs/lists" -oDir::Cache="$debs/cache"
            -oAPT::Architecture=riscv64 -oAPT::Architectures=riscv64)
  # As root, apt downloads as the _apt user, who cannot write into the build directory.
  [ "$(id -u)" -ne 0 ] || apt_opts+=(-oAPT::Sandbox::User=root)
  apt-get "${apt_opts[@]}" update </dev/null
  (cd "$debs/pkgs" && apt-get "${apt_opts[@]}" download libsleef-dev:riscv64 libsleef3:riscv64 </dev/null)
  for deb in "$debs"/pkgs/*.deb; do dpkg-deb -x "$deb" "$debs/root"; done
  rm -rf "$debs/lists" "$debs/cache" # 20 MB of package lists, not needed again
fi
sleef_version=$(dpkg-deb -f "$(ls "$debs"/pkgs/libsleef3_*.deb)" Version)

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-riscv64-linux-gnu.cmake -DPOSENC_BUILD_BENCH=OFF \
  -DSLEEF_INCLUDE_DIR="$sleef/include/riscv64-linux-gnu" \
  -DSLEEF_LIBRARY="$sleef/lib/riscv64-linux-gnu/libsleef.so"
cmake --build "$build" -j "$(nproc)"
[ "$build_only" = 0 ] || exit 0

cpu_v() { echo "rv64,v=true,vlen=$1,elen=64,vext_spec=v1.0"; }
list_emulated() {
  POSENC_ISA=scalar GTEST_FILTER=$2 QEMU_CPU=rv64 qemu-riscv64 -L /usr/riscv64-linux-gnu \
    "$build/tests/$1_test" --gtest_list_tests
}
variant_check_listed list_emulated
summary=()
failed=0
# run <label> <QEMU_CPU> <expected ISA> <ctest -R regex> [GTEST_FILTER]
run() {
  local log=$build/ctest-riscv64-${1//[^a-zA-Z0-9]/_}.log start=$SECONDS rc=0 line
  echo "posenc: riscv64 $1 under qemu-riscv64 (QEMU_CPU=$2)"
  QEMU_CPU=$2 qemu-riscv64 -L /usr/riscv64-linux-gnu "$build/tools/posenc-info" | head -5
  local filter=()
  [ -z "${5:-}" ] || filter=(GTEST_FILTER="$5")
  env QEMU_CPU="$2" POSENC_EXPECT_ISA="$3" "${filter[@]}" ctest --test-dir "$build" \
    --output-on-failure -j "$(nproc)" --timeout 3600 -R "$4" >"$log" 2>&1 || rc=$?
  cat "$log"
  line=$(grep -E '^[0-9]+% tests passed' "$log" || echo "no result (ctest exit $rc)")
  summary+=("$(printf '%-38s %s; %d s' "$1:" "$line" $((SECONDS - start)))")
  grep -qE '^100% tests passed' "$log" && [ "$rc" -eq 0 ] || failed=1
}

echo "posenc: riscv64 suites (SLEEF $sleef_version from Debian 13)"
dispatch='^(api|api\.isa_empty|isa_fallback\..+|example\..+)$'
run "dispatch, no V" rv64 scalar "$dispatch"
run "dispatch, V at VLEN 256" "$(cpu_v 256)" rvv "$dispatch"
for vlen in $vlens; do
  if [ "$all" = 1 ] || [ "$vlen" = "$full_vlen" ]; then
    run "rvv at VLEN $vlen: every rvv suite" "$(cpu_v "$vlen")" rvv '\.isa_rvv$'
  else
    run "rvv at VLEN $vlen: vector-length check" "$(cpu_v "$vlen")" rvv \
      "^($width_suites)\.isa_rvv\$" "$width_filter"
  fi
done

echo "posenc: riscv64 summary (SLEEF $sleef_version)"
printf '  %s\n' "${summary[@]}"
exit $failed
