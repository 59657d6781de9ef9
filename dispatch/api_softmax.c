/* The attention-score softmax entry points: posenc_softmax's argument checks, then one call
 * through the dispatch table; the fused ALiBi softmax forms (posenc_alibi_softmax_f32 /
 * _bf16) keep posenc_alibi_add_f32's checks (posenc_alibi_check, dispatch/api_alibi.c) and
 * call the same kernels with their arguments translated. */
#include <math.h>
#include <stdlib.h>

#include "checks.h"

#define SOFTMAX_FLAGS                                                       \
  (POSENC_SOFTMAX_CAUSAL | POSENC_SOFTMAX_WINDOW | POSENC_SOFTMAX_SOFTCAP | \
   POSENC_SOFTMAX_ALIBI_SYMMETRIC | POSENC_SOFTMAX_MASK_SLOPE | POSENC_SOFTMAX_KPOS_NEG_HIDDEN)

static void run_kernel(const softmax_args *a) {
  const posenc_kernel_table *t = posenc_active_table();
  const int f32 = a->xe == POSENC_ELEM_F32 && a->ye == POSENC_ELEM_F32;
  (f32 ? t->softmax_f32 : t->softmax_16)(a);
}

/* The elements from the first to one past the last of a read-only [n_heads, n_q, n_k] grid
 * (any strides, repeats allowed), at most PTRDIFF_MAX bytes; 0 on overflow. */
static int read_extent(size_t elem_size, size_t n_heads, size_t head_stride, size_t n_q,
                       size_t row_stride, size_t n_k, size_t *extent) {
  size_t a, b, e;
  if (__builtin_mul_overflow(n_heads - 1, head_stride, &a) ||
      __builtin_mul_overflow(n_q - 1, row_stride, &b) || __builtin_add_overflow(a, b, &e) ||
      __builtin_add_overflow(e, n_k, &e) || e > PTRDIFF_MAX / elem_size)
    return 0;
  *extent = e;
  return 1;
}

/* The first element of v[n] that is not finite, or n. */
static size_t first_not_finite(const float *v, size_t n) {
  size_t i = 0;
  while (i < n && isfinite(v[i])) ++i;
  return i;
}

/* The first element of v[n] that is negative, or n. */
static size_t first_negative(const int32_t *v, size_t n) {
  size_t i = 0;
  while (i < n && v[i] >= 0) ++i;
  return i;
}

/* The keys with kpos[j] < 0 lie in [j0, j1) (j0 the first, j1 one past the last). The first
 * of them whose mask value is not -inf in some row (mask batch *b_out, head *h_out, row
 * *i_out), or SIZE_MAX if the mask hides every one in every row of every mask slice used
 * (NULL mask: none hidden). Row by row, each reading the mask's [j0, j1) in order: only
 * called when a negative key position exists. */
static size_t first_unmasked_negative(const int32_t *kpos, size_t j0, size_t j1, const void *mask,
                                      posenc_elem me, size_t mask_batches, size_t mask_batch_stride,
                                      size_t mask_heads, size_t mask_head_stride, size_t n_q,
                                      size_t mask_row, size_t *b_out, size_t *h_out,
                                      size_t *i_out) {
  *b_out = *h_out = *i_out = 0;
  if (!mask) return j0;
  const size_t ms = posenc_elem_size(me);
  for (size_t b = 0; b < mask_batches; ++b)
    for (size_t h = 0; h < mask_heads; ++h)
      for (size_t i = 0; i < n_q; ++i) {
        const char *row =
            (const char *)mask + (b * mask_batch_stride + h * mask_head_stride + i * mask_row) * ms;
        for (size_t j = j0; j < j1; ++j)
          if (kpos[j] < 0 && posenc_elem_load(row, j, me) != -INFINITY) {
            *b_out = b;
            *h_out = h;
            *i_out = i;
            return j;
          }
      }
  return SIZE_MAX;
}

/* 1 if n_bytes at p (NULL: nothing) lie apart from the y extent. */
static int apart(const void *p, size_t n_bytes, const void *y, size_t y_bytes) {
  return !p || posenc_bytes_disjoint(p, n_bytes, y, y_bytes);
}

/* The rejection of params->`field` (an array of n_bytes, NULL: none) when it lies in y's
 * extent; POSENC_OK otherwise. */
