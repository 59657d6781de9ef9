// The seed documents' sinusoidal formulas (shared/seeds), and the fairseq and diffusers
// variants the header names, re-implemented here from their NumPy/PyTorch code, against
// posenc with the active ISA (ctest runs this once per ISA).
//
// Seeds 000 and 004 build their tables in float32: div_term = exp(float32(2i) * float32(
// -log(10000) / d)), angle = float32(p) * div_term rounded to float, then float32 sin/cos. That
// angle is not posenc's (div_term may differ from (float)w_i by an ulp, and the accurate
// mode uses the exact product), so each comparison allows, per element, the distance between
// the seed's angle and the angle of the posenc mode under test, computed here in long double,
// on top of 2^-22 and the float roundings. For the positions below 2048 used here that
// distance stays below 2.5e-4 (asserted).
#include <posenc.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sinusoid_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

// Where the seed's float32 angle may be from posenc's at positions below 2048.
constexpr double kLargestSeedAngleGap = 2.5e-4;

// seed 000 SinusoidalEmbedding._build_pe (and seed 004's module): the float32 recipe.
float SeedDivTerm(size_t pair, size_t dim) {
  const float scale = static_cast<float>(-(std::log(10000.0) / static_cast<double>(dim)));
  return std::exp(static_cast<float>(2 * pair) * scale);
}

float SeedAngle(int32_t position, size_t pair, size_t dim) {
  return static_cast<float>(position) * SeedDivTerm(pair, dim);
}

// pe[position, column]: even columns sin, odd columns cos, rounded to float32.
float SeedTableValue(int32_t position, size_t column, size_t dim) {
  const double angle = SeedAngle(position, column / 2, dim);
  return static_cast<float>(column % 2 == 0 ? std::sin(angle) : std::cos(angle));
}

// How far the seed's angle is from the one the posenc mode uses with the plan's w_i: the
// exact product (accurate) or the float32 recipe with (float)w_i (F32_ANGLES).
double SeedAngleGap(int32_t position, size_t pair, size_t dim, double w, unsigned flags) {
  const long double posenc_angle = (flags & POSENC_SINUSOID_F32_ANGLES)
                                       ? static_cast<long double>(Float32RecipeAngle(position, w))
                                       : static_cast<long double>(position) * w;
  return static_cast<double>(std::fabs(SeedAngle(position, pair, dim) - posenc_angle));
}

// posenc's value may differ from the seed's by the angle gap, 2^-22, and the seed's rounding
// of sin/cos to float32 (half an ulp of a value below 1).
double SeedBound(int32_t position, size_t pair, size_t dim, double w, unsigned flags) {
  return SeedAngleGap(position, pair, dim, w, flags) + kSinusoidValueBound + 0x1p-24;
}

// SeedBound for posenc's accurate add of column `column` against the seed's x + pe, plus one
// rounding of each side's sum.
double SeedAddBound(int32_t position, size_t column, size_t dim, const std::vector<double>& freqs,
                    float seed, float got) {
  return SeedBound(position, column / 2, dim, freqs[column / 2], 0) +
         FLT_EPSILON * std::max(std::fabs(seed), std::fabs(got));
}

// sin or cos of position * freq in long double, from the exactly reduced product: what the
// fairseq and diffusers formulas give without rounding.
double ExactSinOrCos(long double position, double freq, bool is_sin) {
  const long double angle = ExactReducedProduct(position, freq);
  return static_cast<double>(is_sin ? std::sin(angle) : std::cos(angle));
}

struct Seed000Case {
  size_t dim, seq_len;
  int32_t offset;
};
const Seed000Case kSeed000Cases[] = {{16, 5, 0},      {64, 48, 7}, {512, 3, 1000},
                                     {128, 20, 2020}, {2, 9, 100}, {300, 17, 1}};

