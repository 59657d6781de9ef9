/* libFuzzer target: posenc_softmax and, with misc % 32 in 10..12, posenc_softmax_batched
 * (the input starts at misc, no family byte). Batched: after n_k, n_batch (0-3, or past
 * 2^62), the batch strides (x dense, padded, 0: every batch reads one x, or two extents; y
 * the same, or 0 / one element short: overlapping batches, an error), mask_n_heads (0, 1,
 * n_heads, 2 or 3: maybe not dividing, an error), mask_n_batch (0, 1, n_batch, 2: maybe not
 * dividing) with masks m_ext (+ 3) apart and their own values, kpos64 / qpos64 passed
 * instead of kpos / qpos (both forms, or a value outside int32: errors). Checked besides
 * the rest below: batch 0 against the reference, and every batch bit for bit
 * posenc_softmax on that batch (its x and y moved on, the mask of batch b % mask_n_batch,
 * int32 positions). posenc_softmax also takes mask_n_heads (the mask head byte's bits 2-4:
 * 1, n_heads, 2 or 3, maybe not dividing: an error) and mask_n_batch (bits 5-7: 1, or 2: an
 * error), and with a broadcast mask is checked bit for bit against posenc_softmax_batched of
 * one batch and against posenc_softmax with the mask expanded per head (check_broadcast).
 * posenc_softmax: The bytes pick up to 4 heads x 8 query rows x 300 keys (and
 * counts of 0 or past 2^62), x and y dtypes (f32, bf16, f16, sometimes unknown), in place or out of
 * place (y after x, x after y, x starting inside y or at y with another type or strides), each
 * view's layout ([H, n_q, n_k], [n_q, H, n_k], padded, row stride 0, or common.h's arbitrary
 * strides), a mask (none, f32 or f16, shared or per head, row and head strides incl. too
 * small or huge; causal, random -inf, ggml's -|qpos - kpos|, windowed, all -inf rows,
 * special and large values; the gaps between its rows NaN; sometimes -inf at every key of
 * negative position, llama.cpp's empty cells), key and query positions (runs, gaps and
 * repeats, any order, negative (-1 and others) or near INT32_MAX, or none with a q_offset up
 * to and past the int32 limit), the flags (POSENC_SOFTMAX_KPOS_NEG_HIDDEN and unknown bits
 * too), window, soft-cap c, scale, slopes and sinks (incl. NaN and Inf), sometimes one of
 * the arrays inside the arena (inside y: must be rejected; inside x or just after y:
 * allowed), NULL params / views / data and misaligned pointers (the misalignment byte of
 * misc lands on one of the seven pointers).
 *
 * Checks, on every available ISA (besides common.h's: the same status everywhere, nothing
 * but y's elements written, nothing written by a failing call):
 *  - an argument posenc.h lists as an error fails (POSENC_ERR_INVALID_ARGUMENT), and a call
 *    whose arguments are all plainly valid (canonical layouts, no overlap) succeeds;
 *  - every y element against a long double reference written here from the header's
 *    formula: t rounded to float step by step as the header orders it (soft-capping: the
 *    exact c tanh(u / c)), then the exact softmax with the sink. Hidden keys (positions,
 *    -inf mask, a negative kpos with POSENC_SOFTMAX_KPOS_NEG_HIDDEN) and -inf t give +0
 *    exactly, rows with nothing visible (or all -inf) all +0, a NaN or +inf t NaN on every
 *    visible key (hidden keys still +0), one finite t alone (no sink) exactly 1, else
 *    within POSENC_SOFTMAX_REL_TOLERANCE * y + ABS_TOLERANCE (with soft-capping: plus what
 *    an error of c 2^-21 in s, and the float additions after it, can move the softmax; a
 *    16-bit y: plus one rounding to nearest of its type, up to 2^-8 of the value for bf16
 *    and 2^-11 for f16, twice what posenc.h states), never negative, never a float
 *    subnormal;
 *  - sometimes the call again row by row (n_heads = n_q = 1 with the pointers moved on):
 *    bit for bit the same y (posenc.h: a row's result depends only on its inputs);
 *  - sometimes x is NaN at every hidden key (their x is never used) and in the gaps between
 *    its rows; the mask's gaps are always NaN (never read).
 * The y tensor sets the arena's unit (16-bit y: halves). POSENC_FUZZ_VERBOSE=1 also prints
 * each decoded call. The decoder is softmax_decode.c; the decoded call and the element
 * helpers are in softmax_call.h. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softmax_call.h"

#pragma STDC FP_CONTRACT OFF /* the reference's float steps are the header's, unfused */

