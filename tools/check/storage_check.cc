#include "storage_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <type_traits>
#include <vector>

#include "check_common.h"
#include "posenc.h"

namespace posenc_report {
namespace {

constexpr int kSoftmaxCases = 300;              // of which kLongRows have 4097 keys or more
constexpr int kLongRows = 6;                    // (bf16: more than one 4096-key block)
constexpr int kStorageCases = 300;              // per kernel family, bf16 and f16 alternately
constexpr size_t kHalfLimit = size_t{1} << 31;  // q_offset + n_q, n_k: at most 2^31

// ---- bf16 and f16 (check_common.h: converted independently of the library) -----------

enum Storage { kBf16 = 0, kF16 = 1 };

uint16_t Round(Storage s, float f) { return s == kBf16 ? ToBf16(f) : ToF16(f); }
float Widen(Storage s, uint16_t h) { return s == kBf16 ? FromBf16(h) : FromF16(h); }
bool IsNan(Storage s, uint16_t h) { return (h & 0x7fffu) > (s == kBf16 ? 0x7f80u : 0x7c00u); }
// posenc.h's "bit-identical": the same bits, or NaN where the reference is NaN.
bool Same(Storage s, uint16_t got, uint16_t want) {
  return got == want || (IsNan(s, got) && IsNan(s, want));
}

std::vector<float> Widened(Storage s, const std::vector<uint16_t>& v) {
  std::vector<float> w(v.size());
  for (size_t i = 0; i < v.size(); ++i) w[i] = Widen(s, v[i]);
  return w;
}

// n values uniform in [-1, 1] times 1, 2^-18 (f16 subnormals) or 2^15 (f16 overflow after
// a rotation or an addition), in storage s.
std::vector<uint16_t> RandomStored(std::mt19937_64& rng, Storage s, size_t n) {
  static const float kMagnitudes[] = {1.0f, 0x1p-18f, 0x1p15f};
  const float magnitude = kMagnitudes[rng() % 3];
  std::vector<uint16_t> v(n);
  const std::vector<float> data = RandomData(rng, n);
  for (size_t i = 0; i < n; ++i) v[i] = Round(s, data[i] * magnitude);
  return v;
}

// ---- what one ISA got wrong ------------------------------------------------------------

struct StorageErrors {
  double softmax = 0;       // worst |p - p*| / (rel * p* + abs)
  size_t softmax_bf16 = 0;  // elements not bit-identical to bf16(the f32 result)
  size_t rope[2] = {}, sinusoid[2] = {}, alibi[2] = {};  // the same, per storage
  size_t untouched_changed = 0;  // softmax: elements outside the rows that changed
  size_t failed_calls = 0;
};
using IsaErrors = std::vector<StorageErrors>;  // indexed by posenc_isa

// ALiBi's strided scores: heads of rows ([H, n_q, n_k]) or rows of heads ([n_q, H, n_k]),
// with 0-3 elements of padding after each row and each head half the time.
struct AlibiShape {
  size_t heads = 0, n_q = 0, n_k = 0, q_offset = 0, head_stride = 0, row_stride = 0;
  size_t Extent() const { return (heads - 1) * head_stride + (n_q - 1) * row_stride + n_k; }
  size_t Index(size_t h, size_t i, size_t j) const { return h * head_stride + i * row_stride + j; }
};

AlibiShape RandomShape(std::mt19937_64& rng, size_t heads, size_t n_q, size_t n_k) {
  AlibiShape a;
  a.heads = heads;
  a.n_q = n_q;
  a.n_k = n_k;
  const size_t pad = (rng() % 2) ? rng() % 4 : 0, pad2 = (rng() % 2) ? rng() % 4 : 0;
  if (rng() % 2) {
    a.row_stride = n_k + pad;
    a.head_stride = n_q * a.row_stride + pad2;
  } else {
    a.head_stride = n_k + pad;
    a.row_stride = heads * a.head_stride + pad2;
  }
  switch (rng() % 3) {  // prefill, decode-like, or queries up to 2^31 - 1
    case 0:
      a.q_offset = 0;
      break;
    case 1:
      a.q_offset = rng() % (2 * n_k);
      break;
    default:
      a.q_offset = kHalfLimit - n_q - rng() % 1000;
  }
  return a;
}

// The paper's slopes, posenc's for another max_bias, or any finite values.
std::vector<float> RandomSlopes(std::mt19937_64& rng, size_t heads) {
  const int kind = static_cast<int>(rng() % 3);
  if (kind == 2) return RandomData(rng, heads);
  const double max_bias = kind == 0 ? 8.0 : std::uniform_real_distribution<double>(0.5, 16)(rng);
  std::vector<float> slopes(heads);
  if (posenc_alibi_slopes(heads, max_bias, slopes.data()) != POSENC_OK) slopes.assign(heads, NAN);
  return slopes;
}

// ---- the fused softmax -----------------------------------------------------------------

struct SoftmaxCase {
  std::vector<float> slopes;
  AlibiShape shape;
  float scale = 1.0f;
  unsigned flags = 0;
  bool bf16 = false;             // scores representable in bf16, and the bf16 kernel run too
  std::vector<float> in;         // the scores
  std::vector<char> kind;        // per element: 0 outside the rows, 1 p*, 2 exactly +0
  std::vector<long double> ref;  // p*

