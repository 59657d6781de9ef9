/* The avx512bf16 tier of rope: the kernels that store bf16, from the shared SIMD source
 * (rope_simd.h) over the avx512 vector layer with its AVX512_BF16 rounding
 * (POSENC_VEC_AVX512_BF16); the tier's other kernels are avx512's (dispatch/dispatch.c). */
#define POSENC_VEC_AVX512_BF16 1
#include "simd/vec_avx512.h"

#include "rope_simd.h"
#include "variants.h"

void posenc_rope_bf16_avx512bf16(const rope_args *args) { rope_run_bf16(args); }
void posenc_rope_f32_bf16_avx512bf16(const rope_args *args) { rope_run_f32_bf16(args); }
