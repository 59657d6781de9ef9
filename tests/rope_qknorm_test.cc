// QK-norm fused with RoPE (posenc_rope_qknorm), on every ISA and storage pair:
//  - against the long double definition, y = rope((x / sqrt(mean(x^2) + eps)) * w), NEOX and
//    GPTJ, partial rotary (the normalised tail [R, D) kept), Gemma's (1 + w), 16-bit storage;
//  - q and k in one call with their own weights equal two calls; in place equals out of
//    place; NULL norms equal posenc_rope_out; packed QKV rows in place;
//  - split invariance: token by token equals one call, bitwise;
//  - every bad input returns its status and writes nothing.
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../kernels/half.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr uint32_t kSeed = 20261203;

posenc_elem ElemOf(posenc_dtype t) {
  return t == POSENC_DTYPE_F32    ? POSENC_ELEM_F32
         : t == POSENC_DTYPE_BF16 ? POSENC_ELEM_BF16
                                  : POSENC_ELEM_F16;
}

// [L, H, D] contiguous heads of one storage type (token stride H * D), one batch.
struct Heads {
  posenc_dtype dtype;
  size_t tokens, heads, dim;
  std::vector<uint32_t> words;
  Heads(posenc_dtype t, size_t l, size_t h, size_t d)
      : dtype(t), tokens(l), heads(h), dim(d), words(l * h * d + 1, 0x7fc01234u) {}
  size_t Size() const { return tokens * heads * dim; }
  float Get(size_t i) const { return posenc_elem_load(words.data(), i, ElemOf(dtype)); }
  void Set(size_t i, float v) { posenc_elem_store(words.data(), i, v, ElemOf(dtype)); }
  posenc_rope_view View(size_t t0 = 0) {
    const size_t es = dtype == POSENC_DTYPE_F32 ? 4 : 2;
    return posenc_rope_view{reinterpret_cast<char*>(words.data()) + t0 * heads * dim * es,
                            dtype,
                            heads,
                            heads * dim,
                            dim,
                            0};
  }
  void Fill(std::mt19937& rng, float scale) {
    std::normal_distribution<float> n(0.0f, scale);
    for (size_t i = 0; i < Size(); ++i) Set(i, n(rng));
  }
  bool operator==(const Heads& o) const { return words == o.words; }
};

std::vector<float> Weights(std::mt19937& rng, size_t d) {
  std::uniform_real_distribution<float> u(0.25f, 2.0f);
  std::vector<float> w(d);
  for (float& x : w) x = u(rng);
  return w;
}

// The long double definition of one head vector's result, element d.
struct Exact {
  std::vector<long double> y;
  std::vector<long double> n;  // the normalised vector
};
Exact Define(const Heads& x, size_t t, size_t h, const std::vector<float>& w, float eps, bool gemma,
             const std::vector<double>& freqs, int32_t pos, double att, unsigned flags) {
  const size_t D = x.dim, R = 2 * freqs.size();
  const size_t base = (t * x.heads + h) * D;
  long double ss = 0;
  for (size_t d = 0; d < D; ++d) ss += static_cast<long double>(x.Get(base + d)) * x.Get(base + d);
  const long double inv = 1.0L / std::sqrt(ss / D + eps);
  Exact e;
  e.n.resize(D);
  for (size_t d = 0; d < D; ++d)
    e.n[d] = x.Get(base + d) * inv * (gemma ? 1.0L + w[d] : static_cast<long double>(w[d]));
  e.y = e.n;
  const bool gptj = flags & POSENC_ROPE_GPTJ;
  const long double sg = (flags & POSENC_ROPE_INVERSE) ? -1 : 1;
  for (size_t i = 0; i < R / 2; ++i) {
    const size_t iu = gptj ? 2 * i : i, iv = gptj ? 2 * i + 1 : i + R / 2;
    const long double a = ExactReducedAngle(pos, freqs[i]);
    const long double c = att * std::cos(a), s = sg * att * std::sin(a);
    e.y[iu] = e.n[iu] * c - e.n[iv] * s;
    e.y[iv] = e.n[iv] * c + e.n[iu] * s;
  }
  return e;
}

class RopeQknormTest : public EveryIsaTest {};

struct Shape {
  size_t R, D, H;
};
const Shape kShapes[] = {{128, 128, 5}, {64, 80, 3},   {6, 10, 2},
                         {34, 34, 1},   {256, 256, 2}, {128, 256, 37}};
