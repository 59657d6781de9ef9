/* posenc_ab: two libposenc builds side by side in one process, for "is the new build as
 * fast as the old one" (the closing notes' x86 speed checks). Each build is loaded into its
 * own link-map namespace (dlmopen), both set to the same ISA; for every case and token
 * count the two are called alternately, round after round (the order flipped every
 * round), each round timed in thread CPU time; it prints the median and quartiles of the
 * per-round ratios new/old and the old build's time per call. Cases: in-place RoPE f32 /
 * bf16 / f16 (NEOX, 32 Q + 8 K heads x 128), the factor-apply form, rope_out f32 -> bf16,
 * GPT-J with scattered positions, sinusoid fill (1024 wide), ALiBi add (32 heads x 512 keys),
 * learned add (1024 wide), softmax decode (32 heads, 1 query, T keys, causal), causal
 * softmax (min(T/16, 64) queries) and softmax decode against a KV-cache mask (keys
 * [0, T/2) visible but every fifth, the rest hidden), QK-norm fused with RoPE in place
 * (posenc_rope_qknorm, q and k with their own weights), rope_out f32 -> f16 (8 heads) and
 * rope_out f32 -> bf16 / f16 of 40 heads (cases 14, 15: 4096 tokens write 40 MiB, enough to
 * stream) and softmax out of place (case 16: 32 heads x 512 x 512 f32, x and y apart, 32 MiB
 * each, T = 512 alone) and in place against a two-sequence KV-cache mask (case 17: 32 heads x
 * 512 x 512 f32, a [512, 512] f32 mask shared by the heads: queries of each half see the
 * keys of their half, every fifth cell of the mask hidden (20%, like the bench's
 * mask:kvcache rows, which hide theirs at random); T = 512 alone), RoPE into ggml q8_0
 * blocks (case 18: 8 heads of 128, posenc_rope_out_q8_0) and into FP8 E4M3 bytes (case 19:
 * the same, posenc_rope_out_fp8 with scale 0.05, the bench's) and ALiBi add on 32 heads x
 * 512 x 512 f32 scores in place (case 20: 32 MiB, T = 512 alone) and the re-rotation of a
 * K cache by 1024 positions (case 21: posenc_rope_rerotate_f32 on 5T tokens of 8 heads x 128,
 * the bytes of the 40-head cases at T; TS up to 8192);
 * T in 1, 16, 512, 4096 (TS=t1,t2,...: other counts, up to 8192 for the cases with [T, heads, 128]
 * buffers: 0-2, 4 and 12-15); SM_HEADS=<n> (1-32) sets the heads of the softmax cases 16 and
 * 17 (1 MiB of scores per head: the sizes between a decode step's and a DRAM-sized call's).
 * Not built by CMake (it needs two builds): from the repository root, with a build in build/:
 *   gcc -O2 -Iinclude -Ibuild/include bench/ab/posenc_ab.c -o posenc_ab -ldl -lm
 *   taskset -c 1 ./posenc_ab OLD/libposenc.so.0 NEW/libposenc.so.0 <isa number> 15
 * (isa numbers are posenc_isa's: 3 avx512, 2 avx2); CASE=<n> runs case n alone; ISA_NEW=<n>
 * sets the new build to another ISA (one build against itself: ISA_NEW=2 with isa 3 gives
 * avx2's time over avx512's). Both builds must share the header's API for the cases (0.1.0
 * and later do). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "posenc.h"

/* The largest token count of the RoPE cases' buffers (TS). */
#define TMAX ((size_t)8192)

