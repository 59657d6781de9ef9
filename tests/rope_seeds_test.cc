// The seed documents' RoPE formulas (shared/seeds), re-implemented here in double precision
// from their NumPy/PyTorch code, against posenc with the active ISA (ctest runs this once
// per ISA). Positions are small, as in the seeds; tolerance 1e-5 of the input magnitude.
#include <posenc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "test_support.h"

namespace posenc_test {
namespace {

constexpr double kRelativeTolerance = 1e-5;

double MaxAbs(const std::vector<float>& x) {
  double m = 0;
  for (float v : x) m = std::max(m, static_cast<double>(std::fabs(v)));
  return m;
}

// seed 000 RotaryEmbedding.apply_rope / backward_rope, and seed 004 apply_rotary_pos_emb,
// on x of shape (n_seqs = B*H, L, D): x * cos(emb) + sign * rotate_half(x) * sin(emb), with
// emb = concat(freqs, freqs), freqs = outer(offset + arange(L), inv_freq) and
// inv_freq = 1 / base ** (arange(0, D, 2) / D). sign = -1 is backward_rope.
std::vector<double> SeedRotateHalf(const std::vector<float>& x, size_t n_seqs, size_t len,
                                   size_t dim, int offset, double base, double sign) {
  const size_t half = dim / 2;
  std::vector<double> out(x.size());
  for (size_t seq = 0; seq < n_seqs; ++seq)
    for (size_t l = 0; l < len; ++l) {
      const size_t row = (seq * len + l) * dim;
      for (size_t d = 0; d < dim; ++d) {
        const double inv_freq = 1.0 / std::pow(base, static_cast<double>(2 * (d % half)) / dim);
        const double emb = (offset + static_cast<double>(l)) * inv_freq;
        const double rotated = d < half ? -x[row + d + half] : x[row + d - half];
        out[row + d] = x[row + d] * std::cos(emb) + sign * rotated * std::sin(emb);
      }
    }
  return out;
}

// seed 003 apply_rope for one [L, D] tensor: q_even = q[..., 0::2], q_odd = q[..., 1::2],
// result concat(q_even*cos - q_odd*sin, q_even*sin + q_odd*cos) with cos/sin of
// position * base^(-2i/D): the rotated pairs de-interleaved.
std::vector<double> SeedInterleavedApplyRope(const std::vector<float>& q, size_t len, size_t dim,
                                             double base) {
  const size_t half = dim / 2;
  std::vector<double> out(q.size());
  for (size_t l = 0; l < len; ++l)
    for (size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(l) * std::pow(base, -2.0 * i / dim);
      const double even = q[l * dim + 2 * i], odd = q[l * dim + 2 * i + 1];
      out[l * dim + i] = even * std::cos(angle) - odd * std::sin(angle);
      out[l * dim + half + i] = even * std::sin(angle) + odd * std::cos(angle);
    }
  return out;
}

// posenc keeps pair i at (2i, 2i+1); seed 003 puts it at (i, D/2 + i).
std::vector<double> DeinterleavePairs(const std::vector<float>& y, size_t len, size_t dim) {
  std::vector<double> out(y.size());
  for (size_t l = 0; l < len; ++l)
    for (size_t i = 0; i < dim / 2; ++i) {
      out[l * dim + i] = y[l * dim + 2 * i];
      out[l * dim + dim / 2 + i] = y[l * dim + 2 * i + 1];
    }
  return out;
}

void ExpectClose(const std::vector<double>& got, const std::vector<double>& expected,
                 double magnitude) {
  ASSERT_EQ(got.size(), expected.size());
  const double bound = kRelativeTolerance * magnitude;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - expected[i]) <= bound) && bad++ < 5)
      ADD_FAILURE() << "element " << i << ": posenc " << got[i] << ", seed formula " << expected[i]
                    << " (bound " << bound << ")";
  EXPECT_EQ(bad, 0u) << "elements out of bound";
}

std::vector<double> ToDoubles(const std::vector<float>& x) { return {x.begin(), x.end()}; }

struct SeedShape {
  size_t batch, heads, len, dim;
  int offset;
};

const SeedShape kSeedShapes[] = {{2, 3, 7, 64, 11}, {1, 2, 5, 16, 0}, {2, 1, 4, 128, 100}};

