/* The one list of posenc's ISA tiers, kernels and kernel variants. Everything that names a
 * tier or a variant follows from the three X-macro lists below:
 *  - the variants' declarations (here) and the dispatch table's member per kernel
 *    (dispatch/dispatch.h), each tier's row of variants, the tier names, which tiers the
 *    build compiled, the automatic choice's order and the fallback from a tier to the one
 *    below it (dispatch/dispatch.c);
 *  - the build: which kernels/<op>_<isa>.c sources are compiled, for which architecture,
 *    and the POSENC_HAVE_<ISA> definitions (CMakeLists.txt reads this file);
 *  - ctest's per-ISA runs of every suite (tests/CMakeLists.txt reads this file; the suites,
 *    the bench, the report and the Python package iterate the tiers through the public
 *    posenc_isa_name()), and scripts/check-names.sh, which checks that every variant listed
 *    here is defined literally in a .c source.
 * The public enums (posenc_isa, posenc_kernel in include/posenc.h) keep their documented
 * numbers; dispatch/dispatch.c checks them against these lists at compile time.
 *
 * Each variant is defined, literally, in kernels/<op>_<isa>.c (the scalar reference in
 * kernels/<op>_scalar.c; a SIMD file wraps the static inline body of the op's shared
 * kernels/<op>_simd.h), where <op> is the part of the kernel's name before the first '_',
 * so `git grep posenc_rope_f32_avx512` finds its line here and its definition there.
 * CONTRIBUTING.md has the checklists for adding a kernel or a tier. */
#ifndef POSENC_KERNELS_VARIANTS_H
#define POSENC_KERNELS_VARIANTS_H

#include "alibi.h"
#include "learned.h"
#include "rope.h"
#include "sinusoid.h"
#include "softmax.h"

/* The tiers, best first: X(ISA, name, BELOW, ARCH).
 *  - ISA: POSENC_ISA_<ISA> (include/posenc.h) and the build's POSENC_HAVE_<ISA> (1 when its
 *    sources are compiled, else 0); name: posenc_isa_name(), POSENC_ISA=<name>, the sources'
 *    suffix kernels/<op>_<name>.c;
 *  - BELOW: the tier that serves a kernel this tier has no variant of (and which this tier
 *    needs compiled: the build drops a tier whose BELOW it could not compile);
 *  - ARCH: the architecture whose build compiles it (X86_64, AARCH64, RISCV64, or ANY).
 * The automatic choice takes the first available tier in this order (include/posenc.h
 * documents the rules that may then move single kernels to a lower tier). */
#define POSENC_ISAS(X)                      \
  X(AVX512BF16, avx512bf16, AVX512, X86_64) \
  X(AVX512, avx512, AVX2, X86_64)           \
  X(AVX2, avx2, SSE4, X86_64)               \
  X(SSE4, sse4, SCALAR, X86_64)             \
  X(SVE, sve, NEON, AARCH64)                \
  X(NEON, neon, SCALAR, AARCH64)            \
  X(RVV, rvv, SCALAR, RISCV64)              \
  X(SCALAR, scalar, SCALAR, ANY)

/* The kernels, in the order of the posenc_kernel enum: X(KERNEL, kernel, args). KERNEL:
 * POSENC_KERNEL_<KERNEL>; kernel: posenc_kernel_name() and the dispatch table's member;
 * args: the argument block its variants take, void posenc_<kernel>_<isa>(const args *). A
 * shape-class slot (sinusoid_f32_streamed: docs/DESIGN.md, "Dispatch") has no variants of
 * its own: its lines below name its kernel's (posenc_sinusoid_f32_<isa>). */
