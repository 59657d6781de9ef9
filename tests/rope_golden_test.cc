// Golden values from HuggingFace transformers itself (tests/data/hf_rope_golden.txt, written
// by tests/data/hf_rope_golden.py): every configuration is built with
// posenc_rope_plan_create_scaled from its HF parameters, and held to what HF's own code computed,
// on every ISA:
//  - frequencies: relative 1e-14 of HF's evaluated in float64 (measured: 1 ulp, 2.1e-16);
//  - the attention factor: equal to 1e-15 (relative);
//  - POSENC_ROPE_ACCURATE against HF's float64 run, per rotated element, within
//        (2^-20 + 2^-22 + 2^-24) * att * (|u| + |v|)
//      + |p| * (|dw| + w * 2^-52) * att * (|u| + |v|)
//    where (u, v) is the input pair: the header's bound on c and s (2^-22 * att), one float
//    rounding of the result, the SIMD variants' distance from the scalar one
//    (POSENC_ROPE_SIMD_TOLERANCE = 2^-20), the angle that the difference dw between posenc's
//    frequency and HF's float64 one makes at position p (measured: at most 5.6e-11 rad,
//    at p = 10^6; far below the rest), and the rounding of HF's own double product p * w;
//  - POSENC_ROPE_F32_ANGLES on a plan made from HF's float32 inv_freq
//    (posenc_rope_plan_create_from_freqs) against HF's float32 recipe: the angles are the same
//    float numbers, and the outputs agree within 2^-20 * att * (|u| + |v|) (kCompatBound: both
//    sides' float cos/sin and float rotations; measured at most 1.74e-7);
//  - POSENC_ROPE_F32_ANGLES on the scaled plan against HF's float32 recipe: as above plus
//    |a - a_hf| * att * (|u| + |v|), where a = (float)p * (float)w_i and a_hf = (float)p *
//    inv_freq_hf: HF computes inv_freq in float32 arithmetic, which differs from (float)w_i
//    by an ulp in about a third of the pairs, so the two float recipes drift apart by
//    |p| * 2^-24 * w (up to 0.06 rad at p = 10^6) wherever that happens.
#include <posenc.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "test_support.h"

#ifndef POSENC_HF_GOLDEN_FILE
#error "POSENC_HF_GOLDEN_FILE must name tests/data/hf_rope_golden.txt"
#endif

namespace posenc_test {
namespace {

constexpr double kFreqRelBound = 1e-14;
constexpr double kAccurateBound = POSENC_ROPE_SIMD_TOLERANCE + 0x1p-22 + 0x1p-24;
constexpr double kCompatBound = POSENC_ROPE_SIMD_TOLERANCE;
constexpr double kSubnormal = 0x1p-147;

// Rows of one view (q or k): [position index][head] -> head_dim values.
using Rows = std::vector<std::vector<std::vector<double>>>;

struct GoldenCase {
  std::string name, model, rope_type, layout;
  size_t head_dim = 0, rotary_dim = 0, seq_len = 0, n_q = 0, n_k = 0;
  double base = 0, attention_factor = 0;
  std::map<std::string, double> params;
  std::map<std::string, std::vector<double>> lists;
  std::vector<double> inv_freq_f64, inv_freq_f32;
  std::vector<int32_t> positions;
  std::vector<std::vector<double>> q_in, k_in;  // [head] -> head_dim values
  Rows q_f64, q_f32, k_f64, k_f32;
};

struct GoldenFile {
  std::string transformers_version, torch_version;
  std::vector<GoldenCase> cases;
};

// The fields of one line, read like an istringstream (>> word, >> count). Hand-written, and
// the file read with stdio, because MemorySanitizer cannot see what Debian's uninstrumented
// libstdc++ streams write.
class Fields {
 public:
  explicit Fields(std::string line) : line_(std::move(line)) {}
  Fields& operator>>(std::string& word) {
    while (pos_ < line_.size() && std::isspace(static_cast<unsigned char>(line_[pos_]))) ++pos_;
    const size_t start = pos_;
    while (pos_ < line_.size() && !std::isspace(static_cast<unsigned char>(line_[pos_]))) ++pos_;
    word = line_.substr(start, pos_ - start);
    ok_ = !word.empty();
    return *this;
  }
  Fields& operator>>(size_t& value) {
    std::string word;
    *this >> word;
    char* end = nullptr;
    value = static_cast<size_t>(std::strtoull(word.c_str(), &end, 10));
    ok_ = ok_ && end != word.c_str() && *end == '\0';
    return *this;
  }
  explicit operator bool() const { return ok_; }

