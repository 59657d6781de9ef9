/* sinusoid f32 for neon: the shared SIMD source over the neon vector layer (first). */
#include "simd/vec_neon.h"

#include "sinusoid_simd.h"
