/* The SIMD sinusoidal kernel, written once against the vector layer and compiled per ISA by
 * sinusoid_<isa>.c, for rows of every storage type (f32, bf16, f16: the float values are
 * rounded once as they are stored, simd/vec_elem.h). Same angles as the scalar reference
 * (sinusoid_scalar.c). Split invariance: the sin/cos of an integer position p are a function
 * of p alone, whatever rows the call covers (as RoPE's, rope_driver.h), formed from p's
 * anchor a = p - (p mod POSENC_ROPE_ANCHOR), whose sin/cos are computed afresh:
 *  - plans of one chunk (ceil(d/2) <= POSENC_ROPE_CHUNK pairs): by angle addition with the
 *    plan's step table row p - a, in double (each row on its own);
 *  - larger plans: anchors every SINUSOID_STEP_ANCHOR (8) positions, whose values are
 *    stepped p - a times by one position (angle addition with cos(w_i), sin(w_i), in
 *    double). Consecutive rows continue the previous row's steps; a row that starts a block
 *    or follows a break steps from its anchor (at most 7 steps that write nothing).
 * Float timesteps, the float32 recipe and the deterministic mode (posenc_det_sincos(), the
 * same operations on every ISA) are computed afresh for every row. Rows are
 * processed in blocks of POSENC_ROPE_RUN (a multiple of POSENC_ROPE_ANCHOR), pairs in
 * chunks of POSENC_ROPE_CHUNK, so the stepping state stays on the stack and in L1. */
#include "angle_simd.h"
#include "simd/vec_elem.h"
#include "sinusoid.h"

/* How values reach the rows: stored, added, or stored non-temporally (VF_W elements at
 * addresses aligned to their size; the rest stored) for tables too large to stay in cache. */
typedef enum { PUT_STORE, PUT_ADD, PUT_STREAM } put_mode;

/* Tables of at least this many bytes are written with non-temporal stores: they would evict
 * most of a server's last-level cache anyway, and skipping the read-for-ownership of every
 * line made a 4096 x 4096 f32 table 2.7x faster on avx512 (Zen 5). 16-bit tables stream
 * half a vector at a time (32 bytes on avx512, 16 on avx2; sse4 and neon store normally). */
#define POSENC_STREAM_MIN_BYTES ((size_t)16 << 20)

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

/* The anchor spacing of plans without a step table (a power of two dividing POSENC_ROPE_RUN):
 * small, so that a row that does not follow the previous one (a break in a position array,
 * a block start) costs few steps; a sincos every 8 rows of a contiguous table is cheap next
 * to writing them. */
#define SINUSOID_STEP_ANCHOR 8

/* Larger plans: the row at integer position p, one position after the state's row when
 * `follows` (and p is not an anchor), else stepped from p's anchor. */
POSENC_INLINE void VFN(stepped_)(const sinusoid_args *a, const sinusoid_layout *l, int32_t p,
                                 int follows, size_t k0, size_t n, void *row, rope_state *state,
                                 put_mode mode, posenc_elem e) {
  const double *cw = a->freq->cos_w + k0, *sw = a->freq->sin_w + k0;
  /* Anchors every SINUSOID_STEP_ANCHOR positions: a row after a break steps at most 7 times
   * before it writes. */
  const size_t k = (uint32_t)p & (SINUSOID_STEP_ANCHOR - 1);
  const int32_t at = (int32_t)((int64_t)p - (int64_t)k);
  if (!follows || k == 0) {
    VFN(anchor_values_)(a->freq, at, k0, n, state->c, state->s);
    for (size_t j = 0; j < k; ++j)
      for (size_t i = 0; i < n; i += VF_W) {
        vf cv, sv;
        VFN(step_)(state, i, cw, sw, &cv, &sv);
      }
    for (size_t i = 0; i < n; i += VF_W) {
      const vf cv = vf_from_vd(vd_load(state->c + i), vd_load(state->c + i + VD_W));
      const vf sv = vf_from_vd(vd_load(state->s + i), vd_load(state->s + i + VD_W));
      VFN(emit_)(row, l, a->dim, k0 + i, sv, cv, mode, e);
    }
    return;
  }
  for (size_t i = 0; i < n; i += VF_W) {
    vf cv, sv;
    VFN(step_)(state, i, cw, sw, &cv, &sv);
    VFN(emit_)(row, l, a->dim, k0 + i, sv, cv, mode, e);
  }
}

/* mode and e are constants at each call, so each loop is compiled for one mode and one
 * storage type. */
POSENC_INLINE void VFN(rows_)(const sinusoid_args *a, put_mode mode, posenc_elem e) {
  const sinusoid_layout l = sinusoid_layout_of(a->dim, a->flags);
  const size_t n_pairs = a->freq->n_pairs;
  const int integer =
      !a->timesteps && !(a->flags & (POSENC_SINUSOID_F32_ANGLES | POSENC_SINUSOID_DETERMINISTIC));
  const int tabled = integer && a->freq->step_c != NULL;
  rope_state state;
  rope_anchor anchor;
  anchor.valid = 0;
  for (size_t r0 = 0; r0 < a->n_rows; r0 += POSENC_ROPE_RUN) {
    const size_t r1 = a->n_rows - r0 < POSENC_ROPE_RUN ? a->n_rows : r0 + POSENC_ROPE_RUN;
    for (size_t k0 = 0; k0 < n_pairs; k0 += POSENC_ROPE_CHUNK) {
      const size_t n = n_pairs - k0 < POSENC_ROPE_CHUNK ? n_pairs - k0 : POSENC_ROPE_CHUNK;
      for (size_t r = r0; r < r1; ++r) {
        void *row = (char *)a->out + r * a->row_stride * posenc_elem_size(e);
        const double p = sinusoid_position(a, r);
        if (tabled) {
          VFN(tabled_)(a, &l, (int32_t)p, n, row, &anchor, mode, e);
        } else if (integer) {
          const int follows = r > r0 && sinusoid_follows(a, r);
          VFN(stepped_)(a, &l, (int32_t)p, follows, k0, n, row, &state, mode, e);
        } else {
          VFN(fresh_)(a, &l, p, k0, n, row, mode, e);
        }
      }
    }
  }
}

/* e is a constant at each call, so each loop is compiled for one storage type. */
POSENC_INLINE void VFN(sinusoid_)(const sinusoid_args *a, posenc_elem e) {
  if (a->flags & POSENC_SINUSOID_ADD_) {
    VFN(rows_)(a, PUT_ADD, e);
  } else if (a->n_rows * a->dim >= POSENC_STREAM_MIN_BYTES / posenc_elem_size(e)) {
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
