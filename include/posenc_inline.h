/* posenc_inline.h: posenc_rope_apply's rotation of one token, compiled into the caller.
 *
 * In a decode step the layer's weights stream through the caches between two RoPE calls and
 * evict the library's code, tables and page-table entries: a library call then costs what
 * its cold code path costs (README, "Cold calls"), far more than its data. This header-only
 * step is the factor-apply loop the caller's compiler inlines into its own layer code, with
 * its own ISA flags: factors made once per token by posenc_rope_factors_compute (a library
 * call, once per token), then applied in every layer by posenc_rope_apply_token_f32 (no call,
 * no table but the factor row).
 *
 * Results: bitwise those of posenc_rope_apply on the tiers with fused multiply-adds (AVX2,
 * AVX-512, NEON, SVE, RVV: u c - v s and v c + u s with one fused multiply-add each), so
 * mixing the two gives one model's numbers; within a float ulp or two of the terms of the
 * SSE4 tier (each product rounded) and the scalar one (in double). The inline loop needs
 * fused multiply-adds from the caller's build (x86: -mfma or an -march that has FMA; Arm64
 * and RISC-V: always): where the build has none (POSENC_INLINE_APPLY_FMA is 0), and for every
 * call the loop does not take (below), the function calls posenc_rope_apply, which checks
 * the arguments and gives its status and error detail: the statuses are posenc_rope_apply's
 * in every case.
 *
 * Include it after (or instead of) posenc.h; C11 or C++. */
#ifndef POSENC_INLINE_H
#define POSENC_INLINE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "posenc.h"

#ifndef POSENC_INLINE_APPLY_FMA
#if defined(__FMA__) || defined(__aarch64__) || defined(__ARM_FEATURE_FMA) || \
    (defined(__riscv) && defined(__riscv_flen))
#define POSENC_INLINE_APPLY_FMA 1
#else
#define POSENC_INLINE_APPLY_FMA 0
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Rotates n_heads f32 head vectors of one token in place by row `row` of factors (computed
 * by posenc_rope_factors_compute / posenc_mrope_factors_compute): head h is the head_dim
 * floats at x + h * head_stride, its first factors->rotary_dim elements rotated (NEOX or
 * GPTJ, as the factors were made), the rest untouched. Exactly
 *     posenc_rope_apply(factors, row, 0, head_dim, 1, 1, &v, &v, flags)
 * for v = {x, POSENC_DTYPE_F32, n_heads, n_heads * head_stride, head_stride, 0}: the same
 * flags rule, results (above) and statuses; that call is made for anything the
 * inline loop does not take: a build without fused multiply-adds, factors made with
 * POSENC_ROPE_DETERMINISTIC, flags other than the layout bit and POSENC_ROPE_INVERSE,
 * POSENC_ROPE_F32_ANGLES, the M-RoPE flags and POSENC_ROPE_POSITIONS_INT64 (no-ops here),
 * heads that overlap, a factor row inside the heads, and every invalid argument. */
static inline posenc_status posenc_rope_apply_token_f32(const posenc_rope_factors *factors,
                                                        size_t row, float *x, size_t n_heads,
                                                        size_t head_stride, size_t head_dim,
                                                        unsigned flags) {
#if POSENC_INLINE_APPLY_FMA
  const unsigned layout = (unsigned)POSENC_ROPE_GPTJ;
  const unsigned noops = (unsigned)POSENC_ROPE_F32_ANGLES |
                         (unsigned)POSENC_ROPE_MROPE_INTERLEAVED |
                         (unsigned)POSENC_ROPE_MROPE_GGML | (unsigned)POSENC_ROPE_POSITIONS_INT64;
  const unsigned taken = layout | (unsigned)POSENC_ROPE_INVERSE | noops;
  int fast = factors != NULL && factors->data != NULL && x != NULL && n_heads > 0 &&
             row < factors->n_rows && (flags & ~taken) == 0u && (factors->flags & ~layout) == 0u &&
             (flags & layout) == factors->flags;
  size_t r = 0, row_floats = 0;
  if (fast) {
    r = factors->rotary_dim;
    row_floats = (factors->flags & layout) ? 2 * r : r;
    fast = r >= 2 && r % 2 == 0 && r <= head_dim && factors->row_floats == row_floats &&
           (n_heads == 1 || head_stride >= head_dim) &&
           head_stride <= (SIZE_MAX / sizeof(float) - head_dim) / n_heads &&
           row <= SIZE_MAX / sizeof(float) / row_floats - 1;
  }
  if (fast) { /* the factor row must not lie in the heads (posenc_rope_apply refuses that) */
    const uintptr_t f0 = (uintptr_t)(factors->data + row * row_floats);
    const uintptr_t f1 = f0 + row_floats * sizeof(float);
    const uintptr_t x0 = (uintptr_t)x;
    const uintptr_t x1 = x0 + ((n_heads - 1) * head_stride + head_dim) * sizeof(float);
    fast = f1 <= x0 || x1 <= f0;
  }
  if (fast) {
    const float *c = factors->data + row * row_floats, *s = c + row_floats / 2;
    const float sg = (flags & (unsigned)POSENC_ROPE_INVERSE) ? -1.0f : 1.0f;
    for (size_t h = 0; h < n_heads; ++h) {
      float *y = x + h * head_stride;
      if (factors->flags & layout) { /* GPTJ: c and s hold r floats, s signed per pair */
        for (size_t i = 0; i < r; i += 2) {
          const float u = y[i], v = y[i + 1];
          y[i] = fmaf(v, sg * s[i], u * c[i]);
          y[i + 1] = fmaf(u, sg * s[i + 1], v * c[i + 1]);
        }
      } else { /* NEOX: pairs (i, i + r / 2) */
        const size_t half = r / 2;
        float *w = y + half;
        for (size_t i = 0; i < half; ++i) {
          const float u = y[i], v = w[i], si = sg * s[i];
          y[i] = fmaf(-v, si, u * c[i]);
          w[i] = fmaf(u, si, v * c[i]);
        }
      }
    }
    return POSENC_OK;
  }
#endif
  const posenc_rope_view v = {x, POSENC_DTYPE_F32, n_heads, n_heads * head_stride, head_stride, 0};
  return posenc_rope_apply(factors, row, 0, head_dim, 1, 1, &v, &v, flags);
}

#ifdef __cplusplus
}
#endif

#endif /* POSENC_INLINE_H */
