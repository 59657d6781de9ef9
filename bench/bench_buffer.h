// Aligned, randomly filled float buffers for the benchmark rows. The kernel rows and the
// limit rows allocate the same way, so that page placement treats them alike.
#ifndef POSENC_BENCH_BUFFER_H
#define POSENC_BENCH_BUFFER_H

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace posenc_bench {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float[], FreeDeleter>;

// n floats, 64-byte aligned, uninitialised.
AlignedFloats AlignedFloatArray(size_t n);

// n floats, 64-byte aligned, uniform in [-1, 1]; the same seed gives the same data.
AlignedFloats RandomFloats(size_t n, uint64_t seed);

// n values uniform in [0, bound) (bound >= 1); the same seed gives the same values.
std::vector<int32_t> RandomIndices(size_t n, int32_t bound, uint64_t seed);

}  // namespace posenc_bench

#endif  // POSENC_BENCH_BUFFER_H
