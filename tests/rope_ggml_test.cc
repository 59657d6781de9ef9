// posenc_rope_plan_create_ggml against ggml's rope (ggml_rope_ext):
//  - the golden cases (tests/data/ggml_rope_golden.txt, written by ggml_rope_golden.py, a
//    float64 transcription of ggml's CPU code independent of posenc): frequencies within
//    1e-14 (relative), attention factor within 1e-15;
//  - against posenc's other plans: without YaRN (ext_factor 0) ggml's rope is linear
//    scaling by 1 / freq_scale (bit for bit when freq_scale is a power of two), the default
//    plan for freq_scale 1, the per-pair factors plan with freq_factors; with ext_factor 1
//    and attn_factor 1 it is HF's YaRN (frequencies and attention factor within 1e-15);
//  - the defaults (freq_scale and attn_factor 0 -> 1), the fields read only with YaRN, and
//    every invalid parameter of the header (POSENC_ERR_INVALID_ARGUMENT, *plan = NULL);
//  - end to end, on every ISA: posenc_rope_f32 with the plan of each golden case, in both
//    pair layouts, forward and inverse, against a direct long double evaluation of ggml's
//    rope (ggml_rope_cache_init's running theta, rope_yarn's mix and mscale, rotate_pairs),
//    within 1e-6 (inputs in [-0.5, 0.5], so att * (|u| + |v|) <= 1.25: the rotation's own
//    bound, 2^-21 * att * (|u| + |v|) as in rope_scaling_test.cc, is below 6e-7).
#include <posenc.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "test_support.h"

#ifndef POSENC_GGML_GOLDEN_FILE
#error "POSENC_GGML_GOLDEN_FILE must name tests/data/ggml_rope_golden.txt"
#endif

namespace posenc_test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kFreqRelBound = 1e-14;
constexpr double kAttRelBound = 1e-15;
constexpr double kRotationBound = 1e-6;

struct GgmlCase {
  std::string name, layout;
  size_t head_dim = 0, n_dims = 0, n_ctx_orig = 0;
  double freq_base = 0, freq_scale = 0, ext_factor = 0, attn_factor = 0, beta_fast = 0,
         beta_slow = 0, attention_factor = 0;
  std::vector<float> freq_factors;
  std::vector<double> freqs;
};

// Whitespace-separated words of a line.
std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t' || line[pos] == '\r')) ++pos;
    const size_t start = pos;
    while (pos < line.size() && line[pos] != ' ' && line[pos] != '\t' && line[pos] != '\r') ++pos;
    if (pos > start) words.push_back(line.substr(start, pos - start));
  }
  return words;
}

double ParseDouble(const std::string& token) {
  char* end = nullptr;
  const double v = std::strtod(token.c_str(), &end);  // hex floats included
  if (end == token.c_str() || *end != '\0') ADD_FAILURE() << "not a number: " << token;
  return v;
}

size_t ParseSize(const std::string& token) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(token.c_str(), &end, 10);
  if (end == token.c_str() || *end != '\0') ADD_FAILURE() << "not a count: " << token;
  return static_cast<size_t>(v);
}

// words[1] = n, then n numbers.
std::vector<double> Counted(const std::vector<std::string>& words) {
  std::vector<double> values;
  if (words.size() < 2) return values;
  const size_t n = ParseSize(words[1]);
  EXPECT_EQ(words.size(), n + 2) << words[0];
  for (size_t i = 2; i < words.size(); ++i) values.push_back(ParseDouble(words[i]));
  return values;
}

