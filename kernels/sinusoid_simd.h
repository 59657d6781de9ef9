/* The SIMD sinusoidal kernel, written once against the vector layer and compiled per ISA by
 * sinusoid_<isa>.c, for rows of every storage type (f32, bf16, f16: the float values are
 * rounded once as they are stored, simd/vec_elem.h). Same angles as the scalar reference
 * (sinusoid_scalar.c). Split invariance: the sin/cos of an integer position p are a function
 * of p alone, whatever rows the call covers (as RoPE's, rope_driver.h), formed from those of
 * p's anchor a, computed afresh:
 *  - plans of one chunk (ceil(d/2) <= POSENC_ROPE_CHUNK pairs): a = p - (p mod
 *    POSENC_ROPE_ANCHOR), by angle addition in double with the plan's step table row p - a;
 *  - larger plans: a = p - (p mod SINUSOID_ANCHOR), by angle addition in float with
 *    cos/sin((p - a) w_i) (anchored_(), below).
 * Float timesteps, the float32 recipe and the deterministic mode (posenc_det_sincos(), the
 * same operations on every ISA) are computed afresh for every row. */
#include "angle_simd.h"
#include "simd/vec_elem.h"
#include "sinusoid.h"

/* How values reach the rows: stored, added, or stored non-temporally (VF_W elements at
 * addresses aligned to their size; the rest stored) for tables too large to stay in cache. */
typedef enum { PUT_STORE, PUT_ADD, PUT_STREAM } put_mode;

/* Tables of at least POSENC_STREAM_MIN_BYTES (common.h) are written with non-temporal
 * stores. 16-bit tables stream half a vector at a time (32 bytes on avx512, 16 on avx2; sse4
 * and neon store normally). */

/* Writes (or adds) the first min(avail, VF_W) lanes of v at element col of row; avail may
 * be 0. */
POSENC_INLINE void VFN(put_)(void *row, size_t col, vf v, size_t avail, put_mode mode,
                             posenc_elem e) {
  if (avail >= VF_W) {
    if (mode == PUT_STREAM && ve_stream_aligned(row, col, e))
      ve_stream(row, col, v, e);
    else
      ve_store(row, col, mode == PUT_ADD ? vf_add(ve_load(row, col, e), v) : v, e);
  } else if (avail > 0) {
    ve_store_n(row, col, mode == PUT_ADD ? vf_add(ve_load_n(row, col, avail, e), v) : v, avail, e);
  }
}

/* sin/cos of pairs [k, k + VF_W) (k < ceil(d/2)) into their columns of one row. */
POSENC_INLINE void VFN(emit_)(void *row, const sinusoid_layout *l, size_t dim, size_t k, vf sv,
                              vf cv, put_mode mode, posenc_elem e) {
  if (l->step == 2) {
    const size_t col = 2 * k; /* < dim */
    VFN(put_)(row, col, vf_zip_lo(sv, cv), dim - col, mode, e);
    if (col + VF_W < dim) VFN(put_)(row, col + VF_W, vf_zip_hi(sv, cv), dim - col - VF_W, mode, e);
  } else {
    VFN(put_)(row, l->sin_at + k, sv, l->n_sin - k, mode, e);
    if (k < l->n_cos) VFN(put_)(row, l->cos_at + k, cv, l->n_cos - k, mode, e);
  }
}

/* Pairs [k0, k0 + n) of one row at position p, computed afresh. */
POSENC_INLINE void VFN(fresh_)(const sinusoid_args *a, const sinusoid_layout *l, double p,
                               size_t k0, size_t n, void *row, put_mode mode, posenc_elem e) {
  const angle_mode am = angle_mode_of(a->freq, p, (a->flags & POSENC_SINUSOID_F32_ANGLES) != 0);
  const vd pd = vd_set1(p);
  const vf pf = vf_set1((float)p);
  const int det = (a->flags & POSENC_SINUSOID_DETERMINISTIC) != 0;
  for (size_t i = 0; i < n; i += VF_W) {
    vf sv, cv;
    if (det)
      VFN(det_sincos_pairs_)(a->freq, am, pd, pf, k0 + i, &sv, &cv);
    else
      VFN(sincos_pairs_)(a->freq, am, pd, pf, k0 + i, &sv, &cv);
    VFN(emit_)(row, l, a->dim, k0 + i, sv, cv, mode, e);
  }
}

