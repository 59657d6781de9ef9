// Shared helpers of the posenc test suites: the ISA list and the fixture that runs a test
// once per ISA, plan ownership, the exact-angle reference and aligned buffers.
#ifndef POSENC_TESTS_SUPPORT_TEST_SUPPORT_H
#define POSENC_TESTS_SUPPORT_TEST_SUPPORT_H

#include <gtest/gtest.h>
#include <posenc.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace posenc_test {

// ctest's SKIP_RETURN_CODE: a run forced (POSENC_ISA) to an ISA this CPU or build lacks.
inline constexpr int kSkipExitCode = 77;

inline constexpr std::array<posenc_isa, POSENC_ISA_COUNT> kAllIsas = {
    POSENC_ISA_SCALAR, POSENC_ISA_SSE4, POSENC_ISA_AVX2, POSENC_ISA_AVX512, POSENC_ISA_NEON};

// The highest-numbered available ISA, computed here rather than trusted from the library.
posenc_isa BestAvailableIsa();

// What posenc_active_isa() and posenc_isa_selection() report.
struct IsaSelection {
  posenc_isa active;
  posenc_isa_source source;
  posenc_isa requested;
};
bool operator==(const IsaSelection& a, const IsaSelection& b);
std::ostream& operator<<(std::ostream& os, const IsaSelection& s);

IsaSelection CurrentSelection();
// The selection a fresh process must make when POSENC_ISA holds `env_value` (NULL: unset).
IsaSelection ExpectedSelectionFor(const char* env_value);

// A test run once per ISA (instantiate with POSENC_INSTANTIATE_FOR_EVERY_ISA): skipped by
// name when the ISA is not available, otherwise that ISA is made active before the body.
class EveryIsaTest : public testing::TestWithParam<posenc_isa> {
 protected:
  void SetUp() override;
  posenc_isa isa() const { return GetParam(); }
};
std::string IsaTestName(const testing::TestParamInfo<posenc_isa>& info);

#define POSENC_INSTANTIATE_FOR_EVERY_ISA(fixture)                                    \
  INSTANTIATE_TEST_SUITE_P(Isa, fixture, testing::ValuesIn(::posenc_test::kAllIsas), \
                           ::posenc_test::IsaTestName)

struct PlanDeleter {
  void operator()(posenc_rope_plan* plan) const { posenc_rope_plan_destroy(plan); }
};
using PlanPtr = std::unique_ptr<posenc_rope_plan, PlanDeleter>;

// A default plan; records a test failure and returns null if creation fails.
PlanPtr MakePlan(size_t rotary_dim, double base, double attention_factor);
std::vector<double> PlanFreqs(const posenc_rope_plan* plan);

// The angle p * w reduced modulo 2*pi in long double, from the exact product: w is split
// into a 24-bit head and the rest so that both partial products are exact.
long double ExactReducedAngle(int32_t position, double freq);
// The float32 recipe of POSENC_ROPE_F32_ANGLES: (float)p * (float)w, rounded to float.
long double Float32Angle(int32_t position, double freq);
// ExactReducedAngle or Float32Angle, as `flags` select.
long double ReferenceAngle(int32_t position, double freq, unsigned flags);

// Floats in one 64-byte aligned block, zero-initialised; copies keep the alignment.
class AlignedFloats {
 public:
  explicit AlignedFloats(size_t n);
  AlignedFloats(const AlignedFloats& other);
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  AlignedFloats(AlignedFloats&&) = default;
  AlignedFloats& operator=(AlignedFloats&&) = default;

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }
  float& operator[](size_t i) { return data_[i]; }
  float operator[](size_t i) const { return data_[i]; }

 private:
  struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], FreeDeleter> data_;
  size_t size_;
};

bool BitwiseEqual(float a, float b);
// Index of the first element whose bits differ, or -1 when the buffers are identical.
long FirstBitwiseDifference(const AlignedFloats& a, const AlignedFloats& b);

// Positions for n tokens: small ones of both signs mixed with ones spread over the whole
// range |p| < 2^31.
std::vector<int32_t> RandomPositions(std::mt19937& rng, size_t n);

}  // namespace posenc_test

#endif  // POSENC_TESTS_SUPPORT_TEST_SUPPORT_H
