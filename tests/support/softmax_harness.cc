// The softmax suite's harness (softmax_harness.h): the element conversions, problems, the
// long double reference, the checks, the options and the fixture's Check().
#include "softmax_harness.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <utility>

namespace posenc_test::softmax {

// ---------------------------------------------------------------------------- elements

uint32_t FloatBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float BitsFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

float HalfValue(posenc_dtype t, uint16_t bits) {
  if (t == kBf16) return BitsFloat(uint32_t{bits} << 16);
  const uint32_t sign = uint32_t{bits & 0x8000u} << 16, exp = (bits >> 10) & 0x1fu,
                 mant = bits & 0x3ffu;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
  const float sub = static_cast<float>(mant) * 0x1p-24f;  // exact
  return sign ? -sub : sub;
}

// m >> s rounded to nearest, ties to even (1 <= s <= 31).
uint32_t ShiftRoundEven(uint32_t m, unsigned s) {
  const uint32_t q = m >> s, rest = m & ((1u << s) - 1u), half = 1u << (s - 1);
  return q + ((rest > half || (rest == half && (q & 1u))) ? 1u : 0u);
}

uint16_t HalfBits(posenc_dtype t, float v) {
  const uint32_t b = FloatBits(v), a = b & 0x7fffffffu;
  const auto sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  if (t == kBf16) {
    if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7fc0u);
    return static_cast<uint16_t>(sign | ShiftRoundEven(a, 16));
  }
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (a >= 0x38800000u)                                                // >= 2^-14: normal
    return static_cast<uint16_t>(sign | ShiftRoundEven(a - (112u << 23), 13));
  if (a < 0x33000000u) return sign;  // below 2^-25 (2^-25 itself: a tie, to 0)
  // Subnormal: the value in units of 2^-24 is the float's significand >> (126 - exponent).
  return static_cast<uint16_t>(sign |
                               ShiftRoundEven((a & 0x7fffffu) | 0x800000u, 126u - (a >> 23)));
}

float RoundTo(posenc_dtype t, float v) { return t == kF32 ? v : HalfValue(t, HalfBits(t, v)); }

double HalfUlpOf(posenc_dtype t, double v) {
  const int fraction_bits = t == kBf16 ? 7 : 10, min_exponent = t == kBf16 ? -126 : -14;
  const uint32_t b = FloatBits(static_cast<float>(std::fabs(v)));  // rounding up is safe
  const int e = std::max(static_cast<int>((b >> 23) & 0xffu) - 127, min_exponent);
  const uint64_t bits = static_cast<uint64_t>(e - fraction_bits - 1 + 1023) << 52;
  double half;
  std::memcpy(&half, &bits, sizeof half);
  return half;
}

std::string Value(float f) {
  std::ostringstream os;
  os << std::setprecision(9) << f << " (0x" << std::hex << FloatBits(f) << ")";
  return os.str();
}

uint32_t Elems::Bits(size_t i) const {
  if (type_ == kF32) return FloatBits(buf_[i]);
  uint16_t h;
  std::memcpy(&h, At(i), sizeof h);
  return h;
}

void Elems::SetBits(size_t i, uint32_t bits) {
  if (type_ == kF32) {
    buf_[i] = BitsFloat(bits);
  } else {
    const auto h = static_cast<uint16_t>(bits);
    std::memcpy(At(i), &h, sizeof h);
  }
}

void Elems::SetSentinel(size_t i) {
  SetBits(i, type_ == kF32 ? FloatBits(NaNSentinel(i)) : HalfNaNSentinel(HalfOf(type_), i));
}

bool SameBits(const Elems& a, const Elems& b) {
  return FirstBitwiseDifference(a.floats(), b.floats()) == -1;
}

// ---------------------------------------------------------------------------- problems

