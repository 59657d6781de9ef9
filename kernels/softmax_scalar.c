/* The scalar reference of the attention-score softmax (include/posenc.h states the
 * contract). Per row: t_j = s(scale * x_j) (+ mask_j or + slope * mask_j) (+ the ALiBi
 * term), each operation rounded to float in that order, -inf for a hidden key; M = the
 * max of the t_j and the sink; e_j = exp(t_j - M) by posenc's polynomial (kernels/softmax.h,
 * without fused multiply-add), 0 below softmax_exp_floor(n_k); their sum in double, one key
 * after the other, plus exp(sink - M); y_j = e_j * (float)(1 / sum) (0 or >= 2 FLT_MIN). t_j is
 * computed again in each pass (and e_j in the last two) by the same operations: in place,
 * x_j is read before y_j is written. The SIMD variants (softmax_simd.h) take the same steps;
 * only exp (fused multiply-add or not) and the order of the sum differ. */
#include <float.h>
#include <math.h>

#include "softmax.h"
#include "variants.h"

/* e^t for t in [SOFTMAX_EXP_MIN, 88] (and NaN for a NaN t). */
static float exp_poly(float t) {
  const float n = (t * SOFTMAX_LOG2E + SOFTMAX_ROUND_MAGIC) - SOFTMAX_ROUND_MAGIC;
  float r = t - n * SOFTMAX_LN2_HI;
  r = r - n * SOFTMAX_LN2_LO;
  float p = SOFTMAX_EXP_C5;
  p = p * r + SOFTMAX_EXP_C4;
  p = p * r + SOFTMAX_EXP_C3;
  p = p * r + SOFTMAX_EXP_C2;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  if (isnan(n)) return n;
  return p * posenc_bits_float((uint32_t)((int32_t)n + 127) << 23);
}

/* exp(t), 0 for t < lo (softmax_exp_floor; a NaN t gives NaN). */
static float softmax_exp(float t, float lo) { return t < lo ? 0.0f : exp_poly(t); }

/* c * tanh(u / c) as 1 - 2 / (exp(2v) + 1), v = u * (1 / c) clamped to the tanh clamp. */
static float softcap(float u, float c, float rc) {
  float v = u * rc;
  if (v > SOFTMAX_TANH_CLAMP) v = SOFTMAX_TANH_CLAMP;
  if (v < -SOFTMAX_TANH_CLAMP) v = -SOFTMAX_TANH_CLAMP;
  const float e = exp_poly(v + v);
  return c * (1.0f - 2.0f / (e + 1.0f));
}

/* One row's constants. */
typedef struct {
  const softmax_args *a;
  const void *x, *mask;
  float slope, rc;
  int32_t qpos;
} row_ctx;

/* t_j, -inf for a hidden key (positions given as kpos, or a -inf mask value). A key with
 * kpos_j < 0 is hidden by its mask value or by POSENC_SOFTMAX_KPOS_NEG_HIDDEN (checked
 * before the call): its kpos_j - qpos, which could overflow, is not computed. */
static float t_of(const row_ctx *r, size_t j) {
  const softmax_args *a = r->a;
  float t = a->scale * posenc_elem_load(r->x, j, a->xe);
  if (a->flags & POSENC_SOFTMAX_SOFTCAP) t = softcap(t, a->softcap, r->rc);
  if (r->mask) {
    const float m = posenc_elem_load(r->mask, j, a->me);
    if (m == -INFINITY) return -INFINITY;
    t = (a->flags & POSENC_SOFTMAX_MASK_SLOPE) ? t + r->slope * m : t + m;
  }
  if ((a->flags & POSENC_SOFTMAX_KPOS_NEG_HIDDEN) && a->kpos && a->kpos[j] < 0) return -INFINITY;
  const int32_t d = (a->kpos ? a->kpos[j] : (int32_t)j) - r->qpos;
  if (a->kpos) {
    if ((a->flags & POSENC_SOFTMAX_CAUSAL) && d > 0) return -INFINITY;
    if ((a->flags & POSENC_SOFTMAX_WINDOW) && d <= -a->window) return -INFINITY;
  }
  if (a->slopes && !(a->flags & POSENC_SOFTMAX_MASK_SLOPE)) {
    if (a->flags & POSENC_SOFTMAX_ALIBI_SYMMETRIC)
      t = t - r->slope * (float)(d < 0 ? -d : d);
    else
      t = t + r->slope * (float)d;
  }
  return t;
}

