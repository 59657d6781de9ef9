// ggml's M-RoPE (ggml_rope_multi: GGML_ROPE_TYPE_MROPE, IMROPE and VISION) through
// posenc_rope_plan_create_ggml_mode and posenc_mrope_* with POSENC_ROPE_MROPE_GGML:
//  - end to end on every ISA, against a long double transcription of ggml's CPU code
//    written here (ggml_mrope_cache_init: four running thetas, the sector of pair i modulo
//    the sections' sum, the interleaved and contiguous assignments, the vision mode's
//    independent sections with ggml's chain of restarts; rope_yarn; rotate_pairs with the
//    vision mode's pairs (i, i + n_dims) over the whole head), within 1e-6 (inputs in
//    [-0.5, 0.5], as rope_ggml_test.cc);
//  - llama.cpp's text tokens (t = h = w = p, e = 0) under Qwen3-VL's {24, 20, 20, 0}: pairs
//    61 and 62 take e, where HF's rule (POSENC_ROPE_MROPE_INTERLEAVED alone) takes t;
//  - the out-of-place form and the factor path give posenc_mrope_f32's floats;
//  - every refusal: unknown modes and sections in the plan parameters, a plan of an M-RoPE
//    mode in the one-position forms, calls without the flag, with other sections or another
//    interleaving (status, nothing written).
#include <posenc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "test_support.h"

namespace posenc_test {
namespace {

constexpr int kGgmlNeox = 2, kGgmlMrope = 8, kGgmlVision = 24, kGgmlImrope = 40;
constexpr double kRotationBound = 1e-6;

struct MropeCase {
  std::string name;
  int mode = kGgmlMrope;
  size_t head_dim = 0, n_dims = 0;  // ggml's n_dims (VISION: head_dim / 2)
  int sections[4] = {0, 0, 0, 0};
  double freq_base = 10000, freq_scale = 1, ext_factor = 0, attn_factor = 1;
  double beta_fast = 32, beta_slow = 1;
  size_t n_ctx_orig = 0;
  std::vector<float> freq_factors;

