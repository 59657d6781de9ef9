// The attention-score softmax, posenc_softmax, once per ISA: every option alone and in
// combinations (scale, soft-capping, f32 / f16 masks shared or per head, key and query
// positions, causal and window hiding, sinks, the three ALiBi forms) for every pair of
// score and probability types, both layouts, in place and out of place, against a long
// double softmax written here from the header's formula, within the header's bound
// (POSENC_SOFTMAX_REL_TOLERANCE * p + POSENC_SOFTMAX_ABS_TOLERANCE, plus c * 2^-20 relative
// with soft-capping and half an ulp of a 16-bit output type), and against the scalar variant
// within twice that; a 16-bit output bit for bit the same ISA's f32 output rounded; key
// counts around every vector width and rows past the 16-bit block (4096 keys); a mask
// spelling out the causal flag or the window bit for bit the flag's result; ggml's
// soft_max_ext (with ALiBi through its mask, and sinks) reproduced; the special values the
// header defines; results independent of how rows and heads are split between calls; NaN
// sentinels in every gap of x, y and the mask; guard pages; every documented error with
// nothing written.
#include <posenc.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "half_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr uint32_t kSeed = 20260417;
constexpr double kRel = POSENC_SOFTMAX_REL_TOLERANCE;
constexpr double kAbs = POSENC_SOFTMAX_ABS_TOLERANCE;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr unsigned kCausal = POSENC_SOFTMAX_CAUSAL;
constexpr unsigned kWindow = POSENC_SOFTMAX_WINDOW;
constexpr unsigned kSoftcap = POSENC_SOFTMAX_SOFTCAP;
constexpr unsigned kSymmetric = POSENC_SOFTMAX_ALIBI_SYMMETRIC;
constexpr unsigned kMaskSlope = POSENC_SOFTMAX_MASK_SLOPE;
constexpr posenc_dtype kF32 = POSENC_DTYPE_F32;
constexpr posenc_dtype kBf16 = POSENC_DTYPE_BF16;
constexpr posenc_dtype kF16 = POSENC_DTYPE_F16;
constexpr posenc_dtype kTypes[] = {kF32, kBf16, kF16};
constexpr size_t kGuard = 16;  // sentinel elements before and after every tensor

// ---------------------------------------------------------------------------- elements

const char* TypeName(posenc_dtype t) { return t == kF32 ? "f32" : t == kBf16 ? "bf16" : "f16"; }
size_t ElemSize(posenc_dtype t) { return t == kF32 ? 4 : 2; }
Storage HalfOf(posenc_dtype t) { return t == kBf16 ? Storage::kBf16 : Storage::kF16; }

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

// The 16-bit conversions of the harness (half_harness.h) work in double through libm, which
// costs a lot under an emulator; these integer forms are what the suite uses per element, and
// ConversionsTest checks them against the harness's.

// The value of 16-bit bits of type t (NaN for a NaN pattern).
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

// v rounded to type t to nearest even, as its bits (NaN: a quiet NaN of v's sign).
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

// v rounded to type t (a value t holds exactly).
float RoundTo(posenc_dtype t, float v) { return t == kF32 ? v : HalfValue(t, HalfBits(t, v)); }

// Half an ulp of type t at magnitude |v| (at least half the smallest step): the most that
// rounding v to t can move it.
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

// n elements of one type in a 64-byte aligned block (kept in AlignedFloats, so that the
// shared argument-check helpers can compare it bit for bit).
class Elems {
 public:
  Elems(posenc_dtype type, size_t n) : type_(type), n_(n), buf_((n * ElemSize(type) + 3) / 4) {}

  posenc_dtype type() const { return type_; }
  size_t size() const { return n_; }
  void* At(size_t i) { return reinterpret_cast<char*>(buf_.data()) + i * ElemSize(type_); }
  const void* At(size_t i) const {
    return reinterpret_cast<const char*>(buf_.data()) + i * ElemSize(type_);
  }
  uint32_t Bits(size_t i) const {
    if (type_ == kF32) return FloatBits(buf_[i]);
    uint16_t h;
    std::memcpy(&h, At(i), sizeof h);
    return h;
  }
  void SetBits(size_t i, uint32_t bits) {
    if (type_ == kF32) {
      buf_[i] = BitsFloat(bits);
    } else {
      const auto h = static_cast<uint16_t>(bits);
      std::memcpy(At(i), &h, sizeof h);
    }
  }
  float Get(size_t i) const {
    return type_ == kF32 ? buf_[i] : HalfValue(type_, static_cast<uint16_t>(Bits(i)));
  }
  // Stores v rounded to the type.
  void Set(size_t i, float v) {
    if (type_ == kF32)
      buf_[i] = v;
    else
      SetBits(i, HalfBits(type_, v));
  }
  // A NaN tagged with the index: any read of it spoils a result, any write shows.
  void SetSentinel(size_t i) {
    SetBits(i, type_ == kF32 ? FloatBits(NaNSentinel(i)) : HalfNaNSentinel(HalfOf(type_), i));
  }
  const AlignedFloats& floats() const { return buf_; }

 private:
  posenc_dtype type_;
  size_t n_;
  AlignedFloats buf_;
};

bool SameBits(const Elems& a, const Elems& b) {
  return FirstBitwiseDifference(a.floats(), b.floats()) == -1;
}

// ---------------------------------------------------------------------------- problems

// Where a [heads, n_q, n_k] view lies in its buffer: rows in heads ([H, n_q, n_k]) or heads
// in rows ([n_q, H, n_k]), a gap after each innermost row and each outer block, the first
// element `misalign` elements after kGuard sentinels.
struct Layout {
  bool query_major = false;
  size_t inner_pad = 0, outer_pad = 0, misalign = 0;
};

