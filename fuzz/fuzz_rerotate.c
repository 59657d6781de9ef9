/* libFuzzer target: posenc_rope_rerotate_f32 (byte 0 % 2 == 0) and _bf16 / _f16 (1; the byte
 * after misc picks the type): plans from (decode_rope_plan_new) and to (mostly related to
 * from: decode_to_plan), positions from and to (mostly shifted: decode_to_positions), the
 * keys in fuzz_rope's q view (its k view's elements stay in the arena: none may change).
 * Besides rope_common.h's checks with r = att_to / att_from in place of att and common.h's:
 * a call with an argument posenc.h lists as an error fails, and the scalar re-rotation is
 * within 2^-19 r (|u| + |v|) of an inverse rotation by `from` followed by a rotation by `to`
 * (check_rerotate_composition). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rope_common.h"

typedef struct rerotate_call {
  rope_call rope; /* plan: from; positions, start_pos: the positions rotated to */
  posenc_rope_plan *to_plan;
  int to_is_from; /* to_plan is rope.plan (else owned) */
  int32_t *from_positions;
  int32_t from_start;
  int null_view; /* pass NULL for the keys view itself (misc % 32 == 2) */
} rerotate_call;

/* The attention factor of a plan rotated to: from's (r = 1), a common one or an extreme one
 * (r = 1e-30, 1e30: valid), or param's specials (NaN, 0, 1e300: no plan; 1e-300: r below
 * FLT_MIN). */
static double to_att(reader *r, double att_from) {
  static const double atts[] = {1.0, 0.5, 0.7, 1.3, 2.0, 1e-30, 1e30};
  const uint8_t a = u8(r);
  if (a % 8 < 3) return att_from;
  if (a % 8 == 3) return param(r, atts, 7);
  return atts[(a + (a >> 3)) % 7];
}

/* A plan of from's frequencies w (n = rd / 2 of them) changed: another base, one an ulp
 * off (not the same set), all scaled (linear) or negated. */
static posenc_rope_plan *other_freqs(reader *r, size_t rd, double *w, double att_from) {
  const size_t n = rd / 2;
  const uint8_t how = u8(r);
  const double att = to_att(r, att_from);
  posenc_rope_plan *to = NULL;
  if (how % 4 == 3) {
    static const double bases[] = {10000.0, 500000.0, 1e6, 10.0};
    if (posenc_rope_plan_create(&to, rd, bases[u8(r) % 4], att) != POSENC_OK) to = NULL;
    return to;
  }
  if (n == 0) return NULL;
  if (how % 4 == 0) {
    const size_t i = u8(r) % n;
    w[i] = nextafter(w[i], (how & 32) ? 0.0 : 2.0);
  } else {
    const double factor = how % 4 == 1 ? 1.0 + u8(r) / 16.0 : -1.0;
    for (size_t i = 0; i < n; ++i) w[i] /= factor;
  }
  if (posenc_rope_plan_create_from_freqs(&to, rd, w, att) != POSENC_OK) to = NULL;
  return to;
}

/* From's frequencies w with an extreme attention factor (r at or past [FLT_MIN, FLT_MAX]),
 * NULL, or a rotary_dim two off (a freqs prefix or the last one repeated). */
static posenc_rope_plan *extreme_plan(reader *r, size_t rd, double *w, double att_from) {
  static const double atts[] = {FLT_MAX, FLT_MIN};
  const size_t n = rd / 2;
  const uint8_t how = u8(r);
  double att = att_from;
  size_t rd2 = rd;
  switch (how % 8) {
    case 0:
      att = att_from * FLT_MIN;
      break;
    case 1:
      att = nextafter(att_from * FLT_MIN, 0.0);
      break;
    case 2:
      att = att_from * FLT_MAX; /* above FLT_MAX for att_from > 1: no plan */
      break;
    case 3:
    case 4:
      att = atts[how % 8 - 3];
      break;
    case 5:
      return NULL;
    case 6:
      rd2 = how & 8 ? rd + 2 : rd - 2;
      if (rd2 / 2 > n) w[n] = n ? w[n - 1] : 1.0;
      break;
    default:
      att = how & 8 ? 1e-38 : 3e38;
      break;
  }
  posenc_rope_plan *to = NULL;
  if (posenc_rope_plan_create_from_freqs(&to, rd2, w, att) != POSENC_OK) to = NULL;
  return to;
}

