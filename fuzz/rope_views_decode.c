/* fuzz_rope_views's decoder: the input format (fuzz_rope_views.c describes what the bytes
 * pick) read into a vcall, the plan made on the way (posenc_rope_plan_create_ggml's plan
 * checked against the header's formula, a scaled plan's status and rotary_dim). The corpus
 * fuzz/corpus/fuzz_rope_views is in this format (fuzz/make_corpus.py). Its pieces (views_plan,
 * views_layout, views_types, views_flags, views_data: rope_views.h) also decode fuzz_rope_kv's
 * calls. Drawn unknown flag bits leave out POSENC_ROPE_POSITIONS_INT64 (drawn on its own, with
 * int64 positions; fuzz_rope_kv takes it off). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rope_views.h"

/* ---------------------------------------------------------------------- decoding */

/* Tensor data: two input bytes per float while they last (1/16 special), then a PRNG. */
float views_data(reader *r) {
  if (r->n >= 2) {
    const uint16_t v = u16(r);
    if ((v >> 12) == 0xF) return special_float(v & 0xF, (uint32_t)v * 2654435761u);
    return (float)(int16_t)(v << 1) / 4096.0f;
  }
  r->rng ^= r->rng << 13;
  r->rng ^= r->rng >> 7;
  r->rng ^= r->rng << 17;
  const uint32_t x = (uint32_t)(r->rng >> 16);
  if ((x & 63) == 0) return special_float(x >> 6, x);
  return (float)(int32_t)(x - 0x80000000u) / (float)(1u << 29);
}

/* posenc_rope_plan_create_ggml's parameters: mostly valid (the seeds' bytes 4-7 give
 * valid ones), with NaN, infinite, negative and zero values, bad YaRN parameters and
 * freq_factors holding 0, negatives, NaN or tiny divisors. */
static float ggml_freq_factor(reader *r) {
  const uint8_t b = u8(r);
  switch (b % 16) {
    case 0:
      return 0.0f;
    case 1:
      return -1.0f;
    case 2:
      return NAN;
    case 3:
      return INFINITY;
    case 12:
      return FLT_TRUE_MIN; /* a frequency past 1024 */
    default:
      return 1.0f + (float)(b >> 4) / 4.0f;
  }
}

static double pick(reader *r, const double *v, size_t n, unsigned special_mod) {
  static const double common[] = {1.0, 32.0, 10000.0};
  const uint8_t b = u8(r);
  if (special_mod && b % special_mod == 0) return param(r, common, 3);
  return v[(b >> 1) % n];
}

/* The plan ggml's formula gives (posenc.h), as the header states it: w_i and the attention
 * factor, and 0 if a parameter is invalid. *sure is 0 where a rounding could decide
 * (a YaRN correction dimension within 1e-9 of an integer). */
static int ggml_expect(const posenc_rope_ggml_params *g, double *w, double *tol, double *att,
                       int *sure) {
  const double pi = 3.141592653589793;
  *sure = 1;
  if (g->n_dims < 2 || g->n_dims % 2 || g->n_dims > ((size_t)1 << 20)) return 0;
  if (!isfinite(g->freq_base) || !(g->freq_base > 0) || g->freq_base == 1) return 0;
  const double fs0 = g->freq_scale, af0 = g->attn_factor, ext = g->ext_factor;
  if (!isfinite(fs0) || fs0 < 0 || !isfinite(af0) || af0 < 0 || !isfinite(ext) || ext < 0) return 0;
  if (ext != 0 && (g->n_ctx_orig == 0 || !isfinite(g->beta_fast) || !(g->beta_fast > 0) ||
                   !isfinite(g->beta_slow) || !(g->beta_slow > 0)))
    return 0;
  const size_t n = g->n_dims / 2;
  if (g->freq_factors)
    for (size_t i = 0; i < n; ++i)
      if (!isfinite(g->freq_factors[i]) || !(g->freq_factors[i] > 0)) return 0;
  const double fs = fs0 == 0 ? 1.0 : fs0;
  *att = af0 == 0 ? 1.0 : af0;
  double lo = 0, hi = 0;
  if (ext != 0) {
    const double r = (double)g->n_dims, lb = 2 * log(g->freq_base);
    const double cf = r * log((double)g->n_ctx_orig / (2 * pi * g->beta_fast)) / lb;
    const double cs = r * log((double)g->n_ctx_orig / (2 * pi * g->beta_slow)) / lb;
    if (fabs(cf - nearbyint(cf)) < 1e-9 || fabs(cs - nearbyint(cs)) < 1e-9) *sure = 0;
    lo = fmax(0, floor(cf));
    hi = fmin(r - 1, ceil(cs));
    *att *= 1 + 0.1 * log(1 / fs);
  }
  for (size_t i = 0; i < n && w; ++i) {
    const double ff = g->freq_factors ? (double)g->freq_factors[i] : 1.0;
    const double wi = pow(g->freq_base, -(double)(2 * i) / (double)g->n_dims) / ff;
    double m = 0;
    if (ext != 0) m = (1 - fmin(1, fmax(0, ((double)i - lo) / fmax(0.001, hi - lo)))) * ext;
    w[i] = wi * (fs * (1 - m) + m);
    /* each operation rounds: relative to the terms' magnitudes, not to a cancelled sum */
    tol[i] = 1e-9 * fabs(wi) * (fs * fabs(1 - m) + fabs(m));
  }
  return 1;
}

