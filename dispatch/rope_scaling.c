/* Scaled RoPE plans (posenc_rope_plan_create_scaled): every scaling type reduces to R/2
 * double frequencies and an attention factor, handed to posenc_rope_plan_create_from_freqs.
 * The formulas, and the order in which their operations are evaluated, follow HuggingFace
 * transformers' modeling_rope_utils, so that the frequencies agree with HF's own code run in
 * double (tests/rope_golden_test.cc) to the last few bits. */
#include <math.h>
#include <stdlib.h>

#include "checks.h"

static const double PI = 3.141592653589793; /* Python's math.pi */

/* What every fill function gets: the plan's shape, and what it fills in. */
typedef struct scaled_plan {
  size_t r, n; /* rotary_dim, R/2 */
  double base; /* rope_theta */
  double *w;   /* R/2 frequencies to fill */
  double att;  /* the type's own attention factor (1 unless it sets one) */
} scaled_plan;

static int positive(double x) { return isfinite(x) && x > 0; }

/* 0 ("not given") or a positive finite value. */
static int zero_or_positive(double x) { return x == 0 || positive(x); }

static void fill_default(scaled_plan *p, double base) {
  for (size_t i = 0; i < p->n; ++i) p->w[i] = posenc_default_freq(base, i, p->r);
}

/* A factor array of exactly R/2 positive finite values. */
static int valid_factors(const double *f, size_t len, size_t n) {
  if (!f || len != n) return 0;
  for (size_t i = 0; i < n; ++i)
    if (!positive(f[i])) return 0;
  return 1;
}

static posenc_status fill_linear(const posenc_rope_scaling *s, scaled_plan *p) {
  if (!positive(s->factor)) return POSENC_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < p->n; ++i) p->w[i] = posenc_default_freq(p->base, i, p->r) / s->factor;
  return POSENC_OK;
}

/* The NTK-aware base for R: base * scale^(R/(R-2)). */
static posenc_status fill_ntk_base(scaled_plan *p, double scale) {
  const double base = p->base * pow(scale, (double)p->r / (double)(p->r - 2));
  if (!positive(base)) return POSENC_ERR_INVALID_ARGUMENT;
  fill_default(p, base);
  return POSENC_OK;
}

/* HF _compute_dynamic_ntk_parameters with seq_len = max(seq_len, max_position_embeddings);
 * at or below max_position_embeddings HF keeps (and posenc returns) the default plan. */
static posenc_status fill_dynamic(const posenc_rope_scaling *s, scaled_plan *p) {
  const size_t m = s->max_position_embeddings;
  if (!positive(s->factor) || m == 0 || p->r < 4) return POSENC_ERR_INVALID_ARGUMENT;
  if (s->seq_len <= m) {
    fill_default(p, p->base);
    return POSENC_OK;
  }
  const double factor = s->factor;
  return fill_ntk_base(p, factor * (double)s->seq_len / (double)m - (factor - 1));
}

static posenc_status fill_ntk_alpha(const posenc_rope_scaling *s, scaled_plan *p) {
  if (!positive(s->alpha) || p->r < 4) return POSENC_ERR_INVALID_ARGUMENT;
  return fill_ntk_base(p, s->alpha);
}

/* factor, or, when it is 0, max_position_embeddings / original_max_position_embeddings
 * (HF's fallback for YaRN and LongRoPE); 0 when neither is given. */
static double factor_or_ratio(const posenc_rope_scaling *s) {
  if (s->factor != 0 || s->max_position_embeddings == 0 || s->original_max_position_embeddings == 0)
    return s->factor;
  return (double)s->max_position_embeddings / (double)s->original_max_position_embeddings;
}

/* YaRN's magnitude correction: 0.1 * mscale * ln(scale) + 1, or 1 for scale <= 1. */
static double yarn_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0;
}

/* The pair index whose frequency turns `rotations` times over `length` positions. */
static double yarn_correction_dim(double rotations, size_t r, double base, size_t length) {
  return ((double)r * log((double)length / (rotations * 2 * PI))) / (2 * log(base));
}

static int yarn_params_valid(const posenc_rope_scaling *s, double factor) {
  const double fast = s->beta_fast != 0 ? s->beta_fast : 32;
  const double slow = s->beta_slow != 0 ? s->beta_slow : 1;
  return positive(factor) && s->original_max_position_embeddings > 0 && positive(fast) &&
         positive(slow) && fast >= slow && isfinite(s->mscale) && isfinite(s->mscale_all_dim);
}

static posenc_status fill_yarn(const posenc_rope_scaling *s, scaled_plan *p) {
  const double factor = factor_or_ratio(s);
  if (!yarn_params_valid(s, factor)) return POSENC_ERR_INVALID_ARGUMENT;
  const size_t length = s->original_max_position_embeddings;
  if (s->mscale != 0 && s->mscale_all_dim != 0)
    p->att = yarn_mscale(factor, s->mscale) / yarn_mscale(factor, s->mscale_all_dim);
  else
    p->att = yarn_mscale(factor, 1);

  double low = yarn_correction_dim(s->beta_fast != 0 ? s->beta_fast : 32, p->r, p->base, length);
  double high = yarn_correction_dim(s->beta_slow != 0 ? s->beta_slow : 1, p->r, p->base, length);
  if (!s->no_truncate) {
    low = floor(low);
    high = ceil(high);
  }
  low = fmax(low, 0);
  high = fmin(high, (double)(p->r - 1));
  if (!isfinite(low) || !isfinite(high)) return POSENC_ERR_INVALID_ARGUMENT;
  if (low == high) high += 0.001; /* HF's guard against a zero-width ramp */
  for (size_t i = 0; i < p->n; ++i) {
    const double ramp = fmin(fmax(((double)i - low) / (high - low), 0), 1);
    const double extrapolation = 1 - ramp; /* weight of the unscaled frequency */
    const double pos_freq = pow(p->base, (double)(2 * i) / (double)p->r);
    const double w_extra = 1.0 / pos_freq, w_inter = 1.0 / (factor * pos_freq);
    p->w[i] = w_inter * (1 - extrapolation) + w_extra * extrapolation;
  }
  return POSENC_OK;
}

