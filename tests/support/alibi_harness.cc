#include "alibi_harness.h"

#include <cmath>
#include <cstring>
#include <iomanip>
#include <sstream>

namespace posenc_test {
namespace {

// Seed 000's get_slopes_power_of_2(n) in double: NumPy's ** on float64 is libm pow.
std::vector<double> SeedPowerOfTwoSlopes(size_t n) {
  const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(n)) - 3)));
  const double ratio = start;
  std::vector<double> slopes(n);
  for (size_t i = 0; i < n; ++i) slopes[i] = start * std::pow(ratio, static_cast<double>(i));
  return slopes;
}

// Index-dependent quiet NaNs, so that a value copied or moved into a gap or guard is seen
// too; guards and gaps use different payload ranges.
float Sentinel(size_t index, bool guard) {
  const uint32_t bits =
      0x7fc00000u | (guard ? 0x200000u : 0u) | static_cast<uint32_t>(index & 0x1fffffu);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// |qpos - kpos| in integers, then one conversion to float (round to nearest).
float Distance(uint64_t qpos, uint64_t kpos) {
  return static_cast<float>(qpos > kpos ? qpos - kpos : kpos - qpos);
}

// Mostly ordinary scores, with signed zeros (the sign of x - 0 matters on the diagonal),
// subnormals, and values near the float range mixed in.
float RandomScore(std::mt19937& rng) {
  static const float kSpecial[] = {0.0f, -0.0f, 1e-40f, -1e-40f, 3e38f, -3e38f, 1.0f, -1.0f};
  std::uniform_real_distribution<float> value(-16.0f, 16.0f);
  std::uniform_int_distribution<int> pick(0, 63);
  const int p = pick(rng);
  return p < 8 ? kSpecial[p] : value(rng);
}

std::string Flags(unsigned flags) { return (flags & POSENC_ALIBI_CAUSAL) ? "CAUSAL" : "0"; }

std::string Value(float f) {
  std::ostringstream os;
  os << std::setprecision(9) << f << " (0x" << std::hex << std::setw(8) << std::setfill('0')
     << Bits(f) << ")";
  return os.str();
}

testing::AssertionResult Compare(const AlibiProblem& problem, const AlignedFloats& out,
                                 const AlignedFloats& expected, bool any_nan_for_nan) {
  if (out.size() != expected.size()) return testing::AssertionFailure() << "size differs";
  size_t differences = 0, first = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (BitwiseEqual(out[i], expected[i])) continue;
    if (any_nan_for_nan && problem.IsScore(i) && std::isnan(expected[i]) && std::isnan(out[i]))
      continue;
    if (differences++ == 0) first = i;
  }
  if (differences == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << differences << " element(s) differ; first at " << problem.Where(first) << ": got "
         << Value(out[first]) << ", expected " << Value(expected[first]);
}

}  // namespace

std::vector<float> SeedSlopes(size_t n_heads) {
  std::vector<double> slopes;
  const double log2_n = std::log2(static_cast<double>(n_heads));
  if (log2_n == std::floor(log2_n)) {
    slopes = SeedPowerOfTwoSlopes(n_heads);
  } else {
    const size_t closest = size_t{1} << static_cast<int>(std::floor(log2_n));
    slopes = SeedPowerOfTwoSlopes(closest);
    const std::vector<double> doubled = SeedPowerOfTwoSlopes(2 * closest);
    for (size_t k = 0; k < n_heads - closest; ++k) slopes.push_back(doubled[2 * k]);
  }
  return std::vector<float>(slopes.begin(), slopes.end());
}

const char* OpName(AlibiOp op) { return op == AlibiOp::kAdd ? "add" : "bias"; }

std::string Describe(const AlibiShape& s) {
  std::ostringstream os;
  os << "heads=" << s.n_heads << " n_q=" << s.n_q << " n_k=" << s.n_k << " q_offset=" << s.q_offset
     << " row_pad=" << s.row_pad << " head_pad=" << s.head_pad << " misalign=" << s.misalign
     << " scale=" << s.scale << " flags=" << Flags(s.flags)
     << (s.slopes.empty() ? " slopes=seed" : " slopes=custom");
  return os.str();
}

