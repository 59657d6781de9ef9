// posenc_rope_rerotate_f32, _bf16 and _f16: every argument error of the header gives
// POSENC_ERR_INVALID_ARGUMENT, with a posenc_last_error() naming the function and the
// argument, and writes nothing; the valid edges of those checks are
// accepted (and rotate something); empty work is a no-op. Part of rope_rerotate_test (the
// numerics are in rope_rerotate_test.cc).
#include <posenc.h>

#include <cfloat>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "test_support.h"

namespace posenc_test {
namespace {

using RerotateFn = posenc_status (*)(const posenc_rope_plan*, const int32_t*, int32_t,
                                     const posenc_rope_plan*, const int32_t*, int32_t, size_t,
                                     size_t, const posenc_rope_tensor*, unsigned);

constexpr size_t kRotaryDim = 8;
constexpr size_t kHeadDim = 8;
constexpr size_t kTokens = 3;

struct RerotateStorage {
  const char* name;
  RerotateFn fn;
  size_t elem;
  const char* function;
};
// GoogleTest prints a parameter; without this it dumps the struct's bytes.
void PrintTo(const RerotateStorage& storage, std::ostream* os) { *os << storage.name; }

const RerotateStorage kRerotateStorages[] = {
    {"f32", posenc_rope_rerotate_f32, sizeof(float), "posenc_rope_rerotate_f32"},
    {"bf16", posenc_rope_rerotate_bf16, sizeof(uint16_t), "posenc_rope_rerotate_bf16"},
    {"f16", posenc_rope_rerotate_f16, sizeof(uint16_t), "posenc_rope_rerotate_f16"}};

// Everything posenc_rope_rerotate_<type> takes; NULL keys when has_keys is false.
struct RerotateCall {
  RerotateStorage storage;
  const posenc_rope_plan* from;
  const int32_t* from_positions;
  int32_t from_start;
  const posenc_rope_plan* to;
  const int32_t* to_positions;
  int32_t to_start;
  size_t head_dim;
  size_t n_tokens;
  posenc_rope_tensor keys;
  bool has_keys;
  unsigned flags;

  const char* Function() const { return storage.function; }
  posenc_status Invoke() const {
    return storage.fn(from, from_positions, from_start, to, to_positions, to_start, head_dim,
                      n_tokens, has_keys ? &keys : nullptr, flags);
  }
  void* At(void* p, ptrdiff_t n) const {
    return static_cast<char*>(p) + n * static_cast<ptrdiff_t>(storage.elem);
  }
};

PlanPtr PlanWithAtt(size_t r, double att) { return MakePlan(r, 10000.0, att); }

class RerotateArgumentsTest : public testing::TestWithParam<RerotateStorage> {
 protected:
  // Keys: [3 tokens, 2 heads, 8] at element 16 of a buffer of 128 floats (or the same bytes
  // as 16-bit elements).
  RerotateArgumentsTest()
      : from_(PlanWithAtt(kRotaryDim, 1.0)),
        to_(MakePlan(kRotaryDim, 500000.0, 1.0)),
        narrow_(PlanWithAtt(kRotaryDim - 2, 1.0)),
        tiny_(PlanWithAtt(kRotaryDim, 1e-30)),
        huge_(PlanWithAtt(kRotaryDim, 1e30)),
        half_min_(PlanWithAtt(kRotaryDim, FLT_MIN / 2)),
        min_(PlanWithAtt(kRotaryDim, FLT_MIN)),
        max_(PlanWithAtt(kRotaryDim, FLT_MAX)),
        half_(PlanWithAtt(kRotaryDim, 0.5)),
        buffer_(128) {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = 0.5f + static_cast<float>(i);
  }

  void* keys_data() {
    return static_cast<char*>(static_cast<void*>(buffer_.data())) + 16 * GetParam().elem;
  }

  RerotateCall ValidCall() {
    return RerotateCall{GetParam(),
                        from_.get(),
                        from_positions_,
                        0,
                        to_.get(),
                        to_positions_,
                        0,
                        kHeadDim,
                        kTokens,
                        {keys_data(), 2, 2 * kHeadDim, kHeadDim},
                        true,
                        POSENC_ROPE_NEOX};
  }

