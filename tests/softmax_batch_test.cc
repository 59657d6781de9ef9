// posenc_softmax_batched, ggml's mask broadcasting (params.mask_n_heads, mask_n_batch) and
// int64 positions (params.kpos64, qpos64), once per ISA:
//  - a batched call equals, bit for bit, one posenc_softmax call per (batch, head) with
//    that head's mask slice picked by ggml's modulo rule (h % mask_n_heads, b %
//    mask_n_batch), its slope and sink: every type pair, layouts with gaps (heads in rows
//    for y), x repeated over batches (batch stride 0), in place; the gaps of y untouched;
//  - int64 positions give the int32 call's result bit for bit (stack and heap conversion);
//  - every refusal (a mask that does not broadcast, kpos with kpos64, int64 out of range,
//    overlapping y batches, a negative kpos visible in one mask batch, ...) writes nothing.
#include <posenc.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_support.h"

namespace posenc_test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

size_t ElemSize(posenc_dtype t) { return t == POSENC_DTYPE_F32 ? 4 : 2; }

// Bytes in a float-aligned block, filled with a canary pattern.
struct Bytes {
  explicit Bytes(size_t n) : words((n + 3) / 4 + 1) { std::memset(words.data(), 0xA5, n + 4); }
  char* data() { return reinterpret_cast<char*>(words.data()); }
  std::vector<float> words;
};

// bf16 bits of a float, truncated (the values used are exact in bf16 anyway).
uint16_t Bf16Bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return static_cast<uint16_t>(u >> 16);
}

void StoreScore(char* base, size_t e, posenc_dtype t, float v) {
  if (t == POSENC_DTYPE_F32) {
    std::memcpy(base + e * 4, &v, 4);
  } else {  // bf16 only (x is f32 or bf16 here)
    const uint16_t b = Bf16Bits(v);
    std::memcpy(base + e * 2, &b, 2);
  }
}

// Mask values exact in f16 and f32: f16 bits and the float.
struct MaskValue {
  uint16_t f16;
  float f32;
};
const MaskValue kMaskValues[] = {{0x0000, 0.0f}, {0x3C00, 1.0f},  {0xBC00, -1.0f},
                                 {0x3800, 0.5f}, {0xC000, -2.0f}, {0xFC00, -kInf},
                                 {0x0000, 0.0f}, {0xB800, -0.5f}};

struct Options {
  const char* name;
  size_t n_batch, n_heads, n_q;
  unsigned flags = 0;
  bool slopes = false, sinks = false, kpos = false, qpos = false;
  bool mask = false;
  posenc_dtype mask_dt = POSENC_DTYPE_F32;
  size_t mask_n_heads = 0;     // as params.mask_n_heads
  bool mask_per_head = false;  // mask_n_heads 0: a non-zero head stride (one per head)
  size_t mask_n_batch = 0;
  bool x_repeat = false;  // x batch_stride 0
  bool in_place = false;
};

class SoftmaxBatchTest : public EveryIsaTest {};

