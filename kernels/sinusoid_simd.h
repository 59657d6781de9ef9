/* The SIMD sinusoidal kernel, written once against the vector layer and compiled per ISA by
 * sinusoid_<isa>.c, for rows of every storage type (f32, bf16, f16: the float values are
 * rounded once as they are stored, simd/vec_elem.h). Same angles as the scalar reference
 * (sinusoid_scalar.c); for a row whose integer position follows the previous row's, sin/cos
 * are stepped from that row in double (angle addition, as RoPE's rope_driver.h explains),
 * re-anchored every POSENC_ROPE_RUN rows. Rows are processed in blocks of POSENC_ROPE_RUN,
 * pairs in chunks of POSENC_ROPE_CHUNK, so the stepping state stays on the stack and in L1.
 * The schedule is not rope_drive's (rope_driver.h), so the two are written apart: here a row
 * is anchored at every multiple of POSENC_ROPE_RUN rows (the block start) and after every
 * break in the positions, and plans of several chunks step too (chunks outside, rows inside
 * a block); rope_drive anchors POSENC_ROPE_RUN steps after its last anchor, wherever that
 * was, steps single-chunk plans only (tokens outside, chunks inside), and lets a repeated
 * token reuse its cos/sin without breaking the run. Sharing one would move anchors and
 * change result bits. */
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

/* Pairs [k0, k0 + n) of one row at position p, computed afresh; saved in state (if not
 * NULL) for the rows that step from it. */
POSENC_INLINE void VFN(anchor_)(const sinusoid_args *a, const sinusoid_layout *l, double p,
                                size_t k0, size_t n, void *row, rope_state *state, put_mode mode,
                                posenc_elem e) {
  const angle_mode am = angle_mode_of(a->freq, p, (a->flags & POSENC_SINUSOID_F32_ANGLES) != 0);
  const vd pd = vd_set1(p);
  const vf pf = vf_set1((float)p);
  for (size_t i = 0; i < n; i += VF_W) {
    vf sv, cv;
    VFN(sincos_pairs_)(a->freq, am, pd, pf, k0 + i, &sv, &cv);
    if (state) VFN(save_state_)(state->c, state->s, i, cv, sv);
    VFN(emit_)(row, l, a->dim, k0 + i, sv, cv, mode, e);
  }
}

/* Pairs [k0, k0 + n) of one row one position after the state's. */
POSENC_INLINE void VFN(advance_)(const sinusoid_args *a, const sinusoid_layout *l, size_t k0,
                                 size_t n, void *row, rope_state *state, put_mode mode,
                                 posenc_elem e) {
  const double *cw = a->freq->cos_w + k0, *sw = a->freq->sin_w + k0;
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
  const int can_step = !a->timesteps && !(a->flags & POSENC_SINUSOID_F32_ANGLES);
  rope_state state;
  rope_state *const save = can_step ? &state : NULL; /* where anchors keep their values */
  for (size_t r0 = 0; r0 < a->n_rows; r0 += POSENC_ROPE_RUN) {
    const size_t r1 = a->n_rows - r0 < POSENC_ROPE_RUN ? a->n_rows : r0 + POSENC_ROPE_RUN;
    for (size_t k0 = 0; k0 < n_pairs; k0 += POSENC_ROPE_CHUNK) {
      const size_t n = n_pairs - k0 < POSENC_ROPE_CHUNK ? n_pairs - k0 : POSENC_ROPE_CHUNK;
      for (size_t r = r0; r < r1; ++r) {
        void *row = (char *)a->out + r * a->row_stride * posenc_elem_size(e);
        if (can_step && r > r0 && sinusoid_follows(a, r))
          VFN(advance_)(a, &l, k0, n, row, &state, mode, e);
        else
          VFN(anchor_)(a, &l, sinusoid_position(a, r), k0, n, row, save, mode, e);
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
