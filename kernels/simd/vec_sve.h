/* Vector layer for AArch64 SVE (vector-length agnostic): VF_W = svcntw() float lanes and
 * VD_W = svcntd() double lanes, known at run time only (128 to 2048 bits: 4 to 64 floats).
 * The vector types are sizeless (ACLE): no sizeof, no array element, struct member or
 * static of them, so this layer defines VF_SIZELESS and the shared bodies keep every
 * vector in a local (the contract: kernels/simd/README.md). Whole-vector operations run
 * under an all-true predicate; the partial forms (_n) under svwhilelt, so they touch
 * exactly the n elements they name (a predicated-off element is neither read nor written
 * and cannot fault), with no stack copy. Compiled with -march=armv8.2-a+sve (everything
 * here is base SVE: FCVT between f16 and f32 included; no BF16 or SVE2 instruction).
 * Rounding is FPCR's, round to nearest even (Linux's default), as the other layers'. */
#ifndef POSENC_VEC_SVE_H
#define POSENC_VEC_SVE_H

#include <arm_sve.h>
#include <sleef.h>
#include <stddef.h>
#include <stdint.h>

#include "../common.h"
#include "msan.h"

#define VEC_SUFFIX sve
#define VF_SIZELESS 1
#define VF_W ((size_t)svcntw())
#define VD_W ((size_t)svcntd())
#define VF_REGS 32
/* The architecture's largest vector, 2048 bits, fits POSENC_MAX_LANES, so VF_W <=
 * POSENC_MAX_LANES on every SVE CPU (and VF_W = 2 VD_W, VF_W a power of two dividing it:
 * SVE vector lengths are multiples of 128 bits, the ones Linux offers powers of two). */
_Static_assert(POSENC_MAX_LANES >= 2048 / 32,
               "POSENC_MAX_LANES must hold a 2048-bit SVE vector of floats (kernels/common.h)");

typedef svfloat32_t vf;
typedef svfloat64_t vd;
typedef svint32_t vi;
typedef svbool_t vm;

/* All lanes of 32-bit / 64-bit elements; the first n of 32-bit ones. */
static inline svbool_t vf_all_(void) { return svptrue_b32(); }
static inline svbool_t vd_all_(void) { return svptrue_b64(); }
static inline svbool_t vf_first_(size_t n) { return svwhilelt_b32_u64(0, n); }

static inline vf vf_load(const float *p) { return svld1_f32(vf_all_(), p); }
static inline void vf_store(float *p, vf v) { svst1_f32(vf_all_(), p, v); }
/* A store that a vf_load of the same vector reads back soon (vec_avx512.h): an ordinary one. */
static inline void vf_store_reload(float *p, vf v) { vf_store(p, v); }
/* Ordinary stores for the non-temporal ones (STNT1W exists, but whether it pays on an SVE
 * core could not be measured here: no SVE hardware); the fence is then a no-op. */
