// The bf16 and f16 ALiBi functions (posenc_alibi_add_bf16 / _f16, posenc_alibi_bias_bf16 /
// _f16) on every ISA: every score must be, bit for bit, the scalar f32 function's value on
// the widened scores rounded to the storage type (so bit-identical across ISAs, -inf and -0.0
// included), on shapes sized around every vector width (2-byte elements end their partial
// vectors at other byte counts than floats), strides whose gaps hold NaN sentinels, scores
// misaligned by one or three elements, large positions, slopes that overflow f16, non-finite
// scores and guard pages; and the argument checks of the f32 functions, nothing written on
// error.
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "alibi_harness.h"
#include "half_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr uint32_t kSeed = 20240615;
constexpr size_t kMaxPosition = size_t{1} << 31;
constexpr float kScales[] = {1.0f, 0.125f, -1.0f, 0.08838835f};
constexpr unsigned kFlags[] = {0u, POSENC_ALIBI_CAUSAL};

using AddFn = posenc_status (*)(const float*, size_t, size_t, size_t, size_t, uint16_t*, size_t,
                                size_t, float, unsigned);
using BiasFn = posenc_status (*)(const float*, size_t, size_t, size_t, size_t, uint16_t*, size_t,
                                 size_t, unsigned);

AddFn AddOf(Storage s) {
  return s == Storage::kBf16 ? posenc_alibi_add_bf16 : posenc_alibi_add_f16;
}
BiasFn BiasOf(Storage s) {
  return s == Storage::kBf16 ? posenc_alibi_bias_bf16 : posenc_alibi_bias_f16;
}

// A float problem and its 16-bit twin at the same element indices: every score a value of
// the storage type in both, every gap and guard of the 16-bit buffer a NaN sentinel.
struct HalfProblem {
  HalfProblem(Storage s, const AlibiShape& shape)
      : storage(s), problem(shape, kSeed), input(problem.input().size()) {
    AlignedFloats& x = problem.mutable_input();
    for (size_t i = 0; i < input.size(); ++i) {
      if (problem.IsScore(i)) {
        x[i] = RoundToStorage(s, x[i]);
        input.Set(i, EncodeHalf(s, x[i]));
      } else {
        input.Set(i, HalfNaNSentinel(s, i));
      }
    }
  }

  // A copy of the input after `op` in 16-bit storage with `isa` made active.
  HalfBuffer RunWithIsa(AlibiOp op, posenc_isa isa) const {
    HalfBuffer out = input;
    const AlibiShape& s = problem.shape();
    uint16_t* scores = out.data() + problem.Index(0, 0, 0);
    EXPECT_EQ(posenc_set_isa(isa), POSENC_OK) << posenc_isa_name(isa);
    const posenc_status status =
        op == AlibiOp::kAdd
            ? AddOf(storage)(problem.slopes().data(), s.n_heads, s.n_q, s.n_k, s.q_offset, scores,
                             problem.head_stride(), problem.row_stride(), s.scale, s.flags)
            : BiasOf(storage)(problem.slopes().data(), s.n_heads, s.n_q, s.n_k, s.q_offset, scores,
                              problem.head_stride(), problem.row_stride(), s.flags);
    EXPECT_EQ(status, POSENC_OK) << StorageName(storage) << " " << OpName(op) << " "
                                 << posenc_isa_name(isa);
    return out;
  }

  Storage storage;
  AlibiProblem problem;
  HalfBuffer input;
};