/* The plan rotated to. Mostly the same plan (a context shift), one with the same
 * frequencies (another attention factor, or the same one in a distinct plan) or another
 * frequency set of the same rotary_dim; sometimes an independently decoded plan (often
 * another rotary_dim) or extreme_plan's. */
static void decode_to_plan(reader *r, rerotate_call *c, size_t rd) {
  const posenc_rope_plan *from = c->rope.plan;
  const uint8_t mode = u8(r);
  double w[MAX_NEW_PAIRS + 1];
  const int have = from && rd / 2 <= MAX_NEW_PAIRS && posenc_rope_plan_freqs(from, w) == POSENC_OK;
  const double att_from = posenc_rope_plan_attention_factor(from);
  if (mode % 8 == 0 || mode % 8 == 4) { /* the same plan: a context shift */
    c->to_plan = c->rope.plan;
    c->to_is_from = 1;
  } else if (mode % 8 == 3 || !have) {
    size_t rd2;
    c->to_plan = decode_rope_plan_new(r, &rd2);
  } else if (mode % 8 == 1 || mode % 8 == 5) { /* the same frequencies in another plan */
    const double att = to_att(r, att_from);
    if (posenc_rope_plan_create_from_freqs(&c->to_plan, rd, w, att) != POSENC_OK) c->to_plan = NULL;
  } else if (mode % 8 == 2 || mode % 8 == 6) {
    c->to_plan = other_freqs(r, rd, w, att_from);
  } else {
    c->to_plan = extreme_plan(r, rd, w, att_from);
  }
}

/* The shift k of a context shift: mostly small, sometimes so far that p' - p leaves int32. */
static int64_t shift_of(reader *r) {
  const uint8_t kb = u8(r);
  switch (kb % 8) {
    case 0:
      return INT32_MAX;
    case 1:
      return (int64_t)INT32_MAX + 1 + u8(r);
    case 2:
      return -(int64_t)u16(r);
    case 3:
      return (int64_t)UINT32_MAX - u8(r);
    default:
      return u8(r) % 64;
  }
}

/* The positions rotated to, from those rotated from (decoded first): shifted by k (a
 * context shift), the same, or independent; a run or an array (a run sometimes turned into
 * the equivalent array and back). */
static void decode_to_positions(reader *r, rerotate_call *c) {
  rope_call *p = &c->rope;
  const size_t n = p->n_tokens;
  const uint8_t mode = u8(r);
  if (mode % 4 == 2) {
    p->positions = positions_of(r, n, &p->start_pos);
    return;
  }
  const int64_t k = mode % 4 == 1 ? 0 : mode % 4 == 3 ? -shift_of(r) : shift_of(r);
  const int as_array = n > 0 && n <= 4096 && (c->from_positions ? !(mode & 4) : (mode & 4));
  if (!as_array) { /* a run: from a run, shifted; from an array, its first element */
    p->start_pos = wrap32((c->from_positions && n ? c->from_positions[0] : c->from_start) - k);
    return;
  }
  p->positions = malloc(n * sizeof *p->positions);
  if (!p->positions) abort();
  for (size_t t = 0; t < n; ++t)
    p->positions[t] = wrap32(
        (c->from_positions ? c->from_positions[t] : (int64_t)c->from_start + (int64_t)t) - k);
  p->start_pos = special_position(r); /* unused */
}

/* 1 if a run of n positions from start stays within int32 (posenc.h: "start_pos + n_tokens -
 * 1 must not exceed INT32_MAX"); n > 0. */
static int run_fits(int32_t start, size_t n) {
  return n - 1 <= (size_t)((int64_t)INT32_MAX - (int64_t)start);
}

