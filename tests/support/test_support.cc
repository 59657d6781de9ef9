#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define POSENC_TEST_HAVE_MMAP 1
#endif

namespace posenc_test {

std::vector<posenc_isa> AllIsas() {
  std::vector<posenc_isa> isas;
  for (int i = 0; i < POSENC_ISA_COUNT; ++i) isas.push_back(static_cast<posenc_isa>(i));
  return isas;
}

std::vector<posenc_isa> IsasUnderTest() {
  const char* env = std::getenv("POSENC_ISA");
  posenc_isa named;
  if (env != nullptr && posenc_isa_from_name(env, &named) == POSENC_OK) return {named};
  return AllIsas();
}

posenc_isa BestAvailableIsa() {
  posenc_isa best = POSENC_ISA_SCALAR;
  for (posenc_isa isa : AllIsas())
    if (posenc_isa_available(isa)) best = isa;
  return best;
}

bool operator==(const IsaSelection& a, const IsaSelection& b) {
  return a.active == b.active && a.source == b.source && a.requested == b.requested;
}

std::ostream& operator<<(std::ostream& os, const IsaSelection& s) {
  static const char* const kSources[] = {"AUTO", "ENV", "ENV_FALLBACK", "API"};
  const unsigned src = static_cast<unsigned>(s.source);
  return os << "{active=" << posenc_isa_name(s.active)
            << ", source=" << (src < 4 ? kSources[src] : "invalid")
            << ", requested=" << posenc_isa_name(s.requested) << "}";
}

IsaSelection CurrentSelection() {
  IsaSelection s{};
  s.source = posenc_isa_selection(&s.requested);
  s.active = posenc_active_isa();
  return s;
}

IsaSelection ExpectedSelectionFor(const char* env_value) {
  const posenc_isa best = BestAvailableIsa();
  if (env_value == nullptr || *env_value == '\0') return {best, POSENC_ISA_SOURCE_AUTO, best};
  posenc_isa requested;
  if (posenc_isa_from_name(env_value, &requested) != POSENC_OK)
    return {best, POSENC_ISA_SOURCE_ENV_FALLBACK, POSENC_ISA_COUNT};
  if (!posenc_isa_available(requested)) return {best, POSENC_ISA_SOURCE_ENV_FALLBACK, requested};
  return {requested, POSENC_ISA_SOURCE_ENV, requested};
}

void EveryIsaTest::SetUp() {
  if (!posenc_isa_available(isa())) GTEST_SKIP() << posenc_isa_name(isa()) << " not available";
  ASSERT_EQ(posenc_set_isa(isa()), POSENC_OK);
  ASSERT_EQ(posenc_active_isa(), isa());
}

std::string IsaTestName(const testing::TestParamInfo<posenc_isa>& info) {
  return posenc_isa_name(info.param);
}

PlanPtr MakePlan(size_t rotary_dim, double base, double attention_factor) {
  posenc_rope_plan* plan = nullptr;
  const posenc_status status = posenc_rope_plan_create(&plan, rotary_dim, base, attention_factor);
  EXPECT_EQ(status, POSENC_OK) << "plan R=" << rotary_dim << " base=" << base
                               << " att=" << attention_factor;
  return PlanPtr(plan);
}

std::vector<double> PlanFreqs(const posenc_rope_plan* plan) {
  std::vector<double> freqs(posenc_rope_plan_rotary_dim(plan) / 2);
  EXPECT_EQ(posenc_rope_plan_freqs(plan, freqs.data()), POSENC_OK);
  return freqs;
}

long double ExactReducedAngle(int32_t position, double freq) {
  const long double two_pi = 6.283185307179586476925286766559005768L;
  const double head = static_cast<double>(static_cast<float>(freq));
  const double tail = freq - head;  // exact: freq and head share their leading bits
  const long double p = position;
  return std::fmod(p * head, two_pi) + std::fmod(p * tail, two_pi);
}

long double Float32Angle(int32_t position, double freq) {
  const float angle = static_cast<float>(position) * static_cast<float>(freq);
  return angle;
}

long double ReferenceAngle(int32_t position, double freq, unsigned flags) {
  return (flags & POSENC_ROPE_F32_ANGLES) ? Float32Angle(position, freq)
                                          : ExactReducedAngle(position, freq);
}

namespace {
float* AllocateAligned(size_t n) {
  const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes == 0 ? 64 : bytes));
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, bytes == 0 ? 64 : bytes);
  return p;
}
}  // namespace

AlignedFloats::AlignedFloats(size_t n) : data_(AllocateAligned(n)), size_(n) {}

AlignedFloats::AlignedFloats(const AlignedFloats& other)
    : data_(AllocateAligned(other.size_)), size_(other.size_) {
  std::memcpy(data_.get(), other.data_.get(), size_ * sizeof(float));
}

bool BitwiseEqual(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

float NaNSentinel(size_t index) {
  const uint32_t bits = 0x7fc00000u | static_cast<uint32_t>(index & 0x3fffffu);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

bool WithinBound(double actual, double expected, double bound) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  return std::isfinite(actual) && std::fabs(actual - expected) <= bound;
}

long FirstBitwiseDifference(const AlignedFloats& a, const AlignedFloats& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!BitwiseEqual(a[i], b[i])) return static_cast<long>(i);
  return -1;
}

