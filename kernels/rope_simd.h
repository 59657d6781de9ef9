/* The SIMD RoPE kernel, written once against the vector layer (kernels/simd/vec_<isa>.h)
 * and compiled once per ISA by rope_<isa>.c, which includes that layer first. Provides
 * rope_run_f32, rope_run_bf16 and rope_run_f16, the bodies of the exported
 * posenc_rope_<type>_<isa> that rope_<isa>.c defines. Same operations
 * as the scalar reference (rope_scalar.c): the angle reduction is bit-identical; sincos and
 * the rotation may differ by a few ulp. */
#include "angle_simd.h"
#include "rope_driver.h"
#include "simd/vec_elem.h"

/* How cos/sin are written in the layout rotate() reads: times the attention factor att; for
 * GPTJ duplicated per pair, s as (-s_i, +s_i). The multiplier of s, att times that sign
 * pattern per lane: */
static inline vf VFN(s_sign_)(vf att, unsigned flags) {
  /* In registers: a vector loaded from lanes just stored one float at a time waits for
   * those stores to reach the cache (no store-to-load forwarding), once per token. */
  if (!(flags & POSENC_ROPE_GPTJ)) return att;
  return vf_mul(att, vf_zip_lo(vf_set1(-1.0f), vf_set1(1.0f)));
}

/* Writes cos/sin of pairs [i, i + VF_W), as stores that rotate()'s vector loads read back
 * right away (vf_store_reload: with AVX-512's two 256-bit vf_store a token's first loads of
 * c and s waited for the stores to reach the cache). */
static inline void VFN(store_cs_)(vf att, vf s_sign, int gptj, size_t i, vf cv, vf sv, float *c,
                                  float *s) {
  cv = vf_mul(cv, att);
  if (gptj) {
    vf_store_reload(c + 2 * i, vf_zip_lo(cv, cv));
    vf_store_reload(c + 2 * i + VF_W, vf_zip_hi(cv, cv));
    vf_store_reload(s + 2 * i, vf_mul(vf_zip_lo(sv, sv), s_sign));
    vf_store_reload(s + 2 * i + VF_W, vf_mul(vf_zip_hi(sv, sv), s_sign));
  } else {
    vf_store_reload(c + i, cv);
    vf_store_reload(s + i, vf_mul(sv, s_sign));
  }
}

/* The anchor's cos/sin for pairs [0, n): computed afresh unless *anchor holds them. */
static void VFN(anchor_)(const struct posenc_rope_plan *plan, int32_t pos, size_t n,
                         rope_anchor *anchor) {
  if (anchor->valid && anchor->pos == pos) return;
  const angle_mode mode = angle_mode_of(plan, pos, 0);
  const vd pd = vd_set1((double)pos);
  const vf pf = vf_set1((float)pos);
  for (size_t i = 0; i < n; i += VF_W) {
    vf sv, cv;
    VFN(sincos_pairs_)(plan, mode, pd, pf, i, &sv, &cv);
    VFN(save_state_)(anchor->c, anchor->s, i, cv, sv);
  }
  anchor->pos = pos;
  anchor->valid = 1;
}

/* Plan arrays are padded to POSENC_PLAN_PAD pairs and the buffers hold a whole chunk, so
 * the loops may run to the next multiple of VF_W without a tail. With an anchor (one-chunk
 * plans, p0 = 0): the values of pos from its anchor's and the step table's row k
 * (rope_driver.h), the same operations for every position. */
static void VFN(prepare_)(const struct posenc_rope_plan *plan, int32_t pos, unsigned flags,
                          float att, size_t p0, size_t n, float *c, float *s, rope_anchor *anchor) {
  const vf att_v = vf_set1(att), s_sign = VFN(s_sign_)(att_v, flags);
  const int gptj = (flags & POSENC_ROPE_GPTJ) != 0;
  if (anchor) {
    size_t k;
    VFN(anchor_)(plan, rope_anchor_of(pos, &k), n, anchor);
    const double *tc = plan->step_c + k * plan->n_pad, *ts = plan->step_s + k * plan->n_pad;
    for (size_t i = 0; i < n; i += VF_W) {
      vf cv, sv;
      VFN(rotate_anchor_)(anchor->c, anchor->s, i, tc, ts, &cv, &sv);
      VFN(store_cs_)(att_v, s_sign, gptj, i, cv, sv, c, s);
    }
    return;
  }
  const angle_mode mode = angle_mode_of(plan, pos, (flags & POSENC_ROPE_F32_ANGLES) != 0);
  const vd pd = vd_set1((double)pos);
  const vf pf = vf_set1((float)pos);
  const int det = (flags & POSENC_ROPE_DETERMINISTIC) != 0;
  for (size_t i = 0; i < n; i += VF_W) {
    vf sv, cv;
    if (det)
      VFN(det_sincos_pairs_)(plan, mode, pd, pf, p0 + i, &sv, &cv);
    else
      VFN(sincos_pairs_)(plan, mode, pd, pf, p0 + i, &sv, &cv);
    VFN(store_cs_)(att_v, s_sign, gptj, i, cv, sv, c, s);
  }
}

/* Re-rotation: cos/sin of the difference of the two plans' angles (rope_driver.h). */
static void VFN(prepare_delta_)(const struct posenc_rope_plan *from, int32_t from_pos,
                                const struct posenc_rope_plan *to, int32_t to_pos, unsigned flags,
                                float att, size_t p0, size_t n, float *c, float *s) {
  const vf att_v = vf_set1(att), s_sign = VFN(s_sign_)(att_v, flags);
  const int gptj = (flags & POSENC_ROPE_GPTJ) != 0;
  const int f32 = (flags & POSENC_ROPE_F32_ANGLES) != 0;
  const angle_mode from_mode = angle_mode_of(from, from_pos, f32);
  const angle_mode to_mode = angle_mode_of(to, to_pos, f32);
  const vd from_pd = vd_set1((double)from_pos), to_pd = vd_set1((double)to_pos);
  const vf from_pf = vf_set1((float)from_pos), to_pf = vf_set1((float)to_pos);
  for (size_t i = 0; i < n; i += VF_W) {
    vd a_lo, a_hi, b_lo, b_hi;
    VFN(angles_vd_)(from, from_mode, from_pd, from_pf, p0 + i, &a_lo, &a_hi);
    VFN(angles_vd_)(to, to_mode, to_pd, to_pf, p0 + i, &b_lo, &b_hi);
    const vd d_lo = VFN(angle_difference_)(b_lo, a_lo), d_hi = VFN(angle_difference_)(b_hi, a_hi);
    vf sv, cv;
    if (flags & POSENC_ROPE_DETERMINISTIC) {
      vd s_lo, c_lo, s_hi, c_hi;
      VFN(det_sincos_vd_)(d_lo, &s_lo, &c_lo);
      VFN(det_sincos_vd_)(d_hi, &s_hi, &c_hi);
      sv = vf_from_vd(s_lo, s_hi);
      cv = vf_from_vd(c_lo, c_hi);
    } else {
      vf_sincos(vf_from_vd(d_lo, d_hi), &sv, &cv);
    }
    VFN(store_cs_)(att_v, s_sign, gptj, i, cv, sv, c, s);
  }
}

/* cos/sin of a block of 64 pairs (R = 128, the most common rotary size) are held in
 * registers while they are applied to every head, ROPE_BLOCK vectors of them; on narrower
 * ISAs the compiler spills part of the block, which measured faster than the head-by-head
 * order. The vector types of a length-agnostic layer (SVE, RVV) are sizeless and cannot
 * form an array: such a layer defines VF_SIZELESS (kernels/common.h) and its rows take the
 * head-by-head order, cos/sin reloaded from the buffer, with no change here. */
#define ROPE_BLOCK_PAIRS 64
#ifndef VF_SIZELESS
#define ROPE_BLOCK (ROPE_BLOCK_PAIRS / VF_W)
_Static_assert(ROPE_BLOCK % 2 == 0, "the block path takes vectors two at a time");
/* QK-norm folded into the rotation (not deterministic; neox_blk2n_): in the block path, the
 * block's factor products in registers, where that was measured faster: with 16 lanes, and
 * without FMA (SSE4: mul and sub saved). With FMA and narrower vectors (AVX2: 32 factor
 * vectors for 16 registers, each reloaded from the stack with the head's elements, 1.04-1.08x
 * the time of the unfolded block path; NEON, 64 of them, not measured, alike), NEOX rows take
 * the general loop, whose fold reads the products from a stack buffer (AVX2 0.94-0.98x the
 * unfolded block path's time), as the sizeless layers' do; their GPT-J rows are not folded. */
#if ROPE_BLOCK <= 4 || !defined(VF_FMA)
#define ROPE_NORM_FOLD_BLOCK 1
#else
#define ROPE_NORM_FOLD_BLOCK 0
#endif
#endif

