/* QK-norm fused with RoPE (posenc_rope_qknorm): argument checks, then one call of the
 * active ISA's RoPE kernel for the type pair, whose views carry the norm weights
 * (kernels/rope_driver.h normalises each token's heads into a float buffer and rotates
 * them from there). */
#include <math.h>

#include "checks.h"

/* POSENC_OK if norm (the argument `name` of fn) is NULL or usable. */
static posenc_status check_norm(const char *fn, const char *name, const posenc_qk_norm *norm) {
  if (!norm) return POSENC_OK;
  if (!norm->weight) return posenc_reject_field(fn, name, "weight", "is NULL");
  if (!isfinite(norm->eps) || norm->eps < 0.0f)
    return posenc_reject_field(fn, name, "eps", "%g is not a finite number >= 0",
                               (double)norm->eps);
  if (norm->flags & ~(unsigned)POSENC_QK_NORM_GEMMA)
    return posenc_reject_field(fn, name, "flags", "0x%x has bits other than POSENC_QK_NORM_GEMMA",
                               norm->flags);
  return POSENC_OK;
}

/* A call with a Gemma norm: the kernels take the weights as given, so (1 + w) is formed here
 * in float, once per call, on the stack of this function alone. */
static __attribute__((noinline)) void run_gemma(rope_fn kernel, rope_args *args,
                                                const posenc_qk_norm *const norms[2],
                                                const int used[2], size_t head_dim) {
  float w1[2][POSENC_ROPE_NORM_FLOATS];
  size_t v = 0;
  for (int i = 0; i < 2; ++i) {
    if (!used[i]) continue;
    if (norms[i] && (norms[i]->flags & POSENC_QK_NORM_GEMMA)) {
      for (size_t d = 0; d < head_dim; ++d) w1[i][d] = 1.0f + norms[i]->weight[d];
      args->views[v].norm_w = w1[i];
    }
    ++v;
  }
  kernel(args);
}

