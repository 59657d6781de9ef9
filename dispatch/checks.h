/* Internal: checks and helpers shared by the public entry points (dispatch/api_*.c), beyond
 * those declared in dispatch.h. */
#ifndef POSENC_CHECKS_H
#define POSENC_CHECKS_H

#include <stdlib.h>

#include "dispatch.h"

/* The detail of a refused call (posenc_last_error): records "<fn>: <arg>: <rule>", the rule
 * formatted from fmt as by printf, in the calling thread's buffer (truncated to fit), and
 * returns `status`. fn is the public function the user called (its __func__, passed down
 * by every internal helper), arg the argument at fault (a field "q->head_stride" or an
 * element "params->slopes[2]" where one is). Formats only here, on the rejection path; a
 * successful call never touches the buffer. */
posenc_status posenc_fail(posenc_status status, const char *fn, const char *arg, const char *fmt,
                          ...) __attribute__((cold, format(printf, 4, 5)));
/* No element index, for posenc_fail_at. */
#define POSENC_NO_INDEX SIZE_MAX
/* posenc_fail for a field of a struct argument and / or an element of an array one:
 * "<fn>: <arg>[-><field>][[<index>]]: <rule>" (field NULL: none; index POSENC_NO_INDEX:
 * none). */
posenc_status posenc_fail_at(posenc_status status, const char *fn, const char *arg,
                             const char *field, size_t index, const char *fmt, ...)
    __attribute__((cold, format(printf, 6, 7)));
/* The same with POSENC_ERR_INVALID_ARGUMENT, one line per rejection:
 * `return posenc_reject(fn, "head_dim", "%zu is less than ...", ...);`. */
#define posenc_reject(fn, arg, ...) \
  posenc_fail_at(POSENC_ERR_INVALID_ARGUMENT, fn, arg, NULL, POSENC_NO_INDEX, __VA_ARGS__)
#define posenc_reject_field(fn, arg, field, ...) \
  posenc_fail_at(POSENC_ERR_INVALID_ARGUMENT, fn, arg, field, POSENC_NO_INDEX, __VA_ARGS__)
#define posenc_reject_elem(fn, arg, field, index, ...) \
  posenc_fail_at(POSENC_ERR_INVALID_ARGUMENT, fn, arg, field, index, __VA_ARGS__)
/* The rejection of a data pointer (arg, or arg->field when field is not NULL) that is NULL
 * or not aligned to `align` bytes. */
posenc_status posenc_reject_data(const char *fn, const char *arg, const char *field, const void *p,
                                 size_t align) __attribute__((cold));
/* "allocating N bytes failed" for `arg` (the plan being made): POSENC_ERR_OUT_OF_MEMORY. */
posenc_status posenc_out_of_memory(const char *fn, const char *arg, size_t bytes)
    __attribute__((cold));

/* The one choice of a kernel by storage type: the f32, bf16 or f16 expression for elements
 * of type e, for example POSENC_BY_ELEM(e, t->rope_f32, t->rope_bf16, t->rope_f16). Only
 * the chosen expression is evaluated. */
#define POSENC_BY_ELEM(e, f32, bf16, f16) \
  ((e) == POSENC_ELEM_BF16 ? (bf16) : (e) == POSENC_ELEM_F16 ? (f16) : (f32))

/* 1 if d is a known storage type, with *e its element type (inline: every call's check). */
static inline int posenc_dtype_elem(posenc_dtype d, posenc_elem *e) {
  switch (d) {
    case POSENC_DTYPE_F32:
      *e = POSENC_ELEM_F32;
      return 1;
    case POSENC_DTYPE_BF16:
      *e = POSENC_ELEM_BF16;
      return 1;
    case POSENC_DTYPE_F16:
      *e = POSENC_ELEM_F16;
      return 1;
  }
  return 0;
}