void ReadCaseLine(const std::vector<std::string>& w, GgmlCase& c) {
  const std::string& key = w[0];
  if (w.size() < 2) {
    ADD_FAILURE() << "empty record " << key;
    return;
  }
  double* doubles[] = {&c.freq_base, &c.freq_scale, &c.ext_factor,      &c.attn_factor,
                       &c.beta_fast, &c.beta_slow,  &c.attention_factor};
  const char* double_keys[] = {"freq_base", "freq_scale", "ext_factor",      "attn_factor",
                               "beta_fast", "beta_slow",  "attention_factor"};
  for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; ++i)
    if (key == double_keys[i]) {
      *doubles[i] = ParseDouble(w[1]);
      return;
    }
  if (key == "layout") {
    c.layout = w[1];
  } else if (key == "head_dim") {
    c.head_dim = ParseSize(w[1]);
  } else if (key == "n_dims") {
    c.n_dims = ParseSize(w[1]);
  } else if (key == "n_ctx_orig") {
    c.n_ctx_orig = ParseSize(w[1]);
  } else if (key == "freqs") {
    c.freqs = Counted(w);
  } else if (key == "freq_factors") {
    for (double f : Counted(w)) c.freq_factors.push_back(static_cast<float>(f));  // exact
  } else {
    ADD_FAILURE() << "unknown record " << key;
  }
}

// Read with stdio, as rope_golden_test.cc does (MemorySanitizer and libstdc++ streams).
std::vector<GgmlCase> ReadGoldenFile() {
  std::vector<GgmlCase> cases;
  std::string text;
  if (FILE* in = std::fopen(POSENC_GGML_GOLDEN_FILE, "rb")) {
    char buffer[1 << 16];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, in)) > 0;) text.append(buffer, n);
    std::fclose(in);
  } else {
    ADD_FAILURE() << "cannot read " << POSENC_GGML_GOLDEN_FILE;
  }
  GgmlCase* current = nullptr;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::vector<std::string> w = Words(text.substr(start, end - start));
    start = end + 1;
    if (w.empty()) continue;
    if (w[0] == "case" && w.size() == 2) {
      current = &cases.emplace_back();
      current->name = w[1];
    } else if (w[0] == "end") {
      current = nullptr;
    } else if (current) {
      ReadCaseLine(w, *current);
    }
  }
  return cases;
}

const std::vector<GgmlCase>& Golden() {
  static const std::vector<GgmlCase> cases = ReadGoldenFile();
  return cases;
}

posenc_rope_ggml_params ParamsOf(const GgmlCase& c) {
  posenc_rope_ggml_params g = {};
  g.n_dims = c.n_dims;
  g.freq_base = c.freq_base;
  g.freq_scale = c.freq_scale;
  g.ext_factor = c.ext_factor;
  g.attn_factor = c.attn_factor;
  g.beta_fast = c.beta_fast;
  g.beta_slow = c.beta_slow;
  g.n_ctx_orig = c.n_ctx_orig;
  g.freq_factors = c.freq_factors.empty() ? nullptr : c.freq_factors.data();
  return g;
}

PlanPtr Ggml(const posenc_rope_ggml_params& g) {
  posenc_rope_plan* plan = nullptr;
  EXPECT_EQ(posenc_rope_plan_create_ggml(&plan, &g), POSENC_OK);
  return PlanPtr(plan);
}

PlanPtr Scaled(size_t r, double base, const posenc_rope_scaling& s) {
  posenc_rope_plan* plan = nullptr;
  EXPECT_EQ(posenc_rope_plan_create_scaled(&plan, r, base, &s), POSENC_OK);
  return PlanPtr(plan);
}

