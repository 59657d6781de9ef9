/* libFuzzer target: the runtime-shaped RoPE entry points (posenc.h, "Runtime-shaped RoPE"):
 * posenc_rope_out (byte 0 % 4 == 0), posenc_mrope_out (1), posenc_rope_factors_compute then
 * posenc_rope_apply (2), posenc_mrope_factors_compute then posenc_rope_apply (3), with
 * posenc_rope_factors_bytes on the way; plans from posenc_rope_plan_create (or _from_freqs,
 * as fuzz_mrope's), posenc_rope_plan_create_ggml (bad parameters included) and
 * posenc_rope_plan_create_scaled.
 *
 * An input decodes (common.h's reader) into: byte 0 the family; byte 1 (misc) a NULL data
 * pointer (misc % 32 == 0), a misaligned pointer (1), a NULL view / factors struct / storage
 * (2) for the view, storage or struct the next byte picks, or an unknown dtype (3); for the
 * factor families, read early so that short inputs reach them: the compute flags
 * (DETERMINISTIC, F32_ANGLES; INVERSE or unknown bits sometimes), a change to the computed
 * posenc_rope_factors before applying them (data or the struct NULL, rotary_dim or
 * row_floats off, the layout flag flipped or unknown bits, a row fewer, or a valid
 * sub-range: data moved on by whole rows) and the apply flags (the factors' | INVERSE, the
 * layout or DETERMINISTIC flipped, F32_ANGLES, unknown bits); the plan (default, ggml
 * parameters or a scaling); the (src, dst) type pair (supported, unsupported, unknown);
 * head_dim (sometimes < R), n_batch, n_tokens and heads (huge 1/256; dst's head count
 * different 1/16); a src view in one of eight layouts ([B, L, H, D], [B, H, L, D], padded,
 * one cache row per token, batch_stride 0, arbitrary strides: overlapping, zero, huge); dst:
 * after src in the arena, before it, in place (src itself), the same data with other strides
 * or type, or starting inside src (partial overlap), with its own layout. Then the op's flags
 * (GPTJ, INVERSE, F32_ANGLES, DETERMINISTIC; unknown bits sometimes) and positions (an array
 * with runs and int32-limit specials, or NULL and a start_pos near INT32_MAX; M-RoPE:
 * sections and 3 rows of text and patch tokens), or for the factor families first_row,
 * row_batch_stride and n_rows (a row short 1/8), the rows' positions (and sections) and
 * storage_bytes (too small 1/4). Tensor data follows as in common.c (past the input's end
 * from a PRNG), incl. NaN, Inf and subnormals.
 *
 * Every call is made with the scalar ISA and every other available one, on a fresh copy of
 * one arena framed by GUARD sentinel floats (and one for the factor storage), the guards
 * poisoned for ASan during the library's calls. Required, else abort():
 *  - every ISA returns the scalar's status (for the compute and for the op / apply);
 *  - an argument posenc.h lists as an error fails, and a call with no such argument succeeds
 *    (scalar; plan creation likewise, with posenc_rope_plan_create_ggml's plan checked
 *    against the header's formula and *plan NULL on error);
 *  - on error nothing is written: arena, guards, factor storage and *factors unchanged;
 *  - compute success: *factors as the header says (data, n_rows, rotary_dim, row_floats,
 *    flags: GPTJ | DETERMINISTIC as made), storage past posenc_rope_factors_bytes and its
 *    guards unchanged, the rows' zero padding zero; posenc_rope_factors_bytes as the header's
 *    layout gives; apply leaves the storage as it is;
 *  - op / apply success: no element outside the dst view changed (src included, unless in
 *    place), no dst element written twice (overlapping head vectors accepted), and each dst
 *    element bitwise (NaN for NaN) the same ISA's in-place form (posenc_rope_f32 / _bf16 /
 *    _f16, posenc_mrope_*) run per batch on a dense copy of src, rounded to dst's type by
 *    kernels/half.h's conversions; the factor path also bitwise posenc_rope_out /
 *    posenc_mrope_out for the same positions (token t of batch b at row first_row +
 *    b * row_batch_stride + t); across ISAs, each rotated element within
 *    rope_element_within of scalar's and the copied elements [R, D) identical; with
 *    POSENC_ROPE_DETERMINISTIC every element, and the factor rows, bitwise scalar's.
 * The decoder is rope_views_decode.c, what posenc.h says of a call (view geometry, factor
 * rows, the errors it lists) rope_views_rules.c; the decoded call is in rope_views.h, with
 * the element helpers (widen, same_elem, load_bits, narrow, views_make) this target and
 * fuzz_rope_kv share. Unknown flag bits never include POSENC_ROPE_POSITIONS_INT64 (bit 6);
 * the op flags' bit 6 (the compute flags' bit 6) draws it: the positions (the rows') passed
 * as an int64 copy, sometimes with a value outside int32 (then POSENC_ERR_INVALID_ARGUMENT and
 * nothing written); the references above run with the int32 positions, so an accepted call
 * is bitwise the int32 one. The M-RoPE families draw POSENC_ROPE_MROPE_GGML (op flags' bit 2,
 * compute flags' bit 7): ggml's four sections and a fourth (e) position row, decoded by
 * fuzz_mrope's code (rope_common.c), checked as above (the in-place posenc_mrope_* of the
 * same ISA, and posenc_mrope_out for the factor path). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rope_views.h"

/* ---------------------------------------------------------------------- small helpers */

