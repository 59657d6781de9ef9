#!/usr/bin/env bash
# The native x86-64 test binaries again, on emulated CPU models (qemu-x86_64, no rebuild).
# Each model runs:
#  - the dispatcher's own choice: the api suite with POSENC_ISA unset and empty
#    (PicksTheExpectedIsaForThisCpu: POSENC_EXPECT_ISA, e.g. avx2 on Haswell, sse4 on
#    Nehalem), the isa_fallback runs, and the examples (each on the ISA it picks there);
#  - for each ISA of its list that this host cannot run (posenc-info's "available" line of
#    the native build, run natively): every suite's process for that ISA (ctest's
#    <suite>.isa_<isa>), i.e. every (test, ISA) pair of it, which the native suite skipped;
#  - for each ISA of its list that this host runs (its pairs ran in the native suite): the
#    variant check, one process per suite below with that ISA forced and only the listed
#    tests (GTEST_FILTER): between them they call every kernel variant of the ISA (all 14
#    kernels with variants of their own: RoPE f32, bf16, f16, f32->bf16, f32->f16; sinusoid,
#    ALiBi in 3 types; softmax f32 and 16-bit; learned; the 15th slot, sinusoid_f32_streamed,
#    is served by sinusoid_f32's variants) on sizes around the vector widths (the tails) and beside guard
#    pages, so an instruction the model lacks in any variant stops the run (SIGILL).
# By default Haswell has avx2 and Nehalem scalar and sse4: each ISA on the smallest model
# that has it (an ISA's code does not depend on the CPU beyond what the dispatcher reads,
# which the api runs check on both). AVX-512 is not emulated (qemu's TCG has no AVX-512):
# where the host lacks it, the avx512 and avx512bf16 pairs run nowhere, and this script says
# so. POSENC_EMULATED_FULL=1 runs every suite of each model's ISAs, as if the host had none.
# Prints each model's ctest summaries ("tests passed") and wall time.
# Usage: scripts/test-emulated-x86.sh <native-build-dir> [Model:expected-isa[:isa,...] ...]
#        (default: Haswell:avx2:avx2 Nehalem:sse4:scalar,sse4)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: $0 <native-build-dir> [Model:expected-isa[:isa,...] ...]}
shift
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(Haswell:avx2:avx2 Nehalem:sse4:scalar,sse4)
jobs=$(nproc)

# The variant check (variant_tests, variant_suites, variant_filter: scripts/variant-check.sh).
# shellcheck source=scripts/variant-check.sh
source scripts/variant-check.sh

scripts/install-deps.sh --emulation
unset POSENC_ISA POSENC_TEST_EMULATOR GTEST_FILTER
host_isas=""
if [ -x "$build/tools/posenc-info" ]; then
  host_isas=$("$build/tools/posenc-info" | sed -n 's/^ *available *//p')
fi
echo "posenc: ISAs this host runs natively: ${host_isas:-unknown (no $build/tools/posenc-info)}"

# Every test of the filters is in the suites' lists (listed natively, scalar instances).
list_natively() { POSENC_ISA=scalar GTEST_FILTER=$2 "$build/tests/$1_test" --gtest_list_tests; }
variant_check_listed list_natively
summaries=()
for model in "${models[@]}"; do
  IFS=: read -r cpu isa isas <<<"$model"
  isas=${isas:-$isa}
  full=() variants=()
  for i in ${isas//,/ }; do
    case " $host_isas " in
      *" $i "*) [ "${POSENC_EMULATED_FULL:-0}" = 1 ] && full+=("$i") || variants+=("$i") ;;
      *) full+=("$i") ;;
    esac
  done
  start=$SECONDS
  echo
  what="dispatcher checks (expected ISA: $isa)"
  [ ${#full[@]} -eq 0 ] || what+=", every suite of ${full[*]}"
  [ ${#variants[@]} -eq 0 ] || what+=", the variant check of ${variants[*]}"
  echo "posenc: qemu-x86_64 -cpu $cpu: $what"
  qemu-x86_64 -cpu "$cpu" "$build/tools/posenc-info" 2>/dev/null
  export POSENC_TEST_EMULATOR="qemu-x86_64 -cpu $cpu" POSENC_EXPECT_ISA="$isa"
  regex="^(api|api\.isa_empty|isa_fallback\..+|example\..+)\$"
  [ ${#full[@]} -eq 0 ] || regex+="|\.isa_($(IFS='|'; echo "${full[*]}"))\$"
  log=$(mktemp)
  ctest --test-dir "$build" --output-on-failure -j "$jobs" -R "$regex" 2>&1 | tee "$log"
  line="$cpu: dispatcher checks${full[*]:+ and every suite of ${full[*]}}:"
  line+=" $(grep -E 'tests passed' "$log" | tail -n1)"
  if [ ${#variants[@]} -gt 0 ]; then
    echo "posenc: qemu-x86_64 -cpu $cpu: variant check of ${variants[*]} (GTEST_FILTER:" \
      "${#variant_tests[@]} tests per ISA over the suites ${variant_suites//|/, })"
    GTEST_FILTER=$variant_filter ctest --test-dir "$build" --output-on-failure -j "$jobs" \
      -R "^($variant_suites)\.isa_($(IFS='|'; echo "${variants[*]}"))\$" 2>&1 | tee "$log"
    line+="; variant check of ${variants[*]}: $(grep -E 'tests passed' "$log" | tail -n1)"
  fi
  rm -f "$log"
  unset POSENC_TEST_EMULATOR POSENC_EXPECT_ISA
  summaries+=("$line ($((SECONDS - start)) s)")
done
echo
echo "=== posenc: emulated x86 summary"
printf '%s\n' "${summaries[@]}"
