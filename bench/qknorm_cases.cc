// QK-norm fused with RoPE (posenc_rope_qknorm) against the two passes runtimes make today, at
// rope_cases.cc's decode and prefill shapes (tokens 1, 16, 512, and 4096: 80 MiB, DRAM-sized;
// 32 Q + 8 K heads of 128;
// base 10000; token t at position 1000 + t, given as a positions array; accurate angles),
// Q [L, 32, 128] and K [L, 8, 128] separate f32 buffers, rotated in place, each with its own
// weights (all 1: repeated passes over the same buffer act as a power iteration, so weights
// of different sizes shrink the components of the smaller ones pass after pass into subnormal
// floats, which cost Intel CPUs a microcode assist per operation: with weights 1 +- 0.1 at
// random the 16-token rows took 35x (avx512) and 4.5x (scalar) their time on a Xeon, 320 us
// against 9.2), eps 1e-6:
//   qknorm_rope_f32_neox: one posenc_rope_qknorm call (q and k);
//   qknorm_then_rope_f32_neox: a plain C RMSNorm loop over every head of Q and K (the sum of
//     squares in double, as ggml's rms_norm sums, then x * inv * w in float), then
//     posenc_rope_f32 on Q and K.
// Bytes: Q and K read and written (2 x their bytes), compared with limit_rmw of their bytes
// like rope_f32_neox (the weights, 2 x 512 bytes, are not counted). Items: the elements
// written. No naive rows (the two-pass row is the comparison).
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_buffer.h"
#include "bench_rows.h"
#include "posenc.h"
#include "rope_common.h"

namespace posenc_bench {
namespace {

using rope::RandomElements;
using rope::Storage;

constexpr double kBase = 10000.0;
constexpr int32_t kFirstPosition = 1000;
constexpr size_t kQHeads = 32, kKHeads = 8, kHeads = kQHeads + kKHeads, kDim = 128;
constexpr float kEps = 1e-6f;
const size_t kTokens[] = {1, 16, 512, 4096};
constexpr size_t kTwoPassMaxTokens = 512;

struct Buffers {
  explicit Buffers(size_t t)
      : tokens(t),
        q(RandomElements(t * kQHeads * kDim, 1, Storage::kF32)),
        k(RandomElements(t * kKHeads * kDim, 2, Storage::kF32)),
        wq(kDim, 1.0f),
        wk(kDim, 1.0f),
        positions(t) {
    for (size_t i = 0; i < t; ++i) positions[i] = kFirstPosition + static_cast<int32_t>(i);
  }
  size_t tokens;
  AlignedFloats q, k;
  std::vector<float> wq, wk;
  std::vector<int32_t> positions;
};

// The plain C RMSNorm of n head vectors of kDim floats, in place.
void RmsNorm(float* x, size_t n, const float* w) {
  for (size_t h = 0; h < n; ++h, x += kDim) {
    double sum = 0.0;
    for (size_t d = 0; d < kDim; ++d) sum += static_cast<double>(x[d]) * x[d];
    const float inv = 1.0f / std::sqrt(static_cast<float>(sum / kDim) + kEps);
    for (size_t d = 0; d < kDim; ++d) x[d] = x[d] * inv * w[d];
  }
}

Pass QknormPass(size_t tokens, bool fused) {
  posenc_rope_plan* raw = nullptr;
  const posenc_status status = posenc_rope_plan_create(&raw, kDim, kBase, 1.0);
  const std::shared_ptr<posenc_rope_plan> plan(raw, posenc_rope_plan_destroy);
  if (status != POSENC_OK) return FailedPass(status);
  const auto buf = std::make_shared<Buffers>(tokens);
  if (fused) {
    const posenc_rope_view q = {buf->q.get(), POSENC_DTYPE_F32, kQHeads, kQHeads * kDim, kDim, 0};
    const posenc_rope_view k = {buf->k.get(), POSENC_DTYPE_F32, kKHeads, kKHeads * kDim, kDim, 0};
    const posenc_qk_norm qn = {buf->wq.data(), kEps, 0}, kn = {buf->wk.data(), kEps, 0};
    return [plan, buf, q, k, qn, kn] {
      return posenc_rope_qknorm(plan.get(), kDim, 1, buf->tokens, buf->positions.data(), 0, &q, &q,
                                &qn, &k, &k, &kn, POSENC_ROPE_NEOX);
    };
  }
  const posenc_rope_tensor q = {buf->q.get(), kQHeads, kQHeads * kDim, kDim};
  const posenc_rope_tensor k = {buf->k.get(), kKHeads, kKHeads * kDim, kDim};
  return [plan, buf, q, k] {
    RmsNorm(buf->q.get(), buf->tokens * kQHeads, buf->wq.data());
    RmsNorm(buf->k.get(), buf->tokens * kKHeads, buf->wk.data());
    return posenc_rope_f32(plan.get(), kDim, buf->tokens, buf->positions.data(), 0, &q, &k,
                           POSENC_ROPE_NEOX);
  };
}

GroupRows QknormGroup(size_t tokens, bool fused) {
  const size_t elements = tokens * kHeads * kDim, bytes = elements * sizeof(float);
  const std::string about = std::to_string(bytes) + " bytes in place, 32 Q + 8 K heads: " +
                            (fused ? "posenc_rope_qknorm" : "C RMSNorm loop, then posenc_rope_f32");
  const std::string shape = "tokens:" + std::to_string(tokens) +
                            "/heads:" + std::to_string(kHeads) + "/dim:" + std::to_string(kDim);
  return {{fused ? "qknorm_rope_f32_neox" : "qknorm_then_rope_f32_neox", shape, LimitKind::kRmw,
           bytes, about, /*naive=*/false},
          2 * static_cast<int64_t>(bytes),
          static_cast<int64_t>(elements),
          Factory(QknormPass, tokens, fused),
          nullptr};
}

}  // namespace

std::vector<GroupRows> QknormRows() {
  std::vector<GroupRows> rows;
  // The two-pass row (the comparison) up to 512 tokens, where the acceptance compares them.
  for (bool fused : {true, false})
    for (size_t tokens : kTokens)
      if (fused || tokens <= kTwoPassMaxTokens) rows.push_back(QknormGroup(tokens, fused));
  return rows;
}

}  // namespace posenc_bench
