// RoPE into an OCP FP8 E4M3 cache (posenc_rope_out_fp8), on every ISA:
//  - the scalar reference rope_fp8_e4m3_ref (kernels/rope.h) against an independent
//    construction: the 256 E4M3 codes decoded exactly as doubles, each float rounded to the
//    nearest code by comparing it with the midpoints (ties to the even code), saturated
//    beyond 448; every rounding class of the floats of magnitude in [2^-12, 2^10] of both
//    signs (below), 2^21 random floats of that range, the specials, and a strided sweep of
//    all 2^32 bit patterns;
//  - every ISA's converter: the same floats (and the strided sweep, at several scales)
//    through the API (elements [R, head_dim) are copied, so they reach the converter
//    unchanged) against the reference;
//  - the golden bytes of tests/data/fp8_golden.txt (a NumPy transcription, its script beside
//    it): ties, subnormals, saturation, NaN, -0, infinities, at several scales;
//  - rope_fp8_e4m3_ref(v / scale) of posenc_rope_out's f32 result of the same ISA: rows,
//    slots (negative ones skipped, other rows untouched), strided caches, NEOX and GPT-J,
//    partial rotary dims, head sizes that are no multiple of a vector;
//  - every bad input returns its status and writes nothing.
#include <posenc.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

#include "../kernels/rope.h"

#ifndef POSENC_FP8_GOLDEN_FILE
#error "POSENC_FP8_GOLDEN_FILE must name tests/data/fp8_golden.txt"
#endif

namespace posenc_test {
namespace {

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The value of each E4M3 code, exactly, decoded from the format's definition (NaN for
// S.1111.111).
std::vector<double> DecodedCodes() {
  std::vector<double> v(256);
  for (int c = 0; c < 256; ++c) {
    const int e = (c >> 3) & 15, m = c & 7;
    double a = e == 0 ? std::ldexp(m, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
    if ((c & 0x7f) == 0x7f) a = NAN;
    v[c] = (c & 0x80) ? -a : a;
  }
  return v;
}

// The code of |x| (x a non-negative finite double), given the largest code k with value
// val[k] <= x: nearest, ties to the even code, 126 (448) at and beyond the largest finite.
uint8_t NearestFrom(const std::vector<double>& val, int k, double x) {
  if (k >= 126) return 126;
  const double mid = (val[k] + val[k + 1]) / 2;  // exact: both are short dyadic numbers
  if (x < mid) return static_cast<uint8_t>(k);
  if (x > mid) return static_cast<uint8_t>(k + 1);
  return static_cast<uint8_t>(k % 2 == 0 ? k : k + 1);
}

// The independent construction for any float: binary search over the positive codes.
uint8_t IndependentE4m3(const std::vector<double>& val, float f) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f)) return 0x7f;  // a NaN's sign is not portable: 0x7F, as CUDA writes
  const double x = std::fabs(static_cast<double>(f));
  int lo = 0, hi = 126;  // val[lo] <= x
  while (lo < hi) {
    const int m = (lo + hi + 1) / 2;
    if (val[m] <= x)
      lo = m;
    else
      hi = m - 1;
  }
  return sign | NearestFrom(val, lo, x);
}

constexpr uint32_t kDenseLo = 0x39800000u;  // 2^-12
constexpr uint32_t kDenseHi = 0x44800000u;  // 2^10

// The positive floats of [2^-12, 2^10] by rounding class: a float's E4M3 code depends on its
// exponent, the mantissa bits down to the rounding bit (at most the top 4 of 23 for normal
// codes, fewer for subnormal ones) and whether any bit below is set (sticky). So every
// exponent with every value of the top 6 mantissa bits, the low 17 bits 0, 1, 2^16 - 1,
// 2^16, 2^16 + 1 and 2^17 - 1, covers every class (each tie, each side of each midpoint);
// then 2^21 floats drawn uniformly from the bit patterns of the range. Ascending, no
// duplicates needed.
std::vector<uint32_t> DenseClasses() {
  std::vector<uint32_t> u;
  for (uint32_t top = kDenseLo >> 17; top <= kDenseHi >> 17; ++top)
    for (uint32_t low : {0u, 1u, 0xffffu, 0x10000u, 0x10001u, 0x1ffffu})
      if ((top << 17 | low) <= kDenseHi) u.push_back(top << 17 | low);
  std::mt19937 rng(2026);
  std::uniform_int_distribution<uint32_t> bits(kDenseLo, kDenseHi);
  for (int i = 0; i < (1 << 21); ++i) u.push_back(bits(rng));
  return u;
}

