/* Vector layer for the RISC-V V extension 1.0 (vector-length agnostic): VF_W float lanes and
 * VD_W = VF_W / 2 double lanes, known at run time only. vf is one vector register of 32-bit
 * elements (LMUL 1: VLEN / 32 floats, 4 at VLEN 128), vd one of 64-bit elements, and every
 * operation runs with an explicit vl: VF_W = min(VLEN / 32, POSENC_MAX_LANES), so that a
 * VLEN above 2048 bits (up to the architecture's 65536) uses the first 64 lanes of each
 * register and the bodies' buffers, sized from POSENC_MAX_LANES, still hold a vector. The
 * double lanes are the first VD_W of a register (not the second half of a register group:
 * with vl capped, the two halves of a float vector are lanes [0, VD_W) and [VD_W, VF_W)).
 * The vector types are sizeless, so this layer defines VF_SIZELESS (kernels/simd/README.md).
 * The partial forms (_n) run with vl = n, so they touch exactly the n elements they name,
 * and their other lanes are kept at +0 (tail undisturbed). Compiled with -march=rv64gcv
 * (clang 16's `__riscv_` intrinsics): base V only, no Zvfh (f16 is converted with integer
 * operations, bit for bit kernels/half.h) and no Zvbb. Rounding is frm's, round to nearest
 * even (Linux's default), as the other layers'. */
#ifndef POSENC_VEC_RVV_H
#define POSENC_VEC_RVV_H

#include <riscv_vector.h>
#include <sleef.h>
#include <stddef.h>
#include <stdint.h>

#include "../common.h"
#include "msan.h"

#define VEC_SUFFIX rvv
#define VF_SIZELESS 1
/* min(VLMAX of 32-bit elements at LMUL 1, POSENC_MAX_LANES): a power of two (VLEN is one),
 * at least 4 (V needs VLEN >= 128). */
static inline size_t vf_vl_(void) {
  const size_t vlmax = __riscv_vsetvlmax_e32m1();
  return vlmax < POSENC_MAX_LANES ? vlmax : POSENC_MAX_LANES;
}
#define VF_W vf_vl_()
#define VD_W (vf_vl_() / 2)
#define VF_REGS 32

typedef vfloat32m1_t vf;
typedef vfloat64m1_t vd;
typedef vint32m1_t vi;
typedef vbool32_t vm;

static inline vf vf_zero_(void) { return __riscv_vfmv_v_f_f32m1(0.0f, VF_W); }

static inline vf vf_load(const float *p) { return __riscv_vle32_v_f32m1(p, VF_W); }
static inline void vf_store(float *p, vf v) { __riscv_vse32_v_f32m1(p, v, VF_W); }
/* A store that a vf_load of the same vector reads back soon (vec_avx512.h): an ordinary one. */
static inline void vf_store_reload(float *p, vf v) { vf_store(p, v); }
/* No non-temporal vector store in base V (ordinary stores; the fence is then a no-op). */
static inline void vf_stream(float *p, vf v) { vf_store(p, v); }
static inline void vf_stream_fence(void) {}
/* Elements [0, n) only (n <= VF_W; vl = n); the other lanes stay +0 (tail undisturbed). */
static inline vf vf_load_n(const float *p, size_t n) {
  return __riscv_vle32_v_f32m1_tu(vf_zero_(), p, n);
}
static inline void vf_store_n(float *p, vf v, size_t n) { __riscv_vse32_v_f32m1(p, v, n); }
static inline vf vf_set1(float x) { return __riscv_vfmv_v_f_f32m1(x, VF_W); }
static inline vf vf_mul(vf a, vf b) { return __riscv_vfmul_vv_f32m1(a, b, VF_W); }
static inline vf vf_add(vf a, vf b) { return __riscv_vfadd_vv_f32m1(a, b, VF_W); }
static inline vf vf_sub(vf a, vf b) { return __riscv_vfsub_vv_f32m1(a, b, VF_W); }
/* -x exactly (VFSGNJN: the sign bit flipped, as C's unary minus). */
static inline vf vf_neg(vf x) { return __riscv_vfneg_v_f32m1(x, VF_W); }
/* |x| (VFSGNJX: the sign bit cleared). */
static inline vf vf_abs(vf x) { return __riscv_vfabs_v_f32m1(x, VF_W); }
/* vf_fmadd (a*b + c) and vf_fnmadd (c - a*b) round once (VFMACC / VFNMSAC). */
#define VF_FMA 1
static inline vf vf_fmadd(vf a, vf b, vf c) { return __riscv_vfmacc_vv_f32m1(c, a, b, VF_W); }
static inline vf vf_fnmadd(vf a, vf b, vf c) { return __riscv_vfnmsac_vv_f32m1(c, a, b, VF_W); }
/* (x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...): the two words of each 64-bit lane swapped
 * by shifts (a rotate is Zvbb's). */
