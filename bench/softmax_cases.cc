// posenc_softmax rows: dense in-place scores [32 heads, n_q, n_k], scale 1/sqrt(128) (head
// dim 128), on every available ISA, and the naive loop (softmax_naive.h):
//   softmax_f32/<isa>/heads:32/q:512/k:512/mask:<m>   a prefill (512 queries, 512 keys);
//   softmax_f32/<isa>/heads:32/q:1/k:4096/mask:<m>    a decode step (the newest query, at
//                                                     position 4095, against 4096 keys);
//   m: none; causal (POSENC_SOFTMAX_CAUSAL: no mask array; in the decode step no key is
//      after the query, the flag only adds its test); kvcache (an f32 [n_q, n_k] mask
//      shared by the heads, 0 or -inf, as a batched KV cache of two sequences has: keys of
//      the first half visible only to queries of the first half, keys of the second half to
//      queries of the second half (the one decode query is in the first), and ~20% of the
//      cells hidden at random, standing for unused and other sequences' cells); kvcache16
//      (the same mask in f16);
//   .../mask:causal/sinks:1       with a sink logit per head (gpt-oss);
//   .../mask:causal/window:256    with a sliding window of 256 keys (Mistral, Gemma);
//   softmax_bf16/<isa>/heads:32/q:512/k:512/mask:causal   bf16 x and y, in place;
//   softmax_out_f32/<isa>/heads:32/q:512/k:512/mask:none  x and y apart (y = softmax(x),
//                                                         x unchanged), against limit_copy.
// Every pass turns the scores into probabilities again: values stay in [0, 1], hidden
// elements are written 0 and stay hidden (or are never read).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../kernels/half.h"
#include "bench_buffer.h"
#include "bench_rows.h"
#include "posenc.h"
#include "softmax_naive.h"

