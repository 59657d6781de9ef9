// int64 positions (POSENC_ROPE_POSITIONS_INT64) on every RoPE form that takes positions, on
// every ISA:
//  - the result with int64 positions is bitwise the result of the same call with the same
//    values as int32 (INT32_MAX and INT32_MIN among them), with few positions (the stack copy)
//    and with more than 64 (the heap copy);
//  - a value outside the int32 range (INT32_MAX + 1, INT32_MIN - 1) at the first, a middle or
//    the last index is refused with POSENC_ERR_INVALID_ARGUMENT, the detail naming the
//    argument and the index, and nothing written;
//  - NULL positions with the flag: the start_pos run, as without it;
//  - posenc_rope_factors_bytes, posenc_rope_apply and posenc_rope_apply_slots take the flag
//    as a no-op.
#include <posenc.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../kernels/half.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr unsigned kInt64 = POSENC_ROPE_POSITIONS_INT64;
constexpr size_t kH = 2, kD = 64, kR = 64;

using Bytes = std::vector<uint8_t>;

template <typename T>
Bytes AsBytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// n elements of type e (f32, bf16 or f16 bits) drawn from [-2, 2), as bytes.
Bytes RandomElems(size_t n, uint32_t seed, posenc_elem e) {
  const std::vector<float> f = RandomFloats(n, seed, -2.0f, 2.0f);
  Bytes b(n * posenc_elem_size(e));
  for (size_t i = 0; i < n; ++i) posenc_elem_store(b.data(), i, f[i], e);
  return b;
}

// n sentinel bytes (a pattern no result is likely to have).
Bytes Sentinel(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(0xA5 ^ (i * 7));
  return b;
}

// Positions given to a form: int32, or int64 (the same values) with the flag.
struct Positions {
  std::vector<int32_t> v32;
  std::vector<int64_t> v64;
  const int32_t* Get(unsigned flags) const {
    if (flags & kInt64) return reinterpret_cast<const int32_t*>(v64.data());
    return v32.data();
  }
};

Positions MakePositions(const std::vector<int32_t>& v) { return {v, {v.begin(), v.end()}}; }

// One form: `rows` rows of n_batch x L positions; run(L, positions, flags, &out) sets *out to
// the bytes the call may write, in their state before the call (*before), makes the call and
// returns its status.
struct Form {
  std::string name;
  const char* fn;
  const char* arg;
  size_t rows, n_batch;
  std::function<posenc_status(size_t L, const int32_t* pos, unsigned flags, Bytes* before,
                              Bytes* out)>
      run;
};

// Positions for n values over the whole int32 range, INT32_MAX and INT32_MIN among them.
std::vector<int32_t> RangePositions(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> p = RandomPositions(rng, n);
  if (n > 2) {
    p[1] = INT32_MAX;
    p[n - 1] = INT32_MIN;
  }
  return p;
}

// The factors struct written at `at` (its data pointer differs from call to call), as its
// fields alone.
void Canonical(const posenc_rope_factors& f, uint8_t* at) {
  const size_t fields[4] = {f.n_rows, f.rotary_dim, f.row_floats, f.flags};
  std::memset(at, 0, sizeof f);
  std::memcpy(at, fields, sizeof fields);
}