typedef struct {
  posenc_status (*set_isa)(posenc_isa);
  posenc_status (*plan_create)(posenc_rope_plan **, size_t, double, double);
  posenc_status (*rope_f32)(const posenc_rope_plan *, size_t, size_t, const int32_t *, int32_t,
                            const posenc_rope_tensor *, const posenc_rope_tensor *, unsigned);
  posenc_status (*rope_bf16)(const posenc_rope_plan *, size_t, size_t, const int32_t *, int32_t,
                             const posenc_rope_tensor *, const posenc_rope_tensor *, unsigned);
  posenc_status (*rope_f16)(const posenc_rope_plan *, size_t, size_t, const int32_t *, int32_t,
                            const posenc_rope_tensor *, const posenc_rope_tensor *, unsigned);
  size_t (*fbytes)(size_t, size_t, unsigned);
  posenc_status (*fcompute)(const posenc_rope_plan *, size_t, const int32_t *, int32_t, unsigned,
                            void *, size_t, posenc_rope_factors *);
  posenc_status (*apply)(const posenc_rope_factors *, size_t, size_t, size_t, size_t, size_t,
                         const posenc_rope_view *, const posenc_rope_view *, unsigned);
  posenc_status (*rope_out)(const posenc_rope_plan *, size_t, size_t, size_t, const int32_t *,
                            int32_t, const posenc_rope_view *, const posenc_rope_view *, unsigned);
  posenc_status (*sp_create)(posenc_sinusoid_plan **, size_t, double);
  posenc_status (*sfill_f32)(const posenc_sinusoid_plan *, size_t, const int32_t *, int32_t,
                             float *, size_t, unsigned);
  posenc_status (*alibi_add)(const float *, size_t, size_t, size_t, size_t, float *, size_t, size_t,
                             float, unsigned);
  posenc_status (*learned)(const float *, size_t, size_t, size_t, size_t, const int32_t *, int32_t,
                           float *, size_t);
  posenc_status (*softmax)(const posenc_softmax_params *, size_t, size_t, size_t,
                           const posenc_scores_view *, const posenc_scores_view *);
  posenc_status (*qknorm)(const posenc_rope_plan *, size_t, size_t, size_t, const int32_t *,
                          int32_t, const posenc_rope_view *, const posenc_rope_view *,
                          const posenc_qk_norm *, const posenc_rope_view *,
                          const posenc_rope_view *, const posenc_qk_norm *, unsigned);
  posenc_status (*rope_q8_0)(const posenc_rope_plan *, size_t, size_t, const int32_t *, int32_t,
                             const posenc_rope_view *, const posenc_q8_0_view *,
                             const posenc_slots *, unsigned);
  posenc_status (*rerotate_f32)(const posenc_rope_plan *, const int32_t *, int32_t,
                                const posenc_rope_plan *, const int32_t *, int32_t, size_t, size_t,
                                const posenc_rope_tensor *, unsigned);
  posenc_status (*rope_fp8)(const posenc_rope_plan *, size_t, size_t, const int32_t *, int32_t,
                            const posenc_rope_view *, const posenc_fp8_view *, float,
                            const posenc_slots *, unsigned);
  posenc_rope_plan *plan;
  posenc_sinusoid_plan *sp;
  void *factors;
  posenc_rope_factors f;
} lib;

