/* Argument checks and helpers shared by the public entry points. */
#include "checks.h"

#include <math.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

int posenc_grid_extent(size_t n_a, size_t stride_a, size_t n_b, size_t stride_b, size_t width,
                       size_t *extent) {
  return posenc_grid_extent_elems(sizeof(float), n_a, stride_a, n_b, stride_b, width, extent);
}

int posenc_grid_extent_elems(size_t elem_size, size_t n_a, size_t stride_a, size_t n_b,
                             size_t stride_b, size_t width, size_t *extent) {
  size_t span_a, span_b, ext;
  if (__builtin_mul_overflow(n_a - 1, stride_a, &span_a) ||
      __builtin_mul_overflow(n_b - 1, stride_b, &span_b) ||
      __builtin_add_overflow(span_a, span_b, &ext) || __builtin_add_overflow(ext, width, &ext) ||
      ext > PTRDIFF_MAX / elem_size)
    return 0;
  *extent = ext;
  if (n_a == 1 && n_b == 1) return 1;
  if (n_a == 1) return stride_b >= width;
  if (n_b == 1) return stride_a >= width;
  const int b_inner = stride_b <= stride_a;
  const size_t s_in = b_inner ? stride_b : stride_a, s_out = b_inner ? stride_a : stride_b;
  const size_t inner_span = b_inner ? span_b : span_a; /* (count - 1) * s_in */
  return s_in >= width && s_out >= inner_span + width;
}

int posenc_run_fits_int32(int32_t start_pos, size_t n) {
  return n - 1 <= (size_t)((int64_t)INT32_MAX - start_pos);
}

int posenc_positions_valid(const int32_t *positions, int32_t start_pos, size_t n) {
  return positions || n == 0 || posenc_run_fits_int32(start_pos, n);
}

posenc_status posenc_reject_run(const char *fn, const char *start_name, const char *count_name,
                                int32_t start_pos, size_t n) {
  return posenc_reject(fn, start_name, "%ld + %s %zu - 1 passes INT32_MAX (no positions given)",
                       (long)start_pos, count_name, n);
}

posenc_status posenc_positions_narrow64(const char *fn, const char *arg, const int32_t **positions,
                                        size_t n_rows, size_t n_batch, size_t n_tokens,
                                        posenc_positions32 *buf) {
  size_t n;
  if (__builtin_mul_overflow(n_rows, n_batch, &n) || __builtin_mul_overflow(n, n_tokens, &n) ||
      n > SIZE_MAX / sizeof(int64_t))
    return posenc_reject(fn, arg,
                         "%zu x %zu x %zu int64 positions (POSENC_ROPE_POSITIONS_INT64) are not "
                         "addressable",
                         n_rows, n_batch, n_tokens);
  const int64_t *v64 = (const int64_t *)(const void *)*positions;
  for (size_t i = 0; i < n; ++i)
    if (v64[i] < INT32_MIN || v64[i] > INT32_MAX)
      return posenc_reject_elem(fn, arg, NULL, i,
                                "%lld is outside the int32 range of positions "
                                "(POSENC_ROPE_POSITIONS_INT64: int64 positions are narrowed to "
                                "int32, not wrapped)",
                                (long long)v64[i]);
  int32_t *v32 = buf->stack;
  if (n > POSENC_POSITIONS_STACK) {
    buf->heap = malloc(n * sizeof *buf->heap);
    if (!buf->heap) return posenc_out_of_memory(fn, arg, n * sizeof *buf->heap);
    v32 = buf->heap;
  }
  for (size_t i = 0; i < n; ++i) v32[i] = (int32_t)v64[i];
  *positions = v32;
  return POSENC_OK;
}

posenc_status posenc_reject_flags(const char *fn, const char *arg, unsigned flags, unsigned known) {
  return posenc_reject(fn, arg, "0x%x has unknown bits 0x%x (known here: 0x%x)", flags,
                       flags & ~known, known);
}

int posenc_bytes_disjoint(const void *a, size_t n_a, const void *b, size_t n_b) {
  const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
  return pb >= pa + n_a || pa >= pb + n_b;
}

int posenc_spans_disjoint(const float *a, size_t n_a, const float *b, size_t n_b) {
  return posenc_bytes_disjoint(a, n_a * sizeof(float), b, n_b * sizeof(float));
}

int posenc_base_valid(double base) { return isfinite(base) && base > 0 && base != 1; }

posenc_status posenc_check_base(const char *fn, const char *arg, double base) {
  if (posenc_base_valid(base)) return POSENC_OK;
  return posenc_reject(fn, arg, "%g is not a valid base (finite, > 0 and != 1)", base);
}

