// ALiBi rows: posenc_alibi_add_f32 (scale 1), and posenc_alibi_add_bf16 / _f16 on 16-bit
// scores (scale 1/2), on dense [H, n_q, n_k] scores, on every available ISA, and the naive
// triple loops.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "alibi_naive.h"
#include "bench_buffer.h"
#include "bench_rows.h"
#include "../kernels/half.h"
#include "posenc.h"

namespace posenc_bench {
namespace {

constexpr double kMaxBias = 8.0;  // the paper's slopes
constexpr float kScale = 1.0f;
// 16-bit scores are scaled by 1/2 (the same work): S -> S/2 - bias stays within twice the
// largest bias, so f16 scores never overflow to -inf however many passes run.
constexpr float kScale16 = 0.5f;

// The storage type of the scores.
enum class Storage { kF32, kBf16, kF16 };

struct AlibiShape {
  Storage storage;
  size_t heads;
  size_t n_q;
  size_t n_k;
  size_t q_offset;
  bool causal;
};

// Prefill (512 queries against 512 keys) and a decode step (the newest query against a
// 4096-key cache), each without and with the causal mask. In the decode step no key is
// after the query: causal only adds the test. 16-bit scores: the prefill without the mask.
// And each storage type's DRAM-sized call, 64 MiB (twice a 32 MiB last-level cache): 1024
// queries against 512 keys of f32 scores, 1024 x 1024 of 16-bit ones.
const AlibiShape kShapes[] = {
    {Storage::kF32, 32, 512, 512, 0, false},   {Storage::kF32, 32, 512, 512, 0, true},
    {Storage::kF32, 32, 1, 4096, 4095, false}, {Storage::kF32, 32, 1, 4096, 4095, true},
    {Storage::kBf16, 32, 512, 512, 0, false},  {Storage::kF16, 32, 512, 512, 0, false},
    {Storage::kF32, 32, 1024, 512, 0, false},  {Storage::kBf16, 32, 1024, 1024, 0, false},
    {Storage::kF16, 32, 1024, 1024, 0, false}};

const char* KernelName(Storage storage) {
  return storage == Storage::kBf16  ? "alibi_add_bf16"
         : storage == Storage::kF16 ? "alibi_add_f16"
                                    : "alibi_add_f32";
}

size_t ElementBytes(Storage storage) {
  return storage == Storage::kF32 ? sizeof(float) : sizeof(uint16_t);
}

std::string ShapeName(const AlibiShape& shape) {
  return "heads:" + std::to_string(shape.heads) + "/q:" + std::to_string(shape.n_q) +
         "/k:" + std::to_string(shape.n_k) + "/causal:" + (shape.causal ? "1" : "0");
}

size_t Elements(const AlibiShape& shape) { return shape.heads * shape.n_q * shape.n_k; }

// Every pass subtracts the same biases again: the scores grow by at most 4096 per pass and
// stay far from overflow (16-bit ones: see kScale16); masked elements stay -inf (written,
// never read). 16-bit scores are the random floats rounded, in an array of half as many
// floats (allocated as the limit rows' buffers are).
struct AlibiBuffers {
  explicit AlibiBuffers(const AlibiShape& s)
      : shape(s), slopes(s.heads), scores(RandomFloats(Elements(s), 5)) {
    if (s.storage == Storage::kF32) return;
    AlignedFloats packed = AlignedFloatArray((Elements(s) + 1) / 2);
    auto* bits = reinterpret_cast<uint16_t*>(packed.get());
    for (size_t i = 0; i < Elements(s); ++i)
      bits[i] = s.storage == Storage::kBf16 ? posenc_f32_to_bf16(scores[i])
                                            : posenc_f32_to_f16(scores[i]);
    scores = std::move(packed);
  }
  uint16_t* Scores16() const { return reinterpret_cast<uint16_t*>(scores.get()); }
  AlibiShape shape;
  std::vector<float> slopes;
  AlignedFloats scores;  // for bf16 / f16: the 16-bit elements
};

// The buffers with the paper's slopes (computed untimed: naive gets them for free too), or
// the status of posenc_alibi_slopes.
posenc_status MakeBuffers(const AlibiShape& shape, std::shared_ptr<AlibiBuffers>& buf) {
  buf = std::make_shared<AlibiBuffers>(shape);
  return posenc_alibi_slopes(shape.heads, kMaxBias, buf->slopes.data());
}

Pass PosencPass(const AlibiShape& shape) {
  std::shared_ptr<AlibiBuffers> buf;
  const posenc_status status = MakeBuffers(shape, buf);
  if (status != POSENC_OK) return FailedPass(status);
  const unsigned flags = shape.causal ? unsigned{POSENC_ALIBI_CAUSAL} : 0u;
  return [buf, flags] {
    const AlibiShape& s = buf->shape;
    if (s.storage == Storage::kF32)
      return posenc_alibi_add_f32(buf->slopes.data(), s.heads, s.n_q, s.n_k, s.q_offset,
                                  buf->scores.get(), s.n_q * s.n_k, s.n_k, kScale, flags);
    const auto add16 = s.storage == Storage::kBf16 ? posenc_alibi_add_bf16 : posenc_alibi_add_f16;
    return add16(buf->slopes.data(), s.heads, s.n_q, s.n_k, s.q_offset, buf->Scores16(),
                 s.n_q * s.n_k, s.n_k, kScale16, flags);
  };
}

Pass NaivePass(const AlibiShape& shape) {
  std::shared_ptr<AlibiBuffers> buf;
  const posenc_status status = MakeBuffers(shape, buf);
  if (status != POSENC_OK) return FailedPass(status);
  return [buf] {
    const AlibiShape& s = buf->shape;
    const int heads = static_cast<int>(s.heads), n_q = static_cast<int>(s.n_q),
              n_k = static_cast<int>(s.n_k), q_offset = static_cast<int>(s.q_offset);
    if (s.storage == Storage::kF32)
      naive_alibi_add(buf->scores.get(), buf->slopes.data(), heads, n_q, n_k, q_offset, kScale,
                      s.causal);
    else
      (s.storage == Storage::kBf16 ? naive_alibi_add_bf16 : naive_alibi_add_f16)(
          buf->Scores16(), buf->slopes.data(), heads, n_q, n_k, q_offset, kScale16, s.causal);
    return POSENC_OK;
  };
}

// The scores read and written in place (2n, n = 4 or 2 bytes per element), against
// limit_rmw, also with the causal mask (see posenc_bench_cases.h). Items: every element of
// the scores.
GroupRows Group(const AlibiShape& shape) {
  const size_t bytes = Elements(shape) * ElementBytes(shape.storage);
  const std::string about = std::to_string(bytes) + " bytes in place" +
                            (shape.causal ? ", masked elements counted as in place" : "");
  return {{KernelName(shape.storage), ShapeName(shape), LimitKind::kRmw, bytes, about},
          2 * static_cast<int64_t>(bytes),
          static_cast<int64_t>(Elements(shape)),
          Factory(PosencPass, shape),
          Factory(NaivePass, shape)};
}

}  // namespace

std::vector<GroupRows> AlibiRows() { return GroupPerShape(kShapes, Group); }

}  // namespace posenc_bench