// The batched call against one posenc_softmax call per (batch, head).
void CheckBatched(const Options& o, size_t n_k, posenc_dtype xt, posenc_dtype yt, uint32_t seed) {
  SCOPED_TRACE(std::string(o.name) + " n_k " + std::to_string(n_k) + " x " + std::to_string(xt) +
               " y " + std::to_string(yt));
  std::mt19937 rng(seed);
  const size_t B = o.n_batch, H = o.n_heads, Q = o.n_q, K = n_k;
  const size_t xs = ElemSize(xt), ys = ElemSize(yt);
  // x: [B, H, Q, K] with gaps; y: heads in rows [B, Q, H, K] with gaps (in place: x's).
  const size_t x_rs = K + 3, x_hs = Q * x_rs + 1, x_bs = o.x_repeat ? 0 : H * x_hs + 2;
  const size_t y_hs = o.in_place ? x_hs : K + 1, y_rs = o.in_place ? x_rs : H * y_hs + 2;
  const size_t y_bs = o.in_place ? x_bs : Q * y_rs + 5;
  const size_t x_elems = (o.x_repeat ? 1 : B) * (H * x_hs + 2) + 8;
  const size_t y_elems = o.in_place ? x_elems : B * y_bs + 8;

  Bytes x(x_elems * xs);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (size_t e = 0; e < x_elems; ++e) StoreScore(x.data(), e, xt, normal(rng));

  // The mask: mask_batches x mask_heads slices of Q rows, gaps between.
  const size_t m_batches = o.mask_n_batch > 1 ? o.mask_n_batch : 1;
  const size_t m_heads = o.mask_n_heads ? o.mask_n_heads : o.mask_per_head ? H : 1;
  const size_t m_rs = K + 2, m_hs = Q * m_rs + 1, m_bs = m_heads * m_hs + 3;
  const size_t ms = ElemSize(o.mask_dt);
  Bytes mask(m_batches * m_bs * ms + 16);
  std::uniform_int_distribution<size_t> pick(0, std::size(kMaskValues) - 1);
  for (size_t e = 0; e < m_batches * m_bs; ++e) {
    const MaskValue v = kMaskValues[pick(rng)];
    if (o.mask_dt == POSENC_DTYPE_F32)
      std::memcpy(mask.data() + e * 4, &v.f32, 4);
    else
      std::memcpy(mask.data() + e * 2, &v.f16, 2);
  }
  std::vector<float> slopes(H), sinks(H);
  for (size_t h = 0; h < H; ++h) {
    slopes[h] = std::ldexp(1.0f, -static_cast<int>(h) - 1);
    sinks[h] = normal(rng);
  }
  std::vector<int32_t> kpos(K), qpos(Q);
  for (size_t j = 0; j < K; ++j) kpos[j] = static_cast<int32_t>((j * 7) % (K + 3));
  if (K > 2) kpos[K / 2] = -1;  // an empty cell: hidden by POSENC_SOFTMAX_KPOS_NEG_HIDDEN
  for (size_t i = 0; i < Q; ++i) qpos[i] = static_cast<int32_t>(K / 2 + i * 3);

  posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
  p.scale = 0.75f;
  p.softcap = 20.0f;
  p.window = 5;
  p.flags = o.flags;
  if (o.slopes) p.slopes = slopes.data();
  if (o.sinks) p.sinks = sinks.data();
  if (o.kpos) {
    p.kpos = kpos.data();
    p.flags |= POSENC_SOFTMAX_KPOS_NEG_HIDDEN;
  }
  if (o.qpos) p.qpos = qpos.data();
  if (o.mask) {
    p.mask = mask.data();
    p.mask_dtype = o.mask_dt;
    p.mask_row_stride = m_rs;
    p.mask_head_stride = (o.mask_n_heads > 0 || o.mask_per_head) ? m_hs : 0;
    p.mask_n_heads = o.mask_n_heads;
    p.mask_batch_stride = m_bs;
    p.mask_n_batch = o.mask_n_batch;
  }

  // The batched call.
  Bytes got(y_elems * ys), want(y_elems * ys);
  if (o.in_place) {
    std::memcpy(got.data(), x.data(), x_elems * xs);
    std::memcpy(want.data(), x.data(), x_elems * xs);
  }
  const posenc_scores_view xv = {o.in_place ? got.data() : x.data(), xt, x_hs, x_rs, x_bs};
  const posenc_scores_view yv = {got.data(), yt, y_hs, y_rs, y_bs};
  ASSERT_EQ(posenc_softmax_batched(&p, B, H, Q, K, &xv, &yv), POSENC_OK) << posenc_last_error();

  // The reference: one call per (batch, head), its mask slice by ggml's rule.
  for (size_t b = 0; b < B; ++b)
    for (size_t h = 0; h < H; ++h) {
      posenc_softmax_params q = p;
      q.mask_n_heads = q.mask_n_batch = q.mask_batch_stride = q.mask_head_stride = 0;
      if (o.mask) {
        const size_t mh = o.mask_n_heads ? h % o.mask_n_heads : o.mask_per_head ? h : 0;
        const size_t mb = o.mask_n_batch > 1 ? b % o.mask_n_batch : 0;
        q.mask = mask.data() + (mb * m_bs + mh * m_hs) * ms;
      }
      if (o.slopes) q.slopes = slopes.data() + h;
      if (o.sinks) q.sinks = sinks.data() + h;
      char* xh = (o.in_place ? want.data() : x.data()) + (b * x_bs + h * x_hs) * xs;
      char* yh = want.data() + (b * y_bs + h * y_hs) * ys;
      const posenc_scores_view xr = {xh, xt, 0, x_rs, 0}, yr = {yh, yt, 0, y_rs, 0};
      ASSERT_EQ(posenc_softmax(&q, 1, Q, K, &xr, &yr), POSENC_OK) << posenc_last_error();
    }
  ASSERT_EQ(std::memcmp(got.data(), want.data(), y_elems * ys), 0);
}

