// RoPE rows: every available ISA through the public dispatch, and the naive loop; f32 head
// vectors in both pair layouts, and bf16 / f16 ones (NEOX).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../kernels/half.h"
#include "bench_buffer.h"
#include "bench_rows.h"
#include "posenc.h"
#include "rope_common.h"
#include "rope_naive.h"

namespace posenc_bench {
namespace {

constexpr double kBase = 10000.0;
constexpr int32_t kFirstPosition = 1000;  // positions[t] = 1000 + t

using rope::ElementBytes;
using rope::RandomElements;
using rope::Storage;

struct RopeKernel {
  const char* name;
  unsigned flags;  // accurate angles (the default), forward
  Storage storage;
  naive_rope_fn naive;      // f32
  naive_rope16_fn naive16;  // bf16, f16
};

const RopeKernel kKernels[] = {
    {"rope_f32_neox", POSENC_ROPE_NEOX, Storage::kF32, naive_rope_neox, nullptr},
    {"rope_f32_gptj", POSENC_ROPE_GPTJ, Storage::kF32, naive_rope_gptj, nullptr},
    {"rope_bf16_neox", POSENC_ROPE_NEOX, Storage::kBf16, nullptr, naive_rope_neox_bf16},
    {"rope_f16_neox", POSENC_ROPE_NEOX, Storage::kF16, nullptr, naive_rope_neox_f16},
    // The deterministic mode next to the default (no naive row: rope_f32_neox has it).
    {"rope_f32_neox_det", POSENC_ROPE_NEOX | POSENC_ROPE_DETERMINISTIC, Storage::kF32, nullptr,
     nullptr}};

// Llama-3-8B-like heads: 32 Q heads and 8 K heads (GQA), head_dim = rotary_dim = 128,
// layout [L, H, D] with separate Q and K buffers.
struct RopeShape {
  size_t tokens;
  size_t q_heads;
  size_t k_heads;
  size_t head_dim;
  size_t rotary_dim;
};

// Decode (1 token), cache resident (16), prefill (512, 4096).
const RopeShape kShapes[] = {
    {1, 32, 8, 128, 128}, {16, 32, 8, 128, 128}, {512, 32, 8, 128, 128}, {4096, 32, 8, 128, 128}};

// "tokens:512/heads:40/dim:128" (heads: Q + K heads)
std::string ShapeName(const RopeShape& shape) {
  return "tokens:" + std::to_string(shape.tokens) +
         "/heads:" + std::to_string(shape.q_heads + shape.k_heads) +
         "/dim:" + std::to_string(shape.head_dim);
}

size_t Elements(const RopeShape& shape) {
  return shape.tokens * (shape.q_heads + shape.k_heads) * shape.head_dim;
}

// The Q and K buffers of one shape ([L, Hq, D] and [L, Hk, D]), random in [-1, 1], and the
// positions. Rotating in place again every pass keeps the magnitudes, so the data stays
// well-scaled however many passes run.
struct RopeBuffers {
  RopeBuffers(const RopeShape& s, Storage st)
      : shape(s),
        storage(st),
        q(RandomElements(s.tokens * s.q_heads * s.head_dim, 1, st)),
        k(RandomElements(s.tokens * s.k_heads * s.head_dim, 2, st)),
        positions(s.tokens) {
    for (size_t t = 0; t < s.tokens; ++t) positions[t] = kFirstPosition + static_cast<int32_t>(t);
  }
  posenc_rope_tensor View(float* data, size_t heads) const {
    return {data, heads, heads * shape.head_dim, shape.head_dim};
  }
  uint16_t* Q16() const { return reinterpret_cast<uint16_t*>(q.get()); }
  uint16_t* K16() const { return reinterpret_cast<uint16_t*>(k.get()); }
  RopeShape shape;
  Storage storage;
  AlignedFloats q, k;  // for bf16 / f16: the 16-bit elements
  std::vector<int32_t> positions;
};

Pass PosencPass(const RopeKernel& kernel, const RopeShape& shape) {
  posenc_rope_plan* raw_plan = nullptr;
  const posenc_status status = posenc_rope_plan_create(&raw_plan, shape.rotary_dim, kBase, 1.0);
  if (status != POSENC_OK) return FailedPass(status);
  const std::shared_ptr<posenc_rope_plan> plan(raw_plan, posenc_rope_plan_destroy);
  const auto buf = std::make_shared<RopeBuffers>(shape, kernel.storage);
  const posenc_rope_tensor q = buf->View(buf->q.get(), shape.q_heads);
  const posenc_rope_tensor k = buf->View(buf->k.get(), shape.k_heads);
  const auto rotate = kernel.storage == Storage::kBf16  ? posenc_rope_bf16
                      : kernel.storage == Storage::kF16 ? posenc_rope_f16
                                                        : posenc_rope_f32;
  return [plan, buf, q, k, rotate, flags = kernel.flags] {
    return rotate(plan.get(), buf->shape.head_dim, buf->shape.tokens, buf->positions.data(), 0, &q,
                  &k, flags);
  };
}

// The naive loop gets its cos/sin table ([L, R/2] each) for free: built here, untimed.
Pass NaivePass(const RopeKernel& kernel, const RopeShape& shape) {
  const auto buf = std::make_shared<RopeBuffers>(shape, kernel.storage);
  const size_t table_size = shape.tokens * shape.rotary_dim / 2;
  const std::shared_ptr<float[]> cos_tab = AlignedFloatArray(table_size);
  const std::shared_ptr<float[]> sin_tab = AlignedFloatArray(table_size);
  naive_rope_table(shape.tokens, buf->positions.data(), shape.rotary_dim, kBase, cos_tab.get(),
                   sin_tab.get());
  return [buf, cos_tab, sin_tab, naive = kernel.naive, naive16 = kernel.naive16] {
    const RopeShape& s = buf->shape;
    if (naive16) {
      naive16(buf->Q16(), s.tokens, s.q_heads, s.head_dim, s.rotary_dim, cos_tab.get(),
              sin_tab.get());
      naive16(buf->K16(), s.tokens, s.k_heads, s.head_dim, s.rotary_dim, cos_tab.get(),
              sin_tab.get());
      return POSENC_OK;
    }
    naive(buf->q.get(), s.tokens, s.q_heads, s.head_dim, s.rotary_dim, cos_tab.get(),
          sin_tab.get());
    naive(buf->k.get(), s.tokens, s.k_heads, s.head_dim, s.rotary_dim, cos_tab.get(),
          sin_tab.get());
    return POSENC_OK;
  };
}

// Q and K read and written once: 2 * their bytes (2-byte elements for bf16 / f16, compared
// with limit_rmw of the same bytes). The naive loop also reads its table (tokens * R
// floats), which is NOT counted, so that bytes/s ratios between the rows are time ratios.
// Items: every element of Q and K (R = D in these shapes).
GroupRows Group(const RopeKernel& kernel, const RopeShape& shape) {
  const size_t bytes = Elements(shape) * ElementBytes(kernel.storage);
  const std::string about = std::to_string(bytes) + " bytes in place, " +
                            std::to_string(shape.q_heads) + " Q + " +
                            std::to_string(shape.k_heads) + " K heads";
  const bool naive = kernel.naive || kernel.naive16;
  return {{kernel.name, ShapeName(shape), LimitKind::kRmw, bytes, about, naive},
          2 * static_cast<int64_t>(bytes),
          static_cast<int64_t>(Elements(shape)),
          Factory(PosencPass, kernel, shape),
          naive ? Factory(NaivePass, kernel, shape) : nullptr};
}

}  // namespace

AlignedFloats rope::RandomElements(size_t n, uint64_t seed, Storage storage) {
  AlignedFloats values = RandomFloats(n, seed);
  if (storage == Storage::kF32) return values;
  AlignedFloats packed = AlignedFloatArray((n + 1) / 2);
  auto* bits = reinterpret_cast<uint16_t*>(packed.get());
  for (size_t i = 0; i < n; ++i)
    bits[i] =
        storage == Storage::kBf16 ? posenc_f32_to_bf16(values[i]) : posenc_f32_to_f16(values[i]);
  return packed;
}

std::vector<GroupRows> RopeRows() {
  std::vector<GroupRows> rows;
  for (const RopeKernel& kernel : kKernels)
    for (const RopeShape& shape : kShapes) rows.push_back(Group(kernel, shape));
  return rows;
}

}  // namespace posenc_bench