static inline void vf_stream(float *p, vf v) { vf_store(p, v); }
static inline void vf_stream_fence(void) {}
/* Elements [0, n) only (n <= VF_W); the other lanes read as +0. */
static inline vf vf_load_n(const float *p, size_t n) { return svld1_f32(vf_first_(n), p); }
static inline void vf_store_n(float *p, vf v, size_t n) { svst1_f32(vf_first_(n), p, v); }
static inline vf vf_set1(float x) { return svdup_n_f32(x); }
static inline vf vf_mul(vf a, vf b) { return svmul_f32_x(vf_all_(), a, b); }
static inline vf vf_add(vf a, vf b) { return svadd_f32_x(vf_all_(), a, b); }
static inline vf vf_sub(vf a, vf b) { return svsub_f32_x(vf_all_(), a, b); }
/* -x exactly (FNEG: the sign bit flipped, as C's unary minus). */
static inline vf vf_neg(vf x) { return svneg_f32_x(vf_all_(), x); }
/* |x| (FABS: the sign bit cleared). */
static inline vf vf_abs(vf x) { return svabs_f32_x(vf_all_(), x); }
/* vf_fmadd (a*b + c) and vf_fnmadd (c - a*b) round once (FMLA / FMLS). */
#define VF_FMA 1
static inline vf vf_fmadd(vf a, vf b, vf c) { return svmla_f32_x(vf_all_(), c, a, b); }
static inline vf vf_fnmadd(vf a, vf b, vf c) { return svmls_f32_x(vf_all_(), c, a, b); }
/* (x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...): REVW, the two words of each doubleword. */
static inline vf vf_swap_pairs(vf x) {
  return svreinterpret_f32_u64(svrevw_u64_x(vd_all_(), svreinterpret_u64_f32(x)));
}
/* Interleave: lo = (a0, b0, a1, b1, ...) from the lower halves, hi from the upper ones. */
static inline vf vf_zip_lo(vf a, vf b) { return svzip1_f32(a, b); }
static inline vf vf_zip_hi(vf a, vf b) { return svzip2_f32(a, b); }
/* SLEEF's SVE sin/cos (u10: 1.0 ulp), every lane. */
static inline void vf_sincos(vf x, vf *s, vf *c) {
  svfloat32x2_t r = Sleef_sincosfx_u10sve(x);
  POSENC_MSAN_UNPOISON(&r, 2 * svcntb());
  *s = svget2_f32(r, 0);
  *c = svget2_f32(r, 1);
}

/* 32-bit integer lanes, for ALiBi's distances. */
static inline vi vi_set1(int32_t x) { return svdup_n_s32(x); }
static inline vi vi_iota(void) { return svindex_s32(0, 1); }
static inline vi vi_add(vi a, vi b) { return svadd_s32_x(vf_all_(), a, b); }
static inline vi vi_sub(vi a, vi b) { return svsub_s32_x(vf_all_(), a, b); }
/* |x| (INT32_MIN stays INT32_MIN, as PABSD / ABS do). */
static inline vi vi_abs(vi x) { return svabs_s32_x(vf_all_(), x); }
/* To float, rounded to nearest even (SCVTF). */
static inline vf vf_from_vi(vi x) { return svcvt_f32_s32_x(vf_all_(), x); }
/* The lanes' bits as int32 (a reinterpretation, exact). */
static inline vi vi_bits(vf x) { return svreinterpret_s32_f32(x); }
static inline vi vi_load(const int32_t *p) { return svld1_s32(vf_all_(), p); }
static inline vi vi_load_n(const int32_t *p, size_t n) { return svld1_s32(vf_first_(n), p); }

static inline vd vd_load(const double *p) { return svld1_f64(vd_all_(), p); }
static inline void vd_store(double *p, vd v) { svst1_f64(vd_all_(), p, v); }
/* Lower / upper half of a float vector widened to double, exactly: FCVT widens the even
 * words, which the zip with itself fills with lanes 0 .. VD_W - 1 (VD_W .. VF_W - 1). */
static inline vd vd_from_vf_lo(vf v) { return svcvt_f64_f32_x(vd_all_(), svzip1_f32(v, v)); }
static inline vd vd_from_vf_hi(vf v) { return svcvt_f64_f32_x(vd_all_(), svzip2_f32(v, v)); }
static inline vd vd_set1(double x) { return svdup_n_f64(x); }
/* Each rounds once, never fused with another (the angle reduction is bitwise: the library
 * is compiled with -ffp-contract=off, which the compiler honours for these too). */
static inline vd vd_add(vd a, vd b) { return svadd_f64_x(vd_all_(), a, b); }
static inline vd vd_sub(vd a, vd b) { return svsub_f64_x(vd_all_(), a, b); }
static inline vd vd_mul(vd a, vd b) { return svmul_f64_x(vd_all_(), a, b); }
/* Round to nearest, ties to even (FRINTN), as _MM_FROUND_TO_NEAREST_INT. */
static inline vd vd_round(vd x) { return svrintn_f64_x(vd_all_(), x); }
/* Two double vectors to one float vector, (lo..., hi...), each rounded to nearest even:
 * FCVT narrows into the even words, UZP1 gathers them. */
