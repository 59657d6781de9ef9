// posenc_softmax's argument checks, part of softmax_test (softmax_test.cc says what each
// file covers): every documented error gives POSENC_ERR_INVALID_ARGUMENT, with a
// posenc_last_error() naming the argument, and writes nothing,
// for every pair of x and y types; the valid calls write; empty work is a no-op whose
// parameters are still checked; counts whose extent overflows are rejected before any read.
#include <posenc.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "softmax_harness.h"
#include "test_support.h"

namespace posenc_test::softmax {
namespace {

// ---------------------------------------------------------------------------- errors

// Everything posenc_softmax takes, with NULL-able params and views.
struct SoftmaxCall {
  posenc_softmax_params params;
  size_t n_heads, n_q, n_k;
  posenc_scores_view x, y;
  bool null_params = false, null_x = false, null_y = false;

  const char* Function() const { return "posenc_softmax"; }
  posenc_status Invoke() const {
    return posenc_softmax(null_params ? nullptr : &params, n_heads, n_q, n_k, null_x ? nullptr : &x,
                          null_y ? nullptr : &y);
  }
};

// One buffer holds x, y, the mask, slopes, sinks and positions, so that any write shows.
class SoftmaxArgumentsTest : public testing::TestWithParam<std::tuple<posenc_dtype, posenc_dtype>> {
 protected:
  static constexpr size_t kHeads = 3, kRows = 3, kKeys = 5, kRowStride = 6;
  static constexpr size_t kHeadStride = (kRows - 1) * kRowStride + kKeys;  // 17, the smallest
  static constexpr size_t kExtent = (kHeads - 1) * kHeadStride + (kRows - 1) * kRowStride + kKeys;
  // Float offsets of each array in the buffer.
  static constexpr size_t kX = 32, kY = 128, kMask = 224, kSlopes = 256, kSinks = 264, kKpos = 272,
                          kQpos = 280, kSize = 320;

  SoftmaxArgumentsTest() : buffer_(kSize) { Fill(); }

  posenc_dtype xt() const { return std::get<0>(GetParam()); }
  posenc_dtype yt() const { return std::get<1>(GetParam()); }
  char* Bytes(size_t float_offset) {
    return reinterpret_cast<char*>(buffer_.data() + float_offset);
  }
  // Element e of y (of y's type) and of x.
  char* YAt(size_t e) { return Bytes(kY) + e * ElemSize(yt()); }
  char* XAt(size_t e) { return Bytes(kX) + e * ElemSize(xt()); }

  void Fill() {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = 0.5f + static_cast<float>(i);
    for (size_t i = 0; i < 16; ++i) buffer_[kMask + i] = 0.0f;
    const float slopes[3] = {0.5f, 0.25f, -0.125f}, sinks[3] = {1.0f, 2.0f, -3.0f};
    const int32_t kpos[kKeys] = {0, 1, 2, 3, 4}, qpos[kRows] = {2, 3, 4};
    std::memcpy(Bytes(kSlopes), slopes, sizeof slopes);
    std::memcpy(Bytes(kSinks), sinks, sizeof sinks);
    std::memcpy(Bytes(kKpos), kpos, sizeof kpos);
    std::memcpy(Bytes(kQpos), qpos, sizeof qpos);
  }

  SoftmaxCall Valid() {
    SoftmaxCall c{};
    c.params = POSENC_SOFTMAX_PARAMS_INIT;
    c.params.scale = 0.5f;
    c.params.softcap = 30.0f;
    c.params.slopes = reinterpret_cast<const float*>(Bytes(kSlopes));
    c.params.sinks = reinterpret_cast<const float*>(Bytes(kSinks));
    c.params.mask = Bytes(kMask);
    c.params.mask_dtype = kF32;
    c.params.kpos = reinterpret_cast<const int32_t*>(Bytes(kKpos));
    c.params.qpos = reinterpret_cast<const int32_t*>(Bytes(kQpos));
    c.params.window = 3;
    c.params.flags = kCausal | kWindow | kSoftcap;
    c.n_heads = kHeads;
    c.n_q = kRows;
    c.n_k = kKeys;
    c.x = {Bytes(kX), xt(), kHeadStride, kRowStride, 0};
    c.y = {Bytes(kY), yt(), kHeadStride, kRowStride, 0};
    return c;
  }

