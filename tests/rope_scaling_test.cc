// Scaled RoPE plans (posenc_rope_plan_create_scaled) against their definitions: the default
// type, linear, NTK-alpha and per-pair factors exactly; dynamic NTK's fallback below the
// original length; the LongRoPE switch at seq_len > original_max_position_embeddings (HF's
// comparison); YaRN's and LongRoPE's defaults; the shape of Llama 3's bands; and every
// invalid parameter. The HF values themselves are in rope_golden_test.cc.
#include <posenc.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "half_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

PlanPtr Scaled(size_t r, double base, const posenc_rope_scaling* s) {
  posenc_rope_plan* plan = nullptr;
  EXPECT_EQ(posenc_rope_plan_create_scaled(&plan, r, base, s), POSENC_OK);
  return PlanPtr(plan);
}

std::vector<double> ScaledFreqs(size_t r, double base, const posenc_rope_scaling& s) {
  PlanPtr plan = Scaled(r, base, &s);
  return plan ? PlanFreqs(plan.get()) : std::vector<double>();
}

std::vector<double> DefaultFreqs(size_t r, double base) {
  return PlanFreqs(MakePlan(r, base, 1.0).get());
}

bool BitwiseEqual(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// w_i = b^(-2i/R) in long double.
long double ExactDefault(long double b, size_t i, size_t r) {
  return std::pow(b, -static_cast<long double>(2 * i) / r);
}

void ExpectNear(const std::vector<double>& got, const std::vector<long double>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(std::fabs((got[i] - want[i]) / want[i]), 1e-14L)
        << what << " pair " << i << ": " << got[i] << " vs " << static_cast<double>(want[i]);
}

// Phi-3-like factors for R = 96: 48 of them.
const std::vector<double> kShort(48, 1.25), kLong = [] {
  std::vector<double> f(48);
  for (size_t i = 0; i < f.size(); ++i) f[i] = 1.0 + i;
  return f;
}();

// A valid scaling of each type for R = 96 (the LongRoPE and per-pair arrays hold 48 values).
posenc_rope_scaling Valid(posenc_rope_scaling_type type) {
  posenc_rope_scaling s = {};
  s.type = type;
  switch (type) {
    case POSENC_ROPE_SCALING_LINEAR:
      s.factor = 4;
      break;
    case POSENC_ROPE_SCALING_DYNAMIC:
      s.factor = 2, s.max_position_embeddings = 4096, s.seq_len = 10000;
      break;
    case POSENC_ROPE_SCALING_YARN:
      s.factor = 4, s.original_max_position_embeddings = 32768;
      break;
    case POSENC_ROPE_SCALING_LONGROPE:
      s.short_factor = kShort.data(), s.short_factor_len = kShort.size();
      s.long_factor = kLong.data(), s.long_factor_len = kLong.size();
      s.original_max_position_embeddings = 4096, s.max_position_embeddings = 131072;
      break;
    case POSENC_ROPE_SCALING_LLAMA3:
      s.factor = 8, s.low_freq_factor = 1, s.high_freq_factor = 4;
      s.original_max_position_embeddings = 8192;
      break;
    case POSENC_ROPE_SCALING_NTK_ALPHA:
      s.alpha = 8;
      break;
    case POSENC_ROPE_SCALING_PAIR_FACTORS:
      s.pair_factors = kLong.data(), s.pair_factors_len = kLong.size();
      break;
    default:
      break;
  }
  return s;
}

const posenc_rope_scaling_type kAllTypes[] = {
    POSENC_ROPE_SCALING_DEFAULT,   POSENC_ROPE_SCALING_LINEAR,      POSENC_ROPE_SCALING_DYNAMIC,
    POSENC_ROPE_SCALING_YARN,      POSENC_ROPE_SCALING_LONGROPE,    POSENC_ROPE_SCALING_LLAMA3,
    POSENC_ROPE_SCALING_NTK_ALPHA, POSENC_ROPE_SCALING_PAIR_FACTORS};

TEST(RopeScaling, DefaultTypeAndNullScalingArePlanCreateBitForBit) {
  const posenc_rope_scaling none = {};
  for (size_t r : {size_t{2}, size_t{64}, size_t{96}, size_t{128}})
    for (double base : {10000.0, 500000.0, 1e6, 0.5}) {
      const std::vector<double> want = DefaultFreqs(r, base);
      EXPECT_TRUE(BitwiseEqual(ScaledFreqs(r, base, none), want)) << r << " " << base;
      PlanPtr plan = Scaled(r, base, nullptr);
      ASSERT_NE(plan, nullptr);
      EXPECT_TRUE(BitwiseEqual(PlanFreqs(plan.get()), want)) << r << " " << base;
      EXPECT_EQ(posenc_rope_plan_attention_factor(plan.get()), 1.0);
    }
}

TEST(RopeScaling, EveryTypeValidHereIsAccepted) {
  for (posenc_rope_scaling_type type : kAllTypes) {
    const posenc_rope_scaling s = Valid(type);
    EXPECT_NE(Scaled(96, 10000, &s), nullptr) << type;
  }
}

TEST(RopeScaling, GivenAttentionFactorReplacesEveryTypesOwn) {
  for (posenc_rope_scaling_type type : kAllTypes) {
    posenc_rope_scaling s = Valid(type);
    s.attention_factor = 0.75;
    PlanPtr plan = Scaled(96, 10000, &s);
    ASSERT_NE(plan, nullptr) << type;
    EXPECT_EQ(posenc_rope_plan_attention_factor(plan.get()), 0.75) << type;
  }
}

TEST(RopeScaling, LinearAndPairFactorsDivideTheDefaultFrequencies) {
  const std::vector<double> w = DefaultFreqs(96, 10000);
  const std::vector<double> linear = ScaledFreqs(96, 10000, Valid(POSENC_ROPE_SCALING_LINEAR));
  const std::vector<double> pairs = ScaledFreqs(96, 10000, Valid(POSENC_ROPE_SCALING_PAIR_FACTORS));
  ASSERT_EQ(linear.size(), w.size());
  ASSERT_EQ(pairs.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_EQ(linear[i], w[i] / 4) << i;
    EXPECT_EQ(pairs[i], w[i] / kLong[i]) << i;
  }
  posenc_rope_scaling slower = Valid(POSENC_ROPE_SCALING_LINEAR);
  slower.factor = 0.5;  // < 1 is unusual (HF warns) but well defined
  EXPECT_EQ(ScaledFreqs(96, 10000, slower)[1], w[1] / 0.5);
}

TEST(RopeScaling, NtkAlphaRaisesTheBaseByAlphaToTheRoverRminus2) {
  for (double alpha : {2.0, 8.0, 0.5}) {
    posenc_rope_scaling s = Valid(POSENC_ROPE_SCALING_NTK_ALPHA);
    s.alpha = alpha;
    const long double base = 10000.0L * std::pow(static_cast<long double>(alpha), 128.0L / 126);
    std::vector<long double> want(64);
    for (size_t i = 0; i < want.size(); ++i) want[i] = ExactDefault(base, i, 128);
    ExpectNear(ScaledFreqs(128, 10000, s), want, "alpha " + std::to_string(alpha));
  }
  posenc_rope_scaling one = Valid(POSENC_ROPE_SCALING_NTK_ALPHA);
  one.alpha = 1;
  EXPECT_TRUE(BitwiseEqual(ScaledFreqs(128, 10000, one), DefaultFreqs(128, 10000)));
}

TEST(RopeScaling, DynamicIsTheDefaultPlanUpToMaxPositionsAndScalesBeyond) {
  posenc_rope_scaling s = Valid(POSENC_ROPE_SCALING_DYNAMIC);
  const std::vector<double> w = DefaultFreqs(128, 10000);
  for (size_t seq_len : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}}) {
    s.seq_len = seq_len;
    EXPECT_TRUE(BitwiseEqual(ScaledFreqs(128, 10000, s), w)) << "seq_len " << seq_len;
  }
  for (size_t seq_len : {size_t{4097}, size_t{16384}, size_t{1000001}}) {
    s.seq_len = seq_len;
    const long double ratio = 2.0L * seq_len / 4096 - 1;
    const long double base = 10000.0L * std::pow(ratio, 128.0L / 126);
    std::vector<long double> want(64);
    for (size_t i = 0; i < want.size(); ++i) want[i] = ExactDefault(base, i, 128);
    const std::vector<double> got = ScaledFreqs(128, 10000, s);
    ExpectNear(got, want, "seq_len " + std::to_string(seq_len));
    EXPECT_EQ(got[0], 1.0);
    EXPECT_LT(got[63], w[63]) << "seq_len " << seq_len;
  }
}

