/* sinusoid for sse4: the shared SIMD source over the sse4 vector layer (first), for f32,
 * bf16 and f16 rows. */
#include "simd/vec_sse4.h"

#include "sinusoid_simd.h"