/* The rotation below is written once for every pair of storage types (vec_elem.h): source
 * elements (type ex) are widened to float exactly, rotated in float, and rounded to the
 * destination type (ey) on store, so a bf16 or f16 result is the f32 kernel's result rounded
 * once. ex and ey are constants at every call (one rotate_<src>_<dst>_ per pair), so each
 * loop is compiled for one pair. x: the source head vector, y: the destination's (the same
 * in place); element indices are relative to the head. s is negated (exactly) for
 * POSENC_ROPE_INVERSE by the multiplier `sg` (+1 or -1). */
/* NEOX: u' = u*c - v*s, v' = v*c + u*s on one vector of pairs (x[iu + j], x[iv + j]); the
 * _part_ form touches only the first m lanes. */
/* a*b - c*d and a*b + c*d: fused (the default; a layer without FMA emulates it) or, in the
 * deterministic mode (det, a constant at every call), each product rounded, as in the
 * scalar reference, so that every ISA performs the same operations. */
POSENC_INLINE vf VFN(msub_)(vf a, vf b, vf c, vf d, int det) {
  return det ? vf_sub(vf_mul(a, b), vf_mul(c, d)) : vf_fnmadd(c, d, vf_mul(a, b));
}
POSENC_INLINE vf VFN(madd_)(vf a, vf b, vf c, vf d, int det) {
  return det ? vf_add(vf_mul(a, b), vf_mul(c, d)) : vf_fmadd(c, d, vf_mul(a, b));
}

/* nt, a constant of each rotate instance: ROPE_NT_STORES | ROPE_STREAM_LOADS where the call
 * streams its destination (ROPE_STREAM_: its source comes from DRAM too), ROPE_RMW_LOADS for
 * the f32 sources of a call that prefetches (rotate_prefetch_: 16 MiB or more),
 * ROPE_WHOLE_STORES for the rest but the deterministic mode's. */
#define ROPE_NT_STORES 1
#define ROPE_STREAM_LOADS 2
#define ROPE_RMW_LOADS 4
/* f32 results stored by one whole-vector store (ve_store_whole: on AVX-512 one 512-bit store
 * where vf_store makes two 256-bit ones for in-place streams from DRAM). For
 * the rows of calls that do not prefetch, which are found in cache, and QK-norm's at any
 * size. Zen 5, avx512, posenc_ab new/old time: rope_f32_neox (32 Q + 8 K heads) 0.92x at 1
 * token, 0.95-0.99x at 16, 1.0-1.02x at 512; the factor-apply form 0.89 / 0.97-0.98 /
 * 0.99-1.01x; QK-norm 0.97 / 0.97 / 0.96x, 0.95x at 4096 tokens (80 MiB). The prefetching
 * calls' rows (DRAM-sized) keep vf_store. Other layers: vf_store_reload is their vf_store. */
#define ROPE_WHOLE_STORES 8

/* A whole vector of the source at element i; with ROPE_STREAM_LOADS by ve_load_stream (two
 * 256-bit loads on AVX-512: see vf_load_stream), with ROPE_RMW_LOADS by ve_load_rmw_stream
 * (four 128-bit loads there). */
POSENC_INLINE vf VFN(sload_)(const void *x, size_t i, posenc_elem ex, int nt) {
  return (nt & ROPE_RMW_LOADS)      ? ve_load_rmw_stream(x, i, ex)
         : (nt & ROPE_STREAM_LOADS) ? ve_load_stream(x, i, ex)
                                    : ve_load(x, i, ex);
}

/* With pf > 0 (rotate_prefetch_): the lines of the `bytes` bytes at x + pf, prefetched. */
POSENC_INLINE void VFN(prefetch_)(const char *x, size_t pf, size_t bytes) {
  if (pf) posenc_prefetch_lines((uintptr_t)x + pf, bytes);
}

/* QK-norm inside the rotation (normed, a constant at every call): each element x loaded is
 * first (x * ninv) * w[i], w the head's weights from element 0 (rope.h: w + 1 for Gemma
 * is formed by the API), ninv the head's inv broadcast. nt as sload_'s. */
POSENC_INLINE vf VFN(nload_)(const void *x, size_t i, size_t m, posenc_elem ex, int normed, vf ninv,
                             const float *w, int nt) {
  const vf v = m == VF_W ? VFN(sload_)(x, i, ex, nt) : ve_load_n(x, i, m, ex);
  if (!normed) return v;
  return vf_mul(vf_mul(v, ninv), m == VF_W ? vf_load(w + i) : vf_load_n(w + i, m));
}

/* A result vector (two, a then b, for put2_) stored at element i of y: a plain store, with
 * ROPE_NT_STORES in nt a non-temporal one where y + i is aligned to it, with
 * ROPE_WHOLE_STORES an f32 vector by one whole-vector store. */
POSENC_INLINE void VFN(put_)(void *y, size_t i, vf v, posenc_elem ey, int nt) {
  if ((nt & ROPE_NT_STORES) && ve_stream_aligned(y, i, ey))
    ve_stream(y, i, v, ey);
  else if (nt & ROPE_WHOLE_STORES)
    ve_store_whole(y, i, v, ey);
  else
    ve_store(y, i, v, ey);
}
POSENC_INLINE void VFN(put2_)(void *y, size_t i, vf a, vf b, posenc_elem ey, int nt) {
  if (nt & ROPE_NT_STORES) {
    /* both in one non-temporal store where the layer has one (a whole cache line of 16-bit
     * results on AVX-512: 0.92-0.93x the time of two 32-byte stores for f32 -> f16 and bf16
     * at 4096 tokens, 40 heads, Zen 5) */
    if (ve_stream2(y, i, a, b, ey)) return;
    VFN(put_)(y, i, a, ey, nt);
    VFN(put_)(y, i + VF_W, b, ey, nt);
  } else if ((nt & ROPE_WHOLE_STORES) && ey == POSENC_ELEM_F32) { /* (16-bit: ve_store2) */
    ve_store_whole(y, i, a, ey);
    ve_store_whole(y, i + VF_W, b, ey);
  } else {
    ve_store2(y, i, a, b, ey);
  }
}

POSENC_INLINE void VFN(neox_vec_)(const void *x, void *y, size_t iu, size_t iv, vf c, vf s, int det,
                                  posenc_elem ex, posenc_elem ey, int normed, vf ninv,
                                  const float *w, int nt) {
  const vf u = VFN(nload_)(x, iu, VF_W, ex, normed, ninv, w, nt),
           v = VFN(nload_)(x, iv, VF_W, ex, normed, ninv, w, nt);
  VFN(put_)(y, iu, VFN(msub_)(u, c, v, s, det), ey, nt);
  VFN(put_)(y, iv, VFN(madd_)(v, c, u, s, det), ey, nt);
}

POSENC_INLINE void VFN(neox_part_)(const void *x, void *y, size_t iu, size_t iv, vf c, vf s,
                                   size_t m, int det, posenc_elem ex, posenc_elem ey, int normed,
                                   vf ninv, const float *w) {
  const vf u = VFN(nload_)(x, iu, m, ex, normed, ninv, w, 0),
           v = VFN(nload_)(x, iv, m, ex, normed, ninv, w, 0);
  ve_store_n(y, iu, VFN(msub_)(u, c, v, s, det), m, ey);
  ve_store_n(y, iv, VFN(madd_)(v, c, u, s, det), m, ey);
}

/* Two vectors of pairs at once, elements i and i + VF_W of each half: xu, xv the source
 * head vector's u and v halves (at the chunk's first pair), yu, yv the destination's. Each
 * half has its own base pointer so that every address of the unrolled block is a base plus
 * a constant (with indices p0 + b VF_W and p0 + half + b VF_W, GCC kept one offset register
 * per vector and ran out of them: transfers from vector registers and stack reloads in the
 * loop). With QK-norm each element is normalised as nload_ does, the weights (wu0, wv0, wu1,
 * wv1) in registers. The results are stored two vectors at a time (ve_store2: one
 * conversion for both where the layer has one; for bf16 rows both halves' in one
 * ve_store2x2, see below). */