static inline vf vf_swap_pairs(vf x) {
  const size_t vl = VD_W;
  const vuint64m1_t d = __riscv_vreinterpret_v_u32m1_u64m1(__riscv_vreinterpret_v_f32m1_u32m1(x));
  const vuint64m1_t r =
      __riscv_vor_vv_u64m1(__riscv_vsll_vx_u64m1(d, 32, vl), __riscv_vsrl_vx_u64m1(d, 32, vl), vl);
  return __riscv_vreinterpret_v_u32m1_f32m1(__riscv_vreinterpret_v_u64m1_u32m1(r));
}
/* (a0, b0, a1, b1, ...) from lanes [0, VD_W) of a and b: the 64-bit lanes a + b * 2^32
 * (VWADDU + VWMACCU by 2^32 - 1), bits moved exactly. */
static inline vf vf_zip_first_(vf a, vf b) {
  const size_t vl = VD_W;
  const vuint32mf2_t ua = __riscv_vlmul_trunc_v_u32m1_u32mf2(__riscv_vreinterpret_v_f32m1_u32m1(a));
  const vuint32mf2_t ub = __riscv_vlmul_trunc_v_u32m1_u32mf2(__riscv_vreinterpret_v_f32m1_u32m1(b));
  const vuint64m1_t w =
      __riscv_vwmaccu_vx_u64m1(__riscv_vwaddu_vv_u64m1(ua, ub, vl), 0xffffffffu, ub, vl);
  return __riscv_vreinterpret_v_u32m1_f32m1(__riscv_vreinterpret_v_u64m1_u32m1(w));
}
/* Lanes [VD_W, VF_W) of x moved down to lanes [0, VD_W). */
static inline vf vf_upper_(vf x) { return __riscv_vslidedown_vx_f32m1(x, VD_W, VD_W); }
/* Interleave: lo = (a0, b0, a1, b1, ...) from the lower halves, hi from the upper ones. */
static inline vf vf_zip_lo(vf a, vf b) { return vf_zip_first_(a, b); }
static inline vf vf_zip_hi(vf a, vf b) { return vf_zip_first_(vf_upper_(a), vf_upper_(b)); }
/* SLEEF's RVV sin/cos (u10: 1.0 ulp; Sleef_sincosfx_u10rvvm1 computes every lane of the
 * register, VLMAX of them, and returns sin in the first register of an LMUL 2 group, cos in
 * the second). */
static inline void vf_sincos(vf x, vf *s, vf *c) {
  vfloat32m2_t r = Sleef_sincosfx_u10rvvm1(x);
  POSENC_MSAN_UNPOISON(&r, 2 * __riscv_vsetvlmax_e8m1());
  *s = __riscv_vget_v_f32m2_f32m1(r, 0);
  *c = __riscv_vget_v_f32m2_f32m1(r, 1);
}

