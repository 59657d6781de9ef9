/* fuzz_rope_kv's decoder: the input format (fuzz_rope_kv.c describes what the bytes pick)
 * read into a kvcall, with the errors posenc.h lists for the decoded arguments (kvcall.sure,
 * .listed). Plans, type pairs, layouts, flags and tensor data are fuzz_rope_views' pieces
 * (rope_views_decode.c), the rules of posenc_rope_out its rope_views_rules.c. The corpus
 * fuzz/corpus/fuzz_rope_kv is in this format (fuzz/make_corpus.py). */
#include <stdint.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rope_kv.h"

/* An argument posenc.h lists as an error: the call may fail; it must with work to do. */
static void expect(kvcall *c, int cond, int work) {
  if (!cond) return;
  c->listed = 1;
  if (work) c->sure = 1;
}

size_t kv_vector_bytes(const kvcall *c) {
  const size_t D = c->q.head_dim;
  return c->q.base.family == KV_Q8 ? D / Q8_BLOCK * Q8_BLOCK_BYTES : D;
}

int64_t kv_row(const kvcall *c, size_t t) { return c->use_slots ? c->idx[t] : (int64_t)t; }

static size_t round4(size_t b) { return (b + 3) & ~(size_t)3; }

static int meet(u128 a, u128 na, u128 b, u128 nb) { return na && nb && a < b + nb && b < a + na; }

/* A view's bytes, from its first element to one past its last (exact). */
static u128 view_range(const vcall *c, const view *v) {
  return view_extent(c, v) * (dtype_known(v->dtype) ? dsize(v->dtype) : 4);
}

/* Puts v after *end (gap bytes more, 4-aligned) and moves *end past it. */
static void place(size_t *end, const vcall *t, view *v, size_t gap) {
  v->off = round4(*end + gap);
  *end = v->off + view_bytes(t, v);
}

/* ---------------------------------------------------------------------- decoding */

/* A norm: none 1/8, else a weight (NULL 1/16; all 1, all 0, or varied in [-2, 2) with a
 * special value sometimes), eps (0, -0, FLT_MIN, common ones; negative, NaN, infinite),
 * flags (GEMMA; unknown bits). */
static void decode_norm(reader *r, const vcall *q, norm_arg *n) {
  static const float eps[16] = {1e-6f,   1e-5f, 0.0f, 1e-6f, 1e-3f,  1e-6f, -0.0f,    1e-5f,
                                FLT_MIN, 1e-6f, 1.0f, 1e-6f, -1e-6f, NAN,   INFINITY, -FLT_MIN};
  const uint8_t b = u8(r);
  if (b % 8 == 0) return;
  n->present = 1;
  n->null_weight = b % 16 == 1 || q->head_dim > 8192;
  n->flags = b % 8 == 7 ? POSENC_QK_NORM_GEMMA : 0u;
  if (b % 8 == 6 && (b & 0x80)) n->flags |= 2u << (b >> 4 & 7);
  n->eps = eps[u8(r) % 16];
  if (n->null_weight) return;
  const size_t D = q->head_dim;
  const uint8_t pb = u8(r);
  n->weight = malloc(D ? D * sizeof(float) : 1);
  if (!n->weight) abort();
  uint32_t h = (uint32_t)pb * 2654435761u | 1u;
  for (size_t d = 0; d < D; ++d) {
    h ^= h << 13;
    h ^= h >> 17;
    h ^= h << 5;
    n->weight[d] = pb % 4 == 0 ? 1.0f : pb % 4 == 1 ? 0.0f : (float)((int)(h % 512) - 256) / 128.0f;
  }
  if (pb % 4 == 3 && D) n->weight[u8(r) % D] = special_float(u8(r), h);
}

/* QKNORM: q's dst (in place or after), k (none, k_dst alone, its own views in place or
 * after, another type pair, k's dst on q's: overlapping, or packed QKV rows in place with
 * q), the two norms. */