TEST(RopeScaling, LongRopeSwitchesToLongFactorsWhenSeqLenExceedsTheOriginalLength) {
  posenc_rope_scaling s = Valid(POSENC_ROPE_SCALING_LONGROPE);
  const std::vector<double> w = DefaultFreqs(96, 10000);
  // HF: long_factor if seq_len > original_max_position_embeddings (seq_len = largest
  // position + 1), short_factor otherwise and when no length is known.
  for (auto [seq_len, factors] :
       {std::make_pair(size_t{0}, &kShort), std::make_pair(size_t{4096}, &kShort),
        std::make_pair(size_t{4097}, &kLong), std::make_pair(size_t{1000001}, &kLong)}) {
    s.seq_len = seq_len;
    const std::vector<double> got = ScaledFreqs(96, 10000, s);
    ASSERT_EQ(got.size(), w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      const double want = 1.0 / ((*factors)[i] * std::pow(10000.0, (2.0 * i) / 96));
      EXPECT_EQ(got[i], want) << "seq_len " << seq_len << " pair " << i;
    }
  }
}

TEST(RopeScaling, LongRopeAttentionFactorFollowsHf) {
  posenc_rope_scaling s = Valid(POSENC_ROPE_SCALING_LONGROPE);
  // factor 0: max_position_embeddings / original = 32, as Phi-3-mini-128k.
  const double phi3 = std::sqrt(1 + std::log(32.0) / std::log(4096.0));
  for (size_t seq_len : {size_t{0}, size_t{5000}}) {
    s.seq_len = seq_len;
    EXPECT_DOUBLE_EQ(posenc_rope_plan_attention_factor(Scaled(96, 10000, &s).get()), phi3);
  }
  s.factor = 4;  // a given factor wins over the ratio
  EXPECT_DOUBLE_EQ(posenc_rope_plan_attention_factor(Scaled(96, 10000, &s).get()),
                   std::sqrt(1 + std::log(4.0) / std::log(4096.0)));
  s.factor = 1;
  EXPECT_EQ(posenc_rope_plan_attention_factor(Scaled(96, 10000, &s).get()), 1.0);
  s.factor = 0, s.max_position_embeddings = 0, s.attention_factor = 1.5;  // factor not needed
  EXPECT_EQ(posenc_rope_plan_attention_factor(Scaled(96, 10000, &s).get()), 1.5);
}

