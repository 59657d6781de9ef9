// Re-rotation of cached keys (posenc_rope_rerotate_f32, _bf16, _f16) against its definition
// in posenc.h, with every expected value computed in long double from the definition, never
// from the library:
//  - keys x rotated by (plan A, p) in long double and stored as float (the cache), then
//    re-rotated by the active ISA to (plan B, p'): within 2^-21 * r * (|u| + |v|) of the
//    stored pair rotated in long double by p' w'_i - p w_i with factor r = att_B / att_A (the
//    header's 2^-22 * r on c and s plus the float rounding of the rotation, the bound of
//    rope_variants_test.cc), and within that plus the cache's own rounding of x rotated by
//    (plan B, p') directly;
//  - context shifts (runs and explicit positions, constant and varying p' - p, p' - p near
//    and beyond 2^31, positions near INT32_MAX and -INT32_MAX), LongRoPE short -> long,
//    dynamic NTK 4096 -> 16384, attention factors that differ (r != 1), float32-recipe
//    angles, the identity (bit for bit), two chunks of pairs (R = 1024);
//  - c and s themselves (a cached pair (1, 0) comes back as (c, s)): within 2^-22 * r over the
//    whole position range, with accurate angles and (against the difference of the two float
//    angles) with float32-recipe angles;
//  - one pass against undoing and redoing the rotation with posenc_rope_f32;
//  - bf16 / f16: the same ISA's f32 result on the widened input, rounded once;
//  - elements [R, D), gaps between head vectors and guards around the data untouched, no
//    access next to inaccessible pages;
// The argument checks (every error of the header, their valid edges, the no-ops) are in
// rope_rerotate_errors_test.cc, linked into the same binary.
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "half_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

// Against the stored keys rotated by the exact angle difference: the header's 2^-22 * r
// on c and s, plus the float rounding of the rotation (rope_variants_test's bound).
constexpr double kTightScale = 0x1p-21;
// Against x rotated by (plan B, p') directly: plus the cache's rounding of each element to
// float (2^-24 relative), carried through a rotation scaled by r.
constexpr double kDefinitionScale = 0x1p-21 + 0x1p-23;
constexpr uint32_t kSeed = 20260214;

using RerotateFn = posenc_status (*)(const posenc_rope_plan*, const int32_t*, int32_t,
                                     const posenc_rope_plan*, const int32_t*, int32_t, size_t,
                                     size_t, const posenc_rope_tensor*, unsigned);

// --- positions --------------------------------------------------------------------------

// One position per token, passed either as an array or (run) as NULL and its first value.
struct PositionList {
  std::vector<int32_t> p;
  bool run = false;

  const int32_t* array() const { return run ? nullptr : p.data(); }
  // With an array the start is ignored: pass a value that would be wrong.
  int32_t start() const { return run ? p[0] : INT32_MAX; }
};

PositionList RunOf(int32_t start, size_t n) {
  PositionList list;
  list.run = true;
  for (size_t t = 0; t < n; ++t) list.p.push_back(static_cast<int32_t>(start + int64_t(t)));
  return list;
}

PositionList Given(std::vector<int32_t> p) {
  PositionList list;
  list.p = std::move(p);
  return list;
}

// The same positions, passed as an array.
PositionList AsArray(const PositionList& list) { return Given(list.p); }

// Each position plus `delta` (which must stay in range), passed the same way.
PositionList Shifted(const PositionList& list, int64_t delta) {
  PositionList out = list;
  for (int32_t& p : out.p) p = static_cast<int32_t>(p + delta);
  return out;
}

std::string Describe(const PositionList& list) {
  std::ostringstream os;
  os << (list.run ? "run of " : "array of ") << list.p.size() << " from " << list.p.front();
  return os.str();
}

// Random positions in [lo, hi].
std::vector<int32_t> RandomIn(size_t n, int32_t lo, int32_t hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> any(lo, hi);
  std::vector<int32_t> p(n);
  for (int32_t& x : p) x = any(rng);
  return p;
}

// --- the keys -----------------------------------------------------------------------------

struct KeysShape {
  size_t rotary_dim = 64;
  size_t head_dim = 72;
  size_t n_heads = 3;
  bool head_major = false;  // [H, L, D] instead of [L, H, D]
  size_t pad = 0;           // extra elements after every head vector and every row
  size_t misalign = 0;      // floats after a 64-byte boundary
  unsigned flags = POSENC_ROPE_NEOX;
};

std::string Describe(const KeysShape& s) {
  std::ostringstream os;
  os << "R=" << s.rotary_dim << " D=" << s.head_dim << " H=" << s.n_heads
     << (s.head_major ? " [H,L,D]" : " [L,H,D]") << " pad=" << s.pad << " misalign=" << s.misalign
     << ((s.flags & POSENC_ROPE_GPTJ) ? " GPTJ" : " NEOX")
     << ((s.flags & POSENC_ROPE_F32_ANGLES) ? "|F32_ANGLES" : "");
  return os.str();
}

// A pair of one head vector: buffer indices of its elements, its token and pair index.
struct KeyPair {
  size_t u, v, token, pair;
};

// Keys x in one buffer: kGuard NaN sentinels on each side, sentinels in every gap, random
// head vectors (elements [R, D) included).
class KeysProblem {
 public:
  static constexpr size_t kGuard = 16;

  KeysProblem(const KeysShape& shape, size_t n_tokens, uint32_t seed)
      : shape_(shape), n_tokens_(n_tokens), offset_(kGuard + shape.misalign), x_(0) {
    const size_t d = shape.head_dim + shape.pad;
    if (shape.head_major) {
      token_stride_ = d;
      head_stride_ = n_tokens * d + shape.pad;
    } else {
      head_stride_ = d;
      token_stride_ = shape.n_heads * d + shape.pad;
    }
    const size_t extent = n_tokens == 0 ? 0
                                        : (n_tokens - 1) * token_stride_ +
                                              (shape.n_heads - 1) * head_stride_ + shape.head_dim;
    x_ = AlignedFloats(offset_ + extent + kGuard);
    rotated_.assign(x_.size(), 0);
    for (size_t i = 0; i < x_.size(); ++i) x_[i] = NaNSentinel(i);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    const size_t half = shape.rotary_dim / 2;
    const bool gptj = (shape.flags & POSENC_ROPE_GPTJ) != 0;
    for (size_t t = 0; t < n_tokens; ++t)
      for (size_t h = 0; h < shape.n_heads; ++h) {
        const size_t base = offset_ + t * token_stride_ + h * head_stride_;
        for (size_t e = 0; e < shape.head_dim; ++e) x_[base + e] = value(rng);
        for (size_t i = 0; i < half; ++i) {
          const size_t u = base + (gptj ? 2 * i : i), v = base + (gptj ? 2 * i + 1 : i + half);
          pairs_.push_back({u, v, t, i});
          rotated_[u] = rotated_[v] = 1;
        }
      }
  }

