/* Internal: the argument block of the attention-score softmax kernels (posenc_softmax and
 * its ALiBi forms), the constants every variant shares, and posenc's exp polynomial.
 * Arguments reaching a kernel have been checked by dispatch/api_softmax.c: counts >= 1,
 * query positions >= 0, a key position < 0 only at a key hidden in every row (by a -inf
 * mask value, or by POSENC_SOFTMAX_KPOS_NEG_HIDDEN, which the flags hold only when such a
 * key exists), so kpos - qpos fits in int32 at every visible key (elsewhere it is not
 * computed in scalar code: it could overflow), scale, slopes, sinks and the cap finite,
 * the window >= 1, views that do not overlap (or are the same, in place). */
#ifndef POSENC_KERNELS_SOFTMAX_H
#define POSENC_KERNELS_SOFTMAX_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "half.h"
#include "posenc.h"

typedef struct softmax_args {
  size_t n_heads, n_q, n_k;
  const void *x; /* element j of row i of head h at h * x_head_stride + i * x_row_stride + j */
  posenc_elem xe;
  size_t x_head_stride, x_row_stride;
  void *y; /* may equal x (same type and strides: in place) */
  posenc_elem ye;
  size_t y_head_stride, y_row_stride;
  const void *mask; /* NULL, or f32 / f16 values at h * mask_head_stride + i * mask_row_stride */
  posenc_elem me;
  size_t mask_head_stride, mask_row_stride;
  const float *slopes; /* NULL: no ALiBi term */
  const float *sinks;  /* NULL: no sink */
  const int32_t *kpos; /* NULL: kpos_j = j */
  const int32_t *qpos; /* NULL: qpos_i = q_offset + i */
  int32_t q_offset, window;
  float scale, softcap;
  unsigned flags; /* POSENC_SOFTMAX_* */
} softmax_args;

typedef void (*softmax_fn)(const softmax_args *args);

/* exp(t) is taken as 0 for t < SOFTMAX_EXP_MIN: the float just above ln(FLT_MIN) =
 * -87.3365447..., so no subnormal is produced (the polynomial is valid from there). */
#define SOFTMAX_EXP_MIN (-87.33654f)

/* The softmax's e = exp(t - M) is taken as 0 below ln(2 (n_k + 1) FLT_MIN) (rounded up):
 * every e kept is then at least 2 (n_k + 1) FLT_MIN, the sum of a row (at most n_k keys
 * and a sink, each e <= 1) at most n_k + 1, so every y = e / sum is at least 2 FLT_MIN (or
 * 0): no subnormal without a test in the last pass. What is dropped is below 2^-93. */
static inline float softmax_exp_floor(size_t n_k) {
  const double t = log(FLT_MIN) + log(2.0 * ((double)n_k + 1.0));
  return nextafterf((float)t, INFINITY);
}

/* Rows with a 16-bit output up to this many columns keep their intermediate values in a
 * float block on the stack (16 KiB) and compute exp once per element; longer rows are
 * done block by block and compute it twice. A multiple of SOFTMAX_SUM_SPAN * every VF_W. */
#define SOFTMAX_BLOCK 4096

/* The sum: float vector accumulators, two, taking alternate vectors of the row, are added
 * into double after every SOFTMAX_SUM_SPAN vectors (counted from column 0 of the row, so
 * the lanes and the points where they are added depend only on the column): at most 8
 * terms per float lane. */
#define SOFTMAX_SUM_SPAN 16

/* posenc's exp, e^t = 2^n * P(r), n = round(t / ln 2), r = t - n ln 2 (ln 2 split in two so
 * that n * SOFTMAX_LN2_HI is exact for |n| <= 256), P(r) = 1 + r + r^2 Q(r) with Q the
 * cubic below (a weighted least-squares fit of (e^r - 1 - r) / r^2 on [-ln2/2, ln2/2]:
 * relative error 1.1e-7 = 2^-23.1 with these float coefficients). Valid for t in
 * [SOFTMAX_EXP_MIN, 88]. */
#define SOFTMAX_LOG2E 1.44269502162933349609375f
#define SOFTMAX_LN2_HI 0.693145751953125f
#define SOFTMAX_LN2_LO 1.428606765330187045e-06f
/* ln 2 rounded to float, for vector layers with a fused multiply-add (VF_FMA). */
#define SOFTMAX_LN2 0x1.62e43p-1f
#define SOFTMAX_EXP_C2 0x1.fffde8p-2f
#define SOFTMAX_EXP_C3 0x1.5557c8p-3f
#define SOFTMAX_EXP_C4 0x1.573322p-5f
#define SOFTMAX_EXP_C5 0x1.105e86p-7f
/* 1.5 * 2^23: t / ln 2 + this rounds t / ln 2 to an integer (nearest even). */
#define SOFTMAX_ROUND_MAGIC 12582912.0f

/* Soft-capping's tanh(v) is computed as 1 - 2 / (exp(2v) + 1) with v clamped to this: tanh
 * of it rounds to +-1 in float. */
#define SOFTMAX_TANH_CLAMP 9.0f

/* The columns [lo, hi) of a row that its positions leave visible when there are no key
 * positions (kpos_j = j): the causal flag hides j > qpos, the window qpos - j >= window.
 * lo >= hi: none. */
