// Every sinusoidal-encoding variant (fill, fill from timesteps, add) against the scalar
// variant (POSENC_SINUSOID_SIMD_TOLERANCE, plus one rounding of the sum for add) and against
// the long double reference (2^-22), on widths around every vector width, row counts around
// the 256-row re-anchoring of the SIMD variants, strides, misaligned rows and every kind of
// position, with guards around every buffer and sentinels between rows.
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "sinusoid_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr uint32_t kSeed = 20240612;

// Runs the shape with the scalar variant and with `isa`; checks that nothing outside the rows
// changed, that `isa` is within the documented bound of scalar, and that both are within the
// header's bound of the reference.
// with_reference = false skips the long double reference, for tables too large to check
// against it quickly (their values are checked against the reference elsewhere).
void ExpectVariantMatchesScalar(posenc_isa isa, const SinusoidShape& shape,
                                bool with_reference = true) {
  SCOPED_TRACE(Describe(shape));
  const SinusoidProblem problem(shape, kSeed);
  const SinusoidPlanPtr plan = MakeSinusoidPlan(shape);
  ASSERT_NE(plan, nullptr);
  const AlignedFloats scalar = RunSinusoidWithIsa(problem, plan.get(), POSENC_ISA_SCALAR);
  const AlignedFloats variant = RunSinusoidWithIsa(problem, plan.get(), isa);
  EXPECT_TRUE(UntouchedOutsideRows(problem, scalar)) << "scalar";
  EXPECT_TRUE(UntouchedOutsideRows(problem, variant)) << posenc_isa_name(isa);
  EXPECT_TRUE(
      RowsWithin(problem, variant, FromOutput(problem, scalar), POSENC_SINUSOID_SIMD_TOLERANCE))
      << posenc_isa_name(isa) << " vs scalar";
  if (!with_reference) return;
  const RowValues reference = SinusoidReference(problem, SinusoidPlanFreqs(plan.get()));
  EXPECT_TRUE(RowsWithin(problem, scalar, reference, kSinusoidValueBound)) << "scalar vs reference";
  EXPECT_TRUE(RowsWithin(problem, variant, reference, kSinusoidValueBound))
      << posenc_isa_name(isa) << " vs reference";
}

void ExpectVariantMatchesScalar(posenc_isa isa, const std::vector<SinusoidShape>& shapes) {
  for (const SinusoidShape& shape : shapes) {
    ExpectVariantMatchesScalar(isa, shape);
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

// The rows' positions of a shape: random ones, or consecutive ones from `start`, or (for
// timesteps) random timesteps.
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
    out.push_back(s);  // positions NULL: start_pos + r
    s.positions = RandomPositions(rng, s.n_rows);
    out.push_back(s);
  }
  return out;
}

// d = 1..33 covers every tail of 4, 8 and 16 lanes in every layout (the split layouts start
// their second block at ceil(d/2) or floor(d/2), so odd d misaligns it); the rest cross 2
// and 4 vectors and the 256- to 512-pair chunks of the SIMD code.
std::vector<SinusoidShape> WidthsAroundVectorWidths(SinusoidOp op) {
  std::vector<size_t> dims;
  for (size_t d = 1; d <= 33; ++d) dims.push_back(d);
  for (size_t d : {63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 4096})
    dims.push_back(d);
  std::vector<SinusoidShape> shapes;
  for (size_t d : dims) shapes.push_back(Shape(op, d, 3));
  return WithPositions(WithEverySinusoidMode(shapes), 4093);
}

// Consecutive rows: the SIMD variants step sin/cos from one position to the next and
// re-anchor every 256 rows; runs crossing zero and ending at INT32_MAX.
std::vector<SinusoidShape> RowCounts(SinusoidOp op, const std::vector<unsigned>& modes) {
  std::vector<SinusoidShape> shapes;
  // Around the anchors (every 64 positions; 8 for plans above 256 pairs) and the 256-row
  // blocks, from starts that are not anchors.
  for (size_t rows : {1, 2, 5, 63, 65, 257})
    for (size_t d : {1, 7, 16, 33, 130})
      for (int32_t start : {-300, INT32_MAX - static_cast<int32_t>(rows - 1)}) {
        SinusoidShape s = Shape(op, d, rows);
        s.start_pos = start;
        shapes.push_back(s);
      }
  for (size_t d : {3, 64})
    for (int32_t start : {-300, INT32_MAX - 599}) {
      SinusoidShape s = Shape(op, d, 600);
      s.start_pos = start;
      shapes.push_back(s);
    }
  return WithEachFlagValue(shapes, modes);
}