bool BitwiseEqual(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

bool SamePlan(const posenc_rope_plan* a, const posenc_rope_plan* b) {
  const double att_a = posenc_rope_plan_attention_factor(a);
  const double att_b = posenc_rope_plan_attention_factor(b);
  return posenc_rope_plan_rotary_dim(a) == posenc_rope_plan_rotary_dim(b) &&
         std::memcmp(&att_a, &att_b, sizeof att_a) == 0 && BitwiseEqual(PlanFreqs(a), PlanFreqs(b));
}

double RelativeError(double got, double want) { return std::fabs((got - want) / want); }

// A valid YaRN call for R = 64 with freq_factors; the invalid calls change one thing.
struct ValidYarn {
  std::vector<float> factors = std::vector<float>(32, 1.5f);
  posenc_rope_ggml_params params() const {
    posenc_rope_ggml_params g = {};
    g.n_dims = 64, g.freq_base = 10000, g.freq_scale = 0.25, g.ext_factor = 1;
    g.attn_factor = 1, g.beta_fast = 32, g.beta_slow = 1, g.n_ctx_orig = 4096;
    g.freq_factors = factors.data();
    return g;
  }
};

TEST(RopeGgml, GoldenFileHoldsTheCases) {
  const std::vector<GgmlCase>& cases = Golden();
  ASSERT_GE(cases.size(), 6u);
  for (const GgmlCase& c : cases) {
    EXPECT_TRUE(c.layout == "neox" || c.layout == "gptj") << c.name;
    EXPECT_EQ(c.freqs.size(), c.n_dims / 2) << c.name;
    EXPECT_GE(c.head_dim, c.n_dims) << c.name;
    EXPECT_TRUE(c.freq_factors.empty() || c.freq_factors.size() == c.n_dims / 2) << c.name;
  }
}

TEST(RopeGgml, FrequenciesAndAttentionFactorMatchGoldenData) {
  for (const GgmlCase& c : Golden()) {
    PlanPtr plan = Ggml(ParamsOf(c));
    ASSERT_NE(plan, nullptr) << c.name;
    EXPECT_EQ(posenc_rope_plan_rotary_dim(plan.get()), c.n_dims) << c.name;
    EXPECT_LE(RelativeError(posenc_rope_plan_attention_factor(plan.get()), c.attention_factor),
              kAttRelBound)
        << c.name << ": " << posenc_rope_plan_attention_factor(plan.get()) << " vs "
        << c.attention_factor;
    const std::vector<double> w = PlanFreqs(plan.get());
    ASSERT_EQ(w.size(), c.freqs.size()) << c.name;
    for (size_t i = 0; i < w.size(); ++i)
      EXPECT_LE(RelativeError(w[i], c.freqs[i]), kFreqRelBound)
          << c.name << " pair " << i << ": " << w[i] << " vs " << c.freqs[i];
  }
}

TEST(RopeGgml, WithoutExtFactorIsLinearScalingByOneOverFreqScale) {
  for (size_t r : {size_t{2}, size_t{64}, size_t{96}, size_t{128}})
    for (double base : {10000.0, 500000.0, 1e6})
      for (double freq_scale : {0.5, 0.25, 0.125, 1.0 / 32, 2.0, 1.0 / 3, 0.3, 0.7}) {
        posenc_rope_ggml_params g = {};
        g.n_dims = r, g.freq_base = base, g.freq_scale = freq_scale, g.attn_factor = 0.8;
        posenc_rope_scaling s = {};
        s.type = POSENC_ROPE_SCALING_LINEAR, s.factor = 1 / freq_scale, s.attention_factor = 0.8;
        PlanPtr ggml = Ggml(g), linear = Scaled(r, base, s);
        ASSERT_NE(ggml, nullptr);
        ASSERT_NE(linear, nullptr);
        EXPECT_EQ(posenc_rope_plan_attention_factor(ggml.get()), 0.8);  // no YaRN mscale
        const std::vector<double> a = PlanFreqs(ggml.get()), b = PlanFreqs(linear.get());
        int exponent = 0;
        if (std::frexp(freq_scale, &exponent) == 0.5) {  // a power of two: the same products
          EXPECT_TRUE(BitwiseEqual(a, b)) << r << " " << base << " " << freq_scale;
        } else {  // w * s and w / (1 / s): a few roundings apart
          for (size_t i = 0; i < a.size(); ++i)
            EXPECT_LE(RelativeError(a[i], b[i]), 4 * DBL_EPSILON)
                << r << " " << base << " " << freq_scale << " pair " << i;
        }
      }
}

TEST(RopeGgml, PlainParametersArePlanCreateAndFreqFactorsArePairFactors) {
  for (size_t r : {size_t{2}, size_t{64}, size_t{96}, size_t{128}})
    for (double base : {10000.0, 500000.0, 1e6, 0.5}) {
      posenc_rope_ggml_params g = {};
      g.n_dims = r, g.freq_base = base, g.freq_scale = 1, g.attn_factor = 1.5;
      PlanPtr ggml = Ggml(g), plain = MakePlan(r, base, 1.5);
      ASSERT_NE(ggml, nullptr);
      ASSERT_NE(plain, nullptr);
      EXPECT_TRUE(SamePlan(ggml.get(), plain.get())) << r << " " << base;

      std::vector<float> factors(r / 2);
      std::vector<double> factors_d(r / 2);
      for (size_t i = 0; i < r / 2; ++i)
        factors_d[i] = factors[i] = 1.0f + 0.375f * static_cast<float>(i % 11);
      g.freq_factors = factors.data();
      posenc_rope_scaling s = {};
      s.type = POSENC_ROPE_SCALING_PAIR_FACTORS, s.attention_factor = 1.5;
      s.pair_factors = factors_d.data(), s.pair_factors_len = r / 2;
      PlanPtr with_factors = Ggml(g), pairs = Scaled(r, base, s);
      ASSERT_NE(with_factors, nullptr);
      ASSERT_NE(pairs, nullptr);
      EXPECT_TRUE(SamePlan(with_factors.get(), pairs.get())) << r << " " << base;
    }
}

// ggml's YaRN with ext_factor 1 and attn_factor 1 is HF's (different order of operations).
TEST(RopeGgml, YarnWithExtFactorOneIsHfYarn) {
  for (size_t r : {size_t{64}, size_t{96}, size_t{128}})
    for (double base : {10000.0, 1e6})
      for (double factor : {4.0, 8.0, 32.0, 40.0})
        for (size_t original : {size_t{4096}, size_t{32768}}) {
          posenc_rope_ggml_params g = {};
          g.n_dims = r, g.freq_base = base, g.freq_scale = 1 / factor, g.ext_factor = 1;
          g.beta_fast = 32, g.beta_slow = 1, g.n_ctx_orig = original;
          posenc_rope_scaling s = {};
          s.type = POSENC_ROPE_SCALING_YARN, s.factor = factor;
          s.original_max_position_embeddings = original;
          PlanPtr ggml = Ggml(g), hf = Scaled(r, base, s);
          ASSERT_NE(ggml, nullptr);
          ASSERT_NE(hf, nullptr);
          EXPECT_LE(RelativeError(posenc_rope_plan_attention_factor(ggml.get()),
                                  posenc_rope_plan_attention_factor(hf.get())),
                    1e-15)
              << r << " " << base << " " << factor << " " << original;
          const std::vector<double> a = PlanFreqs(ggml.get()), b = PlanFreqs(hf.get());
          for (size_t i = 0; i < a.size(); ++i)
            EXPECT_LE(RelativeError(a[i], b[i]), 1e-15)
                << r << " " << base << " " << factor << " " << original << " pair " << i;
        }
}

TEST(RopeGgml, ZeroFreqScaleAndAttnFactorMeanOne) {
  for (double ext_factor : {0.0, 1.0}) {
    posenc_rope_ggml_params zero = ValidYarn().params();
    zero.freq_factors = nullptr;
    zero.ext_factor = ext_factor;
    zero.freq_scale = 0, zero.attn_factor = 0;
    posenc_rope_ggml_params one = zero;
    one.freq_scale = 1, one.attn_factor = 1;
    PlanPtr a = Ggml(zero), b = Ggml(one);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(SamePlan(a.get(), b.get())) << ext_factor;
    EXPECT_EQ(posenc_rope_plan_attention_factor(a.get()), 1.0) << ext_factor;  // ln 1 = 0
    // Each default on its own.
    posenc_rope_ggml_params half = one;
    half.freq_scale = 0.5, half.attn_factor = 0;
    posenc_rope_ggml_params half_one = half;
    half_one.attn_factor = 1;
    PlanPtr c = Ggml(half), d = Ggml(half_one);
    ASSERT_NE(c, nullptr);
    ASSERT_NE(d, nullptr);
    EXPECT_TRUE(SamePlan(c.get(), d.get())) << ext_factor;
    half.freq_scale = 0, half.attn_factor = 0.75;
    half_one.freq_scale = 1, half_one.attn_factor = 0.75;
    PlanPtr e = Ggml(half), f = Ggml(half_one);
    ASSERT_NE(e, nullptr);
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(SamePlan(e.get(), f.get())) << ext_factor;
  }
}

TEST(RopeGgml, YarnFieldsAreIgnoredWithoutExtFactor) {
  posenc_rope_ggml_params clean = {};
  clean.n_dims = 128, clean.freq_base = 10000, clean.freq_scale = 0.25;
  posenc_rope_ggml_params junk = clean;
  junk.beta_fast = kNaN, junk.beta_slow = -1, junk.n_ctx_orig = 0;
  PlanPtr a = Ggml(clean), b = Ggml(junk);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(SamePlan(a.get(), b.get()));
  junk.beta_fast = kInf, junk.beta_slow = 0, junk.n_ctx_orig = 4096;
  PlanPtr c = Ggml(junk);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(SamePlan(a.get(), c.get()));
}

TEST(RopeGgml, YarnAcceptsBetasInEitherOrderAndExtFactorAboveOne) {
  posenc_rope_ggml_params g = ValidYarn().params();
  g.freq_factors = nullptr;
  g.beta_fast = 1, g.beta_slow = 32;  // hi < lo: ggml's max(0.001, hi - lo)
  EXPECT_NE(Ggml(g), nullptr);
  g.beta_fast = g.beta_slow = 8;
  EXPECT_NE(Ggml(g), nullptr);
  g.ext_factor = 1.5;
  EXPECT_NE(Ggml(g), nullptr);
}

posenc_rope_plan* Poisoned() {
  static int dummy;
  return reinterpret_cast<posenc_rope_plan*>(&dummy);
}

TEST(RopeGgml, RejectsEveryInvalidParameterAndStoresNull) {
  using P = posenc_rope_ggml_params;
  static const std::vector<float> kWithZero = [] {
    std::vector<float> f(32, 1.0f);
    f[7] = 0.0f;
    return f;
  }();
  static const std::vector<float> kWithNegative = [] {
    std::vector<float> f(32, 1.0f);
    f[31] = -2.0f;
    return f;
  }();
  static const std::vector<float> kWithNaN = [] {
    std::vector<float> f(32, 1.0f);
    f[0] = std::numeric_limits<float>::quiet_NaN();
    return f;
  }();
  static const std::vector<float> kWithInf = [] {
    std::vector<float> f(32, 1.0f);
    f[3] = std::numeric_limits<float>::infinity();
    return f;
  }();
  static const std::vector<float> kTiny(32, 1e-4f);  // w_0 = 1e4 > 1024
  const std::vector<std::pair<const char*, std::function<void(P&)>>> changes = {
      {"n_dims 0", [](P& g) { g.n_dims = 0; }},
      {"n_dims odd", [](P& g) { g.n_dims = 63, g.freq_factors = nullptr; }},
      {"n_dims 2^20 + 2", [](P& g) { g.n_dims = (1u << 20) + 2, g.freq_factors = nullptr; }},
      {"freq_base 1", [](P& g) { g.freq_base = 1; }},
      {"freq_base 0", [](P& g) { g.freq_base = 0; }},
      {"freq_base < 0", [](P& g) { g.freq_base = -10000; }},
      {"freq_base NaN", [](P& g) { g.freq_base = kNaN; }},
      {"freq_base inf", [](P& g) { g.freq_base = kInf; }},
      {"freq_base 1e-10 (w_1 > 1024, no scaling)",
       [](P& g) {
         g.n_dims = 4, g.freq_base = 1e-10, g.freq_scale = 1, g.ext_factor = 0,
         g.freq_factors = nullptr;
       }},
      {"freq_scale < 0", [](P& g) { g.freq_scale = -0.25; }},
      {"freq_scale NaN", [](P& g) { g.freq_scale = kNaN; }},
      {"freq_scale inf", [](P& g) { g.freq_scale = kInf; }},
      {"freq_scale < 0 without YaRN", [](P& g) { g.freq_scale = -1, g.ext_factor = 0; }},
      {"freq_scale 2000 (w_0 > 1024)",
       [](P& g) { g.freq_scale = 2000, g.ext_factor = 0, g.freq_factors = nullptr; }},
      {"attn_factor < 0", [](P& g) { g.attn_factor = -1; }},
      {"attn_factor NaN", [](P& g) { g.attn_factor = kNaN; }},
      {"attn_factor inf", [](P& g) { g.attn_factor = kInf; }},
      {"attn_factor > FLT_MAX", [](P& g) { g.attn_factor = 1e300, g.ext_factor = 0; }},
      {"attn_factor * mscale > FLT_MAX", [](P& g) { g.attn_factor = FLT_MAX; }},
      {"mscale <= 0 (freq_scale e^11 with YaRN)",
       [](P& g) { g.freq_scale = std::exp(11.0), g.freq_factors = nullptr; }},
      {"ext_factor < 0", [](P& g) { g.ext_factor = -1; }},
      {"ext_factor NaN", [](P& g) { g.ext_factor = kNaN; }},
      {"ext_factor inf", [](P& g) { g.ext_factor = kInf; }},
      {"ext_factor 1e300 (w_0 > 1024)", [](P& g) { g.ext_factor = 1e300; }},
      {"YaRN n_ctx_orig 0", [](P& g) { g.n_ctx_orig = 0; }},
      {"YaRN beta_fast 0", [](P& g) { g.beta_fast = 0; }},
      {"YaRN beta_fast < 0", [](P& g) { g.beta_fast = -32; }},
      {"YaRN beta_fast NaN", [](P& g) { g.beta_fast = kNaN; }},
      {"YaRN beta_fast inf", [](P& g) { g.beta_fast = kInf; }},
      {"YaRN beta_slow 0", [](P& g) { g.beta_slow = 0; }},
      {"YaRN beta_slow < 0", [](P& g) { g.beta_slow = -1; }},
      {"YaRN beta_slow NaN", [](P& g) { g.beta_slow = kNaN; }},
      {"YaRN beta_slow inf", [](P& g) { g.beta_slow = kInf; }},
      {"freq_factor 0", [](P& g) { g.freq_factors = kWithZero.data(); }},
      {"freq_factor < 0", [](P& g) { g.freq_factors = kWithNegative.data(); }},
      {"freq_factor NaN", [](P& g) { g.freq_factors = kWithNaN.data(); }},
      {"freq_factor inf", [](P& g) { g.freq_factors = kWithInf.data(); }},
      {"freq_factor 0 without YaRN",
       [](P& g) { g.freq_factors = kWithZero.data(), g.ext_factor = 0; }},
      {"freq_factors 1e-4 (w_0 > 1024)",
       [](P& g) { g.freq_factors = kTiny.data(), g.freq_scale = 1, g.ext_factor = 0; }},
  };
  const ValidYarn valid;
  {
    posenc_rope_plan* plan = Poisoned();
    const P g = valid.params();
    EXPECT_EQ(posenc_rope_plan_create_ggml(&plan, &g), POSENC_OK);  // the changes' start
    posenc_rope_plan_destroy(plan == Poisoned() ? nullptr : plan);
  }
  for (const auto& [what, change] : changes) {
    P g = valid.params();
    change(g);
    posenc_rope_plan* plan = Poisoned();
    EXPECT_EQ(posenc_rope_plan_create_ggml(&plan, &g), POSENC_ERR_INVALID_ARGUMENT) << what;
    EXPECT_EQ(plan, nullptr) << what;
    posenc_rope_plan_destroy(plan == Poisoned() ? nullptr : plan);
  }
  posenc_rope_plan* plan = Poisoned();
  EXPECT_EQ(posenc_rope_plan_create_ggml(&plan, nullptr), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  const P g = valid.params();
  EXPECT_EQ(posenc_rope_plan_create_ggml(nullptr, &g), POSENC_ERR_INVALID_ARGUMENT);
}

// ggml's rope, directly, in long double: ggml_rope_cache_init for position p (theta from p,
// times theta_scale per pair), rope_yarn, ggml_rope_yarn_corr_dims, rope_yarn_ramp. Returns
// the (cos, sin) of each pair, sin negated for the backward pass (ggml's sin_sign).
std::vector<std::pair<long double, long double>> GgmlCache(const GgmlCase& c, int32_t p,
                                                           bool backward) {
  const long double pi = 3.141592653589793238462643383279502884L;
  const long double n_dims = static_cast<long double>(c.n_dims);
  const long double base = c.freq_base, freq_scale = c.freq_scale, ext = c.ext_factor;
  auto corr_dim = [&](long double n_rot) {
    return n_dims * std::log(static_cast<long double>(c.n_ctx_orig) / (n_rot * 2 * pi)) /
           (2 * std::log(base));
  };
  long double low = 0, high = 0, mscale = c.attn_factor;
  if (ext != 0) {
    low = std::max(0.0L, std::floor(corr_dim(c.beta_fast)));
    high = std::min(n_dims - 1, std::ceil(corr_dim(c.beta_slow)));
    mscale *= 1 + 0.1L * std::log(1 / freq_scale);
  }
  const long double theta_scale = std::pow(base, -2 / n_dims);
  long double theta = p;
  std::vector<std::pair<long double, long double>> cache;
  for (size_t i0 = 0; i0 < c.n_dims; i0 += 2) {
    const long double ff = c.freq_factors.empty() ? 1.0L : c.freq_factors[i0 / 2];
    const long double theta_extrap = theta / ff;
    const long double theta_interp = freq_scale * theta_extrap;
    long double t = theta_interp;
    if (ext != 0) {
      const long double y = (static_cast<long double>(i0 / 2) - low) / std::max(0.001L, high - low);
      const long double ramp_mix = (1 - std::min(1.0L, std::max(0.0L, y))) * ext;
      t = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
    }
    cache.emplace_back(std::cos(t) * mscale, (backward ? -1 : 1) * std::sin(t) * mscale);
    theta *= theta_scale;
  }
  return cache;
}

// ggml's rope modes (ggml.h's GGML_ROPE_TYPE_*), written out here: the test does not
// include ggml.
constexpr int kGgmlNormal = 0, kGgmlNeox = 2, kGgmlMrope = 8, kGgmlVision = 24, kGgmlImrope = 40;

TEST(RopeGgmlFlagsTest, EachGgmlModeGivesItsFlags) {
  const struct {
    int mode;
    unsigned flags;
  } cases[] = {
      {kGgmlNormal, POSENC_ROPE_GPTJ},
      {kGgmlNeox, POSENC_ROPE_NEOX},
      {kGgmlMrope, POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_GGML},
      {kGgmlVision, POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_GGML},
      {kGgmlImrope, POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_MROPE_GGML}};
  for (const auto& c : cases) {
    unsigned flags = 12345u;
    EXPECT_EQ(posenc_rope_ggml_flags(c.mode, &flags), POSENC_OK) << c.mode;
    EXPECT_EQ(flags, c.flags) << c.mode;
  }
  // ggml's NEOX passed as posenc flags would be POSENC_ROPE_INVERSE: the reason for this.
  EXPECT_EQ(static_cast<unsigned>(kGgmlNeox), unsigned{POSENC_ROPE_INVERSE});
}

TEST(RopeGgmlFlagsTest, ModesGgmlDoesNotRotateAreRefusedAndWriteNothing) {
  unsigned flags = 12345u;
  // Combinations and other bits: ggml compares the whole mode and aborts on these.
  for (int mode : {-1, 1, 3, 4, 6, 10, 16, 32, 34, 42, 64, 1 << 20, INT32_MAX, INT32_MIN}) {
    EXPECT_EQ(posenc_rope_ggml_flags(mode, &flags), POSENC_ERR_INVALID_ARGUMENT) << mode;
    EXPECT_EQ(flags, 12345u) << mode;
  }
  EXPECT_EQ(posenc_rope_ggml_flags(kGgmlNeox, nullptr), POSENC_ERR_INVALID_ARGUMENT);
}

class RopeGgmlRotationTest : public EveryIsaTest {};

TEST_P(RopeGgmlRotationTest, GoldenCasesRotateAsGgml) {
  const std::vector<int32_t> positions = {0, 1, 7, 100, 4095, 4096, 32767, 100000, 1000000, -5};
  constexpr size_t kQHeads = 2, kKHeads = 1;
  for (const GgmlCase& c : Golden()) {
    const posenc_rope_ggml_params g = ParamsOf(c);
    PlanPtr plan = Ggml(g);
    ASSERT_NE(plan, nullptr) << c.name;
    const size_t d = c.head_dim, r = c.n_dims, n_tok = positions.size();
    for (int mode : {kGgmlNeox, kGgmlNormal})
      for (bool backward : {false, true}) {
        unsigned layout = ~0u;  // the flags posenc gives for ggml's mode
        ASSERT_EQ(posenc_rope_ggml_flags(mode, &layout), POSENC_OK);
        const std::vector<float> q_in = RandomFloats(n_tok * kQHeads * d, 11, -0.5f, 0.5f);
        const std::vector<float> k_in = RandomFloats(n_tok * kKHeads * d, 12, -0.5f, 0.5f);
        AlignedFloats q(q_in.size()), k(k_in.size());
        std::memcpy(q.data(), q_in.data(), q_in.size() * sizeof(float));
        std::memcpy(k.data(), k_in.data(), k_in.size() * sizeof(float));
        posenc_rope_tensor qt = {q.data(), kQHeads, kQHeads * d, d};
        posenc_rope_tensor kt = {k.data(), kKHeads, kKHeads * d, d};
        const unsigned flags = layout | (backward ? unsigned{POSENC_ROPE_INVERSE} : 0u);
        ASSERT_EQ(posenc_rope_f32(plan.get(), d, n_tok, positions.data(), 0, &qt, &kt, flags),
                  POSENC_OK)
            << c.name;
        // ggml's rotate_pairs: normal mode pairs (x[2i], x[2i + 1]), NEOX (x[i], x[i + R/2]).
        const bool adjacent = mode == kGgmlNormal;
        auto check = [&](const std::vector<float>& in, const AlignedFloats& out, size_t heads,
                         const char* which) {
          for (size_t t = 0; t < n_tok; ++t) {
            const auto cache = GgmlCache(c, positions[t], backward);
            for (size_t h = 0; h < heads; ++h) {
              const size_t row = (t * heads + h) * d;
              for (size_t i = 0; i < r / 2; ++i) {
                const size_t iu = row + (adjacent ? 2 * i : i);
                const size_t iv = row + (adjacent ? 2 * i + 1 : i + r / 2);
                const long double x0 = in[iu], x1 = in[iv];
                const auto [cs, sn] = cache[i];
                const double want0 = static_cast<double>(x0 * cs - x1 * sn);
                const double want1 = static_cast<double>(x0 * sn + x1 * cs);
                EXPECT_NEAR(out[iu], want0, kRotationBound)
                    << c.name << " " << which << " mode " << mode << " backward " << backward
                    << " p " << positions[t] << " head " << h << " pair " << i;
                EXPECT_NEAR(out[iv], want1, kRotationBound)
                    << c.name << " " << which << " mode " << mode << " backward " << backward
                    << " p " << positions[t] << " head " << h << " pair " << i;
              }
              for (size_t e = r; e < d; ++e)
                EXPECT_TRUE(::posenc_test::BitwiseEqual(out[row + e], in[row + e]))
                    << c.name << " " << which << " element " << e << " written";
            }
          }
        };
        check(q_in, q, kQHeads, "q");
        check(k_in, k, kKHeads, "k");
      }
  }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeGgmlRotationTest);

}  // namespace
}  // namespace posenc_test