  const KeysShape& shape() const { return shape_; }
  size_t n_tokens() const { return n_tokens_; }
  const AlignedFloats& x() const { return x_; }
  const std::vector<KeyPair>& pairs() const { return pairs_; }
  bool IsRotated(size_t i) const { return rotated_[i] != 0; }

  // The view of the keys in `buffer`, whose elements of elem_size bytes are placed as x's.
  posenc_rope_tensor View(void* buffer, size_t elem_size) const {
    return {static_cast<char*>(buffer) + offset_ * elem_size, shape_.n_heads, token_stride_,
            head_stride_};
  }

  posenc_status Rerotate(RerotateFn fn, const posenc_rope_plan* from, const PositionList& p,
                         const posenc_rope_plan* to, const PositionList& p2, void* buffer,
                         size_t elem_size, unsigned flags) const {
    const posenc_rope_tensor keys = View(buffer, elem_size);
    return fn(from, p.array(), p.start(), to, p2.array(), p2.start(), shape_.head_dim, n_tokens_,
              &keys, flags);
  }

  // Every pair of `in` rotated in long double by angle[token * R/2 + pair] with cos and sin
  // times `factor`; every other element as it is in `in`.
  std::vector<double> Rotated(const AlignedFloats& in, const std::vector<long double>& angle,
                              long double factor) const {
    const size_t half = shape_.rotary_dim / 2;
    std::vector<double> out(in.data(), in.data() + in.size());
    for (const KeyPair& k : pairs_) {
      const long double a = angle[k.token * half + k.pair];
      const long double c = factor * std::cos(a), s = factor * std::sin(a);
      const long double u = in[k.u], v = in[k.v];
      out[k.u] = static_cast<double>(u * c - v * s);
      out[k.v] = static_cast<double>(v * c + u * s);
    }
    return out;
  }

 private:
  KeysShape shape_;
  size_t n_tokens_, offset_, token_stride_ = 0, head_stride_ = 0;
  AlignedFloats x_;
  std::vector<char> rotated_;
  std::vector<KeyPair> pairs_;
};

// ReferenceAngle of every (token, pair): the plan's frequencies at the given positions.
std::vector<long double> Angles(const posenc_rope_plan* plan, const std::vector<int32_t>& p,
                                unsigned flags) {
  const std::vector<double> w = PlanFreqs(plan);
  std::vector<long double> a;
  for (int32_t pos : p)
    for (double wi : w) a.push_back(ReferenceAngle(pos, wi, flags));
  return a;
}

std::vector<long double> Minus(std::vector<long double> a, const std::vector<long double>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] -= b[i];
  return a;
}

double Att(const posenc_rope_plan* plan) { return posenc_rope_plan_attention_factor(plan); }

// The cached keys: x rotated by (plan, p) in long double, stored as float.
AlignedFloats Cache(const KeysProblem& problem, const posenc_rope_plan* plan,
                    const std::vector<int32_t>& p) {
  const std::vector<double> rotated =
      problem.Rotated(problem.x(), Angles(plan, p, problem.shape().flags), Att(plan));
  AlignedFloats cache = problem.x();
  for (const KeyPair& k : problem.pairs())
    for (size_t i : {k.u, k.v}) cache[i] = static_cast<float>(rotated[i]);
  return cache;
}

// Every element outside the pairs bit for bit as in `in`.
testing::AssertionResult UntouchedOutsidePairs(const KeysProblem& problem, const AlignedFloats& in,
                                               const AlignedFloats& out) {
  for (size_t i = 0; i < in.size(); ++i)
    if (!problem.IsRotated(i) && !BitwiseEqual(in[i], out[i]))
      return testing::AssertionFailure()
             << "element " << i << " outside the pairs changed: " << in[i] << " -> " << out[i]
             << (i < KeysProblem::kGuard + problem.shape().misalign ? " (leading guard)"
                 : i >= in.size() - KeysProblem::kGuard             ? " (trailing guard)"
                                                                    : " (gap or [R, D))");
  return testing::AssertionSuccess();
}

