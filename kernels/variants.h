/* The one list of compiled kernel variants. The dispatcher builds its table from it; the
 * tests and the bench reach every entry through that table (posenc_set_isa), so adding a
 * variant is one line here plus its source in CMakeLists.txt. POSENC_HAVE_<ISA> is defined
 * by the build for each ISA whose sources it compiles. */
#ifndef POSENC_KERNELS_VARIANTS_H
#define POSENC_KERNELS_VARIANTS_H

#include "alibi.h"
#include "alibi_softmax.h"
#include "learned.h"
#include "rope.h"
#include "sinusoid.h"

#define POSENC_DECLARE_VARIANTS(isa)                                    \
  void posenc_rope_f32_##isa(const rope_args *args);                    \
  void posenc_rope_bf16_##isa(const rope_args *args);                   \
  void posenc_rope_f16_##isa(const rope_args *args);                    \
  void posenc_sinusoid_f32_##isa(const sinusoid_args *args);            \
  void posenc_sinusoid_bf16_##isa(const sinusoid_args *args);           \
  void posenc_sinusoid_f16_##isa(const sinusoid_args *args);            \
  void posenc_alibi_f32_##isa(const alibi_args *args);                  \
  void posenc_alibi_bf16_##isa(const alibi_args *args);                 \
  void posenc_alibi_f16_##isa(const alibi_args *args);                  \
  void posenc_alibi_softmax_f32_##isa(const alibi_softmax_args *args);  \
  void posenc_alibi_softmax_bf16_##isa(const alibi_softmax_args *args); \
  void posenc_learned_add_f32_##isa(const learned_f32_args *args);

#define POSENC_TABLE_ROW(isa)                                                                 \
  {                                                                                           \
    .rope_f32 = posenc_rope_f32_##isa, .sinusoid_f32 = posenc_sinusoid_f32_##isa,             \
    .rope_bf16 = posenc_rope_bf16_##isa, .rope_f16 = posenc_rope_f16_##isa,                   \
    .alibi_f32 = posenc_alibi_f32_##isa, .alibi_softmax_f32 = posenc_alibi_softmax_f32_##isa, \
    .alibi_softmax_bf16 = posenc_alibi_softmax_bf16_##isa,                                    \
    .sinusoid_bf16 = posenc_sinusoid_bf16_##isa, .sinusoid_f16 = posenc_sinusoid_f16_##isa,   \
    .alibi_bf16 = posenc_alibi_bf16_##isa, .alibi_f16 = posenc_alibi_f16_##isa,               \
    .learned_add_f32 = posenc_learned_add_f32_##isa                                           \
  }

POSENC_DECLARE_VARIANTS(scalar)
#ifdef POSENC_HAVE_SSE4
POSENC_DECLARE_VARIANTS(sse4)
#endif
#ifdef POSENC_HAVE_AVX2
POSENC_DECLARE_VARIANTS(avx2)
#endif
#ifdef POSENC_HAVE_AVX512
POSENC_DECLARE_VARIANTS(avx512)
#endif
#ifdef POSENC_HAVE_NEON
POSENC_DECLARE_VARIANTS(neon)
#endif

#endif /* POSENC_KERNELS_VARIANTS_H */
