/* The avx512bf16 tier of alibi: the kernels that store bf16, from the shared SIMD source
 * (alibi_simd.h) over the avx512 vector layer with its AVX512_BF16 rounding
 * (POSENC_VEC_AVX512_BF16); the tier's other kernels are avx512's (dispatch/dispatch.c). */
#define POSENC_VEC_AVX512_BF16 1
#include "simd/vec_avx512.h"

#include "alibi_avx512_pair.h"

#include "alibi_simd.h"
#include "variants.h"

void posenc_alibi_bf16_avx512bf16(const alibi_args *args) { alibi_run_bf16(args); }