// Every rotated element of `out` within scale * (|u| + |v|) of `expected` (u, v: the pair in
// `in`).
testing::AssertionResult PairsWithin(const KeysProblem& problem, const AlignedFloats& in,
                                     const AlignedFloats& out, const std::vector<double>& expected,
                                     double scale) {
  size_t failures = 0;
  std::ostringstream first;
  for (const KeyPair& k : problem.pairs()) {
    const double mag = std::fabs(in[k.u]) + std::fabs(in[k.v]);
    for (size_t i : {k.u, k.v}) {
      const double err = std::fabs(out[i] - expected[i]);
      if (WithinBound(out[i], expected[i], scale * mag) || failures++ > 0) continue;
      first << "first at token " << k.token << " pair " << k.pair << (i == k.u ? " u" : " v")
            << ": got " << out[i] << ", expected " << expected[i] << ", |diff| " << err << " = "
            << err / mag << " * (|u|+|v|) > " << scale << " * (|u|+|v|) (u=" << in[k.u]
            << " v=" << in[k.v] << ")";
    }
  }
  if (failures == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << failures << " element(s) out of bound; " << first.str();
}

// --- the checks ---------------------------------------------------------------------------

struct Endpoint {
  const posenc_rope_plan* plan;
  PositionList positions;
};

// bf16 and f16: the 16-bit kernel on the cache stored in that type equals, bit for bit, the
// same ISA's f32 re-rotation of the widened cache rounded once; sentinels stay.
void ExpectHalfMatchesF32(const KeysProblem& problem, const AlignedFloats& cache,
                          const Endpoint& from, const Endpoint& to, unsigned flags) {
  for (Storage st : kStorages) {
    const RerotateFn fn =
        st == Storage::kBf16 ? posenc_rope_rerotate_bf16 : posenc_rope_rerotate_f16;
    HalfBuffer in(cache.size());
    AlignedFloats widened(cache.size());
    for (size_t i = 0; i < cache.size(); ++i) {
      in.Set(i, std::isnan(cache[i]) ? HalfNaNSentinel(st, i) : ToHalfBits(st, cache[i]));
      widened[i] = DecodeHalf(st, in.Get(i));
    }
    HalfBuffer out = in;
    ASSERT_EQ(problem.Rerotate(fn, from.plan, from.positions, to.plan, to.positions, out.data(),
                               sizeof(uint16_t), flags),
              POSENC_OK)
        << StorageName(st);
    ASSERT_EQ(problem.Rerotate(posenc_rope_rerotate_f32, from.plan, from.positions, to.plan,
                               to.positions, widened.data(), sizeof(float), flags),
              POSENC_OK);
    size_t failures = 0;
    for (size_t i = 0; i < cache.size(); ++i) {
      const uint16_t want = problem.IsRotated(i) ? ToHalfBits(st, widened[i]) : in.Get(i);
      if (out.Get(i) != want && failures++ == 0)
        ADD_FAILURE() << StorageName(st) << " element " << i
                      << (problem.IsRotated(i) ? " (rotated)" : " (outside the pairs)") << ": "
                      << DescribeHalf(st, out.Get(i)) << ", want " << DescribeHalf(st, want);
    }
    EXPECT_EQ(failures, 0u) << StorageName(st);
  }
}

// Keys of `shape` cached at (from), re-rotated to (to) with the active ISA: f32 against both
// long double references, nothing else touched, and the 16-bit forms against f32.
void ExpectRerotation(const KeysShape& shape, const Endpoint& from, const Endpoint& to,
                      const std::string& what) {
  SCOPED_TRACE(what + ": " + Describe(shape) + ", " + Describe(from.positions) + " -> " +
               Describe(to.positions));
  ASSERT_EQ(from.positions.p.size(), to.positions.p.size());
  const KeysProblem problem(shape, from.positions.p.size(), kSeed);
  const unsigned flags = shape.flags;
  const AlignedFloats cache = Cache(problem, from.plan, from.positions.p);
  AlignedFloats out = cache;
  ASSERT_EQ(problem.Rerotate(posenc_rope_rerotate_f32, from.plan, from.positions, to.plan,
                             to.positions, out.data(), sizeof(float), flags),
            POSENC_OK);
  const long double r = static_cast<long double>(Att(to.plan)) / Att(from.plan);
  EXPECT_TRUE(UntouchedOutsidePairs(problem, cache, out));
  const std::vector<long double> delta =
      Minus(Angles(to.plan, to.positions.p, flags), Angles(from.plan, from.positions.p, flags));
  EXPECT_TRUE(PairsWithin(problem, cache, out, problem.Rotated(cache, delta, r),
                          kTightScale * static_cast<double>(r)))
      << "vs the cache rotated by p' w' - p w, factor r = " << static_cast<double>(r);
  EXPECT_TRUE(PairsWithin(
      problem, cache, out,
      problem.Rotated(problem.x(), Angles(to.plan, to.positions.p, flags), Att(to.plan)),
      kDefinitionScale * static_cast<double>(r)))
      << "vs x rotated by (to, p')";
  ExpectHalfMatchesF32(problem, cache, from, to, flags);
}

// The shapes every case runs on: tails of every vector width (R/2 = 17), the 64-pair block
// (R = 128), [H, L, D] with padded strides and a misaligned base, both pair layouts.
std::vector<KeysShape> Shapes(unsigned angles = POSENC_ROPE_ACCURATE) {
  std::vector<KeysShape> shapes;
  for (unsigned layout : {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ}) {
    KeysShape a;  // R = 64 < D = 72, [L, H, D]
    KeysShape b;
    b.rotary_dim = 34, b.head_dim = 37, b.n_heads = 2, b.head_major = true, b.pad = 3,
    b.misalign = 1;
    KeysShape c;
    c.rotary_dim = c.head_dim = 128, c.n_heads = 2, c.pad = 1;
    for (KeysShape s : {a, b, c}) {
      s.flags = layout | angles;
      shapes.push_back(s);
    }
  }
  return shapes;
}

PlanPtr FromFreqs(const std::vector<double>& freqs, double att) {
  posenc_rope_plan* plan = nullptr;
  EXPECT_EQ(posenc_rope_plan_create_from_freqs(&plan, 2 * freqs.size(), freqs.data(), att),
            POSENC_OK);
  return PlanPtr(plan);
}

PlanPtr Scaled(size_t r, double base, const posenc_rope_scaling& s) {
  posenc_rope_plan* plan = nullptr;
  EXPECT_EQ(posenc_rope_plan_create_scaled(&plan, r, base, &s), POSENC_OK);
  return PlanPtr(plan);
}

// LongRoPE with made-up factors (R/2 of each) at a given sequence length: short factors up
// to 4096, long ones beyond; the default attention factor (the same for both sets).
PlanPtr LongRope(size_t r, size_t seq_len) {
  std::vector<double> short_f(r / 2), long_f(r / 2);
  for (size_t i = 0; i < r / 2; ++i) {
    short_f[i] = 1.0 + 0.01 * static_cast<double>(i);
    long_f[i] = 1.0 + 0.75 * static_cast<double>(i) + 0.125 * static_cast<double>(i % 3);
  }
  posenc_rope_scaling s = {};
  s.type = POSENC_ROPE_SCALING_LONGROPE;
  s.short_factor = short_f.data(), s.short_factor_len = short_f.size();
  s.long_factor = long_f.data(), s.long_factor_len = long_f.size();
  s.original_max_position_embeddings = 4096;
  s.max_position_embeddings = 131072;
  s.seq_len = seq_len;
  return Scaled(r, 10000.0, s);
}

PlanPtr Dynamic(size_t r, size_t seq_len) {
  posenc_rope_scaling s = {};
  s.type = POSENC_ROPE_SCALING_DYNAMIC;
  s.factor = 2;
  s.max_position_embeddings = 4096;
  s.seq_len = seq_len;
  return Scaled(r, 10000.0, s);
}

PlanPtr Yarn(size_t r) {
  posenc_rope_scaling s = {};
  s.type = POSENC_ROPE_SCALING_YARN;
  s.factor = 4;
  s.original_max_position_embeddings = 4096;
  return Scaled(r, 10000.0, s);
}

class RopeRerotateTest : public EveryIsaTest {};

// A context shift: one plan, p' = p - 1000, as runs, as arrays and mixed (a constant p' - p:
// one cos/sin reused by every token), and p' - p that varies from token to token.
TEST_P(RopeRerotateTest, ContextShiftOfARun) {
  for (const KeysShape& shape : Shapes()) {
    const PlanPtr plan = MakePlan(shape.rotary_dim, 10000.0, 1.0);
    const PositionList from = RunOf(5000, 40), to = RunOf(4000, 40);
    ExpectRerotation(shape, {plan.get(), from}, {plan.get(), to}, "runs");
    ExpectRerotation(shape, {plan.get(), AsArray(from)}, {plan.get(), AsArray(to)}, "arrays");
    ExpectRerotation(shape, {plan.get(), from}, {plan.get(), AsArray(to)}, "run to array");
    ExpectRerotation(shape, {plan.get(), AsArray(from)}, {plan.get(), to}, "array to run");
    const PositionList scattered = Given(RandomIn(40, -(1 << 30), 1 << 30, 3));
    ExpectRerotation(shape, {plan.get(), scattered}, {plan.get(), Shifted(scattered, -1000)},
                     "scattered positions, constant shift");
    ExpectRerotation(shape, {plan.get(), scattered},
                     {plan.get(), Given(RandomIn(40, -(1 << 30), 1 << 30, 4))},
                     "scattered positions, varying shift");
    if (testing::Test::HasFailure()) return;
  }
}

// p' - p that grows by one from token to token (a kernel may step cos/sin from the previous
// token) over more tokens than a re-anchoring interval, and across a token of another kind.
TEST_P(RopeRerotateTest, ConsecutiveShiftsAcrossReanchoring) {
  for (const KeysShape& shape : Shapes()) {
    const PlanPtr plan = MakePlan(shape.rotary_dim, 500000.0, 1.0);
    // p fixed, p' a run: p' - p = -107, -106, ..., 192 (300 tokens: > 256 steps).
    ExpectRerotation(shape, {plan.get(), Given(std::vector<int32_t>(300, 107))},
                     {plan.get(), RunOf(0, 300)}, "consecutive shifts");
    // A shift stepped across a token whose shift is beyond 2^31 (computed from both angles).
    ExpectRerotation(shape, {plan.get(), Given({100, INT32_MAX, 101, 102, 102, 103})},
                     {plan.get(), Given({0, -INT32_MAX, 2, 4, 4, 6})},
                     "consecutive shifts around a wide one");
    if (testing::Test::HasFailure()) return;
  }
}

// Shifts whose |p' - p| is just below, at and beyond 2^31 (where the difference is no
// longer one position), runs ending at INT32_MAX and starting at -INT32_MAX.
TEST_P(RopeRerotateTest, ShiftsNearTwoToThe31AndExtremePositions) {
  const int32_t kMax = INT32_MAX;
  // p' - p: 2^31 - 1, 2^31, 2^31 + 1, -(2^31 - 1), -2^31, -(2^32 - 2), 2^32 - 2, 2^31 - 1,
  // -(2^31 - 1), 2^31 - 1, -2^31.
  const PositionList from = Given({-1, -1, -2, 0, 1, kMax, -kMax, 0, kMax, -kMax, 1 << 30});
  const PositionList to =
      Given({kMax - 1, kMax, kMax, -kMax, -kMax, -kMax, kMax, kMax, 0, 0, -(1 << 30)});
  for (const KeysShape& shape : Shapes()) {
    for (double base : {10000.0, 500000.0}) {
      const PlanPtr plan = MakePlan(shape.rotary_dim, base, 1.0);
      ExpectRerotation(shape, {plan.get(), from}, {plan.get(), to}, "near 2^31");
      ExpectRerotation(shape, {plan.get(), RunOf(kMax - 39, 40)}, {plan.get(), RunOf(-kMax, 40)},
                       "INT32_MAX run to -INT32_MAX run");
      ExpectRerotation(shape, {plan.get(), RunOf(-kMax, 40)}, {plan.get(), RunOf(kMax - 39, 40)},
                       "-INT32_MAX run to INT32_MAX run");
      ExpectRerotation(shape, {plan.get(), RunOf(kMax - 39, 40)},
                       {plan.get(), RunOf(kMax - 1039, 40)}, "shift by 1000 at INT32_MAX");
      ExpectRerotation(shape, {plan.get(), RunOf(-kMax + 1000, 40)}, {plan.get(), RunOf(-kMax, 40)},
                       "shift by 1000 at -INT32_MAX");
    }
    // Two frequency sets: each angle is reduced on its own, a small position on one side
    // and a wide one on the other.
    const PlanPtr a = MakePlan(shape.rotary_dim, 10000.0, 1.0);
    const PlanPtr b = MakePlan(shape.rotary_dim, 500000.0, 1.0);
    ExpectRerotation(shape, {a.get(), from}, {b.get(), to}, "two plans, near 2^31");
    ExpectRerotation(shape, {a.get(), RunOf(0, 40)}, {b.get(), RunOf(kMax - 39, 40)},
                     "two plans, 0 -> INT32_MAX");
    ExpectRerotation(shape, {b.get(), RunOf(-kMax, 40)}, {a.get(), RunOf(-20, 40)},
                     "two plans, -INT32_MAX -> -20");
    if (testing::Test::HasFailure()) return;
  }
}

// Two plan objects with the same frequencies, and the same plan at the same positions
// with a different attention factor.
TEST_P(RopeRerotateTest, DistinctPlansWithTheSameFrequencies) {
  for (const KeysShape& shape : Shapes()) {
    const PlanPtr a = MakePlan(shape.rotary_dim, 10000.0, 1.0);
    const PlanPtr b = MakePlan(shape.rotary_dim, 10000.0, 1.0);
    const PlanPtr c = MakePlan(shape.rotary_dim, 10000.0, 0.625);
    const PositionList p = Given(RandomIn(24, -INT32_MAX, INT32_MAX, 9));
    ExpectRerotation(shape, {a.get(), RunOf(3000, 24)}, {b.get(), RunOf(1000, 24)}, "copy");
    ExpectRerotation(shape, {a.get(), p}, {b.get(), Given(RandomIn(24, -INT32_MAX, INT32_MAX, 10))},
                     "copy, random positions");
    ExpectRerotation(shape, {a.get(), p}, {c.get(), p}, "same positions, att 1 -> 0.625");
    ExpectRerotation(shape, {c.get(), RunOf(70000, 24)}, {a.get(), RunOf(0, 24)},
                     "att 0.625 -> 1, shift");
    if (testing::Test::HasFailure()) return;
  }
}

// LongRoPE: the sequence passes original_max_position_embeddings, the cache moves from
// the short factors to the long ones at the same positions (and back).
TEST_P(RopeRerotateTest, LongRopeShortToLongFactors) {
  for (const KeysShape& shape : Shapes()) {
    const PlanPtr short_plan = LongRope(shape.rotary_dim, 4000);
    const PlanPtr long_plan = LongRope(shape.rotary_dim, 8000);
    ASSERT_NE(short_plan, nullptr);
    ASSERT_NE(long_plan, nullptr);
    ASSERT_NE(PlanFreqs(short_plan.get()), PlanFreqs(long_plan.get()));
    ASSERT_EQ(Att(short_plan.get()), Att(long_plan.get()));
    const PositionList prefix = RunOf(0, 48), tail = RunOf(4070, 40);
    std::mt19937 rng(11);
    const PositionList scattered = Given(RandomPositions(rng, 40));
    for (const PositionList& p : {prefix, tail, AsArray(tail), scattered}) {
      ExpectRerotation(shape, {short_plan.get(), p}, {long_plan.get(), p}, "short -> long");
      ExpectRerotation(shape, {long_plan.get(), p}, {short_plan.get(), p}, "long -> short");
    }
    ExpectRerotation(shape, {short_plan.get(), prefix}, {long_plan.get(), Shifted(prefix, 9000)},
                     "short -> long, shifted");
    if (testing::Test::HasFailure()) return;
  }
}

// Dynamic NTK: the plan for 4096 tokens (the default plan) to the one for 16384.
TEST_P(RopeRerotateTest, DynamicNtkForALongerSequence) {
  for (const KeysShape& shape : Shapes()) {
    const PlanPtr at_4096 = Dynamic(shape.rotary_dim, 4096);
    const PlanPtr at_16384 = Dynamic(shape.rotary_dim, 16384);
    ASSERT_NE(PlanFreqs(at_4096.get()), PlanFreqs(at_16384.get()));
    std::mt19937 rng(12);
    for (const PositionList& p :
         {RunOf(0, 40), RunOf(4090, 40), RunOf(16344, 40), Given(RandomPositions(rng, 40))})
      ExpectRerotation(shape, {at_4096.get(), p}, {at_16384.get(), p}, "dynamic 4096 -> 16384");
    if (testing::Test::HasFailure()) return;
  }
}

// Attention factors that differ: r = att_B / att_A != 1, with the same and with
// different frequencies.
TEST_P(RopeRerotateTest, AttentionFactorRatio) {
  for (const KeysShape& shape : Shapes()) {
    const std::vector<double> w = PlanFreqs(MakePlan(shape.rotary_dim, 10000.0, 1.0).get());
    const PlanPtr att13 = FromFreqs(w, 1.3), att07 = FromFreqs(w, 0.7);
    const PlanPtr yarn = Yarn(shape.rotary_dim), plain = MakePlan(shape.rotary_dim, 10000.0, 1.0);
    ASSERT_GT(Att(yarn.get()), 1.0);
    std::mt19937 rng(13);
    const PositionList p = Given(RandomPositions(rng, 32));
    ExpectRerotation(shape, {att13.get(), p}, {att07.get(), p}, "att 1.3 -> 0.7, same positions");
    ExpectRerotation(shape, {att13.get(), RunOf(2000, 32)}, {att07.get(), RunOf(1000, 32)},
                     "att 1.3 -> 0.7, shift");
    ExpectRerotation(shape, {att07.get(), p}, {att13.get(), p}, "att 0.7 -> 1.3");
    ExpectRerotation(shape, {plain.get(), p}, {yarn.get(), p}, "default -> YaRN");
    ExpectRerotation(shape, {yarn.get(), RunOf(-20, 32)}, {att07.get(), RunOf(100, 32)},
                     "YaRN -> att 0.7");
    if (testing::Test::HasFailure()) return;
  }
}

// Float32-recipe angles: the angle is the difference of the two plans' float angles
// (float)((float)p * (float)w), which ReferenceAngle forms for these flags.
TEST_P(RopeRerotateTest, Float32AnglesAreTheDifferenceOfTheFloatAngles) {
  for (const KeysShape& shape : Shapes(POSENC_ROPE_F32_ANGLES)) {
    const PlanPtr plan = MakePlan(shape.rotary_dim, 10000.0, 1.0);
    const PlanPtr short_plan = LongRope(shape.rotary_dim, 4000);
    const PlanPtr long_plan = LongRope(shape.rotary_dim, 8000);
    const PositionList p = Given(RandomIn(32, -(1 << 20), 1 << 20, 14));
    ExpectRerotation(shape, {plan.get(), RunOf(5000, 32)}, {plan.get(), RunOf(4000, 32)}, "shift");
    ExpectRerotation(shape, {plan.get(), p}, {plan.get(), Shifted(p, -1000)}, "shift, scattered");
    ExpectRerotation(shape, {plan.get(), RunOf(131072, 32)}, {plan.get(), RunOf(0, 32)},
                     "shift from 131072");
    ExpectRerotation(shape, {short_plan.get(), p}, {long_plan.get(), p}, "LongRoPE");
    ExpectRerotation(shape, {plan.get(), p}, {plan.get(), p}, "identity");
    if (testing::Test::HasFailure()) return;
  }
}

// The identity (same plan, same positions): angle 0, r = 1, so c = 1 and s = 0 exactly
// and every element keeps its bits, in every storage type and angle mode.
TEST_P(RopeRerotateTest, IdentityKeepsEveryBit) {
  for (unsigned angles : {POSENC_ROPE_ACCURATE, POSENC_ROPE_F32_ANGLES})
    for (const KeysShape& shape : Shapes(angles)) {
      SCOPED_TRACE(Describe(shape));
      const PlanPtr plan = MakePlan(shape.rotary_dim, 10000.0, 1.3);
      const PlanPtr copy = MakePlan(shape.rotary_dim, 10000.0, 1.3);
      std::mt19937 rng(15);
      for (const PositionList& p : {RunOf(-5, 40), Given(RandomPositions(rng, 40))})
        for (const posenc_rope_plan* to : {plan.get(), copy.get()}) {
          const KeysProblem problem(shape, p.p.size(), kSeed);
          const AlignedFloats cache = Cache(problem, plan.get(), p.p);
          AlignedFloats out = cache;
          ASSERT_EQ(problem.Rerotate(posenc_rope_rerotate_f32, plan.get(), p, to, p, out.data(),
                                     sizeof(float), shape.flags),
                    POSENC_OK);
          EXPECT_EQ(FirstBitwiseDifference(cache, out), -1) << Describe(p);
          for (Storage st : kStorages) {
            HalfBuffer in(cache.size());
            for (size_t i = 0; i < cache.size(); ++i)
              in.Set(i, std::isnan(cache[i]) ? HalfNaNSentinel(st, i) : ToHalfBits(st, cache[i]));
            HalfBuffer half = in;
            ASSERT_EQ(
                problem.Rerotate(
                    st == Storage::kBf16 ? posenc_rope_rerotate_bf16 : posenc_rope_rerotate_f16,
                    plan.get(), p, to, p, half.data(), sizeof(uint16_t), shape.flags),
                POSENC_OK);
            EXPECT_EQ(FirstBitwiseDifference(in.floats(), half.floats()), -1)
                << StorageName(st) << " " << Describe(p);
          }
        }
    }
}

// Two chunks of cos/sin (R = 1024: 512 pairs; R = 514: a one-pair second chunk).
TEST_P(RopeRerotateTest, MultiChunkPlans) {
  for (unsigned layout : {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ})
    for (unsigned angles : {POSENC_ROPE_ACCURATE, POSENC_ROPE_F32_ANGLES})
      for (size_t r : {size_t{1024}, size_t{514}}) {
        KeysShape shape;
        shape.rotary_dim = r, shape.head_dim = r + 6, shape.n_heads = 2, shape.pad = 1;
        shape.flags = layout | angles;
        const PlanPtr plan = MakePlan(r, 10000.0, 1.0);
        const PlanPtr short_plan = LongRope(r, 4000), long_plan = LongRope(r, 8000);
        const PlanPtr att07 = FromFreqs(PlanFreqs(long_plan.get()), 0.7);
        ExpectRerotation(shape, {plan.get(), RunOf(5000, 6)}, {plan.get(), RunOf(4000, 6)},
                         "shift");
        ExpectRerotation(shape, {plan.get(), Given({7, 7, 9, INT32_MAX, 5, 5})},
                         {plan.get(), Given({0, 0, 2, -INT32_MAX, 1, 1})}, "repeated shifts");
        ExpectRerotation(shape, {short_plan.get(), RunOf(4090, 6)},
                         {long_plan.get(), RunOf(4090, 6)}, "LongRoPE short -> long");
        ExpectRerotation(shape, {short_plan.get(), RunOf(4090, 6)}, {att07.get(), RunOf(10, 6)},
                         "LongRoPE short -> long, att 0.7, shift");
        if (testing::Test::HasFailure()) return;
      }
}

// One pass against two: posenc_rope_f32(A, p, INVERSE) then posenc_rope_f32(B, p') on
// the same cache (att 1 plans, so that the inverse undoes A), within twice the bound of one
// pass: the one pass is within 2^-21 * (|u| + |v|) of the exact result, and so is each of the
// two passes (the second on a pair of |u'| + |v'| <= sqrt(2) * (|u| + |v|)), where c and s
// stay near half their 2^-22 (CosSinWithinTheHeaderBound). Measured: 0.7 * 2^-21.
TEST_P(RopeRerotateTest, OnePassMatchesUndoAndRedo) {
  for (unsigned angles : {POSENC_ROPE_ACCURATE, POSENC_ROPE_F32_ANGLES})
    for (const KeysShape& shape : Shapes(angles)) {
      SCOPED_TRACE(Describe(shape));
      const PlanPtr plan = MakePlan(shape.rotary_dim, 10000.0, 1.0);
      const PlanPtr short_plan = LongRope(shape.rotary_dim, 4000);
      const PlanPtr long_plan = LongRope(shape.rotary_dim, 8000);
      const PlanPtr dyn_a = Dynamic(shape.rotary_dim, 4096),
                    dyn_b = Dynamic(shape.rotary_dim, 16384);
      // LongRoPE's attention factor is not 1: rebuild its plans from their frequencies.
      const PlanPtr short1 = FromFreqs(PlanFreqs(short_plan.get()), 1.0);
      const PlanPtr long1 = FromFreqs(PlanFreqs(long_plan.get()), 1.0);
      const bool f32 = (angles & POSENC_ROPE_F32_ANGLES) != 0;
      const int32_t wide = f32 ? (1 << 20) : INT32_MAX;
      const PositionList scattered = Given(RandomIn(32, -wide, wide, 16));
      const struct {
        const char* what;
        Endpoint from, to;
      } cases[] = {
          {"shift", {plan.get(), RunOf(5000, 32)}, {plan.get(), RunOf(4000, 32)}},
          {"varying shift",
           {plan.get(), scattered},
           {plan.get(), Given(RandomIn(32, -wide, wide, 17))}},
          {"LongRoPE", {short1.get(), scattered}, {long1.get(), scattered}},
          {"dynamic NTK", {dyn_a.get(), RunOf(4000, 32)}, {dyn_b.get(), RunOf(4000, 32)}},
      };
      for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        const KeysProblem problem(shape, 32, kSeed);
        const AlignedFloats cache = Cache(problem, c.from.plan, c.from.positions.p);
        AlignedFloats one = cache, two = cache;
        ASSERT_EQ(
            problem.Rerotate(posenc_rope_rerotate_f32, c.from.plan, c.from.positions, c.to.plan,
                             c.to.positions, one.data(), sizeof(float), shape.flags),
            POSENC_OK);
        posenc_rope_tensor keys = problem.View(two.data(), sizeof(float));
        ASSERT_EQ(posenc_rope_f32(c.from.plan, shape.head_dim, 32, c.from.positions.array(),
                                  c.from.positions.start(), &keys, nullptr,
                                  shape.flags | POSENC_ROPE_INVERSE),
                  POSENC_OK);
        ASSERT_EQ(posenc_rope_f32(c.to.plan, shape.head_dim, 32, c.to.positions.array(),
                                  c.to.positions.start(), &keys, nullptr, shape.flags),
                  POSENC_OK);
        EXPECT_TRUE(UntouchedOutsidePairs(problem, cache, one));
        EXPECT_TRUE(PairsWithin(problem, cache, one,
                                std::vector<double>(two.data(), two.data() + two.size()),
                                2 * kTightScale));
      }
      if (testing::Test::HasFailure()) return;
    }
}