static void check_ggml_plan(vcall *c, const posenc_rope_ggml_params *g, posenc_status st,
                            int null_params) {
  const size_t n = g->n_dims / 2;
  double *w = NULL, *tol = NULL, att = 0;
  int sure = 1;
  if (n <= 4096) {
    w = malloc((n ? n : 1) * sizeof *w);
    tol = malloc((n ? n : 1) * sizeof *tol);
    if (!w || !tol) abort();
  }
  const int valid = !null_params && ggml_expect(g, w, tol, &att, &sure);
  if (st != POSENC_OK) {
    if (c->plan) violation(&c->base, "-", "ggml plan: *plan not NULL on error", 0, 0, 0);
    if (valid && w && sure) { /* an error only if a result is one a plan cannot hold */
      int holdable = isfinite(att) && att > 1e-300 && att < 0.999 * FLT_MAX;
      for (size_t i = 0; i < n; ++i) holdable &= isfinite(w[i]) && fabs(w[i]) + tol[i] < 1024;
      if (holdable)
        violation(&c->base, "-", "ggml plan: valid parameters refused", 0, (float)att, 0);
    }
  } else {
    if (!valid) violation(&c->base, "-", "ggml plan: invalid parameters accepted", 0, 0, 0);
    if (posenc_rope_plan_rotary_dim(c->plan) != g->n_dims)
      violation(&c->base, "-", "ggml plan: rotary_dim is not n_dims", 0, 0, 0);
    const double got_att = posenc_rope_plan_attention_factor(c->plan);
    if (!(fabs(got_att - att) <= 1e-12 * fabs(att)))
      violation(&c->base, "-", "ggml plan: attention factor off the formula", 0, (float)got_att,
                (float)att);
    if (w && sure) {
      double *got = malloc(n * sizeof *got);
      if (!got || posenc_rope_plan_freqs(c->plan, got) != POSENC_OK) abort();
      for (size_t i = 0; i < n; ++i)
        if (!(fabs(got[i] - w[i]) <= tol[i] + 1e-300)) {
          fprintf(stderr, "fuzz_rope_views: ggml pair %zu: w %.17g, formula %.17g\n", i, got[i],
                  w[i]);
          violation(&c->base, "-", "ggml plan: frequency off the formula", i, (float)got[i],
                    (float)w[i]);
        }
      free(got);
    }
  }
  free(w);
  free(tol);
}

