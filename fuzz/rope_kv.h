/* fuzz_rope_kv's decoded call (kvcall), shared by the target (fuzz_rope_kv.c: the runs, the
 * references and the checks) and its decoder (rope_kv_decode.c: the input format and the
 * errors posenc.h lists for the decoded arguments). Views, plans and the rules of
 * posenc_rope_out come from fuzz_rope_views (rope_views.h). */
#ifndef POSENC_FUZZ_ROPE_KV_H
#define POSENC_FUZZ_ROPE_KV_H

#include "rope_views.h"

/* The families (byte 0 % 4). */
enum { KV_QKNORM, KV_SLOTS, KV_Q8, KV_FP8 };
#define Q8_BLOCK 32
#define Q8_BLOCK_BYTES 34

/* One posenc_qk_norm, or none (present 0: NULL). */
typedef struct norm_arg {
  int present, null_weight;
  float eps;
  unsigned flags;
  float *weight; /* head_dim floats, malloc'd to the float */
} norm_arg;

typedef struct kvcall {
  vcall q; /* base (the arena), plan, head_dim, n_batch, n_tokens, src -> dst, flags,
              positions; SLOTS: dst is the cache of n_cells cells */
  vcall k; /* QKNORM: k's src and dst (its other fields q's) */
  int with_k, k_dst_alone, packed; /* k_src passed; k_dst without k_src; packed QKV rows */
  norm_arg qn, kn;
  /* slots: SLOTS, and Q8 / FP8 with use_slots */
  int use_slots, slots_null, index_null, is64;
  size_t n_cells;
  int64_t *idx; /* n_tokens cells as decoded (huge values only as int64) */
  void *index;  /* the array passed: int32 or int64, malloc'd to the element */
  /* SLOTS in the factor form (posenc_rope_factors_compute, then posenc_rope_apply_slots):
   * the compute's and the apply's flags (q.flags: the plan path's for the same rotation),
   * n_rows rows at row_pos (NULL: row_start + r), token t at row first_row + t */
  int apply, apply_bit, factors_null;
  unsigned cflags, aflags;
  size_t first_row, n_rows;
  int32_t *row_pos;
  int32_t row_start;
  /* Q8 / FP8 destination: byte offset and strides, its rows (n_tokens, or n_cells) */
  int qd_null, qd_null_data;
  size_t qd_off, qd_heads, qd_ts, qd_hs, rows;
  float scale;
  int sure, listed; /* posenc.h's errors: sure, the call must fail; listed, it may */
} kvcall;

/* A new call decoded from r (rope_kv_decode.c): the plan made, the arena's size set. */
kvcall *kv_decode(reader *r);
/* Bytes of one destination head vector of Q8 / FP8. */
size_t kv_vector_bytes(const kvcall *c);
/* The destination row of token t (its cell with slots; -1: skipped). */
int64_t kv_row(const kvcall *c, size_t t);
/* At least one token written: the slots' cells, or every row. */
int kv_some_row(const kvcall *c);

#endif
