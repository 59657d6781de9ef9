/* The dispatch table and the choice of the active ISA: chosen once, lazily, under
 * pthread_once; POSENC_ISA may force one; posenc_set_isa() may switch later (atomic).
 * Each ISA's row below names its variants; a row may leave a member NULL, and the tier
 * below it (tier_below) serves that kernel. The tables the kernels run from are composed
 * once from the rows: one per tier as POSENC_ISA / posenc_set_isa() name it, and one for
 * the automatic choice, where posenc_kernel_tier()'s CPU-family rules apply. */
#include "dispatch.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/variants.h"
#include "checks.h"

/* The lists of kernels/variants.h against the public enums (include/posenc.h): each entry
 * names an enum value (or does not compile), the designated initializers below take each
 * value once (-Woverride-init), and the counts agree. */
#define POSENC_ONE(...) +1
_Static_assert(0 POSENC_ISAS(POSENC_ONE) == POSENC_ISA_COUNT,
               "every posenc_isa value is one tier of POSENC_ISAS (kernels/variants.h)");
_Static_assert(0 POSENC_KERNELS(POSENC_ONE) == POSENC_KERNEL_COUNT,
               "every posenc_kernel value is one kernel of POSENC_KERNELS (kernels/variants.h)");
#undef POSENC_ONE

/* Each tier's row: its variants where the build compiled the tier (POSENC_HAVE_<ISA>), NULL
 * for the kernels it leaves to the tier below. */
