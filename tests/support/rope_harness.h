// A RoPE problem built from a shape: the views of Q (and K) placed in one buffer with guard
// elements around it and sentinels in every gap, random input, the list of rotated pairs,
// and checks of an output against the input, the scalar variant or a long double reference.
#ifndef POSENC_TESTS_SUPPORT_ROPE_HARNESS_H
#define POSENC_TESTS_SUPPORT_ROPE_HARNESS_H

#include <cstdint>
#include <string>
#include <vector>

#include "test_support.h"

namespace posenc_test {

enum class TensorLayout {
  kTokenMajor,  // [L, H, D]; K in its own region after Q
  kHeadMajor,   // [H, L, D]; K in its own region after Q
  kPackedQkv,   // rows [L, (Hq + 2*Hk) * D]: Q heads, then K heads, then V (never touched)
};

struct RopeShape {
  size_t rotary_dim = 64;
  size_t head_dim = 64;
  size_t n_tokens = 2;
  size_t q_heads = 2;
  size_t k_heads = 1;  // 0: no K view (k = NULL)
  TensorLayout layout = TensorLayout::kTokenMajor;
  size_t stride_pad = 0;           // extra elements after every head vector and every row
  size_t misalign = 0;             // the data starts this many floats after a 64-byte boundary
  bool explicit_positions = true;  // false: start_pos + t
  int32_t start_pos = 0;
  // With explicit_positions: the positions to pass, one per token; empty: random ones.
  std::vector<int32_t> given_positions;
  unsigned flags = POSENC_ROPE_NEOX;
  double base = 10000.0;
  double attention_factor = 1.0;
  std::vector<double> freqs;  // R/2 user frequencies; empty: the default plan from base
};
std::string Describe(const RopeShape& shape);

// The shape's plan (posenc_rope_plan_create or _create_from_freqs); null, with a test
// failure recorded, if creation fails.
PlanPtr MakePlan(const RopeShape& shape);

// The 8 combinations of NEOX/GPTJ, forward/inverse and accurate/float32 angles.
std::vector<unsigned> AllFlagCombinations();
// Every shape once per flag combination.
std::vector<RopeShape> WithEveryFlagCombination(const std::vector<RopeShape>& shapes);

// One view's placement, in elements from the start of the data region.
struct ViewPlacement {
  size_t offset = 0;
  size_t n_heads = 0;
  size_t token_stride = 0;
  size_t head_stride = 0;
};

// A pair the kernel rotates: buffer indices of its two elements and where it belongs.
struct RotatedPair {
  size_t u, v;
  size_t token, pair, head;
  char view;  // 'q' or 'k'
};

class RopeProblem {
 public:
  static constexpr size_t kGuard = 16;  // sentinel floats on each side of the data region

  RopeProblem(const RopeShape& shape, uint32_t seed);

  const RopeShape& shape() const { return shape_; }
  // Guards, then the data region: what every run starts from.
  const AlignedFloats& input() const { return input_; }
  AlignedFloats& mutable_input() { return input_; }
  const std::vector<int32_t>& positions() const { return positions_; }
  const std::vector<RotatedPair>& pairs() const { return pairs_; }
  bool IsRotated(size_t index) const { return rotated_[index] != 0; }

  // posenc_rope_f32 on `buffer` (a copy of input()) with the active ISA.
  posenc_status Rotate(const posenc_rope_plan* plan, AlignedFloats& buffer, unsigned flags) const;

  // posenc_rope_f32, _bf16 or _f16 (`rotate`) with the active ISA on `buffer`, which holds
  // elements of elem_size bytes placed as input()'s are (element i is input()[i] stored).
  using RotateFn = posenc_status (*)(const posenc_rope_plan*, size_t, size_t, const int32_t*,
                                     int32_t, const posenc_rope_tensor*, const posenc_rope_tensor*,
                                     unsigned);
  posenc_status RotateWith(RotateFn rotate, const posenc_rope_plan* plan, void* buffer,
                           size_t elem_size, unsigned flags) const;

 private:
  void FillHeadVectors(const ViewPlacement& view, char name, std::mt19937& rng);

