// The seed documents' ALiBi (shared/seeds), re-implemented in C++ exactly as their NumPy
// code computes it, against posenc with the active ISA (ctest runs this once per ISA):
// seed 000's _get_slopes and get_bias, and seed 003's apply_alibi. Also the slopes for
// other max_bias values against the header's formula in long double.
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "alibi_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

std::vector<float> LibrarySlopes(size_t n_heads, double max_bias) {
  std::vector<float> slopes(n_heads, NAN);
  EXPECT_EQ(posenc_alibi_slopes(n_heads, max_bias, slopes.data()), POSENC_OK)
      << "n_heads=" << n_heads << " max_bias=" << max_bias;
  return slopes;
}

// Distance in floats between two finite floats of the same sign (the ulps between them).
int64_t UlpDistance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  return std::llabs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

// The header's slope of head h: 2^(-max_bias * (h + 1) / n) for a power-of-two n, else,
// with c the largest power of two below n, the c slopes of c heads and then
// 2^(-max_bias * (2k + 1) / (2c)) for k = 0 .. n - c - 1. In long double.
long double HeaderSlope(size_t n, double max_bias, size_t h) {
  size_t c = 1;
  while (2 * c <= n) c *= 2;
  const long double b = max_bias;
  if (h < c) return std::exp2(-b * static_cast<long double>(h + 1) / static_cast<long double>(c));
  const size_t k = h - c;
  return std::exp2(-b * static_cast<long double>(2 * k + 1) / static_cast<long double>(2 * c));
}

// `got` is `exact` rounded to float, or, when `exact` lies so close to the midpoint of two
// floats that a correctly computed double may round either way, the other one of the two.
testing::AssertionResult IsRoundedSlope(float got, long double exact) {
  const float nearest = static_cast<float>(exact);
  if (BitwiseEqual(got, nearest)) return testing::AssertionSuccess();
  const long double midpoint = (static_cast<long double>(got) + nearest) / 2;
  const bool neighbour = UlpDistance(got, nearest) == 1;
  if (neighbour && std::fabs(exact - midpoint) <= std::ldexp(std::fabs(exact), -40))
    return testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(21);
  os << "got " << got << ", exact " << exact << " rounds to " << nearest;
  return testing::AssertionFailure() << os.str();
}

// Bias of seed 000's get_bias(L) for `slopes` (float32): the float32 slope times the int64
// distance is float64 in NumPy, negated; the header's bias is that value as float32.
std::vector<float> SeedGetBias(const std::vector<float>& slopes, size_t len) {
  std::vector<float> bias(slopes.size() * len * len);
  for (size_t h = 0; h < slopes.size(); ++h)
    for (size_t i = 0; i < len; ++i)
      for (size_t j = 0; j < len; ++j) {
        const int64_t distance = std::llabs(static_cast<int64_t>(j) - static_cast<int64_t>(i));
        const double product = static_cast<double>(slopes[h]) * static_cast<double>(distance);
        bias[(h * len + i) * len + j] = static_cast<float>(-product);
      }
  return bias;
}

// The first element whose bits differ, as "element (h, i, j): got ..., seed ...".
testing::AssertionResult SameBits(const std::vector<float>& got, const std::vector<float>& seed,
                                  size_t rows, size_t cols) {
  for (size_t e = 0; e < got.size(); ++e)
    if (!BitwiseEqual(got[e], seed[e]))
      return testing::AssertionFailure()
             << "element (head " << e / (rows * cols) << ", row " << e / cols % rows << ", col "
             << e % cols << "): got " << got[e] << ", seed " << seed[e];
  return testing::AssertionSuccess();
}

// Head counts of real ALiBi models (BLOOM-560m, MPT-7B and BLOOM-176B use 16, 32 and 112;
// 12 and 40 need the completion): the library must give seed 000's float32 slopes exactly.
TEST(AlibiSlopesTest, EqualSeedExactlyForCommonHeadCounts) {
  for (size_t n : {8, 12, 32, 40}) {
    const std::vector<float> seed = SeedSlopes(n);
    const std::vector<float> got = LibrarySlopes(n, 8.0);
    for (size_t h = 0; h < n; ++h)
      EXPECT_TRUE(BitwiseEqual(got[h], seed[h]))
          << "n=" << n << " head " << h << ": got " << got[h] << ", seed " << seed[h];
  }
}

