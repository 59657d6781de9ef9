/* RoPE plans from ggml's rope parameters (posenc_rope_plan_create_ggml): the frequencies and
 * attention factor with which ggml_rope_ext rotates, reduced to R/2 double frequencies and an
 * attention factor for posenc_rope_plan_create_from_freqs. ggml's CPU backend
 * (ggml/src/ggml-cpu/ops.cpp: ggml_rope_cache_init, rope_yarn, rope_yarn_ramp; ggml/src/ggml.c:
 * ggml_rope_yarn_corr_dims) evaluates the recipe per position in float; here each step is the
 * same operation in double, in ggml's order, except pair i's base frequency theta_scale^i,
 * which ggml forms as a running float product and posenc as base^(-2i/R), the one formula of
 * every plan (posenc_default_freq): the same real number, rounded once. */
#include <math.h>
#include <stdlib.h>

#include "checks.h"

static const double PI = 3.141592653589793; /* M_PI */

static int positive(double x) { return isfinite(x) && x > 0; }

static int non_negative(double x) { return isfinite(x) && x >= 0; }

/* 0 -> 1: the default of freq_scale and attn_factor. */
static double one_if_zero(double x) { return x == 0 ? 1.0 : x; }

/* ggml_rope_yarn_corr_dim: the (fractional) pair index whose frequency turns `rotations`
 * times over n_ctx_orig positions. */
static double corr_dim(size_t n_dims, size_t n_ctx_orig, double rotations, double base) {
  return (double)n_dims * log((double)n_ctx_orig / (rotations * 2 * PI)) / (2 * log(base));
}

/* ggml_rope_yarn_ramp for pair i (ggml's i0 / 2): 1 below lo, 0 above hi, linear between;
 * a ramp narrower than 0.001 (hi <= lo included) is taken as 0.001 wide. */
static double yarn_ramp(double lo, double hi, size_t i) {
  const double y = ((double)i - lo) / fmax(0.001, hi - lo);
  return 1 - fmin(1, fmax(0, y));
}

/* The rejection of params->field (value x) that is not finite and >= 0. */
static posenc_status check_non_negative(const char *fn, const char *field, double x) {
  if (non_negative(x)) return POSENC_OK;
  return posenc_reject_field(fn, "params", field, "%g is not finite and >= 0", x);
}

/* The rejection of params->field (value x) that is not finite and > 0 with ext_factor != 0. */
static posenc_status check_yarn_positive(const char *fn, const char *field, double x) {
  if (positive(x)) return POSENC_OK;
  return posenc_reject_field(fn, "params", field, "%g is not finite and > 0 (ext_factor != 0)", x);
}

/* ggml's rope modes (GGML_ROPE_TYPE_*, ggml.h), compared whole as ggml does. */
enum { GGML_NORMAL = 0, GGML_NEOX = 2, GGML_MROPE = 8, GGML_VISION = 24, GGML_IMROPE = 40 };

static int ggml_mode_known(int mode) {
  return mode == GGML_NORMAL || mode == GGML_NEOX || mode == GGML_MROPE || mode == GGML_VISION ||
         mode == GGML_IMROPE;
}

static int ggml_mode_mrope(int mode) {
  return mode == GGML_MROPE || mode == GGML_VISION || mode == GGML_IMROPE;
}

static posenc_status reject_mode(const char *fn, const char *arg, int mode) {
  return posenc_reject(fn, arg,
                       "%d is not a ggml rope type (NORMAL 0, NEOX 2, MROPE 8, VISION 24, "
                       "IMROPE 40)",
                       mode);
}

/* The mode and its sections: a known mode; sections 0 outside the M-RoPE modes, within
 * [0, 2^20] and not the first three 0 in them (ggml asserts one is not). */