  static SoftmaxCase Random(std::mt19937_64& rng, bool long_row);
  void Reference();
  bool RunF32(posenc_isa isa, std::vector<float>& out) const;
  bool RunBf16(posenc_isa isa, std::vector<uint16_t>& out) const;
};

SoftmaxCase SoftmaxCase::Random(std::mt19937_64& rng, bool long_row) {
  SoftmaxCase c;
  const size_t heads = long_row ? 1 : 1 + rng() % 4, n_q = long_row ? 1 + rng() % 2 : 1 + rng() % 8;
  const size_t n_k = long_row ? 4097 + rng() % 2000 : 1 + rng() % 300;
  c.slopes = RandomSlopes(rng, heads);
  c.shape = RandomShape(rng, heads, n_q, n_k);
  if (long_row && rng() % 2) c.shape.q_offset = n_k - n_q;  // decode: every key visible
  c.scale = (rng() % 2) ? 1.0f : std::uniform_real_distribution<float>(0.01f, 2.0f)(rng);
  c.flags = (rng() % 2) ? unsigned{POSENC_ALIBI_CAUSAL} : 0u;
  c.bf16 = rng() % 2;
  static const float kAmplitudes[] = {1.0f, 8.0f, 40.0f};
  const float amplitude = kAmplitudes[rng() % 3];
  c.in = RandomData(rng, c.shape.Extent());
  const int neg_inf = static_cast<int>(rng() % 8);  // 0: some -inf scores, 1: -inf rows
  for (float& x : c.in) {
    x *= amplitude;
    if ((neg_inf == 0 && rng() % 4 == 0) || neg_inf == 1) x = -INFINITY;
    if (c.bf16) x = Widen(kBf16, ToBf16(x));
  }
  c.Reference();
  return c;
}

// x_j as posenc_alibi_add_f32 computes it (plain float, no contraction), then the exact
// softmax of the visible x_j in long double.
void SoftmaxCase::Reference() {
  const AlibiShape& a = shape;
  kind.assign(in.size(), 0);
  ref.assign(in.size(), 0.0L);
  std::vector<float> x(a.n_k);
  for (size_t h = 0; h < a.heads; ++h)
    for (size_t i = 0; i < a.n_q; ++i) {
      const size_t qpos = a.q_offset + i;
      const size_t visible = (flags & POSENC_ALIBI_CAUSAL) ? std::min(a.n_k, qpos + 1) : a.n_k;
      float m = -INFINITY;
      for (size_t j = 0; j < visible; ++j) {
        const float distance = static_cast<float>(qpos > j ? qpos - j : j - qpos);
        const float product = slopes[h] * distance;
        const float scaled = scale * in[a.Index(h, i, j)];
        x[j] = scaled - product;
        m = std::fmax(m, x[j]);
      }
      long double sum = 0;
      for (size_t j = 0; j < visible; ++j)
        sum += std::exp(static_cast<long double>(x[j]) - static_cast<long double>(m));
      for (size_t j = 0; j < a.n_k; ++j) {
        const size_t index = a.Index(h, i, j);
        const bool zero = j >= visible || m == -INFINITY;  // masked, or an all -inf row
        kind[index] = zero ? 2 : 1;
        if (!zero)
          ref[index] = std::exp(static_cast<long double>(x[j]) - static_cast<long double>(m)) / sum;
      }
    }
}

bool SoftmaxCase::RunF32(posenc_isa isa, std::vector<float>& out) const {
  out = in;
  const AlibiShape& a = shape;
  return posenc_set_isa(isa) == POSENC_OK &&
         posenc_alibi_softmax_f32(slopes.data(), a.heads, a.n_q, a.n_k, a.q_offset, out.data(),
                                  a.head_stride, a.row_stride, scale, flags) == POSENC_OK;
}

bool SoftmaxCase::RunBf16(posenc_isa isa, std::vector<uint16_t>& out) const {
  out.resize(in.size());
  for (size_t i = 0; i < in.size(); ++i) out[i] = ToBf16(in[i]);
  const AlibiShape& a = shape;
  return posenc_set_isa(isa) == POSENC_OK &&
         posenc_alibi_softmax_bf16(slopes.data(), a.heads, a.n_q, a.n_k, a.q_offset, out.data(),
                                   a.head_stride, a.row_stride, scale, flags) == POSENC_OK;
}

void CheckSoftmax(uint64_t seed, IsaErrors& errors) {
  std::mt19937_64 rng(seed);
  std::vector<float> out;
  std::vector<uint16_t> out16;
  for (int n = 0; n < kSoftmaxCases; ++n) {
    const SoftmaxCase c = SoftmaxCase::Random(rng, n >= kSoftmaxCases - kLongRows);
    for (posenc_isa isa : AvailableIsas()) {
      StorageErrors& e = errors[isa];
      if (!c.RunF32(isa, out) || (c.bf16 && !c.RunBf16(isa, out16))) {
        ++e.failed_calls;
        continue;
      }
      for (size_t i = 0; i < c.in.size(); ++i) {
        if (c.kind[i] == 0) {
          e.untouched_changed += Bits(out[i]) != Bits(c.in[i]);
          if (c.bf16) e.untouched_changed += out16[i] != ToBf16(c.in[i]);
          continue;
        }
        if (c.kind[i] == 2) {
          if (Bits(out[i]) != 0) KeepWorst(e.softmax, INFINITY);  // must be +0
        } else {
          const long double p = c.ref[i];
          KeepWorst(e.softmax, static_cast<double>(std::fabs(out[i] - p) /
                                                   (POSENC_ALIBI_SOFTMAX_REL_TOLERANCE * p +
                                                    POSENC_ALIBI_SOFTMAX_ABS_TOLERANCE)));
        }
        if (c.bf16) e.softmax_bf16 += !Same(kBf16, out16[i], ToBf16(out[i]));
      }
    }
  }
}

// ---- 16-bit storage: every element of the buffer against bf16/f16(the f32 result) ----

// Runs `kStorageCases` random cases of Case, bf16 and f16 alternately, on every available
// ISA: Run(isa, true, f32 buffer, 16-bit buffer) runs the _f32 kernel on the widened input
// and the 16-bit kernel on the input; elements that differ are added to count(errors).
template <class Case, class Count>
void CheckStorage(std::mt19937_64& rng, IsaErrors& errors, Count&& count) {
  std::vector<float> out;
  std::vector<uint16_t> out16;
  for (int n = 0; n < kStorageCases; ++n) {
    const Storage s = (n % 2) ? kF16 : kBf16;
    const Case c = Case::Random(rng, s);
    for (posenc_isa isa : AvailableIsas()) {
      out = Widened(s, c.in);
      out16 = c.in;
      if (posenc_set_isa(isa) != POSENC_OK || !c.Run(out.data()) || !c.Run(out16.data())) {
        ++errors[isa].failed_calls;
        continue;
      }
      for (size_t i = 0; i < out.size(); ++i)
        count(errors[isa])[s] += !Same(s, out16[i], Round(s, out[i]));
    }
  }
}

// A RoPE call on q and k views ([L, H, D] or [H, L, D], padded) in one buffer, k after q.
struct RopeCase {
  Storage storage = kBf16;
  std::shared_ptr<posenc_rope_plan> plan;
  size_t head_dim = 0, tokens = 0, q_heads = 0, k_heads = 0, token_stride = 0, head_stride = 0;
  size_t k_offset = 0;
  unsigned flags = 0;
  std::vector<int32_t> positions;  // empty: start_pos + t
  int32_t start_pos = 0;
  std::vector<uint16_t> in;

