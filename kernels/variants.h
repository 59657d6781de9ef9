/* The declarations of every compiled kernel variant, posenc_<kernel>_<type>_<isa>, one
 * block per ISA (POSENC_HAVE_<ISA> is defined by the build for each ISA whose sources it
 * compiles). Each is defined, literally, in kernels/<op>_<isa>.c (the scalar reference in
 * kernels/<op>_scalar.c; a SIMD file wraps the static inline body that the op's shared
 * kernels/<op>_simd.h provides), and placed in its ISA's row of the dispatch table in
 * dispatch/dispatch.c, through which the public calls, the tests and the bench reach it.
 *
 * Adding a kernel (a new type or operation) for every ISA takes: a member of
 * posenc_kernel_table (dispatch/dispatch.h); its declaration in each block here; its
 * definition in kernels/<op>_<isa>.c for every ISA (and its body in kernels/<op>_simd.h);
 * its entry in every row in dispatch/dispatch.c; the public entry point that checks the
 * arguments and calls it through the table (dispatch/api_*.c, include/posenc.h); a new
 * operation's sources also go into POSENC_KERNEL_OPS in CMakeLists.txt. Then its tests and
 * bench cases (tests/, bench/), which run it on every ISA.
 *
 * Adding an ISA takes: a vector layer kernels/simd/vec_<isa>.h (VF_W dividing
 * POSENC_MAX_LANES, kernels/common.h); a kernels/<op>_<isa>.c per operation with the
 * literal wrappers; a block of declarations here and a row in dispatch/dispatch.c; the
 * enum value and name (include/posenc.h, isa_names in dispatch/dispatch.c); its detection
 * in dispatch/cpu.c (posenc_cpu_supports); its compile flags and compile check in
 * CMakeLists.txt and cmake/. */
#ifndef POSENC_KERNELS_VARIANTS_H
#define POSENC_KERNELS_VARIANTS_H

#include "alibi.h"
#include "softmax.h"
#include "learned.h"
#include "rope.h"
#include "sinusoid.h"

/* scalar: the reference, always compiled */
void posenc_rope_f32_scalar(const rope_args *args);
void posenc_rope_bf16_scalar(const rope_args *args);
void posenc_rope_f16_scalar(const rope_args *args);
void posenc_rope_f32_bf16_scalar(const rope_args *args);
void posenc_rope_f32_f16_scalar(const rope_args *args);
void posenc_sinusoid_f32_scalar(const sinusoid_args *args);
void posenc_sinusoid_bf16_scalar(const sinusoid_args *args);
void posenc_sinusoid_f16_scalar(const sinusoid_args *args);
void posenc_alibi_f32_scalar(const alibi_args *args);
void posenc_alibi_bf16_scalar(const alibi_args *args);
void posenc_alibi_f16_scalar(const alibi_args *args);
void posenc_softmax_f32_scalar(const softmax_args *args);
void posenc_softmax_16_scalar(const softmax_args *args);
void posenc_learned_add_f32_scalar(const learned_f32_args *args);

#ifdef POSENC_HAVE_SSE4
void posenc_rope_f32_sse4(const rope_args *args);
void posenc_rope_bf16_sse4(const rope_args *args);
void posenc_rope_f16_sse4(const rope_args *args);
void posenc_rope_f32_bf16_sse4(const rope_args *args);
void posenc_rope_f32_f16_sse4(const rope_args *args);
void posenc_sinusoid_f32_sse4(const sinusoid_args *args);
void posenc_sinusoid_bf16_sse4(const sinusoid_args *args);
void posenc_sinusoid_f16_sse4(const sinusoid_args *args);
void posenc_alibi_f32_sse4(const alibi_args *args);
void posenc_alibi_bf16_sse4(const alibi_args *args);
void posenc_alibi_f16_sse4(const alibi_args *args);
void posenc_softmax_f32_sse4(const softmax_args *args);
void posenc_softmax_16_sse4(const softmax_args *args);
void posenc_learned_add_f32_sse4(const learned_f32_args *args);
#endif /* POSENC_HAVE_SSE4 */

#ifdef POSENC_HAVE_AVX2
void posenc_rope_f32_avx2(const rope_args *args);
void posenc_rope_bf16_avx2(const rope_args *args);
void posenc_rope_f16_avx2(const rope_args *args);
void posenc_rope_f32_bf16_avx2(const rope_args *args);
void posenc_rope_f32_f16_avx2(const rope_args *args);
void posenc_sinusoid_f32_avx2(const sinusoid_args *args);
void posenc_sinusoid_bf16_avx2(const sinusoid_args *args);
void posenc_sinusoid_f16_avx2(const sinusoid_args *args);
void posenc_alibi_f32_avx2(const alibi_args *args);
void posenc_alibi_bf16_avx2(const alibi_args *args);
void posenc_alibi_f16_avx2(const alibi_args *args);
void posenc_softmax_f32_avx2(const softmax_args *args);
void posenc_softmax_16_avx2(const softmax_args *args);
void posenc_learned_add_f32_avx2(const learned_f32_args *args);
#endif /* POSENC_HAVE_AVX2 */

#ifdef POSENC_HAVE_AVX512
void posenc_rope_f32_avx512(const rope_args *args);
void posenc_rope_bf16_avx512(const rope_args *args);
void posenc_rope_f16_avx512(const rope_args *args);
void posenc_rope_f32_bf16_avx512(const rope_args *args);
void posenc_rope_f32_f16_avx512(const rope_args *args);
void posenc_sinusoid_f32_avx512(const sinusoid_args *args);
void posenc_sinusoid_bf16_avx512(const sinusoid_args *args);
void posenc_sinusoid_f16_avx512(const sinusoid_args *args);
void posenc_alibi_f32_avx512(const alibi_args *args);
void posenc_alibi_bf16_avx512(const alibi_args *args);
void posenc_alibi_f16_avx512(const alibi_args *args);
void posenc_softmax_f32_avx512(const softmax_args *args);
void posenc_softmax_16_avx512(const softmax_args *args);
void posenc_learned_add_f32_avx512(const learned_f32_args *args);
#endif /* POSENC_HAVE_AVX512 */

#ifdef POSENC_HAVE_AVX512BF16 /* only bf16 RoPE; avx512 serves the rest */
void posenc_rope_bf16_avx512bf16(const rope_args *args);
void posenc_rope_f32_bf16_avx512bf16(const rope_args *args);
#endif /* POSENC_HAVE_AVX512BF16 */

#ifdef POSENC_HAVE_NEON
void posenc_rope_f32_neon(const rope_args *args);
void posenc_rope_bf16_neon(const rope_args *args);
void posenc_rope_f16_neon(const rope_args *args);
void posenc_rope_f32_bf16_neon(const rope_args *args);
void posenc_rope_f32_f16_neon(const rope_args *args);
void posenc_sinusoid_f32_neon(const sinusoid_args *args);
void posenc_sinusoid_bf16_neon(const sinusoid_args *args);
void posenc_sinusoid_f16_neon(const sinusoid_args *args);
void posenc_alibi_f32_neon(const alibi_args *args);
void posenc_alibi_bf16_neon(const alibi_args *args);
void posenc_alibi_f16_neon(const alibi_args *args);
void posenc_softmax_f32_neon(const softmax_args *args);
void posenc_softmax_16_neon(const softmax_args *args);
void posenc_learned_add_f32_neon(const learned_f32_args *args);
#endif /* POSENC_HAVE_NEON */

#endif /* POSENC_KERNELS_VARIANTS_H */