// Start positions from both ends of the int32 range, for a width inside one chunk and one
// that needs two.
std::vector<SinusoidShape> StartPositions(SinusoidOp op) {
  std::vector<SinusoidShape> shapes;
  for (int32_t start : {0, 1, -7, 131072, -INT32_MAX, INT32_MIN, INT32_MAX - 15})
    for (size_t d : {64, 514}) {
      SinusoidShape s = Shape(op, d, 16);
      s.start_pos = start;
      shapes.push_back(s);
    }
  return WithEverySinusoidMode(shapes);
}

// Explicit positions that a stepping kernel must not mistake for one run: runs that restart,
// a run broken in its middle, repeats, a descending run, and a jump from INT32_MAX to
// INT32_MIN; a run longer than 256 rows inside the array.
std::vector<int32_t> PackedSequencePositions() {
  std::vector<int32_t> p;
  for (int32_t q = 0; q < 300; ++q) p.push_back(q);
  for (int32_t q = 1000; q < 1130; ++q) p.push_back(q);
  p.push_back(5000);  // breaks the run 1000..1400 in its middle
  for (int32_t q = 1131; q < 1200; ++q) p.push_back(q);
  for (int32_t q : {7, 7, 7, 8, 8, 0, 0}) p.push_back(q);
  for (int32_t q = 40; q > 20; --q) p.push_back(q);
  for (int32_t q = INT32_MAX - 46; q < INT32_MAX; ++q) p.push_back(q);
  for (int32_t q : {INT32_MAX, INT32_MIN, INT32_MIN + 1, INT32_MIN + 2, -1, 0, 1}) p.push_back(q);
  return p;
}

std::vector<SinusoidShape> ExplicitPositionPatterns(SinusoidOp op) {
  std::vector<SinusoidShape> shapes;
  const std::vector<int32_t> positions = PackedSequencePositions();
  for (size_t d : {33, 64}) {
    SinusoidShape s = Shape(op, d, positions.size());
    s.positions = positions;
    shapes.push_back(s);
  }
  return WithEverySinusoidMode(shapes);
}

std::vector<SinusoidShape> TimestepPatterns() {
  std::vector<float> t = {0.0f,    -0.0f,         0.5f,          -0.5f,       1e-30f,
                          1e-3f,   999.999f,      -12345.678f,   16777217.0f, 1.5e9f,
                          -1.5e9f, 2147483520.0f, -2147483520.0f};
  for (int q = 0; q < 300; ++q) t.push_back(static_cast<float>(q));  // a run of integers
  for (int q = 0; q < 20; ++q) t.push_back(0.25f * static_cast<float>(q));
  for (int q = 0; q < 5; ++q) t.push_back(981.0f);
  std::vector<SinusoidShape> shapes;
  for (size_t d : {32, 33, 320}) {
    SinusoidShape s = Shape(SinusoidOp::kFillTimesteps, d, t.size());
    s.timesteps = t;
    shapes.push_back(s);
  }
  return WithEverySinusoidMode(shapes);
}

// row_stride == d passed explicitly, and strides larger than d whose gaps hold sentinels.
std::vector<SinusoidShape> RowStrides() {
  std::vector<SinusoidShape> shapes;
  for (SinusoidOp op : {SinusoidOp::kFill, SinusoidOp::kFillTimesteps, SinusoidOp::kAdd})
    for (size_t d : {1, 7, 16, 33, 64, 129})
      for (size_t stride : {d, d + 1, d + 5, d + 16, 2 * d + 3}) {
        SinusoidShape s = Shape(op, d, 5);
        s.row_stride = stride;
        shapes.push_back(s);
      }
  return WithPositions(WithEverySinusoidMode(shapes), 77);
}

