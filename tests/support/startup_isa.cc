// Linked into every test binary that ctest runs once per ISA. Before any test can call
// posenc_set_isa(), it records the ISA the library chose at startup, so that a run with
// POSENC_ISA=<isa> can check that the variable was obeyed; a run forced to an ISA this CPU
// or build lacks prints why and exits with kSkipExitCode, which ctest reports as skipped.
#include <cstdio>
#include <cstdlib>

#include "test_support.h"

namespace posenc_test {
namespace {

bool g_recorded = false;
IsaSelection g_startup_selection{};

class StartupIsaEnvironment : public testing::Environment {
 public:
  void SetUp() override {
    const char* env = std::getenv("POSENC_ISA");
    posenc_isa requested;
    if (env != nullptr && posenc_isa_from_name(env, &requested) == POSENC_OK &&
        !posenc_isa_available(requested)) {
      std::printf("SKIPPED: %s not available on this CPU or in this build (POSENC_ISA=%s)\n",
                  posenc_isa_name(requested), env);
      std::fflush(stdout);
      std::exit(kSkipExitCode);
    }
    g_startup_selection = CurrentSelection();
    g_recorded = true;
  }
};

[[maybe_unused]] testing::Environment* const kStartupEnvironment =
    testing::AddGlobalTestEnvironment(new StartupIsaEnvironment);

TEST(StartupIsaSelection, FollowsPosencIsaVariable) {
  ASSERT_TRUE(g_recorded);
  const char* env = std::getenv("POSENC_ISA");
  SCOPED_TRACE(std::string("POSENC_ISA=") + (env ? env : "(unset)"));
  EXPECT_EQ(g_startup_selection, ExpectedSelectionFor(env));
  posenc_isa requested;
  if (env != nullptr && posenc_isa_from_name(env, &requested) == POSENC_OK) {
    EXPECT_EQ(g_startup_selection.active, requested);
    EXPECT_EQ(g_startup_selection.source, POSENC_ISA_SOURCE_ENV);
  }
}

// Where the CPU is known (an emulated CPU model in scripts/test-emulated-x86.sh, the aarch64
// suite), POSENC_EXPECT_ISA names the ISA the dispatcher must pick on its own.
TEST(StartupIsaSelection, PicksTheExpectedIsaForThisCpu) {
  ASSERT_TRUE(g_recorded);
  const char* expect = std::getenv("POSENC_EXPECT_ISA");
  const char* env = std::getenv("POSENC_ISA");
  if (expect == nullptr || *expect == '\0') GTEST_SKIP() << "POSENC_EXPECT_ISA not set";
  if (env != nullptr && *env != '\0') GTEST_SKIP() << "POSENC_ISA forces the ISA";
  posenc_isa expected;
  ASSERT_EQ(posenc_isa_from_name(expect, &expected), POSENC_OK) << "POSENC_EXPECT_ISA=" << expect;
  EXPECT_EQ(g_startup_selection.active, expected)
      << "picked " << posenc_isa_name(g_startup_selection.active) << " on " << posenc_cpu_name()
      << " (" << posenc_cpu_features() << ")";
  EXPECT_EQ(g_startup_selection.source, POSENC_ISA_SOURCE_AUTO);
}

}  // namespace
}  // namespace posenc_test
