// The runtime-shaped RoPE forms (posenc_rope_out, posenc_mrope_out, rotation factors and
// posenc_rope_apply), on every ISA and storage pair:
//  - out of place is bitwise the in-place form of the same ISA (posenc_rope_f32 / _bf16 /
//    _f16, then rounded to the destination type), for [B, L, H, D] and [B, H, L, D] views
//    with per-(batch, token) positions, partial rotary sizes (the rest copied), multi-chunk
//    plans, every flag; the source is untouched and NaN sentinels in the destination's gaps
//    stay;
//  - the factor path (compute once, apply in place or out of place, shared or per-batch
//    rows, sub-ranges of rows) is bitwise the plan path, for RoPE and M-RoPE;
//  - split invariance: random splits of a call (1-8 pieces, random cut points, both position
//    forms), decode at p against row p of a prefill, bitwise;
//  - against the long double definition;
//  - every bad input returns its status and writes nothing; nothing next to guard pages is
//    touched.
#include <posenc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../kernels/half.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr uint32_t kSeed = 20261201;

size_t ElemSize(posenc_dtype t) { return t == POSENC_DTYPE_F32 ? 4 : 2; }
const char* DtypeName(posenc_dtype t) {
  return t == POSENC_DTYPE_F32 ? "f32" : t == POSENC_DTYPE_BF16 ? "bf16" : "f16";
}

// The supported (source, destination) pairs.
struct TypePair {
  posenc_dtype src, dst;
};
const TypePair kPairs[] = {{POSENC_DTYPE_F32, POSENC_DTYPE_F32},
                           {POSENC_DTYPE_BF16, POSENC_DTYPE_BF16},
                           {POSENC_DTYPE_F16, POSENC_DTYPE_F16},
                           {POSENC_DTYPE_F32, POSENC_DTYPE_BF16},
                           {POSENC_DTYPE_F32, POSENC_DTYPE_F16}};

// A [B, L, H, D] (token-major) or [B, H, L, D] (head-major) tensor of one storage type, with
// `pad` elements after every head vector (gaps holding NaN sentinels) and a guard of `pad`
// elements after the last one.
struct Tensor {
  posenc_dtype dtype = POSENC_DTYPE_F32;
  size_t batches = 1, tokens = 1, heads = 1, dim = 1, pad = 0;
  bool head_major = false;
  size_t head_stride = 0, token_stride = 0, batch_stride = 0, n = 0;
  std::vector<uint32_t> words;  // backing store, float-aligned

  Tensor(posenc_dtype t, size_t b, size_t l, size_t h, size_t d, size_t gap, bool hm)
      : dtype(t), batches(b), tokens(l), heads(h), dim(d), pad(gap), head_major(hm) {
    const size_t vec = d + gap;
    if (hm) {
      token_stride = vec;
      head_stride = l * vec;
    } else {
      head_stride = vec;
      token_stride = h * vec;
    }
    batch_stride = l * h * vec;
    n = b * batch_stride + gap;
    words.assign((n * ElemSize(t) + 3) / 4 + 1, 0);
    for (size_t i = 0; i < n; ++i) SetBits(i, Sentinel(i));
  }
  void* data() { return words.data(); }
  uint32_t Sentinel(size_t i) const {
    if (dtype == POSENC_DTYPE_F32) {
      const float f = NaNSentinel(i);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return u;
    }
    return 0x7e00u | static_cast<uint32_t>(i & 0x3f);  // a NaN in both bf16 and f16
  }
  uint32_t Bits(size_t i) const {
    if (dtype == POSENC_DTYPE_F32) {
      uint32_t u;
      std::memcpy(&u, reinterpret_cast<const char*>(words.data()) + 4 * i, 4);
      return u;
    }
    uint16_t h;
    std::memcpy(&h, reinterpret_cast<const char*>(words.data()) + 2 * i, 2);
    return h;
  }
  void SetBits(size_t i, uint32_t v) {
    char* p = reinterpret_cast<char*>(words.data());
    if (dtype == POSENC_DTYPE_F32) {
      std::memcpy(p + 4 * i, &v, 4);
    } else {
      const uint16_t h = static_cast<uint16_t>(v);
      std::memcpy(p + 2 * i, &h, 2);
    }
  }
  float Value(size_t i) const {
    const uint32_t b = Bits(i);
    if (dtype == POSENC_DTYPE_F32) {
      float f;
      std::memcpy(&f, &b, 4);
      return f;
    }
    return dtype == POSENC_DTYPE_BF16 ? posenc_bf16_to_f32(static_cast<uint16_t>(b))
                                      : posenc_f16_to_f32(static_cast<uint16_t>(b));
  }
  size_t Index(size_t b, size_t t, size_t h, size_t d) const {
    return b * batch_stride + t * token_stride + h * head_stride + d;
  }
  void FillRandom(uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-4.0f, 4.0f);
    for (size_t b = 0; b < batches; ++b)
      for (size_t t = 0; t < tokens; ++t)
        for (size_t h = 0; h < heads; ++h)
          for (size_t d = 0; d < dim; ++d) SetBits(Index(b, t, h, d), Encode(dtype, u(rng)));
  }
  static uint32_t Encode(posenc_dtype t, float f) {
    if (t == POSENC_DTYPE_BF16) return posenc_f32_to_bf16(f);
    if (t == POSENC_DTYPE_F16) return posenc_f32_to_f16(f);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }
  posenc_rope_view View() {
    return {data(), dtype, heads, token_stride, head_stride, batch_stride};
  }
};