static uint32_t float_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

/* ---------------------------------------------------------------------- running */

typedef struct run {
  float *arena;   /* GUARD + len + GUARD */
  float *storage; /* GUARD + cap + GUARD */
  float *after_compute;
  posenc_rope_factors f, g; /* as computed; as applied */
  size_t first_row;         /* as applied */
  posenc_status cst, st;
  int computed; /* the factor families: the compute succeeded and the apply ran */
} run;

static void fill_storage(const vcall *c, float *buf) {
  for (size_t i = 0; i < c->cap + 2 * GUARD; ++i)
    buf[i] = posenc_bits_float(STORAGE_SENTINEL ^ (uint32_t)i);
}

/* The factors as applied: the computed ones, changed as decoded. */
static posenc_rope_factors mutate(const vcall *c, posenc_rope_factors g, size_t *first_row) {
  *first_row = c->first_row;
  switch (c->fmut) {
    case 1:
      g.data = NULL;
      break;
    case 2:
      g.rotary_dim += c->fmut_arg & 1 ? 2 : 1;
      break;
    case 3:
      g.row_floats += c->fmut_arg & 1 ? 16 : (size_t)-16;
      break;
    case 4:
      g.flags = c->fmut_arg & 1 ? g.flags ^ POSENC_ROPE_GPTJ : g.flags | 4u << (c->fmut_arg % 8);
      break;
    case 5:
      if (g.n_rows) g.n_rows -= 1;
      break;
    case 6: /* a valid sub-range */
      if (g.data) g.data += c->shift * g.row_floats;
      g.n_rows -= c->shift;
      *first_row -= c->shift;
      break;
    default:
      break;
  }
  return g;
}

static void run_call(const vcall *c, posenc_isa isa, run *out) {
  const size_t total = 2 * GUARD + c->base.len;
  fill_buffer(&c->base, out->arena);
  if (posenc_set_isa(isa) != POSENC_OK) abort();
  float *arena = out->arena + GUARD;
  const posenc_rope_view s = views_make(&c->src, arena), d = views_make(&c->dst, arena);
  const posenc_rope_view *sp = c->src.null_view ? NULL : &s, *dp = c->dst.null_view ? NULL : &d;
  const size_t *sections = c->sections_null ? NULL : c->sections;
  /* POSENC_ROPE_POSITIONS_INT64: the int64 copy (pos64) in place of the int32 positions */
  const int32_t *pos = c->pos64 ? (const int32_t *)(const void *)c->pos64 : c->positions;
  const int32_t *rpos = c->pos64 ? (const int32_t *)(const void *)c->pos64 : c->row_pos;
  out->computed = 0;
  POISON(out->arena, GUARD * sizeof(float));
  POISON(out->arena + GUARD + c->base.len, GUARD * sizeof(float));
  switch (c->base.family) {
    case FAM_OUT:
      out->st = posenc_rope_out(c->plan, c->head_dim, c->n_batch, c->n_tokens, pos, c->start_pos,
                                sp, dp, c->flags);
      break;
    case FAM_MOUT:
      out->st = posenc_mrope_out(c->plan, sections, c->head_dim, c->n_batch, c->n_tokens, pos, sp,
                                 dp, c->flags);
      break;
    default: {
      fill_storage(c, out->storage);
      void *storage = c->storage_null ? NULL : (char *)(out->storage + GUARD) + c->storage_misalign;
      memset(&out->f, 0xA5, sizeof out->f);
      POISON(out->storage, GUARD * sizeof(float));
      POISON(out->storage + GUARD + c->cap, GUARD * sizeof(float));
      posenc_rope_factors *fo = c->factors_out_null ? NULL : &out->f;
      out->cst = c->base.family == FAM_FACTORS
                     ? posenc_rope_factors_compute(c->plan, c->n_rows, rpos, c->row_start,
                                                   c->cflags, storage, c->storage_bytes, fo)
                     : posenc_mrope_factors_compute(c->plan, sections, c->n_rows, rpos, c->cflags,
                                                    storage, c->storage_bytes, fo);
      UNPOISON(out->storage, (c->cap + 2 * GUARD) * sizeof(float));
      out->st = out->cst;
      if (out->cst != POSENC_OK) break;
      memcpy(out->after_compute, out->storage, (c->cap + 2 * GUARD) * sizeof(float));
      out->g = mutate(c, out->f, &out->first_row);
      out->computed = 1;
      POISON(out->storage, GUARD * sizeof(float));
      POISON(out->storage + GUARD + c->cap, GUARD * sizeof(float));
      out->st = posenc_rope_apply(c->apply_null ? NULL : &out->g, out->first_row, c->rbs,
                                  c->head_dim, c->n_batch, c->n_tokens, sp, dp, c->flags);
      UNPOISON(out->storage, (c->cap + 2 * GUARD) * sizeof(float));
      break;
    }
  }
  UNPOISON(out->arena, total * sizeof(float));
}

