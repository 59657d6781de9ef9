#!/usr/bin/env bash
# The libFuzzer differential target over the public API (fuzz/fuzz_api.c): builds fuzz/
# (the library from this source tree and the target) with clang, the library and target
# with -fsanitize=address,undefined -fno-sanitize-recover=undefined (plus libFuzzer's
# coverage instrumentation) and the target linked with -fsanitize=fuzzer, then runs RUNS
# executions (default 1000000) over a copy of the seed corpus fuzz/corpus. Prints the
# execution count, the time and any finding; fails on a crash, a sanitizer report or a
# differential violation (the target aborts). Needs clang and libclang-rt-14-dev (Debian).
# POSENC_FUZZ_SANITIZER=memory builds with MemorySanitizer instead of ASan+UBSan (libFuzzer
# supports it; SLEEF's vector results are marked initialised in kernels/simd/msan.h).
# POSENC_FUZZ_STRICT=1 also compares the values of calls hitting the known issues listed in
# fuzz/fuzz_api.c (frequencies above 2^32, a RoPE attention factor above FLT_MAX).
# The run uses a fixed libFuzzer seed (POSENC_FUZZ_SEED, default 1), so a CI run is
# reproducible; set another seed (or 0 for a random one) to explore further.
# Usage: scripts/test-fuzz.sh [build-dir] [runs] [extra libFuzzer options...]
#   (default: build-fuzz 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --sanitizers
build=${1:-build-fuzz}
runs=${2:-1000000}
shift $(($# < 2 ? $# : 2))
cc=${CC_FUZZ:-clang}
cxx=${CXX_FUZZ:-clang++}

case ${POSENC_FUZZ_SANITIZER:-address} in
  address) san="-fsanitize=address,undefined -fno-sanitize-recover=undefined" ;;
  memory) san="-fsanitize=memory -fsanitize-memory-track-origins" ;;
  *) echo "posenc: POSENC_FUZZ_SANITIZER is address or memory" >&2; exit 2 ;;
esac
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S fuzz -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link $san -fno-omit-frame-pointer" \
    -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" \
    -DCMAKE_SHARED_LINKER_FLAGS="$san"
fi
cmake --build "$build" -j "${POSENC_JOBS:-2}" --target fuzz_api

work=$build/fuzz-run
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp fuzz/corpus/* "$work/corpus/"
# The environment must not force an ISA; the target switches ISAs itself.
unset POSENC_ISA
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export MSAN_OPTIONS="halt_on_error=1"
start=$(date +%s)
set +e
"$build/fuzz_api" -runs="$runs" -seed="${POSENC_FUZZ_SEED:-1}" -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" >"$work/log" 2>&1
rc=$?
set -e
elapsed=$(($(date +%s) - start))
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n1)
crashes=$(find "$work/artifacts" -type f | wc -l)
echo "fuzz: ${execs:-?} executions in ${elapsed}s, corpus $(ls "$work/corpus" | wc -l) inputs," \
  "exit status $rc, $crashes finding(s)"
if [ $rc -ne 0 ] || [ "$crashes" -ne 0 ]; then
  grep -E "^fuzz_api:|ERROR|runtime error|SUMMARY|Test unit written" "$work/log" | head -n 20
  echo "fuzz: full log: $work/log; reproduce: $build/fuzz_api <artifact>"
  exit 1
fi
