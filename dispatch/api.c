/* Public entry points that are not kernels: version, status strings, the detail of the last
 * refused call (the CPU's description is dispatch/cpu.c's). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "checks.h"

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
