// Accuracy of every sinusoidal-encoding variant against long double math: integer positions
// up to 2^31 - 1 and float timesteps below 2^31 within 2^-22 of sin/cos of the exact
// product, the float32-angle mode against its own float angle, and the column placement of
// every layout for odd and even d, written out by hand from the header's formulas.
#include <posenc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sinusoid_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

const unsigned kLayouts[] = {POSENC_SINUSOID_INTERLEAVED, POSENC_SINUSOID_SIN_COS,
                             POSENC_SINUSOID_COS_SIN};

// The plans of the accuracy checks: odd and even d, three bases.
struct PlanSpec {
  size_t dim;
  double base;
};
const PlanSpec kPlans[] = {{128, 10000.0}, {127, 10000.0}, {64, 500000.0}, {33, 10.0}};

std::vector<float> AccuracyTimesteps() {
  std::vector<float> t = {0.0f,        0.5f,        -0.5f,         1e-3f,          0.1f,
                          999.999f,    -12345.678f, 131072.5f,     8388607.5f,     16777216.0f,
                          16777218.0f, 1e9f,        2147483520.0f, -2147483520.0f, 1e-40f,
                          -3.3e-7f,    26353589.0f, 1073741824.0f};
  std::mt19937 rng(11);
  const std::vector<float> random = RandomTimesteps(rng, 300);
  t.insert(t.end(), random.begin(), random.end());
  return t;
}

SinusoidShape AccuracyShape(const PlanSpec& plan, bool user_freqs, unsigned flags) {
  SinusoidShape s;
  s.dim = plan.dim;
  s.base = plan.base;
  if (user_freqs) s.freqs = VaswaniFreqs(plan.dim, plan.base);
  s.flags = flags;
  s.positions = AccuracyPositions();
  s.n_rows = s.positions.size();
  return s;
}

// The shape's operation with the active ISA: nothing outside the rows written, every value
// within the header's 2^-22 of the reference with the plan's frequencies.
void ExpectWithinBound(const SinusoidShape& shape) {
  SCOPED_TRACE(Describe(shape));
  const SinusoidProblem problem(shape, 1);
  const SinusoidPlanPtr plan = MakeSinusoidPlan(shape);
  ASSERT_NE(plan, nullptr);
  AlignedFloats out = problem.input();
  ASSERT_EQ(problem.Run(plan.get(), out), POSENC_OK);
  EXPECT_TRUE(UntouchedOutsideRows(problem, out));
  EXPECT_TRUE(RowsWithin(problem, out, SinusoidReference(problem, SinusoidPlanFreqs(plan.get())),
                         kSinusoidValueBound));
}

class SinusoidAccuracyTest : public EveryIsaTest {};

// Plans from the frequencies pow(base, -2i/d) given by the test, fill and add.
TEST_P(SinusoidAccuracyTest, AccurateWithinBoundOfExactProduct) {
  for (const PlanSpec& plan : kPlans)
    for (unsigned layout : kLayouts)
      for (SinusoidOp op : {SinusoidOp::kFill, SinusoidOp::kAdd}) {
        SinusoidShape s = AccuracyShape(plan, true, layout);
        s.op = op;
        ExpectWithinBound(s);
      }
}

// The default plan (posenc_sinusoid_plan_create), against its own doubles (the plan's
// frequencies themselves are checked in sinusoid_errors_test.cc).
TEST_P(SinusoidAccuracyTest, DefaultPlanWithinBound) {
  for (const PlanSpec& plan : kPlans)
    for (unsigned layout : kLayouts) ExpectWithinBound(AccuracyShape(plan, false, layout));
}

TEST_P(SinusoidAccuracyTest, Float32AnglesWithinBoundOfTheirFloatAngle) {
  for (const PlanSpec& plan : kPlans)
    for (unsigned layout : kLayouts)
      for (SinusoidOp op : {SinusoidOp::kFill, SinusoidOp::kAdd}) {
        SinusoidShape s = AccuracyShape(plan, true, layout | POSENC_SINUSOID_F32_ANGLES);
        s.op = op;
        ExpectWithinBound(s);
      }
}