static void decode_ggml(reader *r, vcall *c) {
  static const double bases[] = {10000.0, 500000.0, 1e6, 10000.0, 1e4 + 0.5, 1000.0};
  static const double scales[] = {1.0, 0.25, 0.5, 1.0 / 40, 0.0, 1.0, 0.125, 4.0};
  static const double exts[] = {0.0, 0.0, 1.0, 0.5, 0.0, 1.0, 0.25, 0.0};
  static const double attns[] = {1.0, 0.0, 0.5, 2.0, 1.0, 1.0};
  static const double fasts[] = {0.0, 32.0, 32.0, 16.0, 64.0, 32.0};
  static const double slows[] = {0.0, 1.0, 1.0, 2.0, 0.5, 1.0};
  static const size_t ctxs[] = {0, SIZE_MAX, 1, 4096, 4096, 2048, 8192, 32768};
  posenc_rope_ggml_params g;
  memset(&g, 0, sizeof g);
  g.n_dims = 2 * (size_t)(u8(r) % 101);
  const uint8_t shape = u8(r);
  if (shape % 32 == 0) g.n_dims += 1;
  if (shape % 32 == 1) g.n_dims = ((size_t)1 << 20) + 2;
  if (shape % 32 == 2) g.n_dims = 512 + 2 * (size_t)(u8(r) % 64);
  const int null_params = shape % 32 == 3;
  g.freq_base = pick(r, bases, 6, 8);
  g.freq_scale = pick(r, scales, 8, 8);
  g.ext_factor = pick(r, exts, 8, 16);
  g.attn_factor = pick(r, attns, 6, 8);
  g.beta_fast = pick(r, fasts, 6, 16);
  g.beta_slow = pick(r, slows, 6, 16);
  g.n_ctx_orig = ctxs[u8(r) % 8];
  float *ff = NULL;
  if (u8(r) % 4 == 3 && g.n_dims <= 2048) {
    ff = malloc((g.n_dims / 2 + 1) * sizeof *ff);
    if (!ff) abort();
    for (size_t i = 0; i < g.n_dims / 2; ++i) ff[i] = ggml_freq_factor(r);
    g.freq_factors = ff;
  }
  c->rd = g.n_dims;
  c->plan = (posenc_rope_plan *)&c->plan; /* must come back NULL on error */
  const posenc_status st = posenc_rope_plan_create_ggml(&c->plan, null_params ? NULL : &g);
  if (c->plan == (posenc_rope_plan *)&c->plan) {
    c->plan = NULL;
    violation(&c->base, "-", "ggml plan: *plan not set", 0, 0, 0);
  }
  check_ggml_plan(c, &g, st, null_params);
  free(ff);
}

/* A scaled plan (posenc_rope_plan_create_scaled): every type and an unknown one, common and
 * special parameters, factor arrays of the right or a wrong length. Checked: *plan NULL on
 * error, the rotary_dim asked for on success. */
static void decode_scaled(reader *r, vcall *c) {
  static const double factors[] = {2.0, 4.0, 8.0, 16.0, 32.0, 1.0, 0.5, 40.0};
  static const size_t origs[] = {4096, 2048, 8192, 0, 4096, 1};
  static const size_t maxes[] = {131072, 32768, 4096, 0, 131072, 8192};
  static const size_t lens[] = {0, 1000, 200000, 4096, 0, 131072};
  static const double lows[] = {1.0, 1.0, 2.0, 0.0};
  static const double highs[] = {4.0, 4.0, 1.0, 8.0};
  static const double alphas[] = {2.0, 4.0, 1000.0, 0.0};
  static const double ms[] = {0.0, 0.0, 1.0, 0.707};
  size_t rd = 2 * (size_t)(u8(r) % 101);
  const uint8_t shape = u8(r);
  if (shape % 32 == 0) rd += 1;
  if (shape % 32 == 1) rd = 0;
  c->rd = rd;
  posenc_rope_scaling s;
  memset(&s, 0, sizeof s);
  const uint8_t t = u8(r);
  s.type = (posenc_rope_scaling_type)(t % 10 < 8 ? t % 10 : t % 10 == 8 ? 99 : -1);
  s.factor = pick(r, factors, 8, 8);
  s.attention_factor = u8(r) % 8 == 7 ? pick(r, factors, 8, 4) : 0.0;
  s.original_max_position_embeddings = origs[u8(r) % 6];
  s.max_position_embeddings = maxes[u8(r) % 6];
  s.seq_len = lens[u8(r) % 6];
  s.beta_fast = u8(r) % 4 == 3 ? pick(r, factors, 8, 4) : 0.0;
  s.beta_slow = u8(r) % 4 == 3 ? pick(r, factors, 8, 4) : 0.0;
  s.mscale = ms[u8(r) % 4];
  s.mscale_all_dim = ms[u8(r) % 4];
  s.no_truncate = u8(r) & 1;
  s.low_freq_factor = lows[u8(r) % 4];
  s.high_freq_factor = highs[u8(r) % 4];
  s.alpha = alphas[u8(r) % 4];
  double *arr = NULL;
  const size_t n = rd / 2;
  const int arrays =
      s.type == POSENC_ROPE_SCALING_LONGROPE || s.type == POSENC_ROPE_SCALING_PAIR_FACTORS;
  if (arrays && n <= 400) {
    const size_t len = n + (u8(r) % 16 == 15);
    arr = malloc((len + 1) * sizeof *arr);
    if (!arr) abort();
    for (size_t i = 0; i < len; ++i) {
      const uint8_t b = u8(r);
      arr[i] = b % 32 == 31 ? 0.0 : b % 32 == 30 ? NAN : 1.0 + (double)(b % 64) / 8.0;
    }
    s.short_factor = s.long_factor = s.pair_factors = arr;
    s.short_factor_len = s.long_factor_len = s.pair_factors_len = len;
  }
  const double base = u8(r) % 8 ? 10000.0 : 500000.0;
  c->plan = (posenc_rope_plan *)&c->plan;
  const posenc_status st = posenc_rope_plan_create_scaled(&c->plan, rd, base, &s);
  if (st != POSENC_OK && c->plan)
    violation(&c->base, "-", "scaled plan: *plan not NULL on error", 0, 0, 0);
  if (st == POSENC_OK && posenc_rope_plan_rotary_dim(c->plan) != rd)
    violation(&c->base, "-", "scaled plan: wrong rotary_dim", 0, 0, 0);
  if (st != POSENC_OK) c->plan = NULL;
  free(arr);
}

