#!/usr/bin/env bash
# The whole ctest suite under sanitizers, in the builds of scripts/sanitized-build.sh (which
# holds the flags and what each build leaves unchecked):
#  clang  ASan + UBSan, clang (links against Debian's gcc-built libgtest: both use
#         libstdc++); the same build holds the fuzz targets that scripts/test-fuzz.sh runs
#  msan   MSan, clang (GoogleTest built instrumented; the MSan fuzz targets too)
#  gcc    ASan + UBSan, gcc: not run by default nor by scripts/test.sh, as it checks no
#         (test, ISA) pair that clang's does not, and less: gcc's ASan leaves AVX-512 masked
#         loads and stores (the kernels' tails) unchecked, which clang's checks lane by lane,
#         and gcc's -fsanitize=undefined lacks float-cast-overflow and function; what it
#         alone gives is gcc's code (the native build's compiler) under the sanitizers
# Each test process tests one ISA (tests/CMakeLists.txt), as natively. UBSan does not recover,
# ASan aborts on the first error and LeakSanitizer runs at exit; MSan halts on the first
# report. The death tests (fork + PROT_NONE guard pages) work under ASan and MSan: a
# guard-page access is a SEGV that the child reports and dies from, as expected.
# Prints one summary line per build and exits non-zero if any part failed.
# Usage: scripts/test-sanitizers.sh [build-prefix] [clang|msan|gcc ...]
#        (default: build-san, clang and msan; builds go to <prefix>-clang, <prefix>-msan
#        and <prefix>-gcc)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-build-san}
shift $(($# > 0 ? 1 : 0))
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(clang msan)
jobs=$(nproc)

# Never run sanitized binaries under an emulator or with a forced ISA from the caller.
unset POSENC_TEST_EMULATOR POSENC_ISA POSENC_EXPECT_ISA
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export MSAN_OPTIONS=halt_on_error=1

summaries=()
status=0

# suite <label> <kind>: builds <prefix>-<kind>, runs its whole ctest suite, and adds its
# summary line.
suite() {
  local label=$1 kind=$2 dir=$prefix-$2 log start=$SECONDS
  echo "=== posenc: $label"
  log=$(mktemp)
  local built=""
  if scripts/sanitized-build.sh "$dir" "$kind" && built=$SECONDS &&
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
  local times="$((SECONDS - start)) s: build $((built - start)) s, ctest $((SECONDS - built)) s"
  summaries+=("$label: $total tests, $failed failed ($skipped skipped: ISAs this CPU lacks; $times)")
  [ "$failed" = 0 ] || status=1
}

for part in "${parts[@]}"; do
  case $part in
    gcc) suite "asan+ubsan (gcc)" gcc ;;
    clang) suite "asan+ubsan (clang)" clang ;;
    msan) suite "msan (clang)" msan ;;
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
