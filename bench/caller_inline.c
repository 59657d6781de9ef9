/* The caller's side of the cold rows' posenc form (decode_layers_cases.cc): posenc_inline.h's
 * apply step compiled into the "runtime" with the runtime's own flags (those of the naive
 * sources: -O3 -march=native, bench/CMakeLists.txt), q and k of one token by factor row 0. */
#include <posenc_inline.h>

#include "caller_inline.h"

posenc_status bench_inline_apply_qk(const posenc_rope_factors *factors, float *q, size_t q_heads,
                                    float *k, size_t k_heads, size_t head_dim) {
  const posenc_status st =
      posenc_rope_apply_token_f32(factors, 0, q, q_heads, head_dim, head_dim, POSENC_ROPE_NEOX);
  if (st != POSENC_OK) return st;
  return posenc_rope_apply_token_f32(factors, 0, k, k_heads, head_dim, head_dim, POSENC_ROPE_NEOX);
}

int bench_inline_has_fma_loop(void) { return POSENC_INLINE_APPLY_FMA; }