// seed 000: SinusoidalEmbedding(max_seq_len, d_model).forward(seq_len, offset) is rows
// [offset, offset + seq_len) of the table: posenc_sinusoid_fill_f32 with start_pos = offset.
TEST(Seed000, ForwardRowsAtAnOffset) {
  for (const Seed000Case& c : kSeed000Cases)
    for (unsigned angles : {POSENC_SINUSOID_ACCURATE, POSENC_SINUSOID_F32_ANGLES}) {
      SCOPED_TRACE("d_model=" + std::to_string(c.dim) + " seq_len=" + std::to_string(c.seq_len) +
                   " offset=" + std::to_string(c.offset) + " " + SinusoidModeName(angles));
      const SinusoidPlanPtr plan = MakeSinusoidPlan(c.dim, 10000.0);
      ASSERT_NE(plan, nullptr);
      const std::vector<double> freqs = SinusoidPlanFreqs(plan.get());
      std::vector<float> rows(c.seq_len * c.dim, NAN);
      ASSERT_EQ(posenc_sinusoid_fill_f32(plan.get(), c.seq_len, nullptr, c.offset, rows.data(), 0,
                                         POSENC_SINUSOID_INTERLEAVED | angles),
                POSENC_OK);
      size_t bad = 0;
      double largest_gap = 0;
      for (size_t r = 0; r < c.seq_len; ++r)
        for (size_t j = 0; j < c.dim; ++j) {
          const int32_t p = c.offset + static_cast<int32_t>(r);
          const float seed = SeedTableValue(p, j, c.dim);
          const double bound = SeedBound(p, j / 2, c.dim, freqs[j / 2], angles);
          largest_gap = std::max(largest_gap, SeedAngleGap(p, j / 2, c.dim, freqs[j / 2], angles));
          if (!(std::fabs(rows[r * c.dim + j] - seed) <= bound) && bad++ < 3)
            ADD_FAILURE() << "position " << p << " column " << j << ": posenc "
                          << rows[r * c.dim + j] << ", seed " << seed << " (bound " << bound << ")";
        }
      EXPECT_EQ(bad, 0u);
      EXPECT_LT(largest_gap, kLargestSeedAngleGap) << "the comparison would be too loose";
    }
}

// seed 003: apply_sinusoidal(embeddings, pos_encodings) = embeddings + pos_encodings[:L]
// with seed 000's table, against posenc_sinusoid_add_f32 with start_pos = 0.
TEST(Seed003, ApplySinusoidalAddsTheTable) {
  for (size_t dim : {8, 64, 130})
    for (size_t len : {1, 7, 300}) {
      SCOPED_TRACE("d=" + std::to_string(dim) + " L=" + std::to_string(len));
      const std::vector<float> embeddings = RandomFloats(len * dim, 3, -1.0f, 1.0f);
      std::vector<float> x = embeddings;
      const SinusoidPlanPtr plan = MakeSinusoidPlan(dim, 10000.0);
      ASSERT_NE(plan, nullptr);
      const std::vector<double> freqs = SinusoidPlanFreqs(plan.get());
      ASSERT_EQ(posenc_sinusoid_add_f32(plan.get(), len, nullptr, 0, x.data(), 0,
                                        POSENC_SINUSOID_INTERLEAVED),
                POSENC_OK);
      size_t bad = 0;
      for (size_t l = 0; l < len; ++l)
        for (size_t j = 0; j < dim; ++j) {
          const int32_t p = static_cast<int32_t>(l);
          const float seed = embeddings[l * dim + j] + SeedTableValue(p, j, dim);
          const float got = x[l * dim + j];
          const double bound = SeedAddBound(p, j, dim, freqs, seed, got);
          if (!(std::fabs(got - seed) <= bound) && bad++ < 3)
            ADD_FAILURE() << "token " << l << " column " << j << ": posenc " << got << ", seed "
                          << seed << " (bound " << bound << ")";
        }
      EXPECT_EQ(bad, 0u);
    }
}

