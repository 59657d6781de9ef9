/* Public entry points that are not kernels: version, status strings, the detail of the last
 * refused call, CPU description. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "checks.h"

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

/* The calling thread's last detail; "" until its first refused call. Written only by
 * record(), on a rejection. */
static _Thread_local char last_error[256];

const char *posenc_last_error(void) { return last_error; }

static __attribute__((format(printf, 5, 0))) void record(const char *fn, const char *arg,
                                                         const char *field, size_t index,
                                                         const char *fmt, va_list ap) {
  char *out = last_error;
  size_t room = sizeof last_error;
  /* Each piece within the buffer (snprintf truncates and terminates), then the next one. */
#define POSENC_APPEND(...)                          \
  do {                                              \
    const int n = snprintf(out, room, __VA_ARGS__); \
    if (n < 0 || (size_t)n >= room) return;         \
    out += n;                                       \
    room -= (size_t)n;                              \
  } while (0)
  POSENC_APPEND("%s: %s", fn, arg);
  if (field) POSENC_APPEND("->%s", field);
  if (index != POSENC_NO_INDEX) POSENC_APPEND("[%zu]", index);
  POSENC_APPEND(": ");
#undef POSENC_APPEND
  vsnprintf(out, room, fmt, ap);
}

posenc_status posenc_fail(posenc_status status, const char *fn, const char *arg, const char *fmt,
                          ...) {
  va_list ap;
  va_start(ap, fmt);
  record(fn, arg, NULL, POSENC_NO_INDEX, fmt, ap);
  va_end(ap);
  return status;
}

posenc_status posenc_fail_at(posenc_status status, const char *fn, const char *arg,
                             const char *field, size_t index, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(fn, arg, field, index, fmt, ap);
  va_end(ap);
  return status;
}

posenc_status posenc_out_of_memory(const char *fn, const char *arg, size_t bytes) {
  return posenc_fail(POSENC_ERR_OUT_OF_MEMORY, fn, arg, "allocating %zu bytes failed", bytes);
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
                  {"sve2", f->sve2},
                  {"v", f->rvv}};
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
