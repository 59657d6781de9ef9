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

/* cos/sin of pair i of a chunk from its reduced angle (for the float32 recipe, the float
 * angle), in the layout rotate() reads (forward: rotate() negates s for
 * POSENC_ROPE_INVERSE). Default: SLEEF's sincosf of the angle rounded to float.
 * POSENC_ROPE_DETERMINISTIC: posenc_det_sincos() of the angle (the float32 recipe's reduced
 * by rope_reduce_angle()), rounded to float. */
static void store_cs(double angle, size_t i, float att, unsigned flags, float *c, float *s) {
  float sin_a, cos_a;
  if (flags & POSENC_ROPE_DETERMINISTIC) {
    double sd, cd;
    posenc_det_sincos((flags & POSENC_ROPE_F32_ANGLES) ? rope_reduce_angle(angle) : angle, &sd,
                      &cd);
    sin_a = (float)sd;
    cos_a = (float)cd;
  } else {
    const Sleef_float_2 sc = Sleef_sincosf1_u10purec((float)angle);
    sin_a = sc.x;
    cos_a = sc.y;
  }
  const float cv = cos_a * att;
  const float sv = sin_a * att;
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
                           float att, size_t p0, size_t n, float *c, float *s,
                           rope_anchor *anchor) {
  (void)anchor; /* the reference computes every position afresh */
  for (size_t i = 0; i < n; ++i) store_cs(angle_of(plan, pos, flags, p0 + i), i, att, flags, c, s);
}

static void prepare_delta_scalar(const struct posenc_rope_plan *from, int32_t from_pos,
                                 const struct posenc_rope_plan *to, int32_t to_pos, unsigned flags,
                                 float att, size_t p0, size_t n, float *c, float *s) {
  for (size_t i = 0; i < n; ++i) {
    const double a = angle_of(from, from_pos, flags, p0 + i),
                 b = angle_of(to, to_pos, flags, p0 + i);
    /* Already reduced: stored as for accurate angles. */
    store_cs(rope_angle_difference(b, a), i, att, flags & ~(unsigned)POSENC_ROPE_F32_ANGLES, c, s);
  }
}

/* One head vector's pairs [p0, p0 + n), read from x and written to y (the same in place),
 * written once for every pair of storage types (constants at every call): elements widened
 * to float exactly, rotated in double, rounded to float and then (bf16, f16) to the
 * destination type, so a 16-bit result is the f32 result rounded. sg: +1, or -1 for
 * POSENC_ROPE_INVERSE (s negated exactly). */
POSENC_INLINE void rotate_pairs(const void *x, void *y, size_t half, size_t p0, size_t n,
                                const float *c, const float *s, double sg, unsigned flags,
                                posenc_elem ex, posenc_elem ey) {
  if (flags & POSENC_ROPE_DETERMINISTIC) { /* in float, each product rounded, as every ISA */
    const float fg = (float)sg;
    if (flags & POSENC_ROPE_GPTJ) {
      for (size_t i = 0; i < n; ++i) {
        const size_t iu = 2 * (p0 + i), iv = iu + 1;
        const float u = posenc_elem_load(x, iu, ex), v = posenc_elem_load(x, iv, ex);
        posenc_elem_store(y, iu, u * c[2 * i] + v * (fg * s[2 * i]), ey);
        posenc_elem_store(y, iv, v * c[2 * i + 1] + u * (fg * s[2 * i + 1]), ey);
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        const size_t iu = p0 + i, iv = half + p0 + i;
        const float u = posenc_elem_load(x, iu, ex), v = posenc_elem_load(x, iv, ex);
        posenc_elem_store(y, iu, u * c[i] - v * (fg * s[i]), ey);
        posenc_elem_store(y, iv, v * c[i] + u * (fg * s[i]), ey);
      }
    }
    return;
  }
  if (flags & POSENC_ROPE_GPTJ) {
    for (size_t i = 0; i < n; ++i) {
      const size_t iu = 2 * (p0 + i), iv = iu + 1;
      const double u = posenc_elem_load(x, iu, ex), v = posenc_elem_load(x, iv, ex);
      posenc_elem_store(y, iu, (float)(u * c[2 * i] + v * (sg * s[2 * i])), ey);
      posenc_elem_store(y, iv, (float)(v * c[2 * i + 1] + u * (sg * s[2 * i + 1])), ey);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      const size_t iu = p0 + i, iv = half + p0 + i;
      const double u = posenc_elem_load(x, iu, ex), v = posenc_elem_load(x, iv, ex);
      posenc_elem_store(y, iu, (float)(u * c[i] - v * (sg * s[i])), ey);
      posenc_elem_store(y, iv, (float)(v * c[i] + u * (sg * s[i])), ey);
    }
  }
}

/* Every head of one token's row; out of place, the chunk that ends the pairs also copies
 * elements [R, head_dim). */
POSENC_INLINE void rotate_heads(const rope_view *view, const void *src_row, void *dst_row,
                                size_t half, size_t p0, size_t n, const float *c, const float *s,
                                unsigned flags, posenc_elem ex, posenc_elem ey) {
  const size_t xs = view->src_head_stride * posenc_elem_size(ex);
  const size_t ys = view->dst_head_stride * posenc_elem_size(ey);
  const double sg = (flags & POSENC_ROPE_INVERSE) ? -1.0 : 1.0;
  const int tail = view->src != view->dst && p0 + n == half;
  for (size_t h = 0; h < view->n_heads; ++h) {
    const char *x = (const char *)src_row + h * xs;
    char *y = (char *)dst_row + h * ys;
    rotate_pairs(x, y, half, p0, n, c, s, sg, flags, ex, ey);
    if (tail)
      for (size_t d = 2 * half; d < view->head_dim; ++d)
        posenc_elem_store(y, d, posenc_elem_load(x, d, ex), ey);
  }
}

