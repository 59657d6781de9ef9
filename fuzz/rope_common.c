/* Shared parts of the RoPE fuzz targets (rope_common.h). */
#include "rope_common.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Given frequencies of decode_rope_plan_new: mostly in (0, 1], sometimes 0, negative,
 * exactly 1024 (the limit) or past it, NaN, arbitrary bits. */
static double new_freq(reader *r) {
  const uint8_t b = u8(r);
  switch (b % 32) {
    case 0:
      return NAN;
    case 1:
      return nextafter(1024.0, 2048.0); /* past the limit: rejected */
    case 2:
      return b & 32 ? 1024.0 : -1024.0;
    case 3:
      return 0.0;
    case 8:
    case 9:
      return -(double)u16(r) / 1024.0;
    case 10:
      return bits_double(u64(r)); /* mostly rejected */
    default:
      return pow(10000.0, -(double)u8(r) / 128.0);
  }
}

/* fuzz_mrope and fuzz_rerotate plans, mostly valid (the seeds' bytes 4-7 give valid
 * plans): rotary_dim up to 200 (1/32 odd, 1/32 too large, 1/101 zero, 1/32 in [512, 638]:
 * more pairs than POSENC_ROPE_CHUNK, cos/sin in two chunks), base 10000 or another, given
 * frequencies (1/4, new_freq); attention factor mostly 1, sometimes a common one or
 * param's specials. */
posenc_rope_plan *decode_rope_plan_new(reader *r, size_t *rotary) {
  static const double bases[] = {10000.0, 500000.0, 1e6, 2.0, 10.0, 1e4 + 0.5};
  static const double atts[] = {1.0, 1.0, 0.7, 1.3, 1e30, 1e-30};
  size_t rd = 2 * (size_t)(u8(r) % 101);
  const uint8_t shape = u8(r);
  if (shape % 32 == 0) rd += 1;                             /* odd: rejected */
  if (shape % 32 == 1) rd = ((size_t)1 << 20) + 2;          /* too large: rejected */
  if (shape % 32 == 2) rd = 512 + 2 * (size_t)(u8(r) % 64); /* two chunks of pairs */
  *rotary = rd;
  const uint8_t a = u8(r);
  const double att = a % 8 < 6 ? 1.0 : a % 8 == 6 ? atts[(a >> 3) % 6] : param(r, atts, 6);
  posenc_rope_plan *plan = NULL;
  if (shape % 4 == 3 && rd <= 400) {
    double freqs[200];
    for (size_t i = 0; i < rd / 2; ++i) freqs[i] = new_freq(r);
    if (posenc_rope_plan_create_from_freqs(&plan, rd, freqs, att) != POSENC_OK) plan = NULL;
  } else {
    const uint8_t b = u8(r);
    const double base = b % 4 ? 10000.0 : b % 16 < 12 ? bases[(b >> 4) % 6] : param(r, bases, 6);
    if (posenc_rope_plan_create(&plan, rd, base, att) != POSENC_OK) plan = NULL;
  }
  return plan;
}

/* The q and k strides and offsets of a layout (0 [L, H, D], 1 [H, L, D], 2 packed QKV
 * rows, 3 packed rows with K shifted: overlap or interleave, 4-5 arbitrary strides). */
static void decode_rope_layout(reader *r, rope_call *c, uint8_t layout) {
  const size_t D = c->head_dim;
  const size_t L = c->n_tokens < 64 ? c->n_tokens : 1, hq = c->q_heads < 64 ? c->q_heads : 1,
               hk = c->k_heads < 64 ? c->k_heads : 1;
  int huge = 0;
  c->q_off = u8(r) % 4;
  if (layout == 0 || layout == 1) { /* K after Q */
    c->q_ts = layout ? D : hq * D;
    c->q_hs = layout ? L * D : D;
    c->k_ts = layout ? D : hk * D;
    c->k_hs = layout ? L * D : D;
    c->k_off = c->q_off + span(L, c->q_ts, hq, c->q_hs, D) + u8(r) % 3;
  } else if (layout == 2) {
    c->q_ts = c->k_ts = (hq + 2 * hk) * D;
    c->q_hs = c->k_hs = D;
    c->k_off = c->q_off + hq * D;
  } else if (layout == 3) {
    c->q_ts = c->k_ts = (hq + 2 * hk) * D;
    c->q_hs = c->k_hs = D;
    c->k_off = c->q_off + u8(r) % (hq * D + 2);
  } else {
    c->q_ts = stride(r, hq * D, &huge);
    c->q_hs = stride(r, D, &huge);
    c->k_ts = stride(r, hk * D, &huge);
    c->k_hs = stride(r, D, &huge);
    c->k_off = c->q_off + (layout == 4 ? span(L, c->q_ts, hq, c->q_hs, D) : 0) + u8(r) % 5;
  }
}