/* ---------------------------------------------------------------------- checks */

/* The first 16-bit unit of two GUARD-framed buffers of `floats` floats that differs, and
 * an abort naming it; returns if none. */
static void expect_same(const vcall *c, const char *isa, const char *what, const float *got,
                        const float *want, size_t floats, const uint8_t *except) {
  for (size_t u = 0; u < 2 * floats; ++u) {
    if (except && u >= 2 * GUARD && u < 2 * floats - 2 * GUARD && except[u - 2 * GUARD]) continue;
    uint16_t a, b;
    memcpy(&a, (const char *)got + 2 * u, 2);
    memcpy(&b, (const char *)want + 2 * u, 2);
    if (a != b) {
      fprintf(stderr, "fuzz_rope_views: %s: 16-bit unit %zu of %zu (guard %d): %04x, was %04x\n",
              what, u, 2 * floats, 2 * GUARD, a, b);
      violation(&c->base, isa, what, u / 2, got[u / 2], want[u / 2]);
    }
  }
}

/* The position of token (b, t) in row k (M-RoPE: 0 temporal, 1 height, 2 width; GGML: 3 e). */
static int32_t token_pos(const vcall *c, size_t b, size_t t, int k) {
  const size_t g = b * c->n_tokens + t, N = c->n_batch * c->n_tokens;
  switch (c->base.family) {
    case FAM_OUT:
      return c->positions ? c->positions[g] : (int32_t)((int64_t)c->start_pos + (int64_t)t);
    case FAM_MOUT:
      return c->positions[(size_t)k * N + g];
    case FAM_FACTORS: {
      const size_t row = c->first_row + b * c->rbs + t;
      return c->row_pos ? c->row_pos[row] : (int32_t)((int64_t)c->row_start + (int64_t)row);
    }
    default:
      return c->row_pos[(size_t)k * c->n_rows + c->first_row + b * c->rbs + t];
  }
}

/* The flags the plan path uses for the call's result, with int32 positions. */
static unsigned ref_flags(const vcall *c) {
  if (c->base.family <= FAM_MOUT) return c->flags & ~ROPE_FLAG_INT64;
  return (c->cflags & (FACTOR_FLAGS | POSENC_ROPE_F32_ANGLES | MROPE_FLAGS)) |
         (c->flags & POSENC_ROPE_INVERSE);
}

static int is_mrope(const vcall *c) {
  return c->base.family == FAM_MOUT || c->base.family == FAM_MFACTORS;
}

/* The dst elements of an accepted call against the same ISA's in-place form per batch,
 * on a dense copy of src's batch, narrowed to dst's type: bitwise. */