TEST(RopeScaling, YarnDefaultsAreHfs) {
  const posenc_rope_scaling base_case = Valid(POSENC_ROPE_SCALING_YARN);
  posenc_rope_scaling explicit_betas = base_case;
  explicit_betas.beta_fast = 32, explicit_betas.beta_slow = 1;
  EXPECT_TRUE(
      BitwiseEqual(ScaledFreqs(128, 1e6, base_case), ScaledFreqs(128, 1e6, explicit_betas)));
  posenc_rope_scaling from_ratio = base_case;  // factor 0: max_position_embeddings / original
  from_ratio.factor = 0, from_ratio.max_position_embeddings = 4 * 32768;
  EXPECT_TRUE(BitwiseEqual(ScaledFreqs(128, 1e6, base_case), ScaledFreqs(128, 1e6, from_ratio)));
  PlanPtr plan = Scaled(128, 1e6, &base_case);
  EXPECT_DOUBLE_EQ(posenc_rope_plan_attention_factor(plan.get()), 0.1 * std::log(4.0) + 1);
  // Fastest pairs untouched, slowest divided by the factor.
  const std::vector<double> w = DefaultFreqs(128, 1e6), got = PlanFreqs(plan.get());
  EXPECT_EQ(got[0], w[0]);
  EXPECT_DOUBLE_EQ(got[63], w[63] / 4);
  posenc_rope_scaling untruncated = base_case;  // gpt-oss: "truncate": false
  untruncated.no_truncate = 1;
  EXPECT_FALSE(BitwiseEqual(ScaledFreqs(128, 1e6, untruncated), got));
}

