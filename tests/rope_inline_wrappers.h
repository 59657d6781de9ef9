/* The two builds of posenc_inline.h's step that rope_inline_test.cc compares with
 * posenc_rope_apply: rope_inline_fma.c (with fused multiply-adds: the inline loop) and the
 * test's own C++ translation unit (the baseline flags: on x86 without FMA, the call). */
#ifndef POSENC_TESTS_ROPE_INLINE_WRAPPERS_H
#define POSENC_TESTS_ROPE_INLINE_WRAPPERS_H

#include <posenc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* POSENC_INLINE_APPLY_FMA as rope_inline_fma.c was compiled (1: the inline loop). */
int posenc_test_inline_has_fma_loop(void);

posenc_status posenc_test_inline_apply_fma(const posenc_rope_factors *factors, size_t row, float *x,
                                           size_t n_heads, size_t head_stride, size_t head_dim,
                                           unsigned flags);

#ifdef __cplusplus
}
#endif

#endif
