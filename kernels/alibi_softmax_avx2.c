/* alibi softmax f32 and bf16 for avx2: the shared SIMD source over the avx2 vector layer. */
#include "simd/vec_avx2.h"

#include "alibi_softmax_simd.h"
