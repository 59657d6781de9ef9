/* The attention-score softmax for avx2: the shared SIMD source (softmax_simd.h) over the
 * avx2 vector layer, which it includes first. Both entries run the same body (its passes
 * are chosen per call by type); they are two kernels of the dispatch table. */
#include "simd/vec_avx2.h"

#include "softmax_simd.h"
#include "variants.h"

void posenc_softmax_f32_avx2(const softmax_args *args) { softmax_run(args); }
void posenc_softmax_16_avx2(const softmax_args *args) { softmax_run(args); }