static void softmax_row(const row_ctx *r, void *y, size_t lo, size_t hi, float sink) {
  const softmax_args *a = r->a;
  for (size_t j = 0; j < lo; ++j) posenc_elem_store(y, j, 0.0f, a->ye);
  for (size_t j = hi; j < a->n_k; ++j) posenc_elem_store(y, j, 0.0f, a->ye);
  float max = -INFINITY;
  for (size_t j = lo; j < hi; ++j) {
    const float t = t_of(r, j);
    if (t > max) max = t;
  }
  int nan = 0;
  if (max == -INFINITY) { /* every value -inf or NaN: zeros, or NaN if there is a NaN */
    for (size_t j = lo; j < hi && !nan; ++j) nan = isnan(t_of(r, j));
    if (!nan) {
      for (size_t j = lo; j < hi; ++j) posenc_elem_store(y, j, 0.0f, a->ye);
      return;
    }
  }
  if (sink > max) max = sink;
  const float floor = softmax_exp_floor(a->n_k);
  double sum = 0.0;
  for (size_t j = lo; j < hi && !nan; ++j) sum += softmax_exp(t_of(r, j) - max, floor);
  sum += softmax_exp(sink - max, floor);
  if (nan || isnan(sum)) { /* a NaN or +inf score: NaN at the visible keys, +0 at hidden ones */
    for (size_t j = lo; j < hi; ++j)
      posenc_elem_store(y, j, softmax_hidden(a, r->mask, r->qpos, j) ? 0.0f : NAN, a->ye);
    return;
  }
  const float inv = (float)(1.0 / sum);
  for (size_t j = lo; j < hi; ++j) {
    posenc_elem_store(y, j, softmax_exp(t_of(r, j) - max, floor) * inv, a->ye);
  }
}

static void softmax_all(const softmax_args *a) {
  const size_t xs = posenc_elem_size(a->xe), ys = posenc_elem_size(a->ye);
  const size_t ms = posenc_elem_size(a->me);
  for (size_t h = 0; h < a->n_heads; ++h)
    for (size_t i = 0; i < a->n_q; ++i) {
      row_ctx r = {.a = a,
                   .x = (const char *)a->x + (h * a->x_head_stride + i * a->x_row_stride) * xs,
                   .mask = a->mask ? (const char *)a->mask +
                                         (h * a->mask_head_stride + i * a->mask_row_stride) * ms
                                   : NULL,
                   .slope = a->slopes ? a->slopes[h] : 0.0f,
                   .rc = (a->flags & POSENC_SOFTMAX_SOFTCAP) ? 1.0f / a->softcap : 0.0f,
                   .qpos = softmax_qpos(a, i)};
      void *y = (char *)a->y + (h * a->y_head_stride + i * a->y_row_stride) * ys;
      size_t lo = 0, hi = a->n_k;
      if (!a->kpos) softmax_visible(a, r.qpos, &lo, &hi);
      if (lo >= hi) lo = hi = a->n_k; /* nothing visible: all zeros */
      softmax_row(&r, y, lo, hi, a->sinks ? a->sinks[h] : -INFINITY);
    }
}

void posenc_softmax_f32_scalar(const softmax_args *a) { softmax_all(a); }
void posenc_softmax_16_scalar(const softmax_args *a) { softmax_all(a); }
