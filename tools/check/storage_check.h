// posenc-report's check of the fused ALiBi softmax and of the bf16/f16 storage kernels on
// every available ISA: posenc_alibi_softmax_f32 against a long double softmax of the float
// scores (POSENC_ALIBI_SOFTMAX_*_TOLERANCE); posenc_alibi_softmax_bf16 and the _bf16/_f16
// forms of RoPE, the sinusoids and ALiBi add/bias bit for bit against the same ISA's _f32
// result rounded to the storage type, as posenc.h promises.
#ifndef POSENC_TOOLS_STORAGE_CHECK_H
#define POSENC_TOOLS_STORAGE_CHECK_H

#include <cstdint>
#include <ostream>

namespace posenc_report {

// Runs the checks (seeded), prints a table per ISA with PASS/FAIL and returns true if every
// check passed. Leaves the active ISA changed.
bool RunStorageCheck(uint64_t seed, std::ostream& out);

}  // namespace posenc_report

#endif  // POSENC_TOOLS_STORAGE_CHECK_H
