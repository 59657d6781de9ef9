/* ALiBi for rvv, f32, bf16 and f16 scores: the shared SIMD source (alibi_simd.h) over the rvv
 * vector layer, which it includes first. */
#include "simd/vec_rvv.h"

#include "alibi_simd.h"
#include "variants.h"

void posenc_alibi_f32_rvv(const alibi_args *args) { alibi_run_f32(args); }
void posenc_alibi_bf16_rvv(const alibi_args *args) { alibi_run_bf16(args); }
void posenc_alibi_f16_rvv(const alibi_args *args) { alibi_run_f16(args); }