/* 1 if the byte ranges [a, a + n_a) and [b, b + n_b) share no byte. */
int posenc_bytes_disjoint(const void *a, size_t n_a, const void *b, size_t n_b);

/* 1 if the positions a call reads are valid for n rows: given as an array, or start_pos +
 * [0, n) within int32 (or n == 0). */
int posenc_positions_valid(const int32_t *positions, int32_t start_pos, size_t n);

/* The checks every call makes are inline, and only their rejection (formatting the detail)
 * is a call: a valid call costs what it did before posenc_last_error existed. */

/* The rejection of a run of n positions from start_pos that passes INT32_MAX. */
posenc_status posenc_reject_run(const char *fn, const char *start_name, const char *count_name,
                                int32_t start_pos, size_t n) __attribute__((cold));

/* posenc_positions_valid, or the rejection of fn's argument start_name (the run's start;
 * count_name: the argument that counts the rows). */
static inline posenc_status posenc_check_run(const char *fn, const char *start_name,
                                             const char *count_name, const int32_t *positions,
                                             int32_t start_pos, size_t n) {
  if (positions || n == 0 || n - 1 <= (size_t)((int64_t)INT32_MAX - start_pos)) return POSENC_OK;
  return posenc_reject_run(fn, start_name, count_name, start_pos, n);
}

/* POSENC_ROPE_POSITIONS_INT64 (posenc.h): int64 positions are narrowed to int32 at the top of
 * each public RoPE entry, as the softmax narrows kpos64 (dispatch/api_softmax.c): into a
 * buffer on the stack up to this many (decode steps), else on the heap (a prefill, whose
 * rotation costs far more than the allocation). Small, so that an int32 call's frame, which
 * holds the buffer unused, stays on the caller's stack pages (cold calls: README). Everything
 * after reads int32 positions, and the flag never reaches the kernels. */
#define POSENC_POSITIONS_STACK 64

/* The int32 copy of a call's int64 positions; posenc_positions_narrow sets it up, and
 * posenc_positions_release frees it after every call of posenc_positions_narrow (whatever it
 * returned). */
typedef struct posenc_positions32 {
  int32_t *heap;
  int32_t stack[POSENC_POSITIONS_STACK];
} posenc_positions32;

/* The int64 case of posenc_positions_narrow (out of line: n_rows x n_batch x n_tokens values
 * at *positions, not NULL). */
posenc_status posenc_positions_narrow64(const char *fn, const char *arg, const int32_t **positions,
                                        size_t n_rows, size_t n_batch, size_t n_tokens,
                                        posenc_positions32 *buf);

/* Without POSENC_ROPE_POSITIONS_INT64 in *flags: POSENC_OK, nothing changed (int32 positions
 * as given). With it: the flag cleared from *flags and, unless *positions is NULL (a run from
 * start_pos, unchanged), its n_rows x n_batch x n_tokens int64 values checked to lie in the
 * int32 range and narrowed into buf, *positions then pointing at the int32 copy. Refusals:
 * fn's argument arg (its first value outside int32, or a count whose values are not
 * addressable), POSENC_ERR_OUT_OF_MEMORY when a copy beyond POSENC_POSITIONS_STACK cannot be
 * allocated. Call it before any other check reads flags or positions. */
static inline posenc_status posenc_positions_narrow(const char *fn, const char *arg,
                                                    const int32_t **positions, size_t n_rows,
                                                    size_t n_batch, size_t n_tokens,
                                                    unsigned *flags, posenc_positions32 *buf) {
  buf->heap = NULL;
  if (!(*flags & POSENC_ROPE_POSITIONS_INT64)) return POSENC_OK;
  *flags &= ~(unsigned)POSENC_ROPE_POSITIONS_INT64;
  if (!*positions) return POSENC_OK;
  return posenc_positions_narrow64(fn, arg, positions, n_rows, n_batch, n_tokens, buf);
}

/* Frees what posenc_positions_narrow allocated (inline: an int32 call makes no call here). */
static inline void posenc_positions_release(posenc_positions32 *buf) {
  if (buf->heap) free(buf->heap);
}

