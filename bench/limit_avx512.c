/* Limit loops with AVX-512 F (this file alone is compiled with the AVX-512 flags). */
#include <immintrin.h>

#include "limit_candidates.h"

#define LV_SUFFIX avx512
#define LV_ISA POSENC_ISA_AVX512
#define LV_W 16
#define LV_FUSED 1
#define LV_HAS_STREAM 1

typedef __m512 lv;
static inline lv lv_load(const float *p) { return _mm512_load_ps(p); }
static inline void lv_store(float *p, lv v) { _mm512_store_ps(p, v); }
static inline void lv_stream(float *p, lv v) { _mm512_stream_ps(p, v); }
static inline void lv_stream_fence(void) { _mm_sfence(); }
static inline lv lv_set1(float x) { return _mm512_set1_ps(x); }
static inline lv lv_fmadd(lv a, lv b, lv c) { return _mm512_fmadd_ps(a, b, c); }

#include "limit_stream.h"