/* QK-norm (rope.h): the sum of squares in double (each square exact), then (x * inv) * w. */
static void norm_heads(const rope_view *view, const void *src_row, size_t h0, size_t nh, float *out,
                       posenc_elem ex) {
  const size_t dim = view->head_dim, xs = view->src_head_stride * posenc_elem_size(ex);
  for (size_t h = 0; h < nh; ++h) {
    const void *x = (const char *)src_row + (h0 + h) * xs;
    double sum = 0.0;
    for (size_t d = 0; d < dim; ++d) {
      const double v = posenc_elem_load(x, d, ex);
      sum += v * v;
    }
    const float inv = 1.0f / sqrtf(rope_norm_mean(sum, dim, view->norm_eps));
    for (size_t d = 0; d < dim; ++d) {
      out[h * dim + d] = (posenc_elem_load(x, d, ex) * inv) * view->norm_w[d];
    }
  }
}
static void norm_f32(const rope_view *view, const void *src_row, size_t h0, size_t nh, float *out) {
  norm_heads(view, src_row, h0, nh, out, POSENC_ELEM_F32);
}
static void norm_bf16(const rope_view *view, const void *src_row, size_t h0, size_t nh,
                      float *out) {
  norm_heads(view, src_row, h0, nh, out, POSENC_ELEM_BF16);
}
static void norm_f16(const rope_view *view, const void *src_row, size_t h0, size_t nh, float *out) {
  norm_heads(view, src_row, h0, nh, out, POSENC_ELEM_F16);
}

/* q8_0: ggml's reference, block by block; FP8: rope_fp8_e4m3_ref of each v / scale. */
static void quant_ref(const rope_view *view, const float *x, size_t n_heads, unsigned char *out) {
  const size_t dim = view->head_dim;
  /* Head h at out + h * stride, formed for h < n_heads only: a stride stepped past the last
   * head may pass the address space (one head: any stride is valid). */
  for (size_t h = 0; h < n_heads; ++h, x += dim) {
    unsigned char *o = out + h * view->dst_head_stride;
    if (view->quant == ROPE_QUANT_FP8) {
      for (size_t i = 0; i < dim; ++i) o[i] = rope_fp8_e4m3_ref(x[i] / view->fp8_scale);
      continue;
    }
    for (size_t b = 0; b < dim; b += ROPE_Q8_0_BLOCK)
      rope_q8_0_block_ref(x + b, o + b / ROPE_Q8_0_BLOCK * ROPE_Q8_0_BYTES);
  }
}

static void rotate_f32(const rope_view *view, const void *src_row, void *dst_row, size_t half,
                       size_t p0, size_t n, const float *c, const float *s, unsigned flags) {
  rotate_heads(view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_F32, POSENC_ELEM_F32);
}
static void rotate_bf16(const rope_view *view, const void *src_row, void *dst_row, size_t half,
                        size_t p0, size_t n, const float *c, const float *s, unsigned flags) {
  rotate_heads(view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_BF16,
               POSENC_ELEM_BF16);
}
static void rotate_f16(const rope_view *view, const void *src_row, void *dst_row, size_t half,
                       size_t p0, size_t n, const float *c, const float *s, unsigned flags) {
  rotate_heads(view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_F16, POSENC_ELEM_F16);
}
static void rotate_f32_bf16(const rope_view *view, const void *src_row, void *dst_row, size_t half,
                            size_t p0, size_t n, const float *c, const float *s, unsigned flags) {
  rotate_heads(view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_F32, POSENC_ELEM_BF16);
}
static void rotate_f32_f16(const rope_view *view, const void *src_row, void *dst_row, size_t half,
                           size_t p0, size_t n, const float *c, const float *s, unsigned flags) {
  rotate_heads(view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_F32, POSENC_ELEM_F16);
}

void posenc_rope_f32_scalar(const rope_args *args) {
  rope_drive(args, POSENC_ELEM_F32, POSENC_ELEM_F32, prepare_scalar, 0, prepare_delta_scalar,
             rotate_f32, norm_f32, rotate_f32, quant_ref, NULL, 0);
}
void posenc_rope_bf16_scalar(const rope_args *args) {
  rope_drive(args, POSENC_ELEM_BF16, POSENC_ELEM_BF16, prepare_scalar, 0, prepare_delta_scalar,
             rotate_bf16, norm_bf16, rotate_f32_bf16, NULL, NULL, 0);
}
void posenc_rope_f16_scalar(const rope_args *args) {
  rope_drive(args, POSENC_ELEM_F16, POSENC_ELEM_F16, prepare_scalar, 0, prepare_delta_scalar,
             rotate_f16, norm_f16, rotate_f32_f16, NULL, NULL, 0);
}
void posenc_rope_f32_bf16_scalar(const rope_args *args) {
  rope_drive(args, POSENC_ELEM_F32, POSENC_ELEM_BF16, prepare_scalar, 0, prepare_delta_scalar,
             rotate_f32_bf16, norm_f32, rotate_f32_bf16, NULL, NULL, 0);
}
void posenc_rope_f32_f16_scalar(const rope_args *args) {
  rope_drive(args, POSENC_ELEM_F32, POSENC_ELEM_F16, prepare_scalar, 0, prepare_delta_scalar,
             rotate_f32_f16, norm_f32, rotate_f32_f16, NULL, NULL, 0);
}
