// Split invariance: every RoPE, M-RoPE (ggml's too), re-rotation, FP8, q8_0 and sinusoid
// output element depends only on its own position, input, plan, flags and ISA. On every ISA,
// storage type, pair layout and scaling type, a call over n rows is bitwise equal to the same rows
// computed in random pieces (1-8 pieces, random cut points; each piece with a position array or
// start_pos, in turn), and to a decode (one row per call) at any position.
#include <posenc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../kernels/half.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr uint32_t kSeed = 20261202;

enum class Storage { kF32, kBf16, kF16 };
const Storage kStorages[] = {Storage::kF32, Storage::kBf16, Storage::kF16};
const char* Name(Storage s) {
  return s == Storage::kF32 ? "f32" : s == Storage::kBf16 ? "bf16" : "f16";
}
size_t Size(Storage s) { return s == Storage::kF32 ? 4 : 2; }

// Rows of `width` elements of one storage type, as raw bytes.
struct Rows {
  Storage st;
  size_t n, width;
  std::vector<uint32_t> words;
  Rows(Storage s, size_t rows, size_t w) : st(s), n(rows), width(w) {
    words.assign((rows * w * Size(s) + 3) / 4 + 1, 0);
  }
  char* Row(size_t r) { return reinterpret_cast<char*>(words.data()) + r * width * Size(st); }
  void Random(uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    for (size_t i = 0; i < n * width; ++i) Set(i, u(rng));
  }
  // Element i of the rows set to f (rounded to the storage type).
  void Set(size_t i, float f) {
    char* p = reinterpret_cast<char*>(words.data());
    if (st == Storage::kF32) {
      std::memcpy(p + 4 * i, &f, 4);
    } else {
      const uint16_t h = st == Storage::kBf16 ? posenc_f32_to_bf16(f) : posenc_f32_to_f16(f);
      std::memcpy(p + 2 * i, &h, 2);
    }
  }
  bool operator==(const Rows& o) const { return words == o.words; }
};

// Cut points of 1-8 random pieces of [0, n).
std::vector<size_t> RandomCuts(std::mt19937& rng, size_t n) {
  std::vector<size_t> cuts = {0, n};
  const size_t pieces = std::uniform_int_distribution<size_t>(1, 8)(rng);
  while (cuts.size() < pieces + 1 && n > 1)
    cuts.push_back(std::uniform_int_distribution<size_t>(1, n - 1)(rng));
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

// A call over rows [a, a + n) of `rows`: row j at positions[j] (NULL: start + j).
using RowCall = std::function<posenc_status(Rows& rows, size_t a, size_t n,
                                            const int32_t* positions, int32_t start)>;

// One call over all rows against random splits (twice, positions arrays and start_pos in
// turn) and against one row per call at a spread of rows.
void ExpectSplitInvariant(const RowCall& call, const Rows& input, int32_t first, std::mt19937& rng,
                          const std::string& what) {
  const size_t n = input.n;
  Rows whole = input;
  ASSERT_EQ(call(whole, 0, n, nullptr, first), POSENC_OK) << what;
  for (int trial = 0; trial < 2; ++trial) {
    const std::vector<size_t> cuts = RandomCuts(rng, n);
    Rows split = input;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      const size_t a = cuts[i], m = cuts[i + 1] - a;
      std::vector<int32_t> pos(m);
      for (size_t j = 0; j < m; ++j) pos[j] = first + static_cast<int32_t>(a + j);
      const bool by_array = (i + trial) % 2 == 1;
      ASSERT_EQ(call(split, a, m, by_array ? pos.data() : nullptr, first + static_cast<int32_t>(a)),
                POSENC_OK);
    }
    EXPECT_TRUE(split == whole) << what << ": " << cuts.size() - 1 << " pieces";
  }
  Rows decode = input;
  for (size_t r = 0; r < n; r += 1 + r % 23) {
    const int32_t p = first + static_cast<int32_t>(r);
    ASSERT_EQ(call(decode, r, 1, r % 2 ? &p : nullptr, p), POSENC_OK);
    EXPECT_EQ(std::memcmp(decode.Row(r), whole.Row(r), input.width * Size(input.st)), 0)
        << what << ": decode of row " << r;
  }
}

posenc_status Rope(Storage st, const posenc_rope_plan* plan, size_t head_dim, size_t n,
                   const int32_t* pos, int32_t start, const posenc_rope_tensor* q,
                   const posenc_rope_tensor* k, unsigned flags) {
  switch (st) {
    case Storage::kBf16:
      return posenc_rope_bf16(plan, head_dim, n, pos, start, q, k, flags);
    case Storage::kF16:
      return posenc_rope_f16(plan, head_dim, n, pos, start, q, k, flags);
    default:
      return posenc_rope_f32(plan, head_dim, n, pos, start, q, k, flags);
  }
}

