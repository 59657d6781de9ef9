/* The SIMD RoPE kernel, written once against the vector layer (kernels/simd/vec_<isa>.h)
 * and compiled once per ISA by rope_<isa>.c, which includes that layer first. Defines
 * posenc_rope_f32_<isa>, posenc_rope_bf16_<isa> and posenc_rope_f16_<isa>. Same operations
 * as the scalar reference (rope_scalar.c): the angle reduction is bit-identical; sincos and
 * the rotation may differ by a few ulp. */
#include "angle_simd.h"
#include "rope_driver.h"
#include "simd/vec_elem.h"

#define ROPE_FN(name) VFN(name)

/* Writes cos/sin of pairs [i, i + VF_W) in the layout rotate() reads: times the attention
 * factor; s times the direction, and for GPTJ duplicated per pair as (-s_i, +s_i). */
typedef struct ROPE_FN(cs_format_) {
  vf att, s_sign;
  int gptj;
} ROPE_FN(cs_format_);

static inline ROPE_FN(cs_format_) ROPE_FN(format_)(float att, unsigned flags) {
  const float sign = (flags & POSENC_ROPE_INVERSE) ? -1.0f : 1.0f;
  const int gptj = (flags & POSENC_ROPE_GPTJ) != 0;
  float pattern[VF_W];
  for (int j = 0; j < VF_W; ++j) pattern[j] = (gptj && j % 2 == 0) ? -sign : sign;
  const vf av = vf_set1(att);
  return (ROPE_FN(cs_format_)){av, vf_mul(av, vf_load(pattern)), gptj};
}

static inline void ROPE_FN(store_cs_)(const ROPE_FN(cs_format_) * f, size_t i, vf cv, vf sv,
                                      float *c, float *s) {
  cv = vf_mul(cv, f->att);
  if (f->gptj) {
    vf_store(c + 2 * i, vf_zip_lo(cv, cv));
    vf_store(c + 2 * i + VF_W, vf_zip_hi(cv, cv));
    vf_store(s + 2 * i, vf_mul(vf_zip_lo(sv, sv), f->s_sign));
    vf_store(s + 2 * i + VF_W, vf_mul(vf_zip_hi(sv, sv), f->s_sign));
  } else {
    vf_store(c + i, cv);
    vf_store(s + i, vf_mul(sv, f->s_sign));
  }
}

/* Plan arrays are padded to POSENC_PLAN_PAD pairs and the buffers hold a whole chunk, so
 * the loops may run to the next multiple of VF_W without a tail. */
static void ROPE_FN(prepare_)(const struct posenc_rope_plan *plan, int32_t pos, unsigned flags,
                              float att, size_t p0, size_t n, float *c, float *s,
                              rope_state *state) {
  const ROPE_FN(cs_format_) format = ROPE_FN(format_)(att, flags);
  const angle_mode mode = angle_mode_of(plan, pos, (flags & POSENC_ROPE_F32_ANGLES) != 0);
  const vd pd = vd_set1((double)pos);
  const vf pf = vf_set1((float)pos);
  for (size_t i = 0; i < n; i += VF_W) {
    vf sv, cv;
    ROPE_FN(sincos_pairs_)(plan, mode, pd, pf, p0 + i, &sv, &cv);
    if (state) ROPE_FN(save_state_)(state, i, cv, sv);
    ROPE_FN(store_cs_)(&format, i, cv, sv, c, s);
  }
}

/* Stepping runs only for single-chunk plans (p0 = 0): state index i is pair i. */
static void ROPE_FN(advance_)(const double *cos_w, const double *sin_w, unsigned flags, float att,
                              size_t n, rope_state *state, float *c, float *s) {
  const ROPE_FN(cs_format_) format = ROPE_FN(format_)(att, flags);
  for (size_t i = 0; i < n; i += VF_W) {
    vf cv, sv;
    ROPE_FN(step_)(state, i, cos_w, sin_w, &cv, &sv);
    ROPE_FN(store_cs_)(&format, i, cv, sv, c, s);
  }
}