// seed 004: SinusoidalPositionalEncoding(d_model).forward(x) on [B, L, D] (eval mode, so
// dropout is the identity) is x + pe[:L] for every batch: one add per batch, one add over
// all B*L rows with explicit positions, and the same rows inside a wider buffer (row stride).
TEST(Seed004, ForwardAddsToEveryBatch) {
  const size_t batch = 3, len = 11, dim = 64, pad = 5;
  const std::vector<float> input = RandomFloats(batch * len * dim, 4, -1.0f, 1.0f);
  std::vector<float> expected(input.size());
  for (size_t b = 0; b < batch; ++b)
    for (size_t l = 0; l < len; ++l)
      for (size_t j = 0; j < dim; ++j) {
        const size_t k = (b * len + l) * dim + j;
        expected[k] = input[k] + SeedTableValue(static_cast<int32_t>(l), j, dim);
      }
  const SinusoidPlanPtr plan = MakeSinusoidPlan(dim, 10000.0);
  ASSERT_NE(plan, nullptr);
  const std::vector<double> freqs = SinusoidPlanFreqs(plan.get());

  std::vector<float> per_batch = input;
  for (size_t b = 0; b < batch; ++b)
    ASSERT_EQ(posenc_sinusoid_add_f32(plan.get(), len, nullptr, 0, per_batch.data() + b * len * dim,
                                      0, POSENC_SINUSOID_INTERLEAVED),
              POSENC_OK);

  std::vector<int32_t> positions;
  for (size_t b = 0; b < batch; ++b)
    for (size_t l = 0; l < len; ++l) positions.push_back(static_cast<int32_t>(l));
  std::vector<float> one_call = input;
  ASSERT_EQ(posenc_sinusoid_add_f32(plan.get(), batch * len, positions.data(), 0, one_call.data(),
                                    0, POSENC_SINUSOID_INTERLEAVED),
            POSENC_OK);

  // Rows of dim + pad, the pad holding a value that must survive.
  std::vector<float> wide(batch * len * (dim + pad), -7.0f);
  for (size_t r = 0; r < batch * len; ++r)
    std::copy_n(input.begin() + r * dim, dim, wide.begin() + r * (dim + pad));
  ASSERT_EQ(posenc_sinusoid_add_f32(plan.get(), batch * len, positions.data(), 0, wide.data(),
                                    dim + pad, POSENC_SINUSOID_INTERLEAVED),
            POSENC_OK);

  size_t bad = 0;
  for (size_t r = 0; r < batch * len; ++r) {
    const int32_t p = static_cast<int32_t>(r % len);
    for (size_t j = 0; j < dim; ++j) {
      const float want = expected[r * dim + j];
      const float got[] = {per_batch[r * dim + j], one_call[r * dim + j],
                           wide[r * (dim + pad) + j]};
      for (float g : got) {
        const double bound = SeedAddBound(p, j, dim, freqs, want, g);
        if (!(std::fabs(g - want) <= bound) && bad++ < 3)
          ADD_FAILURE() << "row " << r << " column " << j << ": posenc " << g << ", seed " << want
                        << " (bound " << bound << ")";
      }
    }
    for (size_t j = dim; j < dim + pad; ++j)
      if (wide[r * (dim + pad) + j] != -7.0f && bad++ < 3)
        ADD_FAILURE() << "row " << r << " pad element " << j << " was written";
  }
  EXPECT_EQ(bad, 0u);
}

// fairseq / tensor2tensor (SinusoidalPositionalEmbedding.get_embedding): with h = d/2,
// w_i = 10000^(-i/(h-1)) and rows cat([sin(p*w), cos(p*w)]): a plan from those frequencies
// with the SIN_COS layout. Positions start at padding_idx + 1 = 2, as fairseq's
// make_positions gives them. Compared with the formula in long double.
TEST(Fairseq, SinCosBlocksWithItsFrequencies) {
  for (size_t dim : {4, 16, 64, 512}) {
    const size_t half = dim / 2;
    std::vector<double> freqs(half);
    for (size_t i = 0; i < half; ++i)
      freqs[i] = std::pow(10000.0, -static_cast<double>(i) / static_cast<double>(half - 1));
    const SinusoidPlanPtr plan = MakeSinusoidPlanFromFreqs(dim, freqs);
    ASSERT_NE(plan, nullptr);
    const size_t len = 40;
    std::vector<float> rows(len * dim, NAN);
    ASSERT_EQ(posenc_sinusoid_fill_f32(plan.get(), len, nullptr, 2, rows.data(), 0,
                                       POSENC_SINUSOID_SIN_COS),
              POSENC_OK);
    size_t bad = 0;
    for (size_t r = 0; r < len; ++r)
      for (size_t j = 0; j < dim; ++j) {
        const long double position = 2.0L + static_cast<long double>(r);
        const double want = ExactSinOrCos(position, freqs[j < half ? j : j - half], j < half);
        if (!(std::fabs(rows[r * dim + j] - want) <= kSinusoidValueBound) && bad++ < 3)
          ADD_FAILURE() << "d=" << dim << " position " << 2 + r << " column " << j << ": posenc "
                        << rows[r * dim + j] << ", fairseq formula " << want;
      }
    EXPECT_EQ(bad, 0u) << "d=" << dim;
  }
}

