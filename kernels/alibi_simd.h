/* The SIMD ALiBi kernel, written once against the vector layer and compiled per ISA by
 * alibi_<isa>.c, for scores of every storage type (f32, bf16, f16: loaded exactly, each
 * result rounded once as it is stored, simd/vec_elem.h). The float operations of the scalar
 * reference (alibi_scalar.c) in the same order: the distance |qpos - j| as a float (exact),
 * one product with the slope, then scale * S - bias (or -bias), so every variant is
 * bit-identical to it.
 *
 * Speed (16-bit scores are compute-bound, issue 17): where every distance of a row is below
 * 2^24 the float distances are kept in float vectors and stepped by whole vectors (exact
 * there), the row split at the query's column so that no absolute value is needed: one
 * subtraction and one product per vector for the bias, instead of an integer subtraction,
 * absolute value, conversion and product. Only the vector that holds the query's column,
 * and rows with larger distances, take the int32 path. */
#include <math.h>

#include "alibi.h"
#include "common.h"
#include "simd/vec_elem.h"

/* Below this, integers and their sums and differences are exact in float. */
#define ALIBI_FLOAT_EXACT_ 16777216 /* 2^24 */

/* How a call reads its rows (a constant at each call, so each loop is compiled for one):
 * ALIBI_ADD_ loads them (ve_load), ALIBI_ADD_STREAM_ the same but for the two-vector steps
 * (put2_, nearly every column), which take ve_load_stream: f32 scores of a call of
 * POSENC_PREFETCH_MIN_BYTES or more. Zen 5, 32 x 512 x 512 f32 in place (32 MiB), bench/ab's
 * case 20 (per-round ratios, medians of 41): avx512 0.92-0.97x the time in five runs
 * with two 256-bit loads per vector, avx2's time over avx512's 0.89-0.90 before, 0.93-1.04
 * after (code placement alone moves avx2, whose code is the same, by ~5% between builds); at
 * 4 MiB the split loads took 1.09-1.10x: plain loads there. ALIBI_WRITE_ does not read the
 * rows (the bias alone). */
enum { ALIBI_ADD_, ALIBI_ADD_STREAM_, ALIBI_WRITE_ };

/* The result of lanes whose bias is `bias`. */
POSENC_INLINE vf VFN(value_)(vf bias, vf scale, vf old, int mode) {
  return mode == ALIBI_WRITE_ ? vf_neg(bias) : vf_sub(vf_mul(scale, old), bias);
}

/* The VF_W old scores at column j (0 where the row is only written). */
POSENC_INLINE vf VFN(old_)(const void *row, size_t j, int mode, posenc_elem e) {
  return mode == ALIBI_WRITE_        ? vf_set1(0.0f)
         : mode == ALIBI_ADD_STREAM_ ? ve_load_stream(row, j, e)
                                     : ve_load(row, j, e);
}

/* A whole vector of results at column j: with ALIBI_ADD_ (calls under
 * POSENC_PREFETCH_MIN_BYTES, found in cache) by ve_store_whole (f32: one 512-bit store on
 * AVX-512). Zen 5, avx512, bench interleaved rounds against ve_store: a decode step's f32
 * scores (32 heads x 4096 keys, in L2) 0.83-0.88x the time. */
POSENC_INLINE void VFN(store_)(void *row, size_t j, vf v, int mode, posenc_elem e) {
  if (mode == ALIBI_ADD_)
    ve_store_whole(row, j, v, e);
  else
    ve_store(row, j, v, e);
}

/* With pf > 0 (calls that prefetch: ahead_): the lines of the row pf bytes after this one
 * that begin within columns [j, j + n) (offsets from the row's start, one prefetch per 64
 * bytes), so that the prefetches are spread over the row's work rather than issued all
 * before it. */