posenc_status Mrope(Storage st, const posenc_rope_plan* plan, const size_t* sections,
                    size_t head_dim, size_t n, const int32_t* pos, const posenc_rope_tensor* q,
                    unsigned flags) {
  switch (st) {
    case Storage::kBf16:
      return posenc_mrope_bf16(plan, sections, head_dim, n, pos, q, nullptr, flags);
    case Storage::kF16:
      return posenc_mrope_f16(plan, sections, head_dim, n, pos, q, nullptr, flags);
    default:
      return posenc_mrope_f32(plan, sections, head_dim, n, pos, q, nullptr, flags);
  }
}

// Every scaling type (and a ggml YaRN plan) for rotary_dim R.
std::vector<std::pair<std::string, PlanPtr>> EveryScaling(size_t R) {
  std::vector<std::pair<std::string, PlanPtr>> plans;
  std::vector<double> factors(R / 2, 1.5);
  for (int type = POSENC_ROPE_SCALING_DEFAULT; type <= POSENC_ROPE_SCALING_PAIR_FACTORS; ++type) {
    posenc_rope_scaling s{};
    s.type = static_cast<posenc_rope_scaling_type>(type);
    s.factor = 4.0;
    s.original_max_position_embeddings = 4096;
    s.max_position_embeddings = 16384;
    s.seq_len = 10000;
    s.low_freq_factor = 1.0;
    s.high_freq_factor = 4.0;
    s.short_factor = s.long_factor = factors.data();
    s.short_factor_len = s.long_factor_len = R / 2;
    s.alpha = 2.0;
    s.pair_factors = factors.data();
    s.pair_factors_len = R / 2;
    posenc_rope_plan* p = nullptr;
    EXPECT_EQ(posenc_rope_plan_create_scaled(&p, R, 10000.0, &s), POSENC_OK) << type;
    plans.emplace_back("scaling " + std::to_string(type), PlanPtr(p));
  }
  posenc_rope_ggml_params g{};
  g.n_dims = R;
  g.freq_base = 10000.0;
  g.freq_scale = 0.25;
  g.ext_factor = 1.0;
  g.beta_fast = 32.0;
  g.beta_slow = 1.0;
  g.n_ctx_orig = 4096;
  posenc_rope_plan* p = nullptr;
  EXPECT_EQ(posenc_rope_plan_create_ggml(&p, &g), POSENC_OK);
  plans.emplace_back("ggml yarn", PlanPtr(p));
  return plans;
}

class SplitInvarianceTest : public EveryIsaTest {};

// Every scaling type x storage type x pair layout x angle mode at R = 128, each from one of
// four first positions in turn (around anchors, negative, large); R = 40 and a plan of more
// than one chunk of pairs (R = 1026) on the default plan. 70 rows cross an anchor.
TEST_P(SplitInvarianceTest, RopeEveryStorageLayoutAndScaling) {
  std::mt19937 rng(kSeed);
  const size_t L = 70, HQ = 2, HK = 1;
  const int32_t firsts[] = {30, -100, 4094, 1 << 30};
  size_t config = 0;
  for (size_t R : {size_t{128}, size_t{40}, size_t{1026}}) {
    auto plans = EveryScaling(R);
    if (R != 128) plans.resize(1);  // the default plan
    for (auto& [name, plan] : plans)
      for (Storage st : kStorages)
        for (unsigned flags : {0u, 1u, 4u, 5u}) {
          const size_t width = (HQ + HK) * R;  // packed Q, K rows
          Rows input(st, L, width);
          input.Random(rng());
          const posenc_rope_plan* pl = plan.get();
          const RowCall call = [&](Rows& rows, size_t a, size_t n, const int32_t* pos,
                                   int32_t start) {
            const posenc_rope_tensor q = {rows.Row(a), HQ, width, R};
            const posenc_rope_tensor k = {rows.Row(a) + HQ * R * Size(st), HK, width, R};
            return Rope(st, pl, R, n, pos, start, &q, &k, flags);
          };
          const int32_t first = firsts[config++ % 4];
          ExpectSplitInvariant(call, input, first, rng,
                               name + " " + Name(st) + " R=" + std::to_string(R) + " flags=" +
                                   std::to_string(flags) + " first=" + std::to_string(first));
        }
  }
}

// A thread keeps the last anchor's cos/sin from one call to the next (rope_driver.h): a call
// must give the bits it gives in a fresh thread, whatever this thread called before: other
// plans at the same anchor (other frequencies, another rotary size), a plan made at the
// address of a destroyed one, the same plan again.
TEST_P(SplitInvarianceTest, ThreadsAnchorFollowsThePlan) {
  const size_t H = 3;
  const auto rotate = [&](const posenc_rope_plan* plan, size_t R, int32_t pos) {
    std::vector<float> x(H * R);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f + 0.01f * static_cast<float>(i % 37);
    const posenc_rope_tensor q = {x.data(), H, H * R, R};
    EXPECT_EQ(posenc_rope_f32(plan, R, 1, &pos, 0, &q, nullptr, POSENC_ROPE_NEOX), POSENC_OK);
    return x;
  };
  const auto fresh = [&](const posenc_rope_plan* plan, size_t R, int32_t pos) {
    std::vector<float> y;
    std::thread t([&] { y = rotate(plan, R, pos); });
    t.join();
    return y;
  };
  PlanPtr a = MakePlan(128, 10000.0, 1.0), b = MakePlan(128, 500000.0, 1.0);
  const PlanPtr c = MakePlan(64, 10000.0, 1.0);
  // 1000 and 1001 share the anchor 960; -1 is in another.
  for (int32_t pos : {1000, 1001, 1000, -1})
    for (const auto& [plan, R] :
         {std::make_pair(a.get(), size_t{128}), std::make_pair(b.get(), size_t{128}),
          std::make_pair(c.get(), size_t{64})})
      ASSERT_EQ(rotate(plan, R, pos), fresh(plan, R, pos)) << "R=" << R << " pos=" << pos;
  // A plan made where a destroyed one was (the allocator usually reuses the block).
  for (int round = 0; round < 4; ++round) {
    ASSERT_EQ(rotate(b.get(), 128, 1000), fresh(b.get(), 128, 1000));
    b.reset();
    b = MakePlan(128, round % 2 ? 500000.0 : 20000.0, 1.0);
    ASSERT_EQ(rotate(b.get(), 128, 1000), fresh(b.get(), 128, 1000)) << "round " << round;
  }
}

