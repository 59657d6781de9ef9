// Angle accuracy of every variant against long double math at positions up to 2^31 - 1,
// the float32-angle mode against its own float angle, the attention factor, and forward
// followed by inverse.
#include <posenc.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <vector>

#include "rope_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr double kAngleBound = 0x1p-22;  // the header's bound on c and s (att = 1)
constexpr size_t kRotaryDim = 128;

// c and s of every (token, pair), read back through the public API: a pair (u, v) = (1, 0)
// rotates to (c, s) exactly. Indexed [token * R/2 + pair].
struct CosSin {
  std::vector<float> c, s;
};

CosSin ReadCosSin(const posenc_rope_plan* plan, const std::vector<int32_t>& positions,
                  unsigned flags) {
  const size_t r = posenc_rope_plan_rotary_dim(plan), half = r / 2;
  const bool gptj = (flags & POSENC_ROPE_GPTJ) != 0;
  std::vector<float> x(positions.size() * r, 0.0f);
  for (size_t t = 0; t < positions.size(); ++t)
    for (size_t i = 0; i < half; ++i) x[t * r + (gptj ? 2 * i : i)] = 1.0f;
  const posenc_rope_tensor q = {x.data(), 1, r, r};
  EXPECT_EQ(posenc_rope_f32(plan, r, positions.size(), positions.data(), 0, &q, nullptr, flags),
            POSENC_OK);
  CosSin out;
  for (size_t t = 0; t < positions.size(); ++t)
    for (size_t i = 0; i < half; ++i) {
      out.c.push_back(x[t * r + (gptj ? 2 * i : i)]);
      out.s.push_back(x[t * r + (gptj ? 2 * i + 1 : i + half)]);
    }
  return out;
}

// The largest |c - att*cos(a)| or |s - sign*att*sin(a)|, and where it occurs.
struct WorstError {
  double error = 0;
  std::string where;
};

WorstError CompareWithReference(const CosSin& got, const std::vector<int32_t>& positions,
                                const std::vector<double>& freqs, unsigned flags, double att) {
  const long double sign = (flags & POSENC_ROPE_INVERSE) ? -1.0L : 1.0L;
  WorstError worst;
  for (size_t t = 0; t < positions.size(); ++t)
    for (size_t i = 0; i < freqs.size(); ++i) {
      const long double a = ReferenceAngle(positions[t], freqs[i], flags);
      const size_t k = t * freqs.size() + i;
      const double c_err = static_cast<double>(std::fabs(got.c[k] - att * std::cos(a)));
      const double s_err = static_cast<double>(std::fabs(got.s[k] - sign * att * std::sin(a)));
      if (std::max(c_err, s_err) > worst.error || std::isnan(c_err + s_err)) {
        std::ostringstream os;
        os << "position " << positions[t] << " pair " << i << " (w=" << freqs[i]
           << "): c=" << got.c[k] << " err " << c_err << ", s=" << got.s[k] << " err " << s_err;
        worst = {std::isnan(c_err + s_err) ? INFINITY : std::max(c_err, s_err), os.str()};
      }
    }
  return worst;
}

std::string ModeName(double base, unsigned flags) {
  std::ostringstream os;
  os << "base " << base << ((flags & POSENC_ROPE_GPTJ) ? " GPTJ" : " NEOX")
     << ((flags & POSENC_ROPE_INVERSE) ? " INVERSE" : "")
     << ((flags & POSENC_ROPE_F32_ANGLES) ? " F32_ANGLES" : " ACCURATE");
  return os.str();
}

class RopeAccuracyTest : public EveryIsaTest {
 protected:
  // Every pair layout and direction at both bases: c, s within 2^-22 of the reference.
  void ExpectAnglesWithinBound(unsigned angle_mode) {
    const std::vector<int32_t> positions = AccuracyPositions();
    for (double base : {10000.0, 500000.0}) {
      const PlanPtr plan = MakePlan(kRotaryDim, base, 1.0);
      ASSERT_NE(plan, nullptr);
      for (unsigned layout : {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ})
        for (unsigned direction : {0u, static_cast<unsigned>(POSENC_ROPE_INVERSE)}) {
          const unsigned flags = layout | direction | angle_mode;
          const WorstError worst = CompareWithReference(ReadCosSin(plan.get(), positions, flags),
                                                        positions, PlanFreqs(plan.get()), flags, 1);
          EXPECT_LE(worst.error, kAngleBound) << ModeName(base, flags) << ": " << worst.where;
        }
    }
  }
};

TEST_P(RopeAccuracyTest, AccurateAnglesWithinBoundOfExactProduct) {
  ExpectAnglesWithinBound(POSENC_ROPE_ACCURATE);
}

TEST_P(RopeAccuracyTest, Float32AnglesWithinBoundOfTheirFloatAngle) {
  ExpectAnglesWithinBound(POSENC_ROPE_F32_ANGLES);
}

