/*
 * Small helpers shared by the posenc examples: nothing here calls posenc except
 * ex_check() and ex_report(). The float (_f32) helpers are the integrator's side, the
 * double (_f64) ones serve each example's independent reference. Plain loops, no
 * blocking or threads: the examples are about positional encodings, not GEMM.
 */
#ifndef POSENC_EXAMPLE_UTIL_H
#define POSENC_EXAMPLE_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <posenc.h>

/* Exits with a message on any posenc error (on error posenc has written nothing). */
static inline void ex_check(posenc_status st, const char *what) {
  if (st != POSENC_OK) {
    fprintf(stderr, "%s failed: %s\n", what, posenc_status_string(st));
    exit(EXIT_FAILURE);
  }
}

static inline void *ex_alloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(EXIT_FAILURE);
  }
  return p;
}
#define EX_ALLOC(type, n) ((type *)ex_alloc((n), sizeof(type)))

/* IEEE binary16 bits to float, exactly (the examples' own reading of an f16 KV cache). */
static inline float ex_f16_to_f32(uint16_t h) {
  const unsigned e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  const float v = e == 0    ? ldexpf((float)m, -24)
                  : e == 31 ? (m ? NAN : INFINITY)
                            : ldexpf((float)(m | 0x400u), (int)e - 25);
  return (h & 0x8000u) ? -v : v;
}

/* Deterministic pseudo-random numbers: a 32-bit LCG (Numerical Recipes constants). */
static inline float ex_rand(uint32_t *state) { /* uniform in [-1, 1) */
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) * (1.0f / 8388608.0f) - 1.0f;
}
static inline void ex_fill(float *x, size_t n, float amplitude, uint32_t *state) {
  for (size_t i = 0; i < n; i++) x[i] = amplitude * ex_rand(state);
}
/* Weights for a projection from `fan_in` inputs, scaled so that inputs uniform in [-1, 1)
 * give outputs of standard deviation ~1 (attention scores of order 1, softmax not flat). */
static inline void ex_fill_weights(float *w, size_t n, size_t fan_in, uint32_t *state) {
  ex_fill(w, n, 3.0f / sqrtf((float)fan_in), state);
}

static inline void ex_to_f64(const float *x, double *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = x[i];
}

/* ---- float: the integrator's side ------------------------------------------------------ */

/* c[m, n] = a[m, k] @ w[k, n], all row-major. */
static inline void ex_matmul_f32(const float *a, const float *w, float *c, size_t m, size_t k,
                                 size_t n) {
  for (size_t i = 0; i < m; i++) {
    for (size_t j = 0; j < n; j++) c[i * n + j] = 0.0f;
    for (size_t p = 0; p < k; p++)
      for (size_t j = 0; j < n; j++) c[i * n + j] += a[i * k + p] * w[p * n + j];
  }
}

/* s[i, j] = scale * dot(q_i, k_j) for n_q query rows (q + i * q_stride) and n_k key rows. */
static inline void ex_scores_f32(const float *q, size_t q_stride, const float *k, size_t k_stride,
                                 size_t n_q, size_t n_k, size_t dim, float scale, float *s) {
  for (size_t i = 0; i < n_q; i++)
    for (size_t j = 0; j < n_k; j++) {
      float dot = 0.0f;
      for (size_t d = 0; d < dim; d++) dot += q[i * q_stride + d] * k[j * k_stride + d];
      s[i * n_k + j] = scale * dot;
    }
}

/* Row-wise softmax, max subtracted; -inf entries (masked) get weight 0. */
static inline void ex_softmax_rows_f32(float *s, size_t n_rows, size_t n) {
  for (size_t i = 0; i < n_rows; i++) {
    float *row = s + i * n, max = -INFINITY, sum = 0.0f;
    for (size_t j = 0; j < n; j++) max = row[j] > max ? row[j] : max;
    for (size_t j = 0; j < n; j++) {
      row[j] = expf(row[j] - max);
      sum += row[j];
    }
    for (size_t j = 0; j < n; j++) row[j] /= sum;
  }
}

/* out_i = sum_j p[i, j] * v_j. */
static inline void ex_weighted_sum_f32(const float *p, const float *v, size_t v_stride, size_t n_q,
                                       size_t n_k, size_t dim, float *out, size_t out_stride) {
  for (size_t i = 0; i < n_q; i++) {
    for (size_t d = 0; d < dim; d++) out[i * out_stride + d] = 0.0f;
    for (size_t j = 0; j < n_k; j++)
      for (size_t d = 0; d < dim; d++)
        out[i * out_stride + d] += p[i * n_k + j] * v[j * v_stride + d];
  }
}

