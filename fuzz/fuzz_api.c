/* libFuzzer differential target over the public API (scripts/test-fuzz.sh builds and runs it).
 *
 * Each input is decoded by a small cursor reader (bytes past the end read as 0; tensor data
 * past the end comes from a PRNG seeded by the input) into one call of one kernel family:
 * RoPE (f32, and bf16 / f16 head vectors stored two to an arena float), M-RoPE
 * (posenc_mrope_*: sections, 3 rows of positions) and re-rotation (posenc_rope_rerotate_*:
 * two plans, two sets of positions) in the same three storage types, sinusoid fill /
 * timesteps / add (f32, bf16 and f16 rows), ALiBi add / bias (f32, bf16 and f16 scores) and
 * softmax (f32 and bf16 scores), 16-bit elements stored two to an arena float, learned add;
 * small shapes, strides that are sometimes invalid, overlapping or huge, flags with unknown
 * bits, positions near the int32 limits, plan parameters (base 0, 1, NaN, Inf, huge; given
 * frequencies), slopes and scales incl. NaN, tensor data incl. NaN/Inf/subnormal,
 * misaligned pointers.
 *
 * The call is made on a copy of the same buffer with the scalar ISA and with every other
 * available ISA (posenc_set_isa). Every tensor lives in one "arena" with guard regions before
 * and after it, filled with a sentinel and poisoned for AddressSanitizer during the call.
 * Required, else abort():
 *  - every ISA returns the same status;
 *  - on error, the arena and guards are unchanged bit for bit;
 *  - on success, the guards and every element the call may not write are unchanged; an
 *    accepted call never has overlapping outputs; the written elements match scalar:
 *    RoPE within POSENC_ROPE_SIMD_TOLERANCE * att * (|u| + |v|) (bf16 / f16: plus one ulp
 *    of the storage type, checked per 16-bit half), sinusoid within
 *    POSENC_SINUSOID_SIMD_TOLERANCE (add: plus one rounding of the sum; bf16 / f16: plus one
 *    ulp of the storage type, per 16-bit half), ALiBi add / bias (any storage) and learned
 *    bit for bit, ALiBi softmax within twice the header's bound
 *    (POSENC_ALIBI_SOFTMAX_*_TOLERANCE; bf16: plus one bf16 rounding, checked per 16-bit
 *    half); NaN exactly where scalar has NaN;
 *  - an accepted softmax call never has its slopes (sometimes placed in the arena) inside
 *    the scores' address range;
 *  - M-RoPE and re-rotation (RoPE's checks; re-rotation's bound with r = att_to / att_from in
 *    place of att): a call with an argument the header lists as an error (sections, plans,
 *    ratio, flags, runs) fails; the scalar M-RoPE result equals the scalar posenc_rope_*
 *    result at each pair's row of positions bit for bit (check_mrope_rows); the scalar
 *    re-rotation is within 2^-19 r (|u| + |v|) of an inverse rotation by `from` followed by
 *    a rotation by `to` (check_rerotate_composition).
 * The encoder in fuzz/make_corpus.py writes the seed corpus in this format. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posenc.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#endif
#endif
#ifndef POISON
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define GUARD 64             /* floats before and after the arena */
#define MAX_ARENA (1u << 18) /* floats; far above what the decoded shapes need */
#define SENTINEL(i) (0x7FA5C300u ^ (uint32_t)(i)) /* signalling-NaN patterns, index-tagged */
/* Counts and strides this large must overflow: their extents exceed PTRDIFF_MAX bytes even
 * for 2-byte elements (1 << 61 did only for floats: a 16-bit call with such a stride spans
 * 2^62 bytes, which the library must accept, and then touches memory that is not there). */
#define HUGE_BASE ((size_t)1 << 62)

/* ---------------------------------------------------------------------- cursor reader */

typedef struct reader {
  const uint8_t *p;
  size_t n;
  uint64_t rng; /* data past the end of the input */
} reader;

static uint8_t u8(reader *r) {
  if (!r->n) return 0;
  --r->n;
  return *r->p++;
}
static uint16_t u16(reader *r) { return (uint16_t)(u8(r) | (u8(r) << 8)); }
static uint32_t u32(reader *r) { return (uint32_t)u16(r) | ((uint32_t)u16(r) << 16); }
static uint64_t u64(reader *r) { return (uint64_t)u32(r) | ((uint64_t)u32(r) << 32); }

static uint32_t rng_next(reader *r) {
  r->rng ^= r->rng << 13;
  r->rng ^= r->rng >> 7;
  r->rng ^= r->rng << 17;
  return (uint32_t)(r->rng >> 16);
}

