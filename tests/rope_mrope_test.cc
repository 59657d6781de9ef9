// Multimodal RoPE (posenc_mrope_f32, _bf16, _f16) against its definition in posenc.h:
//  - which position row each pair takes comes from the test's own transcription of HF
//    transformers (HfPairRows), not from the library: Qwen2-VL splits the R/2 frequencies
//    into consecutive chunks of mrope_section's sizes, chunk j from row j; Qwen3-VL
//    (POSENC_ROPE_MROPE_INTERLEAVED) starts from the temporal row and, for (dim, offset) in
//    ((1, 1), (2, 2)), takes freqs[offset : 3 * mrope_section[dim] : 3] from row dim;
//  - every ISA against a long double rotation of each pair at its own position
//    (ReferenceAngle and the plan's frequencies), within the bound rope_variants_test.cc
//    holds posenc_rope_f32 to: HF-like position ids (text tokens, images whose t/h/w differ,
//    repeated tokens, negative positions, positions up to 2^31 - 1, random triples),
//    Qwen2-VL's and Qwen3-VL's sections and edge sections, every flag combination, GQA,
//    R < D, every layout, strides with gaps, attention factors != 1, two-chunk plans;
//  - posenc_rope_f32 of the same ISA: text-only sequences bit for bit; every pair bit for
//    bit posenc_rope_f32 at that pair's position (token by token, and whole sequences with
//    F32_ANGLES, where no variant steps cos/sin from token to token), whole sequences with
//    accurate angles within twice the reference bound;
//  - bf16 / f16: bit for bit the same ISA's posenc_mrope_f32 result on the widened input,
//    rounded to the storage type;
//  - nothing outside the pairs changes (guards, sentinels in the gaps, [R, D), pages);
//  - every error of the header (nothing written), and the valid no-ops.
#include <posenc.h>

#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "half_harness.h"
#include "rope_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

// Any variant against the long double reference: the header's 2^-22 * att on c and s plus
// the float rounding of the rotation (as rope_variants_test.cc).
constexpr double kReferenceScale = 0x1p-21;
constexpr uint32_t kSeed = 20250612;
constexpr unsigned kInterleaved = POSENC_ROPE_MROPE_INTERLEAVED;

using Sections = std::array<size_t, 3>;
using MRopeFn = posenc_status (*)(const posenc_rope_plan*, const size_t*, size_t, size_t,
                                  const int32_t*, const posenc_rope_tensor*,
                                  const posenc_rope_tensor*, unsigned);

// --- the definition -------------------------------------------------------------------------

// The position row (0 temporal, 1 height, 2 width) of each of `half` pairs, transcribed from
// HF transformers:
//  - Qwen2-VL, apply_multimodal_rotary_pos_emb: mrope_section * 2 splits rotate_half's
//    duplicated cos/sin, chunk i taken from row i % 3; per pair (x[i], x[i + R/2]) that is one
//    pass of consecutive chunks s0, s1, s2 over the pairs;
//  - Qwen3-VL, apply_interleaved_mrope: freqs_t = freqs[0]; for dim, offset in ((1, 1),
//    (2, 2)): length = mrope_section[dim] * 3; idx = slice(offset, length, 3);
//    freqs_t[..., idx] = freqs[dim][..., idx] (a Python slice stops at the end).
std::vector<int> HfPairRows(const Sections& s, size_t half, bool interleaved) {
  std::vector<int> rows(half, 0);
  if (interleaved) {
    for (int dim : {1, 2}) {
      const size_t offset = static_cast<size_t>(dim), length = s[dim] * 3;
      for (size_t i = offset; i < length && i < half; i += 3) rows[i] = dim;
    }
    return rows;
  }
  size_t i = 0;
  for (int j = 0; j < 3; ++j)
    for (size_t n = 0; n < s[j] && i < half; ++n) rows[i++] = j;
  return rows;
}

// Whether every row gets as many pairs as its section says (what "fit" means: HF's slices
// would silently drop the pairs past R/2).
bool EachRowGetsItsSection(const Sections& s, size_t half, bool interleaved) {
  if (s[0] + s[1] + s[2] != half || s[0] > half || s[1] > half || s[2] > half) return false;
  Sections count = {0, 0, 0};
  for (int r : HfPairRows(s, half, interleaved)) ++count[static_cast<size_t>(r)];
  return count == s;
}

// The largest fitting interleaved sections for `half` pairs (height and width as long as
// their slices stay inside R/2, the temporal row the rest).
Sections FittingSections(size_t half) {
  const size_t h = (half + 1) / 3, w = half / 3;
  return {half - h - w, h, w};
}

// HF's position_ids (3, seq) of one sequence, row by row.
class PositionIds {
 public:
  void Triple(int32_t t, int32_t h, int32_t w) {
    rows_[0].push_back(t);
    rows_[1].push_back(h);
    rows_[2].push_back(w);
  }
  void Text(int32_t p) { Triple(p, p, p); }
  // An image or video of t x h x w (merged) patches whose ids start at `start`, as Qwen2-VL's
  // get_rope_index lays them out: (start + ti, start + hi, start + wi), t-major.
  void Vision(int32_t start, int32_t t, int32_t h, int32_t w) {
    for (int32_t ti = 0; ti < t; ++ti)
      for (int32_t hi = 0; hi < h; ++hi)
        for (int32_t wi = 0; wi < w; ++wi) Triple(start + ti, start + hi, start + wi);
  }
  size_t size() const { return rows_[0].size(); }
  const std::vector<int32_t>& Row(int r) const { return rows_[static_cast<size_t>(r)]; }
  // positions[] as posenc_mrope_* takes it: the three rows one after the other.
  std::vector<int32_t> Flat() const {
    std::vector<int32_t> flat;
    for (const auto& row : rows_) flat.insert(flat.end(), row.begin(), row.end());
    return flat;
  }

