/* The avx512bf16 tier of rope: the kernels that store bf16, from the shared SIMD source
 * (rope_simd.h) over the avx512 vector layer with its AVX512_BF16 rounding
 * (POSENC_VEC_AVX512_BF16); the tier's other kernels are avx512's (dispatch/dispatch.c). */
#define POSENC_VEC_AVX512_BF16 1
#include "simd/vec_avx512.h"

#include "rope_simd.h"
#include "variants.h"

void posenc_rope_bf16_avx512bf16(const rope_args *args) { rope_run_bf16(args); }
/* Calls that stream their bf16 destination (rope_streams: 16 MiB or more out of place) run
 * avx512's code, the same bits (vf_bf16_pack): in this tier's build GCC leaves that instance's
 * stepped block loop rolled, cos/sin reloaded from the stack for every head (docs/DESIGN.md),
 * and rope_out_f32_bf16_neox at 4096 tokens (120 MiB) ran at 0.91-0.95x avx512's rate on
 * Zen 5 and on a Xeon. */
void posenc_rope_f32_bf16_avx512bf16(const rope_args *args) {
  if (rope_streams(args, sizeof(uint16_t)))
    posenc_rope_f32_bf16_avx512(args);
  else
    rope_run_f32_bf16(args);
}