/* posenc.h's errors of posenc_rope_rerotate_f32 that the decoded arguments show. */
static int rerotate_must_fail(const rerotate_call *c) {
  const rope_call *p = &c->rope;
  const posenc_rope_plan *from = p->plan, *to = c->to_plan;
  const size_t n = p->n_tokens;
  return !from || !to || c->null_view ||
         posenc_rope_plan_rotary_dim(from) != posenc_rope_plan_rotary_dim(to) ||
         !(p->att >= FLT_MIN && p->att <= FLT_MAX) ||
         (p->flags & ~(unsigned)(POSENC_ROPE_GPTJ | POSENC_ROPE_F32_ANGLES)) ||
         p->head_dim < posenc_rope_plan_rotary_dim(to) ||
         (n > 0 && ((!c->from_positions && !run_fits(c->from_start, n)) ||
                    (!p->positions && !run_fits(p->start_pos, n)))) ||
         (p->base.null_data && n > 0 && p->q_heads > 0);
}

static call *decode(reader *r) {
  rerotate_call *c = calloc(1, sizeof *c);
  if (!c) abort();
  rope_call *p = &c->rope;
  p->base.family = u8(r) % 2;
  c->null_view = decode_header(r, &p->base, p->base.family == 1) % 32 == 2;
  size_t rd;
  p->plan = decode_rope_plan_new(r, &rd);
  decode_to_plan(r, c, rd);
  /* the tolerance's factor r (posenc.h: posenc_rope_f32's contract with att replaced by r) */
  p->att =
      posenc_rope_plan_attention_factor(c->to_plan) / posenc_rope_plan_attention_factor(p->plan);
  decode_rope_views(r, p, rd);
  p->with_k = 0; /* the k view's elements stay in the arena: none may change */
  p->flags = new_rope_flags(r, 0);
  c->from_positions = positions_of(r, p->n_tokens, &c->from_start);
  decode_to_positions(r, c);
  p->base.must_fail = rerotate_must_fail(c);
  return &p->base;
}

static posenc_status invoke(const call *base, float *arena) {
  const rerotate_call *c = (const rerotate_call *)base;
  const rope_call *p = &c->rope;
  const posenc_rope_tensor keys = {base->null_data ? NULL : rope_data(p, arena, p->q_off),
                                   p->q_heads, p->q_ts, p->q_hs};
  return (!base->halves ? posenc_rope_rerotate_f32
          : base->bf16  ? posenc_rope_rerotate_bf16
                        : posenc_rope_rerotate_f16)(
      p->plan, c->from_positions, c->from_start, c->to_plan, p->positions, p->start_pos,
      p->head_dim, p->n_tokens, c->null_view ? NULL : &keys, p->flags);
}

/* check_rerotate_composition: the scalar result, the composition, the input. */
typedef struct composition_check {
  const rerotate_call *c;
  const float *got, *want, *in;
} composition_check;

static void check_element(const composition_check *k, size_t e, double mag) {
  const call *c = &k->c->rope.base;
  const double r = k->c->rope.att, want = r * (double)k->want[e];
  const float got = k->got[e];
  const double m = fmax(isfinite(got) ? fabs((double)got) : 0.0, fabs(want));
  /* + one ulp of a 16-bit storage type (the 16-bit result is the f32 one rounded) */
  const double bound = 0x1p-19 * r * mag + (1.0 + r) * 0x1p-144 + storage_ulp(c, m);
  if (!within_range(got, (float)want, bound, storage_max(c))) {
    fprintf(stderr, "%s: re-rotation: r %a, composition %a, scalar %a, bound %a\n", c->target, r,
            want, (double)got, bound);
    violation(c, "scalar",
              "re-rotation differs from inverse-then-forward rotation (`scalar` is that)", e, got,
              (float)want);
  }
}

