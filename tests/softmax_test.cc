// The attention-score softmax, posenc_softmax, once per ISA (the suite softmax_test, built
// from three files over tests/support/softmax_harness.h):
//  - here, accuracy: every option alone and in combinations (scale, soft-capping, f32 / f16
//    masks shared or per head, key and query positions, causal and window hiding, sinks, the
//    three ALiBi forms) for every pair of score and probability types, both layouts, in place
//    and out of place, against a long double softmax written from the header's formula,
//    within the header's bound (POSENC_SOFTMAX_REL_TOLERANCE * p +
//    POSENC_SOFTMAX_ABS_TOLERANCE, plus c * 2^-20 relative with soft-capping and half an ulp
//    of a 16-bit output type), and against the scalar variant within twice that; a 16-bit
//    output bit for bit the same ISA's f32 output rounded; key counts around every vector
//    width and rows past the 16-bit block (4096 keys); two sequences in one KV cache; a mask
//    spelling out the causal flag or the window bit for bit the flag's result; ggml's
//    soft_max_ext (with ALiBi through its mask, and sinks) reproduced; the suite's own 16-bit
//    conversions against the harness's;
//  - softmax_special_test.cc: the special values the header defines, results independent of
//    how rows and heads are split between calls, guard pages;
//  - softmax_errors_test.cc: every documented error with nothing written, the valid edges,
//    empty work, huge counts rejected before any read.
// NaN sentinels lie in every gap of x, y and the mask throughout.
#include <posenc.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <random>
#include <utility>
#include <vector>

#include "half_harness.h"
#include "softmax_harness.h"
#include "test_support.h"

