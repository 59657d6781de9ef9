/* Internal: the RoPE frequency plan and the argument block every RoPE kernel takes.
 * Arguments reaching a kernel have been checked by the public layer (dispatch/api_rope.c). */
#ifndef POSENC_KERNELS_ROPE_H
#define POSENC_KERNELS_ROPE_H

#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "half.h"
#include "posenc.h"

/* Plan arrays are padded with zero frequencies to a multiple of this many pairs, so that
 * kernels may load whole vectors from them without a tail, at any vector width. */
#define POSENC_PLAN_PAD POSENC_MAX_LANES

/* How RoPE's DRAM-sized calls (rope_simd.h) access their rows. 1, as tuned on Zen 5: a call
 * that prefetches (rotate_prefetch_) loads its f32 sources by vf_load_rmw_stream and stores by
 * vf_store, a streamed out-of-place call (ROPE_STREAM_) loads by vf_load_stream without
 * prefetches (on AVX-512 those are four 128-bit loads, two 256-bit stores and two 256-bit
 * loads; other layers' are their whole-vector ones). 0: whole-vector loads and stores, and the
 * streamed calls prefetch their sources as the others do (on every layer). A property of the
 * CPU, set once by the dispatcher's first selection (dispatch.c: posenc_split_streams) before
 * any kernel runs; the results are the same bits either way. */
extern int posenc_rope_split_streams;

/* Kernels work on this many pairs at a time: cos/sin of one chunk live on the stack. A
 * multiple of POSENC_PLAN_PAD, so a chunk's loops may also run to a whole vector. */
#define POSENC_ROPE_CHUNK 256

struct posenc_rope_plan {
  size_t rotary_dim;
  size_t n_pairs;
  double attention_factor;
  const double *freqs; /* w_i, radians per position */
  /* w_i / (2*pi) in turns, as turn_hi + turn_mid + turn_lo. turn_hi and turn_mid carry at
   * most 21 significant bits each, so p * turn_hi and p * turn_mid are exact in double for
   * every |p| <= 2^31; turn_lo holds the rest of the double-double quotient. */
  const double *turn_hi;
  const double *turn_mid;
  const double *turn_lo;
  const double *turn; /* turn_hi + turn_mid + turn_lo rounded to double */
  /* Positions with |p| < small_limit have |p * turn_i| < 2^22 for every pair, where one
   * double product is within 2^-30 turns of the exact one (its rounding and turn's
   * contribute at most 2^-31 each): far inside the 2^-22 budget, so the three-part
   * product is only needed above it. */
  double small_limit;
  const float *inv_freq_f32; /* (float)w_i, for POSENC_ROPE_F32_ANGLES */
  const double *cos_w;       /* cos(w_i), sin(w_i): one position's rotation, for stepping */
  const double *sin_w;       /* from one row's sin/cos to the next (sinusoid_simd.h) */
  /* Plans of one chunk (n_pairs <= POSENC_ROPE_CHUNK): cos(k w_i) and sin(k w_i) for
   * k in [0, POSENC_ROPE_ANCHOR), row k at k * n_pad, in double. The SIMD variants form the
   * cos/sin of position p from those of its anchor p - k (k = p mod POSENC_ROPE_ANCHOR) and
   * row k (rope_driver.h). NULL for larger plans. */
  const double *step_c;
  const double *step_s;
  size_t n_pad; /* n_pairs rounded up to POSENC_PLAN_PAD: the length of each plan array */
  /* Plans of ggml's M-RoPE modes (posenc_rope_plan_create_ggml): the mode (8, 24 or 40; 0
   * for every other plan) and its four sections, which M-RoPE calls must repeat. */
  int ggml_mode;
  size_t ggml_sections[4];
  /* Unique per plan made in this process (from 1): the key of a thread's cached anchor
   * (rope_driver.h), which a plan made later at the same address must not take. */
  uint64_t serial;
};

/* The spacing of anchor positions: multiples of it. A power of two. */
#define POSENC_ROPE_ANCHOR 64

/* One tensor a call rotates: head vectors read from `src` and written to `dst` (the same
 * pointer and strides for an in-place call). Strides in elements of the source / destination
 * storage type, which the kernel entry point (posenc_rope_<type>_<isa>,
 * posenc_rope_<src>_<dst>_<isa>) knows. Element d of head h of token t of batch b is at
 * b * batch_stride + t * token_stride + h * head_stride + d. Out of place, elements
 * [rotary_dim, head_dim) of each head vector are copied (converted) too. */