static void check_composition_pair(void *ctx, size_t t, size_t h, size_t i, size_t u, size_t w) {
  const composition_check *k = ctx;
  (void)t, (void)h, (void)i;
  const float iu = k->in[u], iw = k->in[w];
  if (!isfinite(iu) || !isfinite(iw)) return;
  const double mag = fabs((double)iu) + fabs((double)iw);
  /* Overflow (in the steps, the result or a 16-bit type) is the differential's business. */
  if (mag > 0x1p100 || k->c->rope.att * mag > 0x1p100) return;
  check_element(k, u, mag);
  check_element(k, w, mag);
}

/* The scalar result against the two rotations it replaces, on the input widened to float:
 * posenc_rope_f32 (scalar) with POSENC_ROPE_INVERSE by (from's frequencies, attention
 * factor 1) at the from positions, then forward by (to's frequencies, 1) at the to
 * positions, times r. posenc.h: the re-rotation's c and s are within 2^-22 r of r cos(a),
 * r sin(a) of the exact a = p' w' - p w (with POSENC_ROPE_F32_ANGLES: of the difference of
 * the two float32 angles), and each posenc_rope pass's (accurate or F32_ANGLES) within 2^-22
 * of cos and sin of its own angle; with the three roundings to float this is about
 * 5 * 2^-22 r (|u| + |v|) at most: checked within 2^-19 r (|u| + |v|) (+ subnormal
 * roundings, + one ulp of a 16-bit storage type), so a wrong sign, plan, position or row
 * shows while the contract's slack does not. */
static void check_rerotate_composition(const call *base, const run_result *scalar) {
  const rerotate_call *c = (const rerotate_call *)base;
  const rope_call *p = &c->rope;
  if (p->n_tokens > 4096) return;
  const size_t rd = posenc_rope_plan_rotary_dim(c->to_plan);
  double wf[MAX_NEW_PAIRS], wt[MAX_NEW_PAIRS];
  if (rd / 2 > MAX_NEW_PAIRS || posenc_rope_plan_freqs(p->plan, wf) != POSENC_OK ||
      posenc_rope_plan_freqs(c->to_plan, wt) != POSENC_OK)
    return;
  posenc_rope_plan *pf = NULL, *pt = NULL;
  if (posenc_rope_plan_create_from_freqs(&pf, rd, wf, 1.0) != POSENC_OK ||
      posenc_rope_plan_create_from_freqs(&pt, rd, wt, 1.0) != POSENC_OK)
    abort();
  float *in = rope_elements(p, base->input, 0), *x = rope_elements(p, base->input, 0);
  float *got = rope_elements(p, scalar->buf, GUARD);
  const posenc_rope_tensor v = {x + p->q_off, p->q_heads, p->q_ts, p->q_hs};
  const unsigned pass_flags = p->flags & (POSENC_ROPE_GPTJ | POSENC_ROPE_F32_ANGLES);
  if (posenc_set_isa(POSENC_ISA_SCALAR) != POSENC_OK) abort();
  if (posenc_rope_f32(pf, p->head_dim, p->n_tokens, c->from_positions, c->from_start, &v, NULL,
                      pass_flags | POSENC_ROPE_INVERSE) != POSENC_OK ||
      posenc_rope_f32(pt, p->head_dim, p->n_tokens, p->positions, p->start_pos, &v, NULL,
                      pass_flags) != POSENC_OK)
    violation(base, "scalar", "posenc_rope_f32 rejects the views of an accepted re-rotation", 0,
              0.0f, 0.0f);
  composition_check k = {c, got, x, in};
  each_rope_pair(p, check_composition_pair, &k);
  free(in);
  free(x);
  free(got);
  posenc_rope_plan_destroy(pf);
  posenc_rope_plan_destroy(pt);
}

static void destroy(call *base) {
  rerotate_call *c = (rerotate_call *)base;
  if (!c->to_is_from) posenc_rope_plan_destroy(c->to_plan);
  free(c->from_positions);
  free_rope_call(&c->rope);
  free(c);
}

static const fuzz_target target = {"fuzz_rerotate",
                                   decode,
                                   mark_rope_outputs,
                                   invoke,
                                   check_rope_values,
                                   check_rerotate_composition,
                                   destroy};
FUZZ_TARGET(target)
