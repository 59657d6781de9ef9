/* The attention-score softmax for sse4: the shared SIMD source (softmax_simd.h) over the
 * sse4 vector layer, which it includes first. Both entries run the same body (its passes
 * are chosen per call by type); they are two kernels of the dispatch table. */
#include "simd/vec_sse4.h"

#include "softmax_simd.h"
#include "variants.h"

void posenc_softmax_f32_sse4(const softmax_args *args) { softmax_run(args); }
void posenc_softmax_16_sse4(const softmax_args *args) { softmax_run(args); }