  std::string Name() const { return std::string(TypeName(xt())) + "->" + TypeName(yt()) + ": "; }

  AlignedFloats buffer_;
};

TEST_P(SoftmaxArgumentsTest, TheValidCallsWrite) {
  std::vector<std::pair<const char*, std::function<void(SoftmaxCall&)>>> valid = {
      {"every option", [](SoftmaxCall&) {}},
      {"mask slope", [](SoftmaxCall& c) { c.params.flags = kMaskSlope | kSymmetric; }},
      {"f16 mask", [](SoftmaxCall& c) { c.params.mask_dtype = kF16; }},
      {"mask row stride n_k, per head",
       [](SoftmaxCall& c) {
         c.params.mask_row_stride = kKeys;
         c.params.mask_head_stride = 1;
       }},
      {"no qpos, q_offset at the int32 limit",
       [](SoftmaxCall& c) {
         c.params.qpos = nullptr;
         c.params.q_offset = INT32_MAX - static_cast<int32_t>(kRows) + 1;
       }},
      {"negative kpos the mask hides in every row (INT32_MIN too)",
       [this](SoftmaxCall& c) {
         int32_t* kpos = reinterpret_cast<int32_t*>(Bytes(kKpos));
         kpos[1] = -1;
         kpos[4] = INT32_MIN;
         c.params.mask_dtype = kF32;
         for (size_t i = 0; i < kRows; ++i)
           buffer_[kMask + i * kKeys + 1] = buffer_[kMask + i * kKeys + 4] = -kInf;
       }},
      {"negative kpos with POSENC_SOFTMAX_KPOS_NEG_HIDDEN, no mask",
       [this](SoftmaxCall& c) {
         int32_t* kpos = reinterpret_cast<int32_t*>(Bytes(kKpos));
         kpos[0] = -1;
         kpos[3] = INT32_MIN;
         c.params.mask = nullptr;
         c.params.flags |= POSENC_SOFTMAX_KPOS_NEG_HIDDEN;
       }},
      {"POSENC_SOFTMAX_KPOS_NEG_HIDDEN with every kpos negative",
       [this](SoftmaxCall& c) {
         for (size_t j = 0; j < kKeys; ++j)
           reinterpret_cast<int32_t*>(Bytes(kKpos))[j] = -1 - static_cast<int32_t>(j);
         c.params.flags |= POSENC_SOFTMAX_KPOS_NEG_HIDDEN;
       }},
      {"POSENC_SOFTMAX_KPOS_NEG_HIDDEN without kpos",
       [](SoftmaxCall& c) {
         c.params.kpos = nullptr;
         c.params.flags |= POSENC_SOFTMAX_KPOS_NEG_HIDDEN;
       }},
      {"mask and arrays right before and after y",
       [this](SoftmaxCall& c) {
         c.params.mask = YAt(kExtent);
         c.params.mask_dtype = kF16;
         std::memset(YAt(kExtent), 0, 32);
         c.params.slopes = reinterpret_cast<const float*>(Bytes(kY) - 12);
       }},
  };
  for (const auto& [what, change] : valid) {
    Fill();
    SoftmaxCall call = Valid();
    change(call);
    const AlignedFloats before = buffer_;
    EXPECT_EQ(call.Invoke(), POSENC_OK) << Name() << what;
    EXPECT_NE(FirstBitwiseDifference(before, buffer_), -1) << Name() << what;
  }
  // In place: x = y, same type and strides (row stride 0 for n_k in one of them).
  if (xt() == yt()) {
    Fill();
    SoftmaxCall call = Valid();
    call.x = call.y;
    call.x.row_stride = call.y.row_stride = kKeys;
    call.y.row_stride = 0;
    EXPECT_EQ(call.Invoke(), POSENC_OK) << Name() << "in place";
  }
}

TEST_P(SoftmaxArgumentsTest, InvalidCallsAreRejectedAndWriteNothing) {
  const size_t es = ElemSize(yt());
  // An array of n floats / int32 at byte `byte` of y's extent, holding valid values.
  const auto floats_in_y = [this](size_t byte, size_t n, float v) {
    float* p = reinterpret_cast<float*>(YAt(0) + byte);
    for (size_t k = 0; k < n; ++k) p[k] = v;
    return p;
  };
  const auto ints_in_y = [this](size_t byte, size_t n) {
    int32_t* p = reinterpret_cast<int32_t*>(YAt(0) + byte);
    for (size_t k = 0; k < n; ++k) p[k] = static_cast<int32_t>(k);
    return p;
  };
  const size_t last = (kExtent - 1) * es / 4 * 4;  // a float boundary at or before the last
  const size_t gap = kKeys * es / 4 * 4;           // over the gap after the first row
  const auto bad_slope = [this](float v) {
    return [this, v](SoftmaxCall&) { reinterpret_cast<float*>(Bytes(kSlopes))[2] = v; };
  };
  const auto bad_sink = [this](float v) {
    return [this, v](SoftmaxCall&) { reinterpret_cast<float*>(Bytes(kSinks))[1] = v; };
  };
  const auto no_qpos = [](int32_t q_offset) {
    return [q_offset](SoftmaxCall& c) {
      c.params.qpos = nullptr;
      c.params.q_offset = q_offset;
    };
  };
  const BadCalls<SoftmaxCall> invalid = {
      {"NULL params", "params", [](SoftmaxCall& c) { c.null_params = true; }},
      {"NULL x", "x", [](SoftmaxCall& c) { c.null_x = true; }},
      {"NULL y", "y", [](SoftmaxCall& c) { c.null_y = true; }},
      {"NULL x data", "x->data", [](SoftmaxCall& c) { c.x.data = nullptr; }},
      {"NULL y data", "y->data", [](SoftmaxCall& c) { c.y.data = nullptr; }},
      {"unknown x dtype", "x->dtype",
       [](SoftmaxCall& c) { c.x.dtype = static_cast<posenc_dtype>(3); }},
      {"unknown y dtype", "y->dtype",
       [](SoftmaxCall& c) { c.y.dtype = static_cast<posenc_dtype>(3); }},
      {"mask dtype bf16", "params->mask_dtype",
       [](SoftmaxCall& c) { c.params.mask_dtype = kBf16; }},
      {"unknown mask dtype", "params->mask_dtype",
       [](SoftmaxCall& c) { c.params.mask_dtype = static_cast<posenc_dtype>(3); }},
      {"unknown flag", "params->flags", [](SoftmaxCall& c) { c.params.flags |= 1u << 6; }},
      {"every flag bit", "params->flags", [](SoftmaxCall& c) { c.params.flags = ~0u; }},
      {"NaN scale", "params->scale", [](SoftmaxCall& c) { c.params.scale = NAN; }},
      {"+inf scale", "params->scale", [](SoftmaxCall& c) { c.params.scale = kInf; }},
      {"-inf scale", "params->scale", [](SoftmaxCall& c) { c.params.scale = -kInf; }},
      {"NaN slope", "params->slopes", bad_slope(NAN)},
      {"+inf slope", "params->slopes", bad_slope(kInf)},
      {"-inf slope", "params->slopes", bad_slope(-kInf)},
      {"NaN sink", "params->sinks", bad_sink(NAN)},
      {"+inf sink", "params->sinks", bad_sink(kInf)},
      {"-inf sink", "params->sinks", bad_sink(-kInf)},
      {"softcap 0", "params->softcap", [](SoftmaxCall& c) { c.params.softcap = 0.0f; }},
      {"softcap -0", "params->softcap", [](SoftmaxCall& c) { c.params.softcap = -0.0f; }},
      {"softcap -1", "params->softcap", [](SoftmaxCall& c) { c.params.softcap = -1.0f; }},
      {"softcap NaN", "params->softcap", [](SoftmaxCall& c) { c.params.softcap = NAN; }},
      {"softcap +inf", "params->softcap", [](SoftmaxCall& c) { c.params.softcap = kInf; }},
      {"window 0", "params->window", [](SoftmaxCall& c) { c.params.window = 0; }},
      {"window -1", "params->window", [](SoftmaxCall& c) { c.params.window = -1; }},
      {"window INT32_MIN", "params->window", [](SoftmaxCall& c) { c.params.window = INT32_MIN; }},
      {"MASK_SLOPE without a mask", "params->mask",
       [](SoftmaxCall& c) {
         c.params.flags |= kMaskSlope;
         c.params.mask = nullptr;
       }},
      {"MASK_SLOPE without slopes", "params->slopes",
       [](SoftmaxCall& c) {
         c.params.flags |= kMaskSlope;
         c.params.slopes = nullptr;
       }},
      {"mask row stride 1", "params->mask_row_stride",
       [](SoftmaxCall& c) { c.params.mask_row_stride = 1; }},
      {"mask row stride n_k - 1", "params->mask_row_stride",
       [](SoftmaxCall& c) { c.params.mask_row_stride = kKeys - 1; }},
      {"negative q_offset", "params->q_offset", no_qpos(-1)},
      {"q_offset INT32_MIN", "params->q_offset", no_qpos(INT32_MIN)},
      {"q_offset + n_q - 1 = INT32_MAX + 1", "params->q_offset",
       no_qpos(INT32_MAX - static_cast<int32_t>(kRows) + 2)},
      {"q_offset INT32_MAX", "params->q_offset", no_qpos(INT32_MAX)},
      {"a negative kpos", "params->kpos",
       [this](SoftmaxCall&) { reinterpret_cast<int32_t*>(Bytes(kKpos))[kKeys - 1] = -1; }},
      {"kpos INT32_MIN", "params->kpos",
       [this](SoftmaxCall&) { reinterpret_cast<int32_t*>(Bytes(kKpos))[0] = INT32_MIN; }},
      {"a negative kpos, no mask", "params->kpos",
       [this](SoftmaxCall& c) {
         reinterpret_cast<int32_t*>(Bytes(kKpos))[2] = -1;
         c.params.mask = nullptr;
       }},
      {"a negative kpos the mask hides in two of three rows", "params->kpos",
       [this](SoftmaxCall&) {
         reinterpret_cast<int32_t*>(Bytes(kKpos))[3] = -1;
         buffer_[kMask + 0 * kKeys + 3] = -kInf;
         buffer_[kMask + 2 * kKeys + 3] = -kInf;
       }},
      {"two negative kpos, the mask hides the first only", "params->kpos",
       [this](SoftmaxCall&) {
         reinterpret_cast<int32_t*>(Bytes(kKpos))[1] = -1;
         reinterpret_cast<int32_t*>(Bytes(kKpos))[4] = -7;
         for (size_t i = 0; i < kRows; ++i) buffer_[kMask + i * kKeys + 1] = -kInf;
       }},
      {"a negative kpos the per-head mask hides but in one head", "params->kpos",
       [this](SoftmaxCall& c) {
         // Head h's rows at kMask + h * 5 (rows kKeys apart): heads overlap, so the value
         // that matters is where head 2's row 2 reads key 4, left 0.
         reinterpret_cast<int32_t*>(Bytes(kKpos))[4] = -1;
         c.params.mask_head_stride = 1;
         for (size_t h = 0; h < kHeads; ++h)
           for (size_t i = 0; i < kRows; ++i)
             if (h * 1 + i * kKeys + 4 != 2 + 2 * kKeys + 4)
               buffer_[kMask + h + i * kKeys + 4] = -kInf;
       }},
      {"a negative kpos that causal would hide (d < 0: it does not)", "params->kpos",
       [this](SoftmaxCall& c) {
         reinterpret_cast<int32_t*>(Bytes(kKpos))[0] = -1;
         c.params.flags = kCausal;
       }},
      {"a negative qpos", "params->qpos",
       [this](SoftmaxCall&) { reinterpret_cast<int32_t*>(Bytes(kQpos))[1] = -1; }},
      {"n_k 2^31 + 1 without kpos", "n_k",
       [](SoftmaxCall& c) {
         c.params.kpos = nullptr;
         c.n_heads = c.n_q = 1;
         c.n_k = (size_t{1} << 31) + 1;
       }},
      {"y rows overlap", "y->row_stride", [](SoftmaxCall& c) { c.y.row_stride = kKeys - 1; }},
      {"y heads overlap", "y->head_stride",
       [](SoftmaxCall& c) { c.y.head_stride = kHeadStride - 1; }},
      {"y [q,H,k] with overlapping heads", "y",
       [](SoftmaxCall& c) {
         c.y.head_stride = kKeys;
         c.y.row_stride = kHeads * kKeys - 1;
       }},
      {"x rows overlap", "x->row_stride", [](SoftmaxCall& c) { c.x.row_stride = kKeys - 1; }},
      {"y extent overflows", "y", [](SoftmaxCall& c) { c.y.head_stride = SIZE_MAX / 2 + 1; }},
      {"x extent overflows", "x", [](SoftmaxCall& c) { c.x.head_stride = SIZE_MAX / 2 + 1; }},
      {"y extent beyond PTRDIFF_MAX bytes", "y",
       [](SoftmaxCall& c) {
         c.n_heads = 1;
         c.y.row_stride = SIZE_MAX / 8;
       }},
      {"n_heads SIZE_MAX", "x", [](SoftmaxCall& c) { c.n_heads = SIZE_MAX; }},
      {"y one element after x (same type)", "y",
       [this](SoftmaxCall& c) {
         c.y = c.x;
         c.y.dtype = xt();
         c.y.data = XAt(1);
       }},
      {"y on x with another type", "y",
       [&](SoftmaxCall& c) {
         c.y = c.x;
         c.y.dtype = xt() == kF32 ? kBf16 : kF32;
       }},
      {"y on x with another row stride", "y",
       [](SoftmaxCall& c) {
         c.y = c.x;
         c.y.row_stride = kRowStride + 1;
         c.y.head_stride = kHeadStride + 3;
       }},
      {"y on x with another head stride", "y",
       [](SoftmaxCall& c) {
         c.y = c.x;
         c.y.head_stride = kHeadStride + 1;
       }},
      {"x ending inside y", "y",
       [this](SoftmaxCall& c) { c.x.data = YAt(0) - 8 * ElemSize(xt()); }},
      {"x starting in y's last row", "y",
       [this, es](SoftmaxCall& c) { c.x.data = YAt(0) + (kExtent - 2) * es / 4 * 4; }},
      {"the mask at y", "params->mask",
       [&](SoftmaxCall& c) { c.params.mask = floats_in_y(0, 16, 0.0f); }},
      {"the mask in y's gap", "params->mask",
       [&](SoftmaxCall& c) { c.params.mask = floats_in_y(gap, 16, 0.0f); }},
      {"the mask's last element on y's first", "params->mask",
       [this](SoftmaxCall& c) { c.params.mask = YAt(0) - (kRows * kKeys - 1) * 4; }},
      {"the mask (per head) over y", "params->mask",
       [this](SoftmaxCall& c) {
         c.params.mask = Bytes(kY - 64);
         c.params.mask_head_stride = 40;
       }},
      {"slopes at y", "params->slopes",
       [&](SoftmaxCall& c) { c.params.slopes = floats_in_y(0, 3, 0.5f); }},
      {"slopes in y's gap", "params->slopes",
       [&](SoftmaxCall& c) { c.params.slopes = floats_in_y(gap, 1, 0.5f); }},
      {"slopes at y's last element", "params->slopes",
       [&](SoftmaxCall& c) { c.params.slopes = floats_in_y(last, 1, 0.5f); }},
      {"slopes overlapping y's first", "params->slopes",
       [this](SoftmaxCall& c) { c.params.slopes = reinterpret_cast<const float*>(YAt(0)) - 2; }},
      {"sinks at y", "params->sinks",
       [&](SoftmaxCall& c) { c.params.sinks = floats_in_y(0, 3, 1.0f); }},
      {"sinks at y's last element", "params->sinks",
       [&](SoftmaxCall& c) { c.params.sinks = floats_in_y(last, 1, 1.0f); }},
      {"kpos at y", "params->kpos", [&](SoftmaxCall& c) { c.params.kpos = ints_in_y(0, kKeys); }},
      {"kpos in y's gap", "params->kpos",
       [&](SoftmaxCall& c) { c.params.kpos = ints_in_y(gap, 1); }},
      {"qpos at y", "params->qpos", [&](SoftmaxCall& c) { c.params.qpos = ints_in_y(0, kRows); }},
      {"qpos at y's last element", "params->qpos",
       [&](SoftmaxCall& c) { c.params.qpos = ints_in_y(last, 1); }},
      {"x misaligned by one byte", "x->data",
       [](SoftmaxCall& c) { c.x.data = static_cast<char*>(c.x.data) + 1; }},
      {"y misaligned by one byte", "y->data",
       [](SoftmaxCall& c) { c.y.data = static_cast<char*>(c.y.data) + 1; }},
      {"mask misaligned by one byte", "params->mask",
       [](SoftmaxCall& c) { c.params.mask = static_cast<const char*>(c.params.mask) + 1; }},
      {"f32 mask misaligned by two bytes", "params->mask",
       [](SoftmaxCall& c) { c.params.mask = static_cast<const char*>(c.params.mask) + 2; }},
      {"slopes misaligned", "params->slopes",
       [](SoftmaxCall& c) {
         c.params.slopes =
             reinterpret_cast<const float*>(reinterpret_cast<const char*>(c.params.slopes) + 2);
       }},
      {"sinks misaligned", "params->sinks",
       [](SoftmaxCall& c) {
         c.params.sinks =
             reinterpret_cast<const float*>(reinterpret_cast<const char*>(c.params.sinks) + 1);
       }},
      {"kpos misaligned", "params->kpos",
       [](SoftmaxCall& c) {
         c.params.kpos =
             reinterpret_cast<const int32_t*>(reinterpret_cast<const char*>(c.params.kpos) + 2);
       }},
      {"qpos misaligned", "params->qpos",
       [](SoftmaxCall& c) {
         c.params.qpos =
             reinterpret_cast<const int32_t*>(reinterpret_cast<const char*>(c.params.qpos) + 2);
       }},
  };
  for (const BadCall<SoftmaxCall>& bad : invalid) {
    Fill();
    SoftmaxCall call = Valid();
    bad.change(call);
    ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_, Name() + bad.what,
                                   bad.argument);
  }
  for (const posenc_dtype t : {xt(), yt()})
    if (t == kF32) {
      Fill();
      SoftmaxCall call = Valid();
      (t == xt() ? call.x : call.y).data =
          static_cast<char*>((t == xt() ? call.x : call.y).data) + 2;
      ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_,
                                     Name() + "f32 data two bytes past alignment",
                                     t == xt() ? "x->data" : "y->data");
    }
}

