/* What posenc.h says of a fuzz_rope_views call (rope_views.h): the geometry of a view, the
 * M-RoPE sections and factor rows it accepts, and the errors it lists for each entry point
 * (posenc_rope_out's split in plan_op_errors and view_errors, which fuzz_rope_kv also uses
 * for posenc_rope_qknorm, _out_slots, _out_q8_0 and _out_fp8). */
#include <stdint.h>

#include "rope_views.h"

/* ---------------------------------------------------------------------- view geometry */

static size_t dim_count(const vcall *c, const view *v, int d) {
  return d == 0 ? c->n_batch : d == 1 ? c->n_tokens : v->n_heads;
}
static size_t dim_stride(const view *v, int d) { return d == 0 ? v->bs : d == 1 ? v->ts : v->hs; }

/* Elements from the view's first to one past its last (128-bit: exact for any values);
 * 0 when a count is 0. */
u128 view_extent(const vcall *c, const view *v) {
  u128 e = c->head_dim;
  for (int d = 0; d < 3; ++d) {
    const size_t n = dim_count(c, v, d);
    if (n == 0) return 0;
    e += (u128)(n - 1) * dim_stride(v, d);
  }
  return e;
}

/* The same for sizing the arena: huge counts and strides left out (a call using them must
 * fail; if it does not, ASan sees the access). */
size_t view_bytes(const vcall *c, const view *v) {
  size_t e = c->head_dim;
  for (int d = 0; d < 3; ++d) {
    const size_t n = dim_count(c, v, d), s = dim_stride(v, d);
    if (n == 0) return 0;
    if (n > 1 && n < HUGE_BASE && s < HUGE_BASE) e += (n - 1) * s;
  }
  return e * (dtype_known(v->dtype) ? dsize(v->dtype) : 4);
}

/* posenc.h: the dimensions with a count above 1, sorted by stride, nest (each stride at
 * least the extent of the dimensions inside it, the smallest at least head_dim). */
int view_nested(const vcall *c, const view *v) {
  int idx[3], m = 0;
  for (int d = 0; d < 3; ++d)
    if (dim_count(c, v, d) > 1) {
      int j = m++;
      for (; j > 0 && dim_stride(v, idx[j - 1]) > dim_stride(v, d); --j) idx[j] = idx[j - 1];
      idx[j] = d;
    }
  u128 inner = c->head_dim;
  for (int j = 0; j < m; ++j) {
    const size_t s = dim_stride(v, idx[j]);
    if (s < inner) return 0;
    inner += (u128)(dim_count(c, v, idx[j]) - 1) * s;
  }
  return 1;
}

size_t elem_off(const view *v, size_t b, size_t t, size_t h, size_t d) {
  return v->off + (b * v->bs + t * v->ts + h * v->hs + d) * dsize(v->dtype);
}

/* The in-place case of posenc_rope_out: the same data, type and strides. */
int in_place(const vcall *c) {
  const view *s = &c->src, *d = &c->dst;
  return !s->null_data && !d->null_data && s->off == d->off && s->dtype == d->dtype &&
         s->ts == d->ts && s->hs == d->hs && (c->n_batch <= 1 || s->bs == d->bs);
}

/* ---------------------------------------------------------------------- sections and rows */

int sections_valid(const vcall *c, size_t n, unsigned flags) {
  const size_t *s = c->sections;
  const int interleaved = (flags & POSENC_ROPE_MROPE_INTERLEAVED) != 0;
  if (flags & POSENC_ROPE_MROPE_GGML) return !c->sections_null && ggml_sections_valid(s);
  if (c->sections_null || s[0] > n || s[1] > n || s[2] > n || s[0] + s[1] + s[2] != n) return 0;
  return !interleaved || ((s[1] == 0 || 3 * s[1] - 2 < n) && (s[2] == 0 || 3 * s[2] - 1 < n));
}

/* posenc_rope_factors_bytes as posenc.h describes the rows: cos then sin, unpadded (NEOX:
 * R/2 of each, GPTJ: R); the factor path's flags (every known RoPE flag; only GPTJ changes
 * the size; 0 for unknown bits, and for n_rows 0). */
size_t row_floats_of(size_t rd, unsigned layout) {
  const size_t per = (layout & POSENC_ROPE_GPTJ) ? 2 : 1;
  return 2 * per * (rd / 2);
}
size_t factors_bytes_expected(size_t rd, size_t n_rows, unsigned flags) {
  if (rd < 2 || rd % 2 || rd > ((size_t)1 << 20) || (flags & ~KNOWN_FLAGS)) return 0;
  const u128 b = (u128)n_rows * row_floats_of(rd, flags) * sizeof(float);
  return b > SIZE_MAX ? 0 : (size_t)b;
}

/* ---------------------------------------------------------------------- expectations */

/* Errors posenc.h lists for the views of posenc_rope_out / _mrope_out / posenc_rope_apply.
 * *sure: an error whatever the counts; *listed: an error at least with work to do (some are
 * not said to be checked for a no-op call, which then may succeed). */
