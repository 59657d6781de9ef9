// ALiBi rows: posenc_alibi_add_f32 (scale 1, dense [H, n_q, n_k] scores) on every available
// ISA, and the naive triple loop.
#include <memory>
#include <string>
#include <vector>

#include "alibi_naive.h"
#include "bench_buffer.h"
#include "bench_rows.h"
#include "posenc.h"

namespace posenc_bench {
namespace {

constexpr double kMaxBias = 8.0;  // the paper's slopes
constexpr float kScale = 1.0f;

struct AlibiShape {
  size_t heads;
  size_t n_q;
  size_t n_k;
  size_t q_offset;
  bool causal;
};

// Prefill (512 queries against 512 keys) and a decode step (the newest query against a
// 4096-key cache), each without and with the causal mask. In the decode step no key is
// after the query: causal only adds the test.
const AlibiShape kShapes[] = {{32, 512, 512, 0, false},
                              {32, 512, 512, 0, true},
                              {32, 1, 4096, 4095, false},
                              {32, 1, 4096, 4095, true}};

std::string ShapeName(const AlibiShape& shape) {
  return "heads:" + std::to_string(shape.heads) + "/q:" + std::to_string(shape.n_q) +
         "/k:" + std::to_string(shape.n_k) + "/causal:" + (shape.causal ? "1" : "0");
}

size_t Elements(const AlibiShape& shape) { return shape.heads * shape.n_q * shape.n_k; }

// Every pass subtracts the same biases again: the scores grow by at most 4096 per pass and
// stay far from overflow; masked elements stay -inf (written, never read).
struct AlibiBuffers {
  explicit AlibiBuffers(const AlibiShape& s)
      : shape(s), slopes(s.heads), scores(RandomFloats(Elements(s), 5)) {}
  AlibiShape shape;
  std::vector<float> slopes;
  AlignedFloats scores;
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
    return posenc_alibi_add_f32(buf->slopes.data(), s.heads, s.n_q, s.n_k, s.q_offset,
                                buf->scores.get(), s.n_q * s.n_k, s.n_k, kScale, flags);
  };
}

Pass NaivePass(const AlibiShape& shape) {
  std::shared_ptr<AlibiBuffers> buf;
  const posenc_status status = MakeBuffers(shape, buf);
  if (status != POSENC_OK) return FailedPass(status);
  return [buf] {
    const AlibiShape& s = buf->shape;
    naive_alibi_add(buf->scores.get(), buf->slopes.data(), static_cast<int>(s.heads),
                    static_cast<int>(s.n_q), static_cast<int>(s.n_k), static_cast<int>(s.q_offset),
                    kScale, s.causal);
    return POSENC_OK;
  };
}

// The scores read and written in place (2n), against limit_rmw, also with the causal mask
// (see posenc_bench_cases.h). Items: every element of the scores.
GroupRows Group(const AlibiShape& shape) {
  const size_t bytes = Elements(shape) * sizeof(float);
  const std::string about = std::to_string(bytes) + " bytes in place" +
                            (shape.causal ? ", masked elements counted as in place" : "");
  return {{"alibi_add_f32", ShapeName(shape), true, bytes, about},
          2 * FloatBytes(Elements(shape)),
          static_cast<int64_t>(Elements(shape)),
          Factory(PosencPass, shape),
          Factory(NaivePass, shape)};
}

}  // namespace

std::vector<GroupRows> AlibiRows() { return GroupPerShape(kShapes, Group); }

}  // namespace posenc_bench