static void check_in_place_form(const vcall *c, const char *isa, const float *res) {
  const view *s = &c->src, *d = &c->dst;
  const size_t L = c->n_tokens, H = s->n_heads, D = c->head_dim, xs = dsize(s->dtype),
               ys = dsize(d->dtype);
  const char *in = (const char *)(c->base.input), *out = (const char *)(res + GUARD);
  char *tmp = malloc(L * H * D * xs + 4);
  const unsigned flags = ref_flags(c);
  const int rows = mrope_rows(flags);
  int32_t *pos = alloc_i32((size_t)rows * L);
  if (!tmp) abort();
  for (size_t b = 0; b < c->n_batch; ++b) {
    for (size_t t = 0; t < L; ++t)
      for (size_t h = 0; h < H; ++h)
        for (size_t e = 0; e < D; ++e)
          memcpy(tmp + ((t * H + h) * D + e) * xs, in + elem_off(s, b, t, h, e), xs);
    for (int k = 0; k < rows; ++k)
      for (size_t t = 0; t < L; ++t)
        pos[(size_t)k * L + t] = token_pos(c, b, t, is_mrope(c) ? k : 0);
    const posenc_rope_tensor q = {tmp, H, H * D, D};
    posenc_status st;
    if (is_mrope(c))
      st = (s->dtype == POSENC_DTYPE_F32 ? posenc_mrope_f32
            : s->dtype == POSENC_DTYPE_BF16
                ? posenc_mrope_bf16
                : posenc_mrope_f16)(c->plan, c->sections, D, L, pos, &q, NULL, flags);
    else
      st = (s->dtype == POSENC_DTYPE_F32 ? posenc_rope_f32
            : s->dtype == POSENC_DTYPE_BF16
                ? posenc_rope_bf16
                : posenc_rope_f16)(c->plan, D, L, pos, 0, &q, NULL, flags & ~MROPE_FLAGS);
    if (st != POSENC_OK)
      violation(&c->base, isa, "the in-place form refuses a batch of an accepted call", b, 0, 0);
    for (size_t t = 0; t < L; ++t)
      for (size_t h = 0; h < H; ++h)
        for (size_t e = 0; e < D; ++e) {
          const uint32_t want =
              narrow(s->dtype, d->dtype, load_bits(tmp + ((t * H + h) * D + e) * xs, xs));
          const uint32_t got = load_bits(out + elem_off(d, b, t, h, e), ys);
          if (!same_elem(d->dtype, got, want)) {
            fprintf(stderr,
                    "fuzz_rope_views: batch %zu token %zu (position %ld) head %zu element %zu "
                    "of %zu (R %zu): got %08x, in-place form %08x (src %08x)\n",
                    b, t, (long)pos[t], h, e, D, posenc_rope_plan_rotary_dim(c->plan),
                    (unsigned)got, (unsigned)want,
                    (unsigned)load_bits(in + elem_off(s, b, t, h, e), xs));
            violation(&c->base, isa, "dst element differs from the in-place form",
                      elem_off(d, b, t, h, e) / 4, widen(d->dtype, got), widen(d->dtype, want));
          }
        }
  }
  free(tmp);
  free(pos);
}

/* The factor path: posenc_rope_out / _mrope_out with each token's position, same ISA,
 * bitwise. */
static void check_plan_path(const vcall *c, const char *isa, const float *res, float *buf) {
  const size_t N = c->n_batch * c->n_tokens;
  const int rows = mrope_rows(ref_flags(c));
  int32_t *pos = alloc_i32((size_t)rows * N);
  for (size_t b = 0; b < c->n_batch; ++b)
    for (size_t t = 0; t < c->n_tokens; ++t)
      for (int k = 0; k < rows; ++k)
        pos[(size_t)k * N + b * c->n_tokens + t] = token_pos(c, b, t, is_mrope(c) ? k : 0);
  fill_buffer(&c->base, buf);
  float *arena = buf + GUARD;
  const posenc_rope_view s = views_make(&c->src, arena), d = views_make(&c->dst, arena);
  const posenc_status st = is_mrope(c)
                               ? posenc_mrope_out(c->plan, c->sections, c->head_dim, c->n_batch,
                                                  c->n_tokens, pos, &s, &d, ref_flags(c))
                               : posenc_rope_out(c->plan, c->head_dim, c->n_batch, c->n_tokens, pos,
                                                 0, &s, &d, ref_flags(c));
  if (st != POSENC_OK)
    violation(&c->base, isa, "posenc_rope_out refuses the views of an accepted apply", 0, 0, 0);
  const size_t ys = dsize(c->dst.dtype);
  for (size_t b = 0; b < c->n_batch; ++b)
    for (size_t t = 0; t < c->n_tokens; ++t)
      for (size_t h = 0; h < c->dst.n_heads; ++h)
        for (size_t e = 0; e < c->head_dim; ++e) {
          const size_t o = elem_off(&c->dst, b, t, h, e);
          const uint32_t got = load_bits((const char *)(res + GUARD) + o, ys);
          const uint32_t want = load_bits((const char *)arena + o, ys);
          if (!same_elem(c->dst.dtype, got, want))
            violation(&c->base, isa, "apply differs from posenc_rope_out at the same positions",
                      o / 4, widen(c->dst.dtype, got), widen(c->dst.dtype, want));
        }
  free(pos);
}

