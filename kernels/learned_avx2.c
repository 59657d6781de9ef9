/* learned f32 for avx2: the shared SIMD source over the avx2 vector layer (first). */
#include "simd/vec_avx2.h"

#include "learned_simd.h"
