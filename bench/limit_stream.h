/* The limit loops, written once against a tiny vector layer and compiled once per layer by
 * limit_<layer>.c, which defines first:
 *   LV_SUFFIX        name suffix of the layer (avx512, avx2, sse2, portable)
 *   LV_ISA           the posenc_isa a CPU needs to run it
 *   LV_W             floats per vector
 *   LV_HAS_STREAM    1 if lv_stream is a real non-temporal store
 *   LV_FUSED         1 if lv_fmadd is one fused multiply-add instruction
 *   lv, lv_load, lv_store (aligned), lv_stream, lv_stream_fence, lv_set1, lv_fmadd
 * Three kinds: rmw (in place), write (store-only) and copy (from a source buffer into x);
 * and the compute limit (limit_fma_<layer>, independent chains of lv_fmadd).
 * Variants differ in unrolling (vectors per iteration), software prefetch a fixed distance
 * ahead, and non-temporal stores; copy has the same variants as rmw. The table at the end
 * lists this layer's candidates. */
#include "limit_candidates.h"

#define LV_CAT2(a, b) a##b
#define LV_CAT(a, b) LV_CAT2(a, b)
#define LV_STR2(a) #a
#define LV_STR(a) LV_STR2(a)

#define LIMIT_MAX_UNROLL 8
#define LIMIT_LINE_FLOATS 16 /* one 64-byte cache line */

/* (kind, variant, unroll, prefetch distance in bytes, non-temporal stores) */
#define LIMIT_VARIANTS(X)         \
  X(rmw, x4, 4, 0, 0)             \
  X(rmw, x8, 8, 0, 0)             \
  X(rmw, x4_pf512, 4, 512, 0)     \
  X(rmw, x4_pf2k, 4, 2048, 0)     \
  X(rmw, x4_pf16k, 4, 16384, 0)   \
  X(write, x4, 4, 0, 0)           \
  X(write, x8, 8, 0, 0)           \
  X(write, x4_pf512, 4, 512, 0)   \
  X(write, x4_pf16k, 4, 16384, 0) \
  X(copy, x4, 4, 0, 0)            \
  X(copy, x8, 8, 0, 0)            \
  X(copy, x4_pf512, 4, 512, 0)    \
  X(copy, x4_pf2k, 4, 2048, 0)    \
  X(copy, x4_pf16k, 4, 16384, 0)
#define LIMIT_STREAM_VARIANTS(X) \
  X(rmw, x4_nt, 4, 0, 1)         \
  X(write, x4_nt, 4, 0, 1)       \
  X(copy, x4_nt, 4, 0, 1)

#define LIMIT_FN(kind, variant) LV_CAT(limit_##kind##_##variant##_, LV_SUFFIX)

/* Prefetches (for writing) every cache line of the block of `floats` at p, `distance` floats
 * ahead. Prefetches past the end of the buffer are harmless: they never fault. */
static inline __attribute__((always_inline)) void limit_prefetch_block(const float *p,
                                                                       size_t floats,
                                                                       size_t distance) {
  for (size_t j = 0; j < floats; j += LIMIT_LINE_FLOATS) __builtin_prefetch(p + j + distance, 1, 3);
}

/* The same for reading (the copy's source). */
static inline __attribute__((always_inline)) void limit_prefetch_read(const float *p, size_t floats,
                                                                      size_t distance) {
  for (size_t j = 0; j < floats; j += LIMIT_LINE_FLOATS) __builtin_prefetch(p + j + distance, 0, 3);
}

static inline __attribute__((always_inline)) void limit_put(float *p, lv v, int non_temporal) {
  if (non_temporal)
    lv_stream(p, v);
  else
    lv_store(p, v);
}

/* unroll, prefetch_bytes and non_temporal are constants at every call, so each variant
 * compiles to its own loop without the branches. */
static inline __attribute__((always_inline)) void limit_rmw_body(float *x, const float *src,
                                                                 size_t n, float a, float b,
                                                                 size_t unroll,
                                                                 size_t prefetch_bytes,
                                                                 int non_temporal) {
  (void)src;
  const lv va = lv_set1(a), vb = lv_set1(b);
  const size_t block = unroll * LV_W;
  size_t i = 0;
  for (; i + block <= n; i += block) {
    if (prefetch_bytes) limit_prefetch_block(x + i, block, prefetch_bytes / sizeof(float));
    lv r[LIMIT_MAX_UNROLL];
    for (size_t u = 0; u < unroll; ++u) r[u] = lv_fmadd(lv_load(x + i + u * LV_W), va, vb);
    for (size_t u = 0; u < unroll; ++u) limit_put(x + i + u * LV_W, r[u], non_temporal);
  }
  for (; i < n; ++i) x[i] = x[i] * a + b;
  if (non_temporal) lv_stream_fence();
}

