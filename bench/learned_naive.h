/* The "naive" learned-embedding rows: the plain gather-add loop, x[t] += table[pos[t]], over
 * dense [n_tokens, dim] embeddings and a dense [max_pos, dim] table. learned_naive.c is
 * compiled with -O3 -march=native (that file only). */
#ifndef POSENC_BENCH_LEARNED_NAIVE_H
#define POSENC_BENCH_LEARNED_NAIVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void naive_learned_add(float *x, const float *table, const int32_t *positions, size_t n_tokens,
                       size_t dim);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_BENCH_LEARNED_NAIVE_H */