Grid::Grid(const Layout& l, size_t heads, size_t n_q, size_t n_k) {
  const size_t inner_count = l.query_major ? heads : n_q;
  const size_t inner = n_k + l.inner_pad;
  const size_t outer = (inner_count - 1) * inner + n_k + l.outer_pad;
  head_stride = l.query_major ? inner : outer;
  row_stride = l.query_major ? outer : inner;
  offset = kGuard + l.misalign;
  size = Index(heads - 1, n_q - 1, n_k - 1) + 1 + kGuard;
  used.assign(size, 0);
  for (size_t h = 0; h < heads; ++h)
    for (size_t i = 0; i < n_q; ++i)
      for (size_t j = 0; j < n_k; ++j) used[Index(h, i, j)] = 1;
}

std::string Describe(const Spec& s) {
  std::ostringstream os;
  const auto layout = [&](const Layout& l) {
    os << (l.query_major ? "[q,H,k]" : "[H,q,k]") << " pads " << l.inner_pad << "," << l.outer_pad
       << " misalign " << l.misalign;
  };
  os << "'" << s.name << "' heads=" << s.heads << " n_q=" << s.n_q << " n_k=" << s.n_k << " "
     << TypeName(s.xt) << "->" << TypeName(s.yt) << " x ";
  layout(s.xl);
  os << " y ";
  layout(s.yl);
  os << " scale=" << s.scale << " flags=0x" << std::hex << s.flags << std::dec;
  if (s.flags & kSoftcap) os << " softcap=" << s.softcap;
  if (s.flags & kWindow) os << " window=" << s.window;
  if (s.qpos.empty()) os << " q_offset=" << s.q_offset;
  os << (s.slopes.empty() ? "" : " slopes") << (s.sinks.empty() ? "" : " sinks")
     << (s.kpos.empty() ? "" : " kpos") << (s.qpos.empty() ? "" : " qpos");
  if (s.mask.on)
    os << " mask " << TypeName(s.mask.dtype) << (s.mask.per_head ? " per head" : " shared")
       << (s.mask.query_major ? " [q,H,k]" : "") << " row pad " << s.mask.row_pad;
  return os.str();
}

float RandomScore(std::mt19937& rng, const Spec&, size_t, size_t, size_t) {
  const int p = std::uniform_int_distribution<int>(0, 63)(rng);
  if (p == 0) return -kInf;
  if (p == 1) return 0.0f;
  if (p == 2) return -0.0f;
  return std::uniform_real_distribution<float>(-10.0f, 10.0f)(rng);
}

float RandomMask(std::mt19937& rng, const Spec&, size_t, size_t, size_t) {
  const int p = std::uniform_int_distribution<int>(0, 7)(rng);
  if (p == 0) return -kInf;
  if (p <= 2) return 0.0f;
  return std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
}

float LlamaAlibiMask(std::mt19937&, const Spec& s, size_t, size_t i, size_t j) {
  const int64_t d = static_cast<int64_t>(KeyPos(s, j)) - QueryPos(s, i);
  return d > 0 ? -kInf : static_cast<float>(d);
}

Problem::Problem(const Spec& spec, uint32_t seed)
    : spec_(spec),
      xg_(spec.xl, spec.heads, spec.n_q, spec.n_k),
      yg_(spec.yl, spec.heads, spec.n_q, spec.n_k),
      x_(spec.xt, xg_.size),
      mask_(spec.mask.dtype, 0) {
  const Spec& s = spec_;
  std::mt19937 rng(seed);
  for (size_t k = 0; k < x_.size(); ++k) x_.SetSentinel(k);
  const ValueFn score = s.scores ? s.scores : ValueFn(RandomScore);
  for (size_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < s.n_q; ++i)
      for (size_t j = 0; j < s.n_k; ++j) x_.Set(xg_.Index(h, i, j), score(rng, s, h, i, j));
  if (s.mask.on) {
    const size_t row = s.n_k + s.mask.row_pad;
    if (!s.mask.per_head) {
      mask_row_stride_ = row;
    } else if (s.mask.query_major) {
      mask_head_stride_ = row;
      mask_row_stride_ = (s.heads - 1) * row + s.n_k + 1;
    } else {
      mask_row_stride_ = row;
      mask_head_stride_ = (s.n_q - 1) * row + s.n_k + 2;
    }
    mask_ = Elems(s.mask.dtype, MaskIndex(s.heads - 1, s.n_q - 1, s.n_k - 1) + 1 + kGuard);
    for (size_t k = 0; k < mask_.size(); ++k) mask_.SetSentinel(k);
    const ValueFn value = s.mask.values ? s.mask.values : ValueFn(RandomMask);
    for (size_t h = 0; h < (s.mask.per_head ? s.heads : 1); ++h)
      for (size_t i = 0; i < s.n_q; ++i)
        for (size_t j = 0; j < s.n_k; ++j) mask_.Set(MaskIndex(h, i, j), value(rng, s, h, i, j));
  }
}

