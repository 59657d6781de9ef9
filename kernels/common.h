/* Internal: what every kernel source shares. */
#ifndef POSENC_KERNELS_COMMON_H
#define POSENC_KERNELS_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* A helper that must be inlined: its callers pass constants (storage type, put mode,
 * layout) that select one loop, so that each call compiles to one specialised loop. */
#define POSENC_INLINE static inline __attribute__((always_inline))

/* Keeps a vector value in a register: every later use reads the register. Without it GCC
 * folds a load into each operation that uses a value (a multiply's memory operand), so a
 * vector used twice is loaded twice: the anchored cos/sin (angle_simd.h) loaded each input
 * twice, 16 512-bit loads for 8 of data per 16 pairs. x86 only; elsewhere nothing. */
#if defined(__x86_64__) && defined(__GNUC__)
#define POSENC_IN_REGISTER(v) __asm__("" : "+v"(v))
#else
#define POSENC_IN_REGISTER(v) ((void)0)
#endif

/* The most float lanes a vector layer (kernels/simd/vec_<isa>.h) may use, a power of two:
 * 64, the widest SVE vector (2048 bits). Buffers, plan padding and chunk sizes are counted
 * in elements and sized from this, never in vectors, so the kernel sources do not depend on
 * the width: a fixed-width layer's VF_W (floats per vector, VD_W = VF_W / 2 doubles) only
 * has to divide it, which each such layer checks with a static assert. A layer for a
 * length-agnostic ISA (SVE, RVV), whose VF_W is a run-time value, defines VF_SIZELESS and
 * uses at most this many lanes (SVE's vectors are at most 2048 bits; an RVV layer caps its
 * vl). Nothing public depends on it: the factor rows of posenc_rope_factors_compute are not
 * padded. Raising it costs only padding (the plan arrays are padded to it). */
#define POSENC_MAX_LANES 64
/* With VF_SIZELESS the vector types cannot be array elements, struct members or static
 * objects, and VF_W is no constant expression: the few register-blocked fast paths
 * (rope_simd.h) are left out of such a build and the general loops, which keep no vector in
 * memory, serve every shape. */

/* The name of a static helper of one per-ISA translation unit, suffixed with the layer's
 * VEC_SUFFIX so that profiles tell the ISAs apart. Nothing with external linkage is named
 * this way: the exported variants are written out in kernels/<op>_<isa>.c. */
#define POSENC_VFN_CAT2(a, b) a##b
#define POSENC_VFN_CAT(a, b) POSENC_VFN_CAT2(a, b)
#define VFN(name) POSENC_VFN_CAT(name, VEC_SUFFIX)

/* Destinations of at least this many bytes in one call are written with non-temporal
 * stores (where the layer has them: vf_stream): they would evict most of a server's
 * last-level cache anyway, and skipping the read-for-ownership of every destination line
 * made a 4096 x 4096 f32 sinusoid table 2.7x faster on avx512 (Zen 5) and brings RoPE's
 * out-of-place rows of 4096 tokens to the copy limit (README). Sinusoid tables (its whole
 * table) and RoPE's out-of-place forms (every destination view of the call) use it. */
#define POSENC_STREAM_MIN_BYTES ((size_t)16 << 20)
/* Calls over this many bytes or more (RoPE: the sources of plain, QK-norm and quantized views,
 * 16-bit or f32, rope_driver.h's rope_prefetches; ALiBi: the scores) prefetch their rows at least
 * this far ahead, in whole rows (the softmax's pipeline at least this far too, from its own 8
 * MiB): on Zen 5 a stream of 32-80 MiB in place, just over the 32 MiB L3, ran 1.2-1.55x faster
 * with a prefetch 16 KiB ahead than with any nearer one (bench limit_rmw, its x4_pf16k
 * candidates). */
#define POSENC_PREFETCH_MIN_BYTES ((size_t)16 << 20)
#define POSENC_PREFETCH_AHEAD_BYTES ((size_t)16 << 10)
/* The whole rows of row_bytes (> 0) that reach POSENC_PREFETCH_AHEAD_BYTES ahead. */
static inline size_t posenc_prefetch_rows(size_t row_bytes) {
  return (POSENC_PREFETCH_AHEAD_BYTES + row_bytes - 1) / row_bytes;
}
/* Prefetches the 64-byte steps of [p, p + bytes), to be read (_write: to be written). p is an
 * address formed as an integer: it may lie past a buffer's end, where a prefetch is harmless. */
static inline void posenc_prefetch_lines(uintptr_t p, size_t bytes) {
  for (size_t j = 0; j < bytes; j += 64) __builtin_prefetch((const void *)(p + j));
}
static inline void posenc_prefetch_lines_write(uintptr_t p, size_t bytes) {
  for (size_t j = 0; j < bytes; j += 64) __builtin_prefetch((const void *)(p + j), 1, 3);
}

#endif /* POSENC_KERNELS_COMMON_H */
