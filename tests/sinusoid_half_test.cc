// The bf16 and f16 sinusoidal functions (fill, fill from timesteps, add) on every ISA. Each
// value must be, bit for bit, the same ISA's f32 value rounded to the storage type (for add:
// the f32 add on the embeddings widened to float), and within the header's bounds of the
// scalar variant and of the long double reference plus half an ulp of the storage type. On
// widths around every vector width (2-byte elements end their partial vectors at other byte
// counts than floats), every layout and angle mode, row counts around the re-anchoring,
// strides whose gaps hold NaN sentinels, rows misaligned by one or three elements, tables
// next to guard pages; and the argument checks of the f32 functions, nothing written on
// error.
#include <posenc.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "half_harness.h"
#include "sinusoid_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr uint32_t kSeed = 20240614;

// The shape's operation, in 16-bit storage, on rows starting at out.
posenc_status RunHalf(Storage s, const SinusoidShape& shape, const posenc_sinusoid_plan* plan,
                      uint16_t* out) {
  const int32_t* positions = shape.positions.empty() ? nullptr : shape.positions.data();
  const bool bf16 = s == Storage::kBf16;
  switch (shape.op) {
    case SinusoidOp::kFill:
      return (bf16 ? posenc_sinusoid_fill_bf16 : posenc_sinusoid_fill_f16)(
          plan, shape.n_rows, positions, shape.start_pos, out, shape.row_stride, shape.flags);
    case SinusoidOp::kFillTimesteps:
      return (bf16 ? posenc_sinusoid_fill_timesteps_bf16 : posenc_sinusoid_fill_timesteps_f16)(
          plan, shape.n_rows, shape.timesteps.data(), out, shape.row_stride, shape.flags);
    case SinusoidOp::kAdd:
      return (bf16 ? posenc_sinusoid_add_bf16 : posenc_sinusoid_add_f16)(
          plan, shape.n_rows, positions, shape.start_pos, out, shape.row_stride, shape.flags);
  }
  return POSENC_ERR_INVALID_ARGUMENT;
}

// A float problem and its 16-bit twin at the same element indices. For add, every embedding
// is a value of the storage type in both; every other 16-bit element is a NaN sentinel.
struct HalfProblem {
  HalfProblem(Storage s, const SinusoidShape& shape)
      : storage(s), problem(shape, kSeed), input(problem.input().size()) {
    AlignedFloats& x = problem.mutable_input();
    for (size_t i = 0; i < input.size(); ++i) {
      if (shape.op == SinusoidOp::kAdd && problem.InRow(i)) {
        x[i] = RoundToStorage(s, x[i]);
        input.Set(i, EncodeHalf(s, x[i]));
      } else {
        input.Set(i, HalfNaNSentinel(s, i));
      }
    }
  }

  // A copy of the input after the 16-bit operation with `isa` made active.
  HalfBuffer RunWithIsa(const posenc_sinusoid_plan* plan, posenc_isa isa) const {
    HalfBuffer out = input;
    EXPECT_EQ(posenc_set_isa(isa), POSENC_OK) << posenc_isa_name(isa);
    EXPECT_EQ(RunHalf(storage, problem.shape(), plan, out.data() + problem.Index(0, 0)), POSENC_OK)
        << StorageName(storage) << " " << posenc_isa_name(isa);
    return out;
  }

  Storage storage;
  SinusoidProblem problem;
  HalfBuffer input;
};

