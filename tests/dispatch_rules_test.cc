// The dispatcher's kernel-by-kernel rules (include/posenc.h, "Instruction sets and
// dispatch") on made-up CPUs: posenc_kernel_tier() is internal, so this test links the
// static library, whose hidden symbols a static link still reaches.
#include <gtest/gtest.h>
#include <posenc.h>

extern "C" {
#include "../dispatch/dispatch.h"
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