static void *sym(void *h, const char *n) {
  void *p = dlsym(h, n);
  if (!p) {
    fprintf(stderr, "no %s\n", n);
    exit(1);
  }
  return p;
}
static void load(lib *l, const char *path, posenc_isa isa) {
  void *h = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    exit(1);
  }
  *(void **)&l->set_isa = sym(h, "posenc_set_isa");
  *(void **)&l->plan_create = sym(h, "posenc_rope_plan_create");
  *(void **)&l->rope_f32 = sym(h, "posenc_rope_f32");
  *(void **)&l->rope_bf16 = sym(h, "posenc_rope_bf16");
  *(void **)&l->rope_f16 = sym(h, "posenc_rope_f16");
  *(void **)&l->fbytes = sym(h, "posenc_rope_factors_bytes");
  *(void **)&l->fcompute = sym(h, "posenc_rope_factors_compute");
  *(void **)&l->apply = sym(h, "posenc_rope_apply");
  *(void **)&l->rope_out = sym(h, "posenc_rope_out");
  *(void **)&l->sp_create = sym(h, "posenc_sinusoid_plan_create");
  *(void **)&l->sfill_f32 = sym(h, "posenc_sinusoid_fill_f32");
  *(void **)&l->alibi_add = sym(h, "posenc_alibi_add_f32");
  *(void **)&l->learned = sym(h, "posenc_learned_add_f32");
  *(void **)&l->softmax = sym(h, "posenc_softmax");
  *(void **)&l->qknorm = sym(h, "posenc_rope_qknorm");
  *(void **)&l->rope_q8_0 = sym(h, "posenc_rope_out_q8_0");
  *(void **)&l->rope_fp8 = sym(h, "posenc_rope_out_fp8");
  *(void **)&l->rerotate_f32 = sym(h, "posenc_rope_rerotate_f32");
  if (l->set_isa(isa) != POSENC_OK) {
    fprintf(stderr, "isa\n");
    exit(2);
  }
  l->plan_create(&l->plan, 128, 500000.0, 1.0);
  l->sp_create(&l->sp, 1024, 10000.0);
  size_t b = l->fbytes(128, 4096, 0);
  l->factors = aligned_alloc(64, (b + 63) / 64 * 64);
  if (l->fcompute(l->plan, 4096, NULL, 0, 0, l->factors, b, &l->f) != POSENC_OK) exit(3);
}
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
enum { QH = 32, KH = 8, D = 128 };
static float *xq, *xk, *table, *scores, *sout, *emb, *kvmask, *kvmask512;
static uint16_t *hq, *hk, *out16, *o40;
static float *x40, *o40f;
static float slopes[32], wq[D], wk[D];
static int32_t pos[4096];

/* The heads of softmax cases 16 and 17 (SM_HEADS, default 32), read once. */
static size_t sm_heads(void) {
  static size_t heads;
  if (!heads) {
    const char *e = getenv("SM_HEADS");
    const long h = e ? strtol(e, NULL, 10) : 32;
    heads = h >= 1 && h <= 32 ? (size_t)h : 32;
  }
  return heads;
}

