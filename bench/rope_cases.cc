// RoPE rows: every available ISA through the public dispatch, and the naive loop.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "bench_buffer.h"
#include "posenc.h"
#include "posenc_bench_cases.h"
#include "rope_naive.h"

namespace posenc_bench {
namespace {

constexpr double kBase = 10000.0;
constexpr int32_t kFirstPosition = 1000;  // positions[t] = 1000 + t

struct RopeKernel {
  const char* name;
  unsigned flags;  // accurate angles (the default), forward
  naive_rope_fn naive;
};

const RopeKernel kKernels[] = {{"rope_f32_neox", POSENC_ROPE_NEOX, naive_rope_neox},
                               {"rope_f32_gptj", POSENC_ROPE_GPTJ, naive_rope_gptj}};

// The Q and K buffers of one shape ([L, Hq, D] and [L, Hk, D]), random in [-1, 1], and the
// positions. Rotating in place again every iteration keeps the magnitudes, so the data stays
// well-scaled however many iterations run.
struct RopeBuffers {
  explicit RopeBuffers(const RopeShape& s)
      : shape(s),
        q(RandomFloats(s.tokens * s.q_heads * s.head_dim, 1)),
        k(RandomFloats(s.tokens * s.k_heads * s.head_dim, 2)),
        positions(s.tokens) {
    for (size_t t = 0; t < s.tokens; ++t) positions[t] = kFirstPosition + static_cast<int32_t>(t);
  }
  posenc_rope_tensor View(float* data, size_t heads) const {
    return {data, heads, heads * shape.head_dim, shape.head_dim};
  }
  RopeShape shape;
  AlignedFloats q, k;
  std::vector<int32_t> positions;
};

// Both row kinds count the same bytes: Q and K read and written once (2 * their bytes).
// posenc computes cos/sin itself; the naive loop also reads its table (tokens * R floats),
// which is NOT counted, so that bytes/s ratios between the rows are time ratios. Items: every
// element of Q and K (the whole head vector is the output; R = D in these shapes).
void SetRopeCounters(benchmark::State& state, const RopeShape& shape) {
  const auto iterations = static_cast<int64_t>(state.iterations());
  state.SetBytesProcessed(iterations * 2 * static_cast<int64_t>(RopeBufferBytes(shape)));
  const size_t elements = shape.tokens * (shape.q_heads + shape.k_heads) * shape.head_dim;
  state.SetItemsProcessed(iterations * static_cast<int64_t>(elements));
}

struct PlanDeleter {
  void operator()(posenc_rope_plan* plan) const { posenc_rope_plan_destroy(plan); }
};

void RunPosenc(benchmark::State& state, const RopeKernel& kernel, posenc_isa isa,
               const RopeShape& shape) {
  posenc_rope_plan* raw_plan = nullptr;
  if (posenc_set_isa(isa) != POSENC_OK ||
      posenc_rope_plan_create(&raw_plan, shape.rotary_dim, kBase, 1.0) != POSENC_OK) {
    state.SkipWithError("posenc_set_isa or posenc_rope_plan_create failed");
    return;
  }
  const std::unique_ptr<posenc_rope_plan, PlanDeleter> plan(raw_plan);
  RopeBuffers buf(shape);
  const posenc_rope_tensor q = buf.View(buf.q.get(), shape.q_heads);
  const posenc_rope_tensor k = buf.View(buf.k.get(), shape.k_heads);
  auto rotate = [&] {
    return posenc_rope_f32(plan.get(), shape.head_dim, shape.tokens, buf.positions.data(), 0, &q,
                           &k, kernel.flags);
  };
  if (rotate() != POSENC_OK) {
    state.SkipWithError("posenc_rope_f32 failed");
    return;
  }
  for (auto _ : state) {
    rotate();
    benchmark::ClobberMemory();
  }
  SetRopeCounters(state, shape);
}

void RunNaive(benchmark::State& state, const RopeKernel& kernel, const RopeShape& shape) {
  RopeBuffers buf(shape);
  const size_t table_size = shape.tokens * shape.rotary_dim / 2;
  const AlignedFloats cos_tab = AlignedFloatArray(table_size);  // given for free: untimed
  const AlignedFloats sin_tab = AlignedFloatArray(table_size);
  naive_rope_table(shape.tokens, buf.positions.data(), shape.rotary_dim, kBase, cos_tab.get(),
                   sin_tab.get());
  auto rotate = [&] {
    kernel.naive(buf.q.get(), shape.tokens, shape.q_heads, shape.head_dim, shape.rotary_dim,
                 cos_tab.get(), sin_tab.get());
    kernel.naive(buf.k.get(), shape.tokens, shape.k_heads, shape.head_dim, shape.rotary_dim,
                 cos_tab.get(), sin_tab.get());
  };
  rotate();
  for (auto _ : state) {
    rotate();
    benchmark::ClobberMemory();
  }
  SetRopeCounters(state, shape);
}

void RegisterRow(const RopeKernel& kernel, const std::string& variant, const RopeShape& shape) {
  const std::string name = RopeRowName(kernel.name, variant, shape);
  posenc_isa isa;
  if (posenc_isa_from_name(variant.c_str(), &isa) == POSENC_OK)
    benchmark::RegisterBenchmark(name.c_str(), RunPosenc, kernel, isa, shape);
  else
    benchmark::RegisterBenchmark(name.c_str(), RunNaive, kernel, shape);
}

}  // namespace

const std::vector<RopeShape>& RopeShapes() {
  // heads:40 in the row names = 32 Q heads + 8 K heads.
  static const std::vector<RopeShape> shapes = {
      {1, 32, 8, 128, 128}, {16, 32, 8, 128, 128}, {512, 32, 8, 128, 128}, {4096, 32, 8, 128, 128}};
  return shapes;
}

const std::vector<std::string>& RopeKernelNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const RopeKernel& kernel : kKernels) v.emplace_back(kernel.name);
    return v;
  }();
  return names;
}

std::vector<std::string> RopeVariants() {
  std::vector<std::string> variants;
  for (int i = 0; i < POSENC_ISA_COUNT; ++i)
    if (posenc_isa_available(static_cast<posenc_isa>(i)))
      variants.push_back(posenc_isa_name(static_cast<posenc_isa>(i)));
  variants.push_back("naive");
  return variants;
}

std::string RopeShapeName(const RopeShape& shape) {
  return "tokens:" + std::to_string(shape.tokens) +
         "/heads:" + std::to_string(shape.q_heads + shape.k_heads) +
         "/dim:" + std::to_string(shape.head_dim);
}

std::string RopeRowName(const std::string& kernel, const std::string& variant,
                        const RopeShape& shape) {
  return kernel + "/" + variant + "/" + RopeShapeName(shape);
}

size_t RopeBufferBytes(const RopeShape& shape) {
  return shape.tokens * (shape.q_heads + shape.k_heads) * shape.head_dim * sizeof(float);
}

void RegisterRopeRows() {
  const std::vector<std::string> variants = RopeVariants();
  for (const RopeKernel& kernel : kKernels)
    for (const RopeShape& shape : RopeShapes())
      for (const std::string& variant : variants) RegisterRow(kernel, variant, shape);
}

}  // namespace posenc_bench
