// posenc-report's check of the sinusoidal, ALiBi and learned kernels on every available ISA:
// sinusoids against the scalar variant (POSENC_SINUSOID_SIMD_TOLERANCE) and, in accurate
// mode, against long double sin/cos of the exact angle (2^-22); ALiBi and learned bit for
// bit against the scalar variant and an independent float loop.
#ifndef POSENC_TOOLS_ENCODING_CHECK_H
#define POSENC_TOOLS_ENCODING_CHECK_H

#include <cstdint>
#include <ostream>

namespace posenc_report {

// Runs the checks (seeded), prints a table per ISA with PASS/FAIL and returns true if every
// check passed. Leaves the active ISA changed.
bool RunEncodingCheck(uint64_t seed, std::ostream& out);

}  // namespace posenc_report

#endif  // POSENC_TOOLS_ENCODING_CHECK_H
