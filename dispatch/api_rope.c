/* RoPE public entry points: plan construction, then argument checks, then one call
 * through the dispatch table. All validation lives here, once. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/rope_driver.h"
#include "checks.h"

rope_thread_cache *posenc_rope_thread_cache(void) {
  /* 8 KiB per thread (zero: no plan has serial 0), in the general TLS model so that the
   * library may be dlopen()ed (Python's ctypes) */
  static _Thread_local rope_thread_cache cache;
  return &cache;
}

/* The next plan's serial (struct posenc_rope_plan). */
static atomic_uint_fast64_t next_plan_serial = 1;

/* |w| <= 1024 rad/position keeps p * w / 2pi below 2^39 turns for |p| <= 2^31: the split
 * parts stay exact and p * turn_lo stays below 2^-3 turns, so the reduction keeps its
 * 2^-22 contract. Real frequencies are at most 1 (w_0 = base^0). */
#define MAX_FREQ 1024.0

/* 1/(2*pi) as a double-double. */
static const double INV_TWO_PI_HI = 0x1.45f306dc9c883p-3;
static const double INV_TWO_PI_LO = -0x1.6b01ec5417056p-57;

/* x with all but its `bits` leading significant bits cleared (toward zero). */
static double leading_bits(double x, int bits) {
  int e;
  const double m = frexp(x, &e);
  return ldexp(trunc(ldexp(m, bits)), e - bits);
}

/* w / (2*pi) in turns, split so that p * hi and p * mid are exact for |p| <= 2^31
 * (32-bit integer times 21 significant bits), lo carrying the rest. */
static void split_turns(double w, double *hi, double *mid, double *lo) {
  double f = w * INV_TWO_PI_HI;
  double f_lo = fma(w, INV_TWO_PI_HI, -f) + w * INV_TWO_PI_LO;
  *hi = leading_bits(f, 21);
  const double rest = f - *hi; /* exact: the low bits of f */
  *mid = leading_bits(rest, 21);
  *lo = (rest - *mid) + f_lo;
}

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* The next `bytes` of a plan block. */
static void *take(unsigned char **cursor, size_t bytes) {
  void *p = *cursor;
  *cursor += bytes;
  return p;
}