// --- c and s themselves ---------------------------------------------------------------------

constexpr double kCosSinBound = 0x1p-22;  // the header's bound on c and s, times r

// c and s of every (token, pair) of a re-rotation read back through the public API: a
// cached pair (1, 0) re-rotates to (c, s) exactly. Indexed [token * R/2 + pair].
struct CosSin {
  std::vector<float> c, s;
};

CosSin ReadCosSin(const posenc_rope_plan* from, const std::vector<int32_t>& p,
                  const posenc_rope_plan* to, const std::vector<int32_t>& q, unsigned flags) {
  const size_t r = posenc_rope_plan_rotary_dim(to), half = r / 2;
  const bool gptj = (flags & POSENC_ROPE_GPTJ) != 0;
  std::vector<float> x(p.size() * r, 0.0f);
  for (size_t t = 0; t < p.size(); ++t)
    for (size_t i = 0; i < half; ++i) x[t * r + (gptj ? 2 * i : i)] = 1.0f;
  const posenc_rope_tensor keys = {x.data(), 1, r, r};
  EXPECT_EQ(posenc_rope_rerotate_f32(from, p.data(), INT32_MAX, to, q.data(), INT32_MAX, r,
                                     p.size(), &keys, flags),
            POSENC_OK);
  CosSin out;
  for (size_t t = 0; t < p.size(); ++t)
    for (size_t i = 0; i < half; ++i) {
      out.c.push_back(x[t * r + (gptj ? 2 * i : i)]);
      out.s.push_back(x[t * r + (gptj ? 2 * i + 1 : i + half)]);
    }
  return out;
}