#define POSENC_KERNELS(X)                               \
  X(ROPE_F32, rope_f32, rope_args)                      \
  X(ROPE_BF16, rope_bf16, rope_args)                    \
  X(ROPE_F16, rope_f16, rope_args)                      \
  X(ROPE_F32_BF16, rope_f32_bf16, rope_args)            \
  X(ROPE_F32_F16, rope_f32_f16, rope_args)              \
  X(SINUSOID_F32, sinusoid_f32, sinusoid_args)          \
  X(SINUSOID_BF16, sinusoid_bf16, sinusoid_args)        \
  X(SINUSOID_F16, sinusoid_f16, sinusoid_args)          \
  X(ALIBI_F32, alibi_f32, alibi_args)                   \
  X(ALIBI_BF16, alibi_bf16, alibi_args)                 \
  X(ALIBI_F16, alibi_f16, alibi_args)                   \
  X(SOFTMAX_F32, softmax_f32, softmax_args)             \
  X(SOFTMAX_16, softmax_16, softmax_args)               \
  X(LEARNED_ADD_F32, learned_add_f32, learned_f32_args) \
  X(SINUSOID_F32_STREAMED, sinusoid_f32_streamed, sinusoid_args)

/* The variants, one line per kernel and tier: X(kernel, ISA, function). The scalar tier has
 * every kernel; another tier may leave a kernel out (its BELOW serves it). */
