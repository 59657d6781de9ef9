// Registers every family's groups (bench_rows.h): one row per variant, each timed by the
// same loop, then the limit rows.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_buffer.h"
#include "bench_rows.h"
#include "posenc.h"
#include "posenc_bench_cases.h"

namespace posenc_bench {
namespace {

RowEnterHook g_row_enter_hook = nullptr;

const std::vector<GroupRows>& AllRows() {
  static const std::vector<GroupRows> rows = [] {
    std::vector<GroupRows> all;
    for (auto family :
         {RopeRows, RopeOutRows, RopeApplyRows, RopePagedRows, QknormRows, RopeRerotateRows,
          MropeRows, SinusoidRows, AlibiRows, AlibiSoftmaxRows, SoftmaxRows, LearnedRows}) {
      std::vector<GroupRows> groups = family();
      all.insert(all.end(), groups.begin(), groups.end());
    }
    return all;
  }();
  return rows;
}

// Sets up the row, checks one untimed pass (which also warms caches and faults pages in),
// then times passes.
void TimePasses(benchmark::State& state, const GroupRows& rows, const PassFactory& make) {
  const Pass pass = make();
  const posenc_status status = pass();
  if (status != POSENC_OK) {
    const std::string why =
        std::string("setup or first call failed: ") + posenc_status_string(status);
    state.SkipWithError(why.c_str());
    return;
  }
  for (auto _ : state) {
    pass();
    benchmark::ClobberMemory();
  }
  const auto iterations = static_cast<int64_t>(state.iterations());
  state.SetBytesProcessed(iterations * rows.bytes_per_pass);
  state.SetItemsProcessed(iterations * rows.items_per_pass);
}

// The ISA is selected at every run of the row (repetitions interleave rows of other ISAs).
void RunPosenc(benchmark::State& state, const GroupRows* rows, posenc_isa isa) {
  NotifyRowEnter(RowName(rows->group.kernel, posenc_isa_name(isa), rows->group.shape),
                 state.max_iterations);
  if (posenc_set_isa(isa) != POSENC_OK) {
    state.SkipWithError("posenc_set_isa failed");
    return;
  }
  TimePasses(state, *rows, rows->posenc);
}

void RunNaive(benchmark::State& state, const GroupRows* rows) {
  NotifyRowEnter(RowName(rows->group.kernel, "naive", rows->group.shape), state.max_iterations);
  TimePasses(state, *rows, rows->naive);
}

// paired_apart: without the paired rows (IsPairedRow); baseline_repetitions: RegisterAll's.
void RegisterGroup(const GroupRows& rows, bool paired_apart, int baseline_repetitions) {
  for (const std::string& variant : GroupVariants(rows.group)) {
    if (paired_apart && IsPairedRow(rows.group, variant)) continue;
    const std::string name = RowName(rows.group.kernel, variant, rows.group.shape);
    posenc_isa isa;
    benchmark::internal::Benchmark* b =
        posenc_isa_from_name(variant.c_str(), &isa) == POSENC_OK
            ? benchmark::RegisterBenchmark(name.c_str(), RunPosenc, &rows, isa)
            : benchmark::RegisterBenchmark(name.c_str(), RunNaive, &rows);
    if (baseline_repetitions > 0 && IsBaselineRow(variant)) b->Repetitions(baseline_repetitions);
  }
}

// A row of a paired measurement, set up: its pass (the limit row: the passes of its fastest
// loops), the ISA to select before each pass (POSENC_ISA_COUNT: none, for naive and the
// limit row) and its buffers (0: the group's SharedBuffers, which its ISA rows run on; 1 + the
// row's place: its own).
struct PairedPass {
  std::vector<Pass> passes;
  posenc_isa isa = POSENC_ISA_COUNT;
  size_t buffers = 0;
};

// The limit row's loops timed in each round, the fastest first when they were ranked; the
// round's limit is the best of them (which loop is fastest at these sizes moves with the
// host's state: one chosen once reads up to 20% low in a later minute).
constexpr size_t kPairedLimitLoops = 3;

// Seconds of one call of `pass`.
double TimeOf(const Pass& pass) {
  const auto start = std::chrono::steady_clock::now();
  pass();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Untimed passes, then each of the row's passes timed once: the best time. After a row that
// ran on other buffers, warm-up passes until the buffers hold the state a loop of passes
// leaves in the caches: until two passes in a row set no new best by 1%, at most max_warm
// (after other buffers went through it, the last-level cache takes several passes to hold a
// buffer that fits it: Zen 5, a 16 MiB in-place stream after 160 MiB of others, 51, 71, 89,
// 112, 122, 133, then 135-144 GB/s; a Xeon VM, rope_f32_neox's 80 MiB after 320 MiB, 8.7,
// 7.9, 6.7, 5.5, 4.7, 4.1, 3.8, 3.5, then 3.3-3.6 ms a pass, and 2% a pass for 10 passes or
// more at other times). After a row that ran on the same buffers (SharedBuffers), one pass
// (its own code, the state its own stores leave).
double SecondsOf(const PairedPass& p, int max_warm, bool same_buffers) {
  if (p.isa != POSENC_ISA_COUNT) posenc_set_isa(p.isa);
  if (same_buffers) {
    p.passes.front()();
  } else {
    double fastest = 1e300;
    for (int i = 0, stale = 0; i < max_warm && stale < 2; ++i) {
      const double t = TimeOf(p.passes.front());
      stale = t < 0.99 * fastest ? 0 : stale + 1;
      fastest = std::min(fastest, t);
    }
  }
  double best = 1e300;
  for (const Pass& pass : p.passes) best = std::min(best, TimeOf(pass));
  return best;
}

}  // namespace

void SetRowEnterHook(RowEnterHook hook) { g_row_enter_hook = hook; }

void NotifyRowEnter(const std::string& row_name, int64_t max_iterations) {
  if (g_row_enter_hook) g_row_enter_hook(row_name, max_iterations);
}

Pass FailedPass(posenc_status status) {
  return [status] { return status; };
}

int DispatchKernelOf(const std::string& kernel) {
  // Longest prefixes first: "rope_out_f32_bf16" before "rope_out_f32".
  static const struct {
    const char* prefix;
    int kernel;
  } map[] = {
      {"copy_then_rope", -1},
      {"qknorm_then_rope", -1},
      {"qknorm_rope_f32", POSENC_KERNEL_ROPE_F32},
      {"alibi_add_then_softmax", -1},
      {"rope_rerotate_two_pass", -1},
      {"rope_out_paged_f32_f16", POSENC_KERNEL_ROPE_F32_F16},
      {"rope_out_then_q8_0", -1},
      {"rope_out_q8_0", POSENC_KERNEL_ROPE_F32},
      {"rope_out_then_fp8", -1},
      {"rope_out_fp8", POSENC_KERNEL_ROPE_F32},
      {"rope_out_f32_bf16", POSENC_KERNEL_ROPE_F32_BF16},
      {"rope_out_f32_f16", POSENC_KERNEL_ROPE_F32_F16},
      {"rope_out_f32_f32", POSENC_KERNEL_ROPE_F32},
      {"rope_rerotate_bf16", POSENC_KERNEL_ROPE_BF16},
      {"rope_rerotate_f32", POSENC_KERNEL_ROPE_F32},
      {"rope_apply_f32", POSENC_KERNEL_ROPE_F32},
      {"rope_bf16", POSENC_KERNEL_ROPE_BF16},
      {"rope_f16", POSENC_KERNEL_ROPE_F16},
      {"rope_f32", POSENC_KERNEL_ROPE_F32},
      {"mrope_f32", POSENC_KERNEL_ROPE_F32},
      {"sinusoid_fill_bf16", POSENC_KERNEL_SINUSOID_BF16},
      {"sinusoid_fill_f16", POSENC_KERNEL_SINUSOID_F16},
      {"sinusoid_", POSENC_KERNEL_SINUSOID_F32},
      {"alibi_softmax_bf16", POSENC_KERNEL_SOFTMAX_16},
      {"alibi_softmax_f32", POSENC_KERNEL_SOFTMAX_F32},
      {"softmax_bf16", POSENC_KERNEL_SOFTMAX_16},
      {"softmax_f32", POSENC_KERNEL_SOFTMAX_F32},
      {"softmax_out_f32", POSENC_KERNEL_SOFTMAX_F32},
      {"alibi_add_bf16", POSENC_KERNEL_ALIBI_BF16},
      {"alibi_add_f16", POSENC_KERNEL_ALIBI_F16},
      {"alibi_add_f32", POSENC_KERNEL_ALIBI_F32},
      {"learned_add_f32", POSENC_KERNEL_LEARNED_ADD_F32},
  };
  for (const auto& m : map)
    if (kernel.rfind(m.prefix, 0) == 0) return m.kernel;
  return -1;
}

double FmaOpsPerItem(const std::string& kernel) {
  // Per element produced, from each kernel's source (kernels/*_simd.h); longest prefixes first.
  static const struct {
    const char* prefix;
    double ops;
  } map[] = {
      // x0 c - x1 s and x1 c + x0 s: 2 multiplies + 2 FMAs per pair (det: 4 multiplies and 2
      // adds), whatever the storage, form or layout: 2 per element. The per-token cos/sin
      // (a few dozen operations per pair, shared by every head) are left out.
      {"copy_then_rope", 2},
      {"rope_rerotate_two_pass", 4},  // two rotations of every element
      // q8_0: the rotation (2) and x * id (1); the max of |x| is not multiply-class.
      {"rope_out_q8_0", 3},
      {"rope_out_then_q8_0", 3},
      // fp8: the rotation (2) and v / scale (1); the rounding's products by powers of two
      // (exact) are not counted.
      {"rope_out_fp8", 3},
      {"rope_out_then_fp8", 3},
      // QK-norm in two passes: x * x into the sum (1 FMA), (x * inv) * w (2 multiplies), then
      // the rotation (2). Fused, the weights fold into the factors once per token row
      // (kernels/rope_simd.h, neox_blk2n_): the sum (1), a = x * inv (1), then
      // a_u (w_u c) - a_v (w_v s) (2).
      {"qknorm_then_rope", 5},
      {"qknorm_rope", 4},
      {"rope_", 2},
      {"mrope_", 2},
      // Each table row from the last by angle addition, c c_k - s s_k and s c_k + c s_k:
      // 2 multiplies + 2 FMAs per (sin, cos) pair of elements.
      {"sinusoid_", 2},
      // alibi_add_then_softmax: the add pass (1) + the softmax (10); before alibi_softmax_.
      {"alibi_add_then_softmax", 11},
      // Pass 1 t = x * scale + slope * d (2), pass 2 exp(t - max) (8: the FMA of t log2 e,
      // the FNMA of the reduction, 5 polynomial FMAs, VSCALEFPS), pass 3 e * (1 / sum) (1).
      {"alibi_softmax_", 11},
      // As above without the ALiBi term: x * scale (+ mask: an add, not counted).
      {"softmax_", 10},
      // score + slope * d: one FMA.
      {"alibi_add_", 1},
      // x + table: an add, no multiply.
      {"learned_add", 0},
  };
  for (const auto& m : map)
    if (kernel.rfind(m.prefix, 0) == 0) return m.ops;
  return 0;
}

namespace {

// Marks each kernel's core groups (RowGroup::core).
void MarkCore(std::vector<RowGroup>& groups) {
  std::map<std::string, std::pair<int, int>> picks;  // kernel: (cache-resident, largest)
  for (int i = 0; i < static_cast<int>(groups.size()); ++i) {
    const RowGroup& g = groups[i];
    auto [it, fresh] = picks.emplace(g.kernel, std::make_pair(-1, i));
    int& cache = it->second.first;
    int& largest = it->second.second;
    if (!fresh && g.limit_bytes > groups[largest].limit_bytes) largest = i;
    if (g.limit_bytes <= kCoreCacheBytes &&
        (cache < 0 || g.limit_bytes > groups[cache].limit_bytes))
      cache = i;
  }
  for (const auto& [kernel, pick] : picks) {
    if (pick.first >= 0) groups[pick.first].core = true;
    groups[pick.second].core = true;
  }
}

}  // namespace

const std::vector<RowGroup>& RowGroups() {
  static const std::vector<RowGroup> groups = [] {
    std::vector<RowGroup> v;
    for (const GroupRows& rows : AllRows()) {
      v.push_back(rows.group);
      v.back().dispatch_kernel = DispatchKernelOf(rows.group.kernel);
      // f32 sinusoid fills of 16 MiB or more (non-temporal stores) have a dispatch slot of
      // their own (posenc.h: POSENC_KERNEL_SINUSOID_F32_STREAMED).
      if (rows.group.kernel == "sinusoid_fill_f32" && rows.group.limit_bytes >= (size_t{16} << 20))
        v.back().dispatch_kernel = POSENC_KERNEL_SINUSOID_F32_STREAMED;
      v.back().fma_ops_per_item = FmaOpsPerItem(rows.group.kernel);
    }
    MarkCore(v);
    return v;
  }();
  return groups;
}

std::vector<std::string> Variants() {
  std::vector<std::string> variants;
  for (int i = 0; i < POSENC_ISA_COUNT; ++i)
    if (posenc_isa_available(static_cast<posenc_isa>(i)))
      variants.push_back(posenc_isa_name(static_cast<posenc_isa>(i)));
  variants.push_back("naive");
  return variants;
}

std::vector<std::string> KernelVariants(int kernel) {
  std::vector<std::string> variants;
  for (const std::string& v : Variants()) {
    posenc_isa isa;
    if (posenc_isa_from_name(v.c_str(), &isa) == POSENC_OK &&
        posenc_kernel_isa_for(static_cast<posenc_kernel>(kernel), isa) != isa)
      continue;
    variants.push_back(v);
  }
  return variants;
}

std::vector<std::string> GroupVariants(const RowGroup& group) {
  // A composite row (dispatch kernel -1) calls only f32 kernels, whose tiers are rope_f32's.
  const int kernel = DispatchKernelOf(group.kernel);
  std::vector<std::string> variants = KernelVariants(kernel < 0 ? POSENC_KERNEL_ROPE_F32 : kernel);
  if (!group.naive) variants.pop_back();  // "naive" is last
  return variants;
}

std::string RowName(const std::string& kernel, const std::string& variant,
                    const std::string& shape) {
  return kernel + "/" + variant + "/" + shape;
}

void RegisterAll(RowSet set, bool paired_apart, int baseline_repetitions) {
  const std::vector<RowGroup>& groups = RowGroups();
  for (size_t i = 0; i < groups.size(); ++i)
    if (InRowSet(groups[i], set)) RegisterGroup(AllRows()[i], paired_apart, baseline_repetitions);
  RegisterDecodeLayersRows(set);
  RegisterLimitRows(set, paired_apart);
}

std::vector<PairedRow> MeasurePaired(const RowGroup& group,
                                     const std::vector<std::string>& variants, double seconds,
                                     int min_rounds, int max_rounds) {
  const std::vector<RowGroup>& groups = RowGroups();
  const GroupRows& rows = AllRows()[&group - groups.data()];
  std::vector<PairedRow> out;
  SharedBuffers shared;  // outlives the passes, which run on its buffers
  std::vector<PairedPass> passes;
  for (const std::string& variant : variants) {
    PairedRow row;
    row.name = RowName(group.kernel, variant, group.shape);
    row.bytes_per_pass = rows.bytes_per_pass;
    row.items_per_pass = rows.items_per_pass;
    PairedPass p;
    posenc_isa isa;
    if (posenc_isa_from_name(variant.c_str(), &isa) == POSENC_OK) {
      p.isa = isa;
      if (posenc_set_isa(isa) != POSENC_OK) row.error = "posenc_set_isa failed";
    } else if (variant != "naive" || !rows.naive) {
      row.error = "no such variant";
    }
    if (row.error.empty()) {
      const bool naive = variant == "naive";  // set up otherwise: its own buffers
      p.buffers = naive ? 1 + passes.size() : 0;
      shared.SetSharing(!naive);
      shared.NextRow();
      p.passes = {naive ? rows.naive() : rows.posenc()};
      const posenc_status status = p.passes.front()();
      if (status != POSENC_OK)
        row.error = std::string("setup or first call failed: ") + posenc_status_string(status);
    }
    if (row.error.empty()) passes.push_back(std::move(p));
    out.push_back(std::move(row));
  }
  shared.SetSharing(false);
  PairedRow limit;
  limit.name = LimitRowName(group.limit, group.limit_bytes);
  limit.bytes_per_pass = LimitBytesPerPass(group.limit, group.limit_bytes);
  limit.items_per_pass = LimitItemsPerPass(group.limit, group.limit_bytes);
  std::vector<std::string> loops;
  passes.push_back({LimitPasses(group.limit, group.limit_bytes, kPairedLimitLoops, &loops),
                    POSENC_ISA_COUNT, 1 + passes.size()});
  for (const std::string& loop : loops) limit.label += (limit.label.empty() ? "" : " ") + loop;
  out.push_back(std::move(limit));
  // The rows that set up (every one but those with an error), in `out`'s order.
  std::vector<PairedRow*> live;
  for (PairedRow& row : out)
    if (row.error.empty()) live.push_back(&row);
  const size_t n = passes.size() - 1;  // the kernel rows; the limit row is passes[n]
  // Warm-up passes after other buffers (SecondsOf): at most enough to stream 4 x the
  // last-level cache (by every byte a pass touches, FootprintBytes), at least 2, at most 16.
  const size_t llc = LastLevelCacheBytes();
  const size_t footprint = FootprintBytes(group);
  const int max_warm =
      static_cast<int>(std::clamp<size_t>((4 * llc + footprint - 1) / footprint, 2, 16));
  size_t last = SIZE_MAX;  // the buffers of the row timed last
  const auto time_row = [&](size_t i) {
    const double t = SecondsOf(passes[i], max_warm, passes[i].buffers == last);
    last = passes[i].buffers;
    return t;
  };
  // The limit row before and after the rounds (each time warmed up on its own buffers: the
  // two switches are what a round of rows on separate buffers would pay each time), its best
  // time standing for every round; in each round the kernel rows, on the shared buffers, the
  // order rotated by one row each round.
  const double limit_before = time_row(n);
  const auto start = std::chrono::steady_clock::now();
  int rounds = 0;
  for (; n > 0 && rounds < max_rounds; ++rounds) {
    if (rounds >= min_rounds &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= seconds)
      break;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (k + static_cast<size_t>(rounds)) % n;
      live[i]->seconds.push_back(time_row(i));
    }
  }
  live[n]->seconds.assign(static_cast<size_t>(rounds), std::min(limit_before, time_row(n)));
  return out;
}

void AddCpuContext() {
  std::string isas;
  for (const std::string& v : Variants())
    if (v != "naive") isas += (isas.empty() ? "" : " ") + v;
  benchmark::AddCustomContext("posenc_version", posenc_version());
  benchmark::AddCustomContext("posenc_cpu", posenc_cpu_name());
  benchmark::AddCustomContext("posenc_cpu_features", posenc_cpu_features());
  benchmark::AddCustomContext("posenc_isas_available", isas);
}

}  // namespace posenc_bench