/* ---------------------------------------------------------------------- the call */

/* The whole call: posenc_softmax_batched or posenc_softmax (b = ALL); else posenc_softmax on
 * batch b's heads [h0, h0 + n_heads) and rows [i0, i0 + n_q) (the mask of batch b % its
 * mask_n_batch; one head: that head's mask, no broadcast), with int32 positions. */
#define ALL ((size_t)-1)
/* The forms of the whole unbatched call that check_broadcast compares with it: as decoded,
 * posenc_softmax_batched of one batch, or posenc_softmax with the mask at `expanded` (one
 * mask head per head, n_q rows of the decoded row stride; no broadcast). */
enum { FORM_AS_DECODED, FORM_BATCHED_ONE, FORM_EXPANDED };
static posenc_status call_form(const softmax_call *c, unsigned char *arena, size_t n_heads,
                               size_t n_q, size_t h0, size_t i0, size_t b, int form,
                               const unsigned char *expanded) {
  posenc_softmax_params p = c->p;
  const size_t bm = b == ALL || p.mask_n_batch <= 1 ? 0 : b % p.mask_n_batch, ob = b == ALL ? 0 : b;
  if (b != ALL) p.mask_n_batch = 0, p.mask_batch_stride = 0;
  if (b != ALL && n_heads == 1) p.mask_n_heads = 0;
  const unsigned char *m = aux_ptr(c, AUX_MASK, arena), *sl = aux_ptr(c, AUX_SLOPES, arena);
  const unsigned char *sk = aux_ptr(c, AUX_SINKS, arena), *kp = aux_ptr(c, AUX_KPOS, arena);
  const unsigned char *qp = aux_ptr(c, AUX_QPOS, arena);
  const size_t mrs = p.mask_row_stride ? p.mask_row_stride : c->n_k;
  p.mask =
      m ? m + (bm * c->p.mask_batch_stride + mask_head(c, h0) * p.mask_head_stride + i0 * mrs) *
                  c->msz
        : NULL;
  if (form == FORM_EXPANDED) {
    p.mask = expanded;
    p.mask_n_heads = 0;
    p.mask_head_stride = c->n_q * mrs;
  }
  p.slopes = sl ? (const float *)(const void *)(sl + 4 * h0) : NULL;
  p.sinks = sk ? (const float *)(const void *)(sk + 4 * h0) : NULL;
  p.kpos = (const int32_t *)(const void *)kp;
  p.qpos = qp ? (const int32_t *)(const void *)(qp + 4 * i0) : NULL;
  if (!qp) p.q_offset = (int32_t)(p.q_offset + (int32_t)i0);
  unsigned char *x = c->base.null_data && !c->null_y ? NULL : arena + c->x_byte;
  unsigned char *y = c->base.null_data && c->null_y ? NULL : arena + c->y_byte;
  if (x) x += (ob * c->x_bs + h0 * c->x_hs + i0 * c->x_rse) * c->xsz;
  if (y) y += (ob * c->y_bs + h0 * c->y_hs + i0 * c->y_rse) * c->ysz;
  const posenc_scores_view xv = {x, c->xdt, c->x_hs, c->x_rs, c->x_bs};
  const posenc_scores_view yv = {y, c->ydt, c->y_hs, c->y_rs, c->y_bs};
  const posenc_softmax_params *pp = c->null_struct == 1 ? NULL : &p;
  const posenc_scores_view *xp = c->null_struct == 2 ? NULL : &xv;
  const posenc_scores_view *yp = c->null_struct == 3 ? NULL : &yv;
  if (form == FORM_BATCHED_ONE) return posenc_softmax_batched(pp, 1, n_heads, n_q, c->n_k, xp, yp);
  if (b != ALL || !c->batched) return posenc_softmax(pp, n_heads, n_q, c->n_k, xp, yp);
  p.kpos64 = c->kpos64; /* int64 positions: instead of the int32 ones (both: an error) */
  p.qpos64 = c->qpos64;
  if (c->kpos64 && !c->pos_both) p.kpos = NULL;
  if (c->qpos64 && !c->pos_both) p.qpos = NULL;
  return posenc_softmax_batched(pp, c->n_batch, n_heads, n_q, c->n_k, xp, yp);
}

