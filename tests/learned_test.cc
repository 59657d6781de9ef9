// posenc_learned_add_f32: every variant bit-identical to the scalar variant and to
// x + table[pos] computed here (one float addition per element), on widths around every
// vector width, strides, misaligned pointers and every kind of position, with guards and
// sentinels around both buffers; its argument checks (nothing written on error); and seed
// 003's apply_learned.
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace posenc_test {
namespace {

constexpr uint32_t kSeed = 20240613;
constexpr size_t kGuard = 16;

float Sentinel(size_t index, uint32_t tag) {
  const uint32_t bits = 0x7fc00000u | (tag << 20) | static_cast<uint32_t>(index & 0xfffffu);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Values whose sums round in every way: ordinary ones, tiny and subnormal ones, -0, large
// ones that absorb small addends, and values that cancel.
float InterestingValue(std::mt19937& rng) {
  std::uniform_real_distribution<float> ordinary(-3.0f, 3.0f);
  switch (rng() % 8) {
    case 0:
      return 1e-40f * ordinary(rng);  // subnormal
    case 1:
      return -0.0f;
    case 2:
      return 3e7f * ordinary(rng);
    case 3:
      return 1.0f + 0x1p-23f * static_cast<float>(rng() % 4);
    default:
      return ordinary(rng);
  }
}

struct LearnedShape {
  size_t dim = 16;
  size_t max_pos = 40;
  size_t n_tokens = 3;
  size_t table_stride = 0;  // as passed: 0 means dim
  size_t x_stride = 0;
  size_t table_misalign = 0;  // floats after a 64-byte boundary
  size_t x_misalign = 0;
  std::vector<int32_t> positions;  // empty: NULL, start_pos + t
  int32_t start_pos = 0;
};

std::string Describe(const LearnedShape& s) {
  std::ostringstream os;
  os << "dim=" << s.dim << " max_pos=" << s.max_pos << " tokens=" << s.n_tokens
     << " table_stride=" << s.table_stride << " x_stride=" << s.x_stride
     << " table_misalign=" << s.table_misalign << " x_misalign=" << s.x_misalign << " ";
  if (s.positions.empty()) {
    os << "start_pos=" << s.start_pos;
  } else {
    os << "positions{" << s.positions[0] << ", ...}";
  }
  return os.str();
}

// A table and embeddings, each in its own buffer with guards on both sides and sentinels
// between rows.
class LearnedProblem {
 public:
  LearnedProblem(const LearnedShape& shape, uint32_t seed) : shape_(shape), table_(0), x_(0) {
    table_ = Buffer(shape.table_misalign, shape.max_pos, TableStride(), 1);
    x_ = Buffer(shape.x_misalign, shape.n_tokens, XStride(), 2);
    std::mt19937 rng(seed);
    for (size_t r = 0; r < shape.max_pos; ++r)
      for (size_t j = 0; j < shape.dim; ++j) table_[TableIndex(r, j)] = InterestingValue(rng);
    for (size_t t = 0; t < shape.n_tokens; ++t)
      for (size_t j = 0; j < shape.dim; ++j) x_[XIndex(t, j)] = InterestingValue(rng);
  }

  const LearnedShape& shape() const { return shape_; }
  const AlignedFloats& table() const { return table_; }
  const AlignedFloats& x() const { return x_; }
  size_t TableIndex(size_t row, size_t j) const {
    return kGuard + shape_.table_misalign + row * TableStride() + j;
  }
  size_t XIndex(size_t token, size_t j) const {
    return kGuard + shape_.x_misalign + token * XStride() + j;
  }
  int32_t Position(size_t token) const {
    return shape_.positions.empty() ? static_cast<int32_t>(shape_.start_pos + token)
                                    : shape_.positions[token];
  }

  posenc_status Run(AlignedFloats& x) const {
    return posenc_learned_add_f32(table_.data() + TableIndex(0, 0), shape_.max_pos,
                                  shape_.table_stride, shape_.dim, shape_.n_tokens,
                                  shape_.positions.empty() ? nullptr : shape_.positions.data(),
                                  shape_.start_pos, x.data() + XIndex(0, 0), shape_.x_stride);
  }

  // x with every row element replaced by x + table[pos], one float addition.
  AlignedFloats Expected() const {
    AlignedFloats out = x_;
    for (size_t t = 0; t < shape_.n_tokens; ++t)
      for (size_t j = 0; j < shape_.dim; ++j)
        out[XIndex(t, j)] = x_[XIndex(t, j)] + table_[TableIndex(Position(t), j)];
    return out;
  }

 private:
  size_t TableStride() const { return shape_.table_stride ? shape_.table_stride : shape_.dim; }
  size_t XStride() const { return shape_.x_stride ? shape_.x_stride : shape_.dim; }

  static AlignedFloats Buffer(size_t misalign, size_t rows, size_t stride, uint32_t tag) {
    const size_t extent = rows == 0 ? 0 : (rows - 1) * stride + stride;
    AlignedFloats b(kGuard + misalign + extent + kGuard);
    for (size_t i = 0; i < b.size(); ++i) b[i] = Sentinel(i, tag);
    return b;
  }

  LearnedShape shape_;
  AlignedFloats table_, x_;
};

// The index and values of the first element where two buffers differ bit for bit.
testing::AssertionResult BitIdentical(const AlignedFloats& got, const AlignedFloats& want) {
  const long first = FirstBitwiseDifference(got, want);
  if (first < 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "first difference at buffer index " << first << ": got "
                                     << got[first] << ", expected " << want[first];
}

void ExpectVariantBitIdentical(posenc_isa isa, const LearnedShape& shape) {
  SCOPED_TRACE(Describe(shape));
  const LearnedProblem problem(shape, kSeed);
  const AlignedFloats expected = problem.Expected();
  for (posenc_isa each : {POSENC_ISA_SCALAR, isa}) {
    AlignedFloats x = problem.x();
    const AlignedFloats table_before = problem.table();
    ASSERT_EQ(posenc_set_isa(each), POSENC_OK);
    ASSERT_EQ(problem.Run(x), POSENC_OK) << posenc_isa_name(each);
    EXPECT_TRUE(BitIdentical(x, expected)) << posenc_isa_name(each) << " vs x + table[pos]";
    EXPECT_TRUE(BitIdentical(problem.table(), table_before)) << "the table was written";
  }
}

void ExpectVariantBitIdentical(posenc_isa isa, const std::vector<LearnedShape>& shapes) {
  for (const LearnedShape& shape : shapes) {
    ExpectVariantBitIdentical(isa, shape);
    if (testing::Test::HasFailure()) return;
  }
}

// Random positions (repeated, out of order, including 0 and max_pos - 1), or consecutive
// ones from start_pos (positions NULL).
std::vector<LearnedShape> WithBothPositionModes(const std::vector<LearnedShape>& shapes) {
  std::mt19937 rng(kSeed);
  std::vector<LearnedShape> out;
  for (LearnedShape s : shapes) {
    s.start_pos = static_cast<int32_t>(s.max_pos - s.n_tokens);
    out.push_back(s);
    std::uniform_int_distribution<int32_t> any(0, static_cast<int32_t>(s.max_pos - 1));
    s.positions.clear();
    for (size_t t = 0; t < s.n_tokens; ++t) s.positions.push_back(any(rng));
    if (s.n_tokens >= 2) {
      s.positions[0] = static_cast<int32_t>(s.max_pos - 1);
      s.positions[1] = 0;
    }
    out.push_back(s);
  }
  return out;
}

LearnedShape Shape(size_t dim, size_t n_tokens) {
  LearnedShape s;
  s.dim = dim;
  s.n_tokens = n_tokens;
  return s;
}

class LearnedVariantTest : public EveryIsaTest {};

// dim = 1..33 covers every tail of 4, 8 and 16 lanes; the rest cross 2 and 4 vectors.
TEST_P(LearnedVariantTest, WidthsAroundVectorWidths) {
  std::vector<LearnedShape> shapes;
  for (size_t d = 1; d <= 33; ++d) shapes.push_back(Shape(d, 5));
  for (size_t d : {63, 64, 65, 127, 128, 129, 255, 256, 257, 4096}) shapes.push_back(Shape(d, 5));
  ExpectVariantBitIdentical(isa(), WithBothPositionModes(shapes));
}

TEST_P(LearnedVariantTest, TokenCounts) {
  std::vector<LearnedShape> shapes;
  for (size_t tokens : {1, 2, 7, 64, 600})
    for (size_t d : {3, 16, 40}) {
      LearnedShape s = Shape(d, tokens);
      s.max_pos = tokens + 30;
      shapes.push_back(s);
    }
  ExpectVariantBitIdentical(isa(), WithBothPositionModes(shapes));
}

// Strides equal to and larger than dim for the table and x; the gaps hold sentinels.
TEST_P(LearnedVariantTest, StridesLeaveGapsUntouched) {
  std::vector<LearnedShape> shapes;
  for (size_t d : {1, 7, 16, 33, 64})
    for (size_t ts : {size_t{0}, d, d + 1, d + 7})
      for (size_t xs : {size_t{0}, d, d + 3, 2 * d + 1}) {
        LearnedShape s = Shape(d, 6);
        s.table_stride = ts;
        s.x_stride = xs;
        shapes.push_back(s);
      }
  ExpectVariantBitIdentical(isa(), WithBothPositionModes(shapes));
}

TEST_P(LearnedVariantTest, MisalignedTableAndEmbeddings) {
  std::vector<LearnedShape> shapes;
  for (size_t d : {1, 3, 4, 5, 8, 9, 15, 16, 17, 33, 65})
    for (size_t tm : {0, 1, 3})
      for (size_t xm : {0, 1, 2}) {
        LearnedShape s = Shape(d, 4);
        s.table_misalign = tm;
        s.x_misalign = xm;
        s.x_stride = d + (d % 2);  // odd d: every row at a different alignment
        shapes.push_back(s);
      }
  ExpectVariantBitIdentical(isa(), WithBothPositionModes(shapes));
}

// Calls that move 16 MiB or more (x's rows and the table rows read; kernels/common.h,
// POSENC_PREFETCH_MIN_BYTES) prefetch each next token's table row: the same bits, with
// random positions (the last token's row at the table's end) and consecutive ones, a width
// with a tail, and strides with gaps (their sentinels checked).
TEST_P(LearnedVariantTest, LargeCallsThatPrefetch) {
  std::vector<LearnedShape> shapes;
  LearnedShape s = Shape(1029, 2100); /* 2 x 2100 x 1029 x 4 bytes: 16.5 MiB */
  s.max_pos = 2200;
  shapes.push_back(s);
  s.table_stride = 1031;
  s.x_stride = 1033;
  shapes.push_back(s);
  std::vector<LearnedShape> both = WithBothPositionModes(shapes);
  both.back().positions.back() = static_cast<int32_t>(s.max_pos - 1);
  ExpectVariantBitIdentical(isa(), both);
}

// A position repeated for every token, and a table of one row.
TEST_P(LearnedVariantTest, RepeatedPositionsAndOneRowTable) {
  LearnedShape s = Shape(37, 9);
  s.positions.assign(9, 11);
  ExpectVariantBitIdentical(isa(), s);
  s.max_pos = 1;
  s.positions.assign(9, 0);
  ExpectVariantBitIdentical(isa(), s);
}

TEST_P(LearnedVariantTest, NonFiniteValuesPropagate) {
  LearnedShape s = Shape(19, 4);
  s.positions = {3, 5, 3, 0};
  LearnedProblem problem(s, kSeed);
  AlignedFloats table = problem.table(), x = problem.x();
  table[problem.TableIndex(3, 0)] = NAN;
  table[problem.TableIndex(5, 18)] = INFINITY;
  x[problem.XIndex(1, 18)] = -INFINITY;  // + inf: NaN
  x[problem.XIndex(3, 7)] = INFINITY;
  AlignedFloats expected = x;
  for (size_t t = 0; t < s.n_tokens; ++t)
    for (size_t j = 0; j < s.dim; ++j)
      expected[problem.XIndex(t, j)] += table[problem.TableIndex(s.positions[t], j)];
  ASSERT_EQ(
      posenc_learned_add_f32(table.data() + problem.TableIndex(0, 0), s.max_pos, 0, s.dim,
                             s.n_tokens, s.positions.data(), 0, x.data() + problem.XIndex(0, 0), 0),
      POSENC_OK);
  // NaN payloads may differ between additions; compare NaN-ness, the rest bit for bit.
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(x[i])) << "index " << i;
    } else {
      EXPECT_TRUE(BitwiseEqual(x[i], expected[i]))
          << "index " << i << ": " << x[i] << " vs " << expected[i];
    }
  }
}

// Gathers whose table and x start right after, or end right before, an inaccessible page.
// Exits with 1 on an error status; any access outside the rows kills the process.
[[noreturn]] void AddNextToGuardPages() {
  for (size_t d : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65, 129}) {
    const size_t max_pos = 3, tokens = 2, n_table = max_pos * d, n_x = tokens * d;
    GuardedPages table_pages(n_table), x_pages(n_x);
    if (!table_pages.ok() || !x_pages.ok()) std::exit(1);
    const int32_t positions[tokens] = {2, 0};
    for (float* table : {table_pages.AtStart(), table_pages.AtEnd(n_table)})
      for (float* x : {x_pages.AtStart(), x_pages.AtEnd(n_x)}) {
        for (size_t i = 0; i < n_table; ++i) table[i] = 0.5f;
        for (size_t i = 0; i < n_x; ++i) x[i] = 1.0f;
        if (posenc_learned_add_f32(table, max_pos, 0, d, tokens, positions, 0, x, 0) != POSENC_OK ||
            posenc_learned_add_f32(table, max_pos, 0, d, tokens, nullptr, 1, x, 0) != POSENC_OK)
          std::exit(1);
      }
  }
  std::exit(0);
}