 private:
  std::string line_;
  size_t pos_ = 0;
  bool ok_ = true;
};

double ParseDouble(const std::string& token) {
  char* end = nullptr;
  const double v = std::strtod(token.c_str(), &end);  // hex floats included
  if (end == token.c_str() || *end != '\0') ADD_FAILURE() << "not a number: " << token;
  return v;
}

// `n` followed by n numbers.
std::vector<double> ReadCounted(Fields& in) {
  size_t n = 0;
  in >> n;
  std::vector<double> values;
  std::string token;
  while (values.size() < n && in >> token) values.push_back(ParseDouble(token));
  EXPECT_EQ(values.size(), n);
  return values;
}

// "<head> <D> values": one input head vector.
void ReadHead(Fields& in, std::vector<std::vector<double>>& heads) {
  size_t h = 0;
  in >> h;
  heads.resize(std::max(heads.size(), h + 1));
  heads[h] = ReadCounted(in);
}

// "<position index> <head> <D> values": one output head vector.
void ReadOutput(Fields& in, Rows& rows) {
  size_t t = 0;
  in >> t;
  rows.resize(std::max(rows.size(), t + 1));
  ReadHead(in, rows[t]);
}

std::string ReadWord(Fields& in) {
  std::string word;
  in >> word;
  return word;
}

void ReadCaseLine(const std::string& key, Fields& in, GoldenCase& c) {
  std::map<std::string, std::vector<double>*> counted = {{"inv_freq_f64", &c.inv_freq_f64},
                                                         {"inv_freq_f32", &c.inv_freq_f32}};
  std::map<std::string, size_t*> sizes = {
      {"head_dim", &c.head_dim}, {"rotary_dim", &c.rotary_dim}, {"seq_len", &c.seq_len}};
  std::map<std::string, std::string*> words = {
      {"model", &c.model}, {"rope_type", &c.rope_type}, {"layout", &c.layout}};
  std::map<std::string, Rows*> outputs = {
      {"q_f64", &c.q_f64}, {"q_f32", &c.q_f32}, {"k_f64", &c.k_f64}, {"k_f32", &c.k_f32}};
  if (counted.count(key)) {
    *counted[key] = ReadCounted(in);
  } else if (sizes.count(key)) {
    in >> *sizes[key];
  } else if (words.count(key)) {
    *words[key] = ReadWord(in);
  } else if (outputs.count(key)) {
    ReadOutput(in, *outputs[key]);
  } else if (key == "q_in" || key == "k_in") {
    ReadHead(in, key == "q_in" ? c.q_in : c.k_in);
  } else if (key == "base" || key == "attention_factor") {
    (key == "base" ? c.base : c.attention_factor) = ParseDouble(ReadWord(in));
  } else if (key == "param") {
    const std::string name = ReadWord(in);
    c.params[name] = ParseDouble(ReadWord(in));
  } else if (key == "list") {
    const std::string name = ReadWord(in);
    c.lists[name] = ReadCounted(in);
  } else if (key == "heads") {
    in >> c.n_q >> c.n_k;
  } else if (key == "positions") {
    for (double p : ReadCounted(in)) c.positions.push_back(static_cast<int32_t>(p));
  } else {
    ADD_FAILURE() << "unknown record " << key;
  }
}

GoldenFile ReadGoldenFile() {
  GoldenFile file;
  std::string text;
  if (FILE* in = std::fopen(POSENC_HF_GOLDEN_FILE, "rb")) {
    char buffer[1 << 16];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, in)) > 0;) text.append(buffer, n);
    std::fclose(in);
  } else {
    ADD_FAILURE() << "cannot read " << POSENC_HF_GOLDEN_FILE;
  }
  GoldenCase* current = nullptr;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    Fields fields(text.substr(start, end - start));
    start = end + 1;
    const std::string key = ReadWord(fields);
    if (key == "transformers") {
      file.transformers_version = ReadWord(fields);
    } else if (key == "torch") {
      file.torch_version = ReadWord(fields);
    } else if (key == "case") {
      current = &file.cases.emplace_back();
      current->name = ReadWord(fields);
    } else if (key == "end") {
      current = nullptr;
    } else if (current && !key.empty()) {
      ReadCaseLine(key, fields, *current);
    }
  }
  return file;
}

