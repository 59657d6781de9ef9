// ALiBi argument checks: every invalid call of posenc_alibi_slopes, posenc_alibi_add_f32 and
// posenc_alibi_bias_f32 returns POSENC_ERR_INVALID_ARGUMENT, with a posenc_last_error()
// naming the function and the argument, and leaves every buffer bit for bit untouched; valid no-ops
// and unusual valid strides are accepted and computed. Runs with the active ISA (ctest runs it once
// per ISA).
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "alibi_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr size_t kHeads = 3;
constexpr size_t kRows = 3;
constexpr size_t kKeys = 5;
constexpr size_t kRowStride = 6;                                  // one float of gap per row
constexpr size_t kHeadStride = (kRows - 1) * kRowStride + kKeys;  // the smallest allowed: 17
constexpr size_t kPositionLimit = size_t{1} << 31;

// Everything posenc_alibi_add_f32 and posenc_alibi_bias_f32 take (bias ignores scale).
// scores is a void* so that a pointer that is not float-aligned can be built without
// arithmetic on a misaligned float*.
struct AlibiCall {
  AlibiOp op;
  const float* slopes;
  size_t n_heads, n_q, n_k, q_offset;
  void* scores;
  size_t head_stride, row_stride;
  float scale;
  unsigned flags;

  const char* Function() const {
    return op == AlibiOp::kAdd ? "posenc_alibi_add_f32" : "posenc_alibi_bias_f32";
  }
  posenc_status Invoke() const {
    float* s = static_cast<float*>(scores);
    if (op == AlibiOp::kAdd)
      return posenc_alibi_add_f32(slopes, n_heads, n_q, n_k, q_offset, s, head_stride, row_stride,
                                  scale, flags);
    return posenc_alibi_bias_f32(slopes, n_heads, n_q, n_k, q_offset, s, head_stride, row_stride,
                                 flags);
  }
};

class AlibiArgumentsTest : public testing::Test {
 protected:
  // Scores [3 heads, 3 rows of stride 6, 5 keys] at buffer + 16; every element of the
  // buffer holds its own value (0.5 + index), so any write shows. Slopes: 3 valid values
  // followed by spare slots.
  AlibiArgumentsTest() : buffer_(96), slopes_{0.5f, 0.25f, 0.125f, 0.0625f, 7.0f} {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = 0.5f + static_cast<float>(i);
  }

  float* scores() { return buffer_.data() + 16; }

  AlibiCall ValidCall(AlibiOp op) {
    AlibiCall c;
    c.op = op;
    c.slopes = slopes_.data();
    c.n_heads = kHeads;
    c.n_q = kRows;
    c.n_k = kKeys;
    c.q_offset = 2;
    c.scores = scores();
    c.head_stride = kHeadStride;
    c.row_stride = kRowStride;
    c.scale = 0.5f;
    c.flags = 0;
    return c;
  }

  // The call is refused, with a detail naming `argument` ("scores": the scores or out
  // argument of the call), and neither the scores nor the slopes changed.
  void ExpectRejected(const AlibiCall& call, const std::string& what, const char* argument) {
    const std::vector<float> slopes_before = slopes_;
    const bool scores = std::string(argument) == "scores";
    ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_,
                                   std::string(OpName(call.op)) + ": " + what,
                                   scores && call.op == AlibiOp::kBias ? "out" : argument);
    for (size_t h = 0; h < slopes_.size(); ++h)
      EXPECT_TRUE(BitwiseEqual(slopes_[h], slopes_before[h]))
          << OpName(call.op) << ": " << what << ": slope " << h << " written";
  }

  AlignedFloats buffer_;
  std::vector<float> slopes_;
};

TEST_F(AlibiArgumentsTest, BaselineCallsAreValidAndWrite) {
  for (AlibiOp op : {AlibiOp::kAdd, AlibiOp::kBias}) {
    const AlignedFloats before = buffer_;
    ASSERT_EQ(ValidCall(op).Invoke(), POSENC_OK) << OpName(op);
    EXPECT_NE(FirstBitwiseDifference(before, buffer_), -1) << OpName(op);
  }
}

