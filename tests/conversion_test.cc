// Float to bf16 / f16 rounding on every ISA (tier avx512bf16 included), against the
// reference conversions of kernels/half.h (themselves checked against an independent
// double reference, every 16-bit value, in rope_half_test.cc, which also loads and stores
// every 16-bit value through every ISA).
//
// The path: posenc_rope_out from f32 rows into bf16 / f16 rows at position 0 with attention
// factor 1, where cos = 1 and sin = 0, so each rotated first member u of a pair whose second
// member is 0 comes out as u itself, rounded once by the ISA's store (full vectors and, with
// 7 pairs per head, the masked tail). The inputs: every rounding case class of both types:
//  - every upper half h (sign, exponent, 7 mantissa bits: every bf16 value) with the lower
//    halves 0, 1, 0x7fff, 0x8000 (the tie), 0x8001 and 0xffff: exact, just above, just below
//    and at halfway, with an even and an odd h; subnormal floats (VCVTNEPS2BF16 would flush
//    them: the avx512bf16 tier must not), infinities, signalling and quiet NaNs, the carry
//    into the exponent and to infinity;
//  - every finite f16 value x, the midpoint to the next one (exact in float) and the floats
//    on either side of it, both signs: ties to even, f16 subnormals, overflow at 65520.
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../kernels/half.h"
#include "test_support.h"

namespace posenc_test {
namespace {

std::vector<float> RoundingCases() {
  std::vector<float> v;
  for (uint32_t h = 0; h < 0x10000; ++h)
    for (uint32_t low : {0x0u, 0x1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      v.push_back(posenc_bits_float(h << 16 | low));
  for (uint16_t k = 0; k < 0x7c00; ++k) {
    const float x = posenc_f16_to_f32(k), next = posenc_f16_to_f32(static_cast<uint16_t>(k + 1));
    const float mid = x + (next - x) / 2;  // exact: 12 significant bits
    for (float f : {x, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      v.push_back(f);
      v.push_back(-f);
    }
  }
  return v;
}

using ConversionTest = EveryIsaTest;

// Rotates `values` (u members; v members 0) into `dtype` rows and checks every u.
void CheckRounding(const std::vector<float>& values, posenc_dtype dtype, size_t pairs,
                   unsigned flags) {
  const size_t head_dim = 2 * pairs;
  const size_t heads = (values.size() + pairs - 1) / pairs;
  std::vector<float> src(heads * head_dim, 0.0f);
  const bool gptj = flags & POSENC_ROPE_GPTJ;
  const auto u_index = [&](size_t k) {
    const size_t h = k / pairs, i = k % pairs;
    return h * head_dim + (gptj ? 2 * i : i);
  };
  for (size_t k = 0; k < values.size(); ++k) src[u_index(k)] = values[k];
  std::vector<uint16_t> dst(src.size(), 0x5555);
  const PlanPtr plan = MakePlan(head_dim, 10000.0, 1.0);
  ASSERT_NE(plan, nullptr);
  const posenc_rope_view s = {src.data(), POSENC_DTYPE_F32, heads, heads * head_dim, head_dim, 0};
  const posenc_rope_view d = {dst.data(), dtype, heads, heads * head_dim, head_dim, 0};
  ASSERT_EQ(posenc_rope_out(plan.get(), head_dim, 1, 1, nullptr, 0, &s, &d, flags), POSENC_OK);
  size_t failures = 0;
  for (size_t k = 0; k < values.size(); ++k) {
    const float x = values[k];
    const uint16_t got = dst[u_index(k)];
    const uint16_t want = dtype == POSENC_DTYPE_BF16 ? posenc_f32_to_bf16(x) : posenc_f32_to_f16(x);
    const float back =
        dtype == POSENC_DTYPE_BF16 ? posenc_bf16_to_f32(got) : posenc_f16_to_f32(got);
    const bool ok = std::isnan(x) ? std::isnan(back) : got == want;
    if (!ok && failures++ < 5)
      ADD_FAILURE() << (dtype == POSENC_DTYPE_BF16 ? "bf16" : "f16") << " pairs " << pairs
                    << " flags " << flags << ": float 0x" << std::hex << posenc_float_bits(x)
                    << " -> 0x" << got << ", want 0x" << want;
  }
  EXPECT_EQ(failures, 0u);
}

TEST_P(ConversionTest, RoundsEveryCaseClassLikeTheReference) {
  const std::vector<float> values = RoundingCases();
  for (posenc_dtype dtype : {POSENC_DTYPE_BF16, POSENC_DTYPE_F16})
    for (size_t pairs : {64, 7})  // whole vectors on every ISA; masked or partial tails
      for (unsigned flags : {0u, static_cast<unsigned>(POSENC_ROPE_GPTJ)})
        CheckRounding(values, dtype, pairs, flags);
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(ConversionTest);

}  // namespace
}  // namespace posenc_test