POSENC_INLINE void VFN(neox_blk2_)(const char *xu, const char *xv, char *yu, char *yv, size_t i,
                                   vf c0, vf s0, vf c1, vf s1, int det, posenc_elem ex,
                                   posenc_elem ey, int normed, vf ninv, vf wu0, vf wv0, vf wu1,
                                   vf wv1, int nt) {
  vf u0 = VFN(sload_)(xu, i, ex, nt), v0 = VFN(sload_)(xv, i, ex, nt);
  vf u1 = VFN(sload_)(xu, i + VF_W, ex, nt), v1 = VFN(sload_)(xv, i + VF_W, ex, nt);
  if (normed) {
    u0 = vf_mul(vf_mul(u0, ninv), wu0);
    v0 = vf_mul(vf_mul(v0, ninv), wv0);
    u1 = vf_mul(vf_mul(u1, ninv), wu1);
    v1 = vf_mul(vf_mul(v1, ninv), wv1);
  }
#ifdef VF_HAVE_STORE2_BF16
  /* bf16 rows (in place, re-rotation, bf16 -> bf16 out of place): both halves' stores in one
   * ve_store2x2, whose one branch tests both results (bf16 RoPE in place: 0.96-0.98x the
   * time at 1-4096 tokens); from f32 rows it took 1.02-1.06x (8 and 40 heads, 16 and 512
   * tokens), so they keep a branch per store. */
  if (!(nt & ROPE_NT_STORES) && ex == POSENC_ELEM_BF16 && ey == POSENC_ELEM_BF16) {
    ve_store2x2(yu, i, VFN(msub_)(u0, c0, v0, s0, det), VFN(msub_)(u1, c1, v1, s1, det), yv, i,
                VFN(madd_)(v0, c0, u0, s0, det), VFN(madd_)(v1, c1, u1, s1, det), ey);
    return;
  }
#endif
  VFN(put2_)(yu, i, VFN(msub_)(u0, c0, v0, s0, det), VFN(msub_)(u1, c1, v1, s1, det), ey, nt);
  VFN(put2_)(yv, i, VFN(madd_)(v0, c0, u0, s0, det), VFN(madd_)(v1, c1, u1, s1, det), ey, nt);
}

/* The folded rotation of one vector of pairs (a_u, a_v) = x inv with the products pc, qs,
 * rc, ss (neox_blk2n_): *yu = a_u pc - a_v qs, *yv = a_v rc + a_u ss. */
POSENC_INLINE void VFN(neox_fold_)(vf au, vf av, vf pc, vf qs, vf rc, vf ss, vf *yu, vf *yv) {
  *yu = vf_fnmadd(av, qs, vf_mul(au, pc));
  *yv = vf_fmadd(au, ss, vf_mul(av, rc));
}

#ifndef VF_SIZELESS /* vectors in arrays: the block path's */
/* QK-norm folded into the rotation (not deterministic): with n = (x inv) w and a = x inv,
 *   u' = n_u c - n_v s = a_u (w_u c) - a_v (w_v s),
 *   v' = n_v c + n_u s = a_v (w_v c) + a_u (w_u s),
 * the four products of weights and factors (pc = w_u c, qs = w_v s, rc = w_v c, ss = w_u s)
 * formed once per token row and block: three operations per element instead of four. x inv
 * is rounded first, as in the unfolded path (a subnormal x is brought into range by inv
 * before any other rounding: with a tiny eps, inv may be 2^60 or more). Two vectors of pairs
 * at once as neox_blk2_. */
POSENC_INLINE void VFN(neox_blk2n_)(const char *xu, const char *xv, char *yu, char *yv, size_t i,
                                    const vf *f0, const vf *f1, vf ninv, posenc_elem ex,
                                    posenc_elem ey, int nt) {
  const vf u0 = vf_mul(ve_load(xu, i, ex), ninv), v0 = vf_mul(ve_load(xv, i, ex), ninv);
  const vf u1 = vf_mul(ve_load(xu, i + VF_W, ex), ninv);
  const vf v1 = vf_mul(ve_load(xv, i + VF_W, ex), ninv);
  vf a0, a1, b0, b1;
  VFN(neox_fold_)(u0, v0, f0[0], f0[1], f0[2], f0[3], &a0, &b0);
  VFN(neox_fold_)(u1, v1, f1[0], f1[1], f1[2], f1[3], &a1, &b1);
#ifdef VF_HAVE_STORE2_BF16
  if (ex == POSENC_ELEM_BF16 && ey == POSENC_ELEM_BF16) {
    ve_store2x2(yu, i, a0, a1, yv, i, b0, b1, ey);
    return;
  }
#endif
  VFN(put2_)(yu, i, a0, a1, ey, nt);
  VFN(put2_)(yv, i, b0, b1, ey, nt);
}
#endif

/* GPTJ: x' = x * (c, c) + swap(x) * (-s, s). */
POSENC_INLINE void VFN(gptj_vec_)(const void *x, void *y, size_t i, vf c, vf s, int det,
                                  posenc_elem ex, posenc_elem ey, int normed, vf ninv,
                                  const float *w, int nt) {
  const vf v = VFN(nload_)(x, i, VF_W, ex, normed, ninv, w, nt);
  VFN(put_)(y, i, VFN(madd_)(v, c, vf_swap_pairs(v), s, det), ey, nt);
}

POSENC_INLINE void VFN(gptj_part_)(const void *x, void *y, size_t i, vf c, vf s, size_t m, int det,
                                   posenc_elem ex, posenc_elem ey, int normed, vf ninv,
                                   const float *w) {
  const vf v = VFN(nload_)(x, i, m, ex, normed, ninv, w, 0);
  ve_store_n(y, i, VFN(madd_)(v, c, vf_swap_pairs(v), s, det), m, ey);
}

/* Elements [from, to) of one head vector copied (converted; normalised where `normed`): out
 * of place, and with QK-norm in place too. */
POSENC_INLINE void VFN(copy_)(const void *x, void *y, size_t from, size_t to, posenc_elem ex,
                              posenc_elem ey, int normed, vf ninv, const float *w, int nt) {
  size_t i = from;
  for (; i + VF_W <= to; i += VF_W)
    VFN(put_)(y, i, VFN(nload_)(x, i, VF_W, ex, normed, ninv, w, nt), ey, nt);
  if (i < to) ve_store_n(y, i, VFN(nload_)(x, i, to - i, ex, normed, ninv, w, 0), to - i, ey);
}

/* QK-norm: the sum of squares of one head vector's `dim` elements, in two float accumulators
 * of VF_W lanes, added in double (with 16 lanes or more, added to each other in float first). */
POSENC_INLINE double VFN(norm_sum_sq_)(const void *x, size_t dim, posenc_elem ex) {
  vf a0 = vf_set1(0.0f), a1 = vf_set1(0.0f);
  size_t j = 0;
  for (; j + 2 * VF_W <= dim; j += 2 * VF_W) {
    const vf u0 = ve_load(x, j, ex), u1 = ve_load(x, j + VF_W, ex);
    a0 = vf_fmadd(u0, u0, a0);
    a1 = vf_fmadd(u1, u1, a1);
  }
  if (j + VF_W <= dim) {
    const vf u = ve_load(x, j, ex);
    a0 = vf_fmadd(u, u, a0);
    j += VF_W;
  }
  if (j < dim) {
    const vf u = vf_first_n(ve_load_n(x, j, dim - j, ex), dim - j, 0.0f);
    a1 = vf_fmadd(u, u, a1);
  }
  if (VF_W >= 16) {
    /* 16 lanes or more: the two accumulators added in float first (a lane then holds at
     * most ceil(dim / 16) squares, under the ceil(D/8) of the 4-lane layers that the
     * header's bound covers), two conversions to double instead of four. Zen 5 avx512,
     * bench/ab/posenc_ab.c case 12, new/old: 0.93-0.96x the time at 1 token, 0.96-0.98x
     * at 16, 0.98-1.02x at 512 (avx2 alike: 0.97-0.99x, not taken) */
    const vf a = vf_add(a0, a1);
    return vd_hsum(vd_add(vd_from_vf_lo(a), vd_from_vf_hi(a)));
  }
  const vd s0 = vd_add(vd_from_vf_lo(a0), vd_from_vf_hi(a0));
  const vd s1 = vd_add(vd_from_vf_lo(a1), vd_from_vf_hi(a1));
  return vd_hsum(vd_add(s0, s1));
}

/* QK-norm: the heads are taken ROPE_NORM_RUN at a time, the invs of a run first: their
 * sums of squares, then their square roots and divisions in vectors. 32 heads of 128 f32
 * (16 KiB) are read again from L1 by the rotation. Zen 5, posenc_ab case 12 (32 Q + 8 K
 * heads): runs of 32 took 0.86-0.94x the time of runs of 16 on AVX-512 at 1-4096 tokens (64:
 * the same as 32), 0.98-1.0x on AVX2 and SSE4. */
#define ROPE_NORM_RUN 32
#ifndef VF_SIZELESS
_Static_assert(ROPE_NORM_RUN % VF_W == 0, "a run of means is whole vectors");
#endif

