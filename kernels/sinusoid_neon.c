/* sinusoid for neon: the shared SIMD source over the neon vector layer (first), for f32,
 * bf16 and f16 rows. */
#include "simd/vec_neon.h"

#include "sinusoid_simd.h"