TEST(Fp8Reference, MatchesMidpointsOnEveryRoundingClassOfTheDenseRange) {
  const std::vector<double> val = DecodedCodes();
  uint64_t bad = 0;
  for (uint32_t u : DenseClasses()) {
    const double x = FromBits(u);
    // the largest code value <= x among the first 127 (binary search: val ascends)
    const int above = int(std::upper_bound(val.begin(), val.begin() + 127, x) - val.begin());
    const int k = above > 0 ? above - 1 : 0;
    const uint8_t want = NearestFrom(val, k, x);
    const uint8_t pos = rope_fp8_e4m3_ref(FromBits(u));
    const uint8_t neg = rope_fp8_e4m3_ref(FromBits(u | 0x80000000u));
    if (pos != want || neg != (want | 0x80)) {
      if (++bad <= 10)
        ADD_FAILURE() << std::hex << "bits 0x" << u << ": " << int(pos) << " / " << int(neg)
                      << ", want " << int(want);
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST(Fp8Reference, MatchesMidpointsOnSpecialsAndAStridedSweep) {
  const std::vector<double> val = DecodedCodes();
  const float specials[] = {0.0f,
                            -0.0f,
                            INFINITY,
                            -INFINITY,
                            NAN,
                            -NAN,
                            448.0f,
                            -448.0f,
                            464.0f,
                            463.99997f,
                            480.0f,
                            1e30f,
                            FLT_MAX,
                            -FLT_MAX,
                            FLT_MIN,
                            1e-45f,
                            -1e-45f,
                            0x1p-10f,
                            -0x1p-10f,
                            0x1.000002p-10f,
                            0x1p-9f,
                            0x1.8p-9f,
                            0x1.4p-9f,
                            0x1.cp-7f,
                            0x1.ep-7f,
                            0x1p-6f,
                            0x1.2p-6f,
                            0x1.1p-6f,
                            0x1.3p-6f,
                            0x1.fffffep-7f,
                            1.0625f,
                            1.1875f,
                            FromBits(0x7f800001u),
                            FromBits(0xffc00000u),
                            FromBits(0x7fffffffu)};
  for (float f : specials)
    EXPECT_EQ(rope_fp8_e4m3_ref(f), IndependentE4m3(val, f)) << std::hexfloat << f;
  uint64_t bad = 0;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 4093) {
    const float f = FromBits(static_cast<uint32_t>(u));
    if (rope_fp8_e4m3_ref(f) != IndependentE4m3(val, f) && ++bad <= 10)
      ADD_FAILURE() << std::hex << "bits 0x" << u;
  }
  EXPECT_EQ(bad, 0u);
}

class RopeFp8Test : public EveryIsaTest {};

// Converts n floats through posenc_rope_out_fp8 (a plan of one pair: x lands in elements
// [2, D) of each head vector, which are copied to the converter unchanged) and checks each
// byte against rope_fp8_e4m3_ref(x / scale). Returns the number of mismatches.
uint64_t ConvertThroughApi(const posenc_rope_plan* plan, const float* x, size_t n, float scale) {
  constexpr size_t D = 4096, per = D - 2, T = 32;
  std::vector<float> src(T * D, 0.0f);
  std::vector<uint8_t> dst(T * D);
  uint64_t bad = 0;
  for (size_t i0 = 0; i0 < n; i0 += T * per) {
    const size_t m = n - i0 < T * per ? n - i0 : T * per, tokens = (m + per - 1) / per;
    for (size_t i = 0; i < m; ++i) src[i / per * D + 2 + i % per] = x[i0 + i];
    const posenc_rope_view sv = {src.data(), POSENC_DTYPE_F32, 1, D, D, 0};
    const posenc_fp8_view dv = {dst.data(), 1, D, D};
    if (posenc_rope_out_fp8(plan, D, tokens, nullptr, 0, &sv, &dv, scale, nullptr, 0) != POSENC_OK)
      return n;
    for (size_t i = 0; i < m; ++i) {
      const float v = x[i0 + i];
      const uint8_t got = dst[i / per * D + 2 + i % per], want = rope_fp8_e4m3_ref(v / scale);
      if (got != want && ++bad <= 10)
        ADD_FAILURE() << std::hexfloat << v << " / " << scale << ": " << std::hex << int(got)
                      << ", want " << int(want);
    }
  }
  return bad;
}

TEST_P(RopeFp8Test, ConverterIsTheReferenceOnEveryRoundingClassOfTheDenseRange) {
  const PlanPtr plan = MakePlan(2, 10000.0, 1.0);
  std::vector<float> x;
  for (uint32_t u : DenseClasses())
    for (uint32_t sign : {0u, 0x80000000u}) x.push_back(FromBits(u | sign));
  EXPECT_EQ(ConvertThroughApi(plan.get(), x.data(), x.size(), 1.0f), 0u);
}

TEST_P(RopeFp8Test, ConverterIsTheReferenceOnAStridedSweepAtSeveralScales) {
  const PlanPtr plan = MakePlan(2, 10000.0, 1.0);
  std::vector<float> x;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 65537)
    x.push_back(FromBits(static_cast<uint32_t>(u)));
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 448.0f, 464.0f, -464.0f, 0x1p-10f,
                  0x1.8p-9f, FLT_MAX, 1e-45f})
    x.push_back(f);
  for (float scale :
       {1.0f, 0.0625f, 0.1f, 3.0f, 1e-30f, 1e30f, FLT_MIN, 1e-45f, 0x1p127f, 0x1p-127f})
    EXPECT_EQ(ConvertThroughApi(plan.get(), x.data(), x.size(), scale), 0u) << scale;
}