const GoldenFile& Golden() {
  static const GoldenFile file = ReadGoldenFile();
  return file;
}

double Param(const GoldenCase& c, const std::string& key) {
  const auto it = c.params.find(key);
  return it == c.params.end() ? 0.0 : it->second;
}

size_t SizeParam(const GoldenCase& c, const std::string& key) {
  return static_cast<size_t>(Param(c, key));
}

// The HF rope_scaling dict of the case, as the header maps it onto posenc_rope_scaling.
posenc_rope_scaling ScalingOf(const GoldenCase& c) {
  static const std::map<std::string, posenc_rope_scaling_type> kTypes = {
      {"default", POSENC_ROPE_SCALING_DEFAULT},   {"linear", POSENC_ROPE_SCALING_LINEAR},
      {"dynamic", POSENC_ROPE_SCALING_DYNAMIC},   {"yarn", POSENC_ROPE_SCALING_YARN},
      {"longrope", POSENC_ROPE_SCALING_LONGROPE}, {"llama3", POSENC_ROPE_SCALING_LLAMA3}};
  posenc_rope_scaling s = {};
  s.type = kTypes.at(c.rope_type);
  s.factor = Param(c, "factor");
  s.attention_factor = Param(c, "attention_factor");
  s.original_max_position_embeddings = SizeParam(c, "original_max_position_embeddings");
  s.max_position_embeddings = SizeParam(c, "max_position_embeddings");
  s.seq_len = c.seq_len;
  s.beta_fast = Param(c, "beta_fast");
  s.beta_slow = Param(c, "beta_slow");
  s.mscale = Param(c, "mscale");
  s.mscale_all_dim = Param(c, "mscale_all_dim");
  s.no_truncate = c.params.count("truncate") && Param(c, "truncate") == 0;
  s.low_freq_factor = Param(c, "low_freq_factor");
  s.high_freq_factor = Param(c, "high_freq_factor");
  if (c.lists.count("short_factor")) {
    s.short_factor = c.lists.at("short_factor").data();
    s.short_factor_len = c.lists.at("short_factor").size();
  }
  if (c.lists.count("long_factor")) {
    s.long_factor = c.lists.at("long_factor").data();
    s.long_factor_len = c.lists.at("long_factor").size();
  }
  return s;
}

PlanPtr ScaledPlan(const GoldenCase& c) {
  const posenc_rope_scaling scaling = ScalingOf(c);
  posenc_rope_plan* plan = nullptr;
  EXPECT_EQ(posenc_rope_plan_create_scaled(&plan, c.rotary_dim, c.base, &scaling), POSENC_OK)
      << c.name;
  return PlanPtr(plan);
}

// Where pair i's two elements sit in a head vector.
size_t FirstOfPair(const GoldenCase& c, size_t i) { return c.layout == "gptj" ? 2 * i : i; }
size_t SecondOfPair(const GoldenCase& c, size_t i) {
  return c.layout == "gptj" ? 2 * i + 1 : i + c.rotary_dim / 2;
}
unsigned LayoutFlag(const GoldenCase& c) {
  return c.layout == "gptj" ? POSENC_ROPE_GPTJ : POSENC_ROPE_NEOX;
}

// Q and K of the case rotated by posenc at all its positions: [position][head][D].
struct Rotated {
  Rows q, k;
};

