/* libFuzzer target: posenc_mrope_f32 (byte 0 % 2 == 0) and posenc_mrope_bf16 / _f16 (1; the
 * byte after misc picks the type): fuzz_rope's views, decode_rope_plan_new's plans,
 * sections[3] (valid for the flags, or not), 3 rows of positions (text, image and video
 * patches as Qwen2-VL's get_rope_index, specials). Besides rope_common.h's and common.h's
 * checks: a call with an argument posenc.h lists as an error fails, and the scalar M-RoPE
 * result equals, bit for bit, the scalar posenc_rope_* result at each pair's row of
 * positions (check_mrope_rows). */
#include <stdlib.h>

#include "rope_common.h"

typedef struct mrope_call {
  rope_call rope; /* positions: 3 rows of n_tokens (temporal, height, width) */
  size_t sections[3];
  int sections_null;
  int null_view; /* pass NULL for the q view itself (misc % 32 == 2) */
} mrope_call;

/* posenc_mrope_f32: sections[3] summing to n = R/2 (the sum of the values, not modulo
 * 2^64), and with POSENC_ROPE_MROPE_INTERLEAVED 3 s1 - 2 < n where s1 > 0 and 3 s2 - 1 < n
 * where s2 > 0. */
static int sections_valid(const size_t *s, size_t n, int interleaved) {
  if (s[0] > n || s[1] > n || s[2] > n || s[0] + s[1] + s[2] != n) return 0;
  return !interleaved || ((s[1] == 0 || 3 * s[1] - 2 < n) && (s[2] == 0 || 3 * s[2] - 1 < n));
}

/* The row of positions (0 temporal, 1 height, 2 width) that pair i takes (posenc.h). */
static int mrope_row(const mrope_call *c, size_t i) {
  const size_t *s = c->sections;
  if (c->rope.flags & POSENC_ROPE_MROPE_INTERLEAVED) {
    if (i % 3 == 1 && i < 3 * s[1]) return 1;
    if (i % 3 == 2 && i < 3 * s[2]) return 2;
    return 0;
  }
  return i < s[0] ? 0 : i < s[0] + s[1] ? 1 : 2;
}

/* HF proportions: Qwen2-VL [16, 24, 24] of 64, Qwen3-VL [24, 20, 20] of 64. */
static void hf_sections(size_t *s, size_t n, int interleaved, uint8_t mode) {
  const size_t max2 = n / 3;
  if (interleaved)
    s[1] = s[2] = max2 > 0 ? max2 - (max2 > 1 && (mode & 16)) : 0;
  else
    s[1] = s[2] = (n - n / 4) / 2;
  s[0] = n - s[1] - s[2];
}

/* sections[3] for n = R/2 pairs: mostly valid for the decoded flags (HF-like proportions
 * or arbitrary), sometimes invalid: NULL, a sum off by one, a sum that wraps around 2^64 to
 * n, interleaved sections one past the largest that fits (or the largest). */
static void decode_sections(reader *r, mrope_call *c, size_t n) {
  const int interleaved = (c->rope.flags & POSENC_ROPE_MROPE_INTERLEAVED) != 0;
  const size_t max1 = (n + 1) / 3, max2 = n / 3; /* interleaved: largest s1, s2 that fit */
  size_t *s = c->sections;
  const uint8_t mode = u8(r);
  switch (mode % 16) {
    case 0:
      c->sections_null = 1;
      break;
    case 1: { /* a sum off by one */
      s[0] = n / 2, s[1] = n / 4, s[2] = n - s[0] - s[1];
      const size_t j = u8(r) % 3;
      if ((mode & 16) && s[j] > 0)
        s[j] -= 1;
      else
        s[j] += 1;
      break;
    }
    case 2: { /* wraps around to n */
      const size_t k = u8(r);
      s[0] = SIZE_MAX - k, s[1] = k + 1 + n, s[2] = 0;
      if (mode & 16) s[1] = 0, s[2] = k + 1 + n;
      break;
    }
    case 3: /* at or just past the interleaved limits; contiguous, valid if they sum */
      s[1] = max1 + (u8(r) & 1);
      s[2] = max2 + (mode >> 4 & 1);
      s[0] = n >= s[1] + s[2] ? n - s[1] - s[2] : 0;
      break;
    case 4:
    case 5:
    case 6:
    case 12:
      hf_sections(s, n, interleaved, mode);
      break;
    default: /* arbitrary, valid for the flag */
      s[1] = u8(r) % ((interleaved ? max1 : n) + 1);
      s[2] = u8(r) % ((interleaved ? max2 : n - s[1]) + 1);
      s[0] = n - s[1] - s[2];
      break;
  }
}