int posenc_rotary_dim_valid(size_t rotary_dim) {
  return rotary_dim >= 2 && rotary_dim % 2 == 0 && rotary_dim <= POSENC_MAX_ROTARY_DIM;
}

posenc_status posenc_check_rotary_dim(const char *fn, const char *arg, size_t rotary_dim) {
  if (posenc_rotary_dim_valid(rotary_dim)) return POSENC_OK;
  return posenc_reject(fn, arg, "%zu is not an even number from 2 to %zu", rotary_dim,
                       (size_t)POSENC_MAX_ROTARY_DIM);
}

posenc_status posenc_reject_head_dim(const char *fn, size_t head_dim, size_t rotary_dim,
                                     const char *whose) {
  return posenc_reject(fn, "head_dim", "%zu is less than %s %zu", head_dim, whose, rotary_dim);
}

double posenc_default_freq(double base, size_t i, size_t d) {
  return 1.0 / pow(base, (double)(2 * i) / (double)d);
}

double *posenc_default_freqs(double base, size_t n, size_t d) {
  double *w = malloc(n * sizeof *w);
  if (w)
    for (size_t i = 0; i < n; ++i) w[i] = posenc_default_freq(base, i, d);
  return w;
}

/* ggml's rule (POSENC_ROPE_MROPE_GGML): four sections, each at most 2^20, the first three
 * not all 0; a plan of a ggml M-RoPE mode takes exactly its own. */
static posenc_status check_ggml_sections(const char *fn, const size_t *s,
                                         const posenc_rope_plan *plan, int interleaved) {
  for (int r = 0; r < 4; ++r)
    if (s[r] > POSENC_MROPE_SECTION_MAX)
      return posenc_reject(fn, "sections", "[%d] = %zu is above 2^20", r, s[r]);
  if (s[0] + s[1] + s[2] == 0)
    return posenc_reject(fn, "sections",
                         "{%zu, %zu, %zu, %zu}: the first three are 0 (ggml asserts one is not)",
                         s[0], s[1], s[2], s[3]);
  if (!plan->ggml_mode) return POSENC_OK;
  const size_t *own = plan->ggml_sections;
  if (s[0] != own[0] || s[1] != own[1] || s[2] != own[2] || s[3] != own[3])
    return posenc_reject(fn, "sections",
                         "{%zu, %zu, %zu, %zu} are not the {%zu, %zu, %zu, %zu} the plan was made "
                         "with (ggml mode %d)",
                         s[0], s[1], s[2], s[3], own[0], own[1], own[2], own[3], plan->ggml_mode);
  if (interleaved != (plan->ggml_mode == 40))
    return posenc_reject(fn, "flags",
                         "%s POSENC_ROPE_MROPE_INTERLEAVED with a plan of ggml mode %d (IMROPE, "
                         "40, is the interleaved one)",
                         interleaved ? "has" : "lacks", plan->ggml_mode);
  return POSENC_OK;
}

posenc_status posenc_mrope_check_sections(const char *fn, const size_t *sections,
                                          const posenc_rope_plan *plan, unsigned flags) {
  const int interleaved = (flags & POSENC_ROPE_MROPE_INTERLEAVED) != 0;
  const size_t n = plan->n_pairs;
  if (!sections) return posenc_reject(fn, "sections", "is NULL");
  if (flags & POSENC_ROPE_MROPE_GGML) return check_ggml_sections(fn, sections, plan, interleaved);
  if (plan->ggml_mode)
    return posenc_reject(fn, "flags",
                         "lack POSENC_ROPE_MROPE_GGML: the plan was made for ggml's mode %d, "
                         "which rotates with four sections and four position rows",
                         plan->ggml_mode);
  if (sections[0] > n || sections[1] > n || sections[2] > n ||
      sections[0] + sections[1] + sections[2] != n)
    return posenc_reject(fn, "sections", "{%zu, %zu, %zu} do not sum to the plan's R/2 = %zu",
                         sections[0], sections[1], sections[2], n);
  if (!interleaved) return POSENC_OK;
  if (sections[1] != 0 && !(3 * sections[1] - 2 < n))
    return posenc_reject(fn, "sections",
                         "{%zu, %zu, %zu} do not fit the interleaved layout: 3 * %zu - 2 is not "
                         "below R/2 = %zu",
                         sections[0], sections[1], sections[2], sections[1], n);
  if (sections[2] != 0 && !(3 * sections[2] - 1 < n))
    return posenc_reject(fn, "sections",
                         "{%zu, %zu, %zu} do not fit the interleaved layout: 3 * %zu - 1 is not "
                         "below R/2 = %zu",
                         sections[0], sections[1], sections[2], sections[2], n);
  return POSENC_OK;
}