const posenc_dtype kPairs[][2] = {{POSENC_DTYPE_F32, POSENC_DTYPE_F32},
                                  {POSENC_DTYPE_BF16, POSENC_DTYPE_BF16},
                                  {POSENC_DTYPE_F16, POSENC_DTYPE_F16},
                                  {POSENC_DTYPE_F32, POSENC_DTYPE_BF16},
                                  {POSENC_DTYPE_F32, POSENC_DTYPE_F16}};

// One call of L tokens of x (elements normal with standard deviation `scale`) against the
// long double definition, within the header's bound (rope.h, posenc.h): each rotated y_d
// within att (|n_d| + |n_pair|) (2^-21 + (D/16 + 3) 2^-24) of the exact, the tail's n_d
// within (D/16 + 3) 2^-24, plus the 16-bit output's rounding.
void CheckAgainstTheDefinition(const posenc_rope_plan* plan, double att, const Shape& sh,
                               const posenc_dtype* pair, unsigned flags, bool gemma, float eps,
                               float scale, std::mt19937& rng) {
  const std::vector<double> freqs = PlanFreqs(plan);
  const size_t L = 7;
  Heads x(pair[0], L, sh.H, sh.D), y(pair[1], L, sh.H, sh.D);
  x.Fill(rng, scale);
  const std::vector<float> w = Weights(rng, sh.D);
  std::vector<int32_t> pos(L);
  for (size_t t = 0; t < L; ++t) pos[t] = static_cast<int32_t>(rng() % 300000) - 1000;
  const posenc_qk_norm qn{w.data(), eps, gemma ? unsigned{POSENC_QK_NORM_GEMMA} : 0u};
  const posenc_rope_view xv = x.View(), yv = y.View();
  ASSERT_EQ(posenc_rope_qknorm(plan, sh.D, 1, L, pos.data(), 0, &xv, &yv, &qn, nullptr, nullptr,
                               nullptr, flags),
            POSENC_OK);
  // The 16-bit output's rounding: half an ulp, relative for normal results, absolute (half
  // the subnormal spacing: f16 2^-25, bf16 2^-134) for subnormal ones.
  const double rel = pair[1] == POSENC_DTYPE_F32    ? 0
                     : pair[1] == POSENC_DTYPE_BF16 ? std::ldexp(1.0, -8)
                                                    : std::ldexp(1.0, -11);
  const double sub = pair[1] == POSENC_DTYPE_F32    ? 0
                     : pair[1] == POSENC_DTYPE_BF16 ? std::ldexp(1.0, -134)
                                                    : std::ldexp(1.0, -25);
  for (size_t t = 0; t < L; ++t)
    for (size_t h = 0; h < sh.H; ++h) {
      const Exact e = Define(x, t, h, w, eps, gemma, freqs, pos[t], att, flags);
      const double norm_bound = (sh.D / 16.0 + 3) * std::ldexp(1.0, -24);
      for (size_t d = 0; d < sh.D; ++d) {
        const size_t i = (t * sh.H + h) * sh.D + d;
        double bound;
        if (d < sh.R) {
          const size_t pr = (flags & POSENC_ROPE_GPTJ) ? (d ^ 1) : (d + sh.R / 2) % sh.R;
          const double mass = static_cast<double>(std::fabs(e.n[d]) + std::fabs(e.n[pr]));
          bound = att * mass * (std::ldexp(1.0, -21) + norm_bound);
        } else {
          bound = static_cast<double>(std::fabs(e.n[d])) * norm_bound;
        }
        bound += rel * std::fabs(static_cast<double>(e.y[d])) + sub + 1e-30;
        ASSERT_TRUE(WithinBound(y.Get(i), static_cast<double>(e.y[d]), bound))
            << "R=" << sh.R << " D=" << sh.D << " t=" << t << " h=" << h << " d=" << d << " pair "
            << pair[0] << "->" << pair[1] << " flags=" << flags << " gemma=" << gemma
            << " eps=" << eps << " scale=" << scale << " got " << y.Get(i) << " want "
            << static_cast<double>(e.y[d]) << " bound " << bound;
      }
    }
}

TEST_P(RopeQknormTest, AgainstTheLongDoubleDefinition) {
  std::mt19937 rng(kSeed);
  const double att = 1.25;
  int config = 0;
  for (const Shape& sh : kShapes) {
    const PlanPtr plan = MakePlan(sh.R, 1000000.0, att);
    for (const auto& pair : kPairs) {
      // every layout with and without Gemma's weights, INVERSE and the deterministic mode
      const unsigned flags = ((config & 1) ? POSENC_ROPE_GPTJ : POSENC_ROPE_NEOX) |
                             ((config & 4) ? unsigned{POSENC_ROPE_INVERSE} : 0u) |
                             (config % 3 == 2 ? unsigned{POSENC_ROPE_DETERMINISTIC} : 0u);
      const bool gemma = (config & 2) != 0;
      ++config;
      ASSERT_NO_FATAL_FAILURE(
          CheckAgainstTheDefinition(plan.get(), att, sh, pair, flags, gemma, 1e-6f, 3.0f, rng));
    }
  }
}

