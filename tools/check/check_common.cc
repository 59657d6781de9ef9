#include "check_common.h"

#include <cmath>
#include <cstring>

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

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t ToBf16(float f) {
  const uint32_t u = Bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float FromBf16(uint16_t h) { return FromBits(uint32_t{h} << 16); }

uint16_t ToF16(float f) {
  const uint32_t u = Bits(f), a = u & 0x7fffffffu;
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // 65520
  if (a < 0x38800000u) {  // below 2^-14: a multiple of 2^-24, exact in double
    const double units = std::nearbyint(static_cast<double>(FromBits(a)) * 0x1p24);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(units));
  }
  const uint32_t mantissa = a & 0x7fffffu, rest = mantissa & 0x1fffu;
  uint32_t h = (((a >> 23) - 112u) << 10) | (mantissa >> 13);
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carries into the exponent
  return static_cast<uint16_t>(sign | h);
}

float FromF16(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  float v;
  if (e == 0)
    v = static_cast<float>(m) * 0x1p-24f;  // exact
  else if (e == 31)
    v = FromBits(0x7f800000u | (m << 13));
  else
    v = FromBits(((e + 112u) << 23) | (m << 13));
  return FromBits(Bits(v) | sign);
}

}  // namespace posenc_report