  posenc_rope_ggml_params params() const {
    posenc_rope_ggml_params g = {};
    g.n_dims = n_dims, g.freq_base = freq_base, g.freq_scale = freq_scale;
    g.ext_factor = ext_factor, g.attn_factor = attn_factor, g.beta_fast = beta_fast;
    g.beta_slow = beta_slow, g.n_ctx_orig = n_ctx_orig;
    g.freq_factors = freq_factors.empty() ? nullptr : freq_factors.data();
    g.mode = mode;
    for (int r = 0; r < 4; ++r) g.sections[r] = sections[r];
    return g;
  }
  // The pairs ggml rotates: n_dims / 2, or n_dims in the vision mode (offset n_dims).
  size_t pairs() const { return mode == kGgmlVision ? n_dims : n_dims / 2; }
  std::vector<size_t> posenc_sections() const {
    return {size_t(sections[0]), size_t(sections[1]), size_t(sections[2]), size_t(sections[3])};
  }
};

std::vector<MropeCase> Cases() {
  std::vector<MropeCase> cases;
  MropeCase c;
  c.name = "qwen2vl text {16,24,24,0}", c.mode = kGgmlMrope, c.head_dim = 128, c.n_dims = 128;
  c.sections[0] = 16, c.sections[1] = 24, c.sections[2] = 24, c.freq_base = 1000000;
  cases.push_back(c);
  c = MropeCase();
  c.name = "qwen3vl imrope {24,20,20,0}", c.mode = kGgmlImrope, c.head_dim = 128, c.n_dims = 128;
  c.sections[0] = 24, c.sections[1] = 20, c.sections[2] = 20, c.freq_base = 5000000;
  cases.push_back(c);
  c = MropeCase();
  c.name = "mrope sections wrap {3,5,4,2}, partial", c.mode = kGgmlMrope, c.head_dim = 72;
  c.n_dims = 64, c.sections[0] = 3, c.sections[1] = 5, c.sections[2] = 4, c.sections[3] = 2;
  cases.push_back(c);
  c = MropeCase();
  c.name = "imrope with e {6,5,5,4}, YaRN", c.mode = kGgmlImrope, c.head_dim = 64, c.n_dims = 64;
  c.sections[0] = 6, c.sections[1] = 5, c.sections[2] = 5, c.sections[3] = 4;
  c.freq_scale = 0.25, c.ext_factor = 1, c.n_ctx_orig = 4096, c.attn_factor = 0.9;
  cases.push_back(c);
  c = MropeCase();
  c.name = "vision qwen2vl {20,20,20,20}", c.mode = kGgmlVision, c.head_dim = 80, c.n_dims = 40;
  c.sections[0] = c.sections[1] = c.sections[2] = c.sections[3] = 20;
  cases.push_back(c);
  c = MropeCase();
  c.name = "vision restarts {8,0,6,3}, freq_factors", c.mode = kGgmlVision, c.head_dim = 64;
  c.n_dims = 32, c.sections[0] = 8, c.sections[2] = 6, c.sections[3] = 3;
  c.freq_factors.resize(32);
  for (size_t i = 0; i < 32; ++i) c.freq_factors[i] = 1.0f + 0.125f * float(i % 5);
  cases.push_back(c);
  return cases;
}

// ggml_mrope_cache_init and rope_yarn in long double for one token at positions p[4]:
// (cos, sin) * mscale of each pair, sin negated backward.
std::vector<std::pair<long double, long double>> GgmlMropeCache(const MropeCase& c,
                                                                const int32_t p[4], bool backward) {
  const long double pi = 3.141592653589793238462643383279502884L;
  const long double n_dims = static_cast<long double>(c.n_dims), base = c.freq_base;
  const long double freq_scale = c.freq_scale, ext = c.ext_factor;
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
  const int* s = c.sections;
  const int sect_dims = s[0] + s[1] + s[2] + s[3], sec_w = s[0] + s[1], sec_e = sec_w + s[2];
  const bool vision = c.mode == kGgmlVision, imrope = c.mode == kGgmlImrope;
  long double th_t = p[0], th_h = p[1], th_w = p[2], th_e = p[3];
  std::vector<std::pair<long double, long double>> cache;
  for (size_t k = 0; k < c.pairs(); ++k) {
    const long double ff = c.freq_factors.empty() ? 1.0L : c.freq_factors[k];
    const int sector = int(k % size_t(sect_dims));
    if (vision) {
      if (sector == 0)
        th_t = p[0];
      else if (sector == s[0])
        th_h = p[1];
      else if (sector == sec_w)
        th_w = p[2];
      else if (sector == sec_e)
        th_e = p[3];
    }
    long double theta = th_t;
    if (imrope) {
      if (sector % 3 == 1 && sector < 3 * s[1])
        theta = th_h;
      else if (sector % 3 == 2 && sector < 3 * s[2])
        theta = th_w;
      else if (sector % 3 == 0 && sector < 3 * s[0])
        theta = th_t;
      else
        theta = th_e;
    } else {
      if (sector >= s[0] && sector < sec_w)
        theta = th_h;
      else if (sector >= sec_w && sector < sec_w + s[2])
        theta = th_w;
      else if (sector >= sec_w + s[2])
        theta = th_e;
    }
    const long double theta_extrap = theta / ff, theta_interp = freq_scale * theta_extrap;
    long double t = theta_interp;
    if (ext != 0) {
      const long double y = (static_cast<long double>(k) - low) / std::max(0.001L, high - low);
      const long double ramp_mix = (1 - std::min(1.0L, std::max(0.0L, y))) * ext;
      t = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
    }
    cache.emplace_back(std::cos(t) * mscale, (backward ? -1 : 1) * std::sin(t) * mscale);
    th_t *= theta_scale, th_h *= theta_scale, th_w *= theta_scale, th_e *= theta_scale;
  }
  return cache;
}

// Four rows of positions for n tokens: text tokens (t = h = w, e = 0, as llama.cpp gives
// them), image-like tokens (a grid), and tokens with four distinct positions.
std::vector<int32_t> FourRows(size_t n) {
  std::vector<int32_t> p(4 * n);
  for (size_t t = 0; t < n; ++t) {
    int32_t row[4];
    if (t % 3 == 0) {
      const int32_t q = int32_t(100 + 37 * t);
      row[0] = row[1] = row[2] = q, row[3] = 0;
    } else if (t % 3 == 1) {
      row[0] = 7, row[1] = int32_t(7 + t / 4), row[2] = int32_t(7 + t % 4), row[3] = 0;
    } else {
      row[0] = int32_t(1000 * t), row[1] = -int32_t(t), row[2] = int32_t(3 * t + 1),
      row[3] = int32_t(100000 + t);
    }
    for (int r = 0; r < 4; ++r) p[size_t(r) * n + t] = row[r];
  }
  return p;
}

PlanPtr GgmlPlan(const MropeCase& c, unsigned* flags) {
  posenc_rope_plan* plan = nullptr;
  const posenc_rope_ggml_params g = c.params();
  EXPECT_EQ(posenc_rope_plan_create_ggml_mode(&plan, &g, flags), POSENC_OK)
      << c.name << ": " << posenc_last_error();
  return PlanPtr(plan);
}

// Checks out (rotated from in: n tokens of `heads` heads of c.head_dim) against ggml.
void CheckAgainstGgml(const MropeCase& c, const std::vector<int32_t>& pos, size_t n, size_t heads,
                      bool backward, const std::vector<float>& in, const float* out,
                      const char* which) {
  const size_t d = c.head_dim, np = c.pairs();
  for (size_t t = 0; t < n; ++t) {
    const int32_t p[4] = {pos[t], pos[n + t], pos[2 * n + t], pos[3 * n + t]};
    const auto cache = GgmlMropeCache(c, p, backward);
    for (size_t h = 0; h < heads; ++h) {
      const size_t row = (t * heads + h) * d;
      for (size_t k = 0; k < np; ++k) {
        const long double x0 = in[row + k], x1 = in[row + k + np];
        const auto [cs, sn] = cache[k];
        EXPECT_NEAR(out[row + k], double(x0 * cs - x1 * sn), kRotationBound)
            << c.name << " " << which << " token " << t << " head " << h << " pair " << k;
        EXPECT_NEAR(out[row + k + np], double(x0 * sn + x1 * cs), kRotationBound)
            << c.name << " " << which << " token " << t << " head " << h << " pair " << k;
      }
      for (size_t e = 2 * np; e < d; ++e)
        EXPECT_TRUE(BitwiseEqual(out[row + e], in[row + e]))
            << c.name << " " << which << " element " << e << " written";
    }
  }
}

class RopeGgmlMropeTest : public EveryIsaTest {};

TEST_P(RopeGgmlMropeTest, RotatesAsGgmlInEveryMropeMode) {
  constexpr size_t kN = 13, kQHeads = 2, kKHeads = 1;
  const std::vector<int32_t> pos = FourRows(kN);
  for (const MropeCase& c : Cases())
    for (bool backward : {false, true}) {
      unsigned flags = 0;
      PlanPtr plan = GgmlPlan(c, &flags);
      ASSERT_NE(plan, nullptr) << c.name;
      EXPECT_EQ(posenc_rope_plan_rotary_dim(plan.get()), 2 * c.pairs()) << c.name;
      EXPECT_TRUE(flags & POSENC_ROPE_MROPE_GGML) << c.name;
      if (backward) flags |= POSENC_ROPE_INVERSE;
      const size_t d = c.head_dim;
      const std::vector<float> q_in = RandomFloats(kN * kQHeads * d, 21, -0.5f, 0.5f);
      const std::vector<float> k_in = RandomFloats(kN * kKHeads * d, 22, -0.5f, 0.5f);
      AlignedFloats q(q_in.size()), k(k_in.size());
      std::memcpy(q.data(), q_in.data(), q_in.size() * sizeof(float));
      std::memcpy(k.data(), k_in.data(), k_in.size() * sizeof(float));
      posenc_rope_tensor qt = {q.data(), kQHeads, kQHeads * d, d};
      posenc_rope_tensor kt = {k.data(), kKHeads, kKHeads * d, d};
      const std::vector<size_t> sec = c.posenc_sections();
      ASSERT_EQ(posenc_mrope_f32(plan.get(), sec.data(), d, kN, pos.data(), &qt, &kt, flags),
                POSENC_OK)
          << c.name << ": " << posenc_last_error();
      CheckAgainstGgml(c, pos, kN, kQHeads, backward, q_in, q.data(), "q");
      CheckAgainstGgml(c, pos, kN, kKHeads, backward, k_in, k.data(), "k");

      // Out of place, and through the factor rows: the same floats.
      AlignedFloats y(q_in.size());
      const posenc_rope_view src = {
          const_cast<float*>(q_in.data()), POSENC_DTYPE_F32, kQHeads, kQHeads * d, d, 0};
      const posenc_rope_view dst = {y.data(), POSENC_DTYPE_F32, kQHeads, kQHeads * d, d, 0};
      ASSERT_EQ(posenc_mrope_out(plan.get(), sec.data(), d, 1, kN, pos.data(), &src, &dst, flags),
                POSENC_OK)
          << c.name << ": " << posenc_last_error();
      EXPECT_EQ(FirstBitwiseDifference(y, q), -1) << c.name << " mrope_out";
      const unsigned fflags = flags & ~unsigned{POSENC_ROPE_INVERSE};
      const size_t bytes = posenc_rope_factors_bytes(2 * c.pairs(), kN, fflags);
      ASSERT_GT(bytes, 0u);
      AlignedFloats storage(bytes / sizeof(float));
      posenc_rope_factors f;
      ASSERT_EQ(posenc_mrope_factors_compute(plan.get(), sec.data(), kN, pos.data(), fflags,
                                             storage.data(), bytes, &f),
                POSENC_OK)
          << c.name << ": " << posenc_last_error();
      AlignedFloats z(q_in.size());
      const posenc_rope_view zdst = {z.data(), POSENC_DTYPE_F32, kQHeads, kQHeads * d, d, 0};
      ASSERT_EQ(posenc_rope_apply(&f, 0, 0, d, 1, kN, &src, &zdst, flags), POSENC_OK)
          << c.name << ": " << posenc_last_error();
      CheckAgainstGgml(c, pos, kN, kQHeads, backward, q_in, z.data(), "apply");
    }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeGgmlMropeTest);

// llama.cpp's text tokens under Qwen3-VL's sections: ggml's rule sends pairs 61 and 62 to
// the fourth row (0 for text), HF's to the temporal one; every other pair agrees.
TEST(RopeGgmlMrope, Qwen3VlTextTokensDifferFromHfOnlyAtPairs61And62) {
  const MropeCase c = Cases()[1];
  unsigned flags = 0;
  PlanPtr plan = GgmlPlan(c, &flags);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(flags,
            unsigned{POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_MROPE_GGML});
  PlanPtr hf = MakePlan(128, c.freq_base, 1.0);
  constexpr size_t kN = 2;
  const std::vector<int32_t> pos = {500, 501, 500, 501, 500, 501, 0, 0};  // t, h, w, e
  const std::vector<float> in = RandomFloats(kN * 128, 5, -0.5f, 0.5f);
  AlignedFloats a(in.size()), b(in.size());
  std::memcpy(a.data(), in.data(), in.size() * sizeof(float));
  std::memcpy(b.data(), in.data(), in.size() * sizeof(float));
  posenc_rope_tensor at = {a.data(), 1, 128, 128}, bt = {b.data(), 1, 128, 128};
  const std::vector<size_t> sec4 = c.posenc_sections(), sec3 = {24, 20, 20};
  ASSERT_EQ(posenc_mrope_f32(plan.get(), sec4.data(), 128, kN, pos.data(), &at, nullptr, flags),
            POSENC_OK);
  ASSERT_EQ(posenc_mrope_f32(hf.get(), sec3.data(), 128, kN, pos.data(), &bt, nullptr,
                             POSENC_ROPE_MROPE_INTERLEAVED),
            POSENC_OK);
  for (size_t t = 0; t < kN; ++t)
    for (size_t k = 0; k < 64; ++k) {
      const bool same = BitwiseEqual(a[t * 128 + k], b[t * 128 + k]) &&
                        BitwiseEqual(a[t * 128 + k + 64], b[t * 128 + k + 64]);
      EXPECT_EQ(same, k != 61 && k != 62) << "token " << t << " pair " << k;
      if (k == 61 || k == 62) {  // e = 0: not rotated
        EXPECT_TRUE(BitwiseEqual(a[t * 128 + k], in[t * 128 + k])) << k;
        EXPECT_TRUE(BitwiseEqual(a[t * 128 + k + 64], in[t * 128 + k + 64])) << k;
      }
    }
}

// With its first three sections summing to R/2 and no fourth, ggml's contiguous rule is
// HF's (Qwen2-VL), bit for bit, whatever the fourth row holds.
TEST(RopeGgmlMrope, ContiguousSectionsSummingToHalfAreHfs) {
  PlanPtr plan = MakePlan(128, 1000000, 1.0);
  constexpr size_t kN = 9;
  std::vector<int32_t> pos = FourRows(kN);
  const std::vector<float> in = RandomFloats(kN * 2 * 128, 9, -1.0f, 1.0f);
  AlignedFloats a(in.size()), b(in.size());
  std::memcpy(a.data(), in.data(), in.size() * sizeof(float));
  std::memcpy(b.data(), in.data(), in.size() * sizeof(float));
  posenc_rope_tensor at = {a.data(), 2, 256, 128}, bt = {b.data(), 2, 256, 128};
  const size_t sec4[4] = {16, 24, 24, 0}, sec3[3] = {16, 24, 24};
  ASSERT_EQ(
      posenc_mrope_f32(plan.get(), sec4, 128, kN, pos.data(), &at, nullptr, POSENC_ROPE_MROPE_GGML),
      POSENC_OK);
  ASSERT_EQ(posenc_mrope_f32(plan.get(), sec3, 128, kN, pos.data(), &bt, nullptr, 0u), POSENC_OK);
  EXPECT_EQ(FirstBitwiseDifference(a, b), -1);
}

TEST(RopeGgmlMrope, EachModeGivesItsFlags) {
  const struct {
    int mode;
    unsigned flags;
  } cases[] = {
      {kGgmlMrope, POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_GGML},
      {kGgmlVision, POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_GGML},
      {kGgmlImrope, POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_MROPE_GGML}};
  for (const auto& c : cases) {
    unsigned flags = 12345u;
    EXPECT_EQ(posenc_rope_ggml_flags(c.mode, &flags), POSENC_OK) << c.mode;
    EXPECT_EQ(flags, c.flags) << c.mode;
  }
  for (const MropeCase& c : Cases()) {
    unsigned flags = 12345u, want = 0;
    PlanPtr plan = GgmlPlan(c, &flags);
    ASSERT_EQ(posenc_rope_ggml_flags(c.mode, &want), POSENC_OK);
    EXPECT_EQ(flags, want) << c.name;
  }
}

// The vision plan's frequencies: each section starts again from freq_base^0, except where a
// section follows an empty one (ggml's chain of restarts: its start is the empty section's).
TEST(RopeGgmlMrope, VisionFrequenciesRestartPerSection) {
  MropeCase c = Cases()[4];  // {20, 20, 20, 20}, n_dims 40: sections t and h are used
  unsigned flags = 0;
  PlanPtr plan = GgmlPlan(c, &flags);
  ASSERT_NE(plan, nullptr);
  const std::vector<double> w = PlanFreqs(plan.get());
  ASSERT_EQ(w.size(), 40u);
  for (size_t i = 0; i < 20; ++i) {
    const double want = std::pow(10000.0, -2.0 * double(i) / 40.0);
    EXPECT_NEAR(w[i], want, 1e-15 * want) << i;
    EXPECT_EQ(w[20 + i], w[i]) << i;
  }
  c.sections[0] = 4, c.sections[1] = 0, c.sections[2] = 16, c.sections[3] = 20;
  plan = GgmlPlan(c, &flags);
  ASSERT_NE(plan, nullptr);
  const std::vector<double> v = PlanFreqs(plan.get());
  // Sector 4 starts both h (empty) and w: the chain restarts h only, so w keeps running.
  for (size_t i = 0; i < 40; ++i) {
    const double e = i < 4 ? double(i) : i < 20 ? double(i) : double(i - 20);
    const double want = std::pow(10000.0, -2.0 * e / 40.0);
    EXPECT_NEAR(v[i], want, 1e-15 * want) << i;
  }
}

posenc_rope_plan* Poisoned() { return reinterpret_cast<posenc_rope_plan*>(uintptr_t{0x40}); }

TEST(RopeGgmlMrope, RejectsInvalidModesAndSectionsInThePlanParameters) {
  const MropeCase valid = Cases()[1];
  struct Change {
    const char* what;
    int mode;
    int s[4];
  };
  const Change changes[] = {
      {"mode 1", 1, {24, 20, 20, 0}},
      {"mode 10 (NEOX | MROPE)", 10, {24, 20, 20, 0}},
      {"mode -1", -1, {24, 20, 20, 0}},
      {"NEOX with sections", kGgmlNeox, {24, 20, 20, 0}},
      {"NORMAL with a fourth section", 0, {0, 0, 0, 4}},
      {"negative section", kGgmlImrope, {24, -20, 20, 0}},
      {"section above 2^20", kGgmlMrope, {(1 << 20) + 1, 0, 0, 0}},
      {"first three 0", kGgmlMrope, {0, 0, 0, 64}},
      {"vision first three 0", kGgmlVision, {0, 0, 0, 8}},
  };
  for (const Change& ch : changes) {
    posenc_rope_ggml_params g = valid.params();
    g.mode = ch.mode;
    for (int r = 0; r < 4; ++r) g.sections[r] = ch.s[r];
    posenc_rope_plan* plan = Poisoned();
    unsigned flags = 777u;
    EXPECT_EQ(posenc_rope_plan_create_ggml_mode(&plan, &g, &flags), POSENC_ERR_INVALID_ARGUMENT)
        << ch.what;
    EXPECT_EQ(plan, nullptr) << ch.what;
    EXPECT_EQ(flags, 777u) << ch.what;
    plan = Poisoned();
    EXPECT_EQ(posenc_rope_plan_create_ggml(&plan, &g), POSENC_ERR_INVALID_ARGUMENT) << ch.what;
    EXPECT_EQ(plan, nullptr) << ch.what;
  }
  // Vision: 2 n_dims above the largest rotary dimension; freq_factors hold n_dims values.
  posenc_rope_ggml_params g = Cases()[4].params();
  g.n_dims = (1u << 19) + 2;
  posenc_rope_plan* plan = Poisoned();
  EXPECT_EQ(posenc_rope_plan_create_ggml(&plan, &g), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  g = Cases()[5].params();
  std::vector<float> ff = Cases()[5].freq_factors;
  ff[31] = 0.0f;  // read with VISION (n_dims = 32 values), not without
  g.freq_factors = ff.data();
  plan = Poisoned();
  EXPECT_EQ(posenc_rope_plan_create_ggml(&plan, &g), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  unsigned flags = 0;
  plan = Poisoned();
  g = valid.params();
  EXPECT_EQ(posenc_rope_plan_create_ggml_mode(&plan, &g, nullptr), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  EXPECT_EQ(posenc_rope_plan_create_ggml_mode(&plan, nullptr, &flags), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_plan_create_ggml_mode(nullptr, &g, &flags), POSENC_ERR_INVALID_ARGUMENT);
}

TEST(RopeGgmlMrope, RefusesMismatchedCallsAndWritesNothing) {
  const MropeCase c = Cases()[1];  // IMROPE {24, 20, 20, 0}
  unsigned flags = 0;
  PlanPtr plan = GgmlPlan(c, &flags);
  ASSERT_NE(plan, nullptr);
  constexpr size_t kN = 3, kD = 128;
  const std::vector<int32_t> pos = FourRows(kN);
  const std::vector<float> in = RandomFloats(kN * kD, 3, -1.0f, 1.0f);
  AlignedFloats x(in.size());
  std::memcpy(x.data(), in.data(), in.size() * sizeof(float));
  posenc_rope_tensor xt = {x.data(), 1, kD, kD};
  const size_t good[4] = {24, 20, 20, 0}, other[4] = {24, 20, 20, 4}, hf[3] = {24, 20, 20};
  const posenc_rope_view src = {const_cast<float*>(in.data()), POSENC_DTYPE_F32, 1, kD, kD, 0};
  const posenc_rope_view dst = {x.data(), POSENC_DTYPE_F32, 1, kD, kD, 0};
  auto unchanged = [&](const char* what) {
    for (size_t i = 0; i < in.size(); ++i)
      ASSERT_TRUE(BitwiseEqual(x[i], in[i])) << what << ": element " << i << " written";
  };
  EXPECT_EQ(posenc_mrope_f32(plan.get(), hf, kD, kN, pos.data(), &xt, nullptr,
                             POSENC_ROPE_MROPE_INTERLEAVED),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(posenc_last_error(), "POSENC_ROPE_MROPE_GGML"), nullptr)
      << posenc_last_error();
  unchanged("without the flag");
  EXPECT_EQ(posenc_mrope_f32(plan.get(), other, kD, kN, pos.data(), &xt, nullptr, flags),
            POSENC_ERR_INVALID_ARGUMENT);
  unchanged("other sections");
  EXPECT_EQ(posenc_mrope_f32(plan.get(), good, kD, kN, pos.data(), &xt, nullptr,
                             flags & ~unsigned{POSENC_ROPE_MROPE_INTERLEAVED}),
            POSENC_ERR_INVALID_ARGUMENT);
  unchanged("without the interleaving");
  EXPECT_EQ(posenc_mrope_out(plan.get(), other, kD, 1, kN, pos.data(), &src, &dst, flags),
            POSENC_ERR_INVALID_ARGUMENT);
  unchanged("mrope_out, other sections");
  // The one-position forms refuse the plan.
  EXPECT_EQ(posenc_rope_f32(plan.get(), kD, kN, nullptr, 0, &xt, nullptr, POSENC_ROPE_NEOX),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(posenc_last_error(), "four position rows"), nullptr) << posenc_last_error();
  unchanged("rope_f32");
  EXPECT_EQ(posenc_rope_out(plan.get(), kD, 1, kN, nullptr, 0, &src, &dst, 0u),
            POSENC_ERR_INVALID_ARGUMENT);
  unchanged("rope_out");
  PlanPtr plain = MakePlan(kD, 10000, 1.0);
  EXPECT_EQ(
      posenc_rope_rerotate_f32(plain.get(), nullptr, 0, plan.get(), nullptr, 5, kD, kN, &xt, 0u),
      POSENC_ERR_INVALID_ARGUMENT);
  unchanged("rerotate");
  AlignedFloats storage(4096);
  posenc_rope_factors f;
  EXPECT_EQ(posenc_rope_factors_compute(plan.get(), 1, nullptr, 0, 0u, storage.data(),
                                        4096 * sizeof(float), &f),
            POSENC_ERR_INVALID_ARGUMENT);
  // ggml's rule on posenc's own plans: bad sections.
  const size_t zero3[4] = {0, 0, 0, 64}, huge[4] = {size_t{1} << 21, 0, 0, 0};
  EXPECT_EQ(posenc_mrope_f32(plain.get(), zero3, kD, kN, pos.data(), &xt, nullptr,
                             POSENC_ROPE_MROPE_GGML),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(
      posenc_mrope_f32(plain.get(), huge, kD, kN, pos.data(), &xt, nullptr, POSENC_ROPE_MROPE_GGML),
      POSENC_ERR_INVALID_ARGUMENT);
  unchanged("bad ggml sections");
}

}  // namespace
}  // namespace posenc_test
