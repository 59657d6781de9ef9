/* Limit loops with SSE2, the x86-64 baseline (no extra flags). */
#include <emmintrin.h>

#include "limit_candidates.h"

#define LV_SUFFIX sse2
#define LV_ISA POSENC_ISA_SCALAR
#define LV_W 4
#define LV_FUSED 0
#define LV_HAS_STREAM 1

typedef __m128 lv;
static inline lv lv_load(const float *p) { return _mm_load_ps(p); }
static inline void lv_store(float *p, lv v) { _mm_store_ps(p, v); }
static inline void lv_stream(float *p, lv v) { _mm_stream_ps(p, v); }
static inline void lv_stream_fence(void) { _mm_sfence(); }
static inline lv lv_set1(float x) { return _mm_set1_ps(x); }
static inline lv lv_fmadd(lv a, lv b, lv c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }

#include "limit_stream.h"