namespace posenc_test::softmax {
namespace {

// ---------------------------------------------------------------------------- accuracy

// Every option alone and in combinations, for every pair of types, both layouts (with gaps
// and misaligned starts; x and y laid out differently), key counts across the vector widths.
TEST_P(SoftmaxTest, EveryOptionEveryTypePairBothLayouts) {
  Errors errors;
  const std::vector<Option> options = Options();
  uint32_t seed = kSeed;
  for (const Option& option : options)
    for (size_t n_k : {1, 5, 16, 33, 100})
      for (posenc_dtype xt : kTypes) {
        ++seed;  // the same inputs for every y type and layout: one reference
        for (posenc_dtype yt : kTypes)
          for (bool query_major : {false, true}) {
            Spec s = Base(2, 3, n_k, {xt, yt}, option.name);
            s.xl = {query_major, 1, 3, n_k % 3};
            s.yl = {query_major, query_major ? 2u : 0u, 0, (n_k + 1) % 4};
            std::mt19937 rng(seed);
            option.apply(s, rng);
            Check(Problem(s, seed), &errors);
            if (HasFailure()) return;
          }
      }
  Report(errors);
}

// Key counts around every vector width (4, 8, 16 lanes; sums flushed every 16 vectors; the
// 16-bit block of 4096 keys), with rows of more than 4096 visible keys: plain rows, causal
// rows from position 0 (every visible count up to n_k in one call), windows whose first
// visible key moves across the vector and sum boundaries.
std::vector<size_t> KeyCounts() {
  std::vector<size_t> n;
  for (size_t k = 1; k <= 40; ++k) n.push_back(k);
  for (size_t k : {63, 64, 65, 255, 256, 257, 4095, 4096, 4097, 5000}) n.push_back(k);
  return n;
}

TEST_P(SoftmaxTest, KeyCountsAroundVectorWidths) {
  // Rows of 4095 keys and more: one head, one x type per kind of row and two y types (a
  // 16-bit one among them), to keep the long-double reference small.
  const auto long_row_types = [](int kind) -> std::pair<posenc_dtype, std::vector<posenc_dtype>> {
    if (kind == 0) return {kF32, {kBf16, kF16}};
    if (kind == 1) return {kBf16, {kBf16, kF32}};
    return {kF16, {kF16, kBf16}};
  };
  Errors errors;
  uint32_t seed = kSeed;
  for (size_t n_k : KeyCounts()) {
    const bool big = n_k > 40, long_rows = n_k >= 4095;
    const size_t heads = long_rows ? 1 : 2;
    for (int kind = 0; kind < 3; ++kind)
      for (posenc_dtype xt : kTypes) {
        if (long_rows && xt != long_row_types(kind).first) continue;
        ++seed;  // the same inputs for every y type: one reference
        const std::vector<posenc_dtype> all(std::begin(kTypes), std::end(kTypes));
        for (posenc_dtype yt : long_rows ? long_row_types(kind).second : all) {
          std::mt19937 rng(seed);
          Spec s;
          if (kind == 0) {
            s = Base(heads, 2, n_k, {xt, yt}, "scale, sinks");
            s.scale = 0.25f;
            s.yl.misalign = n_k % 4;
            s.sinks = RandomSinks(rng, s.heads);
          } else if (kind == 1) {
            // Causal rows ending at the last key: visible counts n_k - n_q + 1 .. n_k.
            s = Base(heads, std::min<size_t>(n_k, 3), n_k, {xt, yt},
                     "causal, alibi, f16 mask, softcap");
            s.flags = kCausal | kSoftcap;
            s.softcap = 20.0f;
            s.scale = 0.5f;
            s.q_offset = static_cast<int32_t>(n_k - s.n_q);
            s.slopes = AlibiSlopes(heads);
            for (float& v : s.slopes) v /= 16;
            s.mask = MaskOf(kF16, false, false, n_k % 2);
            s.xl = {n_k % 2 == 1, n_k % 3, 1, 0};
          } else {
            s = Base(heads, big ? 2 : 3, n_k, {xt, yt}, "window, symmetric alibi, sinks");
            s.flags = kWindow | kSymmetric;
            s.window = static_cast<int32_t>(n_k / 2 + 1);
            s.q_offset = static_cast<int32_t>(n_k - 1 + n_k / 4);
            s.slopes = AlibiSlopes(heads);
            s.sinks = RandomSinks(rng, s.heads);
          }
          Check(Problem(s, seed), &errors);
          if (HasFailure()) return;
        }
      }
  }
  Report(errors);
}

// Two sequences in one batch, as a runtime's KV cache holds them: cells of both sequences
// interleaved (and empty cells), each with its position; the queries of both sequences in one
// call; the mask hides the other sequence's cells and the empty ones, the causal flag the
// cells past each query's position.
TEST_P(SoftmaxTest, TwoSequencesInOneKvCache) {
  const size_t n_cells = 40;
  std::vector<int> seq_of_cell(n_cells);
  std::vector<int32_t> kpos(n_cells);
  int32_t next[2] = {0, 0};
  for (size_t c = 0; c < n_cells; ++c) {
    const int seq = c % 7 == 6 ? -1 : static_cast<int>((c / 3) % 2);  // -1: empty cell
    seq_of_cell[c] = seq;
    kpos[c] = seq < 0 ? 999 : next[seq]++;
  }
  // Queries: the last three positions of sequence 0, the last four of sequence 1.
  std::vector<int> seq_of_query;
  std::vector<int32_t> qpos;
  for (int seq : {0, 1})
    for (int32_t p = next[seq] - 3 - seq; p < next[seq]; ++p) {
      seq_of_query.push_back(seq);
      qpos.push_back(p);
    }
  // Cells are stored out of order: a rotation keeps the interleaving.
  std::rotate(seq_of_cell.begin(), seq_of_cell.begin() + 11, seq_of_cell.end());
  std::rotate(kpos.begin(), kpos.begin() + 11, kpos.end());
  const ValueFn mask = [&](std::mt19937&, const Spec&, size_t, size_t i, size_t j) {
    return seq_of_cell[j] == seq_of_query[i] ? 0.0f : -kInf;
  };
  uint32_t seed = kSeed;
  for (const TypePair& types : TypePairs())
    for (int variant = 0; variant < 3; ++variant) {
      Spec s = Base(4, qpos.size(), n_cells, types, "two sequences");
      s.kpos = kpos;
      s.qpos = qpos;
      s.flags = kCausal;
      s.scale = 0.125f;
      s.mask = MaskOf(variant == 2 ? kF16 : kF32, false, false, 0, mask);
      std::mt19937 rng(++seed);
      if (variant >= 1) s.slopes = AlibiSlopes(s.heads);
      if (variant >= 1) s.sinks = RandomSinks(rng, s.heads);
      if (variant == 2) {
        s.flags |= kWindow;
        s.window = 6;
      }
      const Problem pb(s, seed);
      Check(pb);
      // Each query's probabilities add up to 1 over its own sequence's cells (no sink).
      if (s.sinks.empty() && s.yt == kF32) {
        const Problem::Output out = pb.Run(kF32, false, isa());
        for (size_t h = 0; h < s.heads; ++h)
          for (size_t i = 0; i < s.n_q; ++i) {
            double sum = 0;
            for (size_t j = 0; j < n_cells; ++j) {
              if (seq_of_cell[j] != seq_of_query[i] || kpos[j] > qpos[i]) {
                EXPECT_EQ(FloatBits(out.Get(h, i, j)), 0u) << Where(s, h, i, j);
              }
              sum += out.Get(h, i, j);
            }
            EXPECT_NEAR(sum, 1.0, 1e-5) << "head " << h << " query " << i;
          }
      }
      if (HasFailure()) return;
    }
}

// ---------------------------------------------------------------------------- the flags
// spelled out by a mask

// Causal and window rows (default positions), once by the flags and once by a mask of 0 and
// -inf that spells them out (no flag): bit for bit the same.
TEST_P(SoftmaxTest, MaskSpellingOutTheFlagsGivesTheFlagsResult) {
  uint32_t seed = kSeed;
  for (unsigned flags : {kCausal, kWindow, kCausal | kWindow})
    for (size_t n_k : {1, 7, 16, 33, 65, 200, 300, 4100})
      for (int32_t q_offset : {0, static_cast<int32_t>(n_k) - 1, static_cast<int32_t>(n_k) + 3})
        for (posenc_dtype xt : {kF32, kBf16})
          for (posenc_dtype yt : {kF32, kBf16}) {
            if (n_k > 300 && xt != yt) continue;
            Spec s = Base(2, n_k > 300 ? 2 : 6, n_k, {xt, yt}, "flags");
            s.flags = flags;
            s.window = static_cast<int32_t>(n_k / 3 + 2);
            s.q_offset = q_offset;
            s.scale = 0.3f;
            s.slopes = AlibiSlopes(2);
            const Spec flagged = s;
            Spec masked = s;
            masked.flags = 0;
            masked.name = "mask";
            masked.mask = MaskOf(kF32, false, false, 0);
            // The mask: -inf where the flags hide the key, 0 elsewhere.
            masked.mask.values = [flags](std::mt19937&, const Spec& m, size_t, size_t i, size_t j) {
              const int64_t d = int64_t{KeyPos(m, j)} - QueryPos(m, i);
              const bool hidden =
                  ((flags & kCausal) && d > 0) || ((flags & kWindow) && -d >= m.window);
              return hidden ? -kInf : 0.0f;
            };
            ++seed;
            const Problem a(flagged, seed), b(masked, seed);  // the same scores
            const Problem::Output fa = a.Run(yt, false, isa()), fb = b.Run(yt, false, isa());
            ASSERT_TRUE(SameScores(a, fa, fb, "flag vs mask")) << Describe(masked);
            // The flag with a mask of zeros too.
            Spec zeros = s;
            zeros.mask =
                MaskOf(kF16, false, false, 1,
                       [](std::mt19937&, const Spec&, size_t, size_t, size_t) { return 0.0f; });
            const Problem c(zeros, seed);
            ASSERT_TRUE(SameScores(a, fa, c.Run(yt, false, isa()), "flag vs flag + zero mask"))
                << Describe(zeros);
          }
}

// Rows cut to their mask's visible extent (a mask the heads share: the keys before the first
// and after the last visible one are written +0 unread) give the bits of the same rows uncut:
// hiding the same keys with -1e30 instead of -inf cuts nothing (the scan looks for -inf) and
// makes the same zeros (exp underflows; the scores are finite). Query rows on the stack (3)
// and in the heap table (40), f32 and f16 masks, f32 and bf16 outputs.
TEST_P(SoftmaxTest, RowsCutToTheMaskGiveTheBitsOfUncutRows) {
  std::mt19937 rng(kSeed + 7);
  std::uniform_real_distribution<float> score(-4.0f, 4.0f);
  const size_t H = 3;
  for (size_t n_q : {size_t{3}, size_t{40}})
    for (size_t n_k : {size_t{64}, size_t{200}, size_t{700}})
      for (posenc_dtype mt : {POSENC_DTYPE_F32, POSENC_DTYPE_F16})
        for (posenc_dtype yt : {POSENC_DTYPE_F32, POSENC_DTYPE_BF16}) {
          std::vector<float> x(H * n_q * n_k);
          for (float& v : x) v = score(rng);
          // Row i: a visible window [a, b) with holes (its ends visible); row 1 the last key
          // alone, row 2 every key. (A row with no visible key is not compared: -1e30
          // everywhere leaves it uniform.)
          std::vector<float> inf_mask(n_q * n_k), big_mask(n_q * n_k);
          for (size_t i = 0; i < n_q; ++i) {
            size_t a = rng() % n_k, b = a + 1 + rng() % (n_k - a);
            if (i == 1) a = n_k - 1, b = n_k;
            if (i == 2) a = 0, b = n_k;
            for (size_t j = 0; j < n_k; ++j) {
              const bool visible = j >= a && j < b && (j == a || j + 1 == b || rng() % 4 != 0);
              inf_mask[i * n_k + j] = visible ? 0.0f : -kInf;
              big_mask[i * n_k + j] = visible ? 0.0f : -1e30f;
            }
          }
          const auto run = [&](const std::vector<float>& m) {
            std::vector<uint16_t> m16(m.size());
            for (size_t e = 0; e < m.size(); ++e)
              m16[e] = m[e] == -kInf ? uint16_t{0xFC00} : m[e] < 0 ? uint16_t{0xFBFF} : uint16_t{0};
            std::vector<float> y(H * n_q * n_k, -1.0f);  // bf16: the first half, as words
            posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
            p.mask = mt == POSENC_DTYPE_F32 ? static_cast<const void*>(m.data()) : m16.data();
            p.mask_dtype = mt;
            p.scale = 0.5f;
            const posenc_scores_view xv = {x.data(), POSENC_DTYPE_F32, n_q * n_k, n_k, 0};
            const posenc_scores_view yv = {y.data(), yt, n_q * n_k, n_k, 0};
            EXPECT_EQ(posenc_softmax(&p, H, n_q, n_k, &xv, &yv), POSENC_OK);
            return y;
          };
          // (f16: -65504, the largest finite value, in place of -1e30.)
          ASSERT_EQ(run(inf_mask), run(big_mask))
              << "n_q " << n_q << " n_k " << n_k << " mask " << mt << " y " << yt;
        }
}

// A call of 8 MiB of scores or more prefetches rows ahead, and with a mask the heads share it
// finds another query row's visible extent (its memo entry) before that row's own setup
// does: its results are those of the same rows called one head at a time (160 KiB each,
// no prefetch), bit for bit, for both mask types, with and without key positions (causal
// by kpos: the memo's range is then every column), for an f32 and a bf16 output.
TEST_P(SoftmaxTest, LargeMaskedCallsGiveTheBitsOfOneHeadCalls) {
  std::mt19937 rng(kSeed + 11);
  std::uniform_real_distribution<float> score(-4.0f, 4.0f);
  const size_t H = 52, n_q = 40, n_k = 1024;  // 52 x 40 x 1024 floats: 8.1 MiB
  std::vector<float> x(H * n_q * n_k);
  for (float& v : x) v = score(rng);
  // Row i: a visible window [a, b) with holes; row 3 nothing visible, row 4 every key.
  std::vector<float> mask(n_q * n_k);
  std::vector<uint16_t> mask16(n_q * n_k);
  for (size_t i = 0; i < n_q; ++i) {
    size_t a = rng() % n_k, b = a + 1 + rng() % (n_k - a);
    if (i == 3) a = b = 0;
    if (i == 4) a = 0, b = n_k;
    for (size_t j = 0; j < n_k; ++j) {
      const bool visible = j >= a && j < b && (j == a || j + 1 == b || rng() % 4 != 0);
      mask[i * n_k + j] = visible ? 0.0f : -kInf;
      mask16[i * n_k + j] = visible ? uint16_t{0} : uint16_t{0xFC00};
    }
  }
  std::vector<int32_t> kpos(n_k);
  for (size_t j = 0; j < n_k; ++j) kpos[j] = static_cast<int32_t>((j * 7) % n_k);
  for (posenc_dtype mt : {POSENC_DTYPE_F32, POSENC_DTYPE_F16})
    for (bool with_kpos : {false, true})
      for (posenc_dtype yt : {POSENC_DTYPE_F32, POSENC_DTYPE_BF16}) {
        posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
        p.mask = mt == POSENC_DTYPE_F32 ? static_cast<const void*>(mask.data()) : mask16.data();
        p.mask_dtype = mt;
        p.scale = 0.5f;
        if (with_kpos) {
          p.kpos = kpos.data();
          p.flags = POSENC_SOFTMAX_CAUSAL;
          p.q_offset = static_cast<int32_t>(n_k / 2);
        }
        const size_t per_head = n_q * n_k;
        std::vector<float> whole(H * per_head, -1.0f), heads(H * per_head, -2.0f);
        const posenc_scores_view xv = {x.data(), POSENC_DTYPE_F32, per_head, n_k, 0};
        const posenc_scores_view yv = {whole.data(), yt, per_head, n_k, 0};
        ASSERT_EQ(posenc_softmax(&p, H, n_q, n_k, &xv, &yv), POSENC_OK);
        const size_t ys = yt == POSENC_DTYPE_F32 ? 1 : 2;  // elements per float of y
        for (size_t h = 0; h < H; ++h) {
          const posenc_scores_view xh = {x.data() + h * per_head, POSENC_DTYPE_F32, per_head, n_k,
                                         0};
          const posenc_scores_view yh = {heads.data() + h * per_head / ys, yt, per_head, n_k, 0};
          ASSERT_EQ(posenc_softmax(&p, 1, n_q, n_k, &xh, &yh), POSENC_OK);
        }
        const size_t floats = H * per_head / ys;  // the words y holds, as floats
        ASSERT_EQ(std::vector<float>(whole.begin(), whole.begin() + floats),
                  std::vector<float>(heads.begin(), heads.begin() + floats))
            << "mask " << mt << " kpos " << with_kpos << " y " << yt;
      }
}

// ---------------------------------------------------------------------------- ggml

// ggml_soft_max_ext's CPU operation (ggml_compute_forward_soft_max_f32), per row: w = x * scale
// + slope * mask (slope 1 without ALiBi), max over the row, with sinks max = max(max, sink),
// sum = sum_j exp(w_j - max) (+ exp(sink - max)), y = exp(w - max) / sum; the exponentials
// and the sum in long double. Its float w as ggml computes it.
std::vector<long double> GgmlSoftMaxRow(const std::vector<float>& x, const std::vector<float>& mask,
                                        float scale, float slope, const float* sink) {
  std::vector<float> w(x.size());
  float max = -kInf;
  for (size_t j = 0; j < x.size(); ++j) {
    w[j] = Add(Mul(x[j], scale), mask.empty() ? 0.0f : Mul(slope, mask[j]));
    max = std::max(max, w[j]);
  }
  if (sink) max = std::max(max, *sink);
  long double sum = 0;
  std::vector<long double> y(x.size());
  for (size_t j = 0; j < x.size(); ++j)
    sum += y[j] = std::exp(static_cast<long double>(w[j]) - max);
  if (sink) sum += std::exp(static_cast<long double>(*sink) - max);
  for (long double& v : y) v /= sum;
  return y;
}

// llama.cpp's ALiBi models (mask -|kpos - qpos| or -inf, slopes from max_bias 8) through
// MASK_SLOPE, and through the signed ALiBi term with the causal flag and positions; sinks
// without ALiBi (gpt-oss: mask 0 / -inf, sinks per head): against the ggml reference.
TEST_P(SoftmaxTest, ReproducesGgmlSoftMaxExt) {
  uint32_t seed = kSeed;
  const size_t heads = 6, n_q = 5;
  const std::vector<float> slopes = AlibiSlopes(heads);
  for (size_t n_k : {1, 9, 32, 77, 300})
    for (posenc_dtype mask_type : {kF32, kF16})
      for (int form = 0; form < 3; ++form) {
        if (form == 1 && mask_type == kF16) continue;  // form 1 has no mask
        std::mt19937 rng(++seed);
        Spec s = Base(heads, n_q, n_k, {kF32, kF32}, "ggml");
        s.scale = 0.125f;
        s.kpos = RandomPositionsUpTo(rng, n_k, static_cast<int32_t>(n_k + 10));
        s.qpos = RandomPositionsUpTo(rng, n_q, static_cast<int32_t>(n_k + 10));
        const std::vector<float> sinks = RandomSinks(rng, heads);
        // The llama.cpp mask, as stored (f16 rounds large distances), or 0 / -inf.
        std::vector<float> mask(n_q * n_k);
        for (size_t i = 0; i < n_q; ++i)
          for (size_t j = 0; j < n_k; ++j) {
            const float m = LlamaAlibiMask(rng, s, 0, i, j);
            mask[i * n_k + j] = RoundTo(mask_type, form == 2 && m != -kInf ? 0.0f : m);
          }
        if (form == 0) {  // MASK_SLOPE: ggml's own form
          s.name = "ggml alibi: mask slope";
          s.slopes = slopes;
          s.flags = kMaskSlope;
          s.mask = MaskOf(mask_type, false, false, 0);
        } else if (form == 1) {  // the signed ALiBi term from the positions, causal flag
          s.name = "ggml alibi: signed alibi with positions";
          s.slopes = slopes;
          s.flags = kCausal;
        } else {  // sinks, no ALiBi: mask 0 / -inf
          s.name = "ggml sinks";
          s.sinks = sinks;
          s.mask = MaskOf(mask_type, false, false, 0);
        }
        s.mask.values = [&](std::mt19937&, const Spec&, size_t, size_t i, size_t j) {
          return mask[i * n_k + j];
        };
        // ggml's rows (the scores do not depend on the y type).
        const Problem first(s, seed);
        std::vector<std::vector<long double>> want(heads * n_q);
        for (size_t h = 0; h < heads; ++h)
          for (size_t i = 0; i < n_q; ++i) {
            std::vector<float> x(n_k), m(mask.begin() + i * n_k, mask.begin() + (i + 1) * n_k);
            for (size_t j = 0; j < n_k; ++j) x[j] = first.X(h, i, j);
            // Every key masked and no sink: ggml's row is NaN (exp(-inf - -inf)), posenc's
            // +0 (the header's documented difference): empty here, checked below.
            if (form == 2 || std::any_of(m.begin(), m.end(), [](float v) { return v != -kInf; }))
              want[h * n_q + i] = GgmlSoftMaxRow(x, m, s.scale, form == 2 ? 1.0f : slopes[h],
                                                 form == 2 ? &sinks[h] : nullptr);
          }
        for (posenc_dtype yt : kTypes) {
          s.yt = yt;
          const Problem pb(s, seed);
          const Problem::Output out = pb.Run(yt, false, isa());
          for (size_t h = 0; h < heads; ++h)
            for (size_t i = 0; i < n_q; ++i) {
              const std::vector<long double>& row = want[h * n_q + i];
              for (size_t j = 0; j < n_k; ++j) {
                const float got = out.Get(h, i, j);
                if (row.empty() || mask[i * n_k + j] == -kInf) {
                  ASSERT_EQ(out.Bits(h, i, j), 0u) << Describe(s) << " " << Where(s, h, i, j);
                  continue;
                }
                const double w = static_cast<double>(row[j]);
                const double bound = kRel * w + kAbs + Rounding(yt, std::max<double>(got, w));
                ASSERT_LE(std::fabs(got - w), bound) << Describe(s) << " " << Where(s, h, i, j)
                                                     << ": got " << Value(got) << ", ggml " << w;
              }
            }
          if (yt == kF32) Check(pb);
          if (HasFailure()) return;
        }
      }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(SoftmaxTest);

// ---------------------------------------------------------------------------- conversions

// The suite's integer conversions against the harness's (double through libm): every 16-bit
// pattern decoded, special and random floats rounded, and the half ulp.
TEST(SoftmaxConversionsTest, MatchTheHarness) {
  for (posenc_dtype t : {kBf16, kF16}) {
    const Storage st = HalfOf(t);
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      const auto h = static_cast<uint16_t>(bits);
      const float got = HalfValue(t, h), want = DecodeHalf(st, h);
      ASSERT_TRUE(IsHalfNaN(st, h) ? std::isnan(got) : BitwiseEqual(got, want))
          << TypeName(t) << " " << DescribeHalf(st, h) << ": " << Value(got);
    }
    std::vector<float> values = {0.0f,     -0.0f,    1.0f,       65504.0f, 65519.99f, 65520.0f,
                                 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1p-14f,  FLT_MIN,
                                 1e-40f,   -1e-45f,  3.4e38f,    kInf,     -kInf,     0.3f};
    std::mt19937 rng(kSeed);
    for (int k = 0; k < 20000; ++k) {
      values.push_back(BitsFloat(static_cast<uint32_t>(rng())));
      // Near the 16-bit values: ties and their neighbours.
      const uint32_t tie = (static_cast<uint32_t>(rng()) & 0x7fffe000u) | 0x1000u;
      values.push_back(BitsFloat(tie + static_cast<uint32_t>(k % 3) - 1u));
      values.push_back(BitsFloat((static_cast<uint32_t>(rng()) & 0xffff0000u) | 0x8000u));
    }
    for (float v : values) {
      if (std::isnan(v)) {
        ASSERT_TRUE(IsHalfNaN(st, HalfBits(t, v))) << Value(v);
        continue;
      }
      ASSERT_EQ(HalfBits(t, v), ToHalfBits(st, v)) << TypeName(t) << " " << Value(v);
      ASSERT_TRUE(BitwiseEqual(RoundTo(t, v), RoundToStorage(st, v))) << Value(v);
      if (std::isfinite(v)) {
        ASSERT_GE(HalfUlpOf(t, v), HalfUlp(st, std::fabs(v))) << TypeName(t) << " " << Value(v);
        ASSERT_LE(HalfUlpOf(t, v), 2 * HalfUlp(st, std::fabs(v))) << TypeName(t) << " " << Value(v);
      }
    }
  }
}

}  // namespace
}  // namespace posenc_test::softmax