posenc_softmax_params Problem::Params(const Elems& mask) const {
  const Spec& s = spec_;
  posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
  p.scale = s.scale;
  p.softcap = s.softcap;
  p.slopes = s.slopes.empty() ? nullptr : s.slopes.data();
  p.sinks = s.sinks.empty() ? nullptr : s.sinks.data();
  if (s.mask.on) {
    p.mask = mask.At(kGuard);
    p.mask_dtype = s.mask.dtype;
    p.mask_row_stride = mask_row_stride_ == s.n_k ? 0 : mask_row_stride_;
    p.mask_head_stride = mask_head_stride_;
  }
  p.kpos = s.kpos.empty() ? nullptr : s.kpos.data();
  p.qpos = s.qpos.empty() ? nullptr : s.qpos.data();
  p.q_offset = s.q_offset;
  p.window = s.window;
  p.flags = s.flags;
  return p;
}

Problem::Output Problem::Run(posenc_dtype yt, bool in_place, posenc_isa isa) const {
  const Spec& s = spec_;
  const posenc_isa before = posenc_active_isa();
  EXPECT_EQ(posenc_set_isa(isa), POSENC_OK);
  Elems x = x_, mask = mask_;
  Output out{in_place ? x_ : Elems(yt, yg_.size), Elems(kF32, 0), in_place ? xg_ : yg_};
  if (!in_place)
    for (size_t k = 0; k < out.before.size(); ++k) out.before.SetSentinel(k);
  out.after = Elems(out.before);
  const posenc_softmax_params p = Params(mask);
  Elems& xbuf = in_place ? out.after : x;
  // Row stride n_k passed as 0 for x ("0 means n_k"), spelled out for y.
  const posenc_scores_view xv = {xbuf.At(xg_.offset), s.xt, xg_.head_stride,
                                 xg_.row_stride == s.n_k ? 0 : xg_.row_stride, 0};
  const posenc_scores_view yv = {out.after.At(out.grid.offset), yt, out.grid.head_stride,
                                 out.grid.row_stride, 0};
  EXPECT_EQ(posenc_softmax(&p, s.heads, s.n_q, s.n_k, &xv, &yv), POSENC_OK)
      << posenc_isa_name(isa) << " " << TypeName(yt) << (in_place ? " in place " : " ")
      << Describe(s);
  if (!in_place) {
    EXPECT_TRUE(SameBits(x, x_)) << "x written: " << Describe(s);
  }
  EXPECT_TRUE(SameBits(mask, mask_)) << "mask written: " << Describe(s);
  EXPECT_EQ(posenc_set_isa(before), POSENC_OK);
  return out;
}

// ---------------------------------------------------------------------------- reference

// Float operations one rounding at a time (no contraction into fused multiply-adds).
float Mul(float a, float b) {
  const volatile float r = a * b;
  return r;
}
float Add(float a, float b) {
  const volatile float r = a + b;
  return r;
}
float Sub(float a, float b) {
  const volatile float r = a - b;
  return r;
}

