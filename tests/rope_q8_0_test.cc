// RoPE into ggml q8_0 blocks (posenc_rope_out_q8_0), on every ISA:
//  - bit for bit ggml's quantize_row_q8_0_ref (transcribed below from ggml-quants.c, with its
//    own f16 rounding) applied to posenc_rope_out's f32 result of the same ISA, for the
//    common and a partial rotary size, row by row and through slots (other rows untouched);
//  - the golden blocks of tests/data/q8_0_golden.txt (a NumPy transcription, its script
//    beside it) at position 0, where the rotation returns each element: halves, zero and
//    one-element blocks, scales below and near the f16 range;
//  - blocks with NaN or infinite values: ggml's d and q = 0 at the undefined elements;
//  - many heads of every magnitude (subnormal to 2^100, roundf's ties, zeros) in one call;
//  - every bad input returns its status and writes nothing.
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

#ifndef POSENC_Q8_0_GOLDEN_FILE
#error "POSENC_Q8_0_GOLDEN_FILE must name tests/data/q8_0_golden.txt"
#endif

namespace posenc_test {
namespace {

constexpr size_t kBlock = 32, kBlockBytes = 34;

// IEEE binary16 bits of f, to nearest, ties to even; a NaN gives 0x7e00.
uint16_t F16Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return 0x7e00u;  // NaN: ggml's (and F16C's) quiet NaN
  if (x >= 0x477ff000u) return sign | 0x7c00u;
  if (x < 0x38800000u) {  // below 2^-14: a multiple of 2^-24
    float a;
    std::memcpy(&a, &x, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));
  }
  uint32_t h = ((x >> 23) - 112u) << 10 | ((x >> 13) & 0x3ffu);
  const uint32_t rest = x & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<uint16_t>(h);
}

// ggml's quantize_row_q8_0_ref, one block: MAX(a, b) is a > b ? a : b; roundf; where the
// conversion of q to int8 is undefined (NaN, infinite, outside [-128, 127]: after a NaN or
// infinite input, or an amax so small that id overflows), 0 (posenc_rope_out_q8_0's
// documented rule).
void GgmlBlock(const float* x, uint8_t* out) {
  float amax = 0.0f;
  for (size_t j = 0; j < kBlock; ++j) {
    const float v = std::fabs(x[j]);
    amax = amax > v ? amax : v;
  }
  const float d = amax / ((1 << 7) - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t bits = F16Bits(d);
  std::memcpy(out, &bits, 2);
  for (size_t j = 0; j < kBlock; ++j) {
    const float r = std::round(x[j] * id);
    out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(r >= -128.0f && r <= 127.0f ? r : 0.0f));
  }
}

class RopeQ8Test : public EveryIsaTest {};

