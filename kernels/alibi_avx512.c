/* ALiBi for avx512, f32, bf16 and f16 scores: the shared SIMD source (alibi_simd.h) over the avx512
 * vector layer, which it includes first. */
#include "simd/vec_avx512.h"

#include "alibi_avx512_pair.h"
#include "alibi_simd.h"
#include "variants.h"

void posenc_alibi_f32_avx512(const alibi_args *args) { alibi_run_f32(args); }
void posenc_alibi_bf16_avx512(const alibi_args *args) { alibi_run_bf16(args); }
void posenc_alibi_f16_avx512(const alibi_args *args) { alibi_run_f16(args); }