// Runs of consecutive positions (SIMD variants step sin/cos from row to row, re-anchoring
// every 256 rows): every row within the bound, at every distance from an anchor.
TEST_P(SinusoidAccuracyTest, ConsecutivePositionsWithinBound) {
  for (int32_t start : {-300, 131072 - 5, 26353589 - 300, INT32_MAX - 599, -INT32_MAX})
    for (const PlanSpec& plan : {kPlans[0], kPlans[2]})
      for (unsigned flags : {unsigned{POSENC_SINUSOID_INTERLEAVED},
                             unsigned{POSENC_SINUSOID_SIN_COS | POSENC_SINUSOID_F32_ANGLES}})
        for (SinusoidOp op : {SinusoidOp::kFill, SinusoidOp::kAdd}) {
          SinusoidShape s = AccuracyShape(plan, true, flags);
          s.op = op;
          s.positions.clear();
          s.start_pos = start;
          s.n_rows = 600;
          ExpectWithinBound(s);
        }
}

// Float timesteps: fractional, tiny, negative and up to the largest float below 2^31, against
// the exact product of the float and the plan's double.
TEST_P(SinusoidAccuracyTest, TimestepsWithinBoundOfExactProduct) {
  for (const PlanSpec& plan : kPlans)
    for (unsigned layout : kLayouts)
      for (unsigned angles : {POSENC_SINUSOID_ACCURATE, POSENC_SINUSOID_F32_ANGLES}) {
        SinusoidShape s = AccuracyShape(plan, true, layout | angles);
        s.op = SinusoidOp::kFillTimesteps;
        s.positions.clear();
        s.timesteps = AccuracyTimesteps();
        s.n_rows = s.timesteps.size();
        ExpectWithinBound(s);
      }
}

// Why the accurate mode exists: at position 131072 the float32 recipe's angle is off by
// ~1e-2, so the two modes give visibly different tables.
TEST_P(SinusoidAccuracyTest, Float32AnglesDriftAtLongContext) {
  const size_t d = 128;
  const SinusoidPlanPtr plan = MakeSinusoidPlan(d, 10000.0);
  ASSERT_NE(plan, nullptr);
  std::vector<float> accurate(d), f32(d);
  ASSERT_EQ(posenc_sinusoid_fill_f32(plan.get(), 1, nullptr, 131072, accurate.data(), 0,
                                     POSENC_SINUSOID_ACCURATE),
            POSENC_OK);
  ASSERT_EQ(posenc_sinusoid_fill_f32(plan.get(), 1, nullptr, 131072, f32.data(), 0,
                                     POSENC_SINUSOID_F32_ANGLES),
            POSENC_OK);
  const std::vector<double> freqs = SinusoidPlanFreqs(plan.get());
  double modes_apart = 0, f32_error = 0, accurate_error = 0;
  for (size_t j = 0; j < d; ++j) {
    const long double angle = ExactReducedProduct(131072, freqs[j / 2]);
    const double exact = static_cast<double>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
    modes_apart = std::max(modes_apart, std::fabs(static_cast<double>(f32[j]) - accurate[j]));
    f32_error = std::max(f32_error, std::fabs(f32[j] - exact));
    accurate_error = std::max(accurate_error, std::fabs(accurate[j] - exact));
  }
  EXPECT_GT(modes_apart, 1e-3);
  EXPECT_GT(f32_error, 1e-3);
  EXPECT_LT(f32_error, 0.1);
  EXPECT_LE(accurate_error, kSinusoidValueBound);
}