TEST(RopeScaling, YarnMscaleRatio) {
  posenc_rope_scaling s = Valid(POSENC_ROPE_SCALING_YARN);
  s.factor = 40, s.original_max_position_embeddings = 4096;
  s.mscale = 1.0, s.mscale_all_dim = 0.5;
  const double m1 = 0.1 * 1.0 * std::log(40.0) + 1, m2 = 0.1 * 0.5 * std::log(40.0) + 1;
  EXPECT_DOUBLE_EQ(posenc_rope_plan_attention_factor(Scaled(64, 10000, &s).get()), m1 / m2);
  s.mscale_all_dim = 0;  // only one given: 0.1 * ln(factor) + 1
  EXPECT_DOUBLE_EQ(posenc_rope_plan_attention_factor(Scaled(64, 10000, &s).get()), m1);
  s.factor = 0.5;  // no extension: 1
  EXPECT_EQ(posenc_rope_plan_attention_factor(Scaled(64, 10000, &s).get()), 1.0);
}

TEST(RopeScaling, Llama3KeepsHighDividesLowAndBlendsBetween) {
  const posenc_rope_scaling s = Valid(POSENC_ROPE_SCALING_LLAMA3);
  const std::vector<double> w = DefaultFreqs(128, 500000), got = ScaledFreqs(128, 500000, s);
  ASSERT_EQ(got.size(), w.size());
  size_t high = 0, low = 0, medium = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double wavelen = 2 * 3.141592653589793 / w[i];
    if (wavelen < 8192.0 / 4) {
      EXPECT_EQ(got[i], w[i]) << i;
      ++high;
    } else if (wavelen > 8192.0 / 1) {
      EXPECT_EQ(got[i], w[i] / 8) << i;
      ++low;
    } else {
      EXPECT_GE(got[i], w[i] / 8) << i;
      EXPECT_LE(got[i], w[i]) << i;
      ++medium;
    }
  }
  EXPECT_GT(high, 0u);
  EXPECT_GT(low, 0u);
  EXPECT_GT(medium, 0u);
}

// --- invalid arguments ------------------------------------------------------------------------

posenc_rope_plan* Poisoned() {
  static int dummy;
  return reinterpret_cast<posenc_rope_plan*>(&dummy);
}

struct BadCall {
  const char* what;
  posenc_rope_scaling_type type;
  std::function<void(posenc_rope_scaling&, size_t&, double&)> change;
};

const std::vector<double> kShortBad(47, 1.0),
    kWithZero =
        [] {
          std::vector<double> f(48, 1.0);
          f[17] = 0;
          return f;
        }(),
    kWithNaN =
        [] {
          std::vector<double> f(48, 1.0);
          f[47] = kNaN;
          return f;
        }(),
    kWithNegative =
        [] {
          std::vector<double> f(48, 1.0);
          f[0] = -1;
          return f;
        }(),
    kTiny = [] {
      std::vector<double> f(48, 1.0);
      f[0] = 1e-4;  // w_0 = 10^4 rad/position: beyond what a plan holds
      return f;
    }();

void SetShort(posenc_rope_scaling& s, const std::vector<double>& f) {
  s.short_factor = f.data(), s.short_factor_len = f.size();
}
void SetLong(posenc_rope_scaling& s, const std::vector<double>& f) {
  s.long_factor = f.data(), s.long_factor_len = f.size();
}
void SetPairs(posenc_rope_scaling& s, const std::vector<double>& f) {
  s.pair_factors = f.data(), s.pair_factors_len = f.size();
}

using T = posenc_rope_scaling_type;
using S = posenc_rope_scaling;

