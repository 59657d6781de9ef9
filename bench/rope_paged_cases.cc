// Slot-mapped RoPE into a paged f16 KV cache (posenc_rope_out_slots), at decode and prefill
// sizes (tokens 1, 16, 512, and 16384: a 64 MiB f32 source, DRAM-sized; 8 KV heads of 128,
// the K of a GQA layer; base 10000; token t at
// position 1000 + t; accurate angles):
//   rope_out_paged_f32_f16_neox: an f32 source [L, 8, 128] rotated into a vLLM-style cache
//     [blocks, 16, 8, 128] of f16 holding 4x the call's tokens; the tokens fill blocks of 16
//     consecutive cells, the blocks taken at random (a sequence's block table), int64
//     slot_mapping as vLLM passes it;
//   rope_out_f32_f16_neox (heads:8): the same source into a contiguous [L, 8, 128] f16
//     destination (posenc_rope_out), the comparison: the same bytes with no slots.
//   rope_out_q8_0_neox: the same source rotated straight into ggml q8_0 blocks [L, 8, 4 x 34
//     bytes] (posenc_rope_out_q8_0);
//   rope_out_then_q8_0_neox: the two passes a runtime makes today: posenc_rope_out into an
//     f32 buffer [L, 8, 128], then a plain C transcription of ggml's quantize_row_q8_0_ref.
//   rope_out_fp8_neox: the same source rotated straight into FP8 E4M3 bytes [L, 8, 128]
//     (posenc_rope_out_fp8, scale 0.05: vLLM's fp8 K cache write, x / k_scale);
//   rope_out_then_fp8_neox: posenc_rope_out into an f32 buffer, then a plain C loop of the
//     same conversion (integer logic, written here, not the library's).
// Bytes: source and destination once each (s + d), compared with limit_copy/bytes:(s + d)
// (the q8_0 and fp8 rows: the f32 source and the blocks or bytes; the two-pass rows' buffer is
// not counted).
// Items: the elements written. No naive rows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_buffer.h"
#include "bench_rows.h"
#include "naive_half.h"
#include "posenc.h"
#include "rope_common.h"

namespace posenc_bench {
namespace {

using rope::RandomElements;
using rope::Storage;

constexpr size_t kHeads = 8, kDim = 128, kBlock = 16;
const size_t kTokens[] = {1, 16, 512, 16384};
constexpr size_t kTwoPassMaxTokens = 512;

struct PagedBuffers {
  explicit PagedBuffers(size_t t)
      : tokens(t),
        blocks(4 * ((t + kBlock - 1) / kBlock)),
        src(RandomElements(t * kHeads * kDim, 3, Storage::kF32)),
        cache(AlignedFloatArray(blocks * kBlock * kHeads * kDim / 2 + 1)),
        slots(t),
        positions(t) {
    std::memset(cache.get(), 0, blocks * kBlock * kHeads * kDim * 2);
    std::vector<int64_t> table(blocks);
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), std::mt19937(11));
    for (size_t i = 0; i < t; ++i) {
      slots[i] =
          table[i / kBlock] * static_cast<int64_t>(kBlock) + static_cast<int64_t>(i % kBlock);
      positions[i] = 1000 + static_cast<int32_t>(i);
    }
  }
  size_t tokens, blocks;
  AlignedFloats src, cache;
  std::vector<int64_t> slots;
  std::vector<int32_t> positions;
};

// ggml's quantize_row_q8_0_ref, plain C (the f16 scale as an integrator converts it,
// naive_half.h), k floats (a multiple of 32) into k / 32 blocks.
void QuantizeRowQ8_0(const float* x, uint8_t* y, size_t k) {
  for (size_t i = 0; i < k / 32; ++i, y += 34) {
    float amax = 0.0f;
    for (size_t j = 0; j < 32; ++j) {
      const float v = std::fabs(x[i * 32 + j]);
      amax = amax > v ? amax : v;
    }
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t h = float_to_f16(d);
    std::memcpy(y, &h, 2);
    for (size_t j = 0; j < 32; ++j)
      y[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[i * 32 + j] * id)));
  }
}

