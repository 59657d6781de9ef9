/* The scalar reference RoPE kernel: plain C, double-precision rotation, SLEEF's scalar
 * u10 sincosf. Every other variant is tested against this one. */
#include <sleef.h>

#include "rope_driver.h"

static void prepare_scalar(const struct posenc_rope_plan *plan, int32_t pos, unsigned flags,
                           size_t p0, size_t n, float *c, float *s, rope_state *state) {
  (void)state; /* the reference computes every token afresh: no stepping */
  const float att = (float)plan->attention_factor;
  const float sign = (flags & POSENC_ROPE_INVERSE) ? -1.0f : 1.0f;
  const int gptj = (flags & POSENC_ROPE_GPTJ) != 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t k = p0 + i;
    float angle;
    if (flags & POSENC_ROPE_F32_ANGLES)
      angle = (float)pos * plan->inv_freq_f32[k];
    else if (rope_small_position(plan, pos))
      angle = (float)rope_reduced_angle_small((double)pos, plan->turn[k]);
    else
      angle = (float)rope_reduced_angle((double)pos, plan->turn_hi[k], plan->turn_mid[k],
                                        plan->turn_lo[k]);
    const Sleef_float_2 sc = Sleef_sincosf1_u10purec(angle);
    const float cv = sc.y * att;
    const float sv = sc.x * att * sign;
    if (gptj) {
      c[2 * i] = cv;
      c[2 * i + 1] = cv;
      s[2 * i] = -sv;
      s[2 * i + 1] = sv;
    } else {
      c[i] = cv;
      s[i] = sv;
    }
  }
}

static void rotate_pairs(float *x, size_t half, size_t p0, size_t n, const float *c, const float *s,
                         unsigned flags) {
  if (flags & POSENC_ROPE_GPTJ) {
    float *xp = x + 2 * p0;
    for (size_t i = 0; i < n; ++i) {
      const double u = xp[2 * i], v = xp[2 * i + 1];
      xp[2 * i] = (float)(u * c[2 * i] + v * s[2 * i]);
      xp[2 * i + 1] = (float)(v * c[2 * i + 1] + u * s[2 * i + 1]);
    }
  } else {
    float *xu = x + p0, *xv = x + half + p0;
    for (size_t i = 0; i < n; ++i) {
      const double u = xu[i], v = xv[i];
      xu[i] = (float)(u * c[i] - v * s[i]);
      xv[i] = (float)(v * c[i] + u * s[i]);
    }
  }
}

static void rotate_scalar(const rope_view *view, float *row, size_t half, size_t p0, size_t n,
                          const float *c, const float *s, unsigned flags) {
  for (size_t h = 0; h < view->n_heads; ++h)
    rotate_pairs(row + h * view->head_stride, half, p0, n, c, s, flags);
}

void posenc_rope_f32_scalar(const rope_f32_args *args) {
  rope_drive(args, prepare_scalar, NULL, rotate_scalar);
}
