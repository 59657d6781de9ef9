/* Learned embeddings for rvv, f32 rows: the shared SIMD source (learned_simd.h) over the rvv
 * vector layer, which it includes first. */
#include "simd/vec_rvv.h"

#include "learned_simd.h"
#include "variants.h"

void posenc_learned_add_f32_rvv(const learned_f32_args *args) { learned_run_add_f32(args); }