AlibiProblem::AlibiProblem(const AlibiShape& shape, uint32_t seed)
    : shape_(shape),
      slopes_(shape.slopes.empty() ? SeedSlopes(shape.n_heads) : shape.slopes),
      row_stride_(shape.n_k + shape.row_pad),
      head_stride_((shape.n_q == 0 ? 0 : (shape.n_q - 1) * row_stride_) + shape.n_k +
                   shape.head_pad),
      data_offset_(kGuard + shape.misalign),
      input_(0) {
  const bool empty = shape.n_heads == 0 || shape.n_q == 0 || shape.n_k == 0;
  const size_t extent = empty ? 0 : Index(shape.n_heads - 1, shape.n_q - 1, shape.n_k - 1) + 1;
  input_ = AlignedFloats((empty ? data_offset_ : extent) + kGuard);
  is_score_.assign(input_.size(), 0);
  for (size_t i = 0; i < input_.size(); ++i)
    input_[i] = Sentinel(i, i < data_offset_ || i >= input_.size() - kGuard);
  std::mt19937 rng(seed);
  for (size_t h = 0; h < shape.n_heads; ++h)
    for (size_t i = 0; i < shape.n_q; ++i)
      for (size_t j = 0; j < shape.n_k; ++j) {
        input_[Index(h, i, j)] = RandomScore(rng);
        is_score_[Index(h, i, j)] = 1;
      }
}

size_t AlibiProblem::Index(size_t h, size_t i, size_t j) const {
  return data_offset_ + h * head_stride_ + i * row_stride_ + j;
}

std::string AlibiProblem::Where(size_t index) const {
  if (!IsScore(index)) {
    const bool guard = index < data_offset_ || index >= input_.size() - kGuard;
    return std::string(guard ? "guard" : "gap") + " element " + std::to_string(index);
  }
  const size_t rel = index - data_offset_;
  const size_t h = rel / head_stride_, in_head = rel % head_stride_;
  const size_t i = in_head / row_stride_, j = in_head % row_stride_;
  return "score (head " + std::to_string(h) + ", row " + std::to_string(i) + " = qpos " +
         std::to_string(shape_.q_offset + i) + ", key " + std::to_string(j) + ")";
}

posenc_status AlibiProblem::Run(AlibiOp op, AlignedFloats& buffer) const {
  float* scores = buffer.data() + data_offset_;
  const AlibiShape& s = shape_;
  if (op == AlibiOp::kAdd)
    return posenc_alibi_add_f32(slopes_.data(), s.n_heads, s.n_q, s.n_k, s.q_offset, scores,
                                head_stride_, row_stride_, s.scale, s.flags);
  return posenc_alibi_bias_f32(slopes_.data(), s.n_heads, s.n_q, s.n_k, s.q_offset, scores,
                               head_stride_, row_stride_, s.flags);
}

AlignedFloats RunAlibiWithIsa(const AlibiProblem& problem, AlibiOp op, posenc_isa isa) {
  const posenc_isa before = posenc_active_isa();
  AlignedFloats out = problem.input();
  EXPECT_EQ(posenc_set_isa(isa), POSENC_OK) << posenc_isa_name(isa);
  EXPECT_EQ(problem.Run(op, out), POSENC_OK)
      << OpName(op) << " " << posenc_isa_name(isa) << ": " << Describe(problem.shape());
  EXPECT_EQ(posenc_set_isa(before), POSENC_OK);
  return out;
}

// volatile keeps each product and difference a separately rounded float: tests are built
// without -march, but a compiler allowed to contract could still fuse them where FMA exists.
float ReferenceAdd(float score, float scale, float slope, uint64_t qpos, uint64_t kpos,
                   unsigned flags) {
  if ((flags & POSENC_ALIBI_CAUSAL) && kpos > qpos) return -INFINITY;
  const volatile float scaled = scale * score;
  const volatile float product = slope * Distance(qpos, kpos);
  const volatile float sum = scaled - product;
  return sum;
}

float ReferenceBias(float slope, uint64_t qpos, uint64_t kpos, unsigned flags) {
  if ((flags & POSENC_ALIBI_CAUSAL) && kpos > qpos) return -INFINITY;
  const volatile float product = slope * Distance(qpos, kpos);
  return -product;
}

AlignedFloats ReferenceOutput(const AlibiProblem& problem, AlibiOp op) {
  const AlibiShape& s = problem.shape();
  AlignedFloats out = problem.input();
  for (size_t h = 0; h < s.n_heads; ++h)
    for (size_t i = 0; i < s.n_q; ++i)
      for (size_t j = 0; j < s.n_k; ++j) {
        float& x = out[problem.Index(h, i, j)];
        const float m = problem.slopes()[h];
        x = op == AlibiOp::kAdd ? ReferenceAdd(x, s.scale, m, s.q_offset + i, j, s.flags)
                                : ReferenceBias(m, s.q_offset + i, j, s.flags);
      }
  return out;
}

testing::AssertionResult BitIdentical(const AlibiProblem& problem, const AlignedFloats& out,
                                      const AlignedFloats& expected) {
  return Compare(problem, out, expected, false);
}

testing::AssertionResult MatchesReference(const AlibiProblem& problem, const AlignedFloats& out,
                                          const AlignedFloats& reference) {
  return Compare(problem, out, reference, true);
}

}  // namespace posenc_test
