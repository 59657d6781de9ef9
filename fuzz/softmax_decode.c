/* fuzz_softmax's decoder: the input format (fuzz_softmax.c describes what the bytes pick)
 * read into a softmax_call, with what posenc.h says of the decoded arguments (must_fail,
 * must_pass): posenc_softmax's, and for posenc_softmax_batched (misc % 32 in 10..12) its
 * batch count and strides, ggml's mask broadcast (mask_n_heads, mask_n_batch,
 * mask_batch_stride) and int64 positions. The corpus fuzz/corpus/fuzz_softmax is in this
 * format (fuzz/make_corpus.py). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "softmax_call.h"

#pragma STDC FP_CONTRACT OFF /* as in fuzz_softmax.c */

static size_t round4(size_t b) { return (b + 3) & ~(size_t)3; }

/* The elements from the first to one past the last of an [na, nb] grid of rows of w, if
 * its bytes fit in PTRDIFF_MAX (every count >= 1). */
static int extent_of(size_t na, size_t sa, size_t nb, size_t sb, size_t w, size_t esz,
                     size_t *ext) {
  const unsigned __int128 e =
      (unsigned __int128)(na - 1) * sa + (unsigned __int128)(nb - 1) * sb + w;
  if (e * esz > (unsigned __int128)PTRDIFF_MAX) return 0;
  *ext = (size_t)e;
  return 1;
}

static int bytes_meet(size_t a, size_t na, size_t b, size_t nb) {
  return na && nb && a < b + nb && b < a + na;
}

/* ---------------------------------------------------------------------- decoding */

/* A view's strides; *odd for common.h's arbitrary ones (maybe overlapping or not nested). */
static void decode_layout(reader *r, const softmax_call *c, size_t *hs, size_t *rs, int *odd) {
  const size_t nk = c->n_k < HUGE_BASE ? c->n_k : 1, nq = c->n_q < HUGE_BASE ? c->n_q : 1;
  const size_t nh = c->n_heads < HUGE_BASE ? c->n_heads : 1;
  int huge = 0;
  const uint8_t b = u8(r);
  switch (b % 8) {
    case 0:
    case 1: /* [H, n_q, n_k] */
      *rs = nk;
      *hs = nq * nk;
      break;
    case 2: /* the same, row stride 0 */
      *rs = 0;
      *hs = nq * nk;
      break;
    case 3:
    case 4: /* [n_q, H, n_k] */
      *hs = nk;
      *rs = nh * nk;
      break;
    case 5: /* [H, n_q, n_k], padded */
      *rs = nk + 1 + u8(r) % 9;
      *hs = nq * *rs + u8(r) % 5;
      break;
    case 6: /* [n_q, H, n_k], padded */
      *hs = nk + u8(r) % 5;
      *rs = nh * *hs + u8(r) % 3;
      break;
    default:
      *rs = stride(r, nk, &huge);
      *hs = stride(r, nq * nk, &huge);
      *odd = 1;
  }
}

/* Positions of n keys or queries: NULL, or an array (runs, gaps, repeats, any order, or
 * common.h's special values). */
static int32_t *decode_positions(reader *r, size_t n) {
  const uint8_t mode = u8(r);
  if (mode % 8 < 4 || n > 4096) return NULL;
  int32_t *p = malloc((n ? n : 1) * sizeof *p);
  if (!p) abort();
  if (!n) {
    p[0] = -1; /* never read */
    return p;
  }
  const uint8_t sb = u8(r);
  int64_t next = sb & 1 ? (int64_t)INT32_MAX - (int64_t)(n - 1) - sb % 8 : sb % 32;
  uint64_t s = (uint64_t)u32(r) << 1 | 1u;
  for (size_t t = 0; t < n; ++t) {
    switch (mode % 8) {
      case 4: /* a run */
        p[t] = (int32_t)next;
        ++next;
        break;
      case 5: /* gaps and repeats */
        p[t] = (int32_t)next;
        next += xorshift(&s) % 4;
        if (next > INT32_MAX) next = INT32_MAX;
        break;
      case 6: /* any order in [0, 2n + 8) */
        p[t] = (int32_t)(xorshift(&s) % (2 * n + 8));
        break;
      default: { /* a run broken by special values (negative too) and -1 (an empty cell) */
        const uint32_t x = xorshift(&s) % 8;
        p[t] = x == 7 ? special_position(r) : x == 6 ? -1 : (int32_t)next;
        if (next < INT32_MAX) ++next;
      }
    }
  }
  return p;
}

