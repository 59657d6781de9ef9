/* The attention-score softmax for neon: the shared SIMD source (softmax_simd.h) over the
 * neon vector layer, which it includes first. Both entries run the same body (its passes
 * are chosen per call by type); they are two kernels of the dispatch table. */
#include "simd/vec_neon.h"

#include "softmax_simd.h"
#include "variants.h"

void posenc_softmax_f32_neon(const softmax_args *args) { softmax_run(args); }
void posenc_softmax_16_neon(const softmax_args *args) { softmax_run(args); }