TEST_P(RopeQ8Test, IsGgmlsQuantizerOnRopeOutsRow) {
  std::mt19937 rng(20261205);
  std::normal_distribution<float> n(0.0f, 2.0f);
  struct Case {
    size_t R, D, H, L;
  };
  for (const Case& c : {Case{128, 128, 5, 9}, Case{64, 96, 3, 6}, Case{32, 32, 1, 40},
                        Case{128, 288, 2, 5}}) {  // 288: nine blocks, groups of 4, 4 and 1
    for (int use_slots = 0; use_slots < 2; ++use_slots) {
      const PlanPtr plan = MakePlan(c.R, 10000.0, 1.0);
      std::vector<float> src(c.L * c.H * c.D), rotated(src.size());
      for (float& v : src) v = n(rng);
      std::vector<int32_t> pos(c.L);
      for (auto& p : pos) p = static_cast<int32_t>(rng() % 100000);
      const posenc_rope_view sv = {src.data(), POSENC_DTYPE_F32, c.H, c.H * c.D, c.D, 0};
      const posenc_rope_view rv = {rotated.data(), POSENC_DTYPE_F32, c.H, c.H * c.D, c.D, 0};
      ASSERT_EQ(posenc_rope_out(plan.get(), c.D, 1, c.L, pos.data(), 0, &sv, &rv, 0), POSENC_OK);
      const size_t row = c.D / kBlock * kBlockBytes, rows = use_slots ? 3 * c.L : c.L;
      // Heads [H] of a row with 6 spare bytes between heads, as a strided cache would.
      const size_t head_stride = row + 6, token_stride = c.H * head_stride;
      std::vector<uint8_t> dst(rows * token_stride, 0xEE);
      std::vector<int32_t> slot(c.L);
      for (size_t t = 0; t < c.L; ++t) slot[t] = static_cast<int32_t>(3 * t + (t % 3));
      if (use_slots) slot[1] = -1;
      const posenc_slots slots = {slot.data(), 0, rows};
      const posenc_q8_0_view dv = {dst.data(), c.H, token_stride, head_stride};
      ASSERT_EQ(posenc_rope_out_q8_0(plan.get(), c.D, c.L, pos.data(), 0, &sv, &dv,
                                     use_slots ? &slots : nullptr, 0),
                POSENC_OK);
      std::vector<uint8_t> want(rows * token_stride, 0xEE);
      for (size_t t = 0; t < c.L; ++t) {
        const int64_t r = use_slots ? slot[t] : static_cast<int64_t>(t);
        if (r < 0) continue;
        for (size_t h = 0; h < c.H; ++h)
          for (size_t b = 0; b < c.D / kBlock; ++b)
            GgmlBlock(&rotated[(t * c.H + h) * c.D + b * kBlock],
                      &want[r * token_stride + h * head_stride + b * kBlockBytes]);
      }
      for (size_t i = 0; i < dst.size(); ++i)
        ASSERT_EQ(dst[i], want[i])
            << "byte " << i << " R=" << c.R << " D=" << c.D << (use_slots ? " slots" : " rows");
    }
  }
}

TEST_P(RopeQ8Test, GoldenBlocksAtPositionZero) {
  std::ifstream in(POSENC_Q8_0_GOLDEN_FILE);
  ASSERT_TRUE(in.good()) << POSENC_Q8_0_GOLDEN_FILE;
  const PlanPtr plan = MakePlan(64, 10000.0, 1.0);
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    const size_t bar = line.find(" ; ");
    ASSERT_NE(bar, std::string::npos);
    std::istringstream floats(line.substr(0, bar));
    std::vector<float> x;
    std::string tok;
    while (floats >> tok) x.push_back(std::strtof(tok.c_str(), nullptr));
    ASSERT_EQ(x.size(), 64u);
    const std::string hex = line.substr(bar + 3);
    ASSERT_EQ(hex.size(), 2 * 2 * kBlockBytes);
    std::vector<uint8_t> want(2 * kBlockBytes), got(2 * kBlockBytes, 0);
    for (size_t i = 0; i < want.size(); ++i)
      want[i] = static_cast<uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    const posenc_rope_view sv = {x.data(), POSENC_DTYPE_F32, 1, 64, 64, 0};
    const posenc_q8_0_view dv = {got.data(), 1, got.size(), got.size()};
    ASSERT_EQ(posenc_rope_out_q8_0(plan.get(), 64, 1, nullptr, 0, &sv, &dv, nullptr, 0), POSENC_OK);
    EXPECT_EQ(got, want) << "golden row " << cases;
    ++cases;
  }
  EXPECT_EQ(cases, 8);
}

