#include "bench_buffer.h"

#include <new>
#include <stdexcept>

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

SharedBuffers* g_shared = nullptr;

float* Allocate(size_t bytes) {
  auto* data = static_cast<float*>(std::aligned_alloc(kAlignment, bytes));
  if (!data) throw std::bad_alloc();
  return data;
}

}  // namespace

SharedBuffers::SharedBuffers() {
  if (g_shared) throw std::logic_error("SharedBuffers: one instance at a time");
  g_shared = this;
}

SharedBuffers::~SharedBuffers() {
  if (g_shared == this) g_shared = nullptr;
  for (const Buffer& b : buffers_) std::free(b.data);
  for (const Buffer& b : retired_) std::free(b.data);
}

void SharedBuffers::NextRow() { next_ = 0; }

void SharedBuffers::SetSharing(bool on) { active_ = on; }

float* SharedBuffers::Take(size_t bytes) {
  if (next_ == buffers_.size()) buffers_.push_back({bytes, Allocate(bytes)});
  Buffer& b = buffers_[next_++];
  if (b.bytes < bytes) {  // a row set up otherwise: the old buffer may still be in use
    retired_.push_back(b);
    b = {bytes, Allocate(bytes)};
  }
  return b.data;
}

AlignedFloats AlignedFloatArray(size_t n) {
  size_t bytes = (n * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment;
  if (!bytes) bytes = kAlignment;
  if (g_shared && g_shared->active_)
    return AlignedFloats(g_shared->Take(bytes), FreeDeleter{false});
  return AlignedFloats(Allocate(bytes));
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