 private:
  std::array<std::vector<int32_t>, 3> rows_;
};

// A multimodal sequence: a prompt, an image, text after it at max + 1, repeats, tokens with
// two equal rows, negative ids, ids where kernels may switch angle formulas, ids up to
// INT32_MAX, and random triples over |p| < 2^31.
PositionIds MixedPositions() {
  PositionIds ids;
  for (int32_t p = 0; p < 4; ++p) ids.Text(p);  // consecutive: a kernel may step cos/sin
  ids.Vision(4, 2, 3, 4);                       // (4..5, 4..6, 4..7); the first is (4, 4, 4)
  for (int32_t p = 8; p < 11; ++p) ids.Text(p);
  ids.Text(10);  // a repeated text position
  ids.Triple(11, 12, 12);
  ids.Triple(11, 12, 12);  // a repeated triple
  ids.Triple(11, 11, 13);
  ids.Triple(11, 13, 11);
  ids.Triple(13, 11, 11);
  ids.Vision(-1000, 1, 2, 2);
  ids.Text(-5);
  ids.Text(-4);
  ids.Triple(-7, 3, -2);
  ids.Triple(26353589, 26353590, -26353589);  // 2^22 turns at w = 1
  ids.Vision(INT32_MAX - 3, 1, 2, 3);
  ids.Text(INT32_MAX);
  ids.Triple(-INT32_MAX, INT32_MAX, 0);
  ids.Triple(INT32_MAX, -INT32_MAX, 1 << 24);
  ids.Triple(131072, 1 << 20, 123456789);
  std::mt19937 rng(kSeed);
  const std::vector<int32_t> t = RandomPositions(rng, 6), h = RandomPositions(rng, 6),
                             w = RandomPositions(rng, 6);
  for (size_t i = 0; i < t.size(); ++i) ids.Triple(t[i], h[i], w[i]);
  return ids;
}

// Text only: a run longer than a stepping run (256), repeats, jumps, both signs, the top.
PositionIds TextPositions() {
  PositionIds ids;
  for (int32_t p = 0; p < 300; ++p) ids.Text(p);
  ids.Text(299);
  ids.Text(299);
  for (int32_t p : {1000, 1001, -3, -2, -1, 0, 1, 26353589, 26353590}) ids.Text(p);
  for (int32_t p = INT32_MAX - 5; p < INT32_MAX; ++p) ids.Text(p);
  ids.Text(INT32_MAX);
  ids.Text(-INT32_MAX);
  ids.Text(-INT32_MAX + 1);
  std::mt19937 rng(kSeed + 1);
  for (int32_t p : RandomPositions(rng, 10)) ids.Text(p);
  return ids;
}

// --- problems -------------------------------------------------------------------------------

struct MRopeCase {
  std::string model;
  RopeShape shape;  // views, R, D, base, att; flags: those of posenc_rope_f32
  Sections sections = {0, 0, 0};
  bool interleaved = false;
  PositionIds ids;
};

std::string Describe(const MRopeCase& c) {
  std::ostringstream os;
  os << c.model << " sections {" << c.sections[0] << ", " << c.sections[1] << ", " << c.sections[2]
     << "}" << (c.interleaved ? " INTERLEAVED " : " contiguous ") << Describe(c.shape);
  return os.str();
}

MRopeCase MakeCase(const std::string& model, size_t rotary_dim, size_t head_dim, double base,
                   const Sections& sections, bool interleaved, const PositionIds& ids) {
  MRopeCase c;
  c.model = model;
  c.shape.rotary_dim = rotary_dim;
  c.shape.head_dim = head_dim;
  c.shape.base = base;
  c.shape.n_tokens = ids.size();
  c.shape.q_heads = 4;
  c.shape.k_heads = 2;
  c.shape.given_positions = ids.Row(0);  // the temporal row, for failure messages
  c.sections = sections;
  c.interleaved = interleaved;
  c.ids = ids;
  return c;
}

MRopeCase Qwen2Vl(const PositionIds& ids) {
  return MakeCase("Qwen2-VL", 128, 128, 1e6, {16, 24, 24}, false, ids);
}
MRopeCase Qwen3Vl(const PositionIds& ids) {
  return MakeCase("Qwen3-VL", 128, 128, 5e6, {24, 20, 20}, true, ids);
}

// Where a RopeProblem placed its views (element offsets from the start of its buffer), found
// by letting the harness call a function that records them instead of rotating.
struct PlacedView {
  size_t offset = 0;
  posenc_rope_tensor tensor = {nullptr, 0, 0, 0};  // heads and strides; data unused
};
struct PlacedViews {
  const char* base = nullptr;
  PlacedView q, k;
  bool has_k = false;
};
thread_local PlacedViews* g_placed = nullptr;

posenc_status RecordViews(const posenc_rope_plan*, size_t, size_t, const int32_t*, int32_t,
                          const posenc_rope_tensor* q, const posenc_rope_tensor* k, unsigned) {
  g_placed->q = {static_cast<size_t>(static_cast<const char*>(q->data) - g_placed->base), *q};
  g_placed->has_k = k != nullptr;
  if (k)
    g_placed->k = {static_cast<size_t>(static_cast<const char*>(k->data) - g_placed->base), *k};
  return POSENC_OK;
}