TEST_P(SplitInvarianceTest, MropeAndRerotation) {
  std::mt19937 rng(kSeed + 1);
  const size_t L = 90, H = 2, R = 128;
  const PlanPtr plan = MakePlan(R, 1000000.0, 1.0);
  const PlanPtr other = MakePlan(R, 500000.0, 1.0);
  const size_t sections[3] = {24, 20, 20};
  for (Storage st : kStorages)
    for (unsigned flags : {0u, 1u, 8u}) {
      Rows input(st, L, H * R);
      input.Random(rng());
      // M-RoPE: rows [a, a + n) take their three positions from a fixed table (text tokens,
      // then an image grid), whatever the piece.
      std::vector<int32_t> table(3 * L);
      for (size_t t = 0; t < L; ++t) {
        const bool image = t >= 20 && t < 80;
        table[t] = image ? 20 : static_cast<int32_t>(t);
        table[L + t] = image ? 20 + static_cast<int32_t>((t - 20) / 10) : static_cast<int32_t>(t);
        table[2 * L + t] =
            image ? 20 + static_cast<int32_t>((t - 20) % 10) : static_cast<int32_t>(t);
      }
      const RowCall mrope = [&](Rows& rows, size_t a, size_t n, const int32_t*, int32_t) {
        std::vector<int32_t> pos(3 * n);
        for (size_t r = 0; r < 3; ++r)
          for (size_t j = 0; j < n; ++j) pos[r * n + j] = table[r * L + a + j];
        const posenc_rope_tensor q = {rows.Row(a), H, H * R, R};
        return Mrope(st, plan.get(), sections, R, n, pos.data(), &q, flags);
      };
      ExpectSplitInvariant(mrope, input, 0, rng, std::string("mrope ") + Name(st));
      if (flags & 8u) continue;
      // Re-rotation from positions p to p - 37 (same plan) and to another plan.
      for (const posenc_rope_plan* to : {plan.get(), other.get()}) {
        const RowCall rerotate = [&](Rows& rows, size_t a, size_t n, const int32_t* pos,
                                     int32_t start) {
          std::vector<int32_t> from(n);
          for (size_t j = 0; j < n; ++j)
            from[j] = (pos ? pos[j] : start + static_cast<int32_t>(j)) + 37;
          const posenc_rope_tensor k = {rows.Row(a), H, H * R, R};
          switch (st) {
            case Storage::kBf16:
              return posenc_rope_rerotate_bf16(plan.get(), from.data(), 0, to, pos, start, R, n, &k,
                                               flags);
            case Storage::kF16:
              return posenc_rope_rerotate_f16(plan.get(), from.data(), 0, to, pos, start, R, n, &k,
                                              flags);
            default:
              return posenc_rope_rerotate_f32(plan.get(), from.data(), 0, to, pos, start, R, n, &k,
                                              flags);
          }
        };
        ExpectSplitInvariant(rerotate, input, 500, rng,
                             std::string("rerotate ") + Name(st) +
                                 (to == plan.get() ? " same plan" : " other plan"));
      }
    }
}