static float bits_float(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}
static uint32_t float_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}
static double bits_double(uint64_t b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

/* A tensor element: two bytes while the input lasts (1/16 of them special values), then
 * the PRNG (values in [-4, 4), 1/64 of them special). */
static float special_float(unsigned k, uint32_t raw) {
  switch (k % 12) {
    case 0:
      return NAN;
    case 1:
      return INFINITY;
    case 2:
      return -INFINITY;
    case 3:
      return 1e-40f; /* subnormal */
    case 4:
      return -FLT_TRUE_MIN;
    case 5:
      return -0.0f;
    case 6:
      return 1e30f;
    case 7:
      return -3e38f;
    case 8:
      return bits_float(0x7FC01234u); /* NaN with a payload */
    case 9:
      return bits_float(0xFF800001u); /* signalling NaN */
    case 10:
      return FLT_MIN;
    default:
      return bits_float(raw);
  }
}

static float data_float(reader *r) {
  if (r->n >= 2) {
    const uint16_t v = u16(r);
    if ((v >> 12) == 0xF) return special_float(v & 0xF, (uint32_t)v * 2654435761u);
    return (float)(int16_t)(v << 1) / 4096.0f; /* [-16, 16) */
  }
  const uint32_t x = rng_next(r);
  if ((x & 63) == 0) return special_float(x >> 6, x);
  return (float)(int32_t)(x - 0x80000000u) / (float)(1u << 29);
}

/* A count in [0, max]; with `huge`, 1/256 of them at least 2^61 (must be rejected). */
static size_t count(reader *r, size_t max, int huge) {
  const uint8_t b = u8(r);
  if (huge && b == 0xFF) return HUGE_BASE + u8(r);
  return b % (max + 1);
}

/* A stride around `natural` (the dense one): mostly natural, sometimes larger, smaller
 * (overlapping), zero, a small arbitrary value, or huge (>= 2^61: any extent using it
 * with a count >= 2 overflows). *huge is set for the latter. */
static size_t stride(reader *r, size_t natural, int *huge) {
  const uint8_t b = u8(r);
  switch (b % 16) {
    case 8:
    case 9:
    case 10:
      return natural + 1 + u8(r) % 8;
    case 11:
      return natural ? natural - 1 - u8(r) % natural : 0;
    case 12:
      return 0;
    case 13:
      *huge = 1;
      return (u8(r) & 1) ? SIZE_MAX - u8(r) : HUGE_BASE + u8(r);
    case 14:
      return u8(r) % 64;
    case 15:
      return 2 * natural + u8(r) % 5;
    default:
      return natural;
  }
}

static uint32_t flags_of(reader *r, uint32_t known) {
  const uint8_t b = u8(r);
  if (b >= 0xF0) return u32(r) | (1u << (b & 31)); /* unknown bits (maybe) */
  return b & known;
}

static int32_t special_position(reader *r) {
  const uint8_t b = u8(r);
  switch (b % 12) {
    case 0:
      return INT32_MIN;
    case 1:
      return INT32_MAX;
    case 2:
      return INT32_MAX - u8(r);
    case 3:
      return INT32_MIN + u8(r);
    case 4:
      return (int32_t)u32(r);
    case 5:
      return -(int32_t)u16(r);
    case 6:
      return 131072 + u8(r);
    case 7:
      return (1 << 24) + u8(r);
    default:
      return (int32_t)u16(r);
  }
}

/* Positions: NULL (start_pos decoded) or an array of n; runs of consecutive positions
 * (the SIMD variants step those) broken by special values. */
static int32_t *positions_of(reader *r, size_t n, int32_t *start_pos) {
  const uint8_t mode = u8(r);
  *start_pos = special_position(r);
  if (mode % 3 == 0 || n == 0 || n > 4096) return NULL;
  int32_t *p = malloc(n * sizeof *p);
  if (!p) abort();
  int32_t next = *start_pos;
  for (size_t t = 0; t < n; ++t) {
    const uint8_t b = u8(r);
    p[t] = (b % 8 == 7) ? special_position(r) : next;
    next = p[t] == INT32_MAX ? INT32_MIN : p[t] + 1;
  }
  return p;
}

static double param(reader *r, const double *common, size_t n_common) {
  const uint8_t b = u8(r);
  switch (b % 16) {
    case 0:
      return NAN;
    case 1:
      return INFINITY;
    case 2:
      return -INFINITY;
    case 3:
      return 0.0;
    case 4:
      return 1.0;
    case 5:
      return 1e300;
    case 6:
      return 1e-300;
    case 7:
      return -common[0];
    case 8:
      return bits_double(u64(r));
    case 9:
      return 1.0 + (double)u8(r) * 1e-9;
    default:
      return common[b % n_common];
  }
}

static double freq(reader *r) {
  const uint8_t b = u8(r);
  switch (b % 16) {
    case 0:
      return NAN;
    case 1:
      return INFINITY;
    case 2:
      return 0.0;
    case 3:
      return -(double)u16(r) / 1024.0;
    case 4:
      return 1e10;
    case 5:
      return 4.9e-324;
    case 6:
      return bits_double(u64(r));
    default:
      return pow(10000.0, -(double)u8(r) / 128.0);
  }
}

/* ---------------------------------------------------------------------- one decoded call */

enum {
  ROPE,
  SIN_FILL,
  SIN_TIMESTEPS,
  SIN_ADD,
  ALIBI_ADD,
  ALIBI_BIAS,
  LEARNED,
  ALIBI_SOFTMAX,      /* posenc_alibi_softmax_f32 */
  ALIBI_SOFTMAX_BF16, /* posenc_alibi_softmax_bf16: bf16 scores in the float arena */
  ROPE_BF16,          /* posenc_rope_bf16, posenc_rope_f16: ROPE's calls on 16-bit elements, */
  ROPE_F16,           /* two to an arena float (offsets, strides and spans in those) */
  SIN_FILL16,         /* SIN_FILL, SIN_TIMESTEPS, SIN_ADD, ALIBI_ADD and ALIBI_BIAS on bf16 or */
  SIN_TIMESTEPS16,    /* (c->f16) f16 rows: posenc_sinusoid_*_bf16 / _f16, posenc_alibi_add_bf16 */
  SIN_ADD16,          /* ..., two 16-bit elements to an arena float */
  ALIBI_ADD16,
  ALIBI_BIAS16,
  /* Appended after the sixteen above, so that the committed seeds (first byte 0-15, the
   * family index itself) keep their families under the larger modulus. */
  MROPE,      /* posenc_mrope_f32: ROPE's views and plan, sections[3], 3 rows of positions */
  MROPE16,    /* posenc_mrope_bf16 / _f16 (c->f16): on 16-bit elements, as ROPE_BF16 */
  REROTATE,   /* posenc_rope_rerotate_f32: plans from (rope_plan) and to (to_plan), ROPE's */
  REROTATE16, /* q view as the keys; _bf16 / _f16 (c->f16) on 16-bit elements */
  N_FAMILIES
};

/* SIN_FILL16 ... ALIBI_BIAS16. */
static int sin_alibi16(int family) { return family >= SIN_FILL16 && family <= ALIBI_BIAS16; }

/* The families whose byte after misc picks bf16 or f16 storage (c->f16). */
static int typed16(int family) {
  return sin_alibi16(family) || family == MROPE16 || family == REROTATE16;
}

/* RoPE families on 16-bit elements: checked by check_rope16. */
static int rope16(int family) {
  return family == ROPE_BF16 || family == ROPE_F16 || family == MROPE16 || family == REROTATE16;
}

/* Every RoPE family (plain, M-RoPE, re-rotation; any storage): check_rope / check_rope16. */
static int rope_any(int family) {
  return family == ROPE || family == MROPE || family == REROTATE || rope16(family);
}

/* Families whose tensors are 16-bit elements, marked and checked per 16-bit half. */
static int uses_halves(int family) {
  return family == ALIBI_SOFTMAX_BF16 || rope16(family) || sin_alibi16(family);
}

/* The f32 family whose call a 16-bit sinusoid or ALiBi family makes (else the family). */
static int base_family(int family) {
  if (family >= SIN_FILL16 && family <= SIN_ADD16) return SIN_FILL + (family - SIN_FILL16);
  if (family == ALIBI_ADD16 || family == ALIBI_BIAS16) return ALIBI_ADD + (family - ALIBI_ADD16);
  return family;
}

/* A decoded call: its arguments, with tensors given as element offsets into one arena. */
typedef struct call {
  int family;
  int f16;           /* SIN_*16, ALIBI_*16: f16 storage, else bf16 */
  size_t len;        /* arena elements */
  float *input;      /* the arena's initial contents */
  uint8_t *touched;  /* per element: how many output elements of an accepted call map to it */
  unsigned misalign; /* bytes added to the tensor pointers (0: aligned) */
  int null_data;     /* pass NULL for the (first) tensor */
  int32_t *positions;
  int32_t start_pos;
  size_t n_positions;
  unsigned flags;
  /* rope */
  posenc_rope_plan *rope_plan;
  size_t head_dim, n_tokens, q_off, q_heads, q_ts, q_hs, k_off, k_heads, k_ts, k_hs;
  int with_k;
  /* sinusoid */
  posenc_sinusoid_plan *sin_plan;
  size_t n_rows, row_stride, out_off;
  float *timesteps;
  /* alibi: n_heads, n_q, n_k, q_offset, head_stride, row_stride (= row_stride above) */
  float *slopes;
  size_t n_heads, n_q, n_k, q_offset, head_stride;
  float scale;
  int slopes_in_arena; /* softmax: slopes at arena element slopes_off (maybe in the scores) */
  size_t slopes_off;
  /* learned */
  size_t max_pos, table_off, table_stride, dim, x_off, x_stride;
  int values_unchecked; /* plan beyond the checked frequency range (see max_checked_freq) */
  /* MROPE: sections[3] (NULL if sections_null); positions holds 3 rows of n_tokens */
  size_t sections[3];
  int sections_null;
  /* MROPE, REROTATE: pass NULL for the q / keys view itself (misc % 32 == 2) */
  int null_view;
  /* REROTATE: rope_plan is `from`, to_plan `to` (the same pointer if to_is_from, else owned);
   * positions / start_pos are the positions rotated to, these the ones rotated from */
  posenc_rope_plan *to_plan;
  int to_is_from;
  int32_t *from_positions;
  int32_t from_start;
  /* MROPE, REROTATE: an argument the header lists as an error (the call must fail) */
  int must_fail;
  /* ALIBI_SOFTMAX_BF16: touched per 16-bit half of the arena (touched is then unused) */
  uint8_t *touched16;
} call;

/* Known issues (reported with this target); until they are fixed or the plans restricted,
 * the written values of such calls are not compared (status, guards and untouched elements
 * still are); POSENC_FUZZ_STRICT=1 compares them too:
 *  - frequencies above about 1e13 rad/position: the accurate angles are far off the exact
 *    product p * w (e.g. w = 1e20, p = 2^31 - 1: sin 0 instead of -0.73), and the stepped
 *    SIMD rows then differ from the scalar ones by up to 2. Checked up to |w| <= 2^32.
 *  - a RoPE attention factor above FLT_MAX (finite in double, accepted by plan creation):
 *    the kernels' float att is infinite, so c and s are Inf or NaN (Inf * sin 0) and the
 *    outputs NaN/Inf, differently in scalar and SIMD.
 * (Fixed, so checked: posenc_rope_rerotate_* with POSENC_ROPE_F32_ANGLES where a float
 * angle exceeds 2^32 rad lost up to 2^-13 in its difference and reduction; seed
 * 18-rerotate-hand-f32-angles-beyond-2p32.) */
static int strict_mode(void) {
  const char *strict = getenv("POSENC_FUZZ_STRICT");
  return strict && *strict == '1';
}

static double max_checked_freq(void) { return strict_mode() ? INFINITY : 4294967296.0; }

static int freqs_beyond(const double *w, size_t n, double limit) {
  for (size_t i = 0; i < n; ++i)
    if (fabs(w[i]) > limit) return 1;
  return 0;
}

static float *ptr(const call *c, float *arena, size_t off) {
  return (float *)((char *)(arena + off) + c->misalign);
}

/* Element off of a 16-bit tensor in the arena. */
static void *ptr16(const call *c, float *arena, size_t off) {
  return (char *)arena + 2 * off + c->misalign;
}

/* SIN_*16 and ALIBI_*16: the f32 family's call on bf16 or f16 rows. */
static posenc_status invoke16(const call *c, float *arena) {
  void *out = c->null_data ? NULL : ptr(c, arena, c->out_off);
  switch (c->family) {
    case SIN_FILL16:
      return (c->f16 ? posenc_sinusoid_fill_f16 : posenc_sinusoid_fill_bf16)(
          c->sin_plan, c->n_rows, c->positions, c->start_pos, out, c->row_stride, c->flags);
    case SIN_TIMESTEPS16:
      return (c->f16 ? posenc_sinusoid_fill_timesteps_f16 : posenc_sinusoid_fill_timesteps_bf16)(
          c->sin_plan, c->n_rows, c->timesteps, out, c->row_stride, c->flags);
    case SIN_ADD16:
      return (c->f16 ? posenc_sinusoid_add_f16 : posenc_sinusoid_add_bf16)(
          c->sin_plan, c->n_rows, c->positions, c->start_pos, out, c->row_stride, c->flags);
    case ALIBI_ADD16:
      return (c->f16 ? posenc_alibi_add_f16 : posenc_alibi_add_bf16)(
          c->slopes, c->n_heads, c->n_q, c->n_k, c->q_offset, out, c->head_stride, c->row_stride,
          c->scale, c->flags);
    default:
      return (c->f16 ? posenc_alibi_bias_f16 : posenc_alibi_bias_bf16)(
          c->slopes, c->n_heads, c->n_q, c->n_k, c->q_offset, out, c->head_stride, c->row_stride,
          c->flags);
  }
}

static posenc_status invoke(const call *c, float *arena) {
  if (sin_alibi16(c->family)) return invoke16(c, arena);
  switch (c->family) {
    case ROPE: {
      const posenc_rope_tensor q = {c->null_data ? NULL : ptr(c, arena, c->q_off), c->q_heads,
                                    c->q_ts, c->q_hs};
      const posenc_rope_tensor k = {ptr(c, arena, c->k_off), c->k_heads, c->k_ts, c->k_hs};
      return posenc_rope_f32(c->rope_plan, c->head_dim, c->n_tokens, c->positions, c->start_pos, &q,
                             c->with_k ? &k : NULL, c->flags);
    }
    case ROPE_BF16:
    case ROPE_F16: {
      const posenc_rope_tensor q = {c->null_data ? NULL : ptr16(c, arena, c->q_off), c->q_heads,
                                    c->q_ts, c->q_hs};
      const posenc_rope_tensor k = {ptr16(c, arena, c->k_off), c->k_heads, c->k_ts, c->k_hs};
      return (c->family == ROPE_BF16 ? posenc_rope_bf16 : posenc_rope_f16)(
          c->rope_plan, c->head_dim, c->n_tokens, c->positions, c->start_pos, &q,
          c->with_k ? &k : NULL, c->flags);
    }
    case MROPE:
    case MROPE16: {
      void *qd = c->family == MROPE ? (void *)ptr(c, arena, c->q_off) : ptr16(c, arena, c->q_off);
      void *kd = c->family == MROPE ? (void *)ptr(c, arena, c->k_off) : ptr16(c, arena, c->k_off);
      const posenc_rope_tensor q = {c->null_data ? NULL : qd, c->q_heads, c->q_ts, c->q_hs};
      const posenc_rope_tensor k = {kd, c->k_heads, c->k_ts, c->k_hs};
      const size_t *sections = c->sections_null ? NULL : c->sections;
      return (c->family == MROPE ? posenc_mrope_f32
              : c->f16           ? posenc_mrope_f16
                       : posenc_mrope_bf16)(c->rope_plan, sections, c->head_dim, c->n_tokens,
                                            c->positions, c->null_view ? NULL : &q,
                                            c->with_k ? &k : NULL, c->flags);
    }
    case REROTATE:
    case REROTATE16: {
      void *d = c->family == REROTATE ? (void *)ptr(c, arena, c->q_off) : ptr16(c, arena, c->q_off);
      const posenc_rope_tensor keys = {c->null_data ? NULL : d, c->q_heads, c->q_ts, c->q_hs};
      return (c->family == REROTATE ? posenc_rope_rerotate_f32
              : c->f16              ? posenc_rope_rerotate_f16
                                    : posenc_rope_rerotate_bf16)(
          c->rope_plan, c->from_positions, c->from_start, c->to_plan, c->positions, c->start_pos,
          c->head_dim, c->n_tokens, c->null_view ? NULL : &keys, c->flags);
    }
    case SIN_FILL:
      return posenc_sinusoid_fill_f32(c->sin_plan, c->n_rows, c->positions, c->start_pos,
                                      c->null_data ? NULL : ptr(c, arena, c->out_off),
                                      c->row_stride, c->flags);
    case SIN_TIMESTEPS:
      return posenc_sinusoid_fill_timesteps_f32(c->sin_plan, c->n_rows, c->timesteps,
                                                c->null_data ? NULL : ptr(c, arena, c->out_off),
                                                c->row_stride, c->flags);
    case SIN_ADD:
      return posenc_sinusoid_add_f32(c->sin_plan, c->n_rows, c->positions, c->start_pos,
                                     c->null_data ? NULL : ptr(c, arena, c->out_off), c->row_stride,
                                     c->flags);
    case ALIBI_ADD:
      return posenc_alibi_add_f32(c->slopes, c->n_heads, c->n_q, c->n_k, c->q_offset,
                                  c->null_data ? NULL : ptr(c, arena, c->out_off), c->head_stride,
                                  c->row_stride, c->scale, c->flags);
    case ALIBI_BIAS:
      return posenc_alibi_bias_f32(c->slopes, c->n_heads, c->n_q, c->n_k, c->q_offset,
                                   c->null_data ? NULL : ptr(c, arena, c->out_off), c->head_stride,
                                   c->row_stride, c->flags);
    case ALIBI_SOFTMAX:
    case ALIBI_SOFTMAX_BF16: {
      const float *slopes = c->slopes_in_arena ? arena + c->slopes_off : c->slopes;
      void *scores = c->null_data ? NULL : ptr(c, arena, c->out_off);
      if (c->family == ALIBI_SOFTMAX)
        return posenc_alibi_softmax_f32(slopes, c->n_heads, c->n_q, c->n_k, c->q_offset, scores,
                                        c->head_stride, c->row_stride, c->scale, c->flags);
      return posenc_alibi_softmax_bf16(slopes, c->n_heads, c->n_q, c->n_k, c->q_offset, scores,
                                       c->head_stride, c->row_stride, c->scale, c->flags);
    }
    default:
      return posenc_learned_add_f32(c->null_data ? NULL : ptr(c, arena, c->table_off), c->max_pos,
                                    c->table_stride, c->dim, c->n_tokens, c->positions,
                                    c->start_pos, ptr(c, arena, c->x_off), c->x_stride);
  }
}

/* Elements spanned by count_a x count_b rows of `width` (0 if none); huge strides and
 * counts are left out: a call using them must be rejected, and if it is not, ASan sees the
 * access. */
static size_t span(size_t count_a, size_t stride_a, size_t count_b, size_t stride_b, size_t width) {
  if (count_a == 0 || count_b == 0 || width == 0 || count_a >= HUGE_BASE || count_b >= HUGE_BASE)
    return 0;
  size_t s = width;
  if (count_a > 1 && stride_a < HUGE_BASE) s += (count_a - 1) * stride_a;
  if (count_b > 1 && stride_b < HUGE_BASE) s += (count_b - 1) * stride_b;
  return s;
}

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

static void touch(call *c, size_t i) {
  if (i < c->len && c->touched[i] < 255) ++c->touched[i];
}

/* The same for the 16-bit halves of the arena (ALIBI_SOFTMAX_BF16). */
static void touch16(call *c, size_t i) {
  if (i < 2 * c->len && c->touched16[i] < 255) ++c->touched16[i];
}

/* Marks with `mark` the rows [a * sa + b * sb, + width) (a < na, b < nb) of an output at
 * `off` (in the elements `mark` counts). */
static void mark_grid(call *c, void (*mark)(call *, size_t), size_t off, size_t na, size_t sa,
                      size_t nb, size_t sb, size_t width) {
  if (na >= HUGE_BASE || nb >= HUGE_BASE) return;
  for (size_t i = 0; i < na; ++i)
    for (size_t j = 0; j < nb; ++j) {
      if ((i && sa >= HUGE_BASE) || (j && sb >= HUGE_BASE)) return;
      for (size_t e = 0; e < width; ++e) mark(c, off + i * sa + j * sb + e);
    }
}

static void touch_grid(call *c, size_t off, size_t na, size_t sa, size_t nb, size_t sb,
                       size_t width) {
  mark_grid(c, touch, off, na, sa, nb, sb, width);
}

static posenc_rope_plan *decode_rope_plan(reader *r, size_t *rotary) {
  static const double bases[] = {10000.0, 500000.0, 1e6, 2.0, 10.0, 1e4 + 0.5};
  static const double atts[] = {1.0, 1.0, 0.7, 1.3, 1e30, 1e-30};
  size_t rd = 2 * (size_t)(u8(r) % 101);
  const uint8_t shape = u8(r);
  if (shape % 16 == 0) rd += 1;                    /* odd: rejected */
  if (shape % 16 == 1) rd = ((size_t)1 << 20) + 2; /* too large: rejected */
  *rotary = rd;
  const double att = u8(r) % 4 ? 1.0 : param(r, atts, 6);
  posenc_rope_plan *plan = NULL;
  if (shape % 4 == 3 && rd <= 400) {
    double freqs[200];
    for (size_t i = 0; i < rd / 2; ++i) freqs[i] = freq(r);
    if (posenc_rope_plan_create_from_freqs(&plan, rd, freqs, att) != POSENC_OK) plan = NULL;
  } else {
    const double base = u8(r) % 4 ? 10000.0 : param(r, bases, 6);
    if (posenc_rope_plan_create(&plan, rd, base, att) != POSENC_OK) plan = NULL;
  }
  return plan;
}

/* The most pairs of a plan decode_rope_plan_new creates. */
#define MAX_NEW_PAIRS 320

/* MROPE and REROTATE plans: decode_rope_plan's kinds, mostly valid (the seeds' bytes 4-7
 * give valid plans): rotary_dim up to 200 (1/32 odd, 1/32 too large, 1/101 zero, 1/32 in
 * [512, 638]: more pairs than POSENC_ROPE_CHUNK, cos/sin in two chunks), base
 * 10000 or another, given frequencies (1/4) mostly in (0, 1] and sometimes 0, negative,
 * exactly 1024 (the limit) or past it, NaN; attention factor mostly 1, sometimes a common
 * one or decode_rope_plan's specials. */
static posenc_rope_plan *decode_rope_plan_new(reader *r, size_t *rotary) {
  static const double bases[] = {10000.0, 500000.0, 1e6, 2.0, 10.0, 1e4 + 0.5};
  static const double atts[] = {1.0, 1.0, 0.7, 1.3, 1e30, 1e-30};
  size_t rd = 2 * (size_t)(u8(r) % 101);
  const uint8_t shape = u8(r);
  if (shape % 32 == 0) rd += 1;                             /* odd: rejected */
  if (shape % 32 == 1) rd = ((size_t)1 << 20) + 2;          /* too large: rejected */
  if (shape % 32 == 2) rd = 512 + 2 * (size_t)(u8(r) % 64); /* two chunks of pairs */
  *rotary = rd;
  const uint8_t a = u8(r);
  const double att = a % 8 < 6 ? 1.0 : a % 8 == 6 ? atts[(a >> 3) % 6] : param(r, atts, 6);
  posenc_rope_plan *plan = NULL;
  if (shape % 4 == 3 && rd <= 400) {
    double freqs[200];
    for (size_t i = 0; i < rd / 2; ++i) {
      const uint8_t b = u8(r);
      switch (b % 32) {
        case 0:
          freqs[i] = NAN;
          break;
        case 1:
          freqs[i] = nextafter(1024.0, 2048.0); /* past the limit: rejected */
          break;
        case 2:
          freqs[i] = b & 32 ? 1024.0 : -1024.0;
          break;
        case 3:
          freqs[i] = 0.0;
          break;
        case 8:
        case 9:
          freqs[i] = -(double)u16(r) / 1024.0;
          break;
        case 10:
          freqs[i] = bits_double(u64(r)); /* mostly rejected */
          break;
        default:
          freqs[i] = pow(10000.0, -(double)u8(r) / 128.0);
          break;
      }
    }
    if (posenc_rope_plan_create_from_freqs(&plan, rd, freqs, att) != POSENC_OK) plan = NULL;
  } else {
    const uint8_t b = u8(r);
    const double base = b % 4 ? 10000.0 : b % 16 < 12 ? bases[(b >> 4) % 6] : param(r, bases, 6);
    if (posenc_rope_plan_create(&plan, rd, base, att) != POSENC_OK) plan = NULL;
  }
  return plan;
}

static posenc_sinusoid_plan *decode_sin_plan(reader *r, size_t *dim) {
  static const double bases[] = {10000.0, 10000.0, 100.0, 2.0, 1e5, 10000.5};
  size_t d = u8(r) % 201;
  const uint8_t shape = u8(r);
  if (shape % 16 == 1) d = ((size_t)1 << 20) + 1; /* too wide: rejected */
  *dim = d;
  posenc_sinusoid_plan *plan = NULL;
  if (shape % 4 == 3 && d <= 200) {
    double freqs[101];
    for (size_t i = 0; i < (d + 1) / 2; ++i) freqs[i] = freq(r);
    if (posenc_sinusoid_plan_create_from_freqs(&plan, d, freqs) != POSENC_OK) plan = NULL;
  } else {
    const double base = u8(r) % 4 ? 10000.0 : param(r, bases, 6);
    if (posenc_sinusoid_plan_create(&plan, d, base) != POSENC_OK) plan = NULL;
  }
  return plan;
}

/* The head dimension and the q and k views of a RoPE call (every RoPE family; for REROTATE
 * the q view is the keys) for a plan of rotary_dim rd, and the arena size they need. */
static void decode_rope_views(reader *r, call *c, size_t rd) {
  const uint8_t dshape = u8(r);
  if (dshape % 8 == 0)
    c->head_dim = rd ? rd - 1 - u8(r) % rd : 0; /* D < R: rejected */
  else if (dshape % 8 == 1)
    c->head_dim = rd; /* the common R = D */
  else
    c->head_dim = rd + dshape % 8 - 1;
  const size_t D = c->head_dim;
  c->n_tokens = count(r, 40, 1);
  c->q_heads = count(r, 6, 1);
  c->k_heads = count(r, 6, 1);
  c->with_k = u8(r) % 4 != 0;
  int huge = 0;
  const uint8_t layout = u8(r) % 6;
  const size_t L = c->n_tokens < 64 ? c->n_tokens : 1, hq = c->q_heads < 64 ? c->q_heads : 1,
               hk = c->k_heads < 64 ? c->k_heads : 1;
  c->q_off = u8(r) % 4;
  if (layout == 0 || layout == 1) { /* [L, H, D] or [H, L, D], K after Q */
    c->q_ts = layout ? D : hq * D;
    c->q_hs = layout ? L * D : D;
    c->k_ts = layout ? D : hk * D;
    c->k_hs = layout ? L * D : D;
    c->k_off = c->q_off + span(L, c->q_ts, hq, c->q_hs, D) + u8(r) % 3;
  } else if (layout == 2) { /* packed QKV rows */
    c->q_ts = c->k_ts = (hq + 2 * hk) * D;
    c->q_hs = c->k_hs = D;
    c->k_off = c->q_off + hq * D;
  } else if (layout == 3) { /* packed rows, K shifted: overlap or interleave */
    c->q_ts = c->k_ts = (hq + 2 * hk) * D;
    c->q_hs = c->k_hs = D;
    c->k_off = c->q_off + u8(r) % (hq * D + 2);
  } else { /* arbitrary strides */
    c->q_ts = stride(r, hq * D, &huge);
    c->q_hs = stride(r, D, &huge);
    c->k_ts = stride(r, hk * D, &huge);
    c->k_hs = stride(r, D, &huge);
    c->k_off = c->q_off + (layout == 4 ? span(L, c->q_ts, hq, c->q_hs, D) : 0) + u8(r) % 5;
  }
  c->len = max_size(c->q_off + span(c->n_tokens, c->q_ts, c->q_heads, c->q_hs, D),
                    c->k_off + span(c->n_tokens, c->k_ts, c->k_heads, c->k_hs, D)) +
           1;
  if (uses_halves(c->family)) c->len = (c->len + 1) / 2; /* 16-bit elements, two per float */
}

/* int32 arithmetic that wraps (positions arrays may hold any int32). */
static int32_t wrap32(int64_t x) { return (int32_t)(uint32_t)(uint64_t)x; }

/* 1 if a run of n positions from start stays within int32 (posenc.h: "start_pos + n_tokens -
 * 1 must not exceed INT32_MAX"); n > 0. */
static int run_fits(int32_t start, size_t n) {
  return n - 1 <= (size_t)((int64_t)INT32_MAX - (int64_t)start);
}

/* posenc_mrope_f32: sections[3] summing to n = R/2 (the sum of the values, not modulo
 * 2^64), and with POSENC_ROPE_MROPE_INTERLEAVED 3 s1 - 2 < n where s1 > 0 and 3 s2 - 1 < n
 * where s2 > 0. */
static int sections_valid(const size_t *s, size_t n, int interleaved) {
  if (s[0] > n || s[1] > n || s[2] > n || s[0] + s[1] + s[2] != n) return 0;
  return !interleaved || ((s[1] == 0 || 3 * s[1] - 2 < n) && (s[2] == 0 || 3 * s[2] - 1 < n));
}

/* The row of positions (0 temporal, 1 height, 2 width) that pair i takes (posenc.h). */
static int mrope_row(const call *c, size_t i) {
  const size_t *s = c->sections;
  if (c->flags & POSENC_ROPE_MROPE_INTERLEAVED) {
    if (i % 3 == 1 && i < 3 * s[1]) return 1;
    if (i % 3 == 2 && i < 3 * s[2]) return 2;
    return 0;
  }
  return i < s[0] ? 0 : i < s[0] + s[1] ? 1 : 2;
}

/* MROPE (mrope) and REROTATE flags: bit 0 GPTJ, bit 3 F32_ANGLES (the bytes of the seeds,
 * mostly 4-7, keep accurate angles); MROPE: bit 1 MROPE_INTERLEAVED, bit 4 INVERSE;
 * REROTATE: bytes 28-31 mod 32 add INVERSE or MROPE_INTERLEAVED (refused there); 1/16 with
 * unknown bits as flags_of. */
static unsigned new_rope_flags(reader *r, int mrope) {
  const uint8_t b = u8(r);
  if (b >= 0xF0) return u32(r) | (1u << (b & 31)); /* unknown bits (maybe) */
  unsigned f = (b & 1 ? POSENC_ROPE_GPTJ : 0u) | (b & 8 ? POSENC_ROPE_F32_ANGLES : 0u);
  if (mrope)
    f |= (b & 2 ? POSENC_ROPE_MROPE_INTERLEAVED : 0u) | (b & 16 ? POSENC_ROPE_INVERSE : 0u);
  else if (b % 32 >= 28)
    f |= b & 2 ? POSENC_ROPE_INVERSE : POSENC_ROPE_MROPE_INTERLEAVED;
  return f;
}

/* sections[3] for n = R/2 pairs: mostly valid for the decoded flags (HF-like proportions
 * or arbitrary), sometimes invalid: NULL, a sum off by one, a sum that wraps around 2^64 to
 * n, interleaved sections one past the largest that fits (or the largest). */
static void decode_sections(reader *r, call *c, size_t n) {
  const int interleaved = (c->flags & POSENC_ROPE_MROPE_INTERLEAVED) != 0;
  const size_t max1 = (n + 1) / 3, max2 = n / 3; /* interleaved: largest s1, s2 that fit */
  size_t *s = c->sections;
  const uint8_t mode = u8(r);
  switch (mode % 16) {
    case 0:
      c->sections_null = 1;
      break;
    case 1: { /* a sum off by one */
      s[0] = n / 2, s[1] = n / 4, s[2] = n - s[0] - s[1];
      const size_t j = u8(r) % 3;
      if ((mode & 16) && s[j] > 0)
        s[j] -= 1;
      else
        s[j] += 1;
      break;
    }
    case 2: { /* wraps around to n */
      const size_t k = u8(r);
      s[0] = SIZE_MAX - k, s[1] = k + 1 + n, s[2] = 0;
      if (mode & 16) s[1] = 0, s[2] = k + 1 + n;
      break;
    }
    case 3: /* at or just past the interleaved limits; contiguous, valid if they sum */
      s[1] = max1 + (u8(r) & 1);
      s[2] = max2 + (mode >> 4 & 1);
      s[0] = n >= s[1] + s[2] ? n - s[1] - s[2] : 0;
      break;
    case 4:
    case 5:
    case 6:
    case 12: /* HF proportions: Qwen2-VL [16, 24, 24] of 64, Qwen3-VL [24, 20, 20] of 64 */
      if (interleaved) {
        s[1] = s[2] = max2 > 0 ? max2 - (max2 > 1 && (mode & 16)) : 0;
      } else {
        s[1] = s[2] = (n - n / 4) / 2;
      }
      s[0] = n - s[1] - s[2];
      break;
    default: /* arbitrary, valid for the flag */
      if (interleaved) {
        s[1] = u8(r) % (max1 + 1);
        s[2] = u8(r) % (max2 + 1);
      } else {
        s[1] = u8(r) % (n + 1);
        s[2] = u8(r) % (n - s[1] + 1);
      }
      s[0] = n - s[1] - s[2];
      break;
  }
}

/* M-RoPE positions: 3 rows of n (temporal, height, width), HF's position_ids. Tokens are
 * text (three equal positions, consecutive), image or video patches (a T x H x W grid at the
 * current position: temporal by frame, height by patch row, width by patch column; the text
 * after it continues at the current position + max(T, H, W), as Qwen2-VL's get_rope_index),
 * repeats of the previous token, or a special value in one row. NULL (an error with n > 0)
 * 1/16 of the time; for a huge n, a 3-element array that the call must not read (it must
 * fail: its positions or its views cannot be addressed) or NULL. */
static int32_t *mrope_positions_of(reader *r, size_t n) {
  const uint8_t mode = u8(r);
  if (mode % 16 == 0) return NULL;
  if (n > 4096) return (mode & 1) ? calloc(3, sizeof(int32_t)) : NULL;
  int32_t *p = malloc(3 * (n ? n : 1) * sizeof *p);
  if (!p) abort();
  int64_t next = mode % 4 == 1 ? special_position(r) : u8(r);
  size_t t = 0;
  while (t < n) {
    const uint8_t b = u8(r);
    switch (b % 8) {
      case 2:
      case 6: { /* an image (T = 1) or a video (T = 2) */
        const size_t T = 1 + (b >> 3) % 2, H = 1 + u8(r) % 4, W = 1 + u8(r) % 5;
        for (size_t k = 0; k < T * H * W && t < n; ++k, ++t) {
          p[t] = wrap32(next + (int64_t)(k / (H * W)));
          p[n + t] = wrap32(next + (int64_t)(k / W % H));
          p[2 * n + t] = wrap32(next + (int64_t)(k % W));
        }
        next += (int64_t)max_size(T, max_size(H, W));
        continue;
      }
      case 3: /* a special value in one row */
        p[t] = p[n + t] = p[2 * n + t] = wrap32(next);
        p[(u8(r) % 3) * n + t] = special_position(r);
        break;
      case 7: /* the previous token again */
        if (t > 0) {
          p[t] = p[t - 1], p[n + t] = p[n + t - 1], p[2 * n + t] = p[2 * n + t - 1];
          ++t;
          continue;
        }
        /* fall through */
      default: /* text */
        p[t] = p[n + t] = p[2 * n + t] = wrap32(next);
        break;
    }
    ++next;
    ++t;
  }
  return p;
}

/* REROTATE: the attention factor of a plan rotated to: from's (r = 1), a common one or an
 * extreme one (r = 1e-30, 1e30: valid), or param's specials (NaN, 0, 1e300: no plan; 1e-300:
 * r below FLT_MIN). */
static double to_att(reader *r, double att_from) {
  static const double atts[] = {1.0, 0.5, 0.7, 1.3, 2.0, 1e-30, 1e30};
  const uint8_t a = u8(r);
  if (a % 8 < 3) return att_from;
  if (a % 8 == 3) return param(r, atts, 7);
  return atts[(a + (a >> 3)) % 7];
}

/* REROTATE: the plan rotated to. Mostly the same plan (a context shift), one with the same
 * frequencies (another attention factor, or the same one in a distinct plan) or another
 * frequency set of the same rotary_dim (one frequency an ulp off, scaled, negated, another
 * base); sometimes an independently decoded plan (often another rotary_dim), an attention
 * factor that puts r = att_to / att_from at or past [FLT_MIN, FLT_MAX], NULL, or a
 * rotary_dim two off. */
static void decode_to_plan(reader *r, call *c, size_t rd) {
  const posenc_rope_plan *from = c->rope_plan;
  const uint8_t mode = u8(r);
  double w[MAX_NEW_PAIRS + 1];
  const size_t n = rd / 2;
  const int have = from && n <= MAX_NEW_PAIRS && posenc_rope_plan_freqs(from, w) == POSENC_OK;
  const double att_from = posenc_rope_plan_attention_factor(from);
  posenc_rope_plan *to = NULL;
  if (mode % 8 == 3 || (!have && mode % 8 != 0 && mode % 8 != 4)) {
    size_t rd2;
    c->to_plan = decode_rope_plan_new(r, &rd2);
    return;
  }
  switch (mode % 8) {
    case 0:
    case 4: /* the same plan: a context shift */
      c->to_plan = c->rope_plan;
      c->to_is_from = 1;
      return;
    case 1:
    case 5: { /* the same frequencies in another plan */
      const double att = to_att(r, att_from);
      if (posenc_rope_plan_create_from_freqs(&to, rd, w, att) != POSENC_OK) to = NULL;
      break;
    }
    case 2:
    case 6: { /* other frequencies, the same rotary_dim */
      const uint8_t how = u8(r);
      const double att = to_att(r, att_from);
      if (how % 4 == 3) {
        static const double bases[] = {10000.0, 500000.0, 1e6, 10.0};
        if (posenc_rope_plan_create(&to, rd, bases[u8(r) % 4], att) != POSENC_OK) to = NULL;
        break;
      }
      if (n == 0) break;
      if (how % 4 == 0) { /* one frequency an ulp off: not the same set */
        const size_t i = u8(r) % n;
        w[i] = nextafter(w[i], (how & 32) ? 0.0 : 2.0);
      } else {
        const double factor = how % 4 == 1 ? 1.0 + u8(r) / 16.0 : -1.0; /* linear; negated */
        for (size_t i = 0; i < n; ++i) w[i] /= factor;
      }
      if (posenc_rope_plan_create_from_freqs(&to, rd, w, att) != POSENC_OK) to = NULL;
      break;
    }
    default: { /* extremes */
      const uint8_t how = u8(r);
      double att = att_from;
      switch (how % 8) {
        case 0:
          att = att_from * FLT_MIN;
          break;
        case 1:
          att = nextafter(att_from * FLT_MIN, 0.0);
          break;
        case 2:
          att = att_from * FLT_MAX; /* above FLT_MAX for att_from > 1: no plan */
          break;
        case 3:
          att = FLT_MAX;
          break;
        case 4:
          att = FLT_MIN;
          break;
        case 5: /* NULL */
          return;
        case 6: { /* rotary_dim two off (a freqs prefix or the last one repeated) */
          const size_t rd2 = how & 8 ? rd + 2 : rd - 2;
          if (rd2 / 2 > n) w[n] = n ? w[n - 1] : 1.0;
          if (posenc_rope_plan_create_from_freqs(&to, rd2, w, att) != POSENC_OK) to = NULL;
          c->to_plan = to;
          return;
        }
        default:
          att = how & 8 ? 1e-38 : 3e38;
          break;
      }
      if (posenc_rope_plan_create_from_freqs(&to, rd, w, att) != POSENC_OK) to = NULL;
      break;
    }
  }
  c->to_plan = to;
}

/* REROTATE: the positions rotated to, from those rotated from (decoded first): shifted by k
 * (a context shift; mostly small, sometimes so far that p' - p leaves int32), the same, or
 * independent; a run or an array (a run sometimes turned into the equivalent array and
 * back). */
static void decode_to_positions(reader *r, call *c) {
  const size_t n = c->n_tokens;
  const uint8_t mode = u8(r);
  if (mode % 4 == 2) {
    c->positions = positions_of(r, n, &c->start_pos);
    return;
  }
  int64_t k = 0;
  if (mode % 4 != 1) {
    const uint8_t kb = u8(r);
    switch (kb % 8) {
      case 0:
        k = INT32_MAX;
        break;
      case 1:
        k = (int64_t)INT32_MAX + 1 + u8(r);
        break;
      case 2:
        k = -(int64_t)u16(r);
        break;
      case 3:
        k = (int64_t)UINT32_MAX - u8(r);
        break;
      default:
        k = u8(r) % 64;
        break;
    }
    if (mode % 4 == 3) k = -k;
  }
  const int as_array = n > 0 && n <= 4096 && (c->from_positions ? !(mode & 4) : (mode & 4));
  if (!as_array) { /* a run: from a run, shifted; from an array, its first element */
    c->start_pos = wrap32((c->from_positions && n ? c->from_positions[0] : c->from_start) - k);
    return;
  }
  c->positions = malloc(n * sizeof *c->positions);
  if (!c->positions) abort();
  for (size_t t = 0; t < n; ++t)
    c->positions[t] = wrap32(
        (c->from_positions ? c->from_positions[t] : (int64_t)c->from_start + (int64_t)t) - k);
  c->start_pos = special_position(r); /* unused */
}

/* Decodes the call's arguments and its arena size, and marks what it may write. Returns 0
 * when the decoded arena is too large for the harness (the input is skipped). */
static int decode(reader *r, call *c) {
  c->family = u8(r) % N_FAMILIES;
  const uint8_t misc = u8(r);
  c->null_data = misc % 32 == 0;
  c->misalign = misc % 32 == 1 ? 1 + u8(r) % 3 : 0;
  if (typed16(c->family)) c->f16 = u8(r) % 2;
  c->null_view = misc % 32 == 2 && c->family >= MROPE; /* new families only: see MROPE */
  switch (c->family) {
    case ROPE:
    case ROPE_BF16:
    case ROPE_F16: {
      size_t rd;
      c->rope_plan = decode_rope_plan(r, &rd);
      decode_rope_views(r, c, rd);
      c->flags = flags_of(r, POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE | POSENC_ROPE_F32_ANGLES);
      c->n_positions = c->n_tokens;
      c->positions = positions_of(r, c->n_tokens, &c->start_pos);
      break;
    }
    case MROPE:
    case MROPE16: {
      size_t rd;
      c->rope_plan = decode_rope_plan_new(r, &rd);
      decode_rope_views(r, c, rd);
      c->flags = new_rope_flags(r, 1);
      decode_sections(r, c, rd / 2);
      c->n_positions = 3 * c->n_tokens;
      c->positions = mrope_positions_of(r, c->n_tokens);
      /* posenc.h's errors of posenc_mrope_f32 that the decoded arguments show. */
      const size_t n = c->n_tokens;
      c->must_fail =
          !c->rope_plan || c->null_view ||
          (c->flags & ~(unsigned)(POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE | POSENC_ROPE_F32_ANGLES |
                                  POSENC_ROPE_MROPE_INTERLEAVED)) ||
          c->head_dim < rd || c->sections_null ||
          !sections_valid(c->sections, rd / 2, c->flags & POSENC_ROPE_MROPE_INTERLEAVED) ||
          (!c->positions && n > 0) || (c->null_data && n > 0 && c->q_heads > 0);
      break;
    }
    case REROTATE:
    case REROTATE16: {
      size_t rd;
      c->rope_plan = decode_rope_plan_new(r, &rd);
      decode_to_plan(r, c, rd);
      decode_rope_views(r, c, rd);
      c->with_k = 0; /* the k view's elements stay in the arena: none may change */
      c->flags = new_rope_flags(r, 0);
      c->n_positions = c->n_tokens;
      c->from_positions = positions_of(r, c->n_tokens, &c->from_start);
      decode_to_positions(r, c);
      /* posenc.h's errors of posenc_rope_rerotate_f32 that the decoded arguments show. */
      const posenc_rope_plan *from = c->rope_plan, *to = c->to_plan;
      const size_t n = c->n_tokens;
      const double ratio =
          posenc_rope_plan_attention_factor(to) / posenc_rope_plan_attention_factor(from);
      c->must_fail = !from || !to || c->null_view ||
                     posenc_rope_plan_rotary_dim(from) != posenc_rope_plan_rotary_dim(to) ||
                     !(ratio >= FLT_MIN && ratio <= FLT_MAX) ||
                     (c->flags & ~(unsigned)(POSENC_ROPE_GPTJ | POSENC_ROPE_F32_ANGLES)) ||
                     c->head_dim < posenc_rope_plan_rotary_dim(to) ||
                     (n > 0 && ((!c->from_positions && !run_fits(c->from_start, n)) ||
                                (!c->positions && !run_fits(c->start_pos, n)))) ||
                     (c->null_data && n > 0 && c->q_heads > 0);
      break;
    }
    case SIN_FILL:
    case SIN_TIMESTEPS:
    case SIN_ADD:
    case SIN_FILL16:
    case SIN_TIMESTEPS16:
    case SIN_ADD16: {
      size_t d;
      c->sin_plan = decode_sin_plan(r, &d);
      int huge = 0;
      const int timesteps = base_family(c->family) == SIN_TIMESTEPS;
      c->n_rows = count(r, 40, !timesteps);
      c->row_stride = stride(r, d, &huge);
      c->out_off = u8(r) % 4;
      const size_t rows_span = span(c->n_rows, c->row_stride ? c->row_stride : d, 1, 0, d);
      c->len = c->out_off + (uses_halves(c->family) ? (rows_span + 1) / 2 : rows_span) + 1;
      c->flags = flags_of(
          r, POSENC_SINUSOID_SIN_COS | POSENC_SINUSOID_COS_SIN | POSENC_SINUSOID_F32_ANGLES);
      if (timesteps) {
        if (u8(r) % 16 && c->n_rows < 4096) {
          c->timesteps = malloc((c->n_rows + 1) * sizeof *c->timesteps);
          if (!c->timesteps) abort();
          for (size_t i = 0; i < c->n_rows; ++i) {
            const uint8_t k = u8(r);
            static const float specials[] = {
                NAN,           INFINITY,       2147483648.0f, -2147483648.0f,
                2147483520.0f, -2147483520.0f, 1e-40f,        -0.0f};
            c->timesteps[i] =
                k < 32 ? specials[k % 8] : (float)(int16_t)u16(r) * (k % 2 ? 1.0f : 0.37f);
          }
        }
      } else {
        c->n_positions = c->n_rows;
        c->positions = positions_of(r, c->n_rows, &c->start_pos);
      }
      break;
    }
    case ALIBI_ADD:
    case ALIBI_BIAS:
    case ALIBI_SOFTMAX:
    case ALIBI_SOFTMAX_BF16:
    case ALIBI_ADD16:
    case ALIBI_BIAS16: {
      c->n_heads = count(r, 6, 0);
      c->n_q = count(r, 40, 1);
      c->n_k = count(r, 40, 1);
      const size_t hq = c->n_q < 64 ? c->n_q : 1, nk = c->n_k < 64 ? c->n_k : 1;
      int huge = 0;
      const uint8_t layout = u8(r) % 4;
      if (layout == 0) { /* [H, n_q, n_k] */
        c->row_stride = nk;
        c->head_stride = hq * nk;
      } else if (layout == 1) { /* [n_q, H, n_k] */
        c->head_stride = nk;
        c->row_stride = c->n_heads * nk;
      } else {
        c->row_stride = stride(r, nk, &huge);
        c->head_stride = stride(r, hq * nk, &huge);
      }
      c->out_off = u8(r) % 4;
      /* bf16: the scores' span in 16-bit elements, two to an arena float */
      const size_t scores_span = span(c->n_heads, c->head_stride, c->n_q, c->row_stride, c->n_k);
      const size_t scores_len = uses_halves(c->family) ? (scores_span + 1) / 2 : scores_span;
      c->len = c->out_off + scores_len + 1;
      const uint8_t qo = u8(r);
      switch (qo % 8) {
        case 0:
          c->q_offset = 0;
          break;
        case 1:
          c->q_offset = c->n_k >= c->n_q ? c->n_k - c->n_q : 0; /* decode-style */
          break;
        case 2:
          c->q_offset = ((size_t)1 << 31) - hq; /* last valid */
          break;
        case 3:
          c->q_offset = ((size_t)1 << 31) - hq + 1; /* past 2^31 when n_q > 0 */
          break;
        case 4:
          c->q_offset = SIZE_MAX - u8(r);
          break;
        default:
          c->q_offset = u16(r) % 64;
          break;
      }
      static const double scales[] = {1.0, 0.125, 0.5, -1.0, 3.0};
      c->scale = u8(r) % 4 ? 1.0f : (float)param(r, scales, 5);
      c->flags = flags_of(r, POSENC_ALIBI_CAUSAL);
      if (u8(r) % 32) {
        c->slopes = malloc((c->n_heads + 1) * sizeof *c->slopes);
        if (!c->slopes) abort();
        const uint8_t kind = u8(r);
        if (kind % 2 == 0 && c->n_heads &&
            posenc_alibi_slopes(c->n_heads, kind % 4 ? 8.0 : 1.0 + u8(r) % 16, c->slopes) ==
                POSENC_OK) {
        } else {
          for (size_t h = 0; h < c->n_heads; ++h) {
            const uint8_t b = u8(r);
            c->slopes[h] = b < 16 ? special_float(b, u32(r)) : (float)b / 256.0f;
          }
        }
      }
      /* Softmax: sometimes slopes in the arena, from the arena's data, inside the scores'
       * address range (must be rejected) or just after it. */
      if ((c->family == ALIBI_SOFTMAX || c->family == ALIBI_SOFTMAX_BF16) && c->n_heads &&
          c->n_heads < 64 && u8(r) % 8 == 0) {
        c->slopes_in_arena = 1;
        c->slopes_off = c->out_off + u8(r) % (scores_len + 2);
        c->len = max_size(c->len, c->slopes_off + c->n_heads + 1);
      }
      break;
    }
    default: { /* learned */
      c->max_pos = count(r, 40, 0);
      c->dim = count(r, 200, 0);
      int huge = 0;
      c->table_stride = stride(r, c->dim, &huge);
      c->x_stride = stride(r, c->dim, &huge);
      c->n_tokens = count(r, 40, 0);
      c->table_off = u8(r) % 4;
      const size_t ts = c->table_stride ? c->table_stride : c->dim;
      const size_t xs = c->x_stride ? c->x_stride : c->dim;
      const size_t table_span = span(c->max_pos, ts, 1, 0, c->dim);
      const uint8_t place = u8(r);
      c->x_off = place % 8 == 0 ? c->table_off + u8(r) % (table_span + 1) /* aliasing */
                                : c->table_off + table_span + place % 3;
      c->len =
          max_size(c->table_off + table_span, c->x_off + span(c->n_tokens, xs, 1, 0, c->dim)) + 1;
      c->n_positions = c->n_tokens;
      const uint8_t pm = u8(r);
      if (pm % 4 == 0) {
        c->start_pos = pm % 8 == 0 ? (int32_t)(u8(r) % 48) : special_position(r);
      } else if (c->n_tokens) {
        c->positions = malloc(c->n_tokens * sizeof *c->positions);
        if (!c->positions) abort();
        for (size_t t = 0; t < c->n_tokens; ++t) {
          const uint8_t b = u8(r);
          c->positions[t] =
              b >= 0xF8 ? special_position(r) : (int32_t)(c->max_pos ? b % c->max_pos : b % 4);
        }
      }
      break;
    }
  }
  if (c->len > MAX_ARENA) return 0;
  c->len += 1; /* room for a misaligned pointer's last element */
  return 1;
}

/* Calls fn(ctx, token, head, pair, u, v) for every rotated pair (u, v: element indices)
 * of the q and k views of a RoPE call. */
typedef void (*rope_pair_fn)(void *ctx, size_t t, size_t h, size_t i, size_t u, size_t w);

static void each_rope_pair(const call *c, rope_pair_fn fn, void *ctx) {
  const size_t half = posenc_rope_plan_rotary_dim(c->rope_plan) / 2;
  const int gptj = c->flags & POSENC_ROPE_GPTJ;
  for (int v = 0; v < 1 + c->with_k; ++v) {
    const size_t off = v ? c->k_off : c->q_off, heads = v ? c->k_heads : c->q_heads;
    const size_t ts = v ? c->k_ts : c->q_ts, hs = v ? c->k_hs : c->q_hs;
    if (heads >= HUGE_BASE || c->n_tokens >= HUGE_BASE) continue;
    for (size_t t = 0; t < c->n_tokens; ++t)
      for (size_t h = 0; h < heads; ++h) {
        if ((t && ts >= HUGE_BASE) || (h && hs >= HUGE_BASE)) continue;
        const size_t b = off + t * ts + h * hs;
        for (size_t i = 0; i < half; ++i)
          fn(ctx, t, h, i, gptj ? b + 2 * i : b + i, gptj ? b + 2 * i + 1 : b + i + half);
      }
  }
}

static void touch_pair(void *ctx, size_t t, size_t h, size_t i, size_t u, size_t w) {
  (void)t, (void)h, (void)i;
  touch(ctx, u);
  touch(ctx, w);
}

/* ROPE_BF16, ROPE_F16, MROPE16, REROTATE16: u and w are 16-bit elements from the arena's start,
 * shifted by a misalignment of 2 bytes (an odd one makes the call fail). */
static void touch16_pair(void *ctx, size_t t, size_t h, size_t i, size_t u, size_t w) {
  call *c = ctx;
  (void)t, (void)h, (void)i;
  touch16(c, u + c->misalign / 2);
  touch16(c, w + c->misalign / 2);
}

/* Marks the elements a successful call writes (after decode, with c->touched allocated). */
static void mark_outputs(call *c) {
  switch (c->family) {
    case ROPE:
    case MROPE:
    case REROTATE:
      each_rope_pair(c, touch_pair, c);
      break;
    case ROPE_BF16:
    case ROPE_F16:
    case MROPE16:
    case REROTATE16:
      each_rope_pair(c, touch16_pair, c);
      break;
    case SIN_FILL:
    case SIN_TIMESTEPS:
    case SIN_ADD: {
      const size_t d = posenc_sinusoid_plan_dim(c->sin_plan);
      touch_grid(c, c->out_off, c->n_rows, c->row_stride ? c->row_stride : d, 1, 0, d);
      break;
    }
    case ALIBI_ADD:
    case ALIBI_BIAS:
    case ALIBI_SOFTMAX:
      touch_grid(c, c->out_off, c->n_heads, c->head_stride, c->n_q, c->row_stride, c->n_k);
      break;
    case SIN_FILL16:
    case SIN_TIMESTEPS16:
    case SIN_ADD16: {
      const size_t d = posenc_sinusoid_plan_dim(c->sin_plan);
      mark_grid(c, touch16, 2 * c->out_off + c->misalign / 2, c->n_rows,
                c->row_stride ? c->row_stride : d, 1, 0, d);
      break;
    }
    case ALIBI_ADD16:
    case ALIBI_BIAS16:
    case ALIBI_SOFTMAX_BF16: /* in 16-bit halves: c->touched16 (a misaligned call fails) */
      mark_grid(c, touch16, 2 * c->out_off + c->misalign / 2, c->n_heads, c->head_stride, c->n_q,
                c->row_stride, c->n_k);
      break;
    default:
      touch_grid(c, c->x_off, c->n_tokens, c->x_stride ? c->x_stride : c->dim, 1, 0, c->dim);
      /* the table is read: an element in both is an accepted aliasing */
      if (c->max_pos < HUGE_BASE)
        for (size_t p = 0; p < c->max_pos; ++p)
          for (size_t j = 0; j < c->dim; ++j) {
            const size_t ts = c->table_stride ? c->table_stride : c->dim;
            const size_t i = c->table_off + p * ts + j;
            if (i < c->len && c->touched[i]) touch(c, i);
          }
      break;
  }
}

/* ---------------------------------------------------------------------- comparison */

static void violation(const call *c, const char *isa, const char *what, size_t index, float got,
                      float want) {
  fprintf(stderr,
          "fuzz_api: family %d, ISA %s: %s (arena element %zu of %zu: got %a [%08x], scalar "
          "%a [%08x])\n",
          c->family, isa, what, index, c->len, (double)got, float_bits(got), (double)want,
          float_bits(want));
  abort();
}

/* NaN exactly where scalar has NaN; finite values within the bound; an infinity where the
 * value it stands for (beyond max_finite, with its sign) can lie within the bound of the
 * other result: a finite one at most `bound` from the overflow threshold of that sign, or
 * the opposite infinity when the bound spans the whole finite range (a rotated element
 * whose exact value is small next to the bound may overflow either way in a 16-bit
 * storage type). */
static int within_range(float got, float want, double bound, double max_finite) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (got == want) return 1;
  if (isinf(bound)) return 1;
  if (isinf(got) && isinf(want)) return bound >= 2.0 * max_finite;
  if (isinf(got) || isinf(want)) {
    const double fin = isinf(got) ? want : got;
    const double gap = (isinf(got) ? got : want) > 0 ? max_finite - fin : fin + max_finite;
    return gap <= bound;
  }
  return fabs((double)got - (double)want) <= bound;
}