void views_plan(reader *r, vcall *c) {
  switch (u8(r) % 8) {
    case 2:
    case 6:
      c->plan_kind = "ggml";
      decode_ggml(r, c);
      break;
    case 3:
    case 7:
      c->plan_kind = "scaled";
      decode_scaled(r, c);
      break;
    default:
      c->plan_kind = "default";
      c->plan = decode_rope_plan_new(r, &c->rd);
      break;
  }
  c->att = posenc_rope_plan_attention_factor(c->plan);
}

/* A view's strides (in elements) for L tokens of H heads of D: [B, L, H, D] or [B, H, L, D]
 * dense or padded, one cache row per token, batch_stride 0 (valid for a source: every batch
 * reads one tensor), or common.c's stride() for each (overlapping, zero, huge). */
void views_layout(reader *r, const vcall *c, view *v) {
  const size_t D = c->head_dim, L = c->n_tokens < 64 ? c->n_tokens : 1,
               H = v->n_heads < 64 ? v->n_heads : 1;
  int huge = 0;
  const uint8_t mode = u8(r);
  switch (mode % 8) {
    case 0: /* arbitrary */
      v->hs = stride(r, D, &huge);
      v->ts = stride(r, H * D, &huge);
      v->bs = stride(r, L * H * D, &huge);
      break;
    case 1: /* [L, H, D] read by every batch */
      v->hs = D, v->ts = H * D, v->bs = 0;
      break;
    case 2: /* padded [B, L, H, D] */
      v->hs = D + u8(r) % 4;
      v->ts = H * v->hs + u8(r) % 4;
      v->bs = L * v->ts + u8(r) % 4;
      break;
    case 3: /* padded [B, H, L, D] */
      v->ts = D + u8(r) % 4;
      v->hs = L * v->ts + u8(r) % 4;
      v->bs = H * v->hs + u8(r) % 4;
      break;
    case 6: /* [B, H, L, D] */
      v->ts = D, v->hs = L * D, v->bs = H * L * D;
      break;
    case 7: /* one cache row per token (room for more heads), batches anywhere */
      v->hs = D;
      v->ts = H * D + 2 * D * (u8(r) % 2) + u8(r) % 3;
      v->bs = stride(r, L * v->ts, &huge);
      break;
    default: /* [B, L, H, D] */
      v->hs = D, v->ts = H * D, v->bs = L * H * D;
      break;
  }
}