// RoPE into quantized rows, written from a fixed f32 source: FP8 E4M3 (posenc_rope_out_fp8:
// H * D bytes per row) and ggml q8_0 blocks (posenc_rope_out_q8_0: H heads x D / 32 blocks of
// 34 bytes), the bytes held as f32 words; both layouts, a partial rotary dim, first positions
// around an anchor and large.
TEST_P(SplitInvarianceTest, RopeOutQuantized) {
  std::mt19937 rng(kSeed + 3);
  const size_t L = 70, H = 2;
  for (bool q8 : {false, true})
    for (size_t R : {size_t{128}, size_t{40}}) {
      const size_t D = R == 128 || q8 ? 128 : 48;
      const size_t row_bytes = q8 ? H * (D / 32) * 34 : H * D;
      const PlanPtr plan = MakePlan(R, 10000.0, 1.0);
      Rows source(Storage::kF32, L, H * D);
      source.Random(rng());
      for (unsigned flags : {0u, 1u}) {
        Rows bytes(Storage::kF32, L, row_bytes / 4);
        const RowCall call = [&](Rows& rows, size_t a, size_t n, const int32_t* pos,
                                 int32_t start) {
          const posenc_rope_view src = {source.Row(a), POSENC_DTYPE_F32, H, H * D, D, 0};
          if (q8) {
            const posenc_q8_0_view dst = {rows.Row(a), H, row_bytes, row_bytes / H};
            return posenc_rope_out_q8_0(plan.get(), D, n, pos, start, &src, &dst, nullptr, flags);
          }
          const posenc_fp8_view dst = {rows.Row(a), H, H * D, D};
          return posenc_rope_out_fp8(plan.get(), D, n, pos, start, &src, &dst, 0.01f, nullptr,
                                     flags);
        };
        for (int32_t first : {30, 1 << 30})
          ExpectSplitInvariant(call, bytes, first, rng,
                               std::string(q8 ? "q8_0" : "fp8") + " R=" + std::to_string(R) +
                                   " flags=" + std::to_string(flags) +
                                   " first=" + std::to_string(first));
      }
    }
}

// Out-of-place calls whose destination holds 16 MiB or more write it with non-temporal
// stores where the ISA has them (kernels/common.h, POSENC_STREAM_MIN_BYTES): the same bits as
// the same rows written in four calls below that size, and the gaps of a strided destination
// (its sentinels) untouched. Every type pair, both layouts, a rotary dim below head_dim (the
// copied tail), a destination one element off its alignment, and the factor-apply form.
TEST_P(SplitInvarianceTest, RopeOutStreamedToLargeDestinations) {
  const struct {
    posenc_dtype src, dst;
    unsigned flags;
    size_t D, R, dst_hs, misalign;
    bool apply;
  } cases[] = {
      {POSENC_DTYPE_F32, POSENC_DTYPE_F16, POSENC_ROPE_NEOX, 128, 128, 128, 0, false},
      {POSENC_DTYPE_F32, POSENC_DTYPE_BF16, POSENC_ROPE_GPTJ, 136, 128, 140, 1, false},
      {POSENC_DTYPE_F32, POSENC_DTYPE_BF16, POSENC_ROPE_NEOX, 128, 128, 128, 0, false},
      {POSENC_DTYPE_F32, POSENC_DTYPE_F32, POSENC_ROPE_NEOX, 128, 128, 128, 0, true},
      {POSENC_DTYPE_BF16, POSENC_DTYPE_BF16, POSENC_ROPE_NEOX | POSENC_ROPE_INVERSE, 72, 64, 76, 1,
       false},
      {POSENC_DTYPE_F16, POSENC_DTYPE_F16, POSENC_ROPE_GPTJ, 128, 128, 128, 0, true},
  };
  const size_t kStream = size_t{16} << 20, H = 8;
  std::mt19937 rng(kSeed + 9);
  for (const auto& c : cases) {
    const size_t xs = c.src == POSENC_DTYPE_F32 ? 4 : 2, ys = c.dst == POSENC_DTYPE_F32 ? 4 : 2;
    const size_t T = kStream / (H * c.D * ys) + 3; /* rotated elements of dst: >= 16 MiB */
    const std::string what = "src " + std::to_string(xs) + " B dst " + std::to_string(ys) +
                             " B flags " + std::to_string(c.flags) + " D " + std::to_string(c.D) +
                             (c.apply ? " apply" : "");
    const PlanPtr plan = MakePlan(c.R, 10000.0, 1.0);
    const Storage sst = c.src == POSENC_DTYPE_F32    ? Storage::kF32
                        : c.src == POSENC_DTYPE_BF16 ? Storage::kBf16
                                                     : Storage::kF16;
    Rows src(sst, T, H * c.D);
    src.Random(rng());
    // Special values in every 997th token: subnormal results (a 16-bit conversion that
    // flushes them to zero must not be taken), NaN, infinities, values that round to zero.
    for (size_t t = 5; t < T; t += 997) {
      const size_t e = t * H * c.D + (t / 997 % H) * c.D;
      for (size_t d = 0; d < 24; ++d) { /* both elements of NEOX's and GPT-J's pairs */
        src.Set(e + d, (d % 2 ? -1.0f : 1.0f) * 1e-39f * static_cast<float>(d + 1));
        src.Set(e + c.R / 2 + d, 1e-39f * static_cast<float>(d % 5));
      }
      src.Set(e + 24, NAN);
      src.Set(e + 25, INFINITY);
      src.Set(e + 26, -INFINITY);
      src.Set(e + 27, 1e-45f);
    }
    std::vector<uint8_t> fstore;
    posenc_rope_factors factors{};
    if (c.apply) {
      const unsigned ff = c.flags & POSENC_ROPE_GPTJ;
      fstore.resize(posenc_rope_factors_bytes(c.R, T, ff) + 64);
      ASSERT_EQ(posenc_rope_factors_compute(plan.get(), T, nullptr, 500, ff, fstore.data(),
                                            fstore.size(), &factors),
                POSENC_OK);
    }
    // The destination from a 64-byte boundary of the buffer, plus c.misalign elements.
    const size_t dst_bytes = (T * H * c.dst_hs + c.misalign) * ys;
    std::vector<uint8_t> whole(dst_bytes + 64, 0xA5), split = whole;
    const auto base = [](std::vector<uint8_t>& v) {
      return v.data() + (64 - reinterpret_cast<uintptr_t>(v.data()) % 64) % 64;
    };
    // Rows [a, a + n) of the call into dst.
    const auto call = [&](std::vector<uint8_t>& dst, size_t a, size_t n) {
      const posenc_rope_view sv = {src.Row(a), c.src, H, H * c.D, c.D, 0};
      const posenc_rope_view dv = {
          base(dst) + (c.misalign + a * H * c.dst_hs) * ys, c.dst, H, H * c.dst_hs, c.dst_hs, 0};
      if (c.apply) return posenc_rope_apply(&factors, a, 0, c.D, 1, n, &sv, &dv, c.flags);
      return posenc_rope_out(plan.get(), c.D, 1, n, nullptr, 500 + static_cast<int32_t>(a), &sv,
                             &dv, c.flags);
    };
    ASSERT_EQ(call(whole, 0, T), POSENC_OK) << what;
    const size_t piece = (T + 3) / 4;
    for (size_t a = 0; a < T; a += piece)
      ASSERT_EQ(call(split, a, std::min(piece, T - a)), POSENC_OK) << what;
    EXPECT_EQ(std::memcmp(base(whole), base(split), dst_bytes), 0) << what;
    // The sentinels of the gaps between head vectors and around the destination.
    const uint8_t* w = base(whole);
    size_t kept = 0, gaps = 0;
    for (size_t t = 0; t < T; ++t)
      for (size_t h = 0; h < H; ++h)
        for (size_t d = c.D; d < c.dst_hs; ++d) {
          const size_t e = c.misalign + (t * H + h) * c.dst_hs + d;
          for (size_t b = 0; b < ys; ++b, ++gaps) kept += w[e * ys + b] == 0xA5;
        }
    for (const uint8_t* p = whole.data(); p < w + c.misalign * ys; ++p, ++gaps) kept += *p == 0xA5;
    for (const uint8_t* p = w + dst_bytes; p < whole.data() + whole.size(); ++p, ++gaps)
      kept += *p == 0xA5;
    EXPECT_EQ(kept, gaps) << what;
  }
}