Pass Q8Pass(size_t tokens, bool fused) {
  posenc_rope_plan* raw = nullptr;
  const posenc_status status = posenc_rope_plan_create(&raw, kDim, 10000.0, 1.0);
  const std::shared_ptr<posenc_rope_plan> plan(raw, posenc_rope_plan_destroy);
  if (status != POSENC_OK) return FailedPass(status);
  const auto buf = std::make_shared<PagedBuffers>(tokens);
  const size_t row = kDim / 32 * 34;
  const auto blocks = std::make_shared<AlignedBytes>(tokens * kHeads * row);
  const posenc_rope_view src = {buf->src.get(), POSENC_DTYPE_F32, kHeads, kHeads * kDim, kDim, 0};
  if (fused) {
    const posenc_q8_0_view dst = {blocks->data(), kHeads, kHeads * row, row};
    return [plan, buf, blocks, src, dst] {
      return posenc_rope_out_q8_0(plan.get(), kDim, buf->tokens, buf->positions.data(), 0, &src,
                                  &dst, nullptr, POSENC_ROPE_NEOX);
    };
  }
  const auto f32 = std::make_shared<AlignedFloats>(AlignedFloatArray(tokens * kHeads * kDim));
  const posenc_rope_view mid = {f32->get(), POSENC_DTYPE_F32, kHeads, kHeads * kDim, kDim, 0};
  return [plan, buf, blocks, f32, src, mid] {
    const posenc_status st = posenc_rope_out(
        plan.get(), kDim, 1, buf->tokens, buf->positions.data(), 0, &src, &mid, POSENC_ROPE_NEOX);
    QuantizeRowQ8_0(f32->get(), blocks->data(), buf->tokens * kHeads * kDim);
    return st;
  };
}

// float -> OCP FP8 E4M3 (nearest even, saturating to 448, NaN kept), plain C on the bits.
uint8_t Fp8E4m3(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return sign | 0x7f;
  if (u >= 0x43e00000u) return sign | 0x7e;
  if (u < 0x3c800000u) {  // below 2^-6: a multiple of 2^-9
    float a;
    std::memcpy(&a, &u, 4);
    return sign | static_cast<uint8_t>(std::nearbyint(a * 512.0f));
  }
  u -= 120u << 23;
  u += 0x7ffffu + ((u >> 20) & 1u);
  return sign | static_cast<uint8_t>(u >> 20);
}

constexpr float kFp8Scale = 0.05f;

Pass Fp8Pass(size_t tokens, bool fused) {
  posenc_rope_plan* raw = nullptr;
  const posenc_status status = posenc_rope_plan_create(&raw, kDim, 10000.0, 1.0);
  const std::shared_ptr<posenc_rope_plan> plan(raw, posenc_rope_plan_destroy);
  if (status != POSENC_OK) return FailedPass(status);
  const auto buf = std::make_shared<PagedBuffers>(tokens);
  const auto bytes = std::make_shared<AlignedBytes>(tokens * kHeads * kDim);
  const posenc_rope_view src = {buf->src.get(), POSENC_DTYPE_F32, kHeads, kHeads * kDim, kDim, 0};
  if (fused) {
    const posenc_fp8_view dst = {bytes->data(), kHeads, kHeads * kDim, kDim};
    return [plan, buf, bytes, src, dst] {
      return posenc_rope_out_fp8(plan.get(), kDim, buf->tokens, buf->positions.data(), 0, &src,
                                 &dst, kFp8Scale, nullptr, POSENC_ROPE_NEOX);
    };
  }
  const auto f32 = std::make_shared<AlignedFloats>(AlignedFloatArray(tokens * kHeads * kDim));
  const posenc_rope_view mid = {f32->get(), POSENC_DTYPE_F32, kHeads, kHeads * kDim, kDim, 0};
  return [plan, buf, bytes, f32, src, mid] {
    const posenc_status st = posenc_rope_out(
        plan.get(), kDim, 1, buf->tokens, buf->positions.data(), 0, &src, &mid, POSENC_ROPE_NEOX);
    const float* x = f32->get();
    uint8_t* y = bytes->data();
    for (size_t i = 0, n = buf->tokens * kHeads * kDim; i < n; ++i)
      y[i] = Fp8E4m3(x[i] / kFp8Scale);
    return st;
  };
}

