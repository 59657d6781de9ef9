// posenc_last_error(): the detail of a refused call. Its contract (thread-local, "" until
// the first refusal, left as it was by a success, at most 255 characters), and one refused
// call per argument of every public function that checks arguments, each naming that exact
// function and argument: the rules the *_errors_test tables walk (where every row checks
// the function and the argument it breaks), plus the plan constructors, M-RoPE, the
// runtime-shaped RoPE forms, the 16-bit and fused forms and the learned embeddings.
#include <gtest/gtest-spi.h>
#include <posenc.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "sinusoid_harness.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr size_t kHuge = SIZE_MAX / 2 + 1;

// One refused call: the function and the argument its detail must name, exactly (the
// argument as "<argument>", "<argument>-><field>" or "<argument>[<index>]").
struct Refusal {
  const char* function;
  const char* argument;
  std::function<posenc_status()> call;
  posenc_status status = POSENC_ERR_INVALID_ARGUMENT;
};

void ExpectRefusals(const std::vector<Refusal>& refusals) {
  for (const Refusal& r : refusals) {
    const std::string what = std::string(r.function) + " / " + r.argument;
    PrimeLastError();
    EXPECT_EQ(r.call(), r.status) << what;
    ExpectLastError(r.function, r.argument, what);
    EXPECT_EQ(LastErrorArgument(), r.argument) << what << ": " << posenc_last_error();
  }
}

TEST(LastError, EmptyInAThreadThatHadNoRefusal) {
  std::string seen = "unset";
  std::thread([&] { seen = posenc_last_error(); }).join();
  EXPECT_EQ(seen, "");
}

TEST(LastError, IsPerThread) {
  PrimeLastError();
  const std::string mine = posenc_last_error();
  std::string theirs;
  std::thread([&] {
    EXPECT_EQ(posenc_rope_plan_create(nullptr, 8, 10000.0, 1.0), POSENC_ERR_INVALID_ARGUMENT);
    theirs = posenc_last_error();
  }).join();
  EXPECT_EQ(theirs, "posenc_rope_plan_create: plan: is NULL");
  EXPECT_EQ(posenc_last_error(), mine) << "another thread's refusal changed this thread's";
}

TEST(LastError, ASuccessLeavesItAsItWas) {
  PrimeLastError();
  const std::string primed = posenc_last_error();
  const PlanPtr plan = MakePlan(8, 10000.0, 1.0);
  AlignedFloats q(16);
  const posenc_rope_tensor t = {q.data(), 1, 8, 8};
  ASSERT_EQ(posenc_rope_f32(plan.get(), 8, 2, nullptr, 0, &t, nullptr, 0), POSENC_OK);
  EXPECT_EQ(posenc_last_error(), primed);
}

