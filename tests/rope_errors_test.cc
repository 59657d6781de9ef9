// posenc_rope_f32, _bf16 and _f16 argument checks (one table, run for each storage type):
// every invalid call returns POSENC_ERR_INVALID_ARGUMENT, with a posenc_last_error() that
// names the function and the argument, and leaves every buffer bit for bit untouched; valid no-ops
// and unusual valid layouts are accepted. Runs with the active ISA (ctest runs it once per ISA).
#include <posenc.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "test_support.h"

namespace posenc_test {
namespace {

constexpr size_t kRotaryDim = 8;
constexpr size_t kHeadDim = 8;
constexpr size_t kTokens = 3;

// The entry point of one storage type, its name and its element size.
struct RopeStorage {
  const char* name;
  posenc_status (*rotate)(const posenc_rope_plan*, size_t, size_t, const int32_t*, int32_t,
                          const posenc_rope_tensor*, const posenc_rope_tensor*, unsigned);
  size_t elem;
  const char* function;
};
// GoogleTest prints a parameter; without this it dumps the struct's bytes through
// libstdc++'s numeric output (uninstrumented, so MSan reports it).
void PrintTo(const RopeStorage& storage, std::ostream* os) { *os << storage.name; }

const RopeStorage kStorages[] = {{"f32", posenc_rope_f32, sizeof(float), "posenc_rope_f32"},
                                 {"bf16", posenc_rope_bf16, sizeof(uint16_t), "posenc_rope_bf16"},
                                 {"f16", posenc_rope_f16, sizeof(uint16_t), "posenc_rope_f16"}};

// Everything posenc_rope_<type> takes; null q or k when has_q / has_k is false.
struct RopeCall {
  RopeStorage storage;
  const posenc_rope_plan* plan;
  size_t head_dim;
  size_t n_tokens;
  const int32_t* positions;
  int32_t start_pos;
  posenc_rope_tensor q;
  posenc_rope_tensor k;
  bool has_q;
  bool has_k;
  unsigned flags;

  const char* Function() const { return storage.function; }
  posenc_status Invoke() const {
    return storage.rotate(plan, head_dim, n_tokens, positions, start_pos, has_q ? &q : nullptr,
                          has_k ? &k : nullptr, flags);
  }
  // n elements of the call's type after p.
  void* At(void* p, ptrdiff_t n) const {
    return static_cast<char*>(p) + n * static_cast<ptrdiff_t>(storage.elem);
  }
};

class RopeArgumentsTest : public testing::TestWithParam<RopeStorage> {
 protected:
  // Q: [3 tokens, 2 heads, 8] at element 16 of the buffer; K: [3 tokens, 1 head, 8] right
  // after it. The buffer holds 128 floats, or the same bytes as 16-bit elements.
  RopeArgumentsTest() : plan_(MakePlan(kRotaryDim, 10000.0, 1.0)), buffer_(128) {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = 0.5f + static_cast<float>(i);
  }

  void* q_data() { return static_cast<char*>(static_cast<void*>(buffer_.data())) + 16 * elem(); }
  void* k_data() { return static_cast<char*>(q_data()) + kTokens * 2 * kHeadDim * elem(); }
  size_t elem() const { return GetParam().elem; }

  RopeCall ValidCall() {
    return RopeCall{GetParam(),
                    plan_.get(),
                    kHeadDim,
                    kTokens,
                    positions_,
                    0,
                    {q_data(), 2, 2 * kHeadDim, kHeadDim},
                    {k_data(), 1, kHeadDim, kHeadDim},
                    true,
                    true,
                    POSENC_ROPE_NEOX};
  }

  // The call is refused, with a detail naming `argument`, and no element of the buffer
  // changed.
  void ExpectRejected(const RopeCall& call, const std::string& what, const char* argument) {
    ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_, what, argument);
  }

