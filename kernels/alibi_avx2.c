/* alibi for avx2: the shared SIMD source over the avx2 vector layer (first), for f32,
 * bf16 and f16 scores. */
#include "simd/vec_avx2.h"

#include "alibi_simd.h"