static posenc_status check_mode(const char *fn, const posenc_rope_ggml_params *g) {
  const int *s = g->sections;
  if (!ggml_mode_known(g->mode)) return reject_mode(fn, "params->mode", g->mode);
  if (!ggml_mode_mrope(g->mode)) {
    for (int r = 0; r < 4; ++r)
      if (s[r] != 0)
        return posenc_reject_elem(fn, "params", "sections", (size_t)r,
                                  "%d is not 0: mode %d is not an M-RoPE mode (8, 24, 40)", s[r],
                                  g->mode);
    return POSENC_OK;
  }
  for (int r = 0; r < 4; ++r)
    if (s[r] < 0 || (size_t)s[r] > POSENC_MROPE_SECTION_MAX)
      return posenc_reject_elem(fn, "params", "sections", (size_t)r, "%d is not in [0, 2^20]",
                                s[r]);
  if (s[0] + s[1] + s[2] == 0)
    return posenc_reject_field(fn, "params", "sections",
                               "{%d, %d, %d, %d}: the first three are 0 (ggml asserts one is not)",
                               s[0], s[1], s[2], s[3]);
  return POSENC_OK;
}

/* The plan's rotary dimensions: n_dims, or with VISION 2 n_dims (ggml rotates the whole head,
 * pairs (i, i + n_dims)). */
static size_t plan_dims(const posenc_rope_ggml_params *g) {
  return g->mode == GGML_VISION ? 2 * g->n_dims : g->n_dims;
}

/* Every check of the header but those on the results (left to posenc_rope_plan_make). */
static posenc_status check_params(const char *fn, const posenc_rope_ggml_params *g) {
  posenc_status st = check_mode(fn, g);
  if (st == POSENC_OK) st = posenc_check_rotary_dim(fn, "params->n_dims", g->n_dims);
  if (st == POSENC_OK && g->mode == GGML_VISION && g->n_dims > SIZE_MAX / 2)
    return posenc_reject_field(fn, "params", "n_dims", "%zu: 2 n_dims overflows", g->n_dims);
  if (st == POSENC_OK && g->mode == GGML_VISION)
    st = posenc_check_rotary_dim(fn, "2 * params->n_dims (VISION)", 2 * g->n_dims);
  if (st == POSENC_OK) st = posenc_check_base(fn, "params->freq_base", g->freq_base);
  if (st == POSENC_OK) st = check_non_negative(fn, "freq_scale", g->freq_scale);
  if (st == POSENC_OK) st = check_non_negative(fn, "attn_factor", g->attn_factor);
  if (st == POSENC_OK) st = check_non_negative(fn, "ext_factor", g->ext_factor);
  if (st != POSENC_OK) return st;
  if (g->ext_factor != 0) {
    if (g->n_ctx_orig == 0)
      return posenc_reject_field(fn, "params", "n_ctx_orig", "is 0 with ext_factor %g != 0",
                                 g->ext_factor);
    st = check_yarn_positive(fn, "beta_fast", g->beta_fast);
    if (st == POSENC_OK) st = check_yarn_positive(fn, "beta_slow", g->beta_slow);
    if (st != POSENC_OK) return st;
  }
  if (g->freq_factors)
    for (size_t i = 0; i < plan_dims(g) / 2; ++i)
      if (!positive((double)g->freq_factors[i]))
        return posenc_reject_elem(fn, "params", "freq_factors", i, "%g is not finite and > 0",
                                  (double)g->freq_factors[i]);
  return POSENC_OK;
}

/* The exponent e_i of each of the n pairs' base frequency theta_scale^e_i: i, or with
 * VISION the count since its section started, as ggml_mrope_cache_init's independent
 * sections restart their running thetas (its chain of restarts reproduced: a restart at a
 * sector that is also an earlier section's start goes to that section only). */
static void pair_exponents(const posenc_rope_ggml_params *g, size_t n, size_t *e) {
  if (g->mode != GGML_VISION) {
    for (size_t i = 0; i < n; ++i) e[i] = i;
    return;
  }
  const size_t s0 = (size_t)g->sections[0], s1 = (size_t)g->sections[1];
  const size_t s2 = (size_t)g->sections[2], s3 = (size_t)g->sections[3];
  const size_t sum = s0 + s1 + s2 + s3, sec_w = s0 + s1, sec_e = sec_w + s2;
  size_t run[4] = {0, 0, 0, 0}; /* t, h, w, e */
  for (size_t i = 0; i < n; ++i) {
    const size_t c = i % sum;
    if (c == 0)
      run[0] = 0;
    else if (c == s0)
      run[1] = 0;
    else if (c == sec_w)
      run[2] = 0;
    else if (c == sec_e)
      run[3] = 0;
    const int row = c < s0 ? 0 : c < sec_w ? 1 : c < sec_e ? 2 : 3;
    e[i] = run[row];
    for (int r = 0; r < 4; ++r) ++run[r];
  }
}

