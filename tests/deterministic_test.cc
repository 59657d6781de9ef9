// The deterministic mode (POSENC_ROPE_DETERMINISTIC, POSENC_SINUSOID_DETERMINISTIC): results
// bitwise identical on every ISA and CPU.
//  - Golden digests: each case's output bytes hashed (FNV-1a, 64 bits) and compared with a
//    digest computed once on the scalar variant (POSENC_PRINT_DIGESTS=1 prints the table);
//    the suite runs on every ISA natively and in CI's emulated runs (qemu-aarch64 NEON,
//    Haswell, Nehalem), so a digest that holds everywhere is a result identical everywhere.
//  - In one process: every case on the ISA under test bitwise equal to the scalar variant.
//  - Accuracy: cos/sin within 2^-22 of the exact angle's (the rotation of (1, 0)).
// Inputs come from a fixed 64-bit LCG (no library distribution, whose algorithm could
// differ between C++ libraries), so the cases are the same bytes on every platform.
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "test_support.h"

namespace posenc_test {
namespace {

constexpr unsigned kRopeDet = POSENC_ROPE_DETERMINISTIC;
constexpr unsigned kSinDet = POSENC_SINUSOID_DETERMINISTIC;

struct Lcg {
  uint64_t x;
  uint32_t Next() {
    x = x * 6364136223846793005u + 1442695040888963407u;
    return static_cast<uint32_t>(x >> 32);
  }
  float Uniform() {  // exact: 24 random bits scaled into [-2, 2)
    return static_cast<float>(Next() >> 8) * 0x1p-22f - 2.0f;
  }
  int32_t Position() {  // small ones, runs across anchors, and the whole int32 range
    const uint32_t r = Next();
    if (r % 3 == 0) return static_cast<int32_t>(Next());
    return static_cast<int32_t>(Next() % 5000) - 1000;
  }
};

std::vector<float> Floats(size_t n, uint64_t seed) {
  Lcg g{seed};
  std::vector<float> v(n);
  for (float& f : v) f = g.Uniform();
  return v;
}
std::vector<uint16_t> Halves(size_t n, uint64_t seed, bool bf16) {
  Lcg g{seed};
  std::vector<uint16_t> v(n);
  for (uint16_t& h : v) {  // random finite values of magnitude < 4 with an exact encoding
    const uint32_t r = g.Next();
    h = bf16 ? static_cast<uint16_t>(0x3c00u + (r & 0x3ffu)) ^ static_cast<uint16_t>(r & 0x8000u)
             : static_cast<uint16_t>(0x2c00u + (r & 0x1fffu)) ^ static_cast<uint16_t>(r & 0x8000u);
  }
  return v;
}
std::vector<int32_t> Positions(size_t n, uint64_t seed) {
  Lcg g{seed};
  std::vector<int32_t> v(n);
  for (int32_t& p : v) p = g.Position();
  return v;
}

uint64_t Fnv1a(const void* data, size_t bytes) {
  uint64_t h = 14695981039346656037u;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211u;
  return h;
}

PlanPtr FromFreqs(size_t R, double att) {
  std::vector<double> w(R / 2);
  for (size_t i = 0; i < R / 2; ++i) w[i] = 1.0 / (1.0 + 3.0 * static_cast<double>(i));
  posenc_rope_plan* p = nullptr;
  EXPECT_EQ(posenc_rope_plan_create_from_freqs(&p, R, w.data(), att), POSENC_OK);
  return PlanPtr(p);
}

PlanPtr Yarn(size_t R) {
  posenc_rope_scaling s{};
  s.type = POSENC_ROPE_SCALING_YARN;
  s.factor = 8.0;
  s.original_max_position_embeddings = 4096;
  posenc_rope_plan* p = nullptr;
  EXPECT_EQ(posenc_rope_plan_create_scaled(&p, R, 500000.0, &s), POSENC_OK);
  return PlanPtr(p);
}

struct SinusoidPlanDeleter {
  void operator()(posenc_sinusoid_plan* p) const { posenc_sinusoid_plan_destroy(p); }
};
using SinusoidPtr = std::unique_ptr<posenc_sinusoid_plan, SinusoidPlanDeleter>;
SinusoidPtr Sinusoid(size_t dim) {
  posenc_sinusoid_plan* p = nullptr;
  EXPECT_EQ(posenc_sinusoid_plan_create(&p, dim, 10000.0), POSENC_OK);
  return SinusoidPtr(p);
}

// A case: runs on the active ISA and returns its output bytes.
struct Case {
  const char* name;
  std::function<std::vector<unsigned char>()> run;
};

template <typename T>
std::vector<unsigned char> Bytes(const std::vector<T>& v) {
  std::vector<unsigned char> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// In-place RoPE of L tokens of H heads of R (head_dim D) on f32 data.
std::vector<unsigned char> RopeF32(const posenc_rope_plan* plan, size_t R, size_t D, size_t H,
                                   size_t L, unsigned flags, uint64_t seed) {
  std::vector<float> x = Floats(L * H * D, seed);
  const std::vector<int32_t> pos = Positions(L, seed + 1);
  const posenc_rope_tensor q = {x.data(), H, H * D, D};
  EXPECT_EQ(posenc_rope_f32(plan, D, L, pos.data(), 0, &q, nullptr, flags | kRopeDet), POSENC_OK);
  (void)R;
  return Bytes(x);
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back({"rope_f32_neox_R128", [] {
                     const PlanPtr p = MakePlan(128, 10000.0, 1.0);
                     return RopeF32(p.get(), 128, 128, 3, 40, 0, 1);
                   }});
  cases.push_back({"rope_f32_gptj_inverse_freqs_att", [] {
                     const PlanPtr p = FromFreqs(64, 0.7);
                     return RopeF32(p.get(), 64, 72, 2, 33, POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE,
                                    2);
                   }});
  cases.push_back({"rope_f32_neox_f32_angles", [] {
                     const PlanPtr p = MakePlan(96, 500000.0, 1.0);
                     return RopeF32(p.get(), 96, 96, 2, 37, POSENC_ROPE_F32_ANGLES, 3);
                   }});
  cases.push_back({"rope_f32_neox_R1026", [] {
                     const PlanPtr p = MakePlan(1026, 10000.0, 1.0);
                     return RopeF32(p.get(), 1026, 1030, 1, 9, 0, 4);
                   }});
  cases.push_back({"rope_f32_neox_yarn", [] {
                     const PlanPtr p = Yarn(128);
                     return RopeF32(p.get(), 128, 128, 2, 25, 0, 5);
                   }});
  for (int bf16 = 0; bf16 < 2; ++bf16)
    cases.push_back({bf16 ? "rope_bf16_neox" : "rope_f16_gptj", [bf16] {
                       const PlanPtr p = MakePlan(64, 10000.0, 1.0);
                       std::vector<uint16_t> x = Halves(30 * 2 * 64, 6 + bf16, bf16);
                       const std::vector<int32_t> pos = Positions(30, 8);
                       const posenc_rope_tensor q = {x.data(), 2, 128, 64};
                       const unsigned f = (bf16 ? 0u : unsigned{POSENC_ROPE_GPTJ}) | kRopeDet;
                       EXPECT_EQ(
                           bf16 ? posenc_rope_bf16(p.get(), 64, 30, pos.data(), 0, &q, nullptr, f)
                                : posenc_rope_f16(p.get(), 64, 30, pos.data(), 0, &q, nullptr, f),
                           POSENC_OK);
                       return Bytes(x);
                     }});
  cases.push_back({"mrope_f32_interleaved", [] {
                     const PlanPtr p = MakePlan(128, 1000000.0, 1.0);
                     std::vector<float> x = Floats(20 * 2 * 128, 9);
                     std::vector<int32_t> pos = Positions(60, 10);
                     const size_t sections[3] = {24, 20, 20};
                     const posenc_rope_tensor q = {x.data(), 2, 256, 128};
                     EXPECT_EQ(posenc_mrope_f32(p.get(), sections, 128, 20, pos.data(), &q, nullptr,
                                                POSENC_ROPE_MROPE_INTERLEAVED | kRopeDet),
                               POSENC_OK);
                     return Bytes(x);
                   }});
  cases.push_back({"rerotate_f32_two_plans", [] {
                     const PlanPtr from = MakePlan(64, 10000.0, 1.0);
                     const PlanPtr to = MakePlan(64, 40000.0, 1.0);
                     std::vector<float> x = Floats(25 * 64, 11);
                     const std::vector<int32_t> pos = Positions(25, 12);
                     const posenc_rope_tensor k = {x.data(), 1, 64, 64};
                     EXPECT_EQ(posenc_rope_rerotate_f32(from.get(), pos.data(), 0, to.get(),
                                                        nullptr, 7, 64, 25, &k, kRopeDet),
                               POSENC_OK);
                     return Bytes(x);
                   }});
  cases.push_back({"factors_apply_f32_to_f16", [] {
                     const PlanPtr p = MakePlan(128, 10000.0, 1.0);
                     const std::vector<float> src = Floats(12 * 4 * 128, 13);
                     const std::vector<int32_t> pos = Positions(12, 14);
                     const size_t bytes = posenc_rope_factors_bytes(128, 12, kRopeDet);
                     std::vector<float> storage(bytes / sizeof(float));
                     posenc_rope_factors f;
                     EXPECT_EQ(posenc_rope_factors_compute(p.get(), 12, pos.data(), 0, kRopeDet,
                                                           storage.data(), bytes, &f),
                               POSENC_OK);
                     std::vector<uint16_t> dst(12 * 4 * 128);
                     const posenc_rope_view sv = {
                         const_cast<float*>(src.data()), POSENC_DTYPE_F32, 4, 512, 128, 0};
                     const posenc_rope_view dv = {dst.data(), POSENC_DTYPE_F16, 4, 512, 128, 0};
                     EXPECT_EQ(posenc_rope_apply(&f, 0, 0, 128, 1, 12, &sv, &dv, kRopeDet),
                               POSENC_OK);
                     std::vector<unsigned char> out = Bytes(storage);
                     const std::vector<unsigned char> d = Bytes(dst);
                     out.insert(out.end(), d.begin(), d.end());
                     return out;
                   }});
  cases.push_back({"sinusoid_fill_f32_interleaved", [] {
                     const SinusoidPtr p = Sinusoid(128);
                     std::vector<float> out(100 * 128);
                     EXPECT_EQ(
                         posenc_sinusoid_fill_f32(p.get(), 100, nullptr, 0, out.data(), 0, kSinDet),
                         POSENC_OK);
                     return Bytes(out);
                   }});
  cases.push_back({"sinusoid_fill_bf16_sin_cos_odd", [] {
                     const SinusoidPtr p = Sinusoid(63);
                     const std::vector<int32_t> pos = Positions(50, 15);
                     std::vector<uint16_t> out(50 * 63);
                     EXPECT_EQ(posenc_sinusoid_fill_bf16(p.get(), 50, pos.data(), 0, out.data(), 0,
                                                         POSENC_SINUSOID_SIN_COS | kSinDet),
                               POSENC_OK);
                     return Bytes(out);
                   }});
  cases.push_back({"sinusoid_add_f16_cos_sin", [] {
                     const SinusoidPtr p = Sinusoid(1030);
                     std::vector<uint16_t> x = Halves(7 * 1030, 16, false);
                     EXPECT_EQ(posenc_sinusoid_add_f16(p.get(), 7, nullptr, -3000, x.data(), 0,
                                                       POSENC_SINUSOID_COS_SIN | kSinDet),
                               POSENC_OK);
                     return Bytes(x);
                   }});
  cases.push_back({"sinusoid_timesteps_f32_f32_angles", [] {
                     const SinusoidPtr p = Sinusoid(64);
                     std::vector<float> t = Floats(40, 17);
                     for (float& v : t) v *= 500.0f;
                     std::vector<float> out(40 * 64);
                     EXPECT_EQ(
                         posenc_sinusoid_fill_timesteps_f32(p.get(), 40, t.data(), out.data(), 0,
                                                            POSENC_SINUSOID_F32_ANGLES | kSinDet),
                         POSENC_OK);
                     return Bytes(out);
                   }});
  return cases;
}

// Computed once on the scalar variant (POSENC_ISA=scalar POSENC_PRINT_DIGESTS=1).
struct Golden {
  const char* name;
  uint64_t digest;
};
const Golden kGolden[] = {
#include "data/deterministic_digests.inc"
};

class DeterministicTest : public EveryIsaTest {};

TEST_P(DeterministicTest, EveryCaseMatchesItsGoldenDigestAndTheScalarVariant) {
  const bool print = std::getenv("POSENC_PRINT_DIGESTS") != nullptr;
  for (const Case& c : Cases()) {
    const std::vector<unsigned char> out = c.run();
    const uint64_t digest = Fnv1a(out.data(), out.size());
    if (print) std::printf("    {\"%s\", 0x%016llxu},\n", c.name, (unsigned long long)digest);
    bool found = false;
    for (const Golden& g : kGolden)
      if (std::string(g.name) == c.name) {
        found = true;
        EXPECT_EQ(digest, g.digest) << c.name << ": not the scalar variant's golden result";
      }
    EXPECT_TRUE(found) << c.name << ": no golden digest";
    ASSERT_EQ(posenc_set_isa(POSENC_ISA_SCALAR), POSENC_OK);
    const std::vector<unsigned char> scalar = c.run();
    ASSERT_EQ(posenc_set_isa(isa()), POSENC_OK);
    EXPECT_TRUE(out == scalar) << c.name << ": differs from the scalar variant";
  }
}

// cos and sin as the rotation of (1, 0): within 2^-22 of those of the exact angle, for
// positions over the whole range, both layouts.
TEST_P(DeterministicTest, CosSinWithinTheContract) {
  const size_t R = 128, L = 400;
  const PlanPtr plan = MakePlan(R, 10000.0, 1.0);
  const std::vector<double> w = PlanFreqs(plan.get());
  const std::vector<int32_t> pos = Positions(L, 99);
  for (unsigned layout : {0u, 1u}) {
    std::vector<float> x(L * R, 0.0f);
    for (size_t t = 0; t < L; ++t)
      for (size_t i = 0; i < R / 2; ++i) x[t * R + (layout ? 2 * i : i)] = 1.0f;
    const posenc_rope_tensor q = {x.data(), 1, R, R};
    ASSERT_EQ(posenc_rope_f32(plan.get(), R, L, pos.data(), 0, &q, nullptr, layout | kRopeDet),
              POSENC_OK);
    double worst = 0;
    for (size_t t = 0; t < L; ++t)
      for (size_t i = 0; i < R / 2; ++i) {
        const long double a = ExactReducedAngle(pos[t], w[i]);
        const float c = x[t * R + (layout ? 2 * i : i)];
        const float s = x[t * R + (layout ? 2 * i + 1 : i + R / 2)];
        worst = std::fmax(worst, static_cast<double>(std::fabs(c - std::cos(a))));
        worst = std::fmax(worst, static_cast<double>(std::fabs(s - std::sin(a))));
      }
    EXPECT_LE(worst, std::ldexp(1.0, -22)) << "layout " << layout;
  }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(DeterministicTest);

}  // namespace
}  // namespace posenc_test