/* Re-rotation: cos/sin of the difference of the two plans' angles (rope_driver.h). */
static void ROPE_FN(prepare_delta_)(const struct posenc_rope_plan *from, int32_t from_pos,
                                    const struct posenc_rope_plan *to, int32_t to_pos,
                                    unsigned flags, float att, size_t p0, size_t n, float *c,
                                    float *s, rope_state *state) {
  const ROPE_FN(cs_format_) format = ROPE_FN(format_)(att, flags);
  const int f32 = (flags & POSENC_ROPE_F32_ANGLES) != 0;
  const angle_mode from_mode = angle_mode_of(from, from_pos, f32);
  const angle_mode to_mode = angle_mode_of(to, to_pos, f32);
  const vd from_pd = vd_set1((double)from_pos), to_pd = vd_set1((double)to_pos);
  const vf from_pf = vf_set1((float)from_pos), to_pf = vf_set1((float)to_pos);
  for (size_t i = 0; i < n; i += VF_W) {
    vd a_lo, a_hi, b_lo, b_hi;
    ROPE_FN(angles_vd_)(from, from_mode, from_pd, from_pf, p0 + i, &a_lo, &a_hi);
    ROPE_FN(angles_vd_)(to, to_mode, to_pd, to_pf, p0 + i, &b_lo, &b_hi);
    const vf angle =
        vf_from_vd(ROPE_FN(angle_difference_)(b_lo, a_lo), ROPE_FN(angle_difference_)(b_hi, a_hi));
    vf sv, cv;
    vf_sincos(angle, &sv, &cv);
    if (state) ROPE_FN(save_state_)(state, i, cv, sv);
    ROPE_FN(store_cs_)(&format, i, cv, sv, c, s);
  }
}

/* Vectors of cos/sin held in registers while they are applied to every head: 64 pairs
 * (R = 128, the most common rotary size); on narrower ISAs the compiler spills part of the
 * block, which measured faster than the head-by-head order. */
#define ROPE_BLOCK (64 / VF_W)

/* The rotation below is written once for every storage type e (vec_elem.h): elements are
 * widened to float exactly, rotated in float, and rounded to the storage type on store, so
 * a bf16 or f16 result is the f32 kernel's result rounded once. e is a constant at every
 * call (one rotate_<type>_ per type), so each loop is compiled for one type. Element
 * indices are relative to the row. */
#define ROPE_INLINE static inline __attribute__((always_inline))

/* NEOX: u' = u*c - v*s, v' = v*c + u*s on one vector of pairs (x[iu + j], x[iv + j]); the
 * _part_ form touches only the first m lanes. */
ROPE_INLINE void ROPE_FN(neox_vec_)(void *x, size_t iu, size_t iv, vf c, vf s, posenc_elem e) {
  const vf u = ve_load(x, iu, e), v = ve_load(x, iv, e);
  ve_store(x, iu, vf_fnmadd(v, s, vf_mul(u, c)), e);
  ve_store(x, iv, vf_fmadd(u, s, vf_mul(v, c)), e);
}

ROPE_INLINE void ROPE_FN(neox_part_)(void *x, size_t iu, size_t iv, vf c, vf s, size_t m,
                                     posenc_elem e) {
  const vf u = ve_load_n(x, iu, m, e), v = ve_load_n(x, iv, m, e);
  ve_store_n(x, iu, vf_fnmadd(v, s, vf_mul(u, c)), m, e);
  ve_store_n(x, iv, vf_fmadd(u, s, vf_mul(v, c)), m, e);
}

/* GPTJ: x' = x * (c, c) + swap(x) * (-s, s). */
ROPE_INLINE void ROPE_FN(gptj_vec_)(void *x, size_t i, vf c, vf s, posenc_elem e) {
  const vf v = ve_load(x, i, e);
  ve_store(x, i, vf_fmadd(vf_swap_pairs(v), s, vf_mul(v, c)), e);
}

ROPE_INLINE void ROPE_FN(gptj_part_)(void *x, size_t i, vf c, vf s, size_t m, posenc_elem e) {
  const vf v = ve_load_n(x, i, m, e);
  ve_store_n(x, i, vf_fmadd(vf_swap_pairs(v), s, vf_mul(v, c)), m, e);
}

/* Two loop orders over the heads of one token's row (measured: see README):
 *  - one pass, when the chunk is exactly the 64-pair block (R = 128): cos/sin stay in
 *    registers while every head is streamed front to back;
 *  - otherwise head by head, front to back, cos/sin loaded from the (L1-resident) buffer.
 *    Several passes over the row with registers reloaded per block were faster in cache but
 *    halved the throughput of rows streamed from DRAM on SSE4/AVX2, so they are not used. */

