/* Limit loops in plain C (no intrinsics, no extra flags): what the compiler makes of a
 * simple stream on this target. Its "non-temporal" store would be a plain store, so the
 * layer offers no streaming variants. */
#include "limit_candidates.h"

#define LV_SUFFIX portable
#define LV_ISA POSENC_ISA_SCALAR
#define LV_W 1
#define LV_FUSED 0 /* a * b + c as written: the compiler may contract it where it can */
#define LV_HAS_STREAM 0

typedef float lv;
static inline lv lv_load(const float *p) { return *p; }
static inline void lv_store(float *p, lv v) { *p = v; }
static inline void lv_stream(float *p, lv v) { *p = v; }
static inline void lv_stream_fence(void) {}
static inline lv lv_set1(float x) { return x; }
static inline lv lv_fmadd(lv a, lv b, lv c) { return a * b + c; }

#include "limit_stream.h"