static posenc_status call_softmax(const softmax_call *c, unsigned char *arena, size_t n_heads,
                                  size_t n_q, size_t h0, size_t i0, size_t b) {
  return call_form(c, arena, n_heads, n_q, h0, i0, b, FORM_AS_DECODED, NULL);
}

static posenc_status invoke(const call *base, float *arena) {
  const softmax_call *c = (const softmax_call *)base;
  const posenc_status st = call_softmax(c, (unsigned char *)arena, c->n_heads, c->n_q, 0, 0, ALL);
  if (st != POSENC_OK && st != POSENC_ERR_INVALID_ARGUMENT)
    violation(base, posenc_isa_name(posenc_active_isa()), "status other than OK or INVALID",
              (size_t)st, 0.0f, 0.0f);
  if (c->must_pass && st != POSENC_OK) {
    fprintf(stderr, "fuzz_softmax: %s\n", posenc_last_error());
    violation(base, posenc_isa_name(posenc_active_isa()), "call with valid arguments rejected", 0,
              0.0f, 0.0f);
  }
  return st;
}

/* ---------------------------------------------------------------------- the reference */

static size_t y_unit_b(const softmax_call *c, size_t b, size_t h, size_t i, size_t j) {
  return (c->y_byte + (b * c->y_bs + h * c->y_hs + i * c->y_rse + j) * c->ysz) /
         (c->base.halves ? 2 : 4);
}
static size_t y_unit(const softmax_call *c, size_t h, size_t i, size_t j) {
  return y_unit_b(c, 0, h, i, j);
}

static size_t x_elem(const softmax_call *c, size_t h, size_t i, size_t j) {
  return h * c->x_hs + i * c->x_rse + j;
}

static int64_t qpos_of(const softmax_call *c, const unsigned char *arena, size_t i) {
  const unsigned char *q = aux_ptr(c, AUX_QPOS, arena);
  return q ? read_i32(q, i) : (int64_t)c->p.q_offset + (int64_t)i;
}
static int64_t kpos_of(const softmax_call *c, const unsigned char *arena, size_t j) {
  const unsigned char *k = aux_ptr(c, AUX_KPOS, arena);
  return k ? read_i32(k, j) : (int64_t)j;
}

/* Hidden by the positions (causal, window, a negative kpos with
 * POSENC_SOFTMAX_KPOS_NEG_HIDDEN) or by a -inf mask value. */
static int hidden(const softmax_call *c, const unsigned char *arena, size_t h, size_t i, size_t j) {
  const unsigned flags = c->p.flags;
  if ((flags & POSENC_SOFTMAX_KPOS_NEG_HIDDEN) && kpos_of(c, arena, j) < 0) return 1;
  const int64_t d = kpos_of(c, arena, j) - qpos_of(c, arena, i);
  if ((flags & POSENC_SOFTMAX_CAUSAL) && d > 0) return 1;
  if ((flags & POSENC_SOFTMAX_WINDOW) && -d >= c->p.window) return 1;
  const unsigned char *m = aux_ptr(c, AUX_MASK, arena);
  if (!m) return 0;
  const size_t mrs = c->p.mask_row_stride ? c->p.mask_row_stride : c->n_k;
  return load(m, mask_head(c, h) * c->p.mask_head_stride + i * mrs + j, c->p.mask_dtype) ==
         -INFINITY;
}