posenc_status posenc_rope_plan_make(const char *fn, const char *freqs_arg, const char *att_arg,
                                    posenc_rope_plan **plan, size_t rotary_dim, const double *freqs,
                                    double attention_factor) {
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  *plan = NULL;
  if (!freqs) return posenc_reject(fn, freqs_arg, "is NULL");
  const posenc_status r_ok = posenc_check_rotary_dim(fn, "rotary_dim", rotary_dim);
  if (r_ok != POSENC_OK) return r_ok;
  if (!isfinite(attention_factor) || !(attention_factor > 0) || attention_factor > FLT_MAX)
    return posenc_reject(fn, att_arg, "the attention factor %g is not in (0, FLT_MAX]",
                         attention_factor);
  const size_t n = rotary_dim / 2, n_pad = round_up(n, POSENC_PLAN_PAD);
  for (size_t i = 0; i < n; ++i)
    if (!(fabs(freqs[i]) <= MAX_FREQ)) /* and NaN */
      return posenc_reject(fn, freqs_arg,
                           "the frequency of pair %zu is %g; |w| must be at most %g rad/position",
                           i, freqs[i], MAX_FREQ);

  /* One block: the header, then 64-byte aligned arrays, zero padded to n_pad entries. */
  const size_t header = round_up(sizeof(struct posenc_rope_plan), 64);
  const size_t doubles = round_up(n_pad * sizeof(double), 64);
  const size_t floats = round_up(n_pad * sizeof(float), 64);
  /* One-chunk plans: the step table, POSENC_ROPE_ANCHOR rows of n_pad cos and as many sin. */
  const int stepped = n <= POSENC_ROPE_CHUNK;
  const size_t steps = stepped ? 2 * POSENC_ROPE_ANCHOR * doubles : 0;
  const size_t bytes = header + 7 * doubles + floats + steps;
  unsigned char *block = aligned_alloc(64, bytes);
  if (!block) return posenc_out_of_memory(fn, "plan", bytes);
  memset(block, 0, bytes);
  unsigned char *cursor = block + header;
  double *w = take(&cursor, doubles), *hi = take(&cursor, doubles);
  double *mid = take(&cursor, doubles), *lo = take(&cursor, doubles);
  double *turn = take(&cursor, doubles), *cos_w = take(&cursor, doubles);
  double *sin_w = take(&cursor, doubles);
  float *inv_freq = take(&cursor, floats);
  double *step_c = stepped ? take(&cursor, POSENC_ROPE_ANCHOR * doubles) : NULL;
  double *step_s = stepped ? take(&cursor, POSENC_ROPE_ANCHOR * doubles) : NULL;
  double max_turn = 0;
  for (size_t i = 0; i < n; ++i) {
    w[i] = freqs[i];
    split_turns(freqs[i], &hi[i], &mid[i], &lo[i]);
    turn[i] = hi[i] + (mid[i] + lo[i]);
    if (fabs(turn[i]) > max_turn) max_turn = fabs(turn[i]);
    inv_freq[i] = (float)freqs[i];
    cos_w[i] = cos(freqs[i]);
    sin_w[i] = sin(freqs[i]);
  }
  /* cos and sin of k w_i (the padding's w = 0 gives 1 and 0); k w_i is within an ulp of the
   * exact product, far below float precision. */
  for (size_t k = 0; stepped && k < POSENC_ROPE_ANCHOR; ++k)
    for (size_t i = 0; i < n_pad; ++i) {
      step_c[k * n_pad + i] = cos((double)k * w[i]);
      step_s[k * n_pad + i] = sin((double)k * w[i]);
    }
  struct posenc_rope_plan *p = (struct posenc_rope_plan *)block;
  p->rotary_dim = rotary_dim;
  p->n_pairs = n;
  p->attention_factor = attention_factor;
  p->freqs = w;
  p->turn_hi = hi;
  p->turn_mid = mid;
  p->turn_lo = lo;
  p->turn = turn;
  p->cos_w = cos_w;
  p->sin_w = sin_w;
  p->small_limit = max_turn > 0 ? ldexp(1.0, 22) / max_turn : ldexp(1.0, 32);
  p->inv_freq_f32 = inv_freq;
  p->step_c = step_c;
  p->step_s = step_s;
  p->n_pad = n_pad;
  p->serial = (uint64_t)atomic_fetch_add_explicit(&next_plan_serial, 1, memory_order_relaxed);
  *plan = p;
  return POSENC_OK;
}

posenc_status posenc_rope_plan_create_from_freqs(posenc_rope_plan **plan, size_t rotary_dim,
                                                 const double *freqs, double attention_factor) {
  return posenc_rope_plan_make(__func__, "freqs", "attention_factor", plan, rotary_dim, freqs,
                               attention_factor);
}

posenc_status posenc_rope_plan_create(posenc_rope_plan **plan, size_t rotary_dim, double base,
                                      double attention_factor) {
  const char *fn = __func__;
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  *plan = NULL;
  posenc_status st = posenc_check_base(fn, "base", base);
  if (st == POSENC_OK) st = posenc_check_rotary_dim(fn, "rotary_dim", rotary_dim);
  if (st != POSENC_OK) return st;
  double *w = posenc_default_freqs(base, rotary_dim / 2, rotary_dim);
  if (!w) return posenc_out_of_memory(fn, "plan", rotary_dim / 2 * sizeof *w);
  st = posenc_rope_plan_make(fn, "base", "attention_factor", plan, rotary_dim, w, attention_factor);
  free(w);
  return st;
}

void posenc_rope_plan_destroy(posenc_rope_plan *plan) { free(plan); }

size_t posenc_rope_plan_rotary_dim(const posenc_rope_plan *plan) {
  return plan ? plan->rotary_dim : 0;
}

double posenc_rope_plan_attention_factor(const posenc_rope_plan *plan) {
  return plan ? plan->attention_factor : 0.0;
}

