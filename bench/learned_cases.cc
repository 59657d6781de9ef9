// Learned-embedding rows: posenc_learned_add_f32 (dense x and table, random positions) on
// every available ISA, and the naive gather-add loop.
#include <memory>
#include <string>
#include <vector>

#include "bench_buffer.h"
#include "bench_rows.h"
#include "learned_naive.h"
#include "posenc.h"

namespace posenc_bench {
namespace {

struct LearnedShape {
  size_t tokens;
  size_t dim;
  size_t max_pos;  // rows of the table
};

// 512 tokens of width 4096 gathering from a 4096 x 4096 table (64 MiB: not cache resident),
// a cache-resident batch of 16 tokens whose rows stay in cache between passes, and 4096
// tokens (x 64 MiB, twice a 32 MiB last-level cache, from the same table): DRAM-sized.
const LearnedShape kShapes[] = {{16, 4096, 2048}, {512, 4096, 4096}, {4096, 4096, 4096}};

std::string ShapeName(const LearnedShape& shape) {
  return "tokens:" + std::to_string(shape.tokens) + "/dim:" + std::to_string(shape.dim);
}

// Every pass adds the same rows again: x grows by at most 1 per pass.
struct LearnedBuffers {
  explicit LearnedBuffers(const LearnedShape& s)
      : shape(s),
        table(RandomFloats(s.max_pos * s.dim, 6)),
        x(RandomFloats(s.tokens * s.dim, 7)),
        positions(RandomIndices(s.tokens, static_cast<int32_t>(s.max_pos), 8)) {}
  LearnedShape shape;
  AlignedFloats table, x;
  std::vector<int32_t> positions;
};

Pass PosencPass(const LearnedShape& shape) {
  const auto buf = std::make_shared<LearnedBuffers>(shape);
  return [buf] {
    const LearnedShape& s = buf->shape;
    return posenc_learned_add_f32(buf->table.get(), s.max_pos, 0, s.dim, s.tokens,
                                  buf->positions.data(), 0, buf->x.get(), 0);
  };
}

Pass NaivePass(const LearnedShape& shape) {
  const auto buf = std::make_shared<LearnedBuffers>(shape);
  return [buf] {
    const LearnedShape& s = buf->shape;
    naive_learned_add(buf->x.get(), buf->table.get(), buf->positions.data(), s.tokens, s.dim);
    return POSENC_OK;
  };
}

// x read and written in place (2n) plus the gathered table rows read (n): 3n, compared with
// limit_rmw of x's n bytes (2n), the in-place stream over x that no gather-add can beat. Its
// "of limit" is therefore a ratio of bandwidths, 1.5 x the ratio of times, and may exceed
// 100% (see posenc_bench_cases.h). Items: every element of x.
GroupRows Group(const LearnedShape& shape) {
  const size_t elements = shape.tokens * shape.dim;
  const size_t bytes = elements * sizeof(float);
  const std::string about = std::to_string(bytes) + " bytes of x in place + " +
                            std::to_string(bytes) + " of table rows read";
  GroupRows rows = {{"learned_add_f32", ShapeName(shape), LimitKind::kRmw, bytes, about},
                    3 * FloatBytes(elements),
                    static_cast<int64_t>(elements),
                    Factory(PosencPass, shape),
                    Factory(NaivePass, shape)};
  rows.group.footprint_bytes = bytes + shape.max_pos * shape.dim * sizeof(float);
  return rows;
}

}  // namespace

std::vector<GroupRows> LearnedRows() { return GroupPerShape(kShapes, Group); }

}  // namespace posenc_bench
