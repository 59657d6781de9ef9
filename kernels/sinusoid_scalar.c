/* The scalar reference sinusoidal kernel: every value computed afresh (no stepping) with
 * SLEEF's scalar u10 sincosf. Every other variant is tested against this one. */
#include <sleef.h>

#include "sinusoid.h"

static inline void put(float *x, float v, int add) { *x = add ? *x + v : v; }

void posenc_sinusoid_f32_scalar(const sinusoid_f32_args *a) {
  const sinusoid_layout l = sinusoid_layout_of(a->dim, a->flags);
  const int add = (a->flags & POSENC_SINUSOID_ADD_) != 0;
  for (size_t r = 0; r < a->n_rows; ++r) {
    const double p = sinusoid_position(a, r);
    float *row = a->out + r * a->row_stride;
    for (size_t i = 0; i < l.n_sin; ++i) {
      const Sleef_float_2 sc = Sleef_sincosf1_u10purec(sinusoid_angle(a->freq, p, i, a->flags));
      put(row + l.sin_at + i * l.step, sc.x, add);
      if (i < l.n_cos) put(row + l.cos_at + i * l.step, sc.y, add);
    }
  }
}