TEST_P(RopeQ8Test, ManyHeadsOfEveryMagnitude) {
  // The SIMD quantizer finds the scales of several heads' blocks before it writes any (four
  // blocks of a head at a time, eight such groups at a time, across heads) and writes a chunk
  // with a failed check (an id that overflows, a NaN) in ggml's sequential code: 11 and 4
  // heads (D = 128: groups of four; D = 288: groups of 4, 4 and 1, a chunk ending inside a
  // head), one magnitude per head from subnormal to 2^100, exact halves of the scale
  // (roundf's ties), zero heads, and a NaN in every head (ggml keeps it in amax only as its
  // block's last element: the chunk's blocks in ggml's code).
  const PlanPtr plan = MakePlan(32, 10000.0, 1.0);
  std::mt19937 rng(61);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int scales[] = {-149, -140, -133, -127, -126, -100, -20, 0, 7, 60, 100};
  for (const size_t D : {size_t{128}, size_t{288}}) {
    const size_t H = D == 128 ? 11 : 4, L = 3, blocks = D / kBlock;
    for (int variant = 0; variant < 3; ++variant) {
      std::vector<float> src(L * H * D);
      for (size_t t = 0; t < L; ++t)
        for (size_t h = 0; h < H; ++h) {
          const float scale = std::ldexp(1.0f, scales[(h + t + variant) % 11]);
          for (size_t j = 0; j < D; ++j) {
            float v = u(rng) * scale;
            if (variant == 1) v = static_cast<float>(static_cast<int>(rng() % 255) - 127) * 0.5f;
            if (variant == 1 && h % 3 == 0) v = 0.0f;
            src[(t * H + h) * D + j] = v;
          }
        }
      if (variant == 2)  // a NaN in every head, at positions all over its blocks
        for (size_t r = 0; r < L * H; ++r) src[r * D + (r * 13 + r / H) % D] = NAN;
      std::vector<float> rotated(src.size());
      std::vector<int32_t> pos(L);
      for (auto& p : pos) p = static_cast<int32_t>(rng() % 5000);
      const posenc_rope_view sv = {src.data(), POSENC_DTYPE_F32, H, H * D, D, 0};
      const posenc_rope_view rv = {rotated.data(), POSENC_DTYPE_F32, H, H * D, D, 0};
      ASSERT_EQ(posenc_rope_out(plan.get(), D, 1, L, pos.data(), 0, &sv, &rv, 0), POSENC_OK);
      const size_t row = blocks * kBlockBytes;
      std::vector<uint8_t> got(L * H * row, 0xEE), want(L * H * row, 0xEE);
      const posenc_q8_0_view dv = {got.data(), H, H * row, row};
      ASSERT_EQ(posenc_rope_out_q8_0(plan.get(), D, L, pos.data(), 0, &sv, &dv, nullptr, 0),
                POSENC_OK);
      for (size_t b = 0; b < L * H * blocks; ++b)
        GgmlBlock(&rotated[b * kBlock], &want[b * kBlockBytes]);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << "byte " << i << " (block " << i / kBlockBytes << ") D=" << D
                                   << " variant " << variant;
    }
  }
}

TEST_P(RopeQ8Test, NonFiniteInputsGiveGgmlsScaleAndZeros) {
  // D = 288: nine blocks, the quantizer's groups of 4, 4 and 1; the block with the NaN or
  // infinity and its finite neighbours (those of its chunk are written by ggml's sequential
  // code) are each what ggml writes.
  const size_t D = 288, blocks = D / kBlock;
  const PlanPtr plan = MakePlan(32, 10000.0, 1.0);
  for (int kind = 0; kind < 4; ++kind) {
    for (size_t block : {size_t{0}, size_t{3}, size_t{8}}) {
      std::vector<float> x(D);
      for (size_t j = 0; j < D; ++j)
        x[j] =
            0.25f * static_cast<float>(j % kBlock) - 3.0f + 0.5f * static_cast<float>(j / kBlock);
      const size_t at = block * kBlock + (kind % 2 ? 31 : 7);  // ggml keeps a NaN only last
      x[at] = kind < 2 ? NAN : INFINITY;
      std::vector<uint8_t> got(blocks * kBlockBytes, 0), want(blocks * kBlockBytes, 0);
      // The rotation (R = 32) at position 0 returns finite elements and spreads a NaN or
      // infinity to its pair's other element (v * 0); the elements from 32 on are copied:
      // ggml's quantizer on what posenc_rope_out gives.
      std::vector<float> rotated(D);
      const posenc_rope_view sv = {x.data(), POSENC_DTYPE_F32, 1, D, D, 0};
      const posenc_rope_view rv = {rotated.data(), POSENC_DTYPE_F32, 1, D, D, 0};
      ASSERT_EQ(posenc_rope_out(plan.get(), D, 1, 1, nullptr, 0, &sv, &rv, 0), POSENC_OK);
      for (size_t b = 0; b < blocks; ++b) GgmlBlock(&rotated[b * kBlock], &want[b * kBlockBytes]);
      const posenc_q8_0_view dv = {got.data(), 1, blocks * kBlockBytes, blocks * kBlockBytes};
      ASSERT_EQ(posenc_rope_out_q8_0(plan.get(), D, 1, nullptr, 0, &sv, &dv, nullptr, 0),
                POSENC_OK);
      EXPECT_EQ(got, want) << "kind " << kind << ", block " << block;
    }
  }
}