RefRow Reference(const Problem& pb, size_t h, size_t i) {
  const Spec& s = pb.spec();
  RefRow row;
  row.visible.assign(s.n_k, 0);
  row.p.assign(s.n_k, 0.0L);
  std::vector<long double> t(s.n_k, -INFINITY);
  const float slope = s.slopes.empty() ? 0.0f : s.slopes[h];
  const bool mask_slope = (s.flags & kMaskSlope) != 0;
  long double max = -INFINITY;
  for (size_t j = 0; j < s.n_k; ++j) {
    if ((s.flags & kKposNegHidden) && KeyPos(s, j) < 0) continue;
    // A negative key position (an empty cell) is hidden by the mask or the flag: its d may
    // pass the int32 range, and whatever it hides here the mask hides too.
    const int64_t d = int64_t{KeyPos(s, j)} - QueryPos(s, i);
    if ((s.flags & kCausal) && d > 0) continue;
    if ((s.flags & kWindow) && -d >= s.window) continue;
    float m = 0.0f;
    if (s.mask.on) {
      m = pb.Mask(s.mask.per_head ? h : 0, i, j);
      if (m == -kInf) continue;
    }
    row.visible[j] = 1;
    const float u = Mul(s.scale, pb.X(h, i, j));
    const bool bias = !s.slopes.empty() && !mask_slope;
    const float bias_term = !bias ? 0.0f
                            : (s.flags & kSymmetric)
                                ? -Mul(slope, static_cast<float>(d < 0 ? -d : d))
                                : Mul(slope, static_cast<float>(d));
    const float mask_term = mask_slope ? Mul(slope, m) : m;
    if (s.flags & kSoftcap) {
      const long double c = s.softcap;
      long double v = std::isnan(u) ? NAN : c * std::tanh(static_cast<long double>(u) / c);
      if (s.mask.on) v += mask_term;
      if (bias) v += bias_term;
      t[j] = v;
    } else {
      float v = u;
      if (s.mask.on) v = Add(v, mask_term);
      if (bias) v = (s.flags & kSymmetric) ? Sub(v, -bias_term) : Add(v, bias_term);
      t[j] = v;
    }
    if (std::isnan(t[j]) || t[j] == INFINITY) row.nan = true;
    max = std::max(max, t[j]);
  }
  if (row.nan || max == -INFINITY) return row;  // NaN row, or all +0
  const long double sink = s.sinks.empty() ? -INFINITY : s.sinks[h];
  max = std::max(max, sink);
  long double sum = s.sinks.empty() ? 0.0L : std::exp(sink - max);
  for (size_t j = 0; j < s.n_k; ++j)
    if (row.visible[j]) sum += row.p[j] = std::exp(t[j] - max);
  for (long double& p : row.p) p /= sum;
  return row;
}

std::vector<RefRow> References(const Problem& pb) {
  std::vector<RefRow> rows;
  for (size_t h = 0; h < pb.spec().heads; ++h)
    for (size_t i = 0; i < pb.spec().n_q; ++i) rows.push_back(Reference(pb, h, i));
  return rows;
}

double RelBound(const Spec& s) {
  return kRel + ((s.flags & kSoftcap) ? std::ldexp(static_cast<double>(s.softcap), -20) : 0.0);
}

double Rounding(posenc_dtype t, double v) { return t == kF32 ? 0.0 : HalfUlpOf(t, v); }

void Errors::Add(double err, double bound) {
  worst_ratio = std::max(worst_ratio, err / bound);
  worst_abs = std::max(worst_abs, err);
}

std::string Where(const Spec& s, size_t h, size_t i, size_t j) {
  std::ostringstream os;
  os << "head " << h << " row " << i << " (qpos " << QueryPos(s, i) << ") key " << j << " (kpos "
     << KeyPos(s, j) << ")";
  return os.str();
}

