/* Learned embeddings for sve, f32 rows: the shared SIMD source (learned_simd.h) over the sve
 * vector layer, which it includes first. */
#include "simd/vec_sve.h"

#include "learned_simd.h"
#include "variants.h"

void posenc_learned_add_f32_sve(const learned_f32_args *args) { learned_run_add_f32(args); }
