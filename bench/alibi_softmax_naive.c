/* The plain ALiBi softmax loops an integrator would write (see alibi_softmax_naive.h): no
 * intrinsics, no restrict, left to the compiler's -O3 -march=native. */
#include "alibi_softmax_naive.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

static void softmax(float *x, int n) {
  float max = -INFINITY;
  for (int j = 0; j < n; ++j) max = x[j] > max ? x[j] : max;
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) {
    x[j] = expf(x[j] - max);
    sum += x[j];
  }
  for (int j = 0; j < n; ++j) x[j] /= sum;
}

static void biased_row(float *row, const float *src, float slope, int n_k, int qpos, float scale,
                       int causal) {
  for (int j = 0; j < n_k; ++j) {
    if (causal && j > qpos)
      row[j] = -INFINITY;
    else
      row[j] = scale * src[j] - slope * fabsf((float)(qpos - j));
  }
}

void naive_alibi_softmax(float *scores, const float *slopes, int n_heads, int n_q, int n_k,
                         int q_offset, float scale, int causal) {
  for (int h = 0; h < n_heads; ++h)
    for (int i = 0; i < n_q; ++i) {
      float *row = scores + ((size_t)h * n_q + i) * n_k;
      biased_row(row, row, slopes[h], n_k, q_offset + i, scale, causal);
      softmax(row, n_k);
    }
}

static float from_bf16(uint16_t h) {
  const uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if (isnan(f)) return (uint16_t)((bits >> 16) | 0x40);
  return (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

void naive_alibi_softmax_bf16(uint16_t *scores, const float *slopes, int n_heads, int n_q, int n_k,
                              int q_offset, float scale, int causal) {
  float row[n_k > 0 ? n_k : 1];
  for (int h = 0; h < n_heads; ++h)
    for (int i = 0; i < n_q; ++i) {
      uint16_t *s = scores + ((size_t)h * n_q + i) * n_k;
      for (int j = 0; j < n_k; ++j) row[j] = from_bf16(s[j]);
      biased_row(row, row, slopes[h], n_k, q_offset + i, scale, causal);
      softmax(row, n_k);
      for (int j = 0; j < n_k; ++j) s[j] = to_bf16(row[j]);
    }
}

void naive_softmax_rows(float *x, int n_rows, int n) {
  for (int r = 0; r < n_rows; ++r) softmax(x + (size_t)r * n, n);
}