/* The (src, dst) types: the five supported pairs, the unsupported ones, unknown values. */
void views_types(reader *r, vcall *c, int unknown) {
  static const int pairs[5][2] = {{POSENC_DTYPE_F32, POSENC_DTYPE_F32},
                                  {POSENC_DTYPE_BF16, POSENC_DTYPE_BF16},
                                  {POSENC_DTYPE_F16, POSENC_DTYPE_F16},
                                  {POSENC_DTYPE_F32, POSENC_DTYPE_BF16},
                                  {POSENC_DTYPE_F32, POSENC_DTYPE_F16}};
  static const int bad[4][2] = {{POSENC_DTYPE_BF16, POSENC_DTYPE_F32},
                                {POSENC_DTYPE_F16, POSENC_DTYPE_F32},
                                {POSENC_DTYPE_BF16, POSENC_DTYPE_F16},
                                {POSENC_DTYPE_F16, POSENC_DTYPE_BF16}};
  static const int unknowns[4] = {3, -1, 0x7fffffff, 255};
  const uint8_t b = u8(r);
  const int *p = b % 8 < 5 ? pairs[b % 8] : b % 8 == 5 ? bad[(b >> 3) % 4] : pairs[(b >> 3) % 5];
  c->src.dtype = p[0];
  c->dst.dtype = p[1];
  if (unknown) *(b & 128 ? &c->src.dtype : &c->dst.dtype) = unknowns[(b >> 3) % 4];
}

/* M-RoPE sections for n = R/2 pairs: valid for the flags (HF proportions or arbitrary), or
 * NULL, a sum off by one, a sum that wraps around 2^64, interleaved ones that do not fit. */
static void decode_sections(reader *r, vcall *c, size_t n, int interleaved) {
  size_t *s = c->sections;
  const size_t max1 = (n + 1) / 3, max2 = n / 3;
  const uint8_t mode = u8(r);
  switch (mode % 16) {
    case 15:
      c->sections_null = 1;
      break;
    case 1:
      s[0] = n / 2 + 1, s[1] = n / 4, s[2] = n - n / 2 - n / 4;
      break;
    case 2:
      s[0] = SIZE_MAX - 1, s[1] = 2 + n, s[2] = 0;
      break;
    case 3:
      s[1] = max1 + (u8(r) & 1), s[2] = max2 + (mode >> 4 & 1);
      s[0] = n >= s[1] + s[2] ? n - s[1] - s[2] : 0;
      break;
    case 0:
    case 4:
    case 5:
    case 6:
      s[1] = s[2] = interleaved ? max2 : (n - n / 4) / 2;
      s[0] = n - s[1] - s[2];
      break;
    default:
      s[1] = u8(r) % ((interleaved ? max1 : n) + 1);
      s[2] = u8(r) % ((interleaved ? max2 : n - s[1]) + 1);
      s[0] = n - s[1] - s[2];
      break;
  }
}

/* 3 rows of n M-RoPE positions (temporal, height, width; with POSENC_ROPE_MROPE_GGML a 4th,
 * e: ggml_e_row): text tokens (equal, consecutive),
 * patches (distinct), a special value in one row, repeats; NULL 1/16; for n > MAX_ROWS a
 * 3-element array the call must not read (it must fail) or NULL. */
static int32_t *mrope_positions_of(reader *r, size_t n, int rows) {
  const uint8_t mode = u8(r);
  if (mode % 16 == 15) return NULL;
  if (n > MAX_ROWS) return (mode & 1) ? alloc_i32((size_t)rows) : NULL;
  int32_t *p = alloc_i32((size_t)rows * n);
  int64_t next = mode % 4 == 1 ? special_position(r) : u8(r);
  for (size_t t = 0; t < n; ++t) {
    const uint8_t b = u8(r);
    p[t] = p[n + t] = p[2 * n + t] = wrap32(next);
    switch (b % 8) {
      case 5: /* a patch */
        p[n + t] = wrap32(next + u8(r) % 4);
        p[2 * n + t] = wrap32(next + u8(r) % 5);
        break;
      case 6:
        p[(u8(r) % 3) * n + t] = special_position(r);
        break;
      case 7:
        if (t > 0) p[t] = p[t - 1], p[n + t] = p[n + t - 1], p[2 * n + t] = p[2 * n + t - 1];
        break;
      default:
        break;
    }
    ++next;
  }
  if (rows == 4) ggml_e_row(r, p, n); /* ggml's e row (rope_common.c, as fuzz_mrope's) */
  return p;
}