posenc_status posenc_check_one_position_plan(const char *fn, const char *arg,
                                             const posenc_rope_plan *plan) {
  if (!plan->ggml_mode) return POSENC_OK;
  return posenc_reject(fn, arg,
                       "was made for ggml's M-RoPE mode %d, which rotates with four position "
                       "rows: use posenc_mrope_* with POSENC_ROPE_MROPE_GGML",
                       plan->ggml_mode);
}

posenc_status posenc_reject_data(const char *fn, const char *arg, const char *field, const void *p,
                                 size_t align) {
  if (!p)
    return field ? posenc_reject_field(fn, arg, field, "is NULL with work to do")
                 : posenc_reject(fn, arg, "is NULL with work to do");
  return field ? posenc_reject_field(fn, arg, field, "%p is not aligned to %zu bytes", p, align)
               : posenc_reject(fn, arg, "%p is not aligned to %zu bytes", p, align);
}

/* The dimensions (count > 1) of a 3-D grid sorted by stride, for the nesting check. */
int posenc_grid3_extent_elems(size_t elem_size, const size_t count[3], const size_t stride[3],
                              size_t width, int disjoint, size_t *extent) {
  /* The usual nesting first (heads inside tokens inside batches), without the sort: the
   * extent is the same sum in any order, and if each stride of a dimension in that order
   * (count > 1) steps over the extent of the ones inside it, the strides are sorted and the
   * general check below would find the same. */
  size_t ext = width;
  int nested = 1;
  for (int d = 2; d >= 0; --d) {
    size_t span;
    if (count[d] == 0) return 0;
    if (count[d] == 1) continue;
    if (stride[d] < ext) nested = 0;
    if (__builtin_mul_overflow(count[d] - 1, stride[d], &span) ||
        __builtin_add_overflow(ext, span, &ext))
      return 0;
  }
  if (ext > PTRDIFF_MAX / elem_size) return 0;
  *extent = ext;
  if (!disjoint || nested) return 1;
  size_t n[3], st[3], m = 0;
  for (int d = 0; d < 3; ++d) {
    if (count[d] > 1) { /* insertion by stride */
      size_t j = m++;
      for (; j > 0 && st[j - 1] > stride[d]; --j) {
        st[j] = st[j - 1];
        n[j] = n[j - 1];
      }
      st[j] = stride[d];
      n[j] = count[d];
    }
  }
  size_t inner = width; /* extent of the dimensions inside the current one */
  for (size_t j = 0; j < m; ++j) {
    if (st[j] < inner) return 0;
    inner += (n[j] - 1) * st[j]; /* <= ext: no overflow */
  }
  return 1;
}

int posenc_grid_refusal(size_t elem_size, size_t n_a, size_t stride_a, size_t n_b, size_t stride_b,
                        size_t width, size_t *need) {
  size_t span_a, span_b, ext;
  if (__builtin_mul_overflow(n_a - 1, stride_a, &span_a) ||
      __builtin_mul_overflow(n_b - 1, stride_b, &span_b) ||
      __builtin_add_overflow(span_a, span_b, &ext) || __builtin_add_overflow(ext, width, &ext) ||
      ext > PTRDIFF_MAX / elem_size)
    return -1;
  *need = width;
  if (n_a == 1) return 1;
  if (n_b == 1) return 0;
  const int b_inner = stride_b <= stride_a;
  if ((b_inner ? stride_b : stride_a) < width) return b_inner ? 1 : 0;
  *need = (b_inner ? span_b : span_a) + width;
  return b_inner ? 0 : 1;
}

int posenc_grid3_refusal(size_t elem_size, const size_t count[3], const size_t stride[3],
                         size_t width, size_t *need) {
  size_t ext = width;
  int order[3], m = 0;
  for (int d = 0; d < 3; ++d) {
    size_t span;
    if (count[d] == 0 || __builtin_mul_overflow(count[d] - 1, stride[d], &span) ||
        __builtin_add_overflow(ext, span, &ext))
      return -1;
    if (count[d] > 1) { /* insertion by stride, as posenc_grid3_extent_elems sorts */
      int j = m++;
      for (; j > 0 && stride[order[j - 1]] > stride[d]; --j) order[j] = order[j - 1];
      order[j] = d;
    }
  }
  if (ext > PTRDIFF_MAX / elem_size) return -1;
  size_t inner = width;
  for (int j = 0; j < m; ++j) {
    const int d = order[j];
    if (stride[d] < inner) {
      *need = inner;
      return d;
    }
    inner += (count[d] - 1) * stride[d];
  }
  return -1;
}