Rotated RotateWithPosenc(const GoldenCase& c, const posenc_rope_plan* plan, unsigned flags) {
  const size_t n = c.positions.size(), d = c.head_dim;
  std::vector<float> q(n * c.n_q * d), k(n * c.n_k * d);
  for (size_t t = 0; t < n; ++t) {
    for (size_t h = 0; h < c.n_q; ++h)
      for (size_t e = 0; e < d; ++e) q[(t * c.n_q + h) * d + e] = static_cast<float>(c.q_in[h][e]);
    for (size_t h = 0; h < c.n_k; ++h)
      for (size_t e = 0; e < d; ++e) k[(t * c.n_k + h) * d + e] = static_cast<float>(c.k_in[h][e]);
  }
  const posenc_rope_tensor qv = {q.data(), c.n_q, c.n_q * d, d};
  const posenc_rope_tensor kv = {k.data(), c.n_k, c.n_k * d, d};
  EXPECT_EQ(posenc_rope_f32(plan, d, n, c.positions.data(), 0, &qv, &kv, flags), POSENC_OK);
  Rotated out;
  for (auto [buf, heads, rows] :
       {std::make_tuple(&q, c.n_q, &out.q), std::make_tuple(&k, c.n_k, &out.k)}) {
    rows->assign(n, std::vector<std::vector<double>>(heads, std::vector<double>(d)));
    for (size_t t = 0; t < n; ++t)
      for (size_t h = 0; h < heads; ++h)
        for (size_t e = 0; e < d; ++e) (*rows)[t][h][e] = (*buf)[(t * heads + h) * d + e];
  }
  return out;
}

// The float32 angle (float)p * inv_freq, rounded to float.
float Float32Angle(int32_t p, float inv_freq) {
  volatile float product = static_cast<float>(p) * inv_freq;  // no excess precision
  return product;
}

// Bound per pair i at position index t: the extra absolute error allowed per unit of
// att * (|u| + |v|) on top of the base bound.
using ExtraBound = std::function<double(size_t t, size_t i)>;

// The worst |posenc - hf| / bound over every element of one view; elements past R must be
// the input itself (in posenc, and in HF).
struct Worst {
  double ratio = 0, error = 0;
  std::string where;
};

void CompareView(const GoldenCase& c, const char* view, const Rows& got, const Rows& hf,
                 const std::vector<std::vector<double>>& input, double base_bound,
                 const ExtraBound& extra, Worst& worst) {
  const double att = c.attention_factor;
  for (size_t t = 0; t < c.positions.size(); ++t)
    for (size_t h = 0; h < input.size(); ++h) {
      const std::vector<double>& x = input[h];
      for (size_t i = 0; i < c.rotary_dim / 2; ++i) {
        const size_t a = FirstOfPair(c, i), b = SecondOfPair(c, i);
        const double scale = att * (std::fabs(x[a]) + std::fabs(x[b]));
        const double bound = (base_bound + extra(t, i)) * scale + kSubnormal;
        for (size_t e : {a, b}) {
          const double err = std::fabs(got[t][h][e] - hf[t][h][e]);
          if (!(err <= bound)) {
            ADD_FAILURE() << c.name << " " << view << " position " << c.positions[t] << " head "
                          << h << " element " << e << ": posenc " << got[t][h][e] << ", HF "
                          << hf[t][h][e] << ", bound " << bound;
            return;
          }
          const double ratio = err / (base_bound * scale + kSubnormal);
          if (ratio > worst.ratio) {
            worst = {ratio, err / std::max(scale, 1e-300),
                     c.name + " " + view + " p=" + std::to_string(c.positions[t])};
          }
        }
      }
      for (size_t e = c.rotary_dim; e < c.head_dim; ++e) {
        EXPECT_EQ(got[t][h][e], x[e]) << c.name << " pass-through element " << e;
        EXPECT_EQ(hf[t][h][e], x[e]) << c.name << " HF pass-through element " << e;
      }
    }
}

// One line per case and ISA: the worst |posenc - HF| / (att * (|u| + |v|)).
void Report(const char* what, const GoldenCase& c, const Worst& worst) {
  std::printf("[ INFO     ] %-7s %-30s %s: %.3g (%s)\n", posenc_isa_name(posenc_active_isa()),
              c.name.c_str(), what, worst.error, worst.where.c_str());
}

