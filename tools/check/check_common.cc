#include "check_common.h"

#include <cmath>

namespace posenc_report {

std::vector<posenc_isa> AvailableIsas() {
  std::vector<posenc_isa> isas;
  for (int i = 0; i < POSENC_ISA_COUNT; ++i)
    if (posenc_isa_available(static_cast<posenc_isa>(i)))
      isas.push_back(static_cast<posenc_isa>(i));
  return isas;
}

int32_t RandomPosition(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0:  // typical context
      return static_cast<int32_t>(rng() % 140000);
    case 1:  // near the top of the int32 range
      return INT32_MAX - static_cast<int32_t>(rng() % 100000);
    case 2:  // negative, anywhere
      return -static_cast<int32_t>(rng() % (uint64_t{1} << 31));
    default:  // anywhere
      return static_cast<int32_t>(static_cast<uint32_t>(rng()));
  }
}

std::vector<float> RandomData(std::mt19937_64& rng, size_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// w = w_hi + w_lo with w_hi = (double)(float)w (24 bits) and w_lo exact (<= 29 bits), so
// x * w_hi and x * w_lo are exact in a 64-bit significand (31 + 29 bits) and fmodl reduces
// each exactly (up to 2*pi's rounding).
long double ReferenceAngle(long double x, double w) {
  const long double two_pi = 6.283185307179586476925286766559005768L;
  const double w_hi = static_cast<double>(static_cast<float>(w));
  const double w_lo = w - w_hi;
  return std::fmod(x * w_hi, two_pi) + std::fmod(x * w_lo, two_pi);
}

}  // namespace posenc_report