// A call's first token may take the cos/sin the thread's previous call prepared (a decode
// step's layers, one position): only where they are that token's. Calls of one token, one
// after the other on one plan, each against the same call right after a call on another plan
// (which empties the thread's cache): the layouts, an inverse call, a bf16 call, a
// re-rotation whose position (the shift) and attention ratio differ, other positions and
// back. Bits equal, head by head.
TEST_P(SplitInvarianceTest, DecodeCallsTakeThePreviousCallsValuesOnlyWhenTheirOwn) {
  const size_t D = 128;
  const PlanPtr plan = MakePlan(D, 10000.0, 1.0), other = MakePlan(D, 500000.0, 1.0);
  const PlanPtr half_att = MakePlan(D, 10000.0, 0.5); /* same frequencies, att 0.5 */
  std::mt19937 rng(kSeed + 11);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> x0(D);
  for (float& v : x0) v = u(rng);
  std::vector<uint16_t> b0(D);
  for (size_t i = 0; i < D; ++i) b0[i] = posenc_f32_to_bf16(x0[i]);
  struct Call {
    int kind; /* 0 f32, 1 bf16, 2 re-rotation from half_att (f32) */
    unsigned flags;
    int32_t pos;
  };
  const Call calls[] = {
      {0, POSENC_ROPE_NEOX, 7},
      {0, POSENC_ROPE_GPTJ, 7},
      {0, POSENC_ROPE_NEOX | POSENC_ROPE_INVERSE, 7},
      {1, POSENC_ROPE_NEOX, 7},
      {2, POSENC_ROPE_NEOX, 7}, /* from position 100 to 107: the angle of 7, att 1 / 0.5 */
      {0, POSENC_ROPE_NEOX, 8},
      {0, POSENC_ROPE_NEOX, 7},
      {0, POSENC_ROPE_GPTJ, 70000},
      {0, POSENC_ROPE_GPTJ, 70000},
  };
  // The call into fresh copies of the inputs, as 32-bit words.
  const auto run = [&](const Call& c) {
    std::vector<float> x = x0;
    std::vector<uint16_t> b = b0;
    posenc_rope_tensor t = {x.data(), 1, D, D};
    posenc_status st;
    if (c.kind == 1) {
      t.data = b.data();
      st = posenc_rope_bf16(plan.get(), D, 1, nullptr, c.pos, &t, nullptr, c.flags);
    } else if (c.kind == 2) {
      st = posenc_rope_rerotate_f32(half_att.get(), nullptr, 100, plan.get(), nullptr, 100 + c.pos,
                                    D, 1, &t, c.flags);
    } else {
      st = posenc_rope_f32(plan.get(), D, 1, nullptr, c.pos, &t, nullptr, c.flags);
    }
    EXPECT_EQ(st, POSENC_OK);
    std::vector<uint32_t> bits(D);
    for (size_t i = 0; i < D; ++i) {
      if (c.kind == 1)
        bits[i] = b[i];
      else
        std::memcpy(&bits[i], &x[i], 4);
    }
    return bits;
  };
  const auto flush = [&] {
    std::vector<float> x = x0;
    posenc_rope_tensor t = {x.data(), 1, D, D};
    ASSERT_EQ(posenc_rope_f32(other.get(), D, 1, nullptr, 7, &t, nullptr, POSENC_ROPE_NEOX),
              POSENC_OK);
  };
  std::vector<std::vector<uint32_t>> fresh;
  for (const Call& c : calls) {
    flush();
    fresh.push_back(run(c));
  }
  flush();
  for (size_t i = 0; i < std::size(calls); ++i) EXPECT_EQ(run(calls[i]), fresh[i]) << "call " << i;
  EXPECT_NE(fresh[0], fresh[1]);
  EXPECT_NE(fresh[0], fresh[4]); /* the re-rotation's factor 2 */
}

