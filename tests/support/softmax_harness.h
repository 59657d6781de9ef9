// The harness of the attention-score softmax suite (softmax_test: softmax_test.cc,
// softmax_special_test.cc, softmax_errors_test.cc): a problem (scores x and a mask in their
// own buffers, NaN sentinels in every gap, in either layout, of any element type) described
// by a Spec, the call of posenc_softmax on it with any ISA, a long double reference written
// from the header's formula, the checks of an output against the reference, the scalar
// variant or another output, the options every accuracy test runs, and the fixture
// SoftmaxTest whose Check() runs them all.
#ifndef POSENC_TESTS_SUPPORT_SOFTMAX_HARNESS_H
#define POSENC_TESTS_SUPPORT_SOFTMAX_HARNESS_H

#include <posenc.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "half_harness.h"
#include "test_support.h"

namespace posenc_test::softmax {

constexpr uint32_t kSeed = 20260417;
constexpr double kRel = POSENC_SOFTMAX_REL_TOLERANCE;
constexpr double kAbs = POSENC_SOFTMAX_ABS_TOLERANCE;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr unsigned kCausal = POSENC_SOFTMAX_CAUSAL;
constexpr unsigned kWindow = POSENC_SOFTMAX_WINDOW;
constexpr unsigned kSoftcap = POSENC_SOFTMAX_SOFTCAP;
constexpr unsigned kSymmetric = POSENC_SOFTMAX_ALIBI_SYMMETRIC;
constexpr unsigned kMaskSlope = POSENC_SOFTMAX_MASK_SLOPE;
constexpr unsigned kKposNegHidden = POSENC_SOFTMAX_KPOS_NEG_HIDDEN;
constexpr posenc_dtype kF32 = POSENC_DTYPE_F32;
constexpr posenc_dtype kBf16 = POSENC_DTYPE_BF16;
constexpr posenc_dtype kF16 = POSENC_DTYPE_F16;
constexpr posenc_dtype kTypes[] = {kF32, kBf16, kF16};
constexpr size_t kGuard = 16;  // sentinel elements before and after every tensor

// ---------------------------------------------------------------------------- elements

inline const char* TypeName(posenc_dtype t) {
  return t == kF32 ? "f32" : t == kBf16 ? "bf16" : "f16";
}
inline size_t ElemSize(posenc_dtype t) { return t == kF32 ? 4 : 2; }
inline Storage HalfOf(posenc_dtype t) { return t == kBf16 ? Storage::kBf16 : Storage::kF16; }

uint32_t FloatBits(float f);
float BitsFloat(uint32_t b);

// The 16-bit conversions of the harness (half_harness.h) work in double through libm, which
// costs a lot under an emulator; these integer forms are what the suite uses per element, and
// SoftmaxConversionsTest checks them against the harness's.

// The value of 16-bit bits of type t (NaN for a NaN pattern).
float HalfValue(posenc_dtype t, uint16_t bits);
// v rounded to type t to nearest even, as its bits (NaN: a quiet NaN of v's sign).
uint16_t HalfBits(posenc_dtype t, float v);
// v rounded to type t (a value t holds exactly).
float RoundTo(posenc_dtype t, float v);
// Half an ulp of type t at magnitude |v| (at least half the smallest step): the most that
// rounding v to t can move it.
double HalfUlpOf(posenc_dtype t, double v);

// f with its bits, for messages.
std::string Value(float f);

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
  uint32_t Bits(size_t i) const;
  void SetBits(size_t i, uint32_t bits);
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
  void SetSentinel(size_t i);
  const AlignedFloats& floats() const { return buf_; }

 private:
  posenc_dtype type_;
  size_t n_;
  AlignedFloats buf_;
};

bool SameBits(const Elems& a, const Elems& b);

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
  Grid(const Layout& l, size_t heads, size_t n_q, size_t n_k);
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

inline int32_t KeyPos(const Spec& s, size_t j) {
  return s.kpos.empty() ? static_cast<int32_t>(j) : s.kpos[j];
}
inline int32_t QueryPos(const Spec& s, size_t i) {
  return s.qpos.empty() ? s.q_offset + static_cast<int32_t>(i) : s.qpos[i];
}

std::string Describe(const Spec& s);

// Mostly ordinary scores, with -inf (padding) and signed zeros.
float RandomScore(std::mt19937& rng, const Spec&, size_t, size_t, size_t);
// Mask values: hidden keys (-inf), zeros, and small additive terms.
float RandomMask(std::mt19937& rng, const Spec&, size_t, size_t, size_t);
// llama.cpp's KQ mask for an ALiBi model: -|kpos - qpos| for a visible key, -inf past the
// query (causal).
float LlamaAlibiMask(std::mt19937&, const Spec& s, size_t, size_t i, size_t j);

// One problem: x, and the mask, in their own buffers with sentinels in every gap; the
// slopes, sinks and positions the spec holds.
class Problem {
 public:
  Problem(const Spec& spec, uint32_t seed);

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
  posenc_softmax_params Params(const Elems& mask) const;

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
  Output Run(posenc_dtype yt, bool in_place, posenc_isa isa) const;

