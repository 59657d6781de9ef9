/* Scaled RoPE plans (posenc_rope_plan_create_scaled): every scaling type reduces to R/2
 * double frequencies and an attention factor, handed to posenc_rope_plan_create_from_freqs.
 * The formulas, and the order in which their operations are evaluated, follow HuggingFace
 * transformers' modeling_rope_utils, so that the frequencies agree with HF's own code run in
 * double (tests/rope_golden_test.cc) to the last few bits. */
#include <math.h>
#include <stdlib.h>

#include "../kernels/simd/msan.h"
#include "checks.h"

static const double PI = 3.141592653589793; /* Python's math.pi */

/* What every fill function gets: the plan's shape, and what it fills in. */
typedef struct scaled_plan {
  const char *fn; /* the public function called, for the detail of a rejection */
  size_t r, n;    /* rotary_dim, R/2 */
  double base;    /* rope_theta */
  double *w;      /* R/2 frequencies to fill */
  double att;     /* the type's own attention factor (1 unless it sets one) */
} scaled_plan;

static int positive(double x) { return isfinite(x) && x > 0; }

/* 0 ("not given") or a positive finite value. */
static int zero_or_positive(double x) { return x == 0 || positive(x); }

static void fill_default(scaled_plan *p, double base) {
  for (size_t i = 0; i < p->n; ++i) p->w[i] = posenc_default_freq(base, i, p->r);
}

/* A factor array (scaling->name, scaling->len_name) of exactly R/2 positive finite values. */
static posenc_status check_factors(const char *fn, const char *name, const char *len_name,
                                   const double *f, size_t len, size_t n) {
  if (!f) return posenc_reject_field(fn, "scaling", name, "is NULL");
  if (len != n) return posenc_reject_field(fn, "scaling", len_name, "%zu is not R/2 = %zu", len, n);
  for (size_t i = 0; i < n; ++i)
    if (!positive(f[i]))
      return posenc_reject_elem(fn, "scaling", name, i, "%g is not finite and > 0", f[i]);
  return POSENC_OK;
}

/* POSENC_OK if scaling->field (value x) is finite and > 0; `type` says who needs it. */
static posenc_status check_positive(const char *fn, const char *field, double x, const char *type) {
  if (positive(x)) return POSENC_OK;
  return posenc_reject_field(fn, "scaling", field, "%g is not finite and > 0 (%s)", x, type);
}

static posenc_status fill_linear(const posenc_rope_scaling *s, scaled_plan *p) {
  const posenc_status st = check_positive(p->fn, "factor", s->factor, "LINEAR");
  if (st != POSENC_OK) return st;
  for (size_t i = 0; i < p->n; ++i) p->w[i] = posenc_default_freq(p->base, i, p->r) / s->factor;
  return POSENC_OK;
}

/* The NTK-aware base for R: base * scale^(R/(R-2)); `field`: the scaling's field the scale
 * came from. */
static posenc_status fill_ntk_base(scaled_plan *p, double scale, const char *field) {
  const double base = p->base * pow(scale, (double)p->r / (double)(p->r - 2));
  if (!positive(base))
    return posenc_reject_field(p->fn, "scaling", field,
                               "gives the NTK-aware base %g, which is not finite and > 0", base);
  fill_default(p, base);
  return POSENC_OK;
}

/* HF _compute_dynamic_ntk_parameters with seq_len = max(seq_len, max_position_embeddings);
 * at or below max_position_embeddings HF keeps (and posenc returns) the default plan. */
static posenc_status fill_dynamic(const posenc_rope_scaling *s, scaled_plan *p) {
  const size_t m = s->max_position_embeddings;
  posenc_status st = check_positive(p->fn, "factor", s->factor, "DYNAMIC");
  if (st == POSENC_OK && m == 0)
    st = posenc_reject_field(p->fn, "scaling", "max_position_embeddings", "is 0 (DYNAMIC)");
  if (st == POSENC_OK && p->r < 4)
    st = posenc_reject(p->fn, "rotary_dim", "%zu: DYNAMIC needs at least 4", p->r);
  if (st != POSENC_OK) return st;
  if (s->seq_len <= m) {
    fill_default(p, p->base);
    return POSENC_OK;
  }
  const double factor = s->factor;
  return fill_ntk_base(p, factor * (double)s->seq_len / (double)m - (factor - 1), "factor");
}

