/* Learned embeddings for avx512, f32 rows: the shared SIMD source (learned_simd.h) over the avx512
 * vector layer, which it includes first. */
#include "simd/vec_avx512.h"

#include "learned_simd.h"
#include "variants.h"

void posenc_learned_add_f32_avx512(const learned_f32_args *args) { learned_run_add_f32(args); }