// In-place calls whose sources hold 16 MiB or more prefetch their rows ahead
// (kernels/common.h, POSENC_PREFETCH_MIN_BYTES; the prefetches may reach past the rows' end):
// the same bits as the same rows rotated in four calls below that size, the rows of a
// strided q and k (their gaps) untouched. f32, bf16 and f16, both layouts, the block path
// (head_dim 128) and the general loops (head_dim 72 with rotary dim 64); f32 also a
// re-rotation (its one cos/sin for every token), and QK-norm + RoPE (posenc_rope_qknorm, q
// and k with their own weights) in each type.
TEST_P(SplitInvarianceTest, RopeInPlacePrefetchedLargeCalls) {
  const struct {
    Storage st;
    unsigned flags;
    size_t D, R;
    bool rerotate, qknorm;
  } cases[] = {
      {Storage::kBf16, POSENC_ROPE_NEOX, 128, 128, false, false},
      {Storage::kF16, POSENC_ROPE_GPTJ, 128, 128, false, false},
      {Storage::kF16, POSENC_ROPE_NEOX | POSENC_ROPE_INVERSE, 72, 64, false, false},
      {Storage::kBf16, POSENC_ROPE_GPTJ, 72, 64, false, false},
      {Storage::kF32, POSENC_ROPE_NEOX, 128, 128, false, false},
      {Storage::kF32, POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE, 72, 64, false, false},
      {Storage::kF32, POSENC_ROPE_NEOX, 128, 128, true, false},
      {Storage::kF32, POSENC_ROPE_NEOX, 128, 128, false, true},
      {Storage::kBf16, POSENC_ROPE_GPTJ, 128, 128, false, true},
      {Storage::kF16, POSENC_ROPE_NEOX | POSENC_ROPE_INVERSE, 72, 64, false, true},
  };
  const size_t kPrefetch = size_t{16} << 20, QH = 6, KH = 2, gap = 8;
  std::mt19937 rng(kSeed + 10);
  for (const auto& c : cases) {
    /* each token: QH q heads, then KH k heads, then `gap` untouched elements */
    const size_t es = Size(c.st);
    const size_t width = (QH + KH) * c.D + gap, T = kPrefetch / ((QH + KH) * c.D * es) + 5;
    const std::string what = std::string(Name(c.st)) + " flags " + std::to_string(c.flags) + " D " +
                             std::to_string(c.D) + (c.rerotate ? " rerotate" : "") +
                             (c.qknorm ? " qknorm" : "");
    std::vector<float> wq(c.D), wk(c.D);
    for (size_t d = 0; d < c.D; ++d) {
      wq[d] = 0.75f + 0.5f * static_cast<float>(rng() % 1000) / 1000.0f;
      wk[d] = 0.75f + 0.5f * static_cast<float>(rng() % 1000) / 1000.0f;
    }
    const posenc_dtype dt = c.st == Storage::kF32    ? POSENC_DTYPE_F32
                            : c.st == Storage::kBf16 ? POSENC_DTYPE_BF16
                                                     : POSENC_DTYPE_F16;
    const PlanPtr plan = MakePlan(c.R, 10000.0, 1.0);
    Rows input(c.st, T, width);
    input.Random(rng());
    Rows whole = input, split = input;
    const auto call = [&](Rows& rows, size_t a, size_t n) {
      posenc_rope_tensor q = {rows.Row(a), QH, width, c.D};
      posenc_rope_tensor k = {rows.Row(a) + QH * c.D * es, KH, width, c.D};
      const int32_t start = 300 + static_cast<int32_t>(a);
      if (c.qknorm) {
        const posenc_rope_view qv = {rows.Row(a), dt, QH, width, c.D, 0};
        const posenc_rope_view kv = {rows.Row(a) + QH * c.D * es, dt, KH, width, c.D, 0};
        const posenc_qk_norm qn = {wq.data(), 1e-6f, 0}, kn = {wk.data(), 1e-6f, 0};
        return posenc_rope_qknorm(plan.get(), c.D, 1, n, nullptr, start, &qv, &qv, &qn, &kv, &kv,
                                  &kn, c.flags);
      }
      if (c.rerotate) { /* every head of the row as keys, moved back by 200 positions */
        posenc_rope_tensor keys = {rows.Row(a), QH + KH, width, c.D};
        return posenc_rope_rerotate_f32(plan.get(), nullptr, start, plan.get(), nullptr,
                                        start - 200, c.D, n, &keys, c.flags);
      }
      switch (c.st) {
        case Storage::kF32:
          return posenc_rope_f32(plan.get(), c.D, n, nullptr, start, &q, &k, c.flags);
        case Storage::kBf16:
          return posenc_rope_bf16(plan.get(), c.D, n, nullptr, start, &q, &k, c.flags);
        default:
          return posenc_rope_f16(plan.get(), c.D, n, nullptr, start, &q, &k, c.flags);
      }
    };
    ASSERT_EQ(call(whole, 0, T), POSENC_OK) << what;
    const size_t piece = (T + 3) / 4;
    for (size_t a = 0; a < T; a += piece)
      ASSERT_EQ(call(split, a, std::min(piece, T - a)), POSENC_OK) << what;
    EXPECT_TRUE(whole == split) << what;
    size_t kept = 0;
    for (size_t t = 0; t < T; ++t)
      kept += std::memcmp(whole.Row(t) + (QH + KH) * c.D * es, input.Row(t) + (QH + KH) * c.D * es,
                          gap * es) == 0;
    EXPECT_EQ(kept, T) << what;
    EXPECT_FALSE(whole == input) << what; /* rotated at all */
  }
}

