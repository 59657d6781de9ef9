#!/usr/bin/env bash
# The test suite under sanitizers, in builds of their own (bench and tools off):
#  1. ASan + UBSan, gcc:   the whole ctest suite (GoogleTest binaries once per ISA, examples)
#  2. ASan + UBSan, clang: the same (links against Debian's gcc-built libgtest: both use
#     libstdc++, so no GoogleTest rebuild is needed)
#  3. MSan, clang: the same whole suite. MSan needs every piece of code that writes memory
#     to be instrumented. The library, the tests and GoogleTest (built from Debian's
#     /usr/src/googletest for this) are; Debian's libstdc++ is not, so libstdc++'s header
#     code and GoogleTest's own message formatting (through those iostreams) are left
#     unchecked (tests/sanitizers/msan-ignorelist.txt) and std::string is instantiated in
#     the instrumented code (-D_GLIBCXX_ASSERTIONS turns its extern templates off). SLEEF
#     is not instrumented either: its vector results are marked initialised in the vector
#     layers (kernels/simd/msan.h). OpenMP (libomp) is not instrumented, so the OpenMP
#     example is left out of this build.
# UBSan does not recover (-fno-sanitize-recover=undefined), ASan aborts on the first error
# and LeakSanitizer runs at exit; MSan halts on the first report. The death tests (fork +
# PROT_NONE guard pages) work under ASan and MSan: a guard-page access is a SEGV that the
# child reports and dies from, as expected.
# Prints one summary line per build and exits non-zero if any part failed.
# Usage: scripts/test-sanitizers.sh [build-prefix] [gcc|clang|msan ...]
#        (default: build-san, all three; builds go to <prefix>-gcc, <prefix>-clang and
#        <prefix>-msan)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-build-san}
shift $(($# > 0 ? 1 : 0))
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(gcc clang msan)
jobs=$(nproc)

scripts/install-deps.sh --sanitizers
command -v clang >/dev/null && command -v clang++ >/dev/null ||
  { echo "posenc: clang/clang++ not found (Debian: clang)" >&2; exit 1; }

# Never run sanitized binaries under an emulator or with a forced ISA from the caller.
unset POSENC_TEST_EMULATOR POSENC_ISA POSENC_EXPECT_ISA
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export MSAN_OPTIONS=halt_on_error=1

san_flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
summaries=()
status=0

# configure_and_build <dir> <cc> <cxx> <flags> [extra cmake args...]
configure_and_build() {
  local dir=$1 cc=$2 cxx=$3 flags=$4
  shift 4
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
    -DPOSENC_BUILD_BENCH=OFF -DPOSENC_BUILD_TOOLS=OFF "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

# suite <label> <dir> <cc> <cxx> <flags> [extra cmake args...]: builds and runs the whole
# ctest suite, and adds its summary line.
suite() {
  local label=$1 dir=$2 cc=$3 cxx=$4 flags=$5 log start=$SECONDS
  shift 5
  echo "=== posenc: $label"
  log=$(mktemp)
  if configure_and_build "$dir" "$cc" "$cxx" "$flags" -DPOSENC_BUILD_TESTS=ON "$@" &&
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" 2>&1 | tee "$log"; then :; fi
  local total failed skipped
  total=$(sed -n 's/.* tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -n1)
  failed=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -n1)
  skipped=$(grep -c '\*\*\*Skipped' "$log" || true)
  rm -f "$log"
  if [ -z "$total" ]; then
    summaries+=("$label: build or ctest failed ($((SECONDS - start)) s)")
    status=1
    return
  fi
  summaries+=("$label: $total tests, $failed failed ($skipped skipped: ISAs this CPU lacks; $((SECONDS - start)) s)")
  [ "$failed" = 0 ] || status=1
}

msan_flags="-fsanitize=memory -fsanitize-memory-track-origins -fno-omit-frame-pointer"
msan_flags+=" -fsanitize-ignorelist=$PWD/tests/sanitizers/msan-ignorelist.txt"

for part in "${parts[@]}"; do
  case $part in
    gcc) suite "asan+ubsan (gcc)" "$prefix-gcc" gcc g++ "$san_flags" ;;
    clang) suite "asan+ubsan (clang)" "$prefix-clang" clang clang++ "$san_flags" ;;
    msan)
      suite "msan (clang)" "$prefix-msan" clang clang++ "$msan_flags" \
        -DCMAKE_CXX_FLAGS="$msan_flags -D_GLIBCXX_ASSERTIONS" -DPOSENC_GTEST_FROM_SOURCE=ON \
        -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON
      ;;
    *)
      echo "posenc: unknown part '$part' (gcc, clang or msan)" >&2
      exit 2
      ;;
  esac
done

echo
echo "=== posenc: sanitizer summary"
printf '%s\n' "${summaries[@]}"
exit $status