// The largest |c - r cos(a)| and |s - r sin(a)|, divided by r, with a = p' w' - p w (each
// angle as ReferenceAngle forms it for these flags); where it occurs in *where.
double WorstCosSinError(const posenc_rope_plan* from, const std::vector<int32_t>& p,
                        const posenc_rope_plan* to, const std::vector<int32_t>& q, unsigned flags,
                        std::string* where) {
  const CosSin got = ReadCosSin(from, p, to, q, flags);
  const std::vector<long double> a = Minus(Angles(to, q, flags), Angles(from, p, flags));
  const long double r = static_cast<long double>(Att(to)) / Att(from);
  const size_t half = posenc_rope_plan_rotary_dim(to) / 2;
  double worst = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    const double err = static_cast<double>(std::max(std::fabs(got.c[k] - r * std::cos(a[k])),
                                                    std::fabs(got.s[k] - r * std::sin(a[k]))) /
                                           r);
    if (err > worst || std::isnan(err)) {
      worst = std::isnan(err) ? INFINITY : err;
      std::ostringstream os;
      os << p[k / half] << " -> " << q[k / half] << " pair " << k % half << ": c=" << got.c[k]
         << " s=" << got.s[k];
      *where = os.str();
    }
  }
  return worst;
}

std::vector<int32_t> Reversed(std::vector<int32_t> p) { return {p.rbegin(), p.rend()}; }

