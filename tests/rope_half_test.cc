// RoPE on bf16 and f16 storage (posenc_rope_bf16, posenc_rope_f16):
//  - the scalar conversions (kernels/half.h) against an independent reference in double:
//    every 16-bit value, and floats around every rounding boundary plus a sweep of all
//    exponents;
//  - every ISA's loads and stores of every 16-bit value, and its rounding of exact float
//    products that fall on, beside and between halfway points, overflow and underflow;
//  - on shapes around every vector width, every mode, layouts, strides, GQA, misaligned
//    bases and consecutive positions: each ISA's result is bit for bit posenc_rope_f32's
//    result of the same ISA on the widened input, rounded (the header's contract), within
//    the bound of the scalar variant, and nothing outside the pairs changes (NaN sentinels
//    between rows and around the data); the shape lists are rope_harness.h's (rope_shapes),
//    shared with rope_variants_test.cc;
//  - forward then inverse, NaN/Inf inputs, and views next to inaccessible pages.
// The argument checks are those of rope_errors_test.cc, which runs them for all three types.
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "../kernels/half.h"
#include "rope_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr uint32_t kSeed = 20251129;

// --- the storage types ---------------------------------------------------------------------

struct Storage {
  const char* name;
  RopeProblem::RotateFn rotate;
  int precision;      // significand bits, the implicit one included
  int min_exponent;   // of the smallest normal: 2^min_exponent
  double max_finite;  // the largest finite value
  float (*widen)(uint16_t);
  uint16_t (*narrow)(float);
  uint16_t nan_sentinel;  // a quiet NaN; sentinels add a small index tag to it
  uint16_t tag_mask;
};

const Storage kBf16 = {
    "bf16", posenc_rope_bf16, 8, -126, 0x1.fep127, posenc_bf16_to_f32, posenc_f32_to_bf16, 0x7fc0,
    0x3f};
const Storage kF16 = {
    "f16", posenc_rope_f16, 11, -14, 65504.0, posenc_f16_to_f32, posenc_f32_to_f16, 0x7e00, 0x1ff};
const Storage* const kStorages[] = {&kBf16, &kF16};

bool IsNan16(const Storage& st, uint16_t h) { return std::isnan(st.widen(h)); }

// --- an independent reference for the conversions --------------------------------------------

// The value of a 16-bit pattern in double (NaN for every NaN pattern).
double Reference16(const Storage& st, uint16_t h) {
  const int mant_bits = st.precision - 1;
  const int exp_bits = 15 - mant_bits;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int exp = (h >> mant_bits) & ((1 << exp_bits) - 1);
  const int mant = h & ((1 << mant_bits) - 1);
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == (1 << exp_bits) - 1) return mant ? NAN : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(mant, 1 - bias - mant_bits);
  return sign * std::ldexp(mant + (1 << mant_bits), exp - bias - mant_bits);
}

// x (not NaN) rounded to the storage type, to nearest with ties to even and IEEE overflow,
// as a double: computed from the quantum of x's binade with nearbyint (ties to even).
double ReferenceRound(const Storage& st, float x) {
  const double a = std::fabs(static_cast<double>(x));
  const double overflow = st.max_finite + std::ldexp(1.0, std::ilogb(st.max_finite) - st.precision);
  if (a >= overflow) return std::copysign(INFINITY, x);
  const int e = a == 0 ? st.min_exponent : std::max(std::ilogb(a), st.min_exponent);
  const double quantum = std::ldexp(1.0, e - (st.precision - 1));
  return std::copysign(std::nearbyint(a / quantum) * quantum, x);
}

// The narrowing of x agrees with the reference: the same value and sign, or for a NaN x a
// quiet NaN with x's sign and the leading bits of its payload.
testing::AssertionResult NarrowsLikeReference(const Storage& st, float x) {
  const uint16_t got = st.narrow(x);
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if (std::isnan(x)) {
    const int mant_bits = st.precision - 1;
    const uint16_t quiet = static_cast<uint16_t>(1u << (mant_bits - 1));
    const uint16_t payload =
        static_cast<uint16_t>((bits >> (23 - mant_bits)) & ((1u << mant_bits) - 1));
    const uint16_t want = static_cast<uint16_t>(
        ((bits >> 16) & 0x8000u) | (0x7fffu & ~((1u << mant_bits) - 1)) | quiet | payload);
    if (got == want) return testing::AssertionSuccess();
    return testing::AssertionFailure()
           << st.name << " of NaN 0x" << std::hex << bits << ": 0x" << got << ", want 0x" << want;
  }
  const double want = ReferenceRound(st, x), value = Reference16(st, got);
  if (value == want && std::signbit(value) == std::signbit(want))
    return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << st.name << " of " << std::hexfloat << x << " (0x" << std::hex << bits << "): 0x" << got
         << " = " << std::hexfloat << value << ", want " << want;
}

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