// Every head count up to 128: within one float ulp of the seed (the seed's start *
// ratio**i and an exp2 of the header's exponent may round differently). Which slopes
// differ is printed, not failed.
TEST(AlibiSlopesTest, WithinOneUlpOfSeedForEveryCountUpTo128) {
  std::ostringstream differing;
  size_t n_differing = 0;
  for (size_t n = 1; n <= 128; ++n) {
    const std::vector<float> seed = SeedSlopes(n);
    const std::vector<float> got = LibrarySlopes(n, 8.0);
    for (size_t h = 0; h < n; ++h) {
      EXPECT_LE(UlpDistance(got[h], seed[h]), 1)
          << "n=" << n << " head " << h << ": got " << got[h] << ", seed " << seed[h];
      if (!BitwiseEqual(got[h], seed[h])) {
        differing << " (n=" << n << ", h=" << h << ")";
        ++n_differing;
      }
    }
  }
  std::cout << "[ INFO     ] slopes that differ from seed 000 by one ulp: " << n_differing
            << differing.str() << "\n";
}

// The header's formula for max_bias 8 and others, every count up to 128; includes
// max_bias values whose slopes are subnormal or underflow to +0 (140, 1e6) and one so small
// that every slope rounds to 1.
TEST(AlibiSlopesTest, FollowHeaderFormulaForAnyMaxBias) {
  for (double max_bias : {8.0, 16.0, 0.5, 1.0, 3.0, 0.3, 140.0, 1e6, 1e-300}) {
    for (size_t n = 1; n <= 128; ++n) {
      const std::vector<float> got = LibrarySlopes(n, max_bias);
      for (size_t h = 0; h < n; ++h)
        EXPECT_TRUE(IsRoundedSlope(got[h], HeaderSlope(n, max_bias, h)))
            << "max_bias=" << max_bias << " n=" << n << " head " << h;
      if (testing::Test::HasFailure()) return;
    }
  }
}

// The paper's numbers, as a check of this file's reference: 8 heads give 1/2 ... 1/256.
TEST(AlibiSlopesTest, SeedReferenceGivesThePaperSlopesForEightHeads) {
  const std::vector<float> seed = SeedSlopes(8);
  for (size_t h = 0; h < 8; ++h) EXPECT_EQ(seed[h], std::ldexp(1.0f, -static_cast<int>(h + 1)));
}

// seed 000 get_bias(L) = posenc_alibi_bias_f32 with n_q = n_k = L, q_offset 0 and dense
// strides, slopes from posenc_alibi_slopes: bit for bit, including -0.0 on the diagonal.
TEST(AlibiSeedBiasTest, GetBiasBitForBit) {
  for (size_t heads : {8, 12})
    for (size_t len : {1, 2, 3, 4, 5, 6, 7, 8, 9, 33}) {
      SCOPED_TRACE("heads=" + std::to_string(heads) + " L=" + std::to_string(len));
      const std::vector<float> slopes = LibrarySlopes(heads, 8.0);
      std::vector<float> out(heads * len * len, NAN);  // NaN: every element must be written
      ASSERT_EQ(
          posenc_alibi_bias_f32(slopes.data(), heads, len, len, 0, out.data(), len * len, len, 0),
          POSENC_OK);
      EXPECT_TRUE(SameBits(out, SeedGetBias(SeedSlopes(heads), len), len, len));
      for (size_t h = 0; h < heads; ++h)
        for (size_t i = 0; i < len; ++i)
          EXPECT_TRUE(std::signbit(out[(h * len + i) * len + i]) &&
                      out[(h * len + i) * len + i] == 0.0f)
              << "diagonal (" << h << ", " << i << ") is not -0.0";
    }
}

