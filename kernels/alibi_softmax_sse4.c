/* alibi softmax f32 and bf16 for sse4: the shared SIMD source over the sse4 vector layer. */
#include "simd/vec_sse4.h"

#include "alibi_softmax_simd.h"
