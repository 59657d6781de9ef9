// RoPE frequency plans: default frequencies, user frequencies, accessors, and every
// argument plan creation must refuse.
#include <posenc.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <limits>
#include <vector>

#include "test_support.h"

namespace posenc_test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr size_t kMaxRotaryDim = size_t{1} << 20;

// A non-null value, to see that a failed creation stores NULL.
posenc_rope_plan* Poisoned() {
  static int dummy;
  return reinterpret_cast<posenc_rope_plan*>(&dummy);
}

TEST(RopePlan, DefaultFrequenciesArePowersOfBase) {
  for (size_t rotary_dim : {size_t{2}, size_t{8}, size_t{64}, size_t{128}, size_t{4096}}) {
    for (double base : {10000.0, 500000.0, 1e6, 0.5, 1.0001}) {
      SCOPED_TRACE("R=" + std::to_string(rotary_dim) + " base=" + std::to_string(base));
      PlanPtr plan = MakePlan(rotary_dim, base, 1.0);
      ASSERT_NE(plan, nullptr);
      const std::vector<double> freqs = PlanFreqs(plan.get());
      for (size_t i = 0; i < freqs.size(); ++i) {
        const long double exponent = -static_cast<long double>(2 * i) / rotary_dim;
        const long double expected = std::pow(static_cast<long double>(base), exponent);
        const long double rel = std::fabs((freqs[i] - expected) / expected);
        EXPECT_LE(rel, 1e-15L) << "pair " << i << ": " << freqs[i] << " vs " << expected;
      }
    }
  }
}

TEST(RopePlan, AccessorsReportCreationArguments) {
  PlanPtr plan = MakePlan(96, 10000.0, 1.25);
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(posenc_rope_plan_rotary_dim(plan.get()), 96u);
  EXPECT_EQ(posenc_rope_plan_attention_factor(plan.get()), 1.25);
  EXPECT_EQ(PlanFreqs(plan.get())[0], 1.0);
}