static void decode_qknorm(reader *r, kvcall *c, size_t *end) {
  vcall *q = &c->q, *k = &c->k;
  const uint8_t kb = u8(r), pb = u8(r);
  c->with_k = kb % 8 != 0;
  c->k_dst_alone = kb % 16 == 8;
  const size_t q_dst_heads = q->dst.n_heads;
  *k = *q;
  k->src.n_heads = count(r, 4, 0);
  k->dst.n_heads = k->src.n_heads + (kb >= 0xF0);
  c->packed = c->with_k && kb % 8 == 7 && q->n_batch <= 1 && q->n_tokens < 64 &&
              q->src.n_heads <= 4 && k->src.n_heads <= 4;
  if (c->packed) { /* [L, Hq + 2 Hk, D] rows, q's heads then k's, both in place */
    const size_t D = q->head_dim, Hq = q->src.n_heads, Hk = k->src.n_heads;
    q->src.hs = k->src.hs = D;
    q->src.ts = k->src.ts = (Hq + 2 * Hk) * D;
    q->src.bs = k->src.bs = q->n_tokens * q->src.ts;
    k->src.dtype = q->src.dtype;
    k->src.off = q->src.off + Hq * D * dsize(q->src.dtype);
    q->dst = q->src;
    q->dst.n_heads = q_dst_heads;
    k->dst = k->src;
    k->dst.n_heads = k->src.n_heads + (kb >= 0xF0);
    *end = max_size(k->src.off + view_bytes(k, &k->src), q->src.off + view_bytes(q, &q->src));
    k->src.dtype = k->dst.dtype = q->dst.dtype = q->src.dtype;
  } else {
    if (pb % 4 == 0) {
      q->dst = q->src;
      q->dst.n_heads = q_dst_heads;
    } else {
      views_layout(r, q, &q->dst);
      place(end, q, &q->dst, 4 * (pb >> 2 & 1));
    }
    views_layout(r, k, &k->src);
    place(end, k, &k->src, 0);
    const size_t k_dst_heads = k->dst.n_heads;
    if (pb % 8 < 4) {
      k->dst = k->src;
      k->dst.n_heads = k_dst_heads;
    } else {
      views_layout(r, k, &k->dst);
      place(end, k, &k->dst, 0);
    }
    if (pb % 16 == 13) k->dst.off = q->dst.off; /* on q's dst: an overlap */
  }
  if (kb % 32 == 31) { /* another type pair than q's */
    k->src.dtype = POSENC_DTYPE_F32;
    k->dst.dtype = q->dst.dtype == POSENC_DTYPE_BF16 ? POSENC_DTYPE_F16 : POSENC_DTYPE_BF16;
  }
  decode_norm(r, q, &c->qn);
  decode_norm(r, q, &c->kn);
}

/* The cells of the slots: n_cells from n_tokens to n_tokens + 4 (0 1/16), int32 or int64,
 * a permutation of the cells (tokens past them -1); some or all tokens skipped (-1, other
 * negatives incl. INT32_MIN and below); errors: a duplicate cell, a cell >= n_cells (int64:
 * past 2^32 too), NULL index, is_int64 2. */
