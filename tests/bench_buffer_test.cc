// The bench's SharedBuffers (bench/bench_buffer.h): the buffers the rows of a paired group
// share, by the order of their requests.
#include "../bench/bench_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

namespace {

using posenc_bench::AlignedFloatArray;
using posenc_bench::AlignedFloats;
using posenc_bench::SharedBuffers;

TEST(SharedBuffers, EachRowGetsTheFirstRowsBuffersInTheOrderItAsks) {
  SharedBuffers shared;
  shared.NextRow();
  AlignedFloats a = AlignedFloatArray(1000), b = AlignedFloatArray(10);
  shared.NextRow();
  AlignedFloats a2 = AlignedFloatArray(1000), b2 = AlignedFloatArray(10);
  EXPECT_EQ(a.get(), a2.get());
  EXPECT_EQ(b.get(), b2.get());
  EXPECT_NE(a.get(), b.get());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % 64, 0u);
  shared.NextRow();
  AlignedFloats smaller = AlignedFloatArray(500);  // fits the first buffer: the same memory
  EXPECT_EQ(smaller.get(), a.get());
  AlignedFloats larger = AlignedFloatArray(20);  // more than the second had: a new buffer
  EXPECT_NE(larger.get(), b.get());
  larger[19] = 1.0f;  // (the whole of it is there; ASan would see a short one)
  b[9] = 2.0f;        // the old one stays allocated while rows may still use it
}

TEST(SharedBuffers, PausedSharingAndNoInstanceAllocateApart) {
  AlignedFloats outside = AlignedFloatArray(16);
  SharedBuffers shared;
  shared.NextRow();
  AlignedFloats first = AlignedFloatArray(16);
  shared.SetSharing(false);
  AlignedFloats own = AlignedFloatArray(16);
  EXPECT_NE(own.get(), first.get());
  EXPECT_NE(outside.get(), first.get());
  shared.SetSharing(true);
  shared.NextRow();
  EXPECT_EQ(AlignedFloatArray(16).get(), first.get());
}

TEST(SharedBuffers, OneInstanceAtATime) {
  SharedBuffers shared;
  EXPECT_THROW(SharedBuffers second, std::logic_error);
}

}  // namespace