struct InvalidCase {
  const char* what;
  const char* argument;  // the argument posenc_last_error() names ("scores" is out for bias)
  std::function<void(AlibiCall&)> mutate;
  bool add_only;  // scale exists only for add
};

std::vector<InvalidCase> InvalidCases(std::vector<float>& slopes) {
  const size_t kHuge = SIZE_MAX / 2 + 1;
  const auto last_slope = [&slopes](float value) {
    return [&slopes, value](AlibiCall& c) {
      slopes[kHeads - 1] = value;
      c.slopes = slopes.data();
    };
  };
  return {
      {"NULL slopes", "slopes", [](AlibiCall& c) { c.slopes = nullptr; }, false},
      {"NULL scores", "scores", [](AlibiCall& c) { c.scores = nullptr; }, false},
      {"NaN slope of the last head", "slopes", last_slope(NAN), false},
      {"+inf slope of the last head", "slopes", last_slope(INFINITY), false},
      {"-inf slope of the last head", "slopes", last_slope(-INFINITY), false},
      {"NaN scale", "scale", [](AlibiCall& c) { c.scale = NAN; }, true},
      {"+inf scale", "scale", [](AlibiCall& c) { c.scale = INFINITY; }, true},
      {"-inf scale", "scale", [](AlibiCall& c) { c.scale = -INFINITY; }, true},
      {"unknown flag bit 1", "flags", [](AlibiCall& c) { c.flags = 2u; }, false},
      {"CAUSAL plus an unknown flag", "flags",
       [](AlibiCall& c) { c.flags = POSENC_ALIBI_CAUSAL | 4u; }, false},
      {"unknown flag bit 31", "flags", [](AlibiCall& c) { c.flags = 1u << 31; }, false},
      {"every flag bit", "flags", [](AlibiCall& c) { c.flags = ~0u; }, false},
      {"row_stride < n_k with 3 rows", "row_stride",
       [](AlibiCall& c) {
         c.row_stride = kKeys - 1;
         c.head_stride = 32;
       },
       false},
      {"row_stride 0 with 3 rows", "row_stride", [](AlibiCall& c) { c.row_stride = 0; }, false},
      {"head_stride one short of the previous head's rows", "head_stride",
       [](AlibiCall& c) { c.head_stride = kHeadStride - 1; }, false},
      {"head_stride 0 with 3 heads", "head_stride", [](AlibiCall& c) { c.head_stride = 0; }, false},
      {"q_offset + n_q = 2^31 + 1", "q_offset",
       [](AlibiCall& c) { c.q_offset = kPositionLimit - kRows + 1; }, false},
      {"q_offset 2^31", "q_offset", [](AlibiCall& c) { c.q_offset = kPositionLimit; }, false},
      {"q_offset + n_q wraps around size_t", "q_offset",
       [](AlibiCall& c) { c.q_offset = SIZE_MAX - 1; }, false},
      {"q_offset SIZE_MAX", "q_offset", [](AlibiCall& c) { c.q_offset = SIZE_MAX; }, false},
      {"n_k = 2^31 + 1 (one head, one row: no stride rule applies)", "n_k",
       [](AlibiCall& c) {
         c.n_heads = c.n_q = 1;
         c.n_k = kPositionLimit + 1;
         c.q_offset = 0;
       },
       false},
      {"n_k SIZE_MAX, one head, one row", "n_k",
       [](AlibiCall& c) {
         c.n_heads = c.n_q = 1;
         c.n_k = SIZE_MAX;
       },
       false},
      {"(n_heads - 1) * head_stride overflows size_t", "scores",
       [=](AlibiCall& c) { c.head_stride = kHuge; }, false},
      {"head extent plus the last head's rows overflows size_t", "scores",
       [](AlibiCall& c) { c.head_stride = SIZE_MAX / 2; }, false},
      {"n_heads SIZE_MAX: extent overflows size_t", "scores",
       [](AlibiCall& c) { c.n_heads = SIZE_MAX; }, false},
      {"(n_q - 1) * row_stride overflows size_t, one head", "scores",
       [=](AlibiCall& c) {
         c.n_heads = 1;
         c.row_stride = kHuge;
       },
       false},
      {"extent in bytes overflows size_t, one head", "scores",
       [](AlibiCall& c) {
         c.n_heads = 1;
         c.row_stride = SIZE_MAX / 8;
       },
       false},
      {"scores one byte past a float boundary", "scores",
       [](AlibiCall& c) { c.scores = static_cast<char*>(c.scores) + 1; }, false},
      {"scores two bytes past a float boundary", "scores",
       [](AlibiCall& c) { c.scores = static_cast<char*>(c.scores) + 2; }, false},
  };
}

