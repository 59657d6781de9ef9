/* fuzz_rope_views's decoded call (vcall: the plan, the src and dst views, the factor
 * families' rows and storage), shared by the target (fuzz_rope_views.c: the runs and the
 * checks), its decoder (rope_views_decode.c: the input format) and what posenc.h says of a
 * call (rope_views_rules.c: view geometry, the factor rows' layout, the errors it lists).
 * fuzz_rope_kv (posenc_rope_qknorm, _out_slots, _out_q8_0, _out_fp8) decodes its views and
 * plans with the same pieces (views_plan, views_layout, views_types, views_flags) and checks
 * them with the same rules (view_errors, op_errors, elem_off, view_bytes). */
#ifndef POSENC_FUZZ_ROPE_VIEWS_H
#define POSENC_FUZZ_ROPE_VIEWS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/half.h"
#include "rope_common.h"

enum { FAM_OUT, FAM_MOUT, FAM_FACTORS, FAM_MFACTORS };
#define MAX_ROWS 4096                /* positions arrays; larger counts get NULL */
#define MAX_STORAGE (1u << 18)       /* factor storage, floats */
#define STORAGE_SENTINEL 0x7FB4D200u /* signalling-NaN patterns, index-tagged */
#define KNOWN_FLAGS                                                                              \
  (POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE | POSENC_ROPE_F32_ANGLES | POSENC_ROPE_DETERMINISTIC | \
   POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_MROPE_GGML | ROPE_FLAG_INT64)
/* The M-RoPE flags, which the one-position forms refuse. */
#define MROPE_FLAGS ((unsigned)(POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_MROPE_GGML))
/* What posenc_rope_factors records of the flags that made them. */
#define FACTOR_FLAGS ((unsigned)(POSENC_ROPE_GPTJ | POSENC_ROPE_DETERMINISTIC))

typedef unsigned __int128 u128;

/* One posenc_rope_view: offsets in bytes from the arena's start, strides in elements. */
typedef struct view {
  int dtype; /* the value passed (may be no posenc_dtype) */
  size_t off, n_heads, ts, hs, bs;
  int null_view, null_data;
} view;

typedef struct vcall {
  call base; /* target, family, len (arena floats), input: common.c's fill_buffer, violation */
  const char *plan_kind;
  posenc_rope_plan *plan;
  size_t rd; /* the rotary_dim asked for */
  double att;
  size_t head_dim, n_batch, n_tokens;
  view src, dst;
  unsigned flags;     /* posenc_rope_out / _mrope_out; apply */
  int32_t *positions; /* FAM_OUT: n_batch * n_tokens or NULL; FAM_MOUT: 3 rows (GGML: 4) */
  int32_t start_pos;
  /* POSENC_ROPE_POSITIONS_INT64 in flags (FAM_OUT, FAM_MOUT) or cflags (the computes): the
   * positions (or the rows') as passed, int64, and one outside int32 (an error) */
  int64_t *pos64;
  int bad64;
  size_t sections[4]; /* GGML: four */
  int sections_null;
  /* the factor families */
  size_t n_rows;
  int32_t *row_pos; /* FAM_FACTORS: n_rows or NULL; FAM_MFACTORS: 3 rows (GGML: 4) */
  int32_t row_start;
  unsigned cflags;
  int factors_out_null, storage_null;
  unsigned storage_misalign;
  size_t storage_bytes, need, cap; /* cap: storage floats between the guards */
  size_t first_row, rbs;
  int fmut, apply_null; /* the change to the factors before applying them */
  size_t shift;         /* fmut sub-range: rows the data moves on */
  unsigned fmut_arg;
} vcall;

/* ---------------------------------------------------------------------- small helpers */

static inline int dtype_known(int d) {
  return d == POSENC_DTYPE_F32 || d == POSENC_DTYPE_BF16 || d == POSENC_DTYPE_F16;
}
static inline size_t dsize(int d) { return d == POSENC_DTYPE_F32 ? 4 : 2; }
static inline int pair_supported(int x, int y) {
  return dtype_known(x) && dtype_known(y) && (x == y || x == POSENC_DTYPE_F32);
}

static inline float widen(int dtype, uint32_t bits) {
  if (dtype == POSENC_DTYPE_F32) return posenc_bits_float(bits);
  return dtype == POSENC_DTYPE_BF16 ? posenc_bf16_to_f32((uint16_t)bits)
                                    : posenc_f16_to_f32((uint16_t)bits);
}

