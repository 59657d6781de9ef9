/* Partial f16 vectors through a stack copy, as vec_partial.h does for floats: exactly n <
 * VF_W elements of memory are touched; the other lanes read as 0. Included by a vector
 * layer after its vf_load_f16 and vf_store_f16. */
#ifndef POSENC_VEC_PARTIAL_F16_H
#define POSENC_VEC_PARTIAL_F16_H

#include <string.h>

#ifdef VF_SIZELESS
#error "for fixed-width layers (a copy of VF_W elements): a sizeless layer uses predicates"
#endif

static inline vf vf_load_f16_n(const uint16_t *p, size_t n) {
  uint16_t tmp[VF_W] = {0};
  memcpy(tmp, p, n * sizeof(uint16_t));
  return vf_load_f16(tmp);
}

static inline void vf_store_f16_n(uint16_t *p, vf v, size_t n) {
  uint16_t tmp[VF_W];
  vf_store_f16(tmp, v);
  memcpy(p, tmp, n * sizeof(uint16_t));
}

#endif /* POSENC_VEC_PARTIAL_F16_H */
