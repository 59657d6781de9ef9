/* The attention-score softmax, written once against the vector layer and compiled per ISA
 * by softmax_<isa>.c. The steps of the scalar reference (softmax_scalar.c), each row in
 * three passes over a work block that stays in cache (the f32 output row itself, else a
 * float block on the stack):
 *   1. t = s(scale * x) (+ mask) (+ ALiBi), -inf for a hidden key, into the work block,
 *      and their max M (with the sink);
 *   2. e = exp(t - M) (posenc's polynomial, kernels/softmax.h), 0 below softmax_exp_floor,
 *      kept in the block and summed: float lanes, two accumulators taking alternate
 *      vectors, added into double every SOFTMAX_SUM_SPAN vectors counted from column 0;
 *   3. y = e * (float)(1 / sum) (0 or at least 2 FLT_MIN: no test), stored into the row.
 * Without key positions, a row starts at its first visible column rounded down to a
 * multiple of SOFTMAX_SUM_SPAN vectors (the columns before the visible ones are hidden
 * lanes), so the sum's lanes depend on the column only: a mask that hides what the causal
 * flag hides gives the flag's result bit for bit. The columns outside are only written (0).
 * NaN needs no test: a NaN t makes its e, the sum and then every y NaN, as does a +inf t
 * (inf - inf); only a row whose max is -inf is handled apart (zeros, or NaN if it holds
 * one). Pass 1 is compiled for each score type, row kind and mask type, pass 3 for each
 * output type, and the call chooses them through function pointers. Rows with an f32 output
 * go through three steps (sm_job1_ to _3_): plain rows of f32 scores through a pipeline of
 * three rows, each row's step 1 in one loop with the step 2 and step 3 of the two rows before
 * (sm_pipeline_, sm_fused_; the exp's multiplies beside the other steps' loads and stores;
 * large out-of-place calls store y non-temporally there, sm_streams_), the other kinds two
 * short rows at a time.
 * No vector is kept in a struct, array or static object, and VF_W / VD_W are only used as
 * run-time values, so that a length-agnostic layer (VF_SIZELESS: SVE, RVV) compiles this:
 * the row constants are floats, broadcast into vector locals where they are used. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "simd/vec_elem.h"
#include "softmax.h"

/* The blocks of a long row with a 16-bit output start at multiples of SOFTMAX_SUM_SPAN
 * vectors of every layer (VF_W <= POSENC_MAX_LANES, both powers of two). */
_Static_assert(SOFTMAX_BLOCK % (SOFTMAX_SUM_SPAN * POSENC_MAX_LANES) == 0,
               "SOFTMAX_BLOCK must hold whole sum spans");

/* posenc's exp for t0 and t1 in [SOFTMAX_EXP_MIN, 88] (a NaN t gives NaN), as P(r) and n of
 * e^t = 2^n P(r), their steps interleaved (each exp is a chain of ~10 dependent operations:
 * one after the other kept fewer exps in flight; see sm_exp2_). One exp (sm_exp_parts_)
 * passes t twice and drops the second result, which the compiler removes. */
POSENC_INLINE void VFN(sm_exp_parts2_)(vf t0, vf t1, vf *p0_out, vf *p1_out, vf *n0_out,
                                       vf *n1_out) {
  const vf magic = vf_set1(SOFTMAX_ROUND_MAGIC), one = vf_set1(1.0f);
  const vf l2e = vf_set1(SOFTMAX_LOG2E);
  const vf n0 = vf_sub(vf_fmadd(t0, l2e, magic), magic);
  const vf n1 = vf_sub(vf_fmadd(t1, l2e, magic), magic);
#ifdef VF_FMA
  /* One fused step: n * SOFTMAX_LN2 is exact inside it, and float ln 2's own error
   * (1.9e-9) costs |n| 1.9e-9 relative, below 2^-24 where |t| < 16. */
  const vf r0 = vf_fnmadd(n0, vf_set1(SOFTMAX_LN2), t0);
  const vf r1 = vf_fnmadd(n1, vf_set1(SOFTMAX_LN2), t1);
#else
  vf r0 = vf_fnmadd(n0, vf_set1(SOFTMAX_LN2_HI), t0);
  vf r1 = vf_fnmadd(n1, vf_set1(SOFTMAX_LN2_HI), t1);
  r0 = vf_fnmadd(n0, vf_set1(SOFTMAX_LN2_LO), r0);
  r1 = vf_fnmadd(n1, vf_set1(SOFTMAX_LN2_LO), r1);
#endif
  const vf c5 = vf_set1(SOFTMAX_EXP_C5), c4 = vf_set1(SOFTMAX_EXP_C4);
  const vf c3 = vf_set1(SOFTMAX_EXP_C3), c2 = vf_set1(SOFTMAX_EXP_C2);
  vf p0 = vf_fmadd(c5, r0, c4), p1 = vf_fmadd(c5, r1, c4);
  p0 = vf_fmadd(p0, r0, c3);
  p1 = vf_fmadd(p1, r1, c3);
  p0 = vf_fmadd(p0, r0, c2);
  p1 = vf_fmadd(p1, r1, c2);
  p0 = vf_fmadd(p0, r0, one);
  p1 = vf_fmadd(p1, r1, one);
  *p0_out = vf_fmadd(p0, r0, one);
  *p1_out = vf_fmadd(p1, r1, one);
  *n0_out = n0;
  *n1_out = n1;
}

/* posenc's exp for t in [SOFTMAX_EXP_MIN, 88] (a NaN t gives NaN), as P(r) and n of
 * e^t = 2^n P(r). */
POSENC_INLINE vf VFN(sm_exp_parts_)(vf t, vf *n_out) {
  vf p, p_unused, n_unused;
  VFN(sm_exp_parts2_)(t, t, &p, &p_unused, n_out, &n_unused);
  return p;
}

/* posenc's exp for t in [SOFTMAX_EXP_MIN, 88] (a NaN t gives NaN). */
POSENC_INLINE vf VFN(sm_exp_poly_)(vf t) {
  vf n;
  const vf p = VFN(sm_exp_parts_)(t, &n);
  return vf_scale2(p, n);
}

/* exp(t), +0 where t < lo (softmax_exp_floor; -inf included); a NaN t stays NaN. */
POSENC_INLINE vf VFN(sm_exp_)(vf t, vf lo) {
  vf n;
  const vf p = VFN(sm_exp_parts_)(t, &n);
  return vf_scale2_zero_where(vf_lt_m(t, lo), p, n);
}

/* sm_exp_ of t0 and t1, their steps interleaved. Zen 4 avx512, posenc_ab against the exps
 * one after the other: 32 x 512 x 512 with a KV-cache mask 0.96-1.00x the time, decode rows
 * of 512 and 4096 keys 0.96-0.99x, softmax out of place the same. With 16 registers (avx2)
 * decode rows took 1.04-1.10x the time: not used there. */
POSENC_INLINE void VFN(sm_exp2_)(vf t0, vf t1, vf lo, vf *e0, vf *e1) {
  vf p0, p1, n0, n1;
  VFN(sm_exp_parts2_)(t0, t1, &p0, &p1, &n0, &n1);
  *e0 = vf_scale2_zero_where(vf_lt_m(t0, lo), p0, n0);
  *e1 = vf_scale2_zero_where(vf_lt_m(t1, lo), p1, n1);
}

/* One row's constants (floats: pass 1 broadcasts them into vector locals). */
typedef struct {
  const void *x, *mask;
  const int32_t *kpos;
  int32_t qpos;
  size_t lo;       /* without kpos: the columns before lo are hidden */
  int softcap;     /* 1: s(u) = c tanh(u / c) */
  int mask_slope;  /* 1: the mask term is slope * mask */
  int alibi;       /* 0: none, 1: slope * d, 2: -(slope * |d|), d = kpos - qpos */
  int kpos_causal; /* with kpos: hide d > 0 */
  int kpos_window; /* with kpos: hide d <= -window */
  int kpos_neg;    /* with kpos: hide kpos < 0 (POSENC_SOFTMAX_KPOS_NEG_HIDDEN) */
  int32_t window;
  float scale, cap, rcap, slope;
} sm_row;

