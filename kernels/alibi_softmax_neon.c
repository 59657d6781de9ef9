/* The fused ALiBi softmax for neon, f32 and bf16 scores: the shared SIMD source
 * (alibi_softmax_simd.h) over the neon vector layer, which it includes first. */
#include "simd/vec_neon.h"

#include "alibi_softmax_simd.h"
#include "variants.h"

void posenc_alibi_softmax_f32_neon(const alibi_softmax_args *args) { alibi_softmax_run_f32(args); }
void posenc_alibi_softmax_bf16_neon(const alibi_softmax_args *args) {
  alibi_softmax_run_bf16(args);
}