/* Bit-identical, any NaN payload accepted for a NaN (posenc.h: with two NaN operands the
 * payload that propagates is the compiler's and the hardware's choice). */
static int same_value(float got, float want) {
  return float_bits(got) == float_bits(want) || (isnan(got) && isnan(want));
}

/* The tolerance of a written element of a non-RoPE call (RoPE: check_rope), against the
 * scalar value; negative: bit-identical. Sinusoid add: plus one rounding of the sum, as in
 * tests/sinusoid_variants_test.cc. */
/* ALiBi softmax: both results within the header's bound of the exact value, so within
 * twice it of each other (the bound taken at the larger one, a hair generously). */
static double softmax_tolerance(float got, float want) {
  const double p = fmax(fabs((double)got), fabs((double)want)) * 1.0001;
  return 2.0 * (POSENC_ALIBI_SOFTMAX_REL_TOLERANCE * p + POSENC_ALIBI_SOFTMAX_ABS_TOLERANCE);
}

static double tolerance(const call *c, float got, float want) {
  switch (c->family) {
    case ALIBI_SOFTMAX:
      return softmax_tolerance(got, want);
    case SIN_FILL:
    case SIN_TIMESTEPS:
      return POSENC_SINUSOID_SIMD_TOLERANCE;
    case SIN_ADD:
      return POSENC_SINUSOID_SIMD_TOLERANCE +
             FLT_EPSILON * fmax(fabs((double)got), fabs((double)want));
    default:
      return -1.0;
  }
}

