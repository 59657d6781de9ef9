/* Internal: the argument block every ALiBi kernel takes. Arguments reaching a kernel have
 * been checked by dispatch/api_alibi.c: positions and distances fit in int32. */
#ifndef POSENC_KERNELS_ALIBI_H
#define POSENC_KERNELS_ALIBI_H

#include <stddef.h>
#include <stdint.h>

#include "half.h"
#include "posenc.h"

/* Internal flag: write the bias instead of adding it into scores. */
#define POSENC_ALIBI_WRITE_ 0x100u

/* The same block for every storage type of the scores (float arithmetic inside); the kernel
 * entry point (posenc_alibi_<type>_<isa>) knows which type scores points to. */
typedef struct alibi_args {
  const float *slopes;
  size_t n_heads, n_q, n_k;
  int32_t q_offset;
  void *scores;                   /* float *, or uint16_t * holding bf16 / f16 bits */
  size_t head_stride, row_stride; /* in elements */
  float scale;
  unsigned flags; /* CAUSAL | WRITE_ */
} alibi_args;

typedef void (*alibi_fn)(const alibi_args *args);

/* Columns of a row that get a bias: [0, n) where n = n_k, or with the causal mask the keys
 * at or before the query; the rest of the row is -inf. */
static inline size_t alibi_visible(const alibi_args *a, int32_t qpos) {
  if (!(a->flags & POSENC_ALIBI_CAUSAL)) return a->n_k;
  const size_t upto = (size_t)qpos + 1;
  return upto < a->n_k ? upto : a->n_k;
}

#endif /* POSENC_KERNELS_ALIBI_H */