// The causal bias is get_bias(L) with -inf above the diagonal (what a caller of the seed
// does with np.where(j > i, -inf, bias)).
TEST(AlibiSeedBiasTest, CausalBiasIsGetBiasMaskedAboveTheDiagonal) {
  for (size_t heads : {8, 12})
    for (size_t len : {1, 2, 5, 9, 33}) {
      SCOPED_TRACE("heads=" + std::to_string(heads) + " L=" + std::to_string(len));
      std::vector<float> seed = SeedGetBias(SeedSlopes(heads), len);
      for (size_t h = 0; h < heads; ++h)
        for (size_t i = 0; i < len; ++i)
          for (size_t j = i + 1; j < len; ++j) seed[(h * len + i) * len + j] = -INFINITY;
      std::vector<float> out(seed.size(), NAN);
      ASSERT_EQ(posenc_alibi_bias_f32(SeedSlopes(heads).data(), heads, len, len, 0, out.data(),
                                      len * len, len, POSENC_ALIBI_CAUSAL),
                POSENC_OK);
      EXPECT_TRUE(SameBits(out, seed, len, len));
    }
}

// A KV-cache step: query row r alone (n_q = 1, q_offset = r) against all L keys is row r
// of get_bias(L); r = L - 1 is the decode step.
TEST(AlibiSeedBiasTest, SingleQueryRowIsThatRowOfGetBias) {
  const size_t heads = 12;
  for (size_t len : {1, 9, 33, 100}) {
    const std::vector<float> seed = SeedGetBias(SeedSlopes(heads), len);
    for (size_t row : {len - 1, len / 2, size_t{0}}) {
      SCOPED_TRACE("L=" + std::to_string(len) + " row=" + std::to_string(row));
      std::vector<float> out(heads * len, NAN);
      ASSERT_EQ(posenc_alibi_bias_f32(SeedSlopes(heads).data(), heads, 1, len, row, out.data(), len,
                                      0, 0),
                POSENC_OK);
      std::vector<float> seed_row;
      for (size_t h = 0; h < heads; ++h)
        for (size_t j = 0; j < len; ++j) seed_row.push_back(seed[(h * len + row) * len + j]);
      EXPECT_TRUE(SameBits(out, seed_row, 1, len));
    }
  }
}

// posenc_alibi_add_f32 with seed 000's slopes on dense [heads, len, len] scores (queries and
// keys at positions 0..len-1, no mask), in place.
posenc_status AddWithSeedSlopes(std::vector<float>& scores, size_t heads, size_t len, float scale) {
  return posenc_alibi_add_f32(SeedSlopes(heads).data(), heads, len, len, 0, scores.data(),
                              len * len, len, scale, 0);
}

// seed 003 apply_alibi(scores, bias) = scores + bias, in float32 (the float32 bias the
// header defines), equals posenc_alibi_add_f32 with scale 1, bit for bit.
TEST(AlibiSeedApplyTest, ApplyAlibiEqualsAddWithScaleOne) {
  for (size_t heads : {8, 12})
    for (size_t len : {1, 4, 9, 33, 70}) {
      SCOPED_TRACE("heads=" + std::to_string(heads) + " L=" + std::to_string(len));
      const std::vector<float> bias = SeedGetBias(SeedSlopes(heads), len);
      const std::vector<float> scores = RandomFloats(bias.size(), 3 + len, -6.0f, 6.0f);
      std::vector<float> expected(bias.size());
      for (size_t e = 0; e < bias.size(); ++e) {
        const volatile float sum = scores[e] + bias[e];
        expected[e] = sum;
      }
      std::vector<float> out = scores;
      ASSERT_EQ(AddWithSeedSlopes(out, heads, len, 1.0f), POSENC_OK);
      EXPECT_TRUE(SameBits(out, expected, len, len));
    }
}