POSENC_INLINE void VFN(prefetch_cols_)(const void *row, size_t j, size_t n, size_t pf,
                                       posenc_elem e) {
  if (!pf) return;
  const size_t es = posenc_elem_size(e), b = j * es, o = (b + 63) & ~(size_t)63;
  const uintptr_t p = (uintptr_t)row + pf + o;
  if (n * es >= 64) { /* n * es / 64 lines (n * es a multiple of 64 where it is constant) */
    posenc_prefetch_lines_write(p, n * es);
  } else if (o < b + n * es) {
    __builtin_prefetch((const void *)p, 1, 3);
  }
}

/* Columns [j, j + n) of a row (n <= VF_W) with float distances fd. n is VF_W (a constant) in
 * the loops, so they compile to whole-vector loads and stores. pf as prefetch_cols_'s. */
POSENC_INLINE void VFN(put_)(void *row, size_t j, size_t n, vf m, vf fd, vf scale, int mode,
                             posenc_elem e, size_t pf) {
  VFN(prefetch_cols_)(row, j, n, pf, e);
  const vf bias = vf_mul(m, fd);
  if (n == VF_W) {
    const vf old = mode == ALIBI_WRITE_ ? vf_set1(0.0f) : ve_load(row, j, e);
    VFN(store_)(row, j, VFN(value_)(bias, scale, old, mode), mode, e);
  } else {
    const vf old = mode == ALIBI_WRITE_ ? vf_set1(0.0f) : ve_load_n(row, j, n, e);
    ve_store_n(row, j, VFN(value_)(bias, scale, old, mode), n, e);
  }
}

/* The same with int32 distances d = qpos - j (any sign, |d| < 2^31). */
POSENC_INLINE void VFN(put_int_)(void *row, size_t j, size_t n, vf m, vi d, vf scale, int mode,
                                 posenc_elem e, size_t pf) {
  VFN(put_)(row, j, n, m, vf_from_vi(vi_abs(d)), scale, mode, e, pf);
}

/* Two vectors' worth of columns, [j, j + 2 * VF_W): loaded as the lanes a and b, whose columns
 * are j + cols_a / j + cols_b. An alibi_<isa>.c may supply a cheaper form for bf16 scores
 * (ALIBI_BF16_PAIR: alibi_bf16_load2 and alibi_bf16_store2, on the even columns in a and the
 * odd ones in b, which a shift and a mask unpack); otherwise two consecutive vectors. */
POSENC_INLINE int VFN(even_odd_)(posenc_elem e) {
#ifdef ALIBI_BF16_PAIR
  return e == POSENC_ELEM_BF16;
#else
  (void)e;
  return 0;
#endif
}
/* The columns of the lanes a and b relative to j: even and odd, or [0, VF_W) and [VF_W, 2 VF_W). */
POSENC_INLINE void VFN(cols_)(posenc_elem e, vf *a, vf *b) {
  const vi i = vi_iota();
  if (VFN(even_odd_)(e)) {
    const vi even = vi_add(i, i);
    *a = vf_from_vi(even);
    *b = vf_from_vi(vi_add(even, vi_set1(1)));
  } else {
    *a = vf_from_vi(i);
    *b = vf_from_vi(vi_add(i, vi_set1(VF_W)));
  }
}

/* Columns [j, j + 2 * VF_W) with float distances fa, fb in the lanes of cols_a, cols_b. */
POSENC_INLINE void VFN(put2_)(void *row, size_t j, vf m, vf fa, vf fb, vf scale, int mode,
                              posenc_elem e, size_t pf) {
  VFN(prefetch_cols_)(row, j, 2 * VF_W, pf, e);
#ifdef ALIBI_BF16_PAIR
  if (e == POSENC_ELEM_BF16) {
    vf a = vf_set1(0.0f), b = vf_set1(0.0f);
    uint16_t *p = (uint16_t *)row + j;
    if (mode != ALIBI_WRITE_) alibi_bf16_load2(p, &a, &b);
    alibi_bf16_store2(p, VFN(value_)(vf_mul(m, fa), scale, a, mode),
                      VFN(value_)(vf_mul(m, fb), scale, b, mode));
    return;
  }
#endif
  const vf a = VFN(old_)(row, j, mode, e), b = VFN(old_)(row, j + VF_W, mode, e);
  VFN(store_)(row, j, VFN(value_)(vf_mul(m, fa), scale, a, mode), mode, e);
  VFN(store_)(row, j + VF_W, VFN(value_)(vf_mul(m, fb), scale, b, mode), mode, e);
}