bool SameBits(posenc_dtype t, uint32_t a, uint32_t b) {
  if (a == b) return true;
  if (t == POSENC_DTYPE_F32) {
    float x, y;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    return std::isnan(x) && std::isnan(y);
  }
  const float x = t == POSENC_DTYPE_BF16 ? posenc_bf16_to_f32(static_cast<uint16_t>(a))
                                         : posenc_f16_to_f32(static_cast<uint16_t>(a));
  const float y = t == POSENC_DTYPE_BF16 ? posenc_bf16_to_f32(static_cast<uint16_t>(b))
                                         : posenc_f16_to_f32(static_cast<uint16_t>(b));
  return std::isnan(x) && std::isnan(y);
}

// Index of the first element whose bits differ, or -1.
long FirstDifference(const Tensor& a, const Tensor& b) {
  for (size_t i = 0; i < a.n; ++i)
    if (!SameBits(a.dtype, a.Bits(i), b.Bits(i))) return static_cast<long>(i);
  return -1;
}

posenc_status RopeInPlace(posenc_dtype t, const posenc_rope_plan* plan, size_t head_dim,
                          size_t n_tokens, const int32_t* positions, int32_t start_pos,
                          const posenc_rope_tensor* q, unsigned flags) {
  switch (t) {
    case POSENC_DTYPE_BF16:
      return posenc_rope_bf16(plan, head_dim, n_tokens, positions, start_pos, q, nullptr, flags);
    case POSENC_DTYPE_F16:
      return posenc_rope_f16(plan, head_dim, n_tokens, positions, start_pos, q, nullptr, flags);
    default:
      return posenc_rope_f32(plan, head_dim, n_tokens, positions, start_pos, q, nullptr, flags);
  }
}

posenc_status MropeInPlace(posenc_dtype t, const posenc_rope_plan* plan, const size_t* sections,
                           size_t head_dim, size_t n_tokens, const int32_t* positions,
                           const posenc_rope_tensor* q, unsigned flags) {
  switch (t) {
    case POSENC_DTYPE_BF16:
      return posenc_mrope_bf16(plan, sections, head_dim, n_tokens, positions, q, nullptr, flags);
    case POSENC_DTYPE_F16:
      return posenc_mrope_f16(plan, sections, head_dim, n_tokens, positions, q, nullptr, flags);
    default:
      return posenc_mrope_f32(plan, sections, head_dim, n_tokens, positions, q, nullptr, flags);
  }
}

// What an out-of-place call from `src` must write into a destination laid out as `dst`: each
// batch of a copy of src rotated in place (posenc_rope_<src type>, this ISA) with its
// positions (NULL: start_pos + t), every element [0, D) then rounded to dst's type; the
// destination's gaps keep their sentinels. mrope_sections: M-RoPE with 3 rows of positions.
Tensor Expected(const posenc_rope_plan* plan, const Tensor& src, const Tensor& dst,
                const int32_t* positions, int32_t start_pos, unsigned flags,
                const size_t* mrope_sections = nullptr) {
  Tensor work = src;
  const size_t B = src.batches, L = src.tokens;
  for (size_t b = 0; b < B; ++b) {
    const size_t elem = ElemSize(src.dtype);
    posenc_rope_tensor q = {reinterpret_cast<char*>(work.data()) + b * src.batch_stride * elem,
                            src.heads, src.token_stride, src.head_stride};
    posenc_status st;
    if (mrope_sections) {
      std::vector<int32_t> rows(3 * L);
      for (size_t r = 0; r < 3; ++r)
        for (size_t t = 0; t < L; ++t) rows[r * L + t] = positions[r * B * L + b * L + t];
      st = MropeInPlace(src.dtype, plan, mrope_sections, src.dim, L, rows.data(), &q, flags);
    } else {
      st = RopeInPlace(src.dtype, plan, src.dim, L, positions ? positions + b * L : nullptr,
                       start_pos, &q, flags);
    }
    EXPECT_EQ(st, POSENC_OK);
  }
  Tensor out = dst;
  for (size_t b = 0; b < B; ++b)
    for (size_t t = 0; t < L; ++t)
      for (size_t h = 0; h < src.heads; ++h)
        for (size_t d = 0; d < src.dim; ++d) {
          const size_t i = work.Index(b, t, h, d), o = out.Index(b, t, h, d);
          out.SetBits(
              o, src.dtype == dst.dtype ? work.Bits(i) : Tensor::Encode(dst.dtype, work.Value(i)));
        }
  return out;
}

