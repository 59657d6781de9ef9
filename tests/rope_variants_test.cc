// Every RoPE variant against the scalar variant (the documented bound
// POSENC_ROPE_SIMD_TOLERANCE * att * (|u| + |v|)) and against a long double reference, on
// shapes sized around every vector width, with guards around every buffer.
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

RopeShape Square(size_t rotary_dim) {
  RopeShape s;
  s.rotary_dim = s.head_dim = rotary_dim;
  return s;
}

// Every shape with random positions and with consecutive ones from `start` (which a kernel
// may compute by stepping from token to token).
std::vector<RopeShape> WithBothPositionModes(const std::vector<RopeShape>& shapes, int32_t start) {
  std::vector<RopeShape> out = shapes;
  for (RopeShape s : shapes) {
    s.explicit_positions = false;
    s.start_pos = start;
    out.push_back(s);
  }
  return out;
}

// R/2 = 1..17 covers every tail of 4, 8 and 16 lanes; the rest cross 2 and 4 vectors, and
// 257, 320 (a 64-pair second chunk) and 600 pairs cross the 256-pair chunk of cos/sin.
std::vector<RopeShape> RotarySizesAroundVectorWidths() {
  std::vector<size_t> halves;
  for (size_t h = 1; h <= 17; ++h) halves.push_back(h);
  for (size_t h : {31, 32, 33, 63, 64, 65, 100, 128, 257, 320, 600}) halves.push_back(h);
  std::vector<RopeShape> shapes;
  for (size_t half : halves) shapes.push_back(Square(2 * half));
  return WithEveryFlagCombination(shapes);
}

// Odd head_dim and R < D: elements [R, D) must be left alone.
std::vector<RopeShape> PartialRotaryShapes() {
  const std::pair<size_t, size_t> dims[] = {{2, 3},    {4, 5},     {14, 15},   {16, 17},  {30, 33},
                                            {32, 33},  {62, 63},   {64, 65},   {8, 128},  {32, 128},
                                            {96, 127}, {128, 129}, {126, 131}, {514, 515}};
  std::vector<RopeShape> shapes;
  for (auto [rotary_dim, head_dim] : dims) {
    RopeShape s;
    s.rotary_dim = rotary_dim;
    s.head_dim = head_dim;
    s.n_tokens = 3;
    shapes.push_back(s);
  }
  return WithEveryFlagCombination(shapes);
}

std::vector<RopeShape> HeadAndTokenCounts() {
  std::vector<RopeShape> shapes;
  for (size_t heads : {1, 3, 7, 32})
    for (size_t tokens : {1, 2, 5, 16})
      for (unsigned flags : {0u, unsigned{POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE}}) {
        RopeShape s = Square(heads == 32 ? 128 : 40);
        s.q_heads = heads;
        s.k_heads = heads == 32 ? 8 : (heads + 1) / 2;
        s.n_tokens = tokens;
        s.flags = flags;
        shapes.push_back(s);
      }
  return shapes;
}

// Every layout, with strides equal to and larger than D, with and without K.
std::vector<RopeShape> LayoutsAndStrides() {
  std::vector<RopeShape> shapes;
  for (TensorLayout layout :
       {TensorLayout::kTokenMajor, TensorLayout::kHeadMajor, TensorLayout::kPackedQkv})
    for (size_t pad : {0, 1, 5, 16})
      for (auto [rotary_dim, head_dim] : {std::pair<size_t, size_t>{16, 16}, {34, 40}, {128, 128}})
        for (size_t k_heads : {0, 2}) {
          RopeShape s;
          s.rotary_dim = rotary_dim;
          s.head_dim = head_dim;
          s.layout = layout;
          s.stride_pad = pad;
          s.n_tokens = 3;
          s.q_heads = 4;
          s.k_heads = k_heads;
          s.flags = (pad % 2) ? POSENC_ROPE_GPTJ : POSENC_ROPE_NEOX;
          shapes.push_back(s);
        }
  return shapes;
}

// GQA as in Llama-3-8B: 32 Q heads and 8 K heads, Q alone (k = NULL), and a Q view
// without heads next to a K view (only K is rotated).
std::vector<RopeShape> GroupedQueryAttention() {
  std::vector<RopeShape> shapes;
  for (TensorLayout layout :
       {TensorLayout::kTokenMajor, TensorLayout::kHeadMajor, TensorLayout::kPackedQkv})
    for (auto [q_heads, k_heads] : {std::pair<size_t, size_t>{32, 8}, {32, 0}, {0, 8}}) {
      RopeShape s = Square(128);
      s.layout = layout;
      s.q_heads = q_heads;
      s.k_heads = k_heads;
      s.n_tokens = 4;
      shapes.push_back(s);
    }
  return WithEveryFlagCombination(shapes);
}

// Base pointers one element past a 64-byte boundary, for sizes around the vector widths.
std::vector<RopeShape> MisalignedBases() {
  std::vector<RopeShape> shapes;
  for (TensorLayout layout :
       {TensorLayout::kTokenMajor, TensorLayout::kHeadMajor, TensorLayout::kPackedQkv})
    for (size_t half : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33}) {
      RopeShape s = Square(2 * half);
      s.head_dim += half % 2;  // some odd head_dim, so later heads shift alignment too
      s.layout = layout;
      s.misalign = 1;
      s.q_heads = 3;
      s.k_heads = 2;
      shapes.push_back(s);
    }
  return WithEveryFlagCombination(shapes);
}