/* One head of softmax(q k^T / sqrt(dim)) v. With `causal`, query row i sits at position
 * q_offset + i and sees keys 0..q_offset + i. s: n_q * n_k floats of scratch. */
static inline void ex_attend_f32(const float *q, size_t q_stride, const float *k, size_t k_stride,
                                 const float *v, size_t v_stride, size_t n_q, size_t n_k,
                                 size_t dim, int causal, size_t q_offset, float *s, float *out,
                                 size_t out_stride) {
  ex_scores_f32(q, q_stride, k, k_stride, n_q, n_k, dim, 1.0f / sqrtf((float)dim), s);
  for (size_t i = 0; causal && i < n_q; i++)
    for (size_t j = q_offset + i + 1; j < n_k; j++) s[i * n_k + j] = -INFINITY;
  ex_softmax_rows_f32(s, n_q, n_k);
  ex_weighted_sum_f32(s, v, v_stride, n_q, n_k, dim, out, out_stride);
}

/* ---- double: the references ------------------------------------------------------------ */

static inline void ex_matmul_f64(const double *a, const float *w, double *c, size_t m, size_t k,
                                 size_t n) {
  for (size_t i = 0; i < m; i++) {
    for (size_t j = 0; j < n; j++) c[i * n + j] = 0.0;
    for (size_t p = 0; p < k; p++)
      for (size_t j = 0; j < n; j++) c[i * n + j] += a[i * k + p] * (double)w[p * n + j];
  }
}

static inline void ex_scores_f64(const double *q, size_t q_stride, const double *k, size_t k_stride,
                                 size_t n_q, size_t n_k, size_t dim, double scale, double *s) {
  for (size_t i = 0; i < n_q; i++)
    for (size_t j = 0; j < n_k; j++) {
      double dot = 0.0;
      for (size_t d = 0; d < dim; d++) dot += q[i * q_stride + d] * k[j * k_stride + d];
      s[i * n_k + j] = scale * dot;
    }
}

static inline void ex_softmax_rows_f64(double *s, size_t n_rows, size_t n) {
  for (size_t i = 0; i < n_rows; i++) {
    double *row = s + i * n, max = -INFINITY, sum = 0.0;
    for (size_t j = 0; j < n; j++) max = row[j] > max ? row[j] : max;
    for (size_t j = 0; j < n; j++) {
      row[j] = exp(row[j] - max);
      sum += row[j];
    }
    for (size_t j = 0; j < n; j++) row[j] /= sum;
  }
}

static inline void ex_weighted_sum_f64(const double *p, const double *v, size_t v_stride,
                                       size_t n_q, size_t n_k, size_t dim, double *out,
                                       size_t out_stride) {
  for (size_t i = 0; i < n_q; i++) {
    for (size_t d = 0; d < dim; d++) out[i * out_stride + d] = 0.0;
    for (size_t j = 0; j < n_k; j++)
      for (size_t d = 0; d < dim; d++)
        out[i * out_stride + d] += p[i * n_k + j] * v[j * v_stride + d];
  }
}

static inline void ex_attend_f64(const double *q, size_t q_stride, const double *k, size_t k_stride,
                                 const double *v, size_t v_stride, size_t n_q, size_t n_k,
                                 size_t dim, int causal, size_t q_offset, double *s, double *out,
                                 size_t out_stride) {
  ex_scores_f64(q, q_stride, k, k_stride, n_q, n_k, dim, 1.0 / sqrt((double)dim), s);
  for (size_t i = 0; causal && i < n_q; i++)
    for (size_t j = q_offset + i + 1; j < n_k; j++) s[i * n_k + j] = -INFINITY;
  ex_softmax_rows_f64(s, n_q, n_k);
  ex_weighted_sum_f64(s, v, v_stride, n_q, n_k, dim, out, out_stride);
}

/* ---- comparison ------------------------------------------------------------------------ */

/* max |a - b|; NaN if any difference is NaN. */
static inline double ex_max_abs_diff(const float *a, const double *b, size_t n) {
  double max = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]);
    if (isnan(d) || d > max) max = d;
    if (isnan(max)) break;
  }
  return max;
}

/* Prints the summary line; returns the process exit status (0: within tolerance). */
static inline int ex_report(const char *name, const char *shape, double max_diff,
                            double tolerance) {
  int ok = max_diff <= tolerance; /* false for NaN */
  printf("%s: %s: max |posenc - reference| = %.1e (tolerance %.0e, isa %s): %s\n", name, shape,
         max_diff, tolerance, posenc_isa_name(posenc_active_isa()), ok ? "ok" : "MISMATCH");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif /* POSENC_EXAMPLE_UTIL_H */
