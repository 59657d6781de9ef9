/* Shared parts of the RoPE fuzz targets (fuzz_rope, fuzz_mrope, fuzz_rerotate; fuzz_rope_views
 * uses the plans and rope_element_within): the views, plans and flags they decode, the pairs
 * they rotate, and the differential on those pairs: every rotated element within
 * POSENC_ROPE_SIMD_TOLERANCE * att * (|u| + |v|) of scalar's (bf16 / f16: plus one ulp of the
 * storage type, on the 16-bit elements widened). new_rope_flags draws POSENC_ROPE_MROPE_GGML
 * for M-RoPE (fuzz_mrope's four sections; decode_ggml_sections and ggml_e_row, shared with
 * fuzz_rope_views); fuzz_rope and fuzz_rope_views draw POSENC_ROPE_POSITIONS_INT64
 * (ROPE_FLAG_INT64) with int64 copies of their positions (positions64_of), the other
 * harnesses pass int32 positions. */
#ifndef POSENC_FUZZ_ROPE_COMMON_H
#define POSENC_FUZZ_ROPE_COMMON_H

#include "common.h"

/* Bit 6 of the RoPE flags, posenc.h's POSENC_ROPE_POSITIONS_INT64 (the positions' type):
 * left out of the drawn unknown bits (a call passes int64 positions with it, or no array). */
#define ROPE_FLAG_INT64 64u

/* The most pairs of a plan decode_rope_plan_new creates. */
#define MAX_NEW_PAIRS 320

/* A RoPE call on f32 elements, or on bf16 / f16 ones two to an arena float (base.halves;
 * offsets, strides and spans in elements). */
typedef struct rope_call {
  call base;
  posenc_rope_plan *plan; /* fuzz_rerotate: the plan rotated from */
  size_t head_dim, n_tokens, q_off, q_heads, q_ts, q_hs, k_off, k_heads, k_ts, k_hs;
  int with_k;
  unsigned flags;
  int32_t *positions; /* fuzz_mrope: 3 rows of n_tokens; fuzz_rerotate: rotated to */
  int32_t start_pos;
  int64_t *pos64; /* fuzz_rope, POSENC_ROPE_POSITIONS_INT64: positions as passed, or NULL */
  int bad64;      /* one of them outside int32: the call must fail */
  double att;     /* the tolerance's factor: the attention factor (fuzz_rerotate: r) */
} rope_call;

posenc_rope_plan *decode_rope_plan_new(reader *r, size_t *rotary);
void decode_rope_views(reader *r, rope_call *c, size_t rd);
unsigned new_rope_flags(reader *r, int mrope);

/* ggml's M-RoPE (POSENC_ROPE_MROPE_GGML; fuzz_mrope, and fuzz_rope_views' M-RoPE families):
 * its four sections valid (posenc.h: each at most 2^20, the first three not all 0; any sum);
 * four sections for n pairs (Qwen2-VL's {16, 24, 24, 0} and Qwen3-VL's {24, 20, 20, 0}
 * proportions, vision's {n/2, n/2, 0, 0}, arbitrary ones (any sum), 2^20; errors: the first
 * three all 0, one past 2^20, NULL: *sections_null); and the fourth position row (e) of n
 * tokens after the t, h, w rows at p: 0 (llama.cpp's text), t, or specials among zeros. */
int ggml_sections_valid(const size_t *s);
void decode_ggml_sections(reader *r, size_t s[4], int *sections_null, size_t n);
void ggml_e_row(reader *r, int32_t *p, size_t n);

/* POSENC_ROPE_POSITIONS_INT64 (fuzz_rope, fuzz_rope_views): an int64 copy of n positions
 * (heap, to the element), with one value outside int32 when the byte read says so (*bad):
 * INT32_MAX + 1.., INT32_MIN - 1.., INT64_MIN or INT64_MAX. */
int64_t *positions64_of(reader *r, const int32_t *p, size_t n, int *bad);

/* Element off of the call's tensor type in the arena. */
void *rope_data(const rope_call *c, float *arena, size_t off);

/* posenc_rope_f32 / _bf16 / _f16 on the call's views with the given positions and flags. */
posenc_status invoke_plain_rope(const rope_call *c, float *arena, const int32_t *positions,
                                int32_t start_pos, unsigned flags);

/* Calls fn(ctx, token, head, pair, u, w) for every rotated pair (u, w: element indices, as
 * the views count them) of the q and k views. */
typedef void (*rope_pair_fn)(void *ctx, size_t t, size_t h, size_t i, size_t u, size_t w);
void each_rope_pair(const rope_call *c, rope_pair_fn fn, void *ctx);

/* The call's elements of a GUARD-framed run buffer (first = GUARD) or of its input
 * (first = 0) as floats, indexed as the views count them (16-bit: widened); to be freed. */
float *rope_elements(const rope_call *c, const float *buf, size_t first);

/* 1 if `got`, a SIMD variant's rotated element of the pair (in_u, in_w) (inputs as floats),
 * is within POSENC_ROPE_SIMD_TOLERANCE * att * (|u| + |v|) + 4 FLT_TRUE_MIN of `want`,
 * scalar's, plus one ulp of the storage type of `storage` (halves, bf16; 16-bit results
 * widened) at their magnitude; with the exceptions for intermediate overflow and infinite
 * inputs (rope_common.c). The differential of check_rope_values, per element. */
int rope_element_within(const call *storage, double att, float in_u, float in_w, float got,
                        float want);

/* fuzz_target hooks. */
void mark_rope_outputs(call *c);
void check_rope_values(const call *c, const char *isa, const run_result *res,
                       const run_result *scalar);
void free_rope_call(rope_call *c);

#endif