static int within(float got, float want, double bound) {
  return within_range(got, want, bound, FLT_MAX);
}

/* RoPE: every rotated element within POSENC_ROPE_SIMD_TOLERANCE * att * (|u| + |v|); for
 * bf16 / f16 storage plus one ulp of the storage type (each variant rounds its float result
 * once, posenc.h). in, out, ref: the input and the two results, as floats. */
typedef struct rope_check {
  const call *c;
  const char *isa;
  const float *in, *out, *ref;
  double att;
  int precision;     /* significand bits of the storage type: 24, 8 (bf16) or 11 (f16) */
  double max_finite; /* its largest finite value */
} rope_check;

/* One ulp of the storage type at the larger magnitude of a and b (0 for f32). */
static double storage_ulp(const rope_check *k, float a, float b) {
  if (k->precision == 24) return 0.0;
  const double m = fmax(isfinite(a) ? fabs((double)a) : 0.0, isfinite(b) ? fabs((double)b) : 0.0);
  const int min_exp = k->precision == 8 ? -126 : -14;
  const int e = m > 0 && ilogb(m) > min_exp ? ilogb(m) : min_exp;
  return ldexp(1.0, e - (k->precision - 1));
}

static void check_rope_pair(void *ctx, size_t t, size_t h, size_t i, size_t u, size_t w) {
  const rope_check *k = ctx;
  const call *c = k->c;
  const char *isa = k->isa;
  const float *in = k->in, *out = k->out, *ref = k->ref;
  const double att = k->att;
  /* + 4 FLT_TRUE_MIN: the relative bound cannot cover the absolute rounding of
   * subnormal results (u*c, v*s and their sum, in each variant); see the report. */
  const double bound =
      POSENC_ROPE_SIMD_TOLERANCE * att * (fabs((double)in[u]) + fabs((double)in[w])) +
      4.0 * FLT_TRUE_MIN;
  const double bound_u = bound + storage_ulp(k, out[u], ref[u]);
  const double bound_w = bound + storage_ulp(k, out[w], ref[w]);
  /* Intermediate overflow: with att * (|u| + |v|) near FLT_MAX, u*c or v*s may
   * overflow in float in a SIMD variant while the scalar one (products in double)
   * stays finite, so a variant may give an infinity or NaN where scalar gives a
   * finite value or an infinity. NaN in scalar must still be NaN in every variant. */
  const double fu = isfinite(in[u]) ? fabs((double)in[u]) : 0.0;
  const double fw = isfinite(in[w]) ? fabs((double)in[w]) : 0.0;
  const int overflow = att * (fu + fw) >= 0x1p126;
  /* An infinite input (and no NaN) gives non-finite outputs whose kind depends on
   * c and s near 0: Inf * 0 is NaN, Inf * tiny is Inf; the variants' c and s may
   * differ there within the tolerance (e.g. at position 0 with a stepped sin of
   * 1e-9 instead of 0). Both must then be non-finite. A NaN input gives NaN. */
  const int nan_in = isnan(in[u]) || isnan(in[w]);
  const int inf_in = !nan_in && (isinf(in[u]) || isinf(in[w]));
  const int ok_u = within_range(out[u], ref[u], bound_u, k->max_finite) ||
                   (overflow && !isfinite(out[u]) && !isnan(ref[u])) ||
                   (inf_in && !isfinite(out[u]) && !isfinite(ref[u]));
  const int ok_w = within_range(out[w], ref[w], bound_w, k->max_finite) ||
                   (overflow && !isfinite(out[w]) && !isnan(ref[w])) ||
                   (inf_in && !isfinite(out[w]) && !isfinite(ref[w]));
  if (!ok_u || !ok_w)
    fprintf(stderr,
            "fuzz_api: RoPE token %zu (position %ld) head %zu pair %zu: input u %a v %a, "
            "att %a, flags %u; got u %a v %a, scalar u %a v %a\n",
            t, c->positions ? (long)c->positions[t] : (long)c->start_pos + (long)t, h, i,
            (double)in[u], (double)in[w], att, c->flags, (double)out[u], (double)out[w],
            (double)ref[u], (double)ref[w]);
  if (!ok_u) violation(c, isa, "rotated u out of tolerance", u, out[u], ref[u]);
  if (!ok_w) violation(c, isa, "rotated v out of tolerance", w, out[w], ref[w]);
}

