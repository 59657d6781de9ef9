#include "self_check.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "check_common.h"
#include "encoding_check.h"
#include "posenc.h"
#include "softmax_check.h"
#include "storage_check.h"

namespace posenc_report {
namespace {

constexpr int kRandomCases = 10000;
constexpr double kCosSinBound = 0x1p-22;  // posenc.h: accurate angles, |p| < 2^31
constexpr int32_t kMaxPosition = INT32_MAX;

RopePlan MakePlan(size_t rotary_dim, double base, double att) {
  posenc_rope_plan* plan = nullptr;
  if (posenc_rope_plan_create(&plan, rotary_dim, base, att) != POSENC_OK) return nullptr;
  return RopePlan(plan);
}

// One strided view: [L, H, D] (heads inside tokens) or [H, L, D], with optional padding
// between head vectors so that strides exceed D.
struct Geometry {
  size_t heads = 0, token_stride = 0, head_stride = 0, extent = 0;
};

Geometry MakeGeometry(size_t tokens, size_t heads, size_t dim, bool heads_major, size_t pad) {
  Geometry g;
  g.heads = heads;
  if (heads_major) {
    g.token_stride = dim + pad;
    g.head_stride = tokens * g.token_stride;
  } else {
    g.head_stride = dim + pad;
    g.token_stride = heads * g.head_stride + pad;
  }
  g.extent = heads ? (tokens - 1) * g.token_stride + (heads - 1) * g.head_stride + dim : 0;
  return g;
}

// A random RoPE call: shape, layout, flags, plan parameters, positions and input data.
struct Case {
  size_t rotary_dim, head_dim, tokens;
  unsigned flags;
  double base, att;
  Geometry q, k;
  bool use_start_pos;
  int32_t start_pos;
  std::vector<int32_t> positions;
  std::vector<float> q_in, k_in;
};

unsigned RandomFlags(std::mt19937_64& rng) {
  unsigned flags = (rng() % 2) ? POSENC_ROPE_GPTJ : POSENC_ROPE_NEOX;
  if (rng() % 2) flags |= POSENC_ROPE_INVERSE;
  if (rng() % 2) flags |= POSENC_ROPE_F32_ANGLES;
  return flags;
}

Case RandomCase(std::mt19937_64& rng) {
  static const double kBases[] = {10000.0, 500000.0, 1e6, 2.5};
  Case c;
  c.rotary_dim = 2 * (1 + rng() % 80);
  c.head_dim = c.rotary_dim + ((rng() % 2) ? rng() % 9 : 0);
  c.tokens = 1 + rng() % 12;
  c.flags = RandomFlags(rng);
  c.base = kBases[rng() % 4];
  c.att = (rng() % 2) ? 1.0 : 0.5 + std::uniform_real_distribution<double>(0, 1)(rng);
  const bool heads_major = rng() % 2;
  const size_t pad = (rng() % 2) ? rng() % 4 : 0;
  c.q = MakeGeometry(c.tokens, 1 + rng() % 6, c.head_dim, heads_major, pad);
  c.k = MakeGeometry(c.tokens, rng() % 4, c.head_dim, heads_major, pad);
  c.use_start_pos = rng() % 4 == 0;
  c.start_pos = RandomPosition(rng);
  if (c.use_start_pos && c.start_pos > kMaxPosition - static_cast<int32_t>(c.tokens))
    c.start_pos -= static_cast<int32_t>(c.tokens);
  for (size_t t = 0; t < c.tokens; ++t) c.positions.push_back(RandomPosition(rng));
  c.q_in = RandomData(rng, c.q.extent);
  c.k_in = RandomData(rng, c.k.extent);
  return c;
}

posenc_rope_tensor Tensor(std::vector<float>& data, const Geometry& g) {
  return {data.data(), g.heads, g.token_stride, g.head_stride};
}

struct Output {
  std::vector<float> q, k;
  bool ok = false;
};

Output Rotate(const Case& c, const posenc_rope_plan* plan, posenc_isa isa) {
  Output out{c.q_in, c.k_in};
  const posenc_rope_tensor q = Tensor(out.q, c.q), k = Tensor(out.k, c.k);
  out.ok =
      posenc_set_isa(isa) == POSENC_OK &&
      posenc_rope_f32(plan, c.head_dim, c.tokens, c.use_start_pos ? nullptr : c.positions.data(),
                      c.start_pos, &q, c.k.heads ? &k : nullptr, c.flags) == POSENC_OK;
  return out;
}

// Worst normalised difference and count of elements that should be untouched but changed.
struct Errors {
  double worst = 0;
  size_t untouched_changed = 0;
  size_t failed_calls = 0;
  void Add(double e) { KeepWorst(worst, e); }
};

// Calls f(index of u, index of v) for every rotated pair of the view.
template <class F>
void ForEachPair(const Case& c, const Geometry& g, F&& f) {
  const size_t half = c.rotary_dim / 2;
  const bool gptj = c.flags & POSENC_ROPE_GPTJ;
  for (size_t t = 0; t < c.tokens; ++t)
    for (size_t h = 0; h < g.heads; ++h) {
      const size_t base = t * g.token_stride + h * g.head_stride;
      for (size_t i = 0; i < half; ++i)
        gptj ? f(base + 2 * i, base + 2 * i + 1) : f(base + i, base + half + i);
    }
}

// |simd - scalar| / (att * (|u| + |v|)) for rotated elements; bit equality with the input
// for every other element of the view.
void CompareView(const Case& c, const Geometry& g, const std::vector<float>& in,
                 const std::vector<float>& ref, const std::vector<float>& out, Errors& e) {
  std::vector<char> rotated(in.size(), 0);
  ForEachPair(c, g, [&](size_t iu, size_t iv) {
    rotated[iu] = rotated[iv] = 1;
    const double scale = c.att * (std::fabs(in[iu]) + std::fabs(in[iv]));
    for (size_t i : {iu, iv}) e.Add(std::fabs(double{out[i]} - double{ref[i]}) / scale);
  });
  for (size_t i = 0; i < in.size(); ++i)
    if (!rotated[i] && std::memcmp(&in[i], &out[i], sizeof(float)) != 0) ++e.untouched_changed;
}

// Runs the random cases and returns, per ISA, the errors against the scalar variant.
std::vector<Errors> CompareWithScalar(uint64_t seed) {
  std::vector<Errors> errors(POSENC_ISA_COUNT);
  std::mt19937_64 rng(seed);
  for (int n = 0; n < kRandomCases; ++n) {
    const Case c = RandomCase(rng);
    const RopePlan plan = MakePlan(c.rotary_dim, c.base, c.att);
    const Output ref = Rotate(c, plan.get(), POSENC_ISA_SCALAR);
    for (posenc_isa isa : AvailableIsas()) {
      const Output out = Rotate(c, plan.get(), isa);
      if (!plan || !ref.ok || !out.ok) {
        ++errors[isa].failed_calls;
        continue;
      }
      CompareView(c, c.q, c.q_in, ref.q, out.q, errors[isa]);
      CompareView(c, c.k, c.k_in, ref.k, out.k, errors[isa]);
    }
  }
  return errors;
}

// Rotates (1, 0) pairs, so that u' = cos and v' = sin, at |p| = 2^31 - 1 and at random
// positions of large magnitude; returns the worst |cos - cosl| or |sin - sinl|.
double WorstCosSin(posenc_isa isa, unsigned layout, double base, std::mt19937_64& rng) {
  const size_t dim = 128, half = dim / 2;
  std::vector<int32_t> positions = {kMaxPosition, -kMaxPosition};
  for (int i = 0; i < 30; ++i)
    positions.push_back(kMaxPosition - static_cast<int32_t>(rng() % (1u << 30)));
  const size_t tokens = positions.size();
  std::vector<float> x(tokens * dim, 0.0f);
  for (size_t t = 0; t < tokens; ++t)
    for (size_t i = 0; i < half; ++i) x[t * dim + (layout == POSENC_ROPE_GPTJ ? 2 * i : i)] = 1;
  const RopePlan plan = MakePlan(dim, base, 1.0);
  std::vector<double> w(half);
  const posenc_rope_tensor q = {x.data(), 1, dim, dim};
  if (!plan || posenc_rope_plan_freqs(plan.get(), w.data()) != POSENC_OK ||
      posenc_set_isa(isa) != POSENC_OK ||
      posenc_rope_f32(plan.get(), dim, tokens, positions.data(), 0, &q, nullptr, layout) !=
          POSENC_OK)
    return NAN;
  double worst = 0;
  for (size_t t = 0; t < tokens; ++t)
    for (size_t i = 0; i < half; ++i) {
      const long double a = ReferenceAngle(positions[t], w[i]);
      const float* pair = x.data() + t * dim;
      const size_t iu = layout == POSENC_ROPE_GPTJ ? 2 * i : i;
      const size_t iv = layout == POSENC_ROPE_GPTJ ? 2 * i + 1 : i + half;
      KeepWorst(worst, static_cast<double>(std::fabs(pair[iu] - std::cos(a))));
      KeepWorst(worst, static_cast<double>(std::fabs(pair[iv] - std::sin(a))));
    }
  return worst;
}

double WorstCosSinAllPlans(posenc_isa isa, uint64_t seed) {
  std::mt19937_64 rng(seed);
  double worst = 0;
  for (double base : {10000.0, 500000.0, 1e6})
    for (unsigned layout : {POSENC_ROPE_NEOX, POSENC_ROPE_GPTJ})
      KeepWorst(worst, WorstCosSin(isa, layout, base, rng));
  return worst;
}

void PrintRow(std::ostream& out, posenc_isa isa, const Errors& e, double cos_sin, bool pass) {
  char line[160];
  std::snprintf(line, sizeof line, "  %-8s %12.3g %10.3g %10zu %6zu %12.3g %10.3g   %s\n",
                posenc_isa_name(isa), e.worst, POSENC_ROPE_SIMD_TOLERANCE, e.untouched_changed,
                e.failed_calls, cos_sin, kCosSinBound, pass ? "PASS" : "FAIL");
  out << line;
}

// The RoPE table; returns true if every ISA passed.
bool RunRopeCheck(uint64_t seed, std::ostream& out) {
  out << "\nSelf-check, seed " << seed << ":\n  RoPE err: " << kRandomCases
      << " random calls (rotary and head dims, head counts, tokens, positions incl.\n"
         "    large and negative, NEOX/GPTJ, [L,H,D]/[H,L,D] with padding, forward/inverse,\n"
         "    accurate/f32 angles), worst |isa - scalar| / (att * (|u| + |v|)) per element\n"
         "  cos/sin err: worst |cos - cosl|, |sin - sinl| of the exact angle, at |p| = 2^31-1\n"
         "    and 30 positions in (2^30, 2^31), bases 1e4, 5e5, 1e6, both pair layouts\n";
  out << "  isa               err      bound  untouched  calls  cos/sin err      bound   result\n";
  const std::vector<Errors> errors = CompareWithScalar(seed);
  const bool all_pass = PrintIsaRows([&](posenc_isa isa) {
    const Errors& e = errors[isa];
    const double cos_sin = WorstCosSinAllPlans(isa, seed);
    const bool pass = e.worst <= POSENC_ROPE_SIMD_TOLERANCE && e.untouched_changed == 0 &&
                      e.failed_calls == 0 && cos_sin <= kCosSinBound;
    PrintRow(out, isa, e, cos_sin, pass);
    return pass;
  });
  out << "  (untouched: elements outside the rotated pairs that changed; calls: failed calls)\n";
  return all_pass;
}

}  // namespace

bool RunSelfCheck(uint64_t seed, std::ostream& out) {
  const bool rope_pass = RunRopeCheck(seed, out);
  const bool encodings_pass = RunEncodingCheck(seed, out);
  const bool storage_pass = RunStorageCheck(seed, out);
  const bool softmax_pass = RunSoftmaxCheck(seed, out);
  const bool all_pass = rope_pass && encodings_pass && storage_pass && softmax_pass;
  out << "Self-check: " << (all_pass ? "PASS" : "FAIL") << "\n";
  return all_pass;
}

}  // namespace posenc_report
