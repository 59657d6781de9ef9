#!/usr/bin/env bash
# The dispatcher under ThreadSanitizer: builds tests/race (the library from this source tree
# and tests/race/dispatch_race.c) with clang and -fsanitize=thread, then runs the race binary
# in ROUNDS fresh processes (default 100, POSENC_JOBS at a time, default one per core): each
# is one round of 8 threads making their first posenc call at the same moment, then
# posenc_set_isa() racing kernel calls. Any TSan report
# (TSAN_OPTIONS halt_on_error=1:exitcode=66) or result mismatch fails the script.
# No suppressions are used: SLEEF and libm are not instrumented and keep no shared mutable
# state, posenc links no OpenMP runtime, and the only synchronisation is pthread_once and
# __atomic builtins, which TSan models.
# Usage: scripts/test-tsan.sh [build-dir] [rounds]   (default: build-tsan 100)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --sanitizers
build=${1:-build-tsan}
rounds=${2:-100}
cc=${CC_TSAN:-clang}
cxx=${CXX_TSAN:-clang++}

flags="-fsanitize=thread -g -fno-omit-frame-pointer"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S tests/race -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread"
fi
cmake --build "$build" -j "${POSENC_JOBS:-2}" --target dispatch_race

binary=$build/dispatch_race
logs=$build/tsan-logs
rm -rf "$logs"
mkdir -p "$logs"
# The environment must not force an ISA: the first call has to choose one itself.
unset POSENC_ISA
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:log_path=$logs/tsan"
# Rounds run $jobs at a time (POSENC_JOBS, default nproc: both cores busy); the batch with a
# report or a failed round is the last.
jobs=${POSENC_JOBS:-$(nproc)}
done_rounds=0 reports=0 mismatches=0
for ((i = 1; i <= rounds && reports + mismatches == 0; i += jobs)); do
  pids=()
  for ((j = i; j < i + jobs && j <= rounds; j++)); do
    "$binary" 8 200 >"$logs/round-$j.out" 2>&1 &
    pids+=($!)
  done
  for ((j = i; j < i + jobs && j <= rounds; j++)); do
    rc=0
    wait "${pids[$((j - i))]}" || rc=$?
    done_rounds=$j
    if [ $rc -eq 66 ]; then
      reports=$((reports + 1))
      echo "tsan: round $j: ThreadSanitizer report:"
      cat "$logs/round-$j.out"
    elif [ $rc -ne 0 ]; then
      mismatches=$((mismatches + 1))
      echo "tsan: round $j: dispatch_race exited with $rc:"
      cat "$logs/round-$j.out"
    fi
  done
  if compgen -G "$logs/tsan.*" >/dev/null; then
    [ $reports -gt 0 ] || reports=1
    cat "$logs"/tsan.*
  fi
done
echo "tsan: $done_rounds rounds, $reports reports, $mismatches failed rounds ($(tail -n1 "$logs/round-1.out"))"
[ $reports -eq 0 ] && [ $mismatches -eq 0 ] && [ "$done_rounds" -eq "$rounds" ]
