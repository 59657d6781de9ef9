/* Learned embeddings for avx2, f32 rows: the shared SIMD source (learned_simd.h) over the avx2
 * vector layer, which it includes first. */
#include "simd/vec_avx2.h"

#include "learned_simd.h"
#include "variants.h"

void posenc_learned_add_f32_avx2(const learned_f32_args *args) { learned_run_add_f32(args); }
