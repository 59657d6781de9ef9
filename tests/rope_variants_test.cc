// Every RoPE variant against the scalar variant (the documented bound
// POSENC_ROPE_SIMD_TOLERANCE * att * (|u| + |v|)) and against a long double reference, on
// shapes sized around every vector width, with guards around every buffer. The shape lists
// are rope_harness.h's (rope_shapes), shared with rope_half_test.cc.
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "rope_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

// Any variant against the long double reference: the header's 2^-22 on c and s, plus the
// float rounding of the rotation.
constexpr double kReferenceScale = 0x1p-21;
constexpr uint32_t kSeed = 20240611;

// Rotates the same input with the scalar variant and with `isa`; checks that nothing
// outside the pairs changed, that `isa` is within the documented bound of scalar, and
// that both are within kReferenceScale of the reference.
void ExpectVariantMatchesScalar(posenc_isa isa, const RopeShape& shape) {
  SCOPED_TRACE(Describe(shape));
  const RopeProblem problem(shape, kSeed);
  const PlanPtr plan = MakePlan(shape);
  ASSERT_NE(plan, nullptr);
  const AlignedFloats scalar = RunWithIsa(problem, plan.get(), POSENC_ISA_SCALAR);
  const AlignedFloats variant = RunWithIsa(problem, plan.get(), isa);
  const std::vector<double> reference = ReferenceOutput(problem, PlanFreqs(plan.get()));
  EXPECT_TRUE(UntouchedOutsidePairs(problem, scalar)) << "scalar";
  EXPECT_TRUE(UntouchedOutsidePairs(problem, variant)) << posenc_isa_name(isa);
  EXPECT_TRUE(PairsWithin(problem, variant, AsDoubles(scalar), POSENC_ROPE_SIMD_TOLERANCE))
      << posenc_isa_name(isa) << " vs scalar";
  EXPECT_TRUE(PairsWithin(problem, scalar, reference, kReferenceScale)) << "scalar vs reference";
  EXPECT_TRUE(PairsWithin(problem, variant, reference, kReferenceScale))
      << posenc_isa_name(isa) << " vs reference";
}

void ExpectVariantMatchesScalar(posenc_isa isa, const std::vector<RopeShape>& shapes) {
  for (const RopeShape& shape : shapes) {
    ExpectVariantMatchesScalar(isa, shape);
    if (testing::Test::HasFailure()) return;  // one case's report is enough
  }
}

class RopeVariantTest : public EveryIsaTest {};

TEST_P(RopeVariantTest, RotarySizesAroundVectorWidths) {
  ExpectVariantMatchesScalar(isa(), rope_shapes::RotarySizesAroundVectorWidths());
}

TEST_P(RopeVariantTest, PartialRotaryLeavesTheRestUntouched) {
  ExpectVariantMatchesScalar(isa(), rope_shapes::PartialRotaryShapes());
}

TEST_P(RopeVariantTest, HeadAndTokenCounts) {
  ExpectVariantMatchesScalar(isa(), rope_shapes::HeadAndTokenCounts());
}

TEST_P(RopeVariantTest, LayoutsAndStridesLargerThanHeadDim) {
  ExpectVariantMatchesScalar(isa(), rope_shapes::LayoutsAndStrides());
}

TEST_P(RopeVariantTest, GroupedQueryAttentionAndQueriesAlone) {
  ExpectVariantMatchesScalar(isa(), rope_shapes::GroupedQueryAttention());
}

TEST_P(RopeVariantTest, MisalignedBasePointers) {
  ExpectVariantMatchesScalar(isa(), rope_shapes::MisalignedBases());
}

TEST_P(RopeVariantTest, StartPositionMode) {
  ExpectVariantMatchesScalar(isa(), rope_shapes::StartPositions());
}

TEST_P(RopeVariantTest, ConsecutivePositionRuns) {
  ExpectVariantMatchesScalar(isa(), rope_shapes::ConsecutivePositionRuns());
}