// Subnormal elements with a tiny eps (inv near 2^60; the squares underflow, so inv is set by
// eps): x * inv is rounded first, as HF rounds it, so the result keeps the bound (a product
// formed at the elements' own scale and multiplied by inv last would carry their absolute
// rounding error, 2^-150, up to 2^-90 on results near 2^-75).
TEST_P(RopeQknormTest, SubnormalElementsWithATinyEps) {
  std::mt19937 rng(kSeed + 7);
  const double att = 1.0;
  const Shape shapes[] = {{128, 128, 4}, {256, 256, 2}, {64, 80, 3}, {34, 34, 1}};
  const posenc_dtype pairs[][2] = {{POSENC_DTYPE_F32, POSENC_DTYPE_F32},
                                   {POSENC_DTYPE_BF16, POSENC_DTYPE_BF16},
                                   {POSENC_DTYPE_F32, POSENC_DTYPE_BF16}};
  for (const Shape& sh : shapes) {
    const PlanPtr plan = MakePlan(sh.R, 10000.0, att);
    for (const auto& pair : pairs)
      for (unsigned layout : {unsigned{POSENC_ROPE_NEOX}, unsigned{POSENC_ROPE_GPTJ}})
        ASSERT_NO_FATAL_FAILURE(CheckAgainstTheDefinition(plan.get(), att, sh, pair, layout, false,
                                                          std::ldexp(1.0f, -120),
                                                          std::ldexp(1.0f, -135), rng));
  }
}

TEST_P(RopeQknormTest, QAndKInOneCallEqualTwoCallsAndInPlaceEqualsOutOfPlace) {
  std::mt19937 rng(kSeed + 1);
  const size_t L = 9, D = 128, Hq = 6, Hk = 2;
  const PlanPtr plan = MakePlan(D, 10000.0, 1.0);
  for (const auto& pair : kPairs) {
    Heads q(pair[0], L, Hq, D), k(pair[0], L, Hk, D);
    q.Fill(rng, 1.0f);
    k.Fill(rng, 1.0f);
    const std::vector<float> wq = Weights(rng, D), wk = Weights(rng, D);
    const posenc_qk_norm qn{wq.data(), 1e-6f, 0}, kn{wk.data(), 1e-6f, 0};
    Heads q1(pair[1], L, Hq, D), k1(pair[1], L, Hk, D), q2(pair[1], L, Hq, D),
        k2(pair[1], L, Hk, D);
    const posenc_rope_view qv = q.View(), kv = k.View(), q1v = q1.View(), k1v = k1.View(),
                           q2v = q2.View(), k2v = k2.View();
    ASSERT_EQ(posenc_rope_qknorm(plan.get(), D, 1, L, nullptr, 40, &qv, &q1v, &qn, &kv, &k1v, &kn,
                                 POSENC_ROPE_NEOX),
              POSENC_OK);
    ASSERT_EQ(posenc_rope_qknorm(plan.get(), D, 1, L, nullptr, 40, &qv, &q2v, &qn, nullptr, nullptr,
                                 nullptr, POSENC_ROPE_NEOX),
              POSENC_OK);
    ASSERT_EQ(posenc_rope_qknorm(plan.get(), D, 1, L, nullptr, 40, &kv, &k2v, &kn, nullptr, nullptr,
                                 nullptr, POSENC_ROPE_NEOX),
              POSENC_OK);
    EXPECT_TRUE(q1 == q2);
    EXPECT_TRUE(k1 == k2);
    if (pair[0] != pair[1]) continue;
    // In place: the same result.
    Heads qi = q, ki = k;
    const posenc_rope_view qiv = qi.View(), kiv = ki.View();
    ASSERT_EQ(posenc_rope_qknorm(plan.get(), D, 1, L, nullptr, 40, &qiv, &qiv, &qn, &kiv, &kiv, &kn,
                                 POSENC_ROPE_NEOX),
              POSENC_OK);
    EXPECT_TRUE(qi == q1);
    EXPECT_TRUE(ki == k1);
  }
}

