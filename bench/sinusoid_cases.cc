// Sinusoidal rows: posenc_sinusoid_fill_f32 and posenc_sinusoid_add_f32 (accurate angles,
// interleaved layout, positions 0, 1, ..., dense rows) on every available ISA, and the naive
// loops.
#include <memory>
#include <string>
#include <vector>

#include "bench_buffer.h"
#include "bench_rows.h"
#include "posenc.h"
#include "sinusoid_naive.h"

namespace posenc_bench {
namespace {

constexpr double kBase = 10000.0;
constexpr unsigned kFlags = POSENC_SINUSOID_INTERLEAVED | POSENC_SINUSOID_ACCURATE;

struct SinusoidShape {
  size_t rows;
  size_t dim;
};

// A 4096-position table of width 4096, a 512-row one; 512 embeddings of width 4096.
const SinusoidShape kFillShapes[] = {{4096, 4096}, {512, 4096}};
const SinusoidShape kAddShapes[] = {{512, 4096}};

std::string ShapeName(const SinusoidShape& shape) {
  return "rows:" + std::to_string(shape.rows) + "/dim:" + std::to_string(shape.dim);
}

// Fill overwrites its output; add keeps adding the same encoding to x, which grows by at
// most 1 per pass and stays far from overflow however many passes run.
Pass PosencPass(bool add, const SinusoidShape& shape) {
  posenc_sinusoid_plan* raw_plan = nullptr;
  const posenc_status status = posenc_sinusoid_plan_create(&raw_plan, shape.dim, kBase);
  if (status != POSENC_OK) return FailedPass(status);
  const std::shared_ptr<posenc_sinusoid_plan> plan(raw_plan, posenc_sinusoid_plan_destroy);
  const std::shared_ptr<float[]> buf = RandomFloats(shape.rows * shape.dim, 4);
  const auto kernel = add ? posenc_sinusoid_add_f32 : posenc_sinusoid_fill_f32;
  return [plan, buf, shape, kernel] {
    return kernel(plan.get(), shape.rows, nullptr, 0, buf.get(), 0, kFlags);
  };
}

// inv_freq is precomputed (untimed), as an integrator does once per model.
Pass NaivePass(bool add, const SinusoidShape& shape) {
  const std::shared_ptr<float[]> inv_freq = AlignedFloatArray(shape.dim / 2);
  naive_sinusoid_inv_freq(shape.dim, kBase, inv_freq.get());
  const std::shared_ptr<float[]> buf = RandomFloats(shape.rows * shape.dim, 4);
  const auto naive = add ? naive_sinusoid_add : naive_sinusoid_fill;
  return [inv_freq, buf, shape, naive] {
    naive(buf.get(), shape.rows, 0, shape.dim, inv_freq.get());
    return POSENC_OK;
  };
}

// Fill: the table written (n bytes), against limit_write. Add: x read and written (2n),
// against limit_rmw. Items: every element of the rows.
GroupRows Group(bool add, const SinusoidShape& shape) {
  const size_t elements = shape.rows * shape.dim;
  const size_t bytes = elements * sizeof(float);
  const std::string about = std::to_string(bytes) + (add ? " bytes in place" : " bytes written");
  return {{add ? "sinusoid_add_f32" : "sinusoid_fill_f32", ShapeName(shape), add, bytes, about},
          (add ? 2 : 1) * FloatBytes(elements),
          static_cast<int64_t>(elements),
          Factory(PosencPass, add, shape),
          Factory(NaivePass, add, shape)};
}

}  // namespace

std::vector<GroupRows> SinusoidRows() {
  std::vector<GroupRows> rows;
  for (const SinusoidShape& shape : kFillShapes) rows.push_back(Group(false, shape));
  for (const SinusoidShape& shape : kAddShapes) rows.push_back(Group(true, shape));
  return rows;
}

}  // namespace posenc_bench
