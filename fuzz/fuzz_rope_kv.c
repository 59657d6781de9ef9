/* libFuzzer target: RoPE into KV caches and QK-norm (posenc.h, "Runtime-shaped RoPE"):
 * posenc_rope_qknorm (byte 0 % 4 == 0), posenc_rope_out_slots (1), posenc_rope_out_q8_0 (2)
 * and posenc_rope_out_fp8 (3), with fuzz_rope_views' plans (default, ggml parameters,
 * scaled), type pairs, view layouts, flags, positions and tensor data (rope_views.h).
 *
 * An input decodes (rope_kv_decode.c) into: byte 0 the family; byte 1 (misc) a NULL data
 * pointer (misc % 32 == 0), a misaligned one (1), a NULL view / destination / slots struct
 * (2) for the view the next byte picks, or an unknown dtype (3); the plan, the type pair
 * (Q8 / FP8: src f32, else 1/16), head_dim (Q8: a multiple of 32 mostly; D < R; 4096 and
 * 4128), n_batch (QKNORM), n_tokens, heads (dst's other 1/16), src's layout, then
 *  - QKNORM: k (none; k_dst without k_src; its own heads and views, in place or not;
 *    another type pair; k's dst on q's; packed QKV rows with q and k in place), and the two
 *    posenc_qk_norm (none; weight NULL, all 1, all 0, varied, a special value; eps 0, -0,
 *    FLT_MIN, 1e-6.., negative, NaN, Inf; POSENC_QK_NORM_GEMMA; unknown flags);
 *  - SLOTS: posenc_slots (int32 or int64; n_cells from n_tokens to n_tokens + 4, or 0; a
 *    permutation of the cells, tokens skipped by -1, INT32_MIN, -2^40; errors: a duplicate
 *    cell, a cell >= n_cells or past 2^32, NULL index, is_int64 2, NULL slots) and the cache
 *    view: vLLM's [cells, H, D], llama.cpp's [H, cells, D] or any layout, after src or on it;
 *  - Q8 / FP8: rows or slots (as SLOTS; NULL slots: rows), the destination's heads, strides
 *    in bytes (dense, padded, [H, rows, vector], odd, arbitrary: overlapping, huge) and
 *    offset (after src, inside it, misaligned), the fp8 scale (1, 1/448, 1e-30, 1e30, 0, -1,
 *    NaN, Inf, ...);
 * then the flags (GPTJ, INVERSE, F32_ANGLES, DETERMINISTIC; unknown bits, never
 * POSENC_ROPE_POSITIONS_INT64) and positions; SLOTS with the slots' byte's bit 5: the factor
 * form, posenc_rope_factors_compute of rows holding the tokens' positions (first_row 0-3, rows
 * before it elsewhere) then posenc_rope_apply_slots (compute flags without INVERSE sometimes;
 * apply flags with GPTJ or DETERMINISTIC flipped: errors, no-op bits added; NULL factors; a row
 * short). Not covered: int64 positions (fuzz_rope, fuzz_rope_views draw them).
 *
 * Each call runs with the scalar ISA and every other available one on a fresh copy of one
 * arena framed by GUARD sentinel floats, poisoned for ASan during the call. Required, else
 * abort():
 *  - every ISA returns the scalar's status; an argument posenc.h lists as an error fails and
 *    a call with none succeeds (scalar; the lists of each function's doc: rope_kv_decode.c);
 *  - on error the arena and guards are unchanged; on success nothing but the destination
 *    elements is written (src, the cells not named, the bytes between rows and heads), no
 *    byte is an output twice (overlapping outputs accepted);
 *  - QKNORM: a tensor without a norm is bitwise the same ISA's posenc_rope_out; with one,
 *    each element within (2 (D/16 + 3) 2^-24 + 2^-19) att (|n_u| + |n_w|) + two ulps of
 *    the storage type (+ att (|w_u| + |w_v|) 2^-148: x * inv rounded to a float subnormal
 *    before the weight, which the header's relative bound leaves out) of the scalar
 *    posenc_rope_out of n*, the header's formula (in long
 *    double; Gemma: (1 + w) in float), rounded to float (elements [R, D): of n*); heads with
 *    a non-finite or huge (2^60) element, a mean + eps below 2^-100, and elements whose n
 *    (or its pair's sum |n_u| + |n_w|, before att) passes 2^100, or whose bound's base
 *    reaches half the storage type's largest value, are not compared. Every ISA holds that
 *    bound, so each is within twice of scalar's;
 *  - SLOTS: cell index[t] holds, bitwise, token t of the same ISA's posenc_rope_out into a
 *    dense tensor of dst's type; the factor form: the arena (guards included) bitwise what
 *    posenc_rope_out_slots leaves with the same ISA, plan, the tokens' positions and the plan
 *    path's flags, and the factors unchanged by the apply;
 *  - Q8: each block is, bitwise, ggml's quantize_row_q8_0_ref (written here from the header:
 *    amax by ggml's MAX, d = amax / 127 in float as f16, q = roundf(x / d), 0 where that is
 *    undefined) of the same ISA's posenc_rope_out f32 result; FP8: each byte the OCP E4M3
 *    byte (written here: round to nearest even, saturating to +-448, NaN 0x7F) of that
 *    result / scale; with POSENC_ROPE_DETERMINISTIC (the rotation bitwise on every ISA)
 *    every ISA's bytes (and SLOTS' elements) are scalar's.
 * POSENC_FUZZ_VERBOSE=1 prints each decoded call's family and scalar status. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rope_kv.h"

#pragma STDC FP_CONTRACT OFF /* the references' float steps are the header's, unfused */