  PlanPtr plan_;
  AlignedFloats buffer_;
  const int32_t positions_[kTokens] = {3, -1, 70000};
};

TEST_P(RopeArgumentsTest, BaselineCallIsValidAndRotates) {
  const AlignedFloats before = buffer_;
  ASSERT_EQ(ValidCall().Invoke(), POSENC_OK);
  EXPECT_NE(FirstBitwiseDifference(before, buffer_), -1);
}

struct InvalidCase {
  const char* what;
  const char* argument;  // the argument posenc_last_error() names
  std::function<void(RopeCall&)> mutate;
};

std::vector<InvalidCase> InvalidCases() {
  const size_t kHuge = SIZE_MAX / 2 + 1;
  return {
      {"NULL plan", "plan", [](RopeCall& c) { c.plan = nullptr; }},
      {"NULL q", "q", [](RopeCall& c) { c.has_q = false; }},
      {"NULL q data", "q->data", [](RopeCall& c) { c.q.data = nullptr; }},
      {"NULL k data", "k->data", [](RopeCall& c) { c.k.data = nullptr; }},
      {"unknown flag bit 8", "flags", [](RopeCall& c) { c.flags |= 8u; }},
      {"unknown flag bit 31", "flags", [](RopeCall& c) { c.flags |= 1u << 31; }},
      {"head_dim < rotary_dim", "head_dim", [](RopeCall& c) { c.head_dim = kRotaryDim - 2; }},
      {"head_dim 0", "head_dim", [](RopeCall& c) { c.head_dim = 0; }},
      {"head_stride < head_dim, 2 heads", "q->head_stride",
       [](RopeCall& c) { c.q.head_stride = 7; }},
      {"head_stride 0, 2 heads", "q->head_stride", [](RopeCall& c) { c.q.head_stride = 0; }},
      {"token_stride == head_stride, both counts > 1", "q",
       [](RopeCall& c) { c.q.token_stride = c.q.head_stride; }},
      {"token_stride < head_dim, 1 head", "k->token_stride",
       [](RopeCall& c) { c.k.token_stride = kHeadDim - 1; }},
      {"token_stride 0, 3 tokens", "k->token_stride", [](RopeCall& c) { c.k.token_stride = 0; }},
      {"tokens overlap the heads of the previous token", "q->token_stride",
       [](RopeCall& c) { c.q.token_stride = 2 * kHeadDim - 1; }},
      {"[H,L,D] heads overlap tokens", "q->head_stride",
       [](RopeCall& c) {
         c.q.token_stride = kHeadDim;
         c.q.head_stride = 2 * kHeadDim;  // needs 3 * D
       }},
      {"K is the Q buffer", "k", [](RopeCall& c) { c.k.data = c.q.data; }},
      {"K overlaps Q's last head", "k",
       [](RopeCall& c) { c.k.data = c.At(c.q.data, 5 * kHeadDim - 3); }},
      {"K heads interleave Q's elements", "k",
       [](RopeCall& c) {
         c.k.data = c.At(c.q.data, 4);
         c.k.token_stride = c.q.token_stride;
       }},
      {"start_pos + n_tokens - 1 > INT32_MAX", "start_pos",
       [](RopeCall& c) {
         c.positions = nullptr;
         c.start_pos = INT32_MAX - 1;
       }},
      {"start_pos INT32_MAX, 3 tokens", "start_pos",
       [](RopeCall& c) {
         c.positions = nullptr;
         c.start_pos = INT32_MAX;
       }},
      {"token extent overflows size_t", "q", [=](RopeCall& c) { c.q.token_stride = kHuge; }},
      {"(L-1)*token_stride + D overflows size_t", "q",
       [](RopeCall& c) { c.q.token_stride = SIZE_MAX / 2; }},
      {"head extent overflows size_t", "q",
       [=](RopeCall& c) {
         c.q.n_heads = 3;
         c.q.head_stride = kHuge;
       }},
      {"head extent beyond PTRDIFF_MAX", "q", [=](RopeCall& c) { c.q.head_stride = kHuge; }},
      {"token + head extents overflow size_t", "q",
       [](RopeCall& c) {
         c.q.token_stride = SIZE_MAX / 3;
         c.q.head_stride = SIZE_MAX / 3;
       }},
      {"extent in bytes overflows ptrdiff_t", "k",
       [](RopeCall& c) { c.k.token_stride = PTRDIFF_MAX / (2 * c.storage.elem); }},
      {"K head extent overflows, 1 token", "k",
       [](RopeCall& c) {
         c.n_tokens = 1;
         c.k.n_heads = 3;
         c.k.head_stride = SIZE_MAX / 2;
       }},
      {"q data not element-aligned", "q->data",
       [](RopeCall& c) { c.q.data = static_cast<char*>(c.q.data) + 1; }},
      {"k data not element-aligned", "k->data",
       [](RopeCall& c) { c.k.data = static_cast<char*>(c.k.data) + c.storage.elem / 2; }},
  };
}

// Every invalid call, in every mode (pair layout, direction, angle mode).
TEST_P(RopeArgumentsTest, InvalidCallsAreRejectedAndWriteNothing) {
  for (unsigned flags : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u}) {
    for (const InvalidCase& bad : InvalidCases()) {
      RopeCall call = ValidCall();
      call.flags = flags;
      bad.mutate(call);
      ExpectRejected(call, std::string(bad.what) + " flags=" + std::to_string(flags), bad.argument);
    }
  }
}