/* t of a visible key (long double; soft-capping: the exact c tanh(u / c), then the mask and
 * bias terms added exactly, *delta the bound on the library's t - this, else the float t of
 * the header's steps and *delta = 0). */
static long double t_of(const softmax_call *c, const unsigned char *arena, size_t h, size_t i,
                        size_t j, double *delta) {
  const posenc_softmax_params *p = &c->p;
  const unsigned flags = p->flags;
  const float xv = load(arena + c->x_byte, x_elem(c, h, i, j), c->xdt);
  const float u = p->scale * xv;
  const unsigned char *m = aux_ptr(c, AUX_MASK, arena), *sl = aux_ptr(c, AUX_SLOPES, arena);
  const float slope = sl ? read_f32(sl, h) : 0.0f;
  const size_t mrs = p->mask_row_stride ? p->mask_row_stride : c->n_k;
  int has_term = 0, has_bias = 0;
  float term = 0.0f, bias = 0.0f;
  if (m) {
    const float mv = load(m, mask_head(c, h) * p->mask_head_stride + i * mrs + j, p->mask_dtype);
    has_term = 1;
    if (flags & POSENC_SOFTMAX_MASK_SLOPE) {
      const float prod = slope * mv;
      term = prod;
    } else {
      term = mv;
    }
  }
  if (sl && !(flags & POSENC_SOFTMAX_MASK_SLOPE)) {
    const int64_t d = kpos_of(c, arena, j) - qpos_of(c, arena, i);
    has_bias = 1;
    if (flags & POSENC_SOFTMAX_ALIBI_SYMMETRIC) {
      const float prod = slope * (float)(int32_t)(d < 0 ? -d : d);
      bias = -prod;
    } else {
      const float prod = slope * (float)(int32_t)d;
      bias = prod;
    }
  }
  *delta = 0.0;
  if (!(flags & POSENC_SOFTMAX_SOFTCAP)) {
    float t = u;
    if (has_term) {
      const float s = t + term;
      t = s;
    }
    if (has_bias) {
      const float s = t + bias;
      t = s;
    }
    return t;
  }
  const long double cap = p->softcap;
  const long double s = cap * tanhl((long double)u / cap);
  /* Where the float steps after s overflow (or meet an infinity or NaN), the library's t
   * is that of the exact s rounded to float. */
  float tf = (float)s;
  if (has_term) {
    const float a = tf + term;
    tf = a;
  }
  if (has_bias) {
    const float a = tf + bias;
    tf = a;
  }
  if (!isfinite(tf) || isnan(s)) return isnan(s) ? (long double)NAN : tf;
  const long double a = s + (has_term ? term : 0.0f), t = a + (has_bias ? bias : 0.0f);
  *delta = (double)cap * 0x1p-21 + (has_term ? 0x1.01p-24 * fabsl(a) : 0.0) +
           (has_bias ? 0x1.01p-24 * fabsl(t) : 0.0);
  return t;
}

