#!/usr/bin/env bash
# The libFuzzer differential target over the public API (fuzz/fuzz_api.c), time-boxed on every
# core: builds fuzz_api in a sanitized build of scripts/sanitized-build.sh (ASan + UBSan with
# clang, or MSan with POSENC_FUZZ_SANITIZER=memory; the library carries libFuzzer's coverage
# instrumentation, and a build the sanitizer suite already made is reused as it is), then runs
# one fuzzing process per core (POSENC_JOBS, default nproc) for SECONDS seconds, each with its
# own libFuzzer seed (POSENC_FUZZ_SEED + i, default base 1: a CI run explores the same way
# each time; 0 picks random seeds), all starting from a copy of the committed corpus
# fuzz/corpus and sharing the inputs they add. Prints each process's execution count and any
# finding; fails on a crash, a sanitizer report or a differential violation (the target
# aborts).
# A long run, e.g. 1,000,000 executions in one process:
#   POSENC_JOBS=1 scripts/test-fuzz.sh build-fuzz 0 -runs=1000000
# (SECONDS 0 = no time limit; extra arguments go to libFuzzer.) Inputs that add coverage are
# left in <build-dir>/fuzz-run/corpus: when a fuzzed API changes, minimise them
# (fuzz_api -merge=1 fuzz/corpus <that dir>) and commit the new files of fuzz/corpus.
# Usage: scripts/test-fuzz.sh [build-dir] [seconds] [extra libFuzzer options...]
#   (default: build-fuzz 300)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
seconds=${2:-300}
shift $(($# < 2 ? $# : 2))
jobs=${POSENC_JOBS:-$(nproc)}
seed=${POSENC_FUZZ_SEED:-1}

case ${POSENC_FUZZ_SANITIZER:-address} in
  address) kind=clang ;;
  memory) kind=msan ;;
  *) echo "posenc: POSENC_FUZZ_SANITIZER is address or memory" >&2; exit 2 ;;
esac
scripts/sanitized-build.sh "$build" "$kind" fuzz_api

work=$build/fuzz-run
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp fuzz/corpus/* "$work/corpus/"
# The environment must not force an ISA; the target switches ISAs itself.
unset POSENC_ISA POSENC_TEST_EMULATOR
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export MSAN_OPTIONS="halt_on_error=1"
start=$SECONDS
pids=()
for ((i = 0; i < jobs; i++)); do
  s=$((seed == 0 ? 0 : seed + i))
  "$build/fuzz/fuzz_api" -max_total_time="$seconds" -seed="$s" -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" >"$work/log-$i" 2>&1 &
  pids+=($!)
done
status=0 total=0
for ((i = 0; i < jobs; i++)); do
  rc=0
  wait "${pids[$i]}" || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log-$i" | tail -n1)
  total=$((total + ${execs:-0}))
  echo "fuzz process $i: ${execs:-?} executions, exit status $rc"
  if [ $rc -ne 0 ]; then
    status=1
    grep -E "^fuzz_api:|ERROR|runtime error|SUMMARY|Test unit written" "$work/log-$i" | head -n 20
  fi
done
crashes=$(find "$work/artifacts" -type f | wc -l)
echo "fuzz: $total executions in $((SECONDS - start)) s on $jobs processes, corpus" \
  "$(ls "$work/corpus" | wc -l) inputs, $crashes finding(s)"
if [ $status -ne 0 ] || [ "$crashes" -ne 0 ]; then
  echo "fuzz: logs: $work/log-*; reproduce: $build/fuzz/fuzz_api <artifact>"
  exit 1
fi