/* Another ISA's dst elements against scalar's: rotated pairs within rope_element_within
 * (POSENC_ROPE_DETERMINISTIC: bitwise, NaN for NaN), the copied elements [R, D) identical. */
static void check_against_scalar(const vcall *c, const char *isa, const float *res,
                                 const float *ref, size_t R, unsigned flags) {
  const int gptj = (flags & POSENC_ROPE_GPTJ) != 0, det = (flags & POSENC_ROPE_DETERMINISTIC) != 0;
  const view *s = &c->src, *d = &c->dst;
  const size_t xs = dsize(s->dtype), ys = dsize(d->dtype), half = R / 2;
  const call storage = {.halves = d->dtype != POSENC_DTYPE_F32,
                        .bf16 = d->dtype == POSENC_DTYPE_BF16};
  const char *in = (const char *)c->base.input, *got_p = (const char *)(res + GUARD),
             *want_p = (const char *)(ref + GUARD);
  for (size_t b = 0; b < c->n_batch; ++b)
    for (size_t t = 0; t < c->n_tokens; ++t)
      for (size_t h = 0; h < s->n_heads; ++h) {
        for (size_t i = 0; i < half; ++i) {
          const size_t eu = gptj ? 2 * i : i, ew = gptj ? 2 * i + 1 : i + half;
          const float in_u = widen(s->dtype, load_bits(in + elem_off(s, b, t, h, eu), xs));
          const float in_w = widen(s->dtype, load_bits(in + elem_off(s, b, t, h, ew), xs));
          for (int j = 0; j < 2; ++j) {
            const size_t o = elem_off(d, b, t, h, j ? ew : eu);
            const float got = widen(d->dtype, load_bits(got_p + o, ys));
            const float want = widen(d->dtype, load_bits(want_p + o, ys));
            if (det ? !same_elem(d->dtype, load_bits(got_p + o, ys), load_bits(want_p + o, ys))
                    : !rope_element_within(&storage, c->att, in_u, in_w, got, want)) {
              fprintf(stderr,
                      "fuzz_rope_views: batch %zu token %zu (position %ld) head %zu pair %zu: "
                      "input u %a v %a, att %a; got %a, scalar %a\n",
                      b, t, (long)token_pos(c, b, t, 0), h, i, (double)in_u, (double)in_w, c->att,
                      (double)got, (double)want);
              violation(&c->base, isa,
                        det ? "deterministic mode: rotated element differs from scalar's"
                            : "rotated element out of tolerance of scalar",
                        o / 4, got, want);
            }
          }
        }
        for (size_t e = R; e < c->head_dim; ++e) {
          const size_t o = elem_off(d, b, t, h, e);
          const uint32_t got = load_bits(got_p + o, ys), want = load_bits(want_p + o, ys);
          if (!same_elem(d->dtype, got, want))
            violation(&c->base, isa, "copied element differs from scalar's", o / 4,
                      widen(d->dtype, got), widen(d->dtype, want));
        }
      }
}

/* The 16-bit units of the arena the accepted call writes (each dst element), counted. */
static uint8_t *dst_units(const vcall *c) {
  const size_t units = 2 * c->base.len, ys = dsize(c->dst.dtype);
  uint8_t *m = calloc(units, 1);
  if (!m) abort();
  for (size_t b = 0; b < c->n_batch; ++b)
    for (size_t t = 0; t < c->n_tokens; ++t)
      for (size_t h = 0; h < c->dst.n_heads; ++h)
        for (size_t e = 0; e < c->head_dim; ++e) {
          const size_t u = elem_off(&c->dst, b, t, h, e) / 2;
          for (size_t k = 0; k < ys / 2; ++k) {
            if (u + k >= units)
              violation(&c->base, "scalar", "harness: dst element outside the arena", u / 2, 0, 0);
            if (m[u + k] == 1)
              violation(&c->base, "scalar", "call with overlapping dst head vectors accepted",
                        (u + k) / 2, 0, 0);
            m[u + k] = 1;
          }
        }
  return m;
}

