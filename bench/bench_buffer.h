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
  bool owned = true;  // false: a SharedBuffers buffer, freed with the SharedBuffers
  void operator()(void* p) const {
    if (owned) std::free(p);
  }
};
using AlignedFloats = std::unique_ptr<float[], FreeDeleter>;

// n floats, 64-byte aligned, uninitialised (inside a SharedBuffers' life: see there).
AlignedFloats AlignedFloatArray(size_t n);

// The buffers of the rows of one paired group (MeasurePaired), shared. Its rows call one
// kernel on the same set-up, so they can run on one copy of its buffers: while an instance
// lives (one at a time, one thread), the k-th AlignedFloatArray request of each row set up
// after NextRow() gets the k-th buffer of the first row's (allocated then, by aligned_alloc
// as outside; a later request for more bytes gets a new one), owned by the instance. Each
// row's set-up writes its data again (the same seeds: the same values). Then no row's passes
// evict another's buffers from the caches, and a row needs no warm-up passes after another.
// SetSharing(false) pauses the sharing (requests are allocated as without an instance: the
// limit row's buffers, a naive row's) and keeps the buffers.
class SharedBuffers {
 public:
  SharedBuffers();
  ~SharedBuffers();
  SharedBuffers(const SharedBuffers&) = delete;
  SharedBuffers& operator=(const SharedBuffers&) = delete;
  void NextRow();  // the next request gets the first buffer
  void SetSharing(bool on);

 private:
  friend AlignedFloats AlignedFloatArray(size_t n);
  float* Take(size_t bytes);
  struct Buffer {
    size_t bytes;
    float* data;
  };
  std::vector<Buffer> buffers_, retired_;
  size_t next_ = 0;
  bool active_ = true;
};

// n bytes, 64-byte aligned, uninitialised: AlignedFloatArray's memory (shared, as its is,
// inside a SharedBuffers' life), for byte-typed destinations (q8_0 blocks, FP8).
struct AlignedBytes {
  explicit AlignedBytes(size_t n) : floats(AlignedFloatArray((n + 3) / 4)) {}
  uint8_t* data() const { return reinterpret_cast<uint8_t*>(floats.get()); }
  AlignedFloats floats;
};

// n floats, 64-byte aligned, uniform in [-1, 1]; the same seed gives the same data.
AlignedFloats RandomFloats(size_t n, uint64_t seed);

// n values uniform in [0, bound) (bound >= 1); the same seed gives the same values.
std::vector<int32_t> RandomIndices(size_t n, int32_t bound, uint64_t seed);

}  // namespace posenc_bench

#endif  // POSENC_BENCH_BUFFER_H
