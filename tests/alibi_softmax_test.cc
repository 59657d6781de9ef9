// The fused ALiBi softmax, posenc_alibi_softmax_f32 and posenc_alibi_softmax_bf16, once per
// ISA: every variant against a long-double reference within the header's bound
// (POSENC_ALIBI_SOFTMAX_REL_TOLERANCE * p + POSENC_ALIBI_SOFTMAX_ABS_TOLERANCE) and against
// the scalar variant within twice that; key counts around every vector width up to 32768,
// decode rows, both layouts, strides with NaN sentinels in every gap, the special rows the
// header defines (all -inf, all -inf but one, NaN, +inf), exp arguments around the flush
// threshold (no subnormal output), guard pages, bf16 storage against the f32 kernel, and
// every documented error with nothing written.
#include <posenc.h>

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
#include <vector>

#include "alibi_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr uint32_t kSeed = 20261129;
constexpr double kRel = POSENC_ALIBI_SOFTMAX_REL_TOLERANCE;
constexpr double kAbs = POSENC_ALIBI_SOFTMAX_ABS_TOLERANCE;
constexpr size_t kMaxPosition = size_t{1} << 31;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr unsigned kCausal = POSENC_ALIBI_CAUSAL;

// ---------------------------------------------------------------------------- problems

struct SoftmaxShape {
  size_t n_heads = 1;
  size_t n_q = 1;
  size_t n_k = 1;
  size_t q_offset = 0;
  bool query_major = false;  // [n_q, H, n_k] instead of [H, n_q, n_k]
  size_t inner_pad = 0;      // gap after each innermost row (row or head)
  size_t outer_pad = 0;      // gap after each outer block
  size_t misalign = 0;       // elements after the (aligned) guard
  float scale = 1.0f;
  unsigned flags = 0;
  std::vector<float> slopes;  // empty: SeedSlopes(n_heads)
};

std::string Describe(const SoftmaxShape& s) {
  std::ostringstream os;
  os << "heads=" << s.n_heads << " n_q=" << s.n_q << " n_k=" << s.n_k << " q_offset=" << s.q_offset
     << (s.query_major ? " [n_q,H,n_k]" : " [H,n_q,n_k]") << " pads=" << s.inner_pad << ","
     << s.outer_pad << " misalign=" << s.misalign << " scale=" << s.scale << " flags=" << s.flags
     << (s.slopes.empty() ? " slopes=seed" : " slopes=custom");
  return os.str();
}

// Chooses score (h, i, j).
using ScoreFn = std::function<float(std::mt19937& rng, size_t h, size_t i, size_t j)>;

// Mostly ordinary scores, with -inf (padding), subnormals, signed zeros and large values.
float RandomScore(std::mt19937& rng, size_t, size_t, size_t) {
  static const float kSpecial[] = {-kInf, 1e-40f, -1e-40f, 0.0f, -0.0f, 1e30f, -3e38f, 3e38f};
  std::uniform_int_distribution<int> pick(0, 255);
  const int p = pick(rng);
  if (p < 8) return kSpecial[p];
  return std::uniform_real_distribution<float>(-12.0f, 12.0f)(rng);
}

uint16_t ToBf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  if (std::isnan(f)) return static_cast<uint16_t>((b >> 16) | 0x40u);
  return static_cast<uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

