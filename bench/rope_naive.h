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

/* The tables of the re-rotation and M-RoPE rows, from a plan's frequencies (double, as
 * posenc_rope_plan_freqs gives them): cos_tab[t * R/2 + i] = scale * cos(a), likewise sin_tab,
 * where
 *  - naive_rerotate_table: a = to_positions[t] * to_freqs[i] - from_positions[t] *
 *    from_freqs[i] (a NULL side counts as 0: the table of one rotation, or with
 *    to_positions NULL of its inverse);
 *  - naive_mrope_table: a = positions[r * n_tokens + t] * freqs[i], r the row (temporal,
 *    height, width) of pair i: contiguous sections (Qwen2-VL). */
void naive_rerotate_table(size_t n_tokens, const int32_t *from_positions, const double *from_freqs,
                          const int32_t *to_positions, const double *to_freqs, size_t rotary_dim,
                          double scale, float *cos_tab, float *sin_tab);
void naive_mrope_table(size_t n_tokens, const int32_t *positions, const size_t sections[3],
                       size_t rotary_dim, const double *freqs, double scale, float *cos_tab,
                       float *sin_tab);

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

/* The decode-step RoPE of small C runtimes (llama2.c's forward pass), nothing precomputed:
 * for each head of q (q_heads) and then of k (k_heads), for each NEOX pair i in
 * [0, head_dim / 2): freq = 1.0f / powf(10000.0f, (float)(2 * i) / head_dim),
 * val = pos * freq, fcr = cosf(val), fci = sinf(val), then (x[i], x[i + head_dim / 2])
 * rotated by them. q is [q_heads, head_dim], k is [k_heads, head_dim] (one token). */
void naive_rope_decode_inline(float *q, size_t q_heads, float *k, size_t k_heads, size_t head_dim,
                              int32_t pos);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_BENCH_ROPE_NAIVE_H */