// A case's RopeProblem (input, guards, sentinels, pairs) and calls on its views.
class MRopeProblem {
 public:
  MRopeProblem(const MRopeCase& c, uint32_t seed)
      : case_(c),
        rope_(c.shape, seed),
        rows_(HfPairRows(c.sections, c.shape.rotary_dim / 2, c.interleaved)),
        positions_(c.ids.Flat()) {
    std::vector<char> scratch(rope_.input().size());
    PlacedViews placed;
    placed.base = scratch.data();
    g_placed = &placed;
    EXPECT_EQ(rope_.RotateWith(RecordViews, nullptr, scratch.data(), 1, 0), POSENC_OK);
    g_placed = nullptr;
    views_ = placed;
  }

  const MRopeCase& mcase() const { return case_; }
  const RopeProblem& rope() const { return rope_; }
  const AlignedFloats& input() const { return rope_.input(); }
  const std::vector<int>& rows() const { return rows_; }
  size_t n_tokens() const { return case_.shape.n_tokens; }
  int32_t Position(int row, size_t t) const { return case_.ids.Row(row)[t]; }
  unsigned mrope_flags() const {
    return case_.shape.flags | (case_.interleaved ? kInterleaved : 0u);
  }

  // `fn` on every token of `buffer` (elements of `elem` bytes placed as input()'s).
  posenc_status MRope(MRopeFn fn, const posenc_rope_plan* plan, void* buffer, size_t elem) const {
    const posenc_rope_tensor q = View(views_.q, buffer, elem, 0),
                             k = View(views_.k, buffer, elem, 0);
    return fn(plan, case_.sections.data(), case_.shape.head_dim, n_tokens(), positions_.data(), &q,
              views_.has_k ? &k : nullptr, mrope_flags());
  }
  posenc_status MRope(const posenc_rope_plan* plan, AlignedFloats& buffer) const {
    return MRope(posenc_mrope_f32, plan, buffer.data(), sizeof(float));
  }
  // posenc_mrope_f32 on token t alone.
  posenc_status MRopeToken(const posenc_rope_plan* plan, AlignedFloats& buffer, size_t t) const {
    const int32_t positions[3] = {Position(0, t), Position(1, t), Position(2, t)};
    const posenc_rope_tensor q = View(views_.q, buffer.data(), sizeof(float), t);
    const posenc_rope_tensor k = View(views_.k, buffer.data(), sizeof(float), t);
    return posenc_mrope_f32(plan, case_.sections.data(), case_.shape.head_dim, 1, positions, &q,
                            views_.has_k ? &k : nullptr, mrope_flags());
  }
  // posenc_rope_f32 on tokens [t0, t0 + n) at `positions` (NULL: start_pos + t).
  posenc_status Rope(const posenc_rope_plan* plan, AlignedFloats& buffer, size_t t0, size_t n,
                     const int32_t* positions, int32_t start_pos) const {
    const posenc_rope_tensor q = View(views_.q, buffer.data(), sizeof(float), t0);
    const posenc_rope_tensor k = View(views_.k, buffer.data(), sizeof(float), t0);
    return posenc_rope_f32(plan, case_.shape.head_dim, n, positions, start_pos, &q,
                           views_.has_k ? &k : nullptr, case_.shape.flags);
  }
  // posenc_rope_f32 on every token at its position in `row`.
  posenc_status RopeRow(const posenc_rope_plan* plan, AlignedFloats& buffer, int row) const {
    return Rope(plan, buffer, 0, n_tokens(), case_.ids.Row(row).data(), 0);
  }

 private:
  static posenc_rope_tensor View(const PlacedView& v, void* buffer, size_t elem, size_t t0) {
    return {static_cast<char*>(buffer) + (v.offset + t0 * v.tensor.token_stride) * elem,
            v.tensor.n_heads, v.tensor.token_stride, v.tensor.head_stride};
  }

  MRopeCase case_;
  RopeProblem rope_;
  std::vector<int> rows_;
  std::vector<int32_t> positions_;
  PlacedViews views_;
};

// The input with every pair rotated in long double at its row's position.
std::vector<double> MRopeReference(const MRopeProblem& p, const std::vector<double>& freqs) {
  const RopeShape& s = p.mcase().shape;
  const long double att = s.attention_factor;
  const long double sign = (s.flags & POSENC_ROPE_INVERSE) ? -1.0L : 1.0L;
  const size_t half = freqs.size();
  std::vector<long double> cos_table(p.n_tokens() * half), sin_table(cos_table.size());
  for (size_t t = 0; t < p.n_tokens(); ++t)
    for (size_t i = 0; i < half; ++i) {
      const long double a = ReferenceAngle(p.Position(p.rows()[i], t), freqs[i], s.flags);
      cos_table[t * half + i] = att * std::cos(a);
      sin_table[t * half + i] = sign * att * std::sin(a);
    }
  std::vector<double> out = AsDoubles(p.input());
  for (const RotatedPair& pr : p.rope().pairs()) {
    const long double u = p.input()[pr.u], v = p.input()[pr.v];
    const long double c = cos_table[pr.token * half + pr.pair];
    const long double sn = sin_table[pr.token * half + pr.pair];
    out[pr.u] = static_cast<double>(u * c - v * sn);
    out[pr.v] = static_cast<double>(v * c + u * sn);
  }
  return out;
}

// Each pair's elements taken from the posenc_rope_f32 result of its row.
AlignedFloats SelectByRow(const MRopeProblem& p, const std::array<AlignedFloats, 3>& by_row) {
  AlignedFloats out = p.input();
  for (const RotatedPair& pr : p.rope().pairs()) {
    const AlignedFloats& src = by_row[static_cast<size_t>(p.rows()[pr.pair])];
    out[pr.u] = src[pr.u];
    out[pr.v] = src[pr.v];
  }
  return out;
}