/* An image (T = 1) or a video (T = 2) of T x H x W patches at token t, position next:
 * temporal by frame, height by patch row, width by patch column. Returns the next token. */
static size_t patches(reader *r, int32_t *p, size_t n, size_t t, int64_t next, size_t T,
                      size_t *extent) {
  const size_t H = 1 + u8(r) % 4, W = 1 + u8(r) % 5;
  for (size_t k = 0; k < T * H * W && t < n; ++k, ++t) {
    p[t] = wrap32(next + (int64_t)(k / (H * W)));
    p[n + t] = wrap32(next + (int64_t)(k / W % H));
    p[2 * n + t] = wrap32(next + (int64_t)(k % W));
  }
  *extent = max_size(T, max_size(H, W));
  return t;
}

/* M-RoPE positions: 3 rows of n (temporal, height, width), HF's position_ids. Tokens are
 * text (three equal positions, consecutive), image or video patches (the text after them
 * continues at the current position + max(T, H, W), as Qwen2-VL's get_rope_index), repeats
 * of the previous token, or a special value in one row. NULL (an error with n > 0) 1/16 of
 * the time; for a huge n, a 3-element array that the call must not read (it must fail: its
 * positions or its views cannot be addressed) or NULL. */
static int32_t *mrope_positions_of(reader *r, size_t n) {
  const uint8_t mode = u8(r);
  if (mode % 16 == 0) return NULL;
  if (n > 4096) return (mode & 1) ? calloc(3, sizeof(int32_t)) : NULL;
  int32_t *p = malloc(3 * (n ? n : 1) * sizeof *p);
  if (!p) abort();
  int64_t next = mode % 4 == 1 ? special_position(r) : u8(r);
  size_t t = 0;
  while (t < n) {
    const uint8_t b = u8(r);
    switch (b % 8) {
      case 2:
      case 6: {
        size_t extent;
        t = patches(r, p, n, t, next, 1 + (b >> 3) % 2, &extent);
        next += (int64_t)extent;
        continue;
      }
      case 3: /* a special value in one row */
        p[t] = p[n + t] = p[2 * n + t] = wrap32(next);
        p[(u8(r) % 3) * n + t] = special_position(r);
        break;
      case 7: /* the previous token again */
        if (t > 0) {
          p[t] = p[t - 1], p[n + t] = p[n + t - 1], p[2 * n + t] = p[2 * n + t - 1];
          ++t;
          continue;
        }
        /* fall through */
      default: /* text */
        p[t] = p[n + t] = p[2 * n + t] = wrap32(next);
        break;
    }
    ++next;
    ++t;
  }
  return p;
}

/* posenc.h's errors of posenc_mrope_f32 that the decoded arguments show. */
static int mrope_must_fail(const mrope_call *c, size_t rd) {
  const rope_call *p = &c->rope;
  const unsigned known = POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE | POSENC_ROPE_F32_ANGLES |
                         POSENC_ROPE_MROPE_INTERLEAVED;
  return !p->plan || c->null_view || (p->flags & ~known) || p->head_dim < rd || c->sections_null ||
         !sections_valid(c->sections, rd / 2, p->flags & POSENC_ROPE_MROPE_INTERLEAVED) ||
         (!p->positions && p->n_tokens > 0) ||
         (p->base.null_data && p->n_tokens > 0 && p->q_heads > 0);
}

