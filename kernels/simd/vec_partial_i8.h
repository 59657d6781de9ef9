/* Partial byte stores through a stack copy, as vec_partial.h does for floats: exactly n <
 * VF_W bytes of memory are written. Included by a vector layer after its vf_store_i8. */
#ifndef POSENC_VEC_PARTIAL_I8_H
#define POSENC_VEC_PARTIAL_I8_H

#include <string.h>

#ifdef VF_SIZELESS
#error "for fixed-width layers (a copy of VF_W elements): a sizeless layer uses predicates"
#endif

static inline void vf_store_i8_n(unsigned char *p, vf v, size_t n) {
  unsigned char tmp[VF_W];
  vf_store_i8(tmp, v);
  memcpy(p, tmp, n);
}

#endif /* POSENC_VEC_PARTIAL_I8_H */
