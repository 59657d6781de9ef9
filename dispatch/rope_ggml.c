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

/* Every check of the header but those on the results (left to posenc_rope_plan_make). */
static posenc_status check_params(const char *fn, const posenc_rope_ggml_params *g) {
  posenc_status st = posenc_check_rotary_dim(fn, "params->n_dims", g->n_dims);
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
    for (size_t i = 0; i < g->n_dims / 2; ++i)
      if (!positive((double)g->freq_factors[i]))
        return posenc_reject_elem(fn, "params", "freq_factors", i, "%g is not finite and > 0",
                                  (double)g->freq_factors[i]);
  return POSENC_OK;
}

posenc_status posenc_rope_ggml_flags(int mode, unsigned *flags) {
  const char *fn = __func__;
  if (!flags) return posenc_reject(fn, "flags", "is NULL");
  switch (mode) { /* ggml's GGML_ROPE_TYPE_* (ggml.h), compared whole as ggml does */
    case 0:       /* NORMAL */
      *flags = POSENC_ROPE_GPTJ;
      return POSENC_OK;
    case 2: /* NEOX */
    case 8: /* MROPE */
      *flags = POSENC_ROPE_NEOX;
      return POSENC_OK;
    case 40: /* IMROPE */
      *flags = POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_INTERLEAVED;
      return POSENC_OK;
    case 24: /* VISION */
      posenc_reject(fn, "mode", "24 is ggml's vision rope, whose pair layout posenc does not have");
      return POSENC_ERR_UNSUPPORTED;
    default:
      return posenc_reject(fn, "mode",
                           "%d is not a ggml rope type (NORMAL 0, NEOX 2, MROPE 8, VISION 24, "
                           "IMROPE 40)",
                           mode);
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
  const size_t r = g->n_dims, n = r / 2;
  const double freq_scale = one_if_zero(g->freq_scale), ext_factor = g->ext_factor;
  double att = one_if_zero(g->attn_factor);
  double lo = 0, hi = 0; /* ggml_rope_yarn_corr_dims, read only with ext_factor != 0 */
  if (ext_factor != 0) {
    lo = fmax(0, floor(corr_dim(r, g->n_ctx_orig, g->beta_fast, g->freq_base)));
    hi = fmin((double)(r - 1), ceil(corr_dim(r, g->n_ctx_orig, g->beta_slow, g->freq_base)));
    att *= 1 + 0.1 * log(1 / freq_scale); /* rope_yarn's magnitude correction */
  }

  double *w = malloc(n * sizeof *w);
  if (!w) return posenc_out_of_memory(fn, "plan", n * sizeof *w);
  for (size_t i = 0; i < n; ++i) { /* ggml_rope_cache_init and rope_yarn, per unit position */
    const double ff = g->freq_factors ? (double)g->freq_factors[i] : 1.0;
    const double theta_extrap = posenc_default_freq(g->freq_base, i, r) / ff;
    const double theta_interp = freq_scale * theta_extrap;
    double theta = theta_interp;
    if (ext_factor != 0) {
      const double ramp_mix = yarn_ramp(lo, hi, i) * ext_factor;
      theta = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
    }
    w[i] = theta;
  }
  /* Refuses NaN or out-of-range frequencies and attention factors, storing NULL. */
  const posenc_status st = posenc_rope_plan_make(fn, "params", "params", plan, r, w, att);
  free(w);
  return st;
}
