// The dispatcher's kernel-by-kernel rules (include/posenc.h, "Instruction sets and
// dispatch") on made-up CPUs: posenc_kernel_tier() is internal, so this test links the
// static library, whose hidden symbols a static link still reaches.
#include <gtest/gtest.h>
#include <posenc.h>

#include <cstdint>
#include <cstring>
#include <vector>

extern "C" {
#include "../dispatch/dispatch.h"
extern int posenc_rope_split_streams;  // kernels/rope.h
}

namespace {

posenc_cpu_flags Cpu(int amd, unsigned family, int avx512) {
  posenc_cpu_flags f{};
  f.sse41 = f.sse42 = f.avx = f.fma = f.f16c = f.avx2 = f.os_ymm = 1;
  f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = f.os_zmm = f.avx512bf16 = avx512;
  f.amd = amd;
  f.family = family;
  return f;
}

posenc_kernel Kernel(int k) { return static_cast<posenc_kernel>(k); }

// n floats in [-1, 1), a linear congruential sequence from `seed`.
std::vector<float> Uniform(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) * 0x1p-23f - 1.0f;
  }
  return v;
}

TEST(DispatchRules, Zen4TakesItsRuleKernelsFromAvx2WhenChosenAutomatically) {
  const posenc_cpu_flags zen4 = Cpu(1, 0x19, 1);
  for (posenc_isa tier : {POSENC_ISA_AVX512, POSENC_ISA_AVX512BF16}) {
    for (posenc_kernel moved : {POSENC_KERNEL_SINUSOID_F32_STREAMED, POSENC_KERNEL_LEARNED_ADD_F32,
                                POSENC_KERNEL_ROPE_F16}) {
      EXPECT_EQ(posenc_kernel_tier(moved, tier, 1, &zen4), POSENC_ISA_AVX2)
          << posenc_kernel_name(moved);
      EXPECT_EQ(posenc_kernel_tier(moved, tier, 0, &zen4), tier)
          << "a tier named by POSENC_ISA or posenc_set_isa() serves every kernel";
    }
    for (int k = 0; k < POSENC_KERNEL_COUNT; ++k)
      if (k != POSENC_KERNEL_SINUSOID_F32_STREAMED && k != POSENC_KERNEL_LEARNED_ADD_F32 &&
          k != POSENC_KERNEL_ROPE_F16) {
        EXPECT_EQ(posenc_kernel_tier(Kernel(k), tier, 1, &zen4), tier)
            << posenc_kernel_name(Kernel(k));
      }
  }
}

TEST(DispatchRules, OtherCpusKeepTheirTierForEveryKernel) {
  const posenc_cpu_flags cpus[] = {Cpu(0, 6, 1), Cpu(1, 0x1a, 1), Cpu(1, 0x19, 0), Cpu(1, 0x17, 0)};
  for (const posenc_cpu_flags& cpu : cpus)
    for (posenc_isa tier : {POSENC_ISA_AVX2, POSENC_ISA_AVX512, POSENC_ISA_AVX512BF16})
      for (int k = 0; k < POSENC_KERNEL_COUNT; ++k) {
        if (tier != POSENC_ISA_AVX2 && !cpu.avx512f) continue;
        EXPECT_EQ(posenc_kernel_tier(Kernel(k), tier, 1, &cpu), tier)
            << posenc_kernel_name(Kernel(k)) << " amd " << cpu.amd << " family " << cpu.family;
      }
}

// SVE at 128 bits is no wider than NEON: chosen automatically, every kernel is neon's; from
// 256 bits every kernel is sve's. Named (POSENC_ISA, posenc_set_isa()), sve serves them all.
TEST(DispatchRules, Sve128TakesEveryKernelFromNeonWhenChosenAutomatically) {
  for (unsigned bits : {0u, 128u, 256u, 512u, 1024u, 2048u}) {
    posenc_cpu_flags cpu{};
    cpu.neon = cpu.sve = 1;
    cpu.sve_vector_bits = bits;
    const posenc_isa want = bits <= 128 ? POSENC_ISA_NEON : POSENC_ISA_SVE;
    for (int k = 0; k < POSENC_KERNEL_COUNT; ++k) {
      EXPECT_EQ(posenc_kernel_tier(Kernel(k), POSENC_ISA_SVE, 1, &cpu), want)
          << posenc_kernel_name(Kernel(k)) << " at " << bits << " bits";
      EXPECT_EQ(posenc_kernel_tier(Kernel(k), POSENC_ISA_SVE, 0, &cpu), POSENC_ISA_SVE);
      EXPECT_EQ(posenc_kernel_tier(Kernel(k), POSENC_ISA_NEON, 1, &cpu), POSENC_ISA_NEON);
    }
  }
}

TEST(DispatchRules, Zen5AloneSplitsRopeStreams) {
  for (int avx512 : {0, 1}) {
    const posenc_cpu_flags zen5 = Cpu(1, 0x1A, avx512), zen4 = Cpu(1, 0x19, avx512),
                           intel = Cpu(0, 6, avx512);
    EXPECT_EQ(posenc_split_streams(&zen5), 1);
    EXPECT_EQ(posenc_split_streams(&zen4), 0);
    EXPECT_EQ(posenc_split_streams(&intel), 0);
  }
  posenc_active_isa();  // the first selection has set it from this CPU
  EXPECT_EQ(posenc_rope_split_streams, posenc_split_streams(posenc_cpu()));
}