/* One chunk's sin/cos at an anchor position into c, s (double). */
static inline void VFN(anchor_values_)(const struct posenc_rope_plan *plan, int32_t pos, size_t k0,
                                       size_t n, double *c, double *s) {
  const angle_mode am = angle_mode_of(plan, pos, 0);
  const vd pd = vd_set1((double)pos);
  const vf pf = vf_set1((float)pos);
  for (size_t i = 0; i < n; i += VF_W) {
    vf sv, cv;
    VFN(sincos_pairs_)(plan, am, pd, pf, k0 + i, &sv, &cv);
    VFN(save_state_)(c, s, i, cv, sv);
  }
}

/* One-chunk plans: the row at integer position p from its anchor (kept in *anchor) and the
 * step table. */
POSENC_INLINE void VFN(tabled_)(const sinusoid_args *a, const sinusoid_layout *l, int32_t p,
                                size_t n, void *row, rope_anchor *anchor, put_mode mode,
                                posenc_elem e) {
  size_t k;
  const int32_t at = rope_anchor_of(p, &k);
  if (!anchor->valid || anchor->pos != at) {
    VFN(anchor_values_)(a->freq, at, 0, n, anchor->c, anchor->s);
    anchor->pos = at;
    anchor->valid = 1;
  }
  const size_t pad = a->freq->n_pad;
  const double *tc = a->freq->step_c + k * pad, *ts = a->freq->step_s + k * pad;
  for (size_t i = 0; i < n; i += VF_W) {
    vf cv, sv;
    VFN(rotate_anchor_)(anchor->c, anchor->s, i, tc, ts, &cv, &sv);
    VFN(emit_)(row, l, a->dim, i, sv, cv, mode, e);
  }
}

/* Larger plans: anchors every SINUSOID_ANCHOR positions, in passes over the rows of
 * SINUSOID_PAIRS pairs each. The row at p = a + k (a a multiple of SINUSOID_ANCHOR) is the
 * anchor's cos/sin rotated by k w_i, in float: the anchor's accurate double values (the
 * deterministic mode's polynomial, det_sincos_vd_, within 7e-10, on the exact reduced angle)
 * split into float hi + lo, and the pass's offsets cos(k w_i), sin(k w_i) rounded to float,
 * stepped k times from (1, 0) by (cos w_i, sin w_i) in double (error ~k 2^-53). Then
 *   cos = ch tc - sh ts + (cl tc - sl ts),   sin = sh tc + ch ts + (sl tc + cl ts)
 * by fused (neon, avx2, avx512) or separate (sse4) multiply-adds: within 2^-23 of the exact
 * value with fused operations (2^-24 from the offsets' rounding, 2^-25 for each of the two
 * last roundings), 1.5 2^-23 without; the header's bound is 2^-22. Both parts are functions
 * of (plan, position) alone, so is every row. A pass computes the offsets it needs once
 * (k in increasing order, on demand: a call of few rows steps only as far as its largest
 * k) and an anchor's values once for the rows that share it. */
#define SINUSOID_ANCHOR 32
#define SINUSOID_PAIRS 128
_Static_assert((SINUSOID_ANCHOR & (SINUSOID_ANCHOR - 1)) == 0 && SINUSOID_ANCHOR <= 64,
               "the anchor spacing is a power of two, at most 64");
_Static_assert(SINUSOID_PAIRS % POSENC_PLAN_PAD == 0 && SINUSOID_PAIRS <= POSENC_ROPE_CHUNK,
               "a pass's loops may run to a whole vector; its double state fits a rope_state");

/* One pass's offsets: float cos/sin of k w_i for k in [0, n_rows); `at` holds the double
 * values of row n_rows - 1, from which the next is stepped. */
