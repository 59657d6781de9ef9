/* sinusoid f32 for avx512: the shared SIMD source over the avx512 vector layer (first). */
#include "simd/vec_avx512.h"

#include "sinusoid_simd.h"
