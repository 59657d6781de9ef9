/* libFuzzer target: the runtime-shaped RoPE entry points (posenc.h, "Runtime-shaped RoPE"):
 * posenc_rope_out (byte 0 % 4 == 0), posenc_mrope_out (1), posenc_rope_factors_compute then
 * posenc_rope_apply (2), posenc_mrope_factors_compute then posenc_rope_apply (3), with
 * posenc_rope_factors_bytes on the way; plans from posenc_rope_plan_create (or _from_freqs,
 * as fuzz_mrope's), posenc_rope_plan_create_ggml (bad parameters included) and
 * posenc_rope_plan_create_scaled.
 *
 * An input decodes (common.h's reader) into: byte 0 the family; byte 1 (misc) a NULL data
 * pointer (misc % 32 == 0), a misaligned pointer (1), a NULL view / factors struct / storage
 * (2) for the view, storage or struct the next byte picks, or an unknown dtype (3); for the
 * factor families, read early so that short inputs reach them: the compute flags
 * (DETERMINISTIC, F32_ANGLES; INVERSE or unknown bits sometimes), a change to the computed
 * posenc_rope_factors before applying them (data or the struct NULL, rotary_dim or
 * row_floats off, the layout flag flipped or unknown bits, a row fewer, or a valid
 * sub-range: data moved on by whole rows) and the apply flags (the factors' | INVERSE, the
 * layout or DETERMINISTIC flipped, F32_ANGLES, unknown bits); the plan (default, ggml
 * parameters or a scaling); the (src, dst) type pair (supported, unsupported, unknown);
 * head_dim (sometimes < R), n_batch, n_tokens and heads (huge 1/256; dst's head count
 * different 1/16); a src view in one of eight layouts ([B, L, H, D], [B, H, L, D], padded,
 * one cache row per token, batch_stride 0, arbitrary strides: overlapping, zero, huge); dst:
 * after src in the arena, before it, in place (src itself), the same data with other strides
 * or type, or starting inside src (partial overlap), with its own layout. Then the op's flags
 * (GPTJ, INVERSE, F32_ANGLES, DETERMINISTIC; unknown bits sometimes) and positions (an array
 * with runs and int32-limit specials, or NULL and a start_pos near INT32_MAX; M-RoPE:
 * sections and 3 rows of text and patch tokens), or for the factor families first_row,
 * row_batch_stride and n_rows (a row short 1/8), the rows' positions (and sections) and
 * storage_bytes (too small 1/4). Tensor data follows as in common.c (past the input's end
 * from a PRNG), incl. NaN, Inf and subnormals.
 *
 * Every call is made with the scalar ISA and every other available one, on a fresh copy of
 * one arena framed by GUARD sentinel floats (and one for the factor storage), the guards
 * poisoned for ASan during the library's calls. Required, else abort():
 *  - every ISA returns the scalar's status (for the compute and for the op / apply);
 *  - an argument posenc.h lists as an error fails, and a call with no such argument succeeds
 *    (scalar; plan creation likewise, with posenc_rope_plan_create_ggml's plan checked
 *    against the header's formula and *plan NULL on error);
 *  - on error nothing is written: arena, guards, factor storage and *factors unchanged;
 *  - compute success: *factors as the header says (data, n_rows, rotary_dim, row_floats,
 *    flags: GPTJ | DETERMINISTIC as made), storage past posenc_rope_factors_bytes and its
 *    guards unchanged, the rows' zero padding zero; posenc_rope_factors_bytes as the header's
 *    layout gives; apply leaves the storage as it is;
 *  - op / apply success: no element outside the dst view changed (src included, unless in
 *    place), no dst element written twice (overlapping head vectors accepted), and each dst
 *    element bitwise (NaN for NaN) the same ISA's in-place form (posenc_rope_f32 / _bf16 /
 *    _f16, posenc_mrope_*) run per batch on a dense copy of src, rounded to dst's type by
 *    kernels/half.h's conversions; the factor path also bitwise posenc_rope_out /
 *    posenc_mrope_out for the same positions (token t of batch b at row first_row +
 *    b * row_batch_stride + t); across ISAs, each rotated element within
 *    rope_element_within of scalar's and the copied elements [R, D) identical; with
 *    POSENC_ROPE_DETERMINISTIC every element, and the factor rows, bitwise scalar's. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/half.h"
#include "rope_common.h"

enum { FAM_OUT, FAM_MOUT, FAM_FACTORS, FAM_MFACTORS };
#define MAX_ROWS 4096                /* positions arrays; larger counts get NULL */
#define MAX_STORAGE (1u << 18)       /* factor storage, floats */
#define STORAGE_SENTINEL 0x7FB4D200u /* signalling-NaN patterns, index-tagged */
#define KNOWN_FLAGS                                                                              \
  (POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE | POSENC_ROPE_F32_ANGLES | POSENC_ROPE_DETERMINISTIC | \
   POSENC_ROPE_MROPE_INTERLEAVED)
/* What posenc_rope_factors records of the flags that made them. */
#define FACTOR_FLAGS ((unsigned)(POSENC_ROPE_GPTJ | POSENC_ROPE_DETERMINISTIC))

typedef unsigned __int128 u128;

/* One posenc_rope_view: offsets in bytes from the arena's start, strides in elements. */
typedef struct view {
  int dtype; /* the value passed (may be no posenc_dtype) */
  size_t off, n_heads, ts, hs, bs;
  int null_view, null_data;
} view;

typedef struct vcall {
  call base; /* target, family, len (arena floats), input: common.c's fill_buffer, violation */
  const char *plan_kind;
  posenc_rope_plan *plan;
  size_t rd; /* the rotary_dim asked for */
  double att;
  size_t head_dim, n_batch, n_tokens;
  view src, dst;
  unsigned flags;     /* posenc_rope_out / _mrope_out; apply */
  int32_t *positions; /* FAM_OUT: n_batch * n_tokens or NULL; FAM_MOUT: 3 rows */
  int32_t start_pos;
  size_t sections[3];
  int sections_null;
  /* the factor families */
  size_t n_rows;
  int32_t *row_pos; /* FAM_FACTORS: n_rows or NULL; FAM_MFACTORS: 3 rows */
  int32_t row_start;
  unsigned cflags;
  int factors_out_null, storage_null;
  unsigned storage_misalign;
  size_t storage_bytes, need, cap; /* cap: storage floats between the guards */
  size_t first_row, rbs;
  int fmut, apply_null; /* the change to the factors before applying them */
  size_t shift;         /* fmut sub-range: rows the data moves on */
  unsigned fmut_arg;
} vcall;