static void decode_slots(reader *r, kvcall *c) {
  const size_t L = c->q.n_tokens;
  const uint8_t cb = u8(r), mb = u8(r), eb = u8(r);
  c->use_slots = 1;
  c->n_cells = cb % 16 == 15 ? 0 : L + cb % 5;
  c->is64 = (cb >> 4) & 1;
  c->apply_bit = (cb >> 5) & 1; /* SLOTS: the factor form */
  c->idx = calloc(L + 1, sizeof *c->idx);
  size_t *cells = calloc(c->n_cells + 1, sizeof *cells);
  if (!c->idx || !cells) abort();
  uint64_t s = (uint64_t)u32(r) << 1 | 1u;
  for (size_t i = 0; i < c->n_cells; ++i) {
    const size_t j = (size_t)(s % (i + 1));
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    cells[i] = cells[j];
    cells[j] = i;
  }
  static const int64_t negatives[4] = {-1, INT32_MIN, -2, -((int64_t)1 << 40)};
  for (size_t t = 0; t < L; ++t) {
    c->idx[t] = t < c->n_cells ? (int64_t)cells[t] : -1;
    if ((mb % 4 == 1 && t % 3 == 1) || mb % 4 == 2) c->idx[t] = -1;
    if (mb % 4 == 3 && (s >> t) % 4 == 0) c->idx[t] = negatives[(s >> (t + 8)) % (c->is64 ? 4 : 3)];
  }
  free(cells);
  const size_t a = L ? u8(r) % L : 0, b = L ? u8(r) % L : 0;
  switch (eb % 8) {
    case 5: /* a duplicate cell (if both tokens are written) */
      if (a != b) c->idx[a] = c->idx[b];
      break;
    case 6:
      if (L) c->idx[a] = (int64_t)c->n_cells + u8(r) % 3;
      break;
    case 7:
      if (L) c->idx[a] = c->is64 ? ((int64_t)1 << 32) + (int64_t)(eb >> 3) : INT32_MAX;
      break;
    default:
      break;
  }
  c->slots_null = eb == 0xF8;
  c->index_null = eb == 0xF0;
  const int bad_kind = eb == 0xE8;
  c->index = malloc((L ? L : 1) * (c->is64 ? 8 : 4));
  if (!c->index) abort();
  for (size_t t = 0; t < L; ++t) {
    if (c->is64)
      memcpy((char *)c->index + 8 * t, &c->idx[t], 8);
    else {
      const int32_t v = (int32_t)c->idx[t];
      memcpy((char *)c->index + 4 * t, &v, 4);
    }
  }
  c->is64 |= bad_kind << 1; /* the is_int64 passed: 2 */
}

/* The slots' errors. */
static void slots_errors(kvcall *c) {
  const size_t L = c->q.n_tokens;
  const int any = L && c->q.src.n_heads;
  int dup = 0, far = 0;
  for (size_t t = 0; t < L; ++t) {
    if (c->idx[t] >= 0 && (uint64_t)c->idx[t] >= c->n_cells) far = 1;
    for (size_t u = 0; u < t; ++u) dup |= c->idx[t] >= 0 && c->idx[t] == c->idx[u];
  }
  expect(c, c->slots_null || (c->index_null && L) || c->is64 > 1, any);
  expect(c, dup || far, any && c->n_cells);
}

/* At least one token written: the slots' cells, or every row. */
int kv_some_row(const kvcall *c) {
  if (!c->use_slots) return 1;
  if (c->slots_null || c->index_null || !c->n_cells || c->is64 > 1) return 0;
  for (size_t t = 0; t < c->q.n_tokens; ++t)
    if (c->idx[t] >= 0) return 1;
  return 0;
}

/* SLOTS: the cache dst of n_cells cells: vLLM's [cells, H, D], llama.cpp's [H, cells, D], or
 * views_layout's; after src, or starting inside it or at it (an overlap: no in-place form). */
static void decode_cache(reader *r, kvcall *c, size_t *end) {
  vcall *q = &c->q, cells = c->q;
  decode_slots(r, c);
  cells.n_tokens = c->n_cells;
  view *d = &q->dst;
  const size_t D = q->head_dim, H = d->n_heads < 64 ? d->n_heads : 1;
  const uint8_t lb = u8(r);
  switch (lb % 4) {
    case 2:
      d->ts = D, d->hs = c->n_cells * D;
      break;
    case 3:
      views_layout(r, &cells, d);
      break;
    default:
      d->ts = H * D, d->hs = D;
      break;
  }
  d->bs = 0;
  const size_t src_bytes = view_bytes(q, &q->src);
  place(end, &cells, d, 4 * (lb >> 2 & 3));
  if (lb >= 0xF0)
    d->off = (lb & 1) || !src_bytes ? q->src.off : q->src.off + 4 * (u8(r) % src_bytes / 4);
  *end = max_size(*end, d->off + view_bytes(&cells, d));
}

