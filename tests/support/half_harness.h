// 16-bit storage (bf16, f16) for the suites of the _bf16 and _f16 functions: rounding to
// the storage type computed independently of the library (in double, with nearbyint), exact
// decoding and encoding, half an ulp of each type, index-tagged NaN sentinels, and a buffer
// of 16-bit elements kept in AlignedFloats, so that the shared argument-check helpers compare
// it bit for bit.
#ifndef POSENC_TESTS_SUPPORT_HALF_HARNESS_H
#define POSENC_TESTS_SUPPORT_HALF_HARNESS_H

#include <cstddef>
#include <cstdint>
#include <string>

#include "test_support.h"

namespace posenc_test {

enum class Storage { kBf16, kF16 };
inline constexpr Storage kStorages[] = {Storage::kBf16, Storage::kF16};
const char* StorageName(Storage s);

// The value of a bf16 / f16 bit pattern, exactly (a NaN pattern gives a NaN).
float DecodeHalf(Storage s, uint16_t bits);
// v rounded to the storage type, to nearest with ties to even, as the float that holds it
// exactly: infinity from halfway past the largest finite value on, the sign of a zero
// kept, NaN for NaN.
float RoundToStorage(Storage s, float v);
// The bits of a value the storage type holds exactly (as RoundToStorage returns it); a NaN
// gives the default quiet NaN.
uint16_t EncodeHalf(Storage s, float exact);
// The bits of v rounded to the storage type: EncodeHalf(s, RoundToStorage(s, v)).
inline uint16_t ToHalfBits(Storage s, float v) { return EncodeHalf(s, RoundToStorage(s, v)); }
bool IsHalfNaN(Storage s, uint16_t bits);
// Half an ulp of the storage type at magnitude |v|: the most that rounding v can move it
// (below the normal range: half the subnormal step).
double HalfUlp(Storage s, double v);
// A quiet NaN whose payload holds the low bits of an index, so a stray copy is recognisable.
uint16_t HalfNaNSentinel(Storage s, size_t index);

// n 16-bit elements, 64-byte aligned, zero-initialised; copies keep the alignment.
class HalfBuffer {
 public:
  explicit HalfBuffer(size_t n) : floats_((n + 1) / 2), size_(n) {}

  uint16_t* data() { return reinterpret_cast<uint16_t*>(floats_.data()); }
  size_t size() const { return size_; }
  uint16_t Get(size_t i) const;
  void Set(size_t i, uint16_t bits);
  // The same memory as floats, for ExpectStatusAndBufferUnchanged and friends.
  const AlignedFloats& floats() const { return floats_; }

 private:
  AlignedFloats floats_;
  size_t size_;
};

// "0x7fc0 (nan)": bits and value, for failure messages.
std::string DescribeHalf(Storage s, uint16_t bits);

}  // namespace posenc_test

#endif  // POSENC_TESTS_SUPPORT_HALF_HARNESS_H
