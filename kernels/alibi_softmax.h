/* Internal: the argument block of the fused ALiBi softmax kernels, and the constants every
 * variant shares. Arguments reaching a kernel have been checked by
 * dispatch/api_alibi_softmax.c: positions and distances fit in int32, n_heads, n_q and
 * n_k are >= 1, slopes and scale are finite. */
#ifndef POSENC_KERNELS_ALIBI_SOFTMAX_H
#define POSENC_KERNELS_ALIBI_SOFTMAX_H

#include <stddef.h>
#include <stdint.h>

#include "alibi.h"
#include "posenc.h"

/* The softmax takes the ALiBi argument block (kernels/alibi.h), with flags CAUSAL only: the
 * public layer checks both with posenc_alibi_check. */
typedef alibi_args alibi_softmax_args;

typedef void (*alibi_softmax_fn)(const alibi_softmax_args *args);

/* exp(t) is taken as 0 for t < ALIBI_SOFTMAX_EXP_MIN: the float just above ln(FLT_MIN) =
 * -87.3365447..., so every exp the kernels keep is a normal float (>= FLT_MIN) and no
 * subnormal is produced (SLEEF never sees an argument whose exp would be subnormal). */
#define ALIBI_SOFTMAX_EXP_MIN (-87.33654f)

/* bf16 rows up to this many keys keep their intermediate values in a float block on the
 * stack (16 KiB) and compute exp once per element; longer rows compute it twice. */
#define ALIBI_SOFTMAX_BF16_BLOCK 4096

/* Columns of a row that are computed: all n_k, or with the causal mask the keys at or
 * before the query (at least one: qpos >= 0); the rest of the row is written 0. */
static inline size_t alibi_softmax_visible(const alibi_softmax_args *a, int32_t qpos) {
  if (!(a->flags & POSENC_ALIBI_CAUSAL)) return a->n_k;
  const size_t upto = (size_t)qpos + 1;
  return upto < a->n_k ? upto : a->n_k;
}

#endif /* POSENC_KERNELS_ALIBI_SOFTMAX_H */