/* 32-bit integer lanes, for ALiBi's distances. */
static inline vi vi_set1(int32_t x) { return __riscv_vmv_v_x_i32m1(x, VF_W); }
static inline vi vi_iota(void) {
  return __riscv_vreinterpret_v_u32m1_i32m1(__riscv_vid_v_u32m1(VF_W));
}
static inline vi vi_add(vi a, vi b) { return __riscv_vadd_vv_i32m1(a, b, VF_W); }
static inline vi vi_sub(vi a, vi b) { return __riscv_vsub_vv_i32m1(a, b, VF_W); }
/* |x| = max(x, -x) (INT32_MIN stays INT32_MIN, as PABSD / ABS do; base V has no VABS). */
static inline vi vi_abs(vi x) {
  return __riscv_vmax_vv_i32m1(x, __riscv_vneg_v_i32m1(x, VF_W), VF_W);
}
/* To float, rounded to nearest even (VFCVT.F.X, frm). */
static inline vf vf_from_vi(vi x) { return __riscv_vfcvt_f_x_v_f32m1(x, VF_W); }
/* The lanes' bits as int32 (a reinterpretation, exact). */
static inline vi vi_bits(vf x) { return __riscv_vreinterpret_v_f32m1_i32m1(x); }
static inline vi vi_load(const int32_t *p) { return __riscv_vle32_v_i32m1(p, VF_W); }
static inline vi vi_load_n(const int32_t *p, size_t n) {
  return __riscv_vle32_v_i32m1_tu(__riscv_vmv_v_x_i32m1(0, VF_W), p, n);
}

static inline vd vd_load(const double *p) { return __riscv_vle64_v_f64m1(p, VD_W); }
static inline void vd_store(double *p, vd v) { __riscv_vse64_v_f64m1(p, v, VD_W); }
/* Lanes [0, VD_W) (lanes [VD_W, VF_W)) of a float vector widened to double, exactly
 * (VFWCVT from a half register). */
static inline vd vd_from_vf_lo(vf v) {
  return __riscv_vfwcvt_f_f_v_f64m1(__riscv_vlmul_trunc_v_f32m1_f32mf2(v), VD_W);
}
static inline vd vd_from_vf_hi(vf v) { return vd_from_vf_lo(vf_upper_(v)); }
static inline vd vd_set1(double x) { return __riscv_vfmv_v_f_f64m1(x, VD_W); }
/* Each rounds once, never fused with another (the angle reduction is bitwise: the library
 * is compiled with -ffp-contract=off, which the compiler honours for these too). */
static inline vd vd_add(vd a, vd b) { return __riscv_vfadd_vv_f64m1(a, b, VD_W); }
static inline vd vd_sub(vd a, vd b) { return __riscv_vfsub_vv_f64m1(a, b, VD_W); }
static inline vd vd_mul(vd a, vd b) { return __riscv_vfmul_vv_f64m1(a, b, VD_W); }
/* Round to nearest, ties to even, as _MM_FROUND_TO_NEAREST_INT and FRINTN: through int64
 * (VFCVT.X.F with frm, exact back for |x| < 2^52), the sign of x kept (-0.3 gives -0), and
 * x itself where |x| >= 2^52 (already integral), an infinity or a NaN. */
static inline vd vd_round(vd x) {
  const size_t vl = VD_W;
  const vd r = __riscv_vfcvt_f_x_v_f64m1(__riscv_vfcvt_x_f_v_i64m1(x, vl), vl);
  const vbool64_t small =
      __riscv_vmflt_vf_f64m1_b64(__riscv_vfabs_v_f64m1(x, vl), 4503599627370496.0, vl);
  return __riscv_vmerge_vvm_f64m1(x, __riscv_vfsgnj_vv_f64m1(r, x, vl), small, vl);
}
/* Two double vectors to one float vector, (lo..., hi...), each rounded to nearest even
 * (VFNCVT into half registers; hi slid up to lane VD_W). */
static inline vf vf_from_vd(vd lo, vd hi) {
  const size_t vl = VD_W;
  const vf l = __riscv_vlmul_ext_v_f32mf2_f32m1(__riscv_vfncvt_f_f_w_f32mf2(lo, vl));
  const vf h = __riscv_vlmul_ext_v_f32mf2_f32m1(__riscv_vfncvt_f_f_w_f32mf2(hi, vl));
  return __riscv_vslideup_vx_f32m1(l, h, vl, VF_W);
}