posenc_status posenc_rope_plan_freqs(const posenc_rope_plan *plan, double *freqs) {
  if (!plan) return posenc_reject(__func__, "plan", "is NULL");
  if (!freqs) return posenc_reject(__func__, "freqs", "is NULL");
  memcpy(freqs, plan->freqs, plan->n_pairs * sizeof *freqs);
  return POSENC_OK;
}

/* 1 if no element of k is an element of q, given each view's extent in bytes from its data.
 * Exact for disjoint spans and for views that share one token stride with each token's q
 * and k heads in separate parts of the row (packed QKV); other interleavings are rejected. */
int posenc_rope_tensors_disjoint(const posenc_rope_tensor *q, size_t q_bytes,
                                 const posenc_rope_tensor *k, size_t k_bytes, size_t n_tokens,
                                 size_t head_dim, size_t elem) {
  const uintptr_t qa = (uintptr_t)q->data, ka = (uintptr_t)k->data;
  if (ka >= qa + q_bytes || qa >= ka + k_bytes) return 1;
  const size_t stride = q->token_stride;
  /* The extent of one token's heads (no overflow: within the view's extent). */
  const size_t q_row = (q->n_heads - 1) * q->head_stride + head_dim;
  const size_t k_row = (k->n_heads - 1) * k->head_stride + head_dim;
  if (n_tokens < 2 || k->token_stride != stride || q_row > stride || k_row > stride) return 0;
  const size_t delta = (ka > qa ? ka - qa : qa - ka) / elem;
  /* Offset of the later view's row inside the earlier one's period. */
  const size_t first_span = ka > qa ? q_row : k_row;
  const size_t second_span = ka > qa ? k_row : q_row;
  const size_t off = delta % stride;
  return off >= first_span && off + second_span <= stride;
}

static const posenc_dtype elem_dtype[] = {[POSENC_ELEM_F32] = POSENC_DTYPE_F32,
                                          [POSENC_ELEM_BF16] = POSENC_DTYPE_BF16,
                                          [POSENC_ELEM_F16] = POSENC_DTYPE_F16};

/* The view checks of posenc_rope_f32 (fn) for q and k (k may be NULL; q_name and k_name
 * their argument names), for elements of any storage type: each an in-place pair of views
 * of one batch (posenc_rope_check_nested, else posenc_rope_check_views), then q and k
 * disjoint; then one call of the active ISA's kernel for that type with `args` (whose other
 * fields the caller has checked and set). */
static posenc_status rope_run(const char *fn, const char *q_name, const char *k_name,
                              rope_args *args, size_t head_dim, const posenc_rope_tensor *q,
                              const posenc_rope_tensor *k, posenc_elem elem) {
  const posenc_rope_tensor *tensors[2] = {q, k};
  const char *names[2] = {q_name, k_name};
  size_t bytes[2];
  int used[2] = {0, 0};
  const size_t size = posenc_elem_size(elem);
  for (int i = 0; i < 2; ++i) {
    const posenc_rope_tensor *tensor = tensors[i];
    if (!tensor || tensor->n_heads == 0 || args->n_tokens == 0) continue;
    rope_view *view = &args->views[args->n_views];
    if (posenc_rope_check_nested(tensor->data, tensor->n_heads, tensor->token_stride,
                                 tensor->head_stride, args->n_tokens, head_dim, size, view,
                                 &bytes[i])) {
      used[i] = 1;
    } else {
      const posenc_rope_view v = {.data = tensor->data,
                                  .dtype = elem_dtype[elem],
                                  .n_heads = tensor->n_heads,
                                  .token_stride = tensor->token_stride,
                                  .head_stride = tensor->head_stride};
      posenc_elem x, y;
      size_t dst_bytes;
      const posenc_status st =
          posenc_rope_check_views(fn, names[i], names[i], head_dim, 1, args->n_tokens, &v, &v, &x,
                                  &y, view, &used[i], &bytes[i], &dst_bytes);
      if (st != POSENC_OK) return st;
    }
    args->n_views += (size_t)used[i];
  }
  if (used[0] && used[1] &&
      !posenc_rope_tensors_disjoint(q, bytes[0], k, bytes[1], args->n_tokens, head_dim, size))
    return posenc_reject(fn, k_name,
                         "shares addresses with %s other than as packed QKV rows (the same "
                         "token_stride, each token's heads in a part of it apart from %s's)",
                         q_name, q_name);
  if (args->n_views == 0) return POSENC_OK;
  const posenc_kernel_table *t = posenc_active_table();
  POSENC_BY_ELEM(elem, t->rope_f32, t->rope_bf16, t->rope_f16)(args);
  return POSENC_OK;
}