/* The reference of every key of row (h, i), from the arena's contents. */
static void reference_row(softmax_call *c, const unsigned char *arena, size_t h, size_t i) {
  const size_t n_k = c->n_k, row = (h * c->n_q + i) * n_k;
  unsigned char *kind = c->kind + row;
  long double *want = c->want + row, t[MAX_K];
  double *tol = c->tol + row;
  int nan = 0, n_finite = 0;
  long double mx = -INFINITY;
  double delta = 0.0;
  for (size_t j = 0; j < n_k; ++j) {
    want[j] = 0.0L;
    tol[j] = 0.0;
    kind[j] = WANT_ZERO;
    if (hidden(c, arena, h, i, j)) {
      t[j] = -INFINITY;
      continue;
    }
    double dj;
    t[j] = t_of(c, arena, h, i, j, &dj);
    kind[j] = WANT_VALUE;
    if (isnan(t[j]) || t[j] == INFINITY) {
      nan = 1;
    } else if (t[j] > -INFINITY) {
      ++n_finite;
      if (t[j] > mx) mx = t[j];
      if (dj > delta) delta = dj;
    }
  }
  const unsigned char *sk = aux_ptr(c, AUX_SINKS, arena);
  const long double sink = sk ? read_f32(sk, h) : -INFINITY;
  long double sum = 0.0L;
  if (nan)
    for (size_t j = 0; j < n_k; ++j)
      if (kind[j] == WANT_ZERO) kind[j] = WANT_ZERO_NAN_ROW;
  if (!nan && n_finite) {
    if (sink > mx) mx = sink;
    for (size_t j = 0; j < n_k; ++j)
      if (kind[j] == WANT_VALUE && t[j] > -INFINITY) sum += expl(t[j] - mx);
    if (sk) sum += expl(sink - mx);
  }
  /* y's bound: the header's, with soft-capping widened by what moving every t by delta
   * can do (a factor e^(2 delta) at most), and a 16-bit y's one rounding. */
  const double grow = expm1(2.0 * delta), rel = POSENC_SOFTMAX_REL_TOLERANCE * (1.0 + grow) + grow;
  const double u16 = c->ydt == POSENC_DTYPE_F32    ? 0.0
                     : c->ydt == POSENC_DTYPE_BF16 ? 0x1p-8
                                                   : 0x1p-11;
  for (size_t j = 0; j < n_k; ++j) {
    if (kind[j] != WANT_VALUE) continue;
    if (nan) {
      kind[j] = WANT_NAN;
    } else if (!n_finite || t[j] == -INFINITY) {
      kind[j] = WANT_ZERO;
    } else if (n_finite == 1 && !sk) {
      kind[j] = WANT_ONE;
    } else {
      want[j] = expl(t[j] - mx) / sum;
      const double y = (double)want[j], b32 = rel * y + POSENC_SOFTMAX_ABS_TOLERANCE;
      tol[j] = b32 + u16 * (y + b32) + (c->ydt == POSENC_DTYPE_F16 ? 0x1p-25 : 0.0);
      tol[j] *= 1.0 + 0x1p-20; /* the reference's own rounding */
    }
  }
}