void view_errors(const vcall *c, int *sure, int *listed) {
  const view *s = &c->src, *d = &c->dst;
  const int work = c->n_batch && c->n_tokens && s->n_heads;
  int any = 0;
  if (s->null_view || d->null_view) {
    *sure = *listed = 1;
    return;
  }
  any |= !pair_supported(s->dtype, d->dtype) || s->n_heads != d->n_heads;
  if (work && !any) {
    const size_t xs = dsize(s->dtype), ys = dsize(d->dtype);
    const u128 se = view_extent(c, s), de = view_extent(c, d);
    any |= s->null_data || d->null_data || s->off % xs || d->off % ys;
    any |= se * xs > PTRDIFF_MAX || de * ys > PTRDIFF_MAX || !view_nested(c, d);
    if (!in_place(c) && !s->null_data && !d->null_data) /* address ranges intersect */
      any |= (u128)s->off < (u128)d->off + de * ys && (u128)d->off < (u128)s->off + se * xs;
  }
  if (work && any) *sure = 1;
  if (any) *listed = 1;
}

/* posenc_rope_out / _mrope_out: sure and listed errors (as view_errors): plan_op_errors's,
 * then view_errors'. */
void op_errors(const vcall *c, int *sure, int *listed) {
  plan_op_errors(c, c->base.family == FAM_MOUT, sure, listed);
  view_errors(c, sure, listed);
}

/* posenc_rope_out's (mrope: posenc_mrope_out's) errors other than the views'. */
void plan_op_errors(const vcall *c, int mrope, int *sure, int *listed) {
  const size_t R = posenc_rope_plan_rotary_dim(c->plan);
  const unsigned known = mrope ? KNOWN_FLAGS : KNOWN_FLAGS & ~MROPE_FLAGS;
  const int work = c->n_batch && c->n_tokens && c->src.n_heads;
  if (!c->plan || (c->flags & ~known) || c->head_dim < R ||
      (u128)c->n_batch * c->n_tokens > SIZE_MAX)
    *sure = 1;
  if (mrope && !sections_valid(c, R / 2, c->flags)) *sure = 1;
  if (c->bad64) *sure = 1; /* an int64 position outside int32 (always checked) */
  int run = 0;
  if (mrope)
    run = !c->positions && c->n_batch && c->n_tokens;
  else
    run = !c->positions && c->n_tokens &&
          (int64_t)c->start_pos + (int64_t)(c->n_tokens - 1) > (int64_t)INT32_MAX;
  if (run) *listed = 1;
  if (run && work) *sure = 1;
  /* A count that no positions array or view could hold, with nothing to do (no heads): not
   * said to be an error, but posenc_mrope_out refuses 3 rows of positions beyond size_t. */
  if (c->n_batch >= HUGE_BASE || c->n_tokens >= HUGE_BASE) *listed = 1;
  if (*sure) *listed = 1;
}

/* The compute: sure and listed errors. Its flags are its plan form's (INVERSE a no-op). */
void compute_errors(const vcall *c, int *sure, int *listed) {
  const int mrope = c->base.family == FAM_MFACTORS;
  const unsigned known = mrope ? KNOWN_FLAGS : KNOWN_FLAGS & ~MROPE_FLAGS;
  const size_t R = posenc_rope_plan_rotary_dim(c->plan);
  if (!c->plan || c->factors_out_null || (c->cflags & ~known) || c->bad64) *sure = 1;
  if (c->n_rows > 0 && (c->storage_null || c->storage_misalign || c->storage_bytes < c->need))
    *sure = 1;
  if (mrope) {
    if (!sections_valid(c, R / 2, c->cflags)) *sure = 1;
    if (!c->row_pos && c->n_rows > 0) *sure = 1;
  } else if (!c->row_pos && c->n_rows > 0 &&
             (int64_t)c->row_start + (int64_t)(c->n_rows - 1) > (int64_t)INT32_MAX) {
    *sure = 1;
  }
  if (*sure) *listed = 1;
}

/* The apply of factors g: sure and listed errors. */
void apply_errors(const vcall *c, const posenc_rope_factors *g, size_t first_row, int *sure,
                  int *listed) {
  const int work = c->n_batch && c->n_tokens && c->src.n_heads;
  if (c->apply_null) {
    *sure = *listed = 1;
    return;
  }
  const size_t rd = g->rotary_dim;
  /* unknown flags, or GPTJ / DETERMINISTIC other than factors->flags (INVERSE, F32_ANGLES
   * and MROPE_INTERLEAVED taken); factors->flags with other bits than the compute records:
   * not said, but no valid struct has them */
  if (g->flags & ~FACTOR_FLAGS) *listed = 1;
  if ((c->flags & ~KNOWN_FLAGS) || (c->flags & FACTOR_FLAGS) != g->flags || rd < 2 || rd % 2 ||
      rd > ((size_t)1 << 20) || c->head_dim < rd || g->row_floats != row_floats_of(rd, g->flags) ||
      (u128)c->n_batch * c->n_tokens > SIZE_MAX)
    *sure = 1;
  if (work) {
    const u128 last = (u128)first_row + (u128)(c->n_batch - 1) * c->rbs + (c->n_tokens - 1);
    if (!g->data || last >= g->n_rows) *sure = 1;
  }
  if (*sure) *listed = 1;
  view_errors(c, sure, listed);
}
