/* The fused ALiBi softmax for avx512, f32 and bf16 scores: the shared SIMD source
 * (alibi_softmax_simd.h) over the avx512 vector layer, which it includes first. */
#include "simd/vec_avx512.h"

#include "alibi_softmax_simd.h"
#include "variants.h"

void posenc_alibi_softmax_f32_avx512(const alibi_softmax_args *args) {
  alibi_softmax_run_f32(args);
}
void posenc_alibi_softmax_bf16_avx512(const alibi_softmax_args *args) {
  alibi_softmax_run_bf16(args);
}