/* posenc_rope_out_slots' view errors: posenc_rope_out's for src, dst the cache of n_cells
 * cells, no in-place form. */
static void cache_errors(kvcall *c) {
  vcall *q = &c->q, cells = c->q;
  cells.n_tokens = c->n_cells;
  const view *s = &q->src, *d = &q->dst;
  const int work = q->n_tokens && s->n_heads && kv_some_row(c);
  expect(c, s->null_view || d->null_view, 1);
  if (s->null_view || d->null_view) return;
  expect(c, !pair_supported(s->dtype, d->dtype) || s->n_heads != d->n_heads, work);
  if (!pair_supported(s->dtype, d->dtype)) return;
  expect(c, s->null_data || d->null_data || s->off % dsize(s->dtype) || d->off % dsize(d->dtype),
         work);
  const u128 sr = view_range(q, s), dr = view_range(&cells, d);
  expect(c, sr > PTRDIFF_MAX || dr > PTRDIFF_MAX || !view_nested(&cells, d), work);
  expect(c, meet(s->off, sr, d->off, dr), work);
}

/* Q8 / FP8: rows (or slots), the destination's heads and strides in bytes (dense, padded,
 * [H, rows, vector], odd, arbitrary), placement (after src, inside it), the fp8 scale. */
static void decode_quant(reader *r, kvcall *c, size_t *end, unsigned misalign) {
  static const float scales[16] = {1.0f, 1.0f,  0.5f, 2.0f,     1.0f / 448, 0.01f, 1e-30f, 1e30f,
                                   0.0f, -1.0f, NAN,  INFINITY, FLT_MIN,    3.0f,  -0.0f,  0.125f};
  vcall *q = &c->q;
  const int q8 = q->base.family == KV_Q8;
  if (u8(r) % 2) decode_slots(r, c);
  if (c->slots_null) c->use_slots = 0; /* NULL slots: rows (valid here) */
  c->rows = c->use_slots ? c->n_cells : q->n_tokens;
  c->qd_heads = q->src.n_heads + (u8(r) % 16 == 0);
  const size_t hv = kv_vector_bytes(c), H = c->qd_heads < 64 ? c->qd_heads : 1;
  const uint8_t lb = u8(r);
  int huge = 0;
  switch (lb % 8) {
    case 4:
      c->qd_hs = hv + 2 * (u8(r) % 3);
      c->qd_ts = H * c->qd_hs + 2 * (u8(r) % 3);
      break;
    case 5:
      c->qd_ts = hv, c->qd_hs = c->rows * hv;
      break;
    case 6: /* odd strides: q8_0 refuses them */
      c->qd_hs = hv + 1, c->qd_ts = H * (hv + 1) + 1;
      break;
    case 7: /* strides in bytes: a huge one is made to pass PTRDIFF_MAX bytes on its own, as
             * common.c's huge element strides do (the library must refuse it) */
      c->qd_hs = stride(r, hv, &huge);
      if (huge && c->qd_hs <= PTRDIFF_MAX) c->qd_hs += (size_t)PTRDIFF_MAX;
      huge = 0;
      c->qd_ts = stride(r, H * hv, &huge);
      if (huge && c->qd_ts <= PTRDIFF_MAX) c->qd_ts += (size_t)PTRDIFF_MAX;
      break;
    default:
      c->qd_hs = hv, c->qd_ts = H * hv;
      break;
  }
  c->scale = q8 ? 1.0f : scales[u8(r) % 16];
  /* The destination: its vcall twin (rows as tokens, the vector as head_dim, bytes) */
  vcall t = *q;
  t.head_dim = hv, t.n_batch = 1, t.n_tokens = c->rows;
  view dv = {POSENC_DTYPE_F32, 0, c->qd_heads, c->qd_ts, c->qd_hs, 0, 0, 0};
  size_t qd_bytes = view_bytes(&t, &dv) / 4; /* view_bytes counts 4-byte elements */
  c->qd_off = round4(*end + 2 * (lb >> 4 & 1));
  if (lb >= 0xF8) c->qd_off = q->src.off + 4 * (u8(r) % 8); /* inside src */
  c->qd_off += misalign;
  *end = max_size(*end, c->qd_off + qd_bytes);
}