typedef struct sinusoid_offsets {
  _Alignas(64) float c[SINUSOID_ANCHOR][SINUSOID_PAIRS];
  _Alignas(64) float s[SINUSOID_ANCHOR][SINUSOID_PAIRS];
  rope_state at;
  unsigned n_rows;
} sinusoid_offsets;

/* An anchor's cos/sin as float hi + lo parts. */
typedef struct sinusoid_base {
  _Alignas(64) float ch[SINUSOID_PAIRS];
  _Alignas(64) float cl[SINUSOID_PAIRS];
  _Alignas(64) float sh[SINUSOID_PAIRS];
  _Alignas(64) float sl[SINUSOID_PAIRS];
  int32_t pos;
  int valid;
} sinusoid_base;

/* Offsets rows [t->n_rows, k] of pairs [k0, k0 + n). */
static inline void VFN(offsets_)(const struct posenc_rope_plan *plan, size_t k0, size_t n,
                                 unsigned k, sinusoid_offsets *t) {
  if (t->n_rows == 0) {
    for (size_t i = 0; i < n; i += VF_W) {
      vf_store(t->c[0] + i, vf_set1(1.0f));
      vf_store(t->s[0] + i, vf_set1(0.0f));
      vd_store(t->at.c + i, vd_set1(1.0));
      vd_store(t->at.c + i + VD_W, vd_set1(1.0));
      vd_store(t->at.s + i, vd_set1(0.0));
      vd_store(t->at.s + i + VD_W, vd_set1(0.0));
    }
    t->n_rows = 1;
  }
  for (; t->n_rows <= k; ++t->n_rows)
    for (size_t i = 0; i < n; i += VF_W) {
      vf cv, sv;
      VFN(step_)(&t->at, i, plan->cos_w + k0, plan->sin_w + k0, &cv, &sv);
      vf_store(t->c[t->n_rows] + i, cv);
      vf_store(t->s[t->n_rows] + i, sv);
    }
}

/* The float hi and lo parts of the double values lo, hi (VF_W lanes). */
static inline void VFN(split_)(vd lo, vd hi, float *h, float *l) {
  const vf vh = vf_from_vd(lo, hi);
  vf_store_reload(h, vh);
  vf_store_reload(l, vf_from_vd(vd_sub(lo, vd_from_vf_lo(vh)), vd_sub(hi, vd_from_vf_hi(vh))));
}

/* The anchor values at position `at` of pairs [k0, k0 + n). */
static inline void VFN(base_)(const struct posenc_rope_plan *plan, int32_t at, size_t k0, size_t n,
                              sinusoid_base *b) {
  const angle_mode am = angle_mode_of(plan, (double)at, 0);
  const vd pd = vd_set1((double)at);
  for (size_t i = 0; i < n; i += VF_W) {
    vd lo, hi, s_lo, c_lo, s_hi, c_hi;
    VFN(angles_vd_)(plan, am, pd, vf_set1(0.0f), k0 + i, &lo, &hi);
    VFN(det_sincos_vd_)(lo, &s_lo, &c_lo);
    VFN(det_sincos_vd_)(hi, &s_hi, &c_hi);
    VFN(split_)(c_lo, c_hi, b->ch + i, b->cl + i);
    VFN(split_)(s_lo, s_hi, b->sh + i, b->sl + i);
  }
  b->pos = at;
  b->valid = 1;
}

/* cos/sin of VF_W pairs at index i: the anchor's rotated by the offsets tc, ts. */
POSENC_INLINE void VFN(rotate_base_)(const sinusoid_base *b, const float *tc, const float *ts,
                                     size_t i, vf *cv, vf *sv) {
  const vf ch = vf_load(b->ch + i), cl = vf_load(b->cl + i);
  const vf sh = vf_load(b->sh + i), sl = vf_load(b->sl + i);
  const vf c = vf_load(tc + i), s = vf_load(ts + i);
  *cv = vf_fmadd(ch, c, vf_fnmadd(sh, s, vf_fnmadd(sl, s, vf_mul(cl, c))));
  *sv = vf_fmadd(sh, c, vf_fmadd(ch, s, vf_fmadd(cl, s, vf_mul(sl, c))));
}