// Every row element of out is the f32 output's element rounded to the storage type, bit for
// bit (any NaN where that is NaN); every other element is still its input.
testing::AssertionResult IsRoundedF32(const HalfProblem& hp, const HalfBuffer& out,
                                      const AlignedFloats& f32) {
  size_t differences = 0;
  std::ostringstream first;
  for (size_t i = 0; i < out.size(); ++i) {
    const bool in_row = hp.problem.InRow(i);
    const uint16_t want = in_row ? ToHalfBits(hp.storage, f32[i]) : hp.input.Get(i);
    const uint16_t got = out.Get(i);
    if (got == want || (in_row && std::isnan(f32[i]) && IsHalfNaN(hp.storage, got))) continue;
    if (differences++ == 0)
      first << "first at buffer index " << i
            << (in_row ? " (row element, f32 value " : " (outside the rows")
            << (in_row ? std::to_string(f32[i]) + ")" : ")") << ": got "
            << DescribeHalf(hp.storage, got) << ", expected " << DescribeHalf(hp.storage, want);
  }
  if (differences == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << differences << " element(s) differ; " << first.str();
}

// Every row element of out, decoded, is within bound plus half an ulp of the storage type
// (plus, for add, one float rounding of the sum) of the expected value.
testing::AssertionResult RowsWithinPlusHalfUlp(const HalfProblem& hp, const HalfBuffer& out,
                                               const RowValues& expected, double bound) {
  const SinusoidShape& s = hp.problem.shape();
  size_t failures = 0;
  std::ostringstream first;
  for (size_t r = 0; r < s.n_rows; ++r)
    for (size_t j = 0; j < s.dim; ++j) {
      const double got = DecodeHalf(hp.storage, out.Get(hp.problem.Index(r, j)));
      const double want = expected[r * s.dim + j];
      const double magnitude = std::max(std::fabs(got), std::fabs(want));
      double allowed = bound + HalfUlp(hp.storage, magnitude);
      if (s.op == SinusoidOp::kAdd) allowed += FLT_EPSILON * magnitude;
      if (WithinBound(got, want, allowed) || failures++ > 0) continue;
      first << "first at row " << r << " column " << j << ": got " << got << ", expected " << want
            << ", allowed " << allowed;
    }
  if (failures == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << failures << " row element(s) out of bound; " << first.str();
}

// The shape in both storage types with `isa`: bit for bit the same ISA's f32 result rounded,
// within the bounds of scalar f32 and (with_reference) of the reference.
void ExpectRoundedF32(posenc_isa isa, const SinusoidShape& shape, bool with_reference = true) {
  const SinusoidPlanPtr plan = MakeSinusoidPlan(shape);
  ASSERT_NE(plan, nullptr);
  for (Storage storage : kStorages) {
    SCOPED_TRACE(std::string(StorageName(storage)) + " " + Describe(shape));
    const HalfProblem hp(storage, shape);
    const AlignedFloats f32 = RunSinusoidWithIsa(hp.problem, plan.get(), isa);
    const HalfBuffer out = hp.RunWithIsa(plan.get(), isa);
    EXPECT_TRUE(IsRoundedF32(hp, out, f32)) << posenc_isa_name(isa) << " vs its f32, rounded";
    const AlignedFloats scalar = RunSinusoidWithIsa(hp.problem, plan.get(), POSENC_ISA_SCALAR);
    EXPECT_TRUE(RowsWithinPlusHalfUlp(hp, out, FromOutput(hp.problem, scalar),
                                      POSENC_SINUSOID_SIMD_TOLERANCE))
        << posenc_isa_name(isa) << " vs scalar f32";
    if (!with_reference) continue;
    EXPECT_TRUE(RowsWithinPlusHalfUlp(
        hp, out, SinusoidReference(hp.problem, SinusoidPlanFreqs(plan.get())), kSinusoidValueBound))
        << posenc_isa_name(isa) << " vs reference";
  }
}

void ExpectRoundedF32(posenc_isa isa, const std::vector<SinusoidShape>& shapes) {
  for (const SinusoidShape& shape : shapes) {
    ExpectRoundedF32(isa, shape);
    if (testing::Test::HasFailure()) return;  // one case's report is enough
  }
}

SinusoidShape Shape(SinusoidOp op, size_t dim, size_t n_rows) {
  SinusoidShape s;
  s.op = op;
  s.dim = dim;
  s.n_rows = n_rows;
  return s;
}

constexpr SinusoidOp kOps[] = {SinusoidOp::kFill, SinusoidOp::kFillTimesteps, SinusoidOp::kAdd};

// Positions for each shape: consecutive from `start` and random ones (timesteps: random).
std::vector<SinusoidShape> WithPositions(const std::vector<SinusoidShape>& shapes, int32_t start) {
  std::mt19937 rng(kSeed);
  std::vector<SinusoidShape> out;
  for (SinusoidShape s : shapes) {
    if (s.op == SinusoidOp::kFillTimesteps) {
      s.timesteps = RandomTimesteps(rng, s.n_rows);
      out.push_back(s);
      continue;
    }
    s.start_pos = start;
    out.push_back(s);
    s.positions = RandomPositions(rng, s.n_rows);
    out.push_back(s);
  }
  return out;
}

// d = 1..33 covers every tail of 4, 8 and 16 lanes in every layout; the rest cross several
// vectors and the pair chunks of the SIMD code.
std::vector<SinusoidShape> WidthsAroundVectorWidths(SinusoidOp op) {
  std::vector<size_t> dims;
  for (size_t d = 1; d <= 33; ++d) dims.push_back(d);
  for (size_t d : {63, 64, 65, 127, 128, 129, 511, 513, 1025}) dims.push_back(d);
  std::vector<SinusoidShape> shapes;
  for (size_t d : dims) shapes.push_back(Shape(op, d, 3));
  return WithPositions(WithEverySinusoidMode(shapes), 4093);
}

// Consecutive rows around the 256-row re-anchoring of the SIMD variants, ending at INT32_MAX.
std::vector<SinusoidShape> RowCounts(SinusoidOp op) {
  std::vector<SinusoidShape> shapes;
  for (size_t rows : {1, 5, 63, 65, 257})  // around anchors (64; 8 above 256 pairs), blocks (256)
    for (size_t d : {1, 7, 16, 33})
      for (int32_t start : {-300, INT32_MAX - static_cast<int32_t>(rows - 1)}) {
        SinusoidShape s = Shape(op, d, rows);
        s.start_pos = start;
        shapes.push_back(s);
      }
  return WithEachFlagValue(shapes, {POSENC_SINUSOID_INTERLEAVED, POSENC_SINUSOID_COS_SIN,
                                    POSENC_SINUSOID_SIN_COS | POSENC_SINUSOID_F32_ANGLES});
}

// Strides larger than d (gaps of NaN sentinels), and rows one or three elements past a
// 64-byte boundary (2 or 6 bytes: with an odd stride every row starts at another alignment).
std::vector<SinusoidShape> StridesAndMisalignment() {
  std::vector<SinusoidShape> shapes;
  for (SinusoidOp op : kOps)
    for (size_t d : {1, 7, 16, 17, 33, 64})
      for (size_t stride : {d, d + 1, d + 16, 2 * d + 3})
        for (size_t misalign : {0, 1, 3}) {
          SinusoidShape s = Shape(op, d, 5);
          s.row_stride = stride;
          s.misalign = misalign;
          shapes.push_back(s);
        }
  return WithPositions(WithEverySinusoidMode(shapes), 77);
}

// User frequencies from 0 and 1e-300 (sin values in the f16 subnormal range, or 0) to 4 rad
// per position, and timesteps of every kind.
std::vector<SinusoidShape> FrequenciesAndTimesteps() {
  const double values[] = {0.0, -1.0, 3.7, -4.0, 1e-7, -0.031, 2.5, 1.0, 1e-300};
  std::vector<SinusoidShape> shapes;
  for (SinusoidOp op : kOps)
    for (size_t d : {1, 10, 31, 128}) {
      SinusoidShape s = Shape(op, d, 7);
      for (size_t i = 0; i < SinusoidPairCount(d); ++i)
        s.freqs.push_back(values[(i + d) % 9] * (1.0 + 1e-3 * static_cast<double>(i)));
      shapes.push_back(s);
    }
  std::vector<float> t = {0.0f, -0.0f, 0.5f, 1e-30f, 999.999f, -12345.678f, 1.5e9f, -2147483520.0f};
  for (int q = 0; q < 40; ++q) t.push_back(static_cast<float>(q));
  SinusoidShape s = Shape(SinusoidOp::kFillTimesteps, 33, t.size());
  s.timesteps = t;
  shapes.push_back(s);
  return WithPositions(WithEverySinusoidMode(shapes), -3);
}

class SinusoidHalfTest : public EveryIsaTest {};

TEST_P(SinusoidHalfTest, FillWidthsAroundVectorWidths) {
  ExpectRoundedF32(isa(), WidthsAroundVectorWidths(SinusoidOp::kFill));
}

TEST_P(SinusoidHalfTest, TimestepWidthsAroundVectorWidths) {
  ExpectRoundedF32(isa(), WidthsAroundVectorWidths(SinusoidOp::kFillTimesteps));
}

TEST_P(SinusoidHalfTest, AddWidthsAroundVectorWidths) {
  ExpectRoundedF32(isa(), WidthsAroundVectorWidths(SinusoidOp::kAdd));
}

TEST_P(SinusoidHalfTest, RowCountsAroundReanchoring) {
  ExpectRoundedF32(isa(), RowCounts(SinusoidOp::kFill));
  ExpectRoundedF32(isa(), RowCounts(SinusoidOp::kAdd));
}

TEST_P(SinusoidHalfTest, StridesLeaveGapsUntouchedAndRowsMayBeMisaligned) {
  ExpectRoundedF32(isa(), StridesAndMisalignment());
}

TEST_P(SinusoidHalfTest, UserFrequenciesAndTimesteps) {
  ExpectRoundedF32(isa(), FrequenciesAndTimesteps());
}

// A table as large as the f32 one that is written with non-temporal stores (16-bit rows are
// never streamed), against the f32 table rounded; and a wide row over a long run.
TEST_P(SinusoidHalfTest, LargeTables) {
  SinusoidShape dense = Shape(SinusoidOp::kFill, 4096, 1024);
  dense.start_pos = 70000;
  ExpectRoundedF32(isa(), dense, /*with_reference=*/false);
  SinusoidShape wide = Shape(SinusoidOp::kAdd, 1025, 300);
  wide.start_pos = INT32_MAX - 299;
  ExpectRoundedF32(isa(), wide, /*with_reference=*/false);
}

// Embeddings that are NaN, infinite or at the top of the f16 range: NaN and infinity stay in
// their element, and 65504 + PE stays finite (below 65520) or rounds as the f32 sum does.
TEST_P(SinusoidHalfTest, NonFiniteAndLargeEmbeddings) {
  for (unsigned flags : SinusoidModes()) {
    SinusoidShape s = Shape(SinusoidOp::kAdd, 37, 3);
    s.flags = flags;
    s.start_pos = 5;
    const SinusoidPlanPtr plan = MakeSinusoidPlan(s);
    for (Storage storage : kStorages) {
      SCOPED_TRACE(std::string(StorageName(storage)) + " " + Describe(s));
      HalfProblem hp(storage, s);
      const float special[] = {NAN, INFINITY, -INFINITY, 65504.0f, -65504.0f, 3e38f};
      for (size_t k = 0; k < 6; ++k) {
        const size_t index = hp.problem.Index(k % 3, 3 + 6 * k);
        const float v = RoundToStorage(storage, special[k]);
        hp.problem.mutable_input()[index] = v;
        hp.input.Set(index, EncodeHalf(storage, v));
      }
      const AlignedFloats f32 = RunSinusoidWithIsa(hp.problem, plan.get(), isa());
      EXPECT_TRUE(IsRoundedF32(hp, hp.RunWithIsa(plan.get(), isa()), f32));
    }
  }
}

// Tables whose rows start right after, or end right before, an inaccessible page, for widths
// around the vector widths, both storage types and every mode. Exits with 1 on an error
// status; any access outside the rows kills the process.
[[noreturn]] void WriteNextToGuardPages() {
  const int32_t positions[2] = {3, 70001};
  const float timesteps[2] = {0.5f, 12345.0f};
  for (size_t d : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65, 257}) {
    const size_t rows = 2, n = rows * d;
    const SinusoidPlanPtr plan = MakeSinusoidPlan(d, 10000.0);
    GuardedPages pages((n + 1) / 2);
    if (!pages.ok() || plan == nullptr) std::exit(1);
    uint16_t* at_end = reinterpret_cast<uint16_t*>(pages.AtEnd((n + 1) / 2)) + n % 2;
    for (uint16_t* out : {reinterpret_cast<uint16_t*>(pages.AtStart()), at_end})
      for (Storage storage : kStorages)
        for (unsigned flags : SinusoidModes()) {
          const bool bf16 = storage == Storage::kBf16;
          const auto fill = bf16 ? posenc_sinusoid_fill_bf16 : posenc_sinusoid_fill_f16;
          const auto add = bf16 ? posenc_sinusoid_add_bf16 : posenc_sinusoid_add_f16;
          const auto fill_timesteps =
              bf16 ? posenc_sinusoid_fill_timesteps_bf16 : posenc_sinusoid_fill_timesteps_f16;
          for (size_t i = 0; i < n; ++i) out[i] = bf16 ? 0x3f80 : 0x3c00;  // 1.0
          if (fill(plan.get(), rows, nullptr, 100, out, 0, flags) != POSENC_OK ||
              fill(plan.get(), rows, positions, 0, out, 0, flags) != POSENC_OK ||
              fill_timesteps(plan.get(), rows, timesteps, out, 0, flags) != POSENC_OK ||
              add(plan.get(), rows, nullptr, 100, out, 0, flags) != POSENC_OK ||
              add(plan.get(), rows, positions, 0, out, 0, flags) != POSENC_OK)
            std::exit(1);
        }
  }
  std::exit(0);
}

TEST_P(SinusoidHalfTest, NeverTouchesMemoryOutsideTheRows) {
  ExpectNoAccessNextToGuardPages(WriteNextToGuardPages, isa(), "the 16-bit rows");
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(SinusoidHalfTest);

// ---------------------------------------------------------------------- argument checks

constexpr size_t kDim = 8;
constexpr size_t kRows = 3;

enum class Entry { kFill, kTimesteps, kAdd };

const char* EntryName(Entry e) {
  return e == Entry::kFill ? "fill" : e == Entry::kTimesteps ? "fill_timesteps" : "add";
}

// Everything the 16-bit entry points take. out is a void* so that a pointer off the 2-byte
// alignment can be built without arithmetic on a misaligned uint16_t*.
struct HalfSinusoidCall {
  Storage storage;
  Entry entry;
  const posenc_sinusoid_plan* plan;
  size_t n_rows;
  const int32_t* positions;
  int32_t start_pos;
  const float* timesteps;
  void* out;
  size_t row_stride;
  unsigned flags;

  posenc_status Invoke() const {
    uint16_t* o = static_cast<uint16_t*>(out);
    const bool bf16 = storage == Storage::kBf16;
    switch (entry) {
      case Entry::kFill:
        return (bf16 ? posenc_sinusoid_fill_bf16 : posenc_sinusoid_fill_f16)(
            plan, n_rows, positions, start_pos, o, row_stride, flags);
      case Entry::kTimesteps:
        return (bf16 ? posenc_sinusoid_fill_timesteps_bf16 : posenc_sinusoid_fill_timesteps_f16)(
            plan, n_rows, timesteps, o, row_stride, flags);
      case Entry::kAdd:
        return (bf16 ? posenc_sinusoid_add_bf16 : posenc_sinusoid_add_f16)(
            plan, n_rows, positions, start_pos, o, row_stride, flags);
    }
    return POSENC_ERR_INVALID_ARGUMENT;
  }
};

class SinusoidHalfArgumentsTest : public testing::Test {
 protected:
  // Three rows of d = 8 at element 32 of the buffer, with a row stride of 10 and guards
  // around them; every element holds its own value, so any write shows.
  SinusoidHalfArgumentsTest() : plan_(MakeSinusoidPlan(kDim, 10000.0)), buffer_(256) {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_.Set(i, static_cast<uint16_t>(0x3c00 + i));
  }

  HalfSinusoidCall ValidCall(Storage storage, Entry entry) {
    return HalfSinusoidCall{
        storage, entry,      plan_.get(),         kRows, positions_,
        0,       timesteps_, buffer_.data() + 32, 10,    POSENC_SINUSOID_INTERLEAVED};
  }

  SinusoidPlanPtr plan_;
  HalfBuffer buffer_;
  int32_t positions_[kRows] = {3, -1, 70000};
  float timesteps_[kRows] = {0.5f, 7.0f, 1e6f};
};

std::string What(const HalfSinusoidCall& c, const std::string& what) {
  return std::string(StorageName(c.storage)) + " " + EntryName(c.entry) + ": " + what + " (" +
         SinusoidModeName(c.flags) + ")";
}

TEST_F(SinusoidHalfArgumentsTest, BaselineCallsAreValidAndWrite) {
  for (Storage storage : kStorages)
    for (Entry entry : {Entry::kFill, Entry::kTimesteps, Entry::kAdd}) {
      const AlignedFloats before = buffer_.floats();
      ASSERT_EQ(ValidCall(storage, entry).Invoke(), POSENC_OK);
      EXPECT_NE(FirstBitwiseDifference(before, buffer_.floats()), -1);
    }
}

struct InvalidCase {
  const char* what;
  std::function<void(HalfSinusoidCall&)> mutate;
  bool timesteps_too;  // false: only fill and add (positions / start_pos cases)
};

// The cases of the f32 suite, with the element size of 16-bit storage where it matters.
std::vector<InvalidCase> InvalidCases() {
  const auto bytes_off = [](size_t n) {
    return [n](HalfSinusoidCall& c) { c.out = static_cast<char*>(c.out) + n; };
  };
  return {
      {"NULL plan", [](HalfSinusoidCall& c) { c.plan = nullptr; }, true},
      {"NULL out, 3 rows", [](HalfSinusoidCall& c) { c.out = nullptr; }, true},
      {"NULL out, 1 row",
       [](HalfSinusoidCall& c) {
         c.out = nullptr;
         c.n_rows = 1;
       },
       true},
      {"unknown flag bit 4", [](HalfSinusoidCall& c) { c.flags |= 16u; }, true},
      {"unknown flag bit 31", [](HalfSinusoidCall& c) { c.flags |= 1u << 31; }, true},
      {"layout 3 (SIN_COS | COS_SIN)",
       [](HalfSinusoidCall& c) { c.flags |= POSENC_SINUSOID_SIN_COS | POSENC_SINUSOID_COS_SIN; },
       true},
      {"row_stride 1 < d", [](HalfSinusoidCall& c) { c.row_stride = 1; }, true},
      {"row_stride d - 1", [](HalfSinusoidCall& c) { c.row_stride = kDim - 1; }, true},
      {"start_pos + n_rows - 1 == INT32_MAX + 1",
       [](HalfSinusoidCall& c) {
         c.positions = nullptr;
         c.start_pos = INT32_MAX - 1;
       },
       false},
      {"(n_rows - 1) * row_stride overflows size_t",
       [](HalfSinusoidCall& c) { c.row_stride = SIZE_MAX / 2 + 1; }, true},
      {"(n_rows - 1) * row_stride + d overflows size_t",
       [](HalfSinusoidCall& c) { c.row_stride = (SIZE_MAX - kDim) / 2 + 1; }, true},
      {"extent of 2-byte elements just past PTRDIFF_MAX bytes",
       [](HalfSinusoidCall& c) { c.row_stride = PTRDIFF_MAX / 4 + 1; }, true},
      {"n_rows * d overflows size_t (dense rows, positions given)",
       [](HalfSinusoidCall& c) {
         c.n_rows = SIZE_MAX / kDim + 1;
         c.row_stride = 0;
       },
       false},
      {"out one byte off 2-byte alignment", bytes_off(1), true},
      {"out three bytes off 2-byte alignment", bytes_off(3), true},
  };
}

TEST_F(SinusoidHalfArgumentsTest, InvalidCallsAreRejectedAndWriteNothing) {
  for (Storage storage : kStorages)
    for (Entry entry : {Entry::kFill, Entry::kTimesteps, Entry::kAdd})
      for (unsigned flags : SinusoidModes())
        for (const InvalidCase& bad : InvalidCases()) {
          if (entry == Entry::kTimesteps && !bad.timesteps_too) continue;
          HalfSinusoidCall call = ValidCall(storage, entry);
          call.flags = flags;
          bad.mutate(call);
          ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_.floats(),
                                         What(call, bad.what));
        }
}

TEST_F(SinusoidHalfArgumentsTest, BadTimestepsAreRejectedAndWriteNothing) {
  for (Storage storage : kStorages) {
    for (float value : {NAN, INFINITY, -INFINITY, 2147483648.0f, -3e9f})
      for (size_t row = 0; row < kRows; ++row) {
        float timesteps[kRows] = {0.5f, 7.0f, 1e6f};
        timesteps[row] = value;
        HalfSinusoidCall call = ValidCall(storage, Entry::kTimesteps);
        call.timesteps = timesteps;
        ExpectStatusAndBufferUnchanged(
            call, POSENC_ERR_INVALID_ARGUMENT, buffer_.floats(),
            What(call, "timestep " + std::to_string(value) + " in row " + std::to_string(row)));
      }
    HalfSinusoidCall call = ValidCall(storage, Entry::kTimesteps);
    call.timesteps = nullptr;
    ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_.floats(),
                                   What(call, "NULL timesteps"));
  }
}

