// Sinusoidal plan creation and the argument checks of posenc_sinusoid_fill_f32,
// posenc_sinusoid_fill_timesteps_f32 and posenc_sinusoid_add_f32: every invalid call returns
// POSENC_ERR_INVALID_ARGUMENT, with a posenc_last_error() naming the function and the
// argument, and leaves the buffer bit for bit untouched; valid no-ops and
// unusual valid calls are accepted. Runs with the active ISA (ctest runs it once per ISA).
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "sinusoid_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A plan pointer that is not NULL, to see that a failed creation sets *plan to NULL.
posenc_sinusoid_plan* NotNull() {
  static int placeholder;
  return reinterpret_cast<posenc_sinusoid_plan*>(&placeholder);
}

TEST(SinusoidPlan, CreateRejectsInvalidArguments) {
  const std::pair<size_t, double> bad[] = {
      {0, 10000.0},        {(1u << 20) + 1, 10000.0},
      {SIZE_MAX, 10000.0}, {64, kNaN},
      {64, kInf},          {64, -kInf},
      {64, 0.0},           {64, -0.0},
      {64, -2.0},          {64, -10000.0},
      {64, 1.0},           {64, 1e-300}, /* frequencies far beyond 1024 rad/position */
  };
  for (auto [dim, base] : bad) {
    posenc_sinusoid_plan* plan = NotNull();
    PrimeLastError();
    EXPECT_EQ(posenc_sinusoid_plan_create(&plan, dim, base), POSENC_ERR_INVALID_ARGUMENT)
        << "dim " << dim << " base " << base;
    EXPECT_EQ(plan, nullptr) << "dim " << dim << " base " << base << ": *plan not set to NULL";
    // A bad dim is named as such; a bad base, or one whose frequencies are out of range, too.
    const bool bad_dim = dim < 1 || dim > (1u << 20);
    ExpectLastError("posenc_sinusoid_plan_create", bad_dim ? "dim" : "base",
                    "dim " + std::to_string(dim) + " base " + std::to_string(base));
  }
  PrimeLastError();
  EXPECT_EQ(posenc_sinusoid_plan_create(nullptr, 64, 10000.0), POSENC_ERR_INVALID_ARGUMENT);
  ExpectLastError("posenc_sinusoid_plan_create", "plan", "NULL plan");
}

TEST(SinusoidPlan, CreateAcceptsTheWholeValidRange) {
  const std::pair<size_t, double> good[] = {
      {1, 10000.0}, {2, 10000.0}, {3, 10000.0}, {1u << 20, 10000.0}, {(1u << 20) - 1, 10000.0},
      {64, 0.5},    {64, 0.01},   {64, 1e300},  {64, 1.0000001},     {64, 10000.0}};
  for (auto [dim, base] : good) {
    posenc_sinusoid_plan* plan = nullptr;
    EXPECT_EQ(posenc_sinusoid_plan_create(&plan, dim, base), POSENC_OK)
        << "dim " << dim << " base " << base;
    EXPECT_EQ(posenc_sinusoid_plan_dim(plan), plan ? dim : 0);
    posenc_sinusoid_plan_destroy(plan);
  }
}

TEST(SinusoidPlan, CreateFromFreqsChecksEveryFrequency) {
  const std::vector<double> ok = {1.0, 0.5, 0.0, -3.0};  // zero and negative are finite
  for (size_t dim : {7, 8}) {                            // ceil(d/2) = 4 frequencies
    posenc_sinusoid_plan* plan = nullptr;
    EXPECT_EQ(posenc_sinusoid_plan_create_from_freqs(&plan, dim, ok.data()), POSENC_OK);
    EXPECT_EQ(posenc_sinusoid_plan_dim(plan), dim);
    posenc_sinusoid_plan_destroy(plan);
    for (size_t i = 0; i < ok.size(); ++i)
      for (double value : {kNaN, kInf, -kInf}) {
        std::vector<double> freqs = ok;
        freqs[i] = value;
        plan = NotNull();
        PrimeLastError();
        EXPECT_EQ(posenc_sinusoid_plan_create_from_freqs(&plan, dim, freqs.data()),
                  POSENC_ERR_INVALID_ARGUMENT)
            << "d " << dim << " freq " << i << " = " << value;
        EXPECT_EQ(plan, nullptr);
        ExpectLastError("posenc_sinusoid_plan_create_from_freqs", "freqs",
                        "freq " + std::to_string(i));
      }
  }
  // Only ceil(d/2) frequencies are read: a non-finite value after them does not matter.
  const std::vector<double> trailing_nan = {1.0, 0.5, kNaN};
  posenc_sinusoid_plan* plan = nullptr;
  EXPECT_EQ(posenc_sinusoid_plan_create_from_freqs(&plan, 4, trailing_nan.data()), POSENC_OK);
  posenc_sinusoid_plan_destroy(plan);
}

