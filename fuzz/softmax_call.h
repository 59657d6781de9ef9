/* fuzz_softmax's decoded call (softmax_call: posenc_softmax, or posenc_softmax_batched with
 * its batch strides, ggml's mask broadcast and int64 positions), shared by the target
 * (fuzz_softmax.c: the call, the long double reference, the checks) and its decoder
 * (softmax_decode.c: the input format), with the element helpers both use. */
#ifndef POSENC_FUZZ_SOFTMAX_CALL_H
#define POSENC_FUZZ_SOFTMAX_CALL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../kernels/half.h"
#include "common.h"

enum { MAX_HEADS = 4, MAX_Q = 8, MAX_K = 300 };

#define KNOWN_FLAGS                                                         \
  (POSENC_SOFTMAX_CAUSAL | POSENC_SOFTMAX_WINDOW | POSENC_SOFTMAX_SOFTCAP | \
   POSENC_SOFTMAX_ALIBI_SYMMETRIC | POSENC_SOFTMAX_MASK_SLOPE | POSENC_SOFTMAX_KPOS_NEG_HIDDEN)

/* The arrays of posenc_softmax_params. */
enum { AUX_MASK, AUX_SLOPES, AUX_SINKS, AUX_KPOS, AUX_QPOS, AUX_COUNT };
/* What misc's misalignment byte shifts: y, x or one of the arrays (MIS_AUX + AUX_*). */
enum { MIS_Y, MIS_X, MIS_AUX };
/* What a y element must be. */
enum { WANT_ZERO, WANT_NAN, WANT_ONE, WANT_VALUE, WANT_ZERO_NAN_ROW /* hidden, in a NaN row */ };

typedef struct aux_array {
  int present;
  unsigned char *heap; /* the values (bytes, at heap + mis), malloc'd to the byte */
  size_t bytes;        /* what the library may read */
  size_t mis;          /* bytes added to the pointer */
  int in_arena;        /* 1: copied into the arena at arena_byte (which includes mis) */
  size_t arena_byte;
} aux_array;

typedef struct softmax_call {
  call base;
  size_t n_heads, n_q, n_k;
  int work;        /* every count >= 1 */
  int null_struct; /* 1: NULL params, 2: NULL x, 3: NULL y */
  int null_y;      /* with base.null_data: y's data NULL, else x's */
  posenc_dtype xdt, ydt;
  size_t xsz, ysz;
  size_t x_hs, x_rs, y_hs, y_rs; /* as passed (row 0: n_k) */
  size_t x_rse, y_rse;           /* effective row strides */
  size_t x_byte, y_byte;         /* arena byte offsets of the data pointers */
  size_t x_bytes, y_bytes;       /* extents in bytes (0: none or overflow) */
  int in_place;
  posenc_softmax_params p; /* the array pointers are set per call (arena or heap) */
  aux_array aux[AUX_COUNT];
  size_t msz;
  int must_pass;
  /* posenc_softmax_batched (misc % 32 in 10..12): batches, the views' batch strides
   * (elements), int64 positions passed to it instead of kpos / qpos (heap, to the element) */
  int batched;
  size_t n_batch, x_bs, y_bs;
  int64_t *kpos64, *qpos64;
  int pos_both; /* kpos (qpos) passed too: an error */
  int split_check;
  int poison; /* 1: x NaN at hidden keys, gaps of x NaN */
  /* The reference per key (h * n_q + i) * n_k + j. */
  unsigned char *kind;
  long double *want;
  double *tol;
} softmax_call;

/* ---------------------------------------------------------------------- small helpers */

static inline int dtype_ok(posenc_dtype d) {
  return d == POSENC_DTYPE_F32 || d == POSENC_DTYPE_BF16 || d == POSENC_DTYPE_F16;
}
static inline size_t dtype_size(posenc_dtype d) {
  return d == POSENC_DTYPE_F32 || !dtype_ok(d) ? 4 : 2;
}

static inline float widen_bf16(uint16_t h) { return posenc_bits_float((uint32_t)h << 16); }
static inline float widen_f16(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return posenc_bits_float(sign | 0x7f800000u | mant << 13);
  if (exp == 0) return (sign ? -1.0f : 1.0f) * ldexpf((float)mant, -24);
  return posenc_bits_float(sign | (exp + 112u) << 23 | mant << 13);
}
static inline uint16_t narrow_bf16(float f) {
  const uint32_t b = posenc_float_bits(f);
  if (isnan(f)) return (uint16_t)((b >> 16) | 0x40u);
  return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
static inline uint16_t narrow_f16(float f) {
  const uint32_t b = posenc_float_bits(f), a = b & 0x7fffffffu;
  const uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
  if (a > 0x7f800000u) return sign | 0x7e00u;
  if (a >= 0x477ff000u) return sign | 0x7c00u; /* >= 65520: inf */
  if (a <= 0x33000000u) return sign;           /* <= 2^-25: 0 */
  if (a < 0x38800000u) return sign | (uint16_t)lrintf(posenc_bits_float(a) * 16777216.0f);
  return sign | (uint16_t)((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13);
}

/* Element i of a tensor of dtype d at p (any alignment). */
static inline float load(const unsigned char *p, size_t i, posenc_dtype d) {
  if (d == POSENC_DTYPE_F32) {
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, p + 2 * i, 2);
  return d == POSENC_DTYPE_BF16 ? widen_bf16(h) : widen_f16(h);
}
static inline void store(unsigned char *p, size_t i, float v, posenc_dtype d) {
  if (d == POSENC_DTYPE_F32) {
    memcpy(p + 4 * i, &v, 4);
    return;
  }
  const uint16_t h = d == POSENC_DTYPE_BF16 ? narrow_bf16(v) : narrow_f16(v);
  memcpy(p + 2 * i, &h, 2);
}

static inline uint32_t xorshift(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return (uint32_t)(*s >> 16);
}

/* The query position of row i and the key position of column j (arrays as the library
 * reads them: from the heap or the arena). */
static inline const unsigned char *aux_ptr(const softmax_call *c, int k,
                                           const unsigned char *arena) {
  const aux_array *a = &c->aux[k];
  if (!a->present) return NULL;
  return a->in_arena ? arena + a->arena_byte : a->heap + a->mis;
}
static inline int32_t read_i32(const unsigned char *p, size_t i) {
  int32_t v;
  memcpy(&v, p + 4 * i, 4);
  return v;
}
static inline float read_f32(const unsigned char *p, size_t i) {
  float v;
  memcpy(&v, p + 4 * i, 4);
  return v;
}

/* The mask head that head h reads: h % mask_n_heads (ggml's broadcast), or h. */
static inline size_t mask_head(const softmax_call *c, size_t h) {
  return c->p.mask_n_heads ? h % c->p.mask_n_heads : h;
}

/* ---------------------------------------------------------------------- decoding */

/* A new call decoded from r (softmax_decode.c), its arena size set: fuzz_target.decode. */
call *softmax_decode(reader *r);

#endif