// Every element bit for bit equal to `want` (rotated elements: posenc_rope_f32 of its row).
testing::AssertionResult SameBits(const MRopeProblem& p, const AlignedFloats& got,
                                  const AlignedFloats& want) {
  size_t differences = 0;
  std::ostringstream first;
  for (const RotatedPair& pr : p.rope().pairs())
    for (size_t i : {pr.u, pr.v}) {
      if (BitwiseEqual(got[i], want[i]) || differences++ > 0) continue;
      const int row = p.rows()[pr.pair];
      first << "first at " << pr.view << " token " << pr.token << " (t/h/w "
            << p.Position(0, pr.token) << "/" << p.Position(1, pr.token) << "/"
            << p.Position(2, pr.token) << ") head " << pr.head << " pair " << pr.pair << " (row "
            << row << ")" << (i == pr.u ? " u" : " v") << ": " << std::hexfloat << got[i] << " vs "
            << want[i];
    }
  if (differences == 0 && FirstBitwiseDifference(got, want) == -1)
    return testing::AssertionSuccess();
  if (differences == 0)
    return testing::AssertionFailure()
           << "element " << FirstBitwiseDifference(got, want) << " outside the pairs differs";
  return testing::AssertionFailure()
         << differences << " rotated element(s) differ; " << first.str();
}

// The cases of the reference checks: both models' sections on three layouts (R < D with
// padded strides and a misaligned base; [H, L, D] with att 1.25; packed QKV rows with GQA
// and att 0.75), then edge sections, then two-chunk plans, each with every flag combination.
std::vector<MRopeCase> ReferenceCases() {
  const PositionIds ids = MixedPositions();
  std::vector<MRopeCase> base;
  for (const MRopeCase& model : {Qwen2Vl(ids), Qwen3Vl(ids)}) {
    MRopeCase c = model;
    c.shape.head_dim = 136;
    c.shape.stride_pad = 3;
    c.shape.misalign = 1;
    base.push_back(c);
    c = model;
    c.shape.layout = TensorLayout::kHeadMajor;
    c.shape.k_heads = 1;
    c.shape.attention_factor = 1.25;
    base.push_back(c);
    c = model;
    c.shape.layout = TensorLayout::kPackedQkv;
    c.shape.head_dim = 130;
    c.shape.q_heads = 3;
    c.shape.k_heads = 1;
    c.shape.attention_factor = 0.75;
    base.push_back(c);
  }
  const std::pair<Sections, bool> edges[] = {
      {{64, 0, 0}, false}, {{0, 64, 0}, false},  {{0, 0, 64}, false}, {{21, 22, 21}, false},
      {{1, 62, 1}, false}, {{22, 21, 21}, true},  // the largest sections that fit R/2 = 64
      {{64, 0, 0}, true},  {{43, 21, 0}, true},  {{44, 0, 20}, true}, {{62, 1, 1}, true}};
  for (const auto& [sections, interleaved] : edges) {
    MRopeCase c = MakeCase("edge", 128, 131, 10000.0, sections, interleaved, ids);
    c.shape.q_heads = 1;
    c.shape.k_heads = 1;
    base.push_back(c);
  }
  // R = 1024: two chunks of 256 pairs; sections that change row inside a chunk and at its
  // end, and interleaved ones across both chunks.
  const std::pair<Sections, bool> wide[] = {
      {{128, 192, 192}, false}, {{300, 100, 112}, false}, {{172, 170, 170}, true}};
  for (const auto& [sections, interleaved] : wide) {
    MRopeCase c = MakeCase("two-chunk", 1024, 1030, 1e6, sections, interleaved, ids);
    c.shape.q_heads = 1;
    c.shape.k_heads = 1;
    c.shape.attention_factor = 1.5;
    base.push_back(c);
  }
  std::vector<MRopeCase> out;
  for (const MRopeCase& c : base)
    for (unsigned flags : AllFlagCombinations()) {
      out.push_back(c);
      out.back().shape.flags = flags;
    }
  return out;
}

class MRopeTest : public EveryIsaTest {};

// --- against the definition -----------------------------------------------------------------

TEST_P(MRopeTest, MatchesLongDoubleReferenceAtEachPairsPosition) {
  for (const MRopeCase& c : ReferenceCases()) {
    SCOPED_TRACE(Describe(c));
    const MRopeProblem p(c, kSeed);
    const PlanPtr plan = MakePlan(c.shape);
    ASSERT_NE(plan, nullptr);
    AlignedFloats out = p.input();
    ASSERT_EQ(p.MRope(plan.get(), out), POSENC_OK);
    EXPECT_TRUE(UntouchedOutsidePairs(p.rope(), out));
    EXPECT_TRUE(
        PairsWithin(p.rope(), out, MRopeReference(p, PlanFreqs(plan.get())), kReferenceScale));
    if (HasFailure()) return;  // one case's report is enough
  }
}