/* The arena's data once decode_call has filled it, then y marked and the reference. */
static void prepare(call *base) {
  softmax_call *c = (softmax_call *)base;
  unsigned char *arena = (unsigned char *)base->input;
  const size_t nh = c->n_heads, nq = c->n_q, nk = c->n_k;
  const int ready = c->work && !base->must_fail && !base->null_data && nh <= MAX_HEADS &&
                    nq <= MAX_Q && nk <= MAX_K && c->x_bytes && c->y_bytes;
  int aux_in_arena = 0;
  for (int k = 0; k < AUX_COUNT; ++k) aux_in_arena |= c->aux[k].in_arena;
  if (getenv("POSENC_FUZZ_VERBOSE"))
    fprintf(stderr,
            "fuzz_softmax: %zu x %zu x %zu, x %d -> y %d%s, flags %#x, mask %d, slopes %d, "
            "sinks %d, kpos %d, qpos %d, array in arena %d, batches %zu%s, must %s\n",
            nh, nq, nk, (int)c->xdt, (int)c->ydt, c->in_place ? " in place" : "", c->p.flags,
            c->aux[AUX_MASK].present ? 1 + (int)c->p.mask_dtype : 0, c->aux[AUX_SLOPES].present,
            c->aux[AUX_SINKS].present, c->aux[AUX_KPOS].present, c->aux[AUX_QPOS].present,
            aux_in_arena, c->n_batch, c->batched ? " (batched)" : "",
            base->must_fail ? "fail"
            : c->must_pass  ? "pass"
                            : "(either)");
  if (ready) {
    /* 16-bit x: each element from the float data at its own half index. */
    if (c->xsz == 2) {
      float *snap = malloc(base->len * sizeof *snap);
      if (!snap) abort();
      memcpy(snap, base->input, base->len * sizeof *snap);
      for (size_t h = 0; h < nh; ++h)
        for (size_t i = 0; i < nq; ++i)
          for (size_t j = 0; j < nk; ++j) {
            const size_t e = x_elem(c, h, i, j);
            store(arena + c->x_byte, e, snap[(c->x_byte / 2 + e) % base->len], c->xdt);
          }
      free(snap);
    }
    /* The gaps of x (never read): NaN. */
    if (c->poison && !aux_in_arena) {
      const size_t n = c->x_bytes / c->xsz;
      unsigned char *used = calloc(n, 1);
      if (!used) abort();
      for (size_t h = 0; h < nh; ++h)
        for (size_t i = 0; i < nq; ++i)
          for (size_t j = 0; j < nk; ++j) used[x_elem(c, h, i, j)] = 1;
      for (size_t e = 0; e < n; ++e)
        if (!used[e]) store(arena + c->x_byte, e, NAN, c->xdt);
      free(used);
    }
  }
  /* The arrays placed in the arena. */
  for (int k = 0; k < AUX_COUNT; ++k) {
    const aux_array *a = &c->aux[k];
    if (a->in_arena) memcpy(arena + a->arena_byte, a->heap + a->mis, a->bytes);
  }
  if (!ready) return;
  /* Hidden keys' x: NaN (never used). */
  if (c->poison && !aux_in_arena)
    for (size_t h = 0; h < nh; ++h)
      for (size_t i = 0; i < nq; ++i)
        for (size_t j = 0; j < nk; ++j)
          if (hidden(c, arena, h, i, j)) store(arena + c->x_byte, x_elem(c, h, i, j), NAN, c->xdt);
  /* y's elements, and the reference. */
  for (size_t b = 0; b < c->n_batch; ++b)
    for (size_t h = 0; h < nh; ++h)
      for (size_t i = 0; i < nq; ++i)
        for (size_t j = 0; j < nk; ++j) touch(base, y_unit_b(c, b, h, i, j));
  const size_t n = nh * nq * nk;
  c->kind = malloc(n);
  c->want = malloc(n * sizeof *c->want);
  c->tol = malloc(n * sizeof *c->tol);
  if (!c->kind || !c->want || !c->tol) abort();
  for (size_t h = 0; h < nh; ++h)
    for (size_t i = 0; i < nq; ++i) reference_row(c, arena, h, i);
}

/* ---------------------------------------------------------------------- the checks */

static float y_value(const softmax_call *c, const float *buf, size_t unit, uint32_t *bits) {
  if (!c->base.halves) {
    *bits = posenc_float_bits(buf[GUARD + unit]);
    return buf[GUARD + unit];
  }
  const uint16_t h = half_of(buf, 2 * GUARD + unit);
  *bits = h;
  return c->ydt == POSENC_DTYPE_BF16 ? widen_bf16(h) : widen_f16(h);
}

static _Noreturn void wrong(const softmax_call *c, const char *isa, const char *what, size_t h,
                            size_t i, size_t j, float got) {
  const size_t k = (h * c->n_q + i) * c->n_k + j;
  fprintf(stderr,
          "fuzz_softmax: %s: head %zu row %zu key %zu of %zu x %zu x %zu (x %d, y %d, flags "
          "%#x, mask %s): got %a, want %.20Lg (kind %d, tolerance %g)\n",
          isa, h, i, j, c->n_heads, c->n_q, c->n_k, (int)c->xdt, (int)c->ydt, c->p.flags,
          c->aux[AUX_MASK].present ? (c->p.mask_dtype ? "f16" : "f32") : "none", (double)got,
          c->want[k], c->kind[k], c->tol[k]);
  violation(&c->base, isa, what, y_unit(c, h, i, j) / (c->base.halves ? 2 : 1), got,
            (float)c->want[k]);
}

