// Shared helpers of the posenc test suites: the ISA list and the fixture that runs a test
// once per ISA, plan ownership, the exact-angle reference, aligned buffers, buffers between
// inaccessible guard pages, and the checks the argument-check suites share.
#ifndef POSENC_TESTS_SUPPORT_TEST_SUPPORT_H
#define POSENC_TESTS_SUPPORT_TEST_SUPPORT_H

#include <gtest/gtest.h>
#include <posenc.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace posenc_test {

// ctest's SKIP_RETURN_CODE: a run forced (POSENC_ISA) to an ISA this CPU or build lacks.
inline constexpr int kSkipExitCode = 77;

// Every ISA of the header's enum (the one list of ISAs), in enum order.
std::vector<posenc_isa> AllIsas();

// The ISAs this process tests: the one POSENC_ISA names (ctest runs one process per ISA), or
// every ISA when it names none (a binary run by hand). Parameterised suites are instantiated
// for these; an ISA this CPU lacks is skipped by name.
std::vector<posenc_isa> IsasUnderTest();

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

// A test run once per ISA under test (instantiate with POSENC_INSTANTIATE_FOR_EVERY_ISA):
// skipped by name when the ISA is not available, otherwise that ISA is made active before the
// body. The instances are named Isa/<Fixture>.<Test>/<isa>.
class EveryIsaTest : public testing::TestWithParam<posenc_isa> {
 protected:
  void SetUp() override;
  posenc_isa isa() const { return GetParam(); }
};
std::string IsaTestName(const testing::TestParamInfo<posenc_isa>& info);

