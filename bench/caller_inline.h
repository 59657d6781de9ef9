/* posenc_inline.h compiled as the caller's code (caller_inline.c). */
#ifndef POSENC_BENCH_CALLER_INLINE_H
#define POSENC_BENCH_CALLER_INLINE_H

#include <posenc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* posenc_rope_apply_token_f32 on q (q_heads) and k (k_heads) of one token, NEOX, heads of
 * head_dim floats packed, factor row 0. */
posenc_status bench_inline_apply_qk(const posenc_rope_factors *factors, float *q, size_t q_heads,
                                    float *k, size_t k_heads, size_t head_dim);
/* POSENC_INLINE_APPLY_FMA as caller_inline.c was compiled (1: the inline loop, else the call). */
int bench_inline_has_fma_loop(void);

#ifdef __cplusplus
}
#endif

#endif
