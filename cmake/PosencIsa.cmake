# Per-ISA compile flags, each gated by a compile check: a variant is built only when the
# compiler accepts its flags and intrinsics. Flags are set per source file, never globally.
include(CheckCSourceCompiles)

set(POSENC_FLAGS_SSE4 -msse4.1 -msse4.2)
set(POSENC_FLAGS_AVX2 -mavx2 -mfma -mf16c)
set(POSENC_FLAGS_AVX512 -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma -mf16c)
set(POSENC_FLAGS_AVX512BF16 ${POSENC_FLAGS_AVX512} -mavx512bf16)
set(POSENC_FLAGS_NEON "")
# Base SVE (ACLE <arm_sve.h>; FCVT between f16 and f32 included), no SVE2 or BF16.
set(POSENC_FLAGS_SVE -march=armv8.2-a+sve)
# The V extension 1.0, base V only (the `__riscv_` intrinsics of clang 16; gcc 12 has none).
set(POSENC_FLAGS_RVV -march=rv64gcv)

set(POSENC_PROBE_SSE4 "#include <smmintrin.h>
int main(void){__m128d x=_mm_round_pd(_mm_set1_pd(1.5),0);return (int)_mm_cvtsd_f64(x);}")
set(POSENC_PROBE_AVX2 "#include <immintrin.h>
int main(void){__m256 x=_mm256_fmadd_ps(_mm256_set1_ps(1),_mm256_set1_ps(2),_mm256_set1_ps(3));
__m256i m=_mm256_cmpgt_epi32(_mm256_set1_epi32(1),_mm256_setzero_si256());
return (int)_mm256_cvtss_f32(_mm256_maskload_ps((float*)&x,m));}")
set(POSENC_PROBE_AVX512 "#include <immintrin.h>
int main(void){__m512 x=_mm512_insertf32x8(_mm512_set1_ps(1),_mm256_set1_ps(2),1);
__m512i y=_mm512_add_epi16(_mm512_set1_epi16(1),_mm512_set1_epi16(2));
__m256 z=_mm256_mask_mov_ps(_mm256_set1_ps(0),(__mmask8)1,_mm256_set1_ps(1));
return (int)_mm512_cvtss_f32(x)+_mm512_cvtsi512_si32(y)+(int)_mm256_cvtss_f32(z);}")
set(POSENC_PROBE_AVX512BF16 "#include <immintrin.h>
int main(void){__m256bh h=_mm512_cvtneps_pbh(_mm512_set1_ps(1));
__mmask16 m=_mm512_fpclass_ps_mask(_mm512_set1_ps(1),0x20);
return (int)m+_mm256_extract_epi16((__m256i)h,0);}")
set(POSENC_PROBE_NEON "#include <arm_neon.h>
int main(void){float32x4_t x=vfmaq_f32(vdupq_n_f32(1),vdupq_n_f32(2),vdupq_n_f32(3));
return (int)vgetq_lane_f32(x,0);}")
set(POSENC_PROBE_SVE "#include <arm_sve.h>
#include <sleef.h>
int main(void){uint16_t h[4]={0};svbool_t p=svwhilelt_b32_u64(0,3);
svfloat32_t x=svcvt_f32_f16_x(p,svreinterpret_f16_u32(svld1uh_u32(p,h)));
__typeof__(&Sleef_sincosfx_u10sve) f=0;(void)f;
return (int)svcntw()+(int)svaddv_f32(p,x);}")
set(POSENC_PROBE_RVV "#include <riscv_vector.h>
#include <sleef.h>
int main(void){float a[4]={0};size_t n=__riscv_vsetvlmax_e32m1();
vfloat32m1_t x=__riscv_vle32_v_f32m1_tu(__riscv_vfmv_v_f_f32m1(0,n),a,3);
vfloat64m1_t d=__riscv_vfwcvt_f_f_v_f64m1(__riscv_vlmul_trunc_v_f32m1_f32mf2(x),n/2);
__typeof__(&Sleef_sincosfx_u10rvvm1) f=0;(void)f;
return (int)n+(int)__riscv_vfmv_f_s_f64m1_f64(d);}")

# posenc_check_isa(<ISA>) sets POSENC_HAVE_<ISA> when the flags and intrinsics compile.
function(posenc_check_isa isa)
  string(REPLACE ";" " " flags "${POSENC_FLAGS_${isa}}")
  set(CMAKE_REQUIRED_FLAGS "${flags}")
  set(CMAKE_REQUIRED_INCLUDES ${SLEEF_INCLUDE_DIR}) # a probe may check sleef.h's declarations
  check_c_source_compiles("${POSENC_PROBE_${isa}}" POSENC_HAVE_${isa})
  set(POSENC_HAVE_${isa} "${POSENC_HAVE_${isa}}" PARENT_SCOPE)
endfunction()

# posenc_read_variants(): reads the one list of tiers and variants, kernels/variants.h
# (POSENC_ISAS: X(ISA, name, BELOW, ARCH); POSENC_VARIANTS: X(kernel, ISA, function)), and
# sets in the caller's scope:
#   POSENC_LIST_ISAS          every tier, upper case, in the list's order (best first)
#   POSENC_ISA_NAME_<ISA>     its lower-case name (posenc_isa_name, kernels/<op>_<name>.c)
#   POSENC_ISA_BELOW_<ISA>    the tier below it
#   POSENC_ISA_ARCH_<ISA>     X86_64, AARCH64, RISCV64 or ANY
#   POSENC_ISA_OPS_<ISA>      the operations it has variants of (rope, sinusoid, ...: the
#                             part of a kernel's name before the first '_')
#   POSENC_ISA_KERNELS_<ISA>  the kernels it has variants of (rope_f32, rope_bf16, ...)
function(posenc_read_variants)
  # Entries are the lines that start with X( (a line's continuation backslash is dropped
  # first: in a CMake list it would escape the separator).
  file(READ ${PROJECT_SOURCE_DIR}/kernels/variants.h text)
  string(REPLACE "\\\n" "\n" text "${text}")
  string(REGEX MATCHALL "\n *X\\([^)\n]*\\)" lines "${text}")
  set(isas)
  foreach(line IN LISTS lines)
    if(line MATCHES "^\n *X\\(([A-Z0-9]+), ([a-z0-9]+), ([A-Z0-9]+), ([A-Z0-9_]+)\\)")
      list(APPEND isas ${CMAKE_MATCH_1})
      set(POSENC_ISA_NAME_${CMAKE_MATCH_1} ${CMAKE_MATCH_2} PARENT_SCOPE)
      set(POSENC_ISA_BELOW_${CMAKE_MATCH_1} ${CMAKE_MATCH_3} PARENT_SCOPE)
      set(POSENC_ISA_ARCH_${CMAKE_MATCH_1} ${CMAKE_MATCH_4} PARENT_SCOPE)
    elseif(line MATCHES "^\n *X\\((([a-z0-9]+)_[a-z0-9_]*), ([A-Z0-9]+), posenc_[a-z0-9_]+\\)")
      list(APPEND kernels_${CMAKE_MATCH_3} ${CMAKE_MATCH_1})
      list(APPEND ops_${CMAKE_MATCH_3} ${CMAKE_MATCH_2})
    endif()
  endforeach()
  if(NOT isas)
    message(FATAL_ERROR "posenc: no tiers read from kernels/variants.h (POSENC_ISAS)")
  endif()
  foreach(isa IN LISTS isas)
    if(ops_${isa})
      list(REMOVE_DUPLICATES ops_${isa})
    endif()
    set(POSENC_ISA_OPS_${isa} ${ops_${isa}} PARENT_SCOPE)
    set(POSENC_ISA_KERNELS_${isa} ${kernels_${isa}} PARENT_SCOPE)
  endforeach()
  set(POSENC_LIST_ISAS ${isas} PARENT_SCOPE)
endfunction()

# posenc_isa_names(<out> [<partial-out>]): every tier's lower-case name, in the list's
# order; <partial-out>: those of the tiers with variants of only some kernels (the tier
# below serves the others).
function(posenc_isa_names out)
  posenc_read_variants()
  set(names)
  set(partial)
  list(LENGTH POSENC_ISA_KERNELS_SCALAR all)
  foreach(isa IN LISTS POSENC_LIST_ISAS)
    list(APPEND names ${POSENC_ISA_NAME_${isa}})
    list(LENGTH POSENC_ISA_KERNELS_${isa} n)
    if(n LESS all)
      list(APPEND partial ${POSENC_ISA_NAME_${isa}})
    endif()
  endforeach()
  set(${out} ${names} PARENT_SCOPE)
  if(ARGC GREATER 1)
    set(${ARGV1} ${partial} PARENT_SCOPE)
  endif()
endfunction()
