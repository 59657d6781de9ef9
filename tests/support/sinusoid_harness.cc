#include "sinusoid_harness.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>
#include <sstream>

namespace posenc_test {
namespace {

const char* OpName(SinusoidOp op) {
  switch (op) {
    case SinusoidOp::kFill:
      return "fill";
    case SinusoidOp::kFillTimesteps:
      return "fill_timesteps";
    case SinusoidOp::kAdd:
      return "add";
  }
  return "?";
}

}  // namespace

SinusoidPlanPtr MakeSinusoidPlan(size_t dim, double base) {
  posenc_sinusoid_plan* plan = nullptr;
  EXPECT_EQ(posenc_sinusoid_plan_create(&plan, dim, base), POSENC_OK)
      << "sinusoid plan d=" << dim << " base=" << base;
  return SinusoidPlanPtr(plan);
}

SinusoidPlanPtr MakeSinusoidPlanFromFreqs(size_t dim, const std::vector<double>& freqs) {
  EXPECT_EQ(freqs.size(), SinusoidPairCount(dim)) << "test bug: wrong number of frequencies";
  posenc_sinusoid_plan* plan = nullptr;
  EXPECT_EQ(posenc_sinusoid_plan_create_from_freqs(&plan, dim, freqs.data()), POSENC_OK)
      << "sinusoid plan from freqs d=" << dim;
  return SinusoidPlanPtr(plan);
}

std::vector<double> SinusoidPlanFreqs(const posenc_sinusoid_plan* plan) {
  std::vector<double> freqs(SinusoidPairCount(posenc_sinusoid_plan_dim(plan)));
  EXPECT_EQ(posenc_sinusoid_plan_freqs(plan, freqs.data()), POSENC_OK);
  return freqs;
}

std::vector<double> VaswaniFreqs(size_t dim, double base) {
  std::vector<double> freqs(SinusoidPairCount(dim));
  for (size_t i = 0; i < freqs.size(); ++i)
    freqs[i] = std::pow(base, -static_cast<double>(2 * i) / static_cast<double>(dim));
  return freqs;
}

SinusoidColumn ColumnOf(size_t dim, size_t column, unsigned flags) {
  const size_t ceil_half = (dim + 1) / 2, floor_half = dim / 2;
  if (flags & POSENC_SINUSOID_SIN_COS)  // [0, ceil(d/2)) sin, then cos
    return column < ceil_half ? SinusoidColumn{column, true}
                              : SinusoidColumn{column - ceil_half, false};
  if (flags & POSENC_SINUSOID_COS_SIN)  // [0, floor(d/2)) cos, then sin
    return column < floor_half ? SinusoidColumn{column, false}
                               : SinusoidColumn{column - floor_half, true};
  return {column / 2, column % 2 == 0};  // interleaved: 2i sin, 2i+1 cos
}

long double ExactReducedProduct(long double position, double freq) {
  const long double two_pi = 6.283185307179586476925286766559005768L;
  int exponent = 0;
  const double mantissa = std::frexp(freq, &exponent);
  // Truncated to 24 significant bits; the tail keeps the other 29 (exact subtraction).
  const double head = std::ldexp(std::trunc(std::ldexp(mantissa, 24)), exponent - 24);
  const double tail = freq - head;
  return std::fmod(position * head, two_pi) + std::fmod(position * tail, two_pi);
}

float Float32RecipeAngle(long double position, double freq) {
  return static_cast<float>(position) * static_cast<float>(freq);
}

long double SinusoidReferenceAngle(long double position, double freq, unsigned flags) {
  if (flags & POSENC_SINUSOID_F32_ANGLES)
    return ExactReducedProduct(Float32RecipeAngle(position, freq), 1.0);
  return ExactReducedProduct(position, freq);
}

std::vector<float> RandomTimesteps(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<double> fractional(-1000.0, 1000.0);
  std::uniform_real_distribution<double> large(-2147483520.0, 2147483520.0);
  std::uniform_int_distribution<int> integer(0, 999);
  std::vector<float> t(n);
  for (size_t r = 0; r < n; ++r) {
    if (r % 3 == 0) t[r] = static_cast<float>(fractional(rng));
    if (r % 3 == 1) t[r] = static_cast<float>(integer(rng));
    // 2147483520 is the largest float below 2^31; a double in range rounds to at most it.
    if (r % 3 == 2) t[r] = static_cast<float>(large(rng));
  }
  return t;
}

std::string Describe(const SinusoidShape& s) {
  std::ostringstream os;
  os << OpName(s.op) << " d=" << s.dim << " rows=" << s.n_rows << " row_stride=" << s.row_stride
     << " misalign=" << s.misalign << " " << SinusoidModeName(s.flags) << " ";
  if (s.op == SinusoidOp::kFillTimesteps) {
    os << "timesteps{" << (s.timesteps.empty() ? 0.0f : s.timesteps[0]) << ", ...}";
  } else if (s.positions.empty()) {
    os << "start_pos=" << s.start_pos;
  } else {
    os << "positions{" << s.positions[0] << ", ...}";
  }
  if (s.freqs.empty()) {
    os << " base=" << s.base;
  } else {
    os << " freqs{" << s.freqs[0] << ", ...}";
  }
  return os.str();
}

SinusoidPlanPtr MakeSinusoidPlan(const SinusoidShape& shape) {
  return shape.freqs.empty() ? MakeSinusoidPlan(shape.dim, shape.base)
                             : MakeSinusoidPlanFromFreqs(shape.dim, shape.freqs);
}

std::vector<unsigned> SinusoidModes() {
  std::vector<unsigned> modes;
  for (unsigned layout :
       {POSENC_SINUSOID_INTERLEAVED, POSENC_SINUSOID_SIN_COS, POSENC_SINUSOID_COS_SIN})
    for (unsigned angles : {POSENC_SINUSOID_ACCURATE, POSENC_SINUSOID_F32_ANGLES})
      modes.push_back(layout | angles);
  return modes;
}

std::string SinusoidModeName(unsigned flags) {
  std::string s = (flags & POSENC_SINUSOID_SIN_COS)   ? "SIN_COS"
                  : (flags & POSENC_SINUSOID_COS_SIN) ? "COS_SIN"
                                                      : "INTERLEAVED";
  if (flags & POSENC_SINUSOID_F32_ANGLES) s += "|F32_ANGLES";
  return s;
}

std::vector<SinusoidShape> WithEverySinusoidMode(const std::vector<SinusoidShape>& shapes) {
  return WithEachFlagValue(shapes, SinusoidModes());
}

SinusoidProblem::SinusoidProblem(const SinusoidShape& shape, uint32_t seed)
    : shape_(shape), data_offset_(kGuard + shape.misalign), input_(0) {
  const size_t extent = shape.n_rows == 0 ? 0 : (shape.n_rows - 1) * RowStride() + shape.dim;
  input_ = AlignedFloats(data_offset_ + extent + kGuard);
  in_row_.assign(input_.size(), 0);
  for (size_t i = 0; i < input_.size(); ++i) input_[i] = NaNSentinel(i);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  for (size_t r = 0; r < shape.n_rows; ++r)
    for (size_t j = 0; j < shape.dim; ++j) {
      in_row_[Index(r, j)] = 1;
      if (shape.op == SinusoidOp::kAdd) input_[Index(r, j)] = value(rng);
    }
}

long double SinusoidProblem::RowPosition(size_t row) const {
  if (shape_.op == SinusoidOp::kFillTimesteps) return shape_.timesteps[row];
  if (!shape_.positions.empty()) return shape_.positions[row];
  return static_cast<long double>(shape_.start_pos) + static_cast<long double>(row);
}

posenc_status SinusoidProblem::Run(const posenc_sinusoid_plan* plan, AlignedFloats& buffer) const {
  float* out = buffer.data() + data_offset_;
  const int32_t* positions = shape_.positions.empty() ? nullptr : shape_.positions.data();
  switch (shape_.op) {
    case SinusoidOp::kFill:
      return posenc_sinusoid_fill_f32(plan, shape_.n_rows, positions, shape_.start_pos, out,
                                      shape_.row_stride, shape_.flags);
    case SinusoidOp::kFillTimesteps:
      return posenc_sinusoid_fill_timesteps_f32(plan, shape_.n_rows, shape_.timesteps.data(), out,
                                                shape_.row_stride, shape_.flags);
    case SinusoidOp::kAdd:
      return posenc_sinusoid_add_f32(plan, shape_.n_rows, positions, shape_.start_pos, out,
                                     shape_.row_stride, shape_.flags);
  }
  return POSENC_ERR_INVALID_ARGUMENT;
}

AlignedFloats RunSinusoidWithIsa(const SinusoidProblem& problem, const posenc_sinusoid_plan* plan,
                                 posenc_isa isa) {
  AlignedFloats out = problem.input();
  EXPECT_EQ(posenc_set_isa(isa), POSENC_OK) << posenc_isa_name(isa);
  EXPECT_EQ(problem.Run(plan, out), POSENC_OK)
      << posenc_isa_name(isa) << ": " << Describe(problem.shape());
  return out;
}

RowValues FromOutput(const SinusoidProblem& problem, const AlignedFloats& out) {
  const SinusoidShape& s = problem.shape();
  RowValues values(s.n_rows * s.dim);
  for (size_t r = 0; r < s.n_rows; ++r)
    for (size_t j = 0; j < s.dim; ++j) values[r * s.dim + j] = out[problem.Index(r, j)];
  return values;
}

RowValues SinusoidReference(const SinusoidProblem& problem, const std::vector<double>& freqs) {
  const SinusoidShape& s = problem.shape();
  EXPECT_EQ(freqs.size(), SinusoidPairCount(s.dim)) << "test bug: wrong number of frequencies";
  RowValues expected(s.n_rows * s.dim);
  std::vector<long double> sin_of(freqs.size()), cos_of(freqs.size());
  for (size_t r = 0; r < s.n_rows; ++r) {
    const long double position = problem.RowPosition(r);
    for (size_t i = 0; i < freqs.size(); ++i) {
      const long double angle = SinusoidReferenceAngle(position, freqs[i], s.flags);
      sin_of[i] = std::sin(angle);
      cos_of[i] = std::cos(angle);
    }
    for (size_t j = 0; j < s.dim; ++j) {
      const SinusoidColumn c = ColumnOf(s.dim, j, s.flags);
      long double v = c.is_sin ? sin_of[c.pair] : cos_of[c.pair];
      if (s.op == SinusoidOp::kAdd) v += problem.input()[problem.Index(r, j)];
      expected[r * s.dim + j] = static_cast<double>(v);
    }
  }
  return expected;
}

testing::AssertionResult UntouchedOutsideRows(const SinusoidProblem& problem,
                                              const AlignedFloats& out) {
  const AlignedFloats& in = problem.input();
  size_t changed = 0, first = 0;
  for (size_t i = 0; i < in.size(); ++i)
    if (!problem.InRow(i) && !BitwiseEqual(in[i], out[i]) && changed++ == 0) first = i;
  if (changed == 0) return testing::AssertionSuccess();
  const size_t data_begin = problem.Index(0, 0);
  const size_t data_end = in.size() - SinusoidProblem::kGuard;
  const char* where = first < data_begin  ? "in the guard before the rows"
                      : first >= data_end ? "in the guard after the rows"
                                          : "in a gap between rows";
  return testing::AssertionFailure()
         << changed << " element(s) outside the rows changed; first at buffer index " << first
         << " (" << where << ", offset " << static_cast<long>(first - data_begin)
         << " from row 0): " << in[first] << " -> " << out[first];
}

testing::AssertionResult RowsWithin(const SinusoidProblem& problem, const AlignedFloats& out,
                                    const RowValues& expected, double bound) {
  const SinusoidShape& s = problem.shape();
  size_t failures = 0;
  double worst = 0;
  std::ostringstream first;
  for (size_t r = 0; r < s.n_rows; ++r)
    for (size_t j = 0; j < s.dim; ++j) {
      const size_t index = problem.Index(r, j);
      const double got = out[index], want = expected[r * s.dim + j];
      double allowed = bound;
      if (s.op == SinusoidOp::kAdd)
        allowed += FLT_EPSILON * std::max(std::fabs(got), std::fabs(want));
      if (WithinBound(got, want, allowed)) continue;
      worst = std::max(worst, std::isnan(got - want) ? INFINITY : std::fabs(got - want));
      if (failures++ > 0) continue;
      const SinusoidColumn c = ColumnOf(s.dim, j, s.flags);
      first << "first at row " << r << " (position " << static_cast<double>(problem.RowPosition(r))
            << ") column " << j << " (" << (c.is_sin ? "sin" : "cos") << " of pair " << c.pair
            << "): got " << got << ", expected " << want << ", |diff| " << std::fabs(got - want)
            << " > allowed " << allowed;
      if (s.op == SinusoidOp::kAdd) first << " (input " << problem.input()[index] << ")";
    }
  if (failures == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << failures << " row element(s) out of bound (worst |diff| "
                                     << worst << "); " << first.str();
}

}  // namespace posenc_test