  static RopeCase Random(std::mt19937_64& rng, Storage s);
  template <class T>
  bool Run(T* data) const;
};

RopeCase RopeCase::Random(std::mt19937_64& rng, Storage s) {
  static const double kBases[] = {10000.0, 500000.0, 1e6, 2.5};
  RopeCase c;
  c.storage = s;
  const size_t rotary_dim = 2 * (1 + rng() % 40);
  const double att = (rng() % 2) ? 1.0 : 0.5 + std::uniform_real_distribution<double>(0, 1)(rng);
  posenc_rope_plan* plan = nullptr;
  if (posenc_rope_plan_create(&plan, rotary_dim, kBases[rng() % 4], att) == POSENC_OK)
    c.plan.reset(plan, PlanDeleter());
  c.head_dim = rotary_dim + ((rng() % 2) ? rng() % 9 : 0);
  c.tokens = 1 + rng() % 8;
  c.q_heads = 1 + rng() % 4;
  c.k_heads = rng() % 4;
  const size_t heads = std::max(c.q_heads, c.k_heads), pad = (rng() % 2) ? rng() % 4 : 0;
  if (rng() % 2) {  // [H, L, D]
    c.token_stride = c.head_dim + pad;
    c.head_stride = c.tokens * c.token_stride;
  } else {  // [L, H, D]
    c.head_stride = c.head_dim + pad;
    c.token_stride = heads * c.head_stride + pad;
  }
  c.k_offset = (c.tokens - 1) * c.token_stride + (c.q_heads - 1) * c.head_stride + c.head_dim;
  const size_t k_extent =
      c.k_heads ? (c.tokens - 1) * c.token_stride + (c.k_heads - 1) * c.head_stride + c.head_dim
                : 0;
  c.flags = ((rng() % 2) ? unsigned{POSENC_ROPE_GPTJ} : 0u) |
            ((rng() % 2) ? unsigned{POSENC_ROPE_INVERSE} : 0u) |
            ((rng() % 2) ? unsigned{POSENC_ROPE_F32_ANGLES} : 0u);
  if (rng() % 4 == 0)
    c.start_pos = RandomPosition(rng) / 2;  // start_pos + tokens - 1 fits in int32
  else
    for (size_t t = 0; t < c.tokens; ++t) c.positions.push_back(RandomPosition(rng));
  c.in = RandomStored(rng, s, c.k_offset + k_extent);
  return c;
}

template <class T>
bool RopeCase::Run(T* data) const {
  const posenc_rope_tensor q = {data, q_heads, token_stride, head_stride};
  const posenc_rope_tensor k = {data + k_offset, k_heads, token_stride, head_stride};
  const int32_t* pos = positions.empty() ? nullptr : positions.data();
  const posenc_rope_tensor* kp = k_heads ? &k : nullptr;
  if constexpr (std::is_same_v<T, float>)
    return posenc_rope_f32(plan.get(), head_dim, tokens, pos, start_pos, &q, kp, flags) ==
           POSENC_OK;
  else if (storage == kBf16)
    return posenc_rope_bf16(plan.get(), head_dim, tokens, pos, start_pos, &q, kp, flags) ==
           POSENC_OK;
  else
    return posenc_rope_f16(plan.get(), head_dim, tokens, pos, start_pos, &q, kp, flags) ==
           POSENC_OK;
}

// A sinusoid fill, timesteps fill or add, with padded rows.
struct SinusoidCase {
  enum Op { kFill, kTimesteps, kAdd } op = kFill;
  Storage storage = kBf16;
  std::shared_ptr<posenc_sinusoid_plan> plan;
  size_t rows = 0, stride_arg = 0;
  unsigned flags = 0;
  std::vector<int32_t> positions;  // empty: start_pos + r
  int32_t start_pos = 0;
  std::vector<float> timesteps;
  std::vector<uint16_t> in;