static const posenc_kernel_table tables[POSENC_ISA_COUNT] = {
#define POSENC_ROW_ENTRY(kernel, ISA, function) \
  [POSENC_ISA_##ISA].kernel = POSENC_HAVE_##ISA ? function : NULL,
    POSENC_VARIANTS(POSENC_ROW_ENTRY)
#undef POSENC_ROW_ENTRY
};

static const char *const isa_names[POSENC_ISA_COUNT] = {
#define POSENC_ISA_NAME(ISA, name, BELOW, ARCH) [POSENC_ISA_##ISA] = #name,
    POSENC_ISAS(POSENC_ISA_NAME)
#undef POSENC_ISA_NAME
};

/* Which tiers this build compiled (a row may be partly NULL, so not read from the rows). */
static const unsigned char compiled[POSENC_ISA_COUNT] = {
#define POSENC_ISA_COMPILED(ISA, name, BELOW, ARCH) [POSENC_ISA_##ISA] = POSENC_HAVE_##ISA,
    POSENC_ISAS(POSENC_ISA_COMPILED)
#undef POSENC_ISA_COMPILED
};

/* The tiers from best to worst, as the automatic choice tries them. */
static const posenc_isa preference[] = {
#define POSENC_ISA_PREFERENCE(ISA, name, BELOW, ARCH) POSENC_ISA_##ISA,
    POSENC_ISAS(POSENC_ISA_PREFERENCE)
#undef POSENC_ISA_PREFERENCE
};

/* The tier whose variant a row's NULL member falls back to. */
static const posenc_isa below[POSENC_ISA_COUNT] = {
#define POSENC_ISA_BELOW(ISA, name, BELOW, ARCH) [POSENC_ISA_##ISA] = POSENC_ISA_##BELOW,
    POSENC_ISAS(POSENC_ISA_BELOW)
#undef POSENC_ISA_BELOW
};

static posenc_isa tier_below(posenc_isa isa) { return below[isa]; }

static const char *const kernel_names[POSENC_KERNEL_COUNT] = {
#define POSENC_KERNEL_NAME(KERNEL, kernel, args) [POSENC_KERNEL_##KERNEL] = #kernel,
    POSENC_KERNELS(POSENC_KERNEL_NAME)
#undef POSENC_KERNEL_NAME
};

const char *posenc_kernel_name(posenc_kernel kernel) {
  return (unsigned)kernel < POSENC_KERNEL_COUNT ? kernel_names[kernel] : "unknown";
}

/* include/posenc.h documents these rules; tests/dispatch_rules_test.cc checks them on made-up
 * CPUs. */
posenc_isa posenc_kernel_tier(posenc_kernel kernel, posenc_isa tier, int automatic,
                              const posenc_cpu_flags *cpu) {
  if (!automatic) return tier;
  const int zen4 = cpu->amd && cpu->family == 0x19 && cpu->avx512f;
  const int zen4_avx2 = kernel == POSENC_KERNEL_SINUSOID_F32_STREAMED ||
                        kernel == POSENC_KERNEL_LEARNED_ADD_F32 || kernel == POSENC_KERNEL_ROPE_F16;
  if (zen4 && zen4_avx2 && (tier == POSENC_ISA_AVX512 || tier == POSENC_ISA_AVX512BF16))
    return POSENC_ISA_AVX2;
  /* 128-bit SVE: neon is as wide and has no predicates (not measured: no SVE hardware). */
  if (tier == POSENC_ISA_SVE && cpu->sve_vector_bits <= 128) return POSENC_ISA_NEON;
  return tier;
}

/* Zen 5, posenc_ab, 40 heads of 128 at 4096 tokens in place (80 MiB), avx512: four 128-bit
 * loads took 0.92-0.95x the time of two 256-bit ones, which took 0.96x that of 512-bit loads.
 * An Intel Xeon (family 6 model 167 under KVM), the same call: 512-bit loads took 0.85-0.97x
 * the time of the four 128-bit ones, the factor-apply form 0.81-0.83x (two 256-bit ones: 0.89
 * / 0.87-0.90x); then 512-bit stores 0.93-0.97x the time of two 256-bit ones (the
 * factor-apply form 0.92x), and the streamed out-of-place calls with whole loads and their
 * sources prefetched 0.85-0.89x the time at 4096 tokens into bf16 / f16 on avx512 (avx2
 * 0.67-0.88x, sse4 0.74-0.82x; into f32 0.96-1.0x). Zen 4 (256-bit data paths) was not
 * measured: it takes the whole loads. */
int posenc_split_streams(const posenc_cpu_flags *cpu) { return cpu->amd && cpu->family >= 0x1A; }

int posenc_rope_split_streams;

static int row_has(posenc_isa t, posenc_kernel kernel) {
  switch (kernel) {
#define POSENC_ROW_HAS(KERNEL, kernel, args) \
  case POSENC_KERNEL_##KERNEL:               \
    return tables[t].kernel != NULL;
    POSENC_KERNELS(POSENC_ROW_HAS)
#undef POSENC_ROW_HAS
    default:
      return 0;
  }
}

/* The tier that serves `kernel` from tier t's row: t, or the first tier below it whose row has
 * a variant of the kernel. */
static posenc_isa serving_tier(posenc_kernel kernel, posenc_isa t) {
  while (t != POSENC_ISA_SCALAR && !row_has(t, kernel)) t = tier_below(t);
  return t;
}

/* A composed table and the tier that serves each of its kernels. */
typedef struct composed_table {
  posenc_kernel_table table;
  unsigned char served[POSENC_KERNEL_COUNT];
} composed_table;

static composed_table forced[POSENC_ISA_COUNT], automatic_table;
static const composed_table *active; /* atomic */

static void compose(composed_table *out, posenc_isa tier, int automatic) {
  const posenc_cpu_flags *cpu = posenc_cpu();
#define POSENC_COMPOSE(KERNEL, kernel, args)                                         \
  {                                                                                  \
    posenc_isa t = posenc_kernel_tier(POSENC_KERNEL_##KERNEL, tier, automatic, cpu); \
    t = serving_tier(POSENC_KERNEL_##KERNEL, compiled[t] ? t : tier);                \
    out->table.kernel = tables[t].kernel;                                            \
    out->served[POSENC_KERNEL_##KERNEL] = (unsigned char)t;                          \
  }
  POSENC_KERNELS(POSENC_COMPOSE)
#undef POSENC_COMPOSE
}

static pthread_once_t select_once = PTHREAD_ONCE_INIT;
static int active_isa;    /* posenc_isa; atomic */
static int isa_source;    /* posenc_isa_source; atomic */
static int requested_isa; /* written once, under select_once */

const char *posenc_isa_name(posenc_isa isa) {
  return (unsigned)isa < POSENC_ISA_COUNT ? isa_names[isa] : "unknown";
}

/* The ISA a name (case-insensitive) names: 1 and *isa, or 0. Sets no detail: POSENC_ISA is
 * parsed with it at the first call of whichever thread comes first. */
static int parse_isa_name(const char *name, posenc_isa *isa) {
  for (int i = 0; i < POSENC_ISA_COUNT; ++i) {
    const char *a = name, *b = isa_names[i];
    while (*a && *b && tolower((unsigned char)*a) == *b) ++a, ++b;
    if (!*a && !*b) {
      *isa = (posenc_isa)i;
      return 1;
    }
  }
  return 0;
}

posenc_status posenc_isa_from_name(const char *name, posenc_isa *isa) {
  if (!name) return posenc_reject(__func__, "name", "is NULL");
  if (!isa) return posenc_reject(__func__, "isa", "is NULL");
  if (!parse_isa_name(name, isa))
    return posenc_reject(__func__, "name", "\"%.64s\" is not the name of an ISA", name);
  return POSENC_OK;
}

int posenc_isa_compiled(posenc_isa isa) {
  return (unsigned)isa < POSENC_ISA_COUNT && compiled[isa];
}

int posenc_isa_available(posenc_isa isa) {
  return posenc_isa_compiled(isa) && posenc_cpu_supports(isa);
}

static posenc_isa best_available(void) {
  for (size_t i = 0; i < sizeof preference / sizeof preference[0]; ++i)
    if (posenc_isa_available(preference[i])) return preference[i];
  return POSENC_ISA_SCALAR;
}

static void select_isa(void) {
  posenc_rope_split_streams = posenc_split_streams(posenc_cpu());
  for (int i = 0; i < POSENC_ISA_COUNT; ++i)
    if (posenc_isa_available((posenc_isa)i)) compose(&forced[i], (posenc_isa)i, 0);
  posenc_isa best = best_available(), chosen = best;
  compose(&automatic_table, best, 1);
  const composed_table *table = &automatic_table;
  posenc_isa_source source = POSENC_ISA_SOURCE_AUTO;
  requested_isa = best;
  const char *env = getenv("POSENC_ISA");
  if (env && *env) {
    posenc_isa req;
    if (!parse_isa_name(env, &req)) req = POSENC_ISA_COUNT;
    requested_isa = req;
    if (req != POSENC_ISA_COUNT && posenc_isa_available(req)) {
      chosen = req;
      table = &forced[req];
      source = POSENC_ISA_SOURCE_ENV;
    } else {
      source = POSENC_ISA_SOURCE_ENV_FALLBACK;
    }
  }
  __atomic_store_n(&isa_source, (int)source, __ATOMIC_RELAXED);
  __atomic_store_n(&active, table, __ATOMIC_RELEASE);
  __atomic_store_n(&active_isa, (int)chosen, __ATOMIC_RELEASE);
}

const posenc_kernel_table *posenc_active_table(void) {
  pthread_once(&select_once, select_isa);
  return &__atomic_load_n(&active, __ATOMIC_ACQUIRE)->table;
}

posenc_isa posenc_active_isa(void) {
  pthread_once(&select_once, select_isa);
  return (posenc_isa)__atomic_load_n(&active_isa, __ATOMIC_ACQUIRE);
}

posenc_isa posenc_kernel_isa(posenc_kernel kernel) {
  if ((unsigned)kernel >= POSENC_KERNEL_COUNT) return POSENC_ISA_COUNT;
  pthread_once(&select_once, select_isa);
  return (posenc_isa)__atomic_load_n(&active, __ATOMIC_ACQUIRE)->served[kernel];
}

posenc_isa posenc_kernel_isa_for(posenc_kernel kernel, posenc_isa isa) {
  if ((unsigned)kernel >= POSENC_KERNEL_COUNT || !posenc_isa_available(isa))
    return POSENC_ISA_COUNT;
  return serving_tier(kernel, isa);
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
  if (!posenc_isa_available(isa))
    return posenc_fail(POSENC_ERR_UNSUPPORTED, __func__, "isa", "%s (%d) is %s",
                       posenc_isa_name(isa), (int)isa,
                       !posenc_isa_compiled(isa) ? "not compiled into this build of posenc"
                                                 : "not supported by this CPU or OS");
  pthread_once(&select_once, select_isa);
  __atomic_store_n(&isa_source, (int)POSENC_ISA_SOURCE_API, __ATOMIC_RELAXED);
  __atomic_store_n(&active, &forced[isa], __ATOMIC_RELEASE);
  __atomic_store_n(&active_isa, (int)isa, __ATOMIC_RELEASE);
  return POSENC_OK;
}