std::vector<int32_t> MixedPositions(std::mt19937& rng, size_t n) {
  std::vector<int32_t> p(n);
  std::uniform_int_distribution<int> kind(0, 3);
  std::uniform_int_distribution<int32_t> small(-200, 200);
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX);
  int32_t run = small(rng);
  for (size_t i = 0; i < n; ++i) {
    switch (kind(rng)) {
      case 0:
        p[i] = small(rng);
        break;
      case 1:
        p[i] = any(rng);
        break;
      default:
        p[i] = run++;  // runs across anchors
    }
  }
  return p;
}

struct Case {
  size_t rotary_dim, head_dim, heads;
  bool src_head_major, dst_head_major;
  size_t pad;
};
const Case kCases[] = {
    {128, 128, 3, false, false, 0},   // the common R = 128 (register-blocked path)
    {128, 128, 2, true, false, 2},    // HF [B, H, L, D] into [B, L, H, D]
    {64, 80, 2, false, true, 3},      // partial rotary: [R, D) copied
    {6, 10, 2, false, false, 1},      // shorter than every vector
    {34, 34, 1, true, true, 0},       // pairs around vector widths
    {1024, 1030, 1, false, false, 1}  // more than one chunk of pairs
};

std::string Describe(const Case& c, TypePair p, unsigned flags) {
  std::ostringstream os;
  os << DtypeName(p.src) << "->" << DtypeName(p.dst) << " R=" << c.rotary_dim << " D=" << c.head_dim
     << " H=" << c.heads << (c.src_head_major ? " src:BHLD" : " src:BLHD")
     << (c.dst_head_major ? " dst:BHLD" : " dst:BLHD") << " pad=" << c.pad << " flags=" << flags;
  return os.str();
}

const unsigned kFlags[] = {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ,
                           POSENC_ROPE_NEOX | POSENC_ROPE_INVERSE,
                           POSENC_ROPE_GPTJ | POSENC_ROPE_F32_ANGLES};

class RopeViewsTest : public EveryIsaTest {};

TEST_P(RopeViewsTest, OutOfPlaceIsTheInPlaceResultOfEveryTypePair) {
  std::mt19937 rng(kSeed);
  const size_t B = 2, L = 13;
  size_t config = 0;  // the flags in turn
  for (const Case& c : kCases) {
    const PlanPtr plan = MakePlan(c.rotary_dim, 10000.0, 0.75);
    for (TypePair p : kPairs)
      for (int variant = 0; variant < 2; ++variant) {
        const unsigned flags = kFlags[config++ % 4];
        const bool given = variant == 0;
        const std::string what = Describe(c, p, flags) + (given ? " positions" : " start_pos");
        Tensor src(p.src, B, L, c.heads, c.head_dim, c.pad, c.src_head_major);
        src.FillRandom(rng());
        Tensor dst(p.dst, B, L, c.heads, c.head_dim, c.pad, c.dst_head_major);
        const std::vector<int32_t> pos = MixedPositions(rng, B * L);
        const int32_t start = given ? 0 : -70;
        const Tensor src_before = src;
        const Tensor want =
            Expected(plan.get(), src, dst, given ? pos.data() : nullptr, start, flags);
        const posenc_rope_view sv = src.View(), dv = dst.View();
        ASSERT_EQ(posenc_rope_out(plan.get(), c.head_dim, B, L, given ? pos.data() : nullptr, start,
                                  &sv, &dv, flags),
                  POSENC_OK)
            << what;
        EXPECT_EQ(FirstDifference(dst, want), -1) << what;
        EXPECT_EQ(FirstDifference(src, src_before), -1) << what << ": source written";
      }
  }
}