/* c * tanh(u / c) as c * (1 - 2 / (exp(2v) + 1)), v = u * (1/c) clamped to +-9 (a NaN v
 * stays NaN: it is the second operand of min and max). */
POSENC_INLINE vf VFN(sm_softcap_)(vf u, vf c, vf rc) {
  const vf lim = vf_set1(SOFTMAX_TANH_CLAMP), one = vf_set1(1.0f);
  vf v = vf_mul(u, rc);
  v = vf_min(lim, v);
  v = vf_max(vf_neg(lim), v);
  const vf e = VFN(sm_exp_poly_)(vf_add(v, v));
  return vf_mul(c, vf_sub(one, vf_div(vf_set1(2.0f), vf_add(e, one))));
}

/* The kinds of rows pass 1 is compiled for. */
enum {
  SM_PLAIN = 0,       /* no soft-capping, ALiBi term or hiding by key positions */
  SM_GENERAL = 1,     /* any option, tested per row */
  SM_ALIBI_SYM = 2,   /* plain + the symmetric ALiBi term, from float distances */
  SM_ALIBI_SIGNED = 3 /* plain + the signed ALiBi term, from float distances */
};

/* t for the n lanes at column j (n == VF_W: a whole vector); lanes past n are not read.
 * scale, cap, rcap, slope: r's constants broadcast. mk: 1 if there is a mask (of type me).
 * dcol: with the ALiBi kinds, the float distances j + lane - qpos (exact: every distance of
 * such a call is below 2^24), as the int32 ones of SM_GENERAL convert to, so the term is
 * bit for bit the same. */
POSENC_INLINE vf VFN(sm_t_)(const sm_row *r, vf scale, vf cap, vf rcap, vf slope, size_t j,
                            size_t n, posenc_elem xe, int mk, posenc_elem me, int kind, vf dcol) {
  const int general = kind == SM_GENERAL;
  vf u = n == VF_W ? ve_load(r->x, j, xe) : ve_load_n(r->x, j, n, xe);
  u = vf_mul(scale, u);
  if (general && r->softcap) u = VFN(sm_softcap_)(u, cap, rcap);
  const vf ninf = vf_set1(-INFINITY);
  int hide = 0;
  vm hid;
  if (mk) {
    const vf m = n == VF_W ? ve_load(r->mask, j, me) : ve_load_n(r->mask, j, n, me);
    hid = vf_eq_m(m, ninf);
    hide = 1;
    u = vf_add(u, (general && r->mask_slope) ? vf_mul(slope, m) : m);
  }
  if (kind == SM_ALIBI_SYM) u = vf_sub(u, vf_mul(slope, vf_abs(dcol)));
  if (kind == SM_ALIBI_SIGNED) u = vf_add(u, vf_mul(slope, dcol));
  if (general && (r->alibi || r->kpos_causal || r->kpos_window || r->kpos_neg)) {
    /* d wraps (vector integer arithmetic) where kpos < 0: such a key is hidden (by its mask
     * value or kpos_neg), and its lane is replaced by -inf below. */
    const vi k =
        r->kpos ? (n == VF_W ? vi_load(r->kpos + j) : vi_load_n(r->kpos + j, n)) : vi_set1(0);
    const vi d =
        r->kpos ? vi_sub(k, vi_set1(r->qpos)) : vi_add(vi_set1((int32_t)j - r->qpos), vi_iota());
    if (r->alibi == 1)
      u = vf_add(u, vf_mul(slope, vf_from_vi(d)));
    else if (r->alibi == 2)
      u = vf_sub(u, vf_mul(slope, vf_from_vi(vi_abs(d))));
    if (r->kpos_causal) {
      const vm h = vi_gt_m(d, vi_set1(0));
      hid = hide ? vm_or(hid, h) : h;
      hide = 1;
    }
    if (r->kpos_window) {
      const vm h = vi_gt_m(vi_set1(1 - r->window), d);
      hid = hide ? vm_or(hid, h) : h;
      hide = 1;
    }
    if (r->kpos_neg) {
      const vm h = vi_gt_m(vi_set1(0), k);
      hid = hide ? vm_or(hid, h) : h;
      hide = 1;
    }
  }
  return hide ? vf_select(hid, ninf, u) : u;
}

/* Pass 1 over columns [j0, j1): t into work[j - j0] (-inf for the columns before r->lo,
 * which are not read); returns max(mx, every t). */
POSENC_INLINE vf VFN(sm_pass1_)(const sm_row *row, size_t j0, size_t j1, float *work, vf mx,
                                posenc_elem xe, int mk, posenc_elem me, int kind) {
  /* The vector constants in locals, the rest a local copy: the stores into work could
   * alias *row (vector types alias everything), which would make every iteration read the
   * constants again. */
  const sm_row copy = *row, *r = &copy;
  const vf scale = vf_set1(r->scale), cap = vf_set1(r->cap), rcap = vf_set1(r->rcap);
  const vf slope = vf_set1(r->slope);
  size_t j = j0;
  if (j < r->lo) {
    const size_t end = r->lo < j1 ? r->lo : j1;
    for (; j < end; ++j) work[j - j0] = -INFINITY;
  }
  /* The ALiBi kinds' distances, stepped by whole vectors (exact integers below 2^24). */
  const int stepped = kind == SM_ALIBI_SYM || kind == SM_ALIBI_SIGNED;
  const vf w = vf_set1((float)VF_W), w2 = vf_set1(2.0f * VF_W);
  vf d0 = stepped ? vf_add(vf_set1((float)((int32_t)j - r->qpos)), vf_from_vi(vi_iota()))
                  : vf_set1(0.0f);
  vf d1 = vf_add(d0, w);
  /* Two max accumulators: the latency of one max per vector would bound the loop. */
  vf mx1 = vf_set1(-INFINITY);
  for (; j + 2 * VF_W <= j1; j += 2 * VF_W) {
    const vf t0 = VFN(sm_t_)(r, scale, cap, rcap, slope, j, VF_W, xe, mk, me, kind, d0);
    const vf t1 = VFN(sm_t_)(r, scale, cap, rcap, slope, j + VF_W, VF_W, xe, mk, me, kind, d1);
    vf_store_reload(work + (j - j0), t0);
    vf_store_reload(work + (j - j0) + VF_W, t1);
    mx = vf_max(mx, t0);
    mx1 = vf_max(mx1, t1);
    if (stepped) {
      d0 = vf_add(d0, w2);
      d1 = vf_add(d1, w2);
    }
  }
  mx = vf_max(mx, mx1);
  if (j + VF_W <= j1) {
    const vf t = VFN(sm_t_)(r, scale, cap, rcap, slope, j, VF_W, xe, mk, me, kind, d0);
    vf_store_reload(work + (j - j0), t);
    mx = vf_max(mx, t);
    j += VF_W;
    d0 = d1;
  }
  if (j < j1) {
    const size_t rest = j1 - j;
    const vf t = VFN(sm_t_)(r, scale, cap, rcap, slope, j, rest, xe, mk, me, kind, d0);
    vf_store_n(work + (j - j0), t, rest);
    mx = vf_max(mx, vf_first_n(t, rest, -INFINITY));
  }
  return mx;
}

typedef vf (*sm_pass1_fn)(const sm_row *r, size_t j0, size_t j1, float *work, vf mx);

/* Pass 1 for each score type, row kind and mask type (none, f32, f16). */
#define SM_PASS1(name, xe, mk, me, kind)                                           \
  static vf VFN(name)(const sm_row *r, size_t j0, size_t j1, float *work, vf mx) { \
    return VFN(sm_pass1_)(r, j0, j1, work, mx, xe, mk, me, kind);                  \
  }