// The forms of every public function with RoPE positions.
std::vector<Form> Forms(const posenc_rope_plan* plan, const posenc_rope_plan* plan2) {
  std::vector<Form> forms;
  // In-place tensors of each storage type: q (kH heads) and k (1 head) in one buffer.
  const posenc_elem elems[3] = {POSENC_ELEM_F32, POSENC_ELEM_BF16, POSENC_ELEM_F16};
  const char* const rope_fn[3] = {"posenc_rope_f32", "posenc_rope_bf16", "posenc_rope_f16"};
  const char* const mrope_fn[3] = {"posenc_mrope_f32", "posenc_mrope_bf16", "posenc_mrope_f16"};
  const char* const rerot_fn[3] = {"posenc_rope_rerotate_f32", "posenc_rope_rerotate_bf16",
                                   "posenc_rope_rerotate_f16"};
  for (int i = 0; i < 3; ++i) {
    const posenc_elem e = elems[i];
    const auto tensors = [e](size_t L, Bytes* out, posenc_rope_tensor* q, posenc_rope_tensor* k) {
      *out = RandomElems(L * (kH + 1) * kD, 11 + static_cast<uint32_t>(L), e);
      *q = {out->data(), kH, kH * kD, kD};
      *k = {out->data() + L * kH * kD * posenc_elem_size(e), 1, kD, kD};
    };
    forms.push_back({rope_fn[i], rope_fn[i], "positions", 1, 1,
                     [=](size_t L, const int32_t* pos, unsigned flags, Bytes* before, Bytes* out) {
                       posenc_rope_tensor q, k;
                       tensors(L, out, &q, &k);
                       *before = *out;
                       return i == 0   ? posenc_rope_f32(plan, kD, L, pos, 0, &q, &k, flags)
                              : i == 1 ? posenc_rope_bf16(plan, kD, L, pos, 0, &q, &k, flags)
                                       : posenc_rope_f16(plan, kD, L, pos, 0, &q, &k, flags);
                     }});
    for (int ggml = 0; ggml < 2; ++ggml) {
      forms.push_back(
          {std::string(mrope_fn[i]) + (ggml ? " (ggml, 4 rows)" : ""), mrope_fn[i], "positions",
           ggml ? 4u : 3u, 1,
           [=](size_t L, const int32_t* pos, unsigned flags, Bytes* before, Bytes* out) {
             static const size_t sections[4] = {16, 8, 8, 0};
             posenc_rope_tensor q, k;
             tensors(L, out, &q, &k);
             *before = *out;
             const unsigned f = flags | (ggml ? unsigned{POSENC_ROPE_MROPE_GGML} : 0u);
             return i == 0   ? posenc_mrope_f32(plan, sections, kD, L, pos, &q, &k, f)
                    : i == 1 ? posenc_mrope_bf16(plan, sections, kD, L, pos, &q, &k, f)
                             : posenc_mrope_f16(plan, sections, kD, L, pos, &q, &k, f);
           }});
    }
    // Re-rotation: the positions under test as from_positions (to_positions given too, of
    // the same type), then as to_positions (from_positions NULL).
    for (int to = 0; to < 2; ++to) {
      forms.push_back(
          {std::string(rerot_fn[i]) + (to ? " to" : " from"), rerot_fn[i],
           to ? "to_positions" : "from_positions", 1, 1,
           [=](size_t L, const int32_t* pos, unsigned flags, Bytes* before, Bytes* out) {
             posenc_rope_tensor q, k;
             tensors(L, out, &q, &k);
             *before = *out;
             std::vector<int32_t> other(L);
             for (size_t t = 0; t < L; ++t) other[t] = static_cast<int32_t>(3 * t) - 40;
             const Positions o = MakePositions(other);
             const int32_t* from = to ? nullptr : pos;
             const int32_t* dest = to ? pos : o.Get(flags);
             return i == 0
                        ? posenc_rope_rerotate_f32(plan, from, 5, plan2, dest, 0, kD, L, &q, flags)
                    : i == 1
                        ? posenc_rope_rerotate_bf16(plan, from, 5, plan2, dest, 0, kD, L, &q, flags)
                        : posenc_rope_rerotate_f16(plan, from, 5, plan2, dest, 0, kD, L, &q, flags);
           }});
    }
  }
  // Views: f32 sources of 2 batches.
  forms.push_back(
      {"posenc_rope_out", "posenc_rope_out", "positions", 1, 2,
       [=](size_t L, const int32_t* pos, unsigned flags, Bytes* before, Bytes* out) {
         const Bytes src = RandomElems(2 * L * kH * kD, 3, POSENC_ELEM_F32);
         *out = *before = Sentinel(2 * L * kH * kD * 2);
         const posenc_rope_view sv = {
             const_cast<uint8_t*>(src.data()), POSENC_DTYPE_F32, kH, kH * kD, kD, L * kH * kD};
         const posenc_rope_view dv = {out->data(), POSENC_DTYPE_BF16, kH, kH * kD, kD, L * kH * kD};
         return posenc_rope_out(plan, kD, 2, L, pos, 0, &sv, &dv, flags);
       }});
  forms.push_back({"posenc_mrope_out", "posenc_mrope_out", "positions", 3, 2,
                   [=](size_t L, const int32_t* pos, unsigned flags, Bytes* before, Bytes* out) {
                     static const size_t sections[3] = {16, 8, 8};
                     *out = *before = RandomElems(2 * L * kH * kD, 5, POSENC_ELEM_F32);
                     const posenc_rope_view v = {out->data(), POSENC_DTYPE_F32, kH, kH * kD,
                                                 kD,          L * kH * kD};
                     return posenc_mrope_out(plan, sections, kD, 2, L, pos, &v, &v,
                                             flags | POSENC_ROPE_MROPE_INTERLEAVED);
                   }});
  // Row-writing forms (one batch): the cache has L + 3 cells, token t in cell L + 2 - t.
  const auto cells = [](size_t L) {
    std::vector<int32_t> c(L);
    for (size_t t = 0; t < L; ++t) c[t] = static_cast<int32_t>(L + 2 - t);
    return c;
  };
  forms.push_back({"posenc_rope_out_slots", "posenc_rope_out_slots", "positions", 1, 1,
                   [=](size_t L, const int32_t* pos, unsigned flags, Bytes* before, Bytes* out) {
                     const Bytes src = RandomElems(L * kH * kD, 7, POSENC_ELEM_F16);
                     const std::vector<int32_t> idx = cells(L);
                     *out = *before = Sentinel((L + 3) * kH * kD * 2);
                     const posenc_rope_view sv = {
                         const_cast<uint8_t*>(src.data()), POSENC_DTYPE_F16, kH, kH * kD, kD, 0};
                     const posenc_rope_view dv = {
                         out->data(), POSENC_DTYPE_F16, kH, kH * kD, kD, 0};
                     const posenc_slots slots = {idx.data(), 0, L + 3};
                     return posenc_rope_out_slots(plan, kD, L, pos, 0, &sv, &dv, &slots, flags);
                   }});
  forms.push_back({"posenc_rope_out_q8_0", "posenc_rope_out_q8_0", "positions", 1, 1,
                   [=](size_t L, const int32_t* pos, unsigned flags, Bytes* before, Bytes* out) {
                     const Bytes src = RandomElems(L * kH * kD, 9, POSENC_ELEM_F32);
                     const size_t head = kD / 32 * 34;
                     *out = *before = Sentinel(L * kH * head);
                     const posenc_rope_view sv = {
                         const_cast<uint8_t*>(src.data()), POSENC_DTYPE_F32, kH, kH * kD, kD, 0};
                     const posenc_q8_0_view dv = {out->data(), kH, kH * head, head};
                     return posenc_rope_out_q8_0(plan, kD, L, pos, 0, &sv, &dv, nullptr, flags);
                   }});
  forms.push_back({"posenc_rope_out_fp8", "posenc_rope_out_fp8", "positions", 1, 1,
                   [=](size_t L, const int32_t* pos, unsigned flags, Bytes* before, Bytes* out) {
                     const Bytes src = RandomElems(L * kH * kD, 13, POSENC_ELEM_F32);
                     const std::vector<int32_t> c32 = cells(L);
                     const std::vector<int64_t> idx(c32.begin(), c32.end());
                     *out = *before = Sentinel((L + 3) * kH * kD);
                     const posenc_rope_view sv = {
                         const_cast<uint8_t*>(src.data()), POSENC_DTYPE_F32, kH, kH * kD, kD, 0};
                     const posenc_fp8_view dv = {out->data(), kH, kH * kD, kD};
                     const posenc_slots slots = {idx.data(), 1, L + 3};
                     return posenc_rope_out_fp8(plan, kD, L, pos, 0, &sv, &dv, 0.5f, &slots, flags);
                   }});
  forms.push_back(
      {"posenc_rope_qknorm", "posenc_rope_qknorm", "positions", 1, 2,
       [=](size_t L, const int32_t* pos, unsigned flags, Bytes* before, Bytes* out) {
         const size_t n = 2 * L * kH * kD;
         const Bytes q = RandomElems(n, 15, POSENC_ELEM_F32);
         const std::vector<float> w = RandomFloats(kD, 17, 0.5f, 1.5f);
         // q's destination, then k (in place).
         Bytes all = Sentinel(n * 4);
         const Bytes k = RandomElems(n, 19, POSENC_ELEM_F32);
         all.insert(all.end(), k.begin(), k.end());
         *out = *before = all;
         const posenc_rope_view qs = {
             const_cast<uint8_t*>(q.data()), POSENC_DTYPE_F32, kH, kH * kD, kD, L * kH * kD};
         const posenc_rope_view qd = {out->data(), POSENC_DTYPE_F32, kH, kH * kD, kD, L * kH * kD};
         const posenc_rope_view kv = {out->data() + n * 4, POSENC_DTYPE_F32, kH, kH * kD, kD,
                                      L * kH * kD};
         const posenc_qk_norm norm = {w.data(), 1e-6f, 0};
         return posenc_rope_qknorm(plan, kD, 2, L, pos, 0, &qs, &qd, &norm, &kv, &kv, &norm, flags);
       }});
  forms.push_back({"posenc_rope_factors_compute", "posenc_rope_factors_compute", "positions", 1, 1,
                   [=](size_t L, const int32_t* pos, unsigned flags, Bytes* before, Bytes* out) {
                     const size_t bytes = posenc_rope_factors_bytes(kR, L, flags);
                     std::vector<float> storage(bytes / 4 + sizeof(posenc_rope_factors) / 4 + 1);
                     Bytes s = Sentinel(storage.size() * 4);
                     std::memcpy(storage.data(), s.data(), s.size());
                     // The struct written lies in the same bytes, after the rows.
                     posenc_rope_factors* f =
                         reinterpret_cast<posenc_rope_factors*>(storage.data() + bytes / 4);
                     *before = s;
                     const posenc_status st = posenc_rope_factors_compute(plan, L, pos, 0, flags,
                                                                          storage.data(), bytes, f);
                     *out = AsBytes(storage);
                     if (st == POSENC_OK) Canonical(*f, out->data() + bytes);
                     return st;
                   }});
  forms.push_back(
      {"posenc_mrope_factors_compute", "posenc_mrope_factors_compute", "positions", 3, 1,
       [=](size_t L, const int32_t* pos, unsigned flags, Bytes* before, Bytes* out) {
         static const size_t sections[3] = {16, 8, 8};
         const size_t bytes = posenc_rope_factors_bytes(kR, L, flags | POSENC_ROPE_GPTJ);
         std::vector<float> storage(bytes / 4 + sizeof(posenc_rope_factors) / 4 + 1);
         Bytes s = Sentinel(storage.size() * 4);
         std::memcpy(storage.data(), s.data(), s.size());
         posenc_rope_factors* f =
             reinterpret_cast<posenc_rope_factors*>(storage.data() + bytes / 4);
         *before = s;
         const posenc_status st = posenc_mrope_factors_compute(
             plan, sections, L, pos, flags | POSENC_ROPE_GPTJ, storage.data(), bytes, f);
         *out = AsBytes(storage);
         if (st == POSENC_OK) Canonical(*f, out->data() + bytes);
         return st;
       }});
  return forms;
}

