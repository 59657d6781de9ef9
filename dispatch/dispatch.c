/* The dispatch table and the choice of the active ISA: chosen once, lazily, under
 * pthread_once; POSENC_ISA may force one; posenc_set_isa() may switch later (atomic). */
#include "dispatch.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/variants.h"

static const posenc_kernel_table tables[POSENC_ISA_COUNT] = {
    [POSENC_ISA_SCALAR] =
        {
            .rope_f32 = posenc_rope_f32_scalar,
            .rope_bf16 = posenc_rope_bf16_scalar,
            .rope_f16 = posenc_rope_f16_scalar,
            .rope_f32_bf16 = posenc_rope_f32_bf16_scalar,
            .rope_f32_f16 = posenc_rope_f32_f16_scalar,
            .sinusoid_f32 = posenc_sinusoid_f32_scalar,
            .sinusoid_bf16 = posenc_sinusoid_bf16_scalar,
            .sinusoid_f16 = posenc_sinusoid_f16_scalar,
            .alibi_f32 = posenc_alibi_f32_scalar,
            .alibi_bf16 = posenc_alibi_bf16_scalar,
            .alibi_f16 = posenc_alibi_f16_scalar,
            .alibi_softmax_f32 = posenc_alibi_softmax_f32_scalar,
            .alibi_softmax_bf16 = posenc_alibi_softmax_bf16_scalar,
            .learned_add_f32 = posenc_learned_add_f32_scalar,
        },
#ifdef POSENC_HAVE_SSE4
    [POSENC_ISA_SSE4] =
        {
            .rope_f32 = posenc_rope_f32_sse4,
            .rope_bf16 = posenc_rope_bf16_sse4,
            .rope_f16 = posenc_rope_f16_sse4,
            .rope_f32_bf16 = posenc_rope_f32_bf16_sse4,
            .rope_f32_f16 = posenc_rope_f32_f16_sse4,
            .sinusoid_f32 = posenc_sinusoid_f32_sse4,
            .sinusoid_bf16 = posenc_sinusoid_bf16_sse4,
            .sinusoid_f16 = posenc_sinusoid_f16_sse4,
            .alibi_f32 = posenc_alibi_f32_sse4,
            .alibi_bf16 = posenc_alibi_bf16_sse4,
            .alibi_f16 = posenc_alibi_f16_sse4,
            .alibi_softmax_f32 = posenc_alibi_softmax_f32_sse4,
            .alibi_softmax_bf16 = posenc_alibi_softmax_bf16_sse4,
            .learned_add_f32 = posenc_learned_add_f32_sse4,
        },
#endif
#ifdef POSENC_HAVE_AVX2
    [POSENC_ISA_AVX2] =
        {
            .rope_f32 = posenc_rope_f32_avx2,
            .rope_bf16 = posenc_rope_bf16_avx2,
            .rope_f16 = posenc_rope_f16_avx2,
            .rope_f32_bf16 = posenc_rope_f32_bf16_avx2,
            .rope_f32_f16 = posenc_rope_f32_f16_avx2,
            .sinusoid_f32 = posenc_sinusoid_f32_avx2,
            .sinusoid_bf16 = posenc_sinusoid_bf16_avx2,
            .sinusoid_f16 = posenc_sinusoid_f16_avx2,
            .alibi_f32 = posenc_alibi_f32_avx2,
            .alibi_bf16 = posenc_alibi_bf16_avx2,
            .alibi_f16 = posenc_alibi_f16_avx2,
            .alibi_softmax_f32 = posenc_alibi_softmax_f32_avx2,
            .alibi_softmax_bf16 = posenc_alibi_softmax_bf16_avx2,
            .learned_add_f32 = posenc_learned_add_f32_avx2,
        },
#endif
#ifdef POSENC_HAVE_AVX512
    [POSENC_ISA_AVX512] =
        {
            .rope_f32 = posenc_rope_f32_avx512,
            .rope_bf16 = posenc_rope_bf16_avx512,
            .rope_f16 = posenc_rope_f16_avx512,
            .rope_f32_bf16 = posenc_rope_f32_bf16_avx512,
            .rope_f32_f16 = posenc_rope_f32_f16_avx512,
            .sinusoid_f32 = posenc_sinusoid_f32_avx512,
            .sinusoid_bf16 = posenc_sinusoid_bf16_avx512,
            .sinusoid_f16 = posenc_sinusoid_f16_avx512,
            .alibi_f32 = posenc_alibi_f32_avx512,
            .alibi_bf16 = posenc_alibi_bf16_avx512,
            .alibi_f16 = posenc_alibi_f16_avx512,
            .alibi_softmax_f32 = posenc_alibi_softmax_f32_avx512,
            .alibi_softmax_bf16 = posenc_alibi_softmax_bf16_avx512,
            .learned_add_f32 = posenc_learned_add_f32_avx512,
        },
#endif
#ifdef POSENC_HAVE_NEON
    [POSENC_ISA_NEON] =
        {
            .rope_f32 = posenc_rope_f32_neon,
            .rope_bf16 = posenc_rope_bf16_neon,
            .rope_f16 = posenc_rope_f16_neon,
            .rope_f32_bf16 = posenc_rope_f32_bf16_neon,
            .rope_f32_f16 = posenc_rope_f32_f16_neon,
            .sinusoid_f32 = posenc_sinusoid_f32_neon,
            .sinusoid_bf16 = posenc_sinusoid_bf16_neon,
            .sinusoid_f16 = posenc_sinusoid_f16_neon,
            .alibi_f32 = posenc_alibi_f32_neon,
            .alibi_bf16 = posenc_alibi_bf16_neon,
            .alibi_f16 = posenc_alibi_f16_neon,
            .alibi_softmax_f32 = posenc_alibi_softmax_f32_neon,
            .alibi_softmax_bf16 = posenc_alibi_softmax_bf16_neon,
            .learned_add_f32 = posenc_learned_add_f32_neon,
        },
#endif
};

