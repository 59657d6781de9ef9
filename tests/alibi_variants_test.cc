// Every ALiBi variant (posenc_alibi_add_f32 and posenc_alibi_bias_f32) against the scalar
// variant and against an independent reference of the header's float operations, bit for
// bit, on shapes sized around every vector width, with guards around every buffer and NaN
// sentinels in every gap between rows and heads.
#include <posenc.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../kernels/half.h"
#include "alibi_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr uint32_t kSeed = 20240613;
constexpr size_t kMaxPosition = size_t{1} << 31;  // q_offset + n_q may reach it
// 1/sqrt(128) is a typical attention scale whose product with a score is not exact, so a
// multiply fused with the subtraction (FMA) gives a different result; the others are exact.
constexpr float kScales[] = {1.0f, 0.125f, -1.0f, 0.08838835f};
constexpr unsigned kFlags[] = {0u, POSENC_ALIBI_CAUSAL};

// The slopes of the last n heads of seed 000's 40 heads, 2^(-k/8) for odd k: their products
// with a distance round, unlike those of the paper's slopes for 1, 2, 3 or 8 heads (powers
// of two), which would hide a multiply fused with the subtraction.
std::vector<float> InexactSlopes(size_t n_heads) {
  const std::vector<float> forty = SeedSlopes(40);
  return std::vector<float>(forty.end() - static_cast<std::ptrdiff_t>(n_heads), forty.end());
}

// n_heads heads with InexactSlopes, n_q query rows and n_k keys; the rest as AlibiShape has it.
AlibiShape InexactShape(size_t n_heads, size_t n_q, size_t n_k) {
  AlibiShape s;
  s.n_heads = n_heads;
  s.slopes = InexactSlopes(n_heads);
  s.n_q = n_q;
  s.n_k = n_k;
  return s;
}

// Appends the shape once per flag of kFlags.
void AppendWithEveryFlag(AlibiShape s, std::vector<AlibiShape>& shapes) {
  for (unsigned flags : kFlags) {
    s.flags = flags;
    shapes.push_back(s);
  }
}

// Runs `op` with the scalar variant and with `isa`: both must equal the reference, and
// `isa` must equal scalar bit for bit (NaN payloads included, as the header promises).
void ExpectVariantMatches(posenc_isa isa, const AlibiProblem& problem, AlibiOp op) {
  const AlignedFloats reference = ReferenceOutput(problem, op);
  const AlignedFloats scalar = RunAlibiWithIsa(problem, op, POSENC_ISA_SCALAR);
  const AlignedFloats variant = RunAlibiWithIsa(problem, op, isa);
  EXPECT_TRUE(MatchesReference(problem, scalar, reference)) << OpName(op) << " scalar";
  EXPECT_TRUE(MatchesReference(problem, variant, reference))
      << OpName(op) << " " << posenc_isa_name(isa);
  EXPECT_TRUE(BitIdentical(problem, variant, scalar))
      << OpName(op) << " " << posenc_isa_name(isa) << " vs scalar";
}

// Both operations on every shape (the bias ignores scale, so it runs for scale 1 only);
// stops at the first failing shape, whose report is enough.
void ExpectVariantMatches(posenc_isa isa, const std::vector<AlibiShape>& shapes) {
  for (const AlibiShape& shape : shapes) {
    SCOPED_TRACE(Describe(shape));
    const AlibiProblem problem(shape, kSeed);
    ExpectVariantMatches(isa, problem, AlibiOp::kAdd);
    if (shape.scale == 1.0f) ExpectVariantMatches(isa, problem, AlibiOp::kBias);
    if (testing::Test::HasFailure()) return;
  }
}

// The query offsets a runtime uses: the first rows (0), the last rows of a prefill and a
// decode step (n_k - n_q), queries after every key (q_offset > n_k), and the last valid
// positions, where distances exceed 2^24 and are no longer exact in float.
std::vector<size_t> QueryOffsets(size_t n_q, size_t n_k) {
  std::vector<size_t> offsets = {0, n_k + 5, kMaxPosition - n_q};
  if (n_k > n_q) offsets.push_back(n_k - n_q);
  return offsets;
}

// Each shape once per query offset, flag and scale.
std::vector<AlibiShape> WithEveryMode(const std::vector<AlibiShape>& shapes) {
  std::vector<AlibiShape> out;
  for (const AlibiShape& shape : shapes)
    for (size_t q_offset : QueryOffsets(shape.n_q, shape.n_k))
      for (unsigned flags : kFlags)
        for (float scale : kScales) {
          out.push_back(shape);
          out.back().q_offset = q_offset;
          out.back().flags = flags;
          out.back().scale = scale;
        }
  return out;
}

