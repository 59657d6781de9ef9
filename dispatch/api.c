/* Public entry points that are not kernels: version, status strings, CPU description. */
#include <pthread.h>
#include <string.h>

#include "dispatch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

const char *posenc_version(void) { return POSENC_VERSION_STRING; }

const char *posenc_status_string(posenc_status status) {
  switch (status) {
    case POSENC_OK:
      return "ok";
    case POSENC_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case POSENC_ERR_UNSUPPORTED:
      return "unsupported";
    case POSENC_ERR_OUT_OF_MEMORY:
      return "out of memory";
  }
  return "unknown status";
}

static char cpu_name[64] = "unknown";
static char cpu_feature_list[256];
static pthread_once_t describe_once = PTHREAD_ONCE_INIT;

static void append(char *dst, size_t cap, const char *word, int present) {
  if (!present) return;
  size_t len = strlen(dst);
  if (len + strlen(word) + 2 > cap) return;
  if (len) dst[len++] = ' ';
  strcpy(dst + len, word);
}

static void describe(void) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned regs[12];
  if ((unsigned)__get_cpuid_max(0x80000000u, NULL) >= 0x80000004u) {
    for (unsigned i = 0; i < 3; ++i)
      __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2],
                  &regs[4 * i + 3]);
    char brand[49];
    memcpy(brand, regs, 48);
    brand[48] = '\0';
    const char *b = brand;
    while (*b == ' ') ++b;
    if (*b) {
      strncpy(cpu_name, b, sizeof cpu_name - 1);
      for (size_t n = strlen(cpu_name); n && cpu_name[n - 1] == ' '; --n) cpu_name[n - 1] = 0;
    }
  }
#endif
  const posenc_cpu_flags *f = posenc_cpu();
  const struct {
    const char *name;
    int present;
  } features[] = {{"sse4.1", f->sse41},
                  {"sse4.2", f->sse42},
                  {"avx", f->avx},
                  {"fma", f->fma},
                  {"f16c", f->f16c},
                  {"avx2", f->avx2},
                  {"avx512f", f->avx512f},
                  {"avx512dq", f->avx512dq},
                  {"avx512bw", f->avx512bw},
                  {"avx512vl", f->avx512vl},
                  {"avx512bf16", f->avx512bf16},
                  {"avx512fp16", f->avx512fp16},
                  {"os-ymm", f->os_ymm},
                  {"os-zmm", f->os_zmm},
                  {"neon", f->neon},
                  {"sve", f->sve},
                  {"sve2", f->sve2}};
  for (size_t i = 0; i < sizeof features / sizeof features[0]; ++i)
    append(cpu_feature_list, sizeof cpu_feature_list, features[i].name, features[i].present);
}

const char *posenc_cpu_name(void) {
  pthread_once(&describe_once, describe);
  return cpu_name;
}

unsigned posenc_cpu_sve_vector_bits(void) { return posenc_cpu()->sve_vector_bits; }

const char *posenc_cpu_features(void) {
  pthread_once(&describe_once, describe);
  return cpu_feature_list;
}