TEST_P(RopeFp8Test, GoldenBytes) {
  std::ifstream in(POSENC_FP8_GOLDEN_FILE);
  ASSERT_TRUE(in.good()) << POSENC_FP8_GOLDEN_FILE;
  const PlanPtr plan = MakePlan(2, 10000.0, 1.0);
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    // "<scale bits> ; <float bits> ... ; <bytes in hex>"
    const size_t bar1 = line.find(" ; "), bar2 = line.find(" ; ", bar1 + 3);
    ASSERT_NE(bar2, std::string::npos) << line;
    const float scale =
        FromBits(static_cast<uint32_t>(std::stoul(line.substr(0, bar1), nullptr, 16)));
    std::istringstream words(line.substr(bar1 + 3, bar2 - bar1 - 3));
    std::vector<float> x(2, 0.0f);  // the rotated pair: zeros at position 0
    std::string tok;
    while (words >> tok) x.push_back(FromBits(static_cast<uint32_t>(std::stoul(tok, nullptr, 16))));
    const size_t D = x.size();
    const std::string hex = line.substr(bar2 + 3);
    ASSERT_EQ(hex.size(), 2 * (D - 2)) << "golden row " << cases;
    std::vector<uint8_t> want(D, 0), got(D, 0x5A);
    for (size_t i = 0; i + 2 < D; ++i)
      want[2 + i] = static_cast<uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    const posenc_rope_view sv = {x.data(), POSENC_DTYPE_F32, 1, D, D, 0};
    const posenc_fp8_view dv = {got.data(), 1, D, D};
    ASSERT_EQ(posenc_rope_out_fp8(plan.get(), D, 1, nullptr, 0, &sv, &dv, scale, nullptr, 0),
              POSENC_OK);
    EXPECT_EQ(got, want) << "golden row " << cases;
    ++cases;
  }
  EXPECT_GE(cases, 10);
}