#define POSENC_INSTANTIATE_FOR_EVERY_ISA(fixture)                                           \
  INSTANTIATE_TEST_SUITE_P(Isa, fixture, testing::ValuesIn(::posenc_test::IsasUnderTest()), \
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
// A quiet NaN whose payload is the low 22 bits of a buffer index, so a stray copy is
// recognisable.
float NaNSentinel(size_t index);
// A NaN expected needs a NaN, an infinity the same infinity, anything else a finite value
// within bound.
bool WithinBound(double actual, double expected, double bound);
// Index of the first element whose bits differ, or -1 when the buffers are identical.
long FirstBitwiseDifference(const AlignedFloats& a, const AlignedFloats& b);

// Positions for n tokens: small ones of both signs mixed with ones spread over the whole
// range |p| < 2^31.
std::vector<int32_t> RandomPositions(std::mt19937& rng, size_t n);

// n floats drawn uniformly from [lo, hi) by an mt19937 seeded with `seed`.
std::vector<float> RandomFloats(size_t n, uint32_t seed, float lo, float hi);

// The positions of the accuracy checks: hand-picked ones (0, +-1, powers of two, the largest,
// where kernels may switch formulas) followed by 300 random ones over |p| < 2^31.
std::vector<int32_t> AccuracyPositions();

// Each shape once per value of `flags`, in that order, with its `flags` member set to it.
template <typename Shape>
std::vector<Shape> WithEachFlagValue(const std::vector<Shape>& shapes,
                                     const std::vector<unsigned>& flags) {
  std::vector<Shape> out;
  for (const Shape& shape : shapes)
    for (unsigned f : flags) {
      out.push_back(shape);
      out.back().flags = f;
    }
  return out;
}

// The detail of a refused call (posenc_last_error()).
//
// PrimeLastError() makes the calling thread's detail a known one (that of a plan refused
// for a rotary_dim no test uses), so that a refused call that leaves the detail as it was is
// told from one that sets it.
void PrimeLastError();
// After a refused call, primed: the detail is "<function>: <argument>: <rule>" with a
// non-empty rule, not the primed one, starting with `function` (nullptr: with "posenc_"),
// and, for an `argument` given, its argument is that one or a part of it (followed by
// "->" or "[", e.g. "q->data" for "q"). `what` names the call in a failure.
void ExpectLastError(const char* function, const char* argument, const std::string& what);
// The argument named by posenc_last_error() ("" if it has no "<function>: <argument>: ").
std::string LastErrorArgument();

// The public function a table's Call invokes: its `const char* Function() const` where it
// has one, else nullptr (the detail is then only checked to name some posenc_ function).
template <typename Call, typename = void>
struct CallHasFunction : std::false_type {};
template <typename Call>
struct CallHasFunction<Call, std::void_t<decltype(std::declval<const Call&>().Function())>>
    : std::true_type {};
template <typename Call>
const char* FunctionOf(const Call& call) {
  if constexpr (CallHasFunction<Call>::value)
    return call.Function();
  else
    return nullptr;
}

// Argument checks: runs call.Invoke() (any struct with a `posenc_status Invoke() const`)
// and expects `status`, with every element of `buffer`, which holds whatever the call may
// write, unchanged bit for bit. A status other than POSENC_OK must come with its detail
// (ExpectLastError; `argument`: the argument the call breaks, where the table knows it).
template <typename Call>
void ExpectStatusAndBufferUnchanged(const Call& call, posenc_status status,
                                    const AlignedFloats& buffer, const std::string& what,
                                    const char* argument = nullptr) {
  const AlignedFloats before = buffer;
  if (status != POSENC_OK) PrimeLastError();
  EXPECT_EQ(call.Invoke(), status) << what;
  EXPECT_EQ(FirstBitwiseDifference(before, buffer), -1) << what << ": buffer written";
  if (status != POSENC_OK) ExpectLastError(FunctionOf(call), argument, what);
}

// Named changes to a valid call, for the argument-check tables.
template <typename Call>
using CallChanges = std::vector<std::pair<const char*, std::function<void(Call&)>>>;

// Each change applied to a copy of `valid`: the call returns `status` (reported with
// `prefix` and the change's name), with its detail if it is not POSENC_OK.
template <typename Call>
void ExpectChangedCallsReturn(const Call& valid, const CallChanges<Call>& changes,
                              posenc_status status, const std::string& prefix = "") {
  for (const auto& [what, change] : changes) {
    Call call = valid;
    change(call);
    if (status != POSENC_OK) PrimeLastError();
    EXPECT_EQ(call.Invoke(), status) << prefix << what;
    if (status != POSENC_OK) ExpectLastError(FunctionOf(call), nullptr, prefix + what);
  }
}

// Each change applied to a copy of `valid`: ExpectStatusAndBufferUnchanged.
template <typename Call>
void ExpectChangedCallsReturnAndWriteNothing(const Call& valid, const CallChanges<Call>& changes,
                                             posenc_status status, const AlignedFloats& buffer,
                                             const std::string& prefix = "") {
  for (const auto& [what, change] : changes) {
    Call call = valid;
    change(call);
    ExpectStatusAndBufferUnchanged(call, status, buffer, prefix + what);
  }
}

// A bad call of an argument-check table: what it changes in a valid call, and the argument
// that change breaks (the one posenc_last_error() must name).
template <typename Call>
struct BadCall {
  const char* what;
  const char* argument;
  std::function<void(Call&)> change;
};
template <typename Call>
using BadCalls = std::vector<BadCall<Call>>;

// Each bad call applied to a copy of `valid`: ExpectStatusAndBufferUnchanged, its detail
// naming the row's argument.
template <typename Call>
void ExpectBadCallsRejected(const Call& valid, const BadCalls<Call>& bad, posenc_status status,
                            const AlignedFloats& buffer, const std::string& prefix = "") {
  for (const BadCall<Call>& row : bad) {
    Call call = valid;
    row.change(call);
    ExpectStatusAndBufferUnchanged(call, status, buffer, prefix + row.what, row.argument);
  }
}

// Floats between two inaccessible pages, so that any access one element before or past
// them kills the process. ok() is false where the platform has no such pages (or mapping
// them failed).
class GuardedPages {
 public:
  explicit GuardedPages(size_t n_floats);
  ~GuardedPages();
  GuardedPages(const GuardedPages&) = delete;
  GuardedPages& operator=(const GuardedPages&) = delete;

  bool ok() const { return base_ != nullptr; }
  // n floats starting right after the leading guard page.
  float* AtStart();
  // n floats ending right before the trailing guard page.
  float* AtEnd(size_t n);

 private:
  size_t page_ = 0, usable_ = 0;
  char* base_ = nullptr;
};

// Runs `body`, which must end the process with std::exit (0 when every call went well), in
// a child process (death test), so that a fault next to a guard page is reported here rather
// than ending the whole binary. Skips the test where there are no guard pages.
void ExpectNoAccessNextToGuardPages(const std::function<void()>& body, posenc_isa isa,
                                    const char* next_to);

}  // namespace posenc_test

#endif  // POSENC_TESTS_SUPPORT_TEST_SUPPORT_H