// Any count 0 is a no-op that reads and writes nothing (NULL data and arrays are fine);
// the flags and the values that need no array are still checked.
TEST_P(SoftmaxArgumentsTest, EmptyWorkIsANoOpButParametersAreChecked) {
  const auto empty = [](size_t heads, size_t n_q, size_t n_k) {
    return [heads, n_q, n_k](SoftmaxCall& c) {
      c.n_heads = heads;
      c.n_q = n_q;
      c.n_k = n_k;
      c.x.data = c.y.data = nullptr;
      c.params.mask = nullptr;
      c.params.slopes = c.params.sinks = nullptr;
      c.params.kpos = c.params.qpos = nullptr;
    };
  };
  const CallChanges<SoftmaxCall> no_ops = {
      {"n_heads 0", empty(0, kRows, kKeys)},
      {"n_q 0", empty(kHeads, 0, kKeys)},
      {"n_k 0", empty(kHeads, kRows, 0)},
      {"every count 0", empty(0, 0, 0)},
      {"n_k 0 with the arrays", [](SoftmaxCall& c) { c.n_k = 0; }},
  };
  Fill();
  ExpectChangedCallsReturnAndWriteNothing(Valid(), no_ops, POSENC_OK, buffer_, Name());
  const BadCalls<SoftmaxCall> still_checked = {
      {"unknown flag", "params->flags", [](SoftmaxCall& c) { c.params.flags |= 1u << 7; }},
      {"NaN scale", "params->scale", [](SoftmaxCall& c) { c.params.scale = NAN; }},
      {"softcap 0", "params->softcap", [](SoftmaxCall& c) { c.params.softcap = 0; }},
      {"window 0", "params->window", [](SoftmaxCall& c) { c.params.window = 0; }},
      {"negative q_offset", "params->q_offset", [](SoftmaxCall& c) { c.params.q_offset = -5; }},
      {"unknown y dtype", "y->dtype",
       [](SoftmaxCall& c) { c.y.dtype = static_cast<posenc_dtype>(3); }},
      {"MASK_SLOPE without a mask", "params->mask",
       [](SoftmaxCall& c) { c.params.flags |= kMaskSlope; }},
  };
  for (const BadCall<SoftmaxCall>& bad : still_checked) {
    SoftmaxCall call = Valid();
    empty(0, kRows, kKeys)(call);
    bad.change(call);
    ExpectStatusAndBufferUnchanged(call, POSENC_ERR_INVALID_ARGUMENT, buffer_,
                                   Name() + "n_heads 0, " + bad.what, bad.argument);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, SoftmaxArgumentsTest,
    testing::Combine(testing::ValuesIn(kTypes), testing::ValuesIn(kTypes)),
    [](const testing::TestParamInfo<std::tuple<posenc_dtype, posenc_dtype>>& info) {
      return std::string(TypeName(std::get<0>(info.param))) + "_to_" +
             TypeName(std::get<1>(info.param));
    });

// Counts whose extent overflows, with x, y and every array on an inaccessible page: rejected
// before anything is read (a read kills the child process).
[[noreturn]] void RunHugeCountsOnGuardPages() {
  GuardedPages pages(16);
  if (!pages.ok()) std::exit(1);
  float* inaccessible = pages.AtStart() - 16;
  const size_t kHuge = SIZE_MAX / 4;
  const struct {
    size_t heads, n_q, n_k;
  } counts[] = {{kHuge, 2, 8}, {2, kHuge, 8}, {1, 1, kHuge}, {kHuge, kHuge, kHuge}};
  posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
  p.slopes = p.sinks = inaccessible;
  p.kpos = p.qpos = reinterpret_cast<const int32_t*>(inaccessible);
  p.mask = inaccessible;
  p.flags = kCausal;
  for (const auto& c : counts) {
    const posenc_scores_view x = {inaccessible, kF32, c.n_q * 8, 8, 0};
    const posenc_scores_view y = {inaccessible + 8, kBf16, c.n_q * 8, 8, 0};
    if (posenc_softmax(&p, c.heads, c.n_q, c.n_k, &x, &y) != POSENC_ERR_INVALID_ARGUMENT)
      std::exit(2);
  }
  std::exit(0);
}

TEST(SoftmaxHugeCountsTest, RejectedBeforeAnyRead) {
  ExpectNoAccessNextToGuardPages([] { RunHugeCountsOnGuardPages(); }, posenc_active_isa(),
                                 "the arrays of a huge call");
}

}  // namespace
}  // namespace posenc_test::softmax