/* Interleaved 16-bit rows: VF_W pairs rounded and interleaved at once into one vector of
 * 2 VF_W 16-bit elements (the layer's vz16, where it has one), stored as one vector
 * (non-temporal where aligned to its size). The values are finite (computed here), so bf16
 * takes the layer's finite-only rounding. */
#ifdef VF_HAVE_VZ16
#define SINUSOID_PACKED 1
POSENC_INLINE vz16 VFN(pack_)(vf sv, vf cv, posenc_elem e) { /* s0 c0 s1 c1 ... */
  return e == POSENC_ELEM_BF16 ? vz16_bf16_finite(sv, cv) : vz16_f16(sv, cv);
}
#else
#define SINUSOID_PACKED 0
#endif

/* One row's pairs [k0, k0 + n) from the anchor b and the offsets tc, ts. Interleaved rows
 * (a constant at each call) write their whole vectors in a loop of their own: 2 VF_W
 * elements per VF_W pairs, packed at once for 16-bit types where the layer allows. */
POSENC_INLINE void VFN(row_)(void *row, const sinusoid_layout *l, size_t dim, size_t k0, size_t n,
                             const sinusoid_base *b, const float *tc, const float *ts,
                             put_mode mode, posenc_elem e, int interleaved) {
  size_t i = 0;
  if (interleaved && mode != PUT_ADD) {
    /* Pairs [k0 + i, k0 + i + VF_W) fill 2 VF_W columns for i < end. */
    const size_t full = dim / 2 > k0 + VF_W ? dim / 2 - k0 - VF_W + 1 : 0;
    const size_t end = full < n ? full : n;
    if (e == POSENC_ELEM_F32) {
      float *out = (float *)row + 2 * k0;
      if (mode == PUT_STREAM && (uintptr_t)out % (VF_W * sizeof(float)) == 0) {
        for (; i < end; i += VF_W) {
          vf cv, sv;
          VFN(rotate_base_)(b, tc, ts, i, &cv, &sv);
          vf_stream(out + 2 * i, vf_zip_lo(sv, cv));
          vf_stream(out + 2 * i + VF_W, vf_zip_hi(sv, cv));
        }
      } else {
        for (; i < end; i += VF_W) {
          vf cv, sv;
          VFN(rotate_base_)(b, tc, ts, i, &cv, &sv);
          vf_store(out + 2 * i, vf_zip_lo(sv, cv));
          vf_store(out + 2 * i + VF_W, vf_zip_hi(sv, cv));
        }
      }
    } else {
#if SINUSOID_PACKED
      uint16_t *out = (uint16_t *)row + 2 * k0;
      if (mode == PUT_STREAM && (uintptr_t)out % sizeof(vz16) == 0) {
        for (; i < end; i += VF_W) {
          vf cv, sv;
          VFN(rotate_base_)(b, tc, ts, i, &cv, &sv);
          vz16_stream(out + 2 * i, VFN(pack_)(sv, cv, e));
        }
      } else {
        for (; i < end; i += VF_W) {
          vf cv, sv;
          VFN(rotate_base_)(b, tc, ts, i, &cv, &sv);
          vz16_store(out + 2 * i, VFN(pack_)(sv, cv, e));
        }
      }
#endif
    }
  }
  for (; i < n; i += VF_W) {
    vf cv, sv;
    VFN(rotate_base_)(b, tc, ts, i, &cv, &sv);
    VFN(emit_)(row, l, dim, k0 + i, sv, cv, mode, e);
  }
}

/* Integer positions of larger plans (see above); interleaved is l->step == 2, a constant at
 * each call. */
