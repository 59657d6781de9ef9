// Sinusoidal rows: posenc_sinusoid_fill_f32, posenc_sinusoid_add_f32 and the fills into
// 16-bit tables, posenc_sinusoid_fill_bf16 / _f16 (accurate angles, interleaved layout,
// positions 0, 1, ..., dense rows) on every available ISA, and the naive loops.
#include <cstdint>
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

// A 4096-position table of width 4096 (64 MiB of f32: DRAM-sized, twice a 32 MiB last-level
// cache), a 512-row one; 512 and 4096 embeddings of width 4096 (8 and 64 MiB). 16-bit
// tables also 8192 rows (their 64 MiB).
const SinusoidShape kFillShapes[] = {{4096, 4096}, {512, 4096}};
const SinusoidShape kFill16Shapes[] = {{4096, 4096}, {512, 4096}, {8192, 4096}};
const SinusoidShape kAddShapes[] = {{512, 4096}, {4096, 4096}};

// The kernels of the rows: f32 fill and add, and fills into bf16 / f16 tables.
enum class Kind { kFill, kAdd, kFillBf16, kFillF16 };

const char* KernelName(Kind kind) {
  switch (kind) {
    case Kind::kFill:
      return "sinusoid_fill_f32";
    case Kind::kAdd:
      return "sinusoid_add_f32";
    case Kind::kFillBf16:
      return "sinusoid_fill_bf16";
    default:
      return "sinusoid_fill_f16";
  }
}

bool Is16Bit(Kind kind) { return kind == Kind::kFillBf16 || kind == Kind::kFillF16; }

std::string ShapeName(const SinusoidShape& shape) {
  return "rows:" + std::to_string(shape.rows) + "/dim:" + std::to_string(shape.dim);
}

// Fill overwrites its output; add keeps adding the same encoding to x, which grows by at
// most 1 per pass and stays far from overflow however many passes run. 16-bit tables live
// in an array of half as many floats (allocated as the limit rows' buffers are).
Pass PosencPass(Kind kind, const SinusoidShape& shape) {
  posenc_sinusoid_plan* raw_plan = nullptr;
  const posenc_status status = posenc_sinusoid_plan_create(&raw_plan, shape.dim, kBase);
  if (status != POSENC_OK) return FailedPass(status);
  const std::shared_ptr<posenc_sinusoid_plan> plan(raw_plan, posenc_sinusoid_plan_destroy);
  const size_t n = shape.rows * shape.dim;
  if (Is16Bit(kind)) {
    const std::shared_ptr<float[]> buf = AlignedFloatArray((n + 1) / 2);
    const auto fill16 =
        kind == Kind::kFillBf16 ? posenc_sinusoid_fill_bf16 : posenc_sinusoid_fill_f16;
    return [plan, buf, shape, fill16] {
      return fill16(plan.get(), shape.rows, nullptr, 0, reinterpret_cast<uint16_t*>(buf.get()), 0,
                    kFlags);
    };
  }
  const std::shared_ptr<float[]> buf = RandomFloats(n, 4);
  const auto kernel = kind == Kind::kAdd ? posenc_sinusoid_add_f32 : posenc_sinusoid_fill_f32;
  return [plan, buf, shape, kernel] {
    return kernel(plan.get(), shape.rows, nullptr, 0, buf.get(), 0, kFlags);
  };
}

// inv_freq is precomputed (untimed), as an integrator does once per model.
Pass NaivePass(Kind kind, const SinusoidShape& shape) {
  const std::shared_ptr<float[]> inv_freq = AlignedFloatArray(shape.dim / 2);
  naive_sinusoid_inv_freq(shape.dim, kBase, inv_freq.get());
  const size_t n = shape.rows * shape.dim;
  if (Is16Bit(kind)) {
    const std::shared_ptr<float[]> buf = AlignedFloatArray((n + 1) / 2);
    const auto fill16 =
        kind == Kind::kFillBf16 ? naive_sinusoid_fill_bf16 : naive_sinusoid_fill_f16;
    return [inv_freq, buf, shape, fill16] {
      fill16(reinterpret_cast<uint16_t*>(buf.get()), shape.rows, 0, shape.dim, inv_freq.get());
      return POSENC_OK;
    };
  }
  const std::shared_ptr<float[]> buf = RandomFloats(n, 4);
  const auto naive = kind == Kind::kAdd ? naive_sinusoid_add : naive_sinusoid_fill;
  return [inv_freq, buf, shape, naive] {
    naive(buf.get(), shape.rows, 0, shape.dim, inv_freq.get());
    return POSENC_OK;
  };
}

// Fill: the table written (n bytes: 4 per element, 2 for bf16 / f16), against limit_write.
// Add: x read and written (2n), against limit_rmw. Items: every element of the rows.
GroupRows Group(Kind kind, const SinusoidShape& shape) {
  const bool add = kind == Kind::kAdd;
  const size_t elements = shape.rows * shape.dim;
  const size_t bytes = elements * (Is16Bit(kind) ? sizeof(uint16_t) : sizeof(float));
  const std::string about = std::to_string(bytes) + (add ? " bytes in place" : " bytes written");
  const LimitKind limit = add ? LimitKind::kRmw : LimitKind::kWrite;
  return {{KernelName(kind), ShapeName(shape), limit, bytes, about},
          (add ? 2 : 1) * static_cast<int64_t>(bytes),
          static_cast<int64_t>(elements),
          Factory(PosencPass, kind, shape),
          Factory(NaivePass, kind, shape)};
}

}  // namespace

std::vector<GroupRows> SinusoidRows() {
  std::vector<GroupRows> rows;
  for (const SinusoidShape& shape : kFillShapes) rows.push_back(Group(Kind::kFill, shape));
  for (const SinusoidShape& shape : kAddShapes) rows.push_back(Group(Kind::kAdd, shape));
  for (Kind kind : {Kind::kFillBf16, Kind::kFillF16})
    for (const SinusoidShape& shape : kFill16Shapes) rows.push_back(Group(kind, shape));
  return rows;
}

}  // namespace posenc_bench