const Options kOptions[] = {
    {"plain", 3, 4, 3},
    {"one batch", 1, 4, 3, POSENC_SOFTMAX_CAUSAL, true, true},
    {"causal, slopes, sinks, positions", 3, 4, 3, POSENC_SOFTMAX_CAUSAL, true, true, true, true},
    {"window, softcap", 2, 2, 4, POSENC_SOFTMAX_WINDOW | POSENC_SOFTMAX_SOFTCAP},
    {"mask shared", 3, 4, 3, 0, false, false, false, false, true},
    {"mask per head (today's rule)", 2, 4, 3, 0, false, false, false, false, true, POSENC_DTYPE_F32,
     0, true},
    {"f16 mask, 2 mask heads of 4", 2, 4, 3, POSENC_SOFTMAX_CAUSAL, true, true, false, false, true,
     POSENC_DTYPE_F16, 2},
    {"mask 1 head, 3 mask batches of 6", 6, 4, 2, 0, false, true, false, false, true,
     POSENC_DTYPE_F32, 1, false, 3},
    {"mask 4 heads x 2 batches, mask_slope", 4, 4, 3,
     POSENC_SOFTMAX_MASK_SLOPE | POSENC_SOFTMAX_CAUSAL, true, false, true, true, true,
     POSENC_DTYPE_F16, 4, false, 2},
    {"mask 2 heads of 6 x 2 batches, ALiBi", 2, 6, 2, POSENC_SOFTMAX_ALIBI_SYMMETRIC, true, true,
     true, false, true, POSENC_DTYPE_F32, 2, false, 2},
    {"x repeated over batches", 3, 2, 3, POSENC_SOFTMAX_CAUSAL, true, false, false, false, true,
     POSENC_DTYPE_F32, 2, false, 3, true},
    {"in place", 3, 4, 3, POSENC_SOFTMAX_CAUSAL, true, true, false, false, true, POSENC_DTYPE_F32,
     2, false, 3, false, true},
};

TEST_P(SoftmaxBatchTest, BatchedEqualsOneCallPerBatchAndHead) {
  const posenc_dtype x_types[] = {POSENC_DTYPE_F32, POSENC_DTYPE_BF16};
  const posenc_dtype y_types[] = {POSENC_DTYPE_F32, POSENC_DTYPE_BF16, POSENC_DTYPE_F16};
  uint32_t seed = 1;
  for (const Options& o : kOptions)
    for (size_t n_k : {1, 7, 16, 33, 100})
      for (posenc_dtype xt : x_types)
        for (posenc_dtype yt : y_types) {
          if (o.in_place && xt != yt) continue;
          CheckBatched(o, n_k, xt, yt, ++seed);
          if (HasFailure()) return;
        }
}