/* Columns [0, visible) of one row get their bias, [visible, n_k) get -inf; pf as
 * prefetch_cols_'s. */
POSENC_INLINE void VFN(row_)(void *row, int32_t qpos, size_t visible, size_t n_k, vf m, vf scale,
                             int mode, posenc_elem e, size_t pf) {
  size_t j = 0;
  if (qpos < ALIBI_FLOAT_EXACT_ && n_k < ALIBI_FLOAT_EXACT_) {
    const vf iota = vf_from_vi(vi_iota());
    const vf w = vf_set1((float)VF_W);
    /* Columns at or before the query: distances qpos - j, falling. */
    const size_t before = (size_t)qpos + 1 < visible ? (size_t)qpos + 1 : visible;
    const vf w2 = vf_set1((float)(2 * VF_W));
    vf cols_a, cols_b;
    VFN(cols_)(e, &cols_a, &cols_b);
    if (2 * VF_W <= before) {
      vf fa = vf_sub(vf_set1((float)qpos), cols_a), fb = vf_sub(vf_set1((float)qpos), cols_b);
      for (; j + 2 * VF_W <= before; j += 2 * VF_W, fa = vf_sub(fa, w2), fb = vf_sub(fb, w2))
        VFN(put2_)(row, j, m, fa, fb, scale, mode, e, pf);
    }
    vf fd = vf_sub(vf_set1((float)(qpos - (int32_t)j)), iota);
    if (j + VF_W <= before) {
      VFN(put_)(row, j, VF_W, m, fd, scale, mode, e, pf);
      j += VF_W;
    }
    if (j < visible) {
      /* The vector with the query's column (or the row's last, partial one). */
      const size_t n = visible - j < VF_W ? visible - j : VF_W;
      VFN(put_int_)
      (row, j, n, m, vi_sub(vi_set1(qpos - (int32_t)j), vi_iota()), scale, mode, e, pf);
      j += n;
      /* Columns after the query: distances j - qpos, rising. */
      if (j + 2 * VF_W <= visible) {
        const vf base = vf_set1((float)((int32_t)j - qpos));
        vf fa = vf_add(base, cols_a), fb = vf_add(base, cols_b);
        for (; j + 2 * VF_W <= visible; j += 2 * VF_W, fa = vf_add(fa, w2), fb = vf_add(fb, w2))
          VFN(put2_)(row, j, m, fa, fb, scale, mode, e, pf);
      }
      fd = vf_add(vf_set1((float)((int32_t)j - qpos)), iota);
      if (j + VF_W <= visible) {
        VFN(put_)(row, j, VF_W, m, fd, scale, mode, e, pf);
        fd = vf_add(fd, w);
        j += VF_W;
      }
      if (j < visible) VFN(put_)(row, j, visible - j, m, fd, scale, mode, e, pf);
    }
  } else {
    const vi step = vi_set1(VF_W);
    vi d = vi_sub(vi_set1(qpos), vi_iota()); /* qpos - j for the lanes of column j */
    for (; j + VF_W <= visible; j += VF_W, d = vi_sub(d, step))
      VFN(put_int_)(row, j, VF_W, m, d, scale, mode, e, pf);
    if (j < visible) VFN(put_int_)(row, j, visible - j, m, d, scale, mode, e, pf);
  }
  const vf ninf = vf_set1(-INFINITY);
  for (j = visible; j + VF_W <= n_k; j += VF_W) {
    VFN(prefetch_cols_)(row, j, VF_W, pf, e);
    VFN(store_)(row, j, ninf, mode, e);
  }
  if (j < n_k) ve_store_n(row, j, ninf, n_k - j, e);
}

