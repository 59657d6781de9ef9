#include "bench_buffer.h"

#include <new>

namespace posenc_bench {
namespace {

constexpr size_t kAlignment = 64;

// splitmix64: fast enough to fill the 80 MiB prefill buffers before every run.
uint64_t NextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

AlignedFloats AlignedFloatArray(size_t n) {
  const size_t bytes = (n * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment;
  auto* data = static_cast<float*>(std::aligned_alloc(kAlignment, bytes ? bytes : kAlignment));
  if (!data) throw std::bad_alloc();
  return AlignedFloats(data);
}

AlignedFloats RandomFloats(size_t n, uint64_t seed) {
  AlignedFloats data = AlignedFloatArray(n);
  uint64_t state = seed;
  for (size_t i = 0; i < n; ++i)  // 24 random bits -> [-1, 1]
    data[i] = static_cast<float>(NextRandom(state) >> 40) * 0x1p-23f - 1.0f;
  return data;
}

std::vector<int32_t> RandomIndices(size_t n, int32_t bound, uint64_t seed) {
  std::vector<int32_t> values(n);
  uint64_t state = seed;
  for (int32_t& v : values) v = static_cast<int32_t>(NextRandom(state) % uint64_t(bound));
  return values;
}

}  // namespace posenc_bench