TEST_P(RopeQknormTest, WithoutNormsItIsRopeOut) {
  std::mt19937 rng(kSeed + 2);
  const size_t L = 5, D = 96, H = 3;
  const PlanPtr plan = MakePlan(64, 10000.0, 0.5);
  for (const auto& pair : kPairs) {
    Heads x(pair[0], L, H, D), a(pair[1], L, H, D), b(pair[1], L, H, D);
    x.Fill(rng, 2.0f);
    const posenc_rope_view xv = x.View(), av = a.View(), bv = b.View();
    ASSERT_EQ(posenc_rope_qknorm(plan.get(), D, 1, L, nullptr, 3, &xv, &av, nullptr, nullptr,
                                 nullptr, nullptr, POSENC_ROPE_GPTJ),
              POSENC_OK);
    ASSERT_EQ(posenc_rope_out(plan.get(), D, 1, L, nullptr, 3, &xv, &bv, POSENC_ROPE_GPTJ),
              POSENC_OK);
    EXPECT_TRUE(a == b);
  }
}

TEST_P(RopeQknormTest, PackedQkvRowsInPlace) {
  std::mt19937 rng(kSeed + 3);
  const size_t L = 4, D = 64, Hq = 4, Hk = 2, row = (Hq + 2 * Hk) * D;
  const PlanPtr plan = MakePlan(D, 10000.0, 1.0);
  std::vector<float> qkv(L * row);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (float& v : qkv) v = n(rng);
  std::vector<float> sep = qkv;
  const std::vector<float> wq = Weights(rng, D), wk = Weights(rng, D);
  const posenc_qk_norm qn{wq.data(), 1e-5f, POSENC_QK_NORM_GEMMA}, kn{wk.data(), 1e-5f, 0};
  posenc_rope_view q{qkv.data(), POSENC_DTYPE_F32, Hq, row, D, 0};
  posenc_rope_view k{qkv.data() + Hq * D, POSENC_DTYPE_F32, Hk, row, D, 0};
  ASSERT_EQ(posenc_rope_qknorm(plan.get(), D, 1, L, nullptr, 0, &q, &q, &qn, &k, &k, &kn, 0),
            POSENC_OK);
  posenc_rope_view sq{sep.data(), POSENC_DTYPE_F32, Hq, row, D, 0};
  posenc_rope_view sk{sep.data() + Hq * D, POSENC_DTYPE_F32, Hk, row, D, 0};
  ASSERT_EQ(posenc_rope_qknorm(plan.get(), D, 1, L, nullptr, 0, &sq, &sq, &qn, nullptr, nullptr,
                               nullptr, 0),
            POSENC_OK);
  ASSERT_EQ(posenc_rope_qknorm(plan.get(), D, 1, L, nullptr, 0, &sk, &sk, &kn, nullptr, nullptr,
                               nullptr, 0),
            POSENC_OK);
  EXPECT_EQ(std::memcmp(qkv.data(), sep.data(), qkv.size() * 4), 0);
}

TEST_P(RopeQknormTest, TokenByTokenIsOneCall) {
  std::mt19937 rng(kSeed + 4);
  const size_t L = 11, D = 128, H = 3;
  const PlanPtr plan = MakePlan(D, 500000.0, 1.0);
  for (const auto& pair : kPairs) {
    Heads x(pair[0], L, H, D), whole(pair[1], L, H, D), split(pair[1], L, H, D);
    x.Fill(rng, 1.5f);
    const std::vector<float> w = Weights(rng, D);
    const posenc_qk_norm qn{w.data(), 1e-6f, 0};
    std::vector<int32_t> pos(L);
    for (size_t t = 0; t < L; ++t) pos[t] = static_cast<int32_t>(rng() % 200000);
    const posenc_rope_view xv = x.View(), wv = whole.View();
    ASSERT_EQ(posenc_rope_qknorm(plan.get(), D, 1, L, pos.data(), 0, &xv, &wv, &qn, nullptr,
                                 nullptr, nullptr, 0),
              POSENC_OK);
    for (size_t t = 0; t < L; ++t) {
      const posenc_rope_view xt = x.View(t), st = split.View(t);
      ASSERT_EQ(posenc_rope_qknorm(plan.get(), D, 1, 1, nullptr, pos[t], &xt, &st, &qn, nullptr,
                                   nullptr, nullptr, 0),
                POSENC_OK);
    }
    EXPECT_TRUE(whole == split);
  }
}