/* *v: a view of n_heads head vectors of head_dim elements, strides (batch, token, head) of
 * the source and the destination in elements. Field by field into the caller's args: a view
 * built apart and copied in was assembled by GCC in 16-byte pairs of two 8-byte stack stores
 * each, read back across them (store-to-load forwarding fails: Zen 5, perf put a one-token
 * rope_f32_neox call's 164 ns at 22% in posenc_rope_check_nested). */
static void rope_view_set(rope_view *v, const void *src, void *dst, size_t n_heads, size_t head_dim,
                          size_t src_batch, size_t src_token, size_t src_head, size_t dst_batch,
                          size_t dst_token, size_t dst_head) {
  memset(v, 0, sizeof *v);
  v->src = src;
  v->dst = dst;
  v->n_heads = n_heads;
  v->head_dim = head_dim;
  v->src_batch_stride = src_batch;
  v->src_token_stride = src_token;
  v->src_head_stride = src_head;
  v->dst_batch_stride = dst_batch;
  v->dst_token_stride = dst_token;
  v->dst_head_stride = dst_head;
}

/* The rejection of a view (fn's argument `name`) whose head vectors' grid
 * posenc_grid3_extent_elems refused. */
static posenc_status view_refused(const char *fn, const char *name, size_t elem_size,
                                  const size_t count[3], const size_t stride[3], size_t head_dim) {
  static const char *const stride_name[3] = {"batch_stride", "token_stride", "head_stride"};
  size_t need = 0;
  const int d = posenc_grid3_refusal(elem_size, count, stride, head_dim, &need);
  if (d < 0)
    return posenc_reject(fn, name,
                         "the extent of %zu x %zu x %zu head vectors of %zu elements (batch, "
                         "token, head strides %zu, %zu, %zu) overflows or passes PTRDIFF_MAX bytes",
                         count[0], count[1], count[2], head_dim, stride[0], stride[1], stride[2]);
  return posenc_reject_field(fn, name, stride_name[d],
                             "%zu is below %zu, the extent of what it steps over (head_dim %zu): "
                             "head vectors overlap",
                             stride[d], need, head_dim);
}

posenc_status posenc_rope_check_views(const char *fn, const char *src_name, const char *dst_name,
                                      size_t head_dim, size_t n_batch, size_t n_tokens,
                                      const posenc_rope_view *src, const posenc_rope_view *dst,
                                      posenc_elem *x, posenc_elem *y, rope_view *view, int *used,
                                      size_t *src_bytes, size_t *dst_bytes) {
  if (!src) return posenc_reject(fn, src_name, "is NULL");
  if (!dst) return posenc_reject(fn, dst_name, "is NULL");
  if (!posenc_dtype_elem(src->dtype, x))
    return posenc_reject_field(fn, src_name, "dtype", "%d is not a posenc_dtype", (int)src->dtype);
  /* One view in place (the in-place forms): its type, alignment and disjoint extent once. */
  const int one = src == dst;
  if (one)
    *y = *x;
  else if (!posenc_dtype_elem(dst->dtype, y))
    return posenc_reject_field(fn, dst_name, "dtype", "%d is not a posenc_dtype", (int)dst->dtype);
  if (src->n_heads != dst->n_heads)
    return posenc_reject_field(fn, dst_name, "n_heads", "%zu differs from %s->n_heads %zu",
                               dst->n_heads, src_name, src->n_heads);
  *used = 0;
  if (n_batch == 0 || n_tokens == 0 || src->n_heads == 0) return POSENC_OK;
  const size_t xs = posenc_elem_size(*x), ys = posenc_elem_size(*y);
  const size_t count[3] = {n_batch, n_tokens, src->n_heads};
  const size_t src_stride[3] = {src->batch_stride, src->token_stride, src->head_stride};
  const size_t dst_stride[3] = {dst->batch_stride, dst->token_stride, dst->head_stride};
  size_t src_extent, dst_extent;
  if (!posenc_elem_aligned(src->data, xs))
    return posenc_reject_data(fn, src_name, "data", src->data, xs);
  if (!one && !posenc_elem_aligned(dst->data, ys))
    return posenc_reject_data(fn, dst_name, "data", dst->data, ys);
  if (one) {
    if (!posenc_grid3_extent_elems(ys, count, dst_stride, head_dim, 1, &dst_extent))
      return view_refused(fn, dst_name, ys, count, dst_stride, head_dim);
    src_extent = dst_extent;
  } else if (!posenc_grid3_extent_elems(xs, count, src_stride, head_dim, 0, &src_extent)) {
    return view_refused(fn, src_name, xs, count, src_stride, head_dim);
  } else if (!posenc_grid3_extent_elems(ys, count, dst_stride, head_dim, 1, &dst_extent)) {
    return view_refused(fn, dst_name, ys, count, dst_stride, head_dim);
  } else if (src->data == dst->data) { /* in place: the same view */
#define POSENC_IN_PLACE_ONLY "on the same data (in place needs the same view)"
    if (*x != *y)
      return posenc_reject_field(fn, dst_name, "dtype",
                                 "%d differs from %s's %d " POSENC_IN_PLACE_ONLY, (int)dst->dtype,
                                 src_name, (int)src->dtype);
    if (src->token_stride != dst->token_stride)
      return posenc_reject_field(fn, dst_name, "token_stride",
                                 "%zu differs from %s's %zu " POSENC_IN_PLACE_ONLY,
                                 dst->token_stride, src_name, src->token_stride);
    if (src->head_stride != dst->head_stride)
      return posenc_reject_field(fn, dst_name, "head_stride",
                                 "%zu differs from %s's %zu " POSENC_IN_PLACE_ONLY,
                                 dst->head_stride, src_name, src->head_stride);
    if (n_batch > 1 && src->batch_stride != dst->batch_stride)
      return posenc_reject_field(fn, dst_name, "batch_stride",
                                 "%zu differs from %s's %zu " POSENC_IN_PLACE_ONLY,
                                 dst->batch_stride, src_name, src->batch_stride);
#undef POSENC_IN_PLACE_ONLY
  } else if (!posenc_bytes_disjoint(src->data, src_extent * xs, dst->data, dst_extent * ys)) {
    return posenc_reject(fn, dst_name,
                         "overlaps %s other than in place (the same data, dtype and "
                         "strides)",
                         src_name);
  }
  rope_view_set(view, src->data, dst->data, src->n_heads, head_dim, src->batch_stride,
                src->token_stride, src->head_stride, dst->batch_stride, dst->token_stride,
                dst->head_stride);
  *used = 1;
  *src_bytes = src_extent * xs;
  *dst_bytes = dst_extent * ys;
  return POSENC_OK;
}

