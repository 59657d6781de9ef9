/* Learned embeddings for neon, f32 rows: the shared SIMD source (learned_simd.h) over the neon
 * vector layer, which it includes first. */
#include "simd/vec_neon.h"

#include "learned_simd.h"
#include "variants.h"

void posenc_learned_add_f32_neon(const learned_f32_args *args) { learned_run_add_f32(args); }