/* ---------------------------------------------------------------------- small helpers */

static int dtype_known(int d) {
  return d == POSENC_DTYPE_F32 || d == POSENC_DTYPE_BF16 || d == POSENC_DTYPE_F16;
}
static size_t dsize(int d) { return d == POSENC_DTYPE_F32 ? 4 : 2; }
static int pair_supported(int x, int y) {
  return dtype_known(x) && dtype_known(y) && (x == y || x == POSENC_DTYPE_F32);
}

static uint32_t float_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static float widen(int dtype, uint32_t bits) {
  if (dtype == POSENC_DTYPE_F32) return posenc_bits_float(bits);
  return dtype == POSENC_DTYPE_BF16 ? posenc_bf16_to_f32((uint16_t)bits)
                                    : posenc_f16_to_f32((uint16_t)bits);
}

/* Bit-identical, any NaN for a NaN (posenc.h). */
static int same_elem(int dtype, uint32_t a, uint32_t b) {
  return a == b || (isnan(widen(dtype, a)) && isnan(widen(dtype, b)));
}

static uint32_t load_bits(const void *p, size_t size) {
  if (size == 4) {
    uint32_t b;
    memcpy(&b, p, 4);
    return b;
  }
  uint16_t h;
  memcpy(&h, p, 2);
  return h;
}

/* An element of a 32-bit value narrowed to dst's type as the library narrows. */
static uint32_t narrow(int src, int dst, uint32_t bits) {
  if (src == dst || src != POSENC_DTYPE_F32) return bits;
  const float f = posenc_bits_float(bits);
  return dst == POSENC_DTYPE_BF16 ? posenc_f32_to_bf16(f) : posenc_f32_to_f16(f);
}

static int32_t *alloc_i32(size_t n) {
  int32_t *p = calloc(n ? n : 1, sizeof *p);
  if (!p) abort();
  return p;
}