TEST_P(RopeVariantTest, PackedSequencePositions) {
  ExpectVariantMatchesScalar(isa(), rope_shapes::PackedSequencePositions());
}

TEST_P(RopeVariantTest, UserFrequencies) {
  ExpectVariantMatchesScalar(isa(), rope_shapes::UserFrequencies());
}

TEST_P(RopeVariantTest, AttentionFactorOtherThanOne) {
  ExpectVariantMatchesScalar(isa(), rope_shapes::AttentionFactors());
}

// NaN and infinity in the data propagate as they do in the scalar variant, and only into
// the pair that holds them.
TEST_P(RopeVariantTest, NonFiniteInputsStayInTheirPair) {
  for (unsigned flags : AllFlagCombinations()) {
    RopeShape shape = rope_shapes::Square(34);
    shape.flags = flags;
    shape.n_tokens = 3;
    RopeProblem problem(shape, kSeed);
    const std::vector<RotatedPair>& pairs = problem.pairs();
    const size_t poisoned[] = {0, 5, 16, 20};
    problem.mutable_input()[pairs[poisoned[0]].u] = NAN;
    problem.mutable_input()[pairs[poisoned[1]].v] = INFINITY;
    problem.mutable_input()[pairs[poisoned[2]].u] = -INFINITY;
    problem.mutable_input()[pairs[poisoned[3]].v] = NAN;
    const PlanPtr plan = MakePlan(shape.rotary_dim, shape.base, 1.0);
    const AlignedFloats scalar = RunWithIsa(problem, plan.get(), POSENC_ISA_SCALAR);
    const AlignedFloats variant = RunWithIsa(problem, plan.get(), isa());
    SCOPED_TRACE(Describe(shape));
    EXPECT_TRUE(UntouchedOutsidePairs(problem, variant));
    EXPECT_TRUE(PairsWithin(problem, variant, AsDoubles(scalar), POSENC_ROPE_SIMD_TOLERANCE));
    for (size_t i = 0; i < pairs.size(); ++i) {
      const bool finite_input =
          std::isfinite(problem.input()[pairs[i].u]) && std::isfinite(problem.input()[pairs[i].v]);
      if (finite_input) {
        EXPECT_TRUE(std::isfinite(variant[pairs[i].u]) && std::isfinite(variant[pairs[i].v]))
            << "pair " << i << " has finite input but a non-finite result";
      }
    }
  }
}

// Rotates views that start right after, or end right before, an inaccessible page, for
// sizes around the vector widths and every flag combination. Exits with 1 on an error
// status; any access outside a view kills the process.
[[noreturn]] void RotateNextToGuardPages() {
  for (size_t half : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 257, 320}) {
    for (size_t extra : {0, 1}) {  // head_dim = R or R + 1
      const size_t head_dim = 2 * half + extra, tokens = 2, heads = 2;
      const size_t n = tokens * heads * head_dim;
      const PlanPtr plan = MakePlan(2 * half, 10000.0, 1.0);
      GuardedPages pages(n);
      if (!pages.ok() || plan == nullptr) std::exit(1);
      for (float* data : {pages.AtStart(), pages.AtEnd(n)}) {
        for (unsigned flags : AllFlagCombinations()) {
          for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(i % 7) - 3.0f;
          const posenc_rope_tensor q = {data, heads, heads * head_dim, head_dim};
          if (posenc_rope_f32(plan.get(), head_dim, tokens, nullptr, 100, &q, nullptr, flags) !=
              POSENC_OK)
            std::exit(1);
        }
      }
    }
  }
  std::exit(0);
}

TEST_P(RopeVariantTest, NeverTouchesMemoryOutsideTheView) {
  ExpectNoAccessNextToGuardPages(RotateNextToGuardPages, isa(), "a view");
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeVariantTest);

}  // namespace
}  // namespace posenc_test