std::vector<int32_t> RandomPositions(std::mt19937& rng, size_t n) {
  std::uniform_int_distribution<int32_t> small(-300, 5000);
  std::uniform_int_distribution<int32_t> any(-INT32_MAX, INT32_MAX);
  std::vector<int32_t> positions(n);
  for (size_t t = 0; t < n; ++t) positions[t] = (t % 2 == 0) ? small(rng) : any(rng);
  return positions;
}

std::vector<float> RandomFloats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(lo, hi);
  std::vector<float> x(n);
  for (float& v : x) v = value(rng);
  return x;
}

std::vector<int32_t> AccuracyPositions() {
  std::vector<int32_t> positions = {0, 1, -1, 131072, 1 << 20, 1 << 24, 1 << 27, INT32_MAX,
                                    -INT32_MAX, 8191, 65535, -131072, 1000000, 123456789,
                                    // 2^22 turns at w = 1: where kernels may switch formulas
                                    26353589, 26353590, -26353589, -26353590};
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> any(-INT32_MAX, INT32_MAX);
  for (int i = 0; i < 300; ++i) positions.push_back(any(rng));
  return positions;
}

namespace {
// A refusal no test makes: a plan of the odd rotary_dim 1234567.
void RefuseToPrime() {
  posenc_rope_plan* plan = nullptr;
  EXPECT_EQ(posenc_rope_plan_create(&plan, 1234567, 10000.0, 1.0), POSENC_ERR_INVALID_ARGUMENT);
}

// The detail PrimeLastError leaves.
std::string PrimedDetail() {
  static const std::string primed = [] {
    RefuseToPrime();
    return std::string(posenc_last_error());
  }();
  return primed;
}
}  // namespace

void PrimeLastError() {
  const std::string primed = PrimedDetail();
  RefuseToPrime();
  EXPECT_EQ(primed, posenc_last_error());
}

std::string LastErrorArgument() {
  const std::string detail = posenc_last_error();
  const size_t first = detail.find(": ");
  if (first == std::string::npos) return "";
  const size_t second = detail.find(": ", first + 2);
  if (second == std::string::npos) return "";
  return detail.substr(first + 2, second - first - 2);
}

void ExpectLastError(const char* function, const char* argument, const std::string& what) {
  const char* raw = posenc_last_error();
  ASSERT_NE(raw, nullptr) << what;
  const std::string detail = raw;
  EXPECT_NE(detail, PrimedDetail()) << what << ": the refusal left posenc_last_error() as it was";
  EXPECT_LT(detail.size(), 256u) << what;
  const std::string prefix = function != nullptr ? std::string(function) + ": " : "posenc_";
  EXPECT_EQ(detail.compare(0, prefix.size(), prefix), 0)
      << what << ": posenc_last_error() \"" << detail << "\" does not start with \"" << prefix
      << "\"";
  const std::string arg = LastErrorArgument();
  EXPECT_FALSE(arg.empty()) << what << ": no argument in \"" << detail << "\"";
  const size_t second = detail.find(": ", detail.find(": ") + 2);
  EXPECT_TRUE(second != std::string::npos && detail.size() > second + 2)
      << what << ": no rule in \"" << detail << "\"";
  if (argument != nullptr) {
    const std::string want = argument;
    const bool names = arg == want || arg.compare(0, want.size() + 2, want + "->") == 0 ||
                       arg.compare(0, want.size() + 1, want + "[") == 0;
    EXPECT_TRUE(names) << what << ": posenc_last_error() \"" << detail << "\" names \"" << arg
                       << "\", not \"" << want << "\"";
  }
}

#ifdef POSENC_TEST_HAVE_MMAP
GuardedPages::GuardedPages(size_t n_floats) {
  page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  usable_ = std::max<size_t>(1, (n_floats * sizeof(float) + page_ - 1) / page_) * page_;
  void* p = mmap(nullptr, usable_ + 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  base_ = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  if (base_ != nullptr && (mprotect(base_, page_, PROT_NONE) != 0 ||
                           mprotect(base_ + page_ + usable_, page_, PROT_NONE) != 0)) {
    munmap(base_, usable_ + 2 * page_);
    base_ = nullptr;
  }
}

GuardedPages::~GuardedPages() {
  if (base_ != nullptr) munmap(base_, usable_ + 2 * page_);
}
#else
GuardedPages::GuardedPages(size_t) {}
GuardedPages::~GuardedPages() = default;
#endif

float* GuardedPages::AtStart() { return reinterpret_cast<float*>(base_ + page_); }

float* GuardedPages::AtEnd(size_t n) {
  return reinterpret_cast<float*>(base_ + page_ + usable_) - n;
}

void ExpectNoAccessNextToGuardPages(const std::function<void()>& body, posenc_isa isa,
                                    const char* next_to) {
  if (!GuardedPages(1).ok()) GTEST_SKIP() << "no guard pages on this platform";
  EXPECT_EXIT(body(), testing::ExitedWithCode(0), "")
      << posenc_isa_name(isa) << " touched a guard page next to " << next_to;
}

}  // namespace posenc_test