class RopePositions64Test : public EveryIsaTest {
 protected:
  void SetUp() override {
    EveryIsaTest::SetUp();
    plan_ = MakePlan(kR, 10000.0, 1.0);
    plan2_ = MakePlan(kR, 500000.0, 1.0);
    ASSERT_NE(plan_, nullptr);
    ASSERT_NE(plan2_, nullptr);
  }
  PlanPtr plan_, plan2_;
};

// Few positions (the stack copy) and more than 64 (the heap copy): int64 is int32's result.
TEST_P(RopePositions64Test, Int64IsBitwiseInt32) {
  for (const Form& form : Forms(plan_.get(), plan2_.get()))
    for (size_t L : {size_t{1}, size_t{7}, size_t{64}, size_t{65}, size_t{1030}}) {
      const std::string what = form.name + " L=" + std::to_string(L);
      const Positions p = MakePositions(RangePositions(form.rows * form.n_batch * L, 31 + L));
      for (unsigned flags : {0u, unsigned{POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE}}) {
        if ((flags & POSENC_ROPE_INVERSE) && form.name.find("rerotate") != std::string::npos)
          flags = POSENC_ROPE_GPTJ;  // re-rotation refuses INVERSE
        Bytes before32, out32, before64, out64;
        ASSERT_EQ(form.run(L, p.Get(flags), flags, &before32, &out32), POSENC_OK) << what;
        ASSERT_EQ(form.run(L, p.Get(flags | kInt64), flags | kInt64, &before64, &out64), POSENC_OK)
            << what << ": " << posenc_last_error();
        EXPECT_NE(out32, before32) << what << ": nothing written";
        EXPECT_TRUE(out64 == out32) << what << " flags " << flags << ": int64 differs from int32";
      }
    }
}

