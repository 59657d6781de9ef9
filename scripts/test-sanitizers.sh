#!/usr/bin/env bash
# The test suite under sanitizers, in builds of their own (bench and tools off):
#  1. ASan + UBSan, gcc:   the whole ctest suite (GoogleTest binaries once per ISA, examples)
#  2. ASan + UBSan, clang: the same (links against Debian's gcc-built libgtest: both use
#     libstdc++, so no GoogleTest rebuild is needed)
#  3. MSan, clang: the library and the C example programs only. MSan needs every piece of
#     code that writes memory to be instrumented; Debian's GoogleTest and libstdc++ are not,
#     so the GoogleTest suite would drown in false positives (memory initialised inside
#     uninstrumented code looks uninitialised to MSan) and is not run under MSan. The
#     examples are plain C, link only libposenc (libm, libsleef), and compare every result
#     with a double-precision reference, so each output element is actually read. SLEEF is
#     not instrumented either: see msan() for the SIMD variants that are left out.
# UBSan does not recover (-fno-sanitize-recover=undefined), ASan aborts on the first error
# and LeakSanitizer runs at exit. The death tests (fork + PROT_NONE guard pages) work under
# ASan: a guard-page access is a SEGV that the child reports and dies from, as expected.
# Prints one summary line per build and exits non-zero if any part failed.
# Usage: scripts/test-sanitizers.sh [build-prefix]   (default: build-san; builds go to
#        <prefix>-gcc, <prefix>-clang and <prefix>-msan)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-build-san}
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

# asan_ubsan <name> <cc> <cxx>
asan_ubsan() {
  local name=$1 dir=$prefix-$1 log start=$SECONDS
  echo "=== posenc: asan+ubsan ($name)"
  log=$(mktemp)
  if configure_and_build "$dir" "$2" "$3" "$san_flags" -DPOSENC_BUILD_TESTS=ON &&
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" 2>&1 | tee "$log"; then :; fi
  local total failed skipped
  total=$(sed -n 's/.* tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -n1)
  failed=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -n1)
  skipped=$(grep -c '\*\*\*Skipped' "$log" || true)
  rm -f "$log"
  if [ -z "$total" ]; then
    summaries+=("asan+ubsan ($name): build or ctest failed ($((SECONDS - start)) s)")
    status=1
    return
  fi
  summaries+=("asan+ubsan ($name): $total tests, $failed failed ($skipped skipped: ISAs this CPU lacks; $((SECONDS - start)) s)")
  [ "$failed" = 0 ] || status=1
}

# msan: the library and the C examples. Every example runs with the scalar variants, and,
# with every SIMD ISA, the examples whose kernels call no SLEEF function (ALiBi, learned):
# SLEEF (Debian's libsleef) is not MSan-instrumented, and its vector sincos returns its
# result through memory that MSan cannot see being written, so every RoPE and sinusoid SIMD
# variant reports a false use-of-uninitialized-value at its first use of a sin/cos vector
# (origin: the stack slot of the Sleef_sincosf{4,8,16}_u10* result, a struct returned in
# memory). The scalar variants call SLEEF's scalar sincosf, whose two floats come back in a
# register, which MSan takes as initialised. (A __msan_unpoison of that result in
# vf_sincos, under __has_feature(memory_sanitizer), would let every variant run here.)
msan_simd_examples="attention_alibi attention_learned"

msan() {
  local dir=$prefix-msan programs=0 reports=0 runs=0 start=$SECONDS
  echo "=== posenc: msan (clang, C programs)"
  if ! configure_and_build "$dir" clang clang++ \
    "-fsanitize=memory -fsanitize-memory-track-origins -fno-omit-frame-pointer" \
    -DPOSENC_BUILD_TESTS=OFF -DPOSENC_BUILD_EXAMPLES=ON; then
    summaries+=("msan (clang, C programs): build failed ($((SECONDS - start)) s)")
    status=1
    return
  fi
  local examples isas
  examples=$(sed -n '/set(POSENC_EXAMPLES/,/)/p' examples/CMakeLists.txt |
    tr -d '()' | sed 's/set//; s/POSENC_EXAMPLES//' | tr -s ' \n' ' ')
  for ex in $examples; do
    programs=$((programs + 1))
    isas=scalar
    case " $msan_simd_examples " in *" $ex "*) isas="scalar sse4 avx2 avx512 neon" ;; esac
    for isa in $isas; do
      runs=$((runs + 1))
      if ! POSENC_ISA=$isa "$dir/examples/$ex" >"$dir/msan-$ex-$isa.log" 2>&1; then
        echo "FAILED: $ex (POSENC_ISA=$isa):"
        cat "$dir/msan-$ex-$isa.log"
        reports=$((reports + 1))
      fi
    done
  done
  summaries+=("msan (clang, C programs): $programs programs ($runs runs: scalar, and every ISA for $msan_simd_examples), $reports reports ($((SECONDS - start)) s)")
  [ "$reports" = 0 ] || status=1
}

asan_ubsan gcc gcc g++
asan_ubsan clang clang clang++
msan

echo
echo "=== posenc: sanitizer summary"
printf '%s\n' "${summaries[@]}"
exit $status
