// 64-bit sizes: every kernel family on a view of more than 2^31 (and past 2^32) elements,
// in a sparse mapping (MAP_NORESERVE, touched only where the kernel reads or writes), so
// that an index or offset computed in 32 bits anywhere would write to the wrong place. The
// touched elements are compared with the scalar variant on a small dense copy (or with the
// formula, for the bit-exact kernels), and the elements right before and after each of them
// must keep their sentinels. Skipped where such a mapping cannot be made (no mmap, little
// address space, an emulator that refuses it).
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test_support.h"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define POSENC_LARGE_HAVE_MMAP 1
#endif

namespace posenc_test {
namespace {

constexpr size_t k2p31 = size_t{1} << 31;
constexpr size_t k2p32 = size_t{1} << 32;

// A sparse float array of n elements, zero until written.
class SparseFloats {
 public:
  explicit SparseFloats(size_t n) : bytes_(n * sizeof(float)) {
#ifdef POSENC_LARGE_HAVE_MMAP
    if (sizeof(size_t) < 8) return;
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<float*>(p);
#endif
  }
  ~SparseFloats() {
#ifdef POSENC_LARGE_HAVE_MMAP
    if (data_ != nullptr) munmap(data_, bytes_);
#endif
  }
  SparseFloats(const SparseFloats&) = delete;
  SparseFloats& operator=(const SparseFloats&) = delete;

  bool ok() const { return data_ != nullptr; }
  float* data() { return data_; }
  float& operator[](size_t i) { return data_[i]; }

