/* libFuzzer target: posenc_mrope_f32 (byte 0 % 2 == 0) and posenc_mrope_bf16 / _f16 (1; the
 * byte after misc picks the type): fuzz_rope's views, decode_rope_plan_new's plans,
 * sections[3] (valid for the flags, or not), 3 rows of positions (text, image and video
 * patches as Qwen2-VL's get_rope_index, specials). With POSENC_ROPE_MROPE_GGML (flags byte
 * bit 5): ggml's four sections (Qwen2-VL's and Qwen3-VL's proportions, vision's two,
 * arbitrary ones that need not sum to R/2, 2^20; first three all 0, past 2^20 or NULL:
 * errors), a fourth position row (e: 0 as llama.cpp's text, t, specials), and, by the byte
 * after the sections, sometimes a plan of posenc_rope_plan_create_ggml_mode with ggml's
 * mode 8 (MROPE), 40 (IMROPE) or 24 (VISION: n_dims = R/2, even) and the call's sections, or a
 * mismatch the call must fail on (another interleaving, other sections, no GGML flag).
 * Besides rope_common.h's and common.h's checks: a call with an argument posenc.h lists as
 * an error fails, posenc_rope_plan_create_ggml_mode returns the flags of
 * posenc_rope_ggml_flags (*plan NULL on error), and the scalar M-RoPE result equals, bit for
 * bit, the scalar posenc_rope_* result at each pair's row of positions (check_mrope_rows;
 * ggml's sector rule with GGML; for a ggml-mode plan, which posenc_rope_* must refuse, a
 * plan of the same frequencies from posenc_rope_plan_create_from_freqs). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "rope_common.h"

typedef struct mrope_call {
  rope_call rope; /* positions: 3 rows of n_tokens (temporal, height, width; GGML: 4, e) */
  size_t sections[4];
  int sections_null;
  int null_view;  /* pass NULL for the q view itself (misc % 32 == 2) */
  int ggml;       /* POSENC_ROPE_MROPE_GGML: four sections, four rows */
  int plan_mode;  /* the plan's ggml mode (8, 24, 40), or 0 */
  int plan_match; /* the call has the plan's flag, sections and interleaving */
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
  if (c->ggml) { /* ggml_mrope_cache_init's sector rule: 3 is the e row */
    const size_t sec = i % (s[0] + s[1] + s[2] + s[3]);
    if (c->rope.flags & POSENC_ROPE_MROPE_INTERLEAVED)
      return sec % 3 == 1 && sec < 3 * s[1]   ? 1
             : sec % 3 == 2 && sec < 3 * s[2] ? 2
             : sec % 3 == 0 && sec < 3 * s[0] ? 0
                                              : 3;
    return sec < s[0] ? 0 : sec < s[0] + s[1] ? 1 : sec < s[0] + s[1] + s[2] ? 2 : 3;
  }
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

/* With a byte % 4 == 3: the plan replaced by posenc_rope_plan_create_ggml_mode's for ggml's
 * mode (VISION with bit 2, else IMROPE or MROPE as the call interleaves) with the call's
 * sections, R kept (VISION: n_dims R/2); bit 3 a mismatch: bit 4 the other interleaving,
 * bit 5 another s3, bit 6 no GGML flag on the call. Checks the flags it returns. */