static posenc_status rope_plain_int32(const char *fn, const posenc_rope_plan *plan, size_t head_dim,
                                      size_t n_tokens, const int32_t *positions, int32_t start_pos,
                                      const posenc_rope_tensor *q, const posenc_rope_tensor *k,
                                      unsigned flags, posenc_elem elem) {
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  if (!q) return posenc_reject(fn, "q", "is NULL");
  const posenc_status st =
      posenc_check_plain_rope(fn, plan, head_dim, positions, start_pos, n_tokens, flags);
  if (st != POSENC_OK) return st;
  rope_args args = posenc_rope_args(plan, n_tokens, positions, start_pos, flags);
  return rope_run(fn, "q", "k", &args, head_dim, q, k, elem);
}

/* rope_plain_int32 after int64 positions (POSENC_ROPE_POSITIONS_INT64) are narrowed. */
static posenc_status rope_plain(const char *fn, const posenc_rope_plan *plan, size_t head_dim,
                                size_t n_tokens, const int32_t *positions, int32_t start_pos,
                                const posenc_rope_tensor *q, const posenc_rope_tensor *k,
                                unsigned flags, posenc_elem elem) {
  posenc_positions32 buf;
  posenc_status st =
      posenc_positions_narrow(fn, "positions", &positions, 1, 1, n_tokens, &flags, &buf);
  if (st == POSENC_OK)
    st = rope_plain_int32(fn, plan, head_dim, n_tokens, positions, start_pos, q, k, flags, elem);
  posenc_positions_release(&buf);
  return st;
}

static posenc_status mrope_int32(const char *fn, const posenc_rope_plan *plan,
                                 const size_t *sections, size_t head_dim, size_t n_tokens,
                                 const int32_t *positions, const posenc_rope_tensor *q,
                                 const posenc_rope_tensor *k, unsigned flags, posenc_elem elem) {
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  if (!q) return posenc_reject(fn, "q", "is NULL");
  posenc_status st = posenc_check_flags(fn, "flags", flags, POSENC_MROPE_FLAGS);
  if (st == POSENC_OK)
    st = posenc_check_head_dim(fn, head_dim, plan->rotary_dim, "the plan's rotary_dim");
  if (st == POSENC_OK) st = posenc_mrope_check_sections(fn, sections, plan, flags);
  if (st != POSENC_OK) return st;
  if (!positions && n_tokens > 0)
    return posenc_reject(fn, "positions", "is NULL with n_tokens %zu > 0", n_tokens);
  /* The rows of n_tokens positions must be addressable. */
  const size_t rows = posenc_mrope_rows(flags);
  if (n_tokens > SIZE_MAX / rows / sizeof(int32_t))
    return posenc_reject(fn, "n_tokens", "%zu: %zu rows of that many positions are not addressable",
                         n_tokens, rows);
  rope_args args = posenc_mrope_args(plan, sections, n_tokens, positions, flags);
  return rope_run(fn, "q", "k", &args, head_dim, q, k, elem);
}

/* mrope_int32 after int64 positions (all rows) are narrowed. */
static posenc_status mrope(const char *fn, const posenc_rope_plan *plan, const size_t *sections,
                           size_t head_dim, size_t n_tokens, const int32_t *positions,
                           const posenc_rope_tensor *q, const posenc_rope_tensor *k, unsigned flags,
                           posenc_elem elem) {
  posenc_positions32 buf;
  posenc_status st = posenc_positions_narrow(fn, "positions", &positions, posenc_mrope_rows(flags),
                                             1, n_tokens, &flags, &buf);
  if (st == POSENC_OK)
    st = mrope_int32(fn, plan, sections, head_dim, n_tokens, positions, q, k, flags, elem);
  posenc_positions_release(&buf);
  return st;
}