 private:
  Spec spec_;
  Grid xg_, yg_;
  Elems x_, mask_;
  size_t mask_row_stride_ = 0, mask_head_stride_ = 0;
};

// ---------------------------------------------------------------------------- reference

// Float operations one rounding at a time (no contraction into fused multiply-adds).
float Mul(float a, float b);
float Add(float a, float b);
float Sub(float a, float b);

// One row as the header defines it: t_j = s(scale * x_j) (+ mask_j or + slope * mask_j)
// (+ slope * d or - slope * |d|), each operation rounded to float; with soft-capping, s is
// the exact c * tanh(u / c) and the terms after it are added exactly (long double). Hidden:
// causal, window, a -inf mask value, or kpos < 0 with POSENC_SOFTMAX_KPOS_NEG_HIDDEN. The
// softmax with the sink in long double.
struct RefRow {
  bool nan = false;
  std::vector<char> visible;
  std::vector<long double> p;  // 0 for hidden keys
};

RefRow Reference(const Problem& pb, size_t h, size_t i);
// Every row, [h * n_q + i].
std::vector<RefRow> References(const Problem& pb);

// The relative part of the bound: REL, plus c * 2^-20 with soft-capping.
double RelBound(const Spec& s);
// Half an ulp of a 16-bit type at v (0 for f32).
double Rounding(posenc_dtype t, double v);

// How far results are from the reference, in units of the bound.
struct Errors {
  double worst_ratio = 0;
  double worst_abs = 0;
  void Add(double err, double bound);
};

std::string Where(const Spec& s, size_t h, size_t i, size_t j);

// Every element of an output: y's gaps and guards (in place: x's non-score elements) as
// before; hidden keys +0 bit for bit; NaN rows NaN at their visible keys; otherwise within
// the bound (plus the output type's rounding), in [0, 1], and no subnormal float (f32, bf16).
testing::AssertionResult MatchesReference(const Problem& pb, const Problem::Output& out,
                                          const std::vector<RefRow>& refs,
                                          Errors* errors = nullptr);
// A 16-bit output equals, bit for bit, the same ISA's f32 output rounded (NaN for NaN).
testing::AssertionResult RoundedFromF32(const Problem& pb, const Problem::Output& out,
                                        const Problem::Output& f32);
// Two outputs of the same problem equal bit for bit at every score (NaN for NaN).
testing::AssertionResult SameScores(const Problem& pb, const Problem::Output& a,
                                    const Problem::Output& b, const char* what);
// A variant against the scalar variant: NaN where scalar has NaN, every other score within
// twice the bound (twice the output type's rounding too).
testing::AssertionResult MatchesScalar(const Problem& pb, const Problem::Output& variant,
                                       const Problem::Output& scalar);

// ---------------------------------------------------------------------------- options

std::vector<float> AlibiSlopes(size_t heads);
std::vector<float> RandomSinks(std::mt19937& rng, size_t heads);
// n positions in [0, hi]: out of order, with repeats.
std::vector<int32_t> RandomPositionsUpTo(std::mt19937& rng, size_t n, int32_t hi);
// Random key and query positions in [0, 2 n_k + 4].
void RandomPositions(Spec& s, std::mt19937& rng);
MaskSpec MaskOf(posenc_dtype t, bool per_head, bool query_major, size_t row_pad,
                ValueFn values = {});

struct Option {
  const char* name;
  std::function<void(Spec&, std::mt19937&)> apply;
};

// Every option alone, then in combinations. With soft-capping the other terms stay within a
// few times the cap (the reference adds them exactly, the kernels in float).
std::vector<Option> Options();

struct TypePair {
  posenc_dtype x, y;
};
// Every (x, y) pair of element types.
std::vector<TypePair> TypePairs();

Spec Base(size_t heads, size_t n_q, size_t n_k, TypePair types, const char* name);

// ---------------------------------------------------------------------------- fixture

// The reference of the last problem seen: problems that differ only in the y type and the
// layouts (consecutive in the loops) share it, which keeps the long-double work small.
class ReferenceCache {
 public:
  const std::vector<RefRow>& For(const Problem& pb);

 private:
  std::vector<uint32_t> key_;
  std::vector<RefRow> refs_;
};

// Instantiated once for every ISA (softmax_test.cc); its tests live in several files.
class SoftmaxTest : public EveryIsaTest {
 protected:
  // Out of place with the spec's types and layouts: against the reference; a 16-bit y bit
  // for bit the same ISA's f32 output rounded; against the scalar variant; and, when x and y
  // share a type, in place bit for bit the out-of-place result.
  void Check(const Problem& pb, Errors* errors = nullptr);
  // Prints and records the worst error measured.
  void Report(const Errors& errors);

  ReferenceCache cache_;
};

}  // namespace posenc_test::softmax

#endif  // POSENC_TESTS_SUPPORT_SOFTMAX_HARNESS_H
