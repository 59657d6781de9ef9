/* Partial vectors through a stack copy, for vector layers without masked loads and stores
 * that may be trusted next to an unmapped page (SSE4, NEON; AVX2's VMASKMOV suppresses
 * faults on real CPUs but not under every emulator, e.g. qemu 7.2's TCG). Exactly n < VF_W
 * elements of memory are touched; the other lanes read as 0. Included by a vector layer
 * after its vf, VF_W, vf_load and vf_store. */
#ifndef POSENC_VEC_PARTIAL_H
#define POSENC_VEC_PARTIAL_H

#include <string.h>

#ifdef VF_SIZELESS
#error "for fixed-width layers (a copy of VF_W elements): a sizeless layer uses predicates"
#endif

static inline vf vf_load_n(const float *p, size_t n) {
  float tmp[VF_W] = {0};
  memcpy(tmp, p, n * sizeof(float));
  return vf_load(tmp);
}

static inline void vf_store_n(float *p, vf v, size_t n) {
  float tmp[VF_W];
  vf_store(tmp, v);
  memcpy(p, tmp, n * sizeof(float));
}

#endif /* POSENC_VEC_PARTIAL_H */