TEST_P(RopeArgumentsTest, EmptyWorkIsAValidNoOp) {
  const CallChanges<RopeCall> no_ops = {
      {"n_tokens 0, NULL data",
       [](RopeCall& c) {
         c.n_tokens = 0;
         c.q.data = c.k.data = nullptr;
       }},
      {"n_tokens 0, start_pos INT32_MAX, no positions",
       [](RopeCall& c) {
         c.n_tokens = 0;
         c.positions = nullptr;
         c.start_pos = INT32_MAX;
       }},
      {"n_heads 0, NULL data, no K",
       [](RopeCall& c) {
         c.q = {nullptr, 0, 0, 0};
         c.has_k = false;
       }},
      {"n_heads 0 in q and k, NULL data",
       [](RopeCall& c) {
         c.q = c.k = {nullptr, 0, 0, 0};
       }},
  };
  ExpectChangedCallsReturnAndWriteNothing(ValidCall(), no_ops, POSENC_OK, buffer_);
}

TEST_P(RopeArgumentsTest, ValidUnusualCallsAreAccepted) {
  const CallChanges<RopeCall> valid = {
      {"packed QKV rows: K heads after Q heads in the same rows",
       [this](RopeCall& c) {
         const size_t row = (2 + 2 * 1) * kHeadDim;  // Hq = 2, Hk = 1
         c.q = {q_data(), 2, row, kHeadDim};
         c.k = {c.At(q_data(), 2 * kHeadDim), 1, row, kHeadDim};
       }},
      {"K rows before Q rows in shared packed rows",
       [this](RopeCall& c) {
         const size_t row = 4 * kHeadDim;
         c.k = {q_data(), 1, row, kHeadDim};
         c.q = {c.At(q_data(), kHeadDim), 2, row, kHeadDim};
       }},
      {"[H,L,D] layout",
       [](RopeCall& c) {
         c.q.token_stride = kHeadDim;
         c.q.head_stride = kTokens * kHeadDim;
       }},
      {"Q without K", [](RopeCall& c) { c.has_k = false; }},
      {"K without heads",
       [](RopeCall& c) {
         c.k = {nullptr, 0, 0, 0};
       }},
      {"start_pos + n_tokens - 1 == INT32_MAX",
       [](RopeCall& c) {
         c.positions = nullptr;
         c.start_pos = INT32_MAX - 2;
       }},
      {"start_pos ignored when positions are given", [](RopeCall& c) { c.start_pos = INT32_MAX; }},
      {"negative start_pos",
       [](RopeCall& c) {
         c.positions = nullptr;
         c.start_pos = INT32_MIN + 1;
       }},
      {"head_dim > rotary_dim with an odd head_dim",
       [](RopeCall& c) {
         c.head_dim = kHeadDim + 1;
         c.q.head_stride = c.head_dim;
         c.q.token_stride = 2 * c.head_dim;
         c.k.data = c.At(c.q.data, static_cast<ptrdiff_t>(kTokens * c.q.token_stride));
         c.k.head_stride = c.k.token_stride = c.head_dim;
       }},
      {"one token, head_stride < head_dim with one head",
       [](RopeCall& c) {
         c.n_tokens = 1;
         c.k.head_stride = 1;
       }},
  };
  ExpectChangedCallsReturn(ValidCall(), valid, POSENC_OK);
}

INSTANTIATE_TEST_SUITE_P(Storage, RopeArgumentsTest, testing::ValuesIn(kStorages),
                         [](const testing::TestParamInfo<RopeStorage>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace posenc_test
