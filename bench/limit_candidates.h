/* The candidate loops for the limit rows: plain streams over one buffer (or, to copy, from one
 * buffer into another), so that a kernel's throughput can be stated as a fraction of what the
 * machine does on the same bytes.
 *
 * Every candidate is written once (limit_stream.h) and compiled once per vector layer
 * (limit_<layer>.c, each with its own ISA flags). A caller must check
 * posenc_isa_available(candidate->isa) before calling one. Buffers must be 64-byte aligned. */
#ifndef POSENC_BENCH_LIMIT_CANDIDATES_H
#define POSENC_BENCH_LIMIT_CANDIDATES_H

#include <stddef.h>

#include "posenc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum limit_kind {
  LIMIT_RMW = 0,   /* x[i] = x[i] * a + b: reads and writes every byte, in place */
  LIMIT_WRITE = 1, /* x[i] = b: store-only */
  LIMIT_COPY = 2   /* x[i] = src[i]: reads n floats and writes n other floats */
} limit_kind;

/* One pass over x[0, n) (copy: from src[0, n), a buffer apart from x; rmw and write ignore
 * src). a and b are runtime values so that the compiler cannot drop the arithmetic (rmw) or
 * the stores; copy ignores them. */
typedef void (*limit_fn)(float *x, const float *src, size_t n, float a, float b);

typedef struct limit_candidate {
  const char *name; /* e.g. "avx512/x4_pf512", "libc/memcpy" */
  limit_kind kind;
  posenc_isa isa;   /* the ISA whose instructions it uses (scalar: baseline only) */
  int non_temporal; /* streaming stores: worth trying only beyond the last-level cache */
  limit_fn fn;
} limit_candidate;

/* The compute limit of a vector layer: n_iter rounds of LIMIT_FMA_CHAINS independent chains
 * acc = acc * a + b, one vector FMA each (a multiply and an add where the layer has no FMA:
 * `fused` 0). Twelve chains cover two FMA units of four cycles' latency with room to spare
 * (fewer chains, or a sibling vCPU at work, read 2-3x low on this machine kind). Returns
 * the sum of the chains' lanes, so that the compiler keeps every operation. */
#define LIMIT_FMA_CHAINS 12
typedef struct limit_fma_loop {
  const char *name; /* the layer: "avx512", "avx2", "sse2", "portable" */
  posenc_isa isa;   /* as limit_candidate's */
  unsigned lanes;   /* floats per vector */
  int fused;        /* 1: one fused multiply-add instruction per operation */
  float (*fn)(size_t n_iter, float a, float b);
} limit_fma_loop;

/* The candidates of each vector layer (*count receives how many). The portable layer is
 * always built; the others where CMake defines POSENC_BENCH_LIMIT_<LAYER>. */
const limit_candidate *limit_candidates_portable(size_t *count);
const limit_candidate *limit_candidates_sse2(size_t *count);
const limit_candidate *limit_candidates_avx2(size_t *count);
const limit_candidate *limit_candidates_avx512(size_t *count);
/* The compute-limit loop of each vector layer (the same layers). */
const limit_fma_loop *limit_fma_portable(void);
const limit_fma_loop *limit_fma_sse2(void);
const limit_fma_loop *limit_fma_avx2(void);
const limit_fma_loop *limit_fma_avx512(void);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_BENCH_LIMIT_CANDIDATES_H */