/* For the softmax: max, lane masks, exp's pieces, the double sum. */
/* max(a, b): VFMAX returns the other operand for a NaN (IEEE maxNum), so b is taken where
 * it is NaN: a NaN in b gives NaN, a NaN only in a gives b (as on x86). */
static inline vf vf_max(vf a, vf b) {
  const size_t vl = VF_W;
  return __riscv_vmerge_vvm_f32m1(__riscv_vfmax_vv_f32m1(a, b, vl), b,
                                  __riscv_vmfne_vv_f32m1_b32(b, b, vl), vl);
}
/* The largest lane (VFREDMAX; with a NaN lane unspecified: NaN lanes are ignored). */
static inline float vf_hmax(vf v) {
  return __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredmax_vs_f32m1_f32m1(v, v, VF_W));
}
/* Lane masks and selections (the softmax's hidden keys), posenc's exp's scaling by 2^n and
 * soft-capping's min and division. */
static inline vm vm_or(vm a, vm b) { return __riscv_vmor_mm_b32(a, b, VF_W); }
/* Ordered comparisons: a NaN lane gives 0. */
static inline vm vf_eq_m(vf a, vf b) { return __riscv_vmfeq_vv_f32m1_b32(a, b, VF_W); }
static inline vm vf_lt_m(vf a, vf b) { return __riscv_vmflt_vv_f32m1_b32(a, b, VF_W); }
static inline vm vi_gt_m(vi a, vi b) { return __riscv_vmsgt_vv_i32m1_b32(a, b, VF_W); }
/* a where m is set, else b. */
static inline vf vf_select(vm m, vf a, vf b) { return __riscv_vmerge_vvm_f32m1(b, a, m, VF_W); }
/* +0 where m is set, else v. */
static inline vf vf_zero_where(vm m, vf v) { return __riscv_vfmerge_vfm_f32m1(v, 0.0f, m, VF_W); }
/* min(a, b), with vf_max's NaN rule (VFMIN is IEEE minNum). */
static inline vf vf_min(vf a, vf b) {
  const size_t vl = VF_W;
  return __riscv_vmerge_vvm_f32m1(__riscv_vfmin_vv_f32m1(a, b, vl), b,
                                  __riscv_vmfne_vv_f32m1_b32(b, b, vl), vl);
}
static inline vf vf_div(vf a, vf b) { return __riscv_vfdiv_vv_f32m1(a, b, VF_W); }
/* The square root, correctly rounded. */
static inline vf vf_sqrt(vf a) { return __riscv_vfsqrt_v_f32m1(a, VF_W); }
/* p * 2^n for integral n in [-126, 127]: 2^n built in the exponent field. A NaN p gives
 * NaN. */
static inline vf vf_scale2(vf p, vf n) {
  const size_t vl = VF_W;
  const vi e = __riscv_vsll_vx_i32m1(
      __riscv_vadd_vx_i32m1(__riscv_vfcvt_x_f_v_i32m1(n, vl), 127, vl), 23, vl);
  return __riscv_vfmul_vv_f32m1(p, __riscv_vreinterpret_v_i32m1_f32m1(e), vl);
}
/* vf_scale2, +0 where m is set. */
static inline vf vf_scale2_zero_where(vm m, vf p, vf n) {
  return vf_zero_where(m, vf_scale2(p, n));
}
/* v in lanes [0, n), fill in the others (n <= VF_W): v's first n lanes moved onto fill
 * (vl = n, tail undisturbed). */
static inline vf vf_first_n(vf v, size_t n, float fill) {
  return __riscv_vmv_v_v_f32m1_tu(vf_set1(fill), v, n);
}
/* The sum of the lanes, in lane order (VFREDOSUM, from -0). */
static inline double vd_hsum(vd v) {
  return __riscv_vfmv_f_s_f64m1_f64(
      __riscv_vfredosum_vs_f64m1_f64m1(v, __riscv_vfmv_s_f_f64m1(-0.0, 1), VD_W));
}