// seed 003 attention_with_alibi: scores = Q @ K.T / sqrt(d_k) + bias. For d_k = 64 the
// division by 8 is exact, the same as posenc's scale 0.125, so the raw scores with scale
// 0.125 must give the seed's biased scores bit for bit.
TEST(AlibiSeedApplyTest, AttentionWithAlibiScoresEqualAddWithScale) {
  const size_t heads = 8, len = 33;
  const std::vector<float> bias = SeedGetBias(SeedSlopes(heads), len);
  const std::vector<float> raw = RandomFloats(bias.size(), 77, -6.0f, 6.0f);
  std::vector<float> expected(bias.size());
  for (size_t e = 0; e < bias.size(); ++e) {
    const volatile float scaled = raw[e] / std::sqrt(64.0f);
    const volatile float sum = scaled + bias[e];
    expected[e] = sum;
  }
  std::vector<float> out = raw;
  ASSERT_EQ(AddWithSeedSlopes(out, heads, len, 0.125f), POSENC_OK);
  EXPECT_TRUE(SameBits(out, expected, len, len));
}

// ggml's slopes (posenc_alibi_slopes_ggml) against ggml-cpu's soft_max code, transcribed:
// bit for bit, with the same powf. Independently of that transcription, each slope is near
// the exact 2^(-max_bias k / c): m = powf(2, x) is within half an ulp, and m^e (e = h + 1 or
// 2 (h - c) + 1) multiplies that error by e, so within 2 (e + 1) (1 + |x|) + 4 ulps; the
// exact powers of two are exact, and a max_bias of 0 gives slopes of 1.
float GgmlSlope(uint32_t n_head, float max_bias, uint32_t h) {
  const uint32_t n_head_log2 = 1u << static_cast<uint32_t>(std::floor(std::log2(n_head)));
  const float m0 = std::pow(2.0f, -(max_bias) / static_cast<float>(n_head_log2));
  const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / static_cast<float>(n_head_log2));
  if (!(max_bias > 0.0f)) return 1.0f;
  return h < n_head_log2 ? std::pow(m0, static_cast<float>(h + 1))
                         : std::pow(m1, static_cast<float>(2 * (h - n_head_log2) + 1));
}

TEST(AlibiGgmlSlopesTest, AreGgmlsSlopesBitForBit) {
  for (float max_bias : {8.0f, 1.0f, 0.5f, 16.0f, 3.7f})
    for (uint32_t n = 1; n <= 80; ++n) {
      std::vector<float> slopes(n + 1, -1.0f);
      ASSERT_EQ(posenc_alibi_slopes_ggml(n, max_bias, slopes.data()), POSENC_OK);
      EXPECT_EQ(slopes[n], -1.0f) << "n=" << n << ": a slope past n_heads written";
      uint32_t c = 1;
      while (c <= n / 2) c *= 2;
      for (uint32_t h = 0; h < n; ++h) {
        EXPECT_TRUE(BitwiseEqual(slopes[h], GgmlSlope(n, max_bias, h)))
            << "n=" << n << " max_bias=" << max_bias << " h=" << h << ": " << slopes[h];
        const double e = h < c ? h + 1.0 : 2.0 * (h - c) + 1;
        const double x = (h < c ? max_bias : max_bias / 2) / c;
        const long double exact = std::exp2(-static_cast<long double>(x) * e);
        EXPECT_LE(UlpDistance(slopes[h], static_cast<float>(exact)), 2 * (e + 1) * (1 + x) + 4)
            << "n=" << n << " max_bias=" << max_bias << " h=" << h;
      }
    }
  // max_bias 8 with 8 heads: m0 = 1/2, the slopes 2^-1 ... 2^-8 exactly.
  std::vector<float> slopes(8);
  ASSERT_EQ(posenc_alibi_slopes_ggml(8, 8.0f, slopes.data()), POSENC_OK);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(slopes[h], std::ldexp(1.0f, -(h + 1))) << h;
  // ggml's models without ALiBi: max_bias 0, every slope 1.
  ASSERT_EQ(posenc_alibi_slopes_ggml(8, 0.0f, slopes.data()), POSENC_OK);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(slopes[h], 1.0f) << h;
}

}  // namespace
}  // namespace posenc_test