TEST_P(RopeViewsTest, InPlaceThroughViewsIsTheInPlaceForm) {
  std::mt19937 rng(kSeed + 1);
  const size_t B = 3, L = 9;
  for (const Case& c : kCases) {
    const PlanPtr plan = MakePlan(c.rotary_dim, 500000.0, 1.0);
    for (posenc_dtype t : {POSENC_DTYPE_F32, POSENC_DTYPE_BF16, POSENC_DTYPE_F16})
      for (unsigned flags : kFlags) {
        Tensor x(t, B, L, c.heads, c.head_dim, c.pad, c.src_head_major);
        x.FillRandom(rng());
        const std::vector<int32_t> pos = MixedPositions(rng, B * L);
        const Tensor want = Expected(plan.get(), x, x, pos.data(), 0, flags);
        const posenc_rope_view v = x.View();
        ASSERT_EQ(posenc_rope_out(plan.get(), c.head_dim, B, L, pos.data(), 0, &v, &v, flags),
                  POSENC_OK);
        EXPECT_EQ(FirstDifference(x, want), -1) << DtypeName(t) << " flags " << flags;
      }
  }
}

// Factors of n rows of `pos` (NULL: start_pos + r) in a fresh buffer.
struct Factors {
  std::vector<float> storage;
  posenc_rope_factors f{};
};
Factors MakeFactors(const posenc_rope_plan* plan, size_t n, const int32_t* pos, int32_t start,
                    unsigned flags) {
  Factors out;
  const size_t bytes =
      posenc_rope_factors_bytes(posenc_rope_plan_rotary_dim(plan), n, flags & POSENC_ROPE_GPTJ);
  out.storage.assign(bytes / sizeof(float) + 1, NaNSentinel(7));
  EXPECT_EQ(posenc_rope_factors_compute(plan, n, pos, start, flags & ~POSENC_ROPE_INVERSE,
                                        out.storage.data(), bytes, &out.f),
            POSENC_OK);
  EXPECT_TRUE(std::isnan(out.storage.back())) << "factors written past their size";
  return out;
}

TEST_P(RopeViewsTest, FactorPathIsBitwiseThePlanPath) {
  std::mt19937 rng(kSeed + 2);
  const size_t B = 2, L = 11;
  size_t config = 0;  // the flags in turn
  for (const Case& c : kCases) {
    const PlanPtr plan = MakePlan(c.rotary_dim, 10000.0, 1.25);
    for (TypePair p : kPairs)
      for (int variant = 0; variant < 2; ++variant) {
        const unsigned flags = kFlags[config++ % 4];
        const std::string what = Describe(c, p, flags);
        const std::vector<int32_t> pos = MixedPositions(rng, B * L);
        Tensor src(p.src, B, L, c.heads, c.head_dim, c.pad, c.src_head_major);
        src.FillRandom(rng());
        Tensor want(p.dst, B, L, c.heads, c.head_dim, c.pad, c.dst_head_major);
        const posenc_rope_view sv = src.View(), wv = want.View();
        ASSERT_EQ(posenc_rope_out(plan.get(), c.head_dim, B, L, pos.data(), 0, &sv, &wv, flags),
                  POSENC_OK);
        const unsigned layout = flags & POSENC_ROPE_GPTJ, apply_flags = flags & ~4u;
        // Per-batch rows: row b * L + t.
        const Factors per = MakeFactors(plan.get(), B * L, pos.data(), 0, flags);
        Tensor out(p.dst, B, L, c.heads, c.head_dim, c.pad, c.dst_head_major);
        const posenc_rope_view ov = out.View();
        ASSERT_EQ(posenc_rope_apply(&per.f, 0, L, c.head_dim, B, L, &sv, &ov, layout | apply_flags),
                  POSENC_OK)
            << what;
        EXPECT_EQ(FirstDifference(out, want), -1) << what << ": out of place";
        if (p.src == p.dst) {  // in place
          Tensor x = src;
          const posenc_rope_view xv = x.View();
          const Tensor want_in = Expected(plan.get(), src, src, pos.data(), 0, flags);
          ASSERT_EQ(posenc_rope_apply(&per.f, 0, L, c.head_dim, B, L, &xv, &xv, apply_flags),
                    POSENC_OK);
          EXPECT_EQ(FirstDifference(x, want_in), -1) << what << ": in place";
        }
        // Shared rows (every batch at start_pos + t), read from a sub-range of a larger
        // buffer: rows [5, 5 + L) of factors made for start_pos - 5.
        const Factors shared = MakeFactors(plan.get(), L + 9, nullptr, 95, flags);
        posenc_rope_factors sub = shared.f;
        sub.data += 5 * sub.row_floats;
        sub.n_rows -= 5;
        Tensor want_shared(p.dst, B, L, c.heads, c.head_dim, c.pad, c.dst_head_major);
        const posenc_rope_view wsv = want_shared.View();
        ASSERT_EQ(posenc_rope_out(plan.get(), c.head_dim, B, L, nullptr, 100, &sv, &wsv, flags),
                  POSENC_OK);
        Tensor out_shared(p.dst, B, L, c.heads, c.head_dim, c.pad, c.dst_head_major);
        const posenc_rope_view osv = out_shared.View();
        ASSERT_EQ(posenc_rope_apply(&sub, 0, 0, c.head_dim, B, L, &sv, &osv, apply_flags),
                  POSENC_OK);
        EXPECT_EQ(FirstDifference(out_shared, want_shared), -1) << what << ": shared rows";
      }
  }
}