/* 16-bit storage: VF_W elements, a half register of 16-bit elements on the way (VLE16 /
 * VSE16), widened to (narrowed from) the 32-bit lanes; the _n forms with vl = n, so they
 * touch exactly n elements and the other lanes read as +0. */
typedef vuint16mf2_t vrvv_u16_;
typedef vuint32m1_t vrvv_u32_;
static inline vrvv_u16_ vh_load_(const uint16_t *p) { return __riscv_vle16_v_u16mf2(p, VF_W); }
static inline vrvv_u16_ vh_load_n_(const uint16_t *p, size_t n) {
  return __riscv_vle16_v_u16mf2_tu(__riscv_vmv_v_x_u16mf2(0, VF_W), p, n);
}
/* bf16 (the upper half of a float) to float, exactly. */
static inline vf vf_from_bf16_lanes_(vrvv_u16_ h) {
  const size_t vl = VF_W;
  return __riscv_vreinterpret_v_u32m1_f32m1(
      __riscv_vsll_vx_u32m1(__riscv_vzext_vf2_u32m1(h, vl), 16, vl));
}
static inline vf vf_load_bf16(const uint16_t *p) { return vf_from_bf16_lanes_(vh_load_(p)); }
static inline vf vf_load_bf16_n(const uint16_t *p, size_t n) {
  return vf_from_bf16_lanes_(vh_load_n_(p, n));
}
/* float to bf16, rounded to nearest even; a NaN stays a (quiet) NaN: its sign and leading
 * payload bits kept, the quiet bit set (kernels/half.h). VNSRL takes the upper halves. */
static inline vrvv_u16_ vf_bf16_lanes_(vf v) {
  const size_t vl = VF_W;
  const vrvv_u32_ b = __riscv_vreinterpret_v_f32m1_u32m1(v);
  const vrvv_u32_ lsb = __riscv_vand_vx_u32m1(__riscv_vsrl_vx_u32m1(b, 16, vl), 1, vl);
  const vrvv_u32_ rne = __riscv_vadd_vv_u32m1(__riscv_vadd_vx_u32m1(b, 0x7fff, vl), lsb, vl);
  const vrvv_u32_ quiet = __riscv_vor_vx_u32m1(b, 0x400000, vl);
  const vrvv_u32_ r =
      __riscv_vmerge_vvm_u32m1(rne, quiet, __riscv_vmfne_vv_f32m1_b32(v, v, vl), vl);
  return __riscv_vnsrl_wx_u16mf2(r, 16, vl);
}
static inline void vf_store_bf16(uint16_t *p, vf v) {
  __riscv_vse16_v_u16mf2(p, vf_bf16_lanes_(v), VF_W);
}
static inline void vf_store_bf16_n(uint16_t *p, vf v, size_t n) {
  __riscv_vse16_v_u16mf2(p, vf_bf16_lanes_(v), n);
}
/* IEEE binary16 (f16) to float, exactly, in integer and exact float operations (base V has
 * no f16 conversion; Zvfhmin's is not assumed): the magnitude's bits shifted to a float's
 * place are the value times 2^-112 (a subnormal f16 a float subnormal), so one product by
 * 2^112 rebiases it exactly; infinities and NaNs get the all-ones exponent instead (a NaN's
 * payload kept, a signalling one not quietened). */