/* Op flags: bit 0 GPTJ, bit 1 INVERSE, bit 3 F32_ANGLES, bit 4 MROPE_INTERLEAVED and bit 2
 * MROPE_GGML (M-RoPE only), bit 5 DETERMINISTIC, bit 6 POSENC_ROPE_POSITIONS_INT64 (the
 * caller passes int64 positions then, or takes the bit off); bytes from 0xF0 add unknown
 * bits (never POSENC_ROPE_POSITIONS_INT64). */
unsigned views_flags(reader *r, int mrope) {
  const uint8_t b = u8(r);
  if (b >= 0xF0) return (u32(r) | 1u << (b & 31)) & ~ROPE_FLAG_INT64;
  return (b & 1 ? POSENC_ROPE_GPTJ : 0u) | (b & 2 ? POSENC_ROPE_INVERSE : 0u) |
         (b & 8 ? POSENC_ROPE_F32_ANGLES : 0u) | (b & 32 ? POSENC_ROPE_DETERMINISTIC : 0u) |
         (mrope && (b & 16) ? POSENC_ROPE_MROPE_INTERLEAVED : 0u) |
         (mrope && (b & 4) ? POSENC_ROPE_MROPE_GGML : 0u) | (b & 64 ? ROPE_FLAG_INT64 : 0u);
}

/* With POSENC_ROPE_POSITIONS_INT64: the int64 copy of the n positions at p (c->pos64; one
 * outside int32 sometimes: c->bad64); none for NULL positions (the flag a no-op). */
static void views_int64(reader *r, vcall *c, const int32_t *p, size_t n) {
  if (p) c->pos64 = positions64_of(r, p, n, &c->bad64);
}

/* Saturating size arithmetic for the decoded shapes. */
static size_t sat_add(size_t a, size_t b) { return a + b < a ? SIZE_MAX : a + b; }
static size_t sat_mul(size_t a, size_t b) { return b && a > SIZE_MAX / b ? SIZE_MAX : a * b; }

/* The factor families' flags and the change to the computed factors, read early (the input
 * reaches them before it runs out): compute flags bit 0 GPTJ, bit 3 F32_ANGLES, bit 5
 * DETERMINISTIC, M-RoPE bit 1 MROPE_INTERLEAVED; bytes 28-31 mod 32 add INVERSE (a no-op for
 * the compute) or MROPE_INTERLEAVED (refused by posenc_rope_factors_compute); from 0xF0
 * unknown bits. The apply's flags: the factors' (| INVERSE), or one of them flipped, or
 * F32_ANGLES (a no-op for the apply). */
static void decode_factor_flags(reader *r, vcall *c) {
  const int mrope = c->base.family == FAM_MFACTORS;
  const uint8_t cb = u8(r);
  if (cb >= 0xF0)
    c->cflags = (u32(r) | 1u << (cb & 31)) & ~ROPE_FLAG_INT64;
  else
    c->cflags =
        (cb & 1 ? POSENC_ROPE_GPTJ : 0u) | (cb & 8 ? POSENC_ROPE_F32_ANGLES : 0u) |
        (cb & 32 ? POSENC_ROPE_DETERMINISTIC : 0u) |
        (mrope && (cb & 2) ? POSENC_ROPE_MROPE_INTERLEAVED : 0u) |
        (cb % 32 >= 28 ? (cb & 2 ? POSENC_ROPE_INVERSE : POSENC_ROPE_MROPE_INTERLEAVED) : 0u) |
        (cb & 64 ? ROPE_FLAG_INT64 : 0u) | (mrope && (cb & 128) ? POSENC_ROPE_MROPE_GGML : 0u);
  /* the change to the returned factors, and the apply's flags */
  const uint8_t mb = u8(r);
  c->fmut = mb % 16 < 10 ? 0 : mb % 16 - 9; /* 1..6 */
  c->fmut_arg = u8(r);
  if (c->fmut == 1 && (c->fmut_arg & 1)) c->apply_null = 1;
  const uint8_t ab = u8(r);
  if (ab >= 0xF0) {
    c->flags = (u32(r) | 1u << (ab & 31)) & ~ROPE_FLAG_INT64;
  } else {
    c->flags = (c->cflags & FACTOR_FLAGS) | (ab & 2 ? POSENC_ROPE_INVERSE : 0u);
    if (ab & 64) c->flags |= c->cflags & (ROPE_FLAG_INT64 | MROPE_FLAGS); /* no-ops for apply */
    if (ab % 16 == 15) c->flags ^= POSENC_ROPE_GPTJ;                      /* layout mismatch */
    if (ab % 16 == 13) c->flags ^= POSENC_ROPE_DETERMINISTIC;             /* mode mismatch */
    if (ab % 16 == 14) c->flags |= POSENC_ROPE_F32_ANGLES;                /* a no-op for apply */
  }
}