static posenc_status fill_ntk_alpha(const posenc_rope_scaling *s, scaled_plan *p) {
  const posenc_status st = check_positive(p->fn, "alpha", s->alpha, "NTK_ALPHA");
  if (st != POSENC_OK) return st;
  if (p->r < 4) return posenc_reject(p->fn, "rotary_dim", "%zu: NTK_ALPHA needs at least 4", p->r);
  return fill_ntk_base(p, s->alpha, "alpha");
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

static posenc_status check_yarn(const char *fn, const posenc_rope_scaling *s, double factor) {
  const double fast = s->beta_fast != 0 ? s->beta_fast : 32;
  const double slow = s->beta_slow != 0 ? s->beta_slow : 1;
  if (!positive(factor))
    return posenc_reject_field(fn, "scaling", "factor",
                               "%g (0: max_position_embeddings / original_max_position_embeddings) "
                               "is not finite and > 0 (YARN)",
                               factor);
  if (s->original_max_position_embeddings == 0)
    return posenc_reject_field(fn, "scaling", "original_max_position_embeddings", "is 0 (YARN)");
  posenc_status st = check_positive(fn, "beta_fast", fast, "YARN");
  if (st == POSENC_OK) st = check_positive(fn, "beta_slow", slow, "YARN");
  if (st != POSENC_OK) return st;
  if (!(fast >= slow))
    return posenc_reject_field(fn, "scaling", "beta_fast",
                               "%g is less than beta_slow %g (after their defaults 32 and 1)", fast,
                               slow);
  if (!isfinite(s->mscale))
    return posenc_reject_field(fn, "scaling", "mscale", "%g is not finite", s->mscale);
  if (!isfinite(s->mscale_all_dim))
    return posenc_reject_field(fn, "scaling", "mscale_all_dim", "%g is not finite",
                               s->mscale_all_dim);
  return POSENC_OK;
}

static posenc_status fill_yarn(const posenc_rope_scaling *s, scaled_plan *p) {
  const double factor = factor_or_ratio(s);
  const posenc_status st = check_yarn(p->fn, s, factor);
  if (st != POSENC_OK) return st;
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
  if (!isfinite(low) || !isfinite(high))
    return posenc_reject(p->fn, "scaling",
                         "YaRN's ramp over the pairs has bounds that are not finite (%g, %g)", low,
                         high);
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
  const char *fn = p->fn;
  const size_t length = s->original_max_position_embeddings;
  if (length == 0)
    return posenc_reject_field(fn, "scaling", "original_max_position_embeddings",
                               "is 0 (LONGROPE)");
  posenc_status st = check_factors(fn, "short_factor", "short_factor_len", s->short_factor,
                                   s->short_factor_len, p->n);
  if (st == POSENC_OK)
    st = check_factors(fn, "long_factor", "long_factor_len", s->long_factor, s->long_factor_len,
                       p->n);
  if (st != POSENC_OK) return st;
  if (!zero_or_positive(s->factor))
    return posenc_reject_field(fn, "scaling", "factor", "%g is not 0 or finite and > 0 (LONGROPE)",
                               s->factor);
  if (s->attention_factor == 0) { /* otherwise the factor is not needed */
    const double factor = factor_or_ratio(s);
    if (!positive(factor))
      return posenc_reject_field(fn, "scaling", "factor",
                                 "is 0 and max_position_embeddings / "
                                 "original_max_position_embeddings cannot give it (LONGROPE "
                                 "without attention_factor)");
    if (factor > 1 && length < 2)
      return posenc_reject_field(fn, "scaling", "original_max_position_embeddings",
                                 "%zu: the attention factor of factor %g > 1 divides by ln(%zu)",
                                 length, factor, length);
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
  posenc_status st = check_positive(p->fn, "factor", factor, "LLAMA3");
  if (st == POSENC_OK) st = check_positive(p->fn, "low_freq_factor", low, "LLAMA3");
  if (st == POSENC_OK) st = check_positive(p->fn, "high_freq_factor", high, "LLAMA3");
  if (st != POSENC_OK) return st;
  if (!(low < high))
    return posenc_reject_field(p->fn, "scaling", "high_freq_factor",
                               "%g is not above low_freq_factor %g", high, low);
  if (length == 0)
    return posenc_reject_field(p->fn, "scaling", "original_max_position_embeddings",
                               "is 0 (LLAMA3)");
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
  const posenc_status st = check_factors(p->fn, "pair_factors", "pair_factors_len", s->pair_factors,
                                         s->pair_factors_len, p->n);
  if (st != POSENC_OK) return st;
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
  /* a value outside the enum */
  return posenc_reject_field(p->fn, "scaling", "type", "%d is not a posenc_rope_scaling_type",
                             (int)s->type);
}

/* posenc_rope_plan_create_scaled on behalf of the public function fn. */
static posenc_status create_scaled(const char *fn, posenc_rope_plan **plan, size_t rotary_dim,
                                   double base, const posenc_rope_scaling *scaling) {
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  *plan = NULL;
  const posenc_rope_scaling none = {.type = POSENC_ROPE_SCALING_DEFAULT};
  const posenc_rope_scaling *s = scaling ? scaling : &none;
  posenc_status st = posenc_check_base(fn, "base", base);
  if (st == POSENC_OK) st = posenc_check_rotary_dim(fn, "rotary_dim", rotary_dim);
  if (st != POSENC_OK) return st;
  if (!zero_or_positive(s->attention_factor))
    return posenc_reject_field(fn, "scaling", "attention_factor", "%g is not 0 or finite and > 0",
                               s->attention_factor);
  scaled_plan p = {.fn = fn, .r = rotary_dim, .n = rotary_dim / 2, .base = base, .att = 1.0};
  p.w = malloc(p.n * sizeof *p.w);
  if (!p.w) return posenc_out_of_memory(fn, "plan", p.n * sizeof *p.w);
  st = fill(s, &p);
  if (st == POSENC_OK) {
    const double att = s->attention_factor != 0 ? s->attention_factor : p.att;
    /* Refuses NaN or out-of-range frequencies and attention factors, storing NULL. */
    const char *from = scaling ? "scaling" : "base";
    st = posenc_rope_plan_make(fn, from,
                               s->attention_factor != 0 ? "scaling->attention_factor" : from, plan,
                               rotary_dim, p.w, att);
  }
  free(p.w);
  return st;
}

posenc_status posenc_rope_plan_create_scaled(posenc_rope_plan **plan, size_t rotary_dim,
                                             double base, const posenc_rope_scaling *scaling) {
  return create_scaled(__func__, plan, rotary_dim, base, scaling);
}

/* ---- Float32 recipes ------------------------------------------------------------------- */

/* posenc_rope_plan_create_from_freqs_f32 on behalf of the public function fn, whose
 * arguments freqs_arg and att_arg gave the frequencies and the attention factor. */
static posenc_status from_freqs_f32(const char *fn, const char *freqs_arg, const char *att_arg,
                                    posenc_rope_plan **plan, size_t rotary_dim, const float *freqs,
                                    double attention_factor) {
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  *plan = NULL;
  if (!freqs) return posenc_reject(fn, freqs_arg, "is NULL");
  posenc_status st = posenc_check_rotary_dim(fn, "rotary_dim", rotary_dim);
  if (st != POSENC_OK) return st;
  const size_t n = rotary_dim / 2;
  double *w = malloc(n * sizeof *w);
  if (!w) return posenc_out_of_memory(fn, "plan", n * sizeof *w);
  for (size_t i = 0; i < n; ++i) w[i] = (double)freqs[i]; /* exact: (float)w[i] == freqs[i] */
  st = posenc_rope_plan_make(fn, freqs_arg, att_arg, plan, rotary_dim, w, attention_factor);
  free(w);
  return st;
}

posenc_status posenc_rope_plan_create_from_freqs_f32(posenc_rope_plan **plan, size_t rotary_dim,
                                                     const float *freqs, double attention_factor) {
  return from_freqs_f32(__func__, "freqs", "attention_factor", plan, rotary_dim, freqs,
                        attention_factor);
}

posenc_status posenc_rope_plan_create_powf(posenc_rope_plan **plan, size_t rotary_dim, float base,
                                           double attention_factor) {
  const char *fn = __func__;
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  *plan = NULL;
  posenc_status st = posenc_check_base(fn, "base", (double)base);
  if (st == POSENC_OK) st = posenc_check_rotary_dim(fn, "rotary_dim", rotary_dim);
  if (st != POSENC_OK) return st;
  const size_t n = rotary_dim / 2;
  float *f = malloc(n * sizeof *f);
  if (!f) return posenc_out_of_memory(fn, "plan", n * sizeof *f);
  /* llama2.c, llama.c-style runtimes: 1.0f / powf(base, head_dim / (float)head_size) with
   * head_dim = 2i, in float, the C library's powf. */
  for (size_t i = 0; i < n; ++i) f[i] = 1.0f / powf(base, (float)(2 * i) / (float)rotary_dim);
  st = from_freqs_f32(fn, "base", "attention_factor", plan, rotary_dim, f, attention_factor);
  free(f);
  return st;
}

/* SLEEF's u10 powf with fused multiply-adds: PyTorch's vectorised float pow on x86 (AVX2,
 * AVX-512) and aarch64 CPUs. Exported by libsleef on those targets; its header declares it
 * only where the compiler itself targets FMA. */
float Sleef_powf1_u10purecfma(float x, float y);

/* base^e for pair i of n as PyTorch's CPU kernel computes `base ** tensor`: ATen's vectorised
 * loop takes whole blocks of two vectors of `lanes` floats through SLEEF, the rest of the
 * tensor through the scalar std::pow (the C library's powf); lanes 0: every element by the C
 * library (torch's scalar "default" capability). */
static float torch_pow(float base, float e, size_t i, size_t n, unsigned lanes) {
  const size_t block = 2 * (size_t)lanes;
  float r = block && i < n / block * block ? Sleef_powf1_u10purecfma(base, e) : powf(base, e);
  POSENC_MSAN_UNPOISON(&r, sizeof r); /* SLEEF and libm are not instrumented */
  return r;
}

/* HF's float32 `inv_freq`, operation by operation as torch evaluates it (a Python scalar
 * combined with a float32 tensor is rounded to float32 first). `base` is the type's base
 * (rescaled for DYNAMIC), the parameters are those fill() validated; f receives R/2 floats. */
static void hf_f32_freqs(const posenc_rope_scaling *s, size_t r, double base, unsigned lanes,
                         float *f) {
  const size_t n = r / 2;
  const float b = (float)base;
  /* YaRN's ramp bounds, as fill_yarn() computes them (in double, like HF's Python). */
  double low = 0, high = 1;
  if (s->type == POSENC_ROPE_SCALING_YARN) {
    const size_t length = s->original_max_position_embeddings;
    low = yarn_correction_dim(s->beta_fast != 0 ? s->beta_fast : 32, r, base, length);
    high = yarn_correction_dim(s->beta_slow != 0 ? s->beta_slow : 1, r, base, length);
    if (!s->no_truncate) {
      low = floor(low);
      high = ceil(high);
    }
    low = fmax(low, 0);
    high = fmin(high, (double)(r - 1));
    if (low == high) high += 0.001;
  }
  for (size_t i = 0; i < n; ++i) {
    const float e = (float)(2 * i) / (float)r;     /* torch.arange(0, dim, 2).float() / dim */
    const float pf = torch_pow(b, e, i, n, lanes); /* base ** that */
    const float inv = 1.0f / pf;
    switch (s->type) {
      case POSENC_ROPE_SCALING_LINEAR:
        f[i] = inv / (float)s->factor;
        break;
      case POSENC_ROPE_SCALING_YARN: {
        const float inter = 1.0f / ((float)factor_or_ratio(s) * pf);
        const float ramp = fminf(fmaxf(((float)i - (float)low) / (float)(high - low), 0.0f), 1.0f);
        const float extra = 1.0f - ramp;
        f[i] = inter * (1.0f - extra) + inv * extra;
        break;
      }
      case POSENC_ROPE_SCALING_LONGROPE: {
        const double *ext =
            s->seq_len > s->original_max_position_embeddings ? s->long_factor : s->short_factor;
        f[i] = 1.0f / ((float)ext[i] * pf);
        break;
      }
      case POSENC_ROPE_SCALING_LLAMA3: {
        const double length = (double)s->original_max_position_embeddings;
        const float factor = (float)s->factor, lo = (float)s->low_freq_factor;
        const float low_wavelen = (float)(length / s->low_freq_factor);
        const float high_wavelen = (float)(length / s->high_freq_factor);
        const float wavelen = (float)(2 * PI) / inv;
        const float w_llama = wavelen > low_wavelen ? inv / factor : inv;
        const float smooth =
            ((float)length / wavelen - lo) / (float)(s->high_freq_factor - s->low_freq_factor);
        const float smoothed = (1.0f - smooth) * w_llama / factor + smooth * w_llama;
        const int medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
        f[i] = medium ? smoothed : w_llama;
        break;
      }
      default: /* DEFAULT, DYNAMIC (its rescaled base) */
        f[i] = inv;
    }
  }
}

posenc_status posenc_rope_plan_create_hf_f32(posenc_rope_plan **plan, size_t rotary_dim,
                                             double base, const posenc_rope_scaling *scaling,
                                             unsigned torch_vector_floats) {
  const char *fn = __func__;
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  *plan = NULL;
  const unsigned lanes = torch_vector_floats;
  if (lanes != 0 && lanes != 4 && lanes != 8 && lanes != 16)
    return posenc_reject(fn, "torch_vector_floats", "%u is not 0, 4, 8 or 16", lanes);
  const posenc_rope_scaling none = {.type = POSENC_ROPE_SCALING_DEFAULT};
  const posenc_rope_scaling *s = scaling ? scaling : &none;
  if (s->type == POSENC_ROPE_SCALING_NTK_ALPHA || s->type == POSENC_ROPE_SCALING_PAIR_FACTORS)
    return posenc_reject_field(fn, "scaling", "type",
                               "%d: NTK_ALPHA and PAIR_FACTORS are not HF types (no float32 "
                               "recipe)",
                               (int)s->type); /* not HF types */
  /* The double plan validates every parameter and gives HF's attention factor. */
  posenc_rope_plan *checked;
  posenc_status st = create_scaled(fn, &checked, rotary_dim, base, scaling);
  if (st != POSENC_OK) return st;
  const double att = posenc_rope_plan_attention_factor(checked);
  posenc_rope_plan_destroy(checked);
#if defined(__x86_64__) || defined(__i386__)
  /* SLEEF's fused multiply-add powf needs the FMA instructions (and the OS's AVX state) when
   * any pair goes through it. */
  if (lanes && rotary_dim / 2 >= 2 * (size_t)lanes && (!posenc_cpu()->fma || !posenc_cpu()->os_ymm))
    return posenc_fail(POSENC_ERR_UNSUPPORTED, fn, "torch_vector_floats",
                       "%u sends pairs through SLEEF's fused multiply-add powf, and this CPU "
                       "(or OS) lacks FMA or AVX state; 0 computes every pair with powf",
                       lanes);
#endif
  double b = base; /* DYNAMIC: HF's NTK base for seq_len, as fill_dynamic() computes it */
  if (s->type == POSENC_ROPE_SCALING_DYNAMIC && s->seq_len > s->max_position_embeddings) {
    const double scale =
        s->factor * (double)s->seq_len / (double)s->max_position_embeddings - (s->factor - 1);
    b = base * pow(scale, (double)rotary_dim / (double)(rotary_dim - 2));
  }
  float *f = malloc(rotary_dim / 2 * sizeof *f);
  if (!f) return posenc_out_of_memory(fn, "plan", rotary_dim / 2 * sizeof *f);
  hf_f32_freqs(s, rotary_dim, b, lanes, f);
  st = from_freqs_f32(fn, scaling ? "scaling" : "base", "scaling", plan, rotary_dim, f, att);
  free(f);
  return st;
}