// Rows one (or three) floats past a 64-byte boundary; with an odd stride every row starts
// at a different alignment.
std::vector<SinusoidShape> MisalignedRows() {
  std::vector<SinusoidShape> shapes;
  for (SinusoidOp op : {SinusoidOp::kFill, SinusoidOp::kFillTimesteps, SinusoidOp::kAdd})
    for (size_t d : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 129})
      for (size_t stride : {size_t{0}, d + 1})
        for (size_t misalign : {1, 3}) {
          SinusoidShape s = Shape(op, d, 4);
          s.row_stride = stride;
          s.misalign = misalign;
          shapes.push_back(s);
        }
  return WithPositions(WithEverySinusoidMode(shapes), -2);
}

// Plans from user frequencies: zero, negative, tiny and up to 4 rad per position, with odd
// and even d.
std::vector<SinusoidShape> UserFrequencies() {
  const double values[] = {0.0, -1.0, 3.7, -4.0, 1e-7, -0.031, 2.5, 1.0, 1e-300};
  std::vector<SinusoidShape> shapes;
  for (SinusoidOp op : {SinusoidOp::kFill, SinusoidOp::kFillTimesteps, SinusoidOp::kAdd})
    for (size_t d : {1, 2, 9, 10, 31, 32, 127, 128}) {
      SinusoidShape s = Shape(op, d, 7);
      for (size_t i = 0; i < SinusoidPairCount(d); ++i)
        s.freqs.push_back(values[(i + d) % 9] * (1.0 + 1e-3 * static_cast<double>(i)));
      shapes.push_back(s);
    }
  return WithPositions(WithEverySinusoidMode(shapes), -3);
}

// Other bases of the default plan (diffusers' max_period, Llama-3-like 500000, below 1).
std::vector<SinusoidShape> OtherBases() {
  std::vector<SinusoidShape> shapes;
  for (double base : {2.0, 0.5, 500000.0, 1e-3, 1e6})
    for (size_t d : {6, 33, 128}) {
      SinusoidShape s = Shape(SinusoidOp::kFill, d, 4);
      s.base = base;
      shapes.push_back(s);
    }
  return WithPositions(WithEverySinusoidMode(shapes), 1000);
}

class SinusoidVariantTest : public EveryIsaTest {};

TEST_P(SinusoidVariantTest, FillWidthsAroundVectorWidths) {
  ExpectVariantMatchesScalar(isa(), WidthsAroundVectorWidths(SinusoidOp::kFill));
}

TEST_P(SinusoidVariantTest, AddWidthsAroundVectorWidths) {
  ExpectVariantMatchesScalar(isa(), WidthsAroundVectorWidths(SinusoidOp::kAdd));
}

TEST_P(SinusoidVariantTest, TimestepWidthsAroundVectorWidths) {
  ExpectVariantMatchesScalar(isa(), WidthsAroundVectorWidths(SinusoidOp::kFillTimesteps));
}

TEST_P(SinusoidVariantTest, FillRowCountsAroundReanchoring) {
  ExpectVariantMatchesScalar(isa(), RowCounts(SinusoidOp::kFill, SinusoidModes()));
}

TEST_P(SinusoidVariantTest, AddRowCountsAroundReanchoring) {
  const std::vector<unsigned> two_modes = {POSENC_SINUSOID_INTERLEAVED,
                                           POSENC_SINUSOID_SIN_COS | POSENC_SINUSOID_F32_ANGLES};
  ExpectVariantMatchesScalar(isa(), RowCounts(SinusoidOp::kAdd, two_modes));
}

// One width that needs more than two 512-pair chunks, over a run of 600 rows.
TEST_P(SinusoidVariantTest, WideRowsOverLongRun) {
  for (SinusoidOp op : {SinusoidOp::kFill, SinusoidOp::kAdd}) {
    SinusoidShape s = Shape(op, 1025, 600);
    s.start_pos = INT32_MAX - 599;
    s.flags = op == SinusoidOp::kFill ? POSENC_SINUSOID_COS_SIN : POSENC_SINUSOID_INTERLEAVED;
    ExpectVariantMatchesScalar(isa(), s);
  }
}

