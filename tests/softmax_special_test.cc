// posenc_softmax once per ISA, part of softmax_test (softmax_test.cc says what each file
// covers): the special values the header defines (rows with nothing visible, one finite
// score, NaN and infinite scores visible or hidden, soft-capped infinities, probabilities
// around the underflow floor), negative key positions (empty KV-cache cells: hidden by the
// mask, by POSENC_SOFTMAX_KPOS_NEG_HIDDEN, or an error that writes nothing), results
// independent of how rows and heads are split between calls, and no access outside x, y and
// the mask next to inaccessible pages.
#include <posenc.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "softmax_harness.h"
#include "test_support.h"

namespace posenc_test::softmax {
namespace {

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

// ---------------------------------------------------------------------------- negative
// key positions (empty KV-cache cells)

// The keys of a row of n_k that are empty cells in these tests: every third one and a run
// of nine across vector boundaries (n_k 1: the only key, a row with nothing visible).
std::vector<char> EmptyCells(size_t n_k) {
  std::vector<char> empty(n_k);
  for (size_t j = 0; j < n_k; ++j) empty[j] = j % 3 == 1 || (j >= n_k / 2 && j < n_k / 2 + 9);
  return empty;
}

// The position of an empty cell: llama.cpp's -1, and other negative values, INT32_MIN among
// them (its kpos - qpos passes the int32 range).
int32_t EmptyPosition(size_t j) { return j % 7 == 0 ? INT32_MIN : j % 5 == 0 ? -1000000 : -1; }

// The options of the negative-position tests (each reading the positions some way).
void ApplyEmptyCellVariant(int variant, Spec& s, std::mt19937& rng) {
  const auto half = static_cast<int32_t>(s.n_k / 2);
  switch (variant) {
    case 0:  // causal and window by positions
      s.flags |= kCausal | kWindow;
      s.window = half + 2;
      break;
    case 1:  // signed ALiBi by positions, causal, sinks
      s.flags |= kCausal;
      s.slopes = AlibiSlopes(s.heads);
      s.sinks = RandomSinks(rng, s.heads);
      break;
    case 2:  // symmetric ALiBi, window, soft-capping
      s.flags |= kWindow | kSymmetric | kSoftcap;
      s.window = half + 1;
      s.softcap = 20.0f;
      s.slopes = AlibiSlopes(s.heads);
      for (float& v : s.slopes) v /= 8;
      break;
    case 3:  // ggml's ALiBi through the mask
      s.flags |= kMaskSlope | kCausal;
      s.slopes = AlibiSlopes(s.heads);
      break;
    default:  // nothing that reads positions (the plain row kind)
      s.scale = 0.25f;
      break;
  }
}
constexpr int kEmptyCellVariants = 5;

// The mask of a variant: f32 / f16, shared or per head; -inf at the empty cells when
// `hide_empty`, else `at_empty` there; elsewhere ggml's -|kpos - qpos| (variant 3) or
// random values (-inf among them).
MaskSpec EmptyCellMask(int variant, const std::vector<char>& empty, bool hide_empty,
                       float at_empty) {
  const posenc_dtype t = variant % 2 ? kF16 : kF32;
  const bool per_head = variant == 1 || variant == 2, query_major = variant == 2;
  return MaskOf(t, per_head, query_major, variant % 3,
                [empty, hide_empty, at_empty, variant](std::mt19937& rng, const Spec& s, size_t h,
                                                       size_t i, size_t j) {
                  const float other = RandomMask(rng, s, h, i, j);  // the same draws either way
                  if (empty[j]) return hide_empty ? -kInf : at_empty;
                  return variant == 3 ? LlamaAlibiMask(rng, s, h, i, j) : other;
                });
}

// Key counts and type pairs of the negative-position tests: rows past the 16-bit block
// (4100 keys) with one pair.
bool EmptyCellCase(size_t n_k, const TypePair& types) {
  return n_k < 4000 || (types.x == kBf16 && types.y == kBf16);
}

// Empty cells (negative key positions) that the mask hides (-inf in every row): allowed,
// and the result is that of the same call with valid positions there (bit for bit), and the
// reference's.
TEST_P(SoftmaxTest, NegativeKeyPositionsHiddenByTheMask) {
  uint32_t seed = kSeed;
  for (int variant = 0; variant < kEmptyCellVariants; ++variant)
    for (size_t n_k : {1, 7, 16, 33, 100, 4100})
      for (const TypePair& types : TypePairs()) {
        if (!EmptyCellCase(n_k, types)) continue;
        Spec valid = Base(2, 3, n_k, types, "empty cells hidden by the mask");
        std::mt19937 rng(++seed);
        RandomPositions(valid, rng);
        ApplyEmptyCellVariant(variant, valid, rng);
        const std::vector<char> empty = EmptyCells(n_k);
        valid.mask = EmptyCellMask(variant, empty, true, 0.0f);
        Spec negative = valid;
        for (size_t j = 0; j < n_k; ++j)
          if (empty[j]) negative.kpos[j] = EmptyPosition(j);
        const Problem a(negative, seed), b(valid, seed);  // the same scores and mask
        Check(a);
        ASSERT_TRUE(SameScores(a, a.Run(types.y, false, isa()), b.Run(types.y, false, isa()),
                               "negative vs valid positions at masked keys"))
            << Describe(negative);
        if (HasFailure()) return;
      }
}

// POSENC_SOFTMAX_KPOS_NEG_HIDDEN: every key with a negative position gets +0 whatever the
// mask says there (0, a finite value, NaN, no mask), and the rest is that of the call whose
// mask hides those keys (bit for bit), and the reference's; also in rows made NaN by a
// visible NaN score (the hidden keys stay +0).
TEST_P(SoftmaxTest, KposNegHiddenFlagHidesNegativeKeyPositions) {
  uint32_t seed = kSeed;
  for (int variant = 0; variant < kEmptyCellVariants; ++variant)
    for (int mask_kind = 0; mask_kind < 3; ++mask_kind)
      for (size_t n_k : {1, 5, 16, 33, 100, 4100})
        for (const TypePair& types : TypePairs()) {
          if (!EmptyCellCase(n_k, types) || (mask_kind == 0 && variant == 3)) continue;
          Spec flagged = Base(2, 3, n_k, types, "empty cells hidden by the flag");
          std::mt19937 rng(++seed);
          RandomPositions(flagged, rng);
          ApplyEmptyCellVariant(variant, flagged, rng);
          const std::vector<char> empty = EmptyCells(n_k);
          for (size_t j = 0; j < n_k; ++j)
            if (empty[j]) flagged.kpos[j] = EmptyPosition(j);
          Spec masked = flagged;
          if (mask_kind == 0) {  // no mask; the masked call: 0 and -inf
            masked.mask = MaskOf(kF32, false, false, 0,
                                 [empty](std::mt19937&, const Spec&, size_t, size_t, size_t j) {
                                   return empty[j] ? -kInf : 0.0f;
                                 });
          } else {
            const float at_empty = mask_kind == 1 ? 0.5f : NAN;
            flagged.mask = EmptyCellMask(variant, empty, false, at_empty);
            masked.mask = EmptyCellMask(variant, empty, true, 0.0f);
          }
          flagged.flags |= kKposNegHidden;
          // A visible NaN score in one row of one head: that row NaN, its hidden keys +0.
          const size_t nan_at = n_k - 1;
          if (!empty[nan_at] && n_k % 2 == 1) {
            const auto scores = [nan_at](std::mt19937& r, const Spec& s, size_t h, size_t i,
                                         size_t j) {
              const float v = RandomScore(r, s, h, i, j);
              return h == 1 && i == 2 && j == nan_at ? NAN : v;
            };
            flagged.scores = masked.scores = scores;
          }
          const Problem a(flagged, seed), b(masked, seed);  // the same scores
          Check(a);
          const Problem::Output fa = a.Run(types.y, false, isa());
          for (size_t h = 0; h < flagged.heads; ++h)
            for (size_t i = 0; i < flagged.n_q; ++i)
              for (size_t j = 0; j < n_k; ++j)
                if (empty[j]) {
                  ASSERT_EQ(fa.Bits(h, i, j), 0u) << Where(flagged, h, i, j);
                }
          ASSERT_TRUE(SameScores(a, fa, b.Run(types.y, false, isa()), "flag vs mask"))
              << Describe(flagged);
          if (HasFailure()) return;
        }
}

// A negative key position at a key that some row leaves visible (the mask is not -inf
// there, or there is no mask; causal and window do not count: such a key is never hidden by
// its position) is an error: POSENC_ERR_INVALID_ARGUMENT, and y (out of place: its sentinel
// fill; in place: x) bit for bit as it was.
TEST_P(SoftmaxTest, NegativeKeyPositionAtAVisibleKeyIsAnError) {
  ASSERT_EQ(posenc_set_isa(isa()), POSENC_OK);
  uint32_t seed = kSeed;
  for (int variant = 0; variant < 4; ++variant)
    for (size_t n_k : {5, 40})
      for (const TypePair& types : TypePairs()) {
        Spec s = Base(2, 3, n_k, types, "an empty cell left visible");
        std::mt19937 rng(++seed);
        RandomPositions(s, rng);
        const std::vector<char> empty = EmptyCells(n_k);
        for (size_t j = 0; j < n_k; ++j)
          if (empty[j]) s.kpos[j] = EmptyPosition(j);
        const size_t open = n_k - n_k / 3;  // a key whose position becomes -1
        s.kpos[open] = -1;
        switch (variant) {
          case 0:  // no mask
            break;
          case 1:  // causal, window 1 (as positions they would hide the key); the mask hides
                   // every empty cell but leaves key `open` visible in one row of one head
            s.flags = kCausal | kWindow;
            s.window = 1;
            [[fallthrough]];
          default: {
            const bool per_head = variant != 1;
            s.mask = MaskOf(
                variant == 3 ? kF16 : kF32, per_head, false, 1,
                [empty, open, per_head](std::mt19937&, const Spec&, size_t h, size_t i, size_t j) {
                  const bool left = j == open && i == 2 && (!per_head || h == 1);
                  return (empty[j] || j == open) && !left ? -kInf : 0.0f;
                });
          }
        }
        const Problem pb(s, seed);
        Elems mask = pb.mask();
        const posenc_softmax_params p = pb.Params(mask);
        const Grid& g = pb.x_grid();
        for (bool in_place : {false, true}) {
          if (in_place && types.x != types.y) continue;
          Elems x = pb.x(), y(types.y, g.size);
          for (size_t k = 0; k < y.size(); ++k) y.SetSentinel(k);
          Elems& out = in_place ? x : y;
          const Elems x_before = x, out_before = out;
          const posenc_scores_view xv = {x.At(g.offset), types.x, g.head_stride, g.row_stride, 0};
          const posenc_scores_view yv = {out.At(g.offset), types.y, g.head_stride, g.row_stride, 0};
          EXPECT_EQ(posenc_softmax(&p, s.heads, s.n_q, n_k, &xv, &yv), POSENC_ERR_INVALID_ARGUMENT)
              << Describe(s) << (in_place ? " in place" : "");
          EXPECT_NE(std::string(posenc_last_error()).find("params->kpos["), std::string::npos)
              << posenc_last_error();
          EXPECT_TRUE(SameBits(out, out_before)) << "y written: " << Describe(s);
          EXPECT_TRUE(SameBits(x, x_before)) << "x written: " << Describe(s);
          EXPECT_TRUE(SameBits(mask, pb.mask())) << "mask written: " << Describe(s);
          // The same call with the flag: accepted.
          posenc_softmax_params q = p;
          q.flags |= kKposNegHidden;
          EXPECT_EQ(posenc_softmax(&q, s.heads, s.n_q, n_k, &xv, &yv), POSENC_OK) << Describe(s);
        }
        if (HasFailure()) return;
      }
}

// ---------------------------------------------------------------------------- split

// Each row alone (n_q = 1 with its qpos or q_offset and its mask row) and each head alone
// (n_heads = 1 with its slope, sink and mask): bit for bit the whole call's result. bf16
// scores into f32 and bf16, and f32 into f32 (plain rows of f32 calls go through the
// three-row pipeline: split so, each row meets other rows there, at other steps).
TEST_P(SoftmaxTest, ResultsDoNotDependOnTheSplit) {
  uint32_t seed = kSeed;
  const std::vector<Option> options = Options();
  const std::pair<posenc_dtype, posenc_dtype> pairs[] = {
      {kBf16, kF32}, {kBf16, kBf16}, {kF32, kF32}};
  for (const Option& option : options)
    for (size_t n_k : {9, 300, 4100})
      for (const auto& [xt, yt] : pairs) {
        // Long rows (the 16-bit block path): sinks alone and the combinations.
        const std::string name = option.name;
        if (n_k == 4100 && name != "sinks" && name.rfind("everything", 0) != 0) continue;
        Spec s = Base(3, 4, n_k, {xt, yt}, option.name);
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
                                           xg.row_stride, 0};
            const posenc_scores_view yv = {split.after.At(yg.Index(h, i, 0)), yt, yg.head_stride,
                                           yg.row_stride, 0};
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

// ---------------------------------------------------------------------------- pipeline

// posenc_softmax on f32 rows [heads][n_q][n_k] (row stride ys for y), ISA already set.
posenc_status SoftmaxF32(const posenc_softmax_params& p, size_t heads, size_t n_q, size_t n_k,
                         const float* x, float* y, size_t ys) {
  const posenc_scores_view xv = {const_cast<float*>(x), kF32, n_q * n_k, n_k, 0};
  const posenc_scores_view yv = {y, kF32, n_q * ys, ys, 0};
  return posenc_softmax(&p, heads, n_q, n_k, &xv, &yv);
}

bool SameFloatBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Plain f32 rows long enough for the three-row pipeline (each row's step 1 with the step 2
// of the row before and the step 3 of the one before that, in one loop), with special rows
// among them: rows cut by the mask at both ends, cut short, with holes (head 0: each after
// two ordinary rows, so that the fused step takes it as each of its three rows), a row with
// nothing visible (1024 keys, a multiple of every sum span: not set up at all), and in head
// 1 every visible score -inf (no max), a NaN and a +inf score (a NaN sum); a sink per head.
// Every row is what it is alone (n_q = 1, n_heads = 1: its three steps one after the
// other), bit for bit, in place and out of place; the special rows are what the header says.
TEST_P(SoftmaxTest, SpecialRowsAmongPipelinedRows) {
  const size_t heads = 2, n_q = 12, n_k = 1024, n = heads * n_q * n_k;
  std::mt19937 rng(kSeed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(n), mask(n_q * n_k, 0.0f);
  for (float& v : x) v = normal(rng);
  const auto at = [&](size_t h, size_t i, size_t j) -> float& {
    return x[(h * n_q + i) * n_k + j];
  };
  for (size_t j = 0; j < n_k; ++j) at(1, 2, j) = -kInf;
  at(1, 6, 350) = std::numeric_limits<float>::quiet_NaN();
  at(1, 8, 10) = kInf;
  for (size_t j = 0; j < n_k; ++j) {
    if (j < 300 || j >= 950) mask[3 * n_k + j] = -kInf;              // query 3: cut at both ends
    if (j >= 400) mask[5 * n_k + j] = -kInf;                         // query 5: cut short
    if (j % 7 == 0 && j > 20 && j < 900) mask[7 * n_k + j] = -kInf;  // query 7: holes
    mask[10 * n_k + j] = -kInf;                                      // query 10: nothing visible
  }
  const float sinks[2] = {1.5f, -2.0f};
  posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
  p.scale = 0.5f;
  p.sinks = sinks;
  p.mask = mask.data();
  std::vector<float> whole(n, 7.0f), inplace = x, alone(n, 7.0f);
  ASSERT_EQ(SoftmaxF32(p, heads, n_q, n_k, x.data(), whole.data(), n_k), POSENC_OK);
  ASSERT_EQ(SoftmaxF32(p, heads, n_q, n_k, inplace.data(), inplace.data(), n_k), POSENC_OK);
  for (size_t h = 0; h < heads; ++h)
    for (size_t i = 0; i < n_q; ++i) {
      posenc_softmax_params q = p;
      q.sinks = sinks + h;
      q.mask = mask.data() + i * n_k;
      q.q_offset = static_cast<int32_t>(i);
      const size_t r = (h * n_q + i) * n_k;
      ASSERT_EQ(SoftmaxF32(q, 1, 1, n_k, x.data() + r, alone.data() + r, n_k), POSENC_OK);
    }
  for (size_t k = 0; k < n; ++k) {
    const size_t h = k / (n_q * n_k), i = k / n_k % n_q, j = k % n_k;
    ASSERT_TRUE(SameFloatBits(whole[k], alone[k]))
        << "head " << h << " query " << i << " key " << j << ": " << whole[k] << " vs " << alone[k];
    ASSERT_TRUE(SameFloatBits(whole[k], inplace[k])) << "in place, head " << h << " query " << i;
    const bool hidden = mask[i * n_k + j] == -kInf;
    if ((h == 1 && i == 2) || hidden)
      ASSERT_EQ(whole[k], 0.0f) << "head " << h << " query " << i << " key " << j;
    else if (h == 1 && (i == 6 || i == 8))
      ASSERT_TRUE(std::isnan(whole[k])) << "head " << h << " query " << i << " key " << j;
    else
      ASSERT_TRUE(whole[k] > 0.0f && whole[k] < 1.0f) << "head " << h << " query " << i;
  }
}

// Out-of-place f32 calls of 16 MiB of y and more with rows of at most 1024 keys write y with
// non-temporal stores on x86 (posenc_softmax's Speed note): the bits of the same call in place
// (which stores normally), with every row on a vector boundary (the fused step's streamed
// stores) or most rows off it (the heads and tails stored normally), hidden tails (causal)
// written as zeros, y's gaps and the floats around it untouched, x unchanged.
TEST_P(SoftmaxTest, LargeOutOfPlaceCallsGiveTheInPlaceBits) {
  struct Case {
    size_t heads, n_q, n_k, ys, offset;
    unsigned flags;
  };
  for (const Case& c : {Case{8, 512, 1024, 1024, 0, kCausal}, Case{8, 525, 1000, 1003, 1, 0u}}) {
    const size_t n = c.heads * c.n_q * c.n_k, rows = c.heads * c.n_q;
    ASSERT_GE(n * sizeof(float), size_t{16} << 20);
    std::mt19937 rng(kSeed + static_cast<uint32_t>(c.n_k));
    std::normal_distribution<float> normal(0.0f, 2.0f);
    // y at `offset` floats from a 64-byte boundary, with a float after it
    AlignedFloats ybuf(c.offset + rows * c.ys + 1);
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    const std::vector<float> x0 = x;
    std::vector<float> inplace = x;
    float* const y = ybuf.data() + c.offset;
    std::fill(ybuf.data(), ybuf.data() + ybuf.size(), -3.0f);
    posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
    p.scale = 0.125f;
    p.flags = c.flags;
    p.q_offset = static_cast<int32_t>(c.n_k - c.n_q) / 2;
    ASSERT_EQ(SoftmaxF32(p, c.heads, c.n_q, c.n_k, x.data(), y, c.ys), POSENC_OK);
    ASSERT_EQ(SoftmaxF32(p, c.heads, c.n_q, c.n_k, inplace.data(), inplace.data(), c.n_k),
              POSENC_OK);
    ASSERT_TRUE(x == x0) << "x changed, n_k " << c.n_k;
    for (size_t k = 0; k < c.offset; ++k) ASSERT_EQ(ybuf.data()[k], -3.0f) << "before y";
    ASSERT_EQ(y[rows * c.ys], -3.0f) << "after y";
    for (size_t r = 0; r < rows; ++r) {
      for (size_t j = 0; j < c.n_k; ++j)
        ASSERT_TRUE(SameFloatBits(y[r * c.ys + j], inplace[r * c.n_k + j]))
            << "n_k " << c.n_k << " row " << r << " key " << j;
      for (size_t j = c.n_k; j < c.ys; ++j) ASSERT_EQ(y[r * c.ys + j], -3.0f) << "gap of row " << r;
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
            const posenc_scores_view x = {xb, xt, n_q * n_k, n_k, 0},
                                     y = {yb, yt, n_q * n_k, n_k, 0};
            if (posenc_softmax(&p, heads, n_q, n_k, &x, &y) != POSENC_OK) std::exit(1);
          }
  }
  std::exit(0);
}

TEST_P(SoftmaxTest, NeverTouchesMemoryOutsideTheViews) {
  ExpectNoAccessNextToGuardPages([this] { RunNextToGuardPages(isa()); }, isa(), "x, y or the mask");
}

}  // namespace
}  // namespace posenc_test::softmax