// The two ways a DRAM-sized RoPE call accesses its rows (posenc_rope_split_streams), set by
// the tests below; a plan, and the rule's value restored afterwards (an ASSERT too).
class SplitStreams : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(posenc_rope_plan_create(&plan, 128, 10000.0, 1.0), POSENC_OK);
    posenc_active_isa();  // (the first selection sets the rule's value)
    saved = posenc_rope_split_streams;
    tier = posenc_isa_name(posenc_kernel_isa(POSENC_KERNEL_ROPE_F32));
  }
  void TearDown() override {
    posenc_rope_split_streams = saved;
    posenc_rope_plan_destroy(plan);
  }
  posenc_rope_plan* plan = nullptr;
  int saved = 0;
  const char* tier = "";
};

// They give the same bits: a prefetching call, 1024 tokens of 32 Q + 8 K heads x 128 in place (20
// MiB), NEOX and GPT-J, on the tier chosen automatically (the one whose rules
// ThisCpuFollowsTheRules checks; posenc_set_isa would leave the rules off for the tests after this
// one). The forms differ on avx512 (and streamed calls' prefetches on every SIMD tier: the test
// below).
TEST_F(SplitStreams, SplitAndWholeStreamsGiveTheSameBits) {
  constexpr size_t kTokens = 1024, kQ = 32, kK = 8, kDim = 128;
  const size_t nq = kTokens * kQ * kDim, nk = kTokens * kK * kDim;
  const std::vector<float> q0 = Uniform(nq, 12345), k0 = Uniform(nk, 54321);
  for (unsigned layout : {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ}) {
    std::vector<float> out[2][2];
    for (int split : {0, 1}) {
      posenc_rope_split_streams = split;
      std::vector<float> q = q0, k = k0;
      const posenc_rope_tensor tq = {q.data(), kQ, kQ * kDim, kDim},
                               tk = {k.data(), kK, kK * kDim, kDim};
      ASSERT_EQ(posenc_rope_f32(plan, kDim, kTokens, nullptr, 1000, &tq, &tk, layout), POSENC_OK);
      out[split][0] = q;
      out[split][1] = k;
    }
    for (int t = 0; t < 2; ++t)
      EXPECT_EQ(std::memcmp(out[0][t].data(), out[1][t].data(), out[0][t].size() * 4), 0)
          << tier << (t ? " k" : " q") << (layout == POSENC_ROPE_GPTJ ? " gptj" : " neox");
    EXPECT_NE(std::memcmp(out[0][0].data(), q0.data(), nq * 4), 0) << "the call rotated nothing";
  }
}

// The same for streamed out-of-place calls (destinations of 16 MiB or more): 2048 tokens of
// 40 heads x 128, f32 into f32, bf16 and f16 (20-40 MiB), NEOX, on the tier chosen
// automatically.
TEST_F(SplitStreams, SplitAndWholeStreamsGiveTheSameBitsOutOfPlace) {
  constexpr size_t kTokens = 2048, kHeads = 40, kDim = 128, kN = kTokens * kHeads * kDim;
  std::vector<float> src = Uniform(kN, 777);  // (a view's data is not const)
  const posenc_rope_view sv = {src.data(), POSENC_DTYPE_F32, kHeads, kHeads * kDim, kDim, 0};
  for (posenc_dtype type : {POSENC_DTYPE_F32, POSENC_DTYPE_BF16, POSENC_DTYPE_F16}) {
    const size_t bytes = kN * (type == POSENC_DTYPE_F32 ? 4 : 2);
    std::vector<unsigned char> out[2];
    for (int split : {0, 1}) {
      posenc_rope_split_streams = split;
      out[split].assign(bytes, 0);
      const posenc_rope_view dv = {out[split].data(), type, kHeads, kHeads * kDim, kDim, 0};
      ASSERT_EQ(posenc_rope_out(plan, kDim, 1, kTokens, nullptr, 1000, &sv, &dv, POSENC_ROPE_NEOX),
                POSENC_OK);
    }
    EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), bytes), 0) << tier << " dtype " << type;
    EXPECT_NE(out[0], std::vector<unsigned char>(bytes, 0)) << "the call wrote nothing";
  }
}

// This CPU, chosen automatically (the test runs without POSENC_ISA): each kernel is served
// by the rule's tier, or by the tier below it where that tier has no variant of its own.
TEST(DispatchRules, ThisCpuFollowsTheRules) {
  if (getenv("POSENC_ISA") && *getenv("POSENC_ISA")) GTEST_SKIP() << "POSENC_ISA is set";
  const posenc_isa active = posenc_active_isa();
  for (int k = 0; k < POSENC_KERNEL_COUNT; ++k) {
    const posenc_isa rule = posenc_kernel_tier(Kernel(k), active, 1, posenc_cpu());
    const posenc_isa served = posenc_kernel_isa(Kernel(k));
    const bool below_bf16 = rule == POSENC_ISA_AVX512BF16 && served == POSENC_ISA_AVX512;
    EXPECT_TRUE(served == rule || below_bf16) << posenc_kernel_name(Kernel(k));
  }
}

}  // namespace