/* posenc_softmax with a broadcast mask (mask_n_heads: head h reads mask head h %
 * mask_n_heads) is bit for bit posenc_softmax_batched on one batch with the same
 * arguments, and posenc_softmax with that mask expanded to one mask per head (each head's
 * rows copied from its mask head, the gaps NaN: never read): a fresh copy each time. */
static void check_broadcast(const softmax_call *c, const char *isa, const run_result *res,
                            float *buf) {
  const call *base = &c->base;
  const size_t mrs = c->p.mask_row_stride ? c->p.mask_row_stride : c->n_k;
  const size_t n = c->n_heads * c->n_q * mrs;
  unsigned char *expanded = malloc(n * c->msz + 4);
  if (!expanded) abort();
  fill_buffer(base, buf);
  const unsigned char *m = aux_ptr(c, AUX_MASK, (const unsigned char *)(buf + GUARD));
  for (size_t e = 0; e < n; ++e) store(expanded, e, NAN, c->p.mask_dtype);
  for (size_t h = 0; h < c->n_heads; ++h)
    for (size_t i = 0; i < c->n_q; ++i)
      memcpy(expanded + ((h * c->n_q + i) * mrs) * c->msz,
             m + (mask_head(c, h) * c->p.mask_head_stride + i * mrs) * c->msz, c->n_k * c->msz);
  for (int form = FORM_BATCHED_ONE; form <= FORM_EXPANDED; ++form) {
    fill_buffer(base, buf);
    if (call_form(c, (unsigned char *)(buf + GUARD), c->n_heads, c->n_q, 0, 0, ALL, form,
                  expanded) != POSENC_OK) {
      fprintf(stderr, "fuzz_softmax: %s\n", posenc_last_error());
      violation(base, isa,
                form == FORM_BATCHED_ONE
                    ? "posenc_softmax_batched of one batch refuses an accepted broadcast call"
                    : "posenc_softmax refuses the mask expanded per head",
                0, 0, 0);
    }
    for (size_t k = 0; k < c->n_heads * c->n_q * c->n_k; ++k) {
      const size_t h = k / (c->n_q * c->n_k), i = k / c->n_k % c->n_q, j = k % c->n_k;
      uint32_t a, e;
      const float ga = y_value(c, res->buf, y_unit(c, h, i, j), &a);
      const float ge = y_value(c, buf, y_unit(c, h, i, j), &e);
      if (a != e && !(isnan(ga) && isnan(ge))) {
        fprintf(stderr, "fuzz_softmax: mask_n_heads %zu, head %zu row %zu key %zu\n",
                c->p.mask_n_heads, h, i, j);
        violation(base, isa,
                  form == FORM_BATCHED_ONE
                      ? "broadcast mask: posenc_softmax differs from the batched form of one batch"
                      : "broadcast mask: posenc_softmax differs from the mask expanded per head",
                  y_unit(c, h, i, j), ga, ge);
      }
    }
  }
  free(expanded);
}