typedef struct rope_view {
  const void *src;
  void *dst;
  size_t n_heads;
  size_t head_dim;
  size_t src_token_stride, src_head_stride, src_batch_stride;
  size_t dst_token_stride, dst_head_stride, dst_batch_stride;
  /* QK-norm (posenc_rope_qknorm): NULL, or head_dim weights w. Each head vector x is
   * normalised, n_d = (x_d * inv) * w_d (Gemma's w_d + 1 formed by the API) where
   * inv = rope_norm_inv(sum of x_d^2), then rotated, every element [0, head_dim) written
   * (in place too): by rotate() as it loads x (SIMD; outside the deterministic mode x * inv
   * is rotated with w folded into cos/sin, rope_simd.h's neox_blk2n_), or through a float
   * buffer of POSENC_ROPE_NORM_FLOATS (the scalar reference, rope_driver.h); one chunk of
   * pairs only (the API refuses larger plans). */
  const float *norm_w;
  float norm_eps;
  /* Slot-mapped destinations (posenc_rope_out_slots; one batch): NULL, or n_tokens cache
   * cells (int64_t if slots64, else int32_t): token t is written to dst's token slot[t]
   * (dst_token_stride steps over cells), or not at all where slot[t] < 0. */
  const void *slots;
  int slots64;
  /* Quantized destination (f32 source, one chunk of pairs): ROPE_QUANT_NONE, or
   * ROPE_QUANT_Q8_0 (posenc_rope_out_q8_0: ggml q8_0 blocks) or ROPE_QUANT_FP8
   * (posenc_rope_out_fp8: one FP8 E4M3 byte per element, of v / fp8_scale). dst_token_stride
   * and dst_head_stride then count bytes, and each head vector is rotated into a float
   * buffer and quantized from there (rope_driver.h). */
  int quant;
  float fp8_scale;
} rope_view;

enum { ROPE_QUANT_NONE = 0, ROPE_QUANT_Q8_0 = 1, ROPE_QUANT_FP8 = 2 };

/* A bit of the flags rotate() receives, never a public flag (posenc.h's use the low bits):
 * set by the driver of a SIMD variant (rope_drive, can_stream) when the call's out-of-place
 * destinations add up to POSENC_STREAM_MIN_BYTES or more; rotate() then writes the whole,
 * aligned vectors of an out-of-place view (not QK-norm, not deterministic) with
 * non-temporal stores, the same bits, and the variant fences them before returning. */
#define ROPE_STREAM_ (1u << 31)

/* ggml's q8_0 block: an f16 scale d, then 32 int8 q, 34 bytes. */
#define ROPE_Q8_0_BLOCK 32
#define ROPE_Q8_0_BYTES 34

/* The block's scale and its f16 bits, as ggml's quantize_row_q8_0_ref forms them from amax:
 * d = amax / 127 in float, id = 1 / d (0 when d is 0), the unrounded d dividing. */
static inline void rope_q8_0_scale(float amax, float *id, unsigned char *out) {
  const float d = amax / 127.0f;
  *id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t bits = posenc_f32_to_f16(d);
  memcpy(out, &bits, sizeof bits);
}

/* ggml's quantize_row_q8_0_ref on one block of 32 floats, operation for operation: amax as
 * its MAX(amax, |x|) runs (a NaN is kept only where no later element follows it), then
 * q = roundf(x * id). Where that conversion to int8_t is undefined in C (a NaN, infinite or
 * out-of-range q: from NaN or infinite inputs, from an amax in [~2^-142, ~2^-121), whose
 * d is nonzero but below 2^-128 so that id overflows, from an amax that a NaN cut short
 * leaving larger elements before it) q is 0; -128 is a q like any other. */
static inline void rope_q8_0_block_ref(const float *x, unsigned char *out) {
  float amax = 0.0f;
  for (int j = 0; j < ROPE_Q8_0_BLOCK; ++j) {
    const float v = fabsf(x[j]);
    amax = amax > v ? amax : v;
  }
  float id;
  rope_q8_0_scale(amax, &id, out);
  for (int j = 0; j < ROPE_Q8_0_BLOCK; ++j) {
    const float r = roundf(x[j] * id);
    out[2 + j] = (unsigned char)(int8_t)(r >= -128.0f && r <= 127.0f ? (int)r : 0);
  }
}