testing::AssertionResult MatchesReference(const Problem& pb, const Problem::Output& out,
                                          const std::vector<RefRow>& refs, Errors* errors) {
  const Spec& s = pb.spec();
  const posenc_dtype yt = out.after.type();
  for (size_t k = 0; k < out.after.size(); ++k)
    if (!out.grid.used[k] && out.after.Bits(k) != out.before.Bits(k))
      return testing::AssertionFailure() << "non-score element " << k << " written";
  const double rel = RelBound(s);
  for (size_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < s.n_q; ++i) {
      const RefRow& ref = refs[h * s.n_q + i];
      for (size_t j = 0; j < s.n_k; ++j) {
        const float got = out.Get(h, i, j);
        const long double want = ref.p[j];
        auto fail = [&](const char* what) {
          return testing::AssertionFailure()
                 << Where(s, h, i, j) << ": " << what << ": got " << Value(got) << " ("
                 << TypeName(yt) << " bits 0x" << std::hex << out.Bits(h, i, j) << std::dec
                 << "), reference " << std::setprecision(12) << static_cast<double>(want)
                 << (ref.nan ? " (NaN row)" : "");
        };
        if (!ref.visible[j]) {
          if (out.Bits(h, i, j) != 0) return fail("hidden key not +0");
        } else if (ref.nan) {
          if (!std::isnan(got)) return fail("NaN row lost its NaN");
        } else {
          if (yt != kF16 && std::fpclassify(got) == FP_SUBNORMAL) return fail("subnormal");
          if (!(got >= 0.0f && got <= 1.0f)) return fail("outside [0, 1]");
          const double w = static_cast<double>(want);
          const double err = std::fabs(got - w);
          const double bound = rel * w + kAbs + Rounding(yt, std::max<double>(got, w));
          if (!(err <= bound)) return fail("outside the bound");
          if (errors) errors->Add(err, bound);
        }
      }
    }
  return testing::AssertionSuccess();
}

testing::AssertionResult RoundedFromF32(const Problem& pb, const Problem::Output& out,
                                        const Problem::Output& f32) {
  const Spec& s = pb.spec();
  const posenc_dtype yt = out.after.type();
  const Storage st = HalfOf(yt);
  for (size_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < s.n_q; ++i)
      for (size_t j = 0; j < s.n_k; ++j) {
        const float f = f32.Get(h, i, j);
        const auto got = static_cast<uint16_t>(out.Bits(h, i, j));
        if (std::isnan(f) ? IsHalfNaN(st, got) : got == HalfBits(yt, f)) continue;
        return testing::AssertionFailure()
               << Where(s, h, i, j) << ": " << DescribeHalf(st, got) << ", f32 output " << Value(f)
               << " rounds to " << DescribeHalf(st, HalfBits(yt, f));
      }
  return testing::AssertionSuccess();
}

testing::AssertionResult SameScores(const Problem& pb, const Problem::Output& a,
                                    const Problem::Output& b, const char* what) {
  const Spec& s = pb.spec();
  for (size_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < s.n_q; ++i)
      for (size_t j = 0; j < s.n_k; ++j) {
        const float fa = a.Get(h, i, j), fb = b.Get(h, i, j);
        if (a.Bits(h, i, j) == b.Bits(h, i, j) || (std::isnan(fa) && std::isnan(fb))) continue;
        return testing::AssertionFailure()
               << what << ": " << Where(s, h, i, j) << ": " << Value(fa) << " vs " << Value(fb);
      }
  return testing::AssertionSuccess();
}