// Every invalid call, for both operations and both flag settings.
TEST_F(AlibiArgumentsTest, InvalidCallsAreRejectedAndWriteNothing) {
  for (AlibiOp op : {AlibiOp::kAdd, AlibiOp::kBias})
    for (unsigned flags : {0u, unsigned{POSENC_ALIBI_CAUSAL}}) {
      std::vector<float> bad_slopes = slopes_;
      for (const InvalidCase& bad : InvalidCases(bad_slopes)) {
        if (bad.add_only && op == AlibiOp::kBias) continue;
        AlibiCall call = ValidCall(op);
        call.flags = flags;
        bad.mutate(call);
        ExpectRejected(call, std::string(bad.what) + " flags=" + std::to_string(call.flags),
                       bad.argument);
        bad_slopes = slopes_;
      }
    }
}

// Scores laid out [n_q, H, n_k] (each row holds one row of every head) visit no element
// twice, but the header requires head_stride >= (n_q - 1) * row_stride + n_k whenever
// n_heads > 1, so they must be refused like any other stride the header excludes.
// [n_q, H, n_k]: heads nested inside rows, which the header allows as well.
TEST_F(AlibiArgumentsTest, HeadsInsideRowsAreAccepted) {
  for (AlibiOp op : {AlibiOp::kAdd, AlibiOp::kBias}) {
    AlibiCall call = ValidCall(op);
    call.n_q = 2;
    call.row_stride = kHeads * kKeys;
    call.head_stride = kKeys;
    const AlignedFloats before = buffer_;
    ASSERT_EQ(call.Invoke(), POSENC_OK) << OpName(op);
    for (size_t h = 0; h < kHeads; ++h)
      for (size_t i = 0; i < call.n_q; ++i)
        for (size_t j = 0; j < kKeys; ++j) {
          const size_t at = 16 + h * call.head_stride + i * call.row_stride + j;
          const float want =
              op == AlibiOp::kAdd
                  ? ReferenceAdd(before[at], call.scale, slopes_[h], call.q_offset + i, j, 0)
                  : ReferenceBias(slopes_[h], call.q_offset + i, j, 0);
          EXPECT_TRUE(BitwiseEqual(buffer_[at], want))
              << OpName(op) << " head " << h << " row " << i << " key " << j;
        }
  }
}

// Heads inside rows whose row stride is too short for every head: rows would overlap.
TEST_F(AlibiArgumentsTest, HeadsInsideRowsThatOverlapAreRejected) {
  for (AlibiOp op : {AlibiOp::kAdd, AlibiOp::kBias}) {
    AlibiCall call = ValidCall(op);
    call.n_q = 2;
    call.row_stride = kHeads * kKeys - 1;
    call.head_stride = kKeys;
    ExpectRejected(call, "[n_q, H, n_k] layout: row_stride 14, head_stride 5", "row_stride");
  }
}

TEST_F(AlibiArgumentsTest, EmptyWorkIsAValidNoOp) {
  const CallChanges<AlibiCall> no_ops = {
      {"all counts 0, NULL slopes and scores",
       [](AlibiCall& c) {
         c.n_heads = c.n_q = c.n_k = 0;
         c.slopes = nullptr;
         c.scores = nullptr;
       }},
      {"n_heads 0, NULL slopes and scores",
       [](AlibiCall& c) {
         c.n_heads = 0;
         c.slopes = nullptr;
         c.scores = nullptr;
       }},
      {"n_q 0, NULL scores",
       [](AlibiCall& c) {
         c.n_q = 0;
         c.scores = nullptr;
       }},
      {"n_k 0, NULL scores",
       [](AlibiCall& c) {
         c.n_k = 0;
         c.scores = nullptr;
       }},
      {"n_q 0", [](AlibiCall& c) { c.n_q = 0; }},
      {"n_k 0", [](AlibiCall& c) { c.n_k = 0; }},
      {"n_heads 0", [](AlibiCall& c) { c.n_heads = 0; }},
  };
  for (AlibiOp op : {AlibiOp::kAdd, AlibiOp::kBias})
    ExpectChangedCallsReturnAndWriteNothing(ValidCall(op), no_ops, POSENC_OK, buffer_,
                                            std::string(OpName(op)) + ": ");
}