std::vector<BadCall> BadCalls() {
  constexpr T kDefault = POSENC_ROPE_SCALING_DEFAULT, kLinear = POSENC_ROPE_SCALING_LINEAR,
              kDynamic = POSENC_ROPE_SCALING_DYNAMIC, kYarn = POSENC_ROPE_SCALING_YARN,
              kLongrope = POSENC_ROPE_SCALING_LONGROPE, kLlama3 = POSENC_ROPE_SCALING_LLAMA3,
              kAlpha = POSENC_ROPE_SCALING_NTK_ALPHA, kPairs = POSENC_ROPE_SCALING_PAIR_FACTORS;
  return {
      {"rotary_dim 0", kDefault, [](S&, size_t& r, double&) { r = 0; }},
      {"rotary_dim odd", kDefault, [](S&, size_t& r, double&) { r = 95; }},
      {"rotary_dim 2^20 + 2", kDefault, [](S&, size_t& r, double&) { r = (1u << 20) + 2; }},
      {"base 1", kDefault, [](S&, size_t&, double& b) { b = 1; }},
      {"base 0", kYarn, [](S&, size_t&, double& b) { b = 0; }},
      {"base NaN", kLlama3, [](S&, size_t&, double& b) { b = kNaN; }},
      {"base -inf", kLinear, [](S&, size_t&, double& b) { b = -kInf; }},
      {"unknown type", kDefault, [](S& s, size_t&, double&) { s.type = static_cast<T>(99); }},
      {"attention_factor < 0", kYarn, [](S& s, size_t&, double&) { s.attention_factor = -1; }},
      {"attention_factor NaN", kDefault, [](S& s, size_t&, double&) { s.attention_factor = kNaN; }},
      {"attention_factor inf", kLinear, [](S& s, size_t&, double&) { s.attention_factor = kInf; }},
      {"attention_factor > FLT_MAX", kDefault,
       [](S& s, size_t&, double&) { s.attention_factor = 1e300; }},
      {"linear factor 0", kLinear, [](S& s, size_t&, double&) { s.factor = 0; }},
      {"linear factor < 0", kLinear, [](S& s, size_t&, double&) { s.factor = -4; }},
      {"linear factor NaN", kLinear, [](S& s, size_t&, double&) { s.factor = kNaN; }},
      {"linear factor inf", kLinear, [](S& s, size_t&, double&) { s.factor = kInf; }},
      {"linear factor 1e-4 (w_0 > 1024)", kLinear, [](S& s, size_t&, double&) { s.factor = 1e-4; }},
      {"dynamic factor 0", kDynamic, [](S& s, size_t&, double&) { s.factor = 0; }},
      {"dynamic factor NaN", kDynamic, [](S& s, size_t&, double&) { s.factor = kNaN; }},
      {"dynamic max_position_embeddings 0", kDynamic,
       [](S& s, size_t&, double&) { s.max_position_embeddings = 0; }},
      {"dynamic rotary_dim 2", kDynamic, [](S&, size_t& r, double&) { r = 2; }},
      {"alpha 0", kAlpha, [](S& s, size_t&, double&) { s.alpha = 0; }},
      {"alpha < 0", kAlpha, [](S& s, size_t&, double&) { s.alpha = -2; }},
      {"alpha NaN", kAlpha, [](S& s, size_t&, double&) { s.alpha = kNaN; }},
      {"alpha inf", kAlpha, [](S& s, size_t&, double&) { s.alpha = kInf; }},
      {"alpha rotary_dim 2", kAlpha, [](S&, size_t& r, double&) { r = 2; }},
      {"yarn factor < 0", kYarn, [](S& s, size_t&, double&) { s.factor = -4; }},
      {"yarn factor NaN", kYarn, [](S& s, size_t&, double&) { s.factor = kNaN; }},
      {"yarn factor 0 without max_position_embeddings", kYarn,
       [](S& s, size_t&, double&) { s.factor = 0; }},
      {"yarn original_max_position_embeddings 0", kYarn,
       [](S& s, size_t&, double&) { s.original_max_position_embeddings = 0; }},
      {"yarn beta_fast NaN", kYarn, [](S& s, size_t&, double&) { s.beta_fast = kNaN; }},
      {"yarn beta_slow < 0", kYarn, [](S& s, size_t&, double&) { s.beta_slow = -1; }},
      {"yarn beta_fast < beta_slow", kYarn,
       [](S& s, size_t&, double&) { s.beta_fast = 1, s.beta_slow = 32; }},
      {"yarn mscale NaN", kYarn, [](S& s, size_t&, double&) { s.mscale = kNaN; }},
      {"yarn mscale_all_dim inf", kYarn, [](S& s, size_t&, double&) { s.mscale_all_dim = kInf; }},
      {"yarn attention factor <= 0 from mscale", kYarn,
       [](S& s, size_t&, double&) { s.mscale = -100, s.mscale_all_dim = 1; }},
      {"longrope short NULL", kLongrope, [](S& s, size_t&, double&) { s.short_factor = nullptr; }},
      {"longrope long NULL", kLongrope, [](S& s, size_t&, double&) { s.long_factor = nullptr; }},
      {"longrope short length 47", kLongrope,
       [](S& s, size_t&, double&) { SetShort(s, kShortBad); }},
      {"longrope long length 47", kLongrope, [](S& s, size_t&, double&) { SetLong(s, kShortBad); }},
      {"longrope factors for another rotary_dim", kLongrope,
       [](S&, size_t& r, double&) { r = 128; }},
      {"longrope short holds 0", kLongrope, [](S& s, size_t&, double&) { SetShort(s, kWithZero); }},
      {"longrope long holds NaN", kLongrope, [](S& s, size_t&, double&) { SetLong(s, kWithNaN); }},
      {"longrope short holds < 0", kLongrope,
       [](S& s, size_t&, double&) { SetShort(s, kWithNegative); }},
      {"longrope original 0", kLongrope,
       [](S& s, size_t&, double&) { s.original_max_position_embeddings = 0; }},
      {"longrope factor NaN", kLongrope, [](S& s, size_t&, double&) { s.factor = kNaN; }},
      {"longrope factor < 0", kLongrope, [](S& s, size_t&, double&) { s.factor = -1; }},
      {"longrope no factor, no max_position_embeddings, no attention factor", kLongrope,
       [](S& s, size_t&, double&) { s.max_position_embeddings = 0; }},
      {"longrope original 1 (ln 1 = 0)", kLongrope,
       [](S& s, size_t&, double&) { s.original_max_position_embeddings = 1; }},
      {"llama3 factor 0", kLlama3, [](S& s, size_t&, double&) { s.factor = 0; }},
      {"llama3 factor NaN", kLlama3, [](S& s, size_t&, double&) { s.factor = kNaN; }},
      {"llama3 low 0", kLlama3, [](S& s, size_t&, double&) { s.low_freq_factor = 0; }},
      {"llama3 high 0", kLlama3, [](S& s, size_t&, double&) { s.high_freq_factor = 0; }},
      {"llama3 low == high", kLlama3, [](S& s, size_t&, double&) { s.low_freq_factor = 4; }},
      {"llama3 low > high", kLlama3, [](S& s, size_t&, double&) { s.low_freq_factor = 5; }},
      {"llama3 low NaN", kLlama3, [](S& s, size_t&, double&) { s.low_freq_factor = kNaN; }},
      {"llama3 high inf", kLlama3, [](S& s, size_t&, double&) { s.high_freq_factor = kInf; }},
      {"llama3 original 0", kLlama3,
       [](S& s, size_t&, double&) { s.original_max_position_embeddings = 0; }},
      {"pair factors NULL", kPairs, [](S& s, size_t&, double&) { s.pair_factors = nullptr; }},
      {"pair factors length 47", kPairs, [](S& s, size_t&, double&) { SetPairs(s, kShortBad); }},
      {"pair factors hold 0", kPairs, [](S& s, size_t&, double&) { SetPairs(s, kWithZero); }},
      {"pair factors hold NaN", kPairs, [](S& s, size_t&, double&) { SetPairs(s, kWithNaN); }},
      {"pair factors hold < 0", kPairs, [](S& s, size_t&, double&) { SetPairs(s, kWithNegative); }},
      {"pair factors make w_0 > 1024", kPairs, [](S& s, size_t&, double&) { SetPairs(s, kTiny); }},
  };
}

