/* Sinusoidal tables for rvv, f32, bf16 and f16 rows: the shared SIMD source (sinusoid_simd.h) over
 * the rvv vector layer, which it includes first. */
#include "simd/vec_rvv.h"

#include "sinusoid_simd.h"
#include "variants.h"

void posenc_sinusoid_f32_rvv(const sinusoid_args *args) { sinusoid_run_f32(args); }
void posenc_sinusoid_bf16_rvv(const sinusoid_args *args) { sinusoid_run_bf16(args); }
void posenc_sinusoid_f16_rvv(const sinusoid_args *args) { sinusoid_run_f16(args); }