TEST_P(RopeQ8Test, BadInputReturnsItsStatusAndWritesNothing) {
  const size_t D = 64, H = 2, L = 3, row = D / kBlock * kBlockBytes;
  const PlanPtr plan = MakePlan(D, 10000.0, 1.0), big = MakePlan(1024, 10000.0, 1.0);
  std::vector<float> src(L * H * 1024, 1.0f);
  std::vector<uint8_t> dst(L * H * row * 40 + 2, 0x5A);
  const posenc_rope_view sv = {src.data(), POSENC_DTYPE_F32, H, H * D, D, 0};
  const posenc_rope_view bf = {src.data(), POSENC_DTYPE_BF16, H, H * D, D, 0};
  const posenc_q8_0_view dv = {dst.data(), H, H * row, row};
  const posenc_q8_0_view odd = {dst.data() + 1, H, H * row, row};
  const posenc_q8_0_view odd_stride = {dst.data(), H, H * row + 1, row};
  const posenc_q8_0_view overlap = {dst.data(), H, row, row / 2};
  const posenc_q8_0_view one_head = {dst.data(), 1, row, row};
  const posenc_q8_0_view on_src = {src.data(), H, H * row, row};
  const int32_t dup[3] = {0, 2, 0};
  const posenc_slots dup_slots = {dup, 0, 4};
  struct Bad {
    const char* what;
    const posenc_rope_plan* plan;
    size_t dim;
    const posenc_rope_view* src;
    const posenc_q8_0_view* dst;
    const posenc_slots* slots;
  };
  const Bad bad[] = {{"NULL dst", plan.get(), D, &sv, nullptr, nullptr},
                     {"bf16 source", plan.get(), D, &bf, &dv, nullptr},
                     {"head_dim 80", plan.get(), 80, &sv, &dv, nullptr},
                     {"rotary_dim 1024", big.get(), 1024, &sv, &dv, nullptr},
                     {"odd data", plan.get(), D, &sv, &odd, nullptr},
                     {"odd stride", plan.get(), D, &sv, &odd_stride, nullptr},
                     {"rows overlap", plan.get(), D, &sv, &overlap, nullptr},
                     {"head counts differ", plan.get(), D, &sv, &one_head, nullptr},
                     {"dst on src", plan.get(), D, &sv, &on_src, nullptr},
                     {"a slot twice", plan.get(), D, &sv, &dv, &dup_slots}};
  for (const Bad& b : bad) {
    const std::vector<uint8_t> d0 = dst;
    const std::vector<float> s0 = src;
    EXPECT_EQ(posenc_rope_out_q8_0(b.plan, b.dim, L, nullptr, 0, b.src, b.dst, b.slots, 0),
              POSENC_ERR_INVALID_ARGUMENT)
        << b.what;
    EXPECT_TRUE(dst == d0 && std::memcmp(src.data(), s0.data(), src.size() * 4) == 0)
        << b.what << ": written";
  }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeQ8Test);

}  // namespace
}  // namespace posenc_test