TEST(RopeScaling, RejectsEveryInvalidParameterAndStoresNull) {
  for (const BadCall& bad : BadCalls()) {
    posenc_rope_scaling s = Valid(bad.type);
    size_t r = 96;
    double base = 10000;
    bad.change(s, r, base);
    posenc_rope_plan* plan = Poisoned();
    EXPECT_EQ(posenc_rope_plan_create_scaled(&plan, r, base, &s), POSENC_ERR_INVALID_ARGUMENT)
        << bad.what;
    EXPECT_EQ(plan, nullptr) << bad.what;
  }
  const posenc_rope_scaling s = Valid(POSENC_ROPE_SCALING_YARN);
  EXPECT_EQ(posenc_rope_plan_create_scaled(nullptr, 96, 10000, &s), POSENC_ERR_INVALID_ARGUMENT);
}

TEST(RopeScaling, FieldsATypeDoesNotReadAreIgnored) {
  posenc_rope_scaling s = Valid(POSENC_ROPE_SCALING_LINEAR);
  s.alpha = kNaN, s.beta_fast = -1, s.low_freq_factor = kInf, s.short_factor_len = 3;
  EXPECT_NE(Scaled(96, 10000, &s), nullptr);
}

// The backward rotation (POSENC_ROPE_INVERSE) of every scaling type, on every ISA and every
// storage type: each rotated element within the header's bound of att * R(-a) x computed in
// long double from the plan's frequencies (the gradient of the forward rotation), and forward
// then inverse gives att^2 x. Scaled plans are plans like any other to the kernels; this
// checks that nothing about a type (factor bands, LongRoPE's long set, YaRN's attention
// factor) escapes the inverse.
class RopeScalingInverseTest : public EveryIsaTest {};

