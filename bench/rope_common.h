// Internal to the bench: what the RoPE families' rows share (rope_cases.cc,
// rope_rerotate_cases.cc, mrope_cases.cc): storage types and their random head vectors.
#ifndef POSENC_BENCH_ROPE_COMMON_H
#define POSENC_BENCH_ROPE_COMMON_H

#include <cstddef>
#include <cstdint>

#include "bench_buffer.h"

namespace posenc_bench {
namespace rope {

enum class Storage { kF32, kBf16, kF16 };

inline size_t ElementBytes(Storage storage) {
  return storage == Storage::kF32 ? sizeof(float) : sizeof(uint16_t);
}

// n random values in [-1, 1] stored as `storage`, 64-byte aligned: floats, or 16-bit
// elements in an array of half as many floats (allocated as the limit rows' buffers are).
AlignedFloats RandomElements(size_t n, uint64_t seed, Storage storage);

}  // namespace rope
}  // namespace posenc_bench

#endif  // POSENC_BENCH_ROPE_COMMON_H
