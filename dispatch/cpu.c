/* CPU feature detection: x86 CPUID + XGETBV, aarch64 hwcaps (NEON is the baseline; SVE
 * from HWCAP_SVE, the kernel saving its state, at any vector length), riscv64's V from
 * AT_HWCAP and the process's vector control, and the public description of the CPU
 * (posenc_cpu_name, posenc_cpu_features). Detection runs once, under the
 * dispatcher's once-guard. */
#include <pthread.h>
#include <string.h>

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
  if (!__get_cpuid(0, &a, &b, &c, &d)) return;
  f->amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u; /* "AuthenticAMD" */
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  f->family = ((a >> 8) & 0xfu) + (((a >> 8) & 0xfu) == 0xfu ? (a >> 20) & 0xffu : 0u);
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
    f->avx512fp16 = (d >> 23) & 1;
    if (a >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      f->avx512bf16 = (a >> 5) & 1;
    }
  }
}
#elif defined(__aarch64__)
#include <sys/auxv.h>
#include <sys/prctl.h>

/* Linux's values, for C libraries whose headers predate them. */
#ifndef HWCAP_SVE
#define HWCAP_SVE (1ul << 22)
#endif
#ifndef HWCAP2_SVE2
#define HWCAP2_SVE2 (1ul << 1)
#endif
#ifndef PR_SVE_GET_VL
#define PR_SVE_GET_VL 51
#endif
#ifndef PR_SVE_VL_LEN_MASK
#define PR_SVE_VL_LEN_MASK 0xffff
#endif

static void detect(posenc_cpu_flags *f) {
  const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
  f->neon = 1; /* Advanced SIMD is part of every AArch64 CPU */
  f->sve = (hwcap & HWCAP_SVE) != 0;
  f->sve2 = f->sve && (hwcap2 & HWCAP2_SVE2) != 0;
  if (f->sve) {
    const int vl = prctl(PR_SVE_GET_VL); /* this thread's vector length, in bytes */
    if (vl > 0) f->sve_vector_bits = 8u * (unsigned)(vl & PR_SVE_VL_LEN_MASK);
  }
}
#elif defined(__riscv) && __riscv_xlen == 64
/* riscv64: the V extension 1.0 (the rvv tier). Linux reports it in AT_HWCAP (bit 'V' - 'A')
 * when it saves the vector state (6.5 and later; earlier kernels never set the bit); a
 * process may still have vector use turned off (PR_RISCV_V_GET_CONTROL; where that call
 * fails, as under qemu-user, the hwcap bit decides). */
#include <sys/auxv.h>
#include <sys/prctl.h>

#ifndef PR_RISCV_V_GET_CONTROL
#define PR_RISCV_V_GET_CONTROL 70
#endif
#define POSENC_RISCV_V_CTRL_CUR_MASK 0x3 /* PR_RISCV_V_VSTATE_CTRL_CUR_MASK */
#define POSENC_RISCV_V_CTRL_OFF 1        /* PR_RISCV_V_VSTATE_CTRL_OFF */

static void detect(posenc_cpu_flags *f) {
  if (!(getauxval(AT_HWCAP) & (1ul << ('V' - 'A')))) return;
  const int ctrl = prctl(PR_RISCV_V_GET_CONTROL);
  f->rvv = ctrl < 0 || (ctrl & POSENC_RISCV_V_CTRL_CUR_MASK) != POSENC_RISCV_V_CTRL_OFF;
}
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
    case POSENC_ISA_AVX512BF16:
      return posenc_cpu_supports(POSENC_ISA_AVX512) && f->avx512bf16;
    case POSENC_ISA_NEON:
      return f->neon;
    case POSENC_ISA_SVE:
      return f->neon && f->sve;
    case POSENC_ISA_RVV:
      return f->rvv;
    default:
      return 0;
  }
}

/* The public description: brand string and the features above by name. */
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