TEST(HalfConversionTest, WidensEvery16BitValueExactly) {
  for (const Storage* st : kStorages) {
    size_t failures = 0;
    for (uint32_t h = 0; h < 0x10000; ++h) {
      const float f = st->widen(static_cast<uint16_t>(h));
      const double want = Reference16(*st, static_cast<uint16_t>(h));
      const bool ok =
          std::isnan(want) ? std::isnan(f) : (f == want && std::signbit(f) == std::signbit(want));
      if (!ok && failures++ < 5)
        ADD_FAILURE() << st->name << " 0x" << std::hex << h << " -> " << std::hexfloat << f
                      << ", want " << want;
      // Narrowing back gives the same bits (a NaN comes back quiet, payload kept).
      const uint16_t back = st->narrow(f);
      const uint16_t quiet = static_cast<uint16_t>(1u << (st->precision - 2));
      const uint16_t want_back = static_cast<uint16_t>(std::isnan(want) ? (h | quiet) : h);
      if (back != want_back && failures++ < 5)
        ADD_FAILURE() << st->name << " 0x" << std::hex << h << " round trip: 0x" << back;
    }
    EXPECT_EQ(failures, 0u) << st->name;
  }
}

// Around every rounding boundary: each finite 16-bit value and the midpoint to the next one
// (exact in float; past the largest finite value, the midpoint to the overflow threshold),
// each with its float neighbours, both signs.
TEST(HalfConversionTest, NarrowsEveryHalfwayPointAndItsNeighbours) {
  for (const Storage* st : kStorages) {
    size_t failures = 0;
    for (uint32_t h = 0; h < 0x7fff; ++h) {
      const double lo = Reference16(*st, static_cast<uint16_t>(h));
      if (!std::isfinite(lo)) continue;
      const double hi =
          h + 1 < 0x7fff && std::isfinite(Reference16(*st, static_cast<uint16_t>(h + 1)))
              ? Reference16(*st, static_cast<uint16_t>(h + 1))
              : 2 * st->max_finite - Reference16(*st, static_cast<uint16_t>(h - 1));
      const float mid = static_cast<float>((lo + hi) / 2);  // exact
      for (float base : {static_cast<float>(lo), mid})
        for (float x : {std::nextafter(base, -INFINITY), base, std::nextafter(base, INFINITY)})
          for (float sx : {x, -x})
            if (!NarrowsLikeReference(*st, sx) && failures++ < 5)
              ADD_FAILURE() << NarrowsLikeReference(*st, sx).message();
    }
    EXPECT_EQ(failures, 0u) << st->name;
  }
}

// Floats of every exponent and sign: every 1021st bit pattern (NaNs included), then every
// pattern whose low 16 bits are 0x0000, 0x0001, 0x7fff, 0x8000, 0x8001 or 0xffff (bf16
// boundaries), and the f16 ones at each shift of the subnormal range.
TEST(HalfConversionTest, NarrowsFloatsOfEveryExponent) {
  std::vector<uint32_t> patterns;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 1021)
    patterns.push_back(static_cast<uint32_t>(b));
  for (uint32_t hi = 0; hi < 0x10000; ++hi)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      patterns.push_back(hi << 16 | lo);
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t exp = 95; exp <= 142; ++exp)
      for (uint32_t mant = 0; mant < (1u << 23); mant += 9973)
        for (uint32_t shift = 12; shift <= 24; ++shift) {
          const uint32_t half = 1u << (shift - 1);
          for (uint32_t low : {half - 1, half, half + 1})
            patterns.push_back(sign | exp << 23 | ((mant & ~((half << 1) - 1)) | low));
        }
  for (const Storage* st : kStorages) {
    size_t failures = 0;
    for (uint32_t b : patterns)
      if (!NarrowsLikeReference(*st, FromBits(b)) && failures++ < 5)
        ADD_FAILURE() << NarrowsLikeReference(*st, FromBits(b)).message();
    EXPECT_EQ(failures, 0u) << st->name << " (" << patterns.size() << " floats)";
  }
}