/* ---------------------------------------------------------------------- the call */

/* SLOTS' factor form: posenc_rope_factors_compute of the rows (heap storage, the active
 * ISA), then posenc_rope_apply_slots; the apply must leave the factors as they are. */
static posenc_status invoke_apply(const kvcall *c, const posenc_rope_view *src,
                                  const posenc_rope_view *dst, const posenc_slots *slots) {
  const vcall *q = &c->q;
  const size_t bytes =
      posenc_rope_factors_bytes(posenc_rope_plan_rotary_dim(q->plan), c->n_rows, c->cflags);
  float *storage = malloc(bytes + 16), *copy = malloc(bytes + 16);
  if (!storage || !copy) abort();
  posenc_rope_factors f;
  posenc_status st = posenc_rope_factors_compute(q->plan, c->n_rows, c->row_pos, c->row_start,
                                                 c->cflags, storage, bytes, &f);
  if (st == POSENC_OK) {
    memcpy(copy, storage, bytes);
    st = posenc_rope_apply_slots(c->factors_null ? NULL : &f, c->first_row, q->head_dim,
                                 q->n_tokens, src, dst, slots, c->aflags);
    if (memcmp(copy, storage, bytes))
      violation(&q->base, posenc_isa_name(posenc_active_isa()),
                "posenc_rope_apply_slots changed its factors", 0, 0, 0);
  }
  free(storage);
  free(copy);
  return st;
}

static posenc_status invoke(const kvcall *c, float *arena) {
  const vcall *q = &c->q, *k = &c->k;
  const posenc_rope_view qs = views_make(&q->src, arena), qd = views_make(&q->dst, arena);
  const posenc_rope_view *qsp = q->src.null_view ? NULL : &qs, *qdp = q->dst.null_view ? NULL : &qd;
  const posenc_slots slots = {c->index_null ? NULL : c->index, c->is64, c->n_cells};
  const posenc_slots *sp = c->use_slots && !c->slots_null ? &slots : NULL;
  const size_t D = q->head_dim, L = q->n_tokens;
  void *qdata = c->qd_null_data ? NULL : (char *)arena + c->qd_off;
  switch (q->base.family) {
    case KV_QKNORM: {
      const posenc_rope_view ks = views_make(&k->src, arena), kd = views_make(&k->dst, arena);
      const posenc_qk_norm qn = {c->qn.null_weight ? NULL : c->qn.weight, c->qn.eps, c->qn.flags};
      const posenc_qk_norm kn = {c->kn.null_weight ? NULL : c->kn.weight, c->kn.eps, c->kn.flags};
      const int pass_ks = c->with_k && !k->src.null_view;
      const int pass_kd = c->with_k ? !k->dst.null_view : c->k_dst_alone;
      return posenc_rope_qknorm(q->plan, D, q->n_batch, L, q->positions, q->start_pos, qsp, qdp,
                                c->qn.present ? &qn : NULL, pass_ks ? &ks : NULL,
                                pass_kd ? &kd : NULL, c->kn.present ? &kn : NULL, q->flags);
    }
    case KV_SLOTS:
      if (c->apply) return invoke_apply(c, qsp, qdp, c->slots_null ? NULL : &slots);
      return posenc_rope_out_slots(q->plan, D, L, q->positions, q->start_pos, qsp, qdp,
                                   c->slots_null ? NULL : &slots, q->flags);
    case KV_Q8: {
      const posenc_q8_0_view d = {qdata, c->qd_heads, c->qd_ts, c->qd_hs};
      return posenc_rope_out_q8_0(q->plan, D, L, q->positions, q->start_pos, qsp,
                                  c->qd_null ? NULL : &d, sp, q->flags);
    }
    default: {
      const posenc_fp8_view d = {qdata, c->qd_heads, c->qd_ts, c->qd_hs};
      return posenc_rope_out_fp8(q->plan, D, L, q->positions, q->start_pos, qsp,
                                 c->qd_null ? NULL : &d, c->scale, sp, q->flags);
    }
  }
}

