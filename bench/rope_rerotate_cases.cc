// Re-rotation rows: a K cache [L, 8, 128] (Llama-3-8B's K heads, layout [L, H, D]) moved in
// place from (plan A, positions p) to (plan B, positions p'), in two ways (the shape's last
// two arguments):
//   shift:1024/longrope:0  a context shift (StreamingLLM, llama.cpp's K-shift): one plan
//                          (base 10000), p = 2048 + t to p' = p - 1024;
//   shift:0/longrope:1     new frequencies for the same positions p = p' = t: a LongRoPE
//                          model's short factors to its long ones, as when the sequence passes
//                          original_max_position_embeddings (4096; Phi-3-like factors).
// Kernels:
//   rope_rerotate_f32, rope_rerotate_bf16: posenc_rope_rerotate_* (one pass over the keys);
//   rope_rerotate_two_pass_f32: what a caller does without it: posenc_rope_f32 with
//     POSENC_ROPE_INVERSE under A (a plan of A's frequencies and attention factor 1 / att_A,
//     so that it undoes A's scaling too), then posenc_rope_f32 forward under B.
// naive: the plain loop of the rope rows with its tables given for free: one pass with the
// table of the angle differences (scaled by att_B / att_A), or, for the two-pass rows, A's
// inverse table then B's.
// Bytes: the keys read and written once, 2n for their n bytes (also for the two-pass rows,
// which stream them twice), compared with limit_rmw/bytes:n, so that bytes/s ratios between
// rows of one shape are time ratios.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_buffer.h"
#include "bench_rows.h"
#include "posenc.h"
#include "rope_common.h"
#include "rope_naive.h"