/* The compute's results: *factors as posenc.h says, the padding zero, nothing written past
 * the rows. */
static void check_computed(const vcall *c, const char *isa, const run *x) {
  const posenc_rope_factors *f = &x->f;
  const size_t R = posenc_rope_plan_rotary_dim(c->plan);
  const unsigned layout = c->cflags & FACTOR_FLAGS;
  const size_t rf = row_floats_of(R, layout);
  float *storage = (float *)((char *)(x->storage + GUARD) + c->storage_misalign);
  if (f->data != (c->storage_null ? NULL : storage) || f->n_rows != c->n_rows ||
      f->rotary_dim != R || f->row_floats != rf || f->flags != layout) {
    fprintf(stderr,
            "fuzz_rope_views: factors {data %p (storage %p), n_rows %zu (%zu), rotary_dim %zu "
            "(%zu), row_floats %zu (%zu), flags %u (%u)}\n",
            (void *)f->data, (void *)storage, f->n_rows, c->n_rows, f->rotary_dim, R, f->row_floats,
            rf, f->flags, layout);
    violation(&c->base, isa, "posenc_rope_factors not as posenc.h describes them", 0, 0, 0);
  }
  const size_t per = (layout & POSENC_ROPE_GPTJ) ? 2 : 1;
  for (size_t row = 0; row < c->n_rows; ++row)
    for (size_t i = per * (R / 2); i < rf / 2; ++i)
      for (int blk = 0; blk < 2; ++blk) {
        const float v = storage[row * rf + blk * (rf / 2) + i];
        if (v != 0.0f) violation(&c->base, isa, "factor row padding not zero", row, v, 0.0f);
      }
  /* nothing past the rows: the bytes from need on, and the guards */
  const size_t floats = c->cap + 2 * GUARD;
  float *pristine = malloc(floats * sizeof *pristine);
  if (!pristine) abort();
  fill_storage(c, pristine);
  const size_t first = (GUARD * sizeof(float) + c->storage_misalign + c->need + 1) / 2;
  for (size_t u = first; u < 2 * floats; ++u)
    if (memcmp((const char *)x->storage + 2 * u, (const char *)pristine + 2 * u, 2))
      violation(&c->base, isa, "factor storage written past posenc_rope_factors_bytes", u / 2,
                x->storage[u / 2], pristine[u / 2]);
  for (size_t u = 0; u < (GUARD * sizeof(float) + c->storage_misalign) / 2; ++u)
    if (memcmp((const char *)x->storage + 2 * u, (const char *)pristine + 2 * u, 2))
      violation(&c->base, isa, "factor storage written before its start", u / 2, 0, 0);
  free(pristine);
}

/* posenc_rope_factors_bytes against the header's row layout. */
static void check_factors_bytes(const vcall *c) {
  const size_t rds[] = {c->rd, posenc_rope_plan_rotary_dim(c->plan), 0, 3, ((size_t)1 << 20) + 2};
  const size_t rows[] = {c->n_rows, 0, 1, SIZE_MAX / 64, SIZE_MAX};
  const unsigned flags[] = {0,
                            POSENC_ROPE_GPTJ,
                            POSENC_ROPE_DETERMINISTIC,
                            POSENC_ROPE_GPTJ | POSENC_ROPE_DETERMINISTIC,
                            POSENC_ROPE_INVERSE,
                            POSENC_ROPE_F32_ANGLES | POSENC_ROPE_GPTJ,
                            1u << 20,
                            c->cflags};
  for (size_t a = 0; a < 5; ++a)
    for (size_t b = 0; b < 5; ++b)
      for (size_t k = 0; k < 8; ++k) {
        const size_t got = posenc_rope_factors_bytes(rds[a], rows[b], flags[k]);
        const size_t want = factors_bytes_expected(rds[a], rows[b], flags[k]);
        if (got != want) {
          fprintf(stderr,
                  "fuzz_rope_views: posenc_rope_factors_bytes(%zu, %zu, %u) = %zu, not %zu\n",
                  rds[a], rows[b], flags[k], got, want);
          violation(&c->base, "-", "posenc_rope_factors_bytes", 0, 0, 0);
        }
      }
}

