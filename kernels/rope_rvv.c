/* RoPE for rvv, f32, bf16 and f16 rows (and f32 rows rotated into bf16 / f16): the shared SIMD
 * source (rope_simd.h) over the rvv vector layer, which it includes first. */
#include "simd/vec_rvv.h"

#include "rope_simd.h"
#include "variants.h"

void posenc_rope_f32_rvv(const rope_args *args) { rope_run_f32(args); }
void posenc_rope_bf16_rvv(const rope_args *args) { rope_run_bf16(args); }
void posenc_rope_f16_rvv(const rope_args *args) { rope_run_f16(args); }
void posenc_rope_f32_bf16_rvv(const rope_args *args) { rope_run_f32_bf16(args); }
void posenc_rope_f32_f16_rvv(const rope_args *args) { rope_run_f32_f16(args); }