// A value just outside int32 anywhere: refused, naming the argument and its index, nothing
// written.
TEST_P(RopePositions64Test, OutOfRangeIsRefusedAndWritesNothing) {
  for (const Form& form : Forms(plan_.get(), plan2_.get()))
    for (size_t L : {size_t{5}, size_t{1030}}) {
      const size_t n = form.rows * form.n_batch * L;
      const Positions p = MakePositions(RangePositions(n, 41 + L));
      for (size_t at : {size_t{0}, n / 2, n - 1})
        for (int64_t bad : {int64_t{INT32_MAX} + 1, int64_t{INT32_MIN} - 1, int64_t{1} << 40}) {
          const std::string what = form.name + " L=" + std::to_string(L) + " [" +
                                   std::to_string(at) + "] = " + std::to_string(bad);
          std::vector<int64_t> v = p.v64;
          v[at] = bad;
          Bytes before, out;
          PrimeLastError();
          EXPECT_EQ(form.run(L, reinterpret_cast<const int32_t*>(v.data()), kInt64, &before, &out),
                    POSENC_ERR_INVALID_ARGUMENT)
              << what;
          EXPECT_TRUE(out == before) << what << ": written";
          ExpectLastError(form.fn, form.arg, what);
          const std::string detail = posenc_last_error();
          EXPECT_NE(detail.find(std::string(form.arg) + "[" + std::to_string(at) + "]"),
                    std::string::npos)
              << what << ": " << detail;
          EXPECT_NE(detail.find(std::to_string(bad)), std::string::npos) << what << ": " << detail;
        }
    }
}