TEST(SinusoidPlan, CreateFromFreqsRejectsBadSizesAndPointers) {
  const std::vector<double> freqs((1u << 19) + 1, 0.5);  // enough for any d <= 2^20 + 1
  const char* const kFn = "posenc_sinusoid_plan_create_from_freqs";
  posenc_sinusoid_plan* plan = NotNull();
  PrimeLastError();
  EXPECT_EQ(posenc_sinusoid_plan_create_from_freqs(&plan, 8, nullptr), POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  ExpectLastError(kFn, "freqs", "NULL freqs");
  plan = NotNull();
  PrimeLastError();
  EXPECT_EQ(posenc_sinusoid_plan_create_from_freqs(&plan, 0, freqs.data()),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  ExpectLastError(kFn, "dim", "dim 0");
  plan = NotNull();
  PrimeLastError();
  EXPECT_EQ(posenc_sinusoid_plan_create_from_freqs(&plan, (1u << 20) + 1, freqs.data()),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  ExpectLastError(kFn, "dim", "dim 2^20 + 1");
  PrimeLastError();
  EXPECT_EQ(posenc_sinusoid_plan_create_from_freqs(nullptr, 8, freqs.data()),
            POSENC_ERR_INVALID_ARGUMENT);
  ExpectLastError(kFn, "plan", "NULL plan");
  plan = nullptr;
  EXPECT_EQ(posenc_sinusoid_plan_create_from_freqs(&plan, 1u << 20, freqs.data()), POSENC_OK);
  EXPECT_EQ(posenc_sinusoid_plan_dim(plan), size_t{1} << 20);
  posenc_sinusoid_plan_destroy(plan);
}

TEST(SinusoidPlan, NullPlanQueriesAndDestroy) {
  EXPECT_EQ(posenc_sinusoid_plan_dim(nullptr), 0u);
  double freqs[4] = {7.0, 7.0, 7.0, 7.0};
  PrimeLastError();
  EXPECT_EQ(posenc_sinusoid_plan_freqs(nullptr, freqs), POSENC_ERR_INVALID_ARGUMENT);
  for (double f : freqs) EXPECT_EQ(f, 7.0) << "freqs written on error";
  ExpectLastError("posenc_sinusoid_plan_freqs", "plan", "NULL plan");
  const SinusoidPlanPtr plan = MakeSinusoidPlan(8, 10000.0);
  PrimeLastError();
  EXPECT_EQ(posenc_sinusoid_plan_freqs(plan.get(), nullptr), POSENC_ERR_INVALID_ARGUMENT);
  ExpectLastError("posenc_sinusoid_plan_freqs", "freqs", "NULL freqs");
  posenc_sinusoid_plan_destroy(nullptr);  // a no-op, must not crash
}

// w_i = base^(-2i/d) in double. Against powl with the exponent exact in long double: a
// double computation rounds the exponent 2i/d (moving w_i by up to |ln base| * 2^-53,
// relative), then pow and a reciprocal or sign change add about 1.5 ulp.
TEST(SinusoidPlan, DefaultFrequenciesArePowersOfTheBase) {
  for (size_t dim : {1, 2, 3, 7, 64, 127, 128, 4096})
    for (double base : {10000.0, 500000.0, 2.0, 0.5, 1e-3}) {
      const SinusoidPlanPtr plan = MakeSinusoidPlan(dim, base);
      ASSERT_NE(plan, nullptr);
      const std::vector<double> freqs = SinusoidPlanFreqs(plan.get());
      ASSERT_EQ(freqs.size(), SinusoidPairCount(dim));
      const double relative_bound = std::fabs(std::log(base)) * 0x1p-53 + 3 * 0x1p-52;
      for (size_t i = 0; i < freqs.size(); ++i) {
        const long double exponent = -2.0L * static_cast<long double>(i) / dim;
        const long double exact = std::pow(static_cast<long double>(base), exponent);
        EXPECT_LE(static_cast<double>(std::fabs(freqs[i] - exact) / exact), relative_bound)
            << "d " << dim << " base " << base << " pair " << i << ": w = " << freqs[i]
            << ", base^(-2i/d) = " << static_cast<double>(exact);
      }
      if (HasFailure()) return;
    }
}

TEST(SinusoidPlan, FrequenciesFromTheUserAreKeptExactly) {
  const std::vector<double> given = {1.0, -0.0, 3.7e-300, -4.0, 0.1, 1024.0, 5e-324};
  for (size_t dim : {13, 14}) {  // ceil(d/2) = 7 for both
    const SinusoidPlanPtr plan = MakeSinusoidPlanFromFreqs(dim, given);
    ASSERT_NE(plan, nullptr);
    const std::vector<double> freqs = SinusoidPlanFreqs(plan.get());
    ASSERT_EQ(freqs.size(), given.size());
    for (size_t i = 0; i < given.size(); ++i)
      EXPECT_EQ(std::memcmp(&freqs[i], &given[i], sizeof(double)), 0)
          << "d " << dim << " pair " << i << ": " << freqs[i] << " vs " << given[i];
  }
}

constexpr size_t kDim = 8;
constexpr size_t kRows = 3;

enum class Entry { kFill, kTimesteps, kAdd };

const char* EntryName(Entry e) {
  return e == Entry::kFill ? "fill" : e == Entry::kTimesteps ? "fill_timesteps" : "add";
}

// Everything the three entry points take; each uses the fields it has.
struct SinusoidCall {
  Entry entry;
  const posenc_sinusoid_plan* plan;
  size_t n_rows;
  const int32_t* positions;
  int32_t start_pos;
  const float* timesteps;
  float* out;
  size_t row_stride;
  unsigned flags;

  const char* Function() const {
    switch (entry) {
      case Entry::kFill:
        return "posenc_sinusoid_fill_f32";
      case Entry::kTimesteps:
        return "posenc_sinusoid_fill_timesteps_f32";
      case Entry::kAdd:
        return "posenc_sinusoid_add_f32";
    }
    return "";
  }
  posenc_status Invoke() const {
    switch (entry) {
      case Entry::kFill:
        return posenc_sinusoid_fill_f32(plan, n_rows, positions, start_pos, out, row_stride, flags);
      case Entry::kTimesteps:
        return posenc_sinusoid_fill_timesteps_f32(plan, n_rows, timesteps, out, row_stride, flags);
      case Entry::kAdd:
        return posenc_sinusoid_add_f32(plan, n_rows, positions, start_pos, out, row_stride, flags);
    }
    return POSENC_ERR_INVALID_ARGUMENT;
  }
};

class SinusoidArgumentsTest : public testing::Test {
 protected:
  // Three rows of d = 8 at buffer + 16, with a row stride of 10 and guards around them.
  SinusoidArgumentsTest() : plan_(MakeSinusoidPlan(kDim, 10000.0)), buffer_(128) {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = 0.5f + static_cast<float>(i);
  }

  float* out() { return buffer_.data() + 16; }

  SinusoidCall ValidCall(Entry entry) {
    return SinusoidCall{entry,      plan_.get(), kRows,
                        positions_, 0,           timesteps_,
                        out(),      10,          POSENC_SINUSOID_INTERLEAVED};
  }

  // The call is refused, with a detail naming `argument`, and no element of the buffer
  // changed.
  void ExpectRejected(const SinusoidCall& call, const std::string& what, const char* argument) {
    ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_, what, argument);
  }

  SinusoidPlanPtr plan_;
  AlignedFloats buffer_;
  int32_t positions_[kRows] = {3, -1, 70000};
  float timesteps_[kRows] = {0.5f, 7.0f, 1e6f};
};

TEST_F(SinusoidArgumentsTest, BaselineCallsAreValidAndWrite) {
  for (Entry entry : {Entry::kFill, Entry::kTimesteps, Entry::kAdd}) {
    const AlignedFloats before = buffer_;
    ASSERT_EQ(ValidCall(entry).Invoke(), POSENC_OK) << EntryName(entry);
    EXPECT_NE(FirstBitwiseDifference(before, buffer_), -1) << EntryName(entry);
  }
}

struct InvalidCase {
  const char* what;
  const char* argument;  // the argument posenc_last_error() names ("out" is x for add)
  std::function<void(SinusoidCall&)> mutate;
  bool timesteps_too;  // false: only fill and add (positions / start_pos cases)
};

std::vector<InvalidCase> InvalidCases() {
  const size_t kHuge = SIZE_MAX / 2 + 1;
  return {
      {"NULL plan", "plan", [](SinusoidCall& c) { c.plan = nullptr; }, true},
      {"NULL out, 3 rows", "out", [](SinusoidCall& c) { c.out = nullptr; }, true},
      {"NULL out, 1 row", "out",
       [](SinusoidCall& c) {
         c.out = nullptr;
         c.n_rows = 1;
       },
       true},
      {"unknown flag bit 4", "flags", [](SinusoidCall& c) { c.flags |= 16u; }, true},
      {"unknown flag bit 5", "flags", [](SinusoidCall& c) { c.flags |= 32u; }, true},
      {"unknown flag bit 31", "flags", [](SinusoidCall& c) { c.flags |= 1u << 31; }, true},
      {"layout 3 (SIN_COS | COS_SIN)", "flags",
       [](SinusoidCall& c) { c.flags = POSENC_SINUSOID_SIN_COS | POSENC_SINUSOID_COS_SIN; }, true},
      {"layout 3 with F32_ANGLES", "flags",
       [](SinusoidCall& c) {
         c.flags = POSENC_SINUSOID_SIN_COS | POSENC_SINUSOID_COS_SIN | POSENC_SINUSOID_F32_ANGLES;
       },
       true},
      {"row_stride 1 < d", "row_stride", [](SinusoidCall& c) { c.row_stride = 1; }, true},
      {"row_stride d - 1", "row_stride", [](SinusoidCall& c) { c.row_stride = kDim - 1; }, true},
      {"start_pos + n_rows - 1 == INT32_MAX + 1", "start_pos",
       [](SinusoidCall& c) {
         c.positions = nullptr;
         c.start_pos = INT32_MAX - 1;
       },
       false},
      {"start_pos INT32_MAX, 3 rows", "start_pos",
       [](SinusoidCall& c) {
         c.positions = nullptr;
         c.start_pos = INT32_MAX;
       },
       false},
      {"(n_rows - 1) * row_stride overflows size_t", "row_stride",
       [=](SinusoidCall& c) { c.row_stride = kHuge; }, true},
      {"(n_rows - 1) * row_stride + d overflows size_t", "row_stride",
       [](SinusoidCall& c) { c.row_stride = (SIZE_MAX - kDim) / 2 + 1; }, true},
      {"extent in bytes overflows ptrdiff_t", "row_stride",
       [](SinusoidCall& c) { c.row_stride = PTRDIFF_MAX / 8; }, true},
      {"n_rows * d overflows size_t (dense rows, positions given)", "n_rows",
       [](SinusoidCall& c) {
         c.n_rows = SIZE_MAX / kDim + 1;
         c.row_stride = 0;
       },
       false},
      {"out not float-aligned", "out",
       [](SinusoidCall& c) {
         c.out = reinterpret_cast<float*>(reinterpret_cast<char*>(c.out) + 1);
       },
       true},
      {"out 2 bytes off float alignment", "out",
       [](SinusoidCall& c) {
         c.out = reinterpret_cast<float*>(reinterpret_cast<char*>(c.out) + 2);
       },
       true},
  };
}

// Every invalid call, for each entry point and in every mode.
TEST_F(SinusoidArgumentsTest, InvalidCallsAreRejectedAndWriteNothing) {
  for (Entry entry : {Entry::kFill, Entry::kTimesteps, Entry::kAdd})
    for (unsigned flags : SinusoidModes())
      for (const InvalidCase& bad : InvalidCases()) {
        if (entry == Entry::kTimesteps && !bad.timesteps_too) continue;
        SinusoidCall call = ValidCall(entry);
        call.flags = flags;
        bad.mutate(call);
        const bool out = std::string(bad.argument) == "out";
        ExpectRejected(
            call,
            std::string(EntryName(entry)) + ": " + bad.what + " (" + SinusoidModeName(flags) + ")",
            out && entry == Entry::kAdd ? "x" : bad.argument);
      }
}

// A bad timestep anywhere, also only in the last row, is found before anything is written.
TEST_F(SinusoidArgumentsTest, BadTimestepsAreRejectedAndWriteNothing) {
  const float bad_values[] = {NAN,           -NAN,           INFINITY, -INFINITY,
                              2147483648.0f, -2147483648.0f, 3e9f,     -1e38f};
  for (size_t row = 0; row < kRows; ++row)
    for (float value : bad_values)
      for (unsigned flags : SinusoidModes()) {
        float timesteps[kRows] = {0.5f, 7.0f, 1e6f};
        timesteps[row] = value;
        SinusoidCall call = ValidCall(Entry::kTimesteps);
        call.timesteps = timesteps;
        call.flags = flags;
        ExpectRejected(call,
                       "timestep " + std::to_string(value) + " in row " + std::to_string(row) +
                           " (" + SinusoidModeName(flags) + ")",
                       "timesteps");
        EXPECT_EQ(LastErrorArgument(), "timesteps[" + std::to_string(row) + "]");
      }
  SinusoidCall call = ValidCall(Entry::kTimesteps);
  call.timesteps = nullptr;
  ExpectRejected(call, "NULL timesteps with 3 rows", "timesteps");
}

TEST_F(SinusoidArgumentsTest, EmptyWorkIsAValidNoOp) {
  // No rows, and NULL out and positions.
  const auto no_rows = [](SinusoidCall& c) {
    c.n_rows = 0;
    c.out = nullptr;
    c.positions = nullptr;
  };
  const CallChanges<SinusoidCall> no_ops = {
      {"n_rows 0, NULL out, NULL positions/timesteps",
       [=](SinusoidCall& c) {
         no_rows(c);
         c.timesteps = nullptr;
       }},
      {"n_rows 0, start_pos INT32_MAX, NULL out",
       [=](SinusoidCall& c) {
         no_rows(c);
         c.start_pos = INT32_MAX;
       }},
      {"n_rows 0, valid out", [](SinusoidCall& c) { c.n_rows = 0; }},
  };
  for (Entry entry : {Entry::kFill, Entry::kTimesteps, Entry::kAdd})
    ExpectChangedCallsReturnAndWriteNothing(ValidCall(entry), no_ops, POSENC_OK, buffer_,
                                            std::string(EntryName(entry)) + ": ");
}

TEST_F(SinusoidArgumentsTest, ValidUnusualCallsAreAccepted) {
  const CallChanges<SinusoidCall> valid = {
      {"row_stride 0 (dense)", [](SinusoidCall& c) { c.row_stride = 0; }},
      {"row_stride == d", [](SinusoidCall& c) { c.row_stride = kDim; }},
      {"start_pos + n_rows - 1 == INT32_MAX",
       [](SinusoidCall& c) {
         c.positions = nullptr;
         c.start_pos = INT32_MAX - 2;
       }},
      {"start_pos ignored when positions are given",
       [](SinusoidCall& c) { c.start_pos = INT32_MAX; }},
      {"start_pos INT32_MIN",
       [](SinusoidCall& c) {
         c.positions = nullptr;
         c.start_pos = INT32_MIN;
       }},
      {"out one float past a 64-byte boundary", [](SinusoidCall& c) { c.out += 1; }},
      {"every mode bit that exists",
       [](SinusoidCall& c) { c.flags = POSENC_SINUSOID_COS_SIN | POSENC_SINUSOID_F32_ANGLES; }},
  };
  for (Entry entry : {Entry::kFill, Entry::kTimesteps, Entry::kAdd})
    ExpectChangedCallsReturn(ValidCall(entry), valid, POSENC_OK,
                             std::string(EntryName(entry)) + ": ");
}

// The largest and smallest float timesteps with |t| < 2^31, -0 and subnormals are valid.
TEST_F(SinusoidArgumentsTest, ExtremeValidTimesteps) {
  float timesteps[kRows] = {2147483520.0f, -2147483520.0f, -0.0f};
  SinusoidCall call = ValidCall(Entry::kTimesteps);
  call.timesteps = timesteps;
  EXPECT_EQ(call.Invoke(), POSENC_OK);
  timesteps[0] = 1e-45f;
  timesteps[1] = -1e-45f;
  timesteps[2] = 0.0f;
  EXPECT_EQ(call.Invoke(), POSENC_OK);
}

}  // namespace
}  // namespace posenc_test