// Accurate angles: c and s within 2^-22 * r of r cos(a), r sin(a) of the exact a, whichever
// way the kernel forms a (p' - p as one position, both angles reduced, stepped from the
// previous token), for positions over the whole range |p| < 2^31.
TEST_P(RopeRerotateTest, CosSinWithinTheHeaderBound) {
  const size_t r = 128;
  const PlanPtr a = MakePlan(r, 10000.0, 1.0), a_copy = MakePlan(r, 10000.0, 1.0);
  const PlanPtr a07 = MakePlan(r, 10000.0, 0.7), b = MakePlan(r, 500000.0, 1.0);
  const PlanPtr short_plan = LongRope(r, 4000), long_plan = LongRope(r, 8000);
  const std::vector<int32_t> wide = AccuracyPositions();
  const std::vector<int32_t> mid = RandomIn(wide.size(), -(1 << 30), 1 << 30, 21);
  std::vector<int32_t> mid_shifted = mid;
  for (int32_t& x : mid_shifted) x -= 1000;
  const struct {
    const char* what;
    std::vector<int32_t> p, q;
  } moves[] = {
      {"wide -> wide reversed", wide, Reversed(wide)},
      {"shift by 1000", mid, mid_shifted},
      {"107 -> 0..599 (stepped)", std::vector<int32_t>(600, 107), RunOf(0, 600).p},
      {"INT32_MAX - 599.. -> 0..", RunOf(INT32_MAX - 599, 600).p, RunOf(0, 600).p},
      {"-INT32_MAX.. -> INT32_MAX - 599..", RunOf(-INT32_MAX, 600).p,
       RunOf(INT32_MAX - 599, 600).p},
  };
  const struct {
    const char* what;
    const posenc_rope_plan *from, *to;
  } plans[] = {
      {"same plan", a.get(), a.get()},       {"copy", a.get(), a_copy.get()},
      {"att 1 -> 0.7", a.get(), a07.get()},  {"base 1e4 -> 5e5", a.get(), b.get()},
      {"base 5e5 -> 1e4", b.get(), a.get()}, {"LongRoPE", short_plan.get(), long_plan.get()}};
  for (unsigned layout : {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ})
    for (const auto& move : moves)
      for (const auto& plan : plans) {
        // GPTJ only lays the same c and s out differently: one plan pair is enough.
        if (layout == POSENC_ROPE_GPTJ && plan.from != b.get()) continue;
        std::string where;
        const double worst = WorstCosSinError(plan.from, move.p, plan.to, move.q, layout, &where);
        EXPECT_LE(worst, kCosSinBound)
            << plan.what << ", " << move.what << ((layout & POSENC_ROPE_GPTJ) ? " GPTJ" : " NEOX")
            << ": " << where;
      }
}