// NULL positions with the flag: the run from start_pos, as without it.
TEST_P(RopePositions64Test, NullPositionsTakeTheRun) {
  const size_t L = 9;
  std::vector<float> x = RandomFloats(L * kH * kD, 3, -2.0f, 2.0f), y = x;
  const posenc_rope_tensor qx = {x.data(), kH, kH * kD, kD}, qy = {y.data(), kH, kH * kD, kD};
  ASSERT_EQ(posenc_rope_f32(plan_.get(), kD, L, nullptr, 100, &qx, nullptr, 0), POSENC_OK);
  ASSERT_EQ(posenc_rope_f32(plan_.get(), kD, L, nullptr, 100, &qy, nullptr, kInt64), POSENC_OK);
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0);
  // The run's own limit still holds.
  PrimeLastError();
  EXPECT_EQ(posenc_rope_f32(plan_.get(), kD, L, nullptr, INT32_MAX - 2, &qy, nullptr, kInt64),
            POSENC_ERR_INVALID_ARGUMENT);
  ExpectLastError("posenc_rope_f32", "start_pos", "run past INT32_MAX");
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0);
  // Factors without positions.
  const size_t bytes = posenc_rope_factors_bytes(kR, L, 0);
  std::vector<float> a(bytes / 4), b(bytes / 4);
  posenc_rope_factors fa, fb;
  ASSERT_EQ(posenc_rope_factors_compute(plan_.get(), L, nullptr, -4, 0, a.data(), bytes, &fa),
            POSENC_OK);
  ASSERT_EQ(posenc_rope_factors_compute(plan_.get(), L, nullptr, -4, kInt64, b.data(), bytes, &fb),
            POSENC_OK);
  EXPECT_EQ(a, b);
  EXPECT_EQ(fa.flags, fb.flags);
}