const char* const kExpectedCases[] = {"llama3.1-8b",
                                      "qwen2.5-7b-yarn",
                                      "deepseek-v2-yarn",
                                      "phi3-mini-128k-longrope@4096",
                                      "phi3-mini-128k-longrope@4097",
                                      "llama2-7b-dynamic@4096",
                                      "llama2-7b-dynamic@4097",
                                      "llama2-7b-dynamic@1000001",
                                      "vicuna-7b-16k-linear",
                                      "gpt-neox-20b",
                                      "gpt-j-6b"};

TEST(RopeGoldenFile, HoldsEveryConfigurationWithItsProvenance) {
  const GoldenFile& file = Golden();
  EXPECT_FALSE(file.transformers_version.empty());
  EXPECT_FALSE(file.torch_version.empty());
  std::printf("[ INFO     ] golden data from transformers %s, torch %s\n",
              file.transformers_version.c_str(), file.torch_version.c_str());
  for (const char* name : kExpectedCases) {
    const auto it = std::find_if(file.cases.begin(), file.cases.end(),
                                 [&](const GoldenCase& c) { return c.name == name; });
    ASSERT_NE(it, file.cases.end()) << name;
    const GoldenCase& c = *it;
    EXPECT_EQ(c.inv_freq_f64.size(), c.rotary_dim / 2) << name;
    EXPECT_EQ(c.inv_freq_f32.size(), c.rotary_dim / 2) << name;
    for (int32_t p : {0, 1, 4095, 100000, 1000000})
      EXPECT_NE(std::find(c.positions.begin(), c.positions.end(), p), c.positions.end()) << name;
    for (const Rows* rows : {&c.q_f64, &c.q_f32, &c.k_f64, &c.k_f32})
      EXPECT_EQ(rows->size(), c.positions.size()) << name;
    EXPECT_EQ(c.q_in.size(), c.n_q) << name;
    EXPECT_EQ(c.k_in.size(), c.n_k) << name;
  }
}

TEST(RopeGolden, FrequenciesMatchHfInFloat64) {
  for (const GoldenCase& c : Golden().cases) {
    double worst = 0;
    PlanPtr plan = ScaledPlan(c);
    ASSERT_NE(plan, nullptr) << c.name;
    const std::vector<double> w = PlanFreqs(plan.get());
    ASSERT_EQ(w.size(), c.inv_freq_f64.size()) << c.name;
    for (size_t i = 0; i < w.size(); ++i) {
      const double rel = std::fabs(w[i] - c.inv_freq_f64[i]) / c.inv_freq_f64[i];
      EXPECT_LE(rel, kFreqRelBound)
          << c.name << " pair " << i << ": " << w[i] << " vs HF " << c.inv_freq_f64[i];
      worst = std::max(worst, rel);
    }
    std::printf("[ INFO     ] %-30s worst relative frequency difference from HF (float64): %.3g\n",
                c.name.c_str(), worst);
  }
}

TEST(RopeGolden, AttentionFactorMatchesHf) {
  for (const GoldenCase& c : Golden().cases) {
    PlanPtr plan = ScaledPlan(c);
    ASSERT_NE(plan, nullptr) << c.name;
    EXPECT_NEAR(posenc_rope_plan_attention_factor(plan.get()), c.attention_factor,
                1e-15 * c.attention_factor)
        << c.name;
  }
}

// The float32 recipe (posenc_rope_plan_create_hf_f32): every frequency bitwise HF's own
// float32 inv_freq, so that POSENC_ROPE_F32_ANGLES forms HF's float32 angles exactly.
// hf_rope_golden.txt's configurations (every scaling type) under torch's AVX512 and AVX2
// kernels (they agree on these shapes); hf_f32_pow_golden.txt: the default type under each
// capability, on shapes where they differ. Skipped by name on an x86 CPU without FMA, where
// the call must say POSENC_ERR_UNSUPPORTED.
#ifndef POSENC_HF_F32_POW_GOLDEN_FILE
#error "POSENC_HF_F32_POW_GOLDEN_FILE must name tests/data/hf_f32_pow_golden.txt"
#endif