#define SM_PASS1_KIND(x, xe, k, kind)                            \
  SM_PASS1(sm_p1_##x##_##k##_, xe, 0, POSENC_ELEM_F32, kind)     \
  SM_PASS1(sm_p1_##x##_##k##_m32_, xe, 1, POSENC_ELEM_F32, kind) \
  SM_PASS1(sm_p1_##x##_##k##_m16_, xe, 1, POSENC_ELEM_F16, kind)
#define SM_PASS1_TYPE(x, xe)                \
  SM_PASS1_KIND(x, xe, plain, SM_PLAIN)     \
  SM_PASS1_KIND(x, xe, general, SM_GENERAL) \
  SM_PASS1_KIND(x, xe, sym, SM_ALIBI_SYM)   \
  SM_PASS1_KIND(x, xe, signed, SM_ALIBI_SIGNED)
SM_PASS1_TYPE(f32, POSENC_ELEM_F32)
SM_PASS1_TYPE(bf16, POSENC_ELEM_BF16)
SM_PASS1_TYPE(f16, POSENC_ELEM_F16)
#undef SM_PASS1_TYPE
#undef SM_PASS1_KIND
#undef SM_PASS1

/* The sum's float accumulators into the double ones (lower halves into lo, upper into hi). */
POSENC_INLINE void VFN(sm_flush_)(vf a0, vf a1, vd *s_lo, vd *s_hi) {
  *s_lo = vd_add(vd_add(*s_lo, vd_from_vf_lo(a0)), vd_from_vf_lo(a1));
  *s_hi = vd_add(vd_add(*s_hi, vd_from_vf_hi(a0)), vd_from_vf_hi(a1));
}

/* The next row's bytes (scores, mask, output), fetched into cache while this row's exp runs:
 * SOFTMAX_SUM_SPAN cache lines of each at every SOFTMAX_SUM_SPAN vectors of pass 2 (one line
 * per vector, in one burst so that the loop has no test per vector; where a row has them,
 * pass 2 and the fused three-row loop spread them instead, sm_prefetch_step_, in loops of
 * their own), so a row that comes from memory arrives while the CPU computes instead of
 * stalling the next pass 1. */
typedef struct {
  const char *p[3], *end[3];
  int n; /* streams in use */
} sm_prefetch;

static void sm_prefetch_span_(sm_prefetch *pf) {
  for (int s = 0; s < pf->n; ++s) {
    const char *p = pf->p[s];
    const char *end =
        p + 64 * SOFTMAX_SUM_SPAN < pf->end[s] ? p + 64 * SOFTMAX_SUM_SPAN : pf->end[s];
    for (; p < end; p += 64) __builtin_prefetch(p, 0, 3);
    pf->p[s] = p;
  }
}

/* What is left of the next row's bytes, after a row's pass 2 shorter than the next row (a
 * row cut to its mask's visible keys, a short causal row). */
static void sm_prefetch_rest_(sm_prefetch *pf) {
  for (int s = 0; s < pf->n; ++s) {
    for (const char *p = pf->p[s]; p < pf->end[s]; p += 64) __builtin_prefetch(p, 0, 3);
    pf->p[s] = pf->end[s];
  }
}

/* The next two cache lines of each stream (the prefetching loops of pass 2 and sm_fused_, at
 * every two vectors: a line per vector beside the work, not in bursts). On a Xeon (Intel, 48 KiB
 * L1), perf put 54% of the 32 x 512 x 512 KV-cache row's samples on the bursts' prefetches (each a
 * fill buffer until its line arrives); posenc_ab case 17 (32 heads), new/old: 2 lines per stream at
 * every two vectors 0.86x the time (3: 0.88x, 4: 0.92x; 1: 1.04-1.05x the time of 2). */
static inline void sm_prefetch_step_(sm_prefetch *pf) {
  for (int s = 0; s < pf->n; ++s) {
    const char *p = pf->p[s];
    if (p < pf->end[s]) {
      __builtin_prefetch(p, 0, 3);
      if (p + 64 < pf->end[s]) __builtin_prefetch(p + 64, 0, 3);
      pf->p[s] = p + 128;
    }
  }
}

static void sm_prefetch_add_(sm_prefetch *pf, const void *p, size_t bytes) {
  pf->p[pf->n] = (const char *)p;
  pf->end[pf->n] = (const char *)p + bytes;
  ++pf->n;
}

/* Pass 2 over work[0, n) (work[0] at a column that is a multiple of SOFTMAX_SUM_SPAN
 * vectors): e = exp(t - max) in place, added into the sum; the prefetches of pf by spread (a
 * constant): 0 none, 1 two lines per stream at every two vectors (sm_prefetch_step_), 2 a
 * burst of SOFTMAX_SUM_SPAN lines per stream at every SOFTMAX_SUM_SPAN vectors where pf has
 * streams (the rest of a fused step's row, sm_fused_: with spread 1 there, rows without a mask
 * took 1.17x / 1.24x the time at 32 x 512 x 512 / x 1024 on a Xeon, avx512, bench interleaved,
 * though their fused loops cover whole rows; not understood). Outside the fused loop, spread
 * 1 against the bursts (Xeon, bench interleaved medians of 7, two runs each): softmax_bf16
 * 1024 x 1024 causal avx512 0.86x the time, avx2 0.90x; ALiBi + softmax bf16 0.89x, f32
 * 0.94x; avx2 f32 32 x 512 x 512 with the KV-cache mask 0.945x, without 0.97x, out of place
 * 0.98x; the fused avx512 rows 0.99-1.01x. */
POSENC_INLINE void VFN(sm_exp_sum_loop_)(float *work, size_t n, vf max, vf lo, vd *s_lo, vd *s_hi,
                                         sm_prefetch *pf, int spread) {
  const size_t span = SOFTMAX_SUM_SPAN * VF_W;
  vf a0 = vf_set1(0.0f), a1 = vf_set1(0.0f);
  size_t j = 0;
  for (; j + 2 * VF_W <= n; j += 2 * VF_W) {
    const vf t0 = vf_sub(vf_load(work + j), max), t1 = vf_sub(vf_load(work + j + VF_W), max);
    vf e0, e1;
    if (VF_REGS >= 32) {
      VFN(sm_exp2_)(t0, t1, lo, &e0, &e1);
    } else { /* (interleaved with 16 registers: avx2 decode rows 1.04-1.10x the time) */
      e0 = VFN(sm_exp_)(t0, lo);
      e1 = VFN(sm_exp_)(t1, lo);
    }
    vf_store_reload(work + j, e0);
    vf_store_reload(work + j + VF_W, e1);
    a0 = vf_add(a0, e0);
    a1 = vf_add(a1, e1);
    if (spread == 1) sm_prefetch_step_(pf);
    if ((j + 2 * VF_W) % span == 0) {
      VFN(sm_flush_)(a0, a1, s_lo, s_hi);
      a0 = a1 = vf_set1(0.0f);
      if (spread == 2 && pf->n) sm_prefetch_span_(pf);
    }
  }
  if (j + VF_W <= n) {
    const vf e0 = VFN(sm_exp_)(vf_sub(vf_load(work + j), max), lo);
    vf_store_reload(work + j, e0);
    a0 = vf_add(a0, e0);
    j += VF_W;
  }
  if (j < n) {
    const size_t rest = n - j;
    const vf e = vf_first_n(VFN(sm_exp_)(vf_sub(vf_load_n(work + j, rest), max), lo), rest, 0.0f);
    vf_store_n(work + j, e, rest);
    if ((j / VF_W) % 2 == 0)
      a0 = vf_add(a0, e);
    else
      a1 = vf_add(a1, e);
  }
  VFN(sm_flush_)(a0, a1, s_lo, s_hi);
}

/* sm_exp_sum_loop_, spreading pf's prefetches where there are any (a loop without them
 * otherwise: no test per vector). */
POSENC_INLINE void VFN(sm_exp_sum_)(float *work, size_t n, vf max, vf lo, vd *s_lo, vd *s_hi,
                                    sm_prefetch *pf) {
  if (pf->n)
    VFN(sm_exp_sum_loop_)(work, n, max, lo, s_lo, s_hi, pf, 1);
  else
    VFN(sm_exp_sum_loop_)(work, n, max, lo, s_lo, s_hi, pf, 0);
}

/* Pass 3: y = e * inv for work[0, n) into columns [j0, j0 + n) (each y is 0 or at least
 * 2 FLT_MIN: see softmax_exp_floor). */
POSENC_INLINE void VFN(sm_normalise_)(const float *work, size_t n, vf inv, void *y, size_t j0,
                                      posenc_elem ye) {
  size_t j = 0;
  /* An f32 y is the work block, in cache: one whole-vector store (vf_store_reload). */
  for (; j + VF_W <= n; j += VF_W) {
    const vf p = vf_mul(vf_load(work + j), inv);
    if (ye == POSENC_ELEM_F32)
      vf_store_reload((float *)y + j0 + j, p);
    else
      ve_store(y, j0 + j, p, ye);
  }
  if (j < n) ve_store_n(y, j0 + j, vf_mul(vf_load_n(work + j, n - j), inv), n - j, ye);
}

/* The elements from column j0 of y up to the first one on a VF_W-element boundary (at most
 * n): the head of a streamed range, stored normally before its non-temporal vectors. */
POSENC_INLINE size_t sm_stream_head_(const void *y, size_t j0, size_t n, posenc_elem ye) {
  const size_t es = posenc_elem_size(ye), align = VF_W * es;
  const size_t off = (size_t)(((uintptr_t)y + j0 * es) % align);
  const size_t head = off ? (align - off) / es : 0;
  return head < n ? head : n;
}

/* Pass 3 of a streaming call (sm_streams_): y = e * inv for work[0, n) into columns
 * [j0, j0 + n) of an f32 y, the whole vectors on VF_W-element boundaries with non-temporal
 * stores, the head before them and the tail after them stored normally. */
POSENC_INLINE void VFN(sm_normalise_nt_)(const float *work, size_t n, vf inv, float *y, size_t j0) {
  size_t j = sm_stream_head_(y, j0, n, POSENC_ELEM_F32);
  if (j) vf_store_n(y + j0, vf_mul(vf_load_n(work, j), inv), j);
  for (; j + VF_W <= n; j += VF_W) vf_stream(y + j0 + j, vf_mul(vf_load(work + j), inv));
  if (j < n) vf_store_n(y + j0 + j, vf_mul(vf_load_n(work + j, n - j), inv), n - j);
}

typedef void (*sm_pass3_fn)(const float *work, size_t n, vf inv, void *y, size_t j0);

#define SM_PASS3(name, ye)                                                         \
  static void VFN(name)(const float *work, size_t n, vf inv, void *y, size_t j0) { \
    VFN(sm_normalise_)(work, n, inv, y, j0, ye);                                   \
  }
SM_PASS3(sm_p3_f32_, POSENC_ELEM_F32)
SM_PASS3(sm_p3_bf16_, POSENC_ELEM_BF16)
SM_PASS3(sm_p3_f16_, POSENC_ELEM_F16)
#undef SM_PASS3

static void VFN(sm_p3_f32_nt_)(const float *work, size_t n, vf inv, void *y, size_t j0) {
  VFN(sm_normalise_nt_)(work, n, inv, (float *)y, j0);
}

/* Columns [j0, j1) of y set to +0 (all bits zero in every output type), nothing read. */
POSENC_INLINE void VFN(sm_zero_)(void *y, size_t j0, size_t j1, posenc_elem ye) {
  const size_t es = posenc_elem_size(ye);
  if (j0 < j1) memset((char *)y + j0 * es, 0, (j1 - j0) * es);
}

/* sm_zero_ for an f32 y in a streaming call: the whole vectors on VF_W-element boundaries
 * with non-temporal stores (as sm_normalise_nt_). */
POSENC_INLINE void VFN(sm_zero_nt_)(float *y, size_t j0, size_t j1) {
  if (j0 >= j1) return;
  size_t j = j0 + sm_stream_head_(y, j0, j1 - j0, POSENC_ELEM_F32);
  VFN(sm_zero_)(y, j0, j, POSENC_ELEM_F32);
  for (; j + VF_W <= j1; j += VF_W) vf_stream(y + j, vf_set1(0.0f));
  VFN(sm_zero_)(y, j, j1, POSENC_ELEM_F32);
}

static int VFN(sm_has_nan_)(const float *x, size_t n) {
  for (size_t j = 0; j < n; ++j)
    if (isnan(x[j])) return 1;
  return 0;
}

/* The passes a call uses. */
typedef struct {
  const softmax_args *a;
  sm_pass1_fn pass1;
  sm_pass3_fn pass3;
  posenc_elem ye;
  float floor; /* softmax_exp_floor(n_k) */
  int stream;  /* y written with non-temporal stores (sm_streams_) */
} sm_call;

/* A row with a NaN or +inf score among its visible keys: NaN at the visible keys of
 * [a0, hi), +0 at the hidden ones (rare: element by element). */
static void VFN(sm_nan_row_)(const sm_call *c, const sm_row *r, void *y, size_t a0, size_t hi) {
  for (size_t j = a0; j < hi; ++j) {
    const int hidden = j < r->lo || softmax_hidden(c->a, r->mask, r->qpos, j);
    posenc_elem_store(y, j, hidden ? 0.0f : NAN, c->ye);
  }
}

/* A row whose max is -inf (every visible t is -inf or NaN): NaN at its visible keys if a t is
 * NaN, else zeros. work holds the t of [a0, hi) if `whole`, else pass 1 computes them again
 * block by block. */
static void VFN(sm_no_max_)(const sm_call *c, const sm_row *r, void *y, size_t a0, size_t hi,
                            float *work, int whole) {
  const size_t B = whole ? hi - a0 : SOFTMAX_BLOCK;
  int nan = 0;
  for (size_t b = a0; b < hi && !nan; b += B) {
    const size_t e = b + B < hi ? b + B : hi;
    if (!whole) c->pass1(r, b, e, work, vf_set1(-INFINITY));
    nan = VFN(sm_has_nan_)(work, e - b);
  }
  if (nan)
    VFN(sm_nan_row_)(c, r, y, a0, hi);
  else
    VFN(sm_zero_)(y, a0, hi, c->ye);
}

/* A row's sum from pass 2's accumulators, and the sink's e if there is one (sink > -inf). */
POSENC_INLINE double VFN(sm_sum_)(const sm_call *c, vd s_lo, vd s_hi, float sink, float max) {
  double sum = vd_hsum(vd_add(s_lo, s_hi));
  if (sink > -INFINITY)
    sum += (double)vf_hmax(VFN(sm_exp_)(vf_set1(sink - max), vf_set1(c->floor)));
  return sum;
}

/* Columns [a0, hi) of a row (the rest is 0): in one block when the work fits `work` (the f32
 * output row at a0, or a block of SOFTMAX_BLOCK floats), else block by block with t and e
 * computed again in each pass by the same operations, the sum accumulated in the same
 * lanes, so the result equals that of a block holding the whole row. */
static void VFN(sm_row_)(const sm_call *c, const sm_row *r, void *y, size_t a0, size_t hi,
                         float sink, float *work, int whole, sm_prefetch pf) {
  const size_t B = whole ? hi - a0 : SOFTMAX_BLOCK;
  vf mx = vf_set1(-INFINITY);
  for (size_t b = a0; b < hi; b += B) mx = c->pass1(r, b, b + B < hi ? b + B : hi, work, mx);
  float max = vf_hmax(mx);
  if (max == -INFINITY) {
    VFN(sm_no_max_)(c, r, y, a0, hi, work, whole);
    return;
  }
  if (sink > max) max = sink;
  const vf vmax = vf_set1(max), vfloor = vf_set1(c->floor);
  vd s_lo = vd_set1(0.0), s_hi = vd_set1(0.0);
  for (size_t b = a0; b < hi; b += B) {
    const size_t e = b + B < hi ? b + B : hi;
    if (!whole) c->pass1(r, b, e, work, mx);
    VFN(sm_exp_sum_)(work, e - b, vmax, vfloor, &s_lo, &s_hi, &pf);
  }
  if (pf.n) sm_prefetch_rest_(&pf);
  const double sum = VFN(sm_sum_)(c, s_lo, s_hi, sink, max);
  if (isnan(sum)) {
    VFN(sm_nan_row_)(c, r, y, a0, hi);
    return;
  }
  const vf inv = vf_set1((float)(1.0 / sum));
  for (size_t b = a0; b < hi; b += B) {
    const size_t e = b + B < hi ? b + B : hi;
    if (!whole) {
      vd unused_lo = vd_set1(0.0), unused_hi = vd_set1(0.0);
      c->pass1(r, b, e, work, mx);
      sm_prefetch none = {.n = 0};
      VFN(sm_exp_sum_)(work, e - b, vmax, vfloor, &unused_lo, &unused_hi, &none);
    }
    c->pass3(work, e - b, inv, y, b);
  }
}

/* One row's work with an f32 output (the work block is the row itself), in three steps
 * that the driver interleaves over two rows: a step ends in a horizontal reduction (the
 * max, the sum) that the next step waits for, and the other row's step fills that wait.
 *   1. pass 1, and the horizontal max of its vector max into the job's float max;
 *   2. a row with no finite max written (NaN or zeros), else pass 2 and the sum;
 *   3. pass 3 (or NaN if the sum is NaN). */
#define SM_PAIR_KEYS 2048

/* Query rows whose masks' extents softmax_run keeps on the stack (more: a heap table). */
#define SM_MEMO_ROWS 16

typedef struct {
  sm_row r;
  float *y;
  float *work;   /* the work block of columns [a0, hi): y + a0, or a block apart (streaming) */
  size_t z0, z1; /* hidden columns [z0, z1) of y still to be written 0 (sm_setup_'s defer) */
  size_t a0, hi;
  float sink;
  sm_prefetch pf;
  float max; /* the max of the row's t (step 1), without the sink */
  double sum;
  int done; /* a row with no finite max: written in step 2 */
} sm_job;

static void VFN(sm_job1_)(const sm_call *c, sm_job *j) {
  j->max = vf_hmax(c->pass1(&j->r, j->a0, j->hi, j->work, vf_set1(-INFINITY)));
}

static void VFN(sm_job2_)(const sm_call *c, sm_job *j) {
  float *work = j->work;
  float max = j->max;
  if (max == -INFINITY) {
    VFN(sm_no_max_)(c, &j->r, j->y, j->a0, j->hi, work, 1);
    j->done = 1;
    return;
  }
  if (j->sink > max) max = j->sink;
  vd s_lo = vd_set1(0.0), s_hi = vd_set1(0.0);
  VFN(sm_exp_sum_)(work, j->hi - j->a0, vf_set1(max), vf_set1(c->floor), &s_lo, &s_hi, &j->pf);
  if (j->pf.n) sm_prefetch_rest_(&j->pf);
  j->sum = VFN(sm_sum_)(c, s_lo, s_hi, j->sink, max);
}

static void VFN(sm_job3_)(const sm_call *c, sm_job *j) {
  if (j->done) return;
  if (isnan(j->sum)) {
    VFN(sm_nan_row_)(c, &j->r, j->y, j->a0, j->hi);
    return;
  }
  c->pass3(j->work, j->hi - j->a0, vf_set1((float)(1.0 / j->sum)), j->y, j->a0);
}

/* Rows of the three-row pipeline (sm_pipeline_): extents of at most this many columns
 * (measured on avx512: 32 decode rows of 4096 keys 1.19x faster than one by one; the pairs
 * of the other kinds were ~8% slower than one by one at that length, below). */
#define SM_PIPE_KEYS 4096
/* A streaming call's rows (sm_streams_): three work blocks of this many floats in the
 * stack block of softmax_run. */
#define SM_STREAM_KEYS (SOFTMAX_BLOCK / 4)
_Static_assert(3 * SM_STREAM_KEYS <= SOFTMAX_BLOCK, "three streaming rows fit the block");

/* The first column of a row that pass 1 reads (the ones before, from a0, are -inf). */
static inline size_t sm_first_read_(const sm_job *j) { return j->r.lo > j->a0 ? j->r.lo : j->a0; }

/* Whether the rows of a pipeline step have a whole sum span in common (sm_fused_'s loop has
 * something to do: shorter rows are done step by step). */
static inline int VFN(sm_fused_span_)(const sm_job *a, const sm_job *b, const sm_job *cj) {
  const size_t span = SOFTMAX_SUM_SPAN * VF_W;
  return a->hi - a->a0 >= span && b->hi - b->a0 >= span && cj->hi >= sm_first_read_(cj) + span;
}

typedef void (*sm_fused_fn)(const sm_call *c, sm_job *a, sm_job *b, sm_job *cj);

/* The fused step below keeps ~20 vectors live (its constants, two max and two sum
 * accumulators, the values in flight): compiled for layers with 32 vector registers. On
 * avx2 (16) it ran at the speed of the three steps one after the other with rows in cache
 * and 1.13-1.18x slower at DRAM sizes (32 x 512 x 512 in place, interleaved bench runs);
 * measured faster on avx512 (sm_pipeline_); NEON, SVE and RVV by their register count, not
 * measured. */
#define SM_FUSE (VF_REGS >= 32)

#if SM_FUSE
/* One step of the pipeline over three rows of a plain f32 call (SM_PLAIN kind, f32 scores
 * and output; mask none or of type me): step 3 of row a, step 2 of row b and step 1 of row
 * c in one loop, two vectors of each per iteration, so that the exp of b (multiplies and
 * FMAs) runs beside the loads, stores and compares of a and c (each alone is bound by other
 * units than the exp's: one store and a max per vector for step 1, a store per vector for
 * step 3). b's max and a's sum are final (sm_job2_, sm_job3_ preconditions: b's max is not
 * -inf, a's sum is not NaN). The loop covers the first L columns of each (L: the whole
 * SOFTMAX_SUM_SPAN vector spans that all three have: b's sum lanes and flushes are those of
 * sm_exp_sum_), the rest of each row is done by its own pass; every value is the one the
 * three steps one after the other give. pf (a constant: the call prefetches, sm_prefetches_):
 * b's prefetch of the row after spread over the loop, two lines per stream per iteration
 * (sm_prefetch_step_); the instances without it have no prefetch in the loop (no test). */
POSENC_INLINE void VFN(sm_fused_)(const sm_call *c, sm_job *a, sm_job *b, sm_job *cj, int mk,
                                  posenc_elem me, int pf) {
  const size_t span = SOFTMAX_SUM_SPAN * VF_W;
  /* c's columns before lo are hidden (-inf), not read */
  const size_t c_lo = sm_first_read_(cj);
  for (size_t j = cj->a0; j < c_lo; ++j) cj->work[j - cj->a0] = -INFINITY;
  size_t L = a->hi - a->a0;
  if (b->hi - b->a0 < L) L = b->hi - b->a0;
  if (cj->hi - c_lo < L) L = cj->hi - c_lo;
  L -= L % span;
  /* c's step 1 (sm_pass1_'s for SM_PLAIN) */
  const sm_row crow = cj->r, *cr = &crow;
  const vf scale = vf_set1(cr->scale), one = vf_set1(1.0f), zero = vf_set1(0.0f);
  float *const cw = cj->work + (c_lo - cj->a0);
  vf mx0 = vf_set1(-INFINITY), mx1 = vf_set1(-INFINITY);
  /* b's step 2 */
  float b_max = b->max;
  if (b->sink > b_max) b_max = b->sink;
  const vf bmax = vf_set1(b_max), lo = vf_set1(c->floor);
  float *const bw = b->work;
  vd s_lo = vd_set1(0.0), s_hi = vd_set1(0.0);
  /* a's step 3 */
  const vf inv = vf_set1((float)(1.0 / a->sum));
  const float *const aw = a->work;
  float *const ay = a->y + a->a0;
  /* a streaming call's y with non-temporal stores (where its row is on a vector boundary:
   * a0 is a multiple of VF_W) */
  const int nt = c->stream && (uintptr_t)ay % (VF_W * sizeof(float)) == 0;
  /* c's hidden columns after its last visible one (sm_setup_'s defer), two vectors of zeros
   * per iteration beside the rest (a decode row against a KV cache: ~13% of its time as a
   * memset of its own) */
  float *const cy = cj->y;
  size_t z = cj->z0;
  const size_t z1 = cj->z1;
  for (size_t j = 0; j < L; j += span) {
    vf a0 = zero, a1 = zero;
    for (size_t k = j; k < j + span; k += 2 * VF_W) {
      const vf t0 = VFN(sm_t_)(cr, scale, one, one, zero, c_lo + k, VF_W, POSENC_ELEM_F32, mk, me,
                               SM_PLAIN, zero);
      const vf t1 = VFN(sm_t_)(cr, scale, one, one, zero, c_lo + k + VF_W, VF_W, POSENC_ELEM_F32,
                               mk, me, SM_PLAIN, zero);
      const vf u0 = vf_sub(vf_load(bw + k), bmax), u1 = vf_sub(vf_load(bw + k + VF_W), bmax);
      vf e0, e1;
      VFN(sm_exp2_)(u0, u1, lo, &e0, &e1);
      const vf y0 = vf_mul(vf_load(aw + k), inv), y1 = vf_mul(vf_load(aw + k + VF_W), inv);
      vf_store_reload(cw + k, t0);
      vf_store_reload(cw + k + VF_W, t1);
      vf_store_reload(bw + k, e0);
      vf_store_reload(bw + k + VF_W, e1);
      if (nt) {
        vf_stream(ay + k, y0);
        vf_stream(ay + k + VF_W, y1);
      } else {
        vf_store_reload(ay + k, y0);
        vf_store_reload(ay + k + VF_W, y1);
      }
      mx0 = vf_max(mx0, t0);
      mx1 = vf_max(mx1, t1);
      a0 = vf_add(a0, e0);
      a1 = vf_add(a1, e1);
      if (z + 2 * VF_W <= z1) {
        vf_store(cy + z, zero);
        vf_store(cy + z + VF_W, zero);
        z += 2 * VF_W;
      }
      if (pf) sm_prefetch_step_(&b->pf);
    }
    VFN(sm_flush_)(a0, a1, &s_lo, &s_hi);
  }
  /* the rest of each row */
  VFN(sm_zero_)(cy, z, z1, POSENC_ELEM_F32);
  if (a->hi - a->a0 > L) c->pass3(aw + L, a->hi - a->a0 - L, inv, a->y, a->a0 + L);
  /* (a pass over no columns would still flush zeros into the sum and delay it: rows of 256
   * and 512 keys in L2 took 0.98-0.99x the time without it, 0.96x with a two-sequence mask) */
  if (b->hi - b->a0 > L)
    VFN(sm_exp_sum_loop_)(bw + L, b->hi - b->a0 - L, bmax, lo, &s_lo, &s_hi, &b->pf, 2);
  if (b->pf.n) sm_prefetch_rest_(&b->pf);
  b->sum = VFN(sm_sum_)(c, s_lo, s_hi, b->sink, b_max);
  mx0 = vf_max(mx0, mx1);
  if (cj->hi > c_lo + L) mx0 = c->pass1(cr, c_lo + L, cj->hi, cw + L, mx0);
  cj->max = vf_hmax(mx0);
}

#define SM_FUSED(name, mk, me, pf)                                            \
  static void VFN(name)(const sm_call *c, sm_job *a, sm_job *b, sm_job *cj) { \
    VFN(sm_fused_)(c, a, b, cj, mk, me, pf);                                  \
  }
SM_FUSED(sm_fused_none_, 0, POSENC_ELEM_F32, 0)
SM_FUSED(sm_fused_m32_, 1, POSENC_ELEM_F32, 0)
SM_FUSED(sm_fused_m16_, 1, POSENC_ELEM_F16, 0)
SM_FUSED(sm_fused_none_pf_, 0, POSENC_ELEM_F32, 1)
SM_FUSED(sm_fused_m32_pf_, 1, POSENC_ELEM_F32, 1)
SM_FUSED(sm_fused_m16_pf_, 1, POSENC_ELEM_F16, 1)
#undef SM_FUSED
#endif

/* Whether the rows of a call prefetch the rows after them (sm_prefetch): not where the
 * call's scores are under 8 MiB, which are found in the level-2 or level-3 cache, written by
 * the scores' product just before (in the bench's repeated calls, by the last call): a
 * decode step's (32 heads x 4096 keys: 512 KiB), and a prefill's split over threads by heads
 * (a few heads of 512 x 512: 1 MiB each). Measured on Zen 4 (1 MiB of L2), avx512, against
 * prefetching: decode of 32 heads against 4096 keys with a KV-cache mask 0.95x the time,
 * causal 0.99x, against 16 keys 0.91-0.93x. On Zen 5 (1 MiB L2, 32 MiB L3 shared with the
 * host's other guests), `bench/ab/posenc_ab.c` new/old against the 1 MiB threshold before:
 * case 17 (SM_HEADS x 512 x 512 in place, the two-sequence mask) avx512 0.79-0.85x the time
 * at 1-7 heads, avx2 0.95-0.97x, sse4 0.98-1.0x; out of place (case 16) 0.82-0.84x at 1-7
 * heads; 32 heads x 32 query rows x 512 keys causal (2 MiB, case 10) 0.95x; decode and
 * calls of 8 MiB or more unchanged. Above 8 MiB the L3 share of this host varies: without
 * any prefetch a loop over 12 heads ran 0.92-1.01x the time in one hour and 1.2-1.5x in
 * another, and 32 x 512 x 512 (32 MiB) 1.4-1.9x. The same rule serves every path and ISA
 * (the 16-bit outputs' rows, the pairs: not measured apart). */
#define SM_PREFETCH_MIN_BYTES ((size_t)8 << 20)
static inline int sm_prefetches_(const softmax_args *a) {
  return a->n_heads * a->n_q * a->n_k * posenc_elem_size(a->xe) >= SM_PREFETCH_MIN_BYTES;
}

/* The columns [lo, hi) of query row i that its positions leave visible (every column with
 * key positions: those hide keys lane by lane): the range a row's mask extent is looked up
 * under (its memo key), by its own setup and by the prefetch of an earlier row alike. */
static inline void sm_position_range_(const softmax_args *a, size_t i, size_t *lo, size_t *hi) {
  *lo = 0;
  *hi = a->n_k;
  if (!a->kpos) softmax_visible(a, softmax_qpos(a, i), lo, hi);
}

/* Row idx (queries first, then heads) of the call: its constants into *j (from the call's
 * template row t; its work block y + a0), its hidden columns written (with non-temporal
 * stores in a streaming call; with defer, an f32 y not streamed, those after its last
 * visible one are left to the caller: [z0, z1)); 0 if nothing of it is visible. The prefetch reads
 * row idx + ahead (not its y in a streaming call; none in a call under SM_PREFETCH_MIN_BYTES).
 * memo (NULL: rows are not cut): one entry per query row, the extent of its mask row
 * (softmax_run). */
static int VFN(sm_setup_)(const softmax_args *a, const sm_row *t, size_t idx, size_t ahead,
                          sm_job *j, void **y_out, softmax_extent_memo *memo, int stream,
                          int defer) {
  const size_t xs = posenc_elem_size(a->xe), ys = posenc_elem_size(a->ye);
  const size_t ms = posenc_elem_size(a->me);
  const size_t h = idx / a->n_q, i = idx % a->n_q, span = SOFTMAX_SUM_SPAN * VF_W;
  j->r = *t;
  j->r.x = (const char *)a->x + (h * a->x_head_stride + i * a->x_row_stride) * xs;
  j->r.mask = a->mask
                  ? (const char *)a->mask + (h * a->mask_head_stride + i * a->mask_row_stride) * ms
                  : NULL;
  j->r.qpos = softmax_qpos(a, i);
  j->r.slope = a->slopes ? a->slopes[h] : 0.0f;
  j->sink = a->sinks ? a->sinks[h] : -INFINITY;
  void *y = (char *)a->y + (h * a->y_head_stride + i * a->y_row_stride) * ys;
  *y_out = y;
  j->y = (float *)y;
  size_t lo, hi;
  sm_position_range_(a, i, &lo, &hi);
  if (memo && lo < hi) {
    /* to whole vectors (within [lo, hi)): the mask's hidden columns inside them are read as
     * before, and no vector of a short row becomes partial */
    const size_t l0 = lo, h0 = hi;
    softmax_mask_extent(j->r.mask, a->me, &lo, &hi, &memo[i]);
    lo -= lo % VF_W;
    if (lo < l0) lo = l0;
    hi = hi + (VF_W - 1) - (hi + (VF_W - 1)) % VF_W;
    if (hi > h0) hi = h0;
  }
  if (lo >= hi) lo = hi = a->n_k; /* nothing visible: all zeros */
  j->a0 = lo - lo % span;
  j->hi = hi;
  j->r.lo = lo;
  j->done = 0;
  j->work = a->ye == POSENC_ELEM_F32 ? j->y + j->a0 : NULL; /* the 16-bit rows: sm_row_'s */
  j->z0 = j->z1 = 0;
  if (stream) {
    VFN(sm_zero_nt_)(j->y, 0, j->a0);
    VFN(sm_zero_nt_)(j->y, hi, a->n_k);
  } else {
    VFN(sm_zero_)(y, 0, j->a0, a->ye);
    if (defer) {
      j->z0 = hi;
      j->z1 = a->n_k;
    } else {
      VFN(sm_zero_)(y, hi, a->n_k, a->ye);
    }
  }
  j->pf.n = 0;
  const size_t next = idx + ahead;
  if (next < a->n_heads * a->n_q && sm_prefetches_(a)) {
    const size_t nh = next / a->n_q, ni = next % a->n_q;
    const char *nmask =
        a->mask ? (const char *)a->mask + (nh * a->mask_head_stride + ni * a->mask_row_stride) * ms
                : NULL;
    /* The next row of the same query (another head) with the same mask row (or none) has
     * this row's columns [a0, hi) to read and its mask row in cache already: only those
     * columns are fetched (measured on a decode of 32 heads against 4096 cached keys, half
     * of them past the mask's last visible one, 0.90x the time of fetching every column of
     * both, when such calls still prefetched). */
    const int same = ni == i && nmask == j->r.mask;
    const size_t p0 = same ? j->a0 : 0, p1 = same ? j->hi : a->n_k;
    /* Another query row's mask, with a memo (a mask the heads share): only its visible
     * extent is prefetched, found now for that row under the key its own setup will look it
     * up under (sm_position_range_), so scanned once. Its scores are fetched whole: the
     * hidden columns are written (0), and a write to a line not in cache waits for it (32 x
     * 512 x 512 in place with a two-sequence mask: fetching only the extent of the scores
     * too took 1.66x the time, the mask's extent alone 0.91x). */
    size_t m0 = 0, m1 = a->n_k;
    if (a->mask && !same && memo) {
      sm_position_range_(a, ni, &m0, &m1);
      if (m0 < m1) softmax_mask_extent(nmask, a->me, &m0, &m1, &memo[ni]);
    }
    if (p0 < p1) {
      sm_prefetch_add_(
          &j->pf, (const char *)a->x + (nh * a->x_head_stride + ni * a->x_row_stride + p0) * xs,
          (p1 - p0) * xs);
      if (a->mask && !same && m0 < m1) sm_prefetch_add_(&j->pf, nmask + m0 * ms, (m1 - m0) * ms);
      if (a->y != a->x && !stream)
        sm_prefetch_add_(
            &j->pf, (const char *)a->y + (nh * a->y_head_stride + ni * a->y_row_stride + p0) * ys,
            (p1 - p0) * ys);
    }
  }
  return j->a0 < hi;
}

/* The rows of a plain f32 call (SM_PLAIN kind, f32 scores and output) through a pipeline of
 * three rows: each new row's step 1 runs with step 2 of the one before and step 3 of the one
 * before that, in one loop (fused, sm_fused_<mask>_; NULL: the layer has 16 registers) where
 * the three have a sum span in common (sm_fused_span_) and the older two a finite max and a
 * sum that is not NaN; otherwise the pending steps are done one after the other (avx2 rows
 * in this order rather than the pairs': 32 x 512 x 512 in place 0.96x the time). A row of more than
 * SM_PIPE_KEYS columns goes alone, after the pending ones. Every row gets the values its three
 * steps give in sequence: the results do not depend on which rows share a call. */
static void VFN(sm_pipeline_)(const sm_call *c, const sm_row *t, softmax_extent_memo *memo,
                              sm_fused_fn fused, float *block) {
  const softmax_args *a = c->a;
  const size_t rows = a->n_heads * a->n_q;
  /* a row's step 2 prefetches the row three after it (two after the one whose step 1 runs
   * beside it; measured on avx512, 32 x 512 x 512 in place: 0.92x the time of the pairs'
   * two ahead, two ahead here 1.06x) */
  size_t ahead = a->n_k <= SM_PIPE_KEYS || memo ? 3 : 1;
  /* and at least POSENC_PREFETCH_AHEAD_BYTES of rows ahead (rows of 512 f32 scores: 8; Zen 5,
   * avx512, 32 x 512 x 512 in place, bench interleaved medians of 5: no mask 0.78-0.79x the
   * time of three ahead; posenc_ab case 17, the two-sequence mask: 0.90-0.92x) */
  const size_t far = posenc_prefetch_rows(a->n_k * sizeof(float));
  if (far > ahead) ahead = far;
  sm_job ring[3];
  sm_job *p2 = NULL, *p3 = NULL; /* the rows waiting for their step 2, and step 3 */
  int slot = 0;
  void *y;
  for (size_t idx = 0; idx < rows; ++idx) {
    sm_job *j = &ring[slot];
    if (!VFN(sm_setup_)(a, t, idx, ahead, j, &y, memo, c->stream, fused != NULL)) continue;
    if (c->stream) j->work = block + (size_t)slot * SM_STREAM_KEYS;
    slot = slot == 2 ? 0 : slot + 1;
    if (j->hi - j->a0 > SM_PIPE_KEYS) {
      VFN(sm_zero_)(j->y, j->z0, j->z1, POSENC_ELEM_F32);
      if (p3) VFN(sm_job3_)(c, p3);
      if (p2) {
        VFN(sm_job2_)(c, p2);
        VFN(sm_job3_)(c, p2);
      }
      p2 = p3 = NULL;
      VFN(sm_job1_)(c, j);
      VFN(sm_job2_)(c, j);
      VFN(sm_job3_)(c, j);
      continue;
    }
    if (fused && p3 && p2 && p2->max != -INFINITY && !p3->done && !isnan(p3->sum) &&
        VFN(sm_fused_span_)(p3, p2, j)) {
      fused(c, p3, p2, j);
    } else {
      VFN(sm_zero_)(j->y, j->z0, j->z1, POSENC_ELEM_F32);
      if (p3) VFN(sm_job3_)(c, p3);
      if (p2) VFN(sm_job2_)(c, p2);
      VFN(sm_job1_)(c, j);
    }
    p3 = p2;
    p2 = j;
  }
  if (p3) VFN(sm_job3_)(c, p3);
  if (p2) {
    VFN(sm_job2_)(c, p2);
    VFN(sm_job3_)(c, p2);
  }
  if (c->stream) vf_stream_fence();
}

/* Whether a call writes y with non-temporal stores (the plain f32 calls of sm_pipeline_):
 * y apart from x, rows of at most SM_STREAM_KEYS keys (three rows' work fits a block on the
 * stack) and POSENC_STREAM_MIN_BYTES of y or more, which would evict most of a last-level
 * cache anyway: x is read and y written without reading y's lines first. */
static inline int sm_streams_(const softmax_args *a) {
  return a->y != a->x && a->n_k <= SM_STREAM_KEYS &&
         a->n_heads * a->n_q * a->n_k >= POSENC_STREAM_MIN_BYTES / sizeof(float);
}

POSENC_INLINE void softmax_run(const softmax_args *a) {
#define SM_PASS1_ROW(x, k) \
  { VFN(sm_p1_##x##_##k##_), VFN(sm_p1_##x##_##k##_m32_), VFN(sm_p1_##x##_##k##_m16_) }
#define SM_PASS1_KINDS(x)                                                   \
  {                                                                         \
    SM_PASS1_ROW(x, plain), SM_PASS1_ROW(x, general), SM_PASS1_ROW(x, sym), \
        SM_PASS1_ROW(x, signed)                                             \
  }
  static const sm_pass1_fn pass1[3][4][3] = {SM_PASS1_KINDS(f32), SM_PASS1_KINDS(bf16),
                                             SM_PASS1_KINDS(f16)};
#undef SM_PASS1_KINDS
#undef SM_PASS1_ROW
  static const sm_pass3_fn pass3[3] = {VFN(sm_p3_f32_), VFN(sm_p3_bf16_), VFN(sm_p3_f16_)};
#if SM_FUSE
  static const sm_fused_fn fused[2][3] = {
      {VFN(sm_fused_none_), VFN(sm_fused_m32_), VFN(sm_fused_m16_)},
      {VFN(sm_fused_none_pf_), VFN(sm_fused_m32_pf_), VFN(sm_fused_m16_pf_)}};
#else
  static const sm_fused_fn fused[2][3] = {{NULL, NULL, NULL}, {NULL, NULL, NULL}};
#endif
  const int mk = a->mask ? (a->me == POSENC_ELEM_F16 ? 2 : 1) : 0;
  const int mask_slope = (a->flags & POSENC_SOFTMAX_MASK_SLOPE) != 0;
  const int softcap = (a->flags & POSENC_SOFTMAX_SOFTCAP) != 0;
  int kind = SM_PLAIN;
  if (softcap || mask_slope ||
      (a->kpos && (a->flags & (POSENC_SOFTMAX_CAUSAL | POSENC_SOFTMAX_WINDOW |
                               POSENC_SOFTMAX_KPOS_NEG_HIDDEN))))
    kind = SM_GENERAL;
  else if (a->slopes)
    kind = a->kpos || !softmax_distances_below_2p24(a)   ? SM_GENERAL
           : (a->flags & POSENC_SOFTMAX_ALIBI_SYMMETRIC) ? SM_ALIBI_SYM
                                                         : SM_ALIBI_SIGNED;
  sm_call c = {.a = a,
               .pass1 = pass1[a->xe][kind][mk],
               .pass3 = pass3[a->ye],
               .ye = a->ye,
               .floor = softmax_exp_floor(a->n_k)};
  const sm_row t = {.kpos = a->kpos,
                    .softcap = softcap,
                    .mask_slope = mask_slope,
                    .alibi = !a->slopes || mask_slope                      ? 0
                             : (a->flags & POSENC_SOFTMAX_ALIBI_SYMMETRIC) ? 2
                                                                           : 1,
                    .kpos_causal = a->kpos && (a->flags & POSENC_SOFTMAX_CAUSAL),
                    .kpos_window = a->kpos && (a->flags & POSENC_SOFTMAX_WINDOW),
                    .kpos_neg = a->kpos && (a->flags & POSENC_SOFTMAX_KPOS_NEG_HIDDEN),
                    .window = a->window,
                    .scale = a->scale,
                    .cap = softcap ? a->softcap : 1.0f,
                    .rcap = softcap ? 1.0f / a->softcap : 1.0f};
  const size_t rows = a->n_heads * a->n_q;
  /* A mask the heads share: each query row's visible extent is found once per call (on the
   * stack up to SM_MEMO_ROWS rows, else in a heap table; none if that allocation fails: the
   * rows are then not cut, the same bits) and serves every head. A mask per head is not
   * scanned: its scan would serve one row (cut so, a 32 x 512 x 512 prefill with a
   * two-sequence mask took 1.5x the time). */
  softmax_extent_memo memo_rows[SM_MEMO_ROWS];
  softmax_extent_memo *memo = NULL, *memo_heap = NULL;
  if (a->mask && a->mask_head_stride == 0 && a->n_k >= SOFTMAX_SCAN_RUN) {
    /* (a shorter row has little to cut) */
    memo = a->n_q <= SM_MEMO_ROWS ? memo_rows : (memo_heap = malloc(a->n_q * sizeof *memo));
    for (size_t i = 0; memo && i < a->n_q; ++i) memo[i].row = NULL;
  }
  void *y;
  _Alignas(64) float block[SOFTMAX_BLOCK];
  if (a->ye == POSENC_ELEM_F32 && kind == SM_PLAIN && a->xe == POSENC_ELEM_F32) {
    c.stream = sm_streams_(a);
    if (c.stream) c.pass3 = VFN(sm_p3_f32_nt_);
    VFN(sm_pipeline_)(&c, &t, memo, fused[sm_prefetches_(a)][mk], block);
    free(memo_heap);
    return;
  }
  if (a->ye == POSENC_ELEM_F32) {
    /* Rows of up to SM_PAIR_KEYS keys two at a time, each step of one followed by the same
     * step of the other (measured on avx512: 32 x 512 x 512 ~10% faster; 4096-key rows
     * ~8% slower, two of them and the prefetched ones crowding L1, so they go one by one). */
    const int batch = a->n_k <= SM_PAIR_KEYS ? 2 : 1;
    sm_job jobs[2];
    size_t idx = 0;
    while (idx < rows) {
      int n = 0;
      for (; idx < rows && n < batch; ++idx)
        n += VFN(sm_setup_)(a, &t, idx, (size_t)batch, &jobs[n], &y, memo, 0, 0);
      for (int k = 0; k < n; ++k) VFN(sm_job1_)(&c, &jobs[k]);
      for (int k = 0; k < n; ++k) VFN(sm_job2_)(&c, &jobs[k]);
      for (int k = 0; k < n; ++k) VFN(sm_job3_)(&c, &jobs[k]);
    }
    free(memo_heap);
    return;
  }
  for (size_t idx = 0; idx < rows; ++idx) {
    sm_job j;
    if (!VFN(sm_setup_)(a, &t, idx, 1, &j, &y, memo, 0, 0)) continue;
    VFN(sm_row_)(&c, &j.r, y, j.a0, j.hi, j.sink, block, j.hi - j.a0 <= SOFTMAX_BLOCK, j.pf);
  }
  free(memo_heap);
}
