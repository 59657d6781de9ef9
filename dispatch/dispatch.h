/* Internal: the dispatch table, the only place that knows which variant runs. */
#ifndef POSENC_DISPATCH_H
#define POSENC_DISPATCH_H

#include <stdalign.h>
#include <stdint.h>

#include "../kernels/variants.h"
#include "posenc.h"

/* One member per kernel (kernels/variants.h's POSENC_KERNELS), pointing to one of its
 * variants. */
typedef struct posenc_kernel_table {
#define POSENC_TABLE_MEMBER(KERNEL, kernel, args) posenc_kernel_fn_##kernel *kernel;
  POSENC_KERNELS(POSENC_TABLE_MEMBER)
#undef POSENC_TABLE_MEMBER
} posenc_kernel_table;

/* The active table (one variant per kernel, include/posenc.h's rules); chooses it first if
 * nothing has yet. Never NULL, no member NULL. */
const posenc_kernel_table *posenc_active_table(void);

/* CPU feature detection (dispatch/cpu.c). */
typedef struct posenc_cpu_flags {
  int sse41, sse42, avx, fma, f16c, avx2;
  int avx512f, avx512bw, avx512dq, avx512vl;
  int avx512bf16, avx512fp16; /* avx512fp16: reported only */
  int amd;                    /* vendor AuthenticAMD */
  unsigned family;            /* x86 display family (base + extended), 0 elsewhere */
  int os_ymm, os_zmm;         /* XGETBV: the OS saves YMM / opmask+ZMM state */
  int neon;
  int sve, sve2;            /* sve2: reported only */
  unsigned sve_vector_bits; /* 0 without SVE (or where prctl cannot tell) */
  int rvv;                  /* riscv64: V 1.0, usable by this process */
} posenc_cpu_flags;

const posenc_cpu_flags *posenc_cpu(void);
/* The tier that serves `kernel` when `tier` was chosen; `automatic`: chosen automatically,
 * so the CPU-family rules apply to the CPU described by `cpu`. Pure (tested with made-up
 * CPUs). */
posenc_isa posenc_kernel_tier(posenc_kernel kernel, posenc_isa tier, int automatic,
                              const posenc_cpu_flags *cpu);
/* 1 if RoPE's DRAM-sized calls access their rows by split loads and stores on this CPU
 * (kernels/rope.h: posenc_rope_split_streams): on AMD family 0x1A (Zen 5) and later.
 * include/posenc.h documents the rule. Pure (tested with made-up CPUs). */
int posenc_split_streams(const posenc_cpu_flags *cpu);
/* 1 if the CPU and OS can run `isa` (whether or not it is compiled in). */
int posenc_cpu_supports(posenc_isa isa);

/* Shared argument checks (dispatch/checks.c). */

/* 1 if p is a non-null pointer aligned for elements of elem_size bytes (1, 2, 4, 8). */
static inline int posenc_elem_aligned(const void *p, size_t elem_size) {
  return p && ((uintptr_t)p & (elem_size - 1)) == 0;
}
/* 1 if p is a non-null pointer aligned for float. */
static inline int posenc_float_aligned(const void *p) {
  return posenc_elem_aligned(p, alignof(float));
}

/* 1 if rows of `width` elements at i * stride_a + j * stride_b (i < n_a, j < n_b; both
 * counts >= 1) are pairwise disjoint, with one dimension nested in the other (the smaller
 * stride clears a row, the larger one every row of the smaller dimension), and span at most
 * PTRDIFF_MAX bytes of floats; *extent receives the elements from the first to one past
 * the last. A stride whose count is 1 is unconstrained. */
int posenc_grid_extent(size_t n_a, size_t stride_a, size_t n_b, size_t stride_b, size_t width,
                       size_t *extent);
/* The same for elements of elem_size bytes: at most PTRDIFF_MAX bytes of those. */
int posenc_grid_extent_elems(size_t elem_size, size_t n_a, size_t stride_a, size_t n_b,
                             size_t stride_b, size_t width, size_t *extent);

/* 1 if the positions start_pos + [0, n) stay within int32 (n >= 1). */
int posenc_run_fits_int32(int32_t start_pos, size_t n);

/* 1 if the float ranges [a, a + n_a) and [b, b + n_b) share no element. */
int posenc_spans_disjoint(const float *a, size_t n_a, const float *b, size_t n_b);

#endif /* POSENC_DISPATCH_H */