/* posenc_rope_out_q8_0 / _fp8's errors besides posenc_rope_out's. */
static void quant_errors(kvcall *c) {
  const vcall *q = &c->q;
  const int q8 = q->base.family == KV_Q8;
  const size_t hv = kv_vector_bytes(c);
  vcall t = *q;
  t.head_dim = hv, t.n_batch = 1, t.n_tokens = c->rows;
  const view dv = {POSENC_DTYPE_F32, 0, c->qd_heads, c->qd_ts, c->qd_hs, 0, 0, 0};
  const view *s = &q->src;
  const size_t R = q->plan ? posenc_rope_plan_rotary_dim(q->plan) : q->rd, D = q->head_dim;
  const int work = q->n_tokens && s->n_heads && kv_some_row(c);
  expect(c, s->null_view || c->qd_null, 1);
  expect(c, s->dtype != POSENC_DTYPE_F32, work);
  expect(c, s->null_data || c->qd_null_data || s->off % 4, work);
  expect(c, (q8 && D % Q8_BLOCK) || D > 4096 || R > 512, work);
  expect(c, c->qd_heads != s->n_heads, work);
  expect(c, q8 && (c->qd_off % 2 || c->qd_ts % 2 || c->qd_hs % 2), work);
  expect(c, !q8 && !(isfinite(c->scale) && c->scale > 0), work);
  const u128 de = view_extent(&t, &dv);
  expect(c, de > PTRDIFF_MAX || !view_nested(&t, &dv), work);
  expect(c, view_range(q, s) > PTRDIFF_MAX, work);
  expect(c, meet(s->off, view_range(q, s), c->qd_off, de), work);
}

/* SLOTS in the factor form, read after the positions: the compute's flags (the call's;
 * INVERSE dropped 1/4, a no-op there), the apply's (the call's, or with GPTJ or
 * DETERMINISTIC flipped: errors; F32_ANGLES, MROPE_INTERLEAVED or POSENC_ROPE_POSITIONS_INT64
 * added: no-ops for the apply), NULL factors (an error); the rows: with a positions array
 * first_row 0-3 (the rows before it other positions, one more row after the tokens
 * sometimes), else first_row 0 and the run from start_pos; a row short (an error). q.flags
 * becomes the plan path's flags of that rotation (compute's GPTJ, DETERMINISTIC, F32_ANGLES;
 * apply's INVERSE), unless the call's flags have unknown bits. */
static void decode_apply(reader *r, kvcall *c) {
  vcall *q = &c->q;
  const size_t L = q->n_tokens;
  const uint8_t ab = u8(r), fb = u8(r);
  const unsigned f = q->flags, plan_path = KNOWN_FLAGS & ~MROPE_FLAGS;
  c->apply = 1;
  c->cflags = ab % 4 == 0 ? f & ~(unsigned)POSENC_ROPE_INVERSE : f;
  c->aflags = f;
  switch (ab >> 2 & 15) {
    case 9:
      c->aflags ^= POSENC_ROPE_GPTJ;
      break;
    case 10:
      c->aflags ^= POSENC_ROPE_DETERMINISTIC;
      break;
    case 11:
      c->aflags |= POSENC_ROPE_F32_ANGLES;
      break;
    case 12:
      c->aflags |= POSENC_ROPE_MROPE_INTERLEAVED;
      break;
    case 13:
      c->aflags |= ROPE_FLAG_INT64;
      break;
    case 14:
      c->factors_null = 1;
      break;
    default:
      break;
  }
  const int short_row = fb % 8 == 7 && L > 0;
  if (q->positions) {
    c->first_row = (fb >> 3) % 4;
    c->n_rows = c->first_row + L + (fb >> 5 & 1) - (size_t)short_row;
    c->row_pos = alloc_i32(c->n_rows + 1);
    for (size_t k = 0; k < c->n_rows; ++k)
      c->row_pos[k] = k < c->first_row       ? wrap32((int64_t)k * 7919 - 3)
                      : k - c->first_row < L ? q->positions[k - c->first_row]
                                             : INT32_MIN;
  } else {
    c->n_rows = L - (size_t)short_row;
    c->row_start = q->start_pos;
  }
  if (!(f & ~plan_path))
    q->flags =
        (c->cflags & (POSENC_ROPE_GPTJ | POSENC_ROPE_DETERMINISTIC | POSENC_ROPE_F32_ANGLES)) |
        (c->aflags & POSENC_ROPE_INVERSE);
}