static void decode_ggml_plan(reader *r, mrope_call *c, size_t rd) {
  rope_call *p = &c->rope;
  const uint8_t b = u8(r);
  if (b % 4 != 3 || c->sections_null || rd < 2 || rd % 2 || rd > 4096) return;
  const int inter = (p->flags & POSENC_ROPE_MROPE_INTERLEAVED) != 0, mis = (b & 8) != 0;
  posenc_rope_ggml_params g = {0};
  g.mode = b & 4 && rd % 4 == 0 ? 24 : inter != (mis && (b & 16)) ? 40 : 8; /* n_dims even */
  g.n_dims = g.mode == 24 ? rd / 2 : rd;
  g.freq_base = b & 32 ? 1e6 : 10000.0;
  for (int k = 0; k < 4; ++k) g.sections[k] = c->sections[k] > INT_MAX ? -1 : (int)c->sections[k];
  if (mis && (b & 32)) g.sections[3] += 1;
  if (mis && (b & 64)) p->flags &= ~(unsigned)POSENC_ROPE_MROPE_GGML;
  posenc_rope_plan_destroy(p->plan);
  p->plan = (posenc_rope_plan *)&g;
  unsigned flags = 0x5A5A;
  const posenc_status st = posenc_rope_plan_create_ggml_mode(&p->plan, &g, &flags);
  const unsigned want = POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_GGML |
                        (g.mode == 40 ? (unsigned)POSENC_ROPE_MROPE_INTERLEAVED : 0u);
  if (st != POSENC_OK && (p->plan || flags != 0x5A5A))
    violation(&p->base, "-", "ggml mode plan: *plan or *flags set on error", 0, 0, 0);
  if (st == POSENC_OK && flags != want)
    violation(&p->base, "-", "ggml mode plan: flags not posenc_rope_ggml_flags'", flags, 0, 0);
  if (st != POSENC_OK && ggml_sections_valid(c->sections) && !(mis && (b & 32))) {
    fprintf(stderr, "fuzz_mrope: ggml mode %d n_dims %zu sections %d %d %d %d: status %d\n", g.mode,
            g.n_dims, g.sections[0], g.sections[1], g.sections[2], g.sections[3], (int)st);
    violation(&p->base, "-", "ggml mode plan: valid parameters refused", (size_t)st, 0, 0);
  }
  if (st != POSENC_OK) p->plan = NULL;
  p->att = posenc_rope_plan_attention_factor(p->plan);
  c->plan_mode = g.mode;
  c->plan_match = (p->flags & POSENC_ROPE_MROPE_GGML) && !(mis && (b & 32)) &&
                  inter == (g.mode == 40); /* its flag, its sections, its interleaving */
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
static int32_t *mrope_positions_of(reader *r, size_t n, size_t rows) {
  const uint8_t mode = u8(r);
  if (mode % 16 == 0) return NULL;
  if (n > 4096) return (mode & 1) ? calloc(rows, sizeof(int32_t)) : NULL;
  int32_t *p = malloc(rows * (n ? n : 1) * sizeof *p);
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
  if (rows == 4) ggml_e_row(r, p, n);
  return p;
}

/* posenc.h's errors of posenc_mrope_f32 that the decoded arguments show. */
static int mrope_must_fail(const mrope_call *c, size_t rd) {
  const rope_call *p = &c->rope;
  const unsigned known = POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE | POSENC_ROPE_F32_ANGLES |
                         POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_MROPE_GGML;
  if (c->ggml || c->plan_mode) {
    if (!c->ggml || (c->plan_mode && !c->plan_match) || c->sections_null ||
        !ggml_sections_valid(c->sections))
      return 1;
    if (p->plan) rd = posenc_rope_plan_rotary_dim(p->plan);
  }
  return !p->plan || c->null_view || (p->flags & ~known) || p->head_dim < rd || c->sections_null ||
         (!c->ggml &&
          !sections_valid(c->sections, rd / 2, p->flags & POSENC_ROPE_MROPE_INTERLEAVED)) ||
         (!p->positions && p->n_tokens > 0) ||
         (p->base.null_data && p->n_tokens > 0 && p->q_heads > 0);
}

static call *decode(reader *r) {
  mrope_call *c = calloc(1, sizeof *c);
  if (!c) abort();
  rope_call *p = &c->rope;
  p->base.target = "fuzz_mrope";
  p->base.family = u8(r) % 2;
  c->null_view = decode_header(r, &p->base, p->base.family == 1) % 32 == 2;
  size_t rd;
  p->plan = decode_rope_plan_new(r, &rd);
  p->att = posenc_rope_plan_attention_factor(p->plan);
  decode_rope_views(r, p, rd);
  p->flags = new_rope_flags(r, 1);
  c->ggml = (p->flags & POSENC_ROPE_MROPE_GGML) != 0;
  if (c->ggml) {
    decode_ggml_sections(r, c->sections, &c->sections_null, rd / 2);
    decode_ggml_plan(r, c, rd);
    c->ggml = (p->flags & POSENC_ROPE_MROPE_GGML) != 0;
  } else {
    decode_sections(r, c, rd / 2);
  }
  p->positions = mrope_positions_of(r, p->n_tokens, c->ggml ? 4 : 3);
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
  const unsigned flags =
      p->flags & ~(unsigned)(POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_MROPE_GGML);
  rope_call twin = *p; /* a ggml-mode plan's frequencies in a plan of one-position forms */
  if (c->plan_mode) {
    fill_buffer(base, buf);
    if (invoke_plain_rope(p, buf + GUARD, p->positions, p->start_pos, flags) == POSENC_OK)
      violation(base, "scalar", "posenc_rope_* accepts a plan of a ggml M-RoPE mode", 0, 0, 0);
    const size_t R = posenc_rope_plan_rotary_dim(p->plan);
    double *w = malloc(R / 2 * sizeof *w + 1);
    if (!w || posenc_rope_plan_freqs(p->plan, w) != POSENC_OK ||
        posenc_rope_plan_create_from_freqs(&twin.plan, R, w, p->att) != POSENC_OK)
      abort();
    free(w);
  }
  for (int row = 0; row < (c->ggml ? 4 : 3); ++row) {
    fill_buffer(base, buf);
    if (invoke_plain_rope(&twin, buf + GUARD, p->positions + (size_t)row * p->n_tokens,
                          p->start_pos, flags) != POSENC_OK)
      violation(base, "scalar", "posenc_rope rejects a row of an accepted M-RoPE call", 0, 0.0f,
                0.0f);
    float *want = rope_elements(p, buf, GUARD);
    row_check k = {c, row, got, want};
    each_rope_pair(p, check_row_pair, &k);
    free(want);
  }
  if (c->plan_mode) posenc_rope_plan_destroy(twin.plan);
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