testing::AssertionResult MatchesScalar(const Problem& pb, const Problem::Output& variant,
                                       const Problem::Output& scalar) {
  const Spec& s = pb.spec();
  const double rel = RelBound(s);
  const posenc_dtype yt = variant.after.type();
  for (size_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < s.n_q; ++i)
      for (size_t j = 0; j < s.n_k; ++j) {
        const float a = variant.Get(h, i, j), b = scalar.Get(h, i, j);
        if (variant.Bits(h, i, j) == scalar.Bits(h, i, j) || (std::isnan(a) && std::isnan(b)))
          continue;
        const double big = std::max(std::fabs(a), std::fabs(b));
        const double bound = 2.0 * (rel * big * (1 + 1e-6) + kAbs + Rounding(yt, big));
        if (std::isnan(a) || std::isnan(b) || !(std::fabs(a - b) <= bound))
          return testing::AssertionFailure()
                 << Where(s, h, i, j) << ": variant " << Value(a) << ", scalar " << Value(b);
      }
  return testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------- options

std::vector<float> AlibiSlopes(size_t heads) {
  std::vector<float> slopes(heads);
  EXPECT_EQ(posenc_alibi_slopes(heads, 8.0, slopes.data()), POSENC_OK);
  return slopes;
}

std::vector<float> RandomSinks(std::mt19937& rng, size_t heads) {
  std::vector<float> sinks(heads);
  for (float& v : sinks) v = std::uniform_real_distribution<float>(-4.0f, 12.0f)(rng);
  return sinks;
}

std::vector<int32_t> RandomPositionsUpTo(std::mt19937& rng, size_t n, int32_t hi) {
  std::vector<int32_t> pos(n);
  for (int32_t& p : pos) p = std::uniform_int_distribution<int32_t>(0, hi)(rng);
  if (n > 2) pos[n / 2] = pos[0];  // a repeat
  return pos;
}

void RandomPositions(Spec& s, std::mt19937& rng) {
  const auto hi = static_cast<int32_t>(2 * s.n_k + 4);
  s.kpos = RandomPositionsUpTo(rng, s.n_k, hi);
  s.qpos = RandomPositionsUpTo(rng, s.n_q, hi);
}

MaskSpec MaskOf(posenc_dtype t, bool per_head, bool query_major, size_t row_pad, ValueFn values) {
  MaskSpec m;
  m.on = true;
  m.dtype = t;
  m.per_head = per_head;
  m.query_major = query_major;
  m.row_pad = row_pad;
  m.values = std::move(values);
  return m;
}

namespace {

// Half the keys: where the options put the queries and windows.
int32_t Half(const Spec& s) { return static_cast<int32_t>(s.n_k / 2); }

}  // namespace

std::vector<Option> Options() {
  return {
      {"plain", [](Spec&, std::mt19937&) {}},
      {"scale", [](Spec& s, std::mt19937&) { s.scale = 0.08838835f; }},
      {"negative scale", [](Spec& s, std::mt19937&) { s.scale = -0.75f; }},
      {"softcap",
       [](Spec& s, std::mt19937&) {
         s.flags |= kSoftcap;
         s.softcap = 30.0f;
         s.scale = 2.0f;
       }},
      {"softcap saturating",
       [](Spec& s, std::mt19937&) {
         s.flags |= kSoftcap;
         s.softcap = 3.0f;
       }},
      {"mask f32 shared", [](Spec& s, std::mt19937&) { s.mask = MaskOf(kF32, false, false, 0); }},
      {"mask f16 shared, row stride > n_k",
       [](Spec& s, std::mt19937&) { s.mask = MaskOf(kF16, false, false, 7); }},
      {"mask f16 per head, row stride > n_k",
       [](Spec& s, std::mt19937&) { s.mask = MaskOf(kF16, true, false, 3); }},
      {"mask f32 per head [q,H,k]",
       [](Spec& s, std::mt19937&) { s.mask = MaskOf(kF32, true, true, 1); }},
      {"causal",
       [](Spec& s, std::mt19937&) {
         s.flags |= kCausal;
         s.q_offset = Half(s);
       }},
      {"causal, every key visible",
       [](Spec& s, std::mt19937&) {
         s.flags |= kCausal;
         s.q_offset = static_cast<int32_t>(s.n_k) + 5;
       }},
      {"causal by positions",
       [](Spec& s, std::mt19937& rng) {
         s.flags |= kCausal;
         RandomPositions(s, rng);
       }},
      {"q_offset only", [](Spec& s, std::mt19937&) { s.q_offset = 1000; }},
      {"window",
       [](Spec& s, std::mt19937&) {
         s.flags |= kWindow;
         s.window = Half(s) / 2 + 1;
         s.q_offset = Half(s);
       }},
      {"window + causal",
       [](Spec& s, std::mt19937&) {
         s.flags |= kWindow | kCausal;
         s.window = 4;
         s.q_offset = static_cast<int32_t>(s.n_k / 3);
       }},
      {"window by positions",
       [](Spec& s, std::mt19937& rng) {
         s.flags |= kWindow;
         s.window = Half(s) + 1;
         RandomPositions(s, rng);
       }},
      {"window + causal by positions",
       [](Spec& s, std::mt19937& rng) {
         s.flags |= kWindow | kCausal;
         s.window = 5;
         RandomPositions(s, rng);
       }},
      {"sinks", [](Spec& s, std::mt19937& rng) { s.sinks = RandomSinks(rng, s.heads); }},
      {"alibi causal",
       [](Spec& s, std::mt19937&) {
         s.slopes = AlibiSlopes(s.heads);
         s.flags |= kCausal;
         s.q_offset = static_cast<int32_t>(s.n_k);
       }},
      {"alibi by positions",
       [](Spec& s, std::mt19937& rng) {
         s.slopes = AlibiSlopes(s.heads);
         RandomPositions(s, rng);
       }},
      {"alibi, distances beyond 2^24",
       [](Spec& s, std::mt19937& rng) {
         s.slopes.assign(s.heads, 0.0f);
         for (size_t h = 0; h < s.heads; ++h) s.slopes[h] = 1e-7f * static_cast<float>(h + 1);
         s.kpos = RandomPositionsUpTo(rng, s.n_k, INT32_MAX);
         s.qpos = RandomPositionsUpTo(rng, s.n_q, INT32_MAX);
       }},
      {"far queries: q_offset at the int32 limit, window, symmetric alibi",
       [](Spec& s, std::mt19937&) {
         s.q_offset = INT32_MAX - static_cast<int32_t>(s.n_q) + 1;
         s.flags |= kWindow | kSymmetric;
         s.window = INT32_MAX - 5;  // hides the first keys: lo = 7 - n_q + i
         s.slopes.assign(s.heads, 1e-9f);
         s.slopes[0] = 3e-9f;
       }},
      {"alibi symmetric",
       [](Spec& s, std::mt19937&) {
         s.slopes = AlibiSlopes(s.heads);
         s.flags |= kSymmetric;
         s.q_offset = Half(s);
       }},
      {"alibi symmetric, causal by positions",
       [](Spec& s, std::mt19937& rng) {
         s.slopes = AlibiSlopes(s.heads);
         s.flags |= kSymmetric | kCausal;
         RandomPositions(s, rng);
       }},
      {"mask slope (ggml), f32 mask",
       [](Spec& s, std::mt19937&) {
         s.slopes = AlibiSlopes(s.heads);
         s.flags |= kMaskSlope;
         s.q_offset = Half(s);
         s.mask = MaskOf(kF32, false, false, 0, LlamaAlibiMask);
       }},
      {"mask slope, f16 mask per head, random mask values, sinks",
       [](Spec& s, std::mt19937& rng) {
         s.slopes = AlibiSlopes(s.heads);
         s.slopes[0] = -0.5f;
         s.flags |= kMaskSlope;
         s.mask = MaskOf(kF16, true, false, 2);
         s.sinks = RandomSinks(rng, s.heads);
       }},
      {"everything, signed alibi, positions",
       [](Spec& s, std::mt19937& rng) {
         s.scale = 0.5f;
         s.flags |= kSoftcap | kCausal | kWindow;
         s.softcap = 25.0f;
         s.window = Half(s) + 2;
         s.mask = MaskOf(kF16, true, false, 2);
         s.sinks = RandomSinks(rng, s.heads);
         s.slopes = AlibiSlopes(s.heads);
         RandomPositions(s, rng);
       }},
      {"everything, symmetric alibi, default positions",
       [](Spec& s, std::mt19937& rng) {
         s.scale = -0.3f;
         s.flags |= kSoftcap | kCausal | kWindow | kSymmetric;
         s.softcap = 10.0f;
         s.window = Half(s) + 1;
         s.q_offset = Half(s);
         s.mask = MaskOf(kF32, false, false, 5);
         s.sinks = RandomSinks(rng, s.heads);
         s.slopes = AlibiSlopes(s.heads);
         for (float& v : s.slopes) v /= 8;
       }},
      {"everything, mask slope",
       [](Spec& s, std::mt19937& rng) {
         s.scale = 0.125f;
         s.flags |= kSoftcap | kWindow | kMaskSlope;
         s.softcap = 40.0f;
         s.window = 3;
         s.q_offset = Half(s);
         s.mask = MaskOf(kF16, true, true, 0, LlamaAlibiMask);
         s.sinks = RandomSinks(rng, s.heads);
         s.slopes = AlibiSlopes(s.heads);
       }},
  };
}

std::vector<TypePair> TypePairs() {
  std::vector<TypePair> pairs;
  for (posenc_dtype x : kTypes)
    for (posenc_dtype y : kTypes) pairs.push_back({x, y});
  return pairs;
}

Spec Base(size_t heads, size_t n_q, size_t n_k, TypePair types, const char* name) {
  Spec s;
  s.heads = heads;
  s.n_q = n_q;
  s.n_k = n_k;
  s.xt = types.x;
  s.yt = types.y;
  s.name = name;
  return s;
}

// ---------------------------------------------------------------------------- fixture

namespace {

// Everything the reference depends on: the options, the positions, the scores and the mask
// values (not the y type nor the layouts), as bits.
std::vector<uint32_t> ReferenceKey(const Problem& pb) {
  const Spec& s = pb.spec();
  std::vector<uint32_t> key = {static_cast<uint32_t>(s.heads),
                               static_cast<uint32_t>(s.n_q),
                               static_cast<uint32_t>(s.n_k),
                               FloatBits(s.scale),
                               FloatBits(s.softcap),
                               s.flags,
                               static_cast<uint32_t>(s.q_offset),
                               static_cast<uint32_t>(s.window),
                               s.mask.on ? 1u + (s.mask.per_head ? 2u : 0u) : 0u};
  const auto add = [&](const auto& values, auto bits) {
    key.push_back(static_cast<uint32_t>(values.size()));
    for (const auto& v : values) key.push_back(bits(v));
  };
  add(s.slopes, FloatBits);
  add(s.sinks, FloatBits);
  add(s.kpos, [](int32_t v) { return static_cast<uint32_t>(v); });
  add(s.qpos, [](int32_t v) { return static_cast<uint32_t>(v); });
  for (size_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < s.n_q; ++i)
      for (size_t j = 0; j < s.n_k; ++j) {
        key.push_back(FloatBits(pb.X(h, i, j)));
        if (s.mask.on) key.push_back(FloatBits(pb.Mask(s.mask.per_head ? h : 0, i, j)));
      }
  return key;
}

}  // namespace

const std::vector<RefRow>& ReferenceCache::For(const Problem& pb) {
  std::vector<uint32_t> key = ReferenceKey(pb);
  if (key != key_) {
    key_ = std::move(key);
    refs_ = References(pb);
  }
  return refs_;
}

void SoftmaxTest::Check(const Problem& pb, Errors* errors) {
  const Spec& s = pb.spec();
  SCOPED_TRACE(Describe(s));
  const std::vector<RefRow>& refs = cache_.For(pb);
  // The measured errors: of f32 outputs (a 16-bit output's rounding would hide them).
  const Problem::Output out = pb.Run(s.yt, false, isa());
  EXPECT_TRUE(MatchesReference(pb, out, refs, s.yt == kF32 ? errors : nullptr))
      << posenc_isa_name(isa());
  if (s.yt != kF32) {
    const Problem::Output f32 = pb.Run(kF32, false, isa());
    EXPECT_TRUE(MatchesReference(pb, f32, refs, errors)) << posenc_isa_name(isa()) << " f32 y";
    EXPECT_TRUE(RoundedFromF32(pb, out, f32)) << posenc_isa_name(isa());
  }
  if (isa() != POSENC_ISA_SCALAR) {
    EXPECT_TRUE(MatchesScalar(pb, out, pb.Run(s.yt, false, POSENC_ISA_SCALAR)))
        << posenc_isa_name(isa());
  }
  if (s.xt == s.yt) {
    const Problem::Output in_place = pb.Run(s.yt, true, isa());
    EXPECT_TRUE(MatchesReference(pb, in_place, refs)) << posenc_isa_name(isa()) << " in place";
    EXPECT_TRUE(SameScores(pb, in_place, out, "in place vs out of place"))
        << posenc_isa_name(isa());
  }
}

void SoftmaxTest::Report(const Errors& errors) {
  RecordProperty("worst_ratio_to_bound", std::to_string(errors.worst_ratio));
  std::printf("[ measured ] %s: worst |y - y*| = %.3g, worst / bound = %.3f\n",
              posenc_isa_name(isa()), errors.worst_abs, errors.worst_ratio);
}

}  // namespace posenc_test::softmax
