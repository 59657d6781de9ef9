// posenc-report's check of posenc_softmax on every available ISA: random calls with masks
// (f32 / f16, shared or per head, -inf cells), key and query positions, causal and window
// hiding, soft-capping, sinks, the three ALiBi forms, f32 / bf16 / f16 scores and
// probabilities, in place or not, against the exact softmax in long double
// (POSENC_SOFTMAX_REL_TOLERANCE, POSENC_SOFTMAX_ABS_TOLERANCE); calls with a 16-bit x or y
// bit for bit against the same ISA's f32 call.
#ifndef POSENC_TOOLS_SOFTMAX_CHECK_H
#define POSENC_TOOLS_SOFTMAX_CHECK_H

#include <cstdint>
#include <ostream>

namespace posenc_report {

// Runs the checks (seeded), prints a table per ISA with PASS/FAIL and returns true if every
// check passed. Leaves the active ISA changed.
bool RunSoftmaxCheck(uint64_t seed, std::ostream& out);

}  // namespace posenc_report

#endif  // POSENC_TOOLS_SOFTMAX_CHECK_H
