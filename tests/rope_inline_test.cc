// posenc_inline.h: posenc_rope_apply_token_f32 against posenc_rope_apply, on every ISA, in its
// two builds: with fused multiply-adds (rope_inline_fma.c: the inline loop; skipped by name
// on an x86 CPU without FMA) and this file's baseline flags (on x86 without FMA: the call).
//  - results: bitwise posenc_rope_apply's on the tiers with fused multiply-adds, and the
//    baseline build's on every tier (NEOX and GPTJ, INVERSE, rotary
//    dims 128 / 64 of 96 / 2 of 3, 1 and 5 heads, padded head strides, three positions, the
//    no-op flags),
//    elements past the rotary dim and the padding untouched; the inline loop on SSE4 and the
//    scalar tier (unfused, or in double) within 1e-6 of it;
//  - the calls the loop does not take (deterministic factors, no heads, overlapping heads,
//    a factor row inside the heads, every invalid argument): posenc_rope_apply's status and
//    result, nothing written on error.
#include <posenc_inline.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "rope_inline_wrappers.h"
#include "test_support.h"

namespace posenc_test {
namespace {

using ApplyFn = std::function<posenc_status(const posenc_rope_factors*, size_t, float*, size_t,
                                            size_t, size_t, unsigned)>;

struct Form {
  std::string name;
  ApplyFn apply;
  bool inline_loop;  // the build has fused multiply-adds: valid calls take the inline loop
};

bool CpuHasFma() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("fma");
#else
  return true;
#endif
}

std::vector<Form> Forms() {
  std::vector<Form> forms;
  forms.push_back({"baseline build", posenc_rope_apply_token_f32, POSENC_INLINE_APPLY_FMA != 0});
  if (CpuHasFma())
    forms.push_back(
        {"fma build", posenc_test_inline_apply_fma, posenc_test_inline_has_fma_loop() != 0});
  return forms;
}

// The reference: posenc_rope_apply on the same heads.
posenc_status Library(const posenc_rope_factors* f, size_t row, float* x, size_t n_heads,
                      size_t head_stride, size_t head_dim, unsigned flags) {
  const posenc_rope_view v = {x, POSENC_DTYPE_F32, n_heads, n_heads * head_stride, head_stride, 0};
  return posenc_rope_apply(f, row, 0, head_dim, 1, 1, &v, &v, flags);
}

struct Factors {
  AlignedFloats storage;
  posenc_rope_factors f = {};
  Factors(size_t rotary_dim, unsigned flags) : storage(1) {
    const PlanPtr plan = MakePlan(rotary_dim, 10000.0, 1.0);
    const int32_t positions[3] = {0, 1234, 1 << 30};
    const size_t bytes = posenc_rope_factors_bytes(rotary_dim, 3, flags);
    storage = AlignedFloats(bytes / sizeof(float));
    EXPECT_EQ(
        posenc_rope_factors_compute(plan.get(), 3, positions, 0, flags, storage.data(), bytes, &f),
        POSENC_OK)
        << posenc_last_error();
  }
};

class RopeInlineTest : public EveryIsaTest {};

TEST_P(RopeInlineTest, EqualsPosencRopeApply) {
  struct Shape {
    size_t rotary_dim, head_dim, heads, stride;
  };
  const Shape shapes[] = {{128, 128, 5, 128}, {128, 128, 1, 128}, {64, 96, 5, 101}, {2, 3, 5, 3}};
  // The tiers without fused multiply-adds round each product (SSE4) or rotate in double
  // (scalar): within a few float ulps of the terms (inputs in [-2, 2]).
  const bool unfused = isa() == POSENC_ISA_SCALAR || isa() == POSENC_ISA_SSE4;
  for (const Form& form : Forms())
    for (const Shape& s : shapes)
      for (unsigned layout : {0u, unsigned{POSENC_ROPE_GPTJ}}) {
        const Factors made(s.rotary_dim, layout);
        for (unsigned extra : {0u, unsigned{POSENC_ROPE_INVERSE},
                               unsigned{POSENC_ROPE_F32_ANGLES | POSENC_ROPE_MROPE_INTERLEAVED |
                                        POSENC_ROPE_POSITIONS_INT64}})
          for (size_t row = 0; row < 3; ++row) {
            const unsigned flags = layout | extra;
            const size_t n = (s.heads - 1) * s.stride + s.head_dim + 5;
            const std::vector<float> in = RandomFloats(n, 7 + uint32_t(row), -2.0f, 2.0f);
            AlignedFloats want(n), got(n);
            std::memcpy(want.data(), in.data(), n * sizeof(float));
            std::memcpy(got.data(), in.data(), n * sizeof(float));
            const std::string what = form.name + " R=" + std::to_string(s.rotary_dim) +
                                     " D=" + std::to_string(s.head_dim) +
                                     " flags=" + std::to_string(flags) +
                                     " row=" + std::to_string(row);
            ASSERT_EQ(Library(&made.f, row, want.data(), s.heads, s.stride, s.head_dim, flags),
                      POSENC_OK)
                << what << ": " << posenc_last_error();
            ASSERT_EQ(form.apply(&made.f, row, got.data(), s.heads, s.stride, s.head_dim, flags),
                      POSENC_OK)
                << what;
            if (!unfused || !form.inline_loop) {
              EXPECT_EQ(FirstBitwiseDifference(got, want), -1) << what;
              continue;
            }
            for (size_t i = 0; i < n; ++i) {
              EXPECT_NEAR(got.data()[i], want.data()[i], 1e-6) << what << " element " << i;
              const size_t off = i % s.stride;
              if (i >= (s.heads - 1) * s.stride + s.head_dim || off >= s.rotary_dim) {
                EXPECT_EQ(std::memcmp(&got.data()[i], &in[i], sizeof(float)), 0)
                    << what << ": element " << i << " written";
              }
            }
          }
      }
}

// Each call the inline loop does not take gives posenc_rope_apply's status and result.
TEST_P(RopeInlineTest, OtherCallsArePosencRopeApplys) {
  const size_t R = 64, D = 64, H = 3;
  const Factors neox(R, 0), det(R, POSENC_ROPE_DETERMINISTIC);
  struct Call {
    const char* what;
    const posenc_rope_factors* f;
    size_t row, heads, stride, head_dim;
    unsigned flags;
    bool factor_row_in_heads;
  };
  posenc_rope_factors odd = neox.f, no_data = neox.f, wrong_floats = neox.f, bad_flags = neox.f;
  odd.rotary_dim = 63;
  no_data.data = nullptr;
  wrong_floats.row_floats += 1;
  bad_flags.flags = 1u << 9;
  const Call calls[] = {
      {"deterministic factors", &det.f, 1, H, D, D, POSENC_ROPE_DETERMINISTIC, false},
      {"no heads", &neox.f, 1, 0, D, D, 0, false},
      {"overlapping heads", &neox.f, 1, H, D / 2, D, 0, false},
      {"head_dim below the rotary dim", &neox.f, 1, H, D, 32, 0, false},
      {"row past n_rows", &neox.f, 3, H, D, D, 0, false},
      {"NULL factors", nullptr, 0, H, D, D, 0, false},
      {"NULL factor data", &no_data, 0, H, D, D, 0, false},
      {"odd rotary_dim", &odd, 0, H, D, D, 0, false},
      {"row_floats off", &wrong_floats, 0, H, D, D, 0, false},
      {"unknown factor flags", &bad_flags, 0, H, D, D, 0, false},
      {"unknown flag", &neox.f, 0, H, D, D, 1u << 20, false},
      {"layout other than the factors'", &neox.f, 0, H, D, D, POSENC_ROPE_GPTJ, false},
      {"deterministic bit the factors lack", &neox.f, 0, H, D, D, POSENC_ROPE_DETERMINISTIC, false},
      {"factor row inside the heads", nullptr, 0, H, D, D, 0, true},
  };
  for (const Form& form : Forms())
    for (const Call& c : calls) {
      const size_t n = H * D + 2 * R + 8;
      const std::vector<float> in = RandomFloats(n, 3, -1.0f, 1.0f);
      AlignedFloats want(n), got(n);
      std::memcpy(want.data(), in.data(), n * sizeof(float));
      std::memcpy(got.data(), in.data(), n * sizeof(float));
      posenc_rope_factors inside_w = neox.f, inside_g = neox.f;
      const posenc_rope_factors* fw = c.f;
      const posenc_rope_factors* fg = c.f;
      if (c.factor_row_in_heads) {  // the factor row copied into the buffer's second head
        std::memcpy(want.data() + D, neox.f.data, R * sizeof(float));
        std::memcpy(got.data() + D, neox.f.data, R * sizeof(float));
        inside_w.data = want.data() + D, inside_w.n_rows = 1;
        inside_g.data = got.data() + D, inside_g.n_rows = 1;
        fw = &inside_w, fg = &inside_g;
      }
      const AlignedFloats before = want;
      const posenc_status expected =
          Library(fw, c.row, want.data(), c.heads, c.stride, c.head_dim, c.flags);
      const posenc_status status =
          form.apply(fg, c.row, got.data(), c.heads, c.stride, c.head_dim, c.flags);
      const std::string what = form.name + ": " + c.what;
      EXPECT_EQ(status, expected) << what;
      EXPECT_EQ(FirstBitwiseDifference(got, want), -1) << what;
      if (expected != POSENC_OK) {
        EXPECT_EQ(FirstBitwiseDifference(got, before), -1) << what;
      }
    }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeInlineTest);

}  // namespace
}  // namespace posenc_test
