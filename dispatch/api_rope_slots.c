/* Slot-mapped destinations (posenc_rope_out_slots): paged KV caches written token by token
 * at cells the caller chooses. Argument checks (the cells in range and distinct), then one
 * call of the active ISA's RoPE kernel for the type pair, whose view carries the slots
 * (kernels/rope_driver.h picks each token's destination row). */
#include <stdlib.h>
#include <string.h>

#include "checks.h"

/* Slot t as int64. */
static int64_t slot_at(const posenc_slots *s, size_t t) {
  return s->is_int64 ? ((const int64_t *)s->index)[t] : ((const int32_t *)s->index)[t];
}

static int compare_cells(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* posenc_check_slots for any number of tokens (out of line: the one-token path below is
 * what a decode step takes). */
static __attribute__((noinline)) posenc_status check_slots_all(const char *fn,
                                                               const posenc_slots *s,
                                                               size_t n_tokens, size_t *written) {
  if (s->is_int64 != 0 && s->is_int64 != 1)
    return posenc_reject_field(fn, "slots", "is_int64", "%d is neither 0 nor 1", s->is_int64);
  if (!s->index && n_tokens > 0)
    return posenc_reject_field(fn, "slots", "index", "is NULL with n_tokens %zu > 0", n_tokens);
  size_t n = 0;
  for (size_t t = 0; t < n_tokens; ++t) {
    const int64_t c = slot_at(s, t);
    if (c >= 0 && (uint64_t)c >= (uint64_t)s->n_cells)
      return posenc_reject_field(fn, "slots", "index",
                                 "[%zu] = %lld is not below n_cells %zu (the cells of dst)", t,
                                 (long long)c, s->n_cells);
    n += c >= 0;
  }
  *written = n;
  if (n < 2) return POSENC_OK;
  /* Distinct: by pairs for a few tokens, else below. */
  if (n_tokens <= 32) {
    for (size_t t = 0; t < n_tokens; ++t)
      for (size_t u = t + 1; u < n_tokens; ++u)
        if (slot_at(s, t) >= 0 && slot_at(s, t) == slot_at(s, u))
          return posenc_reject_field(fn, "slots", "index",
                                     "[%zu] and [%zu] are both cell %lld: a cell is written "
                                     "once",
                                     t, u, (long long)slot_at(s, t));
    return POSENC_OK;
  }
  /* A bitmap of the cells where it is small beside the tokens (a paged cache a few times the
   * call's tokens: one pass, no sort); else a sorted copy. */
  const size_t words = s->n_cells / 64 + 1;
  if (words <= 32 * n_tokens) {
    uint64_t *seen = calloc(words, sizeof *seen);
    if (!seen) return posenc_out_of_memory(fn, "slots", words * sizeof *seen);
    size_t twice = n_tokens;
    for (size_t t = 0; t < n_tokens && twice == n_tokens; ++t) {
      const int64_t c = slot_at(s, t);
      if (c < 0) continue;
      const uint64_t bit = (uint64_t)1 << (c % 64);
      if (seen[c / 64] & bit) twice = t;
      seen[c / 64] |= bit;
    }
    free(seen);
    if (twice == n_tokens) return POSENC_OK;
    size_t first = 0;
    while (slot_at(s, first) != slot_at(s, twice)) ++first;
    return posenc_reject_field(fn, "slots", "index",
                               "[%zu] and [%zu] are both cell %lld: a cell is written once", first,
                               twice, (long long)slot_at(s, twice));
  }
  int64_t *cells = malloc(n * sizeof *cells);
  if (!cells) return posenc_out_of_memory(fn, "slots", n * sizeof *cells);
  size_t k = 0;
  for (size_t t = 0; t < n_tokens; ++t)
    if (slot_at(s, t) >= 0) cells[k++] = slot_at(s, t);
  qsort(cells, n, sizeof *cells, compare_cells);
  int64_t dup = -1;
  for (size_t i = 1; i < n && dup < 0; ++i)
    if (cells[i] == cells[i - 1]) dup = cells[i];
  free(cells);
  if (dup >= 0)
    return posenc_reject_field(fn, "slots", "index",
                               "holds cell %lld twice: a cell is written once", (long long)dup);
  return POSENC_OK;
}

posenc_status posenc_check_slots(const char *fn, const posenc_slots *s, size_t n_tokens,
                                 size_t *written) {
  /* One token (a decode step's K write into its cache cell): its index alone. */
  if (n_tokens == 1 && (s->is_int64 == 0 || s->is_int64 == 1) && s->index) {
    const int64_t c = slot_at(s, 0);
    if (c < 0 || (uint64_t)c < (uint64_t)s->n_cells) {
      *written = c >= 0;
      return POSENC_OK;
    }
  }
  return check_slots_all(fn, s, n_tokens, written);
}

/* posenc_check_src_and_rows, inlined into posenc_check_slot_dst (a decode step's paged
 * call: one call fewer) */
static inline __attribute__((always_inline)) posenc_status src_and_rows(
    const char *fn, const posenc_rope_view *src, size_t xs, size_t n_tokens, size_t head_dim,
    const posenc_dst_rows *d, size_t *dst_bytes) {
  if (!posenc_elem_aligned(src->data, xs))
    return posenc_reject_data(fn, "src", "data", src->data, xs);
  if (!posenc_elem_aligned(d->data, d->unit))
    return posenc_reject_data(fn, "dst", "data", d->data, d->unit);
  const size_t src_count[3] = {1, n_tokens, src->n_heads};
  const size_t dst_count[3] = {1, d->n_rows, d->n_heads};
  const size_t src_stride[3] = {0, src->token_stride, src->head_stride};
  const size_t dst_stride[3] = {0, d->token_stride, d->head_stride};
  size_t src_extent, dst_extent;
  if (!posenc_grid3_extent_elems(xs, src_count, src_stride, head_dim, 0, &src_extent))
    return posenc_reject(fn, "src",
                         "the extent of %zu x %zu head vectors of %zu elements (token, head "
                         "strides %zu, %zu) overflows or passes PTRDIFF_MAX bytes",
                         n_tokens, src->n_heads, head_dim, src->token_stride, src->head_stride);
  if (!posenc_grid3_extent_elems(d->unit, dst_count, dst_stride, d->width, 1, &dst_extent))
    return posenc_reject(fn, "dst",
                         "its %zu rows x %zu heads of %zu units of %zu bytes (token, head strides "
                         "%zu, %zu units) overlap, overflow or pass PTRDIFF_MAX bytes",
                         d->n_rows, d->n_heads, d->width, d->unit, d->token_stride, d->head_stride);
  if (!posenc_bytes_disjoint(src->data, src_extent * xs, d->data, dst_extent * d->unit))
    return posenc_reject(fn, "dst", "shares addresses with src (the cache is written apart)");
  if (dst_bytes) *dst_bytes = dst_extent * d->unit;
  return POSENC_OK;
}

posenc_status posenc_check_src_and_rows(const char *fn, const posenc_rope_view *src, size_t xs,
                                        size_t n_tokens, size_t head_dim, const posenc_dst_rows *d,
                                        size_t *dst_bytes) {
  return src_and_rows(fn, src, xs, n_tokens, head_dim, d, dst_bytes);
}

/* posenc_rows_view, inlined into posenc_rope_out_slots (as src_and_rows) */
static inline __attribute__((always_inline)) void rows_view(rope_view *v,
                                                            const posenc_rope_view *src, void *dst,
                                                            size_t dst_token_stride,
                                                            size_t dst_head_stride, size_t head_dim,
                                                            const posenc_slots *slots) {
  /* Field by field into the caller's args: a struct built apart and copied in was read back
   * across the halves of its own stores (a store-forwarding stall of ~20 ns per call). */
  memset(v, 0, sizeof *v);
  v->src = src->data;
  v->dst = dst;
  v->n_heads = src->n_heads;
  v->head_dim = head_dim;
  v->src_token_stride = src->token_stride;
  v->src_head_stride = src->head_stride;
  v->dst_token_stride = dst_token_stride;
  v->dst_head_stride = dst_head_stride;
  v->slots = slots ? slots->index : NULL;
  v->slots64 = slots ? slots->is_int64 : 0;
}

void posenc_rows_view(rope_view *v, const posenc_rope_view *src, void *dst, size_t dst_token_stride,
                      size_t dst_head_stride, size_t head_dim, const posenc_slots *slots) {
  rows_view(v, src, dst, dst_token_stride, dst_head_stride, head_dim, slots);
}

posenc_status posenc_check_slot_dst(const char *fn, size_t head_dim, size_t n_tokens,
                                    const posenc_rope_view *src, const posenc_rope_view *dst,
                                    const posenc_slots *slots, rope_fn *kernel_out,
                                    size_t *written_out, size_t *dst_bytes) {
  *written_out = 0;
  if (!slots) return posenc_reject(fn, "slots", "is NULL");
  posenc_elem x, y;
  if (!posenc_dtype_elem(src->dtype, &x))
    return posenc_reject_field(fn, "src", "dtype", "%d is not a posenc_dtype", (int)src->dtype);
  if (!posenc_dtype_elem(dst->dtype, &y))
    return posenc_reject_field(fn, "dst", "dtype", "%d is not a posenc_dtype", (int)dst->dtype);
  const rope_fn kernel = posenc_rope_pair_kernel(posenc_active_table(), x, y);
  if (!kernel)
    return posenc_reject_field(fn, "dst", "dtype",
                               "%d from src->dtype %d is not a supported type pair (f32, bf16 "
                               "and f16 to their own type; f32 to bf16 or f16)",
                               (int)dst->dtype, (int)src->dtype);
  if (src->n_heads != dst->n_heads)
    return posenc_reject_field(fn, "dst", "n_heads", "%zu differs from src->n_heads %zu",
                               dst->n_heads, src->n_heads);
  size_t written = 0;
  posenc_status st = posenc_check_slots(fn, slots, n_tokens, &written);
  if (st != POSENC_OK) return st;
  if (n_tokens == 0 || src->n_heads == 0 || slots->n_cells == 0) return POSENC_OK;
  /* The source: n_tokens tokens, only read; the cache: n_cells cells, pairwise disjoint. */
  const size_t ys = posenc_elem_size(y);
  const posenc_dst_rows rows = {
      dst->data, ys, dst->n_heads, slots->n_cells, dst->token_stride, dst->head_stride, head_dim};
  st = src_and_rows(fn, src, posenc_elem_size(x), n_tokens, head_dim, &rows, dst_bytes);
  if (st != POSENC_OK) return st;
  *kernel_out = kernel;
  *written_out = written;
  return POSENC_OK;
}

static posenc_status rope_out_slots_int32(const char *fn, const posenc_rope_plan *plan,
                                          size_t head_dim, size_t n_tokens,
                                          const int32_t *positions, int32_t start_pos,
                                          const posenc_rope_view *src, const posenc_rope_view *dst,
                                          const posenc_slots *slots, unsigned flags) {
  posenc_status st =
      posenc_check_rows_entry(fn, plan, src, dst, head_dim, positions, start_pos, n_tokens, flags);
  if (st != POSENC_OK) return st;
  rope_fn kernel;
  size_t written, dst_bytes;
  st =
      posenc_check_slot_dst(fn, head_dim, n_tokens, src, dst, slots, &kernel, &written, &dst_bytes);
  if (st != POSENC_OK || written == 0) return st;
  rope_args args = posenc_rope_args(plan, n_tokens, positions, start_pos, flags);
  rows_view(&args.views[0], src, dst->data, dst->token_stride, dst->head_stride, head_dim, slots);
  args.n_views = 1;
  kernel(&args);
  return POSENC_OK;
}

posenc_status posenc_rope_out_slots(const posenc_rope_plan *plan, size_t head_dim, size_t n_tokens,
                                    const int32_t *positions, int32_t start_pos,
                                    const posenc_rope_view *src, const posenc_rope_view *dst,
                                    const posenc_slots *slots, unsigned flags) {
  posenc_positions32 buf;
  posenc_status st =
      posenc_positions_narrow(__func__, "positions", &positions, 1, 1, n_tokens, &flags, &buf);
  if (st == POSENC_OK)
    st = rope_out_slots_int32(__func__, plan, head_dim, n_tokens, positions, start_pos, src, dst,
                              slots, flags);
  posenc_positions_release(&buf);
  return st;
}