/* OCP FP8 E4M3 (float8_e4m3fn: bias 7, no infinities, NaN S.1111.111, largest finite 448,
 * subnormals k * 2^-9) of the float x, integer logic only: round to nearest, ties to even,
 * on x's exact value; magnitudes above 448 (infinities too) saturate to +-448 (0x7E, 0xFE);
 * a NaN gives 0x7F (a NaN's sign is not portable: RISC-V's arithmetic makes it +, x86's
 * keeps it; CUDA's conversion also writes 0x7F); -0 gives 0x80. The reference of every variant's
 * converter (posenc_rope_out_fp8 stores rope_fp8_e4m3_ref(v / scale)). */
static inline uint8_t rope_fp8_e4m3_ref(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fu;                    /* NaN: 0x7F whatever its sign (CUDA's) */
  if (a >= 0x43e00000u) return (uint8_t)(sign | 0x7eu); /* >= 448, infinity: saturate */
  if (a >= 0x3c800000u) {                               /* >= 2^-6: normal */
    /* Rebias the exponent (127 -> 7) and round the 23-bit mantissa to 3 bits: a carry
     * into the exponent is the next binade's code, and below 448 none reaches 0x7F. */
    const uint32_t b = a - (120u << 23);
    const uint32_t r = b + 0x7ffffu + ((b >> 20) & 1u);
    return (uint8_t)(sign | (r >> 20));
  }
  if (a <= 0x3a800000u) return sign; /* <= 2^-10: half of 2^-9 or less, to 0 (tie to even) */
  /* 2^-10 < |x| < 2^-6: a multiple of 2^-9 (code 8 is 2^-6, the smallest normal). |x| is
   * m * 2^(e - 23) with the implicit bit in m, e = (a >> 23) - 127 in [-10, -7]; |x| * 2^9
   * is m * 2^(e - 14): m shifted right by 14 - e = 141 - (a >> 23), 21 to 24 bits. */
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const unsigned sh = 141u - (a >> 23);
  const uint32_t q = m >> sh, rest = m & ((1u << sh) - 1u), half = 1u << (sh - 1u);
  return (uint8_t)(sign | (q + (rest > half || (rest == half && (q & 1u)))));
}

/* The scalar reference's float buffer of normalised head vectors (QK-norm): heads are
 * normalised and rotated this many floats at a time; head_dim may not exceed it. */
#define POSENC_ROPE_NORM_FLOATS 4096

/* QK-norm's mean of squares + eps of a head vector, from its sum of squares, rounded once to
 * float; inv = 1 / sqrt of it in float (two roundings), the same operations in every variant
 * (the SIMD ones take the square roots and divisions of several heads in one vector). */
static inline float rope_norm_mean(double sum_sq, size_t head_dim, float eps) {
  return (float)(sum_sq / (double)head_dim + (double)eps);
}

/* What one call computes (rope_drive): a plain rotation (posenc_rope_*), multimodal RoPE
 * (posenc_mrope_*) or a re-rotation (posenc_rope_rerotate_*). */
typedef enum { ROPE_PLAIN, ROPE_MROPE, ROPE_REROTATE } rope_kind;

typedef struct rope_args {
  const struct posenc_rope_plan *plan; /* REROTATE: the plan rotated to; NULL when applying
                                          factors */
  size_t n_pairs;                      /* R/2: the plan's, or the factors' */
  size_t n_batch;                      /* >= 1 (REROTATE: 1) */
  size_t n_tokens;                     /* per batch */
  /* Token t of batch b is token g = b * n_tokens + t of the call. PLAIN, REROTATE (the
   * positions rotated to): positions[g], or start_pos + t when NULL. MROPE: 3 rows of
   * n_batch * n_tokens (temporal, height, width; 4 with ggml's rule: e), never NULL. */
  const int32_t *positions;
  int32_t start_pos;
  size_t n_views; /* 1 (q) or 2 (q, k); views with no heads are dropped */
  rope_view views[2];
  unsigned flags;
  double att; /* cos/sin are multiplied by (float)att: the plan's attention factor, or for
                 REROTATE the ratio of the two plans' */
  rope_kind kind;
  /* MROPE: pairs per section (sum n_pairs; sections[3] 0), interleaved: the Qwen3-VL
   * assignment; ggml: ggml's rule (POSENC_ROPE_MROPE_GGML: four rows, sectors modulo
   * sect_sum); rows_used: bit r set if a pair takes row r. */
  size_t sections[4];
  int interleaved;
  int ggml;
  size_t sect_sum;
  unsigned rows_used;
  /* REROTATE: the plan and positions rotated from (NULL: from_start + t); same_freqs: the
   * two plans' frequencies are identical. */
  const struct posenc_rope_plan *from_plan;
  const int32_t *from_positions;
  int32_t from_start;
  int same_freqs;
  /* Factors (posenc_rope_factors, rows of 2 * factor_half floats: factor_half = per * R/2
   * cos, then as many sin, no padding; per = 2 for GPTJ, else 1):
   *  - apply: `factors` given, no plan: token t of batch b takes row
   *    factor_first_row + b * factor_batch_stride + t;
   *  - compute: `factors_out` given, no views: row g receives token g's cos/sin. */
  const float *factors;
  float *factors_out;
  size_t factor_half;
  size_t factor_first_row, factor_batch_stride;
} rope_args;

