/* The attention-score softmax for sve: the shared SIMD source (softmax_simd.h) over the
 * sve vector layer, which it includes first. Both entries run the same body (its passes
 * are chosen per call by type); they are two kernels of the dispatch table. */
#include "simd/vec_sve.h"

#include "softmax_simd.h"
#include "variants.h"

void posenc_softmax_f32_sve(const softmax_args *args) { softmax_run(args); }
void posenc_softmax_16_sve(const softmax_args *args) { softmax_run(args); }
