// Fused ALiBi softmax rows (dense [H, n_q, n_k] scores, scale 1, the paper's slopes):
//   alibi_softmax_f32, alibi_softmax_bf16: posenc_alibi_softmax_f32 / _bf16, one call;
//   alibi_add_then_softmax_f32: the two-pass way, posenc_alibi_add_f32 (scale, bias, mask)
//     followed by a separate vectorised softmax pass over the same scores: posenc_softmax
//     with no ALiBi term (scale 1, and POSENC_SOFTMAX_CAUSAL where the shape is causal, so
//     that it too skips the masked keys). The ratio of the two rows' times is what fusing
//     saves.
// naive: the plain C loops (alibi_softmax_naive.h), fused or in two passes likewise.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "alibi_naive.h"
#include "alibi_softmax_naive.h"
#include "bench_buffer.h"
#include "bench_rows.h"
#include "posenc.h"

namespace posenc_bench {
namespace {

constexpr double kMaxBias = 8.0;  // the paper's slopes
constexpr float kScale = 1.0f;

enum class Kind { kFusedF32, kFusedBf16, kAddThenSoftmax };

struct SoftmaxShape {
  Kind kind;
  size_t heads;
  size_t n_q;
  size_t n_k;
  size_t q_offset;
  bool causal;
};

// Prefill (512 queries against 512 keys, 32 MiB of f32 scores) without and with the causal
// mask, and decode steps (the newest query against a 4096- or 32768-key cache; rows of
// 32768 floats are 128 KiB, more than L1).
const SoftmaxShape kShapes[] = {
    {Kind::kFusedF32, 32, 512, 512, 0, false},
    {Kind::kFusedF32, 32, 512, 512, 0, true},
    {Kind::kFusedF32, 32, 1, 4096, 4095, true},
    {Kind::kFusedF32, 32, 1, 32768, 32767, true},
    {Kind::kFusedBf16, 32, 512, 512, 0, true},
    {Kind::kFusedBf16, 32, 1, 4096, 4095, true},
    {Kind::kFusedBf16, 32, 1, 32768, 32767, true},
    {Kind::kAddThenSoftmax, 32, 512, 512, 0, false},
    {Kind::kAddThenSoftmax, 32, 512, 512, 0, true},
    {Kind::kAddThenSoftmax, 32, 1, 4096, 4095, true},
    // DRAM-sized, 64 MiB (twice a 32 MiB last-level cache): 1024 queries against 512 keys of
    // f32 scores, 1024 x 1024 causal bf16 ones.
    {Kind::kFusedF32, 32, 1024, 512, 0, false},
    {Kind::kFusedBf16, 32, 1024, 1024, 0, true},
    {Kind::kAddThenSoftmax, 32, 1024, 512, 0, false},
};

const char* KernelName(Kind kind) {
  switch (kind) {
    case Kind::kFusedF32:
      return "alibi_softmax_f32";
    case Kind::kFusedBf16:
      return "alibi_softmax_bf16";
    default:
      return "alibi_add_then_softmax_f32";
  }
}

std::string ShapeName(const SoftmaxShape& shape) {
  return "heads:" + std::to_string(shape.heads) + "/q:" + std::to_string(shape.n_q) +
         "/k:" + std::to_string(shape.n_k) + "/causal:" + (shape.causal ? "1" : "0");
}

size_t Elements(const SoftmaxShape& shape) { return shape.heads * shape.n_q * shape.n_k; }
size_t ElementBytes(const SoftmaxShape& shape) {
  return shape.kind == Kind::kFusedBf16 ? sizeof(uint16_t) : sizeof(float);
}

// Every pass turns the scores into probabilities again: values stay in [0, 1] minus the
// biases, far from overflow; masked elements are written 0 and never read. bf16 scores
// are the upper halves of random floats, in their own 64-byte aligned buffer.
struct SoftmaxBuffers {
  explicit SoftmaxBuffers(const SoftmaxShape& s) : shape(s), slopes(s.heads) {
    scores = RandomFloats(Elements(s), 9);
    if (s.kind != Kind::kFusedBf16) return;
    packed = AlignedFloatArray((Elements(s) + 1) / 2);
    uint16_t* bf16 = Bf16();
    for (size_t i = 0; i < Elements(s); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &scores[i], sizeof bits);
      bf16[i] = static_cast<uint16_t>(bits >> 16);
    }
  }
  // The bf16 scores (kFusedBf16), in packed's memory.
  uint16_t* Bf16() const { return reinterpret_cast<uint16_t*>(packed.get()); }
  SoftmaxShape shape;
  std::vector<float> slopes;
  AlignedFloats scores, packed;
};

posenc_status MakeBuffers(const SoftmaxShape& shape, std::shared_ptr<SoftmaxBuffers>& buf) {
  buf = std::make_shared<SoftmaxBuffers>(shape);
  return posenc_alibi_slopes(shape.heads, kMaxBias, buf->slopes.data());
}

Pass PosencPass(const SoftmaxShape& shape) {
  std::shared_ptr<SoftmaxBuffers> buf;
  const posenc_status status = MakeBuffers(shape, buf);
  if (status != POSENC_OK) return FailedPass(status);
  const unsigned flags = shape.causal ? unsigned{POSENC_ALIBI_CAUSAL} : 0u;
  return [buf, flags]() -> posenc_status {
    const SoftmaxShape& s = buf->shape;
    const size_t hs = s.n_q * s.n_k, rs = s.n_k;
    switch (s.kind) {
      case Kind::kFusedF32:
        return posenc_alibi_softmax_f32(buf->slopes.data(), s.heads, s.n_q, s.n_k, s.q_offset,
                                        buf->scores.get(), hs, rs, kScale, flags);
      case Kind::kFusedBf16:
        return posenc_alibi_softmax_bf16(buf->slopes.data(), s.heads, s.n_q, s.n_k, s.q_offset,
                                         buf->Bf16(), hs, rs, kScale, flags);
      default: {
        const posenc_status st =
            posenc_alibi_add_f32(buf->slopes.data(), s.heads, s.n_q, s.n_k, s.q_offset,
                                 buf->scores.get(), hs, rs, kScale, flags);
        if (st != POSENC_OK) return st;
        posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
        p.q_offset = static_cast<int32_t>(s.q_offset);
        if (s.causal) p.flags = POSENC_SOFTMAX_CAUSAL;
        const posenc_scores_view v = {buf->scores.get(), POSENC_DTYPE_F32, hs, rs, 0};
        return posenc_softmax(&p, s.heads, s.n_q, s.n_k, &v, &v);
      }
    }
  };
}

Pass NaivePass(const SoftmaxShape& shape) {
  std::shared_ptr<SoftmaxBuffers> buf;
  const posenc_status status = MakeBuffers(shape, buf);
  if (status != POSENC_OK) return FailedPass(status);
  return [buf] {
    const SoftmaxShape& s = buf->shape;
    const int heads = static_cast<int>(s.heads), n_q = static_cast<int>(s.n_q),
              n_k = static_cast<int>(s.n_k), q_offset = static_cast<int>(s.q_offset);
    switch (s.kind) {
      case Kind::kFusedF32:
        naive_alibi_softmax(buf->scores.get(), buf->slopes.data(), heads, n_q, n_k, q_offset,
                            kScale, s.causal);
        break;
      case Kind::kFusedBf16:
        naive_alibi_softmax_bf16(buf->Bf16(), buf->slopes.data(), heads, n_q, n_k, q_offset, kScale,
                                 s.causal);
        break;
      default:
        naive_alibi_add(buf->scores.get(), buf->slopes.data(), heads, n_q, n_k, q_offset, kScale,
                        s.causal);
        naive_softmax_rows(buf->scores.get(), heads * n_q, n_k);
        break;
    }
    return POSENC_OK;
  };
}

// The scores read and written in place (2n bytes for n bytes of scores), against limit_rmw
// of the same n, masked elements counted as in place (see posenc_bench_cases.h). The
// two-pass baseline counts the same bytes as the fused row, so that the ratio of their
// bytes/s is the ratio of their times. Items: every element of the scores.
GroupRows Group(const SoftmaxShape& shape) {
  const size_t bytes = Elements(shape) * ElementBytes(shape);
  const std::string about = std::to_string(bytes) + " bytes in place" +
                            (shape.causal ? ", masked elements counted as in place" : "");
  RowGroup group = {KernelName(shape.kind), ShapeName(shape), LimitKind::kRmw, bytes, about};
  if (shape.causal) group.visible = CausalVisibleFraction(shape.n_q, shape.n_k, shape.q_offset, 0);
  return {group, 2 * static_cast<int64_t>(bytes), static_cast<int64_t>(Elements(shape)),
          Factory(PosencPass, shape), Factory(NaivePass, shape)};
}

}  // namespace

std::vector<GroupRows> AlibiSoftmaxRows() { return GroupPerShape(kShapes, Group); }

}  // namespace posenc_bench
