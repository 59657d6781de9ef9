// Helpers shared by posenc-report's checks (self_check.cc: RoPE; encoding_check.cc:
// sinusoidal, ALiBi, learned; storage_check.cc: 16-bit storage; softmax_check.cc).
#ifndef POSENC_TOOLS_CHECK_COMMON_H
#define POSENC_TOOLS_CHECK_COMMON_H

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "posenc.h"

namespace posenc_report {

// The ISAs this CPU can run, in posenc_isa order (scalar first).
std::vector<posenc_isa> AvailableIsas();

// The rows of a check's table: print_row(isa) prints the row of each available ISA and
// returns whether it passed. Returns true if every row passed.
template <class PrintRow>
bool PrintIsaRows(PrintRow print_row) {
  bool all_pass = true;
  for (posenc_isa isa : AvailableIsas()) all_pass = print_row(isa) && all_pass;
  return all_pass;
}

// Plans owned by a std::unique_ptr (or a std::shared_ptr given a PlanDeleter).
struct PlanDeleter {
  void operator()(posenc_rope_plan* plan) const { posenc_rope_plan_destroy(plan); }
  void operator()(posenc_sinusoid_plan* plan) const { posenc_sinusoid_plan_destroy(plan); }
};
using RopePlan = std::unique_ptr<posenc_rope_plan, PlanDeleter>;
using SinusoidPlan = std::unique_ptr<posenc_sinusoid_plan, PlanDeleter>;

// A position of one of four kinds: typical context, near 2^31, negative anywhere, anywhere.
int32_t RandomPosition(std::mt19937_64& rng);

// n values uniform in [-1, 1].
std::vector<float> RandomData(std::mt19937_64& rng, size_t n);

// worst = max(worst, e), except that a NaN e sticks (and then fails any bound).
inline void KeepWorst(double& worst, double e) {
  if (!(e <= worst)) worst = e;
}

// bf16 and f16, converted here independently of the library.
uint32_t Bits(float f);
float FromBits(uint32_t u);
// To nearest, ties to even; NaN stays a (quiet) NaN.
uint16_t ToBf16(float f);
float FromBf16(uint16_t h);
// To nearest, ties to even: 65520 and more -> infinity, below 2^-14 subnormal or zero.
uint16_t ToF16(float f);
float FromF16(uint16_t h);

// The exact angle x * w reduced modulo 2*pi, in long double, for an x with at most 31
// significant bits (an int32 position, or a float timestep).
long double ReferenceAngle(long double x, double w);

}  // namespace posenc_report

#endif  // POSENC_TOOLS_CHECK_COMMON_H
