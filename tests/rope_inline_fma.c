/* posenc_inline.h's apply step compiled as C with fused multiply-adds (x86: this file alone
 * takes -mfma, tests/CMakeLists.txt; Arm64 and RISC-V have them): the inline loop that
 * rope_inline_test.cc checks against posenc_rope_apply. Called only where the CPU has FMA. */
#include <posenc_inline.h>

#include "rope_inline_wrappers.h"

int posenc_test_inline_has_fma_loop(void) { return POSENC_INLINE_APPLY_FMA; }

posenc_status posenc_test_inline_apply_fma(const posenc_rope_factors *factors, size_t row, float *x,
                                           size_t n_heads, size_t head_stride, size_t head_dim,
                                           unsigned flags) {
  return posenc_rope_apply_token_f32(factors, row, x, n_heads, head_stride, head_dim, flags);
}
