/* libFuzzer target: posenc_softmax (one entry point: the input starts at misc, no family
 * byte). The bytes pick up to 4 heads x 8 query rows x 300 keys (and counts of 0 or past
 * 2^62), x and y dtypes (f32, bf16, f16, sometimes unknown), in place or out of place (y
 * after x, x after y, x starting inside y or at y with another type or strides), each view's
 * layout ([H, n_q, n_k], [n_q, H, n_k], padded, row stride 0, or common.h's arbitrary
 * strides), a mask (none, f32 or f16, shared or per head, row and head strides incl. too
 * small or huge; causal, random -inf, ggml's -|qpos - kpos|, windowed, all -inf rows,
 * special and large values; the gaps between its rows NaN), key and query positions (runs,
 * gaps and repeats, any order, negative or near INT32_MAX, or none with a q_offset up to and
 * past the int32 limit), the flags (unknown bits too), window, soft-cap c, scale, slopes and
 * sinks (incl. NaN and Inf), sometimes one of the arrays inside the arena (inside y: must be
 * rejected; inside x or just after y: allowed), NULL params / views / data and misaligned
 * pointers (the misalignment byte of misc lands on one of the seven pointers).
 *
 * Checks, on every available ISA (besides common.h's: the same status everywhere, nothing
 * but y's elements written, nothing written by a failing call):
 *  - an argument posenc.h lists as an error fails (POSENC_ERR_INVALID_ARGUMENT), and a call
 *    whose arguments are all plainly valid (canonical layouts, no overlap) succeeds;
 *  - every y element against a long double reference written here from the header's
 *    formula: t rounded to float step by step as the header orders it (soft-capping: the
 *    exact c tanh(u / c)), then the exact softmax with the sink. Hidden keys (positions,
 *    -inf mask) and -inf t give +0 exactly, rows with nothing visible (or all -inf) all +0,
 *    a NaN or +inf t NaN on every visible key (hidden keys still +0), one finite t alone
 *    (no sink) exactly 1, else within POSENC_SOFTMAX_REL_TOLERANCE * y + ABS_TOLERANCE (with
 *    soft-capping: plus what an error of c 2^-21 in s, and the float additions after it,
 *    can move the softmax; a 16-bit y: plus one rounding to nearest of its type, up to
 *    2^-8 of the value for bf16 and 2^-11 for f16, twice what posenc.h states), never
 *    negative, never a float subnormal;
 *  - sometimes the call again row by row (n_heads = n_q = 1 with the pointers moved on):
 *    bit for bit the same y (posenc.h: a row's result depends only on its inputs);
 *  - sometimes x is NaN at every hidden key (their x is never used) and in the gaps between
 *    its rows; the mask's gaps are always NaN (never read).
 * The y tensor sets the arena's unit (16-bit y: halves). POSENC_FUZZ_VERBOSE=1 also prints
 * each decoded call. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/half.h"
#include "common.h"

#pragma STDC FP_CONTRACT OFF /* the reference's float steps are the header's, unfused */

enum { MAX_HEADS = 4, MAX_Q = 8, MAX_K = 300 };

#define KNOWN_FLAGS                                                         \
  (POSENC_SOFTMAX_CAUSAL | POSENC_SOFTMAX_WINDOW | POSENC_SOFTMAX_SOFTCAP | \
   POSENC_SOFTMAX_ALIBI_SYMMETRIC | POSENC_SOFTMAX_MASK_SLOPE)

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
  int split_check;
  int poison; /* 1: x NaN at hidden keys, gaps of x NaN */
  /* The reference per key (h * n_q + i) * n_k + j. */
  unsigned char *kind;
  long double *want;
  double *tol;
} softmax_call;

/* ---------------------------------------------------------------------- small helpers */

static int dtype_ok(posenc_dtype d) {
  return d == POSENC_DTYPE_F32 || d == POSENC_DTYPE_BF16 || d == POSENC_DTYPE_F16;
}
static size_t dtype_size(posenc_dtype d) { return d == POSENC_DTYPE_F32 || !dtype_ok(d) ? 4 : 2; }