TEST(RopePlan, AccessorsAcceptNull) {
  EXPECT_EQ(posenc_rope_plan_rotary_dim(nullptr), 0u);
  EXPECT_EQ(posenc_rope_plan_attention_factor(nullptr), 0.0);
  double freqs[4] = {7, 7, 7, 7};
  EXPECT_EQ(posenc_rope_plan_freqs(nullptr, freqs), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(freqs[0], 7.0);
  PlanPtr plan = MakePlan(8, 10000.0, 1.0);
  EXPECT_EQ(posenc_rope_plan_freqs(plan.get(), nullptr), POSENC_ERR_INVALID_ARGUMENT);
  posenc_rope_plan_destroy(nullptr);
}

TEST(RopePlan, LargestRotaryDimIsAccepted) {
  PlanPtr plan = MakePlan(kMaxRotaryDim, 10000.0, 1.0);
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(posenc_rope_plan_rotary_dim(plan.get()), kMaxRotaryDim);
}

TEST(RopePlanFromFreqs, RoundTripsFrequenciesExactly) {
  const std::vector<double> given = {1.0,      0.0,     -0.0,
                                     -0.5,     1e-30,   3.141592653589793,
                                     1024.0,   DBL_MIN, 0x1.fffffffffffffp-1,
                                     -123.456, 1.0 / 3, 2.5e-7};
  posenc_rope_plan* raw = nullptr;
  ASSERT_EQ(posenc_rope_plan_create_from_freqs(&raw, 2 * given.size(), given.data(), 0.75),
            POSENC_OK);
  PlanPtr plan(raw);
  std::vector<double> copy = given;
  copy.assign(copy.size(), 99.0);  // the plan must own its copy
  const std::vector<double> freqs = PlanFreqs(plan.get());
  ASSERT_EQ(freqs.size(), given.size());
  for (size_t i = 0; i < given.size(); ++i)
    EXPECT_TRUE(std::memcmp(&freqs[i], &given[i], sizeof(double)) == 0)
        << "pair " << i << ": " << freqs[i] << " vs " << given[i];
  EXPECT_EQ(posenc_rope_plan_rotary_dim(plan.get()), 2 * given.size());
  EXPECT_EQ(posenc_rope_plan_attention_factor(plan.get()), 0.75);
}

const size_t kBadRotaryDims[] = {0, 1, 63, kMaxRotaryDim + 2, SIZE_MAX, SIZE_MAX - 1};
// 1e-300 gives frequencies far beyond 1024 rad/position, where exact reduction ends.
const double kBadBases[] = {0.0, -0.0, -10000.0, 1.0, kNaN, kInf, -kInf, 1e-300};
// Also factors that float (the kernels' type) cannot hold.
const double kBadAttentionFactors[] = {0.0, -0.0, -1.0, kNaN, kInf, -kInf, 1e300, 3.5e38};

// Expects `create` to refuse and to store NULL in its output.
template <typename Create>
void ExpectRefused(const Create& create, const std::string& what) {
  posenc_rope_plan* plan = Poisoned();
  EXPECT_EQ(create(&plan), POSENC_ERR_INVALID_ARGUMENT) << what;
  EXPECT_EQ(plan, nullptr) << what;
}

TEST(RopePlan, RejectsInvalidArgumentsAndStoresNull) {
  for (size_t r : kBadRotaryDims)
    ExpectRefused([&](auto** p) { return posenc_rope_plan_create(p, r, 10000, 1); },
                  "rotary_dim " + std::to_string(r));
  for (double base : kBadBases)
    ExpectRefused([&](auto** p) { return posenc_rope_plan_create(p, 64, base, 1); },
                  "base " + std::to_string(base));
  for (double att : kBadAttentionFactors)
    ExpectRefused([&](auto** p) { return posenc_rope_plan_create(p, 64, 10000, att); },
                  "attention_factor " + std::to_string(att));
  EXPECT_EQ(posenc_rope_plan_create(nullptr, 64, 10000, 1), POSENC_ERR_INVALID_ARGUMENT);
}

TEST(RopePlanFromFreqs, RejectsInvalidArgumentsAndStoresNull) {
  // Long enough for every rotary_dim up to 2^20 + 2, should the check come too late.
  const std::vector<double> freqs(kMaxRotaryDim / 2 + 1, 0.25);
  for (size_t bad_pair : {size_t{0}, size_t{7}, size_t{31}}) {
    for (double bad_value : {kNaN, kInf, -kInf, 1024.0000000001, -1025.0, 1e10}) {
      std::vector<double> with_bad(freqs.begin(), freqs.begin() + 32);
      with_bad[bad_pair] = bad_value;
      ExpectRefused(
          [&](auto** p) { return posenc_rope_plan_create_from_freqs(p, 64, with_bad.data(), 1); },
          "frequency " + std::to_string(bad_value) + " at pair " + std::to_string(bad_pair));
    }
  }
  for (size_t r : kBadRotaryDims)
    ExpectRefused(
        [&](auto** p) { return posenc_rope_plan_create_from_freqs(p, r, freqs.data(), 1); },
        "rotary_dim " + std::to_string(r));
  for (double att : kBadAttentionFactors)
    ExpectRefused(
        [&](auto** p) { return posenc_rope_plan_create_from_freqs(p, 64, freqs.data(), att); },
        "attention_factor " + std::to_string(att));
  ExpectRefused([&](auto** p) { return posenc_rope_plan_create_from_freqs(p, 8, nullptr, 1); },
                "freqs NULL");
  EXPECT_EQ(posenc_rope_plan_create_from_freqs(nullptr, 8, freqs.data(), 1.0),
            POSENC_ERR_INVALID_ARGUMENT);
}

// The float32 recipes of small C runtimes and of given float frequencies: bitwise.
TEST(RopePlanFloat32Recipes, PowfRecipeIsTheCLibrarysBitForBit) {
  for (float base : {10000.0f, 500000.0f, 1000000.0f, 10.5f})
    for (size_t r : {size_t{2}, size_t{64}, size_t{96}, size_t{128}, size_t{1026}}) {
      posenc_rope_plan* raw = nullptr;
      ASSERT_EQ(posenc_rope_plan_create_powf(&raw, r, base, 1.0), POSENC_OK);
      const PlanPtr plan(raw);
      const std::vector<double> w = PlanFreqs(plan.get());
      for (size_t i = 0; i < r / 2; ++i) {
        // What llama2.c computes: head_dim = 2i, head_size = R.
        const float want = 1.0f / powf(base, static_cast<float>(2 * i) / static_cast<float>(r));
        ASSERT_EQ(w[i], static_cast<double>(want))
            << "base " << base << " R " << r << " pair " << i;
      }
    }
}

TEST(RopePlanFloat32Recipes, GivenFloatFrequenciesAreKeptBitForBit) {
  std::vector<float> f = {1.0f, 0.1f, 1e-4f, 3.3e-7f, -0.25f, 0.0f, 1024.0f, 0x1.fffffep-1f};
  posenc_rope_plan* raw = nullptr;
  ASSERT_EQ(posenc_rope_plan_create_from_freqs_f32(&raw, 2 * f.size(), f.data(), 0.5), POSENC_OK);
  const PlanPtr plan(raw);
  const std::vector<double> w = PlanFreqs(plan.get());
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(w[i], static_cast<double>(f[i])) << i;
  EXPECT_EQ(posenc_rope_plan_attention_factor(plan.get()), 0.5);
}

TEST(RopePlanFloat32Recipes, RejectInvalidArgumentsAndStoreNull) {
  const float ok[2] = {1.0f, 0.5f};
  const float nan[2] = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  const float huge[2] = {1.0f, 2048.0f};
  posenc_rope_plan* p = reinterpret_cast<posenc_rope_plan*>(&p);
  EXPECT_EQ(posenc_rope_plan_create_from_freqs_f32(&p, 4, nullptr, 1.0),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(p, nullptr);
  p = reinterpret_cast<posenc_rope_plan*>(&p);
  EXPECT_EQ(posenc_rope_plan_create_from_freqs_f32(&p, 4, nan, 1.0), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(posenc_rope_plan_create_from_freqs_f32(&p, 4, huge, 1.0), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_plan_create_from_freqs_f32(&p, 3, ok, 1.0), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_plan_create_from_freqs_f32(&p, 4, ok, 0.0), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_plan_create_from_freqs_f32(nullptr, 4, ok, 1.0),
            POSENC_ERR_INVALID_ARGUMENT);
  p = reinterpret_cast<posenc_rope_plan*>(&p);
  EXPECT_EQ(posenc_rope_plan_create_powf(&p, 128, 1.0f, 1.0), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(posenc_rope_plan_create_powf(&p, 128, -2.0f, 1.0), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_plan_create_powf(&p, 128, std::numeric_limits<float>::infinity(), 1.0),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_plan_create_powf(&p, 7, 10000.0f, 1.0), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_plan_create_powf(nullptr, 128, 10000.0f, 1.0), POSENC_ERR_INVALID_ARGUMENT);
  // HF's float32 recipe: the types HF has none of, and what create_scaled refuses.
  posenc_rope_scaling s = {};
  s.type = POSENC_ROPE_SCALING_NTK_ALPHA;
  s.alpha = 2.0;
  p = reinterpret_cast<posenc_rope_plan*>(&p);
  EXPECT_EQ(posenc_rope_plan_create_hf_f32(&p, 128, 10000.0, &s, 16), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(p, nullptr);
  s = {};
  s.type = POSENC_ROPE_SCALING_LINEAR;  // factor missing
  EXPECT_EQ(posenc_rope_plan_create_hf_f32(&p, 128, 10000.0, &s, 16), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_plan_create_hf_f32(&p, 128, 1.0, nullptr, 16), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_plan_create_hf_f32(nullptr, 128, 10000.0, nullptr, 16),
            POSENC_ERR_INVALID_ARGUMENT);
  for (unsigned lanes : {1u, 2u, 12u, 32u}) {  // no torch CPU vector of that many floats
    p = reinterpret_cast<posenc_rope_plan*>(&p);
    EXPECT_EQ(posenc_rope_plan_create_hf_f32(&p, 128, 10000.0, nullptr, lanes),
              POSENC_ERR_INVALID_ARGUMENT)
        << lanes;
    EXPECT_EQ(p, nullptr);
  }
}

}  // namespace
}  // namespace posenc_test
