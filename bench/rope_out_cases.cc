// Runtime-shaped RoPE rows: the out-of-place form and the shared rotation factors, at the
// shapes of rope_cases.cc (tokens 1, 16, 512, 4096; 40 heads of 128; base 10000; token t at
// position 1000 + t, given as a positions array; accurate angles).
//   rope_out_<src>_<dst>_<pairs>: posenc_rope_out, one call per pass, from an f32 source
//     [L, 40, 128] into a separate destination (f32, bf16 or f16) of the same layout. Both
//     are ONE 40-head view (the 32 Q + 8 K heads of rope_cases.cc as packed rows: rotating
//     them is the same work per token as the separate Q and K buffers there).
//   copy_then_rope_f32_f32_<pairs>: the same job as a caller did it before posenc_rope_out:
//     memcpy of the source into the destination, then posenc_rope_f32 in place on the
//     destination (the same 40-head view as q, no k).
//   rope_apply_f32_neox: posenc_rope_apply in place on rope_f32_neox's separate Q [L, 32, 128]
//     and K [L, 8, 128] buffers (two calls per pass, Q then K, as a layer applies them), the
//     factors of the L positions made once by posenc_rope_factors_compute when the row is set
//     up (untimed, with the row's ISA active: the values that ISA's posenc_rope_f32 uses).
// Bytes: rope_out and copy_then_rope count the source and the destination once each (s + d)
// and are compared with limit_copy/bytes:(s + d); rope_apply counts Q and K read and written
// (2 x their bytes), compared with limit_rmw of their bytes like rope_f32_neox, so that
// bytes/s ratios with that row are time ratios. The factors (L rows of 2 x 64 floats) are
// not counted. Items: the elements written. No naive rows.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_buffer.h"
#include "bench_rows.h"
#include "posenc.h"
#include "rope_common.h"