static posenc_status rerotate_int32(const char *fn, const posenc_rope_plan *from,
                                    const int32_t *from_positions, int32_t from_start,
                                    const posenc_rope_plan *to, const int32_t *to_positions,
                                    int32_t to_start, size_t head_dim, size_t n_tokens,
                                    const posenc_rope_tensor *keys, unsigned flags,
                                    posenc_elem elem) {
  if (!from) return posenc_reject(fn, "from", "is NULL");
  if (!to) return posenc_reject(fn, "to", "is NULL");
  if (!keys) return posenc_reject(fn, "keys", "is NULL");
  if (from->rotary_dim != to->rotary_dim)
    return posenc_reject(fn, "to", "its rotary_dim %zu differs from the rotary_dim %zu of from",
                         to->rotary_dim, from->rotary_dim);
  if (flags & POSENC_ROPE_INVERSE)
    return posenc_reject(fn, "flags",
                         "POSENC_ROPE_INVERSE is refused here (swap the plans and positions)");
  posenc_status st = posenc_check_flags(
      fn, "flags", flags, POSENC_ROPE_GPTJ | POSENC_ROPE_F32_ANGLES | POSENC_ROPE_DETERMINISTIC);
  if (st == POSENC_OK) st = posenc_check_one_position_plan(fn, "from", from);
  if (st == POSENC_OK) st = posenc_check_one_position_plan(fn, "to", to);
  if (st == POSENC_OK)
    st = posenc_check_head_dim(fn, head_dim, to->rotary_dim, "the plans' rotary_dim");
  if (st != POSENC_OK) return st;
  const double ratio = to->attention_factor / from->attention_factor;
  if (!(ratio >= FLT_MIN && ratio <= FLT_MAX))
    return posenc_reject(fn, "to",
                         "its attention factor %g over from's %g gives r = %g, outside "
                         "[FLT_MIN, FLT_MAX]",
                         to->attention_factor, from->attention_factor, ratio);
  st = posenc_check_run(fn, "from_start", "n_tokens", from_positions, from_start, n_tokens);
  if (st == POSENC_OK)
    st = posenc_check_run(fn, "to_start", "n_tokens", to_positions, to_start, n_tokens);
  if (st != POSENC_OK) return st;
  const int same_freqs =
      from == to || memcmp(from->freqs, to->freqs, from->n_pairs * sizeof *from->freqs) == 0;
  rope_args args = posenc_rope_args(to, n_tokens, to_positions, to_start, flags);
  args.att = ratio;
  args.kind = ROPE_REROTATE;
  args.from_plan = from;
  args.from_positions = from_positions;
  args.from_start = from_start;
  args.same_freqs = same_freqs;
  return rope_run(fn, "keys", "keys", &args, head_dim, keys, NULL, elem);
}

/* rerotate_int32 after int64 positions (both arrays) are narrowed. */
static posenc_status rerotate(const char *fn, const posenc_rope_plan *from,
                              const int32_t *from_positions, int32_t from_start,
                              const posenc_rope_plan *to, const int32_t *to_positions,
                              int32_t to_start, size_t head_dim, size_t n_tokens,
                              const posenc_rope_tensor *keys, unsigned flags, posenc_elem elem) {
  posenc_positions32 from_buf, to_buf;
  unsigned to_flags = flags; /* the flag, for the second array */
  to_buf.heap = NULL;
  posenc_status st = posenc_positions_narrow(fn, "from_positions", &from_positions, 1, 1, n_tokens,
                                             &flags, &from_buf);
  if (st == POSENC_OK)
    st = posenc_positions_narrow(fn, "to_positions", &to_positions, 1, 1, n_tokens, &to_flags,
                                 &to_buf);
  if (st == POSENC_OK)
    st = rerotate_int32(fn, from, from_positions, from_start, to, to_positions, to_start, head_dim,
                        n_tokens, keys, flags, elem);
  posenc_positions_release(&from_buf);
  posenc_positions_release(&to_buf);
  return st;
}

/* The public entry points: one per operation and storage type. */