// --- 16-bit buffers laid out like a RopeProblem's ----------------------------------------------

// 16-bit elements in a 64-byte aligned block (an AlignedFloats of half as many floats).
class Buffer16 {
 public:
  explicit Buffer16(size_t n) : block_((n + 1) / 2), size_(n) {}
  uint16_t* data() { return reinterpret_cast<uint16_t*>(block_.data()); }
  const uint16_t* data() const { return reinterpret_cast<const uint16_t*>(block_.data()); }
  size_t size() const { return size_; }
  uint16_t& operator[](size_t i) { return data()[i]; }
  uint16_t operator[](size_t i) const { return data()[i]; }

 private:
  AlignedFloats block_;
  size_t size_;
};

// A RopeProblem's input stored as bf16 or f16: its values rounded, its NaN sentinels
// replaced by 16-bit NaN sentinels tagged with the index.
struct Problem16 {
  Problem16(const RopeShape& shape, const Storage& storage, uint32_t seed)
      : st(storage), problem(shape, seed), input(problem.input().size()), widened(input.size()) {
    for (size_t i = 0; i < input.size(); ++i) {
      const float x = problem.input()[i];
      input[i] =
          std::isnan(x) ? static_cast<uint16_t>(st.nan_sentinel | (i & st.tag_mask)) : st.narrow(x);
      widened[i] = st.widen(input[i]);
    }
  }

  // The input rotated by the 16-bit kernel with `isa` made active.
  Buffer16 Run(const posenc_rope_plan* plan, posenc_isa isa, unsigned flags) const {
    Buffer16 out = input;
    EXPECT_EQ(posenc_set_isa(isa), POSENC_OK) << posenc_isa_name(isa);
    EXPECT_EQ(problem.RotateWith(st.rotate, plan, out.data(), sizeof(uint16_t), flags), POSENC_OK)
        << posenc_isa_name(isa) << " " << st.name << ": " << Describe(problem.shape());
    return out;
  }

  // What the contract says Run() gives: posenc_rope_f32 with `isa` on the widened input,
  // rounded to the storage type (elements outside the pairs: the input's bits).
  Buffer16 Expected(const posenc_rope_plan* plan, posenc_isa isa, unsigned flags) const {
    AlignedFloats f32 = widened;
    EXPECT_EQ(posenc_set_isa(isa), POSENC_OK) << posenc_isa_name(isa);
    EXPECT_EQ(problem.Rotate(plan, f32, flags), POSENC_OK) << posenc_isa_name(isa);
    Buffer16 out = input;
    for (const RotatedPair& p : problem.pairs())
      for (size_t i : {p.u, p.v}) out[i] = st.narrow(f32[i]);
    return out;
  }

  const Storage& st;
  RopeProblem problem;
  Buffer16 input;
  AlignedFloats widened;
};

std::string Where(const Problem16& p, size_t i) {
  std::ostringstream os;
  os << "element " << i << (p.problem.IsRotated(i) ? " (rotated)" : " (outside the pairs)");
  return os.str();
}

// Bit for bit, except that a NaN matches any NaN in a rotated element (posenc.h: the
// payload of a NaN result is unspecified).
testing::AssertionResult SameBits(const Problem16& p, const Buffer16& got, const Buffer16& want) {
  size_t failures = 0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (p.problem.IsRotated(i) && IsNan16(p.st, got[i]) && IsNan16(p.st, want[i])) continue;
    if (failures++ == 0)
      first << Where(p, i) << ": 0x" << std::hex << got[i] << " (" << p.st.widen(got[i])
            << "), want 0x" << want[i] << " (" << p.st.widen(want[i]) << ")";
  }
  if (failures == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << failures << " element(s) differ; first " << first.str();
}

// One ulp of the storage type at the magnitude of x (the subnormal step below the normals).
double Ulp(const Storage& st, double x) {
  const int e = x == 0 ? st.min_exponent : std::max(std::ilogb(x), st.min_exponent);
  return std::ldexp(1.0, e - (st.precision - 1));
}