// Every pair of every token, computed token by token (no variant carries cos/sin from one
// call to the next), is bit for bit posenc_rope_f32 at that pair's position; over whole
// sequences the same with F32_ANGLES (prepared afresh or reused, never stepped), and within
// twice the reference bound with accurate angles (a variant may step one row's consecutive
// positions where M-RoPE computes them afresh).
TEST_P(MRopeTest, EachPairIsPosencRopeAtItsPosition) {
  for (const MRopeCase& c : ReferenceCases()) {
    SCOPED_TRACE(Describe(c));
    const MRopeProblem p(c, kSeed);
    const PlanPtr plan = MakePlan(c.shape);
    ASSERT_NE(plan, nullptr);

    AlignedFloats mrope = p.input();
    std::array<AlignedFloats, 3> rope = {p.input(), p.input(), p.input()};
    for (size_t t = 0; t < p.n_tokens(); ++t) {
      ASSERT_EQ(p.MRopeToken(plan.get(), mrope, t), POSENC_OK) << "token " << t;
      for (int r = 0; r < 3; ++r) {
        const int32_t position = p.Position(r, t);
        ASSERT_EQ(p.Rope(plan.get(), rope[static_cast<size_t>(r)], t, 1, &position, 0), POSENC_OK);
      }
    }
    EXPECT_TRUE(UntouchedOutsidePairs(p.rope(), mrope)) << "token by token";
    EXPECT_TRUE(SameBits(p, mrope, SelectByRow(p, rope))) << "token by token";

    AlignedFloats whole = p.input();
    std::array<AlignedFloats, 3> rows = {p.input(), p.input(), p.input()};
    ASSERT_EQ(p.MRope(plan.get(), whole), POSENC_OK);
    for (int r = 0; r < 3; ++r)
      ASSERT_EQ(p.RopeRow(plan.get(), rows[static_cast<size_t>(r)], r), POSENC_OK);
    const AlignedFloats selected = SelectByRow(p, rows);
    if (c.shape.flags & POSENC_ROPE_F32_ANGLES) {
      EXPECT_TRUE(SameBits(p, whole, selected)) << "whole sequence";
    } else {
      EXPECT_TRUE(PairsWithin(p.rope(), whole, AsDoubles(selected), 2 * kReferenceScale))
          << "whole sequence";
    }
    if (HasFailure()) return;
  }
}

// Text tokens (three equal positions) cost and give what posenc_rope_f32 does: bit for bit
// on sequences with runs, repeats and jumps, for both kinds of sections, one- and two-chunk
// plans, every flag combination; and against posenc_rope_f32's start_pos form.
TEST_P(MRopeTest, TextTokensArePosencRopeBitForBit) {
  const PositionIds text = TextPositions();
  PositionIds run;
  for (int32_t p = 0; p < 270; ++p) run.Text(-7 + p);
  const MRopeCase models[] = {Qwen2Vl(text), Qwen3Vl(text),
                              MakeCase("two-chunk", 1024, 1024, 1e6, {128, 192, 192}, false, text),
                              MakeCase("two-chunk", 1024, 1026, 1e6, {172, 170, 170}, true, text),
                              MakeCase("one-pair", 2, 3, 10000.0, {0, 0, 1}, false, text)};
  for (MRopeCase c : models) {
    c.shape.q_heads = c.shape.rotary_dim > 128 ? 1 : 2;
    c.shape.k_heads = 1;
    for (unsigned flags : AllFlagCombinations()) {
      c.shape.flags = flags;
      SCOPED_TRACE(Describe(c));
      const MRopeProblem p(c, kSeed);
      const PlanPtr plan = MakePlan(c.shape);
      ASSERT_NE(plan, nullptr);
      AlignedFloats mrope = p.input(), rope = p.input();
      ASSERT_EQ(p.MRope(plan.get(), mrope), POSENC_OK);
      ASSERT_EQ(p.RopeRow(plan.get(), rope, 0), POSENC_OK);
      EXPECT_EQ(FirstBitwiseDifference(mrope, rope), -1);
      EXPECT_TRUE(UntouchedOutsidePairs(p.rope(), mrope));
    }
  }
  for (unsigned flags : AllFlagCombinations()) {
    MRopeCase c = Qwen3Vl(run);
    c.shape.flags = flags;
    SCOPED_TRACE(Describe(c) + " vs start_pos");
    const MRopeProblem p(c, kSeed);
    const PlanPtr plan = MakePlan(c.shape);
    ASSERT_NE(plan, nullptr);
    AlignedFloats mrope = p.input(), rope = p.input();
    ASSERT_EQ(p.MRope(plan.get(), mrope), POSENC_OK);
    ASSERT_EQ(p.Rope(plan.get(), rope, 0, p.n_tokens(), nullptr, -7), POSENC_OK);
    EXPECT_EQ(FirstBitwiseDifference(mrope, rope), -1);
  }
}

// --- bf16 and f16 ---------------------------------------------------------------------------

TEST_P(MRopeTest, HalfStorageIsTheF32ResultRounded) {
  const PositionIds ids = MixedPositions();
  std::vector<MRopeCase> cases = {
      Qwen2Vl(ids), Qwen3Vl(ids),
      MakeCase("two-chunk", 1024, 1027, 1e6, {172, 170, 170}, true, ids)};
  cases[0].shape.head_dim = 133;
  cases[0].shape.stride_pad = 1;
  cases[1].shape.layout = TensorLayout::kPackedQkv;
  cases[1].shape.attention_factor = 1.25;
  cases[2].shape.q_heads = 1;
  cases[2].shape.k_heads = 1;
  for (Storage s : kStorages)
    for (const MRopeCase& base : cases)
      for (unsigned flags : AllFlagCombinations()) {
        MRopeCase c = base;
        c.shape.flags = flags;
        SCOPED_TRACE(std::string(StorageName(s)) + " " + Describe(c));
        const MRopeProblem p(c, kSeed);
        const PlanPtr plan = MakePlan(c.shape);
        ASSERT_NE(plan, nullptr);
        // The input in 16-bit storage (NaN sentinels tagged with their index outside the
        // pairs), and the same values widened exactly.
        HalfBuffer input(p.input().size());
        AlignedFloats widened(p.input().size());
        for (size_t i = 0; i < input.size(); ++i) {
          const float x = p.input()[i];
          input.Set(i, std::isnan(x) ? HalfNaNSentinel(s, i) : ToHalfBits(s, x));
          widened[i] = DecodeHalf(s, input.Get(i));
        }
        ASSERT_EQ(p.MRope(posenc_mrope_f32, plan.get(), widened.data(), sizeof(float)), POSENC_OK);
        HalfBuffer got = input;
        ASSERT_EQ(p.MRope(s == Storage::kBf16 ? posenc_mrope_bf16 : posenc_mrope_f16, plan.get(),
                          got.data(), sizeof(uint16_t)),
                  POSENC_OK);
        size_t failures = 0;
        for (size_t i = 0; i < input.size(); ++i) {
          const bool rotated = p.rope().IsRotated(i);
          const uint16_t want = rotated ? ToHalfBits(s, widened[i]) : input.Get(i);
          const bool ok =
              rotated && IsHalfNaN(s, want) ? IsHalfNaN(s, got.Get(i)) : got.Get(i) == want;
          if (!ok && failures++ < 3)
            ADD_FAILURE() << "element " << i << (rotated ? " (rotated)" : " (outside the pairs)")
                          << ": " << DescribeHalf(s, got.Get(i)) << ", want "
                          << DescribeHalf(s, want);
        }
        if (failures > 0) return;
      }
}