static posenc_status rope_qknorm_int32(const char *fn, const posenc_rope_plan *plan,
                                       size_t head_dim, size_t n_batch, size_t n_tokens,
                                       const int32_t *positions, int32_t start_pos,
                                       const posenc_rope_view *q_src, const posenc_rope_view *q_dst,
                                       const posenc_qk_norm *q_norm, const posenc_rope_view *k_src,
                                       const posenc_rope_view *k_dst, const posenc_qk_norm *k_norm,
                                       unsigned flags) {
  size_t n_all;
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  if (!q_src) return posenc_reject(fn, "q_src", "is NULL");
  if (!q_dst) return posenc_reject(fn, "q_dst", "is NULL (pass q_src for in place)");
  if (k_src && !k_dst) return posenc_reject(fn, "k_dst", "is NULL (pass k_src for in place)");
  if (!k_src && k_dst) return posenc_reject(fn, "k_dst", "is given without k_src");
  if (!k_src && k_norm) return posenc_reject(fn, "k_norm", "is given without k_src");
  posenc_status st =
      posenc_check_plain_rope(fn, plan, head_dim, positions, start_pos, n_tokens, flags);
  if (st == POSENC_OK) st = check_norm(fn, "q_norm", q_norm);
  if (st == POSENC_OK) st = check_norm(fn, "k_norm", k_norm);
  if (st != POSENC_OK) return st;
  if ((q_norm || k_norm) && plan->n_pairs > POSENC_ROPE_CHUNK)
    return posenc_reject(fn, "plan", "rotary_dim %zu: QK-norm takes rotary_dim up to %d",
                         plan->rotary_dim, 2 * POSENC_ROPE_CHUNK);
  if ((q_norm || k_norm) && head_dim > POSENC_ROPE_NORM_FLOATS)
    return posenc_reject(fn, "head_dim", "%zu: QK-norm takes head_dim up to %d", head_dim,
                         POSENC_ROPE_NORM_FLOATS);
  if (__builtin_mul_overflow(n_batch, n_tokens, &n_all))
    return posenc_reject(fn, "n_batch", "%zu x n_tokens %zu overflows size_t", n_batch, n_tokens);

  rope_args args = posenc_rope_args(plan, n_tokens, positions, start_pos, flags);
  args.n_batch = n_batch;
  rope_view views[2];
  int used[2] = {0, 0};
  size_t src_bytes[2] = {0, 0}, dst_bytes[2] = {0, 0};
  posenc_elem x[2], y[2];
  st = posenc_rope_check_views(fn, "q_src", "q_dst", head_dim, n_batch, n_tokens, q_src, q_dst,
                               &x[0], &y[0], &views[0], &used[0], &src_bytes[0], &dst_bytes[0]);
  if (st == POSENC_OK && k_src)
    st = posenc_rope_check_views(fn, "k_src", "k_dst", head_dim, n_batch, n_tokens, k_src, k_dst,
                                 &x[1], &y[1], &views[1], &used[1], &src_bytes[1], &dst_bytes[1]);
  if (st != POSENC_OK) return st;
  if (k_src && (x[1] != x[0] || y[1] != y[0]))
    return posenc_reject(fn, "k_src",
                         "k's type pair (dtype %d to %d) differs from q's (%d to %d): one "
                         "kernel rotates both",
                         (int)k_src->dtype, (int)k_dst->dtype, (int)q_src->dtype,
                         (int)q_dst->dtype);
  const rope_fn kernel = posenc_rope_pair_kernel(posenc_active_table(), x[0], y[0]);
  if (!kernel)
    return posenc_reject_field(fn, "q_dst", "dtype",
                               "%d from q_src->dtype %d is not a supported type pair (f32, bf16 "
                               "and f16 to their own type; f32 to bf16 or f16)",
                               (int)q_dst->dtype, (int)q_src->dtype);
  if (used[0] && used[1]) {
    /* Each destination apart from the other tensor's source and destination; in-place
     * packed QKV rows of one batch (each token's q and k heads in separate parts of one
     * token stride) are apart too. */
    const int in_place = views[0].src == views[0].dst && views[1].src == views[1].dst;
    const posenc_rope_tensor qt = {q_dst->data, q_dst->n_heads, q_dst->token_stride,
                                   q_dst->head_stride};
    const posenc_rope_tensor kt = {k_dst->data, k_dst->n_heads, k_dst->token_stride,
                                   k_dst->head_stride};
    const int packed = in_place && n_batch == 1 &&
                       posenc_rope_tensors_disjoint(&qt, dst_bytes[0], &kt, dst_bytes[1], n_tokens,
                                                    head_dim, posenc_elem_size(y[0]));
    if (!packed && (!posenc_bytes_disjoint(q_dst->data, dst_bytes[0], k_dst->data, dst_bytes[1]) ||
                    !posenc_bytes_disjoint(q_dst->data, dst_bytes[0], k_src->data, src_bytes[1]) ||
                    !posenc_bytes_disjoint(k_dst->data, dst_bytes[1], q_src->data, src_bytes[0])))
      return posenc_reject(fn, "k_dst",
                           "shares addresses with q_src or q_dst (or k_src with q_dst) other "
                           "than as in-place packed QKV rows");
  }
  const posenc_qk_norm *norms[2] = {q_norm, k_norm};
  args.n_views = 0;
  int gemma = 0;
  for (int i = 0; i < 2; ++i) {
    if (!used[i]) continue;
    rope_view *v = &args.views[args.n_views++];
    *v = views[i];
    if (norms[i]) {
      v->norm_w = norms[i]->weight;
      v->norm_eps = norms[i]->eps;
      gemma |= (norms[i]->flags & POSENC_QK_NORM_GEMMA) != 0;
    }
  }
  if (args.n_views == 0) return POSENC_OK;
  if (gemma)
    run_gemma(kernel, &args, norms, used, head_dim);
  else
    kernel(&args);
  return POSENC_OK;
}

posenc_status posenc_rope_qknorm(const posenc_rope_plan *plan, size_t head_dim, size_t n_batch,
                                 size_t n_tokens, const int32_t *positions, int32_t start_pos,
                                 const posenc_rope_view *q_src, const posenc_rope_view *q_dst,
                                 const posenc_qk_norm *q_norm, const posenc_rope_view *k_src,
                                 const posenc_rope_view *k_dst, const posenc_qk_norm *k_norm,
                                 unsigned flags) {
  posenc_positions32 buf;
  posenc_status st = posenc_positions_narrow(__func__, "positions", &positions, 1, n_batch,
                                             n_tokens, &flags, &buf);
  if (st == POSENC_OK)
    st = rope_qknorm_int32(__func__, plan, head_dim, n_batch, n_tokens, positions, start_pos, q_src,
                           q_dst, q_norm, k_src, k_dst, k_norm, flags);
  posenc_positions_release(&buf);
  return st;
}