// Every rotated element of `got` within `scale` * att * (|u| + |v|) + `ulps` ulps (at the
// larger magnitude) of `want`; NaN where want is NaN; an infinity only where want has the
// same one or is within that bound of the overflow threshold.
testing::AssertionResult PairsWithin16(const Problem16& p, const Buffer16& got,
                                       const Buffer16& want, double scale, double ulps) {
  const double att = p.problem.shape().attention_factor;
  size_t failures = 0;
  std::ostringstream first;
  for (const RotatedPair& pair : p.problem.pairs()) {
    const double u = p.widened[pair.u], v = p.widened[pair.v];
    for (size_t i : {pair.u, pair.v}) {
      const double g = p.st.widen(got[i]), w = p.st.widen(want[i]);
      const double bound = scale * att * (std::fabs(u) + std::fabs(v)) +
                           ulps * Ulp(p.st, std::max(std::fabs(g), std::fabs(w)));
      bool ok;
      if (std::isnan(w) || std::isnan(g)) {
        ok = std::isnan(w) && std::isnan(g);
      } else if (std::isinf(w) || std::isinf(g)) {
        const double fin = std::isinf(g) ? w : g, inf = std::isinf(g) ? g : w;
        ok = g == w || (!std::isinf(fin) && (fin > 0) == (inf > 0) &&
                        std::fabs(fin) + bound >= p.st.max_finite);
      } else {
        ok = std::fabs(g - w) <= bound;
      }
      if (!ok && failures++ == 0)
        first << Where(p, i) << ": " << g << ", want " << w << " (bound " << bound
              << ", input u=" << u << " v=" << v << ")";
    }
  }
  if (failures == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << failures << " element(s) out of bound; first " << first.str();
}

// --- every ISA ------------------------------------------------------------------------------

class RopeHalfTest : public EveryIsaTest {};

// The contract on one shape, for both storage types: the ISA's result is the rounding of
// its f32 result, the scalar variant's likewise, and the two are within the f32 bound plus
// one ulp of the storage type; nothing outside the pairs changes.
void ExpectContract(posenc_isa isa, const RopeShape& shape) {
  const PlanPtr plan = MakePlan(shape);
  ASSERT_NE(plan, nullptr);
  for (const Storage* st : kStorages) {
    SCOPED_TRACE(std::string(st->name) + " " + Describe(shape));
    const Problem16 p(shape, *st, kSeed);
    const Buffer16 got = p.Run(plan.get(), isa, shape.flags);
    EXPECT_TRUE(SameBits(p, got, p.Expected(plan.get(), isa, shape.flags)))
        << posenc_isa_name(isa) << " vs its f32 result rounded";
    if (isa == POSENC_ISA_SCALAR) continue;
    const Buffer16 scalar = p.Run(plan.get(), POSENC_ISA_SCALAR, shape.flags);
    EXPECT_TRUE(PairsWithin16(p, got, scalar, POSENC_ROPE_SIMD_TOLERANCE, 1.0))
        << posenc_isa_name(isa) << " vs scalar";
  }
}

void ExpectContract(posenc_isa isa, const std::vector<RopeShape>& shapes) {
  for (const RopeShape& shape : shapes) {
    ExpectContract(isa, shape);
    if (testing::Test::HasFailure()) return;  // one case's report is enough
  }
}

TEST_P(RopeHalfTest, RotarySizesAroundVectorWidths) {
  ExpectContract(isa(), rope_shapes::RotarySizesAroundVectorWidths());
}

TEST_P(RopeHalfTest, PartialRotaryLeavesTheRestUntouched) {
  ExpectContract(isa(), rope_shapes::PartialRotaryShapes());
}

TEST_P(RopeHalfTest, LayoutsStridesAndGroupedQueryAttention) {
  ExpectContract(isa(), rope_shapes::Concat(rope_shapes::LayoutsAndStrides(),
                                            rope_shapes::GroupedQueryAttention()));
}

TEST_P(RopeHalfTest, MisalignedBasePointers) {
  ExpectContract(isa(), rope_shapes::MisalignedBases());
}

TEST_P(RopeHalfTest, PositionRunsAndAttentionFactors) {
  ExpectContract(isa(), rope_shapes::Concat(rope_shapes::ConsecutivePositionRuns(),
                                            rope_shapes::AttentionFactors()));
}

// NaN and infinities in the data: the contract holds, and they stay in their pair.
TEST_P(RopeHalfTest, NonFiniteInputsStayInTheirPair) {
  for (unsigned flags : AllFlagCombinations()) {
    RopeShape shape = rope_shapes::Square(34);
    shape.flags = flags;
    shape.n_tokens = 3;
    const PlanPtr plan = MakePlan(shape);
    for (const Storage* st : kStorages) {
      SCOPED_TRACE(std::string(st->name) + " " + Describe(shape));
      Problem16 p(shape, *st, kSeed);
      const std::vector<RotatedPair>& pairs = p.problem.pairs();
      const uint16_t inf = st->narrow(INFINITY);
      const uint16_t values[] = {st->nan_sentinel, inf, static_cast<uint16_t>(inf | 0x8000),
                                 static_cast<uint16_t>(st->nan_sentinel | 0x8001)};
      const size_t at[] = {pairs[0].u, pairs[5].v, pairs[16].u, pairs[20].v};
      for (int j = 0; j < 4; ++j) {
        p.input[at[j]] = values[j];
        p.widened[at[j]] = st->widen(values[j]);
      }
      const Buffer16 got = p.Run(plan.get(), isa(), flags);
      EXPECT_TRUE(SameBits(p, got, p.Expected(plan.get(), isa(), flags)));
      for (size_t i = 0; i < pairs.size(); ++i) {
        const bool finite_input =
            std::isfinite(p.widened[pairs[i].u]) && std::isfinite(p.widened[pairs[i].v]);
        if (finite_input) {
          EXPECT_TRUE(std::isfinite(st->widen(got[pairs[i].u])) &&
                      std::isfinite(st->widen(got[pairs[i].v])))
              << "pair " << i << " has finite input but a non-finite result";
        }
      }
    }
  }
}

// Forward, then POSENC_ROPE_INVERSE on the result: each element returns to within three
// ulps of the storage type at the pair's magnitude (the forward rounding of both members,
// rotated back, and the inverse's own), plus the f32 rotation's own error.
TEST_P(RopeHalfTest, ForwardThenInverseReturns) {
  for (unsigned layout : {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ})
    for (unsigned angles : {POSENC_ROPE_ACCURATE, POSENC_ROPE_F32_ANGLES}) {
      RopeShape shape = rope_shapes::Square(128);
      shape.n_tokens = 40;
      shape.q_heads = 4;
      shape.k_heads = 2;
      shape.flags = layout | angles;
      const PlanPtr plan = MakePlan(shape);
      for (const Storage* st : kStorages) {
        SCOPED_TRACE(std::string(st->name) + " " + Describe(shape));
        Problem16 p(shape, *st, kSeed);
        const Problem16 original = p;
        p.input = p.Run(plan.get(), isa(), shape.flags);
        const Buffer16 back = p.Run(plan.get(), isa(), shape.flags | POSENC_ROPE_INVERSE);
        size_t failures = 0;
        for (const RotatedPair& pair : original.problem.pairs()) {
          const double u = original.widened[pair.u], v = original.widened[pair.v];
          const double bound = 3.0 * Ulp(*st, std::max(std::fabs(u), std::fabs(v))) +
                               0x1p-20 * (std::fabs(u) + std::fabs(v));
          for (size_t i : {pair.u, pair.v})
            if (!(std::fabs(st->widen(back[i]) - original.widened[i]) <= bound) && failures++ == 0)
              ADD_FAILURE() << Where(original, i) << ": " << st->widen(back[i])
                            << " after the round "
                            << "trip, was " << original.widened[i] << " (bound " << bound << ")";
        }
        EXPECT_EQ(failures, 0u);
        for (size_t i = 0; i < back.size(); ++i)
          if (!original.problem.IsRotated(i)) {
            ASSERT_EQ(back[i], original.input[i]) << Where(original, i);
          }
      }
    }
}

// Every 16-bit value as one member of a pair whose other member is 1 (the first member, then
// the second: a variant may store the two halves' results together and test them together,
// and the other half's results, att for a finite value, are normal), at position 0 (c = att, s =
// 0): with att = 1 every value must come back as it was (loads and stores are exact); with the
// other factors each product u * att is exact in float and lands on, next to or between halfway
// points of the storage type, or past its range (overflow to infinity, f16 subnormals, zero), so
// the stored value shows the ISA's rounding, which must be kernels/half.h's. Both pair layouts,
// both directions.
TEST_P(RopeHalfTest, LoadsStoresAndRoundsEvery16BitValue) {
  constexpr size_t kHeadDim = 128, kHeads = 0x10000 / (kHeadDim / 2);
  const float factors[] = {1.0f,
                           1.0f + 0x1p-11f,
                           1.0f + 0x1p-8f,
                           1.0f - 0x1p-12f,
                           0.75f,
                           3.0f + 0x1p-9f,
                           0x1p-12f * (1.0f + 0x1p-11f),
                           0x1p-9f * 1.5f,
                           48.0f + 0x1p-7f};
  const int32_t position = 0;
  for (const Storage* st : kStorages)
    for (float att : factors) {
      posenc_rope_plan* raw = nullptr;
      ASSERT_EQ(posenc_rope_plan_create(&raw, kHeadDim, 10000.0, att), POSENC_OK);
      const PlanPtr plan(raw);
      for (unsigned flags : {0u, 1u, 2u, 3u})
        for (const bool second : {false, true}) {
          const bool gptj = flags & POSENC_ROPE_GPTJ;
          Buffer16 buf(kHeads * kHeadDim);
          // The member that holds the value (u) and the one that holds 1.
          const auto member = [&](size_t k, bool other) {
            const size_t h = k / (kHeadDim / 2), i = k % (kHeadDim / 2);
            const bool first = second == other;
            return h * kHeadDim + (gptj ? 2 * i + (first ? 0 : 1) : i + (first ? 0 : kHeadDim / 2));
          };
          for (size_t k = 0; k < 0x10000; ++k) {
            buf[member(k, false)] = static_cast<uint16_t>(k);
            buf[member(k, true)] = st->narrow(1.0f);
          }
          const Buffer16 in = buf;
          const posenc_rope_tensor q = {buf.data(), kHeads, kHeads * kHeadDim, kHeadDim};
          ASSERT_EQ(st->rotate(plan.get(), kHeadDim, 1, &position, 0, &q, nullptr, flags),
                    POSENC_OK);
          size_t failures = 0;
          for (size_t k = 0; k < 0x10000; ++k) {
            const size_t u = member(k, false);
            const float x = st->widen(in[u]);
            const float product = x * att;  // exact, or the float rounding every variant does
            const uint16_t want = st->narrow(product);
            const uint16_t got = buf[u];
            const bool ok = std::isnan(x)  ? IsNan16(*st, got)
                            : product == 0 ? st->widen(got) == 0  // +-0: the sign may differ
                                           : got == want;
            if (!ok && failures++ < 3)
              ADD_FAILURE() << st->name << " att " << std::hexfloat << att << " flags " << flags
                            << (second ? " (second member)" : "") << ": 0x" << std::hex << in[u]
                            << " (" << std::hexfloat << x << ") -> 0x" << got << ", want 0x" << want
                            << " (" << product << ")";
            if (att == 1.0f && !std::isnan(x) && x != 0 && got != in[u] && failures++ < 3)
              ADD_FAILURE() << st->name << ": 0x" << std::hex << in[u] << " not kept (0x" << got
                            << ")";
          }
          EXPECT_EQ(failures, 0u) << st->name << " att " << att << " flags " << flags
                                  << (second ? " (second member)" : "");
        }
    }
}

// Views that start right after, or end right before, an inaccessible page, for sizes
// around the vector widths and every flag combination, both storage types. Exits with 1 on
// an error status; any access outside a view kills the process.
[[noreturn]] void RotateNextToGuardPages() {
  for (size_t half : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 257}) {
    for (size_t extra : {0, 1}) {  // head_dim = R or R + 1 (odd element counts)
      const size_t head_dim = 2 * half + extra, tokens = 2, heads = 2;
      const size_t n = tokens * heads * head_dim;
      const PlanPtr plan = MakePlan(2 * half, 10000.0, 1.0);
      GuardedPages pages((n + 1) / 2);
      if (!pages.ok() || plan == nullptr) std::exit(1);
      uint16_t* const at_start = reinterpret_cast<uint16_t*>(pages.AtStart());
      uint16_t* const at_end = reinterpret_cast<uint16_t*>(pages.AtEnd(0)) - n;
      for (uint16_t* data : {at_start, at_end})
        for (const Storage* st : kStorages)
          for (unsigned flags : AllFlagCombinations()) {
            for (size_t i = 0; i < n; ++i) data[i] = st->narrow(static_cast<float>(i % 7) - 3.0f);
            const posenc_rope_tensor q = {data, heads, heads * head_dim, head_dim};
            if (st->rotate(plan.get(), head_dim, tokens, nullptr, 100, &q, nullptr, flags) !=
                POSENC_OK)
              std::exit(1);
          }
    }
  }
  std::exit(0);
}

TEST_P(RopeHalfTest, NeverTouchesMemoryOutsideTheView) {
  ExpectNoAccessNextToGuardPages(RotateNextToGuardPages, isa(), "a bf16 or f16 view");
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeHalfTest);

}  // namespace
}  // namespace posenc_test
