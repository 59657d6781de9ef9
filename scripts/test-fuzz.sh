#!/usr/bin/env bash
# The libFuzzer differential targets over the public API (fuzz/: one per kernel family),
# time-boxed on every core: builds them in a sanitized build of scripts/sanitized-build.sh
# (ASan + UBSan with clang, or MSan with POSENC_FUZZ_SANITIZER=memory; the library carries
# libFuzzer's coverage instrumentation, and a build the sanitizer suite already made is reused
# as it is), then runs the targets one after the other, each on one fuzzing process per core
# (POSENC_JOBS, default nproc) for its share of SECONDS, each process with its own libFuzzer
# seed (POSENC_FUZZ_SEED + i, default base 1: a CI run explores the same way each time; 0
# picks random seeds), all of a target's processes starting from a copy of its committed
# corpus fuzz/corpus/<target> and sharing the inputs they add. A target's share of SECONDS is
# its weight below over the sum of the weights: the number of the old single target's input
# families it decodes (entry point x storage type), so each family keeps the share of time
# it had there; fuzz_rope_views (4 families over runtime-shaped views, added later) has
# fuzz_rope's weight and fuzz_softmax (posenc_softmax: one entry point, its many options)
# fuzz_alibi's, both taken from the same SECONDS, as is fuzz_rope_kv's (QK-norm, slots, q8_0,
# fp8; weight 3). Prints each target's executions and
# findings and a total; fails on a crash, a sanitizer report or a differential violation (the
# target aborts).
# A long run, e.g. 1,000,000 executions per target in one process:
#   POSENC_JOBS=1 scripts/test-fuzz.sh build-fuzz 0 -runs=1000000
# (SECONDS 0 = no time limit; extra arguments go to libFuzzer.) Inputs that add coverage are
# left in <build-dir>/fuzz-run/<target>/corpus: when a fuzzed API changes, minimise them
# (<build-dir>/fuzz/<target> -merge=1 fuzz/corpus/<target> <that dir>) and commit the new
# files of fuzz/corpus/<target>.
# Usage: scripts/test-fuzz.sh [build-dir] [seconds] [extra libFuzzer options...]
#   (default: build-fuzz 300)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
seconds=${2:-300}
shift $(($# < 2 ? $# : 2))
jobs=${POSENC_JOBS:-$(nproc)}
seed=${POSENC_FUZZ_SEED:-1}
# target weight (fuzz/CMakeLists.txt builds the same targets)
targets=(fuzz_rope 3 fuzz_mrope 2 fuzz_rerotate 2 fuzz_rope_views 3 fuzz_rope_kv 3 fuzz_sinusoid 6
  fuzz_alibi 6 fuzz_learned 1 fuzz_softmax 6)
names=() weight_sum=0
for ((k = 0; k < ${#targets[@]}; k += 2)); do
  names+=("${targets[$k]}")
  weight_sum=$((weight_sum + targets[k + 1]))
done

case ${POSENC_FUZZ_SANITIZER:-address} in
  address) kind=clang ;;
  memory) kind=msan ;;
  *) echo "posenc: POSENC_FUZZ_SANITIZER is address or memory" >&2; exit 2 ;;
esac
scripts/sanitized-build.sh "$build" "$kind" "${names[@]}"

# The environment must not force an ISA; the targets switch ISAs themselves.
unset POSENC_ISA POSENC_TEST_EMULATOR
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export MSAN_OPTIONS="halt_on_error=1"
rm -rf "$build/fuzz-run"

# Runs target $1 for $2 seconds (0: no limit) on $jobs processes; prints its line and adds
# to the totals; a finding sets status.
status=0 total_execs=0 total_findings=0
fuzz_target() {
  local target=$1 share=$2 work=$build/fuzz-run/$1 start=$SECONDS
  shift 2
  mkdir -p "$work/corpus" "$work/artifacts"
  cp fuzz/corpus/"$target"/* "$work/corpus/"
  local pids=() i s
  for ((i = 0; i < jobs; i++)); do
    s=$((seed == 0 ? 0 : seed + i))
    "$build/fuzz/$target" -max_total_time="$share" -seed="$s" -print_final_stats=1 \
      -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" >"$work/log-$i" 2>&1 &
    pids+=($!)
  done
  local execs=0 failed=0 rc n
  for ((i = 0; i < jobs; i++)); do
    rc=0
    wait "${pids[$i]}" || rc=$?
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log-$i" | tail -n1)
    execs=$((execs + ${n:-0}))
    if [ $rc -ne 0 ]; then
      failed=1
      echo "$target process $i: exit status $rc"
      grep -E "^fuzz_[a-z]+:|ERROR|runtime error|SUMMARY|Test unit written" "$work/log-$i" |
        head -n 20
    fi
  done
  local findings
  findings=$(find "$work/artifacts" -type f | wc -l)
  [ "$failed" -eq 0 ] || [ "$findings" -gt 0 ] || findings=1 # a failure without an artifact
  echo "$target: $execs executions in $((SECONDS - start)) s on $jobs processes, corpus" \
    "$(find "$work/corpus" -type f | wc -l) inputs, $findings finding(s)"
  if [ "$findings" -ne 0 ]; then
    status=1
    echo "$target: logs: $work/log-*; reproduce: $build/fuzz/$target <artifact in $work/artifacts>"
  fi
  total_execs=$((total_execs + execs))
  total_findings=$((total_findings + findings))
}

# Each share is taken from the time left, so a target's overrun (libFuzzer finishes its
# current input; process start) comes out of the later ones and the total stays SECONDS.
start=$SECONDS weight_left=$weight_sum
for ((k = 0; k < ${#targets[@]}; k += 2)); do
  share=$(((seconds - (SECONDS - start)) * targets[k + 1] / weight_left))
  [ "$seconds" -eq 0 ] || [ "$share" -gt 0 ] || share=1
  weight_left=$((weight_left - targets[k + 1]))
  fuzz_target "${targets[$k]}" "$share" "$@"
done
echo "fuzz: $total_execs executions of ${#names[@]} targets in $((SECONDS - start)) s on $jobs" \
  "processes each, $total_findings finding(s)"
exit $status
