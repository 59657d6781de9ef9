/* The "naive" reference rows: the plain C RoPE loop an integrator would write, rotating
 * [n_tokens, n_heads, head_dim] head vectors in place from a cos/sin table [n_tokens,
 * rotary_dim / 2] built beforehand with libm. rope_naive.c is compiled with -O3
 * -march=native (that file only). */
#ifndef POSENC_BENCH_ROPE_NAIVE_H
#define POSENC_BENCH_ROPE_NAIVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cos_tab[t * R/2 + i] = cos(positions[t] * base^(-2i/R)), likewise sin_tab. */
void naive_rope_table(size_t n_tokens, const int32_t *positions, size_t rotary_dim, double base,
                      float *cos_tab, float *sin_tab);

typedef void (*naive_rope_fn)(float *x, size_t n_tokens, size_t n_heads, size_t head_dim,
                              size_t rotary_dim, const float *cos_tab, const float *sin_tab);

/* Pairs (x[i], x[i + R/2]) and (x[2i], x[2i + 1]), as in posenc.h. */
void naive_rope_neox(float *x, size_t n_tokens, size_t n_heads, size_t head_dim, size_t rotary_dim,
                     const float *cos_tab, const float *sin_tab);
void naive_rope_gptj(float *x, size_t n_tokens, size_t n_heads, size_t head_dim, size_t rotary_dim,
                     const float *cos_tab, const float *sin_tab);

typedef void (*naive_rope16_fn)(uint16_t *x, size_t n_tokens, size_t n_heads, size_t head_dim,
                                size_t rotary_dim, const float *cos_tab, const float *sin_tab);

/* NEOX pairs of bf16 / f16 head vectors (uint16_t bits): each pair widened to float, rotated
 * in float, rounded back to nearest even. */
void naive_rope_neox_bf16(uint16_t *x, size_t n_tokens, size_t n_heads, size_t head_dim,
                          size_t rotary_dim, const float *cos_tab, const float *sin_tab);
void naive_rope_neox_f16(uint16_t *x, size_t n_tokens, size_t n_heads, size_t head_dim,
                         size_t rotary_dim, const float *cos_tab, const float *sin_tab);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_BENCH_ROPE_NAIVE_H */
