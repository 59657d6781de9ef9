// Hostile input to every public kernel entry point: what the argument-check and variant
// suites do not cover already. Where each item of the hostile-input list is tested:
//  - NULL pointers with zero and non-zero sizes: rope_errors_test (InvalidCalls...,
//    EmptyWorkIsAValidNoOp), sinusoid_errors_test (same names, plus NULL timesteps and the
//    plan constructors/queries), alibi_errors_test (slopes, scores, posenc_alibi_slopes),
//    learned_test (LearnedArgumentsTest), rope_plan_test, api_test (posenc_isa_from_name).
//  - Sizes whose byte counts overflow size_t or ptrdiff_t through a large stride: the
//    *_errors_test tables and learned_test. Through large counts with small strides (many
//    tokens, heads or rows), with every pointer on an inaccessible page so that any read of
//    positions, timesteps, slopes, table or data before the checks kills the test: here
//    (HostileHugeCounts.*).
//  - Strides that overlap rows/heads: rope_errors_test (tokens overlap heads, [H,L,D]
//    overlap, K inside Q), sinusoid_errors_test (0 < row_stride < d), alibi_errors_test
//    (head_stride one short, HeadsInsideRowsThatOverlapAreRejected), learned_test
//    (stride < dim, x inside the table).
//  - rotary_dim odd, 0 or too large: rope_plan_test (kBadRotaryDims); rotary_dim >
//    head_dim: rope_errors_test ("head_dim < rotary_dim").
//  - Head counts 0 (valid no-op): rope_errors_test and alibi_errors_test
//    (EmptyWorkIsAValidNoOp).
//  - Positions INT32_MIN/INT32_MAX against the scalar variant: rope_variants_test and
//    sinusoid_variants_test (runs ending at INT32_MAX, jumps to INT32_MIN), learned_test
//    (rejected outside the table); ALiBi query positions up to 2^31 and learned positions
//    near INT32_MAX against the scalar variant: here (AlibiAtThePositionLimit) and
//    large_test (a table of 2^31 rows).
//  - NaN/Inf data: rope_variants_test (NonFinite..., only the elements a NaN feeds),
//    sinusoid_variants_test (add), alibi_variants_test, learned_test
//    (NonFiniteValuesPropagate). Subnormal data: learned_test (its value generator); RoPE,
//    sinusoid add and ALiBi: here (*Subnormal*).
//  - NaN/Inf parameters: rope_plan_test (base, frequencies, attention factor),
//    sinusoid_errors_test (base, frequencies, timesteps), alibi_errors_test (slopes, scale,
//    max_bias). Subnormal but valid parameters (attention factor, ALiBi scale and slopes,
//    timesteps): here.
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_support.h"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define POSENC_HOSTILE_HAVE_MMAP 1
#endif

namespace posenc_test {
namespace {

constexpr float kSubnormal = 1e-40f;
constexpr double kTinyAbs = 8.0 * std::numeric_limits<float>::denorm_min();

// One page nobody may read or write: a call that touches a pointer into it dies.
class InaccessiblePage {
 public:
  InaccessiblePage() {
#ifdef POSENC_HOSTILE_HAVE_MMAP
    size_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base_ = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
#endif
  }
  ~InaccessiblePage() {
#ifdef POSENC_HOSTILE_HAVE_MMAP
    if (base_ != nullptr) munmap(base_, size_);
#endif
  }
  InaccessiblePage(const InaccessiblePage&) = delete;
  InaccessiblePage& operator=(const InaccessiblePage&) = delete;

  bool ok() const { return base_ != nullptr; }
  float* floats() { return reinterpret_cast<float*>(base_); }
  int32_t* ints() { return reinterpret_cast<int32_t*>(base_ + 64); }