  RopeShape shape_;
  ViewPlacement q_, k_;
  size_t data_offset_;
  AlignedFloats input_;
  std::vector<char> rotated_;
  std::vector<RotatedPair> pairs_;
  std::vector<int32_t> positions_;
};

// A copy of the problem's input rotated with `isa` made active (shape's flags).
AlignedFloats RunWithIsa(const RopeProblem& problem, const posenc_rope_plan* plan, posenc_isa isa);

std::vector<double> AsDoubles(const AlignedFloats& buffer);
// The input rotated in long double with ReferenceAngle() and the plan's frequencies.
std::vector<double> ReferenceOutput(const RopeProblem& problem, const std::vector<double>& freqs);

// Every element outside the rotated pairs (guards, gaps, V, elements [R, D)) is bit for bit
// what it was in the input.
testing::AssertionResult UntouchedOutsidePairs(const RopeProblem& problem,
                                               const AlignedFloats& out);
// Every rotated element is within scale * att * (|u| + |v|) of `expected` (u, v: the input
// pair); a NaN expected needs a NaN, an infinity the same infinity.
testing::AssertionResult PairsWithin(const RopeProblem& problem, const AlignedFloats& out,
                                     const std::vector<double>& expected, double scale);

// --- the shared shape lists ------------------------------------------------------------------
//
// The shapes every RoPE variant is checked on, in one place: rope_variants_test.cc (f32,
// against the scalar variant and long double) and rope_half_test.cc (bf16 and f16, against
// the same ISA's f32 result rounded) take their lists from here. Each list is the union of
// what the two suites defined before (the f32 suite's was the larger one everywhere but in
// ConsecutivePositionRuns). The edges they reach (kernels/rope_simd.h, rope.h, rope_driver.h;
// VF_W floats to a vector: 4 for sse4 and neon, 8 for avx2, 16 for avx512):
//  - NEOX rotates the R/2 pairs a vector of VF_W pairs at a time (a tail of R/2 mod VF_W
//    pairs), GPTJ the R interleaved elements VF_W at a time (a tail of R mod VF_W):
//    RotarySizesAroundVectorWidths' R/2 = 1..17 is every tail of every width, 31/32/33 and
//    63/64/65 one pair below, at and above 2 and 4 vectors of 16 lanes (4 and 8 vectors of
//    8, 8 and 16 of 4), MisalignedBases has the sizes around the widths again with the data
//    one float past a 64-byte boundary;
//  - R = 128, the 64-pair block (ROPE_BLOCK_PAIRS) rotated in one pass with cos/sin kept in
//    registers: HeadAndTokenCounts (32 heads), LayoutsAndStrides, GroupedQueryAttention,
//    StartPositions, ConsecutivePositionRuns;
//  - the 256-pair chunk of cos/sin (POSENC_ROPE_CHUNK; one chunk is anchored, more are
//    computed afresh): R/2 = 257, 320 (a 64-pair second chunk) and 600 (three chunks) in
//    RotarySizesAroundVectorWidths, 257 in PartialRotaryShapes (R = 514), 256 in
//    ConsecutivePositionRuns (R = 512, at the edge of one chunk);
//  - elements [R, D) copied or left alone, D odd: PartialRotaryShapes, MisalignedBases;
//  - head, token and batch strides that are no multiple of any vector (pads 1, 5, 16), the
//    three tensor layouts, K absent or Q absent: LayoutsAndStrides, GroupedQueryAttention;
//  - positions: anchors every 64 (POSENC_ROPE_ANCHOR) and the step table in runs of 300 and
//    520 tokens through 0 and up to INT32_MAX (ConsecutivePositionRuns), start_pos runs up to
//    the int32 limits (StartPositions), restarts and repeats (PackedSequencePositions),
//    user frequencies up to 4 rad per position (UserFrequencies), att != 1
//    (AttentionFactors).
namespace rope_shapes {

// rotary_dim = head_dim = r, the other fields as RopeShape's defaults.
RopeShape Square(size_t rotary_dim);
// Every shape with random positions and with consecutive ones from `start` (which a kernel
// may compute by stepping from token to token).
std::vector<RopeShape> WithBothPositionModes(const std::vector<RopeShape>& shapes, int32_t start);
// a, then b.
std::vector<RopeShape> Concat(std::vector<RopeShape> a, const std::vector<RopeShape>& b);

std::vector<RopeShape> RotarySizesAroundVectorWidths();
std::vector<RopeShape> PartialRotaryShapes();
std::vector<RopeShape> HeadAndTokenCounts();
std::vector<RopeShape> LayoutsAndStrides();
std::vector<RopeShape> GroupedQueryAttention();
std::vector<RopeShape> MisalignedBases();
std::vector<RopeShape> StartPositions();
std::vector<RopeShape> ConsecutivePositionRuns();
std::vector<RopeShape> PackedSequencePositions();
std::vector<RopeShape> UserFrequencies();
std::vector<RopeShape> AttentionFactors();

}  // namespace rope_shapes

}  // namespace posenc_test

#endif  // POSENC_TESTS_SUPPORT_ROPE_HARNESS_H