static void check_status(const vcall *c, const char *what, posenc_status st, int sure, int listed) {
  if (sure && st == POSENC_OK)
    violation(&c->base, "scalar",
              what[0] == 'c' ? "compute: an argument posenc.h lists as an error accepted"
                             : "call with an argument posenc.h lists as an error accepted",
              0, 0, 0);
  if (!listed && st != POSENC_OK)
    violation(
        &c->base, "scalar",
        what[0] == 'c' ? "compute: valid arguments refused" : "call with valid arguments refused",
        0, 0, 0);
}

/* Every check of one ISA's run (scalar: `ref` NULL). */
static void check_run(const vcall *c, const char *isa, const run *x, const run *ref,
                      const float *pristine, uint8_t **written, float *scratch) {
  const int factors = c->base.family >= FAM_FACTORS;
  const size_t total = 2 * GUARD + c->base.len;
  if (ref && (x->cst != ref->cst || x->st != ref->st || x->computed != ref->computed)) {
    fprintf(stderr, "fuzz_rope_views: ISA %s: compute %d, status %d; scalar %d, %d\n", isa,
            (int)x->cst, (int)x->st, (int)ref->cst, (int)ref->st);
    violation(&c->base, isa, "status differs from scalar's", 0, 0, 0);
  }
  if (factors) {
    if (x->cst != POSENC_OK) {
      float *pristine_storage = malloc((c->cap + 2 * GUARD) * sizeof(float));
      if (!pristine_storage) abort();
      fill_storage(c, pristine_storage);
      expect_same(c, isa, "factor storage changed by a failing compute", x->storage,
                  pristine_storage, c->cap + 2 * GUARD, NULL);
      free(pristine_storage);
      posenc_rope_factors pattern;
      memset(&pattern, 0xA5, sizeof pattern);
      if (memcmp(&pattern, &x->f, sizeof pattern))
        violation(&c->base, isa, "*factors changed by a failing compute", 0, 0, 0);
    } else {
      check_computed(c, isa, x);
      if (ref && (c->cflags & POSENC_ROPE_DETERMINISTIC)) /* the rows too: bitwise scalar's */
        for (size_t i = 0; i < c->need / sizeof(float); ++i) {
          const size_t k = GUARD + i; /* storage_misalign is 0: the compute succeeded */
          if (!same_elem(POSENC_DTYPE_F32, float_bits(x->after_compute[k]),
                         float_bits(ref->after_compute[k])))
            violation(&c->base, isa, "deterministic mode: factor differs from scalar's", i,
                      x->after_compute[k], ref->after_compute[k]);
        }
      expect_same(c, isa, "factor storage changed by the apply", x->storage, x->after_compute,
                  c->cap + 2 * GUARD, NULL);
    }
  }
  if (x->st != POSENC_OK) {
    expect_same(c, isa, "buffer changed by a failing call", x->arena, pristine, total, NULL);
    return;
  }
  const int work = c->n_batch && c->n_tokens && c->src.n_heads;
  if (!work) {
    expect_same(c, isa, "buffer changed by a no-op call", x->arena, pristine, total, NULL);
    return;
  }
  if (!*written) *written = dst_units(c);
  expect_same(c, isa, "element outside the dst view changed", x->arena, pristine, total, *written);
  size_t R = posenc_rope_plan_rotary_dim(c->plan);
  if (factors) {
    /* Changed to a valid-looking struct (rotary_dim + 2 or the other layout with the same
     * row_floats: one more pair rotated by the zero padding, or pairs taken from the other
     * layout's factors): no reference. */
    if (x->g.rotary_dim != x->f.rotary_dim || x->g.flags != x->f.flags ||
        x->g.row_floats != x->f.row_floats)
      return;
    check_plan_path(c, isa, x->arena, scratch);
  }
  check_in_place_form(c, isa, x->arena);
  if (ref) check_against_scalar(c, isa, x->arena, ref->arena, R, ref_flags(c));
}