// n_k = 1..33 covers every tail of 4, 8 and 16 lanes; the rest cross 4 and 8 vectors and
// run long rows. Large rows only with few query rows, to keep the test fast.
std::vector<AlibiShape> KeyCountsAroundVectorWidths() {
  std::vector<size_t> key_counts;
  for (size_t n = 1; n <= 33; ++n) key_counts.push_back(n);
  for (size_t n : {63, 64, 65, 127, 128, 129, 512, 4096}) key_counts.push_back(n);
  std::vector<AlibiShape> shapes;
  for (size_t n_k : key_counts)
    for (size_t n_q : {1, 2, 3, 17}) {
      if (n_k >= 512 && n_q != 1 && n_q != 3) continue;
      shapes.push_back(InexactShape(3, n_q, n_k));
    }
  return WithEveryMode(shapes);
}

// 1 head, 3 heads (a count whose seed slopes need the odd-indexed completion: 2 + 1) and
// Llama-sized 32 heads.
std::vector<AlibiShape> HeadCounts() {
  std::vector<AlibiShape> shapes;
  for (size_t heads : {1, 3, 32})
    for (size_t n_q : {1, 3, 17})
      for (size_t n_k : {7, 16, 33, 128}) {
        AlibiShape s;
        s.n_heads = heads;
        s.n_q = n_q;
        s.n_k = n_k;
        shapes.push_back(s);
      }
  return WithEveryMode(shapes);
}

// Rows longer than n_k and heads longer than their rows: the gaps hold NaN sentinels that
// must stay bit for bit as they were.
std::vector<AlibiShape> StridesWithGaps() {
  std::vector<AlibiShape> shapes;
  for (size_t row_pad : {0, 1, 5, 16})
    for (size_t head_pad : {0, 3, 64})
      for (size_t n_q : {3, 17})
        for (size_t n_k : {1, 15, 16, 17, 33, 100}) {
          if (row_pad == 0 && head_pad == 0) continue;
          AlibiShape s = InexactShape(3, n_q, n_k);
          s.row_pad = row_pad;
          s.head_pad = head_pad;
          s.misalign = (row_pad + head_pad) % 2;
          s.q_offset = n_k > n_q ? n_k - n_q : 0;
          AppendWithEveryFlag(s, shapes);
        }
  return shapes;
}

// The first score one float (or three) past a 64-byte boundary; with n_k odd, later rows
// start at every other alignment too.
std::vector<AlibiShape> MisalignedScores() {
  std::vector<AlibiShape> shapes;
  for (size_t misalign : {1, 3})
    for (size_t n_k = 1; n_k <= 33; ++n_k) {
      AlibiShape s = InexactShape(2, 3, n_k);
      s.misalign = misalign;
      s.q_offset = n_k / 2;
      AppendWithEveryFlag(s, shapes);
    }
  return shapes;
}

// Query positions where float distances change character: around 2^24 (the last exactly
// representable run of integers) and 2^25, and the last valid position 2^31 - 1, where
// |qpos - j| rounds to multiples of 128. A kernel that forms the distance in float (or steps
// it by 1.0f along the row) instead of converting the integer distance fails here.
std::vector<AlibiShape> LargeQueryPositions() {
  std::vector<AlibiShape> shapes;
  const size_t offsets[] = {(size_t{1} << 24) - 40, (size_t{1} << 24) + 1, (size_t{1} << 25) + 3,
                            kMaxPosition - 1000};
  for (size_t q_offset : offsets)
    for (size_t n_k : {17, 64, 129}) {
      AlibiShape s = InexactShape(2, 17, n_k);
      s.q_offset = q_offset;
      shapes.push_back(s);
    }
  for (size_t n_q : {1, 3, 17}) {  // the very last valid rows
    AlibiShape s = InexactShape(2, n_q, 129);
    s.q_offset = kMaxPosition - n_q;
    shapes.push_back(s);
  }
  std::vector<AlibiShape> out;
  for (AlibiShape s : shapes)
    for (float scale : kScales) {
      s.scale = scale;
      out.push_back(s);
    }
  return out;
}

// Slopes a caller may pass besides the paper's: zero, negative (a bonus for distance),
// subnormal, 1, and large enough that slope * distance overflows to infinity.
std::vector<AlibiShape> CustomSlopes() {
  const std::vector<float> slopes = {0.0f, -0.5f, 1e-42f, 1.0f, 1e30f, 3.4e38f, -2.0f, 0.75f};
  std::vector<AlibiShape> shapes;
  for (size_t n_k : {5, 40}) {
    AlibiShape s;
    s.n_heads = slopes.size();
    s.slopes = slopes;
    s.n_q = 3;
    s.n_k = n_k;
    shapes.push_back(s);
  }
  return WithEveryMode(shapes);
}