  PlanPtr from_, to_, narrow_, tiny_, huge_, half_min_, min_, max_, half_;
  AlignedFloats buffer_;
  const int32_t from_positions_[kTokens] = {3, -1, 70000};
  const int32_t to_positions_[kTokens] = {1, 5, 0};
};

TEST_P(RerotateArgumentsTest, BaselineCallIsValidAndRotates) {
  const AlignedFloats before = buffer_;
  ASSERT_EQ(ValidCall().Invoke(), POSENC_OK);
  EXPECT_NE(FirstBitwiseDifference(before, buffer_), -1);
}

TEST_P(RerotateArgumentsTest, InvalidCallsAreRejectedAndWriteNothing) {
  const size_t kHuge = SIZE_MAX / 2 + 1;
  const BadCalls<RerotateCall> invalid = {
      {"NULL from plan", "from", [](RerotateCall& c) { c.from = nullptr; }},
      {"NULL to plan", "to", [](RerotateCall& c) { c.to = nullptr; }},
      {"NULL keys", "keys", [](RerotateCall& c) { c.has_keys = false; }},
      {"NULL keys data", "keys->data", [](RerotateCall& c) { c.keys.data = nullptr; }},
      {"rotary_dim of from < to's", "to", [this](RerotateCall& c) { c.from = narrow_.get(); }},
      {"rotary_dim of to < from's", "to", [this](RerotateCall& c) { c.to = narrow_.get(); }},
      {"r = 1e60 > FLT_MAX", "to",
       [this](RerotateCall& c) {
         c.from = tiny_.get();
         c.to = huge_.get();
       }},
      {"r = 1e-60 < FLT_MIN", "to",
       [this](RerotateCall& c) {
         c.from = huge_.get();
         c.to = tiny_.get();
       }},
      {"r = FLT_MIN / 2", "to", [this](RerotateCall& c) { c.to = half_min_.get(); }},
      {"r = 2 * FLT_MAX", "to",
       [this](RerotateCall& c) {
         c.from = half_.get();
         c.to = max_.get();
       }},
      {"POSENC_ROPE_INVERSE", "flags", [](RerotateCall& c) { c.flags |= POSENC_ROPE_INVERSE; }},
      {"POSENC_ROPE_MROPE_INTERLEAVED", "flags",
       [](RerotateCall& c) { c.flags |= POSENC_ROPE_MROPE_INTERLEAVED; }},
      {"unknown flag bit 5", "flags", [](RerotateCall& c) { c.flags |= 32u; }},
      {"unknown flag bit 31", "flags", [](RerotateCall& c) { c.flags |= 1u << 31; }},
      {"from run passes INT32_MAX", "from_start",
       [](RerotateCall& c) {
         c.from_positions = nullptr;
         c.from_start = INT32_MAX - 1;
       }},
      {"to run passes INT32_MAX", "to_start",
       [](RerotateCall& c) {
         c.to_positions = nullptr;
         c.to_start = INT32_MAX - 1;
       }},
      {"to run from INT32_MAX, 3 tokens", "to_start",
       [](RerotateCall& c) {
         c.to_positions = nullptr;
         c.to_start = INT32_MAX;
       }},
      {"head_dim < rotary_dim", "head_dim", [](RerotateCall& c) { c.head_dim = kRotaryDim - 2; }},
      {"head_dim 0", "head_dim", [](RerotateCall& c) { c.head_dim = 0; }},
      {"head_stride < head_dim, 2 heads", "keys->head_stride",
       [](RerotateCall& c) { c.keys.head_stride = 7; }},
      {"head_stride 0, 2 heads", "keys->head_stride",
       [](RerotateCall& c) { c.keys.head_stride = 0; }},
      {"token_stride == head_stride", "keys",
       [](RerotateCall& c) { c.keys.token_stride = c.keys.head_stride; }},
      {"tokens overlap the previous token's heads", "keys->token_stride",
       [](RerotateCall& c) { c.keys.token_stride = 2 * kHeadDim - 1; }},
      {"[H,L,D] heads overlap tokens", "keys->head_stride",
       [](RerotateCall& c) {
         c.keys.token_stride = kHeadDim;
         c.keys.head_stride = 2 * kHeadDim;  // needs 3 * D
       }},
      {"token extent overflows size_t", "keys",
       [=](RerotateCall& c) { c.keys.token_stride = kHuge; }},
      {"head extent beyond PTRDIFF_MAX", "keys",
       [=](RerotateCall& c) { c.keys.head_stride = kHuge; }},
      {"extent in bytes overflows ptrdiff_t", "keys",
       [](RerotateCall& c) { c.keys.token_stride = PTRDIFF_MAX / (2 * c.storage.elem); }},
      {"keys data not element-aligned", "keys->data",
       [](RerotateCall& c) { c.keys.data = static_cast<char*>(c.keys.data) + 1; }},
  };
  for (unsigned flags : {0u, 1u, 4u, 5u}) {
    RerotateCall valid = ValidCall();
    valid.flags = flags;
    ExpectBadCallsRejected(valid, invalid, POSENC_ERR_INVALID_ARGUMENT, buffer_,
                           "flags=" + std::to_string(flags) + ": ");
  }
}

TEST_P(RerotateArgumentsTest, EmptyWorkIsAValidNoOp) {
  const CallChanges<RerotateCall> no_ops = {
      {"n_tokens 0, NULL data",
       [](RerotateCall& c) {
         c.n_tokens = 0;
         c.keys.data = nullptr;
       }},
      {"n_tokens 0, runs from INT32_MAX",
       [](RerotateCall& c) {
         c.n_tokens = 0;
         c.from_positions = c.to_positions = nullptr;
         c.from_start = c.to_start = INT32_MAX;
       }},
      {"n_heads 0, NULL data",
       [](RerotateCall& c) {
         c.keys = {nullptr, 0, 0, 0};
       }},
  };
  ExpectChangedCallsReturnAndWriteNothing(ValidCall(), no_ops, POSENC_OK, buffer_);
}

// Valid edges of the checks: they are accepted (and rotate something).
TEST_P(RerotateArgumentsTest, ValidEdgesAreAccepted) {
  const CallChanges<RerotateCall> valid = {
      {"runs ending at INT32_MAX",
       [](RerotateCall& c) {
         c.from_positions = c.to_positions = nullptr;
         c.from_start = c.to_start = INT32_MAX - 2;
       }},
      {"runs from -INT32_MAX",
       [](RerotateCall& c) {
         c.from_positions = c.to_positions = nullptr;
         c.from_start = -INT32_MAX;
         c.to_start = INT32_MIN;
       }},
      {"starts ignored with positions",
       [](RerotateCall& c) { c.from_start = c.to_start = INT32_MAX; }},
      {"r = FLT_MIN", [this](RerotateCall& c) { c.to = min_.get(); }},
      {"r = FLT_MAX", [this](RerotateCall& c) { c.to = max_.get(); }},
      {"from == to", [](RerotateCall& c) { c.to = c.from; }},
      {"GPTJ | F32_ANGLES",
       [](RerotateCall& c) { c.flags = POSENC_ROPE_GPTJ | POSENC_ROPE_F32_ANGLES; }},
      {"head_dim > rotary_dim, odd",
       [](RerotateCall& c) {
         c.head_dim = kHeadDim + 1;
         c.keys.head_stride = c.head_dim;
         c.keys.token_stride = 2 * c.head_dim;
       }},
      {"[H,L,D]",
       [](RerotateCall& c) {
         c.keys.token_stride = kHeadDim;
         c.keys.head_stride = kTokens * kHeadDim;
       }},
  };
  for (const auto& [what, change] : valid) {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = 0.5f + static_cast<float>(i);
    const AlignedFloats before = buffer_;
    RerotateCall call = ValidCall();
    change(call);
    EXPECT_EQ(call.Invoke(), POSENC_OK) << what;
    EXPECT_NE(FirstBitwiseDifference(before, buffer_), -1) << what << ": nothing rotated";
  }
}

INSTANTIATE_TEST_SUITE_P(Storage, RerotateArgumentsTest, testing::ValuesIn(kRerotateStorages),
                         [](const testing::TestParamInfo<RerotateStorage>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace posenc_test