TEST(LastError, TheExampleOfTheHeader) {
  const PlanPtr plan = MakePlan(128, 10000.0, 1.0);
  AlignedFloats q(96);
  const posenc_rope_tensor t = {q.data(), 1, 96, 96};
  ASSERT_EQ(posenc_rope_f32(plan.get(), 96, 1, nullptr, 0, &t, nullptr, 0),
            POSENC_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(posenc_last_error(),
               "posenc_rope_f32: head_dim: 96 is less than the plan's rotary_dim 128");
}

// A detail longer than the buffer is cut at 255 characters, after the function and the
// argument (here the extent of a view of 2^20 x 2^40 x 2^40 head vectors of SIZE_MAX
// elements, every stride near SIZE_MAX: 256 characters in full).
TEST(LastError, ALongDetailIsCut) {
  const PlanPtr plan = MakePlan(8, 10000.0, 1.0);
  AlignedFloats buf(64);
  posenc_rope_factors factors{};
  ASSERT_EQ(posenc_rope_factors_compute(plan.get(), 1, nullptr, 0, 0, buf.data(),
                                        posenc_rope_factors_bytes(8, 1, 0), &factors),
            POSENC_OK);
  const size_t n_heads = size_t{1} << 40;
  const posenc_rope_view src = {buf.data() + 16, POSENC_DTYPE_F32, n_heads,
                                SIZE_MAX - 1,    SIZE_MAX - 3,     SIZE_MAX - 5};
  const posenc_rope_view dst = {buf.data() + 32, POSENC_DTYPE_F32, n_heads, 8, 8, 8};
  ASSERT_EQ(
      posenc_rope_apply(&factors, 0, 0, SIZE_MAX, size_t{1} << 20, size_t{1} << 40, &src, &dst, 0),
      POSENC_ERR_INVALID_ARGUMENT);
  const std::string detail = posenc_last_error();
  EXPECT_EQ(detail.size(), 255u) << detail;
  EXPECT_EQ(detail.rfind("posenc_rope_apply: src: the extent of ", 0), 0u) << detail;
}

// The checker itself: a detail naming another argument, or one left over from an earlier
// refusal, fails.
TEST(LastError, TheCheckerCatchesAWrongArgumentAndAStaleDetail) {
  const PlanPtr plan = MakePlan(8, 10000.0, 1.0);
  PrimeLastError();
  ASSERT_EQ(posenc_rope_f32(plan.get(), 4, 1, nullptr, 0, nullptr, nullptr, 0),
            POSENC_ERR_INVALID_ARGUMENT);
  ExpectLastError("posenc_rope_f32", "q", "NULL q");
  EXPECT_NONFATAL_FAILURE(ExpectLastError("posenc_rope_f32", "head_dim", "NULL q"), "names");
  EXPECT_NONFATAL_FAILURE(ExpectLastError("posenc_rope_bf16", "q", "NULL q"), "start with");
  PrimeLastError();
  EXPECT_NONFATAL_FAILURE(ExpectLastError(nullptr, nullptr, "no call"), "as it was");
}

TEST(LastError, PlanConstructors) {
  posenc_rope_plan* p = nullptr;
  const double freqs[4] = {1.0, 0.5, 0.25, 0.125};
  const float freqs32[4] = {1.0f, 0.5f, 0.25f, 0.125f};
  double out[4];
  const PlanPtr plan = MakePlan(8, 10000.0, 1.0);
  const auto scaled = [&p](size_t r, double base, posenc_rope_scaling s) {
    return [&p, r, base, s] {
      const posenc_status st = posenc_rope_plan_create_scaled(&p, r, base, &s);
      posenc_rope_plan_destroy(p);
      return st;
    };
  };
  const auto type = [](posenc_rope_scaling_type t) {
    posenc_rope_scaling s{};
    s.type = t;
    return s;
  };
  // A type outside the enum, written as its int: loading such a value through the
  // enum type is undefined in C++ (clang's -fsanitize=enum stops there).
  const auto raw_type = [](int t) {
    posenc_rope_scaling s{};
    static_assert(sizeof s.type == sizeof t, "an enum is an int here");
    std::memcpy(&s.type, &t, sizeof t);
    return s;
  };
  posenc_rope_scaling yarn = type(POSENC_ROPE_SCALING_YARN);
  yarn.factor = 4;
  yarn.original_max_position_embeddings = 4096;
  const std::vector<double> ones(4, 1.0), three(3, 1.0);
  std::vector<double> zero_at_1 = ones;
  zero_at_1[1] = 0;
  posenc_rope_scaling longrope = type(POSENC_ROPE_SCALING_LONGROPE);
  longrope.original_max_position_embeddings = 4096;
  longrope.short_factor = longrope.long_factor = ones.data();
  longrope.short_factor_len = longrope.long_factor_len = 4;
  longrope.factor = 2;
  posenc_rope_scaling llama3 = type(POSENC_ROPE_SCALING_LLAMA3);
  llama3.factor = 8;
  llama3.low_freq_factor = 1;
  llama3.high_freq_factor = 4;
  llama3.original_max_position_embeddings = 8192;
  posenc_rope_scaling pairs = type(POSENC_ROPE_SCALING_PAIR_FACTORS);
  pairs.pair_factors = ones.data();
  pairs.pair_factors_len = 4;
  const auto with = [](posenc_rope_scaling s, const std::function<void(posenc_rope_scaling&)>& f) {
    f(s);
    return s;
  };
  const char* const kScaled = "posenc_rope_plan_create_scaled";
  const char* const kHf = "posenc_rope_plan_create_hf_f32";

  ExpectRefusals({
      {"posenc_rope_plan_create", "plan",
       [] { return posenc_rope_plan_create(nullptr, 8, 10000, 1); }},
      {"posenc_rope_plan_create", "base", [&] { return posenc_rope_plan_create(&p, 8, 1.0, 1); }},
      {"posenc_rope_plan_create", "base", [&] { return posenc_rope_plan_create(&p, 8, kNaN, 1); }},
      {"posenc_rope_plan_create", "base",  // frequencies beyond 1024 rad/position
       [&] { return posenc_rope_plan_create(&p, 64, 1e-300, 1); }},
      {"posenc_rope_plan_create", "rotary_dim",
       [&] { return posenc_rope_plan_create(&p, 7, 10000, 1); }},
      {"posenc_rope_plan_create", "attention_factor",
       [&] { return posenc_rope_plan_create(&p, 8, 10000, 0); }},
      {"posenc_rope_plan_create_from_freqs", "plan",
       [&] { return posenc_rope_plan_create_from_freqs(nullptr, 8, freqs, 1); }},
      {"posenc_rope_plan_create_from_freqs", "freqs",
       [&] { return posenc_rope_plan_create_from_freqs(&p, 8, nullptr, 1); }},
      {"posenc_rope_plan_create_from_freqs", "rotary_dim",
       [&] { return posenc_rope_plan_create_from_freqs(&p, 0, freqs, 1); }},
      {"posenc_rope_plan_create_from_freqs", "attention_factor",
       [&] { return posenc_rope_plan_create_from_freqs(&p, 8, freqs, kInf); }},
      {"posenc_rope_plan_create_from_freqs", "freqs",
       [&] {
         const double big[4] = {1, 2000, 0, 0};
         return posenc_rope_plan_create_from_freqs(&p, 8, big, 1);
       }},
      {"posenc_rope_plan_freqs", "plan", [&] { return posenc_rope_plan_freqs(nullptr, out); }},
      {"posenc_rope_plan_freqs", "freqs",
       [&] { return posenc_rope_plan_freqs(plan.get(), nullptr); }},
      {kScaled, "plan", [] { return posenc_rope_plan_create_scaled(nullptr, 8, 10000, nullptr); }},
      {kScaled, "base", [&] { return posenc_rope_plan_create_scaled(&p, 8, -1, nullptr); }},
      {kScaled, "rotary_dim",
       [&] { return posenc_rope_plan_create_scaled(&p, 9, 10000, nullptr); }},
      {kScaled, "scaling->attention_factor",
       scaled(8, 10000, with(yarn, [](auto& s) { s.attention_factor = -1; }))},
      {kScaled, "scaling->type", scaled(8, 10000, raw_type(99))},
      {kScaled, "scaling->factor", scaled(8, 10000, type(POSENC_ROPE_SCALING_LINEAR))},
      {kScaled, "scaling",  // a resulting frequency beyond 1024 rad/position
       scaled(8, 10000, with(type(POSENC_ROPE_SCALING_LINEAR), [](auto& s) { s.factor = 1e-9; }))},
      {kScaled, "scaling->max_position_embeddings",
       scaled(8, 10000, with(type(POSENC_ROPE_SCALING_DYNAMIC), [](auto& s) { s.factor = 2; }))},
      {kScaled, "rotary_dim",
       scaled(2, 10000,
              with(type(POSENC_ROPE_SCALING_DYNAMIC),
                   [](auto& s) {
                     s.factor = 2;
                     s.max_position_embeddings = 16;
                   }))},
      {kScaled, "scaling->factor",  // an NTK-aware base that overflows
       scaled(8, 10000,
              with(type(POSENC_ROPE_SCALING_DYNAMIC),
                   [](auto& s) {
                     s.factor = 1e300;
                     s.max_position_embeddings = 16;
                     s.seq_len = 32;
                   }))},
      {kScaled, "scaling->factor", scaled(8, 10000, with(yarn, [](auto& s) { s.factor = 0; }))},
      {kScaled, "scaling->original_max_position_embeddings",
       scaled(8, 10000, with(yarn, [](auto& s) { s.original_max_position_embeddings = 0; }))},
      {kScaled, "scaling->beta_fast",
       scaled(8, 10000, with(yarn, [](auto& s) { s.beta_fast = -1; }))},
      {kScaled, "scaling->beta_slow",
       scaled(8, 10000, with(yarn, [](auto& s) { s.beta_slow = kNaN; }))},
      {kScaled, "scaling->beta_fast",
       scaled(8, 10000,
              with(yarn,
                   [](auto& s) {
                     s.beta_fast = 1;
                     s.beta_slow = 2;
                   }))},
      {kScaled, "scaling->mscale", scaled(8, 10000, with(yarn, [](auto& s) { s.mscale = kInf; }))},
      {kScaled, "scaling->mscale_all_dim",
       scaled(8, 10000, with(yarn, [](auto& s) { s.mscale_all_dim = kNaN; }))},
      {kScaled, "scaling",  // the type's own attention factor is negative
       scaled(8, 10000,
              with(yarn,
                   [](auto& s) {
                     s.mscale = -100;
                     s.mscale_all_dim = 1;
                   }))},
      {kScaled, "scaling->original_max_position_embeddings",
       scaled(8, 10000, with(longrope, [](auto& s) { s.original_max_position_embeddings = 0; }))},
      {kScaled, "scaling->short_factor",
       scaled(8, 10000, with(longrope, [](auto& s) { s.short_factor = nullptr; }))},
      {kScaled, "scaling->short_factor_len",
       scaled(8, 10000,
              with(longrope,
                   [&](auto& s) {
                     s.short_factor = three.data();
                     s.short_factor_len = 3;
                   }))},
      {kScaled, "scaling->short_factor[1]",
       scaled(8, 10000, with(longrope, [&](auto& s) { s.short_factor = zero_at_1.data(); }))},
      {kScaled, "scaling->long_factor",
       scaled(8, 10000, with(longrope, [](auto& s) { s.long_factor = nullptr; }))},
      {kScaled, "scaling->long_factor[1]",
       scaled(8, 10000, with(longrope, [&](auto& s) { s.long_factor = zero_at_1.data(); }))},
      {kScaled, "scaling->factor",
       scaled(8, 10000, with(longrope, [](auto& s) { s.factor = -1; }))},
      {kScaled, "scaling->factor", scaled(8, 10000, with(longrope, [](auto& s) { s.factor = 0; }))},
      {kScaled, "scaling->original_max_position_embeddings",
       scaled(8, 10000, with(longrope, [](auto& s) { s.original_max_position_embeddings = 1; }))},
      {kScaled, "scaling->factor", scaled(8, 10000, with(llama3, [](auto& s) { s.factor = 0; }))},
      {kScaled, "scaling->low_freq_factor",
       scaled(8, 10000, with(llama3, [](auto& s) { s.low_freq_factor = 0; }))},
      {kScaled, "scaling->high_freq_factor",
       scaled(8, 10000, with(llama3, [](auto& s) { s.high_freq_factor = kNaN; }))},
      {kScaled, "scaling->high_freq_factor",
       scaled(8, 10000, with(llama3, [](auto& s) { s.high_freq_factor = 0.5; }))},
      {kScaled, "scaling->original_max_position_embeddings",
       scaled(8, 10000, with(llama3, [](auto& s) { s.original_max_position_embeddings = 0; }))},
      {kScaled, "scaling->alpha", scaled(8, 10000, type(POSENC_ROPE_SCALING_NTK_ALPHA))},
      {kScaled, "rotary_dim",
       scaled(2, 10000, with(type(POSENC_ROPE_SCALING_NTK_ALPHA), [](auto& s) { s.alpha = 2; }))},
      {kScaled, "scaling->pair_factors",
       scaled(8, 10000, with(pairs, [](auto& s) { s.pair_factors = nullptr; }))},
      {kScaled, "scaling->pair_factors_len",
       scaled(8, 10000, with(pairs, [](auto& s) { s.pair_factors_len = 5; }))},
      {kScaled, "scaling->pair_factors[1]",
       scaled(8, 10000, with(pairs, [&](auto& s) { s.pair_factors = zero_at_1.data(); }))},
      {"posenc_rope_plan_create_from_freqs_f32", "plan",
       [&] { return posenc_rope_plan_create_from_freqs_f32(nullptr, 8, freqs32, 1); }},
      {"posenc_rope_plan_create_from_freqs_f32", "freqs",
       [&] { return posenc_rope_plan_create_from_freqs_f32(&p, 8, nullptr, 1); }},
      {"posenc_rope_plan_create_from_freqs_f32", "rotary_dim",
       [&] { return posenc_rope_plan_create_from_freqs_f32(&p, 3, freqs32, 1); }},
      {"posenc_rope_plan_create_from_freqs_f32", "attention_factor",
       [&] { return posenc_rope_plan_create_from_freqs_f32(&p, 8, freqs32, -2); }},
      {"posenc_rope_plan_create_from_freqs_f32", "freqs",
       [&] {
         const float nan4[4] = {1, NAN, 0, 0};
         return posenc_rope_plan_create_from_freqs_f32(&p, 8, nan4, 1);
       }},
      {"posenc_rope_plan_create_powf", "plan",
       [] { return posenc_rope_plan_create_powf(nullptr, 8, 10000.0f, 1); }},
      {"posenc_rope_plan_create_powf", "base",
       [&] { return posenc_rope_plan_create_powf(&p, 8, 1.0f, 1); }},
      {"posenc_rope_plan_create_powf", "rotary_dim",
       [&] { return posenc_rope_plan_create_powf(&p, 1, 10000.0f, 1); }},
      {"posenc_rope_plan_create_powf", "attention_factor",
       [&] { return posenc_rope_plan_create_powf(&p, 8, 10000.0f, kNaN); }},
      {kHf, "plan", [] { return posenc_rope_plan_create_hf_f32(nullptr, 8, 10000, nullptr, 0); }},
      {kHf, "torch_vector_floats",
       [&] { return posenc_rope_plan_create_hf_f32(&p, 8, 10000, nullptr, 3); }},
      {kHf, "scaling->type",
       [&] {
         const posenc_rope_scaling s = type(POSENC_ROPE_SCALING_NTK_ALPHA);
         return posenc_rope_plan_create_hf_f32(&p, 8, 10000, &s, 0);
       }},
      {kHf, "base", [&] { return posenc_rope_plan_create_hf_f32(&p, 8, 0, nullptr, 0); }},
      {kHf, "scaling->factor",
       [&] {
         const posenc_rope_scaling s = type(POSENC_ROPE_SCALING_LINEAR);
         return posenc_rope_plan_create_hf_f32(&p, 8, 10000, &s, 0);
       }},
  });
}

// Without FMA (Nehalem, emulated by scripts/test-emulated-x86.sh) the HF float32 recipe
// that sends pairs through SLEEF's fused multiply-add powf is unsupported, and says why.
TEST(LastError, UnsupportedHfRecipeNamesTheVectorWidth) {
  posenc_rope_plan* p = nullptr;
  const posenc_status st = posenc_rope_plan_create_hf_f32(&p, 128, 10000, nullptr, 16);
  posenc_rope_plan_destroy(p);
  if (st == POSENC_OK) GTEST_SKIP() << "this CPU runs SLEEF's FMA powf";
  ASSERT_EQ(st, POSENC_ERR_UNSUPPORTED);
  EXPECT_EQ(std::string(posenc_last_error())
                .rfind("posenc_rope_plan_create_hf_f32: torch_vector_floats: 16 ", 0),
            0u)
      << posenc_last_error();
}

TEST(LastError, GgmlPlans) {
  posenc_rope_plan* p = nullptr;
  posenc_rope_ggml_params valid{};
  valid.n_dims = 8;
  valid.freq_base = 10000;
  const auto with = [&](const std::function<void(posenc_rope_ggml_params&)>& f) {
    return [&p, valid, f] {
      posenc_rope_ggml_params g = valid;
      f(g);
      const posenc_status st = posenc_rope_plan_create_ggml(&p, &g);
      posenc_rope_plan_destroy(p);
      return st;
    };
  };
  const auto yarn = [](posenc_rope_ggml_params& g) {
    g.ext_factor = 1;
    g.n_ctx_orig = 4096;
    g.beta_fast = 32;
    g.beta_slow = 1;
  };
  static const float kFactors[4] = {1, 1, 0, 1}, kTiny[4] = {1e-9f, 1, 1, 1};
  const char* const kFn = "posenc_rope_plan_create_ggml";
  ExpectRefusals({
      {kFn, "plan", [&] { return posenc_rope_plan_create_ggml(nullptr, &valid); }},
      {kFn, "params", [&] { return posenc_rope_plan_create_ggml(&p, nullptr); }},
      {kFn, "params->n_dims", with([](auto& g) { g.n_dims = 3; })},
      {kFn, "params->freq_base", with([](auto& g) { g.freq_base = 1; })},
      {kFn, "params->freq_scale", with([](auto& g) { g.freq_scale = -1; })},
      {kFn, "params->attn_factor", with([](auto& g) { g.attn_factor = kNaN; })},
      {kFn, "params->ext_factor", with([](auto& g) { g.ext_factor = -0.5; })},
      {kFn, "params->n_ctx_orig", with([&](auto& g) {
         yarn(g);
         g.n_ctx_orig = 0;
       })},
      {kFn, "params->beta_fast", with([&](auto& g) {
         yarn(g);
         g.beta_fast = 0;
       })},
      {kFn, "params->beta_slow", with([&](auto& g) {
         yarn(g);
         g.beta_slow = kInf;
       })},
      {kFn, "params->freq_factors[2]", with([](auto& g) { g.freq_factors = kFactors; })},
      {kFn, "params", with([](auto& g) { g.freq_factors = kTiny; })},  // w_0 = 1e9
  });
  unsigned flags = 0;
  const char* const kModeFn = "posenc_rope_ggml_flags";
  ExpectRefusals({
      {kModeFn, "flags", [] { return posenc_rope_ggml_flags(2, nullptr); }},
      {kModeFn, "mode", [&] { return posenc_rope_ggml_flags(10, &flags); }},
      {kModeFn, "mode", [&] { return posenc_rope_ggml_flags(26, &flags); }},
  });
  const char* const kPlanModeFn = "posenc_rope_plan_create_ggml_mode";
  ExpectRefusals({
      {kFn, "params->mode", with([](auto& g) { g.mode = 10; })},
      {kFn, "params->sections[1]", with([](auto& g) { g.sections[1] = 4; })},
      {kFn, "params->sections[2]", with([](auto& g) {
         g.mode = 8;
         g.sections[0] = 2;
         g.sections[2] = -1;
       })},
      {kFn, "params->sections", with([](auto& g) {
         g.mode = 40;
         g.sections[3] = 2;
       })},
      {kPlanModeFn, "flags",
       [&] { return posenc_rope_plan_create_ggml_mode(&p, &valid, nullptr); }},
  });
}

// RoPE in place (the table of rope_errors_test has the rest), M-RoPE and re-rotation.
TEST(LastError, RopeInPlaceMropeAndRerotation) {
  const PlanPtr plan = MakePlan(8, 10000.0, 1.0), other = MakePlan(8, 500000.0, 1e-39);
  const PlanPtr narrow = MakePlan(6, 10000.0, 1.0);
  AlignedFloats buf(256);
  // Q [3 tokens, 2 heads, 8] at 0, K [3, 1, 8] at 64.
  const posenc_rope_tensor q = {buf.data(), 2, 16, 8}, k = {buf.data() + 64, 1, 8, 8};
  const int32_t pos[9] = {0, 1, 2, 0, 1, 2, 0, 1, 2};
  const size_t sections[3] = {2, 1, 1}, bad_sum[3] = {2, 1, 2}, bad_fit[3] = {0, 0, 4};
  const auto rope = [&](const PlanPtr& pl, size_t head_dim, const int32_t* positions, int32_t start,
                        posenc_rope_tensor qq, posenc_rope_tensor kk, unsigned flags) {
    return [&pl, head_dim, positions, start, qq, kk, flags] {
      return posenc_rope_bf16(pl.get(), head_dim, 3, positions, start, &qq, &kk, flags);
    };
  };
  const auto mrope = [&](const size_t* s, const int32_t* positions, size_t n, unsigned flags) {
    return [&, s, positions, n, flags] {
      return posenc_mrope_f16(plan.get(), s, 8, n, positions, &q, &k, flags);
    };
  };
  posenc_rope_tensor q_overlap = q, k_in_q = k, q_huge = q, q_odd = q;
  q_overlap.head_stride = 7;
  k_in_q.data = buf.data() + 8;  // bytes 32 on, within Q's 96
  q_huge.token_stride = kHuge;
  q_odd.data = reinterpret_cast<char*>(q.data) + 1;
  const char* const kRope = "posenc_rope_bf16";
  const char* const kMrope = "posenc_mrope_f16";
  const char* const kRerotate = "posenc_rope_rerotate_f16";
  ExpectRefusals({
      {kRope, "plan", [&] { return posenc_rope_bf16(nullptr, 8, 3, pos, 0, &q, &k, 0); }},
      {kRope, "q", [&] { return posenc_rope_bf16(plan.get(), 8, 3, pos, 0, nullptr, &k, 0); }},
      {kRope, "flags", rope(plan, 8, pos, 0, q, k, 1u << 7)},
      {kRope, "head_dim", rope(plan, 6, pos, 0, q, k, 0)},
      {kRope, "start_pos", rope(plan, 8, nullptr, INT32_MAX - 1, q, k, 0)},
      {kRope, "q->head_stride", rope(plan, 8, pos, 0, q_overlap, k, 0)},
      {kRope, "q", rope(plan, 8, pos, 0, q_huge, k, 0)},
      {kRope, "q->data", rope(plan, 8, pos, 0, q_odd, k, 0)},
      {kRope, "k", rope(plan, 8, pos, 0, q, k_in_q, 0)},
      {kMrope, "plan", [&] { return posenc_mrope_f16(nullptr, sections, 8, 3, pos, &q, &k, 0); }},
      {kMrope, "q",
       [&] { return posenc_mrope_f16(plan.get(), sections, 8, 3, pos, nullptr, &k, 0); }},
      {kMrope, "flags", mrope(sections, pos, 3, 1u << 7)},
      {kMrope, "head_dim",
       [&] { return posenc_mrope_f16(plan.get(), sections, 7, 3, pos, &q, &k, 0); }},
      {kMrope, "sections", mrope(nullptr, pos, 3, 0)},
      {kMrope, "sections", mrope(bad_sum, pos, 3, 0)},
      {kMrope, "sections", mrope(bad_fit, pos, 3, POSENC_ROPE_MROPE_INTERLEAVED)},
      {kMrope, "positions", mrope(sections, nullptr, 3, 0)},
      {kMrope, "n_tokens", mrope(sections, pos, SIZE_MAX / 4, 0)},
      {kRerotate, "from",
       [&] { return posenc_rope_rerotate_f16(nullptr, pos, 0, plan.get(), pos, 0, 8, 3, &k, 0); }},
      {kRerotate, "to",
       [&] { return posenc_rope_rerotate_f16(plan.get(), pos, 0, nullptr, pos, 0, 8, 3, &k, 0); }},
      {kRerotate, "keys",
       [&] {
         return posenc_rope_rerotate_f16(plan.get(), pos, 0, plan.get(), pos, 0, 8, 3, nullptr, 0);
       }},
      {kRerotate, "to",  // another rotary_dim
       [&] {
         return posenc_rope_rerotate_f16(plan.get(), pos, 0, narrow.get(), pos, 0, 8, 3, &k, 0);
       }},
      {kRerotate, "flags",
       [&] {
         return posenc_rope_rerotate_f16(plan.get(), pos, 0, plan.get(), pos, 0, 8, 3, &k,
                                         POSENC_ROPE_INVERSE);
       }},
      {kRerotate, "head_dim",
       [&] {
         return posenc_rope_rerotate_f16(plan.get(), pos, 0, plan.get(), pos, 0, 4, 3, &k, 0);
       }},
      {kRerotate, "to",  // r = 1e-39 below FLT_MIN
       [&] {
         return posenc_rope_rerotate_f16(plan.get(), pos, 0, other.get(), pos, 0, 8, 3, &k, 0);
       }},
      {kRerotate, "from_start",
       [&] {
         return posenc_rope_rerotate_f16(plan.get(), nullptr, INT32_MAX, plan.get(), pos, 0, 8, 3,
                                         &k, 0);
       }},
      {kRerotate, "to_start",
       [&] {
         return posenc_rope_rerotate_f16(plan.get(), pos, 0, plan.get(), nullptr, INT32_MAX, 8, 3,
                                         &k, 0);
       }},
  });
}

// posenc_rope_out, posenc_mrope_out, the factor computations and posenc_rope_apply.
TEST(LastError, RuntimeShapedRope) {
  const PlanPtr plan = MakePlan(8, 10000.0, 1.0);
  AlignedFloats buf(2048);
  float* const f = buf.data();
  // src and dst: [2 batches, 3 tokens, 2 heads, 8] at 0 and 256.
  const posenc_rope_view src = {f, POSENC_DTYPE_F32, 2, 16, 8, 48};
  const posenc_rope_view dst = {f + 256, POSENC_DTYPE_F32, 2, 16, 8, 48};
  const int32_t pos[18] = {};
  const size_t sections[3] = {2, 1, 1};
  const auto out = [&](posenc_rope_view s, posenc_rope_view d, size_t n_batch, size_t n_tokens) {
    return [&plan, s, d, n_batch, n_tokens] {
      return posenc_rope_out(plan.get(), 8, n_batch, n_tokens, nullptr, 0, &s, &d, 0);
    };
  };
  const auto changed = [](posenc_rope_view v, const std::function<void(posenc_rope_view&)>& c) {
    c(v);
    return v;
  };
  // Factors: 6 rows (one per token of each batch) at 512.
  void* const storage = f + 512;
  const size_t bytes = posenc_rope_factors_bytes(8, 6, 0);
  posenc_rope_factors factors{};
  ASSERT_EQ(posenc_rope_factors_compute(plan.get(), 6, pos, 0, 0, storage, bytes, &factors),
            POSENC_OK);
  const auto apply = [&](const std::function<void(posenc_rope_factors&)>& c, size_t first_row,
                         size_t row_batch_stride, posenc_rope_view d, unsigned flags) {
    return [&, c, first_row, row_batch_stride, d, flags] {
      posenc_rope_factors g = factors;
      c(g);
      return posenc_rope_apply(&g, first_row, row_batch_stride, 8, 2, 3, &src, &d, flags);
    };
  };
  const auto same = [](posenc_rope_factors&) {};
  const char* const kOut = "posenc_rope_out";
  const char* const kMout = "posenc_mrope_out";
  const char* const kFc = "posenc_rope_factors_compute";
  const char* const kMfc = "posenc_mrope_factors_compute";
  const char* const kApply = "posenc_rope_apply";
  ExpectRefusals({
      {kOut, "plan", [&] { return posenc_rope_out(nullptr, 8, 2, 3, pos, 0, &src, &dst, 0); }},
      {kOut, "flags",
       [&] { return posenc_rope_out(plan.get(), 8, 2, 3, pos, 0, &src, &dst, 1u << 9); }},
      {kOut, "head_dim",
       [&] { return posenc_rope_out(plan.get(), 2, 2, 3, pos, 0, &src, &dst, 0); }},
      {kOut, "n_batch", out(src, dst, SIZE_MAX, 3)},
      {kOut, "start_pos",
       [&] { return posenc_rope_out(plan.get(), 8, 2, 3, nullptr, INT32_MAX, &src, &dst, 0); }},
      {kOut, "src", [&] { return posenc_rope_out(plan.get(), 8, 2, 3, pos, 0, nullptr, &dst, 0); }},
      {kOut, "dst", [&] { return posenc_rope_out(plan.get(), 8, 2, 3, pos, 0, &src, nullptr, 0); }},
      {kOut, "src->dtype",
       out(changed(src, [](auto& v) { v.dtype = static_cast<posenc_dtype>(9); }), dst, 2, 3)},
      {kOut, "dst->dtype",
       out(src, changed(dst, [](auto& v) { v.dtype = static_cast<posenc_dtype>(9); }), 2, 3)},
      {kOut, "dst->n_heads", out(src, changed(dst, [](auto& v) { v.n_heads = 1; }), 2, 3)},
      {kOut, "src->data", out(changed(src, [](auto& v) { v.data = nullptr; }), dst, 2, 3)},
      {kOut, "dst->data",
       out(src, changed(dst, [](auto& v) { v.data = static_cast<char*>(v.data) + 2; }), 2, 3)},
      {kOut, "src", out(changed(src, [](auto& v) { v.batch_stride = kHuge; }), dst, 2, 3)},
      {kOut, "dst->head_stride", out(src, changed(dst, [](auto& v) { v.head_stride = 4; }), 2, 3)},
      {kOut, "dst->batch_stride",
       out(src, changed(dst, [](auto& v) { v.batch_stride = 40; }), 2, 3)},
      {kOut, "dst->token_stride",  // in place with another view
       out(src,
           changed(src,
                   [](auto& v) {
                     v.token_stride = 24;
                     v.batch_stride = 96;
                   }),
           2, 3)},
      {kOut, "dst->batch_stride",  // in place with another batch stride
       out(src, changed(src, [](auto& v) { v.batch_stride = 96; }), 2, 3)},
      {kOut, "dst->dtype",  // in place with another type
       out(src, changed(src, [](auto& v) { v.dtype = POSENC_DTYPE_BF16; }), 2, 3)},
      {kOut, "dst",
       out(src, changed(src, [](auto& v) { v.data = static_cast<float*>(v.data) + 8; }), 2, 3)},
      {kOut, "dst->dtype",  // bf16 -> f32 is not a pair
       out(changed(src, [](auto& v) { v.dtype = POSENC_DTYPE_BF16; }), dst, 2, 3)},
      {kMout, "sections",
       [&] { return posenc_mrope_out(plan.get(), nullptr, 8, 2, 3, pos, &src, &dst, 0); }},
      {kMout, "n_tokens",
       [&] {
         return posenc_mrope_out(plan.get(), sections, 8, 2, SIZE_MAX / 8, pos, &src, &dst, 0);
       }},
      {kMout, "n_batch",
       [&] { return posenc_mrope_out(plan.get(), sections, 8, SIZE_MAX, 3, pos, &src, &dst, 0); }},
      {kMout, "positions",
       [&] { return posenc_mrope_out(plan.get(), sections, 8, 2, 3, nullptr, &src, &dst, 0); }},
      {kMout, "flags",
       [&] { return posenc_mrope_out(plan.get(), sections, 8, 2, 3, pos, &src, &dst, 1u << 10); }},
      {kFc, "plan",
       [&] {
         return posenc_rope_factors_compute(nullptr, 6, pos, 0, 0, storage, bytes, &factors);
       }},
      {kFc, "factors",
       [&] {
         return posenc_rope_factors_compute(plan.get(), 6, pos, 0, 0, storage, bytes, nullptr);
       }},
      {kFc, "flags",
       [&] {
         posenc_rope_factors g;
         return posenc_rope_factors_compute(plan.get(), 6, pos, 0, POSENC_ROPE_MROPE_INTERLEAVED,
                                            storage, bytes, &g);
       }},
      {kFc, "flags",
       [&] {
         posenc_rope_factors g;
         return posenc_rope_factors_compute(plan.get(), 6, pos, 0, 1u << 8, storage, bytes, &g);
       }},
      {kFc, "start_pos",
       [&] {
         posenc_rope_factors g;
         return posenc_rope_factors_compute(plan.get(), 6, nullptr, INT32_MAX - 4, 0, storage,
                                            bytes, &g);
       }},
      {kFc, "n_rows",
       [&] {
         posenc_rope_factors g;
         return posenc_rope_factors_compute(plan.get(), SIZE_MAX / 8, pos, 0, 0, storage, bytes,
                                            &g);
       }},
      {kFc, "storage",
       [&] {
         posenc_rope_factors g;
         return posenc_rope_factors_compute(plan.get(), 6, pos, 0, 0, nullptr, bytes, &g);
       }},
      {kFc, "storage",
       [&] {
         posenc_rope_factors g;
         return posenc_rope_factors_compute(plan.get(), 6, pos, 0, 0,
                                            static_cast<char*>(storage) + 1, bytes, &g);
       }},
      {kFc, "storage_bytes",
       [&] {
         posenc_rope_factors g;
         return posenc_rope_factors_compute(plan.get(), 6, pos, 0, 0, storage, bytes - 1, &g);
       }},
      {kMfc, "plan",
       [&] {
         posenc_rope_factors g;
         return posenc_mrope_factors_compute(nullptr, sections, 2, pos, 0, storage, bytes, &g);
       }},
      {kMfc, "factors",
       [&] {
         return posenc_mrope_factors_compute(plan.get(), sections, 2, pos, 0, storage, bytes,
                                             nullptr);
       }},
      {kMfc, "flags",
       [&] {
         posenc_rope_factors g;
         return posenc_mrope_factors_compute(plan.get(), sections, 2, pos, 1u << 7, storage, bytes,
                                             &g);
       }},
      {kMfc, "sections",
       [&] {
         posenc_rope_factors g;
         return posenc_mrope_factors_compute(plan.get(), nullptr, 2, pos, 0, storage, bytes, &g);
       }},
      {kMfc, "n_rows",
       [&] {
         posenc_rope_factors g;
         return posenc_mrope_factors_compute(plan.get(), sections, SIZE_MAX / 8, pos, 0, storage,
                                             bytes, &g);
       }},
      {kMfc, "positions",
       [&] {
         posenc_rope_factors g;
         return posenc_mrope_factors_compute(plan.get(), sections, 2, nullptr, 0, storage, bytes,
                                             &g);
       }},
      {kApply, "factors", [&] { return posenc_rope_apply(nullptr, 0, 3, 8, 2, 3, &src, &dst, 0); }},
      {kApply, "flags", apply(same, 0, 3, dst, 1u << 7)},
      {kApply, "factors->flags", apply([](auto& g) { g.flags = 64; }, 0, 3, dst, 0)},
      {kApply, "flags", apply(same, 0, 3, dst, POSENC_ROPE_GPTJ)},
      {kApply, "factors->rotary_dim", apply([](auto& g) { g.rotary_dim = 3; }, 0, 3, dst, 0)},
      {kApply, "head_dim", apply([](auto& g) { g.rotary_dim = 16; }, 0, 3, dst, 0)},
      {kApply, "factors->row_floats", apply([](auto& g) { g.row_floats = 9; }, 0, 3, dst, 0)},
      {kApply, "src", [&] { return posenc_rope_apply(&factors, 0, 3, 8, 2, 3, nullptr, &dst, 0); }},
      {kApply, "first_row", apply(same, SIZE_MAX, 3, dst, 0)},
      {kApply, "factors->n_rows", apply(same, 1, 3, dst, 0)},
      {kApply, "factors->data",
       apply(
           [](auto& g) { g.data = reinterpret_cast<float*>(reinterpret_cast<char*>(g.data) + 1); },
           0, 3, dst, 0)},
      {kApply, "dst",  // the destination over the factor rows
       apply(same, 0, 3, changed(dst, [&](auto& v) { v.data = f + 520; }), 0)},
  });
}

// The entry points of the other storage types and the fused forms name themselves.
TEST(LastError, SinusoidAlibiSoftmaxAndLearned) {
  const SinusoidPlanPtr splan = MakeSinusoidPlan(8, 10000.0);
  AlignedFloats buf(1024);
  float* const f = buf.data();
  uint16_t* const h = reinterpret_cast<uint16_t*>(f);
  const float slopes[3] = {0.5f, 0.25f, 0.125f};
  const int32_t pos[4] = {0, 1, 5, 2};
  ExpectRefusals({
      {"posenc_sinusoid_fill_bf16", "plan",
       [&] { return posenc_sinusoid_fill_bf16(nullptr, 2, pos, 0, h, 8, 0); }},
      {"posenc_sinusoid_fill_f16", "out",
       [&] { return posenc_sinusoid_fill_f16(splan.get(), 2, pos, 0, nullptr, 0, 0); }},
      {"posenc_sinusoid_fill_f16", "out",
       [&] {
         uint16_t* odd = reinterpret_cast<uint16_t*>(reinterpret_cast<char*>(h) + 1);
         return posenc_sinusoid_fill_f16(splan.get(), 2, pos, 0, odd, 0, 0);
       }},
      {"posenc_sinusoid_add_f16", "x",
       [&] { return posenc_sinusoid_add_f16(splan.get(), 2, pos, 0, nullptr, 0, 0); }},
      {"posenc_sinusoid_add_bf16", "start_pos",
       [&] { return posenc_sinusoid_add_bf16(splan.get(), 2, nullptr, INT32_MAX, h, 0, 0); }},
      {"posenc_sinusoid_fill_timesteps_bf16", "timesteps[1]",
       [&] {
         const float t[2] = {1.0f, NAN};
         return posenc_sinusoid_fill_timesteps_bf16(splan.get(), 2, t, h, 0, 0);
       }},
      {"posenc_sinusoid_fill_timesteps_f16", "row_stride",
       [&] {
         const float t[2] = {1.0f, 2.0f};
         return posenc_sinusoid_fill_timesteps_f16(splan.get(), 2, t, h, 7, 0);
       }},
      {"posenc_alibi_add_bf16", "scores",
       [&] { return posenc_alibi_add_bf16(slopes, 3, 2, 4, 0, nullptr, 8, 4, 1.0f, 0); }},
      {"posenc_alibi_add_f16", "slopes[2]",
       [&] {
         const float bad[3] = {0.5f, 0.25f, INFINITY};
         return posenc_alibi_add_f16(bad, 3, 2, 4, 0, h, 8, 4, 1.0f, 0);
       }},
      {"posenc_alibi_bias_bf16", "out",
       [&] { return posenc_alibi_bias_bf16(slopes, 3, 2, 4, 0, h, 8, 4 + kHuge, 0); }},
      {"posenc_alibi_bias_f16", "head_stride",
       [&] { return posenc_alibi_bias_f16(slopes, 3, 2, 4, 0, h, 7, 4, 0); }},
      {"posenc_alibi_softmax_f32", "slopes",  // within the scores
       [&] { return posenc_alibi_softmax_f32(f + 4, 3, 2, 4, 0, f, 8, 4, 1.0f, 0); }},
      {"posenc_alibi_softmax_f32", "scale",
       [&] { return posenc_alibi_softmax_f32(slopes, 3, 2, 4, 0, f, 8, 4, NAN, 0); }},
      {"posenc_alibi_softmax_bf16", "row_stride",
       [&] { return posenc_alibi_softmax_bf16(slopes, 3, 2, 4, 0, h, 8, 3, 1.0f, 0); }},
      {"posenc_alibi_softmax_bf16", "n_k",
       [&] {
         return posenc_alibi_softmax_bf16(slopes, 1, 1, (size_t{1} << 31) + 1, 0, h, 0, 0, 1.0f, 0);
       }},
      {"posenc_alibi_softmax_bf16", "flags",
       [&] { return posenc_alibi_softmax_bf16(slopes, 3, 2, 4, 0, h, 8, 4, 1.0f, 2); }},
      {"posenc_alibi_softmax_bf16", "q_offset",
       [&] {
         return posenc_alibi_softmax_bf16(slopes, 3, 2, 4, size_t{1} << 31, h, 8, 4, 1.0f, 0);
       }},
      // Learned embeddings: a table of 4 rows of 8 at 0, x: 3 rows of 8 at 64.
      {"posenc_learned_add_f32", "table",
       [&] { return posenc_learned_add_f32(nullptr, 4, 0, 8, 3, pos, 0, f + 64, 0); }},
      {"posenc_learned_add_f32", "x",
       [&] {
         return posenc_learned_add_f32(
             f, 4, 0, 8, 3, pos, 0, reinterpret_cast<float*>(reinterpret_cast<char*>(f) + 257), 0);
       }},
      {"posenc_learned_add_f32", "table_stride",
       [&] { return posenc_learned_add_f32(f, 4, 7, 8, 3, pos, 0, f + 64, 0); }},
      {"posenc_learned_add_f32", "x_stride",
       [&] { return posenc_learned_add_f32(f, 4, 0, 8, 3, pos, 0, f + 64, 5); }},
      {"posenc_learned_add_f32", "max_pos",
       [&] { return posenc_learned_add_f32(f, 0, 0, 8, 3, pos, 0, f + 64, 0); }},
      {"posenc_learned_add_f32", "table",
       [&] { return posenc_learned_add_f32(f, 4, kHuge, 8, 3, pos, 0, f + 64, 0); }},
      {"posenc_learned_add_f32", "x",
       [&] { return posenc_learned_add_f32(f, 4, 0, 8, 3, pos, 0, f + 64, kHuge); }},
      {"posenc_learned_add_f32", "x",  // x inside the table
       [&] { return posenc_learned_add_f32(f, 4, 0, 8, 1, pos, 0, f + 8, 0); }},
      {"posenc_learned_add_f32", "positions[2]",
       [&] { return posenc_learned_add_f32(f, 4, 0, 8, 3, pos, 0, f + 64, 0); }},
      {"posenc_learned_add_f32", "start_pos",
       [&] { return posenc_learned_add_f32(f, 4, 0, 8, 3, nullptr, -1, f + 64, 0); }},
      {"posenc_learned_add_f32", "start_pos",
       [&] { return posenc_learned_add_f32(f, 4, 0, 8, 3, nullptr, INT32_MAX, f + 64, 0); }},
      {"posenc_learned_add_f32", "start_pos",
       [&] { return posenc_learned_add_f32(f, 4, 0, 8, 3, nullptr, 2, f + 64, 0); }},
  });
}

// posenc_isa_from_name and posenc_set_isa (dispatch/dispatch.c).
TEST(LastError, IsaSelection) {
  posenc_isa isa;
  ExpectRefusals({
      {"posenc_isa_from_name", "name", [&] { return posenc_isa_from_name(nullptr, &isa); }},
      {"posenc_isa_from_name", "name", [&] { return posenc_isa_from_name("mmx", &isa); }},
      {"posenc_isa_from_name", "isa", [&] { return posenc_isa_from_name("scalar", nullptr); }},
  });
  for (posenc_isa i : AllIsas())
    if (!posenc_isa_available(i))
      ExpectRefusals(
          {{"posenc_set_isa", "isa", [i] { return posenc_set_isa(i); }, POSENC_ERR_UNSUPPORTED}});
}

}  // namespace
}  // namespace posenc_test
