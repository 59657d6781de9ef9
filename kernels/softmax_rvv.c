/* The attention-score softmax for rvv: the shared SIMD source (softmax_simd.h) over the
 * rvv vector layer, which it includes first. Both entries run the same body (its passes
 * are chosen per call by type); they are two kernels of the dispatch table. */
#include "simd/vec_rvv.h"

#include "softmax_simd.h"
#include "variants.h"

void posenc_softmax_f32_rvv(const softmax_args *args) { softmax_run(args); }
void posenc_softmax_16_rvv(const softmax_args *args) { softmax_run(args); }