/* Tensor data: two input bytes per float while they last (1/16 special), then a PRNG. */
static float data_float(reader *r) {
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

/* ---------------------------------------------------------------------- view geometry */

static size_t dim_count(const vcall *c, const view *v, int d) {
  return d == 0 ? c->n_batch : d == 1 ? c->n_tokens : v->n_heads;
}
static size_t dim_stride(const view *v, int d) { return d == 0 ? v->bs : d == 1 ? v->ts : v->hs; }

/* Elements from the view's first to one past its last (128-bit: exact for any values);
 * 0 when a count is 0. */
static u128 view_extent(const vcall *c, const view *v) {
  u128 e = c->head_dim;
  for (int d = 0; d < 3; ++d) {
    const size_t n = dim_count(c, v, d);
    if (n == 0) return 0;
    e += (u128)(n - 1) * dim_stride(v, d);
  }
  return e;
}

/* The same for sizing the arena: huge counts and strides left out (a call using them must
 * fail; if it does not, ASan sees the access). */
static size_t view_bytes(const vcall *c, const view *v) {
  size_t e = c->head_dim;
  for (int d = 0; d < 3; ++d) {
    const size_t n = dim_count(c, v, d), s = dim_stride(v, d);
    if (n == 0) return 0;
    if (n > 1 && n < HUGE_BASE && s < HUGE_BASE) e += (n - 1) * s;
  }
  return e * (dtype_known(v->dtype) ? dsize(v->dtype) : 4);
}

/* posenc.h: the dimensions with a count above 1, sorted by stride, nest (each stride at
 * least the extent of the dimensions inside it, the smallest at least head_dim). */
static int view_nested(const vcall *c, const view *v) {
  int idx[3], m = 0;
  for (int d = 0; d < 3; ++d)
    if (dim_count(c, v, d) > 1) {
      int j = m++;
      for (; j > 0 && dim_stride(v, idx[j - 1]) > dim_stride(v, d); --j) idx[j] = idx[j - 1];
      idx[j] = d;
    }
  u128 inner = c->head_dim;
  for (int j = 0; j < m; ++j) {
    const size_t s = dim_stride(v, idx[j]);
    if (s < inner) return 0;
    inner += (u128)(dim_count(c, v, idx[j]) - 1) * s;
  }
  return 1;
}

static size_t elem_off(const view *v, size_t b, size_t t, size_t h, size_t d) {
  return v->off + (b * v->bs + t * v->ts + h * v->hs + d) * dsize(v->dtype);
}

/* The in-place case of posenc_rope_out: the same data, type and strides. */
static int in_place(const vcall *c) {
  const view *s = &c->src, *d = &c->dst;
  return !s->null_data && !d->null_data && s->off == d->off && s->dtype == d->dtype &&
         s->ts == d->ts && s->hs == d->hs && (c->n_batch <= 1 || s->bs == d->bs);
}

/* ---------------------------------------------------------------------- decoding */

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

static void decode_plan(reader *r, vcall *c) {
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
static void decode_layout(reader *r, const vcall *c, view *v) {
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
static void decode_types(reader *r, vcall *c, int unknown) {
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

static int sections_valid(const vcall *c, size_t n, int interleaved) {
  const size_t *s = c->sections;
  if (c->sections_null || s[0] > n || s[1] > n || s[2] > n || s[0] + s[1] + s[2] != n) return 0;
  return !interleaved || ((s[1] == 0 || 3 * s[1] - 2 < n) && (s[2] == 0 || 3 * s[2] - 1 < n));
}

/* 3 rows of n M-RoPE positions (temporal, height, width): text tokens (equal, consecutive),
 * patches (distinct), a special value in one row, repeats; NULL 1/16; for n > MAX_ROWS a
 * 3-element array the call must not read (it must fail) or NULL. */
static int32_t *mrope_positions_of(reader *r, size_t n) {
  const uint8_t mode = u8(r);
  if (mode % 16 == 15) return NULL;
  if (n > MAX_ROWS) return (mode & 1) ? alloc_i32(3) : NULL;
  int32_t *p = alloc_i32(3 * n);
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
  return p;
}

/* Op flags: bit 0 GPTJ, bit 1 INVERSE, bit 3 F32_ANGLES, bit 4 MROPE_INTERLEAVED (M-RoPE
 * only), bit 5 DETERMINISTIC; bytes from 0xF0 add unknown bits. */
static unsigned decode_flags(reader *r, int mrope) {
  const uint8_t b = u8(r);
  if (b >= 0xF0) return u32(r) | (1u << (b & 31));
  return (b & 1 ? POSENC_ROPE_GPTJ : 0u) | (b & 2 ? POSENC_ROPE_INVERSE : 0u) |
         (b & 8 ? POSENC_ROPE_F32_ANGLES : 0u) | (b & 32 ? POSENC_ROPE_DETERMINISTIC : 0u) |
         (mrope && (b & 16) ? POSENC_ROPE_MROPE_INTERLEAVED : 0u);
}

/* Saturating size arithmetic for the decoded shapes. */
static size_t sat_add(size_t a, size_t b) { return a + b < a ? SIZE_MAX : a + b; }
static size_t sat_mul(size_t a, size_t b) { return b && a > SIZE_MAX / b ? SIZE_MAX : a * b; }

/* posenc_rope_factors_bytes as posenc.h describes the rows: cos then sin, each padded with
 * zeros to a multiple of 16 floats (NEOX: R/2 of each, GPTJ: R); flags GPTJ and
 * DETERMINISTIC only (0 for others, and for n_rows 0). */
static size_t row_floats_of(size_t rd, unsigned layout) {
  const size_t per = (layout & POSENC_ROPE_GPTJ) ? 2 : 1;
  return 2 * ((per * (rd / 2) + 15) / 16 * 16);
}
static size_t factors_bytes_expected(size_t rd, size_t n_rows, unsigned flags) {
  if (rd < 2 || rd % 2 || rd > ((size_t)1 << 20) || (flags & ~FACTOR_FLAGS)) return 0;
  const u128 b = (u128)n_rows * row_floats_of(rd, flags) * sizeof(float);
  return b > SIZE_MAX ? 0 : (size_t)b;
}

/* The factor families' flags and the change to the computed factors, read early (the input
 * reaches them before it runs out): compute flags bit 0 GPTJ, bit 3 F32_ANGLES, bit 5
 * DETERMINISTIC, M-RoPE bit 1 MROPE_INTERLEAVED; bytes 28-31 mod 32 add INVERSE (not said to
 * be valid) or MROPE_INTERLEAVED (refused by posenc_rope_factors_compute); from 0xF0 unknown
 * bits. The apply's flags: the factors' (| INVERSE), or one of them flipped, or F32_ANGLES. */
static void decode_factor_flags(reader *r, vcall *c) {
  const int mrope = c->base.family == FAM_MFACTORS;
  const uint8_t cb = u8(r);
  if (cb >= 0xF0)
    c->cflags = u32(r) | (1u << (cb & 31));
  else
    c->cflags =
        (cb & 1 ? POSENC_ROPE_GPTJ : 0u) | (cb & 8 ? POSENC_ROPE_F32_ANGLES : 0u) |
        (cb & 32 ? POSENC_ROPE_DETERMINISTIC : 0u) |
        (mrope && (cb & 2) ? POSENC_ROPE_MROPE_INTERLEAVED : 0u) |
        (cb % 32 >= 28 ? (cb & 2 ? POSENC_ROPE_INVERSE : POSENC_ROPE_MROPE_INTERLEAVED) : 0u);
  /* the change to the returned factors, and the apply's flags */
  const uint8_t mb = u8(r);
  c->fmut = mb % 16 < 10 ? 0 : mb % 16 - 9; /* 1..6 */
  c->fmut_arg = u8(r);
  if (c->fmut == 1 && (c->fmut_arg & 1)) c->apply_null = 1;
  const uint8_t ab = u8(r);
  if (ab >= 0xF0) {
    c->flags = u32(r) | (1u << (ab & 31));
  } else {
    c->flags = (c->cflags & FACTOR_FLAGS) | (ab & 2 ? POSENC_ROPE_INVERSE : 0u);
    if (ab % 16 == 15) c->flags ^= POSENC_ROPE_GPTJ;          /* layout mismatch */
    if (ab % 16 == 13) c->flags ^= POSENC_ROPE_DETERMINISTIC; /* mode mismatch */
    if (ab % 16 == 14) c->flags |= POSENC_ROPE_F32_ANGLES;    /* refused by apply */
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
  if (mrope)
    c->row_pos = mrope_positions_of(r, c->n_rows);
  else
    c->row_pos = positions_of(r, c->n_rows, &c->row_start);
  if (mrope) decode_sections(r, c, R / 2, (c->cflags & POSENC_ROPE_MROPE_INTERLEAVED) != 0);
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

static call *decode(reader *r) {
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
  decode_plan(r, c);
  decode_types(r, c, misc % 32 == 3);
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
  decode_layout(r, c, &c->src);
  const uint8_t place = u8(r);
  size_t base = 4 * (size_t)(u8(r) % 3);
  if (place % 8 == 0) { /* in place */
    c->dst = c->src;
  } else {
    decode_layout(r, c, &c->dst);
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
    c->flags = decode_flags(r, 0);
    c->positions = positions_of(r, N, &c->start_pos);
  } else if (fam == FAM_MOUT) {
    c->flags = decode_flags(r, 1);
    decode_sections(r, c, R / 2, (c->flags & POSENC_ROPE_MROPE_INTERLEAVED) != 0);
    c->positions = mrope_positions_of(r, N);
  } else {
    decode_factors(r, c);
  }
  return &c->base;
}

/* ---------------------------------------------------------------------- expectations */

/* Errors posenc.h lists for the views of posenc_rope_out / _mrope_out / posenc_rope_apply.
 * *sure: an error whatever the counts; *listed: an error at least with work to do (some are
 * not said to be checked for a no-op call, which then may succeed). */
static void view_errors(const vcall *c, int *sure, int *listed) {
  const view *s = &c->src, *d = &c->dst;
  const int work = c->n_batch && c->n_tokens && s->n_heads;
  int any = 0;
  if (s->null_view || d->null_view) {
    *sure = *listed = 1;
    return;
  }
  any |= !pair_supported(s->dtype, d->dtype) || s->n_heads != d->n_heads;
  if (work && !any) {
    const size_t xs = dsize(s->dtype), ys = dsize(d->dtype);
    const u128 se = view_extent(c, s), de = view_extent(c, d);
    any |= s->null_data || d->null_data || s->off % xs || d->off % ys;
    any |= se * xs > PTRDIFF_MAX || de * ys > PTRDIFF_MAX || !view_nested(c, d);
    if (!in_place(c) && !s->null_data && !d->null_data) /* address ranges intersect */
      any |= (u128)s->off < (u128)d->off + de * ys && (u128)d->off < (u128)s->off + se * xs;
  }
  if (work && any) *sure = 1;
  if (any) *listed = 1;
}

/* posenc_rope_out / _mrope_out: sure and listed errors (as view_errors). */
static void op_errors(const vcall *c, int *sure, int *listed) {
  const int mrope = c->base.family == FAM_MOUT;
  const size_t R = posenc_rope_plan_rotary_dim(c->plan);
  const unsigned known =
      mrope ? KNOWN_FLAGS : KNOWN_FLAGS & ~(unsigned)POSENC_ROPE_MROPE_INTERLEAVED;
  const int work = c->n_batch && c->n_tokens && c->src.n_heads;
  if (!c->plan || (c->flags & ~known) || c->head_dim < R ||
      (u128)c->n_batch * c->n_tokens > SIZE_MAX)
    *sure = 1;
  if (mrope && !sections_valid(c, R / 2, (c->flags & POSENC_ROPE_MROPE_INTERLEAVED) != 0))
    *sure = 1;
  int run = 0;
  if (mrope)
    run = !c->positions && c->n_batch && c->n_tokens;
  else
    run = !c->positions && c->n_tokens &&
          (int64_t)c->start_pos + (int64_t)(c->n_tokens - 1) > (int64_t)INT32_MAX;
  if (run) *listed = 1;
  if (run && work) *sure = 1;
  /* A count that no positions array or view could hold, with nothing to do (no heads): not
   * said to be an error, but posenc_mrope_out refuses 3 rows of positions beyond size_t. */
  if (c->n_batch >= HUGE_BASE || c->n_tokens >= HUGE_BASE) *listed = 1;
  if (*sure) *listed = 1;
  view_errors(c, sure, listed);
}

/* The compute: sure and listed errors. INVERSE among the compute flags is listed (posenc.h
 * leaves it to the apply) but not sure. */
static void compute_errors(const vcall *c, int *sure, int *listed) {
  const int mrope = c->base.family == FAM_MFACTORS;
  const unsigned known = FACTOR_FLAGS | POSENC_ROPE_F32_ANGLES |
                         (mrope ? (unsigned)POSENC_ROPE_MROPE_INTERLEAVED : 0u);
  const size_t R = posenc_rope_plan_rotary_dim(c->plan);
  if (!c->plan || c->factors_out_null || (c->cflags & ~(known | POSENC_ROPE_INVERSE))) *sure = 1;
  if (c->cflags & POSENC_ROPE_INVERSE) *listed = 1;
  if (c->n_rows > 0 && (c->storage_null || c->storage_misalign || c->storage_bytes < c->need))
    *sure = 1;
  if (mrope) {
    if (!sections_valid(c, R / 2, (c->cflags & POSENC_ROPE_MROPE_INTERLEAVED) != 0)) *sure = 1;
    if (!c->row_pos && c->n_rows > 0) *sure = 1;
  } else if (!c->row_pos && c->n_rows > 0 &&
             (int64_t)c->row_start + (int64_t)(c->n_rows - 1) > (int64_t)INT32_MAX) {
    *sure = 1;
  }
  if (*sure) *listed = 1;
}

/* The apply of factors g: sure and listed errors. */
static void apply_errors(const vcall *c, const posenc_rope_factors *g, size_t first_row, int *sure,
                         int *listed) {
  const int work = c->n_batch && c->n_tokens && c->src.n_heads;
  if (c->apply_null) {
    *sure = *listed = 1;
    return;
  }
  const size_t rd = g->rotary_dim;
  /* flags other than factors->flags (| INVERSE); factors->flags with other bits than the
   * compute records: not said, but no valid struct has them */
  if (g->flags & ~FACTOR_FLAGS) *listed = 1;
  if ((c->flags & ~(unsigned)POSENC_ROPE_INVERSE) != g->flags || rd < 2 || rd % 2 ||
      rd > ((size_t)1 << 20) || c->head_dim < rd || g->row_floats != row_floats_of(rd, g->flags) ||
      (u128)c->n_batch * c->n_tokens > SIZE_MAX)
    *sure = 1;
  if (work) {
    const u128 last = (u128)first_row + (u128)(c->n_batch - 1) * c->rbs + (c->n_tokens - 1);
    if (!g->data || last >= g->n_rows) *sure = 1;
  }
  if (*sure) *listed = 1;
  view_errors(c, sure, listed);
}

/* ---------------------------------------------------------------------- running */

typedef struct run {
  float *arena;   /* GUARD + len + GUARD */
  float *storage; /* GUARD + cap + GUARD */
  float *after_compute;
  posenc_rope_factors f, g; /* as computed; as applied */
  size_t first_row;         /* as applied */
  posenc_status cst, st;
  int computed; /* the factor families: the compute succeeded and the apply ran */
} run;

static void fill_storage(const vcall *c, float *buf) {
  for (size_t i = 0; i < c->cap + 2 * GUARD; ++i)
    buf[i] = posenc_bits_float(STORAGE_SENTINEL ^ (uint32_t)i);
}

static posenc_rope_view make_view(const view *v, float *arena) {
  return (posenc_rope_view){v->null_data ? NULL : (char *)arena + v->off,
                            (posenc_dtype)v->dtype,
                            v->n_heads,
                            v->ts,
                            v->hs,
                            v->bs};
}

/* The factors as applied: the computed ones, changed as decoded. */
static posenc_rope_factors mutate(const vcall *c, posenc_rope_factors g, size_t *first_row) {
  *first_row = c->first_row;
  switch (c->fmut) {
    case 1:
      g.data = NULL;
      break;
    case 2:
      g.rotary_dim += c->fmut_arg & 1 ? 2 : 1;
      break;
    case 3:
      g.row_floats += c->fmut_arg & 1 ? 16 : (size_t)-16;
      break;
    case 4:
      g.flags = c->fmut_arg & 1 ? g.flags ^ POSENC_ROPE_GPTJ : g.flags | 4u << (c->fmut_arg % 8);
      break;
    case 5:
      if (g.n_rows) g.n_rows -= 1;
      break;
    case 6: /* a valid sub-range */
      if (g.data) g.data += c->shift * g.row_floats;
      g.n_rows -= c->shift;
      *first_row -= c->shift;
      break;
    default:
      break;
  }
  return g;
}

static void run_call(const vcall *c, posenc_isa isa, run *out) {
  const size_t total = 2 * GUARD + c->base.len;
  fill_buffer(&c->base, out->arena);
  if (posenc_set_isa(isa) != POSENC_OK) abort();
  float *arena = out->arena + GUARD;
  const posenc_rope_view s = make_view(&c->src, arena), d = make_view(&c->dst, arena);
  const posenc_rope_view *sp = c->src.null_view ? NULL : &s, *dp = c->dst.null_view ? NULL : &d;
  const size_t *sections = c->sections_null ? NULL : c->sections;
  out->computed = 0;
  POISON(out->arena, GUARD * sizeof(float));
  POISON(out->arena + GUARD + c->base.len, GUARD * sizeof(float));
  switch (c->base.family) {
    case FAM_OUT:
      out->st = posenc_rope_out(c->plan, c->head_dim, c->n_batch, c->n_tokens, c->positions,
                                c->start_pos, sp, dp, c->flags);
      break;
    case FAM_MOUT:
      out->st = posenc_mrope_out(c->plan, sections, c->head_dim, c->n_batch, c->n_tokens,
                                 c->positions, sp, dp, c->flags);
      break;
    default: {
      fill_storage(c, out->storage);
      void *storage = c->storage_null ? NULL : (char *)(out->storage + GUARD) + c->storage_misalign;
      memset(&out->f, 0xA5, sizeof out->f);
      POISON(out->storage, GUARD * sizeof(float));
      POISON(out->storage + GUARD + c->cap, GUARD * sizeof(float));
      posenc_rope_factors *fo = c->factors_out_null ? NULL : &out->f;
      out->cst = c->base.family == FAM_FACTORS
                     ? posenc_rope_factors_compute(c->plan, c->n_rows, c->row_pos, c->row_start,
                                                   c->cflags, storage, c->storage_bytes, fo)
                     : posenc_mrope_factors_compute(c->plan, sections, c->n_rows, c->row_pos,
                                                    c->cflags, storage, c->storage_bytes, fo);
      UNPOISON(out->storage, (c->cap + 2 * GUARD) * sizeof(float));
      out->st = out->cst;
      if (out->cst != POSENC_OK) break;
      memcpy(out->after_compute, out->storage, (c->cap + 2 * GUARD) * sizeof(float));
      out->g = mutate(c, out->f, &out->first_row);
      out->computed = 1;
      POISON(out->storage, GUARD * sizeof(float));
      POISON(out->storage + GUARD + c->cap, GUARD * sizeof(float));
      out->st = posenc_rope_apply(c->apply_null ? NULL : &out->g, out->first_row, c->rbs,
                                  c->head_dim, c->n_batch, c->n_tokens, sp, dp, c->flags);
      UNPOISON(out->storage, (c->cap + 2 * GUARD) * sizeof(float));
      break;
    }
  }
  UNPOISON(out->arena, total * sizeof(float));
}

/* ---------------------------------------------------------------------- checks */

/* The first 16-bit unit of two GUARD-framed buffers of `floats` floats that differs, and
 * an abort naming it; returns if none. */
static void expect_same(const vcall *c, const char *isa, const char *what, const float *got,
                        const float *want, size_t floats, const uint8_t *except) {
  for (size_t u = 0; u < 2 * floats; ++u) {
    if (except && u >= 2 * GUARD && u < 2 * floats - 2 * GUARD && except[u - 2 * GUARD]) continue;
    uint16_t a, b;
    memcpy(&a, (const char *)got + 2 * u, 2);
    memcpy(&b, (const char *)want + 2 * u, 2);
    if (a != b) {
      fprintf(stderr, "fuzz_rope_views: %s: 16-bit unit %zu of %zu (guard %d): %04x, was %04x\n",
              what, u, 2 * floats, 2 * GUARD, a, b);
      violation(&c->base, isa, what, u / 2, got[u / 2], want[u / 2]);
    }
  }
}

/* The position of token (b, t) in row k (M-RoPE: 0 temporal, 1 height, 2 width). */
static int32_t token_pos(const vcall *c, size_t b, size_t t, int k) {
  const size_t g = b * c->n_tokens + t, N = c->n_batch * c->n_tokens;
  switch (c->base.family) {
    case FAM_OUT:
      return c->positions ? c->positions[g] : (int32_t)((int64_t)c->start_pos + (int64_t)t);
    case FAM_MOUT:
      return c->positions[(size_t)k * N + g];
    case FAM_FACTORS: {
      const size_t row = c->first_row + b * c->rbs + t;
      return c->row_pos ? c->row_pos[row] : (int32_t)((int64_t)c->row_start + (int64_t)row);
    }
    default:
      return c->row_pos[(size_t)k * c->n_rows + c->first_row + b * c->rbs + t];
  }
}

/* The flags the plan path uses for the call's result. */
static unsigned ref_flags(const vcall *c) {
  if (c->base.family <= FAM_MOUT) return c->flags;
  return (c->cflags & (FACTOR_FLAGS | POSENC_ROPE_F32_ANGLES | POSENC_ROPE_MROPE_INTERLEAVED)) |
         (c->flags & POSENC_ROPE_INVERSE);
}

static int is_mrope(const vcall *c) {
  return c->base.family == FAM_MOUT || c->base.family == FAM_MFACTORS;
}

/* The dst elements of an accepted call against the same ISA's in-place form per batch,
 * on a dense copy of src's batch, narrowed to dst's type: bitwise. */
static void check_in_place_form(const vcall *c, const char *isa, const float *res) {
  const view *s = &c->src, *d = &c->dst;
  const size_t L = c->n_tokens, H = s->n_heads, D = c->head_dim, xs = dsize(s->dtype),
               ys = dsize(d->dtype);
  const char *in = (const char *)(c->base.input), *out = (const char *)(res + GUARD);
  char *tmp = malloc(L * H * D * xs + 4);
  int32_t *pos = alloc_i32(3 * L);
  if (!tmp) abort();
  const unsigned flags = ref_flags(c);
  for (size_t b = 0; b < c->n_batch; ++b) {
    for (size_t t = 0; t < L; ++t)
      for (size_t h = 0; h < H; ++h)
        for (size_t e = 0; e < D; ++e)
          memcpy(tmp + ((t * H + h) * D + e) * xs, in + elem_off(s, b, t, h, e), xs);
    for (int k = 0; k < 3; ++k)
      for (size_t t = 0; t < L; ++t)
        pos[(size_t)k * L + t] = token_pos(c, b, t, is_mrope(c) ? k : 0);
    const posenc_rope_tensor q = {tmp, H, H * D, D};
    posenc_status st;
    if (is_mrope(c))
      st = (s->dtype == POSENC_DTYPE_F32 ? posenc_mrope_f32
            : s->dtype == POSENC_DTYPE_BF16
                ? posenc_mrope_bf16
                : posenc_mrope_f16)(c->plan, c->sections, D, L, pos, &q, NULL, flags);
    else
      st = (s->dtype == POSENC_DTYPE_F32    ? posenc_rope_f32
            : s->dtype == POSENC_DTYPE_BF16 ? posenc_rope_bf16
                                            : posenc_rope_f16)(
          c->plan, D, L, pos, 0, &q, NULL, flags & ~(unsigned)POSENC_ROPE_MROPE_INTERLEAVED);
    if (st != POSENC_OK)
      violation(&c->base, isa, "the in-place form refuses a batch of an accepted call", b, 0, 0);
    for (size_t t = 0; t < L; ++t)
      for (size_t h = 0; h < H; ++h)
        for (size_t e = 0; e < D; ++e) {
          const uint32_t want =
              narrow(s->dtype, d->dtype, load_bits(tmp + ((t * H + h) * D + e) * xs, xs));
          const uint32_t got = load_bits(out + elem_off(d, b, t, h, e), ys);
          if (!same_elem(d->dtype, got, want)) {
            fprintf(stderr,
                    "fuzz_rope_views: batch %zu token %zu (position %ld) head %zu element %zu "
                    "of %zu (R %zu): got %08x, in-place form %08x (src %08x)\n",
                    b, t, (long)pos[t], h, e, D, posenc_rope_plan_rotary_dim(c->plan),
                    (unsigned)got, (unsigned)want,
                    (unsigned)load_bits(in + elem_off(s, b, t, h, e), xs));
            violation(&c->base, isa, "dst element differs from the in-place form",
                      elem_off(d, b, t, h, e) / 4, widen(d->dtype, got), widen(d->dtype, want));
          }
        }
  }
  free(tmp);
  free(pos);
}

/* The factor path: posenc_rope_out / _mrope_out with each token's position, same ISA,
 * bitwise. */
static void check_plan_path(const vcall *c, const char *isa, const float *res, float *buf) {
  const size_t N = c->n_batch * c->n_tokens;
  int32_t *pos = alloc_i32(3 * N);
  for (size_t b = 0; b < c->n_batch; ++b)
    for (size_t t = 0; t < c->n_tokens; ++t)
      for (int k = 0; k < 3; ++k)
        pos[(size_t)k * N + b * c->n_tokens + t] = token_pos(c, b, t, is_mrope(c) ? k : 0);
  fill_buffer(&c->base, buf);
  float *arena = buf + GUARD;
  const posenc_rope_view s = make_view(&c->src, arena), d = make_view(&c->dst, arena);
  const posenc_status st = is_mrope(c)
                               ? posenc_mrope_out(c->plan, c->sections, c->head_dim, c->n_batch,
                                                  c->n_tokens, pos, &s, &d, ref_flags(c))
                               : posenc_rope_out(c->plan, c->head_dim, c->n_batch, c->n_tokens, pos,
                                                 0, &s, &d, ref_flags(c));
  if (st != POSENC_OK)
    violation(&c->base, isa, "posenc_rope_out refuses the views of an accepted apply", 0, 0, 0);
  const size_t ys = dsize(c->dst.dtype);
  for (size_t b = 0; b < c->n_batch; ++b)
    for (size_t t = 0; t < c->n_tokens; ++t)
      for (size_t h = 0; h < c->dst.n_heads; ++h)
        for (size_t e = 0; e < c->head_dim; ++e) {
          const size_t o = elem_off(&c->dst, b, t, h, e);
          const uint32_t got = load_bits((const char *)(res + GUARD) + o, ys);
          const uint32_t want = load_bits((const char *)arena + o, ys);
          if (!same_elem(c->dst.dtype, got, want))
            violation(&c->base, isa, "apply differs from posenc_rope_out at the same positions",
                      o / 4, widen(c->dst.dtype, got), widen(c->dst.dtype, want));
        }
  free(pos);
}

/* Another ISA's dst elements against scalar's: rotated pairs within rope_element_within
 * (POSENC_ROPE_DETERMINISTIC: bitwise, NaN for NaN), the copied elements [R, D) identical. */
static void check_against_scalar(const vcall *c, const char *isa, const float *res,
                                 const float *ref, size_t R, unsigned flags) {
  const int gptj = (flags & POSENC_ROPE_GPTJ) != 0, det = (flags & POSENC_ROPE_DETERMINISTIC) != 0;
  const view *s = &c->src, *d = &c->dst;
  const size_t xs = dsize(s->dtype), ys = dsize(d->dtype), half = R / 2;
  const call storage = {.halves = d->dtype != POSENC_DTYPE_F32,
                        .bf16 = d->dtype == POSENC_DTYPE_BF16};
  const char *in = (const char *)c->base.input, *got_p = (const char *)(res + GUARD),
             *want_p = (const char *)(ref + GUARD);
  for (size_t b = 0; b < c->n_batch; ++b)
    for (size_t t = 0; t < c->n_tokens; ++t)
      for (size_t h = 0; h < s->n_heads; ++h) {
        for (size_t i = 0; i < half; ++i) {
          const size_t eu = gptj ? 2 * i : i, ew = gptj ? 2 * i + 1 : i + half;
          const float in_u = widen(s->dtype, load_bits(in + elem_off(s, b, t, h, eu), xs));
          const float in_w = widen(s->dtype, load_bits(in + elem_off(s, b, t, h, ew), xs));
          for (int j = 0; j < 2; ++j) {
            const size_t o = elem_off(d, b, t, h, j ? ew : eu);
            const float got = widen(d->dtype, load_bits(got_p + o, ys));
            const float want = widen(d->dtype, load_bits(want_p + o, ys));
            if (det ? !same_elem(d->dtype, load_bits(got_p + o, ys), load_bits(want_p + o, ys))
                    : !rope_element_within(&storage, c->att, in_u, in_w, got, want)) {
              fprintf(stderr,
                      "fuzz_rope_views: batch %zu token %zu (position %ld) head %zu pair %zu: "
                      "input u %a v %a, att %a; got %a, scalar %a\n",
                      b, t, (long)token_pos(c, b, t, 0), h, i, (double)in_u, (double)in_w, c->att,
                      (double)got, (double)want);
              violation(&c->base, isa,
                        det ? "deterministic mode: rotated element differs from scalar's"
                            : "rotated element out of tolerance of scalar",
                        o / 4, got, want);
            }
          }
        }
        for (size_t e = R; e < c->head_dim; ++e) {
          const size_t o = elem_off(d, b, t, h, e);
          const uint32_t got = load_bits(got_p + o, ys), want = load_bits(want_p + o, ys);
          if (!same_elem(d->dtype, got, want))
            violation(&c->base, isa, "copied element differs from scalar's", o / 4,
                      widen(d->dtype, got), widen(d->dtype, want));
        }
      }
}

/* The 16-bit units of the arena the accepted call writes (each dst element), counted. */
static uint8_t *dst_units(const vcall *c) {
  const size_t units = 2 * c->base.len, ys = dsize(c->dst.dtype);
  uint8_t *m = calloc(units, 1);
  if (!m) abort();
  for (size_t b = 0; b < c->n_batch; ++b)
    for (size_t t = 0; t < c->n_tokens; ++t)
      for (size_t h = 0; h < c->dst.n_heads; ++h)
        for (size_t e = 0; e < c->head_dim; ++e) {
          const size_t u = elem_off(&c->dst, b, t, h, e) / 2;
          for (size_t k = 0; k < ys / 2; ++k) {
            if (u + k >= units)
              violation(&c->base, "scalar", "harness: dst element outside the arena", u / 2, 0, 0);
            if (m[u + k] == 1)
              violation(&c->base, "scalar", "call with overlapping dst head vectors accepted",
                        (u + k) / 2, 0, 0);
            m[u + k] = 1;
          }
        }
  return m;
}

/* The compute's results: *factors as posenc.h says, the padding zero, nothing written past
 * the rows. */
static void check_computed(const vcall *c, const char *isa, const run *x) {
  const posenc_rope_factors *f = &x->f;
  const size_t R = posenc_rope_plan_rotary_dim(c->plan);
  const unsigned layout = c->cflags & FACTOR_FLAGS;
  const size_t rf = row_floats_of(R, layout);
  float *storage = (float *)((char *)(x->storage + GUARD) + c->storage_misalign);
  if (f->data != (c->storage_null ? NULL : storage) || f->n_rows != c->n_rows ||
      f->rotary_dim != R || f->row_floats != rf || f->flags != layout) {
    fprintf(stderr,
            "fuzz_rope_views: factors {data %p (storage %p), n_rows %zu (%zu), rotary_dim %zu "
            "(%zu), row_floats %zu (%zu), flags %u (%u)}\n",
            (void *)f->data, (void *)storage, f->n_rows, c->n_rows, f->rotary_dim, R, f->row_floats,
            rf, f->flags, layout);
    violation(&c->base, isa, "posenc_rope_factors not as posenc.h describes them", 0, 0, 0);
  }
  const size_t per = (layout & POSENC_ROPE_GPTJ) ? 2 : 1;
  for (size_t row = 0; row < c->n_rows; ++row)
    for (size_t i = per * (R / 2); i < rf / 2; ++i)
      for (int blk = 0; blk < 2; ++blk) {
        const float v = storage[row * rf + blk * (rf / 2) + i];
        if (v != 0.0f) violation(&c->base, isa, "factor row padding not zero", row, v, 0.0f);
      }
  /* nothing past the rows: the bytes from need on, and the guards */
  const size_t floats = c->cap + 2 * GUARD;
  float *pristine = malloc(floats * sizeof *pristine);
  if (!pristine) abort();
  fill_storage(c, pristine);
  const size_t first = (GUARD * sizeof(float) + c->storage_misalign + c->need + 1) / 2;
  for (size_t u = first; u < 2 * floats; ++u)
    if (memcmp((const char *)x->storage + 2 * u, (const char *)pristine + 2 * u, 2))
      violation(&c->base, isa, "factor storage written past posenc_rope_factors_bytes", u / 2,
                x->storage[u / 2], pristine[u / 2]);
  for (size_t u = 0; u < (GUARD * sizeof(float) + c->storage_misalign) / 2; ++u)
    if (memcmp((const char *)x->storage + 2 * u, (const char *)pristine + 2 * u, 2))
      violation(&c->base, isa, "factor storage written before its start", u / 2, 0, 0);
  free(pristine);
}

/* posenc_rope_factors_bytes against the header's row layout. */
static void check_factors_bytes(const vcall *c) {
  const size_t rds[] = {c->rd, posenc_rope_plan_rotary_dim(c->plan), 0, 3, ((size_t)1 << 20) + 2};
  const size_t rows[] = {c->n_rows, 0, 1, SIZE_MAX / 64, SIZE_MAX};
  const unsigned flags[] = {0,
                            POSENC_ROPE_GPTJ,
                            POSENC_ROPE_DETERMINISTIC,
                            POSENC_ROPE_GPTJ | POSENC_ROPE_DETERMINISTIC,
                            POSENC_ROPE_INVERSE,
                            POSENC_ROPE_F32_ANGLES | POSENC_ROPE_GPTJ,
                            1u << 20,
                            c->cflags};
  for (size_t a = 0; a < 5; ++a)
    for (size_t b = 0; b < 5; ++b)
      for (size_t k = 0; k < 8; ++k) {
        const size_t got = posenc_rope_factors_bytes(rds[a], rows[b], flags[k]);
        const size_t want = factors_bytes_expected(rds[a], rows[b], flags[k]);
        if (got != want) {
          fprintf(stderr,
                  "fuzz_rope_views: posenc_rope_factors_bytes(%zu, %zu, %u) = %zu, not %zu\n",
                  rds[a], rows[b], flags[k], got, want);
          violation(&c->base, "-", "posenc_rope_factors_bytes", 0, 0, 0);
        }
      }
}

static void check_status(const vcall *c, const char *what, posenc_status st, int sure, int listed) {
  if (sure && st == POSENC_OK)
    violation(&c->base, "scalar",
              what[0] == 'c' ? "compute: an argument posenc.h lists as an error accepted"
                             : "call with an argument posenc.h lists as an error accepted",
              0, 0, 0);
  if (!listed && st != POSENC_OK)
    violation(
        &c->base, "scalar",
        what[0] == 'c' ? "compute: valid arguments refused" : "call with valid arguments refused",
        0, 0, 0);
}

/* Every check of one ISA's run (scalar: `ref` NULL). */
static void check_run(const vcall *c, const char *isa, const run *x, const run *ref,
                      const float *pristine, uint8_t **written, float *scratch) {
  const int factors = c->base.family >= FAM_FACTORS;
  const size_t total = 2 * GUARD + c->base.len;
  if (ref && (x->cst != ref->cst || x->st != ref->st || x->computed != ref->computed)) {
    fprintf(stderr, "fuzz_rope_views: ISA %s: compute %d, status %d; scalar %d, %d\n", isa,
            (int)x->cst, (int)x->st, (int)ref->cst, (int)ref->st);
    violation(&c->base, isa, "status differs from scalar's", 0, 0, 0);
  }
  if (factors) {
    if (x->cst != POSENC_OK) {
      float *pristine_storage = malloc((c->cap + 2 * GUARD) * sizeof(float));
      if (!pristine_storage) abort();
      fill_storage(c, pristine_storage);
      expect_same(c, isa, "factor storage changed by a failing compute", x->storage,
                  pristine_storage, c->cap + 2 * GUARD, NULL);
      free(pristine_storage);
      posenc_rope_factors pattern;
      memset(&pattern, 0xA5, sizeof pattern);
      if (memcmp(&pattern, &x->f, sizeof pattern))
        violation(&c->base, isa, "*factors changed by a failing compute", 0, 0, 0);
    } else {
      check_computed(c, isa, x);
      if (ref && (c->cflags & POSENC_ROPE_DETERMINISTIC)) /* the rows too: bitwise scalar's */
        for (size_t i = 0; i < c->need / sizeof(float); ++i) {
          const size_t k = GUARD + i; /* storage_misalign is 0: the compute succeeded */
          if (!same_elem(POSENC_DTYPE_F32, float_bits(x->after_compute[k]),
                         float_bits(ref->after_compute[k])))
            violation(&c->base, isa, "deterministic mode: factor differs from scalar's", i,
                      x->after_compute[k], ref->after_compute[k]);
        }
      expect_same(c, isa, "factor storage changed by the apply", x->storage, x->after_compute,
                  c->cap + 2 * GUARD, NULL);
    }
  }
  if (x->st != POSENC_OK) {
    expect_same(c, isa, "buffer changed by a failing call", x->arena, pristine, total, NULL);
    return;
  }
  const int work = c->n_batch && c->n_tokens && c->src.n_heads;
  if (!work) {
    expect_same(c, isa, "buffer changed by a no-op call", x->arena, pristine, total, NULL);
    return;
  }
  if (!*written) *written = dst_units(c);
  expect_same(c, isa, "element outside the dst view changed", x->arena, pristine, total, *written);
  size_t R = posenc_rope_plan_rotary_dim(c->plan);
  if (factors) {
    /* Changed to a valid-looking struct (rotary_dim + 2 or the other layout with the same
     * row_floats: one more pair rotated by the zero padding, or pairs taken from the other
     * layout's factors): no reference. */
    if (x->g.rotary_dim != x->f.rotary_dim || x->g.flags != x->f.flags ||
        x->g.row_floats != x->f.row_floats)
      return;
    check_plan_path(c, isa, x->arena, scratch);
  }
  check_in_place_form(c, isa, x->arena);
  if (ref) check_against_scalar(c, isa, x->arena, ref->arena, R, ref_flags(c));
}

static int fuzz_views(const uint8_t *data, size_t size) {
  reader r = {data, size, 0x9E3779B97F4A7C15ull};
  vcall *c = (vcall *)decode(&r);
  const size_t R = posenc_rope_plan_rotary_dim(c->plan);
  int skip = c->base.len > MAX_ARENA || c->cap > MAX_STORAGE;
  if (c->base.family >= FAM_FACTORS && c->n_rows > MAX_ROWS) skip = 1;
  uint8_t *written = NULL;
  run x[2] = {{0}};
  float *pristine = NULL, *scratch = NULL;
  if (skip) goto done;
  r.rng ^= (uint64_t)u32(&r) << 1 | 1u;
  c->base.input = malloc(c->base.len * sizeof(float));
  if (!c->base.input) abort();
  for (size_t i = 0; i < c->base.len; ++i) c->base.input[i] = data_float(&r);
  const size_t total = 2 * GUARD + c->base.len, sfloats = c->cap + 2 * GUARD;
  pristine = malloc(total * sizeof(float));
  scratch = malloc(total * sizeof(float));
  for (int k = 0; k < 2; ++k) {
    x[k].arena = malloc(total * sizeof(float));
    x[k].storage = malloc(sfloats * sizeof(float));
    x[k].after_compute = malloc(sfloats * sizeof(float));
    if (!x[k].arena || !x[k].storage || !x[k].after_compute) abort();
  }
  if (!pristine || !scratch) abort();
  fill_buffer(&c->base, pristine);

  run_call(c, POSENC_ISA_SCALAR, &x[0]);
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("POSENC_FUZZ_VERBOSE") != NULL;
  if (verbose)
    fprintf(stderr,
            "fuzz_rope_views: family %d status %d (compute %d) plan %s R %zu att %g D %zu B %zu "
            "L %zu H %zu/%zu types %d->%d src off %zu ts %zu hs %zu bs %zu dst off %zu ts %zu "
            "hs %zu bs %zu flags %#x cflags %#x rows %zu first %zu rbs %zu fmut %d arena %zu "
            "sections %zu %zu %zu%s positions %s\n",
            c->base.family, (int)x[0].st, (int)x[0].cst, c->plan_kind, R, c->att, c->head_dim,
            c->n_batch, c->n_tokens, c->src.n_heads, c->dst.n_heads, c->src.dtype, c->dst.dtype,
            c->src.off, c->src.ts, c->src.hs, c->src.bs, c->dst.off, c->dst.ts, c->dst.hs,
            c->dst.bs, c->flags, c->cflags, c->n_rows, c->first_row, c->rbs, c->fmut, c->base.len,
            c->sections[0], c->sections[1], c->sections[2], c->sections_null ? " (NULL)" : "",
            c->positions || c->row_pos ? "array" : "NULL");
  /* the scalar status against posenc.h's errors */
  if (c->base.family <= FAM_MOUT) {
    int sure = 0, listed = 0;
    op_errors(c, &sure, &listed);
    check_status(c, "op", x[0].st, sure, listed);
  } else {
    int sure = 0, listed = 0;
    compute_errors(c, &sure, &listed);
    check_status(c, "compute", x[0].cst, sure, listed);
    check_factors_bytes(c);
    if (x[0].computed) {
      sure = listed = 0;
      apply_errors(c, &x[0].g, x[0].first_row, &sure, &listed);
      check_status(c, "apply", x[0].st, sure, listed);
    }
  }
  check_run(c, "scalar", &x[0], NULL, pristine, &written, scratch);
  for (int isa = 1; isa < POSENC_ISA_COUNT; ++isa) {
    if (!posenc_isa_available((posenc_isa)isa)) continue;
    run_call(c, (posenc_isa)isa, &x[1]);
    check_run(c, posenc_isa_name((posenc_isa)isa), &x[1], &x[0], pristine, &written, scratch);
  }
done:
  for (int k = 0; k < 2; ++k) {
    free(x[k].arena);
    free(x[k].storage);
    free(x[k].after_compute);
  }
  free(pristine);
  free(scratch);
  free(written);
  free(c->base.input);
  posenc_rope_plan_destroy(c->plan);
  free(c->positions);
  free(c->row_pos);
  free(c);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_views(data, size); }