/* The head dimension and the q and k views of a RoPE call (fuzz_rerotate: the q view is
 * the keys) for a plan of rotary_dim rd, and the arena size they need. */
void decode_rope_views(reader *r, rope_call *c, size_t rd) {
  const uint8_t dshape = u8(r);
  if (dshape % 8 == 0)
    c->head_dim = rd ? rd - 1 - u8(r) % rd : 0; /* D < R: rejected */
  else if (dshape % 8 == 1)
    c->head_dim = rd; /* the common R = D */
  else
    c->head_dim = rd + dshape % 8 - 1;
  const size_t D = c->head_dim;
  c->n_tokens = count(r, 40, 1);
  c->q_heads = count(r, 6, 1);
  c->k_heads = count(r, 6, 1);
  c->with_k = u8(r) % 4 != 0;
  decode_rope_layout(r, c, u8(r) % 6);
  c->base.len = max_size(c->q_off + span(c->n_tokens, c->q_ts, c->q_heads, c->q_hs, D),
                         c->k_off + span(c->n_tokens, c->k_ts, c->k_heads, c->k_hs, D)) +
                1;
  if (c->base.halves) c->base.len = (c->base.len + 1) / 2; /* two 16-bit elements a float */
}

/* fuzz_mrope and fuzz_rerotate flags: bit 0 GPTJ, bit 3 F32_ANGLES (the bytes of the seeds,
 * mostly 4-7, keep accurate angles); mrope: bit 1 MROPE_INTERLEAVED, bit 4 INVERSE;
 * rerotate: bytes 28-31 mod 32 add INVERSE or MROPE_INTERLEAVED (refused there); 1/16 with
 * unknown bits as flags_of. */
unsigned new_rope_flags(reader *r, int mrope) {
  const uint8_t b = u8(r);
  if (b >= 0xF0) return (u32(r) | 1u << (b & 31)) & ~ROPE_FLAG_INT64; /* unknown bits (maybe) */
  unsigned f = (b & 1 ? POSENC_ROPE_GPTJ : 0u) | (b & 8 ? POSENC_ROPE_F32_ANGLES : 0u);
  if (mrope)
    f |= (b & 2 ? POSENC_ROPE_MROPE_INTERLEAVED : 0u) | (b & 16 ? POSENC_ROPE_INVERSE : 0u) |
         (b & 32 ? POSENC_ROPE_MROPE_GGML : 0u);
  else if (b % 32 >= 28)
    f |= b & 2 ? POSENC_ROPE_INVERSE : POSENC_ROPE_MROPE_INTERLEAVED;
  return f;
}

int ggml_sections_valid(const size_t *s) {
  const size_t m = (size_t)1 << 20;
  return s[0] <= m && s[1] <= m && s[2] <= m && s[3] <= m && s[0] + s[1] + s[2] > 0;
}

void decode_ggml_sections(reader *r, size_t s[4], int *sections_null, size_t n) {
  const uint8_t mode = u8(r);
  s[0] = s[1] = s[2] = s[3] = 0;
  switch (mode % 8) {
    case 0:
      s[0] = n / 4, s[1] = s[2] = 3 * n / 8, s[3] = n - s[0] - s[1] - s[2];
      break;
    case 1:
      s[1] = s[2] = 5 * n / 16, s[0] = n - s[1] - s[2];
      break;
    case 3:
      s[0] = n / 2, s[1] = n - n / 2;
      break;
    case 4: /* the first three 0 */
      s[3] = u8(r);
      break;
    case 5:
      s[0] = n, s[u8(r) % 4] = ((size_t)1 << 20) + (mode >> 7);
      break;
    case 6:
      *sections_null = 1;
      break;
    default:
      for (int k = 0; k < 4; ++k) s[k] = u8(r) % (n + 2);
      if (mode % 8 == 7) s[3] = (size_t)1 << 20;
      break;
  }
}

