/* The plain softmax loop an integrator would write (see softmax_naive.h): no intrinsics, no
 * restrict, left to the compiler's -O3 -march=native. */
#include "softmax_naive.h"

#include <math.h>
#include <stddef.h>

#include "naive_half.h"

/* One row in place: row = softmax(t) over its n_k keys. */
static void softmax_row(float *row, int n_k, const naive_softmax_opts *o, int i, float sink) {
  const float *m = o->mask ? o->mask + (size_t)i * n_k : NULL;
  const uint16_t *m16 = o->mask16 ? o->mask16 + (size_t)i * n_k : NULL;
  const int qpos = o->q_offset + i;
  float max = sink;
  for (int j = 0; j < n_k; ++j) {
    float t = row[j] * o->scale;
    if (m) t += m[j];
    if (m16) t += f16_to_float(m16[j]);
    if ((o->causal && j > qpos) || (o->window > 0 && qpos - j >= o->window)) t = -INFINITY;
    row[j] = t;
    max = t > max ? t : max;
  }
  float sum = 0.0f;
  for (int j = 0; j < n_k; ++j) {
    row[j] = expf(row[j] - max);
    sum += row[j];
  }
  if (o->sinks) sum += expf(sink - max);
  for (int j = 0; j < n_k; ++j) row[j] /= sum;
}

void naive_softmax_f32(float *scores, int n_heads, int n_q, int n_k, const naive_softmax_opts *o) {
  for (int h = 0; h < n_heads; ++h)
    for (int i = 0; i < n_q; ++i)
      softmax_row(scores + ((size_t)h * n_q + i) * n_k, n_k, o, i,
                  o->sinks ? o->sinks[h] : -INFINITY);
}

void naive_softmax_bf16(uint16_t *scores, int n_heads, int n_q, int n_k,
                        const naive_softmax_opts *o) {
  float row[n_k > 0 ? n_k : 1];
  for (int h = 0; h < n_heads; ++h)
    for (int i = 0; i < n_q; ++i) {
      uint16_t *s = scores + ((size_t)h * n_q + i) * n_k;
      for (int j = 0; j < n_k; ++j) row[j] = bf16_to_float(s[j]);
      softmax_row(row, n_k, o, i, o->sinks ? o->sinks[h] : -INFINITY);
      for (int j = 0; j < n_k; ++j) s[j] = float_to_bf16(row[j]);
    }
}
