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
#    kernels: RoPE f32, bf16, f16, f32->bf16, f32->f16; sinusoid, ALiBi in 3 types; softmax
#    f32 and 16-bit; learned) on sizes around the vector widths (the tails) and beside guard
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

# The variant check: the tests it runs (GoogleTest names; Isa/<Fixture>.<Test>/* is the
# instance of the process's ISA), in the suites of variant_suites. Chosen from every suite's
# tests for their cost (about 3 s of CPU per ISA under qemu) and what they reach: in a gcov
# build they execute every kernel variant of every x86 ISA and, in each ISA's kernel objects
# (kernels/*_<isa>.c with the SIMD bodies and vector layers they include), the lines the
# whole suite executes there but 14 of about 900 (scripts/check-emulated-variants.sh measures
# it). StartupIsaSelection checks that the forced ISA is the active one.
variant_tests=(
  StartupIsaSelection.FollowsPosencIsaVariable
  Storage/MRopeArgumentsTest.InterleavedSectionsMustFitInRotaryDim/bf16
  Storage/RerotateArgumentsTest.ValidEdgesAreAccepted/f16
  Storage/RerotateArgumentsTest.ValidEdgesAreAccepted/f32
  'Isa/RopeViewsTest.NeverTouchesMemoryOutsideTheViews/*'
  'Isa/RopeViewsTest.FactorPathIsBitwiseThePlanPath/*'
  'Isa/SplitInvarianceTest.MropeAndRerotation/*'
  'Isa/DeterministicTest.EveryCaseMatchesItsGoldenDigestAndTheScalarVariant/*'
  SinusoidArgumentsTest.ValidUnusualCallsAreAccepted
  SinusoidHalfArgumentsTest.ValidUnusualCallsAreAccepted
  'Isa/SinusoidVariantTest.NeverTouchesMemoryOutsideTheRows/*'
  AlibiHalfArgumentsTest.ValidUnusualCallsAreAccepted
  'Isa/AlibiHalfTest.NeverTouchesMemoryOutsideTheScores/*'
  'Isa/AlibiHalfTest.NonFiniteScores/*'
  AlibiSeedApplyTest.ApplyAlibiEqualsAddWithScaleOne
  AlibiSeedBiasTest.CausalBiasIsGetBiasMaskedAboveTheDiagonal
  Type/AlibiSoftmaxArgumentsTest.TheValidCallWrites/f32
  'Isa/AlibiSoftmaxTest.NonFiniteScoresMakeTheirRowNaN/*'
  'Isa/AlibiSoftmaxTest.RowsOfMinusInfinity/*'
  Types/SoftmaxArgumentsTest.TheValidCallsWrite/bf16_to_bf16
  Types/SoftmaxArgumentsTest.TheValidCallsWrite/f16_to_f16
  'Isa/SoftmaxTest.NonFiniteVisibleScoresMakeTheRowNaN/*'
  'Isa/SoftmaxTest.RowsWithNothingVisibleAreZero/*'
  'Isa/SoftmaxTest.NeverTouchesMemoryOutsideTheViews/*'
  'Isa/SoftmaxTest.OneFiniteScoreAmongMinusInfinity/*'
  LearnedArgumentsTest.BaselineCallIsValidAndWrites
  'Isa/LearnedVariantTest.RepeatedPositionsAndOneRowTable/*'
)
variant_suites="rope_mrope|rope_rerotate|rope_views|split_invariance|deterministic|sinusoid_errors"
variant_suites+="|sinusoid_half|sinusoid_variants|alibi_half|alibi_seeds|alibi_softmax|softmax|learned"
variant_filter=$(IFS=:; echo "${variant_tests[*]}")

scripts/install-deps.sh --emulation
unset POSENC_ISA POSENC_TEST_EMULATOR GTEST_FILTER
host_isas=""
if [ -x "$build/tools/posenc-info" ]; then
  host_isas=$("$build/tools/posenc-info" | sed -n 's/^ *available *//p')
fi
echo "posenc: ISAs this host runs natively: ${host_isas:-unknown (no $build/tools/posenc-info)}"

# A test renamed or moved out of these suites would leave the filter matching nothing, and
# the check passing without running it: every listed test must be in the suites' lists
# (listed natively, with the scalar instances).
listed=$(for suite in ${variant_suites//|/ }; do
  POSENC_ISA=scalar GTEST_FILTER=$variant_filter "$build/tests/${suite}_test" --gtest_list_tests
done | awk '/^[^ ]/ {fixture = $1} /^  / {print fixture $1}')
for t in "${variant_tests[@]}"; do
  found=0
  while read -r name; do
    # shellcheck disable=SC2053
    [[ $name == $t ]] && found=1 && break
  done <<<"$listed"
  if [ $found = 0 ]; then
    echo "posenc: the variant check's test $t is in none of the suites ${variant_suites//|/, }" >&2
    exit 1
  fi
done

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