// The plan's frequencies against HF's float32 ones: the number that differ (each reported).
size_t CountDifferences(const posenc_rope_plan* plan, const std::vector<double>& hf,
                        const std::string& what) {
  const std::vector<double> w = PlanFreqs(plan);
  EXPECT_EQ(w.size(), hf.size()) << what;
  size_t differ = 0;
  for (size_t i = 0; i < w.size() && i < hf.size(); ++i)
    if (w[i] != hf[i]) {
      ++differ;
      ADD_FAILURE() << what << " pair " << i << ": " << w[i] << " vs HF float32 " << hf[i];
    }
  return differ;
}

TEST(RopeGolden, Float32RecipeIsHfFloat32InvFreqBitForBit) {
  for (unsigned lanes : {16u, 8u})
    for (const GoldenCase& c : Golden().cases) {
      const posenc_rope_scaling scaling = ScalingOf(c);
      posenc_rope_plan* raw = nullptr;
      const posenc_status st =
          posenc_rope_plan_create_hf_f32(&raw, c.rotary_dim, c.base, &scaling, lanes);
      if (st == POSENC_ERR_UNSUPPORTED) {
        EXPECT_EQ(raw, nullptr);
        GTEST_SKIP() << "no FMA on this CPU: posenc_rope_plan_create_hf_f32 is unsupported";
      }
      ASSERT_EQ(st, POSENC_OK) << c.name;
      const PlanPtr plan(raw);
      EXPECT_EQ(CountDifferences(plan.get(), c.inv_freq_f32, c.name), 0u) << c.name;
      EXPECT_NEAR(posenc_rope_plan_attention_factor(plan.get()), c.attention_factor,
                  1e-15 * c.attention_factor)
          << c.name;
    }
}

TEST(RopeGolden, Float32RecipeFollowsTorchsCpuCapability) {
  FILE* in = std::fopen(POSENC_HF_F32_POW_GOLDEN_FILE, "rb");
  ASSERT_NE(in, nullptr) << "cannot read " << POSENC_HF_F32_POW_GOLDEN_FILE;
  std::string text;
  char buf[4096];
  for (size_t got; (got = std::fread(buf, 1, sizeof buf, in)) > 0;) text.append(buf, got);
  std::fclose(in);
  // Whitespace-separated words, line by line (no iostreams: the MSan build's C++ library is
  // not instrumented).
  size_t cases = 0, skipped = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end =
        text.find('\n', pos) == std::string::npos ? text.size() : text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    std::vector<std::string> words;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && line[i] == ' ') ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ') ++j;
      if (j > i) words.push_back(line.substr(i, j - i));
      i = j;
    }
    if (words.empty() || words[0] != "case") continue;
    ASSERT_GE(words.size(), 6u) << line;
    const std::string capability = words[1];
    const unsigned lanes = static_cast<unsigned>(std::strtoul(words[2].c_str(), nullptr, 10));
    const double theta = std::strtod(words[3].c_str(), nullptr);
    const size_t head_dim = std::strtoul(words[4].c_str(), nullptr, 10);
    const size_t n = std::strtoul(words[5].c_str(), nullptr, 10);
    ASSERT_EQ(words.size(), 6 + n) << line;
    std::vector<double> hf(n);
    for (size_t i = 0; i < n; ++i) hf[i] = std::strtod(words[6 + i].c_str(), nullptr);
    posenc_rope_plan* raw = nullptr;
    const posenc_status st = posenc_rope_plan_create_hf_f32(&raw, head_dim, theta, nullptr, lanes);
    if (st == POSENC_ERR_UNSUPPORTED) {  // no FMA: only where some pair needs SLEEF
      EXPECT_TRUE(lanes != 0 && head_dim / 2 >= 2 * lanes) << line;
      ++skipped;
      continue;
    }
    ASSERT_EQ(st, POSENC_OK) << capability << " " << theta << " " << head_dim;
    const PlanPtr plan(raw);
    const std::string what =
        capability + " theta " + std::to_string(theta) + " head_dim " + std::to_string(head_dim);
    EXPECT_EQ(CountDifferences(plan.get(), hf, what), 0u) << what;
    ++cases;
  }
  EXPECT_GT(cases + skipped, 90u);
  if (skipped) std::printf("[ INFO     ] %zu cases need FMA, which this CPU lacks\n", skipped);
}

