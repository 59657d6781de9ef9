/* Internal: the dispatch table, the only place that knows which variant runs. */
#ifndef POSENC_DISPATCH_H
#define POSENC_DISPATCH_H

#include "../kernels/rope.h"
#include "posenc.h"

/* One entry per kernel family. Each ISA's row is filled from kernels/variants.h. */
typedef struct posenc_kernel_table {
  rope_f32_fn rope_f32;
} posenc_kernel_table;

/* The active ISA's row; chooses it first if nothing has yet. Never NULL. */
const posenc_kernel_table *posenc_active_table(void);

/* CPU feature detection (dispatch/cpu.c). */
typedef struct posenc_cpu_flags {
  int sse41, sse42, avx, fma, f16c, avx2;
  int avx512f, avx512bw, avx512dq, avx512vl;
  int os_ymm, os_zmm; /* XGETBV: the OS saves YMM / opmask+ZMM state */
  int neon;
} posenc_cpu_flags;

const posenc_cpu_flags *posenc_cpu(void);
/* 1 if the CPU and OS can run `isa` (whether or not it is compiled in). */
int posenc_cpu_supports(posenc_isa isa);

#endif /* POSENC_DISPATCH_H */