/* Calls of POSENC_PREFETCH_MIN_BYTES of scores or more: each row prefetches the row whole
 * rows, POSENC_PREFETCH_AHEAD_BYTES or more, after it (this many bytes; an address formed as
 * an integer: it may lie past the scores, where a prefetch is harmless). Zen 5, avx512, 32 x
 * 512 x 512 in place, bench interleaved medians of 5 against none: f32 0.58-0.63x the time,
 * f16 0.83-1.02x, bf16 0.92-1.0x (4 KiB ahead: f32 0.67-0.74x). Their f32 rows are read by
 * ALIBI_ADD_STREAM_. The prefetches are spread over the row's columns (prefetch_cols_), a
 * line as each 64 bytes of the row are reached: all of them before the row (as first built)
 * left avx512 2-9% behind sse4 on f32 at 64 MiB in paired rounds (the report's dispatcher
 * check failed it twice); spread, posenc_ab case 20 avx512 0.80x the time (two runs), avx2
 * 0.96x, sse4 1.01-1.02x (a loop over the lines instead of one test where a step is under a
 * line: sse4 1.19-1.22x), and avx512 1.02-1.03x sse4's rate in paired rounds at 64 MiB;
 * bf16 / f16 at 64 MiB 0.91-0.93 / 0.90-0.97 of limit_rmw against 0.86-0.89 / 0.90-0.92.
 * 0: smaller calls, no prefetch. */
POSENC_INLINE size_t VFN(ahead_)(const alibi_args *a, posenc_elem e) {
  const size_t es = posenc_elem_size(e), row_bytes = a->n_k * es;
  return a->n_heads * a->n_q * row_bytes >= POSENC_PREFETCH_MIN_BYTES
             ? posenc_prefetch_rows(row_bytes) * a->row_stride * es
             : 0;
}

/* mode and e are constants at each call, so each loop is compiled for one mode and one
 * storage type. */
POSENC_INLINE void VFN(heads_)(const alibi_args *a, int mode, posenc_elem e) {
  const vf scale = vf_set1(a->scale);
  const size_t es = posenc_elem_size(e);
  const size_t ahead = VFN(ahead_)(a, e);
  for (size_t h = 0; h < a->n_heads; ++h) {
    const vf m = vf_set1(a->slopes[h]);
    for (size_t i = 0; i < a->n_q; ++i) {
      const int32_t qpos = a->q_offset + (int32_t)i;
      void *row = (char *)a->scores + (h * a->head_stride + i * a->row_stride) * es;
      VFN(row_)(row, qpos, alibi_visible(a, qpos), a->n_k, m, scale, mode, e, ahead);
    }
  }
}

POSENC_INLINE void VFN(alibi_)(const alibi_args *a, posenc_elem e) {
  if (a->flags & POSENC_ALIBI_WRITE_)
    VFN(heads_)(a, ALIBI_WRITE_, e);
  else if (e == POSENC_ELEM_F32 && VFN(ahead_)(a, e))
    VFN(heads_)(a, ALIBI_ADD_STREAM_, e);
  else
    VFN(heads_)(a, ALIBI_ADD_, e);
}

/* The bodies of the exported variants, posenc_alibi_<type>_<isa> (alibi_<isa>.c). */
POSENC_INLINE void alibi_run_f32(const alibi_args *a) { VFN(alibi_)(a, POSENC_ELEM_F32); }
POSENC_INLINE void alibi_run_bf16(const alibi_args *a) { VFN(alibi_)(a, POSENC_ELEM_BF16); }
POSENC_INLINE void alibi_run_f16(const alibi_args *a) { VFN(alibi_)(a, POSENC_ELEM_F16); }
