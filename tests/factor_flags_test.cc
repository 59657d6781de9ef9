// The factor path's one flag rule (posenc.h, posenc_rope_factors_bytes): for every flag bit,
// every combination of the known ones and every unknown bit,
//  - each factor computation takes exactly the flags of its plan form (posenc_rope_factors_compute
//    those of posenc_rope_f32, posenc_mrope_factors_compute those of posenc_mrope_f32), and
//    posenc_rope_factors_bytes and posenc_rope_apply, which serve both, those of either: a flag
//    is taken by all three of a form or refused by all three alike, with the plan path's status
//    (bytes: 0), the refused call writing nothing (sentinels in the storage, the factors struct
//    and the destination unchanged) and naming its argument `flags`;
//  - for every flags value taken, compute then apply with those same flags (in place and out of
//    place) is bitwise the plan path's result for them (posenc_rope_f32, posenc_mrope_f32), the
//    tolerance of the other factor tests (tests/rope_views_test.cc); the size depends on the
//    layout alone, and factors->flags records GPTJ and DETERMINISTIC only;
//  - POSENC_ROPE_POSITIONS_INT64 is one of the known bits: the calls that take positions are
//    then given them as int64 (the same values), bytes and apply take it as a no-op.
// Each test runs on the ISA its process is given (POSENC_ISA; all of them by hand).
#include <posenc.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_support.h"

namespace posenc_test {
namespace {

constexpr unsigned kKnown = POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE | POSENC_ROPE_F32_ANGLES |
                            POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_DETERMINISTIC |
                            POSENC_ROPE_MROPE_GGML | POSENC_ROPE_POSITIONS_INT64;
constexpr unsigned kRecorded = POSENC_ROPE_GPTJ | POSENC_ROPE_DETERMINISTIC;

// Every combination of the known flag bits; then each unknown bit alone and with all the known
// ones.
std::vector<unsigned> FlagsUnderTest() {
  std::vector<unsigned> out;
  for (unsigned f = 0; f <= kKnown; ++f)
    if (!(f & ~kKnown)) out.push_back(f);
  for (unsigned bit = 0; bit < 32; ++bit) {
    const unsigned b = 1u << bit;
    if (b & kKnown) continue;
    out.push_back(b);
    out.push_back(b | kKnown);
  }
  return out;
}

std::string Hex(unsigned flags) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", flags);
  return buf;
}

// One problem: L tokens of H heads of head_dim D, rotary_dim R (partial when R < D), with
// positions of both signs over the whole range, and an M-RoPE variant of them (three rows:
// text tokens with equal positions, then an image block).
struct Problem {
  size_t R, D, H, L;
  size_t sections[4];  // the fourth (ggml's rule, POSENC_ROPE_MROPE_GGML) 0
  PlanPtr plan;
  std::vector<int32_t> pos, pos3;
  std::vector<int64_t> pos64, pos3_64;  // the same, for POSENC_ROPE_POSITIONS_INT64
  std::vector<float> x;                 // [L, H, D]