// diffusers get_timestep_embedding(timesteps, d, flip_sin_to_cos, downscale_freq_shift,
// scale, max_period): h = d/2, w_i = scale * max_period^(-i/(h - shift)), rows
// cat([sin(t*w), cos(t*w)]), swapped to cat([cos, sin]) by flip_sin_to_cos, and a zero column
// appended for odd d. posenc: SIN_COS / COS_SIN with those frequencies; for odd d the last
// column is the sin of one more pair (the header's documented difference), which only
// leaves the other columns where diffusers has them with flip_sin_to_cos.
TEST(Diffusers, TimestepEmbeddingWithAndWithoutFlip) {
  const std::vector<float> timesteps = {0.0f, 1.0f, 999.0f, 500.5f, 0.001f, 981.0f, 250.25f, -3.5f};
  struct Case {
    size_t dim;
    bool flip;
    double shift, scale;
  };
  const Case cases[] = {{320, true, 0.0, 1.0}, {320, false, 1.0, 1.0}, {64, true, 1.0, 1000.0},
                        {33, true, 1.0, 1.0},  {7, true, 0.0, 1.0},    {256, false, 0.0, 1.0},
                        {6, false, 1.0, 2.0}};
  for (const Case& c : cases) {
    SCOPED_TRACE("d=" + std::to_string(c.dim) + (c.flip ? " flip_sin_to_cos" : "") +
                 " shift=" + std::to_string(c.shift) + " scale=" + std::to_string(c.scale));
    const size_t half = c.dim / 2;
    std::vector<double> freqs(SinusoidPairCount(c.dim));  // one more for odd d
    for (size_t i = 0; i < freqs.size(); ++i)
      freqs[i] = c.scale *
                 std::pow(10000.0, -static_cast<double>(i) / (static_cast<double>(half) - c.shift));
    const SinusoidPlanPtr plan = MakeSinusoidPlanFromFreqs(c.dim, freqs);
    ASSERT_NE(plan, nullptr);
    std::vector<float> rows(timesteps.size() * c.dim, NAN);
    ASSERT_EQ(posenc_sinusoid_fill_timesteps_f32(
                  plan.get(), timesteps.size(), timesteps.data(), rows.data(), 0,
                  c.flip ? POSENC_SINUSOID_COS_SIN : POSENC_SINUSOID_SIN_COS),
              POSENC_OK);
    size_t bad = 0;
    for (size_t r = 0; r < timesteps.size(); ++r)
      for (size_t j = 0; j < c.dim; ++j) {
        const bool first_block = j < half;
        size_t pair = first_block ? j : j - half;
        bool is_sin = c.flip ? !first_block : first_block;
        if (j == 2 * half) {  // odd d: diffusers' zero column, posenc's sin of pair h
          pair = half;
          is_sin = true;
        }
        const double want = ExactSinOrCos(timesteps[r], freqs[pair], is_sin);
        if (!(std::fabs(rows[r * c.dim + j] - want) <= kSinusoidValueBound) && bad++ < 3)
          ADD_FAILURE() << "timestep " << timesteps[r] << " column " << j << ": posenc "
                        << rows[r * c.dim + j] << ", diffusers formula " << want;
      }
    EXPECT_EQ(bad, 0u);
  }
}

}  // namespace
}  // namespace posenc_test