 private:
  size_t size_ = 0;
  char* base_ = nullptr;
};

#define POSENC_NEED_INACCESSIBLE_PAGE(page) \
  if (!(page).ok()) GTEST_SKIP() << "no inaccessible page on this platform"

constexpr size_t kP62 = size_t{1} << 62;  // elements whose byte count is 2^64

// ----------------------------------------------------------------------------------------
// Huge counts with small strides: rejected before any pointer is dereferenced.

TEST(HostileHugeCounts, RopeTokensAndHeads) {
  InaccessiblePage page;
  POSENC_NEED_INACCESSIBLE_PAGE(page);
  static_assert(sizeof(size_t) == 8, "the sizes below assume a 64-bit size_t");
  PlanPtr plan = MakePlan(8, 10000.0, 1.0);
  ASSERT_NE(plan, nullptr);
  float* data = page.floats();
  const int32_t* positions = page.ints();
  struct Case {
    const char* what;
    size_t n_tokens;
    posenc_rope_tensor q;
    posenc_rope_tensor k;
    bool has_k;
  };
  const Case cases[] = {
      {"n_tokens * token_stride overflows size_t", SIZE_MAX / 4, {data, 1, 16, 8}, {}, false},
      {"elements fit, bytes overflow size_t (tokens)",
       (SIZE_MAX / 4) / 16 + 2,
       {data, 1, 16, 8},
       {},
       false},
      {"2^59 tokens of 8 elements (2^64 bytes)", kP62 / 8, {data, 1, 8, 8}, {}, false},
      {"2^62 Q heads, one token", 1, {data, kP62, 8, 8}, {}, false},
      {"2^62 K heads, one token", 1, {data, 1, 8, 8}, {data + 16, kP62, 8, 8}, true},
      {"SIZE_MAX tokens", SIZE_MAX, {data, 1, 8, 8}, {}, false},
      {"SIZE_MAX K heads", 2, {data, 1, 8, 8}, {data + 16, SIZE_MAX, 8, 8}, true},
  };
  for (const Case& c : cases)
    for (unsigned flags : {0u, 1u, 2u, 4u})
      EXPECT_EQ(posenc_rope_f32(plan.get(), 8, c.n_tokens, positions, 0, &c.q,
                                c.has_k ? &c.k : nullptr, flags),
                POSENC_ERR_INVALID_ARGUMENT)
          << c.what << " flags " << flags;
}

struct SinusoidPlanDeleter {
  void operator()(posenc_sinusoid_plan* plan) const { posenc_sinusoid_plan_destroy(plan); }
};
using SinusoidPlanPtr = std::unique_ptr<posenc_sinusoid_plan, SinusoidPlanDeleter>;

SinusoidPlanPtr MakeSinusoidPlan(size_t dim) {
  posenc_sinusoid_plan* plan = nullptr;
  EXPECT_EQ(posenc_sinusoid_plan_create(&plan, dim, 10000.0), POSENC_OK);
  return SinusoidPlanPtr(plan);
}

TEST(HostileHugeCounts, SinusoidRows) {
  InaccessiblePage page;
  POSENC_NEED_INACCESSIBLE_PAGE(page);
  SinusoidPlanPtr plan = MakeSinusoidPlan(8);
  ASSERT_NE(plan, nullptr);
  float* out = page.floats();
  const int32_t* positions = page.ints();
  const float* timesteps = page.floats() + 32;
  const std::pair<size_t, size_t> cases[] = {
      // {n_rows, row_stride}
      {kP62 / 8, 0},                // dense: 2^62 elements, 2^64 bytes
      {kP62 / 16 + 1, 16},          // 2^62 + 8 elements
      {SIZE_MAX / 4, 8},            // elements overflow
      {SIZE_MAX, 0},                // n_rows * d overflows
      {(SIZE_MAX / 4) / 8 + 2, 8},  // elements fit, bytes do not
  };
  for (auto [rows, stride] : cases)
    for (unsigned flags : {0u, 1u, 2u, 4u}) {
      const std::string what = "rows " + std::to_string(rows) + " stride " + std::to_string(stride);
      EXPECT_EQ(posenc_sinusoid_fill_f32(plan.get(), rows, positions, 0, out, stride, flags),
                POSENC_ERR_INVALID_ARGUMENT)
          << "fill " << what;
      EXPECT_EQ(posenc_sinusoid_add_f32(plan.get(), rows, positions, 0, out, stride, flags),
                POSENC_ERR_INVALID_ARGUMENT)
          << "add " << what;
      EXPECT_EQ(posenc_sinusoid_fill_timesteps_f32(plan.get(), rows, timesteps, out, stride, flags),
                POSENC_ERR_INVALID_ARGUMENT)
          << "timesteps " << what;
    }
}

TEST(HostileHugeCounts, AlibiHeadsRowsAndColumns) {
  InaccessiblePage page;
  POSENC_NEED_INACCESSIBLE_PAGE(page);
  const float* slopes = page.floats();
  float* scores = page.floats() + 64;
  struct Case {
    const char* what;
    size_t n_heads, n_q, n_k, head_stride, row_stride;
  };
  const Case cases[] = {
      {"2^62 heads of one element", kP62, 1, 1, 1, 1},
      {"2^61 heads of two elements", kP62 / 2, 1, 2, 2, 2},
      {"SIZE_MAX heads", SIZE_MAX, 1, 1, 1, 1},
      {"[H, n_q, n_k] of 2^62 elements", 4, size_t{1} << 30, size_t{1} << 30, size_t{1} << 60,
       size_t{1} << 30},
      {"[n_q, H, n_k], 2^62 heads", kP62, 2, 1, 1, kP62},
  };
  for (const Case& c : cases)
    for (unsigned flags : {0u, unsigned{POSENC_ALIBI_CAUSAL}}) {
      EXPECT_EQ(posenc_alibi_add_f32(slopes, c.n_heads, c.n_q, c.n_k, 0, scores, c.head_stride,
                                     c.row_stride, 1.0f, flags),
                POSENC_ERR_INVALID_ARGUMENT)
          << "add: " << c.what << " flags " << flags;
      EXPECT_EQ(posenc_alibi_bias_f32(slopes, c.n_heads, c.n_q, c.n_k, 0, scores, c.head_stride,
                                      c.row_stride, flags),
                POSENC_ERR_INVALID_ARGUMENT)
          << "bias: " << c.what << " flags " << flags;
    }
}

// The table's extent overflows: rejected without reading the table or writing x (the
// positions, all inside [0, max_pos), are read: the contract checks them first).
TEST(HostileHugeCounts, LearnedTable) {
  InaccessiblePage page;
  POSENC_NEED_INACCESSIBLE_PAGE(page);
  const float* table = page.floats();
  float* x = page.floats() + 256;
  const int32_t positions[2] = {0, INT32_MAX};
  struct Case {
    const char* what;
    size_t max_pos, table_stride, dim;
  };
  const Case cases[] = {
      {"table of 2^62 one-element rows", kP62, 0, 1},
      {"table of 2^61 rows of 2", kP62 / 2, 2, 2},
      {"table of SIZE_MAX rows", SIZE_MAX, 0, 1},
      {"max_pos * dim overflows size_t", SIZE_MAX / 2, 0, 4},
      {"elements fit, bytes do not", (SIZE_MAX / 4) / 4 + 2, 4, 4},
  };
  for (const Case& c : cases)
    EXPECT_EQ(
        posenc_learned_add_f32(table, c.max_pos, c.table_stride, c.dim, 2, positions, 0, x, 0),
        POSENC_ERR_INVALID_ARGUMENT)
        << c.what;
}

// A token count no buffer can hold is rejected by the extent checks before any of the
// n_tokens positions is read (with dim > 0; with dim 0 the contract checks every position).
// This crashed before dispatch/api_learned.c checked the buffers first.
TEST(HostileHugeCounts, LearnedTokenCountIsRejectedBeforePositionsAreRead) {
  InaccessiblePage page;
  POSENC_NEED_INACCESSIBLE_PAGE(page);
  const float* table = page.floats();
  float* x = page.floats() + 256;
  const int32_t* positions = page.ints();
  struct Case {
    const char* what;
    size_t n_tokens, x_stride;
  };
  const Case cases[] = {
      {"2^62 tokens of one element", kP62, 0},
      {"2^60 tokens, x_stride 4", kP62 / 4, 4},
      {"SIZE_MAX tokens", SIZE_MAX, 0},
  };
  for (const Case& c : cases)
    EXPECT_EQ(posenc_learned_add_f32(table, 8, 0, 1, c.n_tokens, positions, 0, x, c.x_stride),
              POSENC_ERR_INVALID_ARGUMENT)
        << c.what;
}

// ----------------------------------------------------------------------------------------
// Subnormal data and parameters, per ISA against the scalar variant.

class HostileDataTest : public EveryIsaTest {
 protected:
  // Runs `call` with the scalar variant, then with this test's ISA.
  template <typename Call>
  void WithScalarThenIsa(const Call& call) {
    ASSERT_EQ(posenc_set_isa(POSENC_ISA_SCALAR), POSENC_OK);
    call(true);
    ASSERT_EQ(posenc_set_isa(isa()), POSENC_OK);
    call(false);
  }
};

// Subnormal values, mixed with zeros of both signs and ordinary ones.
std::vector<float> SubnormalMix(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (i % 5) {
      case 0:
      case 1:
      case 2:
        v[i] = kSubnormal * u(rng);
        break;
      case 3:
        v[i] = (i & 8) ? -0.0f : std::numeric_limits<float>::denorm_min();
        break;
      default:
        v[i] = u(rng);
    }
  }
  return v;
}

TEST_P(HostileDataTest, RopeSubnormalDataStaysFiniteAndCloseToScalar) {
  constexpr size_t kD = 72, kR = 64, kH = 3, kL = 37;
  for (double att : {1.0, 1e-30, static_cast<double>(std::numeric_limits<float>::denorm_min())}) {
    PlanPtr plan = MakePlan(kR, 10000.0, att);
    ASSERT_NE(plan, nullptr);
    const std::vector<float> input = SubnormalMix(kL * kH * kD, 17);
    for (unsigned flags : {0u, 1u, 2u, 4u, 7u}) {
      std::vector<float> ref = input, got = input;
      WithScalarThenIsa([&](bool scalar) {
        posenc_rope_tensor q = {(scalar ? ref : got).data(), kH, kH * kD, kD};
        ASSERT_EQ(posenc_rope_f32(plan.get(), kD, kL, nullptr, INT32_MAX - int32_t{kL} + 1, &q,
                                  nullptr, flags),
                  POSENC_OK);
      });
      for (size_t t = 0; t < kL; ++t)
        for (size_t h = 0; h < kH; ++h)
          for (size_t d = 0; d < kD; ++d) {
            const size_t i = (t * kH + h) * kD + d;
            ASSERT_TRUE(std::isfinite(got[i])) << "t " << t << " h " << h << " d " << d;
            if (d >= kR) {
              EXPECT_TRUE(BitwiseEqual(got[i], input[i])) << "tail touched at " << i;
              continue;
            }
            // |u| + |v| of the pair bounds the error, for either layout: the whole head's
            // largest magnitude times two is a safe stand-in.
            double mag = 0;
            for (size_t e = 0; e < kR; ++e)
              mag = std::max(mag, std::fabs(static_cast<double>(input[(t * kH + h) * kD + e])));
            const double bound = POSENC_ROPE_SIMD_TOLERANCE * att * 2 * mag + kTinyAbs;
            EXPECT_NEAR(got[i], ref[i], bound)
                << "t " << t << " h " << h << " d " << d << " att " << att << " flags " << flags;
          }
    }
  }
}

TEST_P(HostileDataTest, SinusoidAddSubnormalEmbeddingsAndTimesteps) {
  constexpr size_t kDim = 45, kRows = 21;
  SinusoidPlanPtr plan = MakeSinusoidPlan(kDim);
  ASSERT_NE(plan, nullptr);
  const std::vector<float> x = SubnormalMix(kRows * kDim, 5);
  for (unsigned flags : {0u, 1u, 2u, 4u}) {
    std::vector<float> ref = x, got = x;
    WithScalarThenIsa([&](bool scalar) {
      ASSERT_EQ(posenc_sinusoid_add_f32(plan.get(), kRows, nullptr, INT32_MIN,
                                        (scalar ? ref : got).data(), 0, flags),
                POSENC_OK);
    });
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << i;
      // Tolerance of the value plus one rounding of the sum (|sum| <= 1 + |x|).
      EXPECT_NEAR(got[i], ref[i], POSENC_SINUSOID_SIMD_TOLERANCE + 0x1p-24 * 2 + kTinyAbs)
          << "element " << i << " flags " << flags;
    }
  }
  // Subnormal (and zero) timesteps are valid: sin ~ t * w, cos ~ 1.
  std::vector<float> timesteps = {kSubnormal, -kSubnormal, std::numeric_limits<float>::denorm_min(),
                                  -0.0f, 0.0f};
  std::vector<float> ref(timesteps.size() * kDim), got(ref.size());
  WithScalarThenIsa([&](bool scalar) {
    ASSERT_EQ(posenc_sinusoid_fill_timesteps_f32(plan.get(), timesteps.size(), timesteps.data(),
                                                 (scalar ? ref : got).data(), 0, 0),
              POSENC_OK);
  });
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << i;
    EXPECT_NEAR(got[i], ref[i], POSENC_SINUSOID_SIMD_TOLERANCE) << i;
    EXPECT_NEAR(got[i], (i % kDim) % 2 == 0 ? 0.0 : 1.0, 1e-6) << i;
  }
}

