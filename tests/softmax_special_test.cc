// posenc_softmax once per ISA, part of softmax_test (softmax_test.cc says what each file
// covers): the special values the header defines (rows with nothing visible, one finite
// score, NaN and infinite scores visible or hidden, soft-capped infinities, probabilities
// around the underflow floor), results independent of how rows and heads are split between
// calls, and no access outside x, y and the mask next to inaccessible pages.
#include <posenc.h>

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

}  // namespace
}  // namespace posenc_test::softmax