static inline vf vf_from_vd(vd lo, vd hi) {
  return svuzp1_f32(svcvt_f32_f64_x(vd_all_(), lo), svcvt_f32_f64_x(vd_all_(), hi));
}

/* For the softmax: max, lane masks, exp's pieces, the double sum. */
/* max(a, b); a NaN in either gives NaN (FMAX). */
static inline vf vf_max(vf a, vf b) { return svmax_f32_x(vf_all_(), a, b); }
/* The largest lane; a NaN lane gives NaN (FMAXV). */
static inline float vf_hmax(vf v) { return svmaxv_f32(vf_all_(), v); }
/* Lane masks and selections (the softmax's hidden keys), posenc's exp's scaling by 2^n and
 * soft-capping's min and division. */
static inline vm vm_or(vm a, vm b) { return svorr_b_z(vf_all_(), a, b); }
/* Ordered comparisons: a NaN lane gives 0. */
static inline vm vf_eq_m(vf a, vf b) { return svcmpeq_f32(vf_all_(), a, b); }
static inline vm vf_lt_m(vf a, vf b) { return svcmplt_f32(vf_all_(), a, b); }
static inline vm vi_gt_m(vi a, vi b) { return svcmpgt_s32(vf_all_(), a, b); }
/* a where m is set, else b. */
static inline vf vf_select(vm m, vf a, vf b) { return svsel_f32(m, a, b); }
/* +0 where m is set, else v. */
static inline vf vf_zero_where(vm m, vf v) { return svsel_f32(m, svdup_n_f32(0.0f), v); }
/* min(a, b); a NaN in either gives NaN (FMIN). */
static inline vf vf_min(vf a, vf b) { return svmin_f32_x(vf_all_(), a, b); }
static inline vf vf_div(vf a, vf b) { return svdiv_f32_x(vf_all_(), a, b); }
/* The square root, correctly rounded. */
static inline vf vf_sqrt(vf a) { return svsqrt_f32_x(vf_all_(), a); }
/* p * 2^n for integral n in [-126, 127] (FSCALE: p * 2^n rounded once, the same value as
 * the product by 2^n built in the exponent field of the other layers). A NaN p gives NaN. */
static inline vf vf_scale2(vf p, vf n) {
  return svscale_f32_x(vf_all_(), p, svcvt_s32_f32_x(vf_all_(), n));
}
/* vf_scale2, +0 where m is set (one zeroing FSCALE). */
static inline vf vf_scale2_zero_where(vm m, vf p, vf n) {
  return svscale_f32_z(svnot_b_z(vf_all_(), m), p, svcvt_s32_f32_x(vf_all_(), n));
}
/* v in lanes [0, n), fill in the others (n <= VF_W). */
static inline vf vf_first_n(vf v, size_t n, float fill) {
  return svsel_f32(vf_first_(n), v, svdup_n_f32(fill));
}
/* The sum of the lanes (FADDV: a pairwise tree, not ordered). */
static inline double vd_hsum(vd v) { return svaddv_f64(vd_all_(), v); }

/* 16-bit storage: VF_W elements, each in the lower half of a 32-bit lane on the way
 * (LD1H / ST1H of .S elements, zero-extending / truncating); the _n forms under
 * svwhilelt, so they touch exactly n elements and the other lanes read as +0. */
/* bf16 (the upper half of a float) to float, exactly. */
static inline vf vf_from_bf16_lanes_(svuint32_t h) {
  return svreinterpret_f32_u32(svlsl_n_u32_x(vf_all_(), h, 16));
}
static inline vf vf_load_bf16(const uint16_t *p) {
  return vf_from_bf16_lanes_(svld1uh_u32(vf_all_(), p));
}
static inline vf vf_load_bf16_n(const uint16_t *p, size_t n) {
  return vf_from_bf16_lanes_(svld1uh_u32(vf_first_(n), p));
}
/* float to bf16 in the lower halves, rounded to nearest even; a NaN stays a (quiet) NaN:
 * its sign and leading payload bits kept, the quiet bit set (kernels/half.h). */