namespace posenc_bench {
namespace {

using rope::ElementBytes;
using rope::RandomElements;
using rope::Storage;

constexpr size_t kHeads = 8, kDim = 128;  // rotary_dim = head_dim
constexpr double kBase = 10000.0;
constexpr int32_t kShiftBy = 1024;     // tokens discarded by the context shift
constexpr int32_t kShiftFirst = 2048;  // the first kept token's position before the shift
constexpr size_t kOriginalMax = 4096;  // LongRoPE's original_max_position_embeddings
constexpr size_t kMaxPositions = 131072;

struct RerotateKernel {
  const char* name;
  Storage storage;
  bool two_pass;
  naive_rope_fn naive;      // f32
  naive_rope16_fn naive16;  // bf16
};

const RerotateKernel kKernels[] = {
    {"rope_rerotate_f32", Storage::kF32, false, naive_rope_neox, nullptr},
    {"rope_rerotate_bf16", Storage::kBf16, false, nullptr, naive_rope_neox_bf16},
    {"rope_rerotate_two_pass_f32", Storage::kF32, true, naive_rope_neox, nullptr}};

enum class Move { kShift, kLongRope };

struct RerotateShape {
  size_t tokens;
  Move move;
};

// A cache-resident 16 tokens (64 KiB of f32 keys), a 4096-token cache (16 MiB) and, shifted,
// a DRAM-sized 16384-token one (64 MiB of f32 keys, twice a 32 MiB last-level cache); bf16
// keys also 32768 tokens, shifted (their 64 MiB).
const RerotateShape kShapes[] = {{16, Move::kShift},
                                 {4096, Move::kShift},
                                 {16, Move::kLongRope},
                                 {4096, Move::kLongRope},
                                 {16384, Move::kShift}};

// "tokens:4096/heads:8/dim:128/shift:1024/longrope:0"
std::string ShapeName(const RerotateShape& shape) {
  const bool shift = shape.move == Move::kShift;
  return "tokens:" + std::to_string(shape.tokens) + "/heads:" + std::to_string(kHeads) +
         "/dim:" + std::to_string(kDim) + "/shift:" + std::to_string(shift ? kShiftBy : 0) +
         "/longrope:" + (shift ? "0" : "1");
}

size_t Elements(const RerotateShape& shape) { return shape.tokens * kHeads * kDim; }

using PlanPtr = std::shared_ptr<posenc_rope_plan>;

PlanPtr Adopt(posenc_rope_plan* plan) { return PlanPtr(plan, posenc_rope_plan_destroy); }

// A LongRoPE plan for a sequence of seq_len tokens: the short factors up to kOriginalMax,
// the long ones beyond. Factors rise from 1 with the wavelength, as Phi-3's do.
posenc_status LongRopePlan(size_t seq_len, PlanPtr& plan) {
  std::vector<double> short_factor(kDim / 2), long_factor(kDim / 2);
  for (size_t i = 0; i < kDim / 2; ++i) {
    const double x = static_cast<double>(i) / (kDim / 2 - 1);
    short_factor[i] = 1.0 + 0.5 * x * x;
    long_factor[i] = 1.0 + 63.0 * x * x;
  }
  posenc_rope_scaling scaling = {};
  scaling.type = POSENC_ROPE_SCALING_LONGROPE;
  scaling.original_max_position_embeddings = kOriginalMax;
  scaling.max_position_embeddings = kMaxPositions;
  scaling.seq_len = seq_len;
  scaling.short_factor = short_factor.data();
  scaling.short_factor_len = short_factor.size();
  scaling.long_factor = long_factor.data();
  scaling.long_factor_len = long_factor.size();
  posenc_rope_plan* raw = nullptr;
  const posenc_status status = posenc_rope_plan_create_scaled(&raw, kDim, kBase, &scaling);
  plan = Adopt(raw);
  return status;
}

// A shape's move: the plans and positions before (A, p) and after (B, p').
struct Rerotation {
  PlanPtr from, to;
  std::vector<int32_t> from_positions, to_positions;
};

posenc_status MakeRerotation(const RerotateShape& shape, Rerotation& r) {
  r.from_positions.resize(shape.tokens);
  r.to_positions.resize(shape.tokens);
  for (size_t t = 0; t < shape.tokens; ++t) {
    const bool shift = shape.move == Move::kShift;
    r.from_positions[t] = static_cast<int32_t>(t) + (shift ? kShiftFirst : 0);
    r.to_positions[t] = r.from_positions[t] - (shift ? kShiftBy : 0);
  }
  if (shape.move == Move::kLongRope) {
    const posenc_status status = LongRopePlan(kOriginalMax, r.from);
    return status != POSENC_OK ? status : LongRopePlan(kOriginalMax + 1, r.to);
  }
  posenc_rope_plan* raw = nullptr;
  const posenc_status status = posenc_rope_plan_create(&raw, kDim, kBase, 1.0);
  r.from = r.to = Adopt(raw);
  return status;
}

std::vector<double> Freqs(const posenc_rope_plan* plan) {
  std::vector<double> freqs(posenc_rope_plan_rotary_dim(plan) / 2);
  posenc_rope_plan_freqs(plan, freqs.data());
  return freqs;
}

// The plan that undoes `plan` with POSENC_ROPE_INVERSE: its frequencies, 1 / its factor.
posenc_status UndoPlan(const posenc_rope_plan* plan, PlanPtr& undo) {
  const std::vector<double> freqs = Freqs(plan);
  posenc_rope_plan* raw = nullptr;
  const posenc_status status = posenc_rope_plan_create_from_freqs(
      &raw, kDim, freqs.data(), 1.0 / posenc_rope_plan_attention_factor(plan));
  undo = Adopt(raw);
  return status;
}

// The keys [L, 8, 128], random in [-1, 1]. |att_B / att_A| = 1 in both moves, so rotating
// them again every pass keeps their magnitudes.
struct KeyBuffer {
  KeyBuffer(const RerotateShape& shape, Storage storage)
      : tokens(shape.tokens), keys(RandomElements(Elements(shape), 2, storage)) {}
  posenc_rope_tensor View() const { return {keys.get(), kHeads, kHeads * kDim, kDim}; }
  float* F32() const { return keys.get(); }
  uint16_t* Bits() const { return reinterpret_cast<uint16_t*>(keys.get()); }
  size_t tokens;
  AlignedFloats keys;  // for bf16: the 16-bit elements
};

Pass TwoPass(const Rerotation& r, const RerotateShape& shape) {
  PlanPtr undo;
  const posenc_status status = UndoPlan(r.from.get(), undo);
  if (status != POSENC_OK) return FailedPass(status);
  const auto buf = std::make_shared<KeyBuffer>(shape, Storage::kF32);
  return [r, undo, buf, keys = buf->View()] {
    const posenc_status inverse =
        posenc_rope_f32(undo.get(), kDim, buf->tokens, r.from_positions.data(), 0, &keys, nullptr,
                        POSENC_ROPE_NEOX | POSENC_ROPE_INVERSE);
    if (inverse != POSENC_OK) return inverse;
    return posenc_rope_f32(r.to.get(), kDim, buf->tokens, r.to_positions.data(), 0, &keys, nullptr,
                           POSENC_ROPE_NEOX);
  };
}

Pass PosencPass(const RerotateKernel& kernel, const RerotateShape& shape) {
  Rerotation r;
  const posenc_status status = MakeRerotation(shape, r);
  if (status != POSENC_OK) return FailedPass(status);
  if (kernel.two_pass) return TwoPass(r, shape);
  const auto buf = std::make_shared<KeyBuffer>(shape, kernel.storage);
  const auto rerotate = kernel.storage == Storage::kBf16  ? posenc_rope_rerotate_bf16
                        : kernel.storage == Storage::kF16 ? posenc_rope_rerotate_f16
                                                          : posenc_rope_rerotate_f32;
  return [r, buf, rerotate, keys = buf->View()] {
    return rerotate(r.from.get(), r.from_positions.data(), 0, r.to.get(), r.to_positions.data(), 0,
                    kDim, buf->tokens, &keys, POSENC_ROPE_NEOX);
  };
}

// A cos/sin table [L, R/2] of the naive loop (untimed).
struct NaiveTable {
  explicit NaiveTable(size_t tokens)
      : cos(AlignedFloatArray(tokens * kDim / 2)), sin(AlignedFloatArray(tokens * kDim / 2)) {}
  AlignedFloats cos, sin;
};

// One table (the angle differences) or, for two passes, A's inverse table and B's.
std::vector<std::shared_ptr<NaiveTable>> NaiveTables(const Rerotation& r, size_t tokens,
                                                     bool two_pass) {
  const std::vector<double> from = Freqs(r.from.get()), to = Freqs(r.to.get());
  const double att_from = posenc_rope_plan_attention_factor(r.from.get());
  const double att_to = posenc_rope_plan_attention_factor(r.to.get());
  const int32_t* p = r.from_positions.data();
  const int32_t* q = r.to_positions.data();
  std::vector<std::shared_ptr<NaiveTable>> tables;
  const auto add = [&](const int32_t* pa, const double* fa, const int32_t* pb, const double* fb,
                       double scale) {
    tables.push_back(std::make_shared<NaiveTable>(tokens));
    naive_rerotate_table(tokens, pa, fa, pb, fb, kDim, scale, tables.back()->cos.get(),
                         tables.back()->sin.get());
  };
  if (two_pass) {
    add(p, from.data(), nullptr, nullptr, 1.0 / att_from);
    add(nullptr, nullptr, q, to.data(), att_to);
  } else {
    add(p, from.data(), q, to.data(), att_to / att_from);
  }
  return tables;
}

Pass NaivePass(const RerotateKernel& kernel, const RerotateShape& shape) {
  Rerotation r;
  const posenc_status status = MakeRerotation(shape, r);
  if (status != POSENC_OK) return FailedPass(status);
  const auto buf = std::make_shared<KeyBuffer>(shape, kernel.storage);
  const auto tables = NaiveTables(r, shape.tokens, kernel.two_pass);
  return [buf, tables, naive = kernel.naive, naive16 = kernel.naive16] {
    for (const auto& table : tables) {
      if (naive16)
        naive16(buf->Bits(), buf->tokens, kHeads, kDim, kDim, table->cos.get(), table->sin.get());
      else
        naive(buf->F32(), buf->tokens, kHeads, kDim, kDim, table->cos.get(), table->sin.get());
    }
    return POSENC_OK;
  };
}

GroupRows Group(const RerotateKernel& kernel, const RerotateShape& shape) {
  const size_t bytes = Elements(shape) * ElementBytes(kernel.storage);
  const std::string move = shape.move == Move::kShift
                               ? "context shift p -> p - 1024, one plan"
                               : "LongRoPE short -> long factors, same positions";
  const std::string about = std::to_string(bytes) + " bytes in place, " + std::to_string(kHeads) +
                            " K heads, " + move +
                            (kernel.two_pass ? "; inverse under A, then forward under B" : "");
  return {{kernel.name, ShapeName(shape), LimitKind::kRmw, bytes, about},
          2 * static_cast<int64_t>(bytes),
          static_cast<int64_t>(Elements(shape)),
          Factory(PosencPass, kernel, shape),
          Factory(NaivePass, kernel, shape)};
}

}  // namespace

std::vector<GroupRows> RopeRerotateRows() {
  std::vector<GroupRows> rows;
  for (const RerotateKernel& kernel : kKernels) {
    for (const RerotateShape& shape : kShapes) rows.push_back(Group(kernel, shape));
    if (kernel.storage == Storage::kBf16) rows.push_back(Group(kernel, {32768, Move::kShift}));
  }
  return rows;
}

}  // namespace posenc_bench