static void run(const kvcall *c, posenc_isa isa, float *buf, posenc_status *st) {
  const size_t len = c->q.base.len;
  fill_buffer(&c->q.base, buf);
  if (posenc_set_isa(isa) != POSENC_OK) abort();
  POISON(buf, GUARD * sizeof(float));
  POISON(buf + GUARD + len, GUARD * sizeof(float));
  *st = invoke(c, buf + GUARD);
  UNPOISON(buf, (2 * GUARD + len) * sizeof(float));
}

/* ---------------------------------------------------------------------- references */

/* ggml's quantize_row_q8_0_ref on one block, as posenc.h states it: amax as ggml's
 * MAX(amax, |x|) folds it (a > b ? a : b: a NaN kept only when last), d = amax / 127 in
 * float stored as f16, q = roundf(x * id), id = 1 / d (0 for d 0); q = 0 where the
 * conversion to int8 is undefined (NaN, infinite or outside [-128, 127]: after NaN or
 * infinite inputs, or an amax so small that id overflows). */
static void q8_block_ref(const float *x, unsigned char *out) {
  float amax = 0.0f;
  for (int j = 0; j < Q8_BLOCK; ++j) {
    const float a = fabsf(x[j]);
    if (!(amax > a)) amax = a;
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t bits = posenc_f32_to_f16(d);
  memcpy(out, &bits, 2);
  for (int j = 0; j < Q8_BLOCK; ++j) {
    const float v = roundf(x[j] * id);
    out[2 + j] = v >= -128.0f && v <= 127.0f ? (unsigned char)(int8_t)v : 0u;
  }
}

/* The OCP FP8 E4M3 byte of y (posenc.h): nearest, ties to even, from y's exact value
 * (double holds it); beyond 448 (infinities too) +-448; NaN 0x7F; signed zeros. */
static uint8_t fp8_ref(float y) {
  if (isnan(y)) return 0x7F;
  const uint8_t sign = signbit(y) ? 0x80 : 0;
  const double a = fabs((double)y);
  if (a > 448.0) return sign | 0x7E;
  if (a < 0x1p-6) return sign | (uint8_t)nearbyint(a * 512.0); /* k 2^-9; 8 is 2^-6 */
  int e;
  (void)frexp(a, &e); /* a in [2^(e-1), 2^e) */
  const int code = (e + 6) * 8 + (int)nearbyint(ldexp(a, 4 - e)) - 8;
  return sign | (uint8_t)(code > 0x7E ? 0x7E : code);
}

/* posenc_rope_out of src into a dense [B, L, H, D] tensor of type dt with the active ISA,
 * the call's plan, positions and flags; to be freed. */
static unsigned char *rope_out_ref(const kvcall *c, const vcall *t, const posenc_rope_view *src,
                                   size_t nb, int dt) {
  const size_t L = t->n_tokens, H = src->n_heads, D = t->head_dim;
  unsigned char *out = malloc(nb * L * H * D * dsize(dt) + 4);
  if (!out) abort();
  const posenc_rope_view dst = {out, (posenc_dtype)dt, H, H * D, D, L * H * D};
  if (posenc_rope_out(t->plan, D, nb, L, t->positions, t->start_pos, src, &dst, t->flags) !=
      POSENC_OK) {
    fprintf(stderr, "fuzz_rope_kv: posenc_rope_out: %s\n", posenc_last_error());
    violation(&c->q.base, posenc_isa_name(posenc_active_isa()),
              "posenc_rope_out refuses the rotation of an accepted call", 0, 0, 0);
  }
  return out;
}

/* ---------------------------------------------------------------------- checks */

static void mark(const kvcall *c, uint8_t *m, size_t off, size_t n) {
  const size_t bytes = 4 * c->q.base.len;
  for (size_t i = off; i < off + n; ++i) {
    if (i >= bytes)
      violation(&c->q.base, "scalar", "harness: an output outside the arena", i, 0, 0);
    if (m[i]++)
      violation(&c->q.base, "scalar", "accepted call with overlapping outputs (a byte twice)",
                i / 4, 0, 0);
  }
}

/* The elements of token (batch b, row) of t's dst. */
static void mark_view(const kvcall *c, uint8_t *m, const vcall *t, size_t b, size_t row) {
  const view *d = &t->dst;
  for (size_t h = 0; h < d->n_heads; ++h)
    for (size_t e = 0; e < t->head_dim; ++e) mark(c, m, elem_off(d, b, row, h, e), dsize(d->dtype));
}

/* The arena bytes an accepted call writes (and a check that none is written twice). */
static uint8_t *written_bytes(const kvcall *c) {
  const vcall *q = &c->q;
  uint8_t *m = calloc(4 * q->base.len, 1);
  if (!m) abort();
  if (q->base.family == KV_QKNORM) {
    for (int j = 0; j < 1 + c->with_k; ++j)
      for (size_t b = 0; b < q->n_batch; ++b)
        for (size_t t = 0; t < q->n_tokens; ++t) mark_view(c, m, j ? &c->k : q, b, t);
    return m;
  }
  for (size_t t = 0; t < q->n_tokens; ++t) {
    const int64_t row = kv_row(c, t);
    if (row < 0) continue;
    if (q->base.family == KV_SLOTS) {
      mark_view(c, m, q, 0, (size_t)row);
      continue;
    }
    for (size_t h = 0; h < c->qd_heads; ++h)
      mark(c, m, c->qd_off + (size_t)row * c->qd_ts + h * c->qd_hs, kv_vector_bytes(c));
  }
  return m;
}

/* The first byte of two GUARD-framed buffers that differs (mask: bytes of the arena not
 * compared), and an abort naming it. */
static void expect_unchanged(const kvcall *c, const char *isa, const char *what, const float *got,
                             const float *want, const uint8_t *mask) {
  const size_t total = 4 * (2 * GUARD + c->q.base.len);
  const unsigned char *a = (const unsigned char *)got, *b = (const unsigned char *)want;
  for (size_t i = 0; i < total; ++i) {
    if (a[i] == b[i] || (mask && i >= 4 * GUARD && i < total - 4 * GUARD && mask[i - 4 * GUARD]))
      continue;
    fprintf(stderr, "fuzz_rope_kv: %s: byte %zu of %zu (guards %d bytes each): %02x, was %02x\n",
            what, i, total, 4 * GUARD, a[i], b[i]);
    violation(&c->q.base, isa, what, i / 4, got[i / 4], want[i / 4]);
  }
}

/* One tensor of QKNORM (t: q's or k's views) against its reference. */
static void check_tensor(const kvcall *c, const vcall *t, const norm_arg *n, posenc_isa isa,
                         const float *res, const float *pristine) {
  const size_t B = t->n_batch, L = t->n_tokens, H = t->src.n_heads, D = t->head_dim;
  const size_t R = posenc_rope_plan_rotary_dim(t->plan), xs = dsize(t->src.dtype);
  const int ddt = t->dst.dtype;
  const size_t ys = dsize(ddt);
  const char *name = posenc_isa_name(isa);
  if (!B || !L || !H) return; /* nothing written (checked) */
  const unsigned char *in = (const unsigned char *)(pristine + GUARD);
  const unsigned char *out = (const unsigned char *)(res + GUARD);
  const posenc_rope_view s = views_make(&t->src, (float *)(uintptr_t)(pristine + GUARD));
  if (!n->present) { /* posenc_rope_out's result, bitwise */
    unsigned char *ref = rope_out_ref(c, t, &s, B, ddt);
    for (size_t b = 0; b < B; ++b)
      for (size_t k = 0; k < L * H * D; ++k) {
        const size_t tok = k / (H * D), h = k / D % H, e = k % D;
        const uint32_t got = load_bits(out + elem_off(&t->dst, b, tok, h, e), ys);
        const uint32_t want = load_bits(ref + (b * L * H * D + k) * ys, ys);
        if (!same_elem(ddt, got, want))
          violation(&c->q.base, name, "QK-norm without a norm differs from posenc_rope_out",
                    elem_off(&t->dst, b, tok, h, e) / 4, widen(ddt, got), widen(ddt, want));
      }
    free(ref);
    return;
  }
  const size_t N = B * L * H * D;
  long double *ns = malloc((N + 1) * sizeof *ns);
  float *nf = calloc(N + 1, sizeof *nf); /* skipped heads: 0, rotated but not compared */
  uint8_t *skip = calloc(B * L * H + 1, 1);
  if (!ns || !nf || !skip) abort();
  for (size_t v = 0; v < B * L * H; ++v) { /* n* of head vector v */
    const size_t b = v / (L * H), tok = v / H % L, h = v % H;
    long double sum = 0;
    for (size_t e = 0; e < D; ++e) {
      const long double x =
          widen(t->src.dtype, load_bits(in + elem_off(&t->src, b, tok, h, e), xs));
      if (!isfinite(x) || fabsl(x) >= 0x1p60L) skip[v] = 1;
      sum += x * x;
    }
    const long double mean = sum / (long double)D + (long double)n->eps;
    if (skip[v] || !(mean >= 0x1p-100L)) {
      skip[v] = 1;
      continue;
    }
    const long double inv = 1.0L / sqrtl(mean);
    for (size_t e = 0; e < D; ++e) {
      const long double x =
          widen(t->src.dtype, load_bits(in + elem_off(&t->src, b, tok, h, e), xs));
      const float w = n->flags & POSENC_QK_NORM_GEMMA ? 1.0f + n->weight[e] : n->weight[e];
      ns[v * D + e] = x * inv * (long double)w;
      nf[v * D + e] = (float)ns[v * D + e];
      if (!isfinite(nf[v * D + e])) nf[v * D + e] = 0.0f; /* not compared */
    }
  }
  const posenc_rope_view nv = {nf, POSENC_DTYPE_F32, H, H * D, D, L * H * D};
  if (posenc_set_isa(POSENC_ISA_SCALAR) != POSENC_OK) abort();
  unsigned char *ref = rope_out_ref(c, t, &nv, B, ddt);
  if (posenc_set_isa(isa) != POSENC_OK) abort();
  const double eps_n = ((double)D / 16 + 3) * 0x1p-24,
               att = posenc_rope_plan_attention_factor(t->plan);
  const call st = {.halves = ddt != POSENC_DTYPE_F32, .bf16 = ddt == POSENC_DTYPE_BF16};
  const int gptj = (t->flags & POSENC_ROPE_GPTJ) != 0;
  for (size_t v = 0; v < B * L * H; ++v) {
    if (skip[v]) continue;
    const size_t b = v / (L * H), tok = v / H % L, h = v % H;
    for (size_t e = 0; e < D; ++e) {
      const size_t p = e >= R ? e : gptj ? e ^ 1 : e < R / 2 ? e + R / 2 : e - R / 2;
      const double mag = e >= R ? (double)fabsl(ns[v * D + e])
                                : att * (double)(fabsl(ns[v * D + e]) + fabsl(ns[v * D + p]));
      /* x * inv rounds to a float subnormal before the weight: 2^-149 absolute, times |w| */
      const int gm = (n->flags & POSENC_QK_NORM_GEMMA) != 0;
      const double wu = fabs((double)(gm ? 1.0f + n->weight[e] : n->weight[e]));
      const double ww = fabs((double)(gm ? 1.0f + n->weight[p] : n->weight[p]));
      const double sub = (e >= R ? wu : att * (wu + ww)) * 0x1p-148;
      /* Overflow near: of the result, or of the normalised values themselves (a float
       * intermediate, before the attention factor: att 0 makes mag 0 whatever they are, and
       * an infinite n times 0 is NaN where the long double reference gives 0). */
      const double pre = e >= R ? (double)fabsl(ns[v * D + e])
                                : (double)(fabsl(ns[v * D + e]) + fabsl(ns[v * D + p]));
      if (!(mag <= 0x1p100) || !(pre <= 0x1p100) || mag >= storage_max(&st) / 2) continue;
      const size_t o = elem_off(&t->dst, b, tok, h, e);
      const float got = widen(ddt, load_bits(out + o, ys));
      const float want = widen(ddt, load_bits(ref + (v * D + e) * ys, ys));
      const double big = fmax(fabs((double)got), fabs((double)want));
      const double bound = mag * (2 * eps_n + 0x1p-19) +
                           2 * storage_ulp(&st, isfinite(big) ? big : 0) + 0x1p-140 + sub;
      if (got != want && !(fabs((double)got - (double)want) <= bound)) {
        fprintf(stderr,
                "fuzz_rope_kv: QK-norm batch %zu token %zu head %zu element %zu of %zu (R %zu): "
                "got %a, norm then rope %a (n* %La, partner %La, bound %g)\n",
                b, tok, h, e, D, R, (double)got, (double)want, ns[v * D + e], ns[v * D + p], bound);
        violation(&c->q.base, name, "QK-norm element out of the header's bound", o / 4, got, want);
      }
    }
  }
  free(ref);
  free(ns);
  free(nf);
  free(skip);
}

/* A Q8 / FP8 head vector (the vector bytes at got) against want's: q8 d as f16 (any NaN for
 * a NaN), every other byte exact. */
static void compare_vector(const kvcall *c, const char *isa, const char *what,
                           const unsigned char *got, const unsigned char *want, size_t at) {
  const size_t hv = kv_vector_bytes(c);
  for (size_t i = 0; i < hv; ++i) {
    if (c->q.base.family == KV_Q8 && i % Q8_BLOCK_BYTES == 0) {
      if (!same_elem(POSENC_DTYPE_F16, load_bits(got + i, 2), load_bits(want + i, 2)))
        violation(&c->q.base, isa, what, (at + i) / 4, posenc_f16_to_f32(load_bits(got + i, 2)),
                  posenc_f16_to_f32(load_bits(want + i, 2)));
      ++i;
      continue;
    }
    if (got[i] != want[i]) {
      fprintf(stderr, "fuzz_rope_kv: byte %zu of a head vector of %zu: %02x, want %02x\n", i, hv,
              got[i], want[i]);
      violation(&c->q.base, isa, what, (at + i) / 4, got[i], want[i]);
    }
  }
}

/* SLOTS, Q8, FP8 against the same ISA's posenc_rope_out (and, deterministic, scalar's). */
static void check_cache(const kvcall *c, posenc_isa isa, const float *res, const float *scalar,
                        const float *pristine) {
  const vcall *q = &c->q;
  const int fam = q->base.family, dt = fam == KV_SLOTS ? q->dst.dtype : POSENC_DTYPE_F32;
  const size_t H = q->src.n_heads, D = q->head_dim, ys = dsize(dt), hv = kv_vector_bytes(c);
  const char *name = posenc_isa_name(isa);
  size_t rows = 0;
  for (size_t t = 0; t < q->n_tokens; ++t) rows += kv_row(c, t) >= 0;
  if (!rows || !H) return; /* nothing written (checked) */
  const posenc_rope_view s = views_make(&q->src, (float *)(uintptr_t)(pristine + GUARD));
  unsigned char *ref = rope_out_ref(c, q, &s, 1, dt);
  const unsigned char *out = (const unsigned char *)(res + GUARD);
  const unsigned char *sc = scalar ? (const unsigned char *)(scalar + GUARD) : NULL;
  const int det = sc && (q->flags & POSENC_ROPE_DETERMINISTIC);
  unsigned char *want = malloc(hv + 1);
  if (!want) abort();
  for (size_t t = 0; t < q->n_tokens; ++t) {
    const int64_t row = kv_row(c, t);
    if (row < 0) continue;
    for (size_t h = 0; h < H; ++h) {
      const unsigned char *x = ref + (t * H + h) * D * ys;
      if (fam == KV_SLOTS) {
        for (size_t e = 0; e < D; ++e) {
          const size_t o = elem_off(&q->dst, 0, (size_t)row, h, e);
          const uint32_t got = load_bits(out + o, ys), w = load_bits(x + e * ys, ys);
          if (!same_elem(dt, got, w))
            violation(&q->base, name, "slot cell differs from posenc_rope_out's token", o / 4,
                      widen(dt, got), widen(dt, w));
          if (det && !same_elem(dt, got, load_bits(sc + o, ys)))
            violation(&q->base, name, "deterministic mode: slot cell differs from scalar's", o / 4,
                      widen(dt, got), widen(dt, load_bits(sc + o, ys)));
        }
        continue;
      }
      const size_t o = c->qd_off + (size_t)row * c->qd_ts + h * c->qd_hs;
      float *xf = malloc((D + 1) * sizeof *xf);
      if (!xf) abort();
      memcpy(xf, x, D * sizeof *xf);
      if (fam == KV_Q8)
        for (size_t blk = 0; blk < D / Q8_BLOCK; ++blk)
          q8_block_ref(xf + blk * Q8_BLOCK, want + blk * Q8_BLOCK_BYTES);
      else
        for (size_t e = 0; e < D; ++e) want[e] = fp8_ref(xf[e] / c->scale);
      free(xf);
      compare_vector(c, name,
                     fam == KV_Q8 ? "q8_0 block differs from ggml's quantization of posenc_rope_out"
                                  : "fp8 byte differs from E4M3 of posenc_rope_out / scale",
                     out + o, want, o);
      if (det)
        compare_vector(c, name, "deterministic mode: quantized bytes differ from scalar's", out + o,
                       sc + o, o);
    }
  }
  free(want);
  free(ref);
}

/* SLOTS' factor form: the arena (guards included) bitwise as posenc_rope_out_slots leaves
 * it with the same ISA, the plan, the tokens' positions (their rows') and the plan path's
 * flags of the factors (q.flags). */
static void check_apply_slots(const kvcall *c, posenc_isa isa, const float *res) {
  const vcall *q = &c->q;
  const size_t total = 2 * GUARD + q->base.len;
  float *buf = malloc(total * sizeof *buf);
  if (!buf) abort();
  fill_buffer(&q->base, buf);
  const posenc_rope_view s = views_make(&q->src, buf + GUARD), d = views_make(&q->dst, buf + GUARD);
  const posenc_slots slots = {c->index, c->is64, c->n_cells};
  if (posenc_rope_out_slots(q->plan, q->head_dim, q->n_tokens, q->positions, q->start_pos, &s, &d,
                            &slots, q->flags) != POSENC_OK) {
    if (!kv_some_row(c)) { /* an apply that writes nothing need not be a valid plan call: its
                              run of positions may pass INT32_MAX (check_run: nothing written) */
      free(buf);
      return;
    }
    fprintf(stderr, "fuzz_rope_kv: posenc_rope_out_slots: %s\n", posenc_last_error());
    violation(&q->base, posenc_isa_name(isa),
              "posenc_rope_out_slots refuses the call of an accepted apply_slots", 0, 0, 0);
  }
  expect_unchanged(c, posenc_isa_name(isa),
                   "posenc_rope_apply_slots differs from posenc_rope_out_slots", res, buf, NULL);
  free(buf);
}

/* Every check of one ISA's run (scalar: `scalar` NULL). */
static void check_run(const kvcall *c, posenc_isa isa, const float *res, posenc_status st,
                      const float *scalar, const float *pristine, uint8_t **mask) {
  const vcall *q = &c->q;
  const char *name = posenc_isa_name(isa);
  if (st != POSENC_OK) {
    expect_unchanged(c, name, "buffer changed by a failing call", res, pristine, NULL);
    return;
  }
  const size_t heads = max_size(q->src.n_heads, c->with_k ? c->k.src.n_heads : 0);
  if (q->n_batch >= HUGE_BASE || q->n_tokens >= HUGE_BASE || heads >= HUGE_BASE) {
    expect_unchanged(c, name, "buffer changed by a call with a huge count", res, pristine, NULL);
    return;
  }
  if (!*mask) *mask = written_bytes(c);
  expect_unchanged(c, name, "byte outside the destination changed", res, pristine, *mask);
  if (q->base.family == KV_QKNORM) {
    check_tensor(c, q, &c->qn, isa, res, pristine);
    if (c->with_k) check_tensor(c, &c->k, &c->kn, isa, res, pristine);
  } else {
    check_cache(c, isa, res, scalar, pristine);
    if (c->apply) check_apply_slots(c, isa, res);
  }
}

static int fuzz_kv(const uint8_t *data, size_t size) {
  reader r = {data, size, 0x9E3779B97F4A7C15ull};
  kvcall *c = kv_decode(&r);
  call *base = &c->q.base;
  float *buf[3] = {NULL, NULL, NULL}; /* pristine, scalar's, another ISA's */
  uint8_t *mask = NULL;
  if (base->len > MAX_ARENA) goto done;
  r.rng ^= (uint64_t)u32(&r) << 1 | 1u;
  base->input = malloc(base->len * sizeof(float));
  if (!base->input) abort();
  for (size_t i = 0; i < base->len; ++i) base->input[i] = views_data(&r);
  for (int k = 0; k < 3; ++k) {
    buf[k] = malloc((2 * GUARD + base->len) * sizeof(float));
    if (!buf[k]) abort();
  }
  fill_buffer(base, buf[0]);
  posenc_status st0;
  run(c, POSENC_ISA_SCALAR, buf[1], &st0);
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("POSENC_FUZZ_VERBOSE") != NULL;
  if (verbose)
    fprintf(stderr,
            "fuzz_rope_kv: family %d status %d (must %s) plan %s D %zu B %zu L %zu H %zu/%zu "
            "types %d->%d flags %#x k %d packed %d norms %d/%d slots %d (%s, cells %zu) "
            "dst off %zu ts %zu hs %zu scale %g arena %zu apply %d (cflags %#x aflags %#x "
            "first_row %zu n_rows %zu factors_null %d)\n",
            base->family, (int)st0,
            c->sure     ? "fail"
            : c->listed ? "either"
                        : "pass",
            c->q.plan_kind, c->q.head_dim, c->q.n_batch, c->q.n_tokens, c->q.src.n_heads,
            c->q.dst.n_heads, c->q.src.dtype, c->q.dst.dtype, c->q.flags, c->with_k, c->packed,
            c->qn.present, c->kn.present, c->use_slots, c->is64 ? "int64" : "int32", c->n_cells,
            c->qd_off, c->qd_ts, c->qd_hs, (double)c->scale, base->len, c->apply, c->cflags,
            c->aflags, c->first_row, c->n_rows, c->factors_null);
  if (c->sure && st0 == POSENC_OK)
    violation(base, "scalar", "call with an argument posenc.h lists as an error accepted", 0, 0, 0);
  if (!c->listed && st0 != POSENC_OK)
    violation(base, "scalar", "call with valid arguments refused", (size_t)st0, 0, 0);
  if (st0 != POSENC_OK && st0 != POSENC_ERR_INVALID_ARGUMENT && st0 != POSENC_ERR_OUT_OF_MEMORY)
    violation(base, "scalar", "status other than OK, INVALID_ARGUMENT or OUT_OF_MEMORY",
              (size_t)st0, 0, 0);
  check_run(c, POSENC_ISA_SCALAR, buf[1], st0, NULL, buf[0], &mask);
  for (int isa = 1; isa < POSENC_ISA_COUNT; ++isa) {
    if (!posenc_isa_available((posenc_isa)isa)) continue;
    posenc_status st;
    run(c, (posenc_isa)isa, buf[2], &st);
    if (st != st0) {
      fprintf(stderr, "fuzz_rope_kv: status %d, scalar %d\n", (int)st, (int)st0);
      violation(base, posenc_isa_name((posenc_isa)isa), "status differs from scalar's", 0, 0, 0);
    }
    check_run(c, (posenc_isa)isa, buf[2], st, buf[1], buf[0], &mask);
  }
done:
  for (int k = 0; k < 3; ++k) free(buf[k]);
  free(mask);
  free(base->input);
  posenc_rope_plan_destroy(c->q.plan);
  free(c->q.positions);
  free(c->qn.weight);
  free(c->kn.weight);
  free(c->idx);
  free(c->index);
  free(c->row_pos);
  free(c);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_kv(data, size); }