// int64 positions: the int32 call's result bit for bit, at the int32 extremes, on the stack
// (up to 1024) and on the heap.
TEST_P(SoftmaxBatchTest, Int64PositionsEqualInt32) {
  for (size_t n : {5, 1024, 1500}) {
    SCOPED_TRACE(n);
    const size_t H = 2, Q = n > 100 ? 1030 : 4, K = n;
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> x(H * Q * K), y32(x.size()), y64(x.size());
    for (float& v : x) v = normal(rng);
    std::vector<int32_t> kpos(K), qpos(Q);
    std::vector<int64_t> kpos64(K), qpos64(Q);
    const int32_t top = INT32_MAX - static_cast<int32_t>(K);
    for (size_t j = 0; j < K; ++j) kpos[j] = top + static_cast<int32_t>(j);
    kpos[1] = INT32_MIN;  // empty cells, hidden by the flag
    kpos[K - 1] = -1;
    for (size_t i = 0; i < Q; ++i) qpos[i] = top + static_cast<int32_t>((i * 5) % K);
    for (size_t j = 0; j < K; ++j) kpos64[j] = kpos[j];
    for (size_t i = 0; i < Q; ++i) qpos64[i] = qpos[i];
    const float slopes[2] = {0.5f, 0.0625f};
    posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
    p.slopes = slopes;
    p.window = static_cast<int32_t>(K / 2 + 1);
    p.flags = POSENC_SOFTMAX_CAUSAL | POSENC_SOFTMAX_WINDOW | POSENC_SOFTMAX_KPOS_NEG_HIDDEN;
    p.kpos = kpos.data();
    p.qpos = qpos.data();
    const posenc_scores_view xv = {x.data(), POSENC_DTYPE_F32, Q * K, K, 0};
    posenc_scores_view yv = {y32.data(), POSENC_DTYPE_F32, Q * K, K, 0};
    ASSERT_EQ(posenc_softmax(&p, H, Q, K, &xv, &yv), POSENC_OK) << posenc_last_error();
    p.kpos = nullptr;
    p.qpos = nullptr;
    p.kpos64 = kpos64.data();
    p.qpos64 = qpos64.data();
    yv.data = y64.data();
    ASSERT_EQ(posenc_softmax(&p, H, Q, K, &xv, &yv), POSENC_OK) << posenc_last_error();
    ASSERT_EQ(std::memcmp(y32.data(), y64.data(), y32.size() * 4), 0);
    // One int64 array with the other int32, through the batched entry point.
    std::fill(y64.begin(), y64.end(), 0.0f);
    p.qpos64 = nullptr;
    p.qpos = qpos.data();
    ASSERT_EQ(posenc_softmax_batched(&p, 1, H, Q, K, &xv, &yv), POSENC_OK) << posenc_last_error();
    ASSERT_EQ(std::memcmp(y32.data(), y64.data(), y32.size() * 4), 0);
  }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(SoftmaxBatchTest);

// ------------------------------------------------------------------------------ refusals

// A valid batched call of 2 batches x 4 heads x 2 rows x 4 keys (y after x in one buffer,
// a mask of 2 heads x 2 batches), which each case breaks one way; y must keep its canary.
struct Refusal {
  static constexpr size_t B = 2, H = 4, Q = 2, K = 4, kSlice = H * Q * K;
  std::vector<float> buf = std::vector<float>(4 * kSlice + 64, 0.25f);
  std::vector<float> mask = std::vector<float>(2 * 2 * Q * K, 0.0f);
  int32_t kpos[K] = {0, 1, 2, 3}, qpos[Q] = {2, 3};
  int64_t kpos64[K] = {0, 1, 2, 3}, qpos64[Q] = {2, 3};
  posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
  posenc_scores_view x{}, y{};
  size_t n_batch = B, n_heads = H;

  Refusal() {
    for (size_t e = 0; e < B * kSlice; ++e) buf[e] = static_cast<float>(e % 7) * 0.5f;
    p.mask = mask.data();
    p.mask_head_stride = Q * K;
    p.mask_n_heads = 2;
    p.mask_batch_stride = 2 * Q * K;
    p.mask_n_batch = 2;
    p.flags = POSENC_SOFTMAX_CAUSAL;
    x = {buf.data(), POSENC_DTYPE_F32, Q * K, K, kSlice};
    y = {buf.data() + B * kSlice, POSENC_DTYPE_F32, Q * K, K, kSlice};
  }
  posenc_status Invoke() { return posenc_softmax_batched(&p, n_batch, n_heads, Q, K, &x, &y); }
};

TEST(SoftmaxBatchRefusals, ValidBaseWrites) {
  Refusal r;
  const std::vector<float> before = r.buf;
  ASSERT_EQ(r.Invoke(), POSENC_OK) << posenc_last_error();
  EXPECT_NE(std::memcmp(before.data(), r.buf.data(), before.size() * 4), 0);
  // The int64 positions, a negative kpos hidden in every mask slice used.
  Refusal s;
  s.p.kpos64 = s.kpos64;
  s.p.qpos64 = s.qpos64;
  s.kpos64[1] = INT32_MIN;
  for (size_t sl = 0; sl < 4; ++sl)
    for (size_t i = 0; i < Refusal::Q; ++i)
      s.mask[sl * Refusal::Q * Refusal::K + i * 4 + 1] = -kInf;
  EXPECT_EQ(s.Invoke(), POSENC_OK) << posenc_last_error();
}

TEST(SoftmaxBatchRefusals, EachRefusalWritesNothing) {
  struct Case {
    const char* what;
    const char* message;  // a part of posenc_last_error()
    void (*change)(Refusal&);
  };
  const Case cases[] = {
      {"mask heads do not divide the heads", "mask_n_heads",
       [](Refusal& r) { r.p.mask_n_heads = 3; }},
      {"mask heads above the heads", "does not broadcast",
       [](Refusal& r) { r.p.mask_n_heads = 8; }},
      {"mask batches do not divide the batches", "mask_n_batch", [](Refusal& r) { r.n_batch = 3; }},
      {"kpos and kpos64", "kpos64",
       [](Refusal& r) {
         r.p.kpos = r.kpos;
         r.p.kpos64 = r.kpos64;
       }},
      {"qpos and qpos64", "qpos64",
       [](Refusal& r) {
         r.p.qpos = r.qpos;
         r.p.qpos64 = r.qpos64;
       }},
      {"kpos64 above INT32_MAX", "int32 range",
       [](Refusal& r) {
         r.p.kpos64 = r.kpos64;
         r.kpos64[3] = static_cast<int64_t>(INT32_MAX) + 1;
       }},
      {"kpos64 below INT32_MIN (even if hidden)", "int32 range",
       [](Refusal& r) {
         r.p.kpos64 = r.kpos64;
         r.p.flags |= POSENC_SOFTMAX_KPOS_NEG_HIDDEN;
         r.kpos64[0] = static_cast<int64_t>(INT32_MIN) - 1;
       }},
      {"qpos64 above INT32_MAX", "int32 range",
       [](Refusal& r) {
         r.p.qpos64 = r.qpos64;
         r.qpos64[1] = INT64_MAX;
       }},
      {"qpos64 negative", "negative",
       [](Refusal& r) {
         r.p.qpos64 = r.qpos64;
         r.qpos64[0] = -1;
       }},
      {"y batches repeated (batch_stride 0)", "batch_stride",
       [](Refusal& r) { r.y.batch_stride = 0; }},
      {"y batches overlap", "batches overlap",
       [](Refusal& r) { r.y.batch_stride = Refusal::kSlice - 1; }},
      {"x batch extent overflows", "overflows",
       [](Refusal& r) { r.x.batch_stride = SIZE_MAX / 2; }},
      {"y batch extent overflows", "overflows",
       [](Refusal& r) { r.y.batch_stride = SIZE_MAX / 2; }},
      {"x overlaps y other than in place", "overlaps x",
       [](Refusal& r) { r.x.batch_stride = 3 * Refusal::kSlice; }},
      {"same data, other batch strides", "overlaps x",
       [](Refusal& r) {
         r.x = r.y;
         r.x.batch_stride = Refusal::kSlice + 1;
         r.y.batch_stride = Refusal::kSlice + 2;
       }},
      {"mask batch 1 within y (batch 0 in x)", "y's address range",
       [](Refusal& r) {
         r.p.mask = r.buf.data();
         r.p.mask_batch_stride = Refusal::B * Refusal::kSlice;
       }},
      {"negative kpos visible in mask batch 1 only", "mask batch 1",
       [](Refusal& r) {
         r.p.kpos = r.kpos;
         r.kpos[2] = -1;
         for (size_t i = 0; i < Refusal::Q; ++i) {
           r.mask[i * Refusal::K + 2] = -kInf;                     // batch 0 head 0
           r.mask[(Refusal::Q + i) * Refusal::K + 2] = -kInf;      // batch 0 head 1
           r.mask[(2 * Refusal::Q + i) * Refusal::K + 2] = -kInf;  // batch 1 head 0
         }
       }},
  };
  for (const Case& c : cases) {
    Refusal r;
    c.change(r);
    const std::vector<float> before = r.buf;
    EXPECT_EQ(r.Invoke(), POSENC_ERR_INVALID_ARGUMENT) << c.what;
    EXPECT_NE(std::string(posenc_last_error()).find(c.message), std::string::npos)
        << c.what << ": " << posenc_last_error();
    EXPECT_EQ(std::memcmp(before.data(), r.buf.data(), before.size() * 4), 0) << c.what;
  }
  // posenc_softmax has one batch: a mask of 2 batches does not broadcast to it.
  Refusal r;
  const std::vector<float> before = r.buf;
  EXPECT_EQ(posenc_softmax(&r.p, Refusal::H, Refusal::Q, Refusal::K, &r.x, &r.y),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(posenc_last_error()).find("one batch"), std::string::npos)
      << posenc_last_error();
  EXPECT_EQ(std::memcmp(before.data(), r.buf.data(), before.size() * 4), 0);
  // ... and reads no batch_stride: one batch of a view whose batch_stride is garbage.
  r.p.mask_n_batch = 0;
  r.x.batch_stride = r.y.batch_stride = SIZE_MAX;
  EXPECT_EQ(posenc_softmax(&r.p, Refusal::H, Refusal::Q, Refusal::K, &r.x, &r.y), POSENC_OK)
      << posenc_last_error();
  // n_batch 0 is a no-op, y batch_stride 0 allowed there and with one batch.
  r.y.batch_stride = 0;
  const std::vector<float> after = r.buf;
  r.n_batch = 0;
  EXPECT_EQ(r.Invoke(), POSENC_OK) << posenc_last_error();
  EXPECT_EQ(std::memcmp(after.data(), r.buf.data(), after.size() * 4), 0);
}

}  // namespace
}  // namespace posenc_test