static inline __attribute__((always_inline)) void limit_write_body(float *x, const float *src,
                                                                   size_t n, float a, float b,
                                                                   size_t unroll,
                                                                   size_t prefetch_bytes,
                                                                   int non_temporal) {
  (void)src;
  (void)a;
  const lv vb = lv_set1(b);
  const size_t block = unroll * LV_W;
  size_t i = 0;
  for (; i + block <= n; i += block) {
    if (prefetch_bytes) limit_prefetch_block(x + i, block, prefetch_bytes / sizeof(float));
    for (size_t u = 0; u < unroll; ++u) limit_put(x + i + u * LV_W, vb, non_temporal);
  }
  for (; i < n; ++i) x[i] = b;
  if (non_temporal) lv_stream_fence();
}

/* x[i] = src[i]: every vector loaded from src and stored to x (prefetch: the source for
 * reading and the destination for writing, the same distance ahead). */
static inline __attribute__((always_inline)) void limit_copy_body(float *x, const float *src,
                                                                  size_t n, float a, float b,
                                                                  size_t unroll,
                                                                  size_t prefetch_bytes,
                                                                  int non_temporal) {
  (void)a;
  (void)b;
  const size_t block = unroll * LV_W;
  size_t i = 0;
  for (; i + block <= n; i += block) {
    if (prefetch_bytes) {
      limit_prefetch_read(src + i, block, prefetch_bytes / sizeof(float));
      limit_prefetch_block(x + i, block, prefetch_bytes / sizeof(float));
    }
    lv r[LIMIT_MAX_UNROLL];
    for (size_t u = 0; u < unroll; ++u) r[u] = lv_load(src + i + u * LV_W);
    for (size_t u = 0; u < unroll; ++u) limit_put(x + i + u * LV_W, r[u], non_temporal);
  }
  for (; i < n; ++i) x[i] = src[i];
  if (non_temporal) lv_stream_fence();
}

#define LIMIT_KIND_rmw LIMIT_RMW
#define LIMIT_KIND_write LIMIT_WRITE
#define LIMIT_KIND_copy LIMIT_COPY

#define LIMIT_DEFINE(kind, variant, unroll, prefetch_bytes, non_temporal)                       \
  static void LIMIT_FN(kind, variant)(float *x, const float *src, size_t n, float a, float b) { \
    limit_##kind##_body(x, src, n, a, b, unroll, prefetch_bytes, non_temporal);                 \
  }
#define LIMIT_ENTRY(kind, variant, unroll, prefetch_bytes, non_temporal)    \
  {LV_STR(LV_SUFFIX) "/" #variant, LIMIT_KIND_##kind, LV_ISA, non_temporal, \
   LIMIT_FN(kind, variant)},

LIMIT_VARIANTS(LIMIT_DEFINE)
#if LV_HAS_STREAM
LIMIT_STREAM_VARIANTS(LIMIT_DEFINE)
#endif

static const limit_candidate limit_table[] = {LIMIT_VARIANTS(LIMIT_ENTRY)
#if LV_HAS_STREAM
                                                  LIMIT_STREAM_VARIANTS(LIMIT_ENTRY)
#endif
};

const limit_candidate *LV_CAT(limit_candidates_, LV_SUFFIX)(size_t *count) {
  *count = sizeof limit_table / sizeof limit_table[0];
  return limit_table;
}

/* The compute limit: LIMIT_FMA_CHAINS chains, each one lv_fmadd per round on its own
 * accumulator (registers: no memory traffic in the loop). */
static float LV_CAT(limit_fma_loop_, LV_SUFFIX)(size_t n_iter, float a, float b) {
  lv acc[LIMIT_FMA_CHAINS];
  for (int c = 0; c < LIMIT_FMA_CHAINS; ++c) acc[c] = lv_set1((float)c);
  const lv va = lv_set1(a), vb = lv_set1(b);
  for (size_t i = 0; i < n_iter; ++i)
    for (int c = 0; c < LIMIT_FMA_CHAINS; ++c) acc[c] = lv_fmadd(acc[c], va, vb);
  _Alignas(64) float lanes[LV_W];
  float sum = 0;
  for (int c = 0; c < LIMIT_FMA_CHAINS; ++c) {
    lv_store(lanes, acc[c]);
    for (int l = 0; l < LV_W; ++l) sum += lanes[l];
  }
  return sum;
}

static const limit_fma_loop limit_fma_entry = {LV_STR(LV_SUFFIX), LV_ISA, LV_W, LV_FUSED,
                                               LV_CAT(limit_fma_loop_, LV_SUFFIX)};

const limit_fma_loop *LV_CAT(limit_fma_, LV_SUFFIX)(void) { return &limit_fma_entry; }