TEST_P(RopeFp8Test, IsTheReferenceOnRopeOutsRow) {
  std::mt19937 rng(20261206);
  std::normal_distribution<float> n(0.0f, 1.0f);
  struct Case {
    size_t R, D, H, L;
  };
  for (const Case& c : {Case{128, 128, 8, 9}, Case{64, 96, 3, 6}, Case{32, 80, 2, 40},
                        Case{2, 2, 1, 3}, Case{126, 130, 5, 17}}) {
    for (unsigned flags : {0u, unsigned{POSENC_ROPE_GPTJ}}) {
      for (int use_slots = 0; use_slots < 2; ++use_slots) {
        const PlanPtr plan = MakePlan(c.R, 10000.0, 1.0);
        std::vector<float> src(c.L * c.H * c.D), rotated(src.size());
        for (size_t i = 0; i < src.size(); ++i)
          src[i] = n(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 24) - 12);
        src[3] = NAN;
        src[src.size() / 2] = -INFINITY;
        std::vector<int32_t> pos(c.L);
        for (auto& p : pos) p = static_cast<int32_t>(rng() % 100000);
        const posenc_rope_view sv = {src.data(), POSENC_DTYPE_F32, c.H, c.H * c.D, c.D, 0};
        const posenc_rope_view rv = {rotated.data(), POSENC_DTYPE_F32, c.H, c.H * c.D, c.D, 0};
        ASSERT_EQ(posenc_rope_out(plan.get(), c.D, 1, c.L, pos.data(), 0, &sv, &rv, flags),
                  POSENC_OK);
        const size_t rows = use_slots ? 3 * c.L : c.L;
        // Heads [H] of a row with 5 spare bytes between heads, as a strided cache would.
        const size_t head_stride = c.D + 5, token_stride = c.H * head_stride + 3;
        std::vector<uint8_t> dst(rows * token_stride, 0xEE);
        std::vector<int32_t> slot(c.L);
        for (size_t t = 0; t < c.L; ++t) slot[t] = static_cast<int32_t>(3 * t + (t % 3));
        if (use_slots) slot[c.L > 1 ? 1 : 0] = -1;
        const posenc_slots slots = {slot.data(), 0, rows};
        const posenc_fp8_view dv = {dst.data(), c.H, token_stride, head_stride};
        for (float scale : {1.0f, 0.0123f, 7.5f}) {
          ASSERT_EQ(posenc_rope_out_fp8(plan.get(), c.D, c.L, pos.data(), 0, &sv, &dv, scale,
                                        use_slots ? &slots : nullptr, flags),
                    POSENC_OK);
          std::vector<uint8_t> want(rows * token_stride, 0xEE);
          for (size_t t = 0; t < c.L; ++t) {
            const int64_t r = use_slots ? slot[t] : static_cast<int64_t>(t);
            if (r < 0) continue;
            for (size_t h = 0; h < c.H; ++h)
              for (size_t d = 0; d < c.D; ++d)
                want[r * token_stride + h * head_stride + d] =
                    rope_fp8_e4m3_ref(rotated[(t * c.H + h) * c.D + d] / scale);
          }
          for (size_t i = 0; i < dst.size(); ++i)
            ASSERT_EQ(dst[i], want[i])
                << "byte " << i << " R=" << c.R << " D=" << c.D << " flags " << flags << " scale "
                << scale << (use_slots ? " slots" : " rows");
          std::fill(dst.begin(), dst.end(), 0xEE);
        }
      }
    }
  }
}

TEST_P(RopeFp8Test, Int64SlotsAndOneTokenAtATimeMatchOneCall) {
  const size_t R = 64, D = 128, H = 4, L = 37, cells = 64;
  const PlanPtr plan = MakePlan(R, 500000.0, 1.0);
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.0f, 3.0f);
  std::vector<float> src(L * H * D);
  for (float& v : src) v = n(rng);
  std::vector<int64_t> slot(L);
  for (size_t t = 0; t < L; ++t) slot[t] = t % 5 == 4 ? -1 : static_cast<int64_t>(cells - 1 - t);
  std::vector<uint8_t> all(cells * H * D, 0x11), one(all);
  const posenc_rope_view sv = {src.data(), POSENC_DTYPE_F32, H, H * D, D, 0};
  const posenc_fp8_view dv_all = {all.data(), H, H * D, D};
  const posenc_slots s_all = {slot.data(), 1, cells};
  ASSERT_EQ(posenc_rope_out_fp8(plan.get(), D, L, nullptr, 1000, &sv, &dv_all, 0.25f, &s_all, 0),
            POSENC_OK);
  for (size_t t = 0; t < L; ++t) {
    const posenc_rope_view st = {src.data() + t * H * D, POSENC_DTYPE_F32, H, H * D, D, 0};
    const posenc_fp8_view dv = {one.data(), H, H * D, D};
    const posenc_slots s = {&slot[t], 1, cells};
    ASSERT_EQ(posenc_rope_out_fp8(plan.get(), D, 1, nullptr, static_cast<int32_t>(1000 + t), &st,
                                  &dv, 0.25f, &s, 0),
              POSENC_OK);
  }
  EXPECT_EQ(all, one);
}