TEST_P(RopeViewsTest, MropeOutOfPlaceAndFactorsAreTheInPlaceForm) {
  std::mt19937 rng(kSeed + 3);
  const size_t B = 2, L = 12, R = 128;
  const PlanPtr plan = MakePlan(R, 1000000.0, 1.0);
  const size_t sections[3] = {24, 20, 20};  // valid contiguous and interleaved
  for (TypePair p : kPairs)
    for (unsigned flags : {0u, 1u, static_cast<unsigned>(POSENC_ROPE_MROPE_INTERLEAVED),
                           static_cast<unsigned>(POSENC_ROPE_INVERSE)}) {
      // Text tokens (three equal positions), then an image block.
      std::vector<int32_t> pos(3 * B * L);
      for (size_t g = 0; g < B * L; ++g) {
        const int32_t t = static_cast<int32_t>(g % L);
        const bool image = t >= 4 && t < 10;
        pos[g] = image ? 4 : t;
        pos[B * L + g] = image ? 4 + (t - 4) / 3 : t;
        pos[2 * B * L + g] = image ? 4 + (t - 4) % 3 : t;
      }
      Tensor src(p.src, B, L, 3, R, 1, false);
      src.FillRandom(rng());
      Tensor dst(p.dst, B, L, 3, R, 1, true);
      // Expected() passes the flags to posenc_mrope_*, interleaving included.
      const Tensor want_il = Expected(plan.get(), src, dst, pos.data(), 0, flags, sections);
      const posenc_rope_view sv = src.View(), dv = dst.View();
      ASSERT_EQ(posenc_mrope_out(plan.get(), sections, R, B, L, pos.data(), &sv, &dv, flags),
                POSENC_OK);
      EXPECT_EQ(FirstDifference(dst, want_il), -1) << DtypeName(p.dst) << " flags " << flags;
      // Factors of the B * L tokens, applied.
      const size_t bytes = posenc_rope_factors_bytes(R, B * L, flags & POSENC_ROPE_GPTJ);
      std::vector<float> storage(bytes / sizeof(float));
      posenc_rope_factors f;
      ASSERT_EQ(posenc_mrope_factors_compute(plan.get(), sections, B * L, pos.data(),
                                             flags & ~static_cast<unsigned>(POSENC_ROPE_INVERSE),
                                             storage.data(), bytes, &f),
                POSENC_OK);
      Tensor out(p.dst, B, L, 3, R, 1, true);
      const posenc_rope_view ov = out.View();
      ASSERT_EQ(posenc_rope_apply(&f, 0, L, R, B, L, &sv, &ov,
                                  flags & (POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE)),
                POSENC_OK);
      EXPECT_EQ(FirstDifference(out, want_il), -1) << "factors, flags " << flags;
    }
}

// Decode through factors: the factors of one token at a time, applied token by token, are
// bitwise one in-place call over every token (split invariance: tests/split_invariance_test.cc
// covers the plan forms).
TEST_P(RopeViewsTest, FactorsOfSingleTokensAreOneCall) {
  std::mt19937 rng(kSeed + 4);
  const size_t L = 70, H = 2;
  for (size_t R : {size_t{128}, size_t{1024}})
    for (posenc_dtype t : {POSENC_DTYPE_F32, POSENC_DTYPE_BF16, POSENC_DTYPE_F16})
      for (unsigned flags : {0u, 5u}) {
        const PlanPtr plan = MakePlan(R, 10000.0, 1.0);
        const int32_t first = flags ? 2147483647 - static_cast<int32_t>(L) + 1 : -37;
        Tensor x(t, 1, L, H, R, 0, false);
        x.FillRandom(rng());
        Tensor whole = x;
        posenc_rope_tensor wv = {whole.data(), H, whole.token_stride, whole.head_stride};
        ASSERT_EQ(RopeInPlace(t, plan.get(), R, L, nullptr, first, &wv, flags), POSENC_OK);
        Tensor fx = x;
        const size_t elem = ElemSize(t);
        for (size_t j = 0; j < L; ++j) {
          const Factors f =
              MakeFactors(plan.get(), 1, nullptr, first + static_cast<int32_t>(j), flags);
          posenc_rope_view v = fx.View();
          v.data = reinterpret_cast<char*>(fx.data()) + j * fx.token_stride * elem;
          ASSERT_EQ(posenc_rope_apply(&f.f, 0, 0, R, 1, 1, &v, &v, flags & ~4u), POSENC_OK);
        }
        EXPECT_EQ(FirstDifference(fx, whole), -1)
            << DtypeName(t) << " R=" << R << " flags=" << flags;
      }
}