namespace posenc_bench {
namespace {

using rope::ElementBytes;
using rope::RandomElements;
using rope::Storage;

constexpr double kBase = 10000.0;
constexpr int32_t kFirstPosition = 1000;  // positions[t] = 1000 + t
constexpr size_t kQHeads = 32, kKHeads = 8, kHeads = kQHeads + kKHeads, kDim = 128;
const size_t kTokens[] = {1, 16, 512, 4096};  // decode, cache resident, prefill

// "tokens:512/heads:40/dim:128"
std::string ShapeName(size_t tokens) {
  return "tokens:" + std::to_string(tokens) + "/heads:" + std::to_string(kHeads) +
         "/dim:" + std::to_string(kDim);
}

std::vector<int32_t> Positions(size_t tokens) {
  std::vector<int32_t> positions(tokens);
  for (size_t t = 0; t < tokens; ++t) positions[t] = kFirstPosition + static_cast<int32_t>(t);
  return positions;
}

using PlanPtr = std::shared_ptr<posenc_rope_plan>;

posenc_status MakePlan(PlanPtr& plan) {
  posenc_rope_plan* raw = nullptr;
  const posenc_status status = posenc_rope_plan_create(&raw, kDim, kBase, 1.0);
  plan = PlanPtr(raw, posenc_rope_plan_destroy);
  return status;
}

posenc_dtype Dtype(Storage storage) {
  return storage == Storage::kBf16  ? POSENC_DTYPE_BF16
         : storage == Storage::kF16 ? POSENC_DTYPE_F16
                                    : POSENC_DTYPE_F32;
}

// ---- rope_out, copy_then_rope ----------------------------------------------------------

struct OutKernel {
  const char* name;
  unsigned flags;  // NEOX or GPTJ
  Storage dst;     // the source is f32
  bool copy_then_rope;
};

// Each rope_out f32 -> f32 kernel is followed by its copy_then_rope twin (the report sets
// them side by side).
const OutKernel kOutKernels[] = {
    {"rope_out_f32_f32_neox", POSENC_ROPE_NEOX, Storage::kF32, false},
    {"copy_then_rope_f32_f32_neox", POSENC_ROPE_NEOX, Storage::kF32, true},
    {"rope_out_f32_f32_gptj", POSENC_ROPE_GPTJ, Storage::kF32, false},
    {"copy_then_rope_f32_f32_gptj", POSENC_ROPE_GPTJ, Storage::kF32, true},
    {"rope_out_f32_bf16_neox", POSENC_ROPE_NEOX, Storage::kBf16, false},
    {"rope_out_f32_f16_neox", POSENC_ROPE_NEOX, Storage::kF16, false}};

size_t Elements(size_t tokens) { return tokens * kHeads * kDim; }

// The f32 source [L, 40, 128], random in [-1, 1] (never written), and the destination
// (zeroed here, so that its pages are in place before the first pass).
struct OutBuffers {
  OutBuffers(size_t t, Storage dst_storage)
      : tokens(t),
        dst_bytes(Elements(t) * ElementBytes(dst_storage)),
        src(RandomElements(Elements(t), 1, Storage::kF32)),
        dst(AlignedFloatArray((dst_bytes + sizeof(float) - 1) / sizeof(float))),
        positions(Positions(t)) {
    std::memset(dst.get(), 0, dst_bytes);
  }
  size_t tokens;
  size_t dst_bytes;
  AlignedFloats src, dst;
  std::vector<int32_t> positions;
};

Pass OutPass(const OutKernel& kernel, size_t tokens) {
  PlanPtr plan;
  const posenc_status status = MakePlan(plan);
  if (status != POSENC_OK) return FailedPass(status);
  const auto buf = std::make_shared<OutBuffers>(tokens, kernel.dst);
  if (kernel.copy_then_rope) {
    const posenc_rope_tensor dst = {buf->dst.get(), kHeads, kHeads * kDim, kDim};
    return [plan, buf, dst, flags = kernel.flags] {
      std::memcpy(buf->dst.get(), buf->src.get(), buf->dst_bytes);
      return posenc_rope_f32(plan.get(), kDim, buf->tokens, buf->positions.data(), 0, &dst, nullptr,
                             flags);
    };
  }
  const posenc_rope_view src = {buf->src.get(), POSENC_DTYPE_F32, kHeads, kHeads * kDim, kDim, 0};
  const posenc_rope_view dst = {buf->dst.get(), Dtype(kernel.dst), kHeads, kHeads * kDim, kDim, 0};
  return [plan, buf, src, dst, flags = kernel.flags] {
    return posenc_rope_out(plan.get(), kDim, 1, buf->tokens, buf->positions.data(), 0, &src, &dst,
                           flags);
  };
}

GroupRows OutGroup(const OutKernel& kernel, size_t tokens) {
  const size_t src_bytes = Elements(tokens) * sizeof(float);
  const size_t dst_bytes = Elements(tokens) * ElementBytes(kernel.dst);
  const char* dst_type = kernel.dst == Storage::kBf16  ? "bf16"
                         : kernel.dst == Storage::kF16 ? "f16"
                                                       : "f32";
  const std::string about =
      std::to_string(src_bytes) + " + " + std::to_string(dst_bytes) + " bytes, f32 [" +
      std::to_string(tokens) + ", 40, 128] -> " + dst_type +
      (kernel.copy_then_rope ? ": memcpy, then posenc_rope_f32 in place" : " out of place");
  GroupRows rows = {{kernel.name, ShapeName(tokens), LimitKind::kCopy, src_bytes + dst_bytes, about,
                     /*naive=*/false},
                    static_cast<int64_t>(src_bytes + dst_bytes),
                    static_cast<int64_t>(Elements(tokens)),
                    Factory(OutPass, kernel, tokens),
                    nullptr};
  return rows;
}

// ---- rope_apply -------------------------------------------------------------------------

// rope_f32_neox's buffers (Q [L, 32, 128], K [L, 8, 128], random in [-1, 1]) and the factors
// of their positions. Applying them in place again every pass keeps the magnitudes (the
// plan's attention factor is 1).
struct ApplyBuffers {
  explicit ApplyBuffers(size_t t)
      : tokens(t),
        q(RandomElements(t * kQHeads * kDim, 1, Storage::kF32)),
        k(RandomElements(t * kKHeads * kDim, 2, Storage::kF32)),
        factor_bytes(posenc_rope_factors_bytes(kDim, t, POSENC_ROPE_NEOX)),
        factor_storage(AlignedFloatArray(factor_bytes / sizeof(float) + 1)) {}
  size_t tokens;
  AlignedFloats q, k;
  size_t factor_bytes;
  AlignedFloats factor_storage;
  posenc_rope_factors factors = {};
};

Pass ApplyPass(size_t tokens) {
  PlanPtr plan;
  posenc_status status = MakePlan(plan);
  if (status != POSENC_OK) return FailedPass(status);
  const auto buf = std::make_shared<ApplyBuffers>(tokens);
  const std::vector<int32_t> positions = Positions(tokens);
  status = posenc_rope_factors_compute(plan.get(), tokens, positions.data(), 0, POSENC_ROPE_NEOX,
                                       buf->factor_storage.get(), buf->factor_bytes, &buf->factors);
  if (status != POSENC_OK) return FailedPass(status);
  const posenc_rope_view q = {buf->q.get(), POSENC_DTYPE_F32, kQHeads, kQHeads * kDim, kDim, 0};
  const posenc_rope_view k = {buf->k.get(), POSENC_DTYPE_F32, kKHeads, kKHeads * kDim, kDim, 0};
  return [buf, q, k] {
    const posenc_status q_status = posenc_rope_apply(&buf->factors, 0, buf->tokens, kDim, 1,
                                                     buf->tokens, &q, &q, POSENC_ROPE_NEOX);
    if (q_status != POSENC_OK) return q_status;
    return posenc_rope_apply(&buf->factors, 0, buf->tokens, kDim, 1, buf->tokens, &k, &k,
                             POSENC_ROPE_NEOX);
  };
}

GroupRows ApplyGroup(size_t tokens) {
  const size_t bytes = Elements(tokens) * sizeof(float);
  const std::string about =
      std::to_string(bytes) + " bytes in place, 32 Q + 8 K heads; factors made beforehand (" +
      std::to_string(posenc_rope_factors_bytes(kDim, tokens, 0)) + " bytes, not counted)";
  return {{"rope_apply_f32_neox", ShapeName(tokens), LimitKind::kRmw, bytes, about,
           /*naive=*/false},
          2 * static_cast<int64_t>(bytes),
          static_cast<int64_t>(Elements(tokens)),
          Factory(ApplyPass, tokens),
          nullptr};
}

}  // namespace

std::vector<GroupRows> RopeOutRows() {
  std::vector<GroupRows> rows;
  for (const OutKernel& kernel : kOutKernels)
    for (size_t tokens : kTokens) rows.push_back(OutGroup(kernel, tokens));
  return rows;
}

std::vector<GroupRows> RopeApplyRows() {
  std::vector<GroupRows> rows;
  for (size_t tokens : kTokens) rows.push_back(ApplyGroup(tokens));
  return rows;
}

}  // namespace posenc_bench