/* NEOX pairs [p0, p0 + n) of every head. */
ROPE_INLINE void ROPE_FN(rotate_neox_)(const rope_view *view, void *row, size_t half, size_t p0,
                                       size_t n, const float *c, const float *s, posenc_elem e) {
  const size_t nh = view->n_heads, hs = view->head_stride;
  if (n == ROPE_BLOCK * VF_W) {
    vf cb[ROPE_BLOCK], sb[ROPE_BLOCK];
    for (int b = 0; b < ROPE_BLOCK; ++b) {
      cb[b] = vf_load(c + b * VF_W);
      sb[b] = vf_load(s + b * VF_W);
    }
    for (size_t h = 0; h < nh; ++h) {
      const size_t u = h * hs + p0;
      for (int b = 0; b < ROPE_BLOCK; ++b)
        ROPE_FN(neox_vec_)(row, u + b * VF_W, u + half + b * VF_W, cb[b], sb[b], e);
    }
    return;
  }
  for (size_t h = 0; h < nh; ++h) {
    const size_t u = h * hs + p0, v = u + half;
    size_t i = 0;
    for (; i + VF_W <= n; i += VF_W)
      ROPE_FN(neox_vec_)(row, u + i, v + i, vf_load(c + i), vf_load(s + i), e);
    if (i < n) ROPE_FN(neox_part_)(row, u + i, v + i, vf_load(c + i), vf_load(s + i), n - i, e);
  }
}

/* GPTJ: the 2n interleaved elements from 2*p0, in the same two orders. */
ROPE_INLINE void ROPE_FN(rotate_gptj_)(const rope_view *view, void *row, size_t p0, size_t n,
                                       const float *c, const float *s, posenc_elem e) {
  const size_t nh = view->n_heads, hs = view->head_stride, m = 2 * n;
  if (m == 2 * ROPE_BLOCK * VF_W) {
    vf cb[2 * ROPE_BLOCK], sb[2 * ROPE_BLOCK];
    for (int b = 0; b < 2 * ROPE_BLOCK; ++b) {
      cb[b] = vf_load(c + b * VF_W);
      sb[b] = vf_load(s + b * VF_W);
    }
    for (size_t h = 0; h < nh; ++h)
      for (int b = 0; b < 2 * ROPE_BLOCK; ++b)
        ROPE_FN(gptj_vec_)(row, h * hs + 2 * p0 + b * VF_W, cb[b], sb[b], e);
    return;
  }
  for (size_t h = 0; h < nh; ++h) {
    const size_t x = h * hs + 2 * p0;
    size_t i = 0;
    for (; i + VF_W <= m; i += VF_W)
      ROPE_FN(gptj_vec_)(row, x + i, vf_load(c + i), vf_load(s + i), e);
    if (i < m) ROPE_FN(gptj_part_)(row, x + i, vf_load(c + i), vf_load(s + i), m - i, e);
  }
}

ROPE_INLINE void ROPE_FN(rotate_)(const rope_view *view, void *row, size_t half, size_t p0,
                                  size_t n, const float *c, const float *s, unsigned flags,
                                  posenc_elem e) {
  if (flags & POSENC_ROPE_GPTJ)
    ROPE_FN(rotate_gptj_)(view, row, p0, n, c, s, e);
  else
    ROPE_FN(rotate_neox_)(view, row, half, p0, n, c, s, e);
}

/* One rotate and one entry point per storage type. */
#define ROPE_DEFINE_STORAGE(type, elem)                                                           \
  static void ROPE_FN(rotate_##type##_)(const rope_view *view, void *row, size_t half, size_t p0, \
                                        size_t n, const float *c, const float *s,                 \
                                        unsigned flags) {                                         \
    ROPE_FN(rotate_)(view, row, half, p0, n, c, s, flags, elem);                                  \
  }                                                                                               \
  void ROPE_FN(posenc_rope_##type##_)(const rope_args *args) {                                    \
    rope_drive(args, elem, ROPE_FN(prepare_), ROPE_FN(advance_), ROPE_FN(prepare_delta_),         \
               ROPE_FN(rotate_##type##_));                                                        \
  }

ROPE_DEFINE_STORAGE(f32, POSENC_ELEM_F32)
ROPE_DEFINE_STORAGE(bf16, POSENC_ELEM_BF16)
ROPE_DEFINE_STORAGE(f16, POSENC_ELEM_F16)