class AlibiVariantTest : public EveryIsaTest {};

TEST_P(AlibiVariantTest, KeyCountsAroundVectorWidths) {
  ExpectVariantMatches(isa(), KeyCountsAroundVectorWidths());
}

TEST_P(AlibiVariantTest, HeadCounts) { ExpectVariantMatches(isa(), HeadCounts()); }

TEST_P(AlibiVariantTest, StridesWithGapsLeaveTheGapsUntouched) {
  ExpectVariantMatches(isa(), StridesWithGaps());
}

TEST_P(AlibiVariantTest, MisalignedScores) { ExpectVariantMatches(isa(), MisalignedScores()); }

TEST_P(AlibiVariantTest, LargeQueryPositions) {
  ExpectVariantMatches(isa(), LargeQueryPositions());
}

TEST_P(AlibiVariantTest, CustomSlopes) { ExpectVariantMatches(isa(), CustomSlopes()); }

// NaN and infinity in the scores propagate through unmasked elements (scale 0 turns an
// infinity into NaN); a masked element becomes -inf whatever it held, NaN included.
TEST_P(AlibiVariantTest, NonFiniteScoresPropagateUnlessMasked) {
  const float poison[] = {NAN, INFINITY, -INFINITY, -NAN};
  for (unsigned flags : kFlags)
    for (float scale : {1.0f, 0.125f, -1.0f, 0.0f}) {
      AlibiShape shape;
      shape.n_heads = 2;
      shape.n_q = 5;
      shape.n_k = 37;
      shape.q_offset = 30;  // rows 30..34: keys 31..36 are masked in some rows
      shape.scale = scale;
      shape.flags = flags;
      SCOPED_TRACE(Describe(shape));
      AlibiProblem problem(shape, kSeed);
      size_t n = 0;
      for (size_t h = 0; h < shape.n_heads; ++h)
        for (size_t i = 0; i < shape.n_q; ++i)
          for (size_t j = (i + h) % 3; j < shape.n_k; j += 3)
            problem.mutable_input()[problem.Index(h, i, j)] = poison[n++ % 4];
      ExpectVariantMatches(isa(), problem, AlibiOp::kAdd);

      const AlignedFloats out = RunAlibiWithIsa(problem, AlibiOp::kAdd, isa());
      for (size_t h = 0; h < shape.n_heads; ++h)
        for (size_t i = 0; i < shape.n_q; ++i)
          for (size_t j = 0; j < shape.n_k; ++j) {
            const float in = problem.input()[problem.Index(h, i, j)];
            const float got = out[problem.Index(h, i, j)];
            if ((flags & POSENC_ALIBI_CAUSAL) && j > shape.q_offset + i) {
              EXPECT_TRUE(std::isinf(got) && got < 0) << "masked " << h << "," << i << "," << j;
            } else if (std::isnan(in) || (std::isinf(in) && scale == 0.0f)) {
              EXPECT_TRUE(std::isnan(got)) << "NaN lost at " << h << "," << i << "," << j;
            } else if (std::isinf(in)) {
              EXPECT_EQ(got, in * scale) << "infinity lost at " << h << "," << i << "," << j;
            }
          }
    }
}

// The bias does not read the old values: NaN and infinities in the output buffer change
// nothing.
TEST_P(AlibiVariantTest, BiasOverwritesWhateverTheBufferHeld) {
  for (unsigned flags : kFlags) {
    AlibiShape shape;
    shape.n_heads = 3;
    shape.n_q = 4;
    shape.n_k = 21;
    shape.q_offset = 18;
    shape.flags = flags;
    SCOPED_TRACE(Describe(shape));
    AlibiProblem problem(shape, kSeed);
    const float junk[] = {NAN, INFINITY, -INFINITY, -NAN, 1e30f};
    size_t n = 0;
    for (size_t h = 0; h < shape.n_heads; ++h)
      for (size_t i = 0; i < shape.n_q; ++i)
        for (size_t j = 0; j < shape.n_k; ++j)
          problem.mutable_input()[problem.Index(h, i, j)] = junk[n++ % 5];
    ExpectVariantMatches(isa(), problem, AlibiOp::kBias);
  }
}