/* The factor of the RoPE tolerance: the plan's attention factor; for REROTATE the ratio
 * r = att_to / att_from (posenc.h: posenc_rope_f32's contract with att replaced by r). */
static double rope_att(const call *c) {
  if (c->family == REROTATE || c->family == REROTATE16)
    return posenc_rope_plan_attention_factor(c->to_plan) /
           posenc_rope_plan_attention_factor(c->rope_plan);
  return posenc_rope_plan_attention_factor(c->rope_plan);
}

static void check_rope(const call *c, const char *isa, const float *out, const float *ref) {
  rope_check k = {c, isa, c->input, out, ref, rope_att(c), 24, FLT_MAX};
  each_rope_pair(c, check_rope_pair, &k);
}

typedef struct run_result {
  posenc_status status;
  float *buf; /* GUARD + len + GUARD floats */
} run_result;

static void fill_buffer(const call *c, float *buf) {
  for (size_t i = 0; i < GUARD; ++i) {
    buf[i] = bits_float(SENTINEL(i));
    buf[GUARD + c->len + i] = bits_float(SENTINEL(GUARD + i));
  }
  memcpy(buf + GUARD, c->input, c->len * sizeof *buf);
}

static void run_isa(const call *c, posenc_isa isa, run_result *out) {
  float *buf = out->buf;
  fill_buffer(c, buf);
  if (posenc_set_isa(isa) != POSENC_OK) abort();
  POISON(buf, GUARD * sizeof *buf);
  POISON(buf + GUARD + c->len, GUARD * sizeof *buf);
  out->status = invoke(c, buf + GUARD);
  UNPOISON(buf, (2 * GUARD + c->len) * sizeof *buf);
}