posenc_status posenc_rope_f32(const posenc_rope_plan *plan, size_t head_dim, size_t n_tokens,
                              const int32_t *positions, int32_t start_pos,
                              const posenc_rope_tensor *q, const posenc_rope_tensor *k,
                              unsigned flags) {
  return rope_plain(__func__, plan, head_dim, n_tokens, positions, start_pos, q, k, flags,
                    POSENC_ELEM_F32);
}

posenc_status posenc_rope_bf16(const posenc_rope_plan *plan, size_t head_dim, size_t n_tokens,
                               const int32_t *positions, int32_t start_pos,
                               const posenc_rope_tensor *q, const posenc_rope_tensor *k,
                               unsigned flags) {
  return rope_plain(__func__, plan, head_dim, n_tokens, positions, start_pos, q, k, flags,
                    POSENC_ELEM_BF16);
}

posenc_status posenc_rope_f16(const posenc_rope_plan *plan, size_t head_dim, size_t n_tokens,
                              const int32_t *positions, int32_t start_pos,
                              const posenc_rope_tensor *q, const posenc_rope_tensor *k,
                              unsigned flags) {
  return rope_plain(__func__, plan, head_dim, n_tokens, positions, start_pos, q, k, flags,
                    POSENC_ELEM_F16);
}

posenc_status posenc_mrope_f32(const posenc_rope_plan *plan, const size_t sections[3],
                               size_t head_dim, size_t n_tokens, const int32_t *positions,
                               const posenc_rope_tensor *q, const posenc_rope_tensor *k,
                               unsigned flags) {
  return mrope(__func__, plan, sections, head_dim, n_tokens, positions, q, k, flags,
               POSENC_ELEM_F32);
}

posenc_status posenc_mrope_bf16(const posenc_rope_plan *plan, const size_t sections[3],
                                size_t head_dim, size_t n_tokens, const int32_t *positions,
                                const posenc_rope_tensor *q, const posenc_rope_tensor *k,
                                unsigned flags) {
  return mrope(__func__, plan, sections, head_dim, n_tokens, positions, q, k, flags,
               POSENC_ELEM_BF16);
}

posenc_status posenc_mrope_f16(const posenc_rope_plan *plan, const size_t sections[3],
                               size_t head_dim, size_t n_tokens, const int32_t *positions,
                               const posenc_rope_tensor *q, const posenc_rope_tensor *k,
                               unsigned flags) {
  return mrope(__func__, plan, sections, head_dim, n_tokens, positions, q, k, flags,
               POSENC_ELEM_F16);
}

posenc_status posenc_rope_rerotate_f32(const posenc_rope_plan *from, const int32_t *from_positions,
                                       int32_t from_start, const posenc_rope_plan *to,
                                       const int32_t *to_positions, int32_t to_start,
                                       size_t head_dim, size_t n_tokens,
                                       const posenc_rope_tensor *keys, unsigned flags) {
  return rerotate(__func__, from, from_positions, from_start, to, to_positions, to_start, head_dim,
                  n_tokens, keys, flags, POSENC_ELEM_F32);
}

posenc_status posenc_rope_rerotate_bf16(const posenc_rope_plan *from, const int32_t *from_positions,
                                        int32_t from_start, const posenc_rope_plan *to,
                                        const int32_t *to_positions, int32_t to_start,
                                        size_t head_dim, size_t n_tokens,
                                        const posenc_rope_tensor *keys, unsigned flags) {
  return rerotate(__func__, from, from_positions, from_start, to, to_positions, to_start, head_dim,
                  n_tokens, keys, flags, POSENC_ELEM_BF16);
}

posenc_status posenc_rope_rerotate_f16(const posenc_rope_plan *from, const int32_t *from_positions,
                                       int32_t from_start, const posenc_rope_plan *to,
                                       const int32_t *to_positions, int32_t to_start,
                                       size_t head_dim, size_t n_tokens,
                                       const posenc_rope_tensor *keys, unsigned flags) {
  return rerotate(__func__, from, from_positions, from_start, to, to_positions, to_start, head_dim,
                  n_tokens, keys, flags, POSENC_ELEM_F16);
}