// Quantized destinations (posenc_rope_out_q8_0, posenc_rope_out_fp8) of calls whose f32
// sources hold 16 MiB or more: those sources are prefetched (the rotation step takes the
// prefetching rotate), and the bytes written are those of the same tokens written in four
// calls below that size, into rows in order and into cells given by slots (in reverse
// order); the block path (head_dim 128) and the general loop (rotary dim 64 of 96 or 72).
TEST_P(SplitInvarianceTest, QuantizedOutputsOfPrefetchedLargeCalls) {
  const struct {
    bool q8;
    size_t D, R;
    unsigned flags;
  } cases[] = {
      {true, 128, 128, POSENC_ROPE_NEOX},
      {true, 96, 64, POSENC_ROPE_GPTJ},
      {false, 128, 128, POSENC_ROPE_NEOX | POSENC_ROPE_INVERSE},
      {false, 72, 64, POSENC_ROPE_NEOX},
  };
  const size_t kPrefetch = size_t{16} << 20, H = 8;
  std::mt19937 rng(kSeed + 12);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (const auto& c : cases) {
    const size_t T = kPrefetch / (H * c.D * sizeof(float)) + 5;
    const size_t head = c.q8 ? c.D / 32 * 34 : c.D, row = H * head; /* bytes */
    std::vector<float> src(T * H * c.D);
    for (float& v : src) v = u(rng);
    std::vector<int64_t> cells(T);
    for (size_t t = 0; t < T; ++t) cells[t] = static_cast<int64_t>(T - 1 - t);
    const PlanPtr plan = MakePlan(c.R, 10000.0, 1.0);
    for (bool slotted : {false, true}) {
      const std::string what = std::string(c.q8 ? "q8_0" : "fp8") + " D " + std::to_string(c.D) +
                               (slotted ? " slots" : " rows");
      std::vector<uint8_t> whole(T * row, 0xAB), split(T * row, 0xAB);
      const auto call = [&](std::vector<uint8_t>& out, size_t a, size_t n) {
        const posenc_rope_view s = {src.data() + a * H * c.D, POSENC_DTYPE_F32, H, H * c.D, c.D, 0};
        const posenc_slots sl = {cells.data() + a, 1, T};
        uint8_t* base = slotted ? out.data() : out.data() + a * row;
        const int32_t start = 300 + static_cast<int32_t>(a);
        if (c.q8) {
          const posenc_q8_0_view q = {base, H, row, head};
          return posenc_rope_out_q8_0(plan.get(), c.D, n, nullptr, start, &s, &q,
                                      slotted ? &sl : nullptr, c.flags);
        }
        const posenc_fp8_view f = {base, H, row, head};
        return posenc_rope_out_fp8(plan.get(), c.D, n, nullptr, start, &s, &f, 0.05f,
                                   slotted ? &sl : nullptr, c.flags);
      };
      ASSERT_EQ(call(whole, 0, T), POSENC_OK) << what;
      const size_t piece = (T + 3) / 4;
      for (size_t a = 0; a < T; a += piece)
        ASSERT_EQ(call(split, a, std::min(piece, T - a)), POSENC_OK) << what;
      EXPECT_TRUE(whole == split) << what;
      EXPECT_LT(static_cast<size_t>(std::count(whole.begin(), whole.end(), uint8_t{0xAB})),
                whole.size() / 64)
          << what; /* written at all */
    }
  }
}