static posenc_status check_apart(const char *fn, const char *field, const void *p, size_t n_bytes,
                                 const void *y, size_t y_bytes) {
  if (apart(p, n_bytes, y, y_bytes)) return POSENC_OK;
  return posenc_reject_field(fn, "params", field, "lies within y's address range");
}

/* The rejection of a view (name) with NULL or misaligned data. */
static posenc_status check_view_data(const char *fn, const char *name, const posenc_scores_view *v,
                                     size_t size) {
  if (posenc_elem_aligned(v->data, size)) return POSENC_OK;
  return posenc_reject_data(fn, name, "data", v->data, size);
}

/* int64 positions (kpos64, qpos64) are converted to int32 in the API layer: in a buffer on
 * the stack up to this many, else on the heap. The kernels read int32 only. */
#define SOFTMAX_POS_STACK 1024

/* v64[n] into v32 after checking that every value fits in int32; the rejection of
 * params->`name` at the first that does not. */
static posenc_status narrow_positions(const char *fn, const char *name, const int64_t *v64,
                                      size_t n, int32_t *v32) {
  for (size_t i = 0; i < n; ++i) {
    if (v64[i] < INT32_MIN || v64[i] > INT32_MAX)
      return posenc_reject_elem(fn, "params", name, i,
                                "%lld is outside the int32 range of positions (int64 positions "
                                "are converted to int32, not wrapped)",
                                (long long)v64[i]);
    v32[i] = (int32_t)v64[i];
  }
  return POSENC_OK;
}

/* An int32 copy of int64 positions: stack, or heap when larger than SOFTMAX_POS_STACK. */
typedef struct {
  int32_t stack[SOFTMAX_POS_STACK];
  int32_t *heap;
} pos_buffer;

static int32_t *pos_buffer_get(pos_buffer *b, size_t n) {
  if (n <= SOFTMAX_POS_STACK) return b->stack;
  b->heap = malloc(n * sizeof *b->heap);
  return b->heap;
}

/* What softmax_entry has checked, for the last checks (the positions') and the calls. */
typedef struct {
  const char *fn;
  const posenc_softmax_params *p;
  size_t n_batch, n_heads, n_q, n_k;
  posenc_elem xe, ye, me;
  size_t x_row, y_row, x_bs, y_bs, mask_row, mask_batches;
  const posenc_scores_view *x, *y;
} softmax_plan;

/* The position checks (kpos, qpos: int32, p's or converted from int64), then the kernel
 * calls: one per batch (per group of mask_n_heads heads when the mask repeats with a
 * shorter period than n_heads). */
