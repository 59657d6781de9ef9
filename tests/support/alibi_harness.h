// An ALiBi problem built from a shape: the heads' score rows placed in one buffer with
// guard elements around it and NaN sentinels in every gap, random scores, an independent
// reference of posenc_alibi_add_f32 and posenc_alibi_bias_f32 (the header's float
// operations, one rounding at a time), and seed 000's _get_slopes re-implemented in C++.
#ifndef POSENC_TESTS_SUPPORT_ALIBI_HARNESS_H
#define POSENC_TESTS_SUPPORT_ALIBI_HARNESS_H

#include <cstdint>
#include <string>
#include <vector>

#include "test_support.h"

namespace posenc_test {

// Seed 000's _get_slopes(n) as NumPy computes it: double start = 2**(-2**-(log2(n)-3)),
// start * ratio**i, the odd-indexed completion for a count that is not a power of two,
// then one cast to float32.
std::vector<float> SeedSlopes(size_t n_heads);

enum class AlibiOp {
  kAdd,   // posenc_alibi_add_f32: scores read, scaled, biased
  kBias,  // posenc_alibi_bias_f32: the bias written, old values not read
};
const char* OpName(AlibiOp op);

struct AlibiShape {
  size_t n_heads = 1;
  size_t n_q = 1;
  size_t n_k = 1;
  size_t q_offset = 0;
  size_t row_pad = 0;   // row_stride = n_k + row_pad
  size_t head_pad = 0;  // head_stride = (n_q - 1) * row_stride + n_k + head_pad
  size_t misalign = 0;  // the first score is this many floats after a 64-byte boundary
  float scale = 1.0f;
  unsigned flags = 0;
  std::vector<float> slopes;  // n_heads slopes; empty: SeedSlopes(n_heads)
};
std::string Describe(const AlibiShape& shape);

class AlibiProblem {
 public:
  static constexpr size_t kGuard = 16;  // sentinel floats on each side of the scores

  AlibiProblem(const AlibiShape& shape, uint32_t seed);

  const AlibiShape& shape() const { return shape_; }
  const std::vector<float>& slopes() const { return slopes_; }
  size_t row_stride() const { return row_stride_; }
  size_t head_stride() const { return head_stride_; }
  // Guards, scores and gaps: what every run starts from.
  const AlignedFloats& input() const { return input_; }
  AlignedFloats& mutable_input() { return input_; }
  // Buffer index of score (h, i, j).
  size_t Index(size_t h, size_t i, size_t j) const;
  bool IsScore(size_t index) const { return is_score_[index] != 0; }
  // "score (h, i, j)", "gap" or "guard": where a buffer index lies, for failure messages.
  std::string Where(size_t index) const;

  // The operation on `buffer` (a copy of input()) with the active ISA.
  posenc_status Run(AlibiOp op, AlignedFloats& buffer) const;

 private:
  AlibiShape shape_;
  std::vector<float> slopes_;
  size_t row_stride_, head_stride_, data_offset_;
  AlignedFloats input_;
  std::vector<char> is_score_;
};

// A copy of the problem's input after `op` with `isa` made active; the ISA active before
// is restored afterwards.
AlignedFloats RunAlibiWithIsa(const AlibiProblem& problem, AlibiOp op, posenc_isa isa);

// One element as the header defines it, each float operation rounded on its own (no FMA
// contraction): add: fl(fl(scale * s) - fl(slope * (float)|qpos - kpos|)); bias:
// -fl(slope * (float)|qpos - kpos|); -inf for kpos > qpos with POSENC_ALIBI_CAUSAL.
float ReferenceAdd(float score, float scale, float slope, uint64_t qpos, uint64_t kpos,
                   unsigned flags);
float ReferenceBias(float slope, uint64_t qpos, uint64_t kpos, unsigned flags);

// The input with every score replaced by its reference value; gaps and guards unchanged.
AlignedFloats ReferenceOutput(const AlibiProblem& problem, AlibiOp op);

// `out` equals `expected` bit for bit; the first difference is reported with its (head,
// row, column) or as a guard or gap.
testing::AssertionResult BitIdentical(const AlibiProblem& problem, const AlignedFloats& out,
                                      const AlignedFloats& expected);
// The same, except that where the reference holds a NaN score any NaN will do: IEEE fixes
// that a NaN propagates, not which payload the result carries.
testing::AssertionResult MatchesReference(const AlibiProblem& problem, const AlignedFloats& out,
                                          const AlignedFloats& reference);

}  // namespace posenc_test

#endif  // POSENC_TESTS_SUPPORT_ALIBI_HARNESS_H
