// Version, status strings, ISA names and the ISA query/selection API.
#include <posenc.h>

#include <cctype>
#include <cstring>
#include <string>

#include "raw_isa.h"
#include "test_support.h"

namespace posenc_test {
namespace {

TEST(Version, LinkedLibraryMatchesHeader) {
  EXPECT_STREQ(posenc_version(), POSENC_VERSION_STRING);
  const std::string expected = std::to_string(POSENC_VERSION_MAJOR) + "." +
                               std::to_string(POSENC_VERSION_MINOR) + "." +
                               std::to_string(POSENC_VERSION_PATCH);
  EXPECT_EQ(expected, POSENC_VERSION_STRING);
  EXPECT_EQ(POSENC_VERSION_NUMBER,
            POSENC_VERSION_MAJOR * 10000 + POSENC_VERSION_MINOR * 100 + POSENC_VERSION_PATCH);
}

TEST(StatusString, DescribesEveryStatus) {
  EXPECT_STREQ(posenc_status_string(POSENC_OK), "ok");
  EXPECT_STREQ(posenc_status_string(POSENC_ERR_INVALID_ARGUMENT), "invalid argument");
  EXPECT_STREQ(posenc_status_string(POSENC_ERR_UNSUPPORTED), "unsupported");
  EXPECT_STREQ(posenc_status_string(POSENC_ERR_OUT_OF_MEMORY), "out of memory");
}

TEST(StatusString, UnknownValue) {
  EXPECT_STREQ(posenc_status_string(static_cast<posenc_status>(4)), "unknown status");
  EXPECT_STREQ(posenc_status_string(static_cast<posenc_status>(-1)), "unknown status");
}

std::string ToUpper(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

TEST(IsaName, NamesEveryIsa) {
  const char* const expected[] = {"scalar", "sse4",       "avx2", "avx512",
                                  "neon",   "avx512bf16", "sve",  "rvv"};
  for (posenc_isa isa : AllIsas()) EXPECT_STREQ(posenc_isa_name(isa), expected[isa]);
  EXPECT_STREQ(posenc_isa_name(POSENC_ISA_COUNT), "unknown");
  EXPECT_STREQ(posenc_test_isa_name(-1), "unknown");
}

TEST(IsaName, RoundTripsCaseInsensitively) {
  for (posenc_isa isa : AllIsas()) {
    const std::string lower = posenc_isa_name(isa);
    std::string mixed = lower;
    mixed[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(mixed[0])));
    for (const std::string& name : {lower, ToUpper(lower), mixed}) {
      posenc_isa parsed = POSENC_ISA_COUNT;
      EXPECT_EQ(posenc_isa_from_name(name.c_str(), &parsed), POSENC_OK) << name;
      EXPECT_EQ(parsed, isa) << name;
    }
  }
}

TEST(IsaName, RejectsUnknownNames) {
  for (const char* name : {"", "bogus", "avx", "avx5", "avx5120", "avx-512", "sse", "sse4.1",
                           " scalar", "scalar ", "scalarx", "unknown"}) {
    posenc_isa parsed = POSENC_ISA_AVX2;
    EXPECT_EQ(posenc_isa_from_name(name, &parsed), POSENC_ERR_INVALID_ARGUMENT)
        << '"' << name << '"';
    EXPECT_EQ(parsed, POSENC_ISA_AVX2) << "output written for \"" << name << '"';
  }
  posenc_isa parsed;
  EXPECT_EQ(posenc_isa_from_name(nullptr, &parsed), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_isa_from_name("scalar", nullptr), POSENC_ERR_INVALID_ARGUMENT);
}

TEST(IsaQuery, ScalarIsAlwaysAvailable) {
  EXPECT_EQ(posenc_isa_compiled(POSENC_ISA_SCALAR), 1);
  EXPECT_EQ(posenc_isa_available(POSENC_ISA_SCALAR), 1);
}

TEST(IsaQuery, AvailableImpliesCompiled) {
  for (posenc_isa isa : AllIsas()) {
    const int available = posenc_isa_available(isa), compiled = posenc_isa_compiled(isa);
    EXPECT_TRUE(available == 0 || available == 1) << posenc_isa_name(isa);
    EXPECT_TRUE(compiled == 0 || compiled == 1) << posenc_isa_name(isa);
    if (available) {
      EXPECT_EQ(compiled, 1) << posenc_isa_name(isa);
    }
  }
}

TEST(IsaQuery, OutOfRangeIsNeitherCompiledNorAvailable) {
  for (int isa : {static_cast<int>(POSENC_ISA_COUNT), -1, 1000}) {
    EXPECT_EQ(posenc_test_isa_compiled(isa), 0) << isa;
    EXPECT_EQ(posenc_test_isa_available(isa), 0) << isa;
  }
}

TEST(IsaQuery, X86AndArmVariantsAreNeverBothAvailable) {
  const bool x86 = posenc_isa_available(POSENC_ISA_SSE4) || posenc_isa_available(POSENC_ISA_AVX2) ||
                   posenc_isa_available(POSENC_ISA_AVX512);
  EXPECT_FALSE(x86 && posenc_isa_available(POSENC_ISA_NEON));
  // The x86 tiers nest: a CPU with a higher tier has the lower ones.
  if (posenc_isa_available(POSENC_ISA_AVX512) && posenc_isa_compiled(POSENC_ISA_AVX2)) {
    EXPECT_TRUE(posenc_isa_available(POSENC_ISA_AVX2));
  }
  if (posenc_isa_available(POSENC_ISA_AVX2) && posenc_isa_compiled(POSENC_ISA_SSE4)) {
    EXPECT_TRUE(posenc_isa_available(POSENC_ISA_SSE4));
  }
}

TEST(IsaQuery, CpuDescriptionIsAString) {
  ASSERT_NE(posenc_cpu_name(), nullptr);
  ASSERT_NE(posenc_cpu_features(), nullptr);
  EXPECT_GT(std::strlen(posenc_cpu_name()), 0u);
  EXPECT_EQ(posenc_cpu_name(), posenc_cpu_name()) << "must be a static string";
}

TEST(IsaSelect, ActiveIsaIsAvailable) { EXPECT_EQ(posenc_isa_available(posenc_active_isa()), 1); }

TEST(IsaSelect, SetIsaSelectsAndReportsApi) {
  for (posenc_isa isa : AllIsas()) {
    if (!posenc_isa_available(isa)) continue;
    ASSERT_EQ(posenc_set_isa(isa), POSENC_OK) << posenc_isa_name(isa);
    EXPECT_EQ(posenc_active_isa(), isa);
    posenc_isa requested = POSENC_ISA_COUNT;
    EXPECT_EQ(posenc_isa_selection(&requested), POSENC_ISA_SOURCE_API);
    EXPECT_EQ(requested, isa) << "requested is the active ISA when POSENC_ISA was not used";
    EXPECT_EQ(posenc_isa_selection(nullptr), POSENC_ISA_SOURCE_API);
  }
}

TEST(KernelIsa, NamesEveryKernelOnce) {
  std::vector<std::string> names;
  for (int k = 0; k < POSENC_KERNEL_COUNT; ++k) {
    const std::string name = posenc_kernel_name(static_cast<posenc_kernel>(k));
    EXPECT_NE(name, "unknown") << k;
    for (const std::string& other : names) EXPECT_NE(name, other);
    names.push_back(name);
  }
  EXPECT_EQ(names[POSENC_KERNEL_ROPE_BF16], "rope_bf16");
  EXPECT_EQ(names[POSENC_KERNEL_LEARNED_ADD_F32], "learned_add_f32");
  EXPECT_EQ(names[POSENC_KERNEL_SOFTMAX_F32], "softmax_f32");
  EXPECT_EQ(names[POSENC_KERNEL_SOFTMAX_16], "softmax_16");
  EXPECT_EQ(names[POSENC_KERNEL_SINUSOID_F32_STREAMED], "sinusoid_f32_streamed");
  // A shape-class slot is served by its kernel's variants: a tier named by POSENC_ISA or
  // posenc_set_isa() serves both alike.
  for (int i = 0; i < POSENC_ISA_COUNT; ++i)
    if (posenc_isa_available(static_cast<posenc_isa>(i))) {
      EXPECT_EQ(
          posenc_kernel_isa_for(POSENC_KERNEL_SINUSOID_F32_STREAMED, static_cast<posenc_isa>(i)),
          posenc_kernel_isa_for(POSENC_KERNEL_SINUSOID_F32, static_cast<posenc_isa>(i)))
          << posenc_isa_name(static_cast<posenc_isa>(i));
    }
  EXPECT_EQ(POSENC_KERNEL_ALIBI_SOFTMAX_F32, POSENC_KERNEL_SOFTMAX_F32);  // the former names
  EXPECT_EQ(POSENC_KERNEL_ALIBI_SOFTMAX_BF16, POSENC_KERNEL_SOFTMAX_16);
  for (int k : {static_cast<int>(POSENC_KERNEL_COUNT), -1}) {
    EXPECT_STREQ(posenc_kernel_name(static_cast<posenc_kernel>(k)), "unknown");
    EXPECT_EQ(posenc_kernel_isa(static_cast<posenc_kernel>(k)), POSENC_ISA_COUNT);
    EXPECT_EQ(posenc_kernel_isa_for(static_cast<posenc_kernel>(k), POSENC_ISA_SCALAR),
              POSENC_ISA_COUNT);
  }
  for (posenc_isa isa : AllIsas())
    if (!posenc_isa_available(isa)) {
      EXPECT_EQ(posenc_kernel_isa_for(POSENC_KERNEL_ROPE_F32, isa), POSENC_ISA_COUNT);
    }
}

bool Bf16Rope(int kernel) {
  return kernel == POSENC_KERNEL_ROPE_BF16 || kernel == POSENC_KERNEL_ROPE_F32_BF16;
}

// A named tier serves every kernel itself, except avx512bf16, which has variants of its own
// only for bf16 RoPE and leaves the others to avx512.
TEST(KernelIsa, ANamedTierServesEveryKernel) {
  for (posenc_isa isa : AllIsas()) {
    if (!posenc_isa_available(isa)) continue;
    ASSERT_EQ(posenc_set_isa(isa), POSENC_OK);
    for (int k = 0; k < POSENC_KERNEL_COUNT; ++k) {
      const posenc_isa want =
          isa == POSENC_ISA_AVX512BF16 && !Bf16Rope(k) ? POSENC_ISA_AVX512 : isa;
      EXPECT_EQ(posenc_kernel_isa(static_cast<posenc_kernel>(k)), want)
          << posenc_isa_name(isa) << " " << posenc_kernel_name(static_cast<posenc_kernel>(k));
      EXPECT_EQ(posenc_kernel_isa_for(static_cast<posenc_kernel>(k), isa), want);
    }
  }
}

// Chosen automatically (this test runs without POSENC_ISA, or with it): every kernel is
// served by an available tier no higher than the active one.
TEST(KernelIsa, EveryKernelIsServedByAnAvailableTier) {
  for (int k = 0; k < POSENC_KERNEL_COUNT; ++k) {
    const posenc_isa served = posenc_kernel_isa(static_cast<posenc_kernel>(k));
    EXPECT_EQ(posenc_isa_available(served), 1) << posenc_kernel_name(static_cast<posenc_kernel>(k));
  }
}

TEST(IsaSelect, UnavailableIsaIsRefusedAndChangesNothing) {
  ASSERT_EQ(posenc_set_isa(POSENC_ISA_SCALAR), POSENC_OK);
  std::vector<int> refused = {static_cast<int>(POSENC_ISA_COUNT), -1, 77};
  for (posenc_isa isa : AllIsas())
    if (!posenc_isa_available(isa)) refused.push_back(static_cast<int>(isa));
  for (int isa : refused) {
    EXPECT_EQ(posenc_test_set_isa(isa), POSENC_ERR_UNSUPPORTED) << isa;
    EXPECT_EQ(posenc_active_isa(), POSENC_ISA_SCALAR);
    EXPECT_EQ(posenc_isa_selection(nullptr), POSENC_ISA_SOURCE_API);
  }
}

}  // namespace
}  // namespace posenc_test