static posenc_status softmax_finish(const softmax_plan *sp, const int32_t *kpos,
                                    const int32_t *qpos) {
  const char *fn = sp->fn;
  const posenc_softmax_params *p = sp->p;
  const size_t n_batch = sp->n_batch, n_heads = sp->n_heads, n_q = sp->n_q, n_k = sp->n_k;
  const char *const kname = p->kpos64 ? "kpos64" : "kpos";
  const char *const qname = p->qpos64 ? "qpos64" : "qpos";
  const unsigned flags = p->flags;
  size_t i;
  /* Negative key positions (empty KV cells): hidden by the flag, else each must be hidden by
   * the mask in every row of every mask slice used. The kernels see the flag only where such
   * a key exists, so calls without one keep their fast row kinds. */
  unsigned kflags = flags & ~(unsigned)POSENC_SOFTMAX_KPOS_NEG_HIDDEN;
  if (kpos && (i = first_negative(kpos, n_k)) < n_k) {
    if (flags & POSENC_SOFTMAX_KPOS_NEG_HIDDEN) {
      kflags = flags;
    } else {
      size_t last = n_k - 1, b, h, r;
      while (kpos[last] >= 0) --last;
      const size_t used_heads = p->mask_n_heads       ? p->mask_n_heads
                                : p->mask_head_stride ? n_heads
                                                      : 1;
      const size_t j = first_unmasked_negative(kpos, i, last + 1, p->mask, sp->me, sp->mask_batches,
                                               p->mask_batch_stride, used_heads,
                                               p->mask_head_stride, n_q, sp->mask_row, &b, &h, &r);
      if (j != SIZE_MAX) {
        if (!p->mask)
          return posenc_reject_elem(fn, "params", kname, j,
                                    "%ld is negative at a key no mask hides (allowed with -inf "
                                    "in the mask or POSENC_SOFTMAX_KPOS_NEG_HIDDEN)",
                                    (long)kpos[j]);
        if (sp->mask_batches > 1)
          return posenc_reject_elem(fn, "params", kname, j,
                                    "%ld is negative at a key the mask leaves visible (mask "
                                    "batch %zu, head %zu, row %zu; allowed with -inf in the mask "
                                    "or POSENC_SOFTMAX_KPOS_NEG_HIDDEN)",
                                    (long)kpos[j], b, h, r);
        return posenc_reject_elem(fn, "params", kname, j,
                                  "%ld is negative at a key the mask leaves visible (head %zu, "
                                  "row %zu; allowed with -inf in the mask or "
                                  "POSENC_SOFTMAX_KPOS_NEG_HIDDEN)",
                                  (long)kpos[j], h, r);
      }
    }
  }
  if (qpos && (i = first_negative(qpos, n_q)) < n_q)
    return posenc_reject_elem(fn, "params", qname, i, "%ld is negative", (long)qpos[i]);

  const size_t group =
      (p->mask && p->mask_n_heads > 1 && p->mask_n_heads < n_heads) ? p->mask_n_heads : n_heads;
  const size_t mhs = (p->mask_n_heads == 1) ? 0 : p->mask_head_stride;
  const size_t xs = posenc_elem_size(sp->xe), ys = posenc_elem_size(sp->ye);
  const size_t ms = posenc_elem_size(sp->me);
  const posenc_scores_view *x = sp->x, *y = sp->y;
  for (size_t b = 0; b < n_batch; ++b) {
    const size_t mb = p->mask_n_batch > 1 ? b % p->mask_n_batch : 0;
    for (size_t g = 0; g < n_heads; g += group) {
      const softmax_args a = {
          .n_heads = group,
          .n_q = n_q,
          .n_k = n_k,
          .x = (const char *)x->data + (b * sp->x_bs + g * x->head_stride) * xs,
          .xe = sp->xe,
          .x_head_stride = x->head_stride,
          .x_row_stride = sp->x_row,
          .y = (char *)y->data + (b * sp->y_bs + g * y->head_stride) * ys,
          .ye = sp->ye,
          .y_head_stride = y->head_stride,
          .y_row_stride = sp->y_row,
          .mask = p->mask ? (const char *)p->mask + mb * p->mask_batch_stride * ms : NULL,
          .me = sp->me,
          .mask_head_stride = mhs,
          .mask_row_stride = sp->mask_row,
          .slopes = p->slopes ? p->slopes + g : NULL,
          .sinks = p->sinks ? p->sinks + g : NULL,
          .kpos = kpos,
          .qpos = qpos,
          .q_offset = p->q_offset,
          .window = p->window,
          .scale = p->scale,
          .softcap = p->softcap,
          .flags = kflags};
      run_kernel(&a);
    }
  }
  return POSENC_OK;
}

/* softmax_finish with int64 positions range-checked and narrowed to int32 first (out of
 * line: the common path keeps a small stack frame). */
static __attribute__((noinline)) posenc_status softmax_finish_int64(const softmax_plan *sp) {
  const posenc_softmax_params *p = sp->p;
  pos_buffer kbuf, qbuf;
  kbuf.heap = qbuf.heap = NULL;
  const int32_t *kpos = p->kpos, *qpos = p->qpos;
  posenc_status st = POSENC_OK;
  if (p->kpos64) {
    int32_t *k32 = pos_buffer_get(&kbuf, sp->n_k);
    if (!k32) return posenc_out_of_memory(sp->fn, "params", sp->n_k * sizeof(int32_t));
    st = narrow_positions(sp->fn, "kpos64", p->kpos64, sp->n_k, k32);
    kpos = k32;
  }
  if (st == POSENC_OK && p->qpos64) {
    int32_t *q32 = pos_buffer_get(&qbuf, sp->n_q);
    if (!q32) {
      free(kbuf.heap);
      return posenc_out_of_memory(sp->fn, "params", sp->n_q * sizeof(int32_t));
    }
    st = narrow_positions(sp->fn, "qpos64", p->qpos64, sp->n_q, q32);
    qpos = q32;
  }
  if (st == POSENC_OK) st = softmax_finish(sp, kpos, qpos);
  free(kbuf.heap);
  free(qbuf.heap);
  return st;
}