/* The floats of one factor row's cos (or sin) block: per * n_pairs, unpadded (the layout
 * depends on no vector width; a kernel reads the end of a block with a partial load). */
static inline size_t rope_factor_half(size_t n_pairs, unsigned flags) {
  const size_t per = (flags & POSENC_ROPE_GPTJ) ? 2 : 1;
  return per * n_pairs;
}

/* The most rows of positions an M-RoPE call has (ggml's t, h, w, e). */
#define ROPE_MROPE_ROWS 4

/* MROPE: the row of positions (0 temporal, 1 height, 2 width, 3 ggml's e) that pair i
 * takes. */
static inline int rope_mrope_row(const rope_args *a, size_t i) {
  const size_t *s = a->sections;
  if (a->ggml) { /* ggml_mrope_cache_init */
    const size_t c = i % a->sect_sum;
    if (a->interleaved) {
      if (c % 3 == 1 && c < 3 * s[1]) return 1;
      if (c % 3 == 2 && c < 3 * s[2]) return 2;
      if (c % 3 == 0 && c < 3 * s[0]) return 0;
      return 3;
    }
    return c < s[0] ? 0 : c < s[0] + s[1] ? 1 : c < s[0] + s[1] + s[2] ? 2 : 3;
  }
  if (a->interleaved) {
    if (i % 3 == 1 && i < 3 * a->sections[1]) return 1;
    if (i % 3 == 2 && i < 3 * a->sections[2]) return 2;
    return 0;
  }
  return i < a->sections[0] ? 0 : i < a->sections[0] + a->sections[1] ? 1 : 2;
}

typedef void (*rope_fn)(const rope_args *args);

/* The position of token g = b * n_tokens + t. */
static inline int32_t rope_position(const rope_args *a, size_t g, size_t t) {
  return a->positions ? a->positions[g] : (int32_t)(a->start_pos + (int64_t)t);
}

static inline int32_t rope_from_position(const rope_args *a, size_t g, size_t t) {
  return a->from_positions ? a->from_positions[g] : (int32_t)(a->from_start + (int64_t)t);
}

/* The angle of pair i at position p reduced to [-pi, pi], in double. The product p * w_i
 * is formed exactly (in turns, from the three parts) and reduced before any rounding that
 * could grow with p. Every variant performs exactly these operations, in this order. */
#define POSENC_TWO_PI 6.283185307179586476925286766559
#define POSENC_ROUND_MAGIC 6755399441055744.0 /* 1.5 * 2^52 */

static inline double rope_round_nearest(double x) {
  /* Round to nearest even for |x| < 2^51, without libm or SSE4.1 (the sources are built
   * without -ffast-math, so the compiler keeps both operations). */
  return (x + POSENC_ROUND_MAGIC) - POSENC_ROUND_MAGIC;
}

static inline double rope_reduced_angle(double p, double hi, double mid, double lo) {
  double a_hi = p * hi;
  double a_mid = p * mid;
  double t = (a_hi - rope_round_nearest(a_hi)) + (a_mid - rope_round_nearest(a_mid));
  t = t + p * lo;
  t = t - rope_round_nearest(t);
  return t * POSENC_TWO_PI;
}

static inline int rope_small_position(const struct posenc_rope_plan *plan, int32_t p) {
  return fabs((double)p) < plan->small_limit;
}

/* The angle for positions where rope_small_position() holds. */
static inline double rope_reduced_angle_small(double p, double turn) {
  double t = p * turn;
  t = t - rope_round_nearest(t);
  return t * POSENC_TWO_PI;
}

/* x reduced by k = round(x / 2pi) turns to about [-pi, pi], for |x| < 2^42 (the float32
 * recipe's angles reach 1024 * 2^31 rad). 2pi is split Cody-Waite style into three parts of
 * at most 14 significant bits and a rest, so each k * part is exact for |k| < 2^39 and, x
 * being a float or already reduced, each subtraction is exact too; the rest costs < 2^-50
 * rad. (One double product k * 2pi would lose up to 2^-21 rad at |x| ~ 2^32.) */
