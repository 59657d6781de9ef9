// posenc-report's self-check: every available ISA against the scalar variant on random
// shapes, and every variant's cos/sin against a long double reference at |p| = 2^31 - 1,
// for RoPE (self_check.cc) and for the sinusoidal, ALiBi and learned kernels
// (encoding_check.cc); the fused ALiBi softmax against a long double softmax, and the
// bf16/f16 storage kernels bit for bit against the same ISA's f32 results (storage_check.cc);
// posenc_softmax (masks, positions, sinks, soft-capping, ALiBi, 16-bit x and y) against a
// long double softmax (softmax_check.cc).
#ifndef POSENC_TOOLS_SELF_CHECK_H
#define POSENC_TOOLS_SELF_CHECK_H

#include <cstdint>
#include <ostream>

namespace posenc_report {

// Runs the checks (seeded: the same seed gives the same cases), prints a table per ISA
// with PASS/FAIL and returns true if every check passed. Leaves the active ISA changed.
bool RunSelfCheck(uint64_t seed, std::ostream& out);

}  // namespace posenc_report

#endif  // POSENC_TOOLS_SELF_CHECK_H