// --- memory next to the views ---------------------------------------------------------------

// Views that start right after, or end right before, an inaccessible page, for one- and
// two-chunk plans, both kinds of sections and every flag combination. Exits with 1 on an
// error status; any access outside a view kills the process.
[[noreturn]] void MRopeNextToGuardPages() {
  for (size_t half : {1, 2, 3, 5, 8, 9, 16, 17, 33, 64, 257, 320}) {
    for (size_t extra : {0, 1}) {
      const size_t head_dim = 2 * half + extra, tokens = 3, heads = 2;
      const size_t n = tokens * heads * head_dim;
      const PlanPtr plan = MakePlan(2 * half, 10000.0, 1.0);
      GuardedPages pages(n);
      if (!pages.ok() || plan == nullptr) std::exit(1);
      const Sections fitting = FittingSections(half);
      const int32_t positions[9] = {5, 6, -1, 5, 9, 2000000000, 5, 9, -2000000000};
      for (float* data : {pages.AtStart(), pages.AtEnd(n)})
        for (unsigned mode : {0u, kInterleaved})
          for (unsigned flags : AllFlagCombinations()) {
            for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(i % 7) - 3.0f;
            const posenc_rope_tensor q = {data, heads, heads * head_dim, head_dim};
            if (posenc_mrope_f32(plan.get(), fitting.data(), head_dim, tokens, positions, &q,
                                 nullptr, flags | mode) != POSENC_OK)
              std::exit(1);
          }
    }
  }
  std::exit(0);
}