static const char *const isa_names[POSENC_ISA_COUNT] = {"scalar", "sse4", "avx2", "avx512", "neon"};

static pthread_once_t select_once = PTHREAD_ONCE_INIT;
static int active_isa;    /* posenc_isa; atomic */
static int isa_source;    /* posenc_isa_source; atomic */
static int requested_isa; /* written once, under select_once */

const char *posenc_isa_name(posenc_isa isa) {
  return (unsigned)isa < POSENC_ISA_COUNT ? isa_names[isa] : "unknown";
}

posenc_status posenc_isa_from_name(const char *name, posenc_isa *isa) {
  if (!name || !isa) return POSENC_ERR_INVALID_ARGUMENT;
  for (int i = 0; i < POSENC_ISA_COUNT; ++i) {
    const char *a = name, *b = isa_names[i];
    while (*a && *b && tolower((unsigned char)*a) == *b) ++a, ++b;
    if (!*a && !*b) {
      *isa = (posenc_isa)i;
      return POSENC_OK;
    }
  }
  return POSENC_ERR_INVALID_ARGUMENT;
}

int posenc_isa_compiled(posenc_isa isa) {
  return (unsigned)isa < POSENC_ISA_COUNT && tables[isa].rope_f32 != NULL;
}

int posenc_isa_available(posenc_isa isa) {
  return posenc_isa_compiled(isa) && posenc_cpu_supports(isa);
}

static posenc_isa best_available(void) {
  for (int i = POSENC_ISA_COUNT - 1; i > 0; --i)
    if (posenc_isa_available((posenc_isa)i)) return (posenc_isa)i;
  return POSENC_ISA_SCALAR;
}

static void select_isa(void) {
  posenc_isa best = best_available(), chosen = best;
  posenc_isa_source source = POSENC_ISA_SOURCE_AUTO;
  requested_isa = best;
  const char *env = getenv("POSENC_ISA");
  if (env && *env) {
    posenc_isa req;
    if (posenc_isa_from_name(env, &req) != POSENC_OK) req = POSENC_ISA_COUNT;
    requested_isa = req;
    if (req != POSENC_ISA_COUNT && posenc_isa_available(req)) {
      chosen = req;
      source = POSENC_ISA_SOURCE_ENV;
    } else {
      source = POSENC_ISA_SOURCE_ENV_FALLBACK;
    }
  }
  __atomic_store_n(&isa_source, (int)source, __ATOMIC_RELAXED);
  __atomic_store_n(&active_isa, (int)chosen, __ATOMIC_RELEASE);
}

const posenc_kernel_table *posenc_active_table(void) {
  pthread_once(&select_once, select_isa);
  return &tables[__atomic_load_n(&active_isa, __ATOMIC_ACQUIRE)];
}

posenc_isa posenc_active_isa(void) {
  pthread_once(&select_once, select_isa);
  return (posenc_isa)__atomic_load_n(&active_isa, __ATOMIC_ACQUIRE);
}

posenc_isa_source posenc_isa_selection(posenc_isa *requested) {
  pthread_once(&select_once, select_isa);
  const posenc_isa_source source =
      (posenc_isa_source)__atomic_load_n(&isa_source, __ATOMIC_RELAXED);
  if (requested)
    *requested = (source == POSENC_ISA_SOURCE_ENV || source == POSENC_ISA_SOURCE_ENV_FALLBACK)
                     ? (posenc_isa)requested_isa
                     : posenc_active_isa();
  return source;
}

posenc_status posenc_set_isa(posenc_isa isa) {
  if (!posenc_isa_available(isa)) return POSENC_ERR_UNSUPPORTED;
  pthread_once(&select_once, select_isa);
  __atomic_store_n(&isa_source, (int)POSENC_ISA_SOURCE_API, __ATOMIC_RELAXED);
  __atomic_store_n(&active_isa, (int)isa, __ATOMIC_RELEASE);
  return POSENC_OK;
}