static inline void softmax_visible(const softmax_args *a, int32_t qpos, size_t *lo, size_t *hi) {
  size_t l = 0, h = a->n_k;
  if ((a->flags & POSENC_SOFTMAX_CAUSAL) && (size_t)qpos + 1 < h) h = (size_t)qpos + 1;
  if ((a->flags & POSENC_SOFTMAX_WINDOW) && qpos >= a->window)
    l = (size_t)qpos - (size_t)a->window + 1;
  *lo = l;
  *hi = h;
}

/* [lo, hi) of a row narrowed to its columns from the first to the last that mask_row (f32
 * or f16) does not hide with a -inf value: the columns outside are +0 whatever their scores,
 * so the row's passes need not read them (a KV cache's empty cells, another sequence's keys).
 * Leading columns dropped are whole spans of the sum (SOFTMAX_SUM_SPAN vectors: the caller
 * rounds lo down), trailing ones add +0 to it: the row's result is the same bits.
 * *memo: the last row's answer, taken again for the same mask row and range (a mask shared by
 * the heads is scanned once per call). */
typedef struct softmax_extent_memo {
  const void *row;
  size_t lo_in, hi_in, lo, hi;
} softmax_extent_memo;

static inline int softmax_mask_hides(const void *mask_row, size_t j, posenc_elem me) {
  if (me == POSENC_ELEM_F16) {
    uint16_t b;
    memcpy(&b, (const char *)mask_row + 2 * j, sizeof b);
    return b == 0xFC00u;
  }
  uint32_t b;
  memcpy(&b, (const char *)mask_row + 4 * j, sizeof b);
  return b == 0xFF800000u;
}

/* -inf in each mask type, SOFTMAX_SCAN_RUN of them: runs of hidden keys are compared with
 * memcmp (vectorised in libc) before the key by key tail. */
#define SOFTMAX_SCAN_RUN 64
#define SM_X8(v) v, v, v, v, v, v, v, v
#define SM_X64(v) SM_X8(v), SM_X8(v), SM_X8(v), SM_X8(v), SM_X8(v), SM_X8(v), SM_X8(v), SM_X8(v)
static const uint32_t softmax_ninf32[SOFTMAX_SCAN_RUN] = {SM_X64(0xFF800000u)};
static const uint16_t softmax_ninf16[SOFTMAX_SCAN_RUN] = {SM_X64(0xFC00u)};
#undef SM_X64
#undef SM_X8

static __attribute__((noinline, unused)) void softmax_mask_scan(const void *mask_row,
                                                                posenc_elem me,
                                                                softmax_extent_memo *memo) {
  const size_t sz = me == POSENC_ELEM_F16 ? 2 : 4, run = SOFTMAX_SCAN_RUN;
  const void *ninf = me == POSENC_ELEM_F16 ? (const void *)softmax_ninf16 : softmax_ninf32;
  const char *m = (const char *)mask_row;
  size_t l = memo->lo_in, h = memo->hi_in;
  while (h - l >= run && memcmp(m + l * sz, ninf, run * sz) == 0) l += run;
  while (l < h && softmax_mask_hides(mask_row, l, me)) ++l;
  while (h - l >= run && memcmp(m + (h - run) * sz, ninf, run * sz) == 0) h -= run;
  while (h > l && softmax_mask_hides(mask_row, h - 1, me)) --h;
  memo->lo = l;
  memo->hi = h;
}

static inline void softmax_mask_extent(const void *mask_row, posenc_elem me, size_t *lo, size_t *hi,
                                       softmax_extent_memo *memo) {
  if (memo->row != mask_row || memo->lo_in != *lo || memo->hi_in != *hi) {
    memo->row = mask_row;
    memo->lo_in = *lo;
    memo->hi_in = *hi;
    softmax_mask_scan(mask_row, me, memo);
  }
  *lo = memo->lo;
  *hi = memo->hi;
}

/* 1 if key j of a row is hidden by the row's mask (a -inf value; mask_row: the row's mask or
 * NULL) or by its key positions (kpos given: causal, window, or a negative position with
 * POSENC_SOFTMAX_KPOS_NEG_HIDDEN), whatever its score: a row made NaN by a NaN or +inf score
 * keeps +0 there. (Without kpos, the positions' hidden columns are outside the row's
 * [lo, hi).) */
static inline int softmax_hidden(const softmax_args *a, const void *mask_row, int32_t qpos,
                                 size_t j) {
  if (mask_row && softmax_mask_hides(mask_row, j, a->me)) return 1;
  if (!a->kpos) return 0;
  if ((a->flags & POSENC_SOFTMAX_KPOS_NEG_HIDDEN) && a->kpos[j] < 0) return 1; /* kpos given */
  const int32_t d = a->kpos[j] - qpos;
  return ((a->flags & POSENC_SOFTMAX_CAUSAL) && d > 0) ||
         ((a->flags & POSENC_SOFTMAX_WINDOW) && d <= -a->window);
}

/* 1 if every key - query distance of a call without key positions is below 2^24 in
 * magnitude (exact as a float, and when stepped in float). */
static inline int softmax_distances_below_2p24(const softmax_args *a) {
  const size_t limit = (size_t)1 << 24;
  if (a->n_k > limit) return 0;
  if (!a->qpos) return (size_t)a->q_offset + a->n_q - 1 < limit;
  for (size_t i = 0; i < a->n_q; ++i)
    if ((size_t)a->qpos[i] >= limit) return 0;
  return 1;
}

static inline int32_t softmax_qpos(const softmax_args *a, size_t i) {
  return a->qpos ? a->qpos[i] : a->q_offset + (int32_t)i;
}

#endif /* POSENC_KERNELS_SOFTMAX_H */
