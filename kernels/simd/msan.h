/* MemorySanitizer support for the vector layers. SLEEF (Debian's libsleef) is not
 * instrumented: its vector sincos returns a struct in memory that MSan never sees written,
 * so a result from SLEEF is marked initialised here. Nothing is emitted without MSan. */
#ifndef POSENC_SIMD_MSAN_H
#define POSENC_SIMD_MSAN_H

#if defined(__has_feature)
#if __has_feature(memory_sanitizer)
#include <sanitizer/msan_interface.h>
#define POSENC_MSAN_UNPOISON(ptr, size) __msan_unpoison((ptr), (size))
#endif
#endif
#ifndef POSENC_MSAN_UNPOISON
#define POSENC_MSAN_UNPOISON(ptr, size) ((void)0)
#endif

#endif /* POSENC_SIMD_MSAN_H */