/* The rejection of flags with bits outside `known`. */
posenc_status posenc_reject_flags(const char *fn, const char *arg, unsigned flags, unsigned known)
    __attribute__((cold));

/* POSENC_OK if flags has no bit outside `known`; else the rejection of fn's argument arg. */
static inline posenc_status posenc_check_flags(const char *fn, const char *arg, unsigned flags,
                                               unsigned known) {
  if (!(flags & ~known)) return POSENC_OK;
  return posenc_reject_flags(fn, arg, flags, known);
}

/* 1 if base is a valid frequency base: finite, positive, not 1. */
int posenc_base_valid(double base);

/* posenc_base_valid, or the rejection of fn's argument arg. */
posenc_status posenc_check_base(const char *fn, const char *arg, double base);

/* The largest rotary_dim of a RoPE plan. */
#define POSENC_MAX_ROTARY_DIM ((size_t)1 << 20)

/* 1 if rotary_dim is a valid RoPE plan rotary_dim: even, 2 to POSENC_MAX_ROTARY_DIM. */
int posenc_rotary_dim_valid(size_t rotary_dim);

/* posenc_rotary_dim_valid, or the rejection of fn's argument arg. */
posenc_status posenc_check_rotary_dim(const char *fn, const char *arg, size_t rotary_dim);

/* The rejection of a head_dim below rotary_dim (`whose`: "the plan's rotary_dim", ...). */
posenc_status posenc_reject_head_dim(const char *fn, size_t head_dim, size_t rotary_dim,
                                     const char *whose) __attribute__((cold));

/* POSENC_OK if head_dim >= rotary_dim, else the rejection of fn's head_dim. */
static inline posenc_status posenc_check_head_dim(const char *fn, size_t head_dim,
                                                  size_t rotary_dim, const char *whose) {
  if (head_dim >= rotary_dim) return POSENC_OK;
  return posenc_reject_head_dim(fn, head_dim, rotary_dim, whose);
}

/* posenc_rope_plan_create_from_freqs on behalf of the public function fn: its rejections name
 * fn, and freqs_arg and att_arg as the arguments the frequencies and the attention factor
 * came from ("freqs", or "base" for frequencies made from a base, ...). */
posenc_status posenc_rope_plan_make(const char *fn, const char *freqs_arg, const char *att_arg,
                                    posenc_rope_plan **plan, size_t rotary_dim, const double *freqs,
                                    double attention_factor);

/* Pair i's default frequency base^(-2i/d) of a d-dimensional encoding (d = rotary_dim for
 * RoPE, dim for sinusoids): the one formula of every default and scaled plan. */
double posenc_default_freq(double base, size_t i, size_t d);

/* The n default frequencies posenc_default_freq(base, i, d), i < n, in a malloc'd array;
 * NULL if out of memory. */
double *posenc_default_freqs(double base, size_t n, size_t d);

/* Where the checks of the ALiBi add / bias and of the fused ALiBi softmax differ. */
typedef struct posenc_alibi_rules {
  /* The extent of the scores must span at most PTRDIFF_MAX bytes of elements of this size:
   * the element size for the add and the bias; sizeof(float) for the softmax, bf16 too. */
  size_t extent_elem_size;
  /* 1: the slopes must not lie in the bytes of the scores' extent (the softmax). */
  int slopes_apart;
} posenc_alibi_rules;

/* The argument checks of every ALiBi entry point (dispatch/api_alibi.c) for scores of type
 * e, on behalf of the public function fn (scores_name: its argument `scores` or `out`). On
 * POSENC_OK, *args holds the call for the kernel (flags as given), or is all zero
 * (args->n_heads == 0) when a count is 0 and there is nothing to do. */