// Which value every column holds, written out from the header for d = 1..6 and every
// layout: "s1" is sin(p * w_1), "c0" cos(p * w_0). Odd d: the extra column is a sin.
struct PlacementCase {
  size_t dim;
  unsigned layout;
  const char* columns;
};
const PlacementCase kPlacements[] = {
    {1, POSENC_SINUSOID_INTERLEAVED, "s0"},
    {1, POSENC_SINUSOID_SIN_COS, "s0"},
    {1, POSENC_SINUSOID_COS_SIN, "s0"},
    {2, POSENC_SINUSOID_INTERLEAVED, "s0 c0"},
    {2, POSENC_SINUSOID_SIN_COS, "s0 c0"},
    {2, POSENC_SINUSOID_COS_SIN, "c0 s0"},
    {3, POSENC_SINUSOID_INTERLEAVED, "s0 c0 s1"},
    {3, POSENC_SINUSOID_SIN_COS, "s0 s1 c0"},
    {3, POSENC_SINUSOID_COS_SIN, "c0 s0 s1"},
    {4, POSENC_SINUSOID_INTERLEAVED, "s0 c0 s1 c1"},
    {4, POSENC_SINUSOID_SIN_COS, "s0 s1 c0 c1"},
    {4, POSENC_SINUSOID_COS_SIN, "c0 c1 s0 s1"},
    {5, POSENC_SINUSOID_INTERLEAVED, "s0 c0 s1 c1 s2"},
    {5, POSENC_SINUSOID_SIN_COS, "s0 s1 s2 c0 c1"},
    {5, POSENC_SINUSOID_COS_SIN, "c0 c1 s0 s1 s2"},
    {6, POSENC_SINUSOID_INTERLEAVED, "s0 c0 s1 c1 s2 c2"},
    {6, POSENC_SINUSOID_SIN_COS, "s0 s1 s2 c0 c1 c2"},
    {6, POSENC_SINUSOID_COS_SIN, "c0 c1 c2 s0 s1 s2"},
};

// Frequencies exact in float and positions whose products are exact, so both angle modes
// must give the same values.
TEST_P(SinusoidAccuracyTest, ColumnPlacementOfEveryLayout) {
  const double all_freqs[] = {1.0, 0.5, 0.25};
  const int32_t positions[] = {1, -3, 1000};
  for (const PlacementCase& c : kPlacements)
    for (unsigned angles : {POSENC_SINUSOID_ACCURATE, POSENC_SINUSOID_F32_ANGLES}) {
      const std::vector<double> freqs(all_freqs, all_freqs + SinusoidPairCount(c.dim));
      const SinusoidPlanPtr plan = MakeSinusoidPlanFromFreqs(c.dim, freqs);
      ASSERT_NE(plan, nullptr);
      std::vector<float> rows(3 * c.dim, NAN);
      ASSERT_EQ(
          posenc_sinusoid_fill_f32(plan.get(), 3, positions, 0, rows.data(), 0, c.layout | angles),
          POSENC_OK);
      // Columns are two-character names separated by one space ("s0 c0 ..."); parsed by
      // hand, not with an istringstream, whose uninstrumented library code MSan cannot see.
      const std::string columns = c.columns;
      for (size_t j = 0, at = 0; at + 2 <= columns.size(); ++j, at += 3) {
        const std::string column = columns.substr(at, 2);
        ASSERT_LT(j, c.dim) << "test bug: " << c.columns;
        const double w = all_freqs[column[1] - '0'];
        for (size_t r = 0; r < 3; ++r) {
          const double angle = positions[r] * w;
          const double expected = column[0] == 's' ? std::sin(angle) : std::cos(angle);
          EXPECT_NEAR(rows[r * c.dim + j], expected, kSinusoidValueBound)
              << "d=" << c.dim << " " << SinusoidModeName(c.layout | angles) << " column " << j
              << " should be " << column << " at position " << positions[r];
        }
      }
    }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(SinusoidAccuracyTest);

}  // namespace
}  // namespace posenc_test
