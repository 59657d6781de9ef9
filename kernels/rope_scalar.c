/* The scalar reference RoPE kernel: plain C, double-precision rotation, SLEEF's scalar
 * u10 sincosf, for f32, bf16 and f16 storage (kernels/half.h's exact conversions). Every
 * other variant is tested against this one. */
#include <sleef.h>

#include "rope_driver.h"
#include "variants.h"

/* The angle of pair k at position pos, as a double (F32_ANGLES: the float angle). */
static double angle_of(const struct posenc_rope_plan *plan, int32_t pos, unsigned flags, size_t k) {
  if (flags & POSENC_ROPE_F32_ANGLES) return (double)((float)pos * plan->inv_freq_f32[k]);
  if (rope_small_position(plan, pos)) return rope_reduced_angle_small((double)pos, plan->turn[k]);
  return rope_reduced_angle((double)pos, plan->turn_hi[k], plan->turn_mid[k], plan->turn_lo[k]);
}

/* cos/sin of pair i of a chunk from its float angle, in the layout rotate() reads. */
static void store_cs(float angle, size_t i, float att, unsigned flags, float *c, float *s) {
  const float sign = (flags & POSENC_ROPE_INVERSE) ? -1.0f : 1.0f;
  const Sleef_float_2 sc = Sleef_sincosf1_u10purec(angle);
  const float cv = sc.y * att;
  const float sv = sc.x * att * sign;
  if (flags & POSENC_ROPE_GPTJ) {
    c[2 * i] = cv;
    c[2 * i + 1] = cv;
    s[2 * i] = -sv;
    s[2 * i + 1] = sv;
  } else {
    c[i] = cv;
    s[i] = sv;
  }
}

static void prepare_scalar(const struct posenc_rope_plan *plan, int32_t pos, unsigned flags,
                           float att, size_t p0, size_t n, float *c, float *s, rope_state *state) {
  (void)state; /* the reference computes every token afresh: no stepping */
  for (size_t i = 0; i < n; ++i)
    store_cs((float)angle_of(plan, pos, flags, p0 + i), i, att, flags, c, s);
}

static void prepare_delta_scalar(const struct posenc_rope_plan *from, int32_t from_pos,
                                 const struct posenc_rope_plan *to, int32_t to_pos, unsigned flags,
                                 float att, size_t p0, size_t n, float *c, float *s,
                                 rope_state *state) {
  (void)state; /* no stepping in the reference */
  for (size_t i = 0; i < n; ++i) {
    const double a = angle_of(from, from_pos, flags, p0 + i),
                 b = angle_of(to, to_pos, flags, p0 + i);
    store_cs((float)rope_angle_difference(b, a), i, att, flags, c, s);
  }
}

/* One head vector's pairs [p0, p0 + n), written once for every storage type e (a constant
 * at every call): elements widened to float exactly, rotated in double, rounded to float
 * and then (bf16, f16) to the storage type, so a 16-bit result is the f32 result rounded. */
POSENC_INLINE void rotate_pairs(void *x, size_t half, size_t p0, size_t n, const float *c,
                                const float *s, unsigned flags, posenc_elem e) {
  if (flags & POSENC_ROPE_GPTJ) {
    for (size_t i = 0; i < n; ++i) {
      const size_t iu = 2 * (p0 + i), iv = iu + 1;
      const double u = posenc_elem_load(x, iu, e), v = posenc_elem_load(x, iv, e);
      posenc_elem_store(x, iu, (float)(u * c[2 * i] + v * s[2 * i]), e);
      posenc_elem_store(x, iv, (float)(v * c[2 * i + 1] + u * s[2 * i + 1]), e);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      const size_t iu = p0 + i, iv = half + p0 + i;
      const double u = posenc_elem_load(x, iu, e), v = posenc_elem_load(x, iv, e);
      posenc_elem_store(x, iu, (float)(u * c[i] - v * s[i]), e);
      posenc_elem_store(x, iv, (float)(v * c[i] + u * s[i]), e);
    }
  }
}

/* Every head of one token's row. */
POSENC_INLINE void rotate_heads(const rope_view *view, void *row, size_t half, size_t p0, size_t n,
                                const float *c, const float *s, unsigned flags, posenc_elem e) {
  const size_t stride = view->head_stride * posenc_elem_size(e);
  for (size_t h = 0; h < view->n_heads; ++h)
    rotate_pairs((char *)row + h * stride, half, p0, n, c, s, flags, e);
}

static void rotate_f32(const rope_view *view, void *row, size_t half, size_t p0, size_t n,
                       const float *c, const float *s, unsigned flags) {
  rotate_heads(view, row, half, p0, n, c, s, flags, POSENC_ELEM_F32);
}
static void rotate_bf16(const rope_view *view, void *row, size_t half, size_t p0, size_t n,
                        const float *c, const float *s, unsigned flags) {
  rotate_heads(view, row, half, p0, n, c, s, flags, POSENC_ELEM_BF16);
}
static void rotate_f16(const rope_view *view, void *row, size_t half, size_t p0, size_t n,
                       const float *c, const float *s, unsigned flags) {
  rotate_heads(view, row, half, p0, n, c, s, flags, POSENC_ELEM_F16);
}

void posenc_rope_f32_scalar(const rope_args *args) {
  rope_drive(args, POSENC_ELEM_F32, prepare_scalar, NULL, prepare_delta_scalar, rotate_f32);
}
void posenc_rope_bf16_scalar(const rope_args *args) {
  rope_drive(args, POSENC_ELEM_BF16, prepare_scalar, NULL, prepare_delta_scalar, rotate_bf16);
}
void posenc_rope_f16_scalar(const rope_args *args) {
  rope_drive(args, POSENC_ELEM_F16, prepare_scalar, NULL, prepare_delta_scalar, rotate_f16);
}