class RopeGoldenTest : public EveryIsaTest {};

TEST_P(RopeGoldenTest, AccurateModeMatchesHfFloat64) {
  for (const GoldenCase& c : Golden().cases) {
    Worst worst;
    PlanPtr plan = ScaledPlan(c);
    ASSERT_NE(plan, nullptr) << c.name;
    const std::vector<double> w = PlanFreqs(plan.get());
    double widest_drift = 0;  // |p| * |dw|: the angle the frequency difference makes
    const ExtraBound extra = [&](size_t t, size_t i) {
      const double p = std::fabs(static_cast<double>(c.positions[t]));
      widest_drift = std::max(widest_drift, p * std::fabs(w[i] - c.inv_freq_f64[i]));
      return p * (std::fabs(w[i] - c.inv_freq_f64[i]) + c.inv_freq_f64[i] * 0x1p-52);
    };
    const Rotated got = RotateWithPosenc(c, plan.get(), LayoutFlag(c));
    CompareView(c, "q", got.q, c.q_f64, c.q_in, kAccurateBound, extra, worst);
    CompareView(c, "k", got.k, c.k_f64, c.k_in, kAccurateBound, extra, worst);
    Report("accurate vs HF float64", c, worst);
    std::printf("[ INFO     ] %-7s %-30s widest |p| * |w - w_hf|: %.3g rad\n",
                posenc_isa_name(posenc_active_isa()), c.name.c_str(), widest_drift);
  }
}

TEST_P(RopeGoldenTest, CompatibleModeOnHfInvFreqMatchesHfFloat32Recipe) {
  for (const GoldenCase& c : Golden().cases) {
    Worst worst;
    posenc_rope_plan* raw = nullptr;
    ASSERT_EQ(posenc_rope_plan_create_from_freqs(&raw, c.rotary_dim, c.inv_freq_f32.data(),
                                                 c.attention_factor),
              POSENC_OK)
        << c.name;
    PlanPtr plan(raw);
    const Rotated got = RotateWithPosenc(c, plan.get(), LayoutFlag(c) | POSENC_ROPE_F32_ANGLES);
    const ExtraBound none = [](size_t, size_t) { return 0.0; };
    CompareView(c, "q", got.q, c.q_f32, c.q_in, kCompatBound, none, worst);
    CompareView(c, "k", got.k, c.k_f32, c.k_in, kCompatBound, none, worst);
    Report("F32_ANGLES, HF's inv_freq, vs HF float32", c, worst);
  }
}

TEST_P(RopeGoldenTest, CompatibleModeOnScaledPlanMatchesHfFloat32Recipe) {
  for (const GoldenCase& c : Golden().cases) {
    PlanPtr plan = ScaledPlan(c);
    ASSERT_NE(plan, nullptr) << c.name;
    const std::vector<double> w = PlanFreqs(plan.get());
    double widest_gap = 0;
    const ExtraBound angle_gap = [&](size_t t, size_t i) {
      const float ours = Float32Angle(c.positions[t], static_cast<float>(w[i]));
      const float hf = Float32Angle(c.positions[t], static_cast<float>(c.inv_freq_f32[i]));
      const double gap = std::fabs(static_cast<double>(ours) - static_cast<double>(hf));
      widest_gap = std::max(widest_gap, gap);
      return gap;
    };
    Worst worst;
    const Rotated got = RotateWithPosenc(c, plan.get(), LayoutFlag(c) | POSENC_ROPE_F32_ANGLES);
    CompareView(c, "q", got.q, c.q_f32, c.q_in, kCompatBound, angle_gap, worst);
    CompareView(c, "k", got.k, c.k_f32, c.k_in, kCompatBound, angle_gap, worst);
    Report("F32_ANGLES, scaled plan, vs HF float32", c, worst);
    std::printf("[ INFO     ] %-7s %-30s widest float32 angle gap from HF's inv_freq: %.3g rad\n",
                posenc_isa_name(posenc_active_isa()), c.name.c_str(), widest_gap);
  }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeGoldenTest);

}  // namespace
}  // namespace posenc_test