// Strides the header leaves free for one row or one head, and the limits that are still
// valid: each call is accepted and gives the reference's values for the scores it was given.
TEST_F(AlibiArgumentsTest, ValidUnusualStridesAndLimitsAreAccepted) {
  const CallChanges<AlibiCall> valid = {
      {"one row, row_stride 0",
       [](AlibiCall& c) {
         c.n_q = 1;
         c.row_stride = 0;
         c.head_stride = kKeys;
       }},
      {"one row, row_stride 1 < n_k",
       [](AlibiCall& c) {
         c.n_q = 1;
         c.row_stride = 1;
         c.head_stride = kKeys;
       }},
      {"one head, head_stride 0",
       [](AlibiCall& c) {
         c.n_heads = 1;
         c.head_stride = 0;
       }},
      {"one head, head_stride SIZE_MAX",
       [](AlibiCall& c) {
         c.n_heads = 1;
         c.head_stride = SIZE_MAX;
       }},
      {"q_offset + n_q == 2^31", [](AlibiCall& c) { c.q_offset = kPositionLimit - kRows; }},
      {"row_stride == n_k, smallest head_stride",
       [](AlibiCall& c) {
         c.row_stride = kKeys;
         c.head_stride = (kRows - 1) * kKeys + kKeys;
       }},
      {"scale 0", [](AlibiCall& c) { c.scale = 0.0f; }},
      {"largest finite scale", [](AlibiCall& c) { c.scale = std::numeric_limits<float>::max(); }},
      {"CAUSAL", [](AlibiCall& c) { c.flags = POSENC_ALIBI_CAUSAL; }},
  };
  for (AlibiOp op : {AlibiOp::kAdd, AlibiOp::kBias})
    for (const auto& [what, mutate] : valid) {
      AlibiCall call = ValidCall(op);
      mutate(call);
      // Same scores, canonical strides: the expected result, from the reference.
      AlibiShape shape;
      shape.n_heads = call.n_heads;
      shape.n_q = call.n_q;
      shape.n_k = call.n_k;
      shape.q_offset = call.q_offset;
      shape.scale = call.scale;
      shape.flags = call.flags;
      shape.slopes.assign(slopes_.begin(), slopes_.begin() + call.n_heads);
      const AlibiProblem problem(shape, 5);
      // Copy the problem's dense scores into the call's strided places.
      auto at = [&](size_t h, size_t i, size_t j) -> float& {
        return scores()[h * call.head_stride + i * call.row_stride + j];
      };
      for (size_t h = 0; h < call.n_heads; ++h)
        for (size_t i = 0; i < call.n_q; ++i)
          for (size_t j = 0; j < call.n_k; ++j)
            at(h, i, j) = problem.input()[problem.Index(h, i, j)];
      const AlignedFloats reference = ReferenceOutput(problem, op);
      ASSERT_EQ(call.Invoke(), POSENC_OK) << OpName(op) << ": " << what;
      for (size_t h = 0; h < call.n_heads; ++h)
        for (size_t i = 0; i < call.n_q; ++i)
          for (size_t j = 0; j < call.n_k; ++j) {
            const float want = reference[problem.Index(h, i, j)];
            EXPECT_TRUE(BitwiseEqual(at(h, i, j), want) ||
                        (std::isnan(want) && std::isnan(at(h, i, j))))
                << OpName(op) << ": " << what << ": (" << h << ", " << i << ", " << j << ") got "
                << at(h, i, j) << ", expected " << want;
          }
    }
}