/* int64 copies of n positions for posenc_softmax_batched; with bit 3 of b one value outside
 * int32 (*bad). */
static int64_t *positions64(const int32_t *p, size_t n, uint8_t b, int *bad) {
  int64_t *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) abort();
  for (size_t i = 0; i < n; ++i) v[i] = p[i];
  if ((b & 8) && n) {
    v[(b >> 5) % n] = b & 16 ? (int64_t)INT32_MAX + 1 : (int64_t)INT32_MIN - 1 - (b >> 5);
    *bad = 1;
  }
  return v;
}

static void set_heap(aux_array *a, const void *values, size_t bytes, size_t mis) {
  a->present = 1;
  a->bytes = bytes;
  a->mis = mis;
  a->heap = malloc(bytes + mis ? bytes + mis : 1);
  if (!a->heap) abort();
  memset(a->heap, 0xA5, mis);
  if (bytes) memcpy(a->heap + mis, values, bytes);
}

/* Slopes (NULL, posenc_alibi_slopes', or given, 1/16 special) or sinks. */
static float *decode_head_values(reader *r, size_t n_heads, int sinks) {
  const uint8_t mode = u8(r) % 4;
  if (mode == 0 || (sinks && mode == 1) || n_heads > MAX_HEADS) return NULL;
  float *v = malloc((n_heads + 1) * sizeof *v);
  if (!v) abort();
  if (!sinks && mode == 1 && n_heads &&
      posenc_alibi_slopes(n_heads, u8(r) % 2 ? 8.0 : 0.5 + u8(r) % 16, v) == POSENC_OK)
    return v;
  for (size_t h = 0; h < n_heads; ++h) {
    const uint8_t b = u8(r);
    if (b < 16)
      v[h] = special_float(b, u32(r));
    else
      v[h] = sinks ? (float)((int)b - 136) / (mode == 3 ? 2.0f : 16.0f)
                   : (float)((int)b - 136) / 64.0f;
  }
  return v;
}

/* A mask value of one pattern for key j of query row i (positions qp, kp). */
static float mask_value(int pattern, uint64_t *s, int64_t qp, int64_t kp, int row_all_hidden,
                        int32_t w2) {
  const uint32_t x = xorshift(s);
  switch (pattern) {
    case 0:
      return 0.0f;
    case 1: /* causal */
      return kp > qp ? -INFINITY : 0.0f;
    case 2: /* random -inf */
      return x % 4 == 0 ? -INFINITY : (float)(int8_t)(x >> 8) / 16.0f;
    case 3: /* ggml's ALiBi mask, causal */
      return kp > qp ? -INFINITY : -(float)(qp > kp ? qp - kp : kp - qp);
    case 4: /* a sliding window, causal */
      return kp > qp || qp - kp >= w2 ? -INFINITY : 0.0f;
    case 5: /* rows all -inf, else random */
      return row_all_hidden || x % 2 ? -INFINITY : (float)(int8_t)(x >> 8) / 8.0f;
    case 6: { /* special values */
      static const float sp[8] = {NAN, INFINITY, -INFINITY, 1e30f, -FLT_MAX, 1e-40f, -0.0f, 0.0f};
      return x % 4 ? 0.0f : sp[(x >> 4) % 8];
    }
    default: /* large magnitudes (HF's finfo.min) */
      return x % 3 == 0 ? -FLT_MAX : x % 3 == 1 ? -(float)(x >> 20) * 100.0f : (float)(x >> 24);
  }
}