TEST_F(SinusoidHalfArgumentsTest, EmptyWorkIsAValidNoOp) {
  for (Storage storage : kStorages)
    for (Entry entry : {Entry::kFill, Entry::kTimesteps, Entry::kAdd}) {
      HalfSinusoidCall call = ValidCall(storage, entry);
      call.n_rows = 0;
      call.out = nullptr;
      call.positions = nullptr;
      call.timesteps = nullptr;
      call.start_pos = INT32_MAX;
      ExpectStatusAndBufferUnchanged(call, POSENC_OK, buffer_.floats(), What(call, "n_rows 0"));
    }
}

// 2-byte alignment is enough: rows at an odd element (2 bytes off a float boundary), dense
// rows and the limits of the positions are accepted.
TEST_F(SinusoidHalfArgumentsTest, ValidUnusualCallsAreAccepted) {
  const CallChanges<HalfSinusoidCall> valid = {
      {"out 2 bytes off float alignment",
       [](HalfSinusoidCall& c) { c.out = static_cast<char*>(c.out) + 2; }},
      {"out 6 bytes off float alignment",
       [](HalfSinusoidCall& c) { c.out = static_cast<char*>(c.out) + 6; }},
      {"row_stride 0 (dense)", [](HalfSinusoidCall& c) { c.row_stride = 0; }},
      {"start_pos + n_rows - 1 == INT32_MAX",
       [](HalfSinusoidCall& c) {
         c.positions = nullptr;
         c.start_pos = INT32_MAX - 2;
       }},
      {"every mode bit that exists",
       [](HalfSinusoidCall& c) { c.flags = POSENC_SINUSOID_COS_SIN | POSENC_SINUSOID_F32_ANGLES; }},
  };
  for (Storage storage : kStorages)
    for (Entry entry : {Entry::kFill, Entry::kTimesteps, Entry::kAdd})
      ExpectChangedCallsReturn(ValidCall(storage, entry), valid, POSENC_OK,
                               std::string(StorageName(storage)) + " " + EntryName(entry) + ": ");
}

}  // namespace
}  // namespace posenc_test