static inline vf vf_from_f16_lanes_(vrvv_u16_ h16) {
  const size_t vl = VF_W;
  const vrvv_u32_ h = __riscv_vzext_vf2_u32m1(h16, vl);
  const vrvv_u32_ mag = __riscv_vand_vx_u32m1(h, 0x7fff, vl);
  const vrvv_u32_ sign = __riscv_vsll_vx_u32m1(__riscv_vand_vx_u32m1(h, 0x8000, vl), 16, vl);
  const vrvv_u32_ shifted = __riscv_vsll_vx_u32m1(mag, 13, vl);
  const vf scaled =
      __riscv_vfmul_vf_f32m1(__riscv_vreinterpret_v_u32m1_f32m1(shifted), 0x1p112f, vl);
  const vrvv_u32_ special = __riscv_vor_vx_u32m1(shifted, 0x7f800000, vl);
  const vrvv_u32_ bits =
      __riscv_vmerge_vvm_u32m1(__riscv_vreinterpret_v_f32m1_u32m1(scaled), special,
                               __riscv_vmsgeu_vx_u32m1_b32(mag, 0x7c00, vl), vl);
  return __riscv_vreinterpret_v_u32m1_f32m1(__riscv_vor_vv_u32m1(bits, sign, vl));
}
static inline vf vf_load_f16(const uint16_t *p) { return vf_from_f16_lanes_(vh_load_(p)); }
static inline vf vf_load_f16_n(const uint16_t *p, size_t n) {
  return vf_from_f16_lanes_(vh_load_n_(p, n));
}
/* m >> s rounded to nearest, ties to even, per lane (s in [1, 31]): (m + 2^(s-1) - 1 +
 * ((m >> s) & 1)) >> s, as posenc_shift_rne. */
static inline vrvv_u32_ vu_shift_rne_(vrvv_u32_ m, vrvv_u32_ s, size_t vl) {
  const vrvv_u32_ half_m1 = __riscv_vsub_vx_u32m1(
      __riscv_vsll_vv_u32m1(__riscv_vmv_v_x_u32m1(1, vl), __riscv_vsub_vx_u32m1(s, 1, vl), vl), 1,
      vl);
  const vrvv_u32_ odd = __riscv_vand_vx_u32m1(__riscv_vsrl_vv_u32m1(m, s, vl), 1, vl);
  return __riscv_vsrl_vv_u32m1(
      __riscv_vadd_vv_u32m1(__riscv_vadd_vv_u32m1(m, half_m1, vl), odd, vl), s, vl);
}
/* float to f16 as posenc_f32_to_f16 (kernels/half.h), in integer operations: nearest even,
 * IEEE overflow to infinity (at and above 65520), gradual underflow, a NaN stays a quiet NaN
 * with its sign and leading payload bits. Every case is computed and the lane's one picked. */
