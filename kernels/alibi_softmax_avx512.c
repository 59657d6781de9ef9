/* alibi softmax f32 and bf16 for avx512: the shared SIMD source over the avx512 vector layer. */
#include "simd/vec_avx512.h"

#include "alibi_softmax_simd.h"
