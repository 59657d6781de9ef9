#include "encoding_check.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "check_common.h"
#include "posenc.h"

namespace posenc_report {
namespace {

constexpr int kRandomCases = 1500;          // per kernel family
constexpr double kAccuracyBound = 0x1p-22;  // posenc.h: accurate sinusoids, |p| < 2^31
constexpr size_t kNoColumn = SIZE_MAX;

// What one ISA got wrong, over every case.
struct EncodingErrors {
  double sinusoid = 0;  // worst |isa - scalar| (add: beyond one ulp of the sum)
  double accuracy = 0;  // worst |value - sinl/cosl of the exact angle|, accurate mode
  size_t alibi_vs_scalar = 0, alibi_vs_loop = 0;  // elements not bit-identical
  size_t learned_vs_scalar = 0, learned_vs_loop = 0;
  size_t untouched_changed = 0;  // elements outside the written ones that changed
  size_t failed_calls = 0;
};
using IsaErrors = std::vector<EncodingErrors>;  // indexed by posenc_isa

// The elements a call may write: `cols` columns of `rows` rows in each of `blocks` blocks,
// in a buffer of blocks * block_stride elements (strides >= the extents inside them).
struct Layout {
  size_t blocks = 1, block_stride = 0, rows = 0, row_stride = 1, cols = 0;
  size_t Extent() const { return blocks * block_stride; }
  bool Contains(size_t index) const {
    const size_t in_block = index % block_stride;
    return in_block / row_stride < rows && in_block % row_stride < cols;
  }
};

// One block of rows of `cols` elements, each padded with 0-3 more elements half the time.
// stride_arg: the stride to pass (0, meaning cols, when unpadded half the time).
Layout PaddedRows(std::mt19937_64& rng, size_t rows, size_t cols, size_t& stride_arg) {
  const size_t pad = (rng() % 2) ? rng() % 4 : 0;
  Layout l;
  l.rows = rows;
  l.cols = cols;
  l.row_stride = cols + pad;
  l.block_stride = rows * l.row_stride;
  stride_arg = (pad == 0 && rng() % 2) ? 0 : l.row_stride;
  return l;
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Calls inside(index) for every element of the layout, and counts the other elements of
// the buffer that differ (bitwise) from the input.
template <class F>
void ForEachElement(const Layout& l, const std::vector<float>& in, const std::vector<float>& out,
                    size_t& untouched_changed, F&& inside) {
  for (size_t i = 0; i < l.Extent(); ++i) {
    if (l.Contains(i))
      inside(i);
    else if (!SameBits(in[i], out[i]))
      ++untouched_changed;
  }
}

// Positions of rows or tokens: a list, or start + r (list empty; passed as NULL).
struct RowPositions {
  std::vector<int32_t> list;
  int32_t start = 0;
  const int32_t* Pointer() const { return list.empty() ? nullptr : list.data(); }
  int32_t At(size_t r) const { return list.empty() ? start + static_cast<int32_t>(r) : list[r]; }
};

// Runs `cases` random cases of Case on every available ISA and hands compare(case, scalar
// output, ISA output, that ISA's errors) what each produced; a failed call is counted.
template <class Case, class Compare>
void RunCases(std::mt19937_64& rng, IsaErrors& errors, Compare&& compare) {
  for (int n = 0; n < kRandomCases; ++n) {
    const Case c = Case::Random(rng);
    std::vector<float> ref, out;
    const bool ref_ok = c.Run(POSENC_ISA_SCALAR, ref);
    for (posenc_isa isa : AvailableIsas()) {
      if (!ref_ok || !c.Run(isa, out)) {
        ++errors[isa].failed_calls;
        continue;
      }
      compare(c, ref, out, errors[isa]);
    }
  }
}

// Bit-for-bit comparison of an ISA's output with the scalar one and with c.expected.
template <class Case>
void CompareExact(const Case& c, const std::vector<float>& ref, const std::vector<float>& out,
                  size_t& vs_scalar, size_t& vs_loop, size_t& untouched_changed) {
  ForEachElement(c.layout, c.in, out, untouched_changed, [&](size_t i) {
    vs_scalar += !SameBits(out[i], ref[i]);
    vs_loop += !SameBits(out[i], c.expected[i]);
  });
}

// ---- sinusoids ------------------------------------------------------------------------

// The columns of pair i's sin and cos in a row (cos: kNoColumn for the lone sin of an odd
// d's last pair), as posenc.h places them.
void PairColumns(size_t dim, unsigned layout, size_t i, size_t& sin_col, size_t& cos_col) {
  const size_t n_sin = (dim + 1) / 2, n_cos = dim / 2;
  const bool has_cos = i < n_cos;
  if (layout == POSENC_SINUSOID_SIN_COS) {
    sin_col = i;
    cos_col = has_cos ? n_sin + i : kNoColumn;
  } else if (layout == POSENC_SINUSOID_COS_SIN) {
    sin_col = n_cos + i;
    cos_col = has_cos ? i : kNoColumn;
  } else {
    sin_col = 2 * i;
    cos_col = has_cos ? 2 * i + 1 : kNoColumn;
  }
}

// Finite, |t| < 2^31: diffusion-like fractional steps, or anywhere in the range.
float RandomTimestep(std::mt19937_64& rng) {
  const double limit = (rng() % 2) ? 1000.0 : 0x1p31;
  auto t = static_cast<float>(std::uniform_real_distribution<double>(-limit, limit)(rng));
  return std::fabs(t) < 0x1p31f ? t : std::nextafter(t, 0.0f);
}

// Mostly consecutive positions (the SIMD variants step those by angle addition), with a
// jump to a random position now and then.
std::vector<int32_t> PositionRuns(std::mt19937_64& rng, size_t rows) {
  std::vector<int32_t> list;
  for (size_t r = 0; r < rows; ++r) {
    const bool jump = r == 0 || rng() % 8 == 0 || list.back() == INT32_MAX;
    list.push_back(jump ? RandomPosition(rng) : list.back() + 1);
  }
  return list;
}

// A random fill, timesteps fill or add call.
struct SinusoidCase {
  enum Op { kFill, kTimesteps, kAdd } op = kFill;
  size_t dim = 0;
  double base = 10000.0;
  bool plan_from_freqs = true;  // else posenc_sinusoid_plan_create(dim, base)
  unsigned flags = 0;
  RowPositions positions;
  std::vector<float> timesteps;
  Layout layout;
  size_t stride_arg = 0;
  std::vector<float> in;

  static SinusoidCase Random(std::mt19937_64& rng);
  std::vector<double> Freqs() const;
  long double Position(size_t r) const;
  bool Run(posenc_isa isa, std::vector<float>& out) const;
};

// Short calls over many widths, and now and then a long one (re-anchoring every 256 rows).
SinusoidCase SinusoidCase::Random(std::mt19937_64& rng) {
  static const double kBases[] = {10000.0, 100.0, 1e6};
  SinusoidCase c;
  c.op = static_cast<Op>(rng() % 3);
  const bool long_call = rng() % 8 == 0;
  c.dim = long_call ? 1 + rng() % 16 : 1 + rng() % 160;
  const size_t rows = long_call ? 200 + rng() % 400 : 1 + rng() % 12;
  c.base = kBases[rng() % 3];
  c.plan_from_freqs = rng() % 2;
  c.flags =
      static_cast<unsigned>(rng() % 3) | ((rng() % 2) ? unsigned{POSENC_SINUSOID_F32_ANGLES} : 0u);
  if (rng() % 4 == 0)
    c.positions.start = RandomPosition(rng) / 2;  // start + rows - 1 fits in int32
  else
    c.positions.list = PositionRuns(rng, rows);
  for (size_t r = 0; c.op == kTimesteps && r < rows; ++r)
    c.timesteps.push_back(RandomTimestep(rng));
  c.layout = PaddedRows(rng, rows, c.dim, c.stride_arg);
  c.in = RandomData(rng, c.layout.Extent());
  return c;
}

std::vector<double> SinusoidCase::Freqs() const {
  std::vector<double> w((dim + 1) / 2);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
  return w;
}

long double SinusoidCase::Position(size_t r) const {
  if (op == kTimesteps) return timesteps[r];
  return positions.At(r);  // exactly: a float would round it
}

bool SinusoidCase::Run(posenc_isa isa, std::vector<float>& out) const {
  out = in;
  posenc_sinusoid_plan* raw = nullptr;
  const posenc_status made = plan_from_freqs
                                 ? posenc_sinusoid_plan_create_from_freqs(&raw, dim, Freqs().data())
                                 : posenc_sinusoid_plan_create(&raw, dim, base);
  const SinusoidPlan plan(raw);
  if (made != POSENC_OK || posenc_set_isa(isa) != POSENC_OK) return false;
  const size_t rows = layout.rows;
  posenc_status s;
  if (op == kTimesteps)
    s = posenc_sinusoid_fill_timesteps_f32(raw, rows, timesteps.data(), out.data(), stride_arg,
                                           flags);
  else if (op == kAdd)
    s = posenc_sinusoid_add_f32(raw, rows, positions.Pointer(), positions.start, out.data(),
                                stride_arg, flags);
  else
    s = posenc_sinusoid_fill_f32(raw, rows, positions.Pointer(), positions.start, out.data(),
                                 stride_arg, flags);
  return s == POSENC_OK;
}

// The spacing of floats at |v|: one rounding of a sum is within it.
double Ulp(float v) {
  const float a = std::fabs(v);
  return static_cast<double>(std::nextafter(a, INFINITY)) - a;
}

void CompareSinusoid(const SinusoidCase& c, const std::vector<float>& ref,
                     const std::vector<float>& out, EncodingErrors& e) {
  ForEachElement(c.layout, c.in, out, e.untouched_changed, [&](size_t i) {
    double diff = std::fabs(static_cast<double>(out[i]) - ref[i]);
    if (c.op == SinusoidCase::kAdd) diff -= Ulp(std::fmax(std::fabs(out[i]), std::fabs(ref[i])));
    KeepWorst(e.sinusoid, diff);  // negative: within the sum's rounding
  });
}

// The worst |value - sinl/cosl(exact angle)| of an accurate fill, or NaN if the call failed.
double WorstAccuracy(const SinusoidCase& c, posenc_isa isa) {
  std::vector<float> out;
  if (!c.Run(isa, out)) return NAN;
  const std::vector<double> w = c.Freqs();
  double worst = 0;
  for (size_t r = 0; r < c.layout.rows; ++r) {
    const float* row = out.data() + r * c.layout.row_stride;
    for (size_t i = 0; i < w.size(); ++i) {
      const long double a = ReferenceAngle(c.Position(r), w[i]);
      size_t sin_col, cos_col;
      PairColumns(c.dim, c.flags, i, sin_col, cos_col);
      KeepWorst(worst, static_cast<double>(std::fabs(row[sin_col] - std::sin(a))));
      if (cos_col != kNoColumn)
        KeepWorst(worst, static_cast<double>(std::fabs(row[cos_col] - std::cos(a))));
    }
  }
  return worst;
}

// An accurate fill of `rows` dense rows of width dim (positions or timesteps to be set).
SinusoidCase DenseFill(size_t dim, unsigned layout, size_t rows) {
  SinusoidCase c;
  c.dim = dim;
  c.flags = layout;
  c.layout = {1, rows * dim, rows, dim, dim};
  c.in.assign(c.layout.Extent(), 0.0f);
  return c;
}

// Accurate fills in each layout: random positions, 520 consecutive rows from 2^31 - 520
// and from -(2^31 - 1) (two re-anchorings each), random timesteps.
double WorstAccuracyAllCalls(posenc_isa isa, std::mt19937_64& rng) {
  double worst = 0;
  for (size_t dim : {128, 77})
    for (unsigned layout :
         {POSENC_SINUSOID_INTERLEAVED, POSENC_SINUSOID_SIN_COS, POSENC_SINUSOID_COS_SIN}) {
      SinusoidCase scattered = DenseFill(dim, layout, 48);
      scattered.positions.list = {INT32_MAX, -INT32_MAX};
      while (scattered.positions.list.size() < 48)
        scattered.positions.list.push_back(RandomPosition(rng));
      KeepWorst(worst, WorstAccuracy(scattered, isa));
      SinusoidCase run = DenseFill(dim, layout, 520);
      for (int32_t start : {INT32_MAX - 519, -INT32_MAX}) {
        run.positions.start = start;
        KeepWorst(worst, WorstAccuracy(run, isa));
      }
      SinusoidCase timesteps = DenseFill(dim, layout, 48);
      timesteps.op = SinusoidCase::kTimesteps;
      for (int r = 0; r < 48; ++r) timesteps.timesteps.push_back(RandomTimestep(rng));
      KeepWorst(worst, WorstAccuracy(timesteps, isa));
    }
  return worst;
}

// ---- ALiBi ----------------------------------------------------------------------------

// A random add (or bias) call with strided heads and rows.
struct AlibiCase {
  std::vector<float> slopes;
  size_t n_q = 0, n_k = 0, q_offset = 0;
  float scale = 1.0f;
  unsigned flags = 0;
  bool bias_only = false;  // posenc_alibi_bias_f32
  Layout layout;           // blocks: heads; rows: queries; cols: keys
  std::vector<float> in, expected;

  static AlibiCase Random(std::mt19937_64& rng);
  float Loop(size_t h, size_t i, size_t j, float s) const;
  bool Run(posenc_isa isa, std::vector<float>& out) const;
};

// The paper's slopes, posenc's for another max_bias, or any finite values. A failure of
// posenc_alibi_slopes leaves NaN slopes, which the calls then reject (counted as failed).
std::vector<float> RandomSlopes(std::mt19937_64& rng, size_t heads) {
  const int kind = static_cast<int>(rng() % 3);
  if (kind == 2) return RandomData(rng, heads);
  const double max_bias = kind == 0 ? 8.0 : std::uniform_real_distribution<double>(0.5, 16)(rng);
  std::vector<float> slopes(heads);
  if (posenc_alibi_slopes(heads, max_bias, slopes.data()) != POSENC_OK) slopes.assign(heads, NAN);
  return slopes;
}

// Query offsets: 0 (prefill), near the keys (decode), or queries up to 2^31 - 1 (distances
// that round when converted to float).
size_t RandomQueryOffset(std::mt19937_64& rng, size_t n_q, size_t n_k) {
  switch (rng() % 3) {
    case 0:
      return 0;
    case 1:
      return rng() % (2 * n_k);
    default:
      return (size_t{1} << 31) - n_q - rng() % 1000;
  }
}

AlibiCase AlibiCase::Random(std::mt19937_64& rng) {
  AlibiCase c;
  c.slopes = RandomSlopes(rng, 1 + rng() % 8);
  c.n_q = 1 + rng() % 12;
  c.n_k = 1 + rng() % 150;
  c.q_offset = RandomQueryOffset(rng, c.n_q, c.n_k);
  c.scale = (rng() % 2) ? 1.0f : std::uniform_real_distribution<float>(-2, 2)(rng);
  c.flags = (rng() % 2) ? unsigned{POSENC_ALIBI_CAUSAL} : 0u;
  c.bias_only = rng() % 4 == 0;
  size_t unused_stride_arg;
  c.layout = PaddedRows(rng, c.n_q, c.n_k, unused_stride_arg);
  c.layout.blocks = c.slopes.size();
  c.layout.block_stride += (rng() % 2) ? rng() % 6 : 0;
  c.in = RandomData(rng, c.layout.Extent());
  c.expected = c.in;
  for (size_t i = 0; i < c.expected.size(); ++i) {
    const size_t h = i / c.layout.block_stride, in_block = i % c.layout.block_stride;
    if (c.layout.Contains(i))
      c.expected[i] =
          c.Loop(h, in_block / c.layout.row_stride, in_block % c.layout.row_stride, c.in[i]);
  }
  return c;
}

// posenc.h's formula in plain float arithmetic (built with -ffp-contract=off).
float AlibiCase::Loop(size_t h, size_t i, size_t j, float s) const {
  const int64_t qpos = static_cast<int64_t>(q_offset + i), key = static_cast<int64_t>(j);
  if ((flags & POSENC_ALIBI_CAUSAL) && key > qpos) return -INFINITY;
  const float distance = static_cast<float>(qpos > key ? qpos - key : key - qpos);
  const float product = slopes[h] * distance;
  if (bias_only) return -product;
  const float scaled = scale * s;
  return scaled - product;
}

bool AlibiCase::Run(posenc_isa isa, std::vector<float>& out) const {
  out = in;
  if (posenc_set_isa(isa) != POSENC_OK) return false;
  const size_t heads = slopes.size(), hs = layout.block_stride, rs = layout.row_stride;
  const posenc_status s = bias_only ? posenc_alibi_bias_f32(slopes.data(), heads, n_q, n_k,
                                                            q_offset, out.data(), hs, rs, flags)
                                    : posenc_alibi_add_f32(slopes.data(), heads, n_q, n_k, q_offset,
                                                           out.data(), hs, rs, scale, flags);
  return s == POSENC_OK;
}

// ---- learned --------------------------------------------------------------------------

// A random gather-add with padded table rows and embeddings.
struct LearnedCase {
  size_t max_pos = 0, table_stride_arg = 0, x_stride_arg = 0;
  RowPositions positions;
  Layout table_layout, layout;  // layout: x
  std::vector<float> table, in, expected;

  static LearnedCase Random(std::mt19937_64& rng);
  bool Run(posenc_isa isa, std::vector<float>& out) const;
};

LearnedCase LearnedCase::Random(std::mt19937_64& rng) {
  LearnedCase c;
  c.max_pos = 1 + rng() % 300;
  const size_t dim = 1 + rng() % 150, tokens = 1 + rng() % 16;
  if (tokens <= c.max_pos && rng() % 4 == 0)
    c.positions.start = static_cast<int32_t>(rng() % (c.max_pos - tokens + 1));
  else
    for (size_t t = 0; t < tokens; ++t)
      c.positions.list.push_back(static_cast<int32_t>(rng() % c.max_pos));
  c.table_layout = PaddedRows(rng, c.max_pos, dim, c.table_stride_arg);
  c.layout = PaddedRows(rng, tokens, dim, c.x_stride_arg);
  c.table = RandomData(rng, c.table_layout.Extent());
  c.in = RandomData(rng, c.layout.Extent());
  c.expected = c.in;
  for (size_t t = 0; t < tokens; ++t)
    for (size_t j = 0; j < dim; ++j)
      c.expected[t * c.layout.row_stride + j] +=
          c.table[static_cast<size_t>(c.positions.At(t)) * c.table_layout.row_stride + j];
  return c;
}

bool LearnedCase::Run(posenc_isa isa, std::vector<float>& out) const {
  out = in;
  return posenc_set_isa(isa) == POSENC_OK &&
         posenc_learned_add_f32(table.data(), max_pos, table_stride_arg, layout.cols, layout.rows,
                                positions.Pointer(), positions.start, out.data(),
                                x_stride_arg) == POSENC_OK;
}

// ---- the table ------------------------------------------------------------------------

IsaErrors CheckAll(uint64_t seed) {
  IsaErrors errors(POSENC_ISA_COUNT);
  std::mt19937_64 rng(seed);
  RunCases<SinusoidCase>(rng, errors, CompareSinusoid);
  RunCases<AlibiCase>(
      rng, errors, [](const AlibiCase& c, const auto& ref, const auto& out, EncodingErrors& e) {
        CompareExact(c, ref, out, e.alibi_vs_scalar, e.alibi_vs_loop, e.untouched_changed);
      });
  RunCases<LearnedCase>(
      rng, errors, [](const LearnedCase& c, const auto& ref, const auto& out, EncodingErrors& e) {
        CompareExact(c, ref, out, e.learned_vs_scalar, e.learned_vs_loop, e.untouched_changed);
      });
  for (posenc_isa isa : AvailableIsas()) {
    std::mt19937_64 accuracy_rng(seed);  // the same calls for every ISA
    errors[isa].accuracy = WorstAccuracyAllCalls(isa, accuracy_rng);
  }
  return errors;
}

bool Passes(const EncodingErrors& e) {
  return e.sinusoid <= POSENC_SINUSOID_SIMD_TOLERANCE && e.accuracy <= kAccuracyBound &&
         e.alibi_vs_scalar + e.alibi_vs_loop + e.learned_vs_scalar + e.learned_vs_loop +
                 e.untouched_changed + e.failed_calls ==
             0;
}

void PrintRow(std::ostream& out, posenc_isa isa, const EncodingErrors& e) {
  char alibi[48], learned[48], line[200];
  std::snprintf(alibi, sizeof alibi, "%zu/%zu", e.alibi_vs_scalar, e.alibi_vs_loop);
  std::snprintf(learned, sizeof learned, "%zu/%zu", e.learned_vs_scalar, e.learned_vs_loop);
  std::snprintf(line, sizeof line, "  %-8s %8.3g %9.3g %8.3g %9.3g %11s %13s %10zu %6zu   %s\n",
                posenc_isa_name(isa), std::fmax(e.sinusoid, 0.0), POSENC_SINUSOID_SIMD_TOLERANCE,
                e.accuracy, kAccuracyBound, alibi, learned, e.untouched_changed, e.failed_calls,
                Passes(e) ? "PASS" : "FAIL");
  out << line;
}

}  // namespace

bool RunEncodingCheck(uint64_t seed, std::ostream& out) {
  out << "\n  Sinusoidal, ALiBi, learned: " << kRandomCases
      << " random calls each (widths incl. odd, padded rows, positions incl.\n"
         "    large and negative)\n"
         "  sin err: fill, timesteps fill and add, 3 layouts, accurate/f32 angles, worst\n"
         "    |isa - scalar| per element (add: beyond one ulp of the sum)\n"
         "  sin acc: accurate fills against sinl/cosl of the exact angle: random positions\n"
         "    and timesteps up to 2^31, 520 consecutive rows at 2^31-520 and -(2^31-1)\n"
         "  alibi, learned: elements not bit-identical to scalar / to a plain float loop\n"
         "    (alibi: add and bias, causal or not, scale, query offsets up to 2^31)\n";
  out << "  isa       sin err     bound  sin acc     bound  alibi diff  learned diff  untouched"
         "  calls   result\n";
  const IsaErrors errors = CheckAll(seed);
  const bool all_pass = PrintIsaRows([&](posenc_isa isa) {
    PrintRow(out, isa, errors[isa]);
    return Passes(errors[isa]);
  });
  out << "  (untouched: elements outside the written ones that changed; calls: failed calls)\n";
  return all_pass;
}

}  // namespace posenc_report