Pass PagedPass(size_t tokens, bool paged) {
  posenc_rope_plan* raw = nullptr;
  const posenc_status status = posenc_rope_plan_create(&raw, kDim, 10000.0, 1.0);
  const std::shared_ptr<posenc_rope_plan> plan(raw, posenc_rope_plan_destroy);
  if (status != POSENC_OK) return FailedPass(status);
  const auto buf = std::make_shared<PagedBuffers>(tokens);
  const posenc_rope_view src = {buf->src.get(), POSENC_DTYPE_F32, kHeads, kHeads * kDim, kDim, 0};
  const posenc_rope_view dst = {buf->cache.get(), POSENC_DTYPE_F16, kHeads, kHeads * kDim, kDim, 0};
  if (!paged)
    return [plan, buf, src, dst] {
      return posenc_rope_out(plan.get(), kDim, 1, buf->tokens, buf->positions.data(), 0, &src, &dst,
                             POSENC_ROPE_NEOX);
    };
  const posenc_slots slots = {buf->slots.data(), 1, buf->blocks * kBlock};
  return [plan, buf, src, dst, slots] {
    return posenc_rope_out_slots(plan.get(), kDim, buf->tokens, buf->positions.data(), 0, &src,
                                 &dst, &slots, POSENC_ROPE_NEOX);
  };
}

GroupRows Q8Group(size_t tokens, bool fused) {
  const size_t src_bytes = tokens * kHeads * kDim * 4, dst_bytes = tokens * kHeads * kDim / 32 * 34;
  const std::string shape = "tokens:" + std::to_string(tokens) +
                            "/heads:" + std::to_string(kHeads) + "/dim:" + std::to_string(kDim);
  const std::string about =
      std::to_string(src_bytes) + " + " + std::to_string(dst_bytes) + " bytes, f32 -> q8_0 " +
      (fused ? "blocks in one pass" : "through an f32 buffer, then a C q8_0 quantizer");
  return {{fused ? "rope_out_q8_0_neox" : "rope_out_then_q8_0_neox", shape, LimitKind::kCopy,
           src_bytes + dst_bytes, about, /*naive=*/false},
          static_cast<int64_t>(src_bytes + dst_bytes),
          static_cast<int64_t>(tokens * kHeads * kDim),
          Factory(Q8Pass, tokens, fused),
          nullptr};
}

GroupRows Fp8Group(size_t tokens, bool fused) {
  const size_t src_bytes = tokens * kHeads * kDim * 4, dst_bytes = tokens * kHeads * kDim;
  const std::string shape = "tokens:" + std::to_string(tokens) +
                            "/heads:" + std::to_string(kHeads) + "/dim:" + std::to_string(kDim);
  const std::string about =
      std::to_string(src_bytes) + " + " + std::to_string(dst_bytes) + " bytes, f32 -> fp8 e4m3 " +
      (fused ? "in one pass" : "through an f32 buffer, then a C conversion loop");
  return {{fused ? "rope_out_fp8_neox" : "rope_out_then_fp8_neox", shape, LimitKind::kCopy,
           src_bytes + dst_bytes, about, /*naive=*/false},
          static_cast<int64_t>(src_bytes + dst_bytes),
          static_cast<int64_t>(tokens * kHeads * kDim),
          Factory(Fp8Pass, tokens, fused),
          nullptr};
}

GroupRows PagedGroup(size_t tokens, bool paged) {
  const size_t src_bytes = tokens * kHeads * kDim * 4, dst_bytes = tokens * kHeads * kDim * 2;
  std::string shape = "tokens:" + std::to_string(tokens) + "/heads:" + std::to_string(kHeads) +
                      "/dim:" + std::to_string(kDim);
  if (paged) shape += "/block:" + std::to_string(kBlock);
  const std::string about = std::to_string(src_bytes) + " + " + std::to_string(dst_bytes) +
                            " bytes, f32 -> f16 " +
                            (paged ? "cache cells by slot (4x the tokens' blocks)" : "rows");
  return {{paged ? "rope_out_paged_f32_f16_neox" : "rope_out_f32_f16_neox", shape, LimitKind::kCopy,
           src_bytes + dst_bytes, about, /*naive=*/false},
          static_cast<int64_t>(src_bytes + dst_bytes),
          static_cast<int64_t>(tokens * kHeads * kDim),
          Factory(PagedPass, tokens, paged),
          nullptr};
}

}  // namespace

std::vector<GroupRows> RopePagedRows() {
  std::vector<GroupRows> rows;
  for (bool paged : {true, false})
    for (size_t tokens : kTokens) rows.push_back(PagedGroup(tokens, paged));
  // The two-pass rows (the comparison) up to 512 tokens, where the acceptance compares them.
  for (bool fused : {true, false})
    for (size_t tokens : kTokens)
      if (fused || tokens <= kTwoPassMaxTokens) rows.push_back(Q8Group(tokens, fused));
  for (bool fused : {true, false})
    for (size_t tokens : kTokens)
      if (fused || tokens <= kTwoPassMaxTokens) rows.push_back(Fp8Group(tokens, fused));
  return rows;
}

}  // namespace posenc_bench
