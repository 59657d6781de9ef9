/* sinusoid for avx2: the shared SIMD source over the avx2 vector layer (first), for f32,
 * bf16 and f16 rows. */
#include "simd/vec_avx2.h"

#include "sinusoid_simd.h"