 private:
  size_t bytes_;
  float* data_ = nullptr;
};

#define POSENC_NEED_SPARSE(buffer, n)                                                   \
  if (!(buffer).ok())                                                                   \
  GTEST_SKIP() << "cannot map a sparse buffer of " << (n) << " floats (" << ((n) >> 28) \
               << " GiB) here (no mmap, too little address space, or an emulator refusing it)"

// Sentinels around the element range [begin, begin + n) of a sparse buffer: the `guard`
// elements before and after it hold NaNs tagged with their index.
void PlaceSentinels(SparseFloats& buf, size_t begin, size_t n, size_t guard) {
  for (size_t g = 1; g <= guard; ++g) {
    buf[begin - g] = NaNSentinel(begin - g);
    buf[begin + n - 1 + g] = NaNSentinel(begin + n - 1 + g);
  }
}
void ExpectSentinels(SparseFloats& buf, size_t begin, size_t n, size_t guard,
                     const std::string& what) {
  for (size_t g = 1; g <= guard; ++g) {
    EXPECT_TRUE(BitwiseEqual(buf[begin - g], NaNSentinel(begin - g)))
        << what << ": element " << g << " before written";
    EXPECT_TRUE(BitwiseEqual(buf[begin + n - 1 + g], NaNSentinel(begin + n - 1 + g)))
        << what << ": element " << g << " after written";
  }
}

constexpr size_t kGuard = 8;

// Mapping tens of GiB is cheap natively but costs about 20 ms per GiB under qemu-user, so a
// process that ctest started for one ISA (POSENC_ISA set: large.isa_<isa>) runs that ISA
// only; the plain run (POSENC_ISA unset) runs every available one.
class LargeTest : public EveryIsaTest {
 protected:
  void SetUp() override {
    const char* env = std::getenv("POSENC_ISA");
    posenc_isa forced;
    if (env != nullptr && *env != '\0' && posenc_isa_from_name(env, &forced) == POSENC_OK &&
        forced != isa())
      GTEST_SKIP() << "POSENC_ISA=" << env << ": " << posenc_isa_name(isa())
                   << " runs in its own process (large.isa_" << posenc_isa_name(isa()) << ")";
    EveryIsaTest::SetUp();
  }
};

// Q in [H, L, D] layout with head_stride > 2^31 (the second head starts past 2^31, its last
// token past 2^32) and token_stride ~2^30; K after it, [L, H, D] with token_stride > 2^31.
TEST_P(LargeTest, RopeViewsPast2To32Elements) {
  constexpr size_t kD = 40, kR = 32, kL = 3, kHq = 2, kHk = 1;
  const size_t q_token_stride = (size_t{1} << 30) + 3;
  const size_t q_head_stride = (kL - 1) * q_token_stride + kD + 101;  // > 2^31
  const size_t k_offset = kGuard + (kHq - 1) * q_head_stride + (kL - 1) * q_token_stride + kD +
                          kGuard + 5;  // > 3 * 2^31
  const size_t k_token_stride = k2p31 + 17;
  const size_t total = k_offset + (kL - 1) * k_token_stride + kD + kGuard;
  SparseFloats buf(total);
  POSENC_NEED_SPARSE(buf, total);

  // Head vectors by (view, token, head): offset in the sparse buffer.
  struct Head {
    size_t offset, dense;  // sparse offset, offset in the dense [L, Hq + Hk, D] copy
  };
  std::vector<Head> heads;
  for (size_t t = 0; t < kL; ++t) {
    for (size_t h = 0; h < kHq; ++h)
      heads.push_back({kGuard + t * q_token_stride + h * q_head_stride, (t * 3 + h) * kD});
    for (size_t h = 0; h < kHk; ++h)
      heads.push_back({k_offset + t * k_token_stride, (t * 3 + kHq + h) * kD});
  }
  ASSERT_GT(heads.back().offset, k2p32 + k2p31);

  PlanPtr plan = MakePlan(kR, 10000.0, 1.0);
  ASSERT_NE(plan, nullptr);
  const std::vector<float> values = RandomFloats(kL * 3 * kD, 31, -2.0f, 2.0f);
  for (unsigned flags : {0u, 1u, 2u, 4u}) {
    for (const Head& hd : heads) {
      std::memcpy(&buf[hd.offset], &values[hd.dense], kD * sizeof(float));
      PlaceSentinels(buf, hd.offset, kD, kGuard);
    }
    // Positions end at INT32_MAX, consecutive (the stepped path).
    const int32_t start = INT32_MAX - static_cast<int32_t>(kL) + 1;
    posenc_rope_tensor q = {buf.data() + kGuard, kHq, q_token_stride, q_head_stride};
    posenc_rope_tensor k = {buf.data() + k_offset, kHk, k_token_stride, kD};
    ASSERT_EQ(posenc_rope_f32(plan.get(), kD, kL, nullptr, start, &q, &k, flags), POSENC_OK);

    std::vector<float> dense = values;
    ASSERT_EQ(posenc_set_isa(POSENC_ISA_SCALAR), POSENC_OK);
    posenc_rope_tensor dq = {dense.data(), kHq, 3 * kD, kD};
    posenc_rope_tensor dk = {dense.data() + kHq * kD, kHk, 3 * kD, kD};
    ASSERT_EQ(posenc_rope_f32(plan.get(), kD, kL, nullptr, start, &dq, &dk, flags), POSENC_OK);
    ASSERT_EQ(posenc_set_isa(isa()), POSENC_OK);

    for (const Head& hd : heads) {
      const std::string what =
          "head at " + std::to_string(hd.offset) + " flags " + std::to_string(flags);
      double mag = 0;
      for (size_t d = 0; d < kR; ++d) mag = std::max(mag, std::fabs(double{values[hd.dense + d]}));
      for (size_t d = 0; d < kD; ++d)
        EXPECT_NEAR(buf[hd.offset + d], dense[hd.dense + d], POSENC_ROPE_SIMD_TOLERANCE * 2 * mag)
            << what << " d " << d;
      ExpectSentinels(buf, hd.offset, kD, kGuard, what);
    }
  }
}

struct SinusoidPlanDeleter {
  void operator()(posenc_sinusoid_plan* plan) const { posenc_sinusoid_plan_destroy(plan); }
};

// Rows 2^31 + 9 elements apart: the last row starts past 2^32.
TEST_P(LargeTest, SinusoidRowsPast2To32Elements) {
  constexpr size_t kDim = 67, kRows = 3;
  const size_t stride = k2p31 + 9;
  const size_t total = kGuard + (kRows - 1) * stride + kDim + kGuard;
  SparseFloats buf(total);
  POSENC_NEED_SPARSE(buf, total);
  posenc_sinusoid_plan* raw = nullptr;
  ASSERT_EQ(posenc_sinusoid_plan_create(&raw, kDim, 10000.0), POSENC_OK);
  std::unique_ptr<posenc_sinusoid_plan, SinusoidPlanDeleter> plan(raw);
  const std::vector<float> x = RandomFloats(kRows * kDim, 7, -1.0f, 1.0f);
  const int32_t start = INT32_MAX - static_cast<int32_t>(kRows) + 1;

  for (bool add : {false, true})
    for (unsigned flags : {0u, 1u, 2u, 4u}) {
      for (size_t r = 0; r < kRows; ++r) {
        std::memcpy(&buf[kGuard + r * stride], &x[r * kDim], kDim * sizeof(float));
        PlaceSentinels(buf, kGuard + r * stride, kDim, kGuard);
      }
      std::vector<float> dense = x;
      auto call = [&](float* out, size_t row_stride) {
        return add ? posenc_sinusoid_add_f32(plan.get(), kRows, nullptr, start, out, row_stride,
                                             flags)
                   : posenc_sinusoid_fill_f32(plan.get(), kRows, nullptr, start, out, row_stride,
                                              flags);
      };
      ASSERT_EQ(call(buf.data() + kGuard, stride), POSENC_OK);
      ASSERT_EQ(posenc_set_isa(POSENC_ISA_SCALAR), POSENC_OK);
      ASSERT_EQ(call(dense.data(), 0), POSENC_OK);
      ASSERT_EQ(posenc_set_isa(isa()), POSENC_OK);
      for (size_t r = 0; r < kRows; ++r) {
        const std::string what = std::string(add ? "add" : "fill") + " row " + std::to_string(r) +
                                 " flags " + std::to_string(flags);
        for (size_t c = 0; c < kDim; ++c)
          EXPECT_NEAR(buf[kGuard + r * stride + c], dense[r * kDim + c],
                      POSENC_SINUSOID_SIMD_TOLERANCE + 0x1p-23)
              << what << " column " << c;
        ExpectSentinels(buf, kGuard + r * stride, kDim, kGuard, what);
      }
    }
}

// Heads 2^31 + 13 elements apart ([H, n_q, n_k]: the last head past 2^32), and rows 2^31 + 13
// apart ([n_q, H, n_k]: the last row past 2^31):
// bit-identical to the formula, which every variant follows exactly.
TEST_P(LargeTest, AlibiHeadsAndRowsPast2To32Elements) {
  constexpr size_t kH = 3, kQ = 2, kK = 37, kRowGap = kK + 2 * kGuard + 3;
  const size_t big = k2p31 + 13;
  std::vector<float> slopes(kH);
  ASSERT_EQ(posenc_alibi_slopes(kH, 8.0, slopes.data()), POSENC_OK);
  const std::vector<float> scores = RandomFloats(kH * kQ * kK, 11, -3.0f, 3.0f);
  for (bool heads_outer : {true, false}) {
    const size_t head_stride = heads_outer ? big : kRowGap;
    const size_t row_stride = heads_outer ? kRowGap : big;
    const size_t last = (kH - 1) * head_stride + (kQ - 1) * row_stride;
    const size_t total = kGuard + last + kK + kGuard;
    SparseFloats buf(total);
    POSENC_NEED_SPARSE(buf, total);
    ASSERT_GT(last, k2p31);
    for (bool bias : {false, true})
      for (unsigned flags : {0u, unsigned{POSENC_ALIBI_CAUSAL}}) {
        const std::string what = std::string(heads_outer ? "[H,Q,K]" : "[Q,H,K]") +
                                 (bias ? " bias" : " add") + " flags " + std::to_string(flags);
        auto at = [&](size_t h, size_t i) { return kGuard + h * head_stride + i * row_stride; };
        for (size_t h = 0; h < kH; ++h)
          for (size_t i = 0; i < kQ; ++i) {
            std::memcpy(&buf[at(h, i)], &scores[(h * kQ + i) * kK], kK * sizeof(float));
            PlaceSentinels(buf, at(h, i), kK, kGuard);
          }
        const size_t q_offset = kK - kQ;  // decode-like: the last query sees every key
        const float scale = 0.25f;
        if (bias)
          ASSERT_EQ(posenc_alibi_bias_f32(slopes.data(), kH, kQ, kK, q_offset, buf.data() + kGuard,
                                          head_stride, row_stride, flags),
                    POSENC_OK);
        else
          ASSERT_EQ(posenc_alibi_add_f32(slopes.data(), kH, kQ, kK, q_offset, buf.data() + kGuard,
                                         head_stride, row_stride, scale, flags),
                    POSENC_OK);
        for (size_t h = 0; h < kH; ++h)
          for (size_t i = 0; i < kQ; ++i) {
            for (size_t j = 0; j < kK; ++j) {
              const size_t qpos = q_offset + i;
              // Each operation rounded to float (volatile: no contraction into an FMA).
              const volatile float distance = static_cast<float>(qpos > j ? qpos - j : j - qpos);
              const volatile float b = slopes[h] * distance;
              const volatile float scaled = scale * scores[(h * kQ + i) * kK + j];
              float expected = bias ? -b : scaled - b;
              if ((flags & POSENC_ALIBI_CAUSAL) && j > qpos) expected = -INFINITY;
              EXPECT_TRUE(BitwiseEqual(buf[at(h, i) + j], expected))
                  << what << " h " << h << " i " << i << " j " << j << ": " << buf[at(h, i) + j]
                  << " vs " << expected;
            }
            ExpectSentinels(buf, at(h, i), kK, kGuard, what + " h " + std::to_string(h));
          }
      }
  }
}

// Learned rows gathered from tables of more than 2^31 elements into embeddings 2^30 + 3
// elements apart (the last token past 2^31): a table of 2^31 rows of 2 (its last position
// is INT32_MAX), and a table of 2^27 + 1 rows of 19 elements 32 apart (rows wider than every
// vector, position * stride past 2^32).
TEST_P(LargeTest, LearnedTablesOfMoreThan2To31Elements) {
  constexpr size_t kTokens = 4;
  const size_t x_stride = (size_t{1} << 30) + 3;
  struct Table {
    size_t max_pos, dim, stride;
    int32_t positions[kTokens];
  };
  const Table tables[] = {
      {k2p31, 2, 2, {INT32_MAX, 0, INT32_MAX - 1, 1 << 30}},
      {(size_t{1} << 27) + 1, 19, 32, {1 << 27, 0, (1 << 27) - 1, 12345}},
  };
  // One x mapping for both tables (the wider rows).
  const size_t x_total = kGuard + (kTokens - 1) * x_stride + 19 + kGuard;
  SparseFloats x(x_total);
  POSENC_NEED_SPARSE(x, x_total);
  for (const Table& tb : tables) {
    const size_t table_total = (tb.max_pos - 1) * tb.stride + tb.dim;
    ASSERT_GT(table_total, k2p31);
    SparseFloats table(table_total);
    POSENC_NEED_SPARSE(table, table_total);
    // consecutive: start_pos = max_pos - kTokens, the last token gathers the last row.
    for (bool consecutive : {false, true}) {
      const int32_t start = static_cast<int32_t>(tb.max_pos - kTokens);
      int32_t pos[kTokens];
      for (size_t t = 0; t < kTokens; ++t)
        pos[t] = consecutive ? start + static_cast<int32_t>(t) : tb.positions[t];
      const std::vector<float> x_values = RandomFloats(kTokens * tb.dim, 13, -1.0f, 1.0f);
      const std::vector<float> rows = RandomFloats(kTokens * tb.dim, 14, -1.0f, 1.0f);
      for (size_t t = 0; t < kTokens; ++t) {
        const size_t row = static_cast<size_t>(pos[t]) * tb.stride;
        std::memcpy(&table[row], &rows[t * tb.dim], tb.dim * sizeof(float));
        std::memcpy(&x[kGuard + t * x_stride], &x_values[t * tb.dim], tb.dim * sizeof(float));
        PlaceSentinels(x, kGuard + t * x_stride, tb.dim, kGuard);
      }
      ASSERT_EQ(
          posenc_learned_add_f32(table.data(), tb.max_pos, tb.stride, tb.dim, kTokens,
                                 consecutive ? nullptr : pos, start, x.data() + kGuard, x_stride),
          POSENC_OK);
      for (size_t t = 0; t < kTokens; ++t) {
        const std::string what = "max_pos " + std::to_string(tb.max_pos) + " dim " +
                                 std::to_string(tb.dim) + " token " + std::to_string(t) +
                                 " position " + std::to_string(pos[t]);
        for (size_t j = 0; j < tb.dim; ++j) {
          const volatile float sum = x_values[t * tb.dim + j] + rows[t * tb.dim + j];
          EXPECT_TRUE(BitwiseEqual(x[kGuard + t * x_stride + j], sum)) << what << " j " << j;
        }
        ExpectSentinels(x, kGuard + t * x_stride, tb.dim, kGuard, what);
      }
    }
  }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(LargeTest);

}  // namespace
}  // namespace posenc_test