call *softmax_decode(reader *r) {
  softmax_call *c = calloc(1, sizeof *c);
  if (!c) abort();
  call *base = &c->base;
  const uint8_t misc = decode_header(r, base, 0);
  c->batched = misc % 32 >= 10 && misc % 32 <= 12;
  const uint8_t which = u8(r);
  c->null_y = which & 1;
  const int mis_target = (which >> 1) % 7;
  c->null_struct = which >= 0xFC ? 1 + which % 3 : 0;
  const size_t mis = base->misalign;

  c->n_heads = count(r, MAX_HEADS, 1);
  c->n_q = count(r, MAX_Q, 1);
  const uint8_t kb = u8(r);
  c->n_k = kb == 0xFF ? HUGE_BASE + u8(r) : kb < 0xC0 ? kb % 70 : 70 + u16(r) % (MAX_K - 69);
  /* posenc_softmax_batched: n_batch (0-3, huge), the batch strides, the mask's broadcast,
   * int64 positions */
  uint8_t bsm = 0, mhb = 0, mbb = 0, p64 = 0;
  c->n_batch = 1;
  if (c->batched) {
    const uint8_t bb = u8(r);
    c->n_batch = bb == 0xFF ? HUGE_BASE + u8(r) : bb % 4;
    bsm = u8(r), mhb = u8(r), mbb = u8(r), p64 = u8(r);
  }
  const size_t nb = c->n_batch < HUGE_BASE ? c->n_batch : 1;
  c->work = c->n_heads && c->n_q && c->n_k && c->n_batch;
  const int small = c->n_heads <= MAX_HEADS && c->n_q <= MAX_Q && c->n_k <= MAX_K;

  /* Types, in place or not. */
  const uint8_t tb = u8(r);
  c->xdt = (posenc_dtype)(tb % 3);
  c->ydt = (posenc_dtype)((tb / 3) % 3);
  c->in_place = (tb / 9) % 3 == 0;
  if (c->in_place) c->ydt = c->xdt;
  if (tb >= 0xFA) *(tb & 1 ? &c->xdt : &c->ydt) = (posenc_dtype)(3 + (tb & 4));
  c->xsz = dtype_size(c->xdt);
  c->ysz = dtype_size(c->ydt);
  base->halves = c->ysz == 2;
  base->bf16 = c->ydt == POSENC_DTYPE_BF16;

  /* Layouts. */
  int x_odd = 0, y_odd = 0;
  decode_layout(r, c, &c->x_hs, &c->x_rs, &x_odd);
  if (!c->in_place || u8(r) % 16 == 0) {
    decode_layout(r, c, &c->y_hs, &c->y_rs, &y_odd);
  } else {
    c->y_hs = c->x_hs;
    c->y_rs = c->x_rs;
    y_odd = x_odd;
  }
  c->x_rse = c->x_rs ? c->x_rs : c->n_k;
  c->y_rse = c->y_rs ? c->y_rs : c->n_k;
  size_t x_ext = 0, y_ext = 0;
  const int x_ok =
      c->work && extent_of(c->n_heads, c->x_hs, c->n_q, c->x_rse, c->n_k, c->xsz, &x_ext);
  const int y_ok =
      c->work && extent_of(c->n_heads, c->y_hs, c->n_q, c->y_rse, c->n_k, c->ysz, &y_ext);
  /* batch strides: x dense, padded, 0 (every batch reads one x) or 2 extents; y the same or
   * one element short of its extent (batches overlap: an error, as 0 is) */
  int y_batch_overlap = 0;
  if (c->batched) {
    const size_t pad = 1 + bsm / 16 % 4, yk = bsm / 4 % 4;
    c->x_bs = bsm % 4 == 0 ? x_ext : bsm % 4 == 1 ? x_ext + pad : bsm % 4 == 2 ? 0 : 2 * x_ext;
    c->y_bs = yk == 0 ? y_ext : yk == 1 ? y_ext + pad : yk == 2 ? 0 : y_ext ? y_ext - 1 : 0;
    if (c->in_place) c->y_bs = c->x_bs;
    y_batch_overlap = nb > 1 && c->y_bs < y_ext;
  }
  c->x_bytes = x_ok && small ? (x_ext + (nb - 1) * c->x_bs) * c->xsz : 0;
  c->y_bytes = y_ok && small ? (y_ext + (nb - 1) * c->y_bs) * c->ysz : 0;
  int y_overlap = 0; /* two rows of y share an element */
  if (y_ok && small)
    for (size_t a = 0; a < c->n_heads * c->n_q; ++a)
      for (size_t b = a + 1; b < c->n_heads * c->n_q; ++b) {
        const size_t oa = a / c->n_q * c->y_hs + a % c->n_q * c->y_rse;
        const size_t ob = b / c->n_q * c->y_hs + b % c->n_q * c->y_rse;
        if ((oa > ob ? oa - ob : ob - oa) < c->n_k) y_overlap = 1;
      }

  /* Placement: y, then x after it, or x then y, or x inside y / at y. */
  const uint8_t pb = u8(r);
  const size_t start = 4 * (size_t)(u8(r) % 4);
  const size_t y_mis = mis_target == MIS_Y ? mis : 0, x_mis = mis_target == MIS_X ? mis : 0;
  int placement = c->in_place ? -1 : pb % 8;
  switch (placement) {
    case -1:
      c->y_byte = start + y_mis;
      c->x_byte = start + x_mis;
      break;
    case 4:
    case 5:
      c->x_byte = start + x_mis;
      c->y_byte = round4(c->x_byte + c->x_bytes) + 4 * (pb / 8 % 4) + y_mis;
      break;
    case 6: {
      c->y_byte = start + y_mis;
      const size_t into = c->y_bytes ? (size_t)u16(r) % c->y_bytes : 0;
      c->x_byte = c->y_byte - y_mis + (into - into % 4) + x_mis;
      break;
    }
    case 7:
      c->y_byte = start + y_mis;
      c->x_byte = start + x_mis;
      break;
    default:
      c->y_byte = start + y_mis;
      c->x_byte = round4(c->y_byte + c->y_bytes) + 4 * (pb / 8 % 4) + x_mis;
  }

  /* Scalars. */
  posenc_softmax_params *p = &c->p;
  *p = (posenc_softmax_params)POSENC_SOFTMAX_PARAMS_INIT;
  {
    const uint8_t qb = u8(r);
    const int64_t nq = c->n_q < HUGE_BASE ? (int64_t)c->n_q : 0;
    int64_t q;
    switch (qb % 8) {
      case 0:
        q = 0;
        break;
      case 1: /* decode style */
        q = c->n_k <= MAX_K && (int64_t)c->n_k >= nq ? (int64_t)c->n_k - nq : 0;
        break;
      case 2: /* the last run that fits */
        q = (int64_t)INT32_MAX - (nq ? nq - 1 : 0);
        break;
      case 3: /* one past */
        q = (int64_t)INT32_MAX - nq + 2;
        break;
      case 4:
        q = -1 - (int64_t)u8(r);
        break;
      case 5:
        q = u16(r) % 2000;
        break;
      default:
        q = u8(r) % (c->n_k <= MAX_K ? c->n_k + 8 : 64);
    }
    p->q_offset = (int32_t)(q > INT32_MAX ? INT32_MAX : q);
  }
  p->flags = flags_of(r, KNOWN_FLAGS);
  {
    const uint8_t wb = u8(r);
    switch (wb % 8) {
      case 7:
        p->window = 0;
        break;
      case 6:
        p->window = -1 - (int32_t)u8(r);
        break;
      case 5:
        p->window = INT32_MAX;
        break;
      case 4:
        p->window = 1;
        break;
      default:
        p->window = 1 + (int32_t)(u16(r) % (c->n_k <= MAX_K ? c->n_k + 16 : 64));
    }
  }
  {
    static const float caps[10] = {30.0f, 50.0f, 1.0f,  0.01f, 1e6f,
                                   5.0f,  0.0f,  -1.0f, NAN,   INFINITY};
    const uint8_t cb = u8(r);
    p->softcap = cb % 16 < 10 ? caps[cb % 16] : (float)(1 + u8(r) % 64) / 2.0f;
  }
  {
    static const double scales[] = {1.0, 0.125, 0.08838834764831845, 2.0, -1.0};
    const uint8_t sb = u8(r);
    p->scale = sb % 4 < 3 ? (float)scales[sb % 4] : (float)param(r, scales, 5);
  }

  /* Slopes, sinks, positions: malloc'd to the byte (and misaligned where misc says). */
  float *slopes = decode_head_values(r, c->n_heads, 0);
  float *sinks = decode_head_values(r, c->n_heads, 1);
  int32_t *kpos = c->n_k <= MAX_K ? decode_positions(r, c->n_k) : NULL;
  int32_t *qpos = c->n_q <= MAX_Q ? decode_positions(r, c->n_q) : NULL;
  const size_t amis[AUX_COUNT] = {
      mis_target == MIS_AUX + AUX_MASK ? mis : 0, mis_target == MIS_AUX + AUX_SLOPES ? mis : 0,
      mis_target == MIS_AUX + AUX_SINKS ? mis : 0, mis_target == MIS_AUX + AUX_KPOS ? mis : 0,
      mis_target == MIS_AUX + AUX_QPOS ? mis : 0};
  int bad64 = 0;
  if (c->batched && (p64 & 1) && kpos && !amis[AUX_KPOS])
    c->kpos64 = positions64(kpos, c->n_k, p64, &bad64);
  if (c->batched && (p64 & 2) && qpos && !amis[AUX_QPOS])
    c->qpos64 = positions64(qpos, c->n_q, p64 >> 1, &bad64);
  c->pos_both = (p64 & 4) && (c->kpos64 || c->qpos64);
  if (slopes) set_heap(&c->aux[AUX_SLOPES], slopes, c->n_heads * 4, amis[AUX_SLOPES]);
  if (sinks) set_heap(&c->aux[AUX_SINKS], sinks, c->n_heads * 4, amis[AUX_SINKS]);
  if (kpos) set_heap(&c->aux[AUX_KPOS], kpos, c->n_k * 4, amis[AUX_KPOS]);
  if (qpos) set_heap(&c->aux[AUX_QPOS], qpos, c->n_q * 4, amis[AUX_QPOS]);

  /* The mask. */
  int mask_ok = 1;
  /* Of the keys with a negative kpos: 0 every one -inf in every row of the generated mask,
   * 1 one not, -1 unknown (no mask values generated). */
  int neg_unmasked = -1;
  {
    const uint8_t mb = u8(r);
    if (mb % 8 >= 3) {
      p->mask_dtype = (mb >> 3) & 1 ? POSENC_DTYPE_F16 : POSENC_DTYPE_F32;
      if (mb >= 0xF8) p->mask_dtype = (posenc_dtype)(mb & 1 ? 1 : 5); /* bf16 / unknown */
      c->msz = dtype_size(p->mask_dtype);
      const size_t nk = c->n_k <= MAX_K ? c->n_k : 1, nq = c->n_q <= MAX_Q ? c->n_q : 1;
      const size_t nh = c->n_heads <= MAX_HEADS ? c->n_heads : 1;
      int huge = 0;
      const uint8_t rb = u8(r);
      switch (rb % 8) {
        case 0:
          p->mask_row_stride = 0;
          break;
        case 4:
          p->mask_row_stride = nk + 1 + u8(r) % 7;
          break;
        case 5: /* below n_k (0: valid) */
          p->mask_row_stride = nk ? nk - 1 - u8(r) % nk : 0;
          break;
        case 6:
          p->mask_row_stride = stride(r, nk, &huge);
          break;
        case 7:
          p->mask_row_stride = 2 * nk;
          break;
        default:
          p->mask_row_stride = nk;
      }
      const size_t mrs = p->mask_row_stride ? p->mask_row_stride : nk;
      const uint8_t hb = u8(r);
      switch (hb % 4) {
        case 0:
          p->mask_head_stride = 0;
          break;
        case 1:
          p->mask_head_stride = nq * mrs;
          break;
        case 2:
          p->mask_head_stride = stride(r, nq * mrs, &huge);
          break;
        default:
          p->mask_head_stride = mrs;
      }
      /* ggml's broadcast (batched): mask_n_heads 0, 1, n_heads, 2 or 3; mask_n_batch 0, 1,
       * n_batch or 2 (maybe not dividing), the masks of the batches m_ext (+ 3) apart */
      if (c->batched) {
        p->mask_n_heads = mhb % 4 == 0 ? 0 : mhb % 4 == 1 ? 1 : mhb % 4 == 2 ? nh : 2 + mhb / 4 % 2;
        p->mask_n_batch = mbb % 4 == 0 ? 0 : mbb % 4 == 1 ? 1 : mbb % 4 == 2 ? nb : 2;
      } else { /* posenc_softmax: the head byte's bits 2-4 (0-3: none, as before), 5-7 */
        const unsigned mh = hb >> 2 & 7;
        p->mask_n_heads = mh < 4 ? 0 : mh == 4 ? 1 : mh == 5 ? nh : mh - 4;
        p->mask_n_batch = hb >> 5 == 5 ? 1 : hb >> 5 == 6 ? 2 : 0; /* 2: one batch, an error */
      }
      const int pattern = u8(r) % 8;
      const uint8_t wb = u8(r);
      const int32_t w2 = 1 + wb % 64;
      const int hide_negative = (wb & 0x40) != 0; /* -inf at every key with kpos < 0 */
      uint64_t s = (uint64_t)u32(r) << 1 | 1u;
      size_t m_ext = 0;
      const size_t mheads = p->mask_n_heads ? p->mask_n_heads : c->n_heads;
      const size_t mbatches = p->mask_n_batch > 1 ? p->mask_n_batch : 1;
      if (c->work)
        mask_ok =
            extent_of(mheads, p->mask_head_stride, c->n_q,
                      p->mask_row_stride ? p->mask_row_stride : c->n_k, c->n_k, c->msz, &m_ext);
      p->mask_batch_stride = mbatches > 1 ? m_ext + 3 * (mbb >> 7) : mbb >> 4;
      const size_t m_all = mask_ok ? (mbatches - 1) * p->mask_batch_stride + m_ext : 0;
      if (c->work && mask_ok && small && dtype_ok(p->mask_dtype)) {
        /* Every element NaN, then the rows' values (overlapping rows: the last). */
        unsigned char *m = malloc(m_all * c->msz);
        if (!m) abort();
        for (size_t e = 0; e < m_all; ++e) store(m, e, NAN, p->mask_dtype);
        for (size_t mb = 0; mb < mbatches; ++mb)
          for (size_t h = 0; h < mheads; ++h)
            for (size_t i = 0; i < c->n_q; ++i) {
              const int64_t qp = qpos ? qpos[i] : (int64_t)p->q_offset + (int64_t)i;
              const int row_hidden = xorshift(&s) % 2;
              for (size_t j = 0; j < c->n_k; ++j) {
                const int64_t kp = kpos ? kpos[j] : (int64_t)j;
                const size_t e = mb * p->mask_batch_stride + h * p->mask_head_stride + i * mrs + j;
                const float v = mask_value(pattern, &s, qp, kp, row_hidden, w2);
                store(m, e, hide_negative && kp < 0 ? -INFINITY : v, p->mask_dtype);
              }
            }
        /* What the rows read (overlapping rows: the last value stored). */
        neg_unmasked = 0;
        for (size_t e0 = 0; e0 < mbatches * c->n_heads; ++e0) { /* every mask slice used */
          const size_t at = e0 / c->n_heads * p->mask_batch_stride +
                            mask_head(c, e0 % c->n_heads) * p->mask_head_stride;
          for (size_t i = 0; i < c->n_q; ++i)
            for (size_t j = 0; kpos && j < c->n_k; ++j)
              if (kpos[j] < 0 && load(m, at + i * mrs + j, p->mask_dtype) != -INFINITY)
                neg_unmasked = 1;
        }
        set_heap(&c->aux[AUX_MASK], m, m_all * c->msz, amis[AUX_MASK]);
        free(m);
      } else {
        const uint32_t nan = 0x7fc00000u; /* never read */
        set_heap(&c->aux[AUX_MASK], &nan, 4, amis[AUX_MASK]);
      }
    }
  }
  free(slopes);
  free(sinks);
  free(kpos);
  free(qpos);

  /* Sometimes one array in the arena: inside y (must fail), inside x, just after y, or
   * after everything. */
  size_t end = max_size(c->y_byte + c->y_bytes, c->x_byte + c->x_bytes);
  const uint8_t ab = u8(r);
  if (ab % 8 == 7 && c->work && small) {
    aux_array *a = &c->aux[u8(r) % AUX_COUNT];
    const int as64 = (a == &c->aux[AUX_KPOS] && c->kpos64) || (a == &c->aux[AUX_QPOS] && c->qpos64);
    if (a->present && a->bytes && !as64) { /* (int64 positions are read from the heap) */
      const uint8_t where = u8(r) % 4;
      const size_t amis_here = a->mis;
      size_t at;
      if (where == 0 && c->y_bytes) {
        const size_t into = (size_t)u16(r) % c->y_bytes;
        at = c->y_byte - (c->y_byte % 4) + into - into % 4;
      } else if (where == 1) {
        at = round4(c->y_byte + c->y_bytes);
      } else if (where == 2 && !c->in_place && c->x_bytes) {
        const size_t into = (size_t)u16(r) % c->x_bytes;
        at = c->x_byte - (c->x_byte % 4) + into - into % 4;
      } else {
        at = round4(end) + 4 * (u8(r) % 4);
      }
      a->in_arena = 1;
      a->arena_byte = at + amis_here;
      end = max_size(end, a->arena_byte + a->bytes);
    }
  }
  base->len = (end + 3) / 4 + 1;

  c->split_check = u8(r) % 4 == 0;
  c->poison = u8(r) % 2;

  /* What posenc.h says of these arguments. */
  const unsigned flags = p->flags;
  int fail = c->null_struct != 0 || !dtype_ok(c->xdt) || !dtype_ok(c->ydt) ||
             (flags & ~(unsigned)KNOWN_FLAGS) || !isfinite(p->scale) ||
             ((flags & POSENC_SOFTMAX_SOFTCAP) && !(isfinite(p->softcap) && p->softcap > 0)) ||
             ((flags & POSENC_SOFTMAX_WINDOW) && p->window < 1);
  const int has_mask = c->aux[AUX_MASK].present;
  if (has_mask && !(p->mask_dtype == POSENC_DTYPE_F32 || p->mask_dtype == POSENC_DTYPE_F16))
    fail = 1;
  if ((flags & POSENC_SOFTMAX_MASK_SLOPE) && !(has_mask && c->aux[AUX_SLOPES].present)) fail = 1;
  if (!c->aux[AUX_QPOS].present &&
      (p->q_offset < 0 ||
       (c->n_q > 0 &&
        (c->n_q >= HUGE_BASE || (int64_t)p->q_offset + (int64_t)c->n_q - 1 > (int64_t)INT32_MAX))))
    fail = 1;
  if (!c->aux[AUX_KPOS].present && c->n_k > (size_t)INT32_MAX + 1) fail = 1;
  if (has_mask && p->mask_row_stride != 0 && p->mask_row_stride < c->n_k) fail = 1;
  int doubt = 0;
  if (c->work) {
    const size_t yb = y_ok ? (y_ext + (nb - 1) * c->y_bs) * c->ysz : 0;
    const size_t xb = x_ok ? (x_ext + (nb - 1) * c->x_bs) * c->xsz : 0;
    if (base->null_data || c->x_byte % c->xsz || c->y_byte % c->ysz || !x_ok || !y_ok ||
        y_overlap || !mask_ok)
      fail = 1;
    if (bytes_meet(c->x_byte, xb, c->y_byte, yb)) {
      /* The same view is in place; the same but for a stride that is never used is
       * either; any other overlap is an error. */
      const int same_b = c->n_batch <= 1 || c->x_bs == c->y_bs; /* batched: its stride too */
      const int loosely = c->x_byte == c->y_byte && c->xdt == c->ydt &&
                          (c->x_hs == c->y_hs || c->n_heads == 1) &&
                          (c->x_rse == c->y_rse || c->n_q == 1) && same_b;
      const int same = c->x_byte == c->y_byte && c->xdt == c->ydt && c->x_hs == c->y_hs &&
                       c->x_rse == c->y_rse && same_b;
      if (!same) {
        if (loosely)
          doubt = 1;
        else
          fail = 1;
      }
    }
    const size_t align[AUX_COUNT] = {c->msz, 4, 4, 4, 4};
    for (int k = 0; k < AUX_COUNT; ++k) {
      const aux_array *a = &c->aux[k];
      if (!a->present) continue;
      const size_t at = a->in_arena ? a->arena_byte : a->mis; /* heap: malloc-aligned */
      if (align[k] && at % align[k]) fail = 1;
      if (a->in_arena && bytes_meet(a->arena_byte, a->bytes, c->y_byte, yb)) fail = 1;
    }
    /* (An array copied into the arena holds these same values.) */
    const aux_array *sl = &c->aux[AUX_SLOPES], *sk = &c->aux[AUX_SINKS];
    const aux_array *kp = &c->aux[AUX_KPOS], *qp = &c->aux[AUX_QPOS];
    for (size_t h = 0; h < c->n_heads && c->n_heads <= MAX_HEADS; ++h) {
      if (sl->present && !isfinite(read_f32(sl->heap + sl->mis, h))) fail = 1;
      if (sk->present && !isfinite(read_f32(sk->heap + sk->mis, h))) fail = 1;
    }
    /* A negative kpos: allowed at a key the mask hides in every row, or with
     * POSENC_SOFTMAX_KPOS_NEG_HIDDEN. */
    int kpos_negative = 0;
    for (size_t j = 0; kp->present && j < c->n_k; ++j)
      if (read_i32(kp->heap + kp->mis, j) < 0) kpos_negative = 1;
    if (kpos_negative && !(flags & POSENC_SOFTMAX_KPOS_NEG_HIDDEN)) {
      if (!has_mask || neg_unmasked == 1)
        fail = 1;
      else if (neg_unmasked < 0)
        doubt = 1;
    }
    for (size_t i = 0; qp->present && i < c->n_q; ++i)
      if (read_i32(qp->heap + qp->mis, i) < 0) fail = 1;
    if (x_odd || y_odd || (c->n_q > 1 && c->x_rse < c->n_k)) doubt = 1;
    if (bad64 || y_batch_overlap || c->n_batch >= HUGE_BASE) fail = 1;
  }
  /* posenc_softmax_batched: a mask that does not broadcast, positions given twice */
  if (has_mask && p->mask_n_heads && c->n_heads % p->mask_n_heads) fail = 1;
  if (has_mask && p->mask_n_batch > 1 && c->n_batch % p->mask_n_batch) fail = 1;
  if (c->pos_both) fail = 1;
  if (c->n_batch >= HUGE_BASE) doubt = 1;
  base->must_fail = fail;
  c->must_pass = !fail && !doubt;
  return base;
}
