/* Limit loops with AVX2 + FMA (this file alone is compiled with those flags). */
#include <immintrin.h>

#include "limit_candidates.h"

#define LV_SUFFIX avx2
#define LV_ISA POSENC_ISA_AVX2
#define LV_W 8
#define LV_FUSED 1
#define LV_HAS_STREAM 1

typedef __m256 lv;
static inline lv lv_load(const float *p) { return _mm256_load_ps(p); }
static inline void lv_store(float *p, lv v) { _mm256_store_ps(p, v); }
static inline void lv_stream(float *p, lv v) { _mm256_stream_ps(p, v); }
static inline void lv_stream_fence(void) { _mm_sfence(); }
static inline lv lv_set1(float x) { return _mm256_set1_ps(x); }
static inline lv lv_fmadd(lv a, lv b, lv c) { return _mm256_fmadd_ps(a, b, c); }

#include "limit_stream.h"