// Against the definition: each rotated pair within 2^-21 * att * (|u| + |v|) of the long
// double rotation by the exact angle (the 2^-22 contract on c and s, plus rounding).
TEST_P(RopeViewsTest, OutOfPlaceF32AgainstTheLongDoubleDefinition) {
  std::mt19937 rng(kSeed + 5);
  const size_t B = 2, L = 40, H = 2, R = 128;
  const double att = 1.5;
  const PlanPtr plan = MakePlan(R, 10000.0, att);
  const std::vector<double> w = PlanFreqs(plan.get());
  for (unsigned flags : {0u, 1u}) {
    Tensor src(POSENC_DTYPE_F32, B, L, H, R, 0, true);
    src.FillRandom(rng());
    Tensor dst(POSENC_DTYPE_F32, B, L, H, R, 0, false);
    const std::vector<int32_t> pos = MixedPositions(rng, B * L);
    const posenc_rope_view sv = src.View(), dv = dst.View();
    ASSERT_EQ(posenc_rope_out(plan.get(), R, B, L, pos.data(), 0, &sv, &dv, flags), POSENC_OK);
    for (size_t b = 0; b < B; ++b)
      for (size_t t = 0; t < L; ++t)
        for (size_t h = 0; h < H; ++h)
          for (size_t i = 0; i < R / 2; ++i) {
            const size_t iu = flags ? 2 * i : i, iv = flags ? 2 * i + 1 : i + R / 2;
            const long double a = ExactReducedAngle(pos[b * L + t], w[i]);
            const long double c = att * std::cos(a), s = att * std::sin(a);
            const long double u = src.Value(src.Index(b, t, h, iu));
            const long double v = src.Value(src.Index(b, t, h, iv));
            const double bound =
                std::ldexp(att * static_cast<double>(std::fabs(u) + std::fabs(v)), -21);
            EXPECT_TRUE(WithinBound(dst.Value(dst.Index(b, t, h, iu)),
                                    static_cast<double>(u * c - v * s), bound));
            EXPECT_TRUE(WithinBound(dst.Value(dst.Index(b, t, h, iv)),
                                    static_cast<double>(v * c + u * s), bound));
          }
  }
}

// --- bad input --------------------------------------------------------------------------

constexpr size_t kB = 2, kL = 4, kH = 2, kR = 64, kD = 64;