static int fuzz_views(const uint8_t *data, size_t size) {
  reader r = {data, size, 0x9E3779B97F4A7C15ull};
  vcall *c = (vcall *)views_decode(&r);
  const size_t R = posenc_rope_plan_rotary_dim(c->plan);
  int skip = c->base.len > MAX_ARENA || c->cap > MAX_STORAGE;
  if (c->base.family >= FAM_FACTORS && c->n_rows > MAX_ROWS) skip = 1;
  uint8_t *written = NULL;
  run x[2] = {{0}};
  float *pristine = NULL, *scratch = NULL;
  if (skip) goto done;
  r.rng ^= (uint64_t)u32(&r) << 1 | 1u;
  c->base.input = malloc(c->base.len * sizeof(float));
  if (!c->base.input) abort();
  for (size_t i = 0; i < c->base.len; ++i) c->base.input[i] = views_data(&r);
  const size_t total = 2 * GUARD + c->base.len, sfloats = c->cap + 2 * GUARD;
  pristine = malloc(total * sizeof(float));
  scratch = malloc(total * sizeof(float));
  for (int k = 0; k < 2; ++k) {
    x[k].arena = malloc(total * sizeof(float));
    x[k].storage = malloc(sfloats * sizeof(float));
    x[k].after_compute = malloc(sfloats * sizeof(float));
    if (!x[k].arena || !x[k].storage || !x[k].after_compute) abort();
  }
  if (!pristine || !scratch) abort();
  fill_buffer(&c->base, pristine);

  run_call(c, POSENC_ISA_SCALAR, &x[0]);
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("POSENC_FUZZ_VERBOSE") != NULL;
  if (verbose)
    fprintf(stderr,
            "fuzz_rope_views: family %d status %d (compute %d) plan %s R %zu att %g D %zu B %zu "
            "L %zu H %zu/%zu types %d->%d src off %zu ts %zu hs %zu bs %zu dst off %zu ts %zu "
            "hs %zu bs %zu flags %#x cflags %#x rows %zu first %zu rbs %zu fmut %d arena %zu "
            "sections %zu %zu %zu%s positions %s\n",
            c->base.family, (int)x[0].st, (int)x[0].cst, c->plan_kind, R, c->att, c->head_dim,
            c->n_batch, c->n_tokens, c->src.n_heads, c->dst.n_heads, c->src.dtype, c->dst.dtype,
            c->src.off, c->src.ts, c->src.hs, c->src.bs, c->dst.off, c->dst.ts, c->dst.hs,
            c->dst.bs, c->flags, c->cflags, c->n_rows, c->first_row, c->rbs, c->fmut, c->base.len,
            c->sections[0], c->sections[1], c->sections[2], c->sections_null ? " (NULL)" : "",
            c->positions || c->row_pos ? "array" : "NULL");
  /* the scalar status against posenc.h's errors */
  if (c->base.family <= FAM_MOUT) {
    int sure = 0, listed = 0;
    op_errors(c, &sure, &listed);
    check_status(c, "op", x[0].st, sure, listed);
  } else {
    int sure = 0, listed = 0;
    compute_errors(c, &sure, &listed);
    check_status(c, "compute", x[0].cst, sure, listed);
    check_factors_bytes(c);
    if (x[0].computed) {
      sure = listed = 0;
      apply_errors(c, &x[0].g, x[0].first_row, &sure, &listed);
      check_status(c, "apply", x[0].st, sure, listed);
    }
  }
  /* an int64 position outside int32: POSENC_ERR_INVALID_ARGUMENT (posenc.h) */
  if (c->bad64 && (c->base.family <= FAM_MOUT ? x[0].st : x[0].cst) != POSENC_ERR_INVALID_ARGUMENT)
    violation(&c->base, "scalar",
              "int64 position outside int32 not refused with POSENC_ERR_INVALID_ARGUMENT", 0, 0, 0);
  check_run(c, "scalar", &x[0], NULL, pristine, &written, scratch);
  for (int isa = 1; isa < POSENC_ISA_COUNT; ++isa) {
    if (!posenc_isa_available((posenc_isa)isa)) continue;
    run_call(c, (posenc_isa)isa, &x[1]);
    check_run(c, posenc_isa_name((posenc_isa)isa), &x[1], &x[0], pristine, &written, scratch);
  }
done:
  for (int k = 0; k < 2; ++k) {
    free(x[k].arena);
    free(x[k].storage);
    free(x[k].after_compute);
  }
  free(pristine);
  free(scratch);
  free(written);
  free(c->base.input);
  posenc_rope_plan_destroy(c->plan);
  free(c->positions);
  free(c->row_pos);
  free(c->pos64);
  free(c);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_views(data, size); }