TEST_P(RopeFp8Test, BadInputReturnsItsStatusAndWritesNothing) {
  const size_t D = 64, H = 2, L = 3;
  const PlanPtr plan = MakePlan(D, 10000.0, 1.0), big = MakePlan(1024, 10000.0, 1.0);
  std::vector<float> src(L * H * 4097 + 8, 1.0f);
  std::vector<uint8_t> dst(L * H * 4097 * 2, 0x5A);
  const posenc_rope_view sv = {src.data(), POSENC_DTYPE_F32, H, H * D, D, 0};
  const posenc_rope_view bf = {src.data(), POSENC_DTYPE_BF16, H, H * D, D, 0};
  const posenc_rope_view wide = {src.data(), POSENC_DTYPE_F32, H, H * 4097, 4097, 0};
  const posenc_fp8_view dv = {dst.data(), H, H * D, D};
  const posenc_fp8_view dv_wide = {dst.data(), H, H * 4097, 4097};
  const posenc_fp8_view overlap = {dst.data(), H, D, D / 2};
  const posenc_fp8_view one_head = {dst.data(), 1, D, D};
  const posenc_fp8_view on_src = {src.data(), H, H * D, D};
  const posenc_fp8_view null_data = {nullptr, H, H * D, D};
  const int32_t dup[3] = {0, 2, 0}, far[3] = {0, 1, 4};
  const posenc_slots dup_slots = {dup, 0, 4}, far_slots = {far, 0, 4}, bad_kind = {dup, 2, 4};
  struct Bad {
    const char* what;
    const posenc_rope_plan* plan;
    size_t dim;
    const posenc_rope_view* src;
    const posenc_fp8_view* dst;
    float scale;
    const posenc_slots* slots;
  };
  const Bad bad[] = {{"NULL plan", nullptr, D, &sv, &dv, 1.0f, nullptr},
                     {"NULL src", plan.get(), D, nullptr, &dv, 1.0f, nullptr},
                     {"NULL dst", plan.get(), D, &sv, nullptr, 1.0f, nullptr},
                     {"NULL dst data", plan.get(), D, &sv, &null_data, 1.0f, nullptr},
                     {"bf16 source", plan.get(), D, &bf, &dv, 1.0f, nullptr},
                     {"scale 0", plan.get(), D, &sv, &dv, 0.0f, nullptr},
                     {"scale -0", plan.get(), D, &sv, &dv, -0.0f, nullptr},
                     {"scale -1", plan.get(), D, &sv, &dv, -1.0f, nullptr},
                     {"scale NaN", plan.get(), D, &sv, &dv, NAN, nullptr},
                     {"scale inf", plan.get(), D, &sv, &dv, INFINITY, nullptr},
                     {"head_dim 4097", plan.get(), 4097, &wide, &dv_wide, 1.0f, nullptr},
                     {"head_dim below R", plan.get(), D - 2, &sv, &dv, 1.0f, nullptr},
                     {"rotary_dim 1024", big.get(), 1024, &sv, &dv, 1.0f, nullptr},
                     {"rows overlap", plan.get(), D, &sv, &overlap, 1.0f, nullptr},
                     {"head counts differ", plan.get(), D, &sv, &one_head, 1.0f, nullptr},
                     {"dst on src", plan.get(), D, &sv, &on_src, 1.0f, nullptr},
                     {"a slot twice", plan.get(), D, &sv, &dv, 1.0f, &dup_slots},
                     {"a slot out of range", plan.get(), D, &sv, &dv, 1.0f, &far_slots},
                     {"is_int64 2", plan.get(), D, &sv, &dv, 1.0f, &bad_kind}};
  for (const Bad& b : bad) {
    const std::vector<uint8_t> d0 = dst;
    const std::vector<float> s0 = src;
    EXPECT_EQ(posenc_rope_out_fp8(b.plan, b.dim, L, nullptr, 0, b.src, b.dst, b.scale, b.slots, 0),
              POSENC_ERR_INVALID_ARGUMENT)
        << b.what;
    EXPECT_TRUE(dst == d0 && std::memcmp(src.data(), s0.data(), src.size() * 4) == 0)
        << b.what << ": written";
  }
  // No work: a valid no-op that writes nothing.
  EXPECT_EQ(posenc_rope_out_fp8(plan.get(), D, 0, nullptr, 0, &sv, &dv, 1.0f, nullptr, 0),
            POSENC_OK);
  EXPECT_EQ(dst, std::vector<uint8_t>(dst.size(), 0x5A));
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeFp8Test);

}  // namespace
}  // namespace posenc_test