static float widen_bf16(uint16_t h) { return posenc_bits_float((uint32_t)h << 16); }
static float widen_f16(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return posenc_bits_float(sign | 0x7f800000u | mant << 13);
  if (exp == 0) return (sign ? -1.0f : 1.0f) * ldexpf((float)mant, -24);
  return posenc_bits_float(sign | (exp + 112u) << 23 | mant << 13);
}
static uint16_t narrow_bf16(float f) {
  const uint32_t b = posenc_float_bits(f);
  if (isnan(f)) return (uint16_t)((b >> 16) | 0x40u);
  return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
static uint16_t narrow_f16(float f) {
  const uint32_t b = posenc_float_bits(f), a = b & 0x7fffffffu;
  const uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
  if (a > 0x7f800000u) return sign | 0x7e00u;
  if (a >= 0x477ff000u) return sign | 0x7c00u; /* >= 65520: inf */
  if (a <= 0x33000000u) return sign;           /* <= 2^-25: 0 */
  if (a < 0x38800000u) return sign | (uint16_t)lrintf(posenc_bits_float(a) * 16777216.0f);
  return sign | (uint16_t)((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13);
}

/* Element i of a tensor of dtype d at p (any alignment). */
static float load(const unsigned char *p, size_t i, posenc_dtype d) {
  if (d == POSENC_DTYPE_F32) {
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, p + 2 * i, 2);
  return d == POSENC_DTYPE_BF16 ? widen_bf16(h) : widen_f16(h);
}
static void store(unsigned char *p, size_t i, float v, posenc_dtype d) {
  if (d == POSENC_DTYPE_F32) {
    memcpy(p + 4 * i, &v, 4);
    return;
  }
  const uint16_t h = d == POSENC_DTYPE_BF16 ? narrow_bf16(v) : narrow_f16(v);
  memcpy(p + 2 * i, &h, 2);
}

static size_t round4(size_t b) { return (b + 3) & ~(size_t)3; }

/* The elements from the first to one past the last of an [na, nb] grid of rows of w, if
 * its bytes fit in PTRDIFF_MAX (every count >= 1). */
static int extent_of(size_t na, size_t sa, size_t nb, size_t sb, size_t w, size_t esz,
                     size_t *ext) {
  const unsigned __int128 e =
      (unsigned __int128)(na - 1) * sa + (unsigned __int128)(nb - 1) * sb + w;
  if (e * esz > (unsigned __int128)PTRDIFF_MAX) return 0;
  *ext = (size_t)e;
  return 1;
}

static int bytes_meet(size_t a, size_t na, size_t b, size_t nb) {
  return na && nb && a < b + nb && b < a + na;
}

static uint32_t xorshift(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return (uint32_t)(*s >> 16);
}

/* ---------------------------------------------------------------------- decoding */

/* A view's strides; *odd for common.h's arbitrary ones (maybe overlapping or not nested). */
static void decode_layout(reader *r, const softmax_call *c, size_t *hs, size_t *rs, int *odd) {
  const size_t nk = c->n_k < HUGE_BASE ? c->n_k : 1, nq = c->n_q < HUGE_BASE ? c->n_q : 1;
  const size_t nh = c->n_heads < HUGE_BASE ? c->n_heads : 1;
  int huge = 0;
  const uint8_t b = u8(r);
  switch (b % 8) {
    case 0:
    case 1: /* [H, n_q, n_k] */
      *rs = nk;
      *hs = nq * nk;
      break;
    case 2: /* the same, row stride 0 */
      *rs = 0;
      *hs = nq * nk;
      break;
    case 3:
    case 4: /* [n_q, H, n_k] */
      *hs = nk;
      *rs = nh * nk;
      break;
    case 5: /* [H, n_q, n_k], padded */
      *rs = nk + 1 + u8(r) % 9;
      *hs = nq * *rs + u8(r) % 5;
      break;
    case 6: /* [n_q, H, n_k], padded */
      *hs = nk + u8(r) % 5;
      *rs = nh * *hs + u8(r) % 3;
      break;
    default:
      *rs = stride(r, nk, &huge);
      *hs = stride(r, nq * nk, &huge);
      *odd = 1;
  }
}

/* Positions of n keys or queries: NULL, or an array (runs, gaps, repeats, any order, or
 * common.h's special values). */
static int32_t *decode_positions(reader *r, size_t n) {
  const uint8_t mode = u8(r);
  if (mode % 8 < 4 || n > 4096) return NULL;
  int32_t *p = malloc((n ? n : 1) * sizeof *p);
  if (!p) abort();
  if (!n) {
    p[0] = -1; /* never read */
    return p;
  }
  const uint8_t sb = u8(r);
  int64_t next = sb & 1 ? (int64_t)INT32_MAX - (int64_t)(n - 1) - sb % 8 : sb % 32;
  uint64_t s = (uint64_t)u32(r) << 1 | 1u;
  for (size_t t = 0; t < n; ++t) {
    switch (mode % 8) {
      case 4: /* a run */
        p[t] = (int32_t)next;
        ++next;
        break;
      case 5: /* gaps and repeats */
        p[t] = (int32_t)next;
        next += xorshift(&s) % 4;
        if (next > INT32_MAX) next = INT32_MAX;
        break;
      case 6: /* any order in [0, 2n + 8) */
        p[t] = (int32_t)(xorshift(&s) % (2 * n + 8));
        break;
      default: /* a run broken by special values (negative too) */
        p[t] = (xorshift(&s) % 8 == 7) ? special_position(r) : (int32_t)next;
        if (next < INT32_MAX) ++next;
    }
  }
  return p;
}

static void set_heap(aux_array *a, const void *values, size_t bytes, size_t mis) {
  a->present = 1;
  a->bytes = bytes;
  a->mis = mis;
  a->heap = malloc(bytes + mis ? bytes + mis : 1);
  if (!a->heap) abort();
  memset(a->heap, 0xA5, mis);
  if (bytes) memcpy(a->heap + mis, values, bytes);
}

/* Slopes (NULL, posenc_alibi_slopes', or given, 1/16 special) or sinks. */
static float *decode_head_values(reader *r, size_t n_heads, int sinks) {
  const uint8_t mode = u8(r) % 4;
  if (mode == 0 || (sinks && mode == 1) || n_heads > MAX_HEADS) return NULL;
  float *v = malloc((n_heads + 1) * sizeof *v);
  if (!v) abort();
  if (!sinks && mode == 1 && n_heads &&
      posenc_alibi_slopes(n_heads, u8(r) % 2 ? 8.0 : 0.5 + u8(r) % 16, v) == POSENC_OK)
    return v;
  for (size_t h = 0; h < n_heads; ++h) {
    const uint8_t b = u8(r);
    if (b < 16)
      v[h] = special_float(b, u32(r));
    else
      v[h] = sinks ? (float)((int)b - 136) / (mode == 3 ? 2.0f : 16.0f)
                   : (float)((int)b - 136) / 64.0f;
  }
  return v;
}

/* The query position of row i and the key position of column j (arrays as the library
 * reads them: from the heap or the arena). */
static const unsigned char *aux_ptr(const softmax_call *c, int k, const unsigned char *arena) {
  const aux_array *a = &c->aux[k];
  if (!a->present) return NULL;
  return a->in_arena ? arena + a->arena_byte : a->heap + a->mis;
}
static int32_t read_i32(const unsigned char *p, size_t i) {
  int32_t v;
  memcpy(&v, p + 4 * i, 4);
  return v;
}
static float read_f32(const unsigned char *p, size_t i) {
  float v;
  memcpy(&v, p + 4 * i, 4);
  return v;
}

/* A mask value of one pattern for key j of query row i (positions qp, kp). */
static float mask_value(int pattern, uint64_t *s, int64_t qp, int64_t kp, int row_all_hidden,
                        int32_t w2) {
  const uint32_t x = xorshift(s);
  switch (pattern) {
    case 0:
      return 0.0f;
    case 1: /* causal */
      return kp > qp ? -INFINITY : 0.0f;
    case 2: /* random -inf */
      return x % 4 == 0 ? -INFINITY : (float)(int8_t)(x >> 8) / 16.0f;
    case 3: /* ggml's ALiBi mask, causal */
      return kp > qp ? -INFINITY : -(float)(qp > kp ? qp - kp : kp - qp);
    case 4: /* a sliding window, causal */
      return kp > qp || qp - kp >= w2 ? -INFINITY : 0.0f;
    case 5: /* rows all -inf, else random */
      return row_all_hidden || x % 2 ? -INFINITY : (float)(int8_t)(x >> 8) / 8.0f;
    case 6: { /* special values */
      static const float sp[8] = {NAN, INFINITY, -INFINITY, 1e30f, -FLT_MAX, 1e-40f, -0.0f, 0.0f};
      return x % 4 ? 0.0f : sp[(x >> 4) % 8];
    }
    default: /* large magnitudes (HF's finfo.min) */
      return x % 3 == 0 ? -FLT_MAX : x % 3 == 1 ? -(float)(x >> 20) * 100.0f : (float)(x >> 24);
  }
}

static call *decode(reader *r) {
  softmax_call *c = calloc(1, sizeof *c);
  if (!c) abort();
  call *base = &c->base;
  decode_header(r, base, 0);
  const uint8_t which = u8(r);
  c->null_y = which & 1;
  const int mis_target = (which >> 1) % 7;
  c->null_struct = which >= 0xFC ? 1 + which % 3 : 0;
  const size_t mis = base->misalign;

  c->n_heads = count(r, MAX_HEADS, 1);
  c->n_q = count(r, MAX_Q, 1);
  const uint8_t kb = u8(r);
  c->n_k = kb == 0xFF ? HUGE_BASE + u8(r) : kb < 0xC0 ? kb % 70 : 70 + u16(r) % (MAX_K - 69);
  c->work = c->n_heads && c->n_q && c->n_k;
  const int small = c->n_heads <= MAX_HEADS && c->n_q <= MAX_Q && c->n_k <= MAX_K;

  /* Types, in place or not. */
  const uint8_t tb = u8(r);
  c->xdt = (posenc_dtype)(tb % 3);
  c->ydt = (posenc_dtype)((tb / 3) % 3);
  c->in_place = (tb / 9) % 3 == 0;
  if (c->in_place) c->ydt = c->xdt;
  if (tb >= 0xFA) *(tb & 1 ? &c->xdt : &c->ydt) = (posenc_dtype)(3 + (tb & 4));
  c->xsz = dtype_size(c->xdt);
  c->ysz = dtype_size(c->ydt);
  base->halves = c->ysz == 2;
  base->bf16 = c->ydt == POSENC_DTYPE_BF16;

  /* Layouts. */
  int x_odd = 0, y_odd = 0;
  decode_layout(r, c, &c->x_hs, &c->x_rs, &x_odd);
  if (!c->in_place || u8(r) % 16 == 0) {
    decode_layout(r, c, &c->y_hs, &c->y_rs, &y_odd);
  } else {
    c->y_hs = c->x_hs;
    c->y_rs = c->x_rs;
    y_odd = x_odd;
  }
  c->x_rse = c->x_rs ? c->x_rs : c->n_k;
  c->y_rse = c->y_rs ? c->y_rs : c->n_k;
  size_t x_ext = 0, y_ext = 0;
  const int x_ok =
      c->work && extent_of(c->n_heads, c->x_hs, c->n_q, c->x_rse, c->n_k, c->xsz, &x_ext);
  const int y_ok =
      c->work && extent_of(c->n_heads, c->y_hs, c->n_q, c->y_rse, c->n_k, c->ysz, &y_ext);
  c->x_bytes = x_ok && small ? x_ext * c->xsz : 0;
  c->y_bytes = y_ok && small ? y_ext * c->ysz : 0;
  int y_overlap = 0; /* two rows of y share an element */
  if (y_ok && small)
    for (size_t a = 0; a < c->n_heads * c->n_q; ++a)
      for (size_t b = a + 1; b < c->n_heads * c->n_q; ++b) {
        const size_t oa = a / c->n_q * c->y_hs + a % c->n_q * c->y_rse;
        const size_t ob = b / c->n_q * c->y_hs + b % c->n_q * c->y_rse;
        if ((oa > ob ? oa - ob : ob - oa) < c->n_k) y_overlap = 1;
      }

  /* Placement: y, then x after it, or x then y, or x inside y / at y. */
  const uint8_t pb = u8(r);
  const size_t start = 4 * (size_t)(u8(r) % 4);
  const size_t y_mis = mis_target == MIS_Y ? mis : 0, x_mis = mis_target == MIS_X ? mis : 0;
  int placement = c->in_place ? -1 : pb % 8;
  switch (placement) {
    case -1:
      c->y_byte = start + y_mis;
      c->x_byte = start + x_mis;
      break;
    case 4:
    case 5:
      c->x_byte = start + x_mis;
      c->y_byte = round4(c->x_byte + c->x_bytes) + 4 * (pb / 8 % 4) + y_mis;
      break;
    case 6: {
      c->y_byte = start + y_mis;
      const size_t into = c->y_bytes ? (size_t)u16(r) % c->y_bytes : 0;
      c->x_byte = c->y_byte - y_mis + (into - into % 4) + x_mis;
      break;
    }
    case 7:
      c->y_byte = start + y_mis;
      c->x_byte = start + x_mis;
      break;
    default:
      c->y_byte = start + y_mis;
      c->x_byte = round4(c->y_byte + c->y_bytes) + 4 * (pb / 8 % 4) + x_mis;
  }

  /* Scalars. */
  posenc_softmax_params *p = &c->p;
  *p = (posenc_softmax_params)POSENC_SOFTMAX_PARAMS_INIT;
  {
    const uint8_t qb = u8(r);
    const int64_t nq = c->n_q < HUGE_BASE ? (int64_t)c->n_q : 0;
    int64_t q;
    switch (qb % 8) {
      case 0:
        q = 0;
        break;
      case 1: /* decode style */
        q = c->n_k <= MAX_K && (int64_t)c->n_k >= nq ? (int64_t)c->n_k - nq : 0;
        break;
      case 2: /* the last run that fits */
        q = (int64_t)INT32_MAX - (nq ? nq - 1 : 0);
        break;
      case 3: /* one past */
        q = (int64_t)INT32_MAX - nq + 2;
        break;
      case 4:
        q = -1 - (int64_t)u8(r);
        break;
      case 5:
        q = u16(r) % 2000;
        break;
      default:
        q = u8(r) % (c->n_k <= MAX_K ? c->n_k + 8 : 64);
    }
    p->q_offset = (int32_t)(q > INT32_MAX ? INT32_MAX : q);
  }
  p->flags = flags_of(r, KNOWN_FLAGS);
  {
    const uint8_t wb = u8(r);
    switch (wb % 8) {
      case 7:
        p->window = 0;
        break;
      case 6:
        p->window = -1 - (int32_t)u8(r);
        break;
      case 5:
        p->window = INT32_MAX;
        break;
      case 4:
        p->window = 1;
        break;
      default:
        p->window = 1 + (int32_t)(u16(r) % (c->n_k <= MAX_K ? c->n_k + 16 : 64));
    }
  }
  {
    static const float caps[10] = {30.0f, 50.0f, 1.0f,  0.01f, 1e6f,
                                   5.0f,  0.0f,  -1.0f, NAN,   INFINITY};
    const uint8_t cb = u8(r);
    p->softcap = cb % 16 < 10 ? caps[cb % 16] : (float)(1 + u8(r) % 64) / 2.0f;
  }
  {
    static const double scales[] = {1.0, 0.125, 0.08838834764831845, 2.0, -1.0};
    const uint8_t sb = u8(r);
    p->scale = sb % 4 < 3 ? (float)scales[sb % 4] : (float)param(r, scales, 5);
  }

  /* Slopes, sinks, positions: malloc'd to the byte (and misaligned where misc says). */
  float *slopes = decode_head_values(r, c->n_heads, 0);
  float *sinks = decode_head_values(r, c->n_heads, 1);
  int32_t *kpos = c->n_k <= MAX_K ? decode_positions(r, c->n_k) : NULL;
  int32_t *qpos = c->n_q <= MAX_Q ? decode_positions(r, c->n_q) : NULL;
  const size_t amis[AUX_COUNT] = {
      mis_target == MIS_AUX + AUX_MASK ? mis : 0, mis_target == MIS_AUX + AUX_SLOPES ? mis : 0,
      mis_target == MIS_AUX + AUX_SINKS ? mis : 0, mis_target == MIS_AUX + AUX_KPOS ? mis : 0,
      mis_target == MIS_AUX + AUX_QPOS ? mis : 0};
  if (slopes) set_heap(&c->aux[AUX_SLOPES], slopes, c->n_heads * 4, amis[AUX_SLOPES]);
  if (sinks) set_heap(&c->aux[AUX_SINKS], sinks, c->n_heads * 4, amis[AUX_SINKS]);
  if (kpos) set_heap(&c->aux[AUX_KPOS], kpos, c->n_k * 4, amis[AUX_KPOS]);
  if (qpos) set_heap(&c->aux[AUX_QPOS], qpos, c->n_q * 4, amis[AUX_QPOS]);

  /* The mask. */
  int mask_ok = 1;
  {
    const uint8_t mb = u8(r);
    if (mb % 8 >= 3) {
      p->mask_dtype = (mb >> 3) & 1 ? POSENC_DTYPE_F16 : POSENC_DTYPE_F32;
      if (mb >= 0xF8) p->mask_dtype = (posenc_dtype)(mb & 1 ? 1 : 5); /* bf16 / unknown */
      c->msz = dtype_size(p->mask_dtype);
      const size_t nk = c->n_k <= MAX_K ? c->n_k : 1, nq = c->n_q <= MAX_Q ? c->n_q : 1;
      int huge = 0;
      const uint8_t rb = u8(r);
      switch (rb % 8) {
        case 0:
          p->mask_row_stride = 0;
          break;
        case 4:
          p->mask_row_stride = nk + 1 + u8(r) % 7;
          break;
        case 5: /* below n_k (0: valid) */
          p->mask_row_stride = nk ? nk - 1 - u8(r) % nk : 0;
          break;
        case 6:
          p->mask_row_stride = stride(r, nk, &huge);
          break;
        case 7:
          p->mask_row_stride = 2 * nk;
          break;
        default:
          p->mask_row_stride = nk;
      }
      const size_t mrs = p->mask_row_stride ? p->mask_row_stride : nk;
      const uint8_t hb = u8(r);
      switch (hb % 4) {
        case 0:
          p->mask_head_stride = 0;
          break;
        case 1:
          p->mask_head_stride = nq * mrs;
          break;
        case 2:
          p->mask_head_stride = stride(r, nq * mrs, &huge);
          break;
        default:
          p->mask_head_stride = mrs;
      }
      const int pattern = u8(r) % 8;
      const int32_t w2 = 1 + u8(r) % 64;
      uint64_t s = (uint64_t)u32(r) << 1 | 1u;
      size_t m_ext = 0;
      if (c->work)
        mask_ok =
            extent_of(c->n_heads, p->mask_head_stride, c->n_q,
                      p->mask_row_stride ? p->mask_row_stride : c->n_k, c->n_k, c->msz, &m_ext);
      if (c->work && mask_ok && small && dtype_ok(p->mask_dtype)) {
        /* Every element NaN, then the rows' values (overlapping rows: the last). */
        unsigned char *m = malloc(m_ext * c->msz);
        if (!m) abort();
        for (size_t e = 0; e < m_ext; ++e) store(m, e, NAN, p->mask_dtype);
        for (size_t h = 0; h < c->n_heads; ++h)
          for (size_t i = 0; i < c->n_q; ++i) {
            const int64_t qp = qpos ? qpos[i] : (int64_t)p->q_offset + (int64_t)i;
            const int row_hidden = xorshift(&s) % 2;
            for (size_t j = 0; j < c->n_k; ++j) {
              const int64_t kp = kpos ? kpos[j] : (int64_t)j;
              const size_t e = h * p->mask_head_stride + i * mrs + j;
              store(m, e, mask_value(pattern, &s, qp, kp, row_hidden, w2), p->mask_dtype);
            }
          }
        set_heap(&c->aux[AUX_MASK], m, m_ext * c->msz, amis[AUX_MASK]);
        free(m);
      } else {
        const uint32_t nan = 0x7fc00000u; /* never read */
        set_heap(&c->aux[AUX_MASK], &nan, 4, amis[AUX_MASK]);
      }
    }
  }
  free(slopes);
  free(sinks);
  free(kpos);
  free(qpos);

  /* Sometimes one array in the arena: inside y (must fail), inside x, just after y, or
   * after everything. */
  size_t end = max_size(c->y_byte + c->y_bytes, c->x_byte + c->x_bytes);
  const uint8_t ab = u8(r);
  if (ab % 8 == 7 && c->work && small) {
    aux_array *a = &c->aux[u8(r) % AUX_COUNT];
    if (a->present && a->bytes) {
      const uint8_t where = u8(r) % 4;
      const size_t amis_here = a->mis;
      size_t at;
      if (where == 0 && c->y_bytes) {
        const size_t into = (size_t)u16(r) % c->y_bytes;
        at = c->y_byte - (c->y_byte % 4) + into - into % 4;
      } else if (where == 1) {
        at = round4(c->y_byte + c->y_bytes);
      } else if (where == 2 && !c->in_place && c->x_bytes) {
        const size_t into = (size_t)u16(r) % c->x_bytes;
        at = c->x_byte - (c->x_byte % 4) + into - into % 4;
      } else {
        at = round4(end) + 4 * (u8(r) % 4);
      }
      a->in_arena = 1;
      a->arena_byte = at + amis_here;
      end = max_size(end, a->arena_byte + a->bytes);
    }
  }
  base->len = (end + 3) / 4 + 1;

  c->split_check = u8(r) % 4 == 0;
  c->poison = u8(r) % 2;

  /* What posenc.h says of these arguments. */
  const unsigned flags = p->flags;
  int fail = c->null_struct != 0 || !dtype_ok(c->xdt) || !dtype_ok(c->ydt) ||
             (flags & ~(unsigned)KNOWN_FLAGS) || !isfinite(p->scale) ||
             ((flags & POSENC_SOFTMAX_SOFTCAP) && !(isfinite(p->softcap) && p->softcap > 0)) ||
             ((flags & POSENC_SOFTMAX_WINDOW) && p->window < 1);
  const int has_mask = c->aux[AUX_MASK].present;
  if (has_mask && !(p->mask_dtype == POSENC_DTYPE_F32 || p->mask_dtype == POSENC_DTYPE_F16))
    fail = 1;
  if ((flags & POSENC_SOFTMAX_MASK_SLOPE) && !(has_mask && c->aux[AUX_SLOPES].present)) fail = 1;
  if (!c->aux[AUX_QPOS].present &&
      (p->q_offset < 0 ||
       (c->n_q > 0 &&
        (c->n_q >= HUGE_BASE || (int64_t)p->q_offset + (int64_t)c->n_q - 1 > (int64_t)INT32_MAX))))
    fail = 1;
  if (!c->aux[AUX_KPOS].present && c->n_k > (size_t)INT32_MAX + 1) fail = 1;
  if (has_mask && p->mask_row_stride != 0 && p->mask_row_stride < c->n_k) fail = 1;
  int doubt = 0;
  if (c->work) {
    const size_t yb = y_ok ? y_ext * c->ysz : 0, xb = x_ok ? x_ext * c->xsz : 0;
    if (base->null_data || c->x_byte % c->xsz || c->y_byte % c->ysz || !x_ok || !y_ok ||
        y_overlap || !mask_ok)
      fail = 1;
    if (bytes_meet(c->x_byte, xb, c->y_byte, yb)) {
      /* The same view is in place; the same but for a stride that is never used is
       * either; any other overlap is an error. */
      const int loosely = c->x_byte == c->y_byte && c->xdt == c->ydt &&
                          (c->x_hs == c->y_hs || c->n_heads == 1) &&
                          (c->x_rse == c->y_rse || c->n_q == 1);
      const int same =
          c->x_byte == c->y_byte && c->xdt == c->ydt && c->x_hs == c->y_hs && c->x_rse == c->y_rse;
      if (!same) {
        if (loosely)
          doubt = 1;
        else
          fail = 1;
      }
    }
    const size_t align[AUX_COUNT] = {c->msz, 4, 4, 4, 4};
    for (int k = 0; k < AUX_COUNT; ++k) {
      const aux_array *a = &c->aux[k];
      if (!a->present) continue;
      const size_t at = a->in_arena ? a->arena_byte : a->mis; /* heap: malloc-aligned */
      if (align[k] && at % align[k]) fail = 1;
      if (a->in_arena && bytes_meet(a->arena_byte, a->bytes, c->y_byte, yb)) fail = 1;
    }
    /* (An array copied into the arena holds these same values.) */
    const aux_array *sl = &c->aux[AUX_SLOPES], *sk = &c->aux[AUX_SINKS];
    const aux_array *kp = &c->aux[AUX_KPOS], *qp = &c->aux[AUX_QPOS];
    for (size_t h = 0; h < c->n_heads && c->n_heads <= MAX_HEADS; ++h) {
      if (sl->present && !isfinite(read_f32(sl->heap + sl->mis, h))) fail = 1;
      if (sk->present && !isfinite(read_f32(sk->heap + sk->mis, h))) fail = 1;
    }
    for (size_t j = 0; kp->present && j < c->n_k; ++j)
      if (read_i32(kp->heap + kp->mis, j) < 0) fail = 1;
    for (size_t i = 0; qp->present && i < c->n_q; ++i)
      if (read_i32(qp->heap + qp->mis, i) < 0) fail = 1;
    if (x_odd || y_odd || (c->n_q > 1 && c->x_rse < c->n_k)) doubt = 1;
  }
  base->must_fail = fail;
  c->must_pass = !fail && !doubt;
  return base;
}

/* ---------------------------------------------------------------------- the call */

static posenc_status call_softmax(const softmax_call *c, unsigned char *arena, size_t n_heads,
                                  size_t n_q, size_t h0, size_t i0) {
  posenc_softmax_params p = c->p;
  const unsigned char *m = aux_ptr(c, AUX_MASK, arena), *sl = aux_ptr(c, AUX_SLOPES, arena);
  const unsigned char *sk = aux_ptr(c, AUX_SINKS, arena), *kp = aux_ptr(c, AUX_KPOS, arena);
  const unsigned char *qp = aux_ptr(c, AUX_QPOS, arena);
  const size_t mrs = p.mask_row_stride ? p.mask_row_stride : c->n_k;
  p.mask = m ? m + (h0 * p.mask_head_stride + i0 * mrs) * c->msz : NULL;
  p.slopes = sl ? (const float *)(const void *)(sl + 4 * h0) : NULL;
  p.sinks = sk ? (const float *)(const void *)(sk + 4 * h0) : NULL;
  p.kpos = (const int32_t *)(const void *)kp;
  p.qpos = qp ? (const int32_t *)(const void *)(qp + 4 * i0) : NULL;
  if (!qp) p.q_offset = (int32_t)(p.q_offset + (int32_t)i0);
  unsigned char *x = c->base.null_data && !c->null_y ? NULL : arena + c->x_byte;
  unsigned char *y = c->base.null_data && c->null_y ? NULL : arena + c->y_byte;
  if (x) x += (h0 * c->x_hs + i0 * c->x_rse) * c->xsz;
  if (y) y += (h0 * c->y_hs + i0 * c->y_rse) * c->ysz;
  const posenc_scores_view xv = {x, c->xdt, c->x_hs, c->x_rs};
  const posenc_scores_view yv = {y, c->ydt, c->y_hs, c->y_rs};
  return posenc_softmax(c->null_struct == 1 ? NULL : &p, n_heads, n_q, c->n_k,
                        c->null_struct == 2 ? NULL : &xv, c->null_struct == 3 ? NULL : &yv);
}

static posenc_status invoke(const call *base, float *arena) {
  const softmax_call *c = (const softmax_call *)base;
  const posenc_status st = call_softmax(c, (unsigned char *)arena, c->n_heads, c->n_q, 0, 0);
  if (st != POSENC_OK && st != POSENC_ERR_INVALID_ARGUMENT)
    violation(base, posenc_isa_name(posenc_active_isa()), "status other than OK or INVALID",
              (size_t)st, 0.0f, 0.0f);
  if (c->must_pass && st != POSENC_OK)
    violation(base, posenc_isa_name(posenc_active_isa()), "call with valid arguments rejected", 0,
              0.0f, 0.0f);
  return st;
}

/* ---------------------------------------------------------------------- the reference */

static size_t y_unit(const softmax_call *c, size_t h, size_t i, size_t j) {
  return (c->y_byte + (h * c->y_hs + i * c->y_rse + j) * c->ysz) / (c->base.halves ? 2 : 4);
}

static size_t x_elem(const softmax_call *c, size_t h, size_t i, size_t j) {
  return h * c->x_hs + i * c->x_rse + j;
}

static int64_t qpos_of(const softmax_call *c, const unsigned char *arena, size_t i) {
  const unsigned char *q = aux_ptr(c, AUX_QPOS, arena);
  return q ? read_i32(q, i) : (int64_t)c->p.q_offset + (int64_t)i;
}
static int64_t kpos_of(const softmax_call *c, const unsigned char *arena, size_t j) {
  const unsigned char *k = aux_ptr(c, AUX_KPOS, arena);
  return k ? read_i32(k, j) : (int64_t)j;
}

/* Hidden by the positions or by a -inf mask value. */
static int hidden(const softmax_call *c, const unsigned char *arena, size_t h, size_t i, size_t j) {
  const unsigned flags = c->p.flags;
  const int64_t d = kpos_of(c, arena, j) - qpos_of(c, arena, i);
  if ((flags & POSENC_SOFTMAX_CAUSAL) && d > 0) return 1;
  if ((flags & POSENC_SOFTMAX_WINDOW) && -d >= c->p.window) return 1;
  const unsigned char *m = aux_ptr(c, AUX_MASK, arena);
  if (!m) return 0;
  const size_t mrs = c->p.mask_row_stride ? c->p.mask_row_stride : c->n_k;
  return load(m, h * c->p.mask_head_stride + i * mrs + j, c->p.mask_dtype) == -INFINITY;
}

/* t of a visible key (long double; soft-capping: the exact c tanh(u / c), then the mask and
 * bias terms added exactly, *delta the bound on the library's t - this, else the float t of
 * the header's steps and *delta = 0). */
static long double t_of(const softmax_call *c, const unsigned char *arena, size_t h, size_t i,
                        size_t j, double *delta) {
  const posenc_softmax_params *p = &c->p;
  const unsigned flags = p->flags;
  const float xv = load(arena + c->x_byte, x_elem(c, h, i, j), c->xdt);
  const float u = p->scale * xv;
  const unsigned char *m = aux_ptr(c, AUX_MASK, arena), *sl = aux_ptr(c, AUX_SLOPES, arena);
  const float slope = sl ? read_f32(sl, h) : 0.0f;
  const size_t mrs = p->mask_row_stride ? p->mask_row_stride : c->n_k;
  int has_term = 0, has_bias = 0;
  float term = 0.0f, bias = 0.0f;
  if (m) {
    const float mv = load(m, h * p->mask_head_stride + i * mrs + j, p->mask_dtype);
    has_term = 1;
    if (flags & POSENC_SOFTMAX_MASK_SLOPE) {
      const float prod = slope * mv;
      term = prod;
    } else {
      term = mv;
    }
  }
  if (sl && !(flags & POSENC_SOFTMAX_MASK_SLOPE)) {
    const int64_t d = kpos_of(c, arena, j) - qpos_of(c, arena, i);
    has_bias = 1;
    if (flags & POSENC_SOFTMAX_ALIBI_SYMMETRIC) {
      const float prod = slope * (float)(int32_t)(d < 0 ? -d : d);
      bias = -prod;
    } else {
      const float prod = slope * (float)(int32_t)d;
      bias = prod;
    }
  }
  *delta = 0.0;
  if (!(flags & POSENC_SOFTMAX_SOFTCAP)) {
    float t = u;
    if (has_term) {
      const float s = t + term;
      t = s;
    }
    if (has_bias) {
      const float s = t + bias;
      t = s;
    }
    return t;
  }
  const long double cap = p->softcap;
  const long double s = cap * tanhl((long double)u / cap);
  /* Where the float steps after s overflow (or meet an infinity or NaN), the library's t
   * is that of the exact s rounded to float. */
  float tf = (float)s;
  if (has_term) {
    const float a = tf + term;
    tf = a;
  }
  if (has_bias) {
    const float a = tf + bias;
    tf = a;
  }
  if (!isfinite(tf) || isnan(s)) return isnan(s) ? (long double)NAN : tf;
  const long double a = s + (has_term ? term : 0.0f), t = a + (has_bias ? bias : 0.0f);
  *delta = (double)cap * 0x1p-21 + (has_term ? 0x1.01p-24 * fabsl(a) : 0.0) +
           (has_bias ? 0x1.01p-24 * fabsl(t) : 0.0);
  return t;
}

/* The reference of every key of row (h, i), from the arena's contents. */
static void reference_row(softmax_call *c, const unsigned char *arena, size_t h, size_t i) {
  const size_t n_k = c->n_k, row = (h * c->n_q + i) * n_k;
  unsigned char *kind = c->kind + row;
  long double *want = c->want + row, t[MAX_K];
  double *tol = c->tol + row;
  int nan = 0, n_finite = 0;
  long double mx = -INFINITY;
  double delta = 0.0;
  for (size_t j = 0; j < n_k; ++j) {
    want[j] = 0.0L;
    tol[j] = 0.0;
    kind[j] = WANT_ZERO;
    if (hidden(c, arena, h, i, j)) {
      t[j] = -INFINITY;
      continue;
    }
    double dj;
    t[j] = t_of(c, arena, h, i, j, &dj);
    kind[j] = WANT_VALUE;
    if (isnan(t[j]) || t[j] == INFINITY) {
      nan = 1;
    } else if (t[j] > -INFINITY) {
      ++n_finite;
      if (t[j] > mx) mx = t[j];
      if (dj > delta) delta = dj;
    }
  }
  const unsigned char *sk = aux_ptr(c, AUX_SINKS, arena);
  const long double sink = sk ? read_f32(sk, h) : -INFINITY;
  long double sum = 0.0L;
  if (nan)
    for (size_t j = 0; j < n_k; ++j)
      if (kind[j] == WANT_ZERO) kind[j] = WANT_ZERO_NAN_ROW;
  if (!nan && n_finite) {
    if (sink > mx) mx = sink;
    for (size_t j = 0; j < n_k; ++j)
      if (kind[j] == WANT_VALUE && t[j] > -INFINITY) sum += expl(t[j] - mx);
    if (sk) sum += expl(sink - mx);
  }
  /* y's bound: the header's, with soft-capping widened by what moving every t by delta
   * can do (a factor e^(2 delta) at most), and a 16-bit y's one rounding. */
  const double grow = expm1(2.0 * delta), rel = POSENC_SOFTMAX_REL_TOLERANCE * (1.0 + grow) + grow;
  const double u16 = c->ydt == POSENC_DTYPE_F32    ? 0.0
                     : c->ydt == POSENC_DTYPE_BF16 ? 0x1p-8
                                                   : 0x1p-11;
  for (size_t j = 0; j < n_k; ++j) {
    if (kind[j] != WANT_VALUE) continue;
    if (nan) {
      kind[j] = WANT_NAN;
    } else if (!n_finite || t[j] == -INFINITY) {
      kind[j] = WANT_ZERO;
    } else if (n_finite == 1 && !sk) {
      kind[j] = WANT_ONE;
    } else {
      want[j] = expl(t[j] - mx) / sum;
      const double y = (double)want[j], b32 = rel * y + POSENC_SOFTMAX_ABS_TOLERANCE;
      tol[j] = b32 + u16 * (y + b32) + (c->ydt == POSENC_DTYPE_F16 ? 0x1p-25 : 0.0);
      tol[j] *= 1.0 + 0x1p-20; /* the reference's own rounding */
    }
  }
}

/* The arena's data once decode_call has filled it, then y marked and the reference. */
static void prepare(call *base) {
  softmax_call *c = (softmax_call *)base;
  unsigned char *arena = (unsigned char *)base->input;
  const size_t nh = c->n_heads, nq = c->n_q, nk = c->n_k;
  const int ready = c->work && !base->must_fail && !base->null_data && nh <= MAX_HEADS &&
                    nq <= MAX_Q && nk <= MAX_K && c->x_bytes && c->y_bytes;
  int aux_in_arena = 0;
  for (int k = 0; k < AUX_COUNT; ++k) aux_in_arena |= c->aux[k].in_arena;
  if (getenv("POSENC_FUZZ_VERBOSE"))
    fprintf(stderr,
            "fuzz_softmax: %zu x %zu x %zu, x %d -> y %d%s, flags %#x, mask %d, slopes %d, "
            "sinks %d, kpos %d, qpos %d, array in arena %d, must %s\n",
            nh, nq, nk, (int)c->xdt, (int)c->ydt, c->in_place ? " in place" : "", c->p.flags,
            c->aux[AUX_MASK].present ? 1 + (int)c->p.mask_dtype : 0, c->aux[AUX_SLOPES].present,
            c->aux[AUX_SINKS].present, c->aux[AUX_KPOS].present, c->aux[AUX_QPOS].present,
            aux_in_arena,
            base->must_fail ? "fail"
            : c->must_pass  ? "pass"
                            : "(either)");
  if (ready) {
    /* 16-bit x: each element from the float data at its own half index. */
    if (c->xsz == 2) {
      float *snap = malloc(base->len * sizeof *snap);
      if (!snap) abort();
      memcpy(snap, base->input, base->len * sizeof *snap);
      for (size_t h = 0; h < nh; ++h)
        for (size_t i = 0; i < nq; ++i)
          for (size_t j = 0; j < nk; ++j) {
            const size_t e = x_elem(c, h, i, j);
            store(arena + c->x_byte, e, snap[(c->x_byte / 2 + e) % base->len], c->xdt);
          }
      free(snap);
    }
    /* The gaps of x (never read): NaN. */
    if (c->poison && !aux_in_arena) {
      const size_t n = c->x_bytes / c->xsz;
      unsigned char *used = calloc(n, 1);
      if (!used) abort();
      for (size_t h = 0; h < nh; ++h)
        for (size_t i = 0; i < nq; ++i)
          for (size_t j = 0; j < nk; ++j) used[x_elem(c, h, i, j)] = 1;
      for (size_t e = 0; e < n; ++e)
        if (!used[e]) store(arena + c->x_byte, e, NAN, c->xdt);
      free(used);
    }
  }
  /* The arrays placed in the arena. */
  for (int k = 0; k < AUX_COUNT; ++k) {
    const aux_array *a = &c->aux[k];
    if (a->in_arena) memcpy(arena + a->arena_byte, a->heap + a->mis, a->bytes);
  }
  if (!ready) return;
  /* Hidden keys' x: NaN (never used). */
  if (c->poison && !aux_in_arena)
    for (size_t h = 0; h < nh; ++h)
      for (size_t i = 0; i < nq; ++i)
        for (size_t j = 0; j < nk; ++j)
          if (hidden(c, arena, h, i, j)) store(arena + c->x_byte, x_elem(c, h, i, j), NAN, c->xdt);
  /* y's elements, and the reference. */
  for (size_t h = 0; h < nh; ++h)
    for (size_t i = 0; i < nq; ++i)
      for (size_t j = 0; j < nk; ++j) touch(base, y_unit(c, h, i, j));
  const size_t n = nh * nq * nk;
  c->kind = malloc(n);
  c->want = malloc(n * sizeof *c->want);
  c->tol = malloc(n * sizeof *c->tol);
  if (!c->kind || !c->want || !c->tol) abort();
  for (size_t h = 0; h < nh; ++h)
    for (size_t i = 0; i < nq; ++i) reference_row(c, arena, h, i);
}

/* ---------------------------------------------------------------------- the checks */

static float y_value(const softmax_call *c, const float *buf, size_t unit, uint32_t *bits) {
  if (!c->base.halves) {
    *bits = posenc_float_bits(buf[GUARD + unit]);
    return buf[GUARD + unit];
  }
  const uint16_t h = half_of(buf, 2 * GUARD + unit);
  *bits = h;
  return c->ydt == POSENC_DTYPE_BF16 ? widen_bf16(h) : widen_f16(h);
}

static _Noreturn void wrong(const softmax_call *c, const char *isa, const char *what, size_t h,
                            size_t i, size_t j, float got) {
  const size_t k = (h * c->n_q + i) * c->n_k + j;
  fprintf(stderr,
          "fuzz_softmax: %s: head %zu row %zu key %zu of %zu x %zu x %zu (x %d, y %d, flags "
          "%#x, mask %s): got %a, want %.20Lg (kind %d, tolerance %g)\n",
          isa, h, i, j, c->n_heads, c->n_q, c->n_k, (int)c->xdt, (int)c->ydt, c->p.flags,
          c->aux[AUX_MASK].present ? (c->p.mask_dtype ? "f16" : "f32") : "none", (double)got,
          c->want[k], c->kind[k], c->tol[k]);
  violation(&c->base, isa, what, y_unit(c, h, i, j) / (c->base.halves ? 2 : 1), got,
            (float)c->want[k]);
}

static void check_values(const call *base, const char *isa, const run_result *res,
                         const run_result *scalar) {
  const softmax_call *c = (const softmax_call *)base;
  (void)scalar;
  if (!c->kind) return;
  const uint32_t zero = 0, one = c->ydt == POSENC_DTYPE_F32    ? 0x3f800000u
                                 : c->ydt == POSENC_DTYPE_BF16 ? 0x3f80u
                                                               : 0x3c00u;
  for (size_t h = 0; h < c->n_heads; ++h)
    for (size_t i = 0; i < c->n_q; ++i)
      for (size_t j = 0; j < c->n_k; ++j) {
        const size_t k = (h * c->n_q + i) * c->n_k + j;
        uint32_t bits;
        const float got = y_value(c, res->buf, y_unit(c, h, i, j), &bits);
        switch (c->kind[k]) {
          case WANT_ZERO:
            if (bits != zero) wrong(c, isa, "hidden key or zero row not +0", h, i, j, got);
            break;
          case WANT_ZERO_NAN_ROW:
            if (bits != zero) wrong(c, isa, "hidden key of a NaN row not +0", h, i, j, got);
            break;
          case WANT_NAN:
            if (!isnan(got))
              wrong(c, isa, "row with a NaN or +inf t: visible key not NaN", h, i, j, got);
            break;
          case WANT_ONE:
            if (bits != one)
              wrong(c, isa, "one finite t alone, no sink: not exactly 1", h, i, j, got);
            break;
          default:
            if (isnan(got) || signbit(got) || fabsl((long double)got - c->want[k]) > c->tol[k])
              wrong(c, isa, "probability out of tolerance", h, i, j, got);
            if (c->ydt != POSENC_DTYPE_F16 && got != 0.0f && got < FLT_MIN)
              wrong(c, isa, "subnormal probability stored", h, i, j, got);
        }
      }
  if (!c->split_check) return;
  /* Row by row, on a fresh copy: the same bits. */
  float *buf = malloc((2 * GUARD + base->len) * sizeof *buf);
  if (!buf) abort();
  fill_buffer(base, buf);
  for (size_t h = 0; h < c->n_heads; ++h)
    for (size_t i = 0; i < c->n_q; ++i) {
      if (call_softmax(c, (unsigned char *)(buf + GUARD), 1, 1, h, i) != POSENC_OK)
        violation(base, isa, "a row of an accepted call rejected on its own", y_unit(c, h, i, 0),
                  0.0f, 0.0f);
      for (size_t j = 0; j < c->n_k; ++j) {
        uint32_t a, b;
        const float ga = y_value(c, res->buf, y_unit(c, h, i, j), &a);
        const float gb = y_value(c, buf, y_unit(c, h, i, j), &b);
        if (a != b && !(isnan(ga) && isnan(gb)))
          wrong(c, isa, "a row computed on its own differs", h, i, j, gb);
      }
    }
  free(buf);
}

static void destroy(call *base) {
  softmax_call *c = (softmax_call *)base;
  for (int k = 0; k < AUX_COUNT; ++k) free(c->aux[k].heap);
  free(c->kind);
  free(c->want);
  free(c->tol);
  free(c);
}

static const fuzz_target target = {"fuzz_softmax", decode, prepare, invoke,
                                   check_values,   NULL,   destroy};
FUZZ_TARGET(target)