static void decode_factors(reader *r, vcall *c) {
  const int mrope = c->base.family == FAM_MFACTORS;
  const size_t R = c->plan ? posenc_rope_plan_rotary_dim(c->plan) : c->rd;
  /* first_row, row_batch_stride, then n_rows around the rows the apply reads */
  const uint8_t fb = u8(r);
  c->first_row = fb % 8 < 5    ? 0
                 : fb % 8 == 5 ? u8(r) % 4
                 : fb % 8 == 6 ? u8(r) % 8
                               : SIZE_MAX - u8(r);
  const uint8_t sb = u8(r);
  switch (sb % 8) {
    case 4:
      c->rbs = 0;
      break;
    case 5:
      c->rbs = c->n_tokens + u8(r) % 3;
      break;
    case 6:
      c->rbs = u8(r) % 8;
      break;
    case 7:
      c->rbs = (u8(r) & 1) ? SIZE_MAX - u8(r) : HUGE_BASE;
      break;
    default:
      c->rbs = c->n_tokens;
      break;
  }
  size_t rows = c->first_row; /* the rows the apply reads, saturated */
  if (c->n_batch && c->n_tokens)
    rows = sat_add(sat_add(rows, sat_mul(c->n_batch - 1, c->rbs)), c->n_tokens);
  const uint8_t db = u8(r);
  if (rows > 256)
    c->n_rows = u8(r) % 8;
  else if (db % 8 == 5)
    c->n_rows = rows + u8(r) % 4;
  else if (db % 8 == 6 && rows > 0)
    c->n_rows = rows - 1; /* a row short: the apply must fail */
  else if (db % 8 == 7)
    c->n_rows = u8(r) % 8;
  else
    c->n_rows = rows;
  /* the rows' positions (M-RoPE: and the sections) */
  const int prow = mrope_rows(c->cflags);
  if (mrope)
    c->row_pos = mrope_positions_of(r, c->n_rows, prow);
  else
    c->row_pos = positions_of(r, c->n_rows, &c->row_start);
  if (mrope && (c->cflags & POSENC_ROPE_MROPE_GGML))
    decode_ggml_sections(r, c->sections, &c->sections_null, R / 2);
  else if (mrope)
    decode_sections(r, c, R / 2, (c->cflags & POSENC_ROPE_MROPE_INTERLEAVED) != 0);
  if (c->cflags & ROPE_FLAG_INT64)
    views_int64(r, c, c->row_pos,
                c->n_rows > MAX_ROWS ? (size_t)prow : (mrope ? (size_t)prow : 1) * c->n_rows);
  /* storage */
  c->need = factors_bytes_expected(R, c->n_rows, c->cflags & FACTOR_FLAGS);
  const size_t row = row_floats_of(R, c->cflags) * sizeof(float);
  const uint8_t kb = u8(r);
  switch (kb % 8) {
    case 5:
      c->storage_bytes = c->need + u8(r);
      break;
    case 6:
      c->storage_bytes = c->need ? c->need - 1 - u8(r) % 8 : 0;
      break;
    case 7:
      c->storage_bytes = kb & 8 ? (c->need >= row ? c->need - row : 0) : kb & 16 ? 0 : SIZE_MAX;
      break;
    default:
      c->storage_bytes = c->need;
      break;
  }
  c->cap = c->need / sizeof(float) + 8;
  if (c->fmut == 6) { /* a sub-range: data moved on by `shift` rows */
    c->shift = c->fmut_arg % 4;
    if (c->shift > c->first_row || c->shift > c->n_rows) c->shift = 0;
  }
}