  static SinusoidCase Random(std::mt19937_64& rng, Storage s);
  template <class T>
  bool Run(T* data) const;
};

SinusoidCase SinusoidCase::Random(std::mt19937_64& rng, Storage s) {
  static const double kBases[] = {10000.0, 100.0, 1e6};
  SinusoidCase c;
  c.storage = s;
  c.op = static_cast<Op>(rng() % 3);
  const bool long_call = rng() % 8 == 0;  // re-anchoring every 256 rows
  const size_t dim = long_call ? 1 + rng() % 16 : 1 + rng() % 100;
  c.rows = long_call ? 200 + rng() % 400 : 1 + rng() % 12;
  posenc_sinusoid_plan* plan = nullptr;
  if (posenc_sinusoid_plan_create(&plan, dim, kBases[rng() % 3]) == POSENC_OK)
    c.plan.reset(plan, PlanDeleter());
  c.flags =
      static_cast<unsigned>(rng() % 3) | ((rng() % 2) ? unsigned{POSENC_SINUSOID_F32_ANGLES} : 0u);
  if (rng() % 4 == 0) {
    c.start_pos = RandomPosition(rng) / 2;
  } else {
    for (size_t r = 0; r < c.rows; ++r) {
      const bool jump = r == 0 || rng() % 8 == 0 || c.positions.back() == INT32_MAX;
      c.positions.push_back(jump ? RandomPosition(rng) : c.positions.back() + 1);
    }
  }
  for (size_t r = 0; c.op == kTimesteps && r < c.rows; ++r) {
    const double limit = (rng() % 2) ? 1000.0 : 0x1p30;
    c.timesteps.push_back(
        static_cast<float>(std::uniform_real_distribution<double>(-limit, limit)(rng)));
  }
  const size_t pad = (rng() % 2) ? rng() % 4 : 0;
  c.stride_arg = (pad == 0 && rng() % 2) ? 0 : dim + pad;
  c.in = RandomStored(rng, s, c.rows * (dim + pad));
  return c;
}

template <class T>
bool SinusoidCase::Run(T* data) const {
  const posenc_sinusoid_plan* p = plan.get();
  const int32_t* pos = positions.empty() ? nullptr : positions.data();
  const float* t = timesteps.data();
  posenc_status status;
  if constexpr (std::is_same_v<T, float>) {
    status =
        op == kFill  ? posenc_sinusoid_fill_f32(p, rows, pos, start_pos, data, stride_arg, flags)
        : op == kAdd ? posenc_sinusoid_add_f32(p, rows, pos, start_pos, data, stride_arg, flags)
                     : posenc_sinusoid_fill_timesteps_f32(p, rows, t, data, stride_arg, flags);
  } else if (storage == kBf16) {
    status =
        op == kFill  ? posenc_sinusoid_fill_bf16(p, rows, pos, start_pos, data, stride_arg, flags)
        : op == kAdd ? posenc_sinusoid_add_bf16(p, rows, pos, start_pos, data, stride_arg, flags)
                     : posenc_sinusoid_fill_timesteps_bf16(p, rows, t, data, stride_arg, flags);
  } else {
    status =
        op == kFill  ? posenc_sinusoid_fill_f16(p, rows, pos, start_pos, data, stride_arg, flags)
        : op == kAdd ? posenc_sinusoid_add_f16(p, rows, pos, start_pos, data, stride_arg, flags)
                     : posenc_sinusoid_fill_timesteps_f16(p, rows, t, data, stride_arg, flags);
  }
  return status == POSENC_OK;
}

// An ALiBi add (scaled) or bias call.
struct AlibiCase {
  Storage storage = kBf16;
  std::vector<float> slopes;
  AlibiShape shape;
  float scale = 1.0f;
  unsigned flags = 0;
  bool bias_only = false;
  std::vector<uint16_t> in;