static posenc_status fill_longrope(const posenc_rope_scaling *s, scaled_plan *p) {
  const size_t length = s->original_max_position_embeddings;
  if (length == 0 || !valid_factors(s->short_factor, s->short_factor_len, p->n) ||
      !valid_factors(s->long_factor, s->long_factor_len, p->n) || !zero_or_positive(s->factor))
    return POSENC_ERR_INVALID_ARGUMENT;
  if (s->attention_factor == 0) { /* otherwise the factor is not needed */
    const double factor = factor_or_ratio(s);
    if (!positive(factor) || (factor > 1 && length < 2)) return POSENC_ERR_INVALID_ARGUMENT;
    p->att = factor <= 1 ? 1.0 : sqrt(1 + log(factor) / log((double)length));
  }
  const double *ext = s->seq_len > length ? s->long_factor : s->short_factor;
  for (size_t i = 0; i < p->n; ++i)
    p->w[i] = 1.0 / (ext[i] * pow(p->base, (double)(2 * i) / (double)p->r));
  return POSENC_OK;
}

/* HF _compute_llama3_parameters: wavelengths above L / low_freq_factor are divided by the
 * factor, those below L / high_freq_factor kept, and those between blended smoothly. */
static posenc_status fill_llama3(const posenc_rope_scaling *s, scaled_plan *p) {
  const double factor = s->factor, low = s->low_freq_factor, high = s->high_freq_factor;
  const size_t length = s->original_max_position_embeddings;
  if (!positive(factor) || !positive(low) || !positive(high) || !(low < high) || length == 0)
    return POSENC_ERR_INVALID_ARGUMENT;
  const double low_freq_wavelen = (double)length / low;
  const double high_freq_wavelen = (double)length / high;
  for (size_t i = 0; i < p->n; ++i) {
    const double w = posenc_default_freq(p->base, i, p->r);
    const double wavelen = 2 * PI / w;
    const double w_llama = wavelen > low_freq_wavelen ? w / factor : w;
    const double smooth = ((double)length / wavelen - low) / (high - low);
    const double smoothed = (1 - smooth) * w_llama / factor + smooth * w_llama;
    const int medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    p->w[i] = medium ? smoothed : w_llama;
  }
  return POSENC_OK;
}

static posenc_status fill_pair_factors(const posenc_rope_scaling *s, scaled_plan *p) {
  if (!valid_factors(s->pair_factors, s->pair_factors_len, p->n))
    return POSENC_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < p->n; ++i)
    p->w[i] = posenc_default_freq(p->base, i, p->r) / s->pair_factors[i];
  return POSENC_OK;
}

static posenc_status fill(const posenc_rope_scaling *s, scaled_plan *p) {
  switch (s->type) {
    case POSENC_ROPE_SCALING_DEFAULT:
      fill_default(p, p->base);
      return POSENC_OK;
    case POSENC_ROPE_SCALING_LINEAR:
      return fill_linear(s, p);
    case POSENC_ROPE_SCALING_DYNAMIC:
      return fill_dynamic(s, p);
    case POSENC_ROPE_SCALING_YARN:
      return fill_yarn(s, p);
    case POSENC_ROPE_SCALING_LONGROPE:
      return fill_longrope(s, p);
    case POSENC_ROPE_SCALING_LLAMA3:
      return fill_llama3(s, p);
    case POSENC_ROPE_SCALING_NTK_ALPHA:
      return fill_ntk_alpha(s, p);
    case POSENC_ROPE_SCALING_PAIR_FACTORS:
      return fill_pair_factors(s, p);
  }
  return POSENC_ERR_INVALID_ARGUMENT; /* a value outside the enum */
}

posenc_status posenc_rope_plan_create_scaled(posenc_rope_plan **plan, size_t rotary_dim,
                                             double base, const posenc_rope_scaling *scaling) {
  if (!plan) return POSENC_ERR_INVALID_ARGUMENT;
  *plan = NULL;
  const posenc_rope_scaling none = {.type = POSENC_ROPE_SCALING_DEFAULT};
  const posenc_rope_scaling *s = scaling ? scaling : &none;
  if (!posenc_base_valid(base) || !posenc_rotary_dim_valid(rotary_dim) ||
      !zero_or_positive(s->attention_factor))
    return POSENC_ERR_INVALID_ARGUMENT;
  scaled_plan p = {.r = rotary_dim, .n = rotary_dim / 2, .base = base, .att = 1.0};
  p.w = malloc(p.n * sizeof *p.w);
  if (!p.w) return POSENC_ERR_OUT_OF_MEMORY;
  posenc_status st = fill(s, &p);
  if (st == POSENC_OK) {
    const double att = s->attention_factor != 0 ? s->attention_factor : p.att;
    /* Refuses NaN or out-of-range frequencies and attention factors, storing NULL. */
    st = posenc_rope_plan_create_from_freqs(plan, rotary_dim, p.w, att);
  }
  free(p.w);
  return st;
}
