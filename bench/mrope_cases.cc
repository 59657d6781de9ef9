// M-RoPE rows (posenc_mrope_f32, Qwen2-VL's contiguous sections): Qwen2-VL-7B's attention,
// 28 Q heads and 4 K heads (GQA) of head_dim = rotary_dim = 128, mrope_section {16, 24, 24},
// rope_theta 1e6, layout [L, H, D] with separate Q and K buffers, a 4096-token prefill:
//   vision:1  512 text tokens, one image of 48 x 64 merged patches (3072 tokens: the temporal
//             position fixed, height and width from the grid, as HF's get_rope_index gives
//             them), then 512 text tokens;
//   vision:0  4096 text tokens (three equal positions: a plain RoPE token's cost).
// The first position is 1000, as in the rope rows.
// naive: naive_rope_neox with a table [L, R/2] of each pair's angle at its section's
// position, given for free. Bytes: Q and K read and written once, as the rope rows count.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_buffer.h"
#include "bench_rows.h"
#include "posenc.h"
#include "rope_naive.h"

namespace posenc_bench {
namespace {

constexpr double kBase = 1e6;
constexpr int32_t kFirstPosition = 1000;
constexpr size_t kQHeads = 28, kKHeads = 4, kDim = 128;  // rotary_dim = head_dim
constexpr size_t kTokens = 4096;
constexpr size_t kGridRows = 48, kGridColumns = 64;  // the image, after the 2 x 2 merge
constexpr size_t kTextBefore = 512;
const size_t kSections[3] = {16, 24, 24};

constexpr const char* kKernel = "mrope_f32_neox";

size_t Elements() { return kTokens * (kQHeads + kKHeads) * kDim; }

// "tokens:4096/heads:32/dim:128/vision:1" (heads: Q + K heads)
std::string ShapeName(bool vision) {
  return "tokens:" + std::to_string(kTokens) + "/heads:" + std::to_string(kQHeads + kKHeads) +
         "/dim:" + std::to_string(kDim) + "/vision:" + (vision ? "1" : "0");
}

// HF's position_ids (3, L) for one sequence: rows temporal, height, width.
std::vector<int32_t> Positions(bool vision) {
  std::vector<int32_t> p(3 * kTokens);
  const auto set = [&](size_t t, int32_t temporal, int32_t height, int32_t width) {
    p[t] = temporal;
    p[kTokens + t] = height;
    p[2 * kTokens + t] = width;
  };
  if (!vision) {
    for (size_t t = 0; t < kTokens; ++t) {
      const auto at = kFirstPosition + static_cast<int32_t>(t);
      set(t, at, at, at);
    }
    return p;
  }
  const size_t image = kGridRows * kGridColumns;
  for (size_t t = 0; t < kTextBefore; ++t) {
    const auto at = kFirstPosition + static_cast<int32_t>(t);
    set(t, at, at, at);
  }
  const auto image_start = kFirstPosition + static_cast<int32_t>(kTextBefore);
  for (size_t i = 0; i < image; ++i)
    set(kTextBefore + i, image_start, image_start + static_cast<int32_t>(i / kGridColumns),
        image_start + static_cast<int32_t>(i % kGridColumns));
  // Text resumes after the image's largest position.
  const auto text_start = image_start + static_cast<int32_t>(kGridColumns);
  for (size_t t = kTextBefore + image; t < kTokens; ++t) {
    const auto at = text_start + static_cast<int32_t>(t - kTextBefore - image);
    set(t, at, at, at);
  }
  return p;
}

struct MropeBuffers {
  explicit MropeBuffers(bool vision)
      : q(RandomFloats(kTokens * kQHeads * kDim, 1)),
        k(RandomFloats(kTokens * kKHeads * kDim, 2)),
        positions(Positions(vision)) {}
  static posenc_rope_tensor View(float* data, size_t heads) {
    return {data, heads, heads * kDim, kDim};
  }
  AlignedFloats q, k;
  std::vector<int32_t> positions;
};

Pass PosencPass(bool vision) {
  posenc_rope_plan* raw_plan = nullptr;
  const posenc_status status = posenc_rope_plan_create(&raw_plan, kDim, kBase, 1.0);
  if (status != POSENC_OK) return FailedPass(status);
  const std::shared_ptr<posenc_rope_plan> plan(raw_plan, posenc_rope_plan_destroy);
  const auto buf = std::make_shared<MropeBuffers>(vision);
  const posenc_rope_tensor q = MropeBuffers::View(buf->q.get(), kQHeads);
  const posenc_rope_tensor k = MropeBuffers::View(buf->k.get(), kKHeads);
  return [plan, buf, q, k] {
    return posenc_mrope_f32(plan.get(), kSections, kDim, kTokens, buf->positions.data(), &q, &k,
                            POSENC_ROPE_NEOX);
  };
}

Pass NaivePass(bool vision) {
  const auto buf = std::make_shared<MropeBuffers>(vision);
  std::vector<double> freqs(kDim / 2);
  for (size_t i = 0; i < freqs.size(); ++i)
    freqs[i] = 1.0 / std::pow(kBase, static_cast<double>(2 * i) / kDim);
  const std::shared_ptr<float[]> cos_tab = AlignedFloatArray(kTokens * kDim / 2);
  const std::shared_ptr<float[]> sin_tab = AlignedFloatArray(kTokens * kDim / 2);
  naive_mrope_table(kTokens, buf->positions.data(), kSections, kDim, freqs.data(), 1.0,
                    cos_tab.get(), sin_tab.get());
  return [buf, cos_tab, sin_tab] {
    naive_rope_neox(buf->q.get(), kTokens, kQHeads, kDim, kDim, cos_tab.get(), sin_tab.get());
    naive_rope_neox(buf->k.get(), kTokens, kKHeads, kDim, kDim, cos_tab.get(), sin_tab.get());
    return POSENC_OK;
  };
}

GroupRows Group(bool vision) {
  const size_t bytes = Elements() * sizeof(float);
  const std::string about =
      std::to_string(bytes) + " bytes in place, " + std::to_string(kQHeads) + " Q + " +
      std::to_string(kKHeads) + " K heads, " +
      (vision ? "3072 image tokens (48 x 64 grid) between 2 x 512 text" : "text tokens only");
  return {{kKernel, ShapeName(vision), LimitKind::kRmw, bytes, about},
          2 * static_cast<int64_t>(bytes),
          static_cast<int64_t>(Elements()),
          Factory(PosencPass, vision),
          Factory(NaivePass, vision)};
}

}  // namespace

std::vector<GroupRows> MropeRows() { return {Group(true), Group(false)}; }

}  // namespace posenc_bench