int posenc_rope_check_nested(const void *data, size_t n_heads, size_t token_stride,
                             size_t head_stride, size_t n_tokens, size_t head_dim, size_t size,
                             rope_view *view, size_t *bytes) {
  size_t row, ext, ext_bytes;
  /* (ext * size against PTRDIFF_MAX by an overflow test: the division by size it replaces was
   * on every call's path) */
  if (!posenc_elem_aligned(data, size) || (n_heads > 1 && head_stride < head_dim) ||
      __builtin_mul_overflow(n_heads - 1, head_stride, &row) ||
      __builtin_add_overflow(row, head_dim, &row) || (n_tokens > 1 && token_stride < row) ||
      __builtin_mul_overflow(n_tokens - 1, token_stride, &ext) ||
      __builtin_add_overflow(ext, row, &ext) || __builtin_mul_overflow(ext, size, &ext_bytes) ||
      ext_bytes > PTRDIFF_MAX)
    return 0;
  rope_view_set(view, data, (void *)data, n_heads, head_dim, 0, token_stride, head_stride, 0,
                token_stride, head_stride);
  *bytes = ext_bytes;
  return 1;
}

rope_args posenc_mrope_args(const posenc_rope_plan *plan, const size_t *sections, size_t n_tokens,
                            const int32_t *positions, unsigned flags) {
  const int ggml = (flags & POSENC_ROPE_MROPE_GGML) != 0;
  rope_args a = {
      .plan = plan,
      .n_pairs = plan->n_pairs,
      .n_batch = 1,
      .n_tokens = n_tokens,
      .positions = positions,
      .flags = flags & ~(unsigned)(POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_MROPE_GGML),
      .att = plan->attention_factor,
      .kind = ROPE_MROPE,
      .sections = {sections[0], sections[1], sections[2], ggml ? sections[3] : 0},
      .interleaved = (flags & POSENC_ROPE_MROPE_INTERLEAVED) != 0,
      .ggml = ggml};
  a.sect_sum = a.sections[0] + a.sections[1] + a.sections[2] + a.sections[3];
  /* The rows some pair takes (the assignment repeats every sect_sum pairs under ggml's rule). */
  const size_t span = ggml && a.sect_sum < a.n_pairs ? a.sect_sum : a.n_pairs;
  for (size_t i = 0; i < span; ++i) a.rows_used |= 1u << rope_mrope_row(&a, i);
  return a;
}