static call *decode(reader *r) {
  mrope_call *c = calloc(1, sizeof *c);
  if (!c) abort();
  rope_call *p = &c->rope;
  p->base.family = u8(r) % 2;
  c->null_view = decode_header(r, &p->base, p->base.family == 1) % 32 == 2;
  size_t rd;
  p->plan = decode_rope_plan_new(r, &rd);
  p->att = posenc_rope_plan_attention_factor(p->plan);
  decode_rope_views(r, p, rd);
  /* three sections: ggml's four-section rule is not drawn (rope_ggml_mrope_test.cc's) */
  p->flags = new_rope_flags(r, 1) & ~(unsigned)POSENC_ROPE_MROPE_GGML;
  decode_sections(r, c, rd / 2);
  p->positions = mrope_positions_of(r, p->n_tokens);
  p->base.must_fail = mrope_must_fail(c, rd);
  return &p->base;
}

static posenc_status invoke(const call *base, float *arena) {
  const mrope_call *c = (const mrope_call *)base;
  const rope_call *p = &c->rope;
  const posenc_rope_tensor q = {base->null_data ? NULL : rope_data(p, arena, p->q_off), p->q_heads,
                                p->q_ts, p->q_hs};
  const posenc_rope_tensor k = {rope_data(p, arena, p->k_off), p->k_heads, p->k_ts, p->k_hs};
  return (!base->halves ? posenc_mrope_f32
          : base->bf16  ? posenc_mrope_bf16
                        : posenc_mrope_f16)(
      p->plan, c->sections_null ? NULL : c->sections, p->head_dim, p->n_tokens, p->positions,
      c->null_view ? NULL : &q, p->with_k ? &k : NULL, p->flags);
}

/* check_mrope_rows: the scalar M-RoPE result and the posenc_rope result at one row. */
typedef struct row_check {
  const mrope_call *c;
  int row;
  const float *got, *want; /* rope_elements */
} row_check;

static void check_row_pair(void *ctx, size_t t, size_t h, size_t i, size_t u, size_t w) {
  const row_check *k = ctx;
  (void)t, (void)h;
  if (mrope_row(k->c, i) != k->row) return;
  for (int j = 0; j < 2; ++j) {
    const size_t e = j ? w : u;
    if (!same_value(k->got[e], k->want[e])) /* any NaN for a NaN (its payload: posenc.h) */
      violation(&k->c->rope.base, "scalar",
                "M-RoPE pair differs from posenc_rope at its row's position (`want` is that)", e,
                k->got[e], k->want[e]);
  }
}

/* posenc.h: "Pair i at its position p is then rotated exactly as by posenc_rope_f32
 * / _bf16 / _f16 at p (the same flags, attention factor, views, storage types, ...)". The
 * scalar variant computes every token's cos/sin afresh from its position (no stepping), so
 * its M-RoPE result must equal, bit for bit, its posenc_rope result at the row's positions:
 * for each row, the same views rotated by posenc_rope_* with that row as the positions; each
 * pair compared where it takes that row. posenc_rope_* must accept those calls (M-RoPE's
 * errors include all of its). */
static void check_mrope_rows(const call *base, const run_result *scalar) {
  const mrope_call *c = (const mrope_call *)base;
  const rope_call *p = &c->rope;
  if (!p->positions || p->n_tokens > 4096) return; /* nothing rotated */
  const size_t total = 2 * GUARD + base->len;
  float *buf = malloc(total * sizeof *buf);
  if (!buf) abort();
  float *got = rope_elements(p, scalar->buf, GUARD);
  if (posenc_set_isa(POSENC_ISA_SCALAR) != POSENC_OK) abort();
  for (int row = 0; row < 3; ++row) {
    fill_buffer(base, buf);
    if (invoke_plain_rope(p, buf + GUARD, p->positions + (size_t)row * p->n_tokens, p->start_pos,
                          p->flags & ~(unsigned)POSENC_ROPE_MROPE_INTERLEAVED) != POSENC_OK)
      violation(base, "scalar", "posenc_rope rejects a row of an accepted M-RoPE call", 0, 0.0f,
                0.0f);
    float *want = rope_elements(p, buf, GUARD);
    row_check k = {c, row, got, want};
    each_rope_pair(p, check_row_pair, &k);
    free(want);
  }
  free(got);
  free(buf);
}

static void destroy(call *c) {
  free_rope_call((rope_call *)c);
  free(c);
}

static const fuzz_target target = {
    "fuzz_mrope", decode, mark_rope_outputs, invoke, check_rope_values, check_mrope_rows, destroy};
FUZZ_TARGET(target)