TEST_P(MRopeTest, NeverTouchesMemoryOutsideTheView) {
  ExpectNoAccessNextToGuardPages(MRopeNextToGuardPages, isa(), "an M-RoPE view");
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(MRopeTest);

// --- the test's own transcription of HF -----------------------------------------------------

// HfPairRows against the header's wording for the two models' sections.
TEST(MRopeDefinitionTest, HfRowsAgreeWithTheHeaderForQwenSections) {
  const std::vector<int> qwen2 = HfPairRows({16, 24, 24}, 64, false);
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(qwen2[i], i < 16 ? 0 : i < 40 ? 1 : 2) << i;
  const std::vector<int> qwen3 = HfPairRows({24, 20, 20}, 64, true);
  for (size_t i = 0; i < 64; ++i)
    EXPECT_EQ(qwen3[i], i % 3 == 1 && i < 60 ? 1 : i % 3 == 2 && i < 60 ? 2 : 0) << i;
  EXPECT_TRUE(EachRowGetsItsSection({24, 20, 20}, 64, true));
  EXPECT_TRUE(EachRowGetsItsSection({16, 24, 24}, 64, false));
  EXPECT_FALSE(EachRowGetsItsSection({16, 24, 24}, 64, true));
  for (size_t half = 1; half <= 600; ++half)
    EXPECT_TRUE(EachRowGetsItsSection(FittingSections(half), half, true)) << half;
}

// --- argument checks ------------------------------------------------------------------------

struct MRopeStorage {
  const char* name;
  MRopeFn fn;
  size_t elem;
};
// GoogleTest prints a parameter; by name rather than by its bytes.
void PrintTo(const MRopeStorage& storage, std::ostream* os) { *os << storage.name; }

const MRopeStorage kMRopeStorages[] = {{"f32", posenc_mrope_f32, sizeof(float)},
                                       {"bf16", posenc_mrope_bf16, sizeof(uint16_t)},
                                       {"f16", posenc_mrope_f16, sizeof(uint16_t)}};

// Everything posenc_mrope_<type> takes; null sections, q or k when has_* is false.
struct MRopeCall {
  MRopeStorage storage;
  const posenc_rope_plan* plan;
  Sections sections;
  bool has_sections;
  size_t head_dim;
  size_t n_tokens;
  const int32_t* positions;
  posenc_rope_tensor q;
  posenc_rope_tensor k;
  bool has_q;
  bool has_k;
  unsigned flags;

  posenc_status Invoke() const {
    return storage.fn(plan, has_sections ? sections.data() : nullptr, head_dim, n_tokens, positions,
                      has_q ? &q : nullptr, has_k ? &k : nullptr, flags);
  }
  // n elements of the call's type after p.
  void* At(void* p, ptrdiff_t n) const {
    return static_cast<char*>(p) + n * static_cast<ptrdiff_t>(storage.elem);
  }
};

constexpr size_t kRotaryDim = 16;  // 8 pairs
constexpr size_t kHeadDim = 18;
constexpr size_t kTokens = 3;

class MRopeArgumentsTest : public testing::TestWithParam<MRopeStorage> {
 protected:
  // Q: [3 tokens, 2 heads, 18] at element 16 of the buffer; K: [3 tokens, 1 head, 18] right
  // after it. The buffer holds 512 floats, or the same bytes as 16-bit elements.
  MRopeArgumentsTest() : plan_(MakePlan(kRotaryDim, 10000.0, 1.0)), buffer_(512) {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = 0.5f + static_cast<float>(i);
  }

  size_t elem() const { return GetParam().elem; }
  void* q_data() { return static_cast<char*>(static_cast<void*>(buffer_.data())) + 16 * elem(); }
  void* k_data() { return static_cast<char*>(q_data()) + kTokens * 2 * kHeadDim * elem(); }

  // Sections {3, 3, 2} are valid both ways: interleaved, height pairs 1, 4, 7 < 8 and width
  // pairs 2, 5 < 8.
  MRopeCall ValidCall() {
    return MRopeCall{GetParam(),
                     plan_.get(),
                     {3, 3, 2},
                     true,
                     kHeadDim,
                     kTokens,
                     positions_,
                     {q_data(), 2, 2 * kHeadDim, kHeadDim},
                     {k_data(), 1, kHeadDim, kHeadDim},
                     true,
                     true,
                     POSENC_ROPE_NEOX};
  }

  PlanPtr plan_;
  AlignedFloats buffer_;
  const int32_t positions_[3 * kTokens] = {3, -1, 70000, 3, 5, 70001, 4, 7, INT32_MAX};
};

TEST_P(MRopeArgumentsTest, BaselineCallIsValidAndRotates) {
  for (unsigned flags : {0u, kInterleaved, POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE | kInterleaved}) {
    const AlignedFloats before = buffer_;
    MRopeCall call = ValidCall();
    call.flags = flags;
    ASSERT_EQ(call.Invoke(), POSENC_OK) << flags;
    EXPECT_NE(FirstBitwiseDifference(before, buffer_), -1) << flags;
  }
}

// Every invalid call with every flag combination, M-RoPE's interleaving included.
TEST_P(MRopeArgumentsTest, InvalidCallsAreRejectedAndWriteNothing) {
  const size_t kHuge = SIZE_MAX / 2 + 1;
  const CallChanges<MRopeCall> invalid = {
      {"NULL plan", [](MRopeCall& c) { c.plan = nullptr; }},
      {"NULL q", [](MRopeCall& c) { c.has_q = false; }},
      {"NULL sections", [](MRopeCall& c) { c.has_sections = false; }},
      {"NULL positions with n_tokens > 0", [](MRopeCall& c) { c.positions = nullptr; }},
      {"NULL positions with one token",
       [](MRopeCall& c) {
         c.positions = nullptr;
         c.n_tokens = 1;
       }},
      {"NULL q data", [](MRopeCall& c) { c.q.data = nullptr; }},
      {"NULL k data", [](MRopeCall& c) { c.k.data = nullptr; }},
      {"sections sum to R/2 - 1",
       [](MRopeCall& c) {
         c.sections = {3, 2, 2};
       }},
      {"sections sum to R/2 + 1",
       [](MRopeCall& c) {
         c.sections = {3, 3, 3};
       }},
      {"sections all 0",
       [](MRopeCall& c) {
         c.sections = {0, 0, 0};
       }},
      {"sections {R/2, 1, 0}",
       [](MRopeCall& c) {
         c.sections = {8, 1, 0};
       }},
      {"sections sum to R (the element count)",
       [](MRopeCall& c) {
         c.sections = {6, 5, 5};
       }},
      {"sections wrap to R/2: {SIZE_MAX, 4, 5}",
       [](MRopeCall& c) {
         c.sections = {SIZE_MAX, 4, 5};
       }},
      {"sections wrap to R/2: {5, SIZE_MAX - 1, 5}",
       [](MRopeCall& c) {
         c.sections = {5, SIZE_MAX - 1, 5};
       }},
      {"sections wrap to R/2: {9, 0, SIZE_MAX}",
       [](MRopeCall& c) {
         c.sections = {9, 0, SIZE_MAX};
       }},
      {"unknown flag bit 6", [](MRopeCall& c) { c.flags |= 64u; }},
      {"unknown flag bit 31", [](MRopeCall& c) { c.flags |= 1u << 31; }},
      {"head_dim < rotary_dim", [](MRopeCall& c) { c.head_dim = kRotaryDim - 2; }},
      {"head_dim 0", [](MRopeCall& c) { c.head_dim = 0; }},
      {"head_stride < head_dim, 2 heads", [](MRopeCall& c) { c.q.head_stride = kHeadDim - 1; }},
      {"tokens overlap the heads of the previous token",
       [](MRopeCall& c) { c.q.token_stride = 2 * kHeadDim - 1; }},
      {"K is the Q buffer", [](MRopeCall& c) { c.k.data = c.q.data; }},
      {"K overlaps Q's last head",
       [](MRopeCall& c) { c.k.data = c.At(c.q.data, 5 * kHeadDim + 3); }},
      {"K heads interleave Q's elements",
       [](MRopeCall& c) {
         c.k.data = c.At(c.q.data, 4);
         c.k.token_stride = c.q.token_stride;
       }},
      {"token extent overflows size_t", [=](MRopeCall& c) { c.q.token_stride = kHuge; }},
      {"head extent beyond PTRDIFF_MAX", [=](MRopeCall& c) { c.q.head_stride = kHuge; }},
      {"3 * n_tokens positions overflow size_t",
       [](MRopeCall& c) { c.n_tokens = SIZE_MAX / 3 + 1; }},
      {"q data not element-aligned",
       [](MRopeCall& c) { c.q.data = static_cast<char*>(c.q.data) + 1; }},
  };
  for (unsigned flags : AllFlagCombinations())
    for (unsigned mode : {0u, kInterleaved}) {
      MRopeCall valid = ValidCall();
      valid.flags = flags | mode;
      ExpectChangedCallsReturnAndWriteNothing(valid, invalid, POSENC_ERR_INVALID_ARGUMENT, buffer_,
                                              "flags=" + std::to_string(valid.flags) + ": ");
    }
}

// Interleaved sections must give each of height and width all its pairs below R/2 (3 s1 - 2
// and 3 s2 - 1 < R/2 where s1, s2 > 0); contiguous ones only need to sum to R/2. Plans of
// 1, 2, 8, 42 and 64 pairs, sections at and past the boundary, whether the call is accepted
// is what the test's own HF transcription says (and the table says so too).
TEST_P(MRopeArgumentsTest, InterleavedSectionsMustFitInRotaryDim) {
  struct SectionsCase {
    size_t half;
    Sections sections;
    bool fits_interleaved;
  };
  const SectionsCase cases[] = {
      {1, {1, 0, 0}, true},      {1, {0, 1, 0}, false},     {1, {0, 0, 1}, false},
      {2, {1, 1, 0}, true},      {2, {0, 1, 1}, false},     {2, {0, 2, 0}, false},
      {8, {3, 3, 2}, true},      {8, {2, 3, 3}, false},     {8, {1, 4, 3}, false},
      {8, {4, 0, 4}, false},     {8, {6, 0, 2}, true},      {8, {5, 3, 0}, true},
      {42, {0, 22, 20}, false},  {42, {14, 14, 14}, true},  {42, {20, 0, 22}, false},
      {64, {24, 20, 20}, true},  {64, {16, 24, 24}, false}, {64, {22, 21, 21}, true},
      {64, {20, 22, 22}, false}, {64, {21, 22, 21}, false}, {64, {21, 21, 22}, false},
      {64, {0, 64, 0}, false},   {64, {0, 0, 64}, false},   {64, {64, 0, 0}, true}};
  const int32_t positions[6] = {1, 2, 3, 4, 5, 6};
  for (const SectionsCase& sc : cases) {
    const std::string what =
        "half " + std::to_string(sc.half) + " sections {" + std::to_string(sc.sections[0]) + ", " +
        std::to_string(sc.sections[1]) + ", " + std::to_string(sc.sections[2]) + "}";
    ASSERT_EQ(EachRowGetsItsSection(sc.sections, sc.half, true), sc.fits_interleaved) << what;
    ASSERT_TRUE(EachRowGetsItsSection(sc.sections, sc.half, false)) << what;
    const PlanPtr plan = MakePlan(2 * sc.half, 10000.0, 1.0);
    ASSERT_NE(plan, nullptr);
    for (unsigned flags : AllFlagCombinations()) {
      // Two tokens of one head vector of R elements.
      MRopeCall call = ValidCall();
      call.plan = plan.get();
      call.sections = sc.sections;
      call.head_dim = 2 * sc.half;
      call.n_tokens = 2;
      call.positions = positions;
      call.q = {q_data(), 1, call.head_dim, call.head_dim};
      call.has_k = false;
      call.flags = flags | kInterleaved;
      if (sc.fits_interleaved) {
        EXPECT_EQ(call.Invoke(), POSENC_OK) << what << " interleaved";
      } else {
        ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_,
                                       what + " interleaved");
      }
      call.flags = flags;
      EXPECT_EQ(call.Invoke(), POSENC_OK) << what << " contiguous";
    }
  }
}

