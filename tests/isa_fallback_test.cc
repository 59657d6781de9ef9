// Run by ctest in a fresh process with POSENC_ISA naming an unknown ISA or one this build
// cannot have on this architecture: posenc must fall back to the best available ISA, say
// so through posenc_isa_selection(), and still work.
#include <posenc.h>

#include <cstdlib>
#include <string>

#include "test_support.h"

namespace posenc_test {
namespace {

TEST(IsaFallback, UnusableRequestFallsBackToBestAvailable) {
  const char* env = std::getenv("POSENC_ISA");
  ASSERT_NE(env, nullptr) << "ctest must set POSENC_ISA for this test";
  SCOPED_TRACE(std::string("POSENC_ISA=") + env);
  posenc_isa named;
  const bool known = posenc_isa_from_name(env, &named) == POSENC_OK;
  ASSERT_TRUE(!known || !posenc_isa_available(named)) << "POSENC_ISA must be unusable here";

  // The first call into the library makes the choice.
  const IsaSelection selection = CurrentSelection();
  EXPECT_EQ(selection.source, POSENC_ISA_SOURCE_ENV_FALLBACK);
  EXPECT_EQ(selection.active, BestAvailableIsa());
  EXPECT_EQ(selection.requested, known ? named : POSENC_ISA_COUNT);
  EXPECT_EQ(selection, ExpectedSelectionFor(env));
}

TEST(IsaFallback, KernelsRunAfterFallback) {
  const PlanPtr plan = MakePlan(8, 10000.0, 1.0);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const posenc_rope_tensor q = {x, 1, 8, 8};
  EXPECT_EQ(posenc_rope_f32(plan.get(), 8, 1, nullptr, 0, &q, nullptr, 0), POSENC_OK);
  EXPECT_EQ(x[0], 1.0f) << "position 0 is the identity";
  EXPECT_EQ(posenc_isa_selection(nullptr), POSENC_ISA_SOURCE_ENV_FALLBACK);
}

}  // namespace
}  // namespace posenc_test