// ggml's M-RoPE (plans from posenc_rope_plan_create_ggml_mode, POSENC_ROPE_MROPE_GGML: four
// sections, four position rows t, h, w, e): MROPE, IMROPE and VISION, each row's positions
// from a fixed table (text tokens, then an image grid), whatever the piece.
TEST_P(SplitInvarianceTest, GgmlMrope) {
  std::mt19937 rng(kSeed + 5);
  const size_t L = 90, H = 2;
  struct Mode {
    int mode;
    int sections[4];
  };
  for (const Mode m : {Mode{8, {16, 24, 24, 0}}, Mode{40, {24, 20, 20, 0}}, Mode{24, {8, 8, 8, 8}},
                       Mode{8, {11, 9, 7, 5}}}) {
    posenc_rope_ggml_params g = {};
    g.n_dims = m.mode == 24 ? 64 : 128;
    g.freq_base = 1000000.0;
    g.mode = m.mode;
    for (int i = 0; i < 4; ++i) g.sections[i] = m.sections[i];
    posenc_rope_plan* raw = nullptr;
    unsigned flags = 0;
    ASSERT_EQ(posenc_rope_plan_create_ggml_mode(&raw, &g, &flags), POSENC_OK)
        << posenc_last_error();
    const PlanPtr plan(raw);
    const size_t R = posenc_rope_plan_rotary_dim(plan.get());
    const size_t sections[4] = {size_t(m.sections[0]), size_t(m.sections[1]), size_t(m.sections[2]),
                                size_t(m.sections[3])};
    std::vector<int32_t> table(4 * L);
    for (size_t t = 0; t < L; ++t) {
      const bool image = t >= 20 && t < 80;
      const int32_t p = static_cast<int32_t>(t);
      table[t] = image ? 20 : p;
      table[L + t] = image ? 20 + static_cast<int32_t>((t - 20) / 10) : p;
      table[2 * L + t] = image ? 20 + static_cast<int32_t>((t - 20) % 10) : p;
      table[3 * L + t] = image ? 7 : 0;
    }
    for (Storage st : kStorages) {
      Rows input(st, L, H * R);
      input.Random(rng());
      const RowCall mrope = [&](Rows& rows, size_t a, size_t n, const int32_t*, int32_t) {
        std::vector<int32_t> pos(4 * n);
        for (size_t r = 0; r < 4; ++r)
          for (size_t j = 0; j < n; ++j) pos[r * n + j] = table[r * L + a + j];
        const posenc_rope_tensor q = {rows.Row(a), H, H * R, R};
        return Mrope(st, plan.get(), sections, R, n, pos.data(), &q, flags);
      };
      ExpectSplitInvariant(mrope, input, 0, rng,
                           "ggml mode " + std::to_string(m.mode) + " " + Name(st));
    }
  }
}

// Each dimension (one chunk, odd, several chunks) x storage x fill/add, the layouts in turn.
TEST_P(SplitInvarianceTest, SinusoidFillAndAdd) {
  std::mt19937 rng(kSeed + 2);
  size_t config = 0;
  for (size_t dim : {size_t{64}, size_t{511}, size_t{1030}}) {
    posenc_sinusoid_plan* raw = nullptr;
    ASSERT_EQ(posenc_sinusoid_plan_create(&raw, dim, 10000.0), POSENC_OK);
    std::unique_ptr<posenc_sinusoid_plan, void (*)(posenc_sinusoid_plan*)> plan(
        raw, posenc_sinusoid_plan_destroy);
    for (Storage st : kStorages)
      for (bool add : {false, true}) {
        const unsigned layout = static_cast<unsigned>(config++ % 3);
        Rows input(st, 150, dim);
        input.Random(rng());
        const RowCall call = [&](Rows& rows, size_t a, size_t n, const int32_t* pos,
                                 int32_t start) {
          char* row = rows.Row(a);
          switch (st) {
            case Storage::kBf16:
              return add ? posenc_sinusoid_add_bf16(plan.get(), n, pos, start,
                                                    reinterpret_cast<uint16_t*>(row), dim, layout)
                         : posenc_sinusoid_fill_bf16(plan.get(), n, pos, start,
                                                     reinterpret_cast<uint16_t*>(row), dim, layout);
            case Storage::kF16:
              return add ? posenc_sinusoid_add_f16(plan.get(), n, pos, start,
                                                   reinterpret_cast<uint16_t*>(row), dim, layout)
                         : posenc_sinusoid_fill_f16(plan.get(), n, pos, start,
                                                    reinterpret_cast<uint16_t*>(row), dim, layout);
            default:
              return add ? posenc_sinusoid_add_f32(plan.get(), n, pos, start,
                                                   reinterpret_cast<float*>(row), dim, layout)
                         : posenc_sinusoid_fill_f32(plan.get(), n, pos, start,
                                                    reinterpret_cast<float*>(row), dim, layout);
          }
        };
        const int32_t first = config % 2 ? 77 : -5000;
        ExpectSplitInvariant(call, input, first, rng,
                             std::string("sinusoid ") + Name(st) + " dim=" + std::to_string(dim) +
                                 " layout=" + std::to_string(layout) + (add ? " add" : " fill") +
                                 " first=" + std::to_string(first));
      }
  }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(SplitInvarianceTest);

}  // namespace
}  // namespace posenc_test