class Grid {
 public:
  Grid() = default;
  Grid(const Layout& l, size_t heads, size_t n_q, size_t n_k) {
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
  size_t Index(size_t h, size_t i, size_t j) const {
    return offset + h * head_stride + i * row_stride + j;
  }

  size_t head_stride = 0, row_stride = 0, offset = 0, size = 0;
  std::vector<char> used;  // 1 where an element of the view lies
};

struct Spec;
// A score or mask value (h, i, j), rounded to the tensor's type afterwards.
using ValueFn = std::function<float(std::mt19937&, const Spec&, size_t, size_t, size_t)>;

struct MaskSpec {
  bool on = false;
  posenc_dtype dtype = kF32;
  bool per_head = false;     // mask_head_stride > 0
  bool query_major = false;  // per head: [n_q, H, n_k]
  size_t row_pad = 0;        // the mask row stride is n_k + row_pad (passed as 0 when n_k)
  ValueFn values;            // empty: RandomMask
};

struct Spec {
  size_t heads = 2, n_q = 3, n_k = 8;
  posenc_dtype xt = kF32, yt = kF32;
  Layout xl, yl;
  float scale = 1.0f, softcap = 0.0f;
  unsigned flags = 0;
  int32_t q_offset = 0, window = 0;
  std::vector<float> slopes, sinks;  // empty: none
  std::vector<int32_t> kpos, qpos;   // empty: none
  MaskSpec mask;
  ValueFn scores;  // empty: RandomScore
  std::string name;
};

int32_t KeyPos(const Spec& s, size_t j) {
  return s.kpos.empty() ? static_cast<int32_t>(j) : s.kpos[j];
}
int32_t QueryPos(const Spec& s, size_t i) {
  return s.qpos.empty() ? s.q_offset + static_cast<int32_t>(i) : s.qpos[i];
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

// Mostly ordinary scores, with -inf (padding) and signed zeros.
float RandomScore(std::mt19937& rng, const Spec&, size_t, size_t, size_t) {
  const int p = std::uniform_int_distribution<int>(0, 63)(rng);
  if (p == 0) return -kInf;
  if (p == 1) return 0.0f;
  if (p == 2) return -0.0f;
  return std::uniform_real_distribution<float>(-10.0f, 10.0f)(rng);
}

// Mask values: hidden keys (-inf), zeros, and small additive terms.
float RandomMask(std::mt19937& rng, const Spec&, size_t, size_t, size_t) {
  const int p = std::uniform_int_distribution<int>(0, 7)(rng);
  if (p == 0) return -kInf;
  if (p <= 2) return 0.0f;
  return std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
}

// llama.cpp's KQ mask for an ALiBi model: -|kpos - qpos| for a visible key, -inf past the
// query (causal).
float LlamaAlibiMask(std::mt19937&, const Spec& s, size_t, size_t i, size_t j) {
  const int64_t d = static_cast<int64_t>(KeyPos(s, j)) - QueryPos(s, i);
  return d > 0 ? -kInf : static_cast<float>(d);
}

// One problem: x, and the mask, in their own buffers with sentinels in every gap; the
// slopes, sinks and positions the spec holds.
class Problem {
 public:
  Problem(const Spec& spec, uint32_t seed)
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

  const Spec& spec() const { return spec_; }
  const Grid& x_grid() const { return xg_; }
  float X(size_t h, size_t i, size_t j) const { return x_.Get(xg_.Index(h, i, j)); }
  void SetX(size_t h, size_t i, size_t j, float v) { x_.Set(xg_.Index(h, i, j), v); }
  size_t MaskIndex(size_t h, size_t i, size_t j) const {
    return kGuard + h * mask_head_stride_ + i * mask_row_stride_ + j;
  }
  float Mask(size_t h, size_t i, size_t j) const { return mask_.Get(MaskIndex(h, i, j)); }
  const Elems& x() const { return x_; }
  const Elems& mask() const { return mask_; }
  size_t mask_row_stride() const { return mask_row_stride_; }
  size_t mask_head_stride() const { return mask_head_stride_; }

  // The parameters, with the mask at `mask` (a copy of the problem's).
  posenc_softmax_params Params(const Elems& mask) const {
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

  // What a call wrote: y's buffer before and after, and its layout.
  struct Output {
    Elems before, after;
    Grid grid;
    uint32_t Bits(size_t h, size_t i, size_t j) const { return after.Bits(grid.Index(h, i, j)); }
    float Get(size_t h, size_t i, size_t j) const { return after.Get(grid.Index(h, i, j)); }
  };

  // posenc_softmax with `isa` active (the ISA active before is restored) into a y of type yt:
  // out of place (y in the spec's layout, sentinels in every gap), or in place (yt must be
  // x's type; y = x). x (out of place) and the mask must be left as they were.
  Output Run(posenc_dtype yt, bool in_place, posenc_isa isa) const {
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
                                   xg_.row_stride == s.n_k ? 0 : xg_.row_stride};
    const posenc_scores_view yv = {out.after.At(out.grid.offset), yt, out.grid.head_stride,
                                   out.grid.row_stride};
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

 private:
  Spec spec_;
  Grid xg_, yg_;
  Elems x_, mask_;
  size_t mask_row_stride_ = 0, mask_head_stride_ = 0;
};

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

// One row as the header defines it: t_j = s(scale * x_j) (+ mask_j or + slope * mask_j)
// (+ slope * d or - slope * |d|), each operation rounded to float; with soft-capping, s is
// the exact c * tanh(u / c) and the terms after it are added exactly (long double). Hidden:
// causal, window, or a -inf mask value. The softmax with the sink in long double.
struct RefRow {
  bool nan = false;
  std::vector<char> visible;
  std::vector<long double> p;  // 0 for hidden keys
};

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
    const int32_t d = KeyPos(s, j) - QueryPos(s, i);  // positions >= 0: no overflow
    if ((s.flags & kCausal) && d > 0) continue;
    if ((s.flags & kWindow) && -static_cast<int64_t>(d) >= s.window) continue;
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

// The relative part of the bound: REL, plus c * 2^-20 with soft-capping.
double RelBound(const Spec& s) {
  return kRel + ((s.flags & kSoftcap) ? std::ldexp(static_cast<double>(s.softcap), -20) : 0.0);
}

// Half an ulp of a 16-bit type at v (0 for f32).
double Rounding(posenc_dtype t, double v) { return t == kF32 ? 0.0 : HalfUlpOf(t, v); }

// How far results are from the reference, in units of the bound.
struct Errors {
  double worst_ratio = 0;
  double worst_abs = 0;
  void Add(double err, double bound) {
    worst_ratio = std::max(worst_ratio, err / bound);
    worst_abs = std::max(worst_abs, err);
  }
};

std::string Where(const Spec& s, size_t h, size_t i, size_t j) {
  std::ostringstream os;
  os << "head " << h << " row " << i << " (qpos " << QueryPos(s, i) << ") key " << j << " (kpos "
     << KeyPos(s, j) << ")";
  return os.str();
}

// Every element of an output: y's gaps and guards (in place: x's non-score elements) as
// before; hidden keys +0 bit for bit; NaN rows NaN at their visible keys; otherwise within
// the bound (plus the output type's rounding), in [0, 1], and no subnormal float (f32, bf16).
testing::AssertionResult MatchesReference(const Problem& pb, const Problem::Output& out,
                                          const std::vector<RefRow>& refs,
                                          Errors* errors = nullptr) {
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

// A 16-bit output equals, bit for bit, the same ISA's f32 output rounded (NaN for NaN).
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

// Two outputs of the same problem equal bit for bit at every score (NaN for NaN).
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

// A variant against the scalar variant: NaN where scalar has NaN, every other score within
// twice the bound (twice the output type's rounding too).
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

// n positions in [0, hi]: out of order, with repeats.
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

MaskSpec MaskOf(posenc_dtype t, bool per_head, bool query_major, size_t row_pad,
                ValueFn values = {}) {
  MaskSpec m;
  m.on = true;
  m.dtype = t;
  m.per_head = per_head;
  m.query_major = query_major;
  m.row_pad = row_pad;
  m.values = std::move(values);
  return m;
}

struct Option {
  const char* name;
  std::function<void(Spec&, std::mt19937&)> apply;
};

int32_t Half(const Spec& s) { return static_cast<int32_t>(s.n_k / 2); }

// Every option alone, then in combinations. With soft-capping the other terms stay within a
// few times the cap (the reference adds them exactly, the kernels in float).
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

struct TypePair {
  posenc_dtype x, y;
};
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

// The reference of the last problem seen: problems that differ only in the y type and the
// layouts (consecutive in the loops) share it, which keeps the long-double work small.
class ReferenceCache {
 public:
  const std::vector<RefRow>& For(const Problem& pb) {
    std::vector<uint32_t> key = ReferenceKey(pb);
    if (key != key_) {
      key_ = std::move(key);
      refs_ = References(pb);
    }
    return refs_;
  }

 private:
  std::vector<uint32_t> key_;
  std::vector<RefRow> refs_;
};

class SoftmaxTest : public EveryIsaTest {
 protected:
  // Out of place with the spec's types and layouts: against the reference; a 16-bit y bit
  // for bit the same ISA's f32 output rounded; against the scalar variant; and, when x and y
  // share a type, in place bit for bit the out-of-place result.
  void Check(const Problem& pb, Errors* errors = nullptr) {
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

  void Report(const Errors& errors) {
    RecordProperty("worst_ratio_to_bound", std::to_string(errors.worst_ratio));
    std::printf("[ measured ] %s: worst |y - y*| = %.3g, worst / bound = %.3f\n",
                posenc_isa_name(isa()), errors.worst_abs, errors.worst_ratio);
  }

  ReferenceCache cache_;
};

// ---------------------------------------------------------------------------- accuracy

// Every option alone and in combinations, for every pair of types, both layouts (with gaps
// and misaligned starts; x and y laid out differently), key counts across the vector widths.
TEST_P(SoftmaxTest, EveryOptionEveryTypePairBothLayouts) {
  Errors errors;
  const std::vector<Option> options = Options();
  uint32_t seed = kSeed;
  for (const Option& option : options)
    for (size_t n_k : {1, 5, 16, 33, 100})
      for (posenc_dtype xt : kTypes) {
        ++seed;  // the same inputs for every y type and layout: one reference
        for (posenc_dtype yt : kTypes)
          for (bool query_major : {false, true}) {
            Spec s = Base(2, 3, n_k, {xt, yt}, option.name);
            s.xl = {query_major, 1, 3, n_k % 3};
            s.yl = {query_major, query_major ? 2u : 0u, 0, (n_k + 1) % 4};
            std::mt19937 rng(seed);
            option.apply(s, rng);
            Check(Problem(s, seed), &errors);
            if (HasFailure()) return;
          }
      }
  Report(errors);
}

// Key counts around every vector width (4, 8, 16 lanes; sums flushed every 16 vectors; the
// 16-bit block of 4096 keys), with rows of more than 4096 visible keys: plain rows, causal
// rows from position 0 (every visible count up to n_k in one call), windows whose first
// visible key moves across the vector and sum boundaries.
std::vector<size_t> KeyCounts() {
  std::vector<size_t> n;
  for (size_t k = 1; k <= 40; ++k) n.push_back(k);
  for (size_t k : {63, 64, 65, 255, 256, 257, 4095, 4096, 4097, 5000}) n.push_back(k);
  return n;
}

TEST_P(SoftmaxTest, KeyCountsAroundVectorWidths) {
  // Rows of 4095 keys and more: one head, one x type per kind of row and two y types (a
  // 16-bit one among them), to keep the long-double reference small.
  const auto long_row_types = [](int kind) -> std::pair<posenc_dtype, std::vector<posenc_dtype>> {
    if (kind == 0) return {kF32, {kBf16, kF16}};
    if (kind == 1) return {kBf16, {kBf16, kF32}};
    return {kF16, {kF16, kBf16}};
  };
  Errors errors;
  uint32_t seed = kSeed;
  for (size_t n_k : KeyCounts()) {
    const bool big = n_k > 40, long_rows = n_k >= 4095;
    const size_t heads = long_rows ? 1 : 2;
    for (int kind = 0; kind < 3; ++kind)
      for (posenc_dtype xt : kTypes) {
        if (long_rows && xt != long_row_types(kind).first) continue;
        ++seed;  // the same inputs for every y type: one reference
        const std::vector<posenc_dtype> all(std::begin(kTypes), std::end(kTypes));
        for (posenc_dtype yt : long_rows ? long_row_types(kind).second : all) {
          std::mt19937 rng(seed);
          Spec s;
          if (kind == 0) {
            s = Base(heads, 2, n_k, {xt, yt}, "scale, sinks");
            s.scale = 0.25f;
            s.yl.misalign = n_k % 4;
            s.sinks = RandomSinks(rng, s.heads);
          } else if (kind == 1) {
            // Causal rows ending at the last key: visible counts n_k - n_q + 1 .. n_k.
            s = Base(heads, std::min<size_t>(n_k, 3), n_k, {xt, yt},
                     "causal, alibi, f16 mask, softcap");
            s.flags = kCausal | kSoftcap;
            s.softcap = 20.0f;
            s.scale = 0.5f;
            s.q_offset = static_cast<int32_t>(n_k - s.n_q);
            s.slopes = AlibiSlopes(heads);
            for (float& v : s.slopes) v /= 16;
            s.mask = MaskOf(kF16, false, false, n_k % 2);
            s.xl = {n_k % 2 == 1, n_k % 3, 1, 0};
          } else {
            s = Base(heads, big ? 2 : 3, n_k, {xt, yt}, "window, symmetric alibi, sinks");
            s.flags = kWindow | kSymmetric;
            s.window = static_cast<int32_t>(n_k / 2 + 1);
            s.q_offset = static_cast<int32_t>(n_k - 1 + n_k / 4);
            s.slopes = AlibiSlopes(heads);
            s.sinks = RandomSinks(rng, s.heads);
          }
          Check(Problem(s, seed), &errors);
          if (HasFailure()) return;
        }
      }
  }
  Report(errors);
}

// Two sequences in one batch, as a runtime's KV cache holds them: cells of both sequences
// interleaved (and empty cells), each with its position; the queries of both sequences in one
// call; the mask hides the other sequence's cells and the empty ones, the causal flag the
// cells past each query's position.
TEST_P(SoftmaxTest, TwoSequencesInOneKvCache) {
  const size_t n_cells = 40;
  std::vector<int> seq_of_cell(n_cells);
  std::vector<int32_t> kpos(n_cells);
  int32_t next[2] = {0, 0};
  for (size_t c = 0; c < n_cells; ++c) {
    const int seq = c % 7 == 6 ? -1 : static_cast<int>((c / 3) % 2);  // -1: empty cell
    seq_of_cell[c] = seq;
    kpos[c] = seq < 0 ? 999 : next[seq]++;
  }
  // Queries: the last three positions of sequence 0, the last four of sequence 1.
  std::vector<int> seq_of_query;
  std::vector<int32_t> qpos;
  for (int seq : {0, 1})
    for (int32_t p = next[seq] - 3 - seq; p < next[seq]; ++p) {
      seq_of_query.push_back(seq);
      qpos.push_back(p);
    }
  // Cells are stored out of order: a rotation keeps the interleaving.
  std::rotate(seq_of_cell.begin(), seq_of_cell.begin() + 11, seq_of_cell.end());
  std::rotate(kpos.begin(), kpos.begin() + 11, kpos.end());
  const ValueFn mask = [&](std::mt19937&, const Spec&, size_t, size_t i, size_t j) {
    return seq_of_cell[j] == seq_of_query[i] ? 0.0f : -kInf;
  };
  uint32_t seed = kSeed;
  for (const TypePair& types : TypePairs())
    for (int variant = 0; variant < 3; ++variant) {
      Spec s = Base(4, qpos.size(), n_cells, types, "two sequences");
      s.kpos = kpos;
      s.qpos = qpos;
      s.flags = kCausal;
      s.scale = 0.125f;
      s.mask = MaskOf(variant == 2 ? kF16 : kF32, false, false, 0, mask);
      std::mt19937 rng(++seed);
      if (variant >= 1) s.slopes = AlibiSlopes(s.heads);
      if (variant >= 1) s.sinks = RandomSinks(rng, s.heads);
      if (variant == 2) {
        s.flags |= kWindow;
        s.window = 6;
      }
      const Problem pb(s, seed);
      Check(pb);
      // Each query's probabilities add up to 1 over its own sequence's cells (no sink).
      if (s.sinks.empty() && s.yt == kF32) {
        const Problem::Output out = pb.Run(kF32, false, isa());
        for (size_t h = 0; h < s.heads; ++h)
          for (size_t i = 0; i < s.n_q; ++i) {
            double sum = 0;
            for (size_t j = 0; j < n_cells; ++j) {
              if (seq_of_cell[j] != seq_of_query[i] || kpos[j] > qpos[i]) {
                EXPECT_EQ(FloatBits(out.Get(h, i, j)), 0u) << Where(s, h, i, j);
              }
              sum += out.Get(h, i, j);
            }
            EXPECT_NEAR(sum, 1.0, 1e-5) << "head " << h << " query " << i;
          }
      }
      if (HasFailure()) return;
    }
}

// ---------------------------------------------------------------------------- the flags
// spelled out by a mask

// Causal and window rows (default positions), once by the flags and once by a mask of 0 and
// -inf that spells them out (no flag): bit for bit the same.
TEST_P(SoftmaxTest, MaskSpellingOutTheFlagsGivesTheFlagsResult) {
  uint32_t seed = kSeed;
  for (unsigned flags : {kCausal, kWindow, kCausal | kWindow})
    for (size_t n_k : {1, 7, 16, 33, 65, 200, 300, 4100})
      for (int32_t q_offset : {0, static_cast<int32_t>(n_k) - 1, static_cast<int32_t>(n_k) + 3})
        for (posenc_dtype xt : {kF32, kBf16})
          for (posenc_dtype yt : {kF32, kBf16}) {
            if (n_k > 300 && xt != yt) continue;
            Spec s = Base(2, n_k > 300 ? 2 : 6, n_k, {xt, yt}, "flags");
            s.flags = flags;
            s.window = static_cast<int32_t>(n_k / 3 + 2);
            s.q_offset = q_offset;
            s.scale = 0.3f;
            s.slopes = AlibiSlopes(2);
            const Spec flagged = s;
            Spec masked = s;
            masked.flags = 0;
            masked.name = "mask";
            masked.mask = MaskOf(kF32, false, false, 0);
            // The mask: -inf where the flags hide the key, 0 elsewhere.
            masked.mask.values = [flags](std::mt19937&, const Spec& m, size_t, size_t i, size_t j) {
              const int64_t d = int64_t{KeyPos(m, j)} - QueryPos(m, i);
              const bool hidden =
                  ((flags & kCausal) && d > 0) || ((flags & kWindow) && -d >= m.window);
              return hidden ? -kInf : 0.0f;
            };
            ++seed;
            const Problem a(flagged, seed), b(masked, seed);  // the same scores
            const Problem::Output fa = a.Run(yt, false, isa()), fb = b.Run(yt, false, isa());
            ASSERT_TRUE(SameScores(a, fa, fb, "flag vs mask")) << Describe(masked);
            // The flag with a mask of zeros too.
            Spec zeros = s;
            zeros.mask =
                MaskOf(kF16, false, false, 1,
                       [](std::mt19937&, const Spec&, size_t, size_t, size_t) { return 0.0f; });
            const Problem c(zeros, seed);
            ASSERT_TRUE(SameScores(a, fa, c.Run(yt, false, isa()), "flag vs flag + zero mask"))
                << Describe(zeros);
          }
}

// ---------------------------------------------------------------------------- ggml

// ggml_soft_max_ext's CPU operation (ggml_compute_forward_soft_max_f32), per row: w = x * scale
// + slope * mask (slope 1 without ALiBi), max over the row, with sinks max = max(max, sink),
// sum = sum_j exp(w_j - max) (+ exp(sink - max)), y = exp(w - max) / sum; the exponentials
// and the sum in long double. Its float w as ggml computes it.
std::vector<long double> GgmlSoftMaxRow(const std::vector<float>& x, const std::vector<float>& mask,
                                        float scale, float slope, const float* sink) {
  std::vector<float> w(x.size());
  float max = -kInf;
  for (size_t j = 0; j < x.size(); ++j) {
    w[j] = Add(Mul(x[j], scale), mask.empty() ? 0.0f : Mul(slope, mask[j]));
    max = std::max(max, w[j]);
  }
  if (sink) max = std::max(max, *sink);
  long double sum = 0;
  std::vector<long double> y(x.size());
  for (size_t j = 0; j < x.size(); ++j)
    sum += y[j] = std::exp(static_cast<long double>(w[j]) - max);
  if (sink) sum += std::exp(static_cast<long double>(*sink) - max);
  for (long double& v : y) v /= sum;
  return y;
}

// llama.cpp's ALiBi models (mask -|kpos - qpos| or -inf, slopes from max_bias 8) through
// MASK_SLOPE, and through the signed ALiBi term with the causal flag and positions; sinks
// without ALiBi (gpt-oss: mask 0 / -inf, sinks per head): against the ggml reference.
TEST_P(SoftmaxTest, ReproducesGgmlSoftMaxExt) {
  uint32_t seed = kSeed;
  const size_t heads = 6, n_q = 5;
  const std::vector<float> slopes = AlibiSlopes(heads);
  for (size_t n_k : {1, 9, 32, 77, 300})
    for (posenc_dtype mask_type : {kF32, kF16})
      for (int form = 0; form < 3; ++form) {
        if (form == 1 && mask_type == kF16) continue;  // form 1 has no mask
        std::mt19937 rng(++seed);
        Spec s = Base(heads, n_q, n_k, {kF32, kF32}, "ggml");
        s.scale = 0.125f;
        s.kpos = RandomPositionsUpTo(rng, n_k, static_cast<int32_t>(n_k + 10));
        s.qpos = RandomPositionsUpTo(rng, n_q, static_cast<int32_t>(n_k + 10));
        const std::vector<float> sinks = RandomSinks(rng, heads);
        // The llama.cpp mask, as stored (f16 rounds large distances), or 0 / -inf.
        std::vector<float> mask(n_q * n_k);
        for (size_t i = 0; i < n_q; ++i)
          for (size_t j = 0; j < n_k; ++j) {
            const float m = LlamaAlibiMask(rng, s, 0, i, j);
            mask[i * n_k + j] = RoundTo(mask_type, form == 2 && m != -kInf ? 0.0f : m);
          }
        if (form == 0) {  // MASK_SLOPE: ggml's own form
          s.name = "ggml alibi: mask slope";
          s.slopes = slopes;
          s.flags = kMaskSlope;
          s.mask = MaskOf(mask_type, false, false, 0);
        } else if (form == 1) {  // the signed ALiBi term from the positions, causal flag
          s.name = "ggml alibi: signed alibi with positions";
          s.slopes = slopes;
          s.flags = kCausal;
        } else {  // sinks, no ALiBi: mask 0 / -inf
          s.name = "ggml sinks";
          s.sinks = sinks;
          s.mask = MaskOf(mask_type, false, false, 0);
        }
        s.mask.values = [&](std::mt19937&, const Spec&, size_t, size_t i, size_t j) {
          return mask[i * n_k + j];
        };
        // ggml's rows (the scores do not depend on the y type).
        const Problem first(s, seed);
        std::vector<std::vector<long double>> want(heads * n_q);
        for (size_t h = 0; h < heads; ++h)
          for (size_t i = 0; i < n_q; ++i) {
            std::vector<float> x(n_k), m(mask.begin() + i * n_k, mask.begin() + (i + 1) * n_k);
            for (size_t j = 0; j < n_k; ++j) x[j] = first.X(h, i, j);
            // Every key masked and no sink: ggml's row is NaN (exp(-inf - -inf)), posenc's
            // +0 (the header's documented difference): empty here, checked below.
            if (form == 2 || std::any_of(m.begin(), m.end(), [](float v) { return v != -kInf; }))
              want[h * n_q + i] = GgmlSoftMaxRow(x, m, s.scale, form == 2 ? 1.0f : slopes[h],
                                                 form == 2 ? &sinks[h] : nullptr);
          }
        for (posenc_dtype yt : kTypes) {
          s.yt = yt;
          const Problem pb(s, seed);
          const Problem::Output out = pb.Run(yt, false, isa());
          for (size_t h = 0; h < heads; ++h)
            for (size_t i = 0; i < n_q; ++i) {
              const std::vector<long double>& row = want[h * n_q + i];
              for (size_t j = 0; j < n_k; ++j) {
                const float got = out.Get(h, i, j);
                if (row.empty() || mask[i * n_k + j] == -kInf) {
                  ASSERT_EQ(out.Bits(h, i, j), 0u) << Describe(s) << " " << Where(s, h, i, j);
                  continue;
                }
                const double w = static_cast<double>(row[j]);
                const double bound = kRel * w + kAbs + Rounding(yt, std::max<double>(got, w));
                ASSERT_LE(std::fabs(got - w), bound) << Describe(s) << " " << Where(s, h, i, j)
                                                     << ": got " << Value(got) << ", ggml " << w;
              }
            }
          if (yt == kF32) Check(pb);
          if (HasFailure()) return;
        }
      }
}

// ---------------------------------------------------------------------------- special values

// Rows with no visible key (by the mask, by the window, by the positions) and rows whose
// visible scores are all -inf: +0 everywhere, with or without a sink.
TEST_P(SoftmaxTest, RowsWithNothingVisibleAreZero) {
  uint32_t seed = kSeed;
  for (const TypePair& types : TypePairs())
    for (size_t n_k : {1, 8, 17, 70})
      for (bool sinks : {false, true})
        for (int how = 0; how < 5; ++how) {
          Spec s = Base(2, 3, n_k, types, "");
          std::mt19937 rng(++seed);
          if (sinks) s.sinks = RandomSinks(rng, 2);
          const auto minus_inf = [](std::mt19937&, const Spec&, size_t, size_t, size_t) {
            return -kInf;
          };
          switch (how) {
            case 0:
              s.name = "hidden by the mask";
              s.mask = MaskOf(kF16, true, false, 0, minus_inf);
              break;
            case 1:
              s.name = "hidden by the window";
              s.flags = kWindow | kCausal;
              s.window = 3;
              s.q_offset = static_cast<int32_t>(n_k) + 3;
              break;
            case 2:
              s.name = "hidden by the positions";
              s.flags = kCausal;
              s.kpos.assign(n_k, 50);
              s.qpos = {0, 10, 49};
              break;
            case 3:
              s.name = "hidden by a window of positions";
              s.flags = kWindow;
              s.window = 2;
              s.kpos.assign(n_k, 3);
              s.qpos = {5, 100, 7};
              break;
            default:
              s.name = "every score -inf";
              s.scores = minus_inf;
              s.slopes = AlibiSlopes(2);
              break;
          }
          const Problem pb(s, seed);
          Check(pb);
          const Problem::Output out = pb.Run(s.yt, false, isa());
          for (size_t h = 0; h < 2; ++h)
            for (size_t i = 0; i < 3; ++i)
              for (size_t j = 0; j < n_k; ++j)
                ASSERT_EQ(out.Bits(h, i, j), 0u) << Describe(s) << " " << Where(s, h, i, j);
        }
}

// A row of -inf but one finite score: exactly 1 there and +0 elsewhere; with a sink equal to
// that score, exactly 1/2 (less than 1).
TEST_P(SoftmaxTest, OneFiniteScoreAmongMinusInfinity) {
  for (const TypePair& types : TypePairs())
    for (size_t n_k : {1, 4, 16, 17, 33, 300, 4097})
      for (size_t one : {size_t{0}, n_k / 2, n_k - 1})
        for (bool sink : {false, true}) {
          if (n_k > 300 && (types.x != types.y || one != n_k / 2)) continue;
          Spec s = Base(2, 2, n_k, types, "one finite");
          s.scores = [one](std::mt19937&, const Spec&, size_t h, size_t, size_t j) {
            return j == one ? 1.5f + static_cast<float>(h) : -kInf;
          };
          if (sink) s.sinks = {1.5f, 2.5f};
          const Problem pb(s, kSeed);
          if (one == n_k / 2) Check(pb);
          const Problem::Output out = pb.Run(s.yt, false, isa());
          for (size_t h = 0; h < 2; ++h)
            for (size_t i = 0; i < 2; ++i)
              for (size_t j = 0; j < n_k; ++j) {
                const float want = j != one ? 0.0f : sink ? 0.5f : 1.0f;
                ASSERT_TRUE(BitwiseEqual(out.Get(h, i, j), want) &&
                            (want != 0.0f || out.Bits(h, i, j) == 0))
                    << Describe(s) << " " << Where(s, h, i, j) << ": " << Value(out.Get(h, i, j));
              }
        }
}

// A NaN score, an infinite score (+inf, or -inf times a negative scale), or 0 * inf at a
// visible key makes every visible key of its row NaN; hidden keys (by the mask, by the
// flags, by the positions) stay +0; other rows are unaffected.
TEST_P(SoftmaxTest, NonFiniteVisibleScoresMakeTheRowNaN) {
  struct Poison {
    float value, scale;
  };
  const Poison poisons[] = {{NAN, 1.0f}, {kInf, 1.0f}, {-kInf, -1.0f}, {kInf, 0.0f}};
  uint32_t seed = kSeed;
  for (const Poison& poison : poisons)
    for (int hide = 0; hide < 4; ++hide) {
      // Each poison and way of hiding keys reports its first failing problem only.
      const auto failures = [] {
        return testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
      };
      const int failures_before = failures();
      for (size_t n_k : {3, 9, 40})
        for (posenc_dtype yt : kTypes) {
          if (failures() != failures_before) break;
          Spec s = Base(2, 4, n_k, {kF32, yt}, "");
          s.scale = poison.scale;
          const size_t at = n_k / 2;  // visible in every row
          s.scores = [&](std::mt19937& rng, const Spec&, size_t h, size_t i, size_t j) {
            if (h == 1 && i % 2 == 0 && j == at) return poison.value;
            return std::uniform_real_distribution<float>(-5, 5)(rng);
          };
          switch (hide) {
            case 0:
              s.name = "no hidden key";
              break;
            case 1:
              s.name = "keys hidden by the mask";
              s.mask = MaskOf(kF32, false, false, 0,
                              [at](std::mt19937&, const Spec&, size_t, size_t, size_t j) {
                                return j != at && j % 3 == 0 ? -kInf : 0.0f;
                              });
              break;
            case 2:
              s.name = "keys hidden by the causal flag and the window";
              s.flags = kCausal | kWindow;
              s.window = 6;  // row i: keys at + i - 3 .. at + i + 2, key `at` among them
              s.q_offset = static_cast<int32_t>(at) + 2;
              break;
            default:
              s.name = "keys hidden by positions";
              s.flags = kCausal;
              s.kpos.resize(n_k);
              for (size_t j = 0; j < n_k; ++j)
                s.kpos[j] = j == at ? 5 : static_cast<int32_t>(j % 9);
              s.qpos = {5, 6, 5, 8};
              break;
          }
          s.sinks = {0.5f, 0.5f};
          const Problem pb(s, ++seed);
          const std::vector<RefRow> refs = References(pb);
          for (size_t i = 0; i < s.n_q; ++i)  // the test's own premise
            ASSERT_EQ(refs[s.n_q + i].nan, i % 2 == 0) << Describe(s);
          Check(pb);
          const Problem::Output out = pb.Run(yt, false, isa());
          const auto nan_rows = [&]() -> testing::AssertionResult {
            for (size_t i = 0; i < s.n_q; ++i)
              for (size_t j = 0; j < n_k; ++j) {
                if (std::isnan(out.Get(0, i, j)))
                  return testing::AssertionFailure() << "NaN in head 0 " << Where(s, 0, i, j);
                const bool nan = std::isnan(out.Get(1, i, j));
                if (refs[s.n_q + i].visible[j] ? nan != (i % 2 == 0) : out.Bits(1, i, j) != 0)
                  return testing::AssertionFailure()
                         << (refs[s.n_q + i].visible[j] ? "visible " : "hidden ")
                         << Where(s, 1, i, j) << ": " << Value(out.Get(1, i, j));
              }
            return testing::AssertionSuccess();
          };
          EXPECT_TRUE(nan_rows()) << Describe(s) << " poison " << poison.value << " scale "
                                  << poison.scale << " " << posenc_isa_name(isa());
        }
    }
}

// NaN and infinite scores at hidden keys (by a -inf mask value, by the causal flag, by the
// window, by the positions) are not used: the result is that of finite scores there.
TEST_P(SoftmaxTest, NonFiniteScoresAtHiddenKeysDoNotMatter) {
  uint32_t seed = kSeed;
  for (int hide = 0; hide < 4; ++hide)
    for (size_t n_k : {5, 16, 40, 300})
      for (const TypePair& types : TypePairs()) {
        Spec s = Base(2, 5, n_k, types, "hidden poison");
        s.scale = 0.5f;
        switch (hide) {
          case 0:
            s.mask = MaskOf(kF16, true, false, 1);
            break;
          case 1:
            s.flags = kCausal;
            s.q_offset = 2;
            break;
          case 2:
            s.flags = kWindow;
            s.window = 3;
            s.q_offset = static_cast<int32_t>(n_k) - 2;
            break;
          default:
            s.flags = kCausal | kWindow;
            s.window = 4;
            std::mt19937 rng(seed);
            RandomPositions(s, rng);
            break;
        }
        ++seed;
        const Problem clean(s, seed);
        const std::vector<RefRow> refs = References(clean);
        for (float poison : {NAN, kInf, -kInf}) {
          Spec p = s;
          p.scores = [&](std::mt19937&, const Spec&, size_t h, size_t i, size_t j) {
            return refs[h * s.n_q + i].visible[j] ? clean.X(h, i, j) : poison;
          };
          p.mask.values = s.mask.on ? ValueFn([&](std::mt19937&, const Spec&, size_t h, size_t i,
                                                  size_t j) { return clean.Mask(h, i, j); })
                                    : ValueFn();
          const Problem poisoned(p, seed);
          ASSERT_TRUE(SameScores(clean, clean.Run(s.yt, false, isa()),
                                 poisoned.Run(s.yt, false, isa()), "poisoned hidden keys"))
              << Describe(s) << " poison " << poison;
          if (std::isnan(poison) && types.x == types.y) Check(poisoned);
          if (HasFailure()) return;
        }
      }
}

// Soft-capping caps infinite scores to -+c first: the row is finite (a +inf score takes the
// largest share, a -inf one a small one instead of 0).
TEST_P(SoftmaxTest, SoftcapCapsInfiniteScores) {
  for (posenc_dtype yt : kTypes)
    for (size_t n_k : {2, 9, 40})
      for (float cap : {1.0f, 5.0f, 50.0f}) {
        Spec s = Base(2, 3, n_k, {kF32, yt}, "softcap of infinities");
        s.flags = kSoftcap;
        s.softcap = cap;
        s.scores = [](std::mt19937& rng, const Spec&, size_t, size_t i, size_t j) {
          if (j == i) return kInf;
          if (j % 3 == 1) return -kInf;
          return std::uniform_real_distribution<float>(-100, 100)(rng);
        };
        const Problem pb(s, kSeed);
        Check(pb);
        const Problem::Output out = pb.Run(yt, false, isa());
        for (size_t h = 0; h < 2; ++h)
          for (size_t i = 0; i < 3; ++i)
            for (size_t j = 0; j < n_k; ++j)
              ASSERT_TRUE(std::isfinite(out.Get(h, i, j))) << Describe(s) << Where(s, h, i, j);
      }
}

// t - M around posenc.h's floor ln(2 (n_k + 1) FLT_MIN) (-85.54 for two keys, -85.95 for
// one) and ln(FLT_MIN) = -87.3365: e is exactly 0 below the floor, and y is at least
// 2 FLT_MIN above it. No subnormal anywhere (MatchesReference checks every element).
const float kOffsets[] = {0.0f,      -1.0f,   -80.0f,  -85.5f, -85.544f,   -85.545f,
                          -85.6f,    -85.95f, -85.96f, -87.3f, -87.33654f, -87.33655f,
                          -87.3366f, -87.34f, -87.5f,  -90.0f, -100.0f,    -103.9f,
                          -104.0f,   -104.1f, -150.0f, -1e4f,  -3e38f,     -0.0f};

// posenc.h: e = exp(t - M) is +0 where t - M < ln(2 (n_k + 1) FLT_MIN), rounded up to float.
float ExpFloor(size_t n_k) {
  return std::nextafter(
      static_cast<float>(std::log(double{FLT_MIN}) + std::log(2.0 * (double(n_k) + 1.0))),
      std::numeric_limits<float>::infinity());
}
constexpr size_t kNumOffsets = sizeof kOffsets / sizeof kOffsets[0];

TEST_P(SoftmaxTest, TinyProbabilitiesFlushToZeroWithoutSubnormals) {
  for (posenc_dtype yt : kTypes)
    for (size_t n_k : {kNumOffsets, kNumOffsets + 5, size_t{64}})
      for (bool sink : {false, true}) {
        Spec s = Base(3, 2, n_k, {kF32, yt}, "offsets");
        s.scores = [n_k](std::mt19937&, const Spec&, size_t h, size_t, size_t j) {
          if (h == 1 && j == n_k - 1) return 0.0f;
          return (h == 2 ? 50.0f : 0.0f) + kOffsets[j % kNumOffsets];
        };
        if (sink) s.sinks = {0.0f, -87.5f, 50.0f};
        Check(Problem(s, kSeed));
        if (HasFailure()) return;
      }
  // The exact arguments, one call each: {0, offset}, p = e^offset (sum 1 + e).
  for (float offset : kOffsets) {
    Spec s = Base(1, 1, 2, {kF32, kF32}, "offset");
    s.scores = [offset](std::mt19937&, const Spec&, size_t, size_t, size_t j) {
      return j == 0 ? 0.0f : offset;
    };
    const Problem pb(s, kSeed);
    const float p = pb.Run(kF32, false, isa()).Get(0, 0, 1);
    if (offset < ExpFloor(2)) {
      EXPECT_EQ(FloatBits(p), 0u) << offset << ": " << Value(p);
    } else {
      EXPECT_GE(p, 2 * FLT_MIN) << offset;
    }
    // The same through the sink: e^offset in the denominator only.
    s.scores = [](std::mt19937&, const Spec&, size_t, size_t, size_t) { return 0.0f; };
    s.n_k = 1;
    s.sinks = {offset};
    const float with_sink = Problem(s, kSeed).Run(kF32, false, isa()).Get(0, 0, 0);
    if (offset < ExpFloor(1)) {
      EXPECT_EQ(with_sink, 1.0f) << "sink " << offset;
    } else {
      const double want = 1 / (1 + std::exp(double{offset}));
      EXPECT_NEAR(with_sink, want, kRel * want + kAbs) << "sink " << offset;
    }
  }
  // e just above FLT_MIN with a sum of 2: e / 2 < FLT_MIN gives +0.
  Spec s = Base(1, 1, 3, {kF32, kF32}, "half of FLT_MIN");
  s.scores = [](std::mt19937&, const Spec&, size_t, size_t, size_t j) {
    return j < 2 ? 0.0f : -87.33654f;
  };
  const Problem::Output out = Problem(s, kSeed).Run(kF32, false, isa());
  EXPECT_EQ(out.Get(0, 0, 0), 0.5f);
  EXPECT_EQ(out.Get(0, 0, 1), 0.5f);
  EXPECT_EQ(out.Bits(0, 0, 2), 0u) << Value(out.Get(0, 0, 2));
}

// ---------------------------------------------------------------------------- split

// Each row alone (n_q = 1 with its qpos or q_offset and its mask row) and each head alone
// (n_heads = 1 with its slope, sink and mask): bit for bit the whole call's result.
TEST_P(SoftmaxTest, ResultsDoNotDependOnTheSplit) {
  uint32_t seed = kSeed;
  const std::vector<Option> options = Options();
  for (const Option& option : options)
    for (size_t n_k : {9, 300, 4100})
      for (posenc_dtype yt : {kF32, kBf16}) {
        // Long rows (the 16-bit block path): sinks alone and the combinations.
        const std::string name = option.name;
        if (n_k == 4100 && name != "sinks" && name.rfind("everything", 0) != 0) continue;
        Spec s = Base(3, 4, n_k, {kBf16, yt}, option.name);
        s.xl = {false, 2, 1, 1};
        s.yl = {true, 1, 3, 0};
        std::mt19937 rng(++seed);
        option.apply(s, rng);
        const Problem pb(s, seed);
        const Problem::Output whole = pb.Run(yt, false, isa());
        const Grid& xg = pb.x_grid();
        const Grid& yg = whole.grid;
        Elems xbuf = pb.x(), mask = pb.mask();
        const posenc_softmax_params all = pb.Params(mask);
        for (bool by_rows : {true, false}) {
          Problem::Output split{whole.before, whole.before, yg};
          for (size_t part = 0; part < (by_rows ? s.n_q : s.heads); ++part) {
            posenc_softmax_params p = all;
            const size_t h = by_rows ? 0 : part, i = by_rows ? part : 0;
            if (p.mask)
              p.mask =
                  static_cast<const char*>(all.mask) +
                  (h * pb.mask_head_stride() + i * pb.mask_row_stride()) * ElemSize(s.mask.dtype);
            if (by_rows) {
              if (p.qpos)
                p.qpos += i;
              else
                p.q_offset += static_cast<int32_t>(i);
            } else {
              if (p.slopes) p.slopes += h;
              if (p.sinks) p.sinks += h;
            }
            const posenc_scores_view xv = {xbuf.At(xg.Index(h, i, 0)), s.xt, xg.head_stride,
                                           xg.row_stride};
            const posenc_scores_view yv = {split.after.At(yg.Index(h, i, 0)), yt, yg.head_stride,
                                           yg.row_stride};
            ASSERT_EQ(
                posenc_softmax(&p, by_rows ? s.heads : 1, by_rows ? 1 : s.n_q, s.n_k, &xv, &yv),
                POSENC_OK)
                << Describe(s);
          }
          ASSERT_TRUE(
              SameScores(pb, whole, split, by_rows ? "rows one at a time" : "heads one at a time"))
              << Describe(s);
          ASSERT_TRUE(SameBits(split.after, whole.after)) << "gaps: " << Describe(s);
        }
      }
}

// ---------------------------------------------------------------------------- guard pages

// x, y and the mask right after, or right before, an inaccessible page, for key counts
// around the vector widths, every type: exits 1 on an error status.
[[noreturn]] void RunNextToGuardPages(posenc_isa isa) {
  if (posenc_set_isa(isa) != POSENC_OK) std::exit(1);
  const float slopes[2] = {0.5f, 0.25f}, sinks[2] = {1.0f, -1.0f};
  for (size_t n_k = 1; n_k <= 70; n_k += (n_k < 34 ? 1 : 12)) {
    const size_t n_q = 2, heads = 2, n = heads * n_q * n_k;
    GuardedPages xp(n), yp(n), mp(n);
    if (!xp.ok() || !yp.ok() || !mp.ok()) std::exit(1);
    for (posenc_dtype xt : kTypes)
      for (posenc_dtype yt : kTypes)
        for (int at_end = 0; at_end < 2; ++at_end)
          for (unsigned flags : {0u, kCausal | kWindow | kSoftcap}) {
            char* xb = reinterpret_cast<char*>(at_end ? xp.AtEnd(0) : xp.AtStart());
            char* yb = reinterpret_cast<char*>(at_end ? yp.AtEnd(0) : yp.AtStart());
            char* mb = reinterpret_cast<char*>(at_end ? mp.AtEnd(0) : mp.AtStart());
            if (at_end) {
              xb -= n * ElemSize(xt);
              yb -= n * ElemSize(yt);
              mb -= n_q * n_k * 2;
            }
            for (size_t k = 0; k < n * ElemSize(xt) / 2; ++k) {
              const uint16_t v = static_cast<uint16_t>(0x3c00 + k % 5);
              std::memcpy(xb + 2 * k, &v, 2);
            }
            std::memset(mb, 0, n_q * n_k * 2);
            posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
            p.flags = flags;
            p.window = 3;
            p.softcap = 10.0f;
            p.q_offset = static_cast<int32_t>(n_k) - 1;
            p.slopes = slopes;
            p.sinks = sinks;
            p.mask = mb;
            p.mask_dtype = kF16;
            const posenc_scores_view x = {xb, xt, n_q * n_k, n_k}, y = {yb, yt, n_q * n_k, n_k};
            if (posenc_softmax(&p, heads, n_q, n_k, &x, &y) != POSENC_OK) std::exit(1);
          }
  }
  std::exit(0);
}

TEST_P(SoftmaxTest, NeverTouchesMemoryOutsideTheViews) {
  ExpectNoAccessNextToGuardPages([this] { RunNextToGuardPages(isa()); }, isa(), "x, y or the mask");
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(SoftmaxTest);

// ---------------------------------------------------------------------------- conversions

// The suite's integer conversions against the harness's (double through libm): every 16-bit
// pattern decoded, special and random floats rounded, and the half ulp.
TEST(SoftmaxConversionsTest, MatchTheHarness) {
  for (posenc_dtype t : {kBf16, kF16}) {
    const Storage st = HalfOf(t);
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      const auto h = static_cast<uint16_t>(bits);
      const float got = HalfValue(t, h), want = DecodeHalf(st, h);
      ASSERT_TRUE(IsHalfNaN(st, h) ? std::isnan(got) : BitwiseEqual(got, want))
          << TypeName(t) << " " << DescribeHalf(st, h) << ": " << Value(got);
    }
    std::vector<float> values = {0.0f,     -0.0f,    1.0f,       65504.0f, 65519.99f, 65520.0f,
                                 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1p-14f,  FLT_MIN,
                                 1e-40f,   -1e-45f,  3.4e38f,    kInf,     -kInf,     0.3f};
    std::mt19937 rng(kSeed);
    for (int k = 0; k < 20000; ++k) {
      values.push_back(BitsFloat(static_cast<uint32_t>(rng())));
      // Near the 16-bit values: ties and their neighbours.
      const uint32_t tie = (static_cast<uint32_t>(rng()) & 0x7fffe000u) | 0x1000u;
      values.push_back(BitsFloat(tie + static_cast<uint32_t>(k % 3) - 1u));
      values.push_back(BitsFloat((static_cast<uint32_t>(rng()) & 0xffff0000u) | 0x8000u));
    }
    for (float v : values) {
      if (std::isnan(v)) {
        ASSERT_TRUE(IsHalfNaN(st, HalfBits(t, v))) << Value(v);
        continue;
      }
      ASSERT_EQ(HalfBits(t, v), ToHalfBits(st, v)) << TypeName(t) << " " << Value(v);
      ASSERT_TRUE(BitwiseEqual(RoundTo(t, v), RoundToStorage(st, v))) << Value(v);
      if (std::isfinite(v)) {
        ASSERT_GE(HalfUlpOf(t, v), HalfUlp(st, std::fabs(v))) << TypeName(t) << " " << Value(v);
        ASSERT_LE(HalfUlpOf(t, v), 2 * HalfUlp(st, std::fabs(v))) << TypeName(t) << " " << Value(v);
      }
    }
  }
}

// ---------------------------------------------------------------------------- errors

// Everything posenc_softmax takes, with NULL-able params and views.
struct SoftmaxCall {
  posenc_softmax_params params;
  size_t n_heads, n_q, n_k;
  posenc_scores_view x, y;
  bool null_params = false, null_x = false, null_y = false;

  posenc_status Invoke() const {
    return posenc_softmax(null_params ? nullptr : &params, n_heads, n_q, n_k, null_x ? nullptr : &x,
                          null_y ? nullptr : &y);
  }
};

// One buffer holds x, y, the mask, slopes, sinks and positions, so that any write shows.
class SoftmaxArgumentsTest : public testing::TestWithParam<std::tuple<posenc_dtype, posenc_dtype>> {
 protected:
  static constexpr size_t kHeads = 3, kRows = 3, kKeys = 5, kRowStride = 6;
  static constexpr size_t kHeadStride = (kRows - 1) * kRowStride + kKeys;  // 17, the smallest
  static constexpr size_t kExtent = (kHeads - 1) * kHeadStride + (kRows - 1) * kRowStride + kKeys;
  // Float offsets of each array in the buffer.
  static constexpr size_t kX = 32, kY = 128, kMask = 224, kSlopes = 256, kSinks = 264, kKpos = 272,
                          kQpos = 280, kSize = 320;

  SoftmaxArgumentsTest() : buffer_(kSize) { Fill(); }

  posenc_dtype xt() const { return std::get<0>(GetParam()); }
  posenc_dtype yt() const { return std::get<1>(GetParam()); }
  char* Bytes(size_t float_offset) {
    return reinterpret_cast<char*>(buffer_.data() + float_offset);
  }
  // Element e of y (of y's type) and of x.
  char* YAt(size_t e) { return Bytes(kY) + e * ElemSize(yt()); }
  char* XAt(size_t e) { return Bytes(kX) + e * ElemSize(xt()); }

  void Fill() {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = 0.5f + static_cast<float>(i);
    for (size_t i = 0; i < 16; ++i) buffer_[kMask + i] = 0.0f;
    const float slopes[3] = {0.5f, 0.25f, -0.125f}, sinks[3] = {1.0f, 2.0f, -3.0f};
    const int32_t kpos[kKeys] = {0, 1, 2, 3, 4}, qpos[kRows] = {2, 3, 4};
    std::memcpy(Bytes(kSlopes), slopes, sizeof slopes);
    std::memcpy(Bytes(kSinks), sinks, sizeof sinks);
    std::memcpy(Bytes(kKpos), kpos, sizeof kpos);
    std::memcpy(Bytes(kQpos), qpos, sizeof qpos);
  }

  SoftmaxCall Valid() {
    SoftmaxCall c{};
    c.params = POSENC_SOFTMAX_PARAMS_INIT;
    c.params.scale = 0.5f;
    c.params.softcap = 30.0f;
    c.params.slopes = reinterpret_cast<const float*>(Bytes(kSlopes));
    c.params.sinks = reinterpret_cast<const float*>(Bytes(kSinks));
    c.params.mask = Bytes(kMask);
    c.params.mask_dtype = kF32;
    c.params.kpos = reinterpret_cast<const int32_t*>(Bytes(kKpos));
    c.params.qpos = reinterpret_cast<const int32_t*>(Bytes(kQpos));
    c.params.window = 3;
    c.params.flags = kCausal | kWindow | kSoftcap;
    c.n_heads = kHeads;
    c.n_q = kRows;
    c.n_k = kKeys;
    c.x = {Bytes(kX), xt(), kHeadStride, kRowStride};
    c.y = {Bytes(kY), yt(), kHeadStride, kRowStride};
    return c;
  }

  std::string Name() const { return std::string(TypeName(xt())) + "->" + TypeName(yt()) + ": "; }

  AlignedFloats buffer_;
};

TEST_P(SoftmaxArgumentsTest, TheValidCallsWrite) {
  std::vector<std::pair<const char*, std::function<void(SoftmaxCall&)>>> valid = {
      {"every option", [](SoftmaxCall&) {}},
      {"mask slope", [](SoftmaxCall& c) { c.params.flags = kMaskSlope | kSymmetric; }},
      {"f16 mask", [](SoftmaxCall& c) { c.params.mask_dtype = kF16; }},
      {"mask row stride n_k, per head",
       [](SoftmaxCall& c) {
         c.params.mask_row_stride = kKeys;
         c.params.mask_head_stride = 1;
       }},
      {"no qpos, q_offset at the int32 limit",
       [](SoftmaxCall& c) {
         c.params.qpos = nullptr;
         c.params.q_offset = INT32_MAX - static_cast<int32_t>(kRows) + 1;
       }},
      {"mask and arrays right before and after y",
       [this](SoftmaxCall& c) {
         c.params.mask = YAt(kExtent);
         c.params.mask_dtype = kF16;
         std::memset(YAt(kExtent), 0, 32);
         c.params.slopes = reinterpret_cast<const float*>(Bytes(kY) - 12);
       }},
  };
  for (const auto& [what, change] : valid) {
    Fill();
    SoftmaxCall call = Valid();
    change(call);
    const AlignedFloats before = buffer_;
    EXPECT_EQ(call.Invoke(), POSENC_OK) << Name() << what;
    EXPECT_NE(FirstBitwiseDifference(before, buffer_), -1) << Name() << what;
  }
  // In place: x = y, same type and strides (row stride 0 for n_k in one of them).
  if (xt() == yt()) {
    Fill();
    SoftmaxCall call = Valid();
    call.x = call.y;
    call.x.row_stride = call.y.row_stride = kKeys;
    call.y.row_stride = 0;
    EXPECT_EQ(call.Invoke(), POSENC_OK) << Name() << "in place";
  }
}

TEST_P(SoftmaxArgumentsTest, InvalidCallsAreRejectedAndWriteNothing) {
  const size_t es = ElemSize(yt());
  // An array of n floats / int32 at byte `byte` of y's extent, holding valid values.
  const auto floats_in_y = [this](size_t byte, size_t n, float v) {
    float* p = reinterpret_cast<float*>(YAt(0) + byte);
    for (size_t k = 0; k < n; ++k) p[k] = v;
    return p;
  };
  const auto ints_in_y = [this](size_t byte, size_t n) {
    int32_t* p = reinterpret_cast<int32_t*>(YAt(0) + byte);
    for (size_t k = 0; k < n; ++k) p[k] = static_cast<int32_t>(k);
    return p;
  };
  const size_t last = (kExtent - 1) * es / 4 * 4;  // a float boundary at or before the last
  const size_t gap = kKeys * es / 4 * 4;           // over the gap after the first row
  const auto bad_slope = [this](float v) {
    return [this, v](SoftmaxCall&) { reinterpret_cast<float*>(Bytes(kSlopes))[2] = v; };
  };
  const auto bad_sink = [this](float v) {
    return [this, v](SoftmaxCall&) { reinterpret_cast<float*>(Bytes(kSinks))[1] = v; };
  };
  const auto no_qpos = [](int32_t q_offset) {
    return [q_offset](SoftmaxCall& c) {
      c.params.qpos = nullptr;
      c.params.q_offset = q_offset;
    };
  };
  const CallChanges<SoftmaxCall> invalid = {
      {"NULL params", [](SoftmaxCall& c) { c.null_params = true; }},
      {"NULL x", [](SoftmaxCall& c) { c.null_x = true; }},
      {"NULL y", [](SoftmaxCall& c) { c.null_y = true; }},
      {"NULL x data", [](SoftmaxCall& c) { c.x.data = nullptr; }},
      {"NULL y data", [](SoftmaxCall& c) { c.y.data = nullptr; }},
      {"unknown x dtype", [](SoftmaxCall& c) { c.x.dtype = static_cast<posenc_dtype>(3); }},
      {"unknown y dtype", [](SoftmaxCall& c) { c.y.dtype = static_cast<posenc_dtype>(3); }},
      {"mask dtype bf16", [](SoftmaxCall& c) { c.params.mask_dtype = kBf16; }},
      {"unknown mask dtype",
       [](SoftmaxCall& c) { c.params.mask_dtype = static_cast<posenc_dtype>(3); }},
      {"unknown flag", [](SoftmaxCall& c) { c.params.flags |= 1u << 5; }},
      {"every flag bit", [](SoftmaxCall& c) { c.params.flags = ~0u; }},
      {"NaN scale", [](SoftmaxCall& c) { c.params.scale = NAN; }},
      {"+inf scale", [](SoftmaxCall& c) { c.params.scale = kInf; }},
      {"-inf scale", [](SoftmaxCall& c) { c.params.scale = -kInf; }},
      {"NaN slope", bad_slope(NAN)},
      {"+inf slope", bad_slope(kInf)},
      {"-inf slope", bad_slope(-kInf)},
      {"NaN sink", bad_sink(NAN)},
      {"+inf sink", bad_sink(kInf)},
      {"-inf sink", bad_sink(-kInf)},
      {"softcap 0", [](SoftmaxCall& c) { c.params.softcap = 0.0f; }},
      {"softcap -0", [](SoftmaxCall& c) { c.params.softcap = -0.0f; }},
      {"softcap -1", [](SoftmaxCall& c) { c.params.softcap = -1.0f; }},
      {"softcap NaN", [](SoftmaxCall& c) { c.params.softcap = NAN; }},
      {"softcap +inf", [](SoftmaxCall& c) { c.params.softcap = kInf; }},
      {"window 0", [](SoftmaxCall& c) { c.params.window = 0; }},
      {"window -1", [](SoftmaxCall& c) { c.params.window = -1; }},
      {"window INT32_MIN", [](SoftmaxCall& c) { c.params.window = INT32_MIN; }},
      {"MASK_SLOPE without a mask",
       [](SoftmaxCall& c) {
         c.params.flags |= kMaskSlope;
         c.params.mask = nullptr;
       }},
      {"MASK_SLOPE without slopes",
       [](SoftmaxCall& c) {
         c.params.flags |= kMaskSlope;
         c.params.slopes = nullptr;
       }},
      {"mask row stride 1", [](SoftmaxCall& c) { c.params.mask_row_stride = 1; }},
      {"mask row stride n_k - 1", [](SoftmaxCall& c) { c.params.mask_row_stride = kKeys - 1; }},
      {"negative q_offset", no_qpos(-1)},
      {"q_offset INT32_MIN", no_qpos(INT32_MIN)},
      {"q_offset + n_q - 1 = INT32_MAX + 1", no_qpos(INT32_MAX - static_cast<int32_t>(kRows) + 2)},
      {"q_offset INT32_MAX", no_qpos(INT32_MAX)},
      {"a negative kpos",
       [this](SoftmaxCall&) { reinterpret_cast<int32_t*>(Bytes(kKpos))[kKeys - 1] = -1; }},
      {"kpos INT32_MIN",
       [this](SoftmaxCall&) { reinterpret_cast<int32_t*>(Bytes(kKpos))[0] = INT32_MIN; }},
      {"a negative qpos",
       [this](SoftmaxCall&) { reinterpret_cast<int32_t*>(Bytes(kQpos))[1] = -1; }},
      {"n_k 2^31 + 1 without kpos",
       [](SoftmaxCall& c) {
         c.params.kpos = nullptr;
         c.n_heads = c.n_q = 1;
         c.n_k = (size_t{1} << 31) + 1;
       }},
      {"y rows overlap", [](SoftmaxCall& c) { c.y.row_stride = kKeys - 1; }},
      {"y heads overlap", [](SoftmaxCall& c) { c.y.head_stride = kHeadStride - 1; }},
      {"y [q,H,k] with overlapping heads",
       [](SoftmaxCall& c) {
         c.y.head_stride = kKeys;
         c.y.row_stride = kHeads * kKeys - 1;
       }},
      {"x rows overlap", [](SoftmaxCall& c) { c.x.row_stride = kKeys - 1; }},
      {"y extent overflows", [](SoftmaxCall& c) { c.y.head_stride = SIZE_MAX / 2 + 1; }},
      {"x extent overflows", [](SoftmaxCall& c) { c.x.head_stride = SIZE_MAX / 2 + 1; }},
      {"y extent beyond PTRDIFF_MAX bytes",
       [](SoftmaxCall& c) {
         c.n_heads = 1;
         c.y.row_stride = SIZE_MAX / 8;
       }},
      {"n_heads SIZE_MAX", [](SoftmaxCall& c) { c.n_heads = SIZE_MAX; }},
      {"y one element after x (same type)",
       [this](SoftmaxCall& c) {
         c.y = c.x;
         c.y.dtype = xt();
         c.y.data = XAt(1);
       }},
      {"y on x with another type",
       [&](SoftmaxCall& c) {
         c.y = c.x;
         c.y.dtype = xt() == kF32 ? kBf16 : kF32;
       }},
      {"y on x with another row stride",
       [](SoftmaxCall& c) {
         c.y = c.x;
         c.y.row_stride = kRowStride + 1;
         c.y.head_stride = kHeadStride + 3;
       }},
      {"y on x with another head stride",
       [](SoftmaxCall& c) {
         c.y = c.x;
         c.y.head_stride = kHeadStride + 1;
       }},
      {"x ending inside y", [this](SoftmaxCall& c) { c.x.data = YAt(0) - 8 * ElemSize(xt()); }},
      {"x starting in y's last row",
       [this, es](SoftmaxCall& c) { c.x.data = YAt(0) + (kExtent - 2) * es / 4 * 4; }},
      {"the mask at y", [&](SoftmaxCall& c) { c.params.mask = floats_in_y(0, 16, 0.0f); }},
      {"the mask in y's gap", [&](SoftmaxCall& c) { c.params.mask = floats_in_y(gap, 16, 0.0f); }},
      {"the mask's last element on y's first",
       [this](SoftmaxCall& c) { c.params.mask = YAt(0) - (kRows * kKeys - 1) * 4; }},
      {"the mask (per head) over y",
       [this](SoftmaxCall& c) {
         c.params.mask = Bytes(kY - 64);
         c.params.mask_head_stride = 40;
       }},
      {"slopes at y", [&](SoftmaxCall& c) { c.params.slopes = floats_in_y(0, 3, 0.5f); }},
      {"slopes in y's gap", [&](SoftmaxCall& c) { c.params.slopes = floats_in_y(gap, 1, 0.5f); }},
      {"slopes at y's last element",
       [&](SoftmaxCall& c) { c.params.slopes = floats_in_y(last, 1, 0.5f); }},
      {"slopes overlapping y's first",
       [this](SoftmaxCall& c) { c.params.slopes = reinterpret_cast<const float*>(YAt(0)) - 2; }},
      {"sinks at y", [&](SoftmaxCall& c) { c.params.sinks = floats_in_y(0, 3, 1.0f); }},
      {"sinks at y's last element",
       [&](SoftmaxCall& c) { c.params.sinks = floats_in_y(last, 1, 1.0f); }},
      {"kpos at y", [&](SoftmaxCall& c) { c.params.kpos = ints_in_y(0, kKeys); }},
      {"kpos in y's gap", [&](SoftmaxCall& c) { c.params.kpos = ints_in_y(gap, 1); }},
      {"qpos at y", [&](SoftmaxCall& c) { c.params.qpos = ints_in_y(0, kRows); }},
      {"qpos at y's last element", [&](SoftmaxCall& c) { c.params.qpos = ints_in_y(last, 1); }},
      {"x misaligned by one byte",
       [](SoftmaxCall& c) { c.x.data = static_cast<char*>(c.x.data) + 1; }},
      {"y misaligned by one byte",
       [](SoftmaxCall& c) { c.y.data = static_cast<char*>(c.y.data) + 1; }},
      {"mask misaligned by one byte",
       [](SoftmaxCall& c) { c.params.mask = static_cast<const char*>(c.params.mask) + 1; }},
      {"f32 mask misaligned by two bytes",
       [](SoftmaxCall& c) { c.params.mask = static_cast<const char*>(c.params.mask) + 2; }},
      {"slopes misaligned",
       [](SoftmaxCall& c) {
         c.params.slopes =
             reinterpret_cast<const float*>(reinterpret_cast<const char*>(c.params.slopes) + 2);
       }},
      {"sinks misaligned",
       [](SoftmaxCall& c) {
         c.params.sinks =
             reinterpret_cast<const float*>(reinterpret_cast<const char*>(c.params.sinks) + 1);
       }},
      {"kpos misaligned",
       [](SoftmaxCall& c) {
         c.params.kpos =
             reinterpret_cast<const int32_t*>(reinterpret_cast<const char*>(c.params.kpos) + 2);
       }},
      {"qpos misaligned",
       [](SoftmaxCall& c) {
         c.params.qpos =
             reinterpret_cast<const int32_t*>(reinterpret_cast<const char*>(c.params.qpos) + 2);
       }},
  };
  for (const auto& [what, change] : invalid) {
    Fill();
    SoftmaxCall call = Valid();
    change(call);
    ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_, Name() + what);
  }
  for (const posenc_dtype t : {xt(), yt()})
    if (t == kF32) {
      Fill();
      SoftmaxCall call = Valid();
      (t == xt() ? call.x : call.y).data =
          static_cast<char*>((t == xt() ? call.x : call.y).data) + 2;
      ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_,
                                     Name() + "f32 data two bytes past alignment");
    }
}

// Any count 0 is a no-op that reads and writes nothing (NULL data and arrays are fine);
// the flags and the values that need no array are still checked.
TEST_P(SoftmaxArgumentsTest, EmptyWorkIsANoOpButParametersAreChecked) {
  const auto empty = [](size_t heads, size_t n_q, size_t n_k) {
    return [heads, n_q, n_k](SoftmaxCall& c) {
      c.n_heads = heads;
      c.n_q = n_q;
      c.n_k = n_k;
      c.x.data = c.y.data = nullptr;
      c.params.mask = nullptr;
      c.params.slopes = c.params.sinks = nullptr;
      c.params.kpos = c.params.qpos = nullptr;
    };
  };
  const CallChanges<SoftmaxCall> no_ops = {
      {"n_heads 0", empty(0, kRows, kKeys)},
      {"n_q 0", empty(kHeads, 0, kKeys)},
      {"n_k 0", empty(kHeads, kRows, 0)},
      {"every count 0", empty(0, 0, 0)},
      {"n_k 0 with the arrays", [](SoftmaxCall& c) { c.n_k = 0; }},
  };
  Fill();
  ExpectChangedCallsReturnAndWriteNothing(Valid(), no_ops, POSENC_OK, buffer_, Name());
  const CallChanges<SoftmaxCall> still_checked = {
      {"unknown flag", [](SoftmaxCall& c) { c.params.flags |= 1u << 7; }},
      {"NaN scale", [](SoftmaxCall& c) { c.params.scale = NAN; }},
      {"softcap 0", [](SoftmaxCall& c) { c.params.softcap = 0; }},
      {"window 0", [](SoftmaxCall& c) { c.params.window = 0; }},
      {"negative q_offset", [](SoftmaxCall& c) { c.params.q_offset = -5; }},
      {"unknown y dtype", [](SoftmaxCall& c) { c.y.dtype = static_cast<posenc_dtype>(3); }},
      {"MASK_SLOPE without a mask", [](SoftmaxCall& c) { c.params.flags |= kMaskSlope; }},
  };
  for (const auto& [what, change] : still_checked) {
    SoftmaxCall call = Valid();
    empty(0, kRows, kKeys)(call);
    change(call);
    ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_,
                                   Name() + "n_heads 0, " + what);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, SoftmaxArgumentsTest,
    testing::Combine(testing::ValuesIn(kTypes), testing::ValuesIn(kTypes)),
    [](const testing::TestParamInfo<std::tuple<posenc_dtype, posenc_dtype>>& info) {
      return std::string(TypeName(std::get<0>(info.param))) + "_to_" +
             TypeName(std::get<1>(info.param));
    });

// Counts whose extent overflows, with x, y and every array on an inaccessible page: rejected
// before anything is read (a read kills the child process).
[[noreturn]] void RunHugeCountsOnGuardPages() {
  GuardedPages pages(16);
  if (!pages.ok()) std::exit(1);
  float* inaccessible = pages.AtStart() - 16;
  const size_t kHuge = SIZE_MAX / 4;
  const struct {
    size_t heads, n_q, n_k;
  } counts[] = {{kHuge, 2, 8}, {2, kHuge, 8}, {1, 1, kHuge}, {kHuge, kHuge, kHuge}};
  posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
  p.slopes = p.sinks = inaccessible;
  p.kpos = p.qpos = reinterpret_cast<const int32_t*>(inaccessible);
  p.mask = inaccessible;
  p.flags = kCausal;
  for (const auto& c : counts) {
    const posenc_scores_view x = {inaccessible, kF32, c.n_q * 8, 8};
    const posenc_scores_view y = {inaccessible + 8, kBf16, c.n_q * 8, 8};
    if (posenc_softmax(&p, c.heads, c.n_q, c.n_k, &x, &y) != POSENC_ERR_INVALID_ARGUMENT)
      std::exit(2);
  }
  std::exit(0);
}

TEST(SoftmaxHugeCountsTest, RejectedBeforeAnyRead) {
  ExpectNoAccessNextToGuardPages([] { RunHugeCountsOnGuardPages(); }, posenc_active_isa(),
                                 "the arrays of a huge call");
}

}  // namespace
}  // namespace posenc_test