/* The invs of heads [h, h + ROPE_NORM_RUN) (those below nh) of a token's row into inv. */
POSENC_INLINE void VFN(norm_run_)(const rope_view *view, const char *xr, size_t xs, size_t h,
                                  size_t nh, posenc_elem ex, float *inv) {
  const size_t run = nh - h < ROPE_NORM_RUN ? nh - h : ROPE_NORM_RUN;
  const size_t dim = view->head_dim;
#ifndef VF_SIZELESS
  /* A power-of-two head_dim: sum / dim is sum * (1 / dim) exactly (both exact powers of two;
   * no double underflows there), so the means of a run are formed in vectors, the same values
   * as rope_norm_mean's, without a scalar division on each head's path to its inv. */
  if ((dim & (dim - 1)) == 0) {
    double sums[ROPE_NORM_RUN] = {0};
    for (size_t k = 0; k < run; ++k) sums[k] = VFN(norm_sum_sq_)(xr + (h + k) * xs, dim, ex);
    const vd rd = vd_set1(1.0 / (double)dim), e = vd_set1((double)view->norm_eps);
    for (size_t k = 0; k < run; k += VF_W) /* whole vectors: inv holds ROPE_NORM_RUN */
      vf_store(inv + k, vf_from_vd(vd_add(vd_mul(vd_load(sums + k), rd), e),
                                   vd_add(vd_mul(vd_load(sums + k + VD_W), rd), e)));
  } else
#endif
    for (size_t k = 0; k < run; ++k)
      inv[k] = rope_norm_mean(VFN(norm_sum_sq_)(xr + (h + k) * xs, dim, ex), dim, view->norm_eps);
  const vf one = vf_set1(1.0f);
  for (size_t k = 0; k < run; k += VF_W) {
    const size_t m = run - k < VF_W ? run - k : VF_W;
    if (m == VF_W)
      vf_store(inv + k, vf_div(one, vf_sqrt(vf_load(inv + k))));
    else
      vf_store_n(inv + k, vf_div(one, vf_sqrt(vf_load_n(inv + k, m))), m);
  }
}

/* Head h's inv, broadcast (the invs of its run formed at the run's first head). */
POSENC_INLINE vf VFN(head_inv_)(const rope_view *view, const char *xr, size_t xs, size_t h,
                                size_t nh, posenc_elem ex, float *inv) {
  if (h % ROPE_NORM_RUN == 0) VFN(norm_run_)(view, xr, xs, h, nh, ex, inv);
  return vf_set1(inv[h % ROPE_NORM_RUN]);
}

/* Two loop orders over the heads of one token's row (measured: see README):
 *  - one pass, when the chunk is exactly the 64-pair block (R = 128): cos/sin stay in
 *    registers while every head is streamed front to back;
 *  - otherwise head by head, front to back, cos/sin loaded from the (L1-resident) buffer.
 *    Several passes over the row with registers reloaded per block were faster in cache but
 *    halved the throughput of rows streamed from DRAM on SSE4/AVX2, so they are not used.
 * With QK-norm (normed) each head is read twice, its sum of squares then its rotation (the
 * second read from L1), and the whole head vector is written, in place too; outside the
 * deterministic mode its weights are folded into cos/sin (ROPE_NORM_FOLD_BLOCK: in the block
 * path's registers; otherwise NEOX rows take the general loop with a stack buffer of the
 * products). */

/* NEOX pairs [p0, p0 + n) of every head. */
POSENC_INLINE void VFN(rotate_neox_)(const rope_view *view, const char *xr, char *yr, size_t half,
                                     size_t p0, size_t n, const float *c, const float *s, vf sg,
                                     int tail, int det, posenc_elem ex, posenc_elem ey, int normed,
                                     int nt, size_t pf) {
  const size_t nh = view->n_heads;
  const size_t xs = view->src_head_stride * posenc_elem_size(ex);
  const size_t ys = view->dst_head_stride * posenc_elem_size(ey);
  float inv[ROPE_NORM_RUN];
  vf niv = vf_set1(1.0f);
#ifndef VF_SIZELESS
  if (n == ROPE_BLOCK_PAIRS && (!normed || det || ROPE_NORM_FOLD_BLOCK)) {
    vf cb[ROPE_BLOCK], sb[ROPE_BLOCK];
    for (int b = 0; b < ROPE_BLOCK; ++b) {
      cb[b] = vf_load(c + b * VF_W);
      sb[b] = vf_mul(vf_load(s + b * VF_W), sg);
    }
    const size_t xe = posenc_elem_size(ex), ye = posenc_elem_size(ey);
    vf wu[ROPE_BLOCK], wv[ROPE_BLOCK]; /* with QK-norm, the block's weights in registers too */
    for (int b = 0; b < ROPE_BLOCK; ++b) {
      wu[b] = normed ? vf_load(view->norm_w + p0 + b * VF_W) : niv;
      wv[b] = normed ? vf_load(view->norm_w + p0 + half + b * VF_W) : niv;
    }
    if (ROPE_NORM_FOLD_BLOCK && normed && !det) {
      vf f[ROPE_BLOCK][4]; /* pc, qs, rc, ss of each vector of the block (neox_blk2n_) */
      for (int b = 0; b < ROPE_BLOCK; ++b) {
        f[b][0] = vf_mul(wu[b], cb[b]);
        f[b][1] = vf_mul(wv[b], sb[b]);
        f[b][2] = vf_mul(wv[b], cb[b]);
        f[b][3] = vf_mul(wu[b], sb[b]);
      }
      for (size_t h = 0; h < nh; ++h) {
        const char *x = xr + h * xs;
        char *y = yr + h * ys;
        const char *xu = x + p0 * xe, *xv = xu + half * xe;
        char *yu = y + p0 * ye, *yv = yu + half * ye;
        niv = VFN(head_inv_)(view, xr, xs, h, nh, ex, inv);
        VFN(prefetch_)(x, pf, view->head_dim * xe);
        for (int b = 0; b < ROPE_BLOCK; b += 2)
          VFN(neox_blk2n_)(xu, xv, yu, yv, (size_t)b * VF_W, f[b], f[b + 1], niv, ex, ey, nt);
        if (tail) VFN(copy_)(x, y, 2 * half, view->head_dim, ex, ey, 1, niv, view->norm_w, nt);
      }
      return;
    }
    if (!tail && !normed) {
      /* (the loop below without its per-head tests: in-place rows) The addresses are stepped
       * as integers: the step after the last head may leave every object (one head's stride
       * is any value the caller passed, unchecked), which pointer arithmetic may not form. */
      uintptr_t xu = (uintptr_t)(xr + p0 * xe), xv = xu + half * xe;
      uintptr_t yu = (uintptr_t)(yr + p0 * ye), yv = yu + half * ye;
      for (size_t h = 0; h < nh; ++h, xu += xs, xv += xs, yu += ys, yv += ys) {
        VFN(prefetch_)((const char *)(xu - p0 * xe), pf, view->head_dim * xe);
        for (int b = 0; b < ROPE_BLOCK; b += 2) VFN(neox_blk2_)
        ((const char *)xu, (const char *)xv, (char *)yu, (char *)yv, (size_t)b * VF_W, cb[b], sb[b],
         cb[b + 1], sb[b + 1], det, ex, ey, 0, niv, wu[b], wv[b], wu[b + 1], wv[b + 1], nt);
      }
      return;
    }
    for (size_t h = 0; h < nh; ++h) {
      const char *x = xr + h * xs;
      char *y = yr + h * ys;
      const char *xu = x + p0 * xe, *xv = xu + half * xe;
      char *yu = y + p0 * ye, *yv = yu + half * ye;
      if (normed) niv = VFN(head_inv_)(view, xr, xs, h, nh, ex, inv);
      VFN(prefetch_)(x, pf, view->head_dim * xe);
      for (int b = 0; b < ROPE_BLOCK; b += 2) /* ROPE_BLOCK is even (VF_W <= 32) */
        VFN(neox_blk2_)
      (xu, xv, yu, yv, (size_t)b * VF_W, cb[b], sb[b], cb[b + 1], sb[b + 1], det, ex, ey, normed,
       niv, wu[b], wv[b], wu[b + 1], wv[b + 1], nt);
      if (tail) VFN(copy_)(x, y, 2 * half, view->head_dim, ex, ey, normed, niv, view->norm_w, nt);
    }
    return;
  }
#endif
  if (normed && !det) {
    /* The fold of neox_blk2n_ for any chunk: its four products per pair in a stack buffer,
     * [pc | qs | rc | ss], each n rounded up to whole vectors (n <= POSENC_ROPE_CHUNK, a
     * multiple of every VF_W). */
    _Alignas(64) float fold[4 * POSENC_ROPE_CHUNK];
    const size_t nv = (n + VF_W - 1) / VF_W * VF_W;
    float *f0 = fold, *f1 = fold + nv, *f2 = fold + 2 * nv, *f3 = fold + 3 * nv;
    for (size_t i = 0; i < n; i += VF_W) {
      const size_t m = n - i < VF_W ? n - i : VF_W; /* c and s may end at n */
      const float *wi = view->norm_w + p0 + i;
      const vf ct = m == VF_W ? vf_load(c + i) : vf_load_n(c + i, m);
      const vf st = vf_mul(m == VF_W ? vf_load(s + i) : vf_load_n(s + i, m), sg);
      const vf wu = m == VF_W ? vf_load(wi) : vf_load_n(wi, m);
      const vf wv = m == VF_W ? vf_load(wi + half) : vf_load_n(wi + half, m);
      vf_store_reload(f0 + i, vf_mul(wu, ct));
      vf_store_reload(f1 + i, vf_mul(wv, st));
      vf_store_reload(f2 + i, vf_mul(wv, ct));
      vf_store_reload(f3 + i, vf_mul(wu, st));
    }
    for (size_t h = 0; h < nh; ++h) {
      const char *x = xr + h * xs;
      char *y = yr + h * ys;
      niv = VFN(head_inv_)(view, xr, xs, h, nh, ex, inv);
      VFN(prefetch_)(x, pf, view->head_dim * posenc_elem_size(ex));
      const size_t u = p0, v = u + half;
      size_t i = 0;
      vf yu, yv;
      for (; i + VF_W <= n; i += VF_W) {
        VFN(neox_fold_)
        (vf_mul(ve_load(x, u + i, ex), niv), vf_mul(ve_load(x, v + i, ex), niv), vf_load(f0 + i),
         vf_load(f1 + i), vf_load(f2 + i), vf_load(f3 + i), &yu, &yv);
        VFN(put_)(y, u + i, yu, ey, nt);
        VFN(put_)(y, v + i, yv, ey, nt);
      }
      if (i < n) {
        const size_t m = n - i;
        VFN(neox_fold_)
        (vf_mul(ve_load_n(x, u + i, m, ex), niv), vf_mul(ve_load_n(x, v + i, m, ex), niv),
         vf_load(f0 + i), vf_load(f1 + i), vf_load(f2 + i), vf_load(f3 + i), &yu, &yv);
        ve_store_n(y, u + i, yu, m, ey);
        ve_store_n(y, v + i, yv, m, ey);
      }
      if (tail) VFN(copy_)(x, y, 2 * half, view->head_dim, ex, ey, 1, niv, view->norm_w, nt);
    }
    return;
  }
  for (size_t h = 0; h < nh; ++h) {
    const char *x = xr + h * xs;
    char *y = yr + h * ys;
    if (normed) niv = VFN(head_inv_)(view, xr, xs, h, nh, ex, inv);
    VFN(prefetch_)(x, pf, view->head_dim * posenc_elem_size(ex));
    const size_t u = p0, v = u + half;
    size_t i = 0;
    for (; i + VF_W <= n; i += VF_W) VFN(neox_vec_)
    (x, y, u + i, v + i, vf_load(c + i), vf_mul(vf_load(s + i), sg), det, ex, ey, normed, niv,
     view->norm_w, nt);
    if (i < n) { /* c and s may end at n (factor rows are not padded) */
      const vf ct = vf_load_n(c + i, n - i), st = vf_mul(vf_load_n(s + i, n - i), sg);
      VFN(neox_part_)(x, y, u + i, v + i, ct, st, n - i, det, ex, ey, normed, niv, view->norm_w);
    }
    if (tail) VFN(copy_)(x, y, 2 * half, view->head_dim, ex, ey, normed, niv, view->norm_w, nt);
  }
}