/* The 16-bit half h (in memory order) of a buffer of floats, and a bf16 as a float. */
static uint16_t half_of(const float *buf, size_t h) {
  uint16_t v;
  memcpy(&v, (const char *)buf + 2 * h, sizeof v);
  return v;
}
static float bf16_float(uint16_t h) { return bits_float((uint32_t)h << 16); }

/* ALIBI_SOFTMAX_BF16: check_run's checks over 16-bit halves (guards included). A written
 * bf16 is within softmax_tolerance of scalar's plus one bf16 rounding (2^-7 relative): two
 * floats within the bound may round to neighbouring bf16 values. */
static float widen16(const call *c, uint16_t h);

/* SIN_*16, ALIBI_*16: a written element, widened (exactly), against scalar's: ALiBi bit
 * for bit, the sinusoid within its f32 tolerance plus one ulp of the storage type (two
 * floats within the tolerance may round to neighbouring values). */
static void check_value16(const call *c, const char *isa, size_t index, uint16_t got16,
                          uint16_t want16) {
  const float got = widen16(c, got16), want = widen16(c, want16);
  if (base_family(c->family) == ALIBI_ADD || base_family(c->family) == ALIBI_BIAS) {
    if (!same_value(got, want))
      violation(c, isa, "16-bit score not bit-identical", index, got, want);
    return;
  }
  const double m =
      fmax(isfinite(got) ? fabs((double)got) : 0, isfinite(want) ? fabs((double)want) : 0);
  const int min_exp = c->f16 ? -14 : -126, e = m > 0 && ilogb(m) > min_exp ? ilogb(m) : min_exp;
  double bound = POSENC_SINUSOID_SIMD_TOLERANCE + ldexp(1.0, e - (c->f16 ? 10 : 7));
  if (c->family == SIN_ADD16) bound += FLT_EPSILON * m;
  if (!within_range(got, want, bound, c->f16 ? 65504.0 : 0x1.fep127))
    violation(c, isa, "16-bit sinusoid value out of tolerance", index, got, want);
}