// Tables of 16 MiB and more may be written with non-temporal stores (whole vectors at
// vector-aligned addresses, the rest stored normally): a few rows spread out by a large
// stride (aligned, odd and misaligned, so rows alternate alignment) over a run crossing a
// re-anchoring, and one dense 4096 x 1024 table.
TEST_P(SinusoidVariantTest, TablesOf16MiBAndMore) {
  const size_t kStreamFloats = (size_t{16} << 20) / sizeof(float);
  const struct {
    SinusoidOp op;
    size_t dim, n_rows, misalign;
    unsigned flags;
  } spread[] = {
      {SinusoidOp::kFill, 33, 300, 0, POSENC_SINUSOID_INTERLEAVED},
      {SinusoidOp::kFill, 4099, 3, 1, POSENC_SINUSOID_SIN_COS},
      {SinusoidOp::kFillTimesteps, 64, 300, 1, POSENC_SINUSOID_COS_SIN},
  };
  for (const auto& c : spread) {
    SinusoidShape s = Shape(c.op, c.dim, c.n_rows);
    s.row_stride = kStreamFloats / (c.n_rows - 1) + c.misalign;  // odd when misaligned
    s.misalign = c.misalign;
    s.flags = c.flags;
    std::mt19937 rng(kSeed);
    s.timesteps = RandomTimesteps(rng, c.n_rows);
    s.start_pos = 1000;
    ExpectVariantMatchesScalar(isa(), s);
  }
  SinusoidShape dense = Shape(SinusoidOp::kFill, 4096, 1024);
  dense.start_pos = 70000;
  ExpectVariantMatchesScalar(isa(), dense, /*with_reference=*/false);
}

TEST_P(SinusoidVariantTest, StartPositions) {
  ExpectVariantMatchesScalar(isa(), StartPositions(SinusoidOp::kFill));
  ExpectVariantMatchesScalar(isa(), StartPositions(SinusoidOp::kAdd));
}

TEST_P(SinusoidVariantTest, ExplicitPositionPatterns) {
  ExpectVariantMatchesScalar(isa(), ExplicitPositionPatterns(SinusoidOp::kFill));
  ExpectVariantMatchesScalar(isa(), ExplicitPositionPatterns(SinusoidOp::kAdd));
}

TEST_P(SinusoidVariantTest, TimestepPatterns) {
  ExpectVariantMatchesScalar(isa(), TimestepPatterns());
}

TEST_P(SinusoidVariantTest, RowStridesLeaveGapsUntouched) {
  ExpectVariantMatchesScalar(isa(), RowStrides());
}

TEST_P(SinusoidVariantTest, MisalignedRows) { ExpectVariantMatchesScalar(isa(), MisalignedRows()); }

TEST_P(SinusoidVariantTest, UserFrequencies) {
  ExpectVariantMatchesScalar(isa(), UserFrequencies());
}

TEST_P(SinusoidVariantTest, OtherBases) { ExpectVariantMatchesScalar(isa(), OtherBases()); }

// NaN and infinity in the embeddings propagate as IEEE addition says, into their own element
// only (the reference adds them in long double).
TEST_P(SinusoidVariantTest, NonFiniteEmbeddingsStayInTheirElement) {
  for (unsigned flags : SinusoidModes()) {
    SinusoidShape s = Shape(SinusoidOp::kAdd, 37, 3);
    s.flags = flags;
    s.start_pos = 5;
    SinusoidProblem problem(s, kSeed);
    AlignedFloats& x = problem.mutable_input();
    x[problem.Index(0, 0)] = NAN;
    x[problem.Index(0, 17)] = INFINITY;
    x[problem.Index(1, 36)] = -INFINITY;
    x[problem.Index(2, 8)] = NAN;
    const SinusoidPlanPtr plan = MakeSinusoidPlan(s);
    const AlignedFloats scalar = RunSinusoidWithIsa(problem, plan.get(), POSENC_ISA_SCALAR);
    const AlignedFloats variant = RunSinusoidWithIsa(problem, plan.get(), isa());
    SCOPED_TRACE(Describe(s));
    EXPECT_TRUE(UntouchedOutsideRows(problem, variant));
    EXPECT_TRUE(
        RowsWithin(problem, variant, FromOutput(problem, scalar), POSENC_SINUSOID_SIMD_TOLERANCE));
    EXPECT_TRUE(RowsWithin(problem, variant,
                           SinusoidReference(problem, SinusoidPlanFreqs(plan.get())),
                           kSinusoidValueBound));
  }
}

