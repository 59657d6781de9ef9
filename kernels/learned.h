/* Internal: the argument block every learned-embedding kernel takes. Arguments reaching a
 * kernel have been checked by dispatch/api_learned.c: every position is a row of the table. */
#ifndef POSENC_KERNELS_LEARNED_H
#define POSENC_KERNELS_LEARNED_H

#include <stddef.h>
#include <stdint.h>

typedef struct learned_f32_args {
  const float *table;
  size_t table_stride;
  size_t dim;
  size_t n_tokens;
  const int32_t *positions; /* NULL: start_pos + t */
  int32_t start_pos;
  float *x;
  size_t x_stride;
} learned_f32_args;

typedef void (*learned_f32_fn)(const learned_f32_args *args);

static inline const float *learned_row(const learned_f32_args *a, size_t t) {
  const int64_t pos = a->positions ? a->positions[t] : (int64_t)a->start_pos + (int64_t)t;
  return a->table + (size_t)pos * a->table_stride;
}

#endif /* POSENC_KERNELS_LEARNED_H */