static void check_halves(const call *c, const char *isa, const run_result *res,
                         const run_result *scalar, const float *pristine) {
  const size_t total = 2 * (2 * GUARD + c->len);
  for (size_t i = 0; i < total; ++i) {
    const int in_arena = i >= 2 * GUARD && i < 2 * (GUARD + c->len);
    const size_t a = i - 2 * GUARD;
    const float got = bf16_float(half_of(res->buf, i));
    if (!(res->status == POSENC_OK && in_arena && c->touched16[a])) {
      if (half_of(res->buf, i) != half_of(pristine, i))
        violation(c, isa,
                  !in_arena                  ? "guard region changed (bf16 half)"
                  : res->status != POSENC_OK ? "buffer changed by a failing call (bf16 half)"
                                             : "bf16 half outside the outputs changed",
                  in_arena ? a / 2 : i / 2, got, bf16_float(half_of(pristine, i)));
      continue;
    }
    if (sin_alibi16(c->family)) {
      if (!c->values_unchecked)
        check_value16(c, isa, a / 2, half_of(res->buf, i), half_of(scalar->buf, i));
      continue;
    }
    if (c->family != ALIBI_SOFTMAX_BF16) continue; /* rope16(): check_rope16 */
    const float want = bf16_float(half_of(scalar->buf, i));
    if (!within(
            got, want,
            softmax_tolerance(got, want) + 0x1p-7 * fmax(fabs((double)got), fabs((double)want))))
      violation(c, isa, "bf16 out of tolerance", a / 2, got, want);
  }
}

/* rope16(): every rotated element within check_rope_pair's bound of scalar's, on the 16-bit
 * halves widened to float (exact). */
static int bf16_storage(const call *c) {
  return c->family == ROPE_BF16 || c->family == ALIBI_SOFTMAX_BF16 ||
         (typed16(c->family) && !c->f16);
}

static float widen16(const call *c, uint16_t h) {
  if (bf16_storage(c)) return bf16_float(h);
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | mant << 13);
  if (exp == 0) return (sign ? -1.0f : 1.0f) * ldexpf((float)mant, -24);
  return bits_float(sign | (exp + 112u) << 23 | mant << 13);
}

static void check_rope16(const call *c, const char *isa, const run_result *res,
                         const run_result *scalar) {
  const size_t n = 2 * c->len, shift = c->misalign / 2;
  float *in = malloc(3 * n * sizeof *in);
  if (!in) abort();
  float *out = in + n, *ref = out + n;
  for (size_t i = 0; i < n; ++i) { /* indexed as each_rope_pair counts: without the shift */
    const size_t h = 2 * GUARD + (i + shift < n ? i + shift : 0);
    in[i] = widen16(c, half_of(c->input, i + shift < n ? i + shift : 0));
    out[i] = widen16(c, half_of(res->buf, h));
    ref[i] = widen16(c, half_of(scalar->buf, h));
  }
  rope_check k = {c,
                  isa,
                  in,
                  out,
                  ref,
                  rope_att(c),
                  bf16_storage(c) ? 8 : 11,
                  bf16_storage(c) ? 0x1.fep127 : 65504.0};
  each_rope_pair(c, check_rope_pair, &k);
  free(in);
}

/* Softmax with slopes in the arena: 1 if they share a byte with the scores' range. */
static int slopes_alias_scores(const call *c) {
  if (!c->slopes_in_arena || c->n_heads >= HUGE_BASE) return 0;
  const size_t elem = c->family == ALIBI_SOFTMAX_BF16 ? 2 : 4;
  const size_t n = span(c->n_heads, c->head_stride, c->n_q, c->row_stride, c->n_k);
  const size_t first = 4 * c->out_off + c->misalign, end = first + elem * n;
  const size_t s0 = 4 * c->slopes_off, s1 = s0 + 4 * c->n_heads;
  return n != 0 && s0 < end && first < s1; /* no scores (a no-op): nothing to alias */
}

static void check_run(const call *c, const char *isa, const run_result *res,
                      const run_result *scalar, const float *pristine) {
  if (res->status != scalar->status) {
    fprintf(stderr, "fuzz_api: family %d: ISA %s returned %d, scalar %d\n", c->family, isa,
            (int)res->status, (int)scalar->status);
    abort();
  }
  if (uses_halves(c->family)) {
    check_halves(c, isa, res, scalar, pristine);
    if (res->status == POSENC_OK && rope16(c->family) && !c->values_unchecked)
      check_rope16(c, isa, res, scalar);
    return;
  }
  const size_t total = 2 * GUARD + c->len;
  for (size_t i = 0; i < total; ++i) {
    const int in_arena = i >= GUARD && i < GUARD + c->len;
    const size_t a = i - GUARD;
    const int written = res->status == POSENC_OK && in_arena && c->touched[a];
    if (!written) {
      if (float_bits(res->buf[i]) != float_bits(pristine[i]))
        violation(c, isa,
                  !in_arena                  ? "guard region changed"
                  : res->status != POSENC_OK ? "buffer changed by a failing call"
                                             : "element outside the outputs changed",
                  in_arena ? a : i, res->buf[i], pristine[i]);
      continue;
    }
    if (rope_any(c->family) || c->values_unchecked) continue; /* check_rope */
    const double tol = tolerance(c, res->buf[i], scalar->buf[i]);
    if (tol < 0 ? !same_value(res->buf[i], scalar->buf[i])
                : !within(res->buf[i], scalar->buf[i], tol))
      violation(c, isa, tol < 0 ? "not bit-identical to scalar" : "out of tolerance", a,
                res->buf[i], scalar->buf[i]);
  }
  if (res->status == POSENC_OK && rope_any(c->family) && !c->values_unchecked)
    check_rope(c, isa, res->buf + GUARD, scalar->buf + GUARD);
}

/* ---------------------------------------------------------------------- semantic checks */

/* What the scalar result of an accepted MROPE or REROTATE call is checked against (once, in
 * scalar: the ISA differential above compares the other variants with it). */
typedef struct oracle_check {
  const call *c;
  int row;           /* MROPE: the row of positions being checked */
  const float *got;  /* the scalar result: the run's buffer (MROPE), or widened (REROTATE) */
  const float *want; /* MROPE: the posenc_rope result's buffer; REROTATE: the composition */
  const float *in;   /* REROTATE: the input, widened */
  double r;
} oracle_check;

/* MROPE: element u of two GUARD-framed run buffers (16-bit: the half, widened), NaN for any
 * NaN (posenc.h: the payload of a NaN is unspecified). */
static void mrope_same(const oracle_check *k, size_t u) {
  const call *c = k->c;
  float got, want;
  size_t index = u;
  if (uses_halves(c->family)) {
    const size_t h = 2 * GUARD + u + c->misalign / 2;
    got = widen16(c, half_of(k->got, h));
    want = widen16(c, half_of(k->want, h));
    index = (u + c->misalign / 2) / 2;
  } else {
    got = k->got[GUARD + u];
    want = k->want[GUARD + u];
  }
  if (!same_value(got, want))
    violation(c, "scalar",
              "M-RoPE pair differs from posenc_rope at its row's position (`want` is that)", index,
              got, want);
}

static void mrope_pair(void *ctx, size_t t, size_t h, size_t i, size_t u, size_t w) {
  const oracle_check *k = ctx;
  (void)t, (void)h;
  if (mrope_row(k->c, i) != k->row) return;
  mrope_same(k, u);
  mrope_same(k, w);
}

/* MROPE: posenc.h: "Pair i at its position p is then rotated exactly as by posenc_rope_f32
 * / _bf16 / _f16 at p (the same flags, attention factor, views, storage types, ...)". The
 * scalar variant computes every token's cos/sin afresh from its position (no stepping), so
 * its M-RoPE result must equal, bit for bit, its posenc_rope result at the row's positions:
 * for each row, the same views rotated by posenc_rope_* with that row as the positions; each
 * pair compared where it takes that row. posenc_rope_* must accept those calls (M-RoPE's
 * errors include all of its). */
