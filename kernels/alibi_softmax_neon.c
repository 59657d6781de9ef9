/* alibi softmax f32 and bf16 for neon: the shared SIMD source over the neon vector layer. */
#include "simd/vec_neon.h"

#include "alibi_softmax_simd.h"