static posenc_status run(lib *l, int c, size_t T) {
  posenc_rope_tensor q = {xq, QH, QH * D, D}, k = {xk, KH, KH * D, D};
  posenc_rope_tensor q16 = {hq, QH, QH * D, D}, k16 = {hk, KH, KH * D, D};
  posenc_rope_view src = {xk, POSENC_DTYPE_F32, KH, KH * D, D, 0};
  posenc_rope_view dst16 = {out16, POSENC_DTYPE_BF16, KH, KH * D, D, 0};
  posenc_rope_view srcq = {xq, POSENC_DTYPE_F32, QH, QH * D, D, 0};
  switch (c) {
    case 0:
      return l->rope_f32(l->plan, D, T, NULL, 1000, &q, &k, POSENC_ROPE_NEOX);
    case 1:
      return l->rope_bf16(l->plan, D, T, NULL, 1000, &q16, &k16, POSENC_ROPE_NEOX);
    case 2:
      return l->rope_f16(l->plan, D, T, NULL, 1000, &q16, &k16, POSENC_ROPE_NEOX);
    case 3:
      return l->apply(&l->f, 0, T, D, 1, T, &srcq, &srcq, POSENC_ROPE_NEOX);
    case 4:
      return l->rope_out(l->plan, D, 1, T, NULL, 1000, &src, &dst16, POSENC_ROPE_NEOX);
    case 5:
      return l->rope_f32(l->plan, D, T, pos, 0, &q, &k, POSENC_ROPE_GPTJ);
    case 6:
      return l->sfill_f32(l->sp, T, NULL, 0, emb, 0, POSENC_SINUSOID_INTERLEAVED);
    case 7:
      return l->alibi_add(slopes, 32, T / 32 ? T / 32 : 1, 512, 0, scores, 512 * 512, 512, 0.1f, 0);
    case 8:
      return l->learned(table, 4096, 0, 1024, T, pos, 0, emb, 0);
    case 9:
    case 10: {
      /* 32 heads, decode (q = 1 at position T - 1, causal) or T/16 query rows, T keys */
      posenc_softmax_params sp = POSENC_SOFTMAX_PARAMS_INIT;
      sp.flags = POSENC_SOFTMAX_CAUSAL;
      size_t nq = c == 9 ? 1 : (T / 16 ? (T / 16 > 64 ? 64 : T / 16) : 1);
      sp.q_offset = (int32_t)(T - nq);
      posenc_scores_view v = {scores, POSENC_DTYPE_F32, nq * T, T, 0};
      return l->softmax(&sp, 32, nq, T, &v, &v);
    }
    case 11: {
      /* decode against a KV cache of two sequences: keys [0, T/2) visible but every fifth,
       * the others hidden (an f32 mask of 0 / -inf shared by the heads) */
      posenc_softmax_params sp = POSENC_SOFTMAX_PARAMS_INIT;
      sp.q_offset = (int32_t)(T - 1);
      sp.mask = kvmask;
      sp.mask_dtype = POSENC_DTYPE_F32;
      posenc_scores_view v = {scores, POSENC_DTYPE_F32, T, T, 0};
      return l->softmax(&sp, 32, 1, T, &v, &v);
    }
    case 12: {
      const posenc_rope_view kv = {xk, POSENC_DTYPE_F32, KH, KH * D, D, 0};
      const posenc_qk_norm qn = {wq, 1e-6f, 0}, kn = {wk, 1e-6f, 0};
      return l->qknorm(l->plan, D, 1, T, NULL, 1000, &srcq, &srcq, &qn, &kv, &kv, &kn,
                       POSENC_ROPE_NEOX);
    }
    case 13: {
      posenc_rope_view d16 = {out16, POSENC_DTYPE_F16, KH, KH * D, D, 0};
      return l->rope_out(l->plan, D, 1, T, NULL, 1000, &src, &d16, POSENC_ROPE_NEOX);
    }
    case 14:
    case 15: { /* 40 heads [T, 40, 128] f32 out of place into bf16 (14) or f16 (15) */
      posenc_rope_view s40 = {x40, POSENC_DTYPE_F32, QH + KH, (QH + KH) * D, D, 0};
      posenc_rope_view d40 = {
          o40, c == 14 ? POSENC_DTYPE_BF16 : POSENC_DTYPE_F16, QH + KH, (QH + KH) * D, D, 0};
      return l->rope_out(l->plan, D, 1, T, NULL, 1000, &s40, &d40, POSENC_ROPE_NEOX);
    }
    case 16: { /* softmax out of place, 32 heads x 512 x 512 f32, no mask (32 MiB each way) */
      posenc_softmax_params sp = POSENC_SOFTMAX_PARAMS_INIT;
      sp.scale = 0.0883883f;
      posenc_scores_view x = {scores, POSENC_DTYPE_F32, 512 * 512, 512, 0};
      posenc_scores_view y = {sout, POSENC_DTYPE_F32, 512 * 512, 512, 0};
      return l->softmax(&sp, sm_heads(), 512, 512, &x, &y);
    }
    case 17: { /* in place, 32 heads x 512 x 512 f32, the two-sequence mask */
      posenc_softmax_params sp = POSENC_SOFTMAX_PARAMS_INIT;
      sp.scale = 0.0883883f;
      sp.mask = kvmask512;
      sp.mask_dtype = POSENC_DTYPE_F32;
      posenc_scores_view x = {scores, POSENC_DTYPE_F32, 512 * 512, 512, 0};
      return l->softmax(&sp, sm_heads(), 512, 512, &x, &x);
    }
    case 18: { /* [T, 8, 128] f32 into q8_0 blocks [T, 8, 4 x 34 bytes] */
      const posenc_q8_0_view q8 = {o40, KH, KH * (D / 32) * 34, (D / 32) * 34};
      return l->rope_q8_0(l->plan, D, T, NULL, 1000, &src, &q8, NULL, POSENC_ROPE_NEOX);
    }
    case 19: { /* [T, 8, 128] f32 into FP8 bytes [T, 8, 128] */
      const posenc_fp8_view f8 = {o40, KH, KH * D, D};
      return l->rope_fp8(l->plan, D, T, NULL, 1000, &src, &f8, 0.05f, NULL, POSENC_ROPE_NEOX);
    }
    case 20: /* ALiBi add, 32 heads x 512 x 512 f32 in place (32 MiB), T = 512 alone */
      return l->alibi_add(slopes, 32, 512, 512, 0, scores, 512 * 512, 512, 1.0f, 0);
    case 21: { /* re-rotation by 1024 positions of 5T tokens of 8 K heads (the bytes of 40 heads) */
      const posenc_rope_tensor k8 = {x40, KH, KH * D, D};
      return l->rerotate_f32(l->plan, NULL, 2048, l->plan, NULL, 1024, D, 5 * T, &k8, 0);
    }
    case 22: { /* 40 heads [T, 40, 128] f32 out of place into f32 */
      posenc_rope_view s40 = {x40, POSENC_DTYPE_F32, QH + KH, (QH + KH) * D, D, 0};
      posenc_rope_view d40 = {o40f, POSENC_DTYPE_F32, QH + KH, (QH + KH) * D, D, 0};
      return l->rope_out(l->plan, D, 1, T, NULL, 1000, &s40, &d40, POSENC_ROPE_NEOX);
    }
  }
  return POSENC_OK;
}
int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s OLD.so NEW.so ISA ROUNDS\n", argv[0]);
    return 2;
  }
  posenc_isa isa = (posenc_isa)atoi(argv[3]);
  int rounds = atoi(argv[4]);
  if (rounds < 1) {
    fprintf(stderr, "ROUNDS must be at least 1\n");
    return 2;
  }
  lib L[2];
  load(&L[0], argv[1], isa);
  /* ISA_NEW=<n>: the new build at another ISA (one build against itself: avx2 against avx512) */
  load(&L[1], argv[2], getenv("ISA_NEW") ? (posenc_isa)atoi(getenv("ISA_NEW")) : isa);
  xq = aligned_alloc(64, TMAX * QH * D * 4);
  xk = aligned_alloc(64, TMAX * KH * D * 4);
  hq = aligned_alloc(64, TMAX * QH * D * 2);
  hk = aligned_alloc(64, TMAX * KH * D * 2);
  out16 = aligned_alloc(64, TMAX * KH * D * 2);
  x40 = aligned_alloc(64, TMAX * (QH + KH) * D * 4);
  o40 = aligned_alloc(64, TMAX * (QH + KH) * D * 2);
  o40f = aligned_alloc(64, TMAX * (QH + KH) * D * 4);
  for (size_t i = 0; i < TMAX * (QH + KH) * D; ++i) {
    x40[i] = (float)(i % 83) * 0.01f;
    o40[i] = 0;
    o40f[i] = 0;
  }
  table = aligned_alloc(64, 4096 * 1024 * 4);
  emb = aligned_alloc(64, 4096 * 1024 * 4);
  scores = aligned_alloc(64, 32 * 512 * 512 * 4);
  sout = aligned_alloc(64, 32 * 512 * 512 * 4);
  for (size_t i = 0; i < 32u * 512 * 512; ++i) sout[i] = 0;
  kvmask = aligned_alloc(64, 4096 * 4);
  for (int j = 0; j < 4096; ++j) kvmask[j] = 0.0f;
  kvmask512 = aligned_alloc(64, 512 * 512 * 4);
  for (int i = 0; i < 512; ++i)
    for (int j = 0; j < 512; ++j)
      kvmask512[i * 512 + j] = (i < 256) == (j < 256) && (i * 512 + j) % 5 ? 0.0f : -INFINITY;
  for (size_t i = 0; i < TMAX * QH * D; ++i) {
    xq[i] = (float)(i % 97) * 0.01f;
    hq[i] = 0x3f80;
  }
  for (size_t i = 0; i < TMAX * KH * D; ++i) {
    xk[i] = (float)(i % 89) * 0.01f;
    hk[i] = 0x3f80;
  }
  for (size_t i = 0; i < 4096u * 1024; ++i) {
    table[i] = 0.001f * (float)(i % 13);
    emb[i] = 0;
  }
  for (size_t i = 0; i < 32u * 512 * 512; ++i) scores[i] = 0;
  for (int i = 0; i < 32; ++i) slopes[i] = exp2f(-0.25f * (i + 1));
  for (int i = 0; i < D; ++i) {
    /* 1: repeated calls keep the magnitudes (unequal weights shrink some components into
     * subnormals over the calls, an assist per operation on Intel CPUs) */
    wq[i] = 1.0f;
    wk[i] = 1.0f;
  }
  for (int i = 0; i < 4096; ++i) pos[i] = (i * 7919) % 4096;
  const char *names[] = {"rope_f32_neox",
                         "rope_bf16_neox",
                         "rope_f16_neox",
                         "rope_apply_f32_neox",
                         "rope_out_f32_bf16_neox",
                         "rope_f32_gptj(pos)",
                         "sinusoid_fill_f32(1024)",
                         "alibi_add_f32(512k)",
                         "learned_add_f32(1024)",
                         "softmax_f32_decode(32h)",
                         "softmax_f32_causal(32h,T/16 q)",
                         "softmax_f32_decode_kvcache(32h)",
                         "qknorm_rope_f32_neox",
                         "rope_out_f32_f16_neox(8h)",
                         "rope_out_f32_bf16_neox(40h)",
                         "rope_out_f32_f16_neox(40h)",
                         "softmax_out_f32(32x512x512)",
                         "softmax_f32_kvcache(32x512x512)",
                         "rope_out_q8_0_neox(8h)",
                         "rope_out_fp8_neox(8h)",
                         "alibi_add_f32(32x512x512)",
                         "rope_rerotate_f32(8h,5T)",
                         "rope_out_f32_f32_neox(40h)"};
  size_t Ts[8] = {1, 16, 512, 4096};
  int nT = 4;
  if (getenv("TS")) { /* TS=t1,t2,...: other token counts (the RoPE cases, up to TMAX) */
    nT = 0;
    for (char *p = getenv("TS"); *p && nT < 8; ++nT) {
      Ts[nT] = strtoul(p, &p, 10);
      if (Ts[nT] < 1 || Ts[nT] > TMAX) {
        fprintf(stderr, "TS: token counts in [1, %u]\n", (unsigned)TMAX);
        return 2;
      }
      if (*p == ',') ++p;
    }
  }
  double *r = malloc(sizeof(double) * rounds);
  for (int c = 0; c < 23; ++c)
    for (int ti = 0; ti < nT; ++ti) {
      size_t T = Ts[ti];
      if (T > 4096 && !(c <= 2 || c == 4 || (c >= 12 && c <= 15) || c >= 21)) continue;
      if (c == 11)
        for (size_t j = 0; j < T; ++j) kvmask[j] = j < T / 2 && j % 5 ? 0.0f : -INFINITY;
      if (getenv("CASE") && atoi(getenv("CASE")) != c) continue;
      if ((c == 7) && T < 512) continue;
      if (c >= 9 && c <= 11 && T < 16) continue;
      if (((c >= 16 && c <= 17) || c == 20) && T != 512) continue;
      if (c >= 18 && c <= 19 && T > 512) continue;
      int reps = T >= 4096 ? 1 : T >= 512 ? 4 : T >= 16 ? 64 : 512;
      double tot[2] = {0, 0};
      for (int k = 0; k < rounds; ++k) {
        double t[2];
        for (int s0 = 0; s0 < 2; ++s0) {
          int s = (k & 1) ? 1 - s0 : s0;
          double a = now();
          for (int j = 0; j < reps; ++j)
            if (run(&L[s], c, T) != POSENC_OK) {
              fprintf(stderr, "fail %d\n", c);
              exit(4);
            }
          t[s] = now() - a;
        }
        r[k] = t[1] / t[0];
        tot[0] += t[0];
        tot[1] += t[1];
      }
      qsort(r, rounds, sizeof *r, cmpd);
      printf("%-26s T=%-5zu new/old median %.3f (q25 %.3f q75 %.3f)  old %.1f us/call\n", names[c],
             T, r[rounds / 2], r[rounds / 4], r[3 * rounds / 4], 1e6 * tot[0] / rounds / reps);
    }
  return 0;
}
