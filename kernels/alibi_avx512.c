/* alibi for avx512: the shared SIMD source over the avx512 vector layer (first), for f32,
 * bf16 and f16 scores. */
#include "simd/vec_avx512.h"

#include "alibi_simd.h"