/* Bit-identical, any NaN for a NaN (posenc.h). */
static inline int same_elem(int dtype, uint32_t a, uint32_t b) {
  return a == b || (isnan(widen(dtype, a)) && isnan(widen(dtype, b)));
}

static inline uint32_t load_bits(const void *p, size_t size) {
  if (size == 4) {
    uint32_t b;
    memcpy(&b, p, 4);
    return b;
  }
  uint16_t h;
  memcpy(&h, p, 2);
  return h;
}

/* An element of a 32-bit value narrowed to dst's type as the library narrows. */
static inline uint32_t narrow(int src, int dst, uint32_t bits) {
  if (src == dst || src != POSENC_DTYPE_F32) return bits;
  const float f = posenc_bits_float(bits);
  return dst == POSENC_DTYPE_BF16 ? posenc_f32_to_bf16(f) : posenc_f32_to_f16(f);
}

/* The posenc_rope_view of v in an arena (its offsets from the arena's start). */
static inline posenc_rope_view views_make(const view *v, float *arena) {
  return (posenc_rope_view){v->null_data ? NULL : (char *)arena + v->off,
                            (posenc_dtype)v->dtype,
                            v->n_heads,
                            v->ts,
                            v->hs,
                            v->bs};
}

static inline int32_t *alloc_i32(size_t n) {
  int32_t *p = calloc(n ? n : 1, sizeof *p);
  if (!p) abort();
  return p;
}

/* ---------------------------------------------------------------------- decoding */

/* A new call decoded from r (rope_views_decode.c): the plan made (and checked), the arena's
 * size set. */
call *views_decode(reader *r);
/* Its pieces, shared with fuzz_rope_kv (rope_kv_decode.c): the plan (default, ggml
 * parameters, scaled; c->plan, rd, att, plan_kind), a view's layout for c's counts and
 * head_dim, the (src, dst) type pair (unknown dtypes with `unknown`), the op's flags. */
void views_plan(reader *r, vcall *c);
void views_layout(reader *r, const vcall *c, view *v);
void views_types(reader *r, vcall *c, int unknown);
unsigned views_flags(reader *r, int mrope);
/* One float of tensor data: from the input while it lasts (1/16 special), then a PRNG. */
float views_data(reader *r);

/* ---------------------------------------------------------------------- rope_views_rules.c */

/* Elements from the view's first to one past its last (128-bit: exact for any values);
 * 0 when a count is 0. */
u128 view_extent(const vcall *c, const view *v);
/* The same for sizing the arena: huge counts and strides left out (a call using them must
 * fail; if it does not, ASan sees the access). */
size_t view_bytes(const vcall *c, const view *v);
/* posenc.h: the dimensions with a count above 1, sorted by stride, nest. */
int view_nested(const vcall *c, const view *v);
/* The byte offset of element d of head h of token t of batch b. */
size_t elem_off(const view *v, size_t b, size_t t, size_t h, size_t d);
/* The in-place case of posenc_rope_out: the same data, type and strides. */
int in_place(const vcall *c);

/* M-RoPE sections valid for n = R/2 pairs and the flags (the interleaved layout; ggml's
 * four sections with POSENC_ROPE_MROPE_GGML). */
int sections_valid(const vcall *c, size_t n, unsigned flags);
/* The rows of M-RoPE positions for the flags: 3, or 4 with POSENC_ROPE_MROPE_GGML. */
static inline int mrope_rows(unsigned flags) { return flags & POSENC_ROPE_MROPE_GGML ? 4 : 3; }
/* A factor row's floats, and posenc_rope_factors_bytes, as posenc.h describes the rows. */
size_t row_floats_of(size_t rd, unsigned layout);
size_t factors_bytes_expected(size_t rd, size_t n_rows, unsigned flags);

/* The errors posenc.h lists, for the views, posenc_rope_out / _mrope_out, the compute and
 * the apply of factors g: *sure, an error whatever the counts; *listed, an error at least
 * with work to do. */
void view_errors(const vcall *c, int *sure, int *listed);
void op_errors(const vcall *c, int *sure, int *listed);
void plan_op_errors(const vcall *c, int mrope, int *sure, int *listed);
void compute_errors(const vcall *c, int *sure, int *listed);
void apply_errors(const vcall *c, const posenc_rope_factors *g, size_t first_row, int *sure,
                  int *listed);

#endif