  static AlibiCase Random(std::mt19937_64& rng, Storage s);
  template <class T>
  bool Run(T* data) const;
};

AlibiCase AlibiCase::Random(std::mt19937_64& rng, Storage s) {
  AlibiCase c;
  c.storage = s;
  const size_t heads = 1 + rng() % 6;
  c.slopes = RandomSlopes(rng, heads);
  c.shape = RandomShape(rng, heads, 1 + rng() % 8, 1 + rng() % 150);
  c.scale = (rng() % 2) ? 1.0f : std::uniform_real_distribution<float>(-2, 2)(rng);
  c.flags = (rng() % 2) ? unsigned{POSENC_ALIBI_CAUSAL} : 0u;
  c.bias_only = rng() % 4 == 0;
  c.in = RandomStored(rng, s, c.shape.Extent());
  return c;
}

template <class T>
bool AlibiCase::Run(T* data) const {
  const AlibiShape& a = shape;
  const float* m = slopes.data();
  const size_t hs = a.head_stride, rs = a.row_stride;
  posenc_status status;
  if constexpr (std::is_same_v<T, float>) {
    status = bias_only
                 ? posenc_alibi_bias_f32(m, a.heads, a.n_q, a.n_k, a.q_offset, data, hs, rs, flags)
                 : posenc_alibi_add_f32(m, a.heads, a.n_q, a.n_k, a.q_offset, data, hs, rs, scale,
                                        flags);
  } else if (storage == kBf16) {
    status = bias_only
                 ? posenc_alibi_bias_bf16(m, a.heads, a.n_q, a.n_k, a.q_offset, data, hs, rs, flags)
                 : posenc_alibi_add_bf16(m, a.heads, a.n_q, a.n_k, a.q_offset, data, hs, rs, scale,
                                         flags);
  } else {
    status = bias_only
                 ? posenc_alibi_bias_f16(m, a.heads, a.n_q, a.n_k, a.q_offset, data, hs, rs, flags)
                 : posenc_alibi_add_f16(m, a.heads, a.n_q, a.n_k, a.q_offset, data, hs, rs, scale,
                                        flags);
  }
  return status == POSENC_OK;
}

// ---- the table ------------------------------------------------------------------------

IsaErrors CheckAll(uint64_t seed) {
  IsaErrors errors(POSENC_ISA_COUNT);
  CheckSoftmax(seed, errors);
  std::mt19937_64 rng(seed + 1);  // not the softmax's cases again
  CheckStorage<RopeCase>(rng, errors, [](StorageErrors& e) -> size_t* { return e.rope; });
  CheckStorage<SinusoidCase>(rng, errors, [](StorageErrors& e) -> size_t* { return e.sinusoid; });
  CheckStorage<AlibiCase>(rng, errors, [](StorageErrors& e) -> size_t* { return e.alibi; });
  return errors;
}

bool Passes(const StorageErrors& e) {
  return e.softmax <= 1.0 && e.softmax_bf16 + e.rope[0] + e.rope[1] + e.sinusoid[0] +
                                     e.sinusoid[1] + e.alibi[0] + e.alibi[1] + e.untouched_changed +
                                     e.failed_calls ==
                                 0;
}

void PrintRow(std::ostream& out, posenc_isa isa, const StorageErrors& e) {
  char rope[48], sinusoid[48], alibi[48], line[320];
  std::snprintf(rope, sizeof rope, "%zu/%zu", e.rope[0], e.rope[1]);
  std::snprintf(sinusoid, sizeof sinusoid, "%zu/%zu", e.sinusoid[0], e.sinusoid[1]);
  std::snprintf(alibi, sizeof alibi, "%zu/%zu", e.alibi[0], e.alibi[1]);
  std::snprintf(line, sizeof line, "  %-8s %11.3g %9.3g %13zu %14s %13s %15s %10zu %6zu   %s\n",
                posenc_isa_name(isa), e.softmax, 1.0, e.softmax_bf16, rope, sinusoid, alibi,
                e.untouched_changed, e.failed_calls, Passes(e) ? "PASS" : "FAIL");
  out << line;
}

}  // namespace

bool RunStorageCheck(uint64_t seed, std::ostream& out) {
  out << "\n  ALiBi softmax, bf16/f16 storage: " << kSoftmaxCases << " random softmax calls ("
      << kLongRows << " of 4097+ keys), " << kStorageCases
      << " each\n"
         "    of RoPE, sinusoid and ALiBi bf16/f16 (padded strides, query offsets up to 2^31)\n"
         "  softmax err: posenc_alibi_softmax_f32, causal or not, scale, -inf scores, worst\n"
         "    |p - p*| / (rel_tol * p* + abs_tol) against the exact softmax of the float x_j\n"
         "    (long double; masked keys and all -inf rows exactly +0)\n"
         "  softmax bf16: elements of posenc_alibi_softmax_bf16 not bit-identical to the same\n"
         "    ISA's f32 result rounded to bf16\n"
         "  rope, sin, alibi bf16/f16: elements of the _bf16 / _f16 kernels (sin: fill,\n"
         "    timesteps fill, add; alibi: add, bias) not bit-identical to the same ISA's _f32\n"
         "    result on the widened input, rounded (whole buffer: the rest untouched)\n";
  out << "  isa      softmax err     bound  softmax bf16  rope bf16/f16  sin bf16/f16"
         "  alibi bf16/f16  untouched  calls   result\n";
  const IsaErrors errors = CheckAll(seed);
  const bool all_pass = PrintIsaRows([&](posenc_isa isa) {
    PrintRow(out, isa, errors[isa]);
    return Passes(errors[isa]);
  });
  out << "  (untouched: softmax elements outside the rows that changed; calls: failed calls)\n";
  return all_pass;
}

}  // namespace posenc_report