// Consecutive positions from start_pos, including the last valid one, both bases, and one
// rotary size that needs two 256-pair chunks.
std::vector<RopeShape> StartPositions() {
  std::vector<RopeShape> shapes;
  for (int32_t start : {0, 1, -7, 131072, -(INT32_MAX), INT32_MAX - 15, INT32_MIN})
    for (auto [base, rotary_dim] :
         {std::pair<double, size_t>{10000.0, 128}, {500000.0, 128}, {10000.0, 514}}) {
      RopeShape s = Square(rotary_dim);
      s.explicit_positions = false;
      s.start_pos = start;
      s.n_tokens = 16;
      s.base = base;
      shapes.push_back(s);
    }
  return WithEveryFlagCombination(shapes);
}

std::vector<RopeShape> AttentionFactors() {
  std::vector<RopeShape> shapes;
  for (double att : {0.25, 1.5, 3.75})
    for (size_t rotary_dim : {10, 64}) {
      RopeShape s = Square(rotary_dim);
      s.attention_factor = att;
      s.n_tokens = 5;
      shapes.push_back(s);
    }
  return WithBothPositionModes(WithEveryFlagCombination(shapes), 4093);
}

// Long runs of consecutive positions, where a kernel may step cos/sin from one token to
// the next instead of computing them afresh: runs longer than any plausible re-anchoring
// interval, one crossing zero and one ending at INT32_MAX; rotary sizes inside and at the
// edge of one 256-pair chunk (the large one in two modes only, to keep the test fast).
std::vector<RopeShape> ConsecutivePositionRuns() {
  std::vector<RopeShape> shapes;
  for (int32_t start : {-300, INT32_MAX - 519}) {
    RopeShape s = Square(128);
    s.explicit_positions = false;
    s.start_pos = start;
    s.n_tokens = 520;
    for (const RopeShape& each_mode : WithEveryFlagCombination({s})) shapes.push_back(each_mode);
    s.rotary_dim = s.head_dim = 512;
    for (unsigned flags : {0u, unsigned{POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE}}) {
      s.flags = flags;
      shapes.push_back(s);
    }
  }
  return shapes;
}

// Packed sequences (continuous batching): runs that restart, repeat a position, and jump
// from INT32_MAX to INT32_MIN.
std::vector<RopeShape> PackedSequencePositions() {
  std::vector<int32_t> positions;
  for (int32_t p = 1000; p < 1200; ++p) positions.push_back(p);
  for (int32_t p = 0; p < 150; ++p) positions.push_back(p);
  for (int32_t p : {7, 7, 7, 8, 8}) positions.push_back(p);
  for (int32_t p = INT32_MAX - 46; p < INT32_MAX; ++p) positions.push_back(p);
  for (int32_t p : {INT32_MAX, INT32_MIN, INT32_MIN + 1, INT32_MIN + 2}) positions.push_back(p);
  RopeShape s = Square(64);
  s.given_positions = positions;
  s.n_tokens = positions.size();
  return WithEveryFlagCombination({s});
}

// User frequencies (posenc_rope_plan_create_from_freqs): zero, negative, tiny and up to 4
// rad per position, which moves the position where the kernels change angle formulas.
std::vector<RopeShape> UserFrequencies() {
  const double values[] = {0.0, -1.0, 3.7, -4.0, 1e-7, -0.031, 2.5, 1.0, 1e-300};
  std::vector<RopeShape> shapes;
  for (size_t half : {1, 5, 9, 16, 64}) {
    RopeShape s = Square(2 * half);
    s.n_tokens = 7;
    for (size_t i = 0; i < half; ++i)
      s.freqs.push_back(values[(i + half) % 9] * (1.0 + 1e-3 * static_cast<double>(i)));
    shapes.push_back(s);
  }
  return WithBothPositionModes(WithEveryFlagCombination(shapes), -3);
}

class RopeVariantTest : public EveryIsaTest {};

TEST_P(RopeVariantTest, RotarySizesAroundVectorWidths) {
  ExpectVariantMatchesScalar(isa(), RotarySizesAroundVectorWidths());
}

TEST_P(RopeVariantTest, PartialRotaryLeavesTheRestUntouched) {
  ExpectVariantMatchesScalar(isa(), PartialRotaryShapes());
}

TEST_P(RopeVariantTest, HeadAndTokenCounts) {
  ExpectVariantMatchesScalar(isa(), HeadAndTokenCounts());
}

TEST_P(RopeVariantTest, LayoutsAndStridesLargerThanHeadDim) {
  ExpectVariantMatchesScalar(isa(), LayoutsAndStrides());
}

TEST_P(RopeVariantTest, GroupedQueryAttentionAndQueriesAlone) {
  ExpectVariantMatchesScalar(isa(), GroupedQueryAttention());
}

TEST_P(RopeVariantTest, MisalignedBasePointers) {
  ExpectVariantMatchesScalar(isa(), MisalignedBases());
}

TEST_P(RopeVariantTest, StartPositionMode) { ExpectVariantMatchesScalar(isa(), StartPositions()); }

TEST_P(RopeVariantTest, ConsecutivePositionRuns) {
  ExpectVariantMatchesScalar(isa(), ConsecutivePositionRuns());
}

TEST_P(RopeVariantTest, PackedSequencePositions) {
  ExpectVariantMatchesScalar(isa(), PackedSequencePositions());
}

TEST_P(RopeVariantTest, UserFrequencies) { ExpectVariantMatchesScalar(isa(), UserFrequencies()); }

TEST_P(RopeVariantTest, AttentionFactorOtherThanOne) {
  ExpectVariantMatchesScalar(isa(), AttentionFactors());
}

// NaN and infinity in the data propagate as they do in the scalar variant, and only into
// the pair that holds them.
TEST_P(RopeVariantTest, NonFiniteInputsStayInTheirPair) {
  for (unsigned flags : AllFlagCombinations()) {
    RopeShape shape = Square(34);
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