static inline svuint32_t vf_bf16_lanes_(vf v) {
  const svbool_t all = vf_all_();
  const svuint32_t b = svreinterpret_u32_f32(v);
  const svuint32_t lsb = svand_n_u32_x(all, svlsr_n_u32_x(all, b, 16), 1);
  const svuint32_t rne = svadd_u32_x(all, svadd_n_u32_x(all, b, 0x7fff), lsb);
  const svuint32_t quiet = svorr_n_u32_x(all, b, 0x400000);
  return svlsr_n_u32_x(all, svsel_u32(svcmpuo_f32(all, v, v), quiet, rne), 16);
}
static inline void vf_store_bf16(uint16_t *p, vf v) { svst1h_u32(vf_all_(), p, vf_bf16_lanes_(v)); }
static inline void vf_store_bf16_n(uint16_t *p, vf v, size_t n) {
  svst1h_u32(vf_first_(n), p, vf_bf16_lanes_(v));
}
/* IEEE binary16 (f16) to float, exactly (a signalling NaN comes back quiet, as from NEON's
 * FCVTL and F16C), and float to f16 rounded to nearest even (FPCR's default mode; IEEE
 * overflow to infinity, subnormals, a NaN stays a quiet NaN with its leading payload bits):
 * FCVT, which reads and writes the even halfwords of the .S lanes, the lower halves. */
static inline vf vf_from_f16_lanes_(svuint32_t h) {
  return svcvt_f32_f16_x(vf_all_(), svreinterpret_f16_u32(h));
}
static inline vf vf_load_f16(const uint16_t *p) {
  return vf_from_f16_lanes_(svld1uh_u32(vf_all_(), p));
}
static inline vf vf_load_f16_n(const uint16_t *p, size_t n) {
  return vf_from_f16_lanes_(svld1uh_u32(vf_first_(n), p));
}
static inline svuint32_t vf_f16_lanes_(vf v) {
  return svreinterpret_u32_f16(svcvt_f16_f32_x(vf_all_(), v));
}
static inline void vf_store_f16(uint16_t *p, vf v) { svst1h_u32(vf_all_(), p, vf_f16_lanes_(v)); }
static inline void vf_store_f16_n(uint16_t *p, vf v, size_t n) {
  svst1h_u32(vf_first_(n), p, vf_f16_lanes_(v));
}
/* Bytes (the quantized K caches, rope_simd.h): each lane truncated toward zero to int32 (the
 * lanes hold values in [-128, 256): q8_0's rounded quotients, FP8 codes), its low byte stored
 * at p[0, VF_W); the _n form stores exactly n of them. */
static inline void vf_store_i8_n(unsigned char *p, vf v, size_t n) {
  svst1b_s32(vf_first_(n), (int8_t *)p, svcvt_s32_f32_x(vf_all_(), v));
}
static inline void vf_store_i8(unsigned char *p, vf v) { vf_store_i8_n(p, v, VF_W); }
/* Ordinary stores for the 16-bit non-temporal ones (see vf_stream). */
static inline void vf_stream_bf16(uint16_t *p, vf v) { vf_store_bf16(p, v); }
static inline void vf_stream_f16(uint16_t *p, vf v) { vf_store_f16(p, v); }
/* Not provided (optional, kernels/simd/README.md): VF_HAVE_STORE2_BF16 (base SVE has no
 * bf16 conversion; ve_store2 stores twice) and VF_HAVE_VZ16 (the sinusoid's packed 16-bit
 * rows: its vz16 type is sized; the generic per-pair stores serve). */

#endif /* POSENC_VEC_SVE_H */