// ALiBi promises bit-identical results, also for subnormal scores, slopes and scale.
TEST_P(HostileDataTest, AlibiSubnormalScoresSlopesAndScaleAreBitIdentical) {
  constexpr size_t kH = 3, kQ = 5, kK = 37;
  const std::vector<float> scores = SubnormalMix(kH * kQ * kK, 9);
  const std::vector<float> slopes = {kSubnormal, std::numeric_limits<float>::denorm_min(), 0.5f};
  for (float scale : {1.0f, kSubnormal, 1e-20f, -0.0f})
    for (unsigned flags : {0u, unsigned{POSENC_ALIBI_CAUSAL}}) {
      std::vector<float> ref = scores, got = scores, ref_bias(scores.size()),
                         got_bias(scores.size());
      WithScalarThenIsa([&](bool scalar) {
        ASSERT_EQ(posenc_alibi_add_f32(slopes.data(), kH, kQ, kK, kK - kQ,
                                       (scalar ? ref : got).data(), kQ * kK, kK, scale, flags),
                  POSENC_OK);
        ASSERT_EQ(posenc_alibi_bias_f32(slopes.data(), kH, kQ, kK, kK - kQ,
                                        (scalar ? ref_bias : got_bias).data(), kQ * kK, kK, flags),
                  POSENC_OK);
      });
      for (size_t i = 0; i < scores.size(); ++i) {
        EXPECT_TRUE(BitwiseEqual(got[i], ref[i]))
            << "add " << i << ": " << got[i] << " vs " << ref[i] << " scale " << scale;
        EXPECT_TRUE(BitwiseEqual(got_bias[i], ref_bias[i])) << "bias " << i;
      }
    }
}

