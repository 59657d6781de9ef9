/* CPU feature detection: x86 CPUID + XGETBV, aarch64 (NEON is the baseline). Run once,
 * under the dispatcher's once-guard. */
#include <pthread.h>

#include "dispatch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long read_xcr0(void) {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((unsigned long long)edx << 32) | eax;
}

static void detect(posenc_cpu_flags *f) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  f->sse41 = (c >> 19) & 1;
  f->sse42 = (c >> 20) & 1;
  f->fma = (c >> 12) & 1;
  f->f16c = (c >> 29) & 1;
  const int osxsave = (c >> 27) & 1;
  const int avx_cpu = (c >> 28) & 1;
  if (osxsave) {
    const unsigned long long xcr0 = read_xcr0();
    f->os_ymm = (xcr0 & 0x6) == 0x6;   /* XMM | YMM */
    f->os_zmm = (xcr0 & 0xE6) == 0xE6; /* XMM | YMM | opmask | ZMM_Hi256 | Hi16_ZMM */
  }
  f->avx = avx_cpu && f->os_ymm;
  if (__get_cpuid_max(0, NULL) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f->avx2 = (b >> 5) & 1;
    f->avx512f = (b >> 16) & 1;
    f->avx512dq = (b >> 17) & 1;
    f->avx512bw = (b >> 30) & 1;
    f->avx512vl = (b >> 31) & 1;
  }
}
#elif defined(__aarch64__)
static void detect(posenc_cpu_flags *f) { f->neon = 1; }
#else
static void detect(posenc_cpu_flags *f) { (void)f; }
#endif

static posenc_cpu_flags cpu_features;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void detect_once(void) { detect(&cpu_features); }

const posenc_cpu_flags *posenc_cpu(void) {
  pthread_once(&cpu_once, detect_once);
  return &cpu_features;
}

int posenc_cpu_supports(posenc_isa isa) {
  const posenc_cpu_flags *f = posenc_cpu();
  switch (isa) {
    case POSENC_ISA_SCALAR:
      return 1;
    case POSENC_ISA_SSE4:
      return f->sse41 && f->sse42;
    case POSENC_ISA_AVX2:
      return f->sse41 && f->sse42 && f->avx && f->avx2 && f->fma && f->f16c && f->os_ymm;
    case POSENC_ISA_AVX512:
      return posenc_cpu_supports(POSENC_ISA_AVX2) && f->avx512f && f->avx512bw && f->avx512dq &&
             f->avx512vl && f->os_zmm;
    case POSENC_ISA_NEON:
      return f->neon;
    default:
      return 0;
  }
}