static inline vrvv_u16_ vf_f16_lanes_(vf v) {
  const size_t vl = VF_W;
  const vrvv_u32_ b = __riscv_vreinterpret_v_f32m1_u32m1(v);
  const vrvv_u32_ sign = __riscv_vand_vx_u32m1(__riscv_vsrl_vx_u32m1(b, 16, vl), 0x8000, vl);
  const vrvv_u32_ a = __riscv_vand_vx_u32m1(b, 0x7fffffff, vl);
  /* Subnormal result (2^-25 <= |v| < 2^-14): the significand with its leading 1, shifted
   * right by 126 - exponent (14 to 24; other lanes: any, not picked). */
  const vrvv_u32_ sig = __riscv_vor_vx_u32m1(__riscv_vand_vx_u32m1(a, 0x7fffff, vl), 0x800000, vl);
  const vrvv_u32_ shift = __riscv_vrsub_vx_u32m1(__riscv_vsrl_vx_u32m1(a, 23, vl), 126, vl);
  vrvv_u32_ r = vu_shift_rne_(sig, __riscv_vand_vx_u32m1(shift, 31, vl), vl);
  /* Normal (>= 2^-14): the exponent rebiased by 15 - 127, then 13 bits rounded off. */
  const vrvv_u32_ normal =
      vu_shift_rne_(__riscv_vsub_vx_u32m1(a, 112u << 23, vl), __riscv_vmv_v_x_u32m1(13, vl), vl);
  r = __riscv_vmerge_vvm_u32m1(r, normal, __riscv_vmsgeu_vx_u32m1_b32(a, 0x38800000, vl), vl);
  /* Below 2^-25 (2^-25 itself a tie to 0): zero. */
  r = __riscv_vmerge_vvm_u32m1(r, __riscv_vmv_v_x_u32m1(0, vl),
                               __riscv_vmsltu_vx_u32m1_b32(a, 0x33000000, vl), vl);
  /* At or above 65520 (halfway past 65504), infinity included: infinity. */
  r = __riscv_vmerge_vvm_u32m1(r, __riscv_vmv_v_x_u32m1(0x7c00, vl),
                               __riscv_vmsgeu_vx_u32m1_b32(a, 0x477ff000, vl), vl);
  /* NaN: quiet, the leading 10 payload bits. */
  const vrvv_u32_ nan = __riscv_vor_vx_u32m1(
      __riscv_vand_vx_u32m1(__riscv_vsrl_vx_u32m1(a, 13, vl), 0x3ff, vl), 0x7e00, vl);
  r = __riscv_vmerge_vvm_u32m1(r, nan, __riscv_vmsgtu_vx_u32m1_b32(a, 0x7f800000, vl), vl);
  return __riscv_vncvt_x_x_w_u16mf2(__riscv_vor_vv_u32m1(r, sign, vl), vl);
}
static inline void vf_store_f16(uint16_t *p, vf v) {
  __riscv_vse16_v_u16mf2(p, vf_f16_lanes_(v), VF_W);
}
static inline void vf_store_f16_n(uint16_t *p, vf v, size_t n) {
  __riscv_vse16_v_u16mf2(p, vf_f16_lanes_(v), n);
}
/* Bytes (the quantized K caches, rope_simd.h): each lane truncated toward zero to int32 (the
 * lanes hold values in [-128, 256): q8_0's rounded quotients, FP8 codes), its low byte stored
 * at p[0, VF_W); the _n form stores exactly n of them. */
/* The lanes truncated toward zero, for vl lanes. Not by VFCVT.RTZ.X.F.V: qemu 7.2's translator
 * stops on it (an assertion in decode_save_opc), and CI's riscv64 suites run under it; so the
 * conversion in the dynamic rounding mode (whatever it is, a neighbour of v), then a step of
 * one toward zero where that went past v. */
static inline vint32m1_t vf_trunc_i32_(vf v, size_t vl) {
  const vint32m1_t i = __riscv_vfcvt_x_f_v_i32m1(v, vl);
  const vfloat32m1_t back = __riscv_vfcvt_f_x_v_f32m1(i, vl);
  const vbool32_t past =
      __riscv_vmflt_vv_f32m1_b32(__riscv_vfabs_v_f32m1(v, vl), __riscv_vfabs_v_f32m1(back, vl), vl);
  const vint32m1_t sign = __riscv_vor_vx_i32m1(__riscv_vsra_vx_i32m1(i, 31, vl), 1, vl);
  return __riscv_vsub_vv_i32m1_mu(past, i, i, sign, vl);
}
static inline void vf_store_i8_n(unsigned char *p, vf v, size_t n) {
  const vint16mf2_t h = __riscv_vncvt_x_x_w_i16mf2(vf_trunc_i32_(v, n), n);
  __riscv_vse8_v_i8mf4((int8_t *)p, __riscv_vncvt_x_x_w_i8mf4(h, n), n);
}
static inline void vf_store_i8(unsigned char *p, vf v) { vf_store_i8_n(p, v, VF_W); }
/* Ordinary stores for the 16-bit non-temporal ones (see vf_stream). */
static inline void vf_stream_bf16(uint16_t *p, vf v) { vf_store_bf16(p, v); }
static inline void vf_stream_f16(uint16_t *p, vf v) { vf_store_f16(p, v); }
/* Not provided (optional, kernels/simd/README.md): VF_HAVE_STORE2_BF16 (base V has no bf16
 * conversion; ve_store2 stores twice) and VF_HAVE_VZ16 (its vz16 type is sized; the
 * sinusoid's generic per-pair stores serve). */

#endif /* POSENC_VEC_RVV_H */