static void check_mrope_rows(const call *c, const run_result *scalar) {
  if (!c->positions || c->n_tokens > 4096) return; /* nothing rotated */
  const size_t total = 2 * GUARD + c->len;
  float *buf = malloc(total * sizeof *buf);
  if (!buf) abort();
  if (posenc_set_isa(POSENC_ISA_SCALAR) != POSENC_OK) abort();
  for (int row = 0; row < 3; ++row) {
    call plain = *c;
    plain.family = c->family == MROPE ? ROPE : bf16_storage(c) ? ROPE_BF16 : ROPE_F16;
    plain.positions = c->positions + (size_t)row * c->n_tokens;
    plain.flags = c->flags & ~(unsigned)POSENC_ROPE_MROPE_INTERLEAVED;
    fill_buffer(c, buf);
    if (invoke(&plain, buf + GUARD) != POSENC_OK)
      violation(c, "scalar", "posenc_rope rejects a row of an accepted M-RoPE call", 0, 0.0f, 0.0f);
    oracle_check k = {c, row, scalar->buf, buf, NULL, 0.0};
    each_rope_pair(c, mrope_pair, &k);
  }
  free(buf);
}

static void rerotate_element(const oracle_check *k, size_t e, double mag) {
  const call *c = k->c;
  const double want = k->r * (double)k->want[e];
  const float got = k->got[e];
  const int half = uses_halves(c->family), bf16 = half && bf16_storage(c);
  const double max_finite = !half ? FLT_MAX : bf16 ? 0x1.fep127 : 65504.0;
  double ulp = 0.0; /* one ulp of the storage type (the 16-bit result is the f32 one rounded) */
  if (half) {
    const double m = fmax(isfinite(got) ? fabs((double)got) : 0.0, fabs(want));
    const int min_exp = bf16 ? -126 : -14, e2 = m > 0 && ilogb(m) > min_exp ? ilogb(m) : min_exp;
    ulp = ldexp(1.0, e2 - (bf16 ? 7 : 10));
  }
  const double bound = 0x1p-19 * k->r * mag + (1.0 + k->r) * 0x1p-144 + ulp;
  if (!within_range(got, (float)want, bound, max_finite)) {
    fprintf(stderr, "fuzz_api: re-rotation: r %a, composition %a, scalar %a, bound %a\n", k->r,
            want, (double)got, bound);
    violation(c, "scalar",
              "re-rotation differs from inverse-then-forward rotation (`scalar` is that)", e, got,
              (float)want);
  }
}

static void rerotate_pair(void *ctx, size_t t, size_t h, size_t i, size_t u, size_t w) {
  const oracle_check *k = ctx;
  (void)t, (void)h, (void)i;
  const float iu = k->in[u], iw = k->in[w];
  if (!isfinite(iu) || !isfinite(iw)) return;
  const double mag = fabs((double)iu) + fabs((double)iw);
  /* Overflow (in the steps, the result or a 16-bit type) is the differential's business. */
  if (mag > 0x1p100 || k->r * mag > 0x1p100) return;
  rerotate_element(k, u, mag);
  rerotate_element(k, w, mag);
}

/* REROTATE: the scalar result against the two rotations it replaces, on the input widened
 * to float: posenc_rope_f32 (scalar) with POSENC_ROPE_INVERSE by (from's frequencies,
 * attention factor 1) at the from positions, then forward by (to's frequencies, 1) at the
 * to positions, times r. posenc.h: the re-rotation's c and s are within 2^-22 r of r cos(a),
 * r sin(a) of the exact a = p' w' - p w (with POSENC_ROPE_F32_ANGLES: of the difference of
 * the two float32 angles), and each posenc_rope pass's (accurate or F32_ANGLES) within 2^-22
 * of cos and sin of its own angle; with the three roundings to float this is about
 * 5 * 2^-22 r (|u| + |v|) at most: checked within 2^-19 r (|u| + |v|) (+ subnormal
 * roundings, + one ulp of a 16-bit storage type), so a wrong sign, plan, position or row
 * shows while the contract's slack does not. */
static void check_rerotate_composition(const call *c, const run_result *scalar) {
  if (c->n_tokens > 4096) return;
  const size_t rd = posenc_rope_plan_rotary_dim(c->to_plan);
  double wf[MAX_NEW_PAIRS], wt[MAX_NEW_PAIRS];
  if (rd / 2 > MAX_NEW_PAIRS || posenc_rope_plan_freqs(c->rope_plan, wf) != POSENC_OK ||
      posenc_rope_plan_freqs(c->to_plan, wt) != POSENC_OK)
    return;
  posenc_rope_plan *pf = NULL, *pt = NULL;
  if (posenc_rope_plan_create_from_freqs(&pf, rd, wf, 1.0) != POSENC_OK ||
      posenc_rope_plan_create_from_freqs(&pt, rd, wt, 1.0) != POSENC_OK)
    abort();
  const int half = uses_halves(c->family);
  const size_t n = half ? 2 * c->len : c->len, shift = c->misalign / 2;
  float *x = malloc(3 * n * sizeof *x);
  if (!x) abort();
  float *in = x + n, *got = in + n;
  for (size_t i = 0; i < n; ++i) { /* indexed as each_rope_pair counts (check_rope16) */
    if (half) {
      const size_t j = i + shift < n ? i + shift : 0;
      in[i] = widen16(c, half_of(c->input, j));
      got[i] = widen16(c, half_of(scalar->buf, 2 * GUARD + j));
    } else {
      in[i] = c->input[i];
      got[i] = scalar->buf[GUARD + i];
    }
    x[i] = in[i];
  }
  const posenc_rope_tensor v = {x + c->q_off, c->q_heads, c->q_ts, c->q_hs};
  const unsigned pass_flags = c->flags & (POSENC_ROPE_GPTJ | POSENC_ROPE_F32_ANGLES);
  if (posenc_set_isa(POSENC_ISA_SCALAR) != POSENC_OK) abort();
  if (posenc_rope_f32(pf, c->head_dim, c->n_tokens, c->from_positions, c->from_start, &v, NULL,
                      pass_flags | POSENC_ROPE_INVERSE) != POSENC_OK ||
      posenc_rope_f32(pt, c->head_dim, c->n_tokens, c->positions, c->start_pos, &v, NULL,
                      pass_flags) != POSENC_OK)
    violation(c, "scalar", "posenc_rope_f32 rejects the views of an accepted re-rotation", 0, 0.0f,
              0.0f);
  oracle_check k = {c, 0, got, x, in, rope_att(c)};
  each_rope_pair(c, rerotate_pair, &k);
  free(x);
  posenc_rope_plan_destroy(pf);
  posenc_rope_plan_destroy(pt);
}

static void free_call(call *c) {
  posenc_rope_plan_destroy(c->rope_plan);
  if (!c->to_is_from) posenc_rope_plan_destroy(c->to_plan);
  free(c->from_positions);
  posenc_sinusoid_plan_destroy(c->sin_plan);
  free(c->positions);
  free(c->timesteps);
  free(c->slopes);
  free(c->input);
  free(c->touched);
  free(c->touched16);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size, 0x9E3779B97F4A7C15ull};
  call c;
  memset(&c, 0, sizeof c);
  if (!decode(&r, &c)) {
    free_call(&c);
    return 0;
  }
  r.rng ^= (uint64_t)u32(&r) << 1 | 1u;
  c.input = malloc(c.len * sizeof *c.input);
  c.touched = calloc(c.len, 1);
  c.touched16 = uses_halves(c.family) ? calloc(2 * c.len, 1) : NULL;
  if (!c.input || !c.touched || (uses_halves(c.family) && !c.touched16)) abort();
  for (size_t i = 0; i < c.len; ++i) c.input[i] = data_float(&r);
  mark_outputs(&c);
  {
    double w[128]; /* plans of at most 100 frequencies are checked */
    static double limit = -1;
    if (limit < 0) limit = max_checked_freq();
    const posenc_rope_plan *plans[2] = {c.rope_plan, c.to_plan}; /* to_plan: REROTATE */
    for (int i = 0; i < 2; ++i)
      if (plans[i] && posenc_rope_plan_rotary_dim(plans[i]) <= 200 &&
          posenc_rope_plan_freqs(plans[i], w) == POSENC_OK)
        c.values_unchecked |=
            freqs_beyond(w, posenc_rope_plan_rotary_dim(plans[i]) / 2, limit) ||
            (isinf(limit) ? 0 : posenc_rope_plan_attention_factor(plans[i]) > FLT_MAX);
    if (c.sin_plan && posenc_sinusoid_plan_dim(c.sin_plan) <= 200 &&
        posenc_sinusoid_plan_freqs(c.sin_plan, w) == POSENC_OK)
      c.values_unchecked = freqs_beyond(w, (posenc_sinusoid_plan_dim(c.sin_plan) + 1) / 2, limit);
  }

  const size_t total = 2 * GUARD + c.len;
  float *pristine = malloc(total * sizeof *pristine);
  run_result scalar = {POSENC_OK, malloc(total * sizeof(float))};
  run_result other = {POSENC_OK, malloc(total * sizeof(float))};
  if (!pristine || !scalar.buf || !other.buf) abort();
  fill_buffer(&c, pristine);

  run_isa(&c, POSENC_ISA_SCALAR, &scalar);
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("POSENC_FUZZ_VERBOSE") != NULL;
  if (verbose)
    fprintf(stderr, "fuzz_api: family %d status %d arena %zu%s%s\n", c.family, (int)scalar.status,
            c.len, c.values_unchecked ? " (values unchecked)" : "",
            c.must_fail ? " (must fail)" : "");
  /* MROPE, REROTATE: an argument posenc.h lists as an error must make the call fail. */
  if (c.must_fail && scalar.status == POSENC_OK)
    violation(&c, "scalar", "call with an argument posenc.h lists as an error accepted", 0, 0.0f,
              0.0f);
  /* An accepted call must not write any element twice (overlapping outputs) nor write
   * where it reads a table (learned) or its slopes (softmax). */
  if (scalar.status == POSENC_OK) {
    for (size_t i = 0; i < c.len; ++i)
      if (c.touched[i] > 1 ||
          (c.touched16 && (c.touched16[2 * i] > 1 || c.touched16[2 * i + 1] > 1)))
        violation(&c, "scalar", "call with overlapping outputs accepted", i, 0.0f, 0.0f);
    if (slopes_alias_scores(&c))
      violation(&c, "scalar", "slopes inside the scores accepted", c.slopes_off, 0.0f, 0.0f);
  }
  check_run(&c, "scalar", &scalar, &scalar, pristine);
  if (scalar.status == POSENC_OK && !c.values_unchecked) {
    if (c.family == MROPE || c.family == MROPE16) check_mrope_rows(&c, &scalar);
    if (c.family == REROTATE || c.family == REROTATE16) check_rerotate_composition(&c, &scalar);
  }
  for (int isa = 1; isa < POSENC_ISA_COUNT; ++isa) {
    if (!posenc_isa_available((posenc_isa)isa)) continue;
    run_isa(&c, (posenc_isa)isa, &other);
    check_run(&c, posenc_isa_name((posenc_isa)isa), &other, &scalar, pristine);
  }
  free(pristine);
  free(scalar.buf);
  free(other.buf);
  free_call(&c);
  return 0;
}