// Runs of consecutive positions (a kernel may step cos/sin from token to token): every
// token stays within the bound, at every distance from the run's start.
TEST_P(RopeAccuracyTest, ConsecutivePositionsWithinBound) {
  for (int32_t start : {-300, 131072 - 5, 26353589 - 300, INT32_MAX - 599, -INT32_MAX}) {
    std::vector<int32_t> positions(600);
    for (size_t t = 0; t < positions.size(); ++t) positions[t] = start + static_cast<int32_t>(t);
    for (double base : {10000.0, 500000.0}) {
      const PlanPtr plan = MakePlan(kRotaryDim, base, 1.0);
      for (unsigned flags : {0u, unsigned{POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE}}) {
        const WorstError worst = CompareWithReference(ReadCosSin(plan.get(), positions, flags),
                                                      positions, PlanFreqs(plan.get()), flags, 1);
        EXPECT_LE(worst.error, kAngleBound)
            << ModeName(base, flags) << " run from " << start << ": " << worst.where;
      }
    }
  }
}

// Why the accurate mode exists: at position 131072 the float32 angle is off by ~1e-2.
TEST_P(RopeAccuracyTest, Float32AnglesDriftAtLongContext) {
  const PlanPtr plan = MakePlan(kRotaryDim, 10000.0, 1.0);
  const std::vector<int32_t> positions = {131072};
  const std::vector<double> freqs = PlanFreqs(plan.get());
  const CosSin f32 = ReadCosSin(plan.get(), positions, POSENC_ROPE_F32_ANGLES);
  const CosSin accurate = ReadCosSin(plan.get(), positions, POSENC_ROPE_ACCURATE);
  // Both against the exact product (flags 0 selects it).
  const WorstError f32_error = CompareWithReference(f32, positions, freqs, 0, 1);
  const WorstError accurate_error = CompareWithReference(accurate, positions, freqs, 0, 1);
  EXPECT_GT(f32_error.error, 1e-3) << f32_error.where;
  EXPECT_LT(f32_error.error, 0.1) << f32_error.where;
  EXPECT_LE(accurate_error.error, kAngleBound) << accurate_error.where;
}

TEST_P(RopeAccuracyTest, AttentionFactorScalesCosAndSin) {
  const std::vector<int32_t> positions = {0, 1, 17, -300, 131072, INT32_MAX};
  const PlanPtr unit = MakePlan(kRotaryDim, 10000.0, 1.0);
  for (double att : {0.5, 1.0 / 3.0, 2.5, 40.0}) {
    const PlanPtr scaled = MakePlan(kRotaryDim, 10000.0, att);
    for (unsigned flags : AllFlagCombinations()) {
      SCOPED_TRACE(ModeName(10000, flags) + " att " + std::to_string(att));
      const CosSin one = ReadCosSin(unit.get(), positions, flags);
      const CosSin got = ReadCosSin(scaled.get(), positions, flags);
      for (size_t k = 0; k < one.c.size(); ++k) {
        EXPECT_NEAR(got.c[k], att * one.c[k], FLT_EPSILON * att) << "index " << k;
        EXPECT_NEAR(got.s[k], att * one.s[k], FLT_EPSILON * att) << "index " << k;
      }
      const WorstError worst =
          CompareWithReference(got, positions, PlanFreqs(scaled.get()), flags, att);
      EXPECT_LE(worst.error, kAngleBound * att) << worst.where;
    }
  }
}

// Inverse undoes forward up to a few ulp: 4 * FLT_EPSILON * (|u| + |v|).
TEST_P(RopeAccuracyTest, ForwardThenInverseRestoresTheInput) {
  for (TensorLayout layout : {TensorLayout::kTokenMajor, TensorLayout::kHeadMajor})
    for (unsigned pairs : {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ})
      for (unsigned angles : {POSENC_ROPE_ACCURATE, POSENC_ROPE_F32_ANGLES}) {
        RopeShape shape;
        shape.rotary_dim = 96;
        shape.head_dim = 101;
        shape.layout = layout;
        shape.n_tokens = 9;
        shape.q_heads = 3;
        shape.k_heads = 2;
        shape.flags = pairs | angles;
        SCOPED_TRACE(Describe(shape));
        const RopeProblem problem(shape, 99);
        const PlanPtr plan = MakePlan(shape.rotary_dim, shape.base, 1.0);
        AlignedFloats buffer = problem.input();
        ASSERT_EQ(problem.Rotate(plan.get(), buffer, shape.flags), POSENC_OK);
        ASSERT_EQ(problem.Rotate(plan.get(), buffer, shape.flags | POSENC_ROPE_INVERSE), POSENC_OK);
        EXPECT_TRUE(UntouchedOutsidePairs(problem, buffer));
        EXPECT_TRUE(PairsWithin(problem, buffer, AsDoubles(problem.input()), 4 * FLT_EPSILON));
      }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeAccuracyTest);

}  // namespace
}  // namespace posenc_test