#define POSENC_INV_TWO_PI 0.15915494309189533576888376337251
#define POSENC_TWO_PI_1 0x1.9218p+2
#define POSENC_TWO_PI_2 0x1.ed5p-12
#define POSENC_TWO_PI_3 0x1.10bp-28
#define POSENC_TWO_PI_4 0x1.18469898cc517p-42

static inline double rope_reduce_angle(double x) {
  const double k = rope_round_nearest(x * POSENC_INV_TWO_PI);
  return (((x - k * POSENC_TWO_PI_1) - k * POSENC_TWO_PI_2) - k * POSENC_TWO_PI_3) -
         k * POSENC_TWO_PI_4;
}

/* REROTATE: the angle b - a of two angles (reduced, or float32-recipe angles as doubles),
 * each reduced first so that the difference is formed exactly-ish at any size, then reduced
 * again. Every variant performs exactly these operations. */
static inline double rope_angle_difference(double b, double a) {
  return rope_reduce_angle(rope_reduce_angle(b) - rope_reduce_angle(a));
}

/* Deterministic mode (POSENC_ROPE_DETERMINISTIC, POSENC_SINUSOID_DETERMINISTIC): sin and
 * cos of a reduced angle a (|a| <= pi plus a little) by one fixed sequence of IEEE double
 * operations, the same on every ISA (scalar here, lane by lane in angle_simd.h): q = a / pi
 * rounded to an integer (-1, 0 or 1), x = a - q pi (Cody-Waite, q * POSENC_DET_PI_1 exact),
 * Taylor polynomials of sin and cos to x^13 and x^14 by Horner's rule (first omitted terms
 * < 7e-10 for |x| <= pi/2), times (-1)^q = 1 - 2 q^2. Only multiplications, additions and
 * the round to nearest: no division, no fused multiply-add (the sources are built with
 * -ffp-contract=off), no libm. */
#define POSENC_DET_INV_PI 0x1.45f306dc9c883p-2
#define POSENC_DET_PI_1 0x1.921fb544p+1
#define POSENC_DET_PI_2 0x1.0b4611a626331p-33
#define POSENC_DET_S3 -0x1.5555555555555p-3
#define POSENC_DET_S5 0x1.1111111111111p-7
#define POSENC_DET_S7 -0x1.a01a01a01a01ap-13
#define POSENC_DET_S9 0x1.71de3a556c734p-19
#define POSENC_DET_S11 -0x1.ae64567f544e4p-26
#define POSENC_DET_S13 0x1.6124613a86d09p-33
#define POSENC_DET_C2 -0x1.0000000000000p-1
#define POSENC_DET_C4 0x1.5555555555555p-5
#define POSENC_DET_C6 -0x1.6c16c16c16c17p-10
#define POSENC_DET_C8 0x1.a01a01a01a01ap-16
#define POSENC_DET_C10 -0x1.27e4fb7789f5cp-22
#define POSENC_DET_C12 0x1.1eed8eff8d898p-29
#define POSENC_DET_C14 -0x1.93974a8c07c9dp-37

static inline void posenc_det_sincos(double a, double *sin_a, double *cos_a) {
  const double q = rope_round_nearest(a * POSENC_DET_INV_PI);
  const double x = (a - q * POSENC_DET_PI_1) - q * POSENC_DET_PI_2;
  const double x2 = x * x;
  const double sign = 1.0 - 2.0 * (q * q);
  double ps = POSENC_DET_S11 + x2 * POSENC_DET_S13;
  ps = POSENC_DET_S9 + x2 * ps;
  ps = POSENC_DET_S7 + x2 * ps;
  ps = POSENC_DET_S5 + x2 * ps;
  ps = POSENC_DET_S3 + x2 * ps;
  double pc = POSENC_DET_C12 + x2 * POSENC_DET_C14;
  pc = POSENC_DET_C10 + x2 * pc;
  pc = POSENC_DET_C8 + x2 * pc;
  pc = POSENC_DET_C6 + x2 * pc;
  pc = POSENC_DET_C4 + x2 * pc;
  pc = POSENC_DET_C2 + x2 * pc;
  *sin_a = sign * (x + x * (x2 * ps));
  *cos_a = sign * (1.0 + x2 * pc);
}

#endif /* POSENC_KERNELS_ROPE_H */
