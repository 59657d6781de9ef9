/* Operation-mix limits (limit_mix/<kernel>/<variant> rows): for a kernel whose rows are bound
 * by operations other than multiplies and FMAs (the 16-bit conversions, bf16 rounding in
 * integer operations, the permutes that widen bf16), a loop of exactly the vector operations
 * its variant needs for `elements` elements, counted in its source (the kernel's <op>_simd.h and
 * the layer's kernels/simd/vec_<isa>.h) and listed in `ops`: `chains` independent
 * chains in registers, each round's result the next round's input, no loads or stores (the
 * memory side of a roofline is the stream limit's). Loop control, address arithmetic and the
 * per-token cos/sin of RoPE (shared by every head) are not counted, so the time it gives is a
 * lower bound of the kernel's compute. The report takes a row's compute time as its
 * elements over this loop's measured elements per ns, in place of the multiply-class count
 * at limit_fma. */
#ifndef POSENC_BENCH_LIMIT_MIX_H
#define POSENC_BENCH_LIMIT_MIX_H

#include <stddef.h>

#include "posenc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct limit_mix_loop {
  const char *kernel;  /* the row groups' kernel name it bounds: "rope_bf16_neox" */
  const char *variant; /* the variant whose rows it bounds: "avx512bf16" */
  posenc_isa isa;      /* the tier the CPU must have to run it */
  unsigned elements;   /* elements one chain's round stands for */
  unsigned chains;     /* independent chains: 16 where the mix's state fits the registers
                          with them (fewer left the f16 mixes latency-bound: 8 chains ran
                          the avx2 ALiBi f16 mix at 0.78x), else 8 (16 spilled the bf16
                          ALiBi mix's three vectors per chain and ran it at 0.68x) */
  const char *ops;     /* the operations of one round */
  float (*fn)(size_t n_iter);
  const char *shape; /* NULL: every row group of the kernel; else the groups whose shape
                        has this text as a component between '/' (a mix of more operations
                        than the kernel's other groups need: the softmax's f32 mask), which
                        it serves in place of the kernel's NULL one; its row is
                        limit_mix/<kernel>/<variant>/<shape> */
} limit_mix_loop;

/* The mixes of each layer (*count receives how many), where CMake defines
 * POSENC_BENCH_LIMIT_<LAYER>. */
const limit_mix_loop *limit_mix_avx2(size_t *count);
const limit_mix_loop *limit_mix_avx512(size_t *count);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_BENCH_LIMIT_MIX_H */