posenc_status posenc_alibi_check(const char *fn, const char *scores_name, const float *slopes,
                                 size_t n_heads, size_t n_q, size_t n_k, size_t q_offset,
                                 void *scores, posenc_elem e, size_t head_stride, size_t row_stride,
                                 float scale, unsigned flags, posenc_alibi_rules rules,
                                 alibi_args *args);

/* The flags of posenc_rope_f32 (and the other plain RoPE forms). */
#define POSENC_ROPE_FLAGS \
  (POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE | POSENC_ROPE_F32_ANGLES | POSENC_ROPE_DETERMINISTIC)

/* The flags of posenc_mrope_f32 (and the other M-RoPE forms). */
#define POSENC_MROPE_FLAGS \
  ((unsigned)(POSENC_ROPE_FLAGS | POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_MROPE_GGML))

/* The active kernel table's RoPE kernel for a (source, destination) storage type pair; NULL
 * for an unsupported pair (dispatch/api_rope_views.c). */
rope_fn posenc_rope_pair_kernel(const posenc_kernel_table *t, posenc_elem x, posenc_elem y);

/* 1 if no element of k is an element of q (in-place tensors of one batch, each view's extent
 * in bytes from its data): disjoint spans, or one token stride with each token's q and k
 * heads in separate parts of it (packed QKV); other interleavings give 0 (api_rope.c). */
int posenc_rope_tensors_disjoint(const posenc_rope_tensor *q, size_t q_bytes,
                                 const posenc_rope_tensor *k, size_t k_bytes, size_t n_tokens,
                                 size_t head_dim, size_t elem);

/* POSENC_OK unless plan (fn's argument arg) was made for one of ggml's M-RoPE modes, which
 * the one-position forms refuse. */
posenc_status posenc_check_one_position_plan(const char *fn, const char *arg,
                                             const posenc_rope_plan *plan);

/* The checks every plain rotation (posenc_rope_f32 and its out-of-place, QK-norm and slot
 * forms) makes of its own arguments: flags (POSENC_ROPE_FLAGS), head_dim against the plan's
 * rotary_dim (plan not NULL), and the run of positions. */
static inline posenc_status posenc_check_plain_rope(const char *fn, const posenc_rope_plan *plan,
                                                    size_t head_dim, const int32_t *positions,
                                                    int32_t start_pos, size_t n_tokens,
                                                    unsigned flags) {
  posenc_status st = posenc_check_flags(fn, "flags", flags, POSENC_ROPE_FLAGS);
  if (st == POSENC_OK) st = posenc_check_one_position_plan(fn, "plan", plan);
  if (st == POSENC_OK)
    st = posenc_check_head_dim(fn, head_dim, plan->rotary_dim, "the plan's rotary_dim");
  if (st == POSENC_OK)
    st = posenc_check_run(fn, "start_pos", "n_tokens", positions, start_pos, n_tokens);
  return st;
}

/* POSENC_OK if slots (not NULL; fn's argument "slots") holds an int32/int64 index of
 * n_tokens cells, each negative (skipped) or below n_cells, no cell twice (*written: the
 * non-negative ones); checked before anything is written (api_rope_slots.c). */
posenc_status posenc_check_slots(const char *fn, const posenc_slots *s, size_t n_tokens,
                                 size_t *written);

/* The first checks of the row-writing forms (posenc_rope_out_slots, _q8_0, _fp8):
 * plan, src and dst given, then posenc_check_plain_rope. */
static inline posenc_status posenc_check_rows_entry(const char *fn, const posenc_rope_plan *plan,
                                                    const void *src, const void *dst,
                                                    size_t head_dim, const int32_t *positions,
                                                    int32_t start_pos, size_t n_tokens,
                                                    unsigned flags) {
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  if (!src) return posenc_reject(fn, "src", "is NULL");
  if (!dst) return posenc_reject(fn, "dst", "is NULL");
  return posenc_check_plain_rope(fn, plan, head_dim, positions, start_pos, n_tokens, flags);
}