/* The checks and the kernel calls of posenc_softmax (n_batch 1, batched 0: the views'
 * batch_stride not read) and posenc_softmax_batched. */
static posenc_status softmax_entry(const char *fn, const posenc_softmax_params *p, size_t n_batch,
                                   size_t n_heads, size_t n_q, size_t n_k,
                                   const posenc_scores_view *x, const posenc_scores_view *y,
                                   int batched) {
  /* Checks that need no array. */
  if (!p) return posenc_reject(fn, "params", "is NULL");
  if (!x) return posenc_reject(fn, "x", "is NULL");
  if (!y) return posenc_reject(fn, "y", "is NULL");
  const unsigned flags = p->flags;
  posenc_elem xe, ye, me = POSENC_ELEM_F32;
  if (flags & ~(unsigned)SOFTMAX_FLAGS)
    return posenc_reject_field(fn, "params", "flags", "0x%x has unknown bits 0x%x", flags,
                               flags & ~(unsigned)SOFTMAX_FLAGS);
  if (!isfinite(p->scale))
    return posenc_reject_field(fn, "params", "scale", "%g is not finite", (double)p->scale);
  if (!posenc_dtype_elem(x->dtype, &xe))
    return posenc_reject_field(fn, "x", "dtype", "%d is not a posenc_dtype", (int)x->dtype);
  if (!posenc_dtype_elem(y->dtype, &ye))
    return posenc_reject_field(fn, "y", "dtype", "%d is not a posenc_dtype", (int)y->dtype);
  if ((flags & POSENC_SOFTMAX_SOFTCAP) && !(isfinite(p->softcap) && p->softcap > 0))
    return posenc_reject_field(fn, "params", "softcap",
                               "%g is not finite and > 0 (POSENC_SOFTMAX_SOFTCAP)",
                               (double)p->softcap);
  if ((flags & POSENC_SOFTMAX_WINDOW) && p->window < 1)
    return posenc_reject_field(fn, "params", "window", "%ld is below 1 (POSENC_SOFTMAX_WINDOW)",
                               (long)p->window);
  if (p->mask && !(p->mask_dtype == POSENC_DTYPE_F32 || p->mask_dtype == POSENC_DTYPE_F16))
    return posenc_reject_field(fn, "params", "mask_dtype", "%d is not POSENC_DTYPE_F32 or _F16",
                               (int)p->mask_dtype);
  if (p->mask) posenc_dtype_elem(p->mask_dtype, &me);
  if ((flags & POSENC_SOFTMAX_MASK_SLOPE) && !p->mask)
    return posenc_reject_field(fn, "params", "mask", "is NULL with POSENC_SOFTMAX_MASK_SLOPE");
  if ((flags & POSENC_SOFTMAX_MASK_SLOPE) && !p->slopes)
    return posenc_reject_field(fn, "params", "slopes", "is NULL with POSENC_SOFTMAX_MASK_SLOPE");
  if (p->kpos && p->kpos64)
    return posenc_reject_field(fn, "params", "kpos64", "and kpos are both set: pass one of them");
  if (p->qpos && p->qpos64)
    return posenc_reject_field(fn, "params", "qpos64", "and qpos are both set: pass one of them");
  const int has_kpos = p->kpos || p->kpos64, has_qpos = p->qpos || p->qpos64;
  if (!has_qpos && p->q_offset < 0)
    return posenc_reject_field(fn, "params", "q_offset", "%ld is negative (no qpos)",
                               (long)p->q_offset);
  if (!has_qpos && n_q > 0 && !posenc_run_fits_int32(p->q_offset, n_q))
    return posenc_reject_field(fn, "params", "q_offset", "%ld + n_q %zu - 1 passes INT32_MAX",
                               (long)p->q_offset, n_q);
  if (!has_kpos && n_k > (size_t)INT32_MAX + 1)
    return posenc_reject(fn, "n_k", "%zu keys are more than 2^31 without params->kpos", n_k);
  if (p->mask && p->mask_row_stride != 0 && p->mask_row_stride < n_k)
    return posenc_reject_field(fn, "params", "mask_row_stride", "%zu is less than n_k %zu",
                               p->mask_row_stride, n_k);
  /* ggml's broadcast: head h reads mask head h % mask_n_heads, batch b mask batch b %
   * mask_n_batch; ggml_soft_max_ext asserts the divisibility. */
  if (p->mask && p->mask_n_heads != 0 && n_heads % p->mask_n_heads != 0)
    return posenc_reject_field(fn, "params", "mask_n_heads",
                               "%zu does not divide n_heads %zu: the mask does not broadcast "
                               "(ggml's rule: head h reads mask head h %% mask_n_heads)",
                               p->mask_n_heads, n_heads);
  if (p->mask && p->mask_n_batch > 1 && n_batch % p->mask_n_batch != 0)
    return posenc_reject_field(fn, "params", "mask_n_batch",
                               "%zu does not divide n_batch %zu%s: the mask does not broadcast "
                               "(ggml's rule: batch b reads mask batch b %% mask_n_batch)",
                               p->mask_n_batch, n_batch, batched ? "" : " (one batch here)");
  if (n_batch == 0 || n_heads == 0 || n_q == 0 || n_k == 0) return POSENC_OK;

  /* The views: [n_batch, n_heads, n_q, n_k]; one batch is posenc_softmax's 3-D grid. */
  const size_t xs = posenc_elem_size(xe), ys = posenc_elem_size(ye);
  const size_t x_row = x->row_stride ? x->row_stride : n_k;
  const size_t y_row = y->row_stride ? y->row_stride : n_k;
  const size_t x_bs = batched ? x->batch_stride : 0, y_bs = batched ? y->batch_stride : 0;
  size_t x_ext, y_ext;
  posenc_status st = check_view_data(fn, "x", x, xs);
  if (st == POSENC_OK) st = check_view_data(fn, "y", y, ys);
  if (st != POSENC_OK) return st;
  if (n_batch > 1) {
    const size_t xc[3] = {n_batch, n_heads, n_q}, xst[3] = {x_bs, x->head_stride, x_row};
    if (!posenc_grid3_extent_elems(xs, xc, xst, n_k, 0, &x_ext))
      return posenc_reject(fn, "x",
                           "the extent of n_batch %zu x batch_stride %zu, n_heads %zu x "
                           "head_stride %zu, n_q %zu x row_stride %zu, n_k %zu overflows size_t "
                           "or passes PTRDIFF_MAX bytes",
                           n_batch, x_bs, n_heads, x->head_stride, n_q, x_row, n_k);
    const size_t yst[3] = {y_bs, y->head_stride, y_row};
    if (!posenc_grid3_extent_elems(ys, xc, yst, n_k, 1, &y_ext)) {
      static const char *const fields[3] = {"batch_stride", "head_stride", "row_stride"};
      static const char *const what[3] = {"batches", "heads", "rows"};
      size_t need = 0;
      const int d = posenc_grid3_refusal(ys, xc, yst, n_k, &need);
      if (d < 0)
        return posenc_reject(fn, "y",
                             "the extent of n_batch %zu x batch_stride %zu, n_heads %zu x "
                             "head_stride %zu, n_q %zu x row_stride %zu, n_k %zu overflows "
                             "size_t or passes PTRDIFF_MAX bytes",
                             n_batch, y_bs, n_heads, y->head_stride, n_q, y_row, n_k);
      return posenc_reject_field(
          fn, "y", fields[d],
          "%zu is below %zu, the extent of what it steps over (n_k %zu): %s overlap", yst[d], need,
          n_k, what[d]);
    }
  } else {
    if (!read_extent(xs, n_heads, x->head_stride, n_q, x_row, n_k, &x_ext))
      return posenc_reject(fn, "x",
                           "the extent of n_heads %zu x head_stride %zu, n_q %zu x row_stride "
                           "%zu, n_k %zu overflows size_t or passes PTRDIFF_MAX bytes",
                           n_heads, x->head_stride, n_q, x_row, n_k);
    if (!posenc_grid_extent_elems(ys, n_heads, y->head_stride, n_q, y_row, n_k, &y_ext)) {
      size_t need = 0;
      const int d = posenc_grid_refusal(ys, n_heads, y->head_stride, n_q, y_row, n_k, &need);
      if (d < 0)
        return posenc_reject(fn, "y",
                             "the extent of n_heads %zu x head_stride %zu, n_q %zu x row_stride "
                             "%zu, n_k %zu overflows size_t or passes PTRDIFF_MAX bytes",
                             n_heads, y->head_stride, n_q, y_row, n_k);
      return posenc_reject_field(
          fn, "y", d == 0 ? "head_stride" : "row_stride",
          "%zu is below %zu, the extent of what it steps over (n_k %zu): %s overlap",
          d == 0 ? y->head_stride : y_row, need, n_k, d == 0 ? "heads" : "rows");
    }
  }
  if (n_q > 1 && x_row < n_k)
    return posenc_reject_field(fn, "x", "row_stride", "%zu is less than n_k %zu", x_row, n_k);
  const size_t y_bytes = y_ext * ys;
  const int in_place = x->data == y->data && xe == ye && x->head_stride == y->head_stride &&
                       (n_q == 1 || x_row == y_row) && (n_batch == 1 || x_bs == y_bs);
  if (!in_place && !posenc_bytes_disjoint(x->data, x_ext * xs, y->data, y_bytes))
    return posenc_reject(fn, "y",
                         "overlaps x other than in place (the same data, dtype and strides)");

  /* The arrays. The mask slices used: mask_batches x mask_heads. */
  const size_t mask_row = p->mask_row_stride ? p->mask_row_stride : n_k;
  const size_t mask_batches = p->mask_n_batch > 1 ? p->mask_n_batch : 1;
  const size_t mask_heads = p->mask_n_heads ? p->mask_n_heads : n_heads;
  size_t m_ext = 0;
  if (p->mask) {
    if (!posenc_elem_aligned(p->mask, posenc_elem_size(me)))
      return posenc_reject_data(fn, "params", "mask", p->mask, posenc_elem_size(me));
    int ok;
    if (mask_batches > 1) {
      const size_t mc[3] = {mask_batches, mask_heads, n_q};
      const size_t mst[3] = {p->mask_batch_stride, p->mask_head_stride, mask_row};
      ok = posenc_grid3_extent_elems(posenc_elem_size(me), mc, mst, n_k, 0, &m_ext);
    } else {
      ok = read_extent(posenc_elem_size(me), mask_heads, p->mask_head_stride, n_q, mask_row, n_k,
                       &m_ext);
    }
    if (!ok)
      return posenc_reject_field(fn, "params", "mask",
                                 "the extent of %zu mask batches x mask_batch_stride %zu, %zu "
                                 "mask heads x mask_head_stride %zu, n_q %zu x mask_row_stride "
                                 "%zu, n_k %zu overflows size_t or passes PTRDIFF_MAX bytes",
                                 mask_batches, p->mask_batch_stride, mask_heads,
                                 p->mask_head_stride, n_q, mask_row, n_k);
  }
  const size_t fsz = sizeof(float), isz = sizeof(int32_t), lsz = sizeof(int64_t);
  if (p->slopes && !posenc_elem_aligned(p->slopes, fsz))
    return posenc_reject_data(fn, "params", "slopes", p->slopes, fsz);
  if (p->sinks && !posenc_elem_aligned(p->sinks, fsz))
    return posenc_reject_data(fn, "params", "sinks", p->sinks, fsz);
  if (p->kpos && !posenc_elem_aligned(p->kpos, isz))
    return posenc_reject_data(fn, "params", "kpos", p->kpos, isz);
  if (p->qpos && !posenc_elem_aligned(p->qpos, isz))
    return posenc_reject_data(fn, "params", "qpos", p->qpos, isz);
  if (p->kpos64 && !posenc_elem_aligned(p->kpos64, lsz))
    return posenc_reject_data(fn, "params", "kpos64", p->kpos64, lsz);
  if (p->qpos64 && !posenc_elem_aligned(p->qpos64, lsz))
    return posenc_reject_data(fn, "params", "qpos64", p->qpos64, lsz);
  st = check_apart(fn, "mask", p->mask, m_ext * posenc_elem_size(me), y->data, y_bytes);
  if (st == POSENC_OK) st = check_apart(fn, "slopes", p->slopes, n_heads * fsz, y->data, y_bytes);
  if (st == POSENC_OK) st = check_apart(fn, "sinks", p->sinks, n_heads * fsz, y->data, y_bytes);
  if (st == POSENC_OK) st = check_apart(fn, "kpos", p->kpos, n_k * isz, y->data, y_bytes);
  if (st == POSENC_OK) st = check_apart(fn, "qpos", p->qpos, n_q * isz, y->data, y_bytes);
  if (st == POSENC_OK) st = check_apart(fn, "kpos64", p->kpos64, n_k * lsz, y->data, y_bytes);
  if (st == POSENC_OK) st = check_apart(fn, "qpos64", p->qpos64, n_q * lsz, y->data, y_bytes);
  if (st != POSENC_OK) return st;
  size_t i;
  if (p->slopes && (i = first_not_finite(p->slopes, n_heads)) < n_heads)
    return posenc_reject_elem(fn, "params", "slopes", i, "%g is not finite", (double)p->slopes[i]);
  if (p->sinks && (i = first_not_finite(p->sinks, n_heads)) < n_heads)
    return posenc_reject_elem(fn, "params", "sinks", i, "%g is not finite", (double)p->sinks[i]);

  const softmax_plan sp = {.fn = fn,
                           .p = p,
                           .n_batch = n_batch,
                           .n_heads = n_heads,
                           .n_q = n_q,
                           .n_k = n_k,
                           .xe = xe,
                           .ye = ye,
                           .me = me,
                           .x_row = x_row,
                           .y_row = y_row,
                           .x_bs = x_bs,
                           .y_bs = y_bs,
                           .mask_row = mask_row,
                           .mask_batches = mask_batches,
                           .x = x,
                           .y = y};
  if (p->kpos64 || p->qpos64) return softmax_finish_int64(&sp);
  return softmax_finish(&sp, p->kpos, p->qpos);
}

