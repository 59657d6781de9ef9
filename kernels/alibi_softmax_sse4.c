/* The fused ALiBi softmax for sse4, f32 and bf16 scores: the shared SIMD source
 * (alibi_softmax_simd.h) over the sse4 vector layer, which it includes first. */
#include "simd/vec_sse4.h"

#include "alibi_softmax_simd.h"
#include "variants.h"

void posenc_alibi_softmax_f32_sse4(const alibi_softmax_args *args) { alibi_softmax_run_f32(args); }
void posenc_alibi_softmax_bf16_sse4(const alibi_softmax_args *args) {
  alibi_softmax_run_bf16(args);
}