void ggml_e_row(reader *r, int32_t *p, size_t n) {
  const uint8_t e = u8(r);
  for (size_t t = 0; t < n; ++t)
    p[3 * n + t] = e % 4 == 1 ? p[t] : e % 4 == 2 && u8(r) % 8 == 7 ? special_position(r) : 0;
}

int64_t *positions64_of(reader *r, const int32_t *p, size_t n, int *bad) {
  const uint8_t b = u8(r);
  int64_t *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) abort();
  for (size_t i = 0; i < n; ++i) v[i] = p[i];
  if (b % 4 == 3 && n) {
    const int64_t k = b >> 5;
    v[(size_t)(b >> 2 & 7) % n] = k == 6   ? INT64_MIN
                                  : k == 7 ? INT64_MAX
                                  : k % 2  ? (int64_t)INT32_MAX + 1 + k
                                           : (int64_t)INT32_MIN - 1 - k;
    *bad = 1;
  }
  return v;
}

void *rope_data(const rope_call *c, float *arena, size_t off) {
  return c->base.halves ? arena_16(&c->base, arena, off) : (void *)arena_f32(&c->base, arena, off);
}

posenc_status invoke_plain_rope(const rope_call *c, float *arena, const int32_t *positions,
                                int32_t start_pos, unsigned flags) {
  const posenc_rope_tensor q = {c->base.null_data ? NULL : rope_data(c, arena, c->q_off),
                                c->q_heads, c->q_ts, c->q_hs};
  const posenc_rope_tensor k = {rope_data(c, arena, c->k_off), c->k_heads, c->k_ts, c->k_hs};
  return (!c->base.halves ? posenc_rope_f32
          : c->base.bf16  ? posenc_rope_bf16
                         : posenc_rope_f16)(c->plan, c->head_dim, c->n_tokens, positions, start_pos,
                                            &q, c->with_k ? &k : NULL, flags);
}

void each_rope_pair(const rope_call *c, rope_pair_fn fn, void *ctx) {
  const size_t half = posenc_rope_plan_rotary_dim(c->plan) / 2;
  const int gptj = c->flags & POSENC_ROPE_GPTJ;
  for (int v = 0; v < 1 + c->with_k; ++v) {
    const size_t off = v ? c->k_off : c->q_off, heads = v ? c->k_heads : c->q_heads;
    const size_t ts = v ? c->k_ts : c->q_ts, hs = v ? c->k_hs : c->q_hs;
    if (heads >= HUGE_BASE || c->n_tokens >= HUGE_BASE) continue;
    for (size_t t = 0; t < c->n_tokens; ++t)
      for (size_t h = 0; h < heads; ++h) {
        if ((t && ts >= HUGE_BASE) || (h && hs >= HUGE_BASE)) continue;
        const size_t b = off + t * ts + h * hs;
        for (size_t i = 0; i < half; ++i)
          fn(ctx, t, h, i, gptj ? b + 2 * i : b + i, gptj ? b + 2 * i + 1 : b + i + half);
      }
  }
}

/* Element e of the views as an arena unit: 16-bit, a misalignment of 2 bytes shifts the
 * elements by one half (an odd one makes the call fail). */
static size_t rope_unit(const rope_call *c, size_t e) {
  return c->base.halves ? e + c->base.misalign / 2 : e;
}

static void touch_pair(void *ctx, size_t t, size_t h, size_t i, size_t u, size_t w) {
  rope_call *c = ctx;
  (void)t, (void)h, (void)i;
  touch(&c->base, rope_unit(c, u));
  touch(&c->base, rope_unit(c, w));
}

void mark_rope_outputs(call *c) { each_rope_pair((rope_call *)c, touch_pair, c); }

/* The call's elements of a GUARD-framed run buffer (first = GUARD) or of its input
 * (first = 0) as floats, indexed as the views count them (16-bit: widened, exact). */