call *views_decode(reader *r) {
  vcall *c = calloc(1, sizeof *c);
  if (!c) abort();
  c->base.target = "fuzz_rope_views";
  c->base.family = u8(r) % 4;
  const int fam = c->base.family;
  const uint8_t misc = u8(r);
  const uint8_t which = misc % 32 < 4 ? u8(r) : 0;
  unsigned misalign = 0;
  if (misc % 32 == 1) misalign = 1 + u8(r) % 3;
  if (fam >= FAM_FACTORS) decode_factor_flags(r, c);
  views_plan(r, c);
  views_types(r, c, misc % 32 == 3);
  const size_t R = c->plan ? posenc_rope_plan_rotary_dim(c->plan) : c->rd;
  const uint8_t dshape = u8(r);
  if (dshape % 8 == 7)
    c->head_dim = R ? R - 1 - u8(r) % R : 0; /* D < R: rejected */
  else if (dshape % 8 < 2)
    c->head_dim = R;
  else
    c->head_dim = R + dshape % 8 - 1;
  c->n_batch = count(r, 3, 1);
  c->n_tokens = count(r, 20, 1);
  c->src.n_heads = count(r, 4, 1);
  c->dst.n_heads = c->src.n_heads + (u8(r) % 16 == 0);
  views_layout(r, c, &c->src);
  const uint8_t place = u8(r);
  size_t base = 4 * (size_t)(u8(r) % 3);
  if (place % 8 == 0) { /* in place */
    c->dst = c->src;
  } else {
    views_layout(r, c, &c->dst);
    if (place % 8 == 1) c->dst.dtype = u8(r) & 1 ? c->src.dtype : c->dst.dtype;
  }
  const size_t sb = view_bytes(c, &c->src), db = view_bytes(c, &c->dst);
  const size_t gap = 4 * (size_t)(u8(r) % 3);
  switch (place % 8) {
    case 0:
    case 1: /* the same data */
      c->src.off = c->dst.off = base;
      break;
    case 2: { /* dst starts inside src */
      const size_t k = sb ? u8(r) % sb : 0;
      c->src.off = base;
      c->dst.off = base + k / dsize(c->dst.dtype) * dsize(c->dst.dtype);
      break;
    }
    case 3: /* dst before src */
      c->dst.off = base;
      c->src.off = (base + db + gap + 3) / 4 * 4;
      break;
    default: /* dst after src */
      c->src.off = base;
      c->dst.off = (base + sb + gap + 3) / 4 * 4;
      break;
  }
  if (misc % 32 == 0) (which & 1 ? &c->dst : &c->src)->null_data = 1;
  if (misc % 32 == 1) {
    const int w = which % 3;
    if (w == 0) c->src.off += misalign;
    if (w == 1) c->dst.off += misalign;
    if (w == 2) c->storage_misalign = misalign;
  }
  if (misc % 32 == 2) {
    const int w = which % 4;
    if (w == 0) c->src.null_view = 1;
    if (w == 1) c->dst.null_view = 1;
    if (w == 2) c->factors_out_null = 1;
    if (w == 3) c->storage_null = 1;
  }
  c->base.len = (max_size(c->src.off + sb, c->dst.off + db) + 3) / 4 + 1;
  const size_t N = sat_mul(c->n_batch, c->n_tokens);
  if (fam == FAM_OUT) {
    c->flags = views_flags(r, 0);
    c->positions = positions_of(r, N, &c->start_pos);
    if (c->flags & ROPE_FLAG_INT64) views_int64(r, c, c->positions, N);
  } else if (fam == FAM_MOUT) {
    /* GGML: ggml's four sections and four rows (rope_common.c, as fuzz_mrope's) */
    c->flags = views_flags(r, 1);
    const int rows = mrope_rows(c->flags);
    if (c->flags & POSENC_ROPE_MROPE_GGML)
      decode_ggml_sections(r, c->sections, &c->sections_null, R / 2);
    else
      decode_sections(r, c, R / 2, (c->flags & POSENC_ROPE_MROPE_INTERLEAVED) != 0);
    c->positions = mrope_positions_of(r, N, rows);
    if (c->flags & ROPE_FLAG_INT64)
      views_int64(r, c, c->positions, N <= MAX_ROWS ? (size_t)rows * N : (size_t)rows);
  } else {
    decode_factors(r, c);
  }
  return &c->base;
}