// Every score of out is the f32 output's score rounded to the storage type, bit for bit
// (any NaN where that is NaN); every gap and guard element is still its input.
testing::AssertionResult IsRoundedF32(const HalfProblem& hp, const HalfBuffer& out,
                                      const AlignedFloats& f32) {
  size_t differences = 0;
  std::ostringstream first;
  for (size_t i = 0; i < out.size(); ++i) {
    const bool score = hp.problem.IsScore(i);
    const uint16_t want = score ? ToHalfBits(hp.storage, f32[i]) : hp.input.Get(i);
    const uint16_t got = out.Get(i);
    if (got == want || (score && std::isnan(f32[i]) && IsHalfNaN(hp.storage, got))) continue;
    if (differences++ == 0)
      first << "first at " << hp.problem.Where(i) << ": got " << DescribeHalf(hp.storage, got)
            << ", expected " << DescribeHalf(hp.storage, want) << " (f32 " << f32[i] << ")";
  }
  if (differences == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << differences << " element(s) differ; " << first.str();
}

// Both storage types with `isa` against the scalar f32 function on the widened scores (which
// the f32 suite checks against the reference), rounded.
void ExpectRoundedF32(posenc_isa isa, const AlibiShape& shape, AlibiOp op) {
  for (Storage storage : kStorages) {
    SCOPED_TRACE(std::string(StorageName(storage)) + " " + OpName(op) + " " + Describe(shape));
    const HalfProblem hp(storage, shape);
    const AlignedFloats f32 = RunAlibiWithIsa(hp.problem, op, POSENC_ISA_SCALAR);
    EXPECT_TRUE(MatchesReference(hp.problem, f32, ReferenceOutput(hp.problem, op)))
        << "scalar f32 vs reference";
    EXPECT_TRUE(IsRoundedF32(hp, hp.RunWithIsa(op, isa), f32))
        << posenc_isa_name(isa) << " vs scalar f32, rounded";
  }
}

// Both operations (the bias ignores scale: scale 1 only); stops at the first failing shape.
void ExpectRoundedF32(posenc_isa isa, const std::vector<AlibiShape>& shapes) {
  for (const AlibiShape& shape : shapes) {
    ExpectRoundedF32(isa, shape, AlibiOp::kAdd);
    if (shape.scale == 1.0f) ExpectRoundedF32(isa, shape, AlibiOp::kBias);
    if (testing::Test::HasFailure()) return;
  }
}

// The slopes of the last n of seed 000's 40 heads, whose products with a distance round.
AlibiShape InexactShape(size_t n_heads, size_t n_q, size_t n_k) {
  const std::vector<float> forty = SeedSlopes(40);
  AlibiShape s;
  s.n_heads = n_heads;
  s.slopes.assign(forty.end() - static_cast<std::ptrdiff_t>(n_heads), forty.end());
  s.n_q = n_q;
  s.n_k = n_k;
  return s;
}

// Each shape once per query offset (first rows, last rows of a prefill, queries after every
// key, the last valid positions), flag and scale.
std::vector<AlibiShape> WithEveryMode(const std::vector<AlibiShape>& shapes) {
  std::vector<AlibiShape> out;
  for (const AlibiShape& shape : shapes) {
    std::vector<size_t> offsets = {0, shape.n_k + 5, kMaxPosition - shape.n_q};
    if (shape.n_k > shape.n_q) offsets.push_back(shape.n_k - shape.n_q);
    for (size_t q_offset : offsets)
      for (unsigned flags : kFlags)
        for (float scale : kScales) {
          out.push_back(shape);
          out.back().q_offset = q_offset;
          out.back().flags = flags;
          out.back().scale = scale;
        }
  }
  return out;
}

// n_k = 1..33 covers every tail of 4, 8 and 16 lanes; the rest cross several vectors.
std::vector<AlibiShape> KeyCountsAroundVectorWidths() {
  std::vector<size_t> key_counts;
  for (size_t n = 1; n <= 33; ++n) key_counts.push_back(n);
  for (size_t n : {63, 64, 65, 127, 128, 129, 512}) key_counts.push_back(n);
  std::vector<AlibiShape> shapes;
  for (size_t n_k : key_counts)
    for (size_t n_q : {1, 3, 17}) {
      if (n_k >= 512 && n_q == 17) continue;
      shapes.push_back(InexactShape(3, n_q, n_k));
    }
  return WithEveryMode(shapes);
}

// Gaps between rows and heads (NaN sentinels that must stay as they were), and scores one or
// three elements (2 or 6 bytes) past a 64-byte boundary; with odd strides every row starts
// at another alignment.
std::vector<AlibiShape> StridesAndMisalignment() {
  std::vector<AlibiShape> shapes;
  for (size_t row_pad : {0, 1, 5, 16})
    for (size_t head_pad : {0, 3})
      for (size_t misalign : {0, 1, 3})
        for (size_t n_k : {1, 7, 15, 16, 17, 33}) {
          AlibiShape s = InexactShape(3, 5, n_k);
          s.row_pad = row_pad;
          s.head_pad = head_pad;
          s.misalign = misalign;
          s.q_offset = n_k > 5 ? n_k - 5 : 0;
          for (unsigned flags : kFlags) {
            s.flags = flags;
            shapes.push_back(s);
          }
        }
  return shapes;
}

// Query positions around 2^24 and at the end of the range, where float distances round.
std::vector<AlibiShape> LargeQueryPositions() {
  std::vector<AlibiShape> shapes;
  for (size_t q_offset : {(size_t{1} << 24) - 40, (size_t{1} << 25) + 3, kMaxPosition - 1000})
    for (size_t n_k : {17, 129})
      for (float scale : kScales) {
        AlibiShape s = InexactShape(2, 17, n_k);
        s.q_offset = q_offset;
        s.scale = scale;
        shapes.push_back(s);
      }
  return shapes;
}

// Slopes besides the paper's: zero, negative, subnormal, and large enough that the bias
// passes 65504 (f16 infinity) or the float range.
std::vector<AlibiShape> CustomSlopes() {
  const std::vector<float> slopes = {0.0f, -0.5f, 1e-42f, 1.0f, 100.0f, 3000.0f, 1e30f, -2.0f};
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

class AlibiHalfTest : public EveryIsaTest {};

TEST_P(AlibiHalfTest, KeyCountsAroundVectorWidths) {
  ExpectRoundedF32(isa(), KeyCountsAroundVectorWidths());
}

TEST_P(AlibiHalfTest, StridesLeaveGapsUntouchedAndScoresMayBeMisaligned) {
  ExpectRoundedF32(isa(), StridesAndMisalignment());
}

TEST_P(AlibiHalfTest, LargeQueryPositions) { ExpectRoundedF32(isa(), LargeQueryPositions()); }

TEST_P(AlibiHalfTest, CustomSlopes) { ExpectRoundedF32(isa(), CustomSlopes()); }

// NaN and infinite scores propagate through unmasked elements; masked ones become -inf.
TEST_P(AlibiHalfTest, NonFiniteScores) {
  for (unsigned flags : kFlags)
    for (float scale : {1.0f, -1.0f, 0.0f}) {
      AlibiShape shape = InexactShape(2, 5, 37);
      shape.q_offset = 30;
      shape.scale = scale;
      shape.flags = flags;
      for (Storage storage : kStorages) {
        SCOPED_TRACE(std::string(StorageName(storage)) + " " + Describe(shape));
        HalfProblem hp(storage, shape);
        const float poison[] = {NAN, INFINITY, -INFINITY};
        size_t n = 0;
        for (size_t h = 0; h < shape.n_heads; ++h)
          for (size_t i = 0; i < shape.n_q; ++i)
            for (size_t j = (i + h) % 3; j < shape.n_k; j += 3) {
              const size_t index = hp.problem.Index(h, i, j);
              hp.problem.mutable_input()[index] = poison[n % 3];
              hp.input.Set(index, EncodeHalf(storage, poison[n++ % 3]));
            }
        const AlignedFloats f32 = RunAlibiWithIsa(hp.problem, AlibiOp::kAdd, POSENC_ISA_SCALAR);
        EXPECT_TRUE(IsRoundedF32(hp, hp.RunWithIsa(AlibiOp::kAdd, isa()), f32));
      }
    }
}

// The bias of seed 000's get_bias in 16 bits: -0.0 on the diagonal, -inf above it with the
// causal mask, and the exact bit patterns of both.
TEST_P(AlibiHalfTest, BiasKeepsNegativeZeroAndMinusInfinity) {
  const size_t n = 19;
  const std::vector<float> slopes = SeedSlopes(4);
  for (Storage storage : kStorages)
    for (unsigned flags : kFlags) {
      HalfBuffer out(4 * n * n);
      ASSERT_EQ(posenc_set_isa(isa()), POSENC_OK);
      ASSERT_EQ(BiasOf(storage)(slopes.data(), 4, n, n, 0, out.data(), n * n, n, flags), POSENC_OK);
      const uint16_t minus_inf = storage == Storage::kBf16 ? 0xff80 : 0xfc00;
      for (size_t h = 0; h < 4; ++h)
        for (size_t i = 0; i < n; ++i) {
          EXPECT_EQ(out.Get(h * n * n + i * n + i), 0x8000) << StorageName(storage) << " diagonal";
          for (size_t j = i + 1; j < n && flags; ++j)
            EXPECT_EQ(out.Get(h * n * n + i * n + j), minus_inf) << StorageName(storage);
        }
    }
}

// Dense [2 heads, 2 rows, n_k] scores right after, or right before, an inaccessible page,
// for n_k around the vector widths. Exits with 1 on an error status; any access outside the
// scores kills the process.
[[noreturn]] void RunNextToGuardPages(posenc_isa isa) {
  if (posenc_set_isa(isa) != POSENC_OK) std::exit(1);
  const std::vector<float> slopes = SeedSlopes(2);
  for (size_t n_k = 1; n_k <= 65; n_k += (n_k < 33 ? 1 : 16)) {
    const size_t n_q = 2, heads = 2, n = heads * n_q * n_k;
    GuardedPages pages((n + 1) / 2);
    if (!pages.ok()) std::exit(1);
    uint16_t* at_end = reinterpret_cast<uint16_t*>(pages.AtEnd((n + 1) / 2)) + n % 2;
    for (uint16_t* scores : {reinterpret_cast<uint16_t*>(pages.AtStart()), at_end})
      for (Storage storage : kStorages)
        for (unsigned flags : kFlags) {
          for (size_t i = 0; i < n; ++i) scores[i] = static_cast<uint16_t>(0x3c00 + i % 7);
          if (AddOf(storage)(slopes.data(), heads, n_q, n_k, n_k - 1, scores, n_q * n_k, n_k, 0.5f,
                             flags) != POSENC_OK ||
              BiasOf(storage)(slopes.data(), heads, n_q, n_k, 0, scores, n_q * n_k, n_k, flags) !=
                  POSENC_OK)
            std::exit(1);
        }
  }
  std::exit(0);
}

TEST_P(AlibiHalfTest, NeverTouchesMemoryOutsideTheScores) {
  ExpectNoAccessNextToGuardPages([this] { RunNextToGuardPages(isa()); }, isa(),
                                 "the 16-bit scores");
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(AlibiHalfTest);

// ---------------------------------------------------------------------- argument checks

constexpr size_t kHeads = 3;
constexpr size_t kRows = 3;
constexpr size_t kKeys = 5;
constexpr size_t kRowStride = 6;
constexpr size_t kHeadStride = (kRows - 1) * kRowStride + kKeys;

// Everything the 16-bit add and bias take (bias ignores scale). scores is a void* so that a
// pointer off the 2-byte alignment can be built.
struct HalfAlibiCall {
  Storage storage;
  AlibiOp op;
  const float* slopes;
  size_t n_heads, n_q, n_k, q_offset;
  void* scores;
  size_t head_stride, row_stride;
  float scale;
  unsigned flags;

  posenc_status Invoke() const {
    uint16_t* s = static_cast<uint16_t*>(scores);
    if (op == AlibiOp::kAdd)
      return AddOf(storage)(slopes, n_heads, n_q, n_k, q_offset, s, head_stride, row_stride, scale,
                            flags);
    return BiasOf(storage)(slopes, n_heads, n_q, n_k, q_offset, s, head_stride, row_stride, flags);
  }
};

class AlibiHalfArgumentsTest : public testing::Test {
 protected:
  // Scores [3 heads, 3 rows of stride 6, 5 keys] at element 32; every element of the buffer
  // holds its own value, so any write shows.
  AlibiHalfArgumentsTest() : buffer_(192), slopes_{0.5f, 0.25f, 0.125f, 0.0625f} {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_.Set(i, static_cast<uint16_t>(0x3c00 + i));
  }

  HalfAlibiCall ValidCall(Storage storage, AlibiOp op) {
    return HalfAlibiCall{storage, op, slopes_.data(),      kHeads,      kRows,
                         kKeys,   2,  buffer_.data() + 32, kHeadStride, kRowStride,
                         0.5f,    0};
  }

  HalfBuffer buffer_;
  std::vector<float> slopes_;
};

std::string What(const HalfAlibiCall& c, const std::string& what) {
  return std::string(StorageName(c.storage)) + " " + OpName(c.op) + ": " + what +
         " flags=" + std::to_string(c.flags);
}

TEST_F(AlibiHalfArgumentsTest, BaselineCallsAreValidAndWrite) {
  for (Storage storage : kStorages)
    for (AlibiOp op : {AlibiOp::kAdd, AlibiOp::kBias}) {
      const AlignedFloats before = buffer_.floats();
      ASSERT_EQ(ValidCall(storage, op).Invoke(), POSENC_OK);
      EXPECT_NE(FirstBitwiseDifference(before, buffer_.floats()), -1);
    }
}

struct InvalidCase {
  const char* what;
  std::function<void(HalfAlibiCall&)> mutate;
  bool add_only;  // scale exists only for add
};

// The cases of the f32 suite, with the element size of 16-bit storage where it matters.
std::vector<InvalidCase> InvalidCases(std::vector<float>& slopes) {
  const auto last_slope = [&slopes](float value) {
    return [&slopes, value](HalfAlibiCall& c) {
      slopes[kHeads - 1] = value;
      c.slopes = slopes.data();
    };
  };
  return {
      {"NULL slopes", [](HalfAlibiCall& c) { c.slopes = nullptr; }, false},
      {"NULL scores", [](HalfAlibiCall& c) { c.scores = nullptr; }, false},
      {"NaN slope of the last head", last_slope(NAN), false},
      {"-inf slope of the last head", last_slope(-INFINITY), false},
      {"NaN scale", [](HalfAlibiCall& c) { c.scale = NAN; }, true},
      {"+inf scale", [](HalfAlibiCall& c) { c.scale = INFINITY; }, true},
      {"unknown flag bit 1", [](HalfAlibiCall& c) { c.flags = 2u; }, false},
      {"every flag bit", [](HalfAlibiCall& c) { c.flags = ~0u; }, false},
      {"row_stride < n_k with 3 rows",
       [](HalfAlibiCall& c) {
         c.row_stride = kKeys - 1;
         c.head_stride = 32;
       },
       false},
      {"head_stride one short of the previous head's rows",
       [](HalfAlibiCall& c) { c.head_stride = kHeadStride - 1; }, false},
      {"q_offset + n_q = 2^31 + 1", [](HalfAlibiCall& c) { c.q_offset = kMaxPosition - kRows + 1; },
       false},
      {"q_offset SIZE_MAX", [](HalfAlibiCall& c) { c.q_offset = SIZE_MAX; }, false},
      {"n_k = 2^31 + 1, one head, one row",
       [](HalfAlibiCall& c) {
         c.n_heads = c.n_q = 1;
         c.n_k = kMaxPosition + 1;
         c.q_offset = 0;
       },
       false},
      {"(n_heads - 1) * head_stride overflows size_t",
       [](HalfAlibiCall& c) { c.head_stride = SIZE_MAX / 2 + 1; }, false},
      {"n_heads SIZE_MAX: extent overflows size_t", [](HalfAlibiCall& c) { c.n_heads = SIZE_MAX; },
       false},
      {"extent of 2-byte elements just past PTRDIFF_MAX bytes, one head",
       [](HalfAlibiCall& c) {
         c.n_heads = 1;
         c.row_stride = PTRDIFF_MAX / 4 + 1;
       },
       false},
      {"scores one byte off 2-byte alignment",
       [](HalfAlibiCall& c) { c.scores = static_cast<char*>(c.scores) + 1; }, false},
      {"scores three bytes off 2-byte alignment",
       [](HalfAlibiCall& c) { c.scores = static_cast<char*>(c.scores) + 3; }, false},
  };
}

TEST_F(AlibiHalfArgumentsTest, InvalidCallsAreRejectedAndWriteNothing) {
  for (Storage storage : kStorages)
    for (AlibiOp op : {AlibiOp::kAdd, AlibiOp::kBias})
      for (unsigned flags : kFlags) {
        std::vector<float> bad_slopes = slopes_;
        for (const InvalidCase& bad : InvalidCases(bad_slopes)) {
          if (bad.add_only && op == AlibiOp::kBias) continue;
          HalfAlibiCall call = ValidCall(storage, op);
          call.flags = flags;
          bad.mutate(call);
          ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_.floats(),
                                         What(call, bad.what));
          bad_slopes = slopes_;
        }
      }
}

TEST_F(AlibiHalfArgumentsTest, EmptyWorkIsAValidNoOp) {
  const CallChanges<HalfAlibiCall> no_ops = {
      {"all counts 0, NULL slopes and scores",
       [](HalfAlibiCall& c) {
         c.n_heads = c.n_q = c.n_k = 0;
         c.slopes = nullptr;
         c.scores = nullptr;
       }},
      {"n_k 0, NULL scores",
       [](HalfAlibiCall& c) {
         c.n_k = 0;
         c.scores = nullptr;
       }},
      {"n_q 0", [](HalfAlibiCall& c) { c.n_q = 0; }},
  };
  for (Storage storage : kStorages)
    for (AlibiOp op : {AlibiOp::kAdd, AlibiOp::kBias})
      ExpectChangedCallsReturnAndWriteNothing(
          ValidCall(storage, op), no_ops, POSENC_OK, buffer_.floats(),
          std::string(StorageName(storage)) + " " + OpName(op) + ": ");
}

// 2-byte alignment is enough, heads may nest in rows, and the position limit is valid.
TEST_F(AlibiHalfArgumentsTest, ValidUnusualCallsAreAccepted) {
  const CallChanges<HalfAlibiCall> valid = {
      {"scores 2 bytes off float alignment",
       [](HalfAlibiCall& c) { c.scores = static_cast<char*>(c.scores) + 2; }},
      {"[n_q, H, n_k]: heads inside rows",
       [](HalfAlibiCall& c) {
         c.n_q = 2;
         c.row_stride = kHeads * kKeys;
         c.head_stride = kKeys;
       }},
      {"one head, head_stride SIZE_MAX",
       [](HalfAlibiCall& c) {
         c.n_heads = 1;
         c.head_stride = SIZE_MAX;
       }},
      {"q_offset + n_q == 2^31", [](HalfAlibiCall& c) { c.q_offset = kMaxPosition - kRows; }},
      {"largest finite scale",
       [](HalfAlibiCall& c) { c.scale = std::numeric_limits<float>::max(); }},
      {"CAUSAL", [](HalfAlibiCall& c) { c.flags = POSENC_ALIBI_CAUSAL; }},
  };
  for (Storage storage : kStorages)
    for (AlibiOp op : {AlibiOp::kAdd, AlibiOp::kBias})
      ExpectChangedCallsReturn(ValidCall(storage, op), valid, POSENC_OK,
                               std::string(StorageName(storage)) + " " + OpName(op) + ": ");
}

}  // namespace
}  // namespace posenc_test