/* The checks of a slot-mapped destination of posenc_rope_out_slots and
 * posenc_rope_apply_slots (src and dst not NULL, one batch of n_tokens tokens): slots given
 * and valid (posenc_check_slots), both dtypes known and a supported type pair, the same head
 * counts, then posenc_check_src_and_rows for dst's slots->n_cells cells. On POSENC_OK:
 * *written the tokens written (0: nothing to do, the geometry unchecked where a count is 0),
 * and where it is not 0, *kernel the active ISA's kernel for the pair and *dst_bytes the
 * extent of the cells in bytes from dst->data. */
posenc_status posenc_check_slot_dst(const char *fn, size_t head_dim, size_t n_tokens,
                                    const posenc_rope_view *src, const posenc_rope_view *dst,
                                    const posenc_slots *slots, rope_fn *kernel, size_t *written,
                                    size_t *dst_bytes);

/* A destination of n_rows rows of n_heads head vectors of `width` units of `unit` bytes
 * (elements, or 2-byte halves of q8_0 blocks), strides in units. */
typedef struct posenc_dst_rows {
  void *data;
  size_t unit, n_heads, n_rows, token_stride, head_stride, width;
} posenc_dst_rows;

/* The checks of a one-batch source of n_tokens tokens (elements of xs bytes, only read) and
 * a destination of rows written by row index (posenc_rope_out_slots, _q8_0, _fp8):
 * both aligned, their extents within PTRDIFF_MAX bytes, the destination's head vectors
 * pairwise disjoint, the two apart (api_rope_slots.c). dst_bytes (may be NULL): on
 * POSENC_OK, the destination's extent in bytes from d->data. */
posenc_status posenc_check_src_and_rows(const char *fn, const posenc_rope_view *src, size_t xs,
                                        size_t n_tokens, size_t head_dim, const posenc_dst_rows *d,
                                        size_t *dst_bytes);

/* *v: the kernel view of a row-writing form: src's token and head strides, dst's (slots may
 * be NULL: token t to row t), every other field zero. */
void posenc_rows_view(rope_view *v, const posenc_rope_view *src, void *dst, size_t dst_token_stride,
                      size_t dst_head_stride, size_t head_dim, const posenc_slots *slots);

/* The argument block of a plain rotation (posenc_rope_*, posenc_rope_out,
 * posenc_rope_factors_compute) from checked arguments: the plan's pairs and attention
 * factor, one batch, no views yet. (Inline: built in the caller's block, whose zeroing an
 * out-of-line copy made with `rep stos`, ~13 ns of a one-token call.) */
static inline rope_args posenc_rope_args(const posenc_rope_plan *plan, size_t n_tokens,
                                         const int32_t *positions, int32_t start_pos,
                                         unsigned flags) {
  return (rope_args){.plan = plan,
                     .n_pairs = plan->n_pairs,
                     .n_batch = 1,
                     .n_tokens = n_tokens,
                     .positions = positions,
                     .start_pos = start_pos,
                     .flags = flags,
                     .att = plan->attention_factor,
                     .kind = ROPE_PLAIN};
}

/* The one view check of every RoPE entry point, on behalf of the public function fn whose
 * arguments src_name and dst_name are the views: a (src, dst) pair of views of n_batch x
 * n_tokens tokens of head_dim elements (in place: the same data, type and strides; the
 * in-place tensors of posenc_rope_f32 and the rest are such pairs of one batch). Storage
 * types known and the same head counts; element-aligned; every head vector's extent without
 * overflow within PTRDIFF_MAX bytes, dst's head vectors pairwise disjoint; out of place, src
 * and dst disjoint. On POSENC_OK: *x, *y the storage types, *used = 0 when a count is 0 (no
 * geometry checked, nothing to do), else *view filled and *src_bytes, *dst_bytes the
 * views' extents in bytes from their data pointers. */