TEST_P(RopeQknormTest, BadInputReturnsItsStatusAndWritesNothing) {
  std::mt19937 rng(kSeed + 5);
  const size_t L = 3, D = 64, H = 2;
  const PlanPtr plan = MakePlan(D, 10000.0, 1.0), big = MakePlan(1024, 10000.0, 1.0);
  Heads q(POSENC_DTYPE_F32, L, H, D), k(POSENC_DTYPE_F32, L, H, D);
  q.Fill(rng, 1.0f);
  k.Fill(rng, 1.0f);
  Heads qd(POSENC_DTYPE_F32, L, H, D), kd(POSENC_DTYPE_F32, L, H, D),
      kb(POSENC_DTYPE_BF16, L, H, D);
  Heads wide(POSENC_DTYPE_F32, 1, 1, 4104);
  const std::vector<float> w = Weights(rng, 4104);
  const posenc_qk_norm good{w.data(), 1e-6f, 0}, null_w{nullptr, 1e-6f, 0},
      neg_eps{w.data(), -1e-6f, 0}, nan_eps{w.data(), NAN, 0}, bad_flags{w.data(), 1e-6f, 2u};
  const posenc_rope_view qv = q.View(), kv = k.View(), qdv = qd.View(), kdv = kd.View(),
                         kbv = kb.View(), widev = wide.View();
  struct Bad {
    const char* what;
    const posenc_rope_plan* plan;
    size_t dim;
    const posenc_rope_view *qs, *qdst;
    const posenc_qk_norm* qn;
    const posenc_rope_view *ks, *kdst;
    const posenc_qk_norm* kn;
    unsigned flags;
  };
  const Bad bad[] = {
      {"null plan", nullptr, D, &qv, &qdv, &good, &kv, &kdv, &good, 0},
      {"null q_src", plan.get(), D, nullptr, &qdv, &good, &kv, &kdv, &good, 0},
      {"null q_dst", plan.get(), D, &qv, nullptr, &good, &kv, &kdv, &good, 0},
      {"k_src without k_dst", plan.get(), D, &qv, &qdv, &good, &kv, nullptr, &good, 0},
      {"k_dst without k_src", plan.get(), D, &qv, &qdv, &good, nullptr, &kdv, nullptr, 0},
      {"k_norm without k_src", plan.get(), D, &qv, &qdv, &good, nullptr, nullptr, &good, 0},
      {"null weight", plan.get(), D, &qv, &qdv, &null_w, &kv, &kdv, &good, 0},
      {"negative eps", plan.get(), D, &qv, &qdv, &good, &kv, &kdv, &neg_eps, 0},
      {"NaN eps", plan.get(), D, &qv, &qdv, &nan_eps, &kv, &kdv, &good, 0},
      {"unknown norm flags", plan.get(), D, &qv, &qdv, &bad_flags, &kv, &kdv, &good, 0},
      {"unknown flags", plan.get(), D, &qv, &qdv, &good, &kv, &kdv, &good, 1u << 20},
      {"type pairs differ", plan.get(), D, &qv, &qdv, &good, &kv, &kbv, &good, 0},
      {"k_dst is q_dst", plan.get(), D, &qv, &qdv, &good, &kv, &qdv, &good, 0},
      {"k_dst is q_src", plan.get(), D, &qv, &qdv, &good, &kv, &qv, &good, 0},
      {"q_dst is k_src", plan.get(), D, &qv, &kv, &good, &kv, &kdv, &good, 0},
      {"rotary_dim > 512 with a norm", big.get(), 1024, &qv, &qdv, &good, nullptr, nullptr, nullptr,
       0},
      {"head_dim > 4096 with a norm", plan.get(), 4104, &widev, &widev, &good, nullptr, nullptr,
       nullptr, 0},
      {"R > head_dim", plan.get(), 32, &qv, &qdv, &good, &kv, &kdv, &good, 0},
  };
  for (const Bad& b : bad) {
    const Heads q0 = q, k0 = k, qd0 = qd, kd0 = kd, kb0 = kb, wide0 = wide;
    EXPECT_EQ(posenc_rope_qknorm(b.plan, b.dim, 1, b.dim == 1024 ? 0 : (b.dim == 4104 ? 1 : L),
                                 nullptr, 0, b.qs, b.qdst, b.qn, b.ks, b.kdst, b.kn, b.flags),
              POSENC_ERR_INVALID_ARGUMENT)
        << b.what;
    EXPECT_TRUE(q == q0 && k == k0 && qd == qd0 && kd == kd0 && kb == kb0 && wide == wide0)
        << b.what << ": written";
  }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeQknormTest);

}  // namespace
}  // namespace posenc_test