#define POSENC_VARIANTS(X)                                          \
  X(rope_f32, SCALAR, posenc_rope_f32_scalar)                       \
  X(rope_bf16, SCALAR, posenc_rope_bf16_scalar)                     \
  X(rope_f16, SCALAR, posenc_rope_f16_scalar)                       \
  X(rope_f32_bf16, SCALAR, posenc_rope_f32_bf16_scalar)             \
  X(rope_f32_f16, SCALAR, posenc_rope_f32_f16_scalar)               \
  X(sinusoid_f32, SCALAR, posenc_sinusoid_f32_scalar)               \
  X(sinusoid_f32_streamed, SCALAR, posenc_sinusoid_f32_scalar)      \
  X(sinusoid_bf16, SCALAR, posenc_sinusoid_bf16_scalar)             \
  X(sinusoid_f16, SCALAR, posenc_sinusoid_f16_scalar)               \
  X(alibi_f32, SCALAR, posenc_alibi_f32_scalar)                     \
  X(alibi_bf16, SCALAR, posenc_alibi_bf16_scalar)                   \
  X(alibi_f16, SCALAR, posenc_alibi_f16_scalar)                     \
  X(softmax_f32, SCALAR, posenc_softmax_f32_scalar)                 \
  X(softmax_16, SCALAR, posenc_softmax_16_scalar)                   \
  X(learned_add_f32, SCALAR, posenc_learned_add_f32_scalar)         \
                                                                    \
  X(rope_f32, SSE4, posenc_rope_f32_sse4)                           \
  X(rope_bf16, SSE4, posenc_rope_bf16_sse4)                         \
  X(rope_f16, SSE4, posenc_rope_f16_sse4)                           \
  X(rope_f32_bf16, SSE4, posenc_rope_f32_bf16_sse4)                 \
  X(rope_f32_f16, SSE4, posenc_rope_f32_f16_sse4)                   \
  X(sinusoid_f32, SSE4, posenc_sinusoid_f32_sse4)                   \
  X(sinusoid_f32_streamed, SSE4, posenc_sinusoid_f32_sse4)          \
  X(sinusoid_bf16, SSE4, posenc_sinusoid_bf16_sse4)                 \
  X(sinusoid_f16, SSE4, posenc_sinusoid_f16_sse4)                   \
  X(alibi_f32, SSE4, posenc_alibi_f32_sse4)                         \
  X(alibi_bf16, SSE4, posenc_alibi_bf16_sse4)                       \
  X(alibi_f16, SSE4, posenc_alibi_f16_sse4)                         \
  X(softmax_f32, SSE4, posenc_softmax_f32_sse4)                     \
  X(softmax_16, SSE4, posenc_softmax_16_sse4)                       \
  X(learned_add_f32, SSE4, posenc_learned_add_f32_sse4)             \
                                                                    \
  X(rope_f32, AVX2, posenc_rope_f32_avx2)                           \
  X(rope_bf16, AVX2, posenc_rope_bf16_avx2)                         \
  X(rope_f16, AVX2, posenc_rope_f16_avx2)                           \
  X(rope_f32_bf16, AVX2, posenc_rope_f32_bf16_avx2)                 \
  X(rope_f32_f16, AVX2, posenc_rope_f32_f16_avx2)                   \
  X(sinusoid_f32, AVX2, posenc_sinusoid_f32_avx2)                   \
  X(sinusoid_f32_streamed, AVX2, posenc_sinusoid_f32_avx2)          \
  X(sinusoid_bf16, AVX2, posenc_sinusoid_bf16_avx2)                 \
  X(sinusoid_f16, AVX2, posenc_sinusoid_f16_avx2)                   \
  X(alibi_f32, AVX2, posenc_alibi_f32_avx2)                         \
  X(alibi_bf16, AVX2, posenc_alibi_bf16_avx2)                       \
  X(alibi_f16, AVX2, posenc_alibi_f16_avx2)                         \
  X(softmax_f32, AVX2, posenc_softmax_f32_avx2)                     \
  X(softmax_16, AVX2, posenc_softmax_16_avx2)                       \
  X(learned_add_f32, AVX2, posenc_learned_add_f32_avx2)             \
                                                                    \
  X(rope_f32, AVX512, posenc_rope_f32_avx512)                       \
  X(rope_bf16, AVX512, posenc_rope_bf16_avx512)                     \
  X(rope_f16, AVX512, posenc_rope_f16_avx512)                       \
  X(rope_f32_bf16, AVX512, posenc_rope_f32_bf16_avx512)             \
  X(rope_f32_f16, AVX512, posenc_rope_f32_f16_avx512)               \
  X(sinusoid_f32, AVX512, posenc_sinusoid_f32_avx512)               \
  X(sinusoid_f32_streamed, AVX512, posenc_sinusoid_f32_avx512)      \
  X(sinusoid_bf16, AVX512, posenc_sinusoid_bf16_avx512)             \
  X(sinusoid_f16, AVX512, posenc_sinusoid_f16_avx512)               \
  X(alibi_f32, AVX512, posenc_alibi_f32_avx512)                     \
  X(alibi_bf16, AVX512, posenc_alibi_bf16_avx512)                   \
  X(alibi_f16, AVX512, posenc_alibi_f16_avx512)                     \
  X(softmax_f32, AVX512, posenc_softmax_f32_avx512)                 \
  X(softmax_16, AVX512, posenc_softmax_16_avx512)                   \
  X(learned_add_f32, AVX512, posenc_learned_add_f32_avx512)         \
                                                                    \
  /* Only bf16 RoPE: the tier's sinusoid, ALiBi and softmax bf16 */ \
  /* variants measured 0.88-1.04x avx512's and were dropped. */     \
  X(rope_bf16, AVX512BF16, posenc_rope_bf16_avx512bf16)             \
  X(rope_f32_bf16, AVX512BF16, posenc_rope_f32_bf16_avx512bf16)     \
                                                                    \
  X(rope_f32, RVV, posenc_rope_f32_rvv)                             \
  X(rope_bf16, RVV, posenc_rope_bf16_rvv)                           \
  X(rope_f16, RVV, posenc_rope_f16_rvv)                             \
  X(rope_f32_bf16, RVV, posenc_rope_f32_bf16_rvv)                   \
  X(rope_f32_f16, RVV, posenc_rope_f32_f16_rvv)                     \
  X(sinusoid_f32, RVV, posenc_sinusoid_f32_rvv)                     \
  X(sinusoid_f32_streamed, RVV, posenc_sinusoid_f32_rvv)            \
  X(sinusoid_bf16, RVV, posenc_sinusoid_bf16_rvv)                   \
  X(sinusoid_f16, RVV, posenc_sinusoid_f16_rvv)                     \
  X(alibi_f32, RVV, posenc_alibi_f32_rvv)                           \
  X(alibi_bf16, RVV, posenc_alibi_bf16_rvv)                         \
  X(alibi_f16, RVV, posenc_alibi_f16_rvv)                           \
  X(softmax_f32, RVV, posenc_softmax_f32_rvv)                       \
  X(softmax_16, RVV, posenc_softmax_16_rvv)                         \
  X(learned_add_f32, RVV, posenc_learned_add_f32_rvv)               \
                                                                    \
  X(rope_f32, NEON, posenc_rope_f32_neon)                           \
  X(rope_bf16, NEON, posenc_rope_bf16_neon)                         \
  X(rope_f16, NEON, posenc_rope_f16_neon)                           \
  X(rope_f32_bf16, NEON, posenc_rope_f32_bf16_neon)                 \
  X(rope_f32_f16, NEON, posenc_rope_f32_f16_neon)                   \
  X(sinusoid_f32, NEON, posenc_sinusoid_f32_neon)                   \
  X(sinusoid_f32_streamed, NEON, posenc_sinusoid_f32_neon)          \
  X(sinusoid_bf16, NEON, posenc_sinusoid_bf16_neon)                 \
  X(sinusoid_f16, NEON, posenc_sinusoid_f16_neon)                   \
  X(alibi_f32, NEON, posenc_alibi_f32_neon)                         \
  X(alibi_bf16, NEON, posenc_alibi_bf16_neon)                       \
  X(alibi_f16, NEON, posenc_alibi_f16_neon)                         \
  X(softmax_f32, NEON, posenc_softmax_f32_neon)                     \
  X(softmax_16, NEON, posenc_softmax_16_neon)                       \
  X(learned_add_f32, NEON, posenc_learned_add_f32_neon)             \
                                                                    \
  X(rope_f32, SVE, posenc_rope_f32_sve)                             \
  X(rope_bf16, SVE, posenc_rope_bf16_sve)                           \
  X(rope_f16, SVE, posenc_rope_f16_sve)                             \
  X(rope_f32_bf16, SVE, posenc_rope_f32_bf16_sve)                   \
  X(rope_f32_f16, SVE, posenc_rope_f32_f16_sve)                     \
  X(sinusoid_f32, SVE, posenc_sinusoid_f32_sve)                     \
  X(sinusoid_f32_streamed, SVE, posenc_sinusoid_f32_sve)            \
  X(sinusoid_bf16, SVE, posenc_sinusoid_bf16_sve)                   \
  X(sinusoid_f16, SVE, posenc_sinusoid_f16_sve)                     \
  X(alibi_f32, SVE, posenc_alibi_f32_sve)                           \
  X(alibi_bf16, SVE, posenc_alibi_bf16_sve)                         \
  X(alibi_f16, SVE, posenc_alibi_f16_sve)                           \
  X(softmax_f32, SVE, posenc_softmax_f32_sve)                       \
  X(softmax_16, SVE, posenc_softmax_16_sve)                         \
  X(learned_add_f32, SVE, posenc_learned_add_f32_sve)

/* The function type of each kernel's variants: posenc_kernel_fn_<kernel>. */
#define POSENC_KERNEL_FN_TYPEDEF(KERNEL, kernel, args) \
  typedef void posenc_kernel_fn_##kernel(const args *);
POSENC_KERNELS(POSENC_KERNEL_FN_TYPEDEF)
#undef POSENC_KERNEL_FN_TYPEDEF

/* Every variant's declaration (a tier the build did not compile is declared, never
 * referenced: dispatch/dispatch.c names a variant only where POSENC_HAVE_<ISA> is 1). */
#define POSENC_VARIANT_DECLARE(kernel, ISA, function) posenc_kernel_fn_##kernel function;
POSENC_VARIANTS(POSENC_VARIANT_DECLARE)
#undef POSENC_VARIANT_DECLARE

/* POSENC_HAVE_<ISA>: 1 where the build compiled the tier's sources (CMakeLists.txt defines
 * it for every tier of the list, 1 or 0); the scalar tier always. */
#define POSENC_HAVE_SCALAR 1

#endif /* POSENC_KERNELS_VARIANTS_H */