posenc_status posenc_rope_ggml_flags(int mode, unsigned *flags) {
  const char *fn = __func__;
  if (!flags) return posenc_reject(fn, "flags", "is NULL");
  switch (mode) {
    case GGML_NORMAL:
      *flags = POSENC_ROPE_GPTJ;
      return POSENC_OK;
    case GGML_NEOX:
      *flags = POSENC_ROPE_NEOX;
      return POSENC_OK;
    case GGML_MROPE:
    case GGML_VISION: /* pairs (i, i + n_dims) over the plan's R = 2 n_dims: NEOX's */
      *flags = POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_GGML;
      return POSENC_OK;
    case GGML_IMROPE:
      *flags = POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_MROPE_GGML;
      return POSENC_OK;
    default:
      return reject_mode(fn, "mode", mode);
  }
}

posenc_status posenc_rope_plan_create_ggml(posenc_rope_plan **plan,
                                           const posenc_rope_ggml_params *params) {
  const char *fn = __func__;
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  *plan = NULL;
  if (!params) return posenc_reject(fn, "params", "is NULL");
  const posenc_status valid = check_params(fn, params);
  if (valid != POSENC_OK) return valid;
  const posenc_rope_ggml_params *g = params;
  const size_t r = g->n_dims, n = plan_dims(g) / 2;
  const double freq_scale = one_if_zero(g->freq_scale), ext_factor = g->ext_factor;
  double att = one_if_zero(g->attn_factor);
  double lo = 0, hi = 0; /* ggml_rope_yarn_corr_dims, read only with ext_factor != 0 */
  if (ext_factor != 0) {
    lo = fmax(0, floor(corr_dim(r, g->n_ctx_orig, g->beta_fast, g->freq_base)));
    hi = fmin((double)(r - 1), ceil(corr_dim(r, g->n_ctx_orig, g->beta_slow, g->freq_base)));
    att *= 1 + 0.1 * log(1 / freq_scale); /* rope_yarn's magnitude correction */
  }

  double *w = malloc(n * sizeof *w);
  size_t *e = malloc(n * sizeof *e);
  if (!w || !e) {
    free(w);
    free(e);
    return posenc_out_of_memory(fn, "plan", n * (sizeof *w + sizeof *e));
  }
  pair_exponents(g, n, e);
  for (size_t i = 0; i < n; ++i) { /* ggml_rope_cache_init and rope_yarn, per unit position */
    const double ff = g->freq_factors ? (double)g->freq_factors[i] : 1.0;
    const double theta_extrap = posenc_default_freq(g->freq_base, e[i], r) / ff;
    const double theta_interp = freq_scale * theta_extrap;
    double theta = theta_interp;
    if (ext_factor != 0) {
      const double ramp_mix = yarn_ramp(lo, hi, i) * ext_factor;
      theta = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
    }
    w[i] = theta;
  }
  /* Refuses NaN or out-of-range frequencies and attention factors, storing NULL. */
  const posenc_status st = posenc_rope_plan_make(fn, "params", "params", plan, 2 * n, w, att);
  free(w);
  free(e);
  if (st == POSENC_OK && ggml_mode_mrope(g->mode)) {
    struct posenc_rope_plan *p = *plan; /* new: not yet shared */
    p->ggml_mode = g->mode;
    for (int k = 0; k < 4; ++k) p->ggml_sections[k] = (size_t)g->sections[k];
  }
  return st;
}

posenc_status posenc_rope_plan_create_ggml_mode(posenc_rope_plan **plan,
                                                const posenc_rope_ggml_params *params,
                                                unsigned *flags) {
  const char *fn = __func__;
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  *plan = NULL;
  if (!flags) return posenc_reject(fn, "flags", "is NULL");
  if (!params) return posenc_reject(fn, "params", "is NULL");
  const posenc_status st = posenc_rope_plan_create_ggml(plan, params);
  if (st == POSENC_OK) posenc_rope_ggml_flags(params->mode, flags); /* a known mode */
  return st;
}
