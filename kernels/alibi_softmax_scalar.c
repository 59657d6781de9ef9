/* The scalar reference of the fused ALiBi softmax (include/posenc.h states the contract).
 * Per row: x_j = scale * S_j - m * |qpos - j| with the float operations of
 * posenc_alibi_add_f32 (so every x_j is bit-identical to what it computes), M = max x_j,
 * e_j = exp(x_j - M) (SLEEF's u10 expf; 0 below ALIBI_SOFTMAX_EXP_MIN), their sum in double,
 * and p_j = e_j * (float)(1 / sum), 0 below FLT_MIN. The SIMD variants (alibi_softmax_simd.h)
 * take the same steps; only exp (FMA or not) and the order of the sum may differ. */
#include <float.h>
#include <math.h>
#include <sleef.h>

#include "alibi_softmax.h"
#include "half.h"
#include "variants.h"
#include "simd/msan.h"

static float biased(float s, float scale, float m, int32_t qpos, size_t j) {
  const int32_t d = qpos - (int32_t)j;
  return scale * s - m * (float)(d < 0 ? -d : d);
}

/* exp(t), 0 for t < ALIBI_SOFTMAX_EXP_MIN (a NaN t gives NaN). */
static float softmax_exp(float t) {
  if (t < ALIBI_SOFTMAX_EXP_MIN) return 0.0f;
  float e = Sleef_expf1_u10purec(t);
  POSENC_MSAN_UNPOISON(&e, sizeof e);
  return e;
}

static float load(const void *row, size_t j, int bf16) {
  return bf16 ? posenc_bf16_to_f32(((const uint16_t *)row)[j]) : ((const float *)row)[j];
}

static void store(void *row, size_t j, float v, int bf16) {
  if (bf16)
    ((uint16_t *)row)[j] = posenc_f32_to_bf16(v);
  else
    ((float *)row)[j] = v;
}

/* One row of n_k columns, `visible` of them computed. work: where x_j and e_j are kept (the
 * row itself for f32, a block of ALIBI_SOFTMAX_BF16_BLOCK floats for bf16), or NULL for a
 * bf16 row too long for it: x_j and e_j are then computed again in each pass, identically. */
static void softmax_row(void *row, size_t visible, size_t n_k, float m, float scale, int32_t qpos,
                        int bf16, float *work) {
  float max = -INFINITY;
  for (size_t j = 0; j < visible; ++j) {
    const float x = biased(load(row, j, bf16), scale, m, qpos, j);
    if (work) work[j] = x;
    if (x > max) max = x;
  }
  if (max == -INFINITY) { /* every value -inf or NaN: zeros, or NaN if there is a NaN */
    int nan = 0;
    for (size_t j = 0; j < visible && !nan; ++j)
      nan = isnan(work ? work[j] : biased(load(row, j, bf16), scale, m, qpos, j));
    for (size_t j = 0; j < visible; ++j) store(row, j, nan ? NAN : 0.0f, bf16);
  } else {
    double sum = 0.0;
    for (size_t j = 0; j < visible; ++j) {
      const float x = work ? work[j] : biased(load(row, j, bf16), scale, m, qpos, j);
      const float e = softmax_exp(x - max);
      if (work) work[j] = e;
      sum += e;
    }
    const float inv = (float)(1.0 / sum);
    for (size_t j = 0; j < visible; ++j) {
      const float e =
          work ? work[j] : softmax_exp(biased(load(row, j, bf16), scale, m, qpos, j) - max);
      const float p = e * inv;
      store(row, j, p < FLT_MIN ? 0.0f : p, bf16);
    }
  }
  for (size_t j = visible; j < n_k; ++j) store(row, j, 0.0f, bf16);
}

static void softmax_heads(const alibi_softmax_args *a, int bf16, float *block) {
  const size_t elem = bf16 ? sizeof(uint16_t) : sizeof(float);
  for (size_t h = 0; h < a->n_heads; ++h)
    for (size_t i = 0; i < a->n_q; ++i) {
      const int32_t qpos = a->q_offset + (int32_t)i;
      const size_t visible = alibi_softmax_visible(a, qpos);
      void *row = (char *)a->scores + (h * a->head_stride + i * a->row_stride) * elem;
      float *work = !bf16 ? (float *)row : visible <= ALIBI_SOFTMAX_BF16_BLOCK ? block : NULL;
      softmax_row(row, visible, a->n_k, a->slopes[h], a->scale, qpos, bf16, work);
    }
}

void posenc_alibi_softmax_f32_scalar(const alibi_softmax_args *a) { softmax_heads(a, 0, NULL); }

void posenc_alibi_softmax_bf16_scalar(const alibi_softmax_args *a) {
  float block[ALIBI_SOFTMAX_BF16_BLOCK];
  softmax_heads(a, 1, block);
}