TEST_P(MRopeArgumentsTest, EmptyWorkIsAValidNoOp) {
  const CallChanges<MRopeCall> no_ops = {
      {"n_tokens 0, NULL positions",
       [](MRopeCall& c) {
         c.n_tokens = 0;
         c.positions = nullptr;
       }},
      {"n_tokens 0, NULL positions and data",
       [](MRopeCall& c) {
         c.n_tokens = 0;
         c.positions = nullptr;
         c.q.data = c.k.data = nullptr;
       }},
      {"n_heads 0, NULL data, no K",
       [](MRopeCall& c) {
         c.q = {nullptr, 0, 0, 0};
         c.has_k = false;
       }},
      {"n_heads 0 in q and k, NULL data",
       [](MRopeCall& c) {
         c.q = c.k = {nullptr, 0, 0, 0};
       }},
  };
  for (unsigned mode : {0u, kInterleaved}) {
    MRopeCall valid = ValidCall();
    valid.flags = mode;
    ExpectChangedCallsReturnAndWriteNothing(valid, no_ops, POSENC_OK, buffer_,
                                            mode ? "interleaved: " : "contiguous: ");
  }
}

TEST_P(MRopeArgumentsTest, ValidUnusualCallsAreAccepted) {
  const CallChanges<MRopeCall> valid = {
      {"packed QKV rows: K heads after Q heads in the same rows",
       [this](MRopeCall& c) {
         const size_t row = (2 + 2 * 1) * kHeadDim;  // Hq = 2, Hk = 1
         c.q = {q_data(), 2, row, kHeadDim};
         c.k = {c.At(q_data(), 2 * kHeadDim), 1, row, kHeadDim};
       }},
      {"[H,L,D] layout",
       [](MRopeCall& c) {
         c.q.token_stride = kHeadDim;
         c.q.head_stride = kTokens * kHeadDim;
       }},
      {"Q without K", [](MRopeCall& c) { c.has_k = false; }},
      {"head_dim == rotary_dim", [](MRopeCall& c) { c.head_dim = kRotaryDim; }},
      {"contiguous sections with an empty row",
       [](MRopeCall& c) {
         c.sections = {0, 8, 0};
       }},
  };
  ExpectChangedCallsReturn(ValidCall(), valid, POSENC_OK);
}

INSTANTIATE_TEST_SUITE_P(Storage, MRopeArgumentsTest, testing::ValuesIn(kMRopeStorages),
                         [](const testing::TestParamInfo<MRopeStorage>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace posenc_test
