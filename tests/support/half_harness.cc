#include "half_harness.h"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <sstream>

namespace posenc_test {
namespace {

// Significand bits after the point, and the smallest normal exponent.
int FractionBits(Storage s) { return s == Storage::kBf16 ? 7 : 10; }
int MinExponent(Storage s) { return s == Storage::kBf16 ? -126 : -14; }
double LargestFinite(Storage s) {
  return s == Storage::kBf16 ? std::ldexp(255.0, 120) : 65504.0;  // (2 - 2^-p) * 2^emax
}

// The spacing of the storage type's values at magnitude |v| (finite v).
double Ulp(Storage s, double v) {
  const int e = v == 0 ? INT_MIN : std::ilogb(v);
  return std::ldexp(1.0, std::max(e, MinExponent(s)) - FractionBits(s));
}

}  // namespace

const char* StorageName(Storage s) { return s == Storage::kBf16 ? "bf16" : "f16"; }

float DecodeHalf(Storage s, uint16_t bits) {
  if (s == Storage::kBf16) {
    const uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  const int exponent = (bits >> 10) & 0x1f;
  const int fraction = bits & 0x3ff;
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0x1f) return fraction ? NAN : static_cast<float>(sign * INFINITY);
  if (exponent == 0) return static_cast<float>(sign * std::ldexp(fraction, -24));
  return static_cast<float>(sign * std::ldexp(1024 + fraction, exponent - 25));
}

float RoundToStorage(Storage s, float v) {
  if (std::isnan(v) || std::isinf(v)) return v;
  const double q = Ulp(s, v);
  // v / q and its product with q are exact (powers of two, far from the double range);
  // nearbyint rounds to nearest even in the default rounding mode.
  const double r = std::nearbyint(static_cast<double>(v) / q) * q;
  if (std::fabs(r) > LargestFinite(s)) return std::copysign(INFINITY, v);
  return static_cast<float>(std::copysign(r, v));  // copysign: -0.3 * q rounds to -0
}

uint16_t EncodeHalf(Storage s, float exact) {
  if (s == Storage::kBf16) {
    if (std::isnan(exact)) return 0x7fc0;
    uint32_t u;
    std::memcpy(&u, &exact, sizeof u);
    return static_cast<uint16_t>(u >> 16);
  }
  if (std::isnan(exact)) return 0x7e00;
  const uint16_t sign = std::signbit(exact) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(exact));
  if (std::isinf(a)) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(std::ldexp(a, 24));
  const int e = std::ilogb(a);
  const int fraction = static_cast<int>(std::ldexp(a, 10 - e)) - 1024;
  return sign | static_cast<uint16_t>(((e + 15) << 10) | fraction);
}

bool IsHalfNaN(Storage s, uint16_t bits) {
  return s == Storage::kBf16 ? (bits & 0x7fff) > 0x7f80 : (bits & 0x7fff) > 0x7c00;
}

double HalfUlp(Storage s, double v) {
  if (std::isinf(v) || std::isnan(v)) return INFINITY;
  return Ulp(s, v) / 2;
}

uint16_t HalfNaNSentinel(Storage s, size_t index) {
  return s == Storage::kBf16 ? static_cast<uint16_t>(0x7fc0 | (index & 0x3f))
                             : static_cast<uint16_t>(0x7e00 | (index & 0x1ff));
}

uint16_t HalfBuffer::Get(size_t i) const {
  uint16_t bits;
  std::memcpy(&bits, reinterpret_cast<const char*>(floats_.data()) + 2 * i, sizeof bits);
  return bits;
}

void HalfBuffer::Set(size_t i, uint16_t bits) {
  std::memcpy(reinterpret_cast<char*>(floats_.data()) + 2 * i, &bits, sizeof bits);
}

std::string DescribeHalf(Storage s, uint16_t bits) {
  std::ostringstream os;
  os << "0x" << std::hex << std::setw(4) << std::setfill('0') << bits << std::dec << " ("
     << std::setprecision(9) << DecodeHalf(s, bits) << ")";
  return os.str();
}

}  // namespace posenc_test
