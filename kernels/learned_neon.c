/* learned f32 for neon: the shared SIMD source over the neon vector layer (first). */
#include "simd/vec_neon.h"

#include "learned_simd.h"