float *rope_elements(const rope_call *c, const float *buf, size_t first) {
  const size_t n = (c->base.halves ? 2 : 1) * c->base.len;
  float *x = malloc(n * sizeof *x);
  if (!x) abort();
  for (size_t i = 0; i < n; ++i) {
    const size_t j = rope_unit(c, i) < n ? rope_unit(c, i) : 0;
    x[i] = c->base.halves ? widen16(&c->base, half_of(buf, 2 * first + j)) : buf[first + i];
  }
  return x;
}

typedef struct rope_check {
  const rope_call *c;
  const char *isa;
  const float *in, *out, *ref; /* rope_elements of the input and the two results */
} rope_check;

int rope_element_within(const call *storage, double att, float in_u, float in_w, float got,
                        float want) {
  /* + 4 FLT_TRUE_MIN: the relative bound cannot cover the absolute rounding of
   * subnormal results (u*c, v*s and their sum, in each variant); see the report. */
  const double bound =
      POSENC_ROPE_SIMD_TOLERANCE * att * (fabs((double)in_u) + fabs((double)in_w)) +
      4.0 * FLT_TRUE_MIN + storage_ulp(storage, finite_mag(got, want));
  /* Intermediate overflow: with att * (|u| + |v|) near FLT_MAX, u*c or v*s may
   * overflow in float in a SIMD variant while the scalar one (products in double)
   * stays finite, so a variant may give an infinity or NaN where scalar gives a
   * finite value or an infinity. NaN in scalar must still be NaN in every variant. */
  const int overflow = att * (finite_mag(in_u, 0.0) + finite_mag(in_w, 0.0)) >= 0x1p126;
  /* An infinite input (and no NaN) gives non-finite outputs whose kind depends on
   * c and s near 0: Inf * 0 is NaN, Inf * tiny is Inf; the variants' c and s may
   * differ there within the tolerance (e.g. at position 0 with a stepped sin of
   * 1e-9 instead of 0). Both must then be non-finite. A NaN input gives NaN. */
  const int nan_in = isnan(in_u) || isnan(in_w);
  const int inf_in = !nan_in && (isinf(in_u) || isinf(in_w));
  return within_range(got, want, bound, storage_max(storage)) ||
         (overflow && !isfinite(got) && !isnan(want)) ||
         (inf_in && !isfinite(got) && !isfinite(want));
}

/* One rotated pair within POSENC_ROPE_SIMD_TOLERANCE * att * (|u| + |v|) of scalar's, plus
 * one ulp of a 16-bit storage type (each variant rounds its float result once, posenc.h). */
static void check_rope_pair(void *ctx, size_t t, size_t h, size_t i, size_t u, size_t w) {
  const rope_check *k = ctx;
  const rope_call *c = k->c;
  const float *in = k->in, *out = k->out, *ref = k->ref;
  const int ok_u = rope_element_within(&c->base, c->att, in[u], in[w], out[u], ref[u]);
  const int ok_w = rope_element_within(&c->base, c->att, in[u], in[w], out[w], ref[w]);
  if (!ok_u || !ok_w)
    fprintf(stderr,
            "%s: RoPE token %zu (position %ld) head %zu pair %zu: input u %a v %a, "
            "att %a, flags %u; got u %a v %a, scalar u %a v %a\n",
            c->base.target, t, c->positions ? (long)c->positions[t] : (long)c->start_pos + (long)t,
            h, i, (double)in[u], (double)in[w], c->att, c->flags, (double)out[u], (double)out[w],
            (double)ref[u], (double)ref[w]);
  if (!ok_u) violation(&c->base, k->isa, "rotated u out of tolerance", u, out[u], ref[u]);
  if (!ok_w) violation(&c->base, k->isa, "rotated v out of tolerance", w, out[w], ref[w]);
}

void check_rope_values(const call *base, const char *isa, const run_result *res,
                       const run_result *scalar) {
  const rope_call *c = (const rope_call *)base;
  float *in = rope_elements(c, c->base.input, 0);
  float *out = rope_elements(c, res->buf, GUARD), *ref = rope_elements(c, scalar->buf, GUARD);
  rope_check k = {c, isa, in, out, ref};
  each_rope_pair(c, check_rope_pair, &k);
  free(in);
  free(out);
  free(ref);
}

void free_rope_call(rope_call *c) {
  posenc_rope_plan_destroy(c->plan);
  free(c->positions);
  free(c->pos64);
}