posenc_status posenc_rope_check_views(const char *fn, const char *src_name, const char *dst_name,
                                      size_t head_dim, size_t n_batch, size_t n_tokens,
                                      const posenc_rope_view *src, const posenc_rope_view *dst,
                                      posenc_elem *x, posenc_elem *y, rope_view *view, int *used,
                                      size_t *src_bytes, size_t *dst_bytes);

/* posenc_rope_check_views' common case without its generality, for the in-place tensors of
 * posenc_rope_f32 and the rest: one view of one batch of n_tokens tokens (n_tokens and
 * n_heads >= 1, elements of `size` bytes) whose heads lie inside its tokens (head_stride >=
 * head_dim, token_stride >= one token's heads), aligned, within PTRDIFF_MAX bytes: 1 with
 * *view and *bytes (its extent) as posenc_rope_check_views gives them; 0 (nothing refused)
 * when posenc_rope_check_views must decide, which accepts every view this accepts. */
int posenc_rope_check_nested(const void *data, size_t n_heads, size_t token_stride,
                             size_t head_stride, size_t n_tokens, size_t head_dim, size_t size,
                             rope_view *view, size_t *bytes);

/* The argument block of an M-RoPE call over n_tokens tokens (one batch) whose arguments
 * are checked: flags without POSENC_ROPE_MROPE_INTERLEAVED and POSENC_ROPE_MROPE_GGML, which
 * `interleaved` and `ggml` carry (sections: 4 with POSENC_ROPE_MROPE_GGML, else 3). */
rope_args posenc_mrope_args(const posenc_rope_plan *plan, const size_t *sections, size_t n_tokens,
                            const int32_t *positions, unsigned flags);

/* The largest ggml M-RoPE section (pairs). */
#define POSENC_MROPE_SECTION_MAX ((size_t)1 << 20)

/* POSENC_OK if sections (3, or 4 with POSENC_ROPE_MROPE_GGML in flags) assign the plan's
 * pairs as posenc_mrope_f32 requires (a plan of a ggml M-RoPE mode: its own sections, with
 * POSENC_ROPE_MROPE_GGML and its mode's interleaving); else the rejection of fn's argument. */
posenc_status posenc_mrope_check_sections(const char *fn, const size_t *sections,
                                          const posenc_rope_plan *plan, unsigned flags);

/* The rows of positions of an M-RoPE call with these flags: 4 (ggml's rule) or 3. */
static inline size_t posenc_mrope_rows(unsigned flags) {
  return (flags & POSENC_ROPE_MROPE_GGML) ? 4 : 3;
}

/* 1 if a grid of rows of `width` elements at sum_d i_d * stride[d] (i_d < count[d], every
 * count >= 1) spans at most PTRDIFF_MAX bytes of elements of elem_size bytes (*extent: the
 * elements from the first to one past the last) and, if `disjoint`, its rows are pairwise
 * disjoint by nesting: the dimensions with a count above 1, sorted by stride, each have a
 * stride of at least the extent of those inside it (the first at least `width`). */
int posenc_grid3_extent_elems(size_t elem_size, const size_t count[3], const size_t stride[3],
                              size_t width, int disjoint, size_t *extent);

/* Why posenc_grid_extent_elems refused a grid (called on that failure only, every count
 * >= 1): -1 when its extent overflows size_t or exceeds PTRDIFF_MAX bytes, else the
 * dimension whose stride is too small for the rows not to overlap (0: a, 1: b), with *need
 * the least stride that would nest. */
int posenc_grid_refusal(size_t elem_size, size_t n_a, size_t stride_a, size_t n_b, size_t stride_b,
                        size_t width, size_t *need);

/* The same for posenc_grid3_extent_elems: -1 for the extent, else the dimension d (0, 1, 2)
 * whose stride[d] is below *need. */
int posenc_grid3_refusal(size_t elem_size, const size_t count[3], const size_t stride[3],
                         size_t width, size_t *need);

#endif /* POSENC_CHECKS_H */