static void check_values(const call *base, const char *isa, const run_result *res,
                         const run_result *scalar) {
  const softmax_call *c = (const softmax_call *)base;
  (void)scalar;
  if (!c->kind) return;
  const uint32_t zero = 0, one = c->ydt == POSENC_DTYPE_F32    ? 0x3f800000u
                                 : c->ydt == POSENC_DTYPE_BF16 ? 0x3f80u
                                                               : 0x3c00u;
  for (size_t h = 0; h < c->n_heads; ++h)
    for (size_t i = 0; i < c->n_q; ++i)
      for (size_t j = 0; j < c->n_k; ++j) {
        const size_t k = (h * c->n_q + i) * c->n_k + j;
        uint32_t bits;
        const float got = y_value(c, res->buf, y_unit(c, h, i, j), &bits);
        switch (c->kind[k]) {
          case WANT_ZERO:
            if (bits != zero) wrong(c, isa, "hidden key or zero row not +0", h, i, j, got);
            break;
          case WANT_ZERO_NAN_ROW:
            if (bits != zero) wrong(c, isa, "hidden key of a NaN row not +0", h, i, j, got);
            break;
          case WANT_NAN:
            if (!isnan(got))
              wrong(c, isa, "row with a NaN or +inf t: visible key not NaN", h, i, j, got);
            break;
          case WANT_ONE:
            if (bits != one)
              wrong(c, isa, "one finite t alone, no sink: not exactly 1", h, i, j, got);
            break;
          default:
            if (isnan(got) || signbit(got) || fabsl((long double)got - c->want[k]) > c->tol[k])
              wrong(c, isa, "probability out of tolerance", h, i, j, got);
            if (c->ydt != POSENC_DTYPE_F16 && got != 0.0f && got < FLT_MIN)
              wrong(c, isa, "subnormal probability stored", h, i, j, got);
        }
      }
  float *buf = malloc((2 * GUARD + base->len) * sizeof *buf);
  if (!buf) abort();
  if (!c->batched && c->aux[AUX_MASK].present && c->p.mask_n_heads)
    check_broadcast(c, isa, res, buf);
  if (c->batched) { /* batch by batch, posenc_softmax on a fresh copy: the same bits */
    fill_buffer(base, buf);
    for (size_t b = 0; b < c->n_batch; ++b) {
      if (call_softmax(c, (unsigned char *)(buf + GUARD), c->n_heads, c->n_q, 0, 0, b) != POSENC_OK)
        violation(base, isa, "posenc_softmax refuses a batch of an accepted batched call", b, 0, 0);
      for (size_t k = 0; k < c->n_heads * c->n_q * c->n_k; ++k) {
        const size_t h = k / (c->n_q * c->n_k), i = k / c->n_k % c->n_q, j = k % c->n_k;
        uint32_t a, e;
        const float ga = y_value(c, res->buf, y_unit_b(c, b, h, i, j), &a);
        const float ge = y_value(c, buf, y_unit_b(c, b, h, i, j), &e);
        if (a != e && !(isnan(ga) && isnan(ge))) {
          fprintf(stderr, "fuzz_softmax: batch %zu of %zu, head %zu row %zu key %zu\n", b,
                  c->n_batch, h, i, j);
          violation(base, isa, "a batch differs from posenc_softmax on that batch",
                    y_unit_b(c, b, h, i, j), ga, ge);
        }
      }
    }
  }
  if (!c->split_check) {
    free(buf);
    return;
  }
  /* Row by row, on a fresh copy: the same bits. */
  fill_buffer(base, buf);
  for (size_t h = 0; h < c->n_heads; ++h)
    for (size_t i = 0; i < c->n_q; ++i) {
      if (call_softmax(c, (unsigned char *)(buf + GUARD), 1, 1, h, i, 0) != POSENC_OK)
        violation(base, isa, "a row of an accepted call rejected on its own", y_unit(c, h, i, 0),
                  0.0f, 0.0f);
      for (size_t j = 0; j < c->n_k; ++j) {
        uint32_t a, b;
        const float ga = y_value(c, res->buf, y_unit(c, h, i, j), &a);
        const float gb = y_value(c, buf, y_unit(c, h, i, j), &b);
        if (a != b && !(isnan(ga) && isnan(gb)))
          wrong(c, isa, "a row computed on its own differs", h, i, j, gb);
      }
    }
  free(buf);
}

static void destroy(call *base) {
  softmax_call *c = (softmax_call *)base;
  for (int k = 0; k < AUX_COUNT; ++k) free(c->aux[k].heap);
  free(c->kpos64);
  free(c->qpos64);
  free(c->kind);
  free(c->want);
  free(c->tol);
  free(c);
}

static const fuzz_target target = {"fuzz_softmax", softmax_decode, prepare, invoke,
                                   check_values,   NULL,           destroy};
FUZZ_TARGET(target)