// The flag's other bits still refused; the flag alone never reaches other rules (a refused
// call with int64 positions names what it refuses).
TEST_P(RopePositions64Test, OtherRulesStillApply) {
  const size_t L = 4;
  std::vector<int64_t> pos = {1, 2, 3, 4};
  std::vector<float> x = RandomFloats(L * kH * kD, 3, -2.0f, 2.0f);
  const std::vector<float> x0 = x;
  const posenc_rope_tensor q = {x.data(), kH, kH * kD, kD};
  const int32_t* p = reinterpret_cast<const int32_t*>(pos.data());
  PrimeLastError();
  EXPECT_EQ(posenc_rope_f32(plan_.get(), kD, L, p, 0, &q, nullptr, kInt64 | 1u << 20),
            POSENC_ERR_INVALID_ARGUMENT);
  ExpectLastError("posenc_rope_f32", "flags", "unknown bit");
  PrimeLastError();
  EXPECT_EQ(posenc_rope_f32(plan_.get(), kD, L, p, 0, &q, nullptr, kInt64 | POSENC_ROPE_MROPE_GGML),
            POSENC_ERR_INVALID_ARGUMENT);
  ExpectLastError("posenc_rope_f32", "flags", "M-RoPE flag on plain RoPE");
  PrimeLastError();
  EXPECT_EQ(posenc_rope_f32(plan_.get(), kR - 2, L, p, 0, &q, nullptr, kInt64),
            POSENC_ERR_INVALID_ARGUMENT);
  ExpectLastError("posenc_rope_f32", "head_dim", "head_dim < rotary_dim");
  EXPECT_EQ(std::memcmp(x.data(), x0.data(), x.size() * sizeof(float)), 0);
  // M-RoPE: NULL positions with tokens is refused with or without the flag.
  const size_t sections[3] = {16, 8, 8};
  PrimeLastError();
  EXPECT_EQ(posenc_mrope_f32(plan_.get(), sections, kD, L, nullptr, &q, nullptr, kInt64),
            POSENC_ERR_INVALID_ARGUMENT);
  ExpectLastError("posenc_mrope_f32", "positions", "NULL M-RoPE positions");
}

// bytes, apply and apply_slots: the flag is a no-op.
TEST_P(RopePositions64Test, FactorBytesAndApplyTakeTheFlagAsANoOp) {
  const size_t L = 6;
  for (unsigned flags : {0u, unsigned{POSENC_ROPE_GPTJ}}) {
    const size_t bytes = posenc_rope_factors_bytes(kR, L, flags);
    ASSERT_GT(bytes, 0u);
    EXPECT_EQ(posenc_rope_factors_bytes(kR, L, flags | kInt64), bytes);
    std::vector<float> storage(bytes / 4);
    posenc_rope_factors f;
    const std::vector<int32_t> pos = RangePositions(L, 5);
    ASSERT_EQ(posenc_rope_factors_compute(plan_.get(), L, pos.data(), 0, flags, storage.data(),
                                          bytes, &f),
              POSENC_OK);
    const std::vector<float> x = RandomFloats(L * kH * kD, 8, -2.0f, 2.0f);
    std::vector<float> a(x.size()), b(x.size());
    const posenc_rope_view sv = {
        const_cast<float*>(x.data()), POSENC_DTYPE_F32, kH, kH * kD, kD, 0};
    const posenc_rope_view av = {a.data(), POSENC_DTYPE_F32, kH, kH * kD, kD, 0};
    const posenc_rope_view bv = {b.data(), POSENC_DTYPE_F32, kH, kH * kD, kD, 0};
    ASSERT_EQ(posenc_rope_apply(&f, 0, 0, kD, 1, L, &sv, &av, flags), POSENC_OK);
    ASSERT_EQ(posenc_rope_apply(&f, 0, 0, kD, 1, L, &sv, &bv, flags | kInt64), POSENC_OK);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
    std::vector<int32_t> idx(L);
    for (size_t t = 0; t < L; ++t) idx[t] = static_cast<int32_t>(L - 1 - t);
    const posenc_slots slots = {idx.data(), 0, L};
    std::fill(a.begin(), a.end(), 0.0f);
    std::fill(b.begin(), b.end(), 0.0f);
    ASSERT_EQ(posenc_rope_apply_slots(&f, 0, kD, L, &sv, &av, &slots, flags), POSENC_OK);
    ASSERT_EQ(posenc_rope_apply_slots(&f, 0, kD, L, &sv, &bv, &slots, flags | kInt64), POSENC_OK);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  }
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopePositions64Test);

}  // namespace
}  // namespace posenc_test
