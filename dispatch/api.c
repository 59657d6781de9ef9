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
  const size_t cap = sizeof cpu_feature_list;
  append(cpu_feature_list, cap, "sse4.1", f->sse41);
  append(cpu_feature_list, cap, "sse4.2", f->sse42);
  append(cpu_feature_list, cap, "avx", f->avx);
  append(cpu_feature_list, cap, "fma", f->fma);
  append(cpu_feature_list, cap, "f16c", f->f16c);
  append(cpu_feature_list, cap, "avx2", f->avx2);
  append(cpu_feature_list, cap, "avx512f", f->avx512f);
  append(cpu_feature_list, cap, "avx512dq", f->avx512dq);
  append(cpu_feature_list, cap, "avx512bw", f->avx512bw);
  append(cpu_feature_list, cap, "avx512vl", f->avx512vl);
  append(cpu_feature_list, cap, "os-ymm", f->os_ymm);
  append(cpu_feature_list, cap, "os-zmm", f->os_zmm);
  append(cpu_feature_list, cap, "neon", f->neon);
}

const char *posenc_cpu_name(void) {
  pthread_once(&describe_once, describe);
  return cpu_name;
}

const char *posenc_cpu_features(void) {
  pthread_once(&describe_once, describe);
  return cpu_feature_list;
}