// posenc_alibi_slopes: the refused arguments write nothing.
TEST(AlibiSlopesArgumentsTest, InvalidCallsAreRejectedAndWriteNothing) {
  const float kSentinel = -12345.0f;
  const struct {
    const char* what;
    size_t n_heads;
    double max_bias;
    bool null_slopes;
    const char* argument;  // the argument posenc_last_error() names
  } cases[] = {
      {"n_heads 0", 0, 8.0, false, "n_heads"},
      {"max_bias 0", 8, 0.0, false, "max_bias"},
      {"max_bias -0", 8, -0.0, false, "max_bias"},
      {"max_bias negative", 8, -8.0, false, "max_bias"},
      {"max_bias smallest negative subnormal", 8, -std::numeric_limits<double>::denorm_min(), false,
       "max_bias"},
      {"max_bias NaN", 8, std::numeric_limits<double>::quiet_NaN(), false, "max_bias"},
      {"max_bias +inf", 8, std::numeric_limits<double>::infinity(), false, "max_bias"},
      {"max_bias -inf", 8, -std::numeric_limits<double>::infinity(), false, "max_bias"},
      {"NULL slopes", 8, 8.0, true, "slopes"},
      {"NULL slopes, n_heads 0", 0, 8.0, true, "slopes"},
  };
  for (const auto& c : cases) {
    std::vector<float> slopes(16, kSentinel);
    PrimeLastError();
    EXPECT_EQ(posenc_alibi_slopes(c.n_heads, c.max_bias, c.null_slopes ? nullptr : slopes.data()),
              POSENC_ERR_INVALID_ARGUMENT)
        << c.what;
    ExpectLastError("posenc_alibi_slopes", c.argument, c.what);
    for (size_t h = 0; h < slopes.size(); ++h)
      EXPECT_EQ(slopes[h], kSentinel) << c.what << ": slope " << h << " written";
  }
}

// Exactly n_heads slopes are written, and the smallest positive max_bias is valid.
TEST(AlibiSlopesArgumentsTest, WritesExactlyNHeadsSlopes) {
  for (size_t n : {1, 3, 8, 12}) {
    std::vector<float> slopes(n + 4, -1.0f);
    ASSERT_EQ(posenc_alibi_slopes(n, std::numeric_limits<double>::denorm_min(), slopes.data()),
              POSENC_OK);
    for (size_t h = 0; h < n; ++h) EXPECT_EQ(slopes[h], 1.0f) << "n=" << n << " head " << h;
    for (size_t h = n; h < slopes.size(); ++h) EXPECT_EQ(slopes[h], -1.0f) << "n=" << n;
  }
}

// posenc_alibi_slopes_ggml: the refused arguments write nothing.
TEST(AlibiSlopesArgumentsTest, InvalidGgmlCallsAreRejectedAndWriteNothing) {
  const float kSentinel = -12345.0f;
  const struct {
    const char* what;
    size_t n_heads;
    float max_bias;
    bool null_slopes;
    const char* argument;
  } cases[] = {
      {"n_heads 0", 0, 8.0f, false, "n_heads"},
      {"n_heads 2^32", size_t{1} << 32, 8.0f, false, "n_heads"},
      {"max_bias negative", 8, -8.0f, false, "max_bias"},
      {"max_bias NaN", 8, std::numeric_limits<float>::quiet_NaN(), false, "max_bias"},
      {"max_bias +inf", 8, std::numeric_limits<float>::infinity(), false, "max_bias"},
      {"NULL slopes", 8, 8.0f, true, "slopes"},
  };
  for (const auto& c : cases) {
    std::vector<float> slopes(16, kSentinel);
    PrimeLastError();
    EXPECT_EQ(
        posenc_alibi_slopes_ggml(c.n_heads, c.max_bias, c.null_slopes ? nullptr : slopes.data()),
        POSENC_ERR_INVALID_ARGUMENT)
        << c.what;
    ExpectLastError("posenc_alibi_slopes_ggml", c.argument, c.what);
    for (size_t h = 0; h < slopes.size(); ++h)
      EXPECT_EQ(slopes[h], kSentinel) << c.what << ": slope " << h << " written";
  }
}

}  // namespace
}  // namespace posenc_test
