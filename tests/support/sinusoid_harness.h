// Sinusoidal encoding problems for the tests: a shape (width, rows, stride, alignment,
// positions or timesteps, layout and angle mode, plan), its rows placed in one buffer with
// guard elements around it and NaN sentinels in every gap, the long double reference of the
// header's formulas, and checks of an output against the input, the scalar variant or the
// reference. Also the exact reduction of a product for float timesteps.
#ifndef POSENC_TESTS_SUPPORT_SINUSOID_HARNESS_H
#define POSENC_TESTS_SUPPORT_SINUSOID_HARNESS_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "test_support.h"

namespace posenc_test {

// The header's accuracy bound on every sin/cos value (accurate mode, and F32_ANGLES against
// the float angle).
inline constexpr double kSinusoidValueBound = 0x1p-22;

struct SinusoidPlanDeleter {
  void operator()(posenc_sinusoid_plan* plan) const { posenc_sinusoid_plan_destroy(plan); }
};
using SinusoidPlanPtr = std::unique_ptr<posenc_sinusoid_plan, SinusoidPlanDeleter>;

// Plans; each records a test failure and returns null if creation fails.
SinusoidPlanPtr MakeSinusoidPlan(size_t dim, double base);
SinusoidPlanPtr MakeSinusoidPlanFromFreqs(size_t dim, const std::vector<double>& freqs);

// ceil(d/2): the number of (sin, cos) pairs of a row of width d.
inline size_t SinusoidPairCount(size_t dim) { return (dim + 1) / 2; }
// The plan's ceil(d/2) frequencies (posenc_sinusoid_plan_freqs).
std::vector<double> SinusoidPlanFreqs(const posenc_sinusoid_plan* plan);
// The frequencies of the default plan as the header writes them: pow(base, -2i/d) in double.
std::vector<double> VaswaniFreqs(size_t dim, double base);

// Which pair a column holds, and whether it is that pair's sin or cos (header formulas).
struct SinusoidColumn {
  size_t pair;
  bool is_sin;
};
SinusoidColumn ColumnOf(size_t dim, size_t column, unsigned flags);

// position * freq reduced modulo 2*pi in long double from the exact product. position must
// have at most 31 significant bits (every int32 and every float qualifies): freq is split
// into a 24-bit head and a tail of at most 29 bits, so both partial products are exact in
// the 64-bit significand of long double.
long double ExactReducedProduct(long double position, double freq);
// The float32 recipe of POSENC_SINUSOID_F32_ANGLES: (float)position * (float)freq, rounded
// to float.
float Float32RecipeAngle(long double position, double freq);
// The angle the header's formula uses for a mode: the exact product reduced (accurate), or
// the float32 recipe's angle reduced (F32_ANGLES).
long double SinusoidReferenceAngle(long double position, double freq, unsigned flags);

// Timesteps for n rows, cycling through fractional ones in (-1000, 1000), integer-valued ones
// in [0, 1000) and large ones of both signs with |t| < 2^31.
std::vector<float> RandomTimesteps(std::mt19937& rng, size_t n);

enum class SinusoidOp { kFill, kFillTimesteps, kAdd };

struct SinusoidShape {
  size_t dim = 64;
  size_t n_rows = 3;
  size_t row_stride = 0;  // passed as is: 0 is a dense table, else >= dim
  size_t misalign = 0;    // the rows start this many floats after a 64-byte boundary
  SinusoidOp op = SinusoidOp::kFill;
  // kFill, kAdd: one position per row, or empty for start_pos + r (positions = NULL).
  std::vector<int32_t> positions;
  int32_t start_pos = 0;
  std::vector<float> timesteps;  // kFillTimesteps: one per row
  unsigned flags = POSENC_SINUSOID_INTERLEAVED;
  double base = 10000.0;
  std::vector<double> freqs;  // ceil(dim/2) plan frequencies; empty: the default plan of base
};
std::string Describe(const SinusoidShape& shape);

SinusoidPlanPtr MakeSinusoidPlan(const SinusoidShape& shape);

// The 6 combinations of the three layouts and the two angle modes.
std::vector<unsigned> SinusoidModes();
std::string SinusoidModeName(unsigned flags);
// Every shape once per mode.
std::vector<SinusoidShape> WithEverySinusoidMode(const std::vector<SinusoidShape>& shapes);

class SinusoidProblem {
 public:
  static constexpr size_t kGuard = 16;  // sentinel floats on each side of the rows

  // Sentinels everywhere; for kAdd, random embeddings in [-2, 2] in every row element.
  SinusoidProblem(const SinusoidShape& shape, uint32_t seed);

  const SinusoidShape& shape() const { return shape_; }
  const AlignedFloats& input() const { return input_; }
  AlignedFloats& mutable_input() { return input_; }
  size_t RowStride() const { return shape_.row_stride == 0 ? shape_.dim : shape_.row_stride; }
  size_t Index(size_t row, size_t column) const {
    return data_offset_ + row * RowStride() + column;
  }
  bool InRow(size_t index) const { return in_row_[index] != 0; }
  // The position (or timestep) row r encodes, exactly.
  long double RowPosition(size_t row) const;

  // The shape's operation on `buffer` (a copy of input()) with the active ISA.
  posenc_status Run(const posenc_sinusoid_plan* plan, AlignedFloats& buffer) const;

 private:
  SinusoidShape shape_;
  size_t data_offset_;
  AlignedFloats input_;
  std::vector<char> in_row_;
};

// A copy of the problem's input after the operation with `isa` made active.
AlignedFloats RunSinusoidWithIsa(const SinusoidProblem& problem, const posenc_sinusoid_plan* plan,
                                 posenc_isa isa);

// Expected values of the row elements, indexed r * d + j.
using RowValues = std::vector<double>;
// The row elements of an output (another variant's).
RowValues FromOutput(const SinusoidProblem& problem, const AlignedFloats& out);
// The header's formula in long double with the plan's frequencies: sin/cos of
// SinusoidReferenceAngle, placed by ColumnOf, plus the input embedding for kAdd.
RowValues SinusoidReference(const SinusoidProblem& problem, const std::vector<double>& freqs);

// Every element outside the rows (guards, gaps between rows) is bit for bit its input.
testing::AssertionResult UntouchedOutsideRows(const SinusoidProblem& problem,
                                              const AlignedFloats& out);
// Every row element is within bound of the expected value; for kAdd also one rounding of
// the sum, FLT_EPSILON * max(|out|, |expected|). A NaN expected needs a NaN.
testing::AssertionResult RowsWithin(const SinusoidProblem& problem, const AlignedFloats& out,
                                    const RowValues& expected, double bound);

}  // namespace posenc_test

#endif  // POSENC_TESTS_SUPPORT_SINUSOID_HARNESS_H
