/* alibi for neon: the shared SIMD source over the neon vector layer (first), for f32,
 * bf16 and f16 scores. */
#include "simd/vec_neon.h"

#include "alibi_simd.h"