/* GPTJ: the 2n interleaved elements from 2*p0, in the same two orders. */
POSENC_INLINE void VFN(rotate_gptj_)(const rope_view *view, const char *xr, char *yr, size_t half,
                                     size_t p0, size_t n, const float *c, const float *s, vf sg,
                                     int tail, int det, posenc_elem ex, posenc_elem ey, int normed,
                                     int nt, size_t pf) {
  const size_t nh = view->n_heads, m = 2 * n;
  const size_t xs = view->src_head_stride * posenc_elem_size(ex);
  const size_t ys = view->dst_head_stride * posenc_elem_size(ey);
  float inv[ROPE_NORM_RUN];
  vf niv = vf_set1(1.0f);
#ifndef VF_SIZELESS
  if (m == 2 * ROPE_BLOCK_PAIRS) {
    vf cb[2 * ROPE_BLOCK], sb[2 * ROPE_BLOCK];
    for (int b = 0; b < 2 * ROPE_BLOCK; ++b) {
      cb[b] = vf_load(c + b * VF_W);
      sb[b] = vf_mul(vf_load(s + b * VF_W), sg);
    }
    /* Base pointers at the chunk's first pair, indices constants (neox_blk2_) */
    const size_t xe = posenc_elem_size(ex), ye = posenc_elem_size(ey);
    const float *wo = normed ? view->norm_w + 2 * p0 : NULL;
    if (ROPE_NORM_FOLD_BLOCK && normed && !det) {
      /* QK-norm folded into the rotation as neox_blk2n_: with n = (x inv) w and a = x inv,
       * n (c, c) + swap(n) (-s, s) = a (w (c, c)) + swap(a) (swap(w) (-s, s)). */
      vf pc[2 * ROPE_BLOCK], qs[2 * ROPE_BLOCK];
      for (int b = 0; b < 2 * ROPE_BLOCK; ++b) {
        const vf w = vf_load(wo + b * VF_W);
        pc[b] = vf_mul(w, cb[b]);
        qs[b] = vf_mul(vf_swap_pairs(w), sb[b]);
      }
      for (size_t h = 0; h < nh; ++h) {
        const char *x = xr + h * xs;
        char *y = yr + h * ys;
        const char *xo = x + 2 * p0 * xe;
        char *yo = y + 2 * p0 * ye;
        niv = VFN(head_inv_)(view, xr, xs, h, nh, ex, inv);
        VFN(prefetch_)(x, pf, view->head_dim * xe);
        for (int b = 0; b < 2 * ROPE_BLOCK; ++b) {
          const vf v = vf_mul(ve_load(xo, (size_t)b * VF_W, ex), niv);
          VFN(put_)
          (yo, (size_t)b * VF_W, vf_fmadd(vf_swap_pairs(v), qs[b], vf_mul(v, pc[b])), ey, nt);
        }
        if (tail) VFN(copy_)(x, y, 2 * half, view->head_dim, ex, ey, 1, niv, view->norm_w, nt);
      }
      return;
    }
    for (size_t h = 0; h < nh; ++h) {
      const char *x = xr + h * xs;
      char *y = yr + h * ys;
      const char *xo = x + 2 * p0 * xe;
      char *yo = y + 2 * p0 * ye;
      if (normed) niv = VFN(head_inv_)(view, xr, xs, h, nh, ex, inv);
      VFN(prefetch_)(x, pf, view->head_dim * xe);
      for (int b = 0; b < 2 * ROPE_BLOCK; ++b)
        VFN(gptj_vec_)(xo, yo, (size_t)b * VF_W, cb[b], sb[b], det, ex, ey, normed, niv, wo, nt);
      if (tail) VFN(copy_)(x, y, 2 * half, view->head_dim, ex, ey, normed, niv, view->norm_w, nt);
    }
    return;
  }
#endif
  for (size_t h = 0; h < nh; ++h) {
    const char *x = xr + h * xs;
    char *y = yr + h * ys;
    if (normed) niv = VFN(head_inv_)(view, xr, xs, h, nh, ex, inv);
    VFN(prefetch_)(x, pf, view->head_dim * posenc_elem_size(ex));
    const size_t o = 2 * p0;
    size_t i = 0;
    for (; i + VF_W <= m; i += VF_W) VFN(gptj_vec_)
    (x, y, o + i, vf_load(c + i), vf_mul(vf_load(s + i), sg), det, ex, ey, normed, niv,
     view->norm_w, nt);
    if (i < m) { /* c and s may end at m (factor rows are not padded) */
      const vf ct = vf_load_n(c + i, m - i), st = vf_mul(vf_load_n(s + i, m - i), sg);
      VFN(gptj_part_)(x, y, o + i, ct, st, m - i, det, ex, ey, normed, niv, view->norm_w);
    }
    if (tail) VFN(copy_)(x, y, 2 * half, view->head_dim, ex, ey, normed, niv, view->norm_w, nt);
  }
}

/* One layout and mode, normalising or not (normed: a constant). */
POSENC_INLINE void VFN(rotate_mode_)(const rope_view *view, const void *src_row, void *dst_row,
                                     size_t half, size_t p0, size_t n, const float *c,
                                     const float *s, unsigned flags, vf sg, int tail, int det,
                                     posenc_elem ex, posenc_elem ey, int normed, int nt, int pfo) {
  size_t pf = 0; /* pfo (a constant): whole token rows, POSENC_PREFETCH_AHEAD_BYTES or more ahead */
  if (pfo) {
    const size_t row = view->src_token_stride * posenc_elem_size(ex);
    pf = row ? posenc_prefetch_rows(row) * row : POSENC_PREFETCH_AHEAD_BYTES;
  }
  if (flags & POSENC_ROPE_GPTJ) {
    VFN(rotate_gptj_)
    (view, src_row, dst_row, half, p0, n, c, s, sg, tail, det, ex, ey, normed, nt, pf);
  } else {
    VFN(rotate_neox_)
    (view, src_row, dst_row, half, p0, n, c, s, sg, tail, det, ex, ey, normed, nt, pf);
  }
}

