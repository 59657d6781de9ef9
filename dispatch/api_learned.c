/* Learned-embedding public entry point: every position checked against the table, then the
 * buffers, then one call through the dispatch table. */
#include "dispatch.h"

static int positions_in_table(const int32_t *positions, int32_t start_pos, size_t n,
                              size_t max_pos) {
  if (!positions)
    return start_pos >= 0 && posenc_run_fits_int32(start_pos, n) &&
           (size_t)start_pos + (n - 1) < max_pos;
  for (size_t t = 0; t < n; ++t)
    if (positions[t] < 0 || (size_t)positions[t] >= max_pos) return 0;
  return 1;
}

posenc_status posenc_learned_add_f32(const float *table, size_t max_pos, size_t table_stride,
                                     size_t dim, size_t n_tokens, const int32_t *positions,
                                     int32_t start_pos, float *x, size_t x_stride) {
  if (n_tokens == 0) return POSENC_OK;
  /* The buffers first: an impossible n_tokens is rejected before positions[] is read. */
  const size_t ts = table_stride ? table_stride : dim, xs = x_stride ? x_stride : dim;
  size_t table_extent, x_extent;
  if (dim > 0 &&
      (!posenc_float_aligned(table) || !posenc_float_aligned(x) || ts < dim || xs < dim ||
       max_pos == 0 || !posenc_grid_extent(max_pos, ts, 1, 0, dim, &table_extent) ||
       !posenc_grid_extent(n_tokens, xs, 1, 0, dim, &x_extent) ||
       !posenc_spans_disjoint(table, table_extent, x, x_extent)))
    return POSENC_ERR_INVALID_ARGUMENT;
  if (!positions_in_table(positions, start_pos, n_tokens, max_pos))
    return POSENC_ERR_INVALID_ARGUMENT;
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