TEST_P(LearnedVariantTest, NeverTouchesMemoryOutsideTheRows) {
  ExpectNoAccessNextToGuardPages(AddNextToGuardPages, isa(), "the table or x");
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(LearnedVariantTest);

// seed 003: apply_learned(embeddings, pos_embeddings) = embeddings + pos_embeddings[:L], the
// same float additions as NumPy's, so bit for bit.
TEST(Seed003, ApplyLearnedAddsTheFirstRows) {
  for (size_t dim : {8, 64, 100})
    for (size_t len : {1, 5, 128}) {
      SCOPED_TRACE("d=" + std::to_string(dim) + " L=" + std::to_string(len));
      const size_t max_pos = 128;
      std::mt19937 rng(kSeed);
      std::vector<float> pos_embeddings(max_pos * dim), embeddings(len * dim);
      for (float& v : pos_embeddings) v = InterestingValue(rng);
      for (float& v : embeddings) v = InterestingValue(rng);
      std::vector<float> x = embeddings;
      ASSERT_EQ(posenc_learned_add_f32(pos_embeddings.data(), max_pos, 0, dim, len, nullptr, 0,
                                       x.data(), 0),
                POSENC_OK);
      for (size_t i = 0; i < x.size(); ++i) {
        const float seed = embeddings[i] + pos_embeddings[i];  // pos_embeddings[:L] row-major
        ASSERT_TRUE(BitwiseEqual(x[i], seed)) << "element " << i << ": " << x[i] << " vs " << seed;
      }
    }
}

// Argument checks, with the active ISA (ctest runs the binary once per ISA). One buffer:
// guards, the table [4, 8] at +40, a gap, x [3, 8] at +80, guards; room before the table
// for an x that ends inside it.
constexpr size_t kDim = 8;
constexpr size_t kMaxPos = 4;
constexpr size_t kTokens = 3;

struct LearnedCall {
  const float* table;
  size_t max_pos;
  size_t table_stride;
  size_t dim;
  size_t n_tokens;
  const int32_t* positions;
  int32_t start_pos;
  float* x;
  size_t x_stride;

  posenc_status Invoke() const {
    return posenc_learned_add_f32(table, max_pos, table_stride, dim, n_tokens, positions, start_pos,
                                  x, x_stride);
  }
};

class LearnedArgumentsTest : public testing::Test {
 protected:
  LearnedArgumentsTest() : buffer_(128) {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = 0.25f + static_cast<float>(i);
  }

  float* table() { return buffer_.data() + 40; }
  float* x() { return buffer_.data() + 80; }

  LearnedCall ValidCall() {
    return LearnedCall{table(), kMaxPos, 0, kDim, kTokens, positions_, 0, x(), 0};
  }

  AlignedFloats buffer_;
  int32_t positions_[kTokens] = {3, 0, 2};
};

TEST_F(LearnedArgumentsTest, BaselineCallIsValidAndWrites) {
  const AlignedFloats before = buffer_;
  ASSERT_EQ(ValidCall().Invoke(), POSENC_OK);
  EXPECT_NE(FirstBitwiseDifference(before, buffer_), -1);
}

TEST_F(LearnedArgumentsTest, InvalidCallsAreRejectedAndWriteNothing) {
  const size_t kHuge = SIZE_MAX / 2 + 1;
  static const int32_t kLastTooLarge[kTokens] = {0, 1, kMaxPos};
  static const int32_t kFirstNegative[kTokens] = {-1, 1, 2};
  static const int32_t kLastMinimum[kTokens] = {0, 1, INT32_MIN};
  static const int32_t kLastMaximum[kTokens] = {0, 1, INT32_MAX};
  const CallChanges<LearnedCall> cases = {
      {"last token's position == max_pos", [](LearnedCall& c) { c.positions = kLastTooLarge; }},
      {"first token's position -1", [](LearnedCall& c) { c.positions = kFirstNegative; }},
      {"last token's position INT32_MIN", [](LearnedCall& c) { c.positions = kLastMinimum; }},
      {"last token's position INT32_MAX", [](LearnedCall& c) { c.positions = kLastMaximum; }},
      {"position beyond max_pos with dim 0",
       [](LearnedCall& c) {
         c.positions = kLastTooLarge;
         c.dim = 0;
       }},
      {"negative start_pos",
       [](LearnedCall& c) {
         c.positions = nullptr;
         c.start_pos = -1;
       }},
      {"start_pos + n_tokens - 1 == max_pos",
       [](LearnedCall& c) {
         c.positions = nullptr;
         c.start_pos = kMaxPos - kTokens + 1;
       }},
      {"start_pos + n_tokens - 1 > INT32_MAX (max_pos larger still)",
       [this](LearnedCall& c) {
         c.x = table() - kTokens;  // before the table, whose extent is now 2^31 floats
         c.positions = nullptr;
         c.start_pos = INT32_MAX - 1;
         c.max_pos = size_t{INT32_MAX} + 10;
         c.dim = 1;
       }},
      {"max_pos 0", [](LearnedCall& c) { c.max_pos = 0; }},
      {"NULL table", [](LearnedCall& c) { c.table = nullptr; }},
      {"NULL x", [](LearnedCall& c) { c.x = nullptr; }},
      {"x is the table", [this](LearnedCall& c) { c.x = table(); }},
      {"x one float into the table", [this](LearnedCall& c) { c.x = table() + 1; }},
      {"x's last row overlaps the table's first",
       [this](LearnedCall& c) { c.x = table() - (kTokens - 1) * kDim - 1; }},
      {"x overlaps the table's last row (never gathered)",
       [this](LearnedCall& c) {
         static const int32_t kFirstRows[kTokens] = {0, 1, 0};
         c.positions = kFirstRows;
         c.x = table() + (kMaxPos - 1) * kDim + 2;
       }},
      {"table_stride 1 < dim", [](LearnedCall& c) { c.table_stride = 1; }},
      {"table_stride dim - 1", [](LearnedCall& c) { c.table_stride = kDim - 1; }},
      {"x_stride dim - 1", [](LearnedCall& c) { c.x_stride = kDim - 1; }},
      {"(max_pos - 1) * table_stride overflows size_t",
       [=](LearnedCall& c) { c.table_stride = kHuge; }},
      {"(n_tokens - 1) * x_stride overflows size_t", [=](LearnedCall& c) { c.x_stride = kHuge; }},
      {"table extent + dim overflows size_t",
       [](LearnedCall& c) { c.table_stride = (SIZE_MAX - kDim) / (kMaxPos - 1) + 1; }},
      {"table extent in bytes overflows ptrdiff_t",
       [](LearnedCall& c) { c.table_stride = PTRDIFF_MAX / 8; }},
      {"x extent in bytes overflows ptrdiff_t",
       [](LearnedCall& c) { c.x_stride = PTRDIFF_MAX / 8; }},
      {"table not float-aligned",
       [](LearnedCall& c) {
         c.table = reinterpret_cast<const float*>(reinterpret_cast<const char*>(c.table) + 1);
       }},
      {"x not float-aligned",
       [](LearnedCall& c) { c.x = reinterpret_cast<float*>(reinterpret_cast<char*>(c.x) + 2); }},
  };
  ExpectChangedCallsReturnAndWriteNothing(ValidCall(), cases, POSENC_ERR_INVALID_ARGUMENT, buffer_);
}

TEST_F(LearnedArgumentsTest, EmptyWorkIsAValidNoOp) {
  const CallChanges<LearnedCall> no_ops = {
      {"n_tokens 0, NULL table, x and positions",
       [](LearnedCall& c) {
         c.n_tokens = 0;
         c.table = nullptr;
         c.x = nullptr;
         c.positions = nullptr;
       }},
      {"n_tokens 0, start_pos past max_pos",
       [](LearnedCall& c) {
         c.n_tokens = 0;
         c.positions = nullptr;
         c.start_pos = INT32_MAX;
       }},
      {"dim 0, valid positions", [](LearnedCall& c) { c.dim = 0; }},
  };
  ExpectChangedCallsReturnAndWriteNothing(ValidCall(), no_ops, POSENC_OK, buffer_);
}

TEST_F(LearnedArgumentsTest, ValidUnusualCallsAreAccepted) {
  const CallChanges<LearnedCall> valid = {
      {"x right after the table", [this](LearnedCall& c) { c.x = table() + kMaxPos * kDim; }},
      {"x right before the table", [this](LearnedCall& c) { c.x = table() - kTokens * kDim; }},
      {"strides equal to dim",
       [](LearnedCall& c) {
         c.table_stride = kDim;
         c.x_stride = kDim;
       }},
      {"start_pos + n_tokens - 1 == max_pos - 1",
       [](LearnedCall& c) {
         c.positions = nullptr;
         c.start_pos = kMaxPos - kTokens;
       }},
      {"start_pos ignored when positions are given",
       [](LearnedCall& c) { c.start_pos = INT32_MIN; }},
      {"table and x one float past a 64-byte boundary",
       [](LearnedCall& c) {
         c.table += 1;
         c.x += 1;
       }},
  };
  ExpectChangedCallsReturn(ValidCall(), valid, POSENC_OK);
}

}  // namespace
}  // namespace posenc_test