POSENC_INLINE void VFN(rotate_)(const rope_view *view, const void *src_row, void *dst_row,
                                size_t half, size_t p0, size_t n, const float *c, const float *s,
                                unsigned flags, posenc_elem ex, posenc_elem ey) {
  const vf sg = vf_set1((flags & POSENC_ROPE_INVERSE) ? -1.0f : 1.0f);
  /* The chunk that ends the pairs also writes elements [R, head_dim): a copy out of place,
   * the normalised elements with QK-norm (one chunk: p0 = 0, n = half). */
  const int normed = view->norm_w != NULL;
  const int tail =
      (view->src != view->dst || normed) && p0 + n == half && view->head_dim > 2 * half;
  /* The constants det, normed and nt (non-temporal stores) of each instance. */
  const int det = (flags & POSENC_ROPE_DETERMINISTIC) != 0;
  if (normed && det) {
    VFN(rotate_mode_)
    (view, src_row, dst_row, half, p0, n, c, s, flags, sg, tail, 1, ex, ey, 1, 0, 0);
  } else if (normed) {
    VFN(rotate_mode_)
    (view, src_row, dst_row, half, p0, n, c, s, flags, sg, tail, 0, ex, ey, 1, ROPE_WHOLE_STORES,
     0);
  } else if (det) {
    VFN(rotate_mode_)
    (view, src_row, dst_row, half, p0, n, c, s, flags, sg, tail, 1, ex, ey, 0, 0, 0);
  } else if ((flags & ROPE_STREAM_) && view->src != view->dst) {
    /* Streamed: on Zen 5 (posenc_rope_split_streams) split loads (vf_load_stream), no
     * prefetch; elsewhere whole loads, the sources prefetched as rotate_prefetch_ does (Intel
     * Xeon, posenc_ab new/old, 40 heads x 128 at 4096 tokens: into bf16 / f16 0.85-0.89x the
     * time on avx512, 0.67 / 0.88x on avx2, 0.74 / 0.82x on sse4; into f32 0.96-1.0x; 0.94 /
     * 1.01x into bf16 / f16 at 2048 tokens; rows in cache, in place and out of place, 0.96-1.0x) */
    if (posenc_rope_split_streams) {
      VFN(rotate_mode_)
      (view, src_row, dst_row, half, p0, n, c, s, flags, sg, tail, 0, ex, ey, 0,
       ROPE_NT_STORES | ROPE_STREAM_LOADS, 0);
    } else {
      VFN(rotate_mode_)
      (view, src_row, dst_row, half, p0, n, c, s, flags, sg, tail, 0, ex, ey, 0, ROPE_NT_STORES, 1);
    }
  } else {
    VFN(rotate_mode_)
    (view, src_row, dst_row, half, p0, n, c, s, flags, sg, tail, 0, ex, ey, 0, ROPE_WHOLE_STORES,
     0);
  }
}

/* rotate_ for a plain or QK-norm view (not deterministic, not streamed: rotate_ prefetches
 * those itself off Zen 5; rope_drive's rotate_pf, for 16-bit and f32 -> f32 rows) of a call
 * that prefetches: each head vector's
 * source lines are prefetched whole token rows, POSENC_PREFETCH_AHEAD_BYTES or more, ahead (a
 * function apart from rotate_: inside it, GCC allocated the plain loops' registers worse,
 * 1.1-1.2x their time in cache). Zen 5, posenc_ab new/old time, f32 in place: rope_f32_neox
 * (40 heads) avx512 0.80-0.89x at 1024-2048 tokens (20-40 MiB), 0.93-0.98x at 4096-8192; the
 * factor-apply form 0.80-0.85x at 1638-2048 tokens, 0.94-0.98x at 4096; the re-rotation of 8
 * heads (one cos/sin for every token) 0.57x at 32 MiB, 0.77x at 64 MiB (avx2 0.60 / 0.87x,
 * sse4 0.87 / 0.90x). (Measured 1.06-1.19x slower in an earlier build: not reproduced.)
 * f32 -> 16-bit rows have none: 1.06-1.10x slower at 2-4 MiB with 2 KiB ahead, and not
 * distinguishable from noise at 16-32 MiB. */
POSENC_INLINE void VFN(rotate_prefetch_)(const rope_view *view, const void *src_row, void *dst_row,
                                         size_t half, size_t p0, size_t n, const float *c,
                                         const float *s, unsigned flags, posenc_elem ex,
                                         posenc_elem ey) {
  const vf sg = vf_set1((flags & POSENC_ROPE_INVERSE) ? -1.0f : 1.0f);
  /* (rotate_'s rule: a QK-norm view writes its whole head, in place too) */
  const int normed = view->norm_w != NULL;
  const int tail =
      (view->src != view->dst || normed) && p0 + n == half && view->head_dim > 2 * half;
  /* Prefetched f32 sources are read by ROPE_RMW_LOADS where the CPU gains from it
   * (posenc_rope_split_streams, dispatch.c's rule): on Zen 5 (posenc_ab, 40 heads, 4096
   * tokens in place) avx512 took 0.96x the time with two 256-bit loads per vector and ran as
   * fast as avx2, which with the prefetch and 512-bit loads had run at 1.03x avx512's rate
   * (the report's dispatcher check failed three to four f32 groups of 64-80 MiB); with four
   * 128-bit loads 0.92-0.95x that again, as fast as sse4 (vf_load_rmw_stream); the results
   * there by vf_store's two 256-bit stores. On an Intel Xeon the whole 512-bit load is the
   * fastest (0.81-0.97x the time of the four), and the whole 512-bit store (ROPE_WHOLE_STORES:
   * posenc_ab new/old rope_f32_neox 0.93 / 0.95 / 0.97x the time at 1024 / 2048 / 4096 tokens,
   * the factor-apply form 0.92x, the re-rotation 0.97-0.99x). Prefetches for writing in place
   * (prefetchw) were measured there too: 0.99-1.02x, not kept. */
  if (normed) {
    /* QK-norm views as rotate_ takes them, with the prefetches: Zen 5 posenc_ab case 12 (32 Q
     * + 8 K heads, f32 in place) new/old 0.69x / 0.82-0.89x the time at 2048 / 4096 tokens
     * (40 / 80 MiB) on avx512, avx2 0.77-0.93x, sse4 0.74-0.79x; 16-bit views not measured
     * apart */
    VFN(rotate_mode_)
    (view, src_row, dst_row, half, p0, n, c, s, flags, sg, tail, 0, ex, ey, 1, ROPE_WHOLE_STORES,
     1);
    return;
  }
  const int nt = !posenc_rope_split_streams ? ROPE_WHOLE_STORES
                 : ex == POSENC_ELEM_F32    ? ROPE_RMW_LOADS
                                            : 0;
  VFN(rotate_mode_)
  (view, src_row, dst_row, half, p0, n, c, s, flags, sg, tail, 0, ex, ey, 0, nt, 1);
}

/* q8_0 (rope_driver.h): ggml's quantize_row_q8_0_ref on each block of 32 floats, bit for
 * bit, in groups of four blocks of a head (fewer at a head's end), ROPE_Q8_0_CHUNK groups at
 * a time (across the buffer's heads):
 *   1. each group (q8_0_scales_): each block's lane-wise max of |x| (exact for finite
 *      values), the four reduced together (q8_0_max4_: lane L holds the amax of block
 *      q8_0_lane_(L)), and in that vector, a lane a block, d = amax / 127 (float, as ggml),
 *      its f16 bits (vf_store_f16: posenc_f32_to_f16's rounding, ggml's GGML_FP32_TO_FP16),
 *      id = 1 / d (0 where d is 0); and the test of its blocks: no NaN or infinite element
 *      (the group's sum of x is finite: a finite sum that overflows fails it too, and the
 *      fallback below is right for any block) and each block's largest rounded quotient below
 *      128. That is the one of its amax (|x| <= amax gives |x * id| <= amax * id, each
 *      product rounded, and the rounding below is monotonic);
 *   2. each group's blocks: q = roundf(x * id) as trunc(x * id +- 0.49999997f) (equal to
 *      roundf for every float below 2^23 in magnitude; checked over all of them) truncated
 *      by the byte store (vf_store_i8), id broadcast from its lane.
 * A chunk's step 1 chains (maxima, reduction, two divisions) do not wait for each other nor
 * for any step 2. A chunk with a group that fails its test (a NaN or infinite input, finite
 * inputs whose sum overflows, or an amax in [~2^-142, ~2^-121), whose d is nonzero but
 * below 2^-128 so that id overflows and amax * id is infinite; with a finite id d has 21
 * bits or more and amax * id stays below 127.5) is written by rope_q8_0_block_ref instead,
 * ggml's sequential code (the same bytes for the finite blocks; a NaN in ggml's amax
 * depends on where it is). Measured on Zen 4 (posenc_ab case 18, 8 heads of 128, 1 to 512
 * tokens) against a horizontal max, two scalar divisions and a scalar f16 conversion per
 * block, in groups of 8 blocks of one head: avx512 0.79-0.89x the time of the whole call
 * (several runs), avx2 0.82-0.83x, sse4 0.89-0.90x; step 1 per group without the chunks
 * (each group's two steps in turn: the divisions' latency in every group's path)
 * 0.84-1.04x; chunks of 16 groups as fast as 8; the NaN test as a chain of x * 0 + s (two
 * operations without FMA) instead of the sum: sse4 1.05x, avx512 and avx2 the same. */