  Problem(size_t rotary_dim, size_t head_dim, size_t heads, size_t tokens, uint32_t seed)
      : R(rotary_dim), D(head_dim), H(heads), L(tokens) {
    plan = MakePlan(R, 10000.0, 1.25);
    const size_t n = R / 2;
    sections[1] = n / 4;
    sections[2] = n / 4;
    sections[0] = n - sections[1] - sections[2];  // valid contiguous and interleaved
    sections[3] = 0;
    std::mt19937 rng(seed);
    pos = RandomPositions(rng, L);
    pos3.resize(4 * L);  // ggml's fourth row equal to the first: the same rotation
    for (size_t t = 0; t < L; ++t) {
      const bool image = t >= 2 && t + 1 < L;
      const int32_t p = static_cast<int32_t>(t) - 3;
      pos3[t] = image ? 7 : p;
      pos3[L + t] = image ? 7 + static_cast<int32_t>(t) / 3 : p;
      pos3[2 * L + t] = image ? 7 + static_cast<int32_t>(t) % 3 : p;
      pos3[3 * L + t] = pos3[t];
    }
    x = RandomFloats(L * H * D, seed + 1, -2.0f, 2.0f);
    pos64.assign(pos.begin(), pos.end());
    pos3_64.assign(pos3.begin(), pos3.end());
  }
  // The positions argument for `flags`: int32, or int64 with POSENC_ROPE_POSITIONS_INT64.
  const int32_t* Pos(bool mrope, unsigned flags) const {
    if (!(flags & POSENC_ROPE_POSITIONS_INT64)) return mrope ? pos3.data() : pos.data();
    return reinterpret_cast<const int32_t*>(mrope ? pos3_64.data() : pos64.data());
  }
  posenc_rope_tensor Tensor(float* data) const { return {data, H, H * D, D}; }
  posenc_rope_view View(float* data) const {
    return {data, POSENC_DTYPE_F32, H, H * D, D, L * H * D};
  }
};

// The plan path on a copy of x: posenc_rope_f32 (mrope: posenc_mrope_f32) with `flags`.
posenc_status PlanPath(const Problem& p, bool mrope, unsigned flags, std::vector<float>* out) {
  *out = p.x;
  const posenc_rope_tensor q = p.Tensor(out->data());
  return mrope
             ? posenc_mrope_f32(p.plan.get(), p.sections, p.D, p.L, p.Pos(true, flags), &q, nullptr,
                                flags)
             : posenc_rope_f32(p.plan.get(), p.D, p.L, p.Pos(false, flags), 0, &q, nullptr, flags);
}

// The form's factor computation into `storage` (of `bytes` bytes).
posenc_status Compute(const Problem& p, bool mrope, unsigned flags, float* storage, size_t bytes,
                      posenc_rope_factors* f) {
  return mrope ? posenc_mrope_factors_compute(p.plan.get(), p.sections, p.L, p.Pos(true, flags),
                                              flags, storage, bytes, f)
               : posenc_rope_factors_compute(p.plan.get(), p.L, p.Pos(false, flags), 0, flags,
                                             storage, bytes, f);
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Storage of `bytes` bytes (rounded up to floats) and a guard of 16 floats, all sentinels.
std::vector<float> SentinelStorage(size_t bytes) {
  std::vector<float> s((bytes + sizeof(float) - 1) / sizeof(float) + 16);
  for (size_t i = 0; i < s.size(); ++i) s[i] = NaNSentinel(i + 5);
  return s;
}

// The rule for one flags value and one form, on the active ISA.
void CheckFlags(const Problem& p, bool mrope, unsigned flags) {
  const std::string what =
      std::string(mrope ? "M-RoPE" : "RoPE") + " R=" + std::to_string(p.R) + " flags " + Hex(flags);
  const char* const compute_fn =
      mrope ? "posenc_mrope_factors_compute" : "posenc_rope_factors_compute";
  // The plan path of this form, and of the wider one (M-RoPE's), which bytes and apply serve.
  std::vector<float> want, want_wide;
  const posenc_status plan_st = PlanPath(p, mrope, flags, &want);
  const posenc_status wide_st = PlanPath(p, true, flags, &want_wide);
  // The flags the plan path takes are the known ones: this form's, or M-RoPE's.
  const unsigned form =
      mrope ? kKnown : kKnown & ~unsigned{POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_MROPE_GGML};
  ASSERT_EQ(plan_st, (flags & ~form) ? POSENC_ERR_INVALID_ARGUMENT : POSENC_OK) << what;
  ASSERT_EQ(wide_st, (flags & ~kKnown) ? POSENC_ERR_INVALID_ARGUMENT : POSENC_OK) << what;

  // posenc_rope_factors_bytes: the wider form's flags, the size of the layout alone.
  const size_t layout_bytes = posenc_rope_factors_bytes(p.R, p.L, flags & POSENC_ROPE_GPTJ);
  ASSERT_GT(layout_bytes, 0u);
  const size_t bytes = posenc_rope_factors_bytes(p.R, p.L, flags);
  if (wide_st == POSENC_OK)
    EXPECT_EQ(bytes, layout_bytes) << what << ": bytes";
  else
    EXPECT_EQ(bytes, 0u) << what << ": bytes refuses as the plan path";

  // The computation: exactly its plan form's flags, with its status; nothing written if
  // refused.
  std::vector<float> storage = SentinelStorage(layout_bytes);
  const std::vector<float> storage_before = storage;
  posenc_rope_factors f;
  std::memset(&f, 0xA5, sizeof f);
  posenc_rope_factors f_before;
  std::memcpy(&f_before, &f, sizeof f);
  PrimeLastError();
  const posenc_status compute_st = Compute(p, mrope, flags, storage.data(), layout_bytes, &f);
  EXPECT_EQ(compute_st, plan_st) << what << ": compute refuses as the plan path";
  if (compute_st != POSENC_OK) {
    ExpectLastError(compute_fn, "flags", what);
    EXPECT_TRUE(SameBits(storage, storage_before)) << what << ": refused compute wrote storage";
    EXPECT_EQ(std::memcmp(&f, &f_before, sizeof f), 0) << what << ": refused compute wrote *f";
    // Factors to apply with these flags after all: those of the recorded bits.
    ASSERT_EQ(Compute(p, mrope, flags & kRecorded, storage.data(), layout_bytes, &f), POSENC_OK)
        << what;
  } else {
    EXPECT_EQ(f.flags, flags & kRecorded) << what << ": factors->flags records GPTJ, DET";
    EXPECT_EQ(f.n_rows, p.L);
    EXPECT_EQ(f.rotary_dim, p.R);
    EXPECT_EQ(f.row_floats * p.L * sizeof(float), layout_bytes) << what;
    for (size_t i = layout_bytes / sizeof(float); i < storage.size(); ++i)
      ASSERT_TRUE(BitwiseEqual(storage[i], storage_before[i])) << what << ": written past bytes";
  }

  // posenc_rope_apply: the wider form's flags; out of place into sentinels, then in place.
  std::vector<float> dst(p.x.size());
  for (size_t i = 0; i < dst.size(); ++i) dst[i] = NaNSentinel(i);
  const std::vector<float> dst_before = dst;
  std::vector<float> src = p.x;
  const posenc_rope_view sv = p.View(src.data()), dv = p.View(dst.data());
  PrimeLastError();
  const posenc_status apply_st = posenc_rope_apply(&f, 0, 0, p.D, 1, p.L, &sv, &dv, flags);
  EXPECT_EQ(apply_st, wide_st) << what << ": apply refuses as the plan path";
  EXPECT_TRUE(SameBits(src, p.x)) << what << ": apply wrote its source";
  if (apply_st != POSENC_OK) {
    ExpectLastError("posenc_rope_apply", "flags", what);
    EXPECT_TRUE(SameBits(dst, dst_before)) << what << ": refused apply wrote dst";
    return;
  }
  std::vector<float> in_place = p.x;
  const posenc_rope_view iv = p.View(in_place.data());
  ASSERT_EQ(posenc_rope_apply(&f, 0, 0, p.D, 1, p.L, &iv, &iv, flags), POSENC_OK) << what;
  if (compute_st != POSENC_OK) {
    // This form's plan path refuses the flags (M-RoPE's interleaving for plain RoPE), but
    // apply takes them: what it does not record is a no-op there, INVERSE its direction.
    const unsigned applied = flags & (kRecorded | POSENC_ROPE_INVERSE);
    ASSERT_EQ(PlanPath(p, mrope, applied, &want), POSENC_OK) << what;
    EXPECT_TRUE(SameBits(dst, want)) << what << ": apply's no-op flags changed the result";
    EXPECT_TRUE(SameBits(in_place, want)) << what << ": apply's no-op flags changed the result";
    return;
  }
  // Compute + apply with the same flags is bitwise the plan path.
  EXPECT_TRUE(SameBits(dst, want)) << what << ": out of place differs from the plan path";
  EXPECT_TRUE(SameBits(in_place, want)) << what << ": in place differs from the plan path";
}

// R < D (the rest untouched), a one-chunk plan, and a plan of more than one chunk of pairs.
struct Shape {
  size_t R, D, H, L;
};
const Shape kShapes[] = {{16, 24, 2, 9}, {128, 128, 3, 20}, {1040, 1040, 1, 5}};

TEST(FactorFlags, EveryFlagTakenOrRefusedByAllThreeAlike) {
  uint32_t seed = 20270601;
  for (const Shape& s : kShapes) {
    const Problem p(s.R, s.D, s.H, s.L, seed++);
    ASSERT_NE(p.plan, nullptr);
    for (unsigned flags : FlagsUnderTest())
      for (bool mrope : {false, true}) {
        CheckFlags(p, mrope, flags);
        if (HasFatalFailure()) return;
      }
  }
}

// One flags value, in the order of a decode step: size, compute, apply per layer forward and
// backward; INVERSE passed to all three, F32_ANGLES and DETERMINISTIC too.
TEST(FactorFlags, OneFlagsValueThroughTheWholePath) {
  const Problem p(64, 64, 4, 12, 7);
  ASSERT_NE(p.plan, nullptr);
  for (unsigned base : {0u, unsigned{POSENC_ROPE_GPTJ}})
    for (unsigned extra : {0u, unsigned{POSENC_ROPE_F32_ANGLES},
                           unsigned{POSENC_ROPE_DETERMINISTIC | POSENC_ROPE_F32_ANGLES}}) {
      const unsigned fwd = base | extra, inv = fwd | POSENC_ROPE_INVERSE;
      const std::string what = "flags " + Hex(inv);
      // The factors made with INVERSE are those made without it.
      const size_t bytes = posenc_rope_factors_bytes(p.R, p.L, inv);
      ASSERT_EQ(bytes, posenc_rope_factors_bytes(p.R, p.L, fwd)) << what;
      std::vector<float> a(bytes / sizeof(float)), b(bytes / sizeof(float));
      posenc_rope_factors fa, fb;
      ASSERT_EQ(posenc_rope_factors_compute(p.plan.get(), p.L, p.pos.data(), 0, inv, a.data(),
                                            bytes, &fa),
                POSENC_OK)
          << what;
      ASSERT_EQ(posenc_rope_factors_compute(p.plan.get(), p.L, p.pos.data(), 0, fwd, b.data(),
                                            bytes, &fb),
                POSENC_OK)
          << what;
      EXPECT_TRUE(SameBits(a, b)) << what << ": INVERSE changed the factors";
      EXPECT_EQ(fa.flags, fb.flags) << what;
      // Forward with fwd, then back with inv, each as the plan path.
      std::vector<float> want_fwd, want_inv, x = p.x;
      ASSERT_EQ(PlanPath(p, false, fwd, &want_fwd), POSENC_OK);
      ASSERT_EQ(PlanPath(p, false, inv, &want_inv), POSENC_OK);
      const posenc_rope_view v = p.View(x.data());
      ASSERT_EQ(posenc_rope_apply(&fa, 0, 0, p.D, 1, p.L, &v, &v, fwd), POSENC_OK) << what;
      EXPECT_TRUE(SameBits(x, want_fwd)) << what << ": forward";
      x = p.x;
      ASSERT_EQ(posenc_rope_apply(&fa, 0, 0, p.D, 1, p.L, &v, &v, inv), POSENC_OK) << what;
      EXPECT_TRUE(SameBits(x, want_inv)) << what << ": inverse";
    }
}

// The recorded bits still bind: applying with GPTJ or DETERMINISTIC other than the factors'
// is refused whatever no-op bits come with it, writing nothing.
TEST(FactorFlags, RecordedBitsMustMatch) {
  const Problem p(32, 32, 2, 6, 11);
  ASSERT_NE(p.plan, nullptr);
  const size_t bytes = posenc_rope_factors_bytes(p.R, p.L, 0);
  std::vector<float> storage(bytes / sizeof(float));
  posenc_rope_factors f;
  ASSERT_EQ(posenc_rope_factors_compute(p.plan.get(), p.L, p.pos.data(), 0, POSENC_ROPE_F32_ANGLES,
                                        storage.data(), bytes, &f),
            POSENC_OK);
  EXPECT_EQ(f.flags, 0u);
  std::vector<float> dst(p.x.size(), 3.0f);
  const std::vector<float> dst_before = dst;
  const posenc_rope_view sv = p.View(const_cast<float*>(p.x.data())), dv = p.View(dst.data());
  for (unsigned recorded : {unsigned{POSENC_ROPE_GPTJ}, unsigned{POSENC_ROPE_DETERMINISTIC}})
    for (unsigned noop : {0u, unsigned{POSENC_ROPE_F32_ANGLES}, unsigned{POSENC_ROPE_INVERSE},
                          unsigned{POSENC_ROPE_MROPE_INTERLEAVED}}) {
      PrimeLastError();
      EXPECT_EQ(posenc_rope_apply(&f, 0, 0, p.D, 1, p.L, &sv, &dv, recorded | noop),
                POSENC_ERR_INVALID_ARGUMENT)
          << Hex(recorded | noop);
      ExpectLastError("posenc_rope_apply", "flags", Hex(recorded | noop));
    }
  EXPECT_TRUE(SameBits(dst, dst_before));
}

}  // namespace
}  // namespace posenc_test