TEST_P(RopeViewsTest, BadInputReturnsItsStatusAndWritesNothing) {
  const size_t B = kB, L = kL, H = kH, R = kR, D = kD;
  const PlanPtr plan = MakePlan(R, 10000.0, 1.0);
  Tensor src(POSENC_DTYPE_F32, B, L, H, D, 0, false);
  src.FillRandom(1);
  Tensor dst(POSENC_DTYPE_F32, B, L, H, D, 0, false);
  const Tensor src_before = src, dst_before = dst;
  const posenc_rope_view sv = src.View(), dv = dst.View();
  auto out = [&](posenc_rope_view s, posenc_rope_view d, size_t b = kB, size_t l = kL,
                 unsigned flags = 0, size_t head_dim = kD) {
    return posenc_rope_out(plan.get(), head_dim, b, l, nullptr, 0, &s, &d, flags);
  };
  auto expect_untouched = [&](const char* what) {
    EXPECT_EQ(FirstDifference(src, src_before), -1) << what;
    EXPECT_EQ(FirstDifference(dst, dst_before), -1) << what;
  };
  struct Bad {
    const char* what;
    posenc_rope_view s, d;
    size_t b, l;
    unsigned flags;
    size_t head_dim;
  };
  std::vector<Bad> bad;
  auto add = [&](const char* what, posenc_rope_view s, posenc_rope_view d, size_t b = kB,
                 size_t l = kL, unsigned flags = 0, size_t head_dim = kD) {
    bad.push_back({what, s, d, b, l, flags, head_dim});
  };
  posenc_rope_view v;
  v = dv, v.n_heads = 1;
  add("head counts differ", sv, v);
  v = dv, v.dtype = static_cast<posenc_dtype>(7);
  add("unknown dtype", sv, v);
  {
    posenc_rope_view s16 = sv, d32 = dv;
    s16.dtype = POSENC_DTYPE_BF16;
    add("bf16 -> f32 (unsupported pair)", s16, d32);
    s16.dtype = POSENC_DTYPE_F16;
    d32.dtype = POSENC_DTYPE_BF16;
    add("f16 -> bf16 (unsupported pair)", s16, d32);
  }
  v = sv, v.data = reinterpret_cast<float*>(src.data()) + 1;
  add("partial overlap of src and dst", sv, v);
  v = sv, v.token_stride = sv.token_stride + 1;
  add("same data, other strides", sv, v);
  v = sv, v.dtype = POSENC_DTYPE_BF16;
  add("same data, other type", sv, v);
  v = dv, v.batch_stride = dv.batch_stride - 1;
  add("batch stride overlaps the tokens", sv, v);
  v = dv, v.head_stride = D - 1;
  add("head stride overlaps", sv, v);
  v = dv, v.data = nullptr;
  add("null destination data", sv, v);
  v = dv, v.data = reinterpret_cast<char*>(dst.data()) + 1;
  add("misaligned destination", sv, v);
  v = dv, v.batch_stride = SIZE_MAX / 2;
  add("extent overflows", sv, v);
  add("unknown flags", sv, dv, B, L, 128);
  add("R > head_dim", sv, dv, B, L, 0, R - 2);
  add("n_batch * n_tokens overflows", sv, dv, SIZE_MAX / 2, 3);
  for (const Bad& x : bad) {
    EXPECT_EQ(out(x.s, x.d, x.b, x.l, x.flags, x.head_dim), POSENC_ERR_INVALID_ARGUMENT) << x.what;
    expect_untouched(x.what);
  }
  EXPECT_EQ(posenc_rope_out(nullptr, D, B, L, nullptr, 0, &sv, &dv, 0),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_out(plan.get(), D, B, L, nullptr, 0, nullptr, &dv, 0),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_out(plan.get(), D, B, L, nullptr, INT32_MAX - 2, &sv, &dv, 0),
            POSENC_ERR_INVALID_ARGUMENT);
  expect_untouched("null plan / src / run past INT32_MAX");
  // No-ops are valid.
  EXPECT_EQ(out(sv, dv, 0, L), POSENC_OK);
  EXPECT_EQ(out(sv, dv, B, 0), POSENC_OK);
  expect_untouched("no-ops");

  // Factors.
  EXPECT_EQ(posenc_rope_factors_bytes(3, 4, 0), 0u);
  EXPECT_EQ(posenc_rope_factors_bytes(64, 4, 128), 0u);  // unknown flags
  EXPECT_EQ(posenc_rope_factors_bytes(64, SIZE_MAX / 8, 0), 0u);
  const size_t bytes = posenc_rope_factors_bytes(R, B * L, 0);
  ASSERT_GT(bytes, 0u);
  std::vector<float> storage(bytes / sizeof(float) + 1, NaNSentinel(3));
  const std::vector<float> storage_before = storage;
  posenc_rope_factors f{};
  auto expect_storage = [&](const char* what) {
    for (size_t i = 0; i < storage.size(); ++i)
      ASSERT_TRUE(BitwiseEqual(storage[i], storage_before[i])) << what;
  };
  EXPECT_EQ(
      posenc_rope_factors_compute(plan.get(), B * L, nullptr, 0, 0, storage.data(), bytes - 1, &f),
      POSENC_ERR_INVALID_ARGUMENT);
  expect_storage("factor buffer too small");
  EXPECT_EQ(posenc_rope_factors_compute(plan.get(), B * L, nullptr, 0,
                                        POSENC_ROPE_MROPE_INTERLEAVED, storage.data(), bytes, &f),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_factors_compute(plan.get(), B * L, nullptr, 0, 0,
                                        reinterpret_cast<char*>(storage.data()) + 2, bytes, &f),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_rope_factors_compute(plan.get(), B * L, nullptr, 0, 0, nullptr, bytes, &f),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(
      posenc_rope_factors_compute(plan.get(), B * L, nullptr, 0, 0, storage.data(), bytes, nullptr),
      POSENC_ERR_INVALID_ARGUMENT);
  expect_storage("bad factor computations");
  ASSERT_EQ(
      posenc_rope_factors_compute(plan.get(), B * L, nullptr, 0, 0, storage.data(), bytes, &f),
      POSENC_OK);
  auto apply = [&](const posenc_rope_factors& fs, size_t first, size_t stride, unsigned flags,
                   posenc_rope_view s, posenc_rope_view d) {
    return posenc_rope_apply(&fs, first, stride, D, B, L, &s, &d, flags);
  };
  posenc_rope_factors g = f;
  EXPECT_EQ(apply(f, 1, L, 0, sv, dv), POSENC_ERR_INVALID_ARGUMENT) << "rows beyond n_rows";
  g.n_rows = B * L - 1;
  EXPECT_EQ(apply(g, 0, L, 0, sv, dv), POSENC_ERR_INVALID_ARGUMENT) << "factors too small";
  EXPECT_EQ(apply(f, 0, L, POSENC_ROPE_GPTJ, sv, dv), POSENC_ERR_INVALID_ARGUMENT)
      << "layout differs";
  EXPECT_EQ(apply(f, 0, L, 128, sv, dv), POSENC_ERR_INVALID_ARGUMENT) << "unknown flags";
  g = f, g.row_floats += 16;
  EXPECT_EQ(apply(g, 0, L, 0, sv, dv), POSENC_ERR_INVALID_ARGUMENT) << "row_floats";
  g = f, g.rotary_dim = 2 * D;
  EXPECT_EQ(apply(g, 0, L, 0, sv, dv), POSENC_ERR_INVALID_ARGUMENT) << "R > head_dim";
  g = f, g.data = nullptr;
  EXPECT_EQ(apply(g, 0, L, 0, sv, dv), POSENC_ERR_INVALID_ARGUMENT) << "null data";
  g = f, g.flags = 8;
  EXPECT_EQ(apply(g, 0, L, 8, sv, dv), POSENC_ERR_INVALID_ARGUMENT) << "factor flags";
  EXPECT_EQ(posenc_rope_apply(nullptr, 0, L, D, B, L, &sv, &dv, 0), POSENC_ERR_INVALID_ARGUMENT);
  {  // destination over the factors
    posenc_rope_view over = dv;
    over.data = storage.data();
    over.n_heads = 1;
    over.token_stride = D;
    over.batch_stride = L * D;
    posenc_rope_view s1 = sv;
    s1.n_heads = 1;
    EXPECT_EQ(apply(f, 0, L, 0, s1, over), POSENC_ERR_INVALID_ARGUMENT) << "dst over factors";
  }
  expect_untouched("bad applications");
}

// --- guard pages --------------------------------------------------------------------------

void OutOfPlaceNextToGuardPages() {
  const size_t R = 34, D = 38, H = 3, L = 5;
  const PlanPtr plan = MakePlan(R, 10000.0, 1.0);
  const size_t n = L * H * D;
  GuardedPages a(n), b(n);
  if (!a.ok() || !b.ok()) std::exit(1);
  for (TypePair p : kPairs) {
    for (int place = 0; place < 2; ++place) {
      const size_t xs = ElemSize(p.src), ys = ElemSize(p.dst);
      char* src = place ? reinterpret_cast<char*>(a.AtEnd(n * xs / 4)) - 0
                        : reinterpret_cast<char*>(a.AtStart());
      char* dst = place ? reinterpret_cast<char*>(b.AtStart())
                        : reinterpret_cast<char*>(b.AtEnd(n * ys / 4));
      for (size_t i = 0; i < n; ++i) {
        if (xs == 4)
          reinterpret_cast<float*>(src)[i] = static_cast<float>(i % 5) - 2.0f;
        else
          reinterpret_cast<uint16_t*>(src)[i] = 0x3c00;
      }
      const posenc_rope_view sv = {src, p.src, H, H * D, D, 0};
      const posenc_rope_view dv = {dst, p.dst, H, H * D, D, 0};
      for (unsigned flags : {0u, 1u, 2u, 5u})
        if (posenc_rope_out(plan.get(), D, 1, L, nullptr, 9, &sv, &dv, flags) != POSENC_OK)
          std::exit(2);
      const Factors f = MakeFactors(plan.get(), L, nullptr, 9, 0);
      if (posenc_rope_apply(&f.f, 0, 0, D, 1, L, &sv, &dv, 0) != POSENC_OK) std::exit(3);
    }
  }
  std::exit(0);
}

TEST_P(RopeViewsTest, NeverTouchesMemoryOutsideTheViews) {
  ExpectNoAccessNextToGuardPages(OutOfPlaceNextToGuardPages, isa(), "source and destination");
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeViewsTest);

}  // namespace
}  // namespace posenc_test