posenc_status posenc_softmax(const posenc_softmax_params *p, size_t n_heads, size_t n_q, size_t n_k,
                             const posenc_scores_view *x, const posenc_scores_view *y) {
  return softmax_entry(__func__, p, 1, n_heads, n_q, n_k, x, y, 0);
}

posenc_status posenc_softmax_batched(const posenc_softmax_params *p, size_t n_batch, size_t n_heads,
                                     size_t n_q, size_t n_k, const posenc_scores_view *x,
                                     const posenc_scores_view *y) {
  return softmax_entry(__func__, p, n_batch, n_heads, n_q, n_k, x, y, 1);
}

/* The ALiBi forms: posenc_alibi_add_f32's checks, then the softmax with the symmetric ALiBi
 * term, key j at position j and query i at q_offset + i, in place. */
static posenc_status run_alibi(const char *fn, const float *slopes, size_t n_heads, size_t n_q,
                               size_t n_k, size_t q_offset, void *scores, posenc_elem e,
                               size_t head_stride, size_t row_stride, float scale, unsigned flags) {
  const posenc_alibi_rules rules = {.extent_elem_size = sizeof(float), .slopes_apart = 1};
  alibi_args c;
  const posenc_status st =
      posenc_alibi_check(fn, "scores", slopes, n_heads, n_q, n_k, q_offset, scores, e, head_stride,
                         row_stride, scale, flags, rules, &c);
  if (st != POSENC_OK || c.n_heads == 0) return st;
  const softmax_args a = {
      .n_heads = c.n_heads,
      .n_q = c.n_q,
      .n_k = c.n_k,
      .x = c.scores,
      .xe = e,
      .x_head_stride = c.head_stride,
      .x_row_stride = c.row_stride,
      .y = c.scores,
      .ye = e,
      .y_head_stride = c.head_stride,
      .y_row_stride = c.row_stride,
      .me = POSENC_ELEM_F32,
      .slopes = c.slopes,
      .q_offset = c.q_offset,
      .scale = c.scale,
      .flags = POSENC_SOFTMAX_ALIBI_SYMMETRIC |
               ((flags & POSENC_ALIBI_CAUSAL) ? (unsigned)POSENC_SOFTMAX_CAUSAL : 0u)};
  run_kernel(&a);
  return POSENC_OK;
}

posenc_status posenc_alibi_softmax_f32(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                       size_t q_offset, float *scores, size_t head_stride,
                                       size_t row_stride, float scale, unsigned flags) {
  return run_alibi(__func__, slopes, n_heads, n_q, n_k, q_offset, scores, POSENC_ELEM_F32,
                   head_stride, row_stride, scale, flags);
}

posenc_status posenc_alibi_softmax_bf16(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                        size_t q_offset, uint16_t *scores, size_t head_stride,
                                        size_t row_stride, float scale, unsigned flags) {
  return run_alibi(__func__, slopes, n_heads, n_q, n_k, q_offset, scores, POSENC_ELEM_BF16,
                   head_stride, row_stride, scale, flags);
}