// Calls over 16 MiB of scores or more prefetch their rows ahead (kernels/common.h,
// POSENC_PREFETCH_MIN_BYTES; the prefetches may reach past the scores) and read f32 rows by
// split loads (ALIBI_ADD_STREAM_): the bits of the same heads added one call per head (each
// under that size), the gaps of a padded row stride untouched. f32 and f16 scores, causal or
// not.
TEST_P(AlibiVariantTest, LargeCallsGiveTheBitsOfOneHeadCalls) {
  const size_t H = 9, n_q = 700, n_k = 700, rs = 704;
  const std::vector<float> slopes = SeedSlopes(H);
  for (unsigned flags : kFlags) {
    {
      std::vector<float> whole(H * n_q * rs), split;
      for (size_t i = 0; i < whole.size(); ++i)
        whole[i] = static_cast<float>(i % 97) * 0.03f - 1.0f;
      split = whole;
      const std::vector<float> before = whole;
      ASSERT_EQ(posenc_alibi_add_f32(slopes.data(), H, n_q, n_k, 40, whole.data(), n_q * rs, rs,
                                     0.5f, flags),
                POSENC_OK);
      for (size_t h = 0; h < H; ++h)
        ASSERT_EQ(posenc_alibi_add_f32(&slopes[h], 1, n_q, n_k, 40, split.data() + h * n_q * rs,
                                       n_q * rs, rs, 0.5f, flags),
                  POSENC_OK);
      EXPECT_EQ(std::memcmp(whole.data(), split.data(), whole.size() * 4), 0) << flags;
      size_t kept = 0;
      for (size_t r = 0; r < H * n_q; ++r)
        kept += std::memcmp(&whole[r * rs + n_k], &before[r * rs + n_k], (rs - n_k) * 4) == 0;
      EXPECT_EQ(kept, H * n_q) << flags;
    }
    {
      std::vector<uint16_t> whole(2 * H * n_q * rs), split;
      for (size_t i = 0; i < whole.size(); ++i)
        whole[i] = posenc_f32_to_f16(static_cast<float>(i % 89) * 0.05f - 2.0f);
      split = whole;
      const size_t h2 = 2 * H; /* 18 heads: 17.6 MiB of f16 */
      std::vector<float> s2(h2);
      for (size_t h = 0; h < h2; ++h) s2[h] = slopes[h % H];
      ASSERT_EQ(posenc_alibi_add_f16(s2.data(), h2, n_q, n_k, 40, whole.data(), n_q * rs, rs, 0.5f,
                                     flags),
                POSENC_OK);
      for (size_t h = 0; h < h2; ++h)
        ASSERT_EQ(posenc_alibi_add_f16(&s2[h], 1, n_q, n_k, 40, split.data() + h * n_q * rs,
                                       n_q * rs, rs, 0.5f, flags),
                  POSENC_OK);
      EXPECT_EQ(std::memcmp(whole.data(), split.data(), whole.size() * 2), 0) << flags;
    }
  }
}

// Dense [2 heads, 2 rows, n_k] scores that start right after, or end right before, an
// inaccessible page, for n_k around the vector widths, both operations and both flags.
// Exits with 1 on an error status; any access outside the scores kills the process.
[[noreturn]] void RunNextToGuardPages(posenc_isa isa) {
  if (posenc_set_isa(isa) != POSENC_OK) std::exit(1);
  const std::vector<float> slopes = SeedSlopes(2);
  for (size_t n_k = 1; n_k <= 65; n_k += (n_k < 33 ? 1 : 16)) {
    const size_t n_q = 2, heads = 2, n = heads * n_q * n_k;
    GuardedPages pages(n);
    if (!pages.ok()) std::exit(1);
    for (float* scores : {pages.AtStart(), pages.AtEnd(n)})
      for (unsigned flags : kFlags) {
        for (size_t i = 0; i < n; ++i) scores[i] = static_cast<float>(i % 7) - 3.0f;
        if (posenc_alibi_add_f32(slopes.data(), heads, n_q, n_k, n_k - 1, scores, n_q * n_k, n_k,
                                 0.5f, flags) != POSENC_OK ||
            posenc_alibi_bias_f32(slopes.data(), heads, n_q, n_k, 0, scores, n_q * n_k, n_k,
                                  flags) != POSENC_OK)
          std::exit(1);
      }
  }
  std::exit(0);
}

TEST_P(AlibiVariantTest, NeverTouchesMemoryOutsideTheScores) {
  ExpectNoAccessNextToGuardPages([this] { RunNextToGuardPages(isa()); }, isa(), "the scores");
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(AlibiVariantTest);

}  // namespace
}  // namespace posenc_test