#define ROPE_Q8_0_GROUP 4
#define ROPE_Q8_0_CHUNK 8
/* The lane-wise max of a and b's lower halves' lanes interleaved and their upper halves':
 * lane 2j holds max(a_j, a_(j + W/2)), lane 2j + 1 the same of b. */
POSENC_INLINE vf VFN(q8_0_fold_)(vf a, vf b) { return vf_max(vf_zip_lo(a, b), vf_zip_hi(a, b)); }
/* The lane of q8_0_max4_ that holds block b's amax (b < 4): after the two pairings lane L
 * holds block (0, 2, 1, 3)[L % 4], and each fold of the vector with itself since spreads lane
 * j to lanes 2j and 2j + 1 (j < W/2; lane j + W/2 joins it there). */
POSENC_INLINE size_t VFN(q8_0_lane_)(size_t b) { return ((b & 1) * 2 + (b >> 1)) * (VF_W / 4); }
/* The amax of four blocks from their lane-wise maxima m0..m3 (>= 0; a NaN among them only
 * where the group's test fails anyway), in the lanes q8_0_lane_ names. */
POSENC_INLINE vf VFN(q8_0_max4_)(vf m0, vf m1, vf m2, vf m3) {
  vf r = VFN(q8_0_fold_)(VFN(q8_0_fold_)(m0, m1), VFN(q8_0_fold_)(m2, m3));
  for (size_t w = VF_W; w > 4; w /= 2) r = VFN(q8_0_fold_)(r, r);
  return r;
}
/* Step 1 for the ng (1 to 4) blocks at x: id and the f16 d into ids[0, VF_W), dh[0, VF_W);
 * the lanes of a failed test (1) into *bad. */
POSENC_INLINE void VFN(q8_0_scales_)(const float *x, size_t ng, float *ids, uint16_t *dh, vf *bad) {
  const vf zero = vf_set1(0.0f), one = vf_set1(1.0f);
  /* each block's lane-wise max of |x| and sum of x (the sum is finite unless an x is NaN or
   * infinite or the finite ones overflow it: then the test fails, and ggml's code is right
   * for every block) */
  vf m0 = zero, m1 = zero, m2 = zero, m3 = zero, s0 = zero, s1 = zero, s2 = zero, s3 = zero;
  for (size_t g = 0; g < ng; ++g) {
    const float *xb = x + g * ROPE_Q8_0_BLOCK;
    /* (VF_W, a power of two, divides 32 or is above it) */
    const vf v0 = VF_W <= ROPE_Q8_0_BLOCK ? vf_load(xb) : vf_load_n(xb, ROPE_Q8_0_BLOCK);
    vf m = vf_abs(v0), sum = v0;
    for (size_t j = VF_W; j < ROPE_Q8_0_BLOCK; j += VF_W) {
      const vf v = vf_load(xb + j);
      m = vf_max(m, vf_abs(v));
      sum = vf_add(sum, v);
    }
    if (g == 0)
      m0 = m, s0 = sum;
    else if (g == 1)
      m1 = m, s1 = sum;
    else if (g == 2)
      m2 = m, s2 = sum;
    else
      m3 = m, s3 = sum;
  }
  const vf sum = vf_add(vf_add(s0, s1), vf_add(s2, s3));
  const vf a = VFN(q8_0_max4_)(m0, m1, m2, m3), d = vf_div(a, vf_set1(127.0f));
  const vf id = vf_select(vf_eq_m(d, zero), zero, vf_div(one, d));
  vf_store(ids, id);
  vf_store_f16(dh, d);
  /* (the absent blocks' lanes: amax 0, id 0, r = 0.49999997) */
  const vf r = vf_add(vf_abs(vf_mul(a, id)), vf_set1(0.49999997f));
  *bad = vf_max(*bad, vf_max(vf_select(vf_eq_m(vf_sub(sum, sum), zero), zero, one),
                             vf_select(vf_lt_m(r, vf_set1(128.0f)), zero, one)));
}
static void VFN(quant_q8_0_)(const float *x, size_t dim, size_t n_heads, unsigned char *out,
                             size_t out_stride) {
  const vf half = vf_set1(0.49999997f), mhalf = vf_set1(-0.49999997f), zero = vf_set1(0.0f);
  const size_t blocks = dim / ROPE_Q8_0_BLOCK;
  float ids[ROPE_Q8_0_CHUNK * POSENC_MAX_LANES];
  uint16_t dh[ROPE_Q8_0_CHUNK * POSENC_MAX_LANES];
  /* the chunk's groups: from block b of head h, to head h1's block b1 */
  size_t h = 0, b = 0;
  while (h < n_heads) {
    vf bad = zero;
    size_t h1 = h, b1 = b, nc = 0;
    for (; nc < ROPE_Q8_0_CHUNK && h1 < n_heads; ++nc) {
      const size_t ng = blocks - b1 < ROPE_Q8_0_GROUP ? blocks - b1 : ROPE_Q8_0_GROUP;
      VFN(q8_0_scales_)
      (x + h1 * dim + b1 * ROPE_Q8_0_BLOCK, ng, ids + nc * VF_W, dh + nc * VF_W, &bad);
      b1 += ng;
      if (b1 == blocks) b1 = 0, ++h1;
    }
    const int ref = vf_hmax(bad) != 0.0f; /* ggml's code for the chunk's blocks */
    for (size_t i = 0; i < nc; ++i) {
      const size_t ng = blocks - b < ROPE_Q8_0_GROUP ? blocks - b : ROPE_Q8_0_GROUP;
      const float *xg = x + h * dim + b * ROPE_Q8_0_BLOCK;
      unsigned char *og = out + h * out_stride + b * ROPE_Q8_0_BYTES;
      b += ng;
      if (b == blocks) b = 0, ++h;
      for (size_t g = 0; g < ng; ++g) {
        const float *xb = xg + g * ROPE_Q8_0_BLOCK;
        unsigned char *ob = og + g * ROPE_Q8_0_BYTES;
        if (ref) {
          rope_q8_0_block_ref(xb, ob);
          continue;
        }
        const size_t lane = i * VF_W + VFN(q8_0_lane_)(g);
        memcpy(ob, &dh[lane], sizeof dh[lane]);
        const vf vid = vf_set1(ids[lane]);
        for (size_t j = 0; j < ROPE_Q8_0_BLOCK; j += VF_W) {
          const size_t k = ROPE_Q8_0_BLOCK - j < VF_W ? ROPE_Q8_0_BLOCK - j : VF_W;
          const vf v = vf_mul(k == VF_W ? vf_load(xb + j) : vf_load_n(xb + j, k), vid);
          const vf q = vf_add(v, vf_select(vf_lt_m(v, zero), mhalf, half));
          if (k == VF_W)
            vf_store_i8(ob + 2 + j, q);
          else
            vf_store_i8_n(ob + 2 + j, q, k);
        }
      }
    }
  }
}

/* The E4M3 codes (as quant_fp8_ below states them: up is its P, m its p 2^20) of y0 and y1,
 * their steps interleaved (one vector's chain of ~16 dependent operations alone kept too few
 * vectors in flight). */