// The contract's "add" is one float addition of the scalar fill value per element: the
// scalar variant's add equals x + fill, rounded to float, bit for bit.
TEST(SinusoidScalarAdd, IsOneFloatAdditionOfTheScalarFill) {
  ASSERT_EQ(posenc_set_isa(POSENC_ISA_SCALAR), POSENC_OK);
  for (size_t d : {1, 6, 33, 128, 257})
    for (unsigned flags : SinusoidModes())
      for (bool explicit_positions : {false, true}) {
        SinusoidShape s = Shape(SinusoidOp::kAdd, d, 300);
        s.flags = flags;
        s.start_pos = INT32_MAX - 299;
        std::mt19937 rng(kSeed);
        if (explicit_positions) s.positions = RandomPositions(rng, s.n_rows);
        SCOPED_TRACE(Describe(s));
        const SinusoidProblem problem(s, kSeed);
        const SinusoidPlanPtr plan = MakeSinusoidPlan(s);
        AlignedFloats added = problem.input();
        ASSERT_EQ(problem.Run(plan.get(), added), POSENC_OK);
        std::vector<float> table(s.n_rows * d);
        ASSERT_EQ(posenc_sinusoid_fill_f32(plan.get(), s.n_rows,
                                           explicit_positions ? s.positions.data() : nullptr,
                                           s.start_pos, table.data(), 0, flags),
                  POSENC_OK);
        size_t mismatches = 0;
        for (size_t r = 0; r < s.n_rows; ++r)
          for (size_t j = 0; j < d; ++j) {
            const size_t index = problem.Index(r, j);
            const float expected = problem.input()[index] + table[r * d + j];
            if (!BitwiseEqual(added[index], expected) && mismatches++ == 0)
              ADD_FAILURE() << "row " << r << " column " << j << ": add gave " << added[index]
                            << ", x + fill = " << problem.input()[index] << " + "
                            << table[r * d + j] << " = " << expected;
          }
        EXPECT_EQ(mismatches, 0u);
        if (HasFailure()) return;
      }
}

// Fills, adds and timestep fills whose rows start right after, or end right before, an
// inaccessible page, for widths around the vector widths and every mode. Exits with 1 on an
// error status; any access outside the rows kills the process.
[[noreturn]] void WriteNextToGuardPages() {
  const int32_t positions[2] = {3, 70001};
  const float timesteps[2] = {0.5f, 12345.0f};
  for (size_t d : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65, 257, 513, 1025}) {
    const size_t rows = 2, n = rows * d;
    const SinusoidPlanPtr plan = MakeSinusoidPlan(d, 10000.0);
    GuardedPages pages(n);
    if (!pages.ok() || plan == nullptr) std::exit(1);
    for (float* out : {pages.AtStart(), pages.AtEnd(n)})
      for (unsigned flags : SinusoidModes()) {
        for (size_t i = 0; i < n; ++i) out[i] = 1.0f;
        if (posenc_sinusoid_fill_f32(plan.get(), rows, nullptr, 100, out, 0, flags) != POSENC_OK ||
            posenc_sinusoid_fill_f32(plan.get(), rows, positions, 0, out, 0, flags) != POSENC_OK ||
            posenc_sinusoid_fill_timesteps_f32(plan.get(), rows, timesteps, out, 0, flags) !=
                POSENC_OK ||
            posenc_sinusoid_add_f32(plan.get(), rows, nullptr, 100, out, 0, flags) != POSENC_OK ||
            posenc_sinusoid_add_f32(plan.get(), rows, positions, 0, out, 0, flags) != POSENC_OK)
          std::exit(1);
      }
  }
  std::exit(0);
}

TEST_P(SinusoidVariantTest, NeverTouchesMemoryOutsideTheRows) {
  ExpectNoAccessNextToGuardPages(WriteNextToGuardPages, isa(), "the rows");
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(SinusoidVariantTest);

}  // namespace
}  // namespace posenc_test
