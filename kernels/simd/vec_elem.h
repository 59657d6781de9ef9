/* Tensor elements of any storage type (kernels/half.h) through the vector layer, which is
 * included first: VF_W floats loaded from, or stored to, f32, bf16 or f16 storage at element
 * i of base. Loads are exact; stores round to nearest even (the layer's vf_store_bf16 and
 * vf_store_f16, and their non-temporal forms). The _n forms touch only elements [i, i + n), n <
 * VF_W. The type is a constant at every call of an always-inline kernel, so each loop is compiled
 * for one type and the switch disappears. */
#ifndef POSENC_VEC_ELEM_H
#define POSENC_VEC_ELEM_H

#include "../common.h"
#include "../half.h"

POSENC_INLINE vf ve_load(const void *base, size_t i, posenc_elem e) {
  switch (e) {
    case POSENC_ELEM_BF16:
      return vf_load_bf16((const uint16_t *)base + i);
    case POSENC_ELEM_F16:
      return vf_load_f16((const uint16_t *)base + i);
    default:
      return vf_load((const float *)base + i);
  }
}

POSENC_INLINE vf ve_load_n(const void *base, size_t i, size_t n, posenc_elem e) {
  switch (e) {
    case POSENC_ELEM_BF16:
      return vf_load_bf16_n((const uint16_t *)base + i, n);
    case POSENC_ELEM_F16:
      return vf_load_f16_n((const uint16_t *)base + i, n);
    default:
      return vf_load_n((const float *)base + i, n);
  }
}

POSENC_INLINE void ve_store(void *base, size_t i, vf v, posenc_elem e) {
  switch (e) {
    case POSENC_ELEM_BF16:
      vf_store_bf16((uint16_t *)base + i, v);
      break;
    case POSENC_ELEM_F16:
      vf_store_f16((uint16_t *)base + i, v);
      break;
    default:
      vf_store((float *)base + i, v);
  }
}

/* ve_store with an f32 vector written by one whole-vector store (the layer's vf_store_reload:
 * on AVX-512 one 512-bit store instead of vf_store's two 256-bit halves, which suit streams
 * from DRAM): for rows found in cache (RoPE's rotations that do not prefetch, ALiBi's f32
 * add under POSENC_PREFETCH_MIN_BYTES). */
POSENC_INLINE void ve_store_whole(void *base, size_t i, vf v, posenc_elem e) {
  if (e == POSENC_ELEM_F32)
    vf_store_reload((float *)base + i, v);
  else
    ve_store(base, i, v, e);
}

POSENC_INLINE void ve_store_n(void *base, size_t i, vf v, size_t n, posenc_elem e) {
  switch (e) {
    case POSENC_ELEM_BF16:
      vf_store_bf16_n((uint16_t *)base + i, v, n);
      break;
    case POSENC_ELEM_F16:
      vf_store_f16_n((uint16_t *)base + i, v, n);
      break;
    default:
      vf_store_n((float *)base + i, v, n);
  }
}

/* 2 * VF_W elements at i from two vectors, a first: two ve_store, or one wider conversion
 * and store where the layer has one (VF_HAVE_STORE2_BF16: vf_store2_bf16). */
POSENC_INLINE void ve_store2(void *base, size_t i, vf a, vf b, posenc_elem e) {
#ifdef VF_HAVE_STORE2_BF16
  if (e == POSENC_ELEM_BF16) {
    vf_store2_bf16((uint16_t *)base + i, a, b);
    return;
  }
#endif
  ve_store(base, i, a, e);
  ve_store(base, i + VF_W, b, e);
}

/* Two ve_store2: a then b at element i of p, c then d at element j of q (one branch for both
 * where the layer's vf_store2x2_bf16 tests its results). */
POSENC_INLINE void ve_store2x2(void *p, size_t i, vf a, vf b, void *q, size_t j, vf c, vf d,
                               posenc_elem e) {
#ifdef VF_HAVE_STORE2_BF16
  if (e == POSENC_ELEM_BF16) {
    vf_store2x2_bf16((uint16_t *)p + i, a, b, (uint16_t *)q + j, c, d);
    return;
  }
#endif
  ve_store2(p, i, a, b, e);
  ve_store2(q, j, c, d, e);
}

/* ve_load of a row that comes from DRAM (a call that streams its destination): f32 rows by
 * the layer's vf_load_stream where it has one (VF_HAVE_LOAD_STREAM). */
POSENC_INLINE vf ve_load_stream(const void *base, size_t i, posenc_elem e) {
#ifdef VF_HAVE_LOAD_STREAM
  if (e == POSENC_ELEM_F32) return vf_load_stream((const float *)base + i);
#endif
  return ve_load(base, i, e);
}

/* ve_load of a row that comes from DRAM and is written back (RoPE calls that prefetch): f32
 * rows by the layer's vf_load_rmw_stream where it has one (VF_HAVE_LOAD_RMW_STREAM). */
POSENC_INLINE vf ve_load_rmw_stream(const void *base, size_t i, posenc_elem e) {
#ifdef VF_HAVE_LOAD_RMW_STREAM
  if (e == POSENC_ELEM_F32) return vf_load_rmw_stream((const float *)base + i);
#endif
  return ve_load(base, i, e);
}

/* Non-temporal store of VF_W elements at i (vf_stream, vf_stream_bf16, vf_stream_f16), where
 * ve_stream_aligned: base + i aligned to VF_W elements (a float vector, or half of one). */
POSENC_INLINE int ve_stream_aligned(const void *base, size_t i, posenc_elem e) {
  return ((uintptr_t)base + i * posenc_elem_size(e)) % (VF_W * posenc_elem_size(e)) == 0;
}

POSENC_INLINE void ve_stream(void *base, size_t i, vf v, posenc_elem e) {
  switch (e) {
    case POSENC_ELEM_BF16:
      vf_stream_bf16((uint16_t *)base + i, v);
      break;
    case POSENC_ELEM_F16:
      vf_stream_f16((uint16_t *)base + i, v);
      break;
    default:
      vf_stream((float *)base + i, v);
  }
}

/* 2 VF_W elements at i, a then b, in one non-temporal store where the layer has one for the
 * type (VF_HAVE_STREAM2_16: 16-bit elements) and base + i is aligned to it (4 VF_W bytes):
 * 1 if written, else 0 and nothing written (the caller stores a and b apart). */
POSENC_INLINE int ve_stream2(void *base, size_t i, vf a, vf b, posenc_elem e) {
#ifdef VF_HAVE_STREAM2_16
  if (e != POSENC_ELEM_F32 && ((uintptr_t)base + 2 * i) % (4 * VF_W) == 0) {
    if (e == POSENC_ELEM_F16)
      vf_stream2_f16((uint16_t *)base + i, a, b);
    else
      vf_stream2_bf16((uint16_t *)base + i, a, b);
    return 1;
  }
#else
  (void)base, (void)i, (void)a, (void)b, (void)e;
#endif
  return 0;
}

#endif /* POSENC_VEC_ELEM_H */