// Query positions up to the limit 2^31 (q_offset + n_q == 2^31) and keys far behind them:
// distances above 2^24 that float cannot hold exactly, bit-identical to the scalar variant.
TEST_P(HostileDataTest, AlibiAtThePositionLimit) {
  constexpr size_t kH = 2, kQ = 3, kK = 41;
  const size_t q_offset = (size_t{1} << 31) - kQ;
  std::vector<float> slopes(kH);
  ASSERT_EQ(posenc_alibi_slopes(kH, 8.0, slopes.data()), POSENC_OK);
  const std::vector<float> scores = RandomFloats(kH * kQ * kK, 3, -4.0f, 4.0f);
  for (unsigned flags : {0u, unsigned{POSENC_ALIBI_CAUSAL}}) {
    std::vector<float> ref = scores, got = scores;
    WithScalarThenIsa([&](bool scalar) {
      ASSERT_EQ(posenc_alibi_add_f32(slopes.data(), kH, kQ, kK, q_offset,
                                     (scalar ? ref : got).data(), kQ * kK, kK, 0.125f, flags),
                POSENC_OK);
    });
    for (size_t i = 0; i < scores.size(); ++i) {
      ASSERT_TRUE(BitwiseEqual(got[i], ref[i])) << i << ": " << got[i] << " vs " << ref[i];
      const size_t h = i / (kQ * kK), q = (i / kK) % kQ, j = i % kK;
      // Each operation rounded to float on its own (volatile: no contraction into an FMA).
      const volatile float distance = static_cast<float>(q_offset + q - j);
      const volatile float scaled = 0.125f * scores[i];
      const volatile float bias = slopes[h] * distance;
      EXPECT_EQ(got[i], scaled - bias) << i;
    }
  }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(HostileDataTest);

}  // namespace
}  // namespace posenc_test