std::vector<std::pair<std::string, PlanPtr>> EveryTypeOfPlan(size_t r) {
  static const std::vector<double> pair_factors = [] {
    std::vector<double> f(32);
    for (size_t i = 0; i < f.size(); ++i) f[i] = 1.0 + 0.25 * static_cast<double>(i);
    return f;
  }();
  std::vector<std::pair<std::string, posenc_rope_scaling>> types;
  posenc_rope_scaling s{};
  s.type = POSENC_ROPE_SCALING_LINEAR, s.factor = 4;
  types.emplace_back("linear", s);
  s = {}, s.type = POSENC_ROPE_SCALING_DYNAMIC, s.factor = 2, s.max_position_embeddings = 4096,
  s.seq_len = 20000;
  types.emplace_back("dynamic", s);
  s = {}, s.type = POSENC_ROPE_SCALING_YARN, s.factor = 40, s.mscale = 0.707,
  s.original_max_position_embeddings = 4096;
  types.emplace_back("yarn", s);
  s = {}, s.type = POSENC_ROPE_SCALING_LONGROPE, s.short_factor = pair_factors.data(),
  s.short_factor_len = 32, s.long_factor = pair_factors.data(), s.long_factor_len = 32,
  s.original_max_position_embeddings = 4096, s.max_position_embeddings = 131072, s.seq_len = 100000;
  types.emplace_back("longrope", s);
  s = {}, s.type = POSENC_ROPE_SCALING_LLAMA3, s.factor = 8, s.low_freq_factor = 1,
  s.high_freq_factor = 4, s.original_max_position_embeddings = 8192;
  types.emplace_back("llama3", s);
  s = {}, s.type = POSENC_ROPE_SCALING_NTK_ALPHA, s.alpha = 3;
  types.emplace_back("ntk_alpha", s);
  s = {}, s.type = POSENC_ROPE_SCALING_PAIR_FACTORS, s.pair_factors = pair_factors.data(),
  s.pair_factors_len = 32;
  types.emplace_back("pair_factors", s);
  std::vector<std::pair<std::string, PlanPtr>> plans;
  for (const auto& [name, scaling] : types) plans.emplace_back(name, Scaled(r, 500000.0, &scaling));
  return plans;
}