float FromBf16(uint16_t h) {
  const uint32_t b = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// Scores of one shape in a float buffer and a bf16 buffer (the same values: scores are
// rounded to bf16 first), kGuard sentinels around them and sentinels in every gap.
class SoftmaxProblem {
 public:
  static constexpr size_t kGuard = 16;

  SoftmaxProblem(const SoftmaxShape& shape, uint32_t seed, const ScoreFn& score = RandomScore)
      : shape_(shape), slopes_(shape.slopes.empty() ? SeedSlopes(shape.n_heads) : shape.slopes) {
    const SoftmaxShape& s = shape;
    const size_t inner_count = s.query_major ? s.n_heads : s.n_q;
    inner_stride_ = s.n_k + s.inner_pad;
    outer_stride_ = (inner_count - 1) * inner_stride_ + s.n_k + s.outer_pad;
    offset_ = kGuard + s.misalign;
    const size_t extent = Index(s.n_heads - 1, s.n_q - 1, s.n_k - 1) + 1;
    f32_ = AlignedFloats(extent + kGuard);
    bf16_.assign(extent + kGuard, 0);
    is_score_.assign(extent + kGuard, 0);
    for (size_t k = 0; k < f32_.size(); ++k) {
      f32_[k] = NaNSentinel(k);
      bf16_[k] = static_cast<uint16_t>(0x7fc0u | (k & 0x3fu));
    }
    std::mt19937 rng(seed);
    for (size_t h = 0; h < s.n_heads; ++h)
      for (size_t i = 0; i < s.n_q; ++i)
        for (size_t j = 0; j < s.n_k; ++j) Set(h, i, j, score(rng, h, i, j));
  }

  const SoftmaxShape& shape() const { return shape_; }
  const std::vector<float>& slopes() const { return slopes_; }
  size_t head_stride() const { return shape_.query_major ? inner_stride_ : outer_stride_; }
  size_t row_stride() const { return shape_.query_major ? outer_stride_ : inner_stride_; }
  size_t Index(size_t h, size_t i, size_t j) const {
    return offset_ + h * head_stride() + i * row_stride() + j;
  }
  bool IsScore(size_t k) const { return is_score_[k] != 0; }
  size_t Visible(size_t i) const {
    if (!(shape_.flags & kCausal)) return shape_.n_k;
    return std::min(shape_.n_k, static_cast<size_t>(shape_.q_offset + i + 1));
  }
  // Sets score (h, i, j) in both buffers (rounded to bf16 first).
  void Set(size_t h, size_t i, size_t j, float v) {
    const size_t k = Index(h, i, j);
    bf16_[k] = ToBf16(v);
    f32_[k] = FromBf16(bf16_[k]);
    is_score_[k] = 1;
  }
  const AlignedFloats& f32() const { return f32_; }
  const std::vector<uint16_t>& bf16() const { return bf16_; }

  posenc_status RunF32(AlignedFloats& buf) const {
    const SoftmaxShape& s = shape_;
    return posenc_alibi_softmax_f32(slopes_.data(), s.n_heads, s.n_q, s.n_k, s.q_offset,
                                    buf.data() + offset_, head_stride(), row_stride(), s.scale,
                                    s.flags);
  }
  posenc_status RunBf16(std::vector<uint16_t>& buf) const {
    const SoftmaxShape& s = shape_;
    return posenc_alibi_softmax_bf16(slopes_.data(), s.n_heads, s.n_q, s.n_k, s.q_offset,
                                     buf.data() + offset_, head_stride(), row_stride(), s.scale,
                                     s.flags);
  }
  // The f32 result with `isa` active (the ISA active before is restored).
  AlignedFloats F32With(posenc_isa isa) const {
    const posenc_isa before = posenc_active_isa();
    AlignedFloats out = f32_;
    EXPECT_EQ(posenc_set_isa(isa), POSENC_OK);
    EXPECT_EQ(RunF32(out), POSENC_OK) << posenc_isa_name(isa) << " " << Describe(shape_);
    EXPECT_EQ(posenc_set_isa(before), POSENC_OK);
    return out;
  }
  std::vector<uint16_t> Bf16With(posenc_isa isa) const {
    const posenc_isa before = posenc_active_isa();
    std::vector<uint16_t> out = bf16_;
    EXPECT_EQ(posenc_set_isa(isa), POSENC_OK);
    EXPECT_EQ(RunBf16(out), POSENC_OK) << posenc_isa_name(isa) << " " << Describe(shape_);
    EXPECT_EQ(posenc_set_isa(before), POSENC_OK);
    return out;
  }

  std::string Where(size_t k) const {
    if (!IsScore(k)) return "non-score element " + std::to_string(k);
    for (size_t h = 0; h < shape_.n_heads; ++h)
      for (size_t i = 0; i < shape_.n_q; ++i)
        if (k >= Index(h, i, 0) && k < Index(h, i, 0) + shape_.n_k)
          return "head " + std::to_string(h) + " row " + std::to_string(i) + " (qpos " +
                 std::to_string(shape_.q_offset + i) + ") key " +
                 std::to_string(k - Index(h, i, 0));
    return "?";
  }

 private:
  SoftmaxShape shape_;
  std::vector<float> slopes_;
  size_t inner_stride_ = 0, outer_stride_ = 0, offset_ = 0;
  AlignedFloats f32_{0};
  std::vector<uint16_t> bf16_;
  std::vector<char> is_score_;
};

// ---------------------------------------------------------------------------- reference

// One row as the header defines it: x_j in float exactly as posenc_alibi_add_f32 (the
// harness's ReferenceAdd), then the softmax in long double. nan: the row is NaN.
struct ReferenceRow {
  bool nan = false;
  std::vector<long double> p;  // visible keys
};

ReferenceRow Reference(const SoftmaxProblem& pb, size_t h, size_t i) {
  const SoftmaxShape& s = pb.shape();
  const size_t visible = pb.Visible(i);
  std::vector<float> x(visible);
  ReferenceRow row;
  long double max = -INFINITY;
  for (size_t j = 0; j < visible; ++j) {
    x[j] = ReferenceAdd(pb.f32()[pb.Index(h, i, j)], s.scale, pb.slopes()[h], s.q_offset + i, j, 0);
    if (std::isnan(x[j]) || x[j] == kInf) row.nan = true;
    max = std::max<long double>(max, x[j]);
  }
  row.p.assign(visible, 0.0L);
  if (row.nan || max == -INFINITY) return row;
  long double sum = 0;
  for (size_t j = 0; j < visible; ++j)
    sum += row.p[j] = std::exp(static_cast<long double>(x[j]) - max);
  for (long double& p : row.p) p /= sum;
  return row;
}

// How far results are from the reference, in units of the header's bound.
struct Errors {
  double worst_ratio = 0;  // max |p - p*| / (rel * p* + abs)
  double worst_abs = 0;    // max |p - p*|
  double worst_rel = 0;    // max |p - p*| / p* over p* >= 1e-6
  void Add(double got, long double want) {
    const double err = std::fabs(got - static_cast<double>(want));
    worst_ratio = std::max(worst_ratio, err / (kRel * static_cast<double>(want) + kAbs));
    worst_abs = std::max(worst_abs, err);
    if (want >= 1e-6L) worst_rel = std::max(worst_rel, err / static_cast<double>(want));
  }
};

std::string Value(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  std::ostringstream os;
  os << std::setprecision(9) << f << " (0x" << std::hex << b << ")";
  return os.str();
}

// Every score of `out` (f32 results) against the reference: masked keys +0; NaN rows NaN;
// otherwise within the bound, in [0, 1] and never subnormal. Non-score elements unchanged.
testing::AssertionResult MatchesReference(const SoftmaxProblem& pb, const AlignedFloats& out,
                                          Errors* errors = nullptr) {
  const SoftmaxShape& s = pb.shape();
  for (size_t k = 0; k < out.size(); ++k)
    if (!pb.IsScore(k) && !BitwiseEqual(out[k], pb.f32()[k]))
      return testing::AssertionFailure() << pb.Where(k) << " changed to " << Value(out[k]);
  for (size_t h = 0; h < s.n_heads; ++h)
    for (size_t i = 0; i < s.n_q; ++i) {
      const ReferenceRow ref = Reference(pb, h, i);
      for (size_t j = 0; j < s.n_k; ++j) {
        const size_t k = pb.Index(h, i, j);
        const float got = out[k];
        auto fail = [&](const char* what, long double want) {
          return testing::AssertionFailure()
                 << pb.Where(k) << ": " << what << ": got " << Value(got) << ", reference "
                 << std::setprecision(12) << static_cast<double>(want);
        };
        if (j >= ref.p.size()) {
          if (!BitwiseEqual(got, 0.0f)) return fail("masked key not +0", 0);
        } else if (ref.nan) {
          if (!std::isnan(got)) return fail("NaN row lost its NaN", NAN);
        } else {
          const long double want = ref.p[j];
          if (std::fpclassify(got) == FP_SUBNORMAL) return fail("subnormal result", want);
          if (!(got >= 0.0f && got <= 1.0f)) return fail("outside [0, 1]", want);
          if (std::fabs(got - static_cast<double>(want)) > kRel * static_cast<double>(want) + kAbs)
            return fail("outside the bound", want);
          if (errors) errors->Add(got, want);
        }
      }
    }
  return testing::AssertionSuccess();
}

// `variant` against `scalar`: NaN where scalar has NaN, masked keys equal, every other
// score within twice the bound of the larger of the two, non-scores unchanged.
testing::AssertionResult MatchesScalar(const SoftmaxProblem& pb, const AlignedFloats& variant,
                                       const AlignedFloats& scalar) {
  for (size_t k = 0; k < variant.size(); ++k) {
    const float a = variant[k], b = scalar[k];
    if (BitwiseEqual(a, b) || (std::isnan(a) && std::isnan(b))) continue;
    const double bound = 2.0 * (kRel * std::max(std::fabs(a), std::fabs(b)) * (1 + 1e-6) + kAbs);
    if (!pb.IsScore(k) || std::isnan(a) || std::isnan(b) || std::fabs(a - b) > bound)
      return testing::AssertionFailure()
             << pb.Where(k) << ": variant " << Value(a) << ", scalar " << Value(b);
  }
  return testing::AssertionSuccess();
}

// bf16 results against the same ISA's f32 results rounded to bf16 (bit for bit, as the
// header promises; NaN for NaN), non-scores unchanged, no subnormal.
testing::AssertionResult Bf16MatchesF32(const SoftmaxProblem& pb, const std::vector<uint16_t>& out,
                                        const AlignedFloats& f32) {
  for (size_t k = 0; k < out.size(); ++k) {
    const uint16_t want = pb.IsScore(k) ? ToBf16(f32[k]) : pb.bf16()[k];
    const float got = FromBf16(out[k]);
    if (out[k] == want || (pb.IsScore(k) && std::isnan(got) && std::isnan(f32[k]))) {
      if (std::fpclassify(got) == FP_SUBNORMAL)
        return testing::AssertionFailure() << pb.Where(k) << ": subnormal bf16";
      continue;
    }
    return testing::AssertionFailure()
           << pb.Where(k) << ": bf16 0x" << std::hex << out[k] << ", f32 result rounded 0x" << want
           << " (f32 " << Value(f32[k]) << ")";
  }
  return testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------- shapes

constexpr float kScales[] = {1.0f, 0.08838835f, -0.5f};

std::vector<float> InexactSlopes(size_t n_heads) {  // products with distances round
  const std::vector<float> forty = SeedSlopes(40);
  return std::vector<float>(forty.end() - static_cast<std::ptrdiff_t>(n_heads), forty.end());
}

SoftmaxShape Shape(size_t heads, size_t n_q, size_t n_k, size_t q_offset, unsigned flags,
                   float scale = 1.0f) {
  SoftmaxShape s;
  s.n_heads = heads;
  s.n_q = n_q;
  s.n_k = n_k;
  s.q_offset = q_offset;
  s.flags = flags;
  s.scale = scale;
  s.slopes = InexactSlopes(heads);
  return s;
}

// Key counts around every vector width (4, 8, 16 lanes; chunks of 8 vectors in pass 2; the
// bf16 block of 4096) and long rows.
std::vector<size_t> KeyCounts() {
  std::vector<size_t> n;
  for (size_t k = 1; k <= 33; ++k) n.push_back(k);
  for (size_t k : {63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025})
    n.push_back(k);
  return n;
}

class AlibiSoftmaxTest : public EveryIsaTest {
 protected:
  // Both element types of one problem with the active ISA: f32 against the reference and
  // the scalar variant, bf16 against the f32 result.
  void Check(const SoftmaxProblem& pb, Errors* errors = nullptr) {
    SCOPED_TRACE(Describe(pb.shape()));
    const AlignedFloats out = pb.F32With(isa());
    EXPECT_TRUE(MatchesReference(pb, out, errors)) << posenc_isa_name(isa());
    if (isa() != POSENC_ISA_SCALAR) {
      EXPECT_TRUE(MatchesScalar(pb, out, pb.F32With(POSENC_ISA_SCALAR))) << posenc_isa_name(isa());
    }
    EXPECT_TRUE(Bf16MatchesF32(pb, pb.Bf16With(isa()), out)) << posenc_isa_name(isa());
  }
};

TEST_P(AlibiSoftmaxTest, KeyCountsAroundVectorWidths) {
  Errors errors;
  for (size_t n_k : KeyCounts())
    for (unsigned flags : {0u, kCausal}) {
      // Causal rows from q_offset 0: every visible count 1..n_q within one call.
      const size_t n_q = n_k <= 33 ? n_k + 1 : 3;
      Check(SoftmaxProblem(Shape(2, n_q, n_k, n_k <= 33 ? 0 : n_k - 2, flags, kScales[n_k % 3]),
                           kSeed + static_cast<uint32_t>(n_k)),
            &errors);
      if (HasFailure()) return;
    }
  RecordProperty("worst_ratio_to_bound", std::to_string(errors.worst_ratio));
  std::printf(
      "[ measured ] %s: worst |p - p*| = %.3g, worst relative (p* >= 1e-6) = %.3g, "
      "worst / bound = %.3f\n",
      posenc_isa_name(isa()), errors.worst_abs, errors.worst_rel, errors.worst_ratio);
}

TEST_P(AlibiSoftmaxTest, LongRows) {
  // 4096 and 4097 keys: the bf16 block and one past it (bf16 rows done block by block);
  // 8193: three blocks; 32768: the longest decode row of the bench.
  for (size_t n_k : {4095, 4096, 4097, 8193, 32768}) {
    Check(SoftmaxProblem(Shape(1, 2, n_k, n_k - 2, kCausal, 0.125f), kSeed));
    Check(SoftmaxProblem(Shape(1, 1, n_k, 0, 0), kSeed + 1));
    if (HasFailure()) return;
  }
}

// A KV-cache decode step: one query row at the end of the cache, and at the last valid
// positions, where the distances are large and no longer exact in float.
TEST_P(AlibiSoftmaxTest, DecodeRows) {
  for (size_t n_k : {1, 7, 16, 33, 100, 4096})
    for (size_t q_offset : {n_k - 1, n_k + 1000, (size_t{1} << 24) + 3, kMaxPosition - 1})
      for (unsigned flags : {0u, kCausal}) {
        Check(SoftmaxProblem(Shape(4, 1, n_k, q_offset, flags, 0.08838835f), kSeed));
        if (HasFailure()) return;
      }
}

TEST_P(AlibiSoftmaxTest, HeadCountsAndLayouts) {
  for (bool query_major : {false, true})
    for (size_t heads : {1, 3, 32})
      for (unsigned flags : {0u, kCausal}) {
        SoftmaxShape s = Shape(heads, 5, 37, 30, flags, 0.5f);
        s.slopes.clear();  // the seed's slopes
        s.query_major = query_major;
        Check(SoftmaxProblem(s, kSeed));
        if (HasFailure()) return;
      }
}

// Gaps after every row and head hold sentinels that must stay bit for bit; misaligned
// starts give every alignment of rows.
TEST_P(AlibiSoftmaxTest, StridesWithGapsLeaveTheGapsUntouched) {
  for (bool query_major : {false, true})
    for (size_t inner_pad : {0, 1, 5, 16})
      for (size_t outer_pad : {0, 3, 64})
        for (size_t n_k : {1, 15, 17, 33, 100}) {
          SoftmaxShape s = Shape(3, 4, n_k, n_k > 4 ? n_k - 4 : 0, kCausal, 0.125f);
          s.query_major = query_major;
          s.inner_pad = inner_pad;
          s.outer_pad = outer_pad;
          s.misalign = (inner_pad + outer_pad + n_k) % 4;
          Check(SoftmaxProblem(s, kSeed));
          if (HasFailure()) return;
        }
}

// A score that is -inf everywhere but at key `one`: p = exactly 1 there, exactly 0
// elsewhere; with every key -inf, the row is all +0 (not NaN as in PyTorch).
TEST_P(AlibiSoftmaxTest, RowsOfMinusInfinity) {
  for (size_t n_k : {1, 4, 5, 16, 17, 33, 300})
    for (unsigned flags : {0u, kCausal})
      for (size_t one : {size_t{0}, n_k / 2, n_k - 1, n_k}) {  // n_k: none
        SoftmaxShape s = Shape(2, 3, n_k, n_k - 1, flags);
        SoftmaxProblem pb(s, kSeed, [&](std::mt19937& rng, size_t, size_t, size_t j) {
          return j == one ? std::uniform_real_distribution<float>(-5, 5)(rng) : -kInf;
        });
        Check(pb);
        const AlignedFloats out = pb.F32With(isa());
        for (size_t h = 0; h < s.n_heads; ++h)
          for (size_t i = 0; i < s.n_q; ++i)
            for (size_t j = 0; j < n_k; ++j) {
              const float want = j == one && j < pb.Visible(i) ? 1.0f : 0.0f;
              ASSERT_TRUE(BitwiseEqual(out[pb.Index(h, i, j)], want))
                  << Describe(s) << " one=" << one << " (" << h << "," << i << "," << j
                  << "): " << out[pb.Index(h, i, j)];
            }
      }
}

// A NaN score, an infinite score, or 0 * inf makes every visible key of its row NaN;
// masked keys stay +0 and other rows are unaffected.
TEST_P(AlibiSoftmaxTest, NonFiniteScoresMakeTheirRowNaN) {
  struct Poison {
    float value;
    float scale;
  };
  const Poison poisons[] = {{NAN, 1.0f},  {-NAN, 0.5f}, {kInf, 1.0f}, {-kInf, -1.0f},
                            {kInf, 0.0f}, {3e38f, 4.0f}};  // the last: scale * S overflows
  for (const Poison& poison : poisons)
    for (unsigned flags : {0u, kCausal})
      for (size_t n_k : {1, 9, 33, 70}) {
        SoftmaxShape s = Shape(2, 4, n_k, n_k > 2 ? n_k - 3 : 0, flags, poison.scale);
        const size_t at = (n_k - 1) / 2;  // visible in every row
        SoftmaxProblem pb(s, kSeed, [&](std::mt19937& rng, size_t h, size_t i, size_t j) {
          if (h == 1 && i % 2 == 0 && j == at) return poison.value;
          return std::uniform_real_distribution<float>(-5, 5)(rng);
        });
        Check(pb);
        const AlignedFloats out = pb.F32With(isa());
        for (size_t i = 0; i < s.n_q; ++i)
          for (size_t j = 0; j < pb.Visible(i); ++j)
            ASSERT_EQ(std::isnan(out[pb.Index(1, i, j)]), i % 2 == 0)
                << Describe(s) << " poison " << poison.value << " row " << i << " key " << j;
      }
}

// Exp arguments around posenc.h's floor ln(2 (n_k + 1) FLT_MIN) (-85.54 for two keys) and
// ln(FLT_MIN) = -87.3365: below the floor e is exactly 0, above it y is at least 2 FLT_MIN.
// No result is ever subnormal (MatchesReference and Bf16MatchesF32 check every element).
const float kOffsets[] = {0.0f,    -1.0f,  -80.0f,     -85.5f,     -85.544f,  -85.545f,
                          -85.6f,  -87.3f, -87.33654f, -87.33655f, -87.3366f, -87.34f,
                          -87.5f,  -90.0f, -100.0f,    -103.9f,    -104.0f,   -104.1f,
                          -150.0f, -1e4f,  -3e38f,     -0.0f};

// posenc.h: e = exp(t - M) is +0 where t - M < ln(2 (n_k + 1) FLT_MIN), rounded up to float.
float ExpFloor(size_t n_k) {
  return std::nextafter(
      static_cast<float>(std::log(double{FLT_MIN}) + std::log(2.0 * (double(n_k) + 1.0))), kInf);
}
constexpr size_t kNumOffsets = sizeof kOffsets / sizeof kOffsets[0];

TEST_P(AlibiSoftmaxTest, TinyProbabilitiesFlushToZeroWithoutSubnormals) {
  // Zero slopes and scale 1: x_j = S_j. Head 0: the max 0 at key 0; head 1: also 0 at the
  // last key (a sum >= 2); head 2: everything shifted by 50.
  for (size_t n_k : {kNumOffsets, kNumOffsets + 5, size_t{64}}) {
    SoftmaxShape s = Shape(3, 2, n_k, 0, 0);
    s.slopes.assign(3, 0.0f);
    Check(SoftmaxProblem(s, kSeed, [&](std::mt19937&, size_t h, size_t, size_t j) {
      if (h == 1 && j == n_k - 1) return 0.0f;
      return (h == 2 ? 50.0f : 0.0f) + kOffsets[j % kNumOffsets];
    }));
  }
  // The exact float arguments (the problems above round them to bf16 for both types).
  const float zero_slope = 0.0f;
  for (float offset : kOffsets) {
    float one[2] = {0.0f, offset};  // sum 1 + e: p = e
    ASSERT_EQ(posenc_alibi_softmax_f32(&zero_slope, 1, 1, 2, 0, one, 2, 2, 1.0f, 0), POSENC_OK);
    if (offset < ExpFloor(2)) {
      EXPECT_TRUE(BitwiseEqual(one[1], 0.0f)) << offset << ": " << one[1];
    } else {
      EXPECT_GE(one[1], 2 * FLT_MIN) << offset;
    }
    EXPECT_NE(std::fpclassify(one[1]), FP_SUBNORMAL) << offset;
  }
  float two[3] = {0.0f, 0.0f, -87.33654f};  // e just above FLT_MIN, sum 2: e / 2 < FLT_MIN
  ASSERT_EQ(posenc_alibi_softmax_f32(&zero_slope, 1, 1, 3, 0, two, 3, 3, 1.0f, 0), POSENC_OK);
  EXPECT_TRUE(BitwiseEqual(two[2], 0.0f)) << two[2];
  EXPECT_EQ(two[0], 0.5f);
  EXPECT_EQ(two[1], 0.5f);
}

// Custom slopes (zero, negative, huge: the bias overflows to -inf for far keys) and scales.
TEST_P(AlibiSoftmaxTest, CustomSlopesAndScales) {
  const std::vector<float> slopes = {0.0f, -0.5f, 1e-42f, 1.0f, 1e30f, 3.4e38f, -2.0f, 0.75f};
  for (float scale : {1.0f, 0.0f, -1.0f, 1e-30f, 1e30f})
    for (unsigned flags : {0u, kCausal}) {
      SoftmaxShape s = Shape(slopes.size(), 3, 40, 20, flags, scale);
      s.slopes = slopes;
      SoftmaxProblem pb(s, kSeed, [](std::mt19937& rng, size_t, size_t, size_t) {
        return std::uniform_real_distribution<float>(-4, 4)(rng);
      });
      Check(pb);
      if (HasFailure()) return;
    }
}

// Masked scores are not read: a NaN or an infinity there changes nothing.
TEST_P(AlibiSoftmaxTest, MaskedScoresAreNotRead) {
  SoftmaxShape s = Shape(2, 6, 40, 30, kCausal, 0.5f);
  const auto with = [&](float masked) {
    return SoftmaxProblem(s, kSeed, [&](std::mt19937& rng, size_t, size_t i, size_t j) {
      const float v = std::uniform_real_distribution<float>(-4, 4)(rng);
      return j > s.q_offset + i ? masked : v;
    });
  };
  const SoftmaxProblem clean = with(1.0f), poisoned = with(NAN);
  const AlignedFloats a = clean.F32With(isa()), b = poisoned.F32With(isa());
  EXPECT_EQ(FirstBitwiseDifference(a, b), -1);
  Check(poisoned);
}

// Rows that start right after, or end right before, an inaccessible page, for key counts
// around the vector widths, f32 and bf16, both flags. Exits 1 on an error status.
[[noreturn]] void RunNextToGuardPages(posenc_isa isa) {
  if (posenc_set_isa(isa) != POSENC_OK) std::exit(1);
  const std::vector<float> slopes = SeedSlopes(2);
  for (size_t n_k = 1; n_k <= 65; n_k += (n_k < 33 ? 1 : 16)) {
    const size_t n_q = 2, heads = 2, n = heads * n_q * n_k;
    GuardedPages pages(n);
    if (!pages.ok()) std::exit(1);
    for (unsigned flags : {0u, kCausal}) {
      for (float* scores : {pages.AtStart(), pages.AtEnd(n)}) {
        for (size_t i = 0; i < n; ++i) scores[i] = static_cast<float>(i % 7) - 3.0f;
        if (posenc_alibi_softmax_f32(slopes.data(), heads, n_q, n_k, n_k - 1, scores, n_q * n_k,
                                     n_k, 0.5f, flags) != POSENC_OK)
          std::exit(1);
      }
      uint16_t* start = reinterpret_cast<uint16_t*>(pages.AtStart());
      uint16_t* end = reinterpret_cast<uint16_t*>(pages.AtEnd(0)) - n;
      for (uint16_t* scores : {start, end}) {
        for (size_t i = 0; i < n; ++i) scores[i] = static_cast<uint16_t>(0x3f80 + i % 5);
        if (posenc_alibi_softmax_bf16(slopes.data(), heads, n_q, n_k, n_k - 1, scores, n_q * n_k,
                                      n_k, 0.5f, flags) != POSENC_OK)
          std::exit(1);
      }
    }
  }
  std::exit(0);
}

TEST_P(AlibiSoftmaxTest, NeverTouchesMemoryOutsideTheScores) {
  ExpectNoAccessNextToGuardPages([this] { RunNextToGuardPages(isa()); }, isa(), "the scores");
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(AlibiSoftmaxTest);

// ---------------------------------------------------------------------------- errors

// Everything posenc_alibi_softmax_f32 / _bf16 take; scores as void* so that a misaligned
// pointer needs no arithmetic on a misaligned typed pointer.
struct SoftmaxCall {
  bool bf16;
  const float* slopes;
  size_t n_heads, n_q, n_k, q_offset;
  void* scores;
  size_t head_stride, row_stride;
  float scale;
  unsigned flags;

  posenc_status Invoke() const {
    if (bf16)
      return posenc_alibi_softmax_bf16(slopes, n_heads, n_q, n_k, q_offset,
                                       static_cast<uint16_t*>(scores), head_stride, row_stride,
                                       scale, flags);
    return posenc_alibi_softmax_f32(slopes, n_heads, n_q, n_k, q_offset,
                                    static_cast<float*>(scores), head_stride, row_stride, scale,
                                    flags);
  }
};

class AlibiSoftmaxArgumentsTest : public testing::TestWithParam<bool> {
 protected:
  static constexpr size_t kHeads = 3, kRows = 3, kKeys = 5, kRowStride = 6;
  static constexpr size_t kHeadStride = (kRows - 1) * kRowStride + kKeys;  // 17, the smallest
  static constexpr size_t kAt = 16;  // first score (elements of the call's type)

  // One buffer of 128 floats (the bf16 calls use it as 256 uint16_t): every element holds
  // its own value, so any write shows. Slopes at its end, outside the scores, for the
  // aliasing cases, and a separate array of valid slopes.
  AlibiSoftmaxArgumentsTest() : buffer_(128), slopes_{0.5f, 0.25f, 0.125f, 0.0625f, 7.0f} {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = 0.5f + static_cast<float>(i);
  }
  bool bf16() const { return GetParam(); }
  void* ScoreAt(size_t e) {  // element e of the call's type
    return reinterpret_cast<char*>(buffer_.data()) + e * (bf16() ? 2 : 4);
  }

  SoftmaxCall Valid() {
    return {bf16(),       slopes_.data(), kHeads,     kRows, kKeys, 2,
            ScoreAt(kAt), kHeadStride,    kRowStride, 0.5f,  0};
  }

  void ExpectRejected(const SoftmaxCall& call, const std::string& what) {
    const std::vector<float> slopes_before = slopes_;
    ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_,
                                   std::string(bf16() ? "bf16: " : "f32: ") + what);
    EXPECT_EQ(std::memcmp(slopes_.data(), slopes_before.data(), slopes_.size() * sizeof(float)), 0)
        << what << ": slopes written";
  }

  AlignedFloats buffer_;
  std::vector<float> slopes_;
};

TEST_P(AlibiSoftmaxArgumentsTest, TheValidCallWrites) {
  const AlignedFloats before = buffer_;
  ASSERT_EQ(Valid().Invoke(), POSENC_OK);
  EXPECT_NE(FirstBitwiseDifference(before, buffer_), -1);
}

TEST_P(AlibiSoftmaxArgumentsTest, InvalidCallsAreRejectedAndWriteNothing) {
  const size_t kHuge = SIZE_MAX / 2 + 1;
  const size_t extent = 2 * kHeadStride + (kRows - 1) * kRowStride + kKeys;  // 51 elements
  const auto slope = [this](float v) {
    return [this, v](SoftmaxCall& c) {
      slopes_[kHeads - 1] = v;
      c.slopes = slopes_.data();
    };
  };
  // Slopes placed inside the scores' address range, at a byte offset from the first score.
  const auto slopes_at_byte = [this](std::ptrdiff_t byte) {
    return [this, byte](SoftmaxCall& c) {
      c.slopes = reinterpret_cast<const float*>(static_cast<const char*>(ScoreAt(kAt)) + byte);
    };
  };
  const auto elem = static_cast<std::ptrdiff_t>(bf16() ? 2 : 4);
  const auto last = static_cast<std::ptrdiff_t>(extent - 1) * elem / 4 * 4;  // float-aligned
  const CallChanges<SoftmaxCall> invalid = {
      {"NULL slopes", [](SoftmaxCall& c) { c.slopes = nullptr; }},
      {"NULL scores", [](SoftmaxCall& c) { c.scores = nullptr; }},
      {"NaN slope", slope(NAN)},
      {"+inf slope", slope(kInf)},
      {"-inf slope", slope(-kInf)},
      {"NaN scale", [](SoftmaxCall& c) { c.scale = NAN; }},
      {"+inf scale", [](SoftmaxCall& c) { c.scale = kInf; }},
      {"-inf scale", [](SoftmaxCall& c) { c.scale = -kInf; }},
      {"unknown flag", [](SoftmaxCall& c) { c.flags = 2u; }},
      {"CAUSAL plus an unknown flag", [](SoftmaxCall& c) { c.flags = kCausal | 8u; }},
      {"every flag bit", [](SoftmaxCall& c) { c.flags = ~0u; }},
      {"row_stride < n_k", [](SoftmaxCall& c) { c.row_stride = kKeys - 1; }},
      {"row_stride 0 with 3 rows", [](SoftmaxCall& c) { c.row_stride = 0; }},
      {"head_stride one short", [](SoftmaxCall& c) { c.head_stride = kHeadStride - 1; }},
      {"[n_q, H, n_k] with overlapping heads",
       [](SoftmaxCall& c) {
         c.head_stride = kKeys;
         c.row_stride = kHeads * kKeys - 1;
       }},
      {"q_offset + n_q = 2^31 + 1", [](SoftmaxCall& c) { c.q_offset = kMaxPosition - kRows + 1; }},
      {"q_offset SIZE_MAX", [](SoftmaxCall& c) { c.q_offset = SIZE_MAX; }},
      {"n_k = 2^31 + 1, one head and row",
       [](SoftmaxCall& c) {
         c.n_heads = c.n_q = 1;
         c.q_offset = 0;
         c.n_k = kMaxPosition + 1;
       }},
      {"(n_heads - 1) * head_stride overflows", [=](SoftmaxCall& c) { c.head_stride = kHuge; }},
      {"n_heads SIZE_MAX", [](SoftmaxCall& c) { c.n_heads = SIZE_MAX; }},
      {"extent in bytes overflows, one head",
       [](SoftmaxCall& c) {
         c.n_heads = 1;
         c.row_stride = SIZE_MAX / 8;
       }},
      {"scores one byte past alignment",
       [](SoftmaxCall& c) { c.scores = static_cast<char*>(c.scores) + 1; }},
      {"slopes at the first score", slopes_at_byte(0)},
      {"slopes whose last overlaps the first score", slopes_at_byte(-8)},
      {"slopes over the gap after the first row", slopes_at_byte(kKeys * elem / 4 * 4)},
      {"slopes starting at the last score", slopes_at_byte(last)},
  };
  for (unsigned flags : {0u, kCausal})
    for (const auto& [what, change] : invalid) {
      SoftmaxCall call = Valid();
      call.flags = flags;
      change(call);
      ExpectRejected(call, std::string(what) + (flags ? " (causal)" : ""));
      slopes_ = {0.5f, 0.25f, 0.125f, 0.0625f, 7.0f};
    }
  if (!bf16()) {
    SoftmaxCall call = Valid();
    call.scores = static_cast<char*>(call.scores) + 2;
    ExpectRejected(call, "f32 scores two bytes past alignment");
  }
}

// Slopes right before or right after the scores' range are fine (bf16: after the float
// boundary that follows the last score); so are counts 0 with NULL pointers, which read
// and write nothing.
TEST_P(AlibiSoftmaxArgumentsTest, AdjacentSlopesAndEmptyWorkAreValid) {
  const size_t elem = bf16() ? 2 : 4;
  const size_t extent = 2 * kHeadStride + (kRows - 1) * kRowStride + kKeys;
  char* first = static_cast<char*>(ScoreAt(kAt));
  float* after = reinterpret_cast<float*>(first + (extent * elem + 3) / 4 * 4);
  float* before = reinterpret_cast<float*>(first) - kHeads;
  for (float* where : {after, before}) {
    std::memcpy(where, slopes_.data(), kHeads * sizeof(float));
    SoftmaxCall call = Valid();
    call.slopes = where;
    EXPECT_EQ(call.Invoke(), POSENC_OK) << (where == after ? "after" : "before");
  }
  const CallChanges<SoftmaxCall> no_ops = {
      {"all counts 0, NULL pointers",
       [](SoftmaxCall& c) {
         c.n_heads = c.n_q = c.n_k = 0;
         c.slopes = nullptr;
         c.scores = nullptr;
       }},
      {"n_heads 0, NULL slopes",
       [](SoftmaxCall& c) {
         c.n_heads = 0;
         c.slopes = nullptr;
       }},
      {"n_q 0, NULL scores",
       [](SoftmaxCall& c) {
         c.n_q = 0;
         c.scores = nullptr;
       }},
      {"n_k 0", [](SoftmaxCall& c) { c.n_k = 0; }},
  };
  ExpectChangedCallsReturnAndWriteNothing(Valid(), no_ops, POSENC_OK, buffer_);
}

// Counts whose extent overflows, with the slopes and the scores on an inaccessible page:
// rejected before any slope or score is read (a read kills the child process).
[[noreturn]] void RunHugeCountsOnGuardPages(bool bf16) {
  GuardedPages pages(16);
  if (!pages.ok()) std::exit(1);
  float* inaccessible = pages.AtStart() - 16;
  const size_t kHuge = SIZE_MAX / 4;
  const struct {
    size_t heads, n_q, n_k;
  } counts[] = {{kHuge, 2, 8}, {2, kHuge, 8}, {1, 1, kHuge}, {kHuge, kHuge, kHuge}};
  for (const auto& c : counts) {
    const posenc_status st =
        bf16 ? posenc_alibi_softmax_bf16(inaccessible, c.heads, c.n_q, c.n_k, 0,
                                         reinterpret_cast<uint16_t*>(inaccessible), c.n_q * 8, 8,
                                         1.0f, kCausal)
             : posenc_alibi_softmax_f32(inaccessible, c.heads, c.n_q, c.n_k, 0, inaccessible,
                                        c.n_q * 8, 8, 1.0f, kCausal);
    if (st != POSENC_ERR_INVALID_ARGUMENT) std::exit(2);
  }
  std::exit(0);
}

TEST_P(AlibiSoftmaxArgumentsTest, HugeCountsAreRejectedBeforeAnyRead) {
  ExpectNoAccessNextToGuardPages([this] { RunHugeCountsOnGuardPages(bf16()); }, posenc_active_isa(),
                                 "slopes and scores of a huge call");
}

INSTANTIATE_TEST_SUITE_P(Type, AlibiSoftmaxArgumentsTest, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "bf16" : "f32");
                         });

}  // namespace
}  // namespace posenc_test