POSENC_INLINE void VFN(fp8_codes2_)(vf y0, vf y1, vf *code0, vf *code1) {
  const vf vmax = vf_set1(448.0f), vmin_normal = vf_set1(0x1p-6f), two24 = vf_set1(0x1p24f);
  const vf two20 = vf_set1(0x1p20f), half = vf_set1(0.5f), two_m20 = vf_set1(0x1p-20f);
  const vf rebias = vf_set1(960.0f), two9 = vf_set1(512.0f), nan_code = vf_set1(127.0f);
  const vf sign_code = vf_set1(128.0f);
  const vi izero = vi_set1(0);
  const vf a0 = vf_min(vf_abs(y0), vmax), a1 = vf_min(vf_abs(y1), vmax);
  const vf c0 = vf_max(a0, vmin_normal), c1 = vf_max(a1, vmin_normal);
  const vf q0 = vf_mul(c0, two24), q1 = vf_mul(c1, two24);
  const vf up0 = vf_neg(vf_sub(vf_sub(q0, c0), q0)), up1 = vf_neg(vf_sub(vf_sub(q1, c1), q1));
  const vf p0 = vf_select(vf_lt_m(c0, up0), vf_mul(up0, half), up0);
  const vf p1 = vf_select(vf_lt_m(c1, up1), vf_mul(up1, half), up1);
  const vf m0 = vf_mul(p0, two20), m1 = vf_mul(p1, two20);
  const vf r0 = vf_sub(vf_add(a0, m0), m0), r1 = vf_sub(vf_add(a1, m1), m1);
  const vf normal0 = vf_sub(vf_mul(vf_from_vi(vi_bits(r0)), two_m20), rebias);
  const vf normal1 = vf_sub(vf_mul(vf_from_vi(vi_bits(r1)), two_m20), rebias);
  vf k0 = vf_select(vf_lt_m(r0, vmin_normal), vf_mul(r0, two9), normal0);
  vf k1 = vf_select(vf_lt_m(r1, vmin_normal), vf_mul(r1, two9), normal1);
  k0 = vf_select(vi_gt_m(izero, vi_bits(y0)), vf_add(k0, sign_code), k0);
  k1 = vf_select(vi_gt_m(izero, vi_bits(y1)), vf_add(k1, sign_code), k1);
  *code0 = vf_select(vf_eq_m(y0, y0), k0, nan_code); /* NaN: 0x7F, unsigned */
  *code1 = vf_select(vf_eq_m(y1, y1), k1, nan_code);
}
/* FP8 E4M3 (rope_driver.h): each x[i] / scale (vf_div: the scalar division's float; for a
 * normal power-of-two scale the product by its reciprocal, exact, so the same float: vLLM's
 * default k_scale 1.0, 16-24% of the call's time saved on avx512 / avx2) as
 * rope_fp8_e4m3_ref codes it, bit for bit, in float operations that each round once:
 * a = |y| clamped to 448 (larger values and infinities saturate); p = 2^floor(log2) of
 * c = max(a, 2^-6), from P = 2^ceil(log2 c) = -((q - c) - q) with q = c * 2^24 (Rump, Ogita
 * and Oishi's NextPowerTwo; q - c rounds to q - ulp(q) = q - 2 p, or is exact when c = p),
 * halved where c < P; then
 * r = (a + p 2^20) - p 2^20 rounds a to a multiple of p / 8 (the sum's ulp), nearest even,
 * once: the E4M3 value of a (below 2^-6, p = 2^-6 gives the subnormals' 2^-9). Its code is
 * bits(r) / 2^20 - 960 (the exponent rebiased, 3 mantissa bits), or r * 2^9 below 2^-6;
 * + 128 where y's sign bit is set; 127 for NaN (whatever its sign). The codes, exact small
 * floats, are stored as bytes (vf_store_i8), two vectors at a time (fp8_codes2_: Zen 4,
 * posenc_ab case 19, rope_out_fp8_neox 8 heads at 1-512 tokens against one at a time:
 * avx512 0.94-0.96x the time, avx2 0.91-0.92x, sse4 0.90x). */
static void VFN(quant_fp8_)(const float *x, size_t dim, float scale, unsigned char *out) {
  const vf vscale = vf_set1(scale);
  uint32_t sb;
  memcpy(&sb, &scale, sizeof sb);
  /* 2^k, k in [-126, 127]: 1 / scale = 2^-k is a float (2^-127 a subnormal), and v * 2^-k
   * and v / 2^k round the same real number. */
  const int by_reciprocal = (sb & 0x7fffffu) == 0 && (sb >> 23) != 0 && (sb >> 23) < 255;
  const vf vinv = vf_set1(1.0f / scale);
  size_t j = 0;
  for (; j + 2 * VF_W <= dim; j += 2 * VF_W) {
    const vf v0 = vf_load(x + j), v1 = vf_load(x + j + VF_W);
    const vf y0 = by_reciprocal ? vf_mul(v0, vinv) : vf_div(v0, vscale);
    const vf y1 = by_reciprocal ? vf_mul(v1, vinv) : vf_div(v1, vscale);
    vf c0, c1;
    VFN(fp8_codes2_)(y0, y1, &c0, &c1);
    vf_store_i8(out + j, c0);
    vf_store_i8(out + j + VF_W, c1);
  }
  for (; j < dim; j += VF_W) { /* (the second code of the pair unused) */
    const size_t k = dim - j < VF_W ? dim - j : VF_W;
    const vf v = k == VF_W ? vf_load(x + j) : vf_load_n(x + j, k);
    const vf y = by_reciprocal ? vf_mul(v, vinv) : vf_div(v, vscale);
    vf c, unused;
    VFN(fp8_codes2_)(y, y, &c, &unused);
    if (k == VF_W)
      vf_store_i8(out + j, c);
    else
      vf_store_i8_n(out + j, c, k);
  }
}

/* The f32 kernels' quantizer: the view's q8_0 blocks or FP8 bytes. */
static void VFN(quant_)(const rope_view *view, const float *x, size_t n_heads, unsigned char *out) {
  if (view->quant != ROPE_QUANT_FP8) {
    VFN(quant_q8_0_)(x, view->head_dim, n_heads, out, view->dst_head_stride);
    return;
  }
  for (size_t h = 0; h < n_heads; ++h) {
    const size_t d = view->head_dim;
    VFN(quant_fp8_)(x + h * d, d, view->fp8_scale, out + h * view->dst_head_stride);
  }
}

/* One rotate per storage pair, and the bodies of the exported variants (QK-norm views are
 * normalised inside rotate: no norm function, no f32 rotate for them). */
static void VFN(rotate_f32_)(const rope_view *view, const void *src_row, void *dst_row, size_t half,
                             size_t p0, size_t n, const float *c, const float *s, unsigned flags) {
  VFN(rotate_)(view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_F32, POSENC_ELEM_F32);
}
static void VFN(rotate_f32_pf_)(const rope_view *view, const void *src_row, void *dst_row,
                                size_t half, size_t p0, size_t n, const float *c, const float *s,
                                unsigned flags) {
  VFN(rotate_prefetch_)
  (view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_F32, POSENC_ELEM_F32);
}
POSENC_INLINE void rope_run_f32(const rope_args *args) {
  if (rope_drive(args, POSENC_ELEM_F32, POSENC_ELEM_F32, VFN(prepare_), 1, VFN(prepare_delta_),
                 VFN(rotate_f32_), NULL, NULL, VFN(quant_), VFN(rotate_f32_pf_), 1))
    vf_stream_fence();
}
static void VFN(rotate_bf16_)(const rope_view *view, const void *src_row, void *dst_row,
                              size_t half, size_t p0, size_t n, const float *c, const float *s,
                              unsigned flags) {
  VFN(rotate_)
  (view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_BF16, POSENC_ELEM_BF16);
}
static void VFN(rotate_bf16_pf_)(const rope_view *view, const void *src_row, void *dst_row,
                                 size_t half, size_t p0, size_t n, const float *c, const float *s,
                                 unsigned flags) {
  VFN(rotate_prefetch_)
  (view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_BF16, POSENC_ELEM_BF16);
}
POSENC_INLINE void rope_run_bf16(const rope_args *args) {
  if (rope_drive(args, POSENC_ELEM_BF16, POSENC_ELEM_BF16, VFN(prepare_), 1, VFN(prepare_delta_),
                 VFN(rotate_bf16_), NULL, NULL, NULL, VFN(rotate_bf16_pf_), 1))
    vf_stream_fence();
}
static void VFN(rotate_f16_)(const rope_view *view, const void *src_row, void *dst_row, size_t half,
                             size_t p0, size_t n, const float *c, const float *s, unsigned flags) {
  VFN(rotate_)(view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_F16, POSENC_ELEM_F16);
}
static void VFN(rotate_f16_pf_)(const rope_view *view, const void *src_row, void *dst_row,
                                size_t half, size_t p0, size_t n, const float *c, const float *s,
                                unsigned flags) {
  VFN(rotate_prefetch_)
  (view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_F16, POSENC_ELEM_F16);
}
POSENC_INLINE void rope_run_f16(const rope_args *args) {
  if (rope_drive(args, POSENC_ELEM_F16, POSENC_ELEM_F16, VFN(prepare_), 1, VFN(prepare_delta_),
                 VFN(rotate_f16_), NULL, NULL, NULL, VFN(rotate_f16_pf_), 1))
    vf_stream_fence();
}
static void VFN(rotate_f32_bf16_)(const rope_view *view, const void *src_row, void *dst_row,
                                  size_t half, size_t p0, size_t n, const float *c, const float *s,
                                  unsigned flags) {
  VFN(rotate_)(view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_F32, POSENC_ELEM_BF16);
}
POSENC_INLINE void rope_run_f32_bf16(const rope_args *args) {
  if (rope_drive(args, POSENC_ELEM_F32, POSENC_ELEM_BF16, VFN(prepare_), 1, VFN(prepare_delta_),
                 VFN(rotate_f32_bf16_), NULL, NULL, NULL, NULL, 1))
    vf_stream_fence();
}
static void VFN(rotate_f32_f16_)(const rope_view *view, const void *src_row, void *dst_row,
                                 size_t half, size_t p0, size_t n, const float *c, const float *s,
                                 unsigned flags) {
  VFN(rotate_)(view, src_row, dst_row, half, p0, n, c, s, flags, POSENC_ELEM_F32, POSENC_ELEM_F16);
}
POSENC_INLINE void rope_run_f32_f16(const rope_args *args) {
  if (rope_drive(args, POSENC_ELEM_F32, POSENC_ELEM_F16, VFN(prepare_), 1, VFN(prepare_delta_),
                 VFN(rotate_f32_f16_), NULL, NULL, NULL, NULL, 1))
    vf_stream_fence();
}
