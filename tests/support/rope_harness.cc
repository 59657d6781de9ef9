#include "rope_harness.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

namespace posenc_test {
namespace {

const char* LayoutName(TensorLayout layout) {
  switch (layout) {
    case TensorLayout::kTokenMajor:
      return "[L,H,D]";
    case TensorLayout::kHeadMajor:
      return "[H,L,D]";
    case TensorLayout::kPackedQkv:
      return "packed-QKV";
  }
  return "?";
}

std::string FlagNames(unsigned flags) {
  std::string s = (flags & POSENC_ROPE_GPTJ) ? "GPTJ" : "NEOX";
  if (flags & POSENC_ROPE_INVERSE) s += "|INVERSE";
  if (flags & POSENC_ROPE_F32_ANGLES) s += "|F32_ANGLES";
  return s;
}

// One past the last element of a view, relative to the data region (0 for no heads).
size_t ViewEnd(const ViewPlacement& v, size_t n_tokens, size_t head_dim) {
  if (v.n_heads == 0 || n_tokens == 0) return 0;
  return v.offset + (n_tokens - 1) * v.token_stride + (v.n_heads - 1) * v.head_stride + head_dim;
}

// Q and K views of the shape's layout; K follows Q (or shares its rows when packed).
void PlaceViews(const RopeShape& s, ViewPlacement* q, ViewPlacement* k) {
  const size_t d = s.head_dim, l = s.n_tokens, pad = s.stride_pad;
  switch (s.layout) {
    case TensorLayout::kTokenMajor: {
      const size_t hs = d + pad;
      *q = {0, s.q_heads, s.q_heads * hs + pad, hs};
      *k = {l * q->token_stride, s.k_heads, s.k_heads * hs + pad, hs};
      break;
    }
    case TensorLayout::kHeadMajor: {
      const size_t ts = d + pad;
      *q = {0, s.q_heads, ts, l * ts + pad};
      *k = {s.q_heads * q->head_stride, s.k_heads, ts, l * ts + pad};
      break;
    }
    case TensorLayout::kPackedQkv: {
      const size_t hs = d + pad, row = (s.q_heads + 2 * s.k_heads) * hs + pad;
      *q = {0, s.q_heads, row, hs};
      *k = {s.q_heads * hs, s.k_heads, row, hs};
      break;
    }
  }
}

}  // namespace

std::string Describe(const RopeShape& s) {
  std::ostringstream os;
  os << "R=" << s.rotary_dim << " D=" << s.head_dim << " L=" << s.n_tokens << " Hq=" << s.q_heads
     << " Hk=" << s.k_heads << " " << LayoutName(s.layout) << " pad=" << s.stride_pad
     << " misalign=" << s.misalign << " "
     << (s.explicit_positions
             ? std::string(s.given_positions.empty() ? "positions[random]" : "positions[given]")
             : "start_pos=" + std::to_string(s.start_pos))
     << " " << FlagNames(s.flags) << " att=" << s.attention_factor;
  if (s.freqs.empty()) {
    os << " base=" << s.base;
  } else {
    os << " freqs={" << s.freqs[0] << (s.freqs.size() > 1 ? ", ...}" : "}");
  }
  return os.str();
}

PlanPtr MakePlan(const RopeShape& shape) {
  if (shape.freqs.empty()) return MakePlan(shape.rotary_dim, shape.base, shape.attention_factor);
  posenc_rope_plan* plan = nullptr;
  EXPECT_EQ(posenc_rope_plan_create_from_freqs(&plan, shape.rotary_dim, shape.freqs.data(),
                                               shape.attention_factor),
            POSENC_OK)
      << Describe(shape);
  return PlanPtr(plan);
}

std::vector<unsigned> AllFlagCombinations() {
  std::vector<unsigned> all;
  for (unsigned pairs : {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ})
    for (unsigned direction : {0u, static_cast<unsigned>(POSENC_ROPE_INVERSE)})
      for (unsigned angles : {POSENC_ROPE_ACCURATE, POSENC_ROPE_F32_ANGLES})
        all.push_back(pairs | direction | angles);
  return all;
}

std::vector<RopeShape> WithEveryFlagCombination(const std::vector<RopeShape>& shapes) {
  return WithEachFlagValue(shapes, AllFlagCombinations());
}

RopeProblem::RopeProblem(const RopeShape& shape, uint32_t seed)
    : shape_(shape), data_offset_(kGuard + shape.misalign), input_(0) {
  PlaceViews(shape, &q_, &k_);
  const size_t extent = std::max(ViewEnd(q_, shape.n_tokens, shape.head_dim),
                                 ViewEnd(k_, shape.n_tokens, shape.head_dim));
  input_ = AlignedFloats(data_offset_ + extent + kGuard);
  rotated_.assign(input_.size(), 0);
  for (size_t i = 0; i < input_.size(); ++i) input_[i] = NaNSentinel(i);

  std::mt19937 rng(seed);
  FillHeadVectors(q_, 'q', rng);
  FillHeadVectors(k_, 'k', rng);
  if (shape.explicit_positions) {
    positions_ = shape.given_positions.empty() ? RandomPositions(rng, shape.n_tokens)
                                               : shape.given_positions;
    positions_.resize(shape.n_tokens);
  } else {
    for (size_t t = 0; t < shape.n_tokens; ++t)
      positions_.push_back(static_cast<int32_t>(shape.start_pos + static_cast<int64_t>(t)));
  }
}

void RopeProblem::FillHeadVectors(const ViewPlacement& view, char name, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  const size_t half = shape_.rotary_dim / 2;
  const bool gptj = (shape_.flags & POSENC_ROPE_GPTJ) != 0;
  for (size_t t = 0; t < shape_.n_tokens; ++t) {
    for (size_t h = 0; h < view.n_heads; ++h) {
      const size_t base = data_offset_ + view.offset + t * view.token_stride + h * view.head_stride;
      for (size_t d = 0; d < shape_.head_dim; ++d) input_[base + d] = value(rng);
      for (size_t i = 0; i < half; ++i) {
        const size_t u = base + (gptj ? 2 * i : i), v = base + (gptj ? 2 * i + 1 : i + half);
        pairs_.push_back({u, v, t, i, h, name});
        rotated_[u] = rotated_[v] = 1;
      }
    }
  }
}

posenc_status RopeProblem::Rotate(const posenc_rope_plan* plan, AlignedFloats& buffer,
                                  unsigned flags) const {
  return RotateWith(posenc_rope_f32, plan, buffer.data(), sizeof(float), flags);
}

posenc_status RopeProblem::RotateWith(RotateFn rotate, const posenc_rope_plan* plan, void* buffer,
                                      size_t elem_size, unsigned flags) const {
  char* data = static_cast<char*>(buffer) + data_offset_ * elem_size;
  posenc_rope_tensor q = {data + q_.offset * elem_size, q_.n_heads, q_.token_stride,
                          q_.head_stride};
  posenc_rope_tensor k = {data + k_.offset * elem_size, k_.n_heads, k_.token_stride,
                          k_.head_stride};
  return rotate(plan, shape_.head_dim, shape_.n_tokens,
                shape_.explicit_positions ? positions_.data() : nullptr, shape_.start_pos, &q,
                shape_.k_heads ? &k : nullptr, flags);
}

AlignedFloats RunWithIsa(const RopeProblem& problem, const posenc_rope_plan* plan, posenc_isa isa) {
  AlignedFloats out = problem.input();
  EXPECT_EQ(posenc_set_isa(isa), POSENC_OK) << posenc_isa_name(isa);
  EXPECT_EQ(problem.Rotate(plan, out, problem.shape().flags), POSENC_OK)
      << posenc_isa_name(isa) << ": " << Describe(problem.shape());
  return out;
}

std::vector<double> AsDoubles(const AlignedFloats& buffer) {
  return std::vector<double>(buffer.data(), buffer.data() + buffer.size());
}

std::vector<double> ReferenceOutput(const RopeProblem& problem, const std::vector<double>& freqs) {
  const RopeShape& s = problem.shape();
  const long double att = s.attention_factor;
  const long double sign = (s.flags & POSENC_ROPE_INVERSE) ? -1.0L : 1.0L;
  // cos/sin per (token, pair), computed once and shared by every head.
  std::vector<long double> cos_table(s.n_tokens * freqs.size());
  std::vector<long double> sin_table(cos_table.size());
  for (size_t t = 0; t < s.n_tokens; ++t)
    for (size_t i = 0; i < freqs.size(); ++i) {
      const long double a = ReferenceAngle(problem.positions()[t], freqs[i], s.flags);
      cos_table[t * freqs.size() + i] = att * std::cos(a);
      sin_table[t * freqs.size() + i] = sign * att * std::sin(a);
    }
  std::vector<double> out = AsDoubles(problem.input());
  for (const RotatedPair& p : problem.pairs()) {
    const long double u = problem.input()[p.u], v = problem.input()[p.v];
    const long double c = cos_table[p.token * freqs.size() + p.pair];
    const long double sn = sin_table[p.token * freqs.size() + p.pair];
    out[p.u] = static_cast<double>(u * c - v * sn);
    out[p.v] = static_cast<double>(v * c + u * sn);
  }
  return out;
}

testing::AssertionResult UntouchedOutsidePairs(const RopeProblem& problem,
                                               const AlignedFloats& out) {
  const AlignedFloats& in = problem.input();
  size_t changed = 0, first = 0;
  for (size_t i = 0; i < in.size(); ++i)
    if (!problem.IsRotated(i) && !BitwiseEqual(in[i], out[i]) && changed++ == 0) first = i;
  if (changed == 0) return testing::AssertionSuccess();
  const size_t data_begin = RopeProblem::kGuard + problem.shape().misalign;
  const size_t data_end = in.size() - RopeProblem::kGuard;
  const char* where = first < data_begin  ? "in the guard before the data"
                      : first >= data_end ? "in the guard after the data"
                                          : "inside the data region, outside every pair";
  return testing::AssertionFailure()
         << changed << " element(s) outside the rotated pairs changed; first at buffer index "
         << first << " (" << where << ", data offset " << static_cast<long>(first - data_begin)
         << "): " << in[first] << " -> " << out[first];
}

testing::AssertionResult PairsWithin(const RopeProblem& problem, const AlignedFloats& out,
                                     const std::vector<double>& expected, double scale) {
  const AlignedFloats& in = problem.input();
  const double att = problem.shape().attention_factor;
  size_t failures = 0;
  std::ostringstream first;
  for (const RotatedPair& p : problem.pairs()) {
    const double bound = scale * att * (std::fabs(in[p.u]) + std::fabs(in[p.v]));
    for (size_t index : {p.u, p.v}) {
      if (WithinBound(out[index], expected[index], bound) || failures++ > 0) continue;
      first << "first at " << p.view << " token " << p.token << " (position "
            << problem.positions()[p.token] << ") head " << p.head << " pair " << p.pair
            << (index == p.u ? " u" : " v") << ": got " << out[index] << ", expected "
            << expected[index] << ", |diff| " << std::fabs(out[index] - expected[index])
            << " > bound " << bound << " (input u=" << in[p.u] << " v=" << in[p.v] << ")";
    }
  }
  if (failures == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << failures << " rotated element(s) out of bound; " << first.str();
}

// --- the shared shape lists ------------------------------------------------------------------

namespace rope_shapes {

RopeShape Square(size_t rotary_dim) {
  RopeShape s;
  s.rotary_dim = s.head_dim = rotary_dim;
  return s;
}

std::vector<RopeShape> WithBothPositionModes(const std::vector<RopeShape>& shapes, int32_t start) {
  std::vector<RopeShape> out = shapes;
  for (RopeShape s : shapes) {
    s.explicit_positions = false;
    s.start_pos = start;
    out.push_back(s);
  }
  return out;
}

std::vector<RopeShape> Concat(std::vector<RopeShape> a, const std::vector<RopeShape>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// R/2 = 1..17 covers every tail of 4, 8 and 16 lanes; the rest cross 2 and 4 vectors, and
// 257, 320 (a 64-pair second chunk) and 600 pairs cross the 256-pair chunk of cos/sin.
std::vector<RopeShape> RotarySizesAroundVectorWidths() {
  std::vector<size_t> halves;
  for (size_t h = 1; h <= 17; ++h) halves.push_back(h);
  for (size_t h : {31, 32, 33, 63, 64, 65, 100, 128, 257, 320, 600}) halves.push_back(h);
  std::vector<RopeShape> shapes;
  for (size_t half : halves) shapes.push_back(Square(2 * half));
  return WithEveryFlagCombination(shapes);
}

// Odd head_dim and R < D: elements [R, D) must be left alone.
std::vector<RopeShape> PartialRotaryShapes() {
  const std::pair<size_t, size_t> dims[] = {{2, 3},    {4, 5},     {14, 15},   {16, 17},  {30, 33},
                                            {32, 33},  {62, 63},   {64, 65},   {8, 128},  {32, 128},
                                            {96, 127}, {128, 129}, {126, 131}, {514, 515}};
  std::vector<RopeShape> shapes;
  for (auto [rotary_dim, head_dim] : dims) {
    RopeShape s;
    s.rotary_dim = rotary_dim;
    s.head_dim = head_dim;
    s.n_tokens = 3;
    shapes.push_back(s);
  }
  return WithEveryFlagCombination(shapes);
}

std::vector<RopeShape> HeadAndTokenCounts() {
  std::vector<RopeShape> shapes;
  for (size_t heads : {1, 3, 7, 32})
    for (size_t tokens : {1, 2, 5, 16})
      for (unsigned flags : {0u, unsigned{POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE}}) {
        RopeShape s = Square(heads == 32 ? 128 : 40);
        s.q_heads = heads;
        s.k_heads = heads == 32 ? 8 : (heads + 1) / 2;
        s.n_tokens = tokens;
        s.flags = flags;
        shapes.push_back(s);
      }
  return shapes;
}

// Every layout, with strides equal to and larger than D, with and without K.
std::vector<RopeShape> LayoutsAndStrides() {
  std::vector<RopeShape> shapes;
  for (TensorLayout layout :
       {TensorLayout::kTokenMajor, TensorLayout::kHeadMajor, TensorLayout::kPackedQkv})
    for (size_t pad : {0, 1, 5, 16})
      for (auto [rotary_dim, head_dim] : {std::pair<size_t, size_t>{16, 16}, {34, 40}, {128, 128}})
        for (size_t k_heads : {0, 2}) {
          RopeShape s;
          s.rotary_dim = rotary_dim;
          s.head_dim = head_dim;
          s.layout = layout;
          s.stride_pad = pad;
          s.n_tokens = 3;
          s.q_heads = 4;
          s.k_heads = k_heads;
          s.flags = (pad % 2) ? POSENC_ROPE_GPTJ : POSENC_ROPE_NEOX;
          shapes.push_back(s);
        }
  return shapes;
}

// GQA as in Llama-3-8B: 32 Q heads and 8 K heads, Q alone (k = NULL), and a Q view
// without heads next to a K view (only K is rotated).
std::vector<RopeShape> GroupedQueryAttention() {
  std::vector<RopeShape> shapes;
  for (TensorLayout layout :
       {TensorLayout::kTokenMajor, TensorLayout::kHeadMajor, TensorLayout::kPackedQkv})
    for (auto [q_heads, k_heads] : {std::pair<size_t, size_t>{32, 8}, {32, 0}, {0, 8}}) {
      RopeShape s = Square(128);
      s.layout = layout;
      s.q_heads = q_heads;
      s.k_heads = k_heads;
      s.n_tokens = 4;
      shapes.push_back(s);
    }
  return WithEveryFlagCombination(shapes);
}

// Base pointers one element past a 64-byte boundary, for sizes around the vector widths.
std::vector<RopeShape> MisalignedBases() {
  std::vector<RopeShape> shapes;
  for (TensorLayout layout :
       {TensorLayout::kTokenMajor, TensorLayout::kHeadMajor, TensorLayout::kPackedQkv})
    for (size_t half : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33}) {
      RopeShape s = Square(2 * half);
      s.head_dim += half % 2;  // some odd head_dim, so later heads shift alignment too
      s.layout = layout;
      s.misalign = 1;
      s.q_heads = 3;
      s.k_heads = 2;
      shapes.push_back(s);
    }
  return WithEveryFlagCombination(shapes);
}

// Consecutive positions from start_pos, including the last valid one, both bases, and one
// rotary size that needs two 256-pair chunks.
std::vector<RopeShape> StartPositions() {
  std::vector<RopeShape> shapes;
  for (int32_t start : {0, 1, -7, 131072, -(INT32_MAX), INT32_MAX - 15, INT32_MIN})
    for (auto [base, rotary_dim] :
         {std::pair<double, size_t>{10000.0, 128}, {500000.0, 128}, {10000.0, 514}}) {
      RopeShape s = Square(rotary_dim);
      s.explicit_positions = false;
      s.start_pos = start;
      s.n_tokens = 16;
      s.base = base;
      shapes.push_back(s);
    }
  return WithEveryFlagCombination(shapes);
}

std::vector<RopeShape> AttentionFactors() {
  std::vector<RopeShape> shapes;
  for (double att : {0.25, 1.5, 3.75})
    for (size_t rotary_dim : {10, 64}) {
      RopeShape s = Square(rotary_dim);
      s.attention_factor = att;
      s.n_tokens = 5;
      shapes.push_back(s);
    }
  return WithBothPositionModes(WithEveryFlagCombination(shapes), 4093);
}

// Long runs of consecutive positions, where a kernel may step cos/sin from one token to
// the next instead of computing them afresh: runs longer than any plausible re-anchoring
// interval, of 520 tokens (one crossing zero, one ending at INT32_MAX) and of 300 (one
// ending at -1, one at INT32_MAX: another phase of the 64-position anchors), every mode;
// rotary sizes inside and at the edge of one 256-pair chunk (the large one on the 520-token
// runs in two modes only, to keep the tests fast).
std::vector<RopeShape> ConsecutivePositionRuns() {
  std::vector<RopeShape> shapes;
  const std::pair<int32_t, size_t> runs[] = {
      {-300, 520}, {INT32_MAX - 519, 520}, {-300, 300}, {INT32_MAX - 299, 300}};
  for (auto [start, n_tokens] : runs) {
    RopeShape s = Square(128);
    s.explicit_positions = false;
    s.start_pos = start;
    s.n_tokens = n_tokens;
    for (const RopeShape& each_mode : WithEveryFlagCombination({s})) shapes.push_back(each_mode);
    if (n_tokens != 520) continue;
    s.rotary_dim = s.head_dim = 512;
    for (unsigned flags : {0u, unsigned{POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE}}) {
      s.flags = flags;
      shapes.push_back(s);
    }
  }
  return shapes;
}

// Packed sequences (continuous batching): runs that restart, repeat a position, and jump
// from INT32_MAX to INT32_MIN.
std::vector<RopeShape> PackedSequencePositions() {
  std::vector<int32_t> positions;
  for (int32_t p = 1000; p < 1200; ++p) positions.push_back(p);
  for (int32_t p = 0; p < 150; ++p) positions.push_back(p);
  for (int32_t p : {7, 7, 7, 8, 8}) positions.push_back(p);
  for (int32_t p = INT32_MAX - 46; p < INT32_MAX; ++p) positions.push_back(p);
  for (int32_t p : {INT32_MAX, INT32_MIN, INT32_MIN + 1, INT32_MIN + 2}) positions.push_back(p);
  RopeShape s = Square(64);
  s.given_positions = positions;
  s.n_tokens = positions.size();
  return WithEveryFlagCombination({s});
}

// User frequencies (posenc_rope_plan_create_from_freqs): zero, negative, tiny and up to 4
// rad per position, which moves the position where the kernels change angle formulas.
std::vector<RopeShape> UserFrequencies() {
  const double values[] = {0.0, -1.0, 3.7, -4.0, 1e-7, -0.031, 2.5, 1.0, 1e-300};
  std::vector<RopeShape> shapes;
  for (size_t half : {1, 5, 9, 16, 64}) {
    RopeShape s = Square(2 * half);
    s.n_tokens = 7;
    for (size_t i = 0; i < half; ++i)
      s.freqs.push_back(values[(i + half) % 9] * (1.0 + 1e-3 * static_cast<double>(i)));
    shapes.push_back(s);
  }
  return WithBothPositionModes(WithEveryFlagCombination(shapes), -3);
}

}  // namespace rope_shapes

}  // namespace posenc_test