TEST_P(RopeScalingInverseTest, InverseOfEveryTypeAndStorage) {
  constexpr size_t kR = 64, kD = 70, kHeads = 2;
  const std::vector<int32_t> positions = {0, 1, 4097, 100000, 1000000, -77, INT32_MAX};
  const size_t n = positions.size() * kHeads * kD;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (const auto& [name, plan] : EveryTypeOfPlan(kR)) {
    ASSERT_NE(plan, nullptr) << name;
    const std::vector<double> w = PlanFreqs(plan.get());
    const long double att = posenc_rope_plan_attention_factor(plan.get());
    for (unsigned layout : {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ}) {
      const unsigned flags = layout | POSENC_ROPE_INVERSE;
      for (int storage = 0; storage < 3; ++storage) {
        // The input as floats the storage type holds exactly.
        std::vector<float> x(n);
        for (float& v : x) {
          v = normal(rng);
          if (storage > 0) v = RoundToStorage(storage == 1 ? Storage::kBf16 : Storage::kF16, v);
        }
        std::vector<float> got(n);
        AlignedFloats f32(n);
        HalfBuffer h16(n);
        std::memcpy(f32.data(), x.data(), n * sizeof(float));
        const Storage st = storage == 1 ? Storage::kBf16 : Storage::kF16;
        for (size_t i = 0; i < n && storage > 0; ++i) h16.Set(i, EncodeHalf(st, x[i]));
        posenc_rope_tensor q = {storage ? static_cast<void*>(h16.data()) : f32.data(), kHeads,
                                kHeads * kD, kD};
        const auto fn = storage == 0   ? posenc_rope_f32
                        : storage == 1 ? posenc_rope_bf16
                                       : posenc_rope_f16;
        ASSERT_EQ(fn(plan.get(), kD, positions.size(), positions.data(), 0, &q, nullptr, flags),
                  POSENC_OK);
        for (size_t i = 0; i < n; ++i) got[i] = storage ? DecodeHalf(st, h16.Get(i)) : f32[i];
        for (size_t t = 0; t < positions.size(); ++t)
          for (size_t h = 0; h < kHeads; ++h)
            for (size_t i = 0; i < kR / 2; ++i) {
              const size_t base = (t * kHeads + h) * kD;
              const size_t iu = base + (layout ? 2 * i : i),
                           iv = base + (layout ? 2 * i + 1 : i + kR / 2);
              const long double a = ReferenceAngle(positions[t], w[i], 0);
              const long double c = att * std::cos(a), sn = -att * std::sin(a);
              const long double u = x[iu], v = x[iv];
              const long double want_u = u * c - v * sn, want_v = v * c + u * sn;
              const double mag = static_cast<double>(att * (std::fabs(u) + std::fabs(v)));
              const double bound = 0x1p-21 * mag + 4 * FLT_TRUE_MIN;
              const double bu = bound + (storage ? HalfUlp(st, static_cast<double>(want_u)) : 0);
              const double bv = bound + (storage ? HalfUlp(st, static_cast<double>(want_v)) : 0);
              EXPECT_LE(std::fabs(got[iu] - want_u), bu)
                  << name << " storage " << storage << " layout " << layout << " p " << positions[t]
                  << " pair " << i;
              EXPECT_LE(std::fabs(got[iv] - want_v), bv)
                  << name << " storage " << storage << " layout " << layout << " p " << positions[t]
                  << " pair " << i;
            }
        // Elements [R, D) untouched.
        for (size_t row = 0; row < positions.size() * kHeads; ++row)
          for (size_t d = kR; d < kD; ++d)
            EXPECT_TRUE(::posenc_test::BitwiseEqual(got[row * kD + d], x[row * kD + d])) << name;
        if (storage != 0) continue;
        // Forward, then the inverse: att^2 x (f32; two rotations' bounds).
        AlignedFloats y(n);
        std::memcpy(y.data(), x.data(), n * sizeof(float));
        posenc_rope_tensor qy = {y.data(), kHeads, kHeads * kD, kD};
        ASSERT_EQ(posenc_rope_f32(plan.get(), kD, positions.size(), positions.data(), 0, &qy,
                                  nullptr, layout),
                  POSENC_OK);
        ASSERT_EQ(posenc_rope_f32(plan.get(), kD, positions.size(), positions.data(), 0, &qy,
                                  nullptr, flags),
                  POSENC_OK);
        for (size_t row = 0; row < positions.size() * kHeads; ++row)
          for (size_t i = 0; i < kR / 2; ++i) {
            const size_t iu = row * kD + (layout ? 2 * i : i);
            const size_t iv = row * kD + (layout ? 2 * i + 1 : i + kR / 2);
            const double mag =
                static_cast<double>(att * att) * (std::fabs(x[iu]) + std::fabs(x[iv]));
            EXPECT_LE(std::fabs(y[iu] - static_cast<double>(att * att) * x[iu]),
                      0x1p-20 * mag + 1e-37)
                << name;
            EXPECT_LE(std::fabs(y[iv] - static_cast<double>(att * att) * x[iv]),
                      0x1p-20 * mag + 1e-37)
                << name;
          }
      }
    }
  }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeScalingInverseTest);

}  // namespace
}  // namespace posenc_test