// Float32-recipe angles: c and s against the difference of the two float angles, within
// 2^-22 * r as the header states, near 0 and over the whole position range (differences of
// float angles up to ~2^32 rad: the reduction by a three-part 2 pi must stay exact there; a
// single double product k * 2 pi cost 1.7 * 2^-22 at such positions).
TEST_P(RopeRerotateTest, Float32AnglesCosSin) {
  const size_t r = 128;
  const PlanPtr a = MakePlan(r, 10000.0, 1.0), b = MakePlan(r, 500000.0, 1.3);
  const PlanPtr short_plan = LongRope(r, 4000), long_plan = LongRope(r, 8000);
  const std::vector<int32_t> near = RandomIn(400, -(1 << 24), 1 << 24, 22);
  const std::vector<int32_t> near2 = RandomIn(400, -(1 << 24), 1 << 24, 23);
  const std::vector<int32_t> wide = RandomIn(400, -INT32_MAX, INT32_MAX, 24);
  const std::vector<int32_t> wide2 = RandomIn(400, -INT32_MAX, INT32_MAX, 25);
  for (unsigned layout : {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ}) {
    const unsigned flags = layout | POSENC_ROPE_F32_ANGLES;
    for (const auto& [from, to] :
         {std::make_pair(a.get(), a.get()), std::make_pair(a.get(), b.get()),
          std::make_pair(short_plan.get(), long_plan.get())}) {
      std::string where;
      EXPECT_LE(WorstCosSinError(from, near, to, near2, flags, &where), kCosSinBound) << where;
      EXPECT_LE(WorstCosSinError(from, near, to, near, flags, &where), kCosSinBound) << where;
      EXPECT_LE(WorstCosSinError(from, wide, to, wide2, flags, &where), kCosSinBound) << where;
      EXPECT_LE(WorstCosSinError(from, wide, to, wide, flags, &where), kCosSinBound) << where;
    }
  }
}

