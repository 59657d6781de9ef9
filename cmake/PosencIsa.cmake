# Per-ISA compile flags, each gated by a compile check: a variant is built only when the
# compiler accepts its flags and intrinsics. Flags are set per source file, never globally.
include(CheckCSourceCompiles)

set(POSENC_FLAGS_SSE4 -msse4.1 -msse4.2)
set(POSENC_FLAGS_AVX2 -mavx2 -mfma -mf16c)
set(POSENC_FLAGS_AVX512 -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma -mf16c)
set(POSENC_FLAGS_AVX512BF16 ${POSENC_FLAGS_AVX512} -mavx512bf16)
set(POSENC_FLAGS_NEON "")

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

# posenc_check_isa(<ISA>) sets POSENC_HAVE_<ISA> when the flags and intrinsics compile.
function(posenc_check_isa isa)
  string(REPLACE ";" " " flags "${POSENC_FLAGS_${isa}}")
  set(CMAKE_REQUIRED_FLAGS "${flags}")
  check_c_source_compiles("${POSENC_PROBE_${isa}}" POSENC_HAVE_${isa})
  set(POSENC_HAVE_${isa} "${POSENC_HAVE_${isa}}" PARENT_SCOPE)
endfunction()

# posenc_isa_names(<out>): every ISA name in the order of include/posenc.h's posenc_isa enum
# (POSENC_ISA_<NAME> = <n>, lower-cased as posenc_isa_name() spells it), the one ISA list.
function(posenc_isa_names out)
  file(STRINGS ${PROJECT_SOURCE_DIR}/include/posenc.h lines
       REGEX "^ *POSENC_ISA_[A-Z0-9]+ = [0-9]+,?$")
  set(names)
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^ *POSENC_ISA_([A-Z0-9]+) = .*" "\\1" name "${line}")
    if(NOT name STREQUAL "COUNT")
      string(TOLOWER ${name} name)
      list(APPEND names ${name})
    endif()
  endforeach()
  if(NOT names)
    message(FATAL_ERROR "posenc: no POSENC_ISA_<NAME> = <n> entries in include/posenc.h")
  endif()
  set(${out} ${names} PARENT_SCOPE)
endfunction()