// seed 000: apply_rope(x, offset) on (B, H, L, D) is posenc's [H, L, D] view (B*H heads)
// with start_pos = offset; backward_rope is POSENC_ROPE_INVERSE.
TEST(Seed000, ApplyRopeAndBackwardWithOffset) {
  for (const SeedShape& s : kSeedShapes) {
    for (double sign : {1.0, -1.0}) {
      SCOPED_TRACE(std::string(sign > 0 ? "apply_rope" : "backward_rope") +
                   " D=" + std::to_string(s.dim) + " offset=" + std::to_string(s.offset));
      const size_t n_seqs = s.batch * s.heads;
      std::vector<float> x = RandomFloats(n_seqs * s.len * s.dim, 1, -1.0f, 1.0f);
      const std::vector<double> expected =
          SeedRotateHalf(x, n_seqs, s.len, s.dim, s.offset, 10000.0, sign);
      const PlanPtr plan = MakePlan(s.dim, 10000.0, 1.0);
      const posenc_rope_tensor view = {x.data(), n_seqs, s.dim, s.len * s.dim};
      const unsigned flags = sign < 0 ? unsigned{POSENC_ROPE_INVERSE} : unsigned{POSENC_ROPE_NEOX};
      ASSERT_EQ(posenc_rope_f32(plan.get(), s.dim, s.len, nullptr, s.offset, &view, nullptr, flags),
                POSENC_OK);
      ExpectClose(ToDoubles(x), expected, MaxAbs(x));
    }
  }
}

// seed 004: apply_rotary_pos_emb(q, k) on [B, H, L, D] with positions 0..L-1, Q and K in
// one call.
TEST(Seed004, ApplyRotaryPosEmbToQueriesAndKeys) {
  for (const SeedShape& s : kSeedShapes) {
    SCOPED_TRACE("D=" + std::to_string(s.dim));
    const size_t n_seqs = s.batch * s.heads;
    std::vector<float> q = RandomFloats(n_seqs * s.len * s.dim, 2, -1.0f, 1.0f);
    std::vector<float> k = RandomFloats(n_seqs * s.len * s.dim, 3, -1.0f, 1.0f);
    const std::vector<double> q_expected = SeedRotateHalf(q, n_seqs, s.len, s.dim, 0, 1e4, 1);
    const std::vector<double> k_expected = SeedRotateHalf(k, n_seqs, s.len, s.dim, 0, 1e4, 1);
    std::vector<int32_t> positions(s.len);
    for (size_t l = 0; l < s.len; ++l) positions[l] = static_cast<int32_t>(l);
    const PlanPtr plan = MakePlan(s.dim, 10000.0, 1.0);
    const posenc_rope_tensor qv = {q.data(), n_seqs, s.dim, s.len * s.dim};
    const posenc_rope_tensor kv = {k.data(), n_seqs, s.dim, s.len * s.dim};
    ASSERT_EQ(
        posenc_rope_f32(plan.get(), s.dim, s.len, positions.data(), 0, &qv, &kv, POSENC_ROPE_NEOX),
        POSENC_OK);
    ExpectClose(ToDoubles(q), q_expected, MaxAbs(q));
    ExpectClose(ToDoubles(k), k_expected, MaxAbs(k));
  }
}

// seed 003: apply_rope(q, k, cos, sin) on [L, D] with interleaved pairs; equal to posenc's
// GPTJ output up to the fixed de-interleaving permutation.
TEST(Seed003, InterleavedApplyRopeUpToPairPermutation) {
  for (size_t dim : {2, 8, 64, 96}) {
    for (size_t len : {1, 6, 20}) {
      SCOPED_TRACE("D=" + std::to_string(dim) + " L=" + std::to_string(len));
      std::vector<float> q = RandomFloats(len * dim, 4, -1.0f, 1.0f),
                         k = RandomFloats(len * dim, 5, -1.0f, 1.0f);
      const std::vector<double> q_expected = SeedInterleavedApplyRope(q, len, dim, 10000.0);
      const std::vector<double> k_expected = SeedInterleavedApplyRope(k, len, dim, 10000.0);
      const PlanPtr plan = MakePlan(dim, 10000.0, 1.0);
      const posenc_rope_tensor qv = {q.data(), 1, dim, dim}, kv = {k.data(), 1, dim, dim};
      ASSERT_EQ(posenc_rope_f32(plan.get(), dim, len, nullptr, 0, &qv, &kv, POSENC_ROPE_GPTJ),
                POSENC_OK);
      ExpectClose(DeinterleavePairs(q, len, dim), q_expected, MaxAbs(q));
      ExpectClose(DeinterleavePairs(k, len, dim), k_expected, MaxAbs(k));
    }
  }
}

}  // namespace
}  // namespace posenc_test