// Float32-recipe angles of the largest frequencies a plan takes (|w| <= 1024): float angles
// up to 2^41 rad, whose difference the kernel must still form and reduce without a rounding
// that grows with them (found by the fuzz target: a double difference of the raw angles and
// a one-step reduction lost 1e-4 at w = 1024, p = 2^31 - 1).
TEST_P(RopeRerotateTest, Float32AnglesOfTheLargestFrequencies) {
  const PlanPtr from = FromFreqs({1024.0, -1024.0, 3.0, 1.0, 0.7, 1e-4}, 1.0);
  const PlanPtr to = FromFreqs({0.7, 1024.0, -1000.5, 3.0, 1e-4, 1024.0}, 1.0);
  const std::vector<int32_t> p = {INT32_MAX, -INT32_MAX, 2000000000, 3, 0, 123456789};
  const std::vector<int32_t> q = {3, INT32_MAX - 1, -2000000000, INT32_MAX, 1, -7};
  for (unsigned layout : {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ}) {
    std::string where;
    EXPECT_LE(WorstCosSinError(from.get(), p, to.get(), q, layout | POSENC_ROPE_F32_ANGLES, &where),
              kCosSinBound)
        << where;
    EXPECT_LE(WorstCosSinError(to.get(), q, from.get(), p, layout | POSENC_ROPE_F32_ANGLES, &where),
              kCosSinBound)
        << where;
  }
}

// No access outside the view: keys right after and right before inaccessible pages.
[[noreturn]] void RerotateNextToGuardPages() {
  for (size_t half : {1, 3, 8, 9, 16, 17, 33, 64, 257}) {
    for (size_t extra : {0, 1}) {
      const size_t head_dim = 2 * half + extra, tokens = 3, heads = 2;
      const size_t n = tokens * heads * head_dim;
      const PlanPtr a = MakePlan(2 * half, 10000.0, 1.0), b = MakePlan(2 * half, 500000.0, 2.0);
      GuardedPages pages(n);
      if (!pages.ok() || a == nullptr || b == nullptr) std::exit(1);
      for (size_t elem : {sizeof(float), sizeof(uint16_t)}) {
        char* starts[] = {reinterpret_cast<char*>(pages.AtStart()),
                          reinterpret_cast<char*>(pages.AtEnd(n)) + (sizeof(float) - elem) * n};
        for (char* data : starts)
          for (unsigned flags : {0u, 1u, 4u, 5u}) {
            std::memset(data, 0x3c, n * elem);
            const posenc_rope_tensor keys = {data, heads, heads * head_dim, head_dim};
            const RerotateFn fns[] = {posenc_rope_rerotate_bf16, posenc_rope_rerotate_f16};
            for (RerotateFn fn : elem == sizeof(float)
                                     ? std::vector<RerotateFn>{posenc_rope_rerotate_f32}
                                     : std::vector<RerotateFn>(fns, fns + 2))
              if (fn(a.get(), nullptr, 100, b.get(), nullptr, -7, head_dim, tokens, &keys, flags) !=
                      POSENC_OK ||
                  fn(a.get(), nullptr, 100, a.get(), nullptr, 7, head_dim, tokens, &keys, flags) !=
                      POSENC_OK)
                std::exit(1);
          }
      }
    }
  }
  std::exit(0);
}

TEST_P(RopeRerotateTest, NeverTouchesMemoryOutsideTheView) {
  ExpectNoAccessNextToGuardPages(RerotateNextToGuardPages, isa(), "the keys");
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeRerotateTest);

}  // namespace
}  // namespace posenc_test
