#!/usr/bin/env bash
# Configures and builds one sanitized build of the whole project (bench and tools off), the one
# place that knows the sanitizer flags; scripts/test-sanitizers.sh runs its ctest suite and
# scripts/test-fuzz.sh its fuzz target, so one build serves both (nothing is compiled twice):
#   gcc    ASan + UBSan with gcc
#   clang  ASan + UBSan with clang; the C code also carries libFuzzer's coverage
#          instrumentation (-fsanitize=fuzzer-no-link) and the fuzz targets (fuzz/) are built
#   msan   MSan with clang, GoogleTest compiled instrumented from Debian's
#          /usr/src/googletest, libFuzzer coverage and the fuzz targets as for clang. Debian's
#          libstdc++ is not instrumented: its header code and GoogleTest's message formatting
#          are left unchecked (tests/sanitizers/msan-ignorelist.txt) and std::string is
#          instantiated in the instrumented code (-D_GLIBCXX_ASSERTIONS turns its extern
#          templates off); SLEEF's vector results are marked initialised in kernels/simd/msan.h;
#          libomp is not instrumented, so the OpenMP example is left out. Origins are not
#          tracked unless POSENC_MSAN_ORIGINS=1 (-fsanitize-memory-track-origins): they only
#          name where an uninitialised value was made, at ~1.4-1.6x the suite's CPU time
#          (rope_half, sinusoid_variants), and find nothing more; a report without them still
#          names the use. To see the origin of a report, rebuild with POSENC_MSAN_ORIGINS=1.
# UBSan does not recover (-fno-sanitize-recover=undefined). An existing configuration is
# reused when its flags are these (else it is configured again), so a second call only builds
# what is missing.
# Usage: scripts/sanitized-build.sh <build-dir> <gcc|clang|msan> [target...]  (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: $0 <build-dir> <gcc|clang|msan> [target...]}
kind=${2:?usage: $0 <build-dir> <gcc|clang|msan> [target...]}
shift 2

scripts/install-deps.sh --sanitizers
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
msan="-fsanitize=memory -fno-omit-frame-pointer"
[ "${POSENC_MSAN_ORIGINS:-0}" = 0 ] || msan+=" -fsanitize-memory-track-origins"
msan+=" -fsanitize-ignorelist=$PWD/tests/sanitizers/msan-ignorelist.txt"
extra=()
# -O1 and line tables only: half the compile time of -O2 -g (gcc, the test sources), with
# the file:line stack traces the sanitizers print.
opt="-O1 -gline-tables-only -DNDEBUG"
case $kind in
  gcc) cc=gcc cxx=g++ flags=$san cxxflags=$san opt="-O1 -g1 -DNDEBUG" ;;
  clang) cc=clang cxx=clang++ flags=$san cxxflags=$san ;;
  msan)
    cc=clang cxx=clang++ flags=$msan cxxflags="$msan -D_GLIBCXX_ASSERTIONS"
    extra=(-DPOSENC_GTEST_FROM_SOURCE=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON)
    ;;
  *) echo "posenc: unknown sanitized build '$kind' (gcc, clang or msan)" >&2; exit 2 ;;
esac
cflags=$flags
if [ "$cc" = clang ]; then
  command -v clang >/dev/null && command -v clang++ >/dev/null ||
    { echo "posenc: clang/clang++ not found (Debian: clang)" >&2; exit 1; }
  cflags="-fsanitize=fuzzer-no-link $flags"
  extra+=(-DPOSENC_BUILD_FUZZ=ON)
fi

if [ ! -f "$dir/CMakeCache.txt" ] ||
  ! grep -qxF "CMAKE_C_FLAGS:STRING=$cflags" "$dir/CMakeCache.txt"; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_C_FLAGS="$cflags" -DCMAKE_CXX_FLAGS="$cxxflags" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
    -DPOSENC_BUILD_BENCH=OFF -DPOSENC_BUILD_TOOLS=OFF "${extra[@]}" >/dev/null
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