POSENC_INLINE void VFN(anchored_)(const sinusoid_args *a, const sinusoid_layout *l, put_mode mode,
                                  posenc_elem e, int interleaved) {
  const size_t n_pairs = a->freq->n_pairs;
  sinusoid_offsets t;
  sinusoid_base b;
  for (size_t k0 = 0; k0 < n_pairs; k0 += SINUSOID_PAIRS) {
    const size_t n = n_pairs - k0 < SINUSOID_PAIRS ? n_pairs - k0 : SINUSOID_PAIRS;
    t.n_rows = 0;
    b.valid = 0;
    for (size_t r = 0; r < a->n_rows; ++r) {
      const int32_t p =
          a->positions ? a->positions[r] : (int32_t)((int64_t)a->start_pos + (int64_t)r);
      /* p mod SINUSOID_ANCHOR in [0, SINUSOID_ANCHOR) for negative p too; the anchor is a
       * multiple of it, >= INT32_MIN. */
      const unsigned k = (uint32_t)p & (SINUSOID_ANCHOR - 1);
      const int32_t at = (int32_t)((int64_t)p - (int64_t)k);
      if (!b.valid || b.pos != at) VFN(base_)(a->freq, at, k0, n, &b);
      if (k >= t.n_rows) VFN(offsets_)(a->freq, k0, n, k, &t);
      void *row = (char *)a->out + r * a->row_stride * posenc_elem_size(e);
      VFN(row_)(row, l, a->dim, k0, n, &b, t.c[k], t.s[k], mode, e, interleaved);
    }
  }
}

/* mode and e are constants at each call, so each loop is compiled for one mode and one
 * storage type. */
POSENC_INLINE void VFN(rows_)(const sinusoid_args *a, put_mode mode, posenc_elem e) {
  const sinusoid_layout l = sinusoid_layout_of(a->dim, a->flags);
  const size_t n_pairs = a->freq->n_pairs;
  const int integer =
      !a->timesteps && !(a->flags & (POSENC_SINUSOID_F32_ANGLES | POSENC_SINUSOID_DETERMINISTIC));
  if (integer && a->freq->step_c == NULL) {
    if (l.step == 2)
      VFN(anchored_)(a, &l, mode, e, 1);
    else
      VFN(anchored_)(a, &l, mode, e, 0);
    return;
  }
  rope_anchor anchor;
  anchor.valid = 0;
  for (size_t r0 = 0; r0 < a->n_rows; r0 += POSENC_ROPE_RUN) {
    const size_t r1 = a->n_rows - r0 < POSENC_ROPE_RUN ? a->n_rows : r0 + POSENC_ROPE_RUN;
    for (size_t k0 = 0; k0 < n_pairs; k0 += POSENC_ROPE_CHUNK) {
      const size_t n = n_pairs - k0 < POSENC_ROPE_CHUNK ? n_pairs - k0 : POSENC_ROPE_CHUNK;
      for (size_t r = r0; r < r1; ++r) {
        void *row = (char *)a->out + r * a->row_stride * posenc_elem_size(e);
        const double p = sinusoid_position(a, r);
        if (integer)
          VFN(tabled_)(a, &l, (int32_t)p, n, row, &anchor, mode, e);
        else
          VFN(fresh_)(a, &l, p, k0, n, row, mode, e);
      }
    }
  }
}

/* e is a constant at each call, so each loop is compiled for one storage type. */
POSENC_INLINE void VFN(sinusoid_)(const sinusoid_args *a, posenc_elem e) {
  if (a->flags & POSENC_SINUSOID_ADD_) {
    VFN(rows_)(a, PUT_ADD, e);
  } else if (sinusoid_streams(a, posenc_elem_size(e))) {
    VFN(rows_)(a, PUT_STREAM, e);
    vf_stream_fence();
  } else {
    VFN(rows_)(a, PUT_STORE, e);
  }
}

/* The bodies of the exported variants, posenc_sinusoid_<type>_<isa> (sinusoid_<isa>.c). */
POSENC_INLINE void sinusoid_run_f32(const sinusoid_args *a) { VFN(sinusoid_)(a, POSENC_ELEM_F32); }
POSENC_INLINE void sinusoid_run_bf16(const sinusoid_args *a) {
  VFN(sinusoid_)(a, POSENC_ELEM_BF16);
}
POSENC_INLINE void sinusoid_run_f16(const sinusoid_args *a) { VFN(sinusoid_)(a, POSENC_ELEM_F16); }
