# Sourced by the scripts that run test binaries on emulated CPUs (test-emulated-x86.sh,
# test-aarch64.sh, test-riscv64.sh) and by check-emulated-variants.sh: the two short
# GoogleTest filters they run in place of a whole suite. Defines
#  variant_tests, variant_suites, variant_filter
#    The variant check (GoogleTest names; Isa/<Fixture>.<Test>/* is the instance of the
#    process's ISA), in the suites of variant_suites. Chosen from every suite's tests for
#    their cost (about 3 s of CPU per ISA under qemu-x86_64) and what they reach: in a gcov
#    build they execute every kernel variant of every x86 ISA and, in each ISA's kernel
#    objects (kernels/*_<isa>.c with the SIMD bodies and vector layers they include), the
#    lines the whole suite executes there but 14 of about 900
#    (scripts/check-emulated-variants.sh measures it). StartupIsaSelection checks that the
#    forced ISA is the active one. Run where an ISA's whole suite ran elsewhere (natively, or
#    the aarch64 scalar code: the portable C of every build, compiled with
#    -ffp-contract=off): an instruction the CPU model lacks stops it (SIGILL).
#  width_tests, width_suites, width_filter
#    The vector-length check of a length-agnostic tier (sve, rvv) at the vector lengths
#    where its whole suite does not run: the variant check, and every test whose result
#    depends on how many lanes a register holds (tails: sizes around the vector widths,
#    guard pages beside every view; sums and blocks: split invariance, the deterministic
#    mode's golden digests, the conversions' rounding cases). What a lane computes does not
#    depend on the length (the same instructions on each lane), so the accuracy sweeps run at
#    the one length of the whole suite. About 60 s of CPU per length under qemu-riscv64.
# variant_check_listed <list-command...>: exits 1 if a pattern of variant_tests or width_tests
# matches no test of its suites (a renamed or moved test would leave a filter matching
# nothing, and the check passing without running it). The command, given a suite name and
# a filter, lists that suite's tests (--gtest_list_tests) for the scalar ISA.
# shellcheck shell=bash
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

width_tests=("${variant_tests[@]}"
  'Isa/*AroundVectorWidths/*'
  'Isa/*.NeverTouchesMemoryOutsideThe*/*'
  'Isa/SplitInvarianceTest.*/*'
  'Isa/DeterministicTest.*/*'
  'Isa/ConversionTest.*/*'
  'Isa/SoftmaxTest.ResultsDoNotDependOnTheSplit/*'
)
width_suites="$variant_suites|rope_variants|rope_half|alibi_variants|conversion"
width_filter=$(IFS=:; echo "${width_tests[*]}")

variant_check_listed() {
  local listed t name found suite
  listed=$(for suite in ${width_suites//|/ }; do
    "$@" "$suite" "$width_filter"
  done | awk '/^[^ ]/ {fixture = $1} /^  / {print fixture $1}')
  for t in "${width_tests[@]}"; do
    found=0
    while read -r name; do
      # shellcheck disable=SC2053
      [[ $name == $t ]] && found=1 && break
    done <<<"$listed"
    if [ $found = 0 ]; then
      echo "posenc: the emulated checks' test $t is in none of the suites ${width_suites//|/, }" >&2
      return 1
    fi
  done
}