namespace posenc_bench {
namespace {

constexpr size_t kHeads = 32;
constexpr float kScale = 0.08838834764831845f;  // 1 / sqrt(128)
constexpr uint32_t kHiddenPercent = 20;         // kvcache: cells hidden at random

enum class Storage { kF32, kBf16 };  // x and y
enum class Mask { kNone, kCausal, kKvCache, kKvCache16 };

struct SoftmaxShape {
  Storage storage;
  size_t n_q;
  size_t n_k;
  Mask mask;
  bool sinks;
  int32_t window;    // 0: none
  bool out = false;  // y apart from x
};

const SoftmaxShape kShapes[] = {
    {Storage::kF32, 512, 512, Mask::kNone, false, 0},
    {Storage::kF32, 512, 512, Mask::kCausal, false, 0},
    {Storage::kF32, 512, 512, Mask::kKvCache, false, 0},
    {Storage::kF32, 512, 512, Mask::kKvCache16, false, 0},
    {Storage::kF32, 512, 512, Mask::kCausal, true, 0},
    {Storage::kF32, 512, 512, Mask::kCausal, false, 256},
    {Storage::kF32, 1, 4096, Mask::kNone, false, 0},
    {Storage::kF32, 1, 4096, Mask::kCausal, false, 0},
    {Storage::kF32, 1, 4096, Mask::kKvCache, false, 0},
    {Storage::kF32, 1, 4096, Mask::kKvCache16, false, 0},
    {Storage::kF32, 1, 4096, Mask::kCausal, true, 0},
    {Storage::kF32, 1, 4096, Mask::kCausal, false, 256},
    {Storage::kBf16, 512, 512, Mask::kCausal, false, 0},
    {Storage::kF32, 512, 512, Mask::kNone, false, 0, true},
    // DRAM-sized, 64 MiB (twice a 32 MiB last-level cache): f32 512 queries x 1024 keys (the
    // queries the last of the keys: q_offset = n_k - n_q), bf16 1024 x 1024.
    {Storage::kF32, 512, 1024, Mask::kNone, false, 0},
    {Storage::kBf16, 1024, 1024, Mask::kCausal, false, 0},
};

const char* MaskName(Mask mask) {
  switch (mask) {
    case Mask::kNone:
      return "none";
    case Mask::kCausal:
      return "causal";
    case Mask::kKvCache:
      return "kvcache";
    default:
      return "kvcache16";
  }
}

std::string ShapeName(const SoftmaxShape& s) {
  std::string name = "heads:" + std::to_string(kHeads) + "/q:" + std::to_string(s.n_q) +
                     "/k:" + std::to_string(s.n_k) + "/mask:" + MaskName(s.mask);
  if (s.sinks) name += "/sinks:1";
  if (s.window) name += "/window:" + std::to_string(s.window);
  return name;
}

size_t Elements(const SoftmaxShape& s) { return kHeads * s.n_q * s.n_k; }
size_t ElementBytes(const SoftmaxShape& s) {
  return s.storage == Storage::kF32 ? sizeof(float) : sizeof(uint16_t);
}
size_t MaskBytes(const SoftmaxShape& s) {
  const size_t cells = s.n_q * s.n_k;
  return s.mask == Mask::kKvCache     ? cells * sizeof(float)
         : s.mask == Mask::kKvCache16 ? cells * sizeof(uint16_t)
                                      : 0;
}
// The decode query is the newest token: every key is at or before it.
int32_t QueryOffset(const SoftmaxShape& s) { return static_cast<int32_t>(s.n_k - s.n_q); }

// The two-sequence KV-cache mask with random holes: 0 where visible, -inf where hidden.
std::vector<float> KvCacheMask(const SoftmaxShape& s) {
  std::vector<float> mask(s.n_q * s.n_k);
  const std::vector<int32_t> dice = RandomIndices(mask.size(), 100, 17);
  for (size_t i = 0; i < s.n_q; ++i)
    for (size_t j = 0; j < s.n_k; ++j) {
      const bool same_sequence = (2 * i >= s.n_q) == (2 * j >= s.n_k);
      const size_t c = i * s.n_k + j;
      mask[c] =
          same_sequence && static_cast<uint32_t>(dice[c]) >= kHiddenPercent ? 0.0f : -INFINITY;
    }
  return mask;
}

// The scores (f32, or bf16 packed into an array of half as many floats, allocated as the
// limit rows' buffers are), the mask and the sinks.
struct SoftmaxBuffers {
  explicit SoftmaxBuffers(const SoftmaxShape& shape)
      : s(shape),
        scores(RandomFloats(Elements(shape), 23)),
        y(shape.out ? AlignedFloatArray(Elements(shape)) : nullptr) {
    if (s.storage == Storage::kBf16) {
      AlignedFloats packed = AlignedFloatArray((Elements(s) + 1) / 2);
      auto* bits = reinterpret_cast<uint16_t*>(packed.get());
      for (size_t i = 0; i < Elements(s); ++i) bits[i] = posenc_f32_to_bf16(scores[i]);
      scores = std::move(packed);
    }
    const std::vector<float> m = MaskBytes(s) ? KvCacheMask(s) : std::vector<float>();
    if (s.mask == Mask::kKvCache) {
      mask = AlignedFloatArray(m.size());
      std::copy(m.begin(), m.end(), mask.get());
    } else if (s.mask == Mask::kKvCache16) {
      mask = AlignedFloatArray((m.size() + 1) / 2);
      auto* bits = reinterpret_cast<uint16_t*>(mask.get());
      for (size_t c = 0; c < m.size(); ++c) bits[c] = posenc_f32_to_f16(m[c]);
    }
    if (s.sinks) {
      const AlignedFloats r = RandomFloats(kHeads, 29);
      sinks.assign(r.get(), r.get() + kHeads);
    }
  }
  void* Scores() const { return scores.get(); }
  void* Output() const { return s.out ? y.get() : scores.get(); }
  const uint16_t* Mask16() const { return reinterpret_cast<const uint16_t*>(mask.get()); }
  const float* Sinks() const { return s.sinks ? sinks.data() : nullptr; }
  SoftmaxShape s;
  AlignedFloats scores;
  AlignedFloats y;     // out: the f32 output, apart from the scores
  AlignedFloats mask;  // kvcache: n_q * n_k floats; kvcache16: as many f16 values, packed
  std::vector<float> sinks;
};

Pass PosencPass(const SoftmaxShape& shape) {
  auto buf = std::make_shared<SoftmaxBuffers>(shape);
  const SoftmaxShape& s = buf->s;
  posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
  p.scale = kScale;
  p.q_offset = QueryOffset(s);
  p.sinks = buf->Sinks();
  if (s.mask == Mask::kCausal) p.flags |= POSENC_SOFTMAX_CAUSAL;
  if (s.window) {
    p.flags |= POSENC_SOFTMAX_WINDOW;
    p.window = s.window;
  }
  if (MaskBytes(s)) {
    p.mask = buf->mask.get();
    p.mask_dtype = s.mask == Mask::kKvCache16 ? POSENC_DTYPE_F16 : POSENC_DTYPE_F32;
  }
  const posenc_dtype dtype = s.storage == Storage::kF32 ? POSENC_DTYPE_F32 : POSENC_DTYPE_BF16;
  const posenc_scores_view x = {buf->Scores(), dtype, s.n_q * s.n_k, s.n_k, 0};
  const posenc_scores_view y = {buf->Output(), dtype, s.n_q * s.n_k, s.n_k, 0};
  return [buf, p, x, y] { return posenc_softmax(&p, kHeads, buf->s.n_q, buf->s.n_k, &x, &y); };
}

Pass NaivePass(const SoftmaxShape& shape) {
  auto buf = std::make_shared<SoftmaxBuffers>(shape);
  const SoftmaxShape& s = buf->s;
  naive_softmax_opts o = {};
  o.scale = kScale;
  o.mask = s.mask == Mask::kKvCache ? buf->mask.get() : nullptr;
  o.mask16 = s.mask == Mask::kKvCache16 ? buf->Mask16() : nullptr;
  o.sinks = buf->Sinks();
  o.q_offset = QueryOffset(s);
  o.causal = s.mask == Mask::kCausal;
  o.window = s.window;
  return [buf, o] {
    const int heads = static_cast<int>(kHeads), n_q = static_cast<int>(buf->s.n_q),
              n_k = static_cast<int>(buf->s.n_k);
    if (buf->s.storage == Storage::kF32)
      naive_softmax_f32(static_cast<float*>(buf->Scores()), heads, n_q, n_k, &o);
    else
      naive_softmax_bf16(static_cast<uint16_t*>(buf->Scores()), heads, n_q, n_k, &o);
    return POSENC_OK;
  };
}

// The fraction of the scores a row computes (the same for every head): with a mask, each
// row's columns from its first visible cell to its last (the kernel cuts a row to that
// extent and computes the hidden cells inside it as -inf lanes: with ~20% of the cells
// hidden at random, nearly every vector holds a visible one, so no kernel's vectors can skip
// them).
double VisibleFraction(const SoftmaxShape& s) {
  if (MaskBytes(s)) {
    const std::vector<float> m = KvCacheMask(s);
    size_t computed = 0;
    for (size_t i = 0; i < s.n_q; ++i) {
      size_t first = s.n_k, last = 0;  // the first visible column, and one past the last
      for (size_t j = 0; j < s.n_k; ++j)
        if (m[i * s.n_k + j] == 0.0f) {
          first = std::min(first, j);
          last = j + 1;
        }
      if (first < last) computed += last - first;
    }
    return static_cast<double>(computed) / m.size();
  }
  if (s.mask != Mask::kCausal) return 1.0;
  return CausalVisibleFraction(s.n_q, s.n_k, static_cast<size_t>(QueryOffset(s)),
                               static_cast<size_t>(s.window));
}

// The n bytes of scores read and written in place (2n) plus the mask's m bytes, read (once:
// it is shared by the heads), against limit_rmw/bytes:n (see posenc_bench_cases.h). Hidden
// elements (causal, window, mask) count as in place. Items: every element of the scores.
// Out of place: n read from x and n written to y, against limit_copy/bytes:2n; no naive row.
GroupRows Group(const SoftmaxShape& shape) {
  const size_t bytes = Elements(shape) * ElementBytes(shape), mask_bytes = MaskBytes(shape);
  if (shape.out)
    return {{"softmax_out_f32", ShapeName(shape), LimitKind::kCopy, 2 * bytes,
             std::to_string(bytes) + " bytes read from x, as many written to y", false},
            static_cast<int64_t>(2 * bytes),
            static_cast<int64_t>(Elements(shape)),
            Factory(PosencPass, shape),
            {}};
  std::string about = std::to_string(bytes) + " bytes in place";
  if (mask_bytes) about += " + " + std::to_string(mask_bytes) + " mask bytes read";
  if (shape.mask != Mask::kNone) about += ", hidden elements counted as in place";
  RowGroup group = {shape.storage == Storage::kF32 ? "softmax_f32" : "softmax_bf16",
                    ShapeName(shape), LimitKind::kRmw, bytes, about};
  group.visible = VisibleFraction(shape);
  return {group, static_cast<int64_t>(2 * bytes + mask_bytes),
          static_cast<int64_t>(Elements(shape)), Factory(PosencPass, shape),
          Factory(NaivePass, shape)};
}

}  // namespace

std::vector<GroupRows> SoftmaxRows() { return GroupPerShape(kShapes, Group); }

}  // namespace posenc_bench