/* The factor form's errors besides posenc_rope_out_slots': the compute's (its flags; a run
 * past INT32_MAX), the apply's (NULL factors, GPTJ / DETERMINISTIC other than the factors',
 * rows beyond n_rows). */
static void apply_slots_errors(kvcall *c) {
  const vcall *q = &c->q;
  const unsigned plan_path = KNOWN_FLAGS & ~MROPE_FLAGS;
  const int work = q->n_tokens && q->src.n_heads && kv_some_row(c);
  expect(c, (c->cflags & ~plan_path) || (c->aflags & ~KNOWN_FLAGS), 1);
  expect(c,
         !c->row_pos && c->n_rows &&
             (int64_t)c->row_start + (int64_t)(c->n_rows - 1) > (int64_t)INT32_MAX,
         1);
  const unsigned rec = POSENC_ROPE_GPTJ | POSENC_ROPE_DETERMINISTIC;
  expect(c, c->factors_null || (c->aflags & rec) != (c->cflags & rec), 1);
  expect(c, c->first_row + q->n_tokens > c->n_rows, work);
}

kvcall *kv_decode(reader *r) {
  kvcall *c = calloc(1, sizeof *c);
  if (!c) abort();
  vcall *q = &c->q;
  q->base.target = "fuzz_rope_kv";
  const int fam = q->base.family = u8(r) % 4;
  const uint8_t misc = u8(r);
  const uint8_t which = misc % 32 < 4 ? u8(r) : 0;
  const unsigned misalign = misc % 32 == 1 ? 1 + u8(r) % 3 : 0;
  views_plan(r, q);
  views_types(r, q, misc % 32 == 3);
  if (fam >= KV_Q8) { /* src f32 (else an error), the destination's bytes apart */
    if (u8(r) % 16 != 15 && misc % 32 != 3) q->src.dtype = POSENC_DTYPE_F32;
    q->dst.dtype = POSENC_DTYPE_F32;
  }
  const size_t R = q->plan ? posenc_rope_plan_rotary_dim(q->plan) : q->rd;
  const uint8_t ds = u8(r);
  if (fam == KV_Q8 && ds % 8 < 6)
    q->head_dim = (R + Q8_BLOCK - 1) / Q8_BLOCK * Q8_BLOCK + Q8_BLOCK * (ds % 8 == 5);
  else if (ds % 8 == 7)
    q->head_dim = R ? R - 1 - u8(r) % R : 0; /* D < R: refused */
  else
    q->head_dim = ds % 8 < 2 ? R : R + ds % 8 - 1;
  if (ds >= 0xFC) q->head_dim = 4096 + (ds & 1) * Q8_BLOCK; /* the limit, and past it */
  q->n_batch = fam == KV_QKNORM ? count(r, 3, 1) : 1;
  q->n_tokens = count(r, 20, fam == KV_QKNORM);
  q->src.n_heads = count(r, 4, fam == KV_QKNORM);
  q->dst.n_heads = q->src.n_heads + (u8(r) % 16 == 0);
  views_layout(r, q, &q->src);
  size_t end = 4 * (size_t)(u8(r) % 3);
  place(&end, q, &q->src, 0);
  if (fam == KV_QKNORM)
    decode_qknorm(r, c, &end);
  else if (fam == KV_SLOTS)
    decode_cache(r, c, &end);
  else
    decode_quant(r, c, &end, misc % 32 == 1 && which % 2 ? misalign : 0);
  /* NULL data, a misaligned view, a NULL struct: the view `which` picks */
  view *views[4] = {&q->src, &q->dst, &c->k.src, &c->k.dst};
  view *v = views[which % 4];
  if (fam >= KV_Q8 && which % 2) v = NULL; /* the destination: qd_* */
  if (fam != KV_QKNORM && which % 4 >= 2) v = &q->src;
  if (misc % 32 == 0) {
    if (v)
      v->null_data = 1;
    else
      c->qd_null_data = 1;
  }
  if (misc % 32 == 1 && v) v->off += misalign;
  if (misc % 32 == 2) {
    if (fam == KV_SLOTS && which % 4 == 3)
      c->slots_null = 1;
    else if (v)
      v->null_view = 1;
    else
      c->qd_null = 1;
  }
  q->base.len = end / 4 + 2;
  q->flags = views_flags(r, 0) & ~ROPE_FLAG_INT64; /* int32 positions */
  const size_t N =
      q->n_batch && q->n_tokens > SIZE_MAX / q->n_batch ? SIZE_MAX : q->n_batch * q->n_tokens;
  q->positions = positions_of(r, N, &q->start_pos);
  if (fam == KV_SLOTS && c->apply_bit) decode_apply(r, c);
  c->k.positions = q->positions;
  c->k.start_pos = q->start_pos;
  c->k.flags = q->flags;
  /* the errors posenc_rope_out lists (the views': per family) */
  int sure = 0, listed = 0;
  if (fam == KV_QKNORM) {
    vcall *k = &c->k;
    const size_t D = q->head_dim;
    const int wq = q->n_batch && q->n_tokens && q->src.n_heads;
    const int wk = c->with_k && q->n_batch && q->n_tokens && k->src.n_heads;
    op_errors(q, &sure, &listed);
    if (c->with_k) op_errors(k, &sure, &listed);
    expect(c, !c->with_k && (c->k_dst_alone || c->kn.present), wq);
    expect(c, c->with_k && (k->src.dtype != q->src.dtype || k->dst.dtype != q->dst.dtype),
           wq && wk);
    const norm_arg *ns[2] = {&c->qn, &c->kn};
    for (int j = 0; j < 2; ++j) {
      const norm_arg *n = ns[j];
      if (!n->present) continue;
      const int w = j ? wk : wq;
      expect(c, n->null_weight || !isfinite(n->eps) || n->eps < 0 || (n->flags & ~1u), w);
      expect(c, R > 512 || D > 4096, w);
    }
    if (c->with_k && !c->packed) {
      const u128 qs = view_range(q, &q->src), qd = view_range(q, &q->dst);
      const u128 ks = view_range(k, &k->src), kd = view_range(k, &k->dst);
      expect(c,
             meet(q->dst.off, qd, k->src.off, ks) || meet(q->dst.off, qd, k->dst.off, kd) ||
                 meet(k->dst.off, kd, q->src.off, qs),
             wq && wk);
    }
  } else if (c->apply) {
    /* The factor form reads no positions: the compute takes the plan with its own rows
     * (apply_slots_errors), so the plan form's rule on a run of the call's positions past
     * INT32_MAX is not the apply's; its other rules are. */
    vcall p = *q;
    p.start_pos = 0;
    plan_op_errors(&p, 0, &sure, &listed);
  } else {
    plan_op_errors(q, 0, &sure, &listed);
  }
  if (fam != KV_QKNORM && c->use_slots) slots_errors(c);
  if (fam == KV_SLOTS) cache_errors(c);
  if (c->apply) apply_slots_errors(c);
  if (fam >= KV_Q8) quant_errors(c);
  c->sure |= sure;
  c->listed |= listed | sure;
  return c;
}
