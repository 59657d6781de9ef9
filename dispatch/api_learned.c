/* Learned-embedding public entry point: every position checked against the table, then the
 * buffers, then one call through the dispatch table. */
#include "checks.h"

/* POSENC_OK if every position is a row of the table; else the rejection (of fn's
 * positions[t], or of start_pos for a run). */
static posenc_status check_positions(const char *fn, const int32_t *positions, int32_t start_pos,
                                     size_t n, size_t max_pos) {
  if (!positions) {
    if (start_pos < 0) return posenc_reject(fn, "start_pos", "%ld is negative", (long)start_pos);
    const posenc_status st = posenc_check_run(fn, "start_pos", "n_tokens", NULL, start_pos, n);
    if (st != POSENC_OK) return st;
    if ((size_t)start_pos + (n - 1) >= max_pos)
      return posenc_reject(fn, "start_pos",
                           "%ld + n_tokens %zu - 1 is not a row of the table (max_pos %zu)",
                           (long)start_pos, n, max_pos);
    return POSENC_OK;
  }
  for (size_t t = 0; t < n; ++t)
    if (positions[t] < 0 || (size_t)positions[t] >= max_pos)
      return posenc_reject_elem(fn, "positions", NULL, t, "%ld is outside [0, max_pos %zu)",
                                (long)positions[t], max_pos);
  return POSENC_OK;
}

posenc_status posenc_learned_add_f32(const float *table, size_t max_pos, size_t table_stride,
                                     size_t dim, size_t n_tokens, const int32_t *positions,
                                     int32_t start_pos, float *x, size_t x_stride) {
  const char *fn = __func__;
  if (n_tokens == 0) return POSENC_OK;
  /* The buffers first: an impossible n_tokens is rejected before positions[] is read. */
  const size_t ts = table_stride ? table_stride : dim, xs = x_stride ? x_stride : dim;
  size_t table_extent, x_extent;
  if (dim > 0) {
    if (!posenc_float_aligned(table))
      return posenc_reject_data(fn, "table", NULL, table, sizeof(float));
    if (!posenc_float_aligned(x)) return posenc_reject_data(fn, "x", NULL, x, sizeof(float));
    if (ts < dim)
      return posenc_reject(fn, "table_stride", "%zu is less than dim %zu", table_stride, dim);
    if (xs < dim) return posenc_reject(fn, "x_stride", "%zu is less than dim %zu", x_stride, dim);
    if (max_pos == 0) return posenc_reject(fn, "max_pos", "is 0 with n_tokens %zu > 0", n_tokens);
    if (!posenc_grid_extent(max_pos, ts, 1, 0, dim, &table_extent))
      return posenc_reject(fn, "table",
                           "max_pos %zu rows of stride %zu (dim %zu) overflow size_t or pass "
                           "PTRDIFF_MAX bytes",
                           max_pos, ts, dim);
    if (!posenc_grid_extent(n_tokens, xs, 1, 0, dim, &x_extent))
      return posenc_reject(fn, "x",
                           "n_tokens %zu rows of stride %zu (dim %zu) overflow size_t or pass "
                           "PTRDIFF_MAX bytes",
                           n_tokens, xs, dim);
    if (!posenc_spans_disjoint(table, table_extent, x, x_extent))
      return posenc_reject(fn, "x", "intersects the table's address range");
  }
  const posenc_status st = check_positions(fn, positions, start_pos, n_tokens, max_pos);
  if (st != POSENC_OK) return st;
  if (dim == 0) return POSENC_OK;
  const learned_f32_args args = {.table = table,
                                 .table_stride = ts,
                                 .dim = dim,
                                 .n_tokens = n_tokens,
                                 .positions = positions,
                                 .start_pos = start_pos,
                                 .x = x,
                                 .x_stride = xs};
  posenc_active_table()->learned_add_f32(&args);
  return POSENC_OK;
}
