// Limit rows: the fastest plain stream this bench can find over a buffer of each size that a
// kernel row is compared with (RowGroup::limit_bytes): in place and store-only for the groups
// compared with those, copy for the out-of-place groups; and the compute limit of each
// vector layer (limit_fma/<layer>: vector FMAs per ns, LIMIT_FMA_CHAINS independent chains).
// The candidates (limit_<layer>.c, and libc's memcpy for copies) are timed briefly the first
// time a size runs, and the fastest one is then measured as the row; its name is the row's
// label.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_buffer.h"
#include "bench_rows.h"
#include "limit_candidates.h"
#include "limit_mix.h"
#include "posenc.h"
#include "posenc_bench_cases.h"

namespace posenc_bench {
namespace {

// Runtime values (volatile): x * 1 + 0 keeps the data, yet the compiler must do the work.
volatile float g_scale = 1.0f;
volatile float g_offset = 0.0f;
volatile float g_fill = 0.5f;

constexpr int kChoiceRounds = 5;              // best of this many timings per candidate
constexpr double kChoiceBatchSeconds = 2e-3;  // each timing repeats passes for about this long

using LayerCandidates = const limit_candidate* (*)(size_t* count);
using LimitFmaLoop = const limit_fma_loop* (*)();

// libc's memcpy as a copy candidate: what a caller's copy runs (it picks its own stores).
void LibcCopy(float* x, const float* src, size_t n, float, float) {
  std::memcpy(x, src, n * sizeof(float));
}

const limit_candidate kLibcCandidates[] = {
    {"libc/memcpy", LIMIT_COPY, POSENC_ISA_SCALAR, 0, LibcCopy}};

const limit_candidate* LibcCandidates(size_t* count) {
  *count = sizeof kLibcCandidates / sizeof kLibcCandidates[0];
  return kLibcCandidates;
}

const LayerCandidates kLayers[] = {
    LibcCandidates,          limit_candidates_portable,
#ifdef POSENC_BENCH_LIMIT_SSE2
    limit_candidates_sse2,
#endif
#ifdef POSENC_BENCH_LIMIT_AVX2
    limit_candidates_avx2,
#endif
#ifdef POSENC_BENCH_LIMIT_AVX512
    limit_candidates_avx512,
#endif
};

std::vector<limit_candidate> CompiledCandidates() {
  std::vector<limit_candidate> all;
  for (LayerCandidates layer : kLayers) {
    size_t n = 0;
    const limit_candidate* table = layer(&n);
    all.insert(all.end(), table, table + n);
  }
  return all;
}

// Non-temporal stores are tried only on buffers larger than the last-level cache, counted at
// most 32 MiB (a copy's bytes: source + destination). A VM on a large server part is told the
// socket's whole L3 (480 MiB on a Xeon, shared with other tenants): counted whole, it kept
// them out of every limit row there, and rope_out_f32_f32_neox at 4096 tokens (120 MiB,
// streamed) ran at 1.14-1.30x "the limit" (0.91-0.93x with them).
std::vector<limit_candidate> UsableCandidates(limit_kind kind, size_t bytes) {
  static const std::vector<limit_candidate> compiled = CompiledCandidates();
  static const size_t llc = std::min(LastLevelCacheBytes(), size_t{32} << 20);
  std::vector<limit_candidate> usable;
  for (const limit_candidate& c : compiled)
    if (c.kind == kind && posenc_isa_available(c.isa) && (!c.non_temporal || bytes > llc))
      usable.push_back(c);
  return usable;
}

// The row's buffers: x, and for a copy its source (n floats each).
struct LimitBuffers {
  float* x;
  const float* src;
  size_t n;
};

void OnePass(const limit_candidate& c, const LimitBuffers& b) {
  if (c.kind == LIMIT_RMW)
    c.fn(b.x, nullptr, b.n, g_scale, g_offset);
  else if (c.kind == LIMIT_WRITE)
    c.fn(b.x, nullptr, b.n, 0.0f, g_fill);
  else
    c.fn(b.x, b.src, b.n, 0.0f, 0.0f);
}

double SecondsPerPass(const limit_candidate& c, const LimitBuffers& b, int passes) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < passes; ++i) OnePass(c, b);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / passes;
}

// Passes per timing so that one timing takes about kChoiceBatchSeconds (after a warm-up).
int PassesPerTiming(const limit_candidate& c, const LimitBuffers& b) {
  OnePass(c, b);
  const double once = SecondsPerPass(c, b, 1);
  return static_cast<int>(std::clamp(kChoiceBatchSeconds / std::max(once, 1e-9), 1.0, 1e6));
}

// Times every usable candidate kChoiceRounds times, round-robin (so that drift hits all of
// them alike), and returns them fastest first (by best time). bytes: the row's n.
std::vector<limit_candidate> Ranked(limit_kind kind, const LimitBuffers& b, size_t bytes) {
  std::vector<limit_candidate> candidates = UsableCandidates(kind, bytes);
  std::vector<int> passes;
  for (const limit_candidate& c : candidates) passes.push_back(PassesPerTiming(c, b));
  std::vector<double> best(candidates.size(), 1e300);
  for (int round = 0; round < kChoiceRounds; ++round)
    for (size_t i = 0; i < candidates.size(); ++i)
      best[i] = std::min(best[i], SecondsPerPass(candidates[i], b, passes[i]));
  std::vector<size_t> order(candidates.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return best[x] < best[y]; });
  std::vector<limit_candidate> ranked;
  for (size_t i : order) ranked.push_back(candidates[i]);
  return ranked;
}

// The ranking is made once per (kind, size) and kept for later runs and repetitions; the row
// runs the first.
const std::vector<limit_candidate>& RankedCandidates(limit_kind kind, const LimitBuffers& b,
                                                     size_t bytes) {
  static std::map<std::pair<limit_kind, size_t>, std::vector<limit_candidate>> ranked;
  const auto key = std::make_pair(kind, bytes);
  auto it = ranked.find(key);
  if (it == ranked.end()) it = ranked.emplace(key, Ranked(kind, b, bytes)).first;
  return it->second;
}

limit_kind CKind(LimitKind kind) {
  return kind == LimitKind::kRmw ? LIMIT_RMW : kind == LimitKind::kWrite ? LIMIT_WRITE : LIMIT_COPY;
}

// The floats of the row's buffer (of each of the two for a copy).
size_t LimitFloats(LimitKind kind, size_t bytes) {
  return (kind == LimitKind::kCopy ? bytes / 2 : bytes) / sizeof(float);
}

void RunLimit(benchmark::State& state, LimitKind kind, size_t bytes) {
  NotifyRowEnter(LimitRowName(kind, bytes), state.max_iterations);
  std::vector<std::string> labels;
  const Pass pass = LimitPasses(kind, bytes, 1, &labels).front();
  state.SetLabel(labels.front());
  pass();
  for (auto _ : state) {
    pass();
    benchmark::ClobberMemory();
  }
  const auto iterations = static_cast<int64_t>(state.iterations());
  state.SetBytesProcessed(iterations * LimitBytesPerPass(kind, bytes));
  state.SetItemsProcessed(iterations * LimitItemsPerPass(kind, bytes));
}

const LimitFmaLoop kFmaLayers[] = {
    limit_fma_portable,
#ifdef POSENC_BENCH_LIMIT_SSE2
    limit_fma_sse2,
#endif
#ifdef POSENC_BENCH_LIMIT_AVX2
    limit_fma_avx2,
#endif
#ifdef POSENC_BENCH_LIMIT_AVX512
    limit_fma_avx512,
#endif
};

// Rounds per pass: 7 us (avx2) to 15 us (avx512, Zen 4) of FMAs on the test machines: long
// against a timer read, short enough for a pass to stay on one core.
constexpr size_t kFmaRoundsPerPass = 4096;

// Items: vector FMAs (a multiply and an add where the layer has none); counters: their rate
// (fma, per second) and that of the float operations they make (flop: 2 x lanes each).
void RunLimitFma(benchmark::State& state, const limit_fma_loop* loop) {
  NotifyRowEnter(LimitFmaRowName(loop->name), state.max_iterations);
  float sink = loop->fn(kFmaRoundsPerPass, g_scale, g_offset);
  for (auto _ : state) {
    sink += loop->fn(kFmaRoundsPerPass, g_scale, g_offset);
    benchmark::DoNotOptimize(sink);
  }
  const double ops = static_cast<double>(state.iterations()) * kFmaRoundsPerPass * LIMIT_FMA_CHAINS;
  state.SetItemsProcessed(static_cast<int64_t>(ops));
  using benchmark::Counter;
  state.counters["fma"] = Counter(ops, Counter::kIsRate);
  state.counters["flop"] = Counter(ops * 2 * loop->lanes, Counter::kIsRate);
  state.SetLabel(std::to_string(loop->lanes) + " lanes, " +
                 (loop->fused ? "fused" : "multiply + add") + ", " +
                 std::to_string(LIMIT_FMA_CHAINS) + " chains");
}

using LayerMixes = const limit_mix_loop* (*)(size_t* count);
const LayerMixes kMixLayers[] = {
#ifdef POSENC_BENCH_LIMIT_AVX2
    limit_mix_avx2,
#endif
#ifdef POSENC_BENCH_LIMIT_AVX512
    limit_mix_avx512,
#endif
    nullptr};

// The operation mixes this CPU runs.
std::vector<const limit_mix_loop*> UsableMixes() {
  std::vector<const limit_mix_loop*> mixes;
  for (LayerMixes layer : kMixLayers) {
    if (!layer) continue;
    size_t count = 0;
    const limit_mix_loop* m = layer(&count);
    for (size_t i = 0; i < count; ++i)
      if (posenc_isa_available(m[i].isa)) mixes.push_back(&m[i]);
  }
  return mixes;
}

constexpr size_t kMixRoundsPerPass = 4096;

std::string MixRowName(const limit_mix_loop* mix) {
  std::string name = std::string("limit_mix/") + mix->kernel + "/" + mix->variant;
  if (mix->shape) name += std::string("/") + mix->shape;
  return name;
}

// The mix that bounds a group's rows of a variant: one whose shape is a component of the
// group's ("heads:32/q:1/k:4096/mask:kvcache" has "mask:kvcache"), else the kernel's general
// one (shape NULL); nullptr if there is none.
const limit_mix_loop* GroupMix(const RowGroup& group, const std::string& variant) {
  const limit_mix_loop* general = nullptr;
  for (const limit_mix_loop* mix : UsableMixes()) {
    if (group.kernel != mix->kernel || variant != mix->variant) continue;
    if (!mix->shape) {
      general = mix;
      continue;
    }
    // the shape's text as a whole component ("mask:kvcache", not within "mask:kvcache16")
    const size_t at = group.shape.find(mix->shape);
    if (at == std::string::npos) continue;
    const size_t end = at + std::strlen(mix->shape);
    if ((at == 0 || group.shape[at - 1] == '/') &&
        (end == group.shape.size() || group.shape[end] == '/'))
      return mix;
  }
  return general;
}

// Items: the elements the rounds stand for (chains x rounds x elements).
void RunLimitMix(benchmark::State& state, const limit_mix_loop* mix) {
  NotifyRowEnter(MixRowName(mix), state.max_iterations);
  float sink = mix->fn(kMixRoundsPerPass);
  for (auto _ : state) {
    sink += mix->fn(kMixRoundsPerPass);
    benchmark::DoNotOptimize(sink);
  }
  const double elements =
      static_cast<double>(state.iterations()) * kMixRoundsPerPass * mix->chains * mix->elements;
  state.SetItemsProcessed(static_cast<int64_t>(elements));
  state.SetLabel(std::to_string(mix->elements) + " elements: " + mix->ops + ", " +
                 std::to_string(mix->chains) + " chains");
}

// The compute-limit loops this CPU runs.
std::vector<const limit_fma_loop*> UsableFmaLoops() {
  std::vector<const limit_fma_loop*> loops;
  for (LimitFmaLoop layer : kFmaLayers)
    if (posenc_isa_available(layer()->isa)) loops.push_back(layer());
  return loops;
}

// The distinct limit_bytes of the groups of `set` for which `keep` holds, ascending.
template <class Keep>
std::vector<size_t> DistinctSizes(RowSet set, Keep keep) {
  std::vector<size_t> sizes;
  for (const RowGroup& group : RowGroups())
    if (InRowSet(group, set) && keep(group.limit)) sizes.push_back(group.limit_bytes);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

}  // namespace

size_t LastLevelCacheBytes() {
  int largest = 0;
  for (const auto& cache : benchmark::CPUInfo::Get().caches)
    largest = std::max(largest, cache.size);
  return static_cast<size_t>(largest);
}

std::vector<Pass> LimitPasses(LimitKind kind, size_t bytes, size_t count,
                              std::vector<std::string>* labels) {
  const size_t n = LimitFloats(kind, bytes);
  std::shared_ptr<float[]> buf = RandomFloats(n, 3);
  std::shared_ptr<float[]> src = kind == LimitKind::kCopy ? RandomFloats(n, 4) : nullptr;
  const LimitBuffers b = {buf.get(), src.get(), n};
  const std::vector<limit_candidate>& ranked = RankedCandidates(CKind(kind), b, bytes);
  // The fastest, the fastest of the other store kind (non-temporal or not) where there is
  // one (which kind wins moves with the host's state: at 64 MiB store-only on Zen 5 the
  // ranking put non-temporal loops first in one run, cached ones with prefetch in the next,
  // 16% slower later on), then the next fastest.
  std::vector<size_t> picked = {0};  // every kind has portable candidates: never empty
  for (size_t i = 1; i < ranked.size() && picked.size() < std::min<size_t>(count, 2); ++i)
    if (ranked[i].non_temporal != ranked[0].non_temporal) picked.push_back(i);
  for (size_t i = 1; i < ranked.size() && picked.size() < count; ++i)
    if (std::find(picked.begin(), picked.end(), i) == picked.end()) picked.push_back(i);
  std::sort(picked.begin(), picked.end());
  std::vector<Pass> passes;
  if (labels) labels->clear();
  for (size_t i : picked) {
    if (labels) labels->push_back(ranked[i].name);
    passes.push_back([buf, src, b, candidate = ranked[i]] {
      OnePass(candidate, b);
      return POSENC_OK;
    });
  }
  return passes;
}

// Bytes read + written per pass: 2n for the in-place rmw stream over n bytes, n for
// store-only, n for a copy of n/2 bytes into n/2 other bytes (the sizes registered are
// multiples of 8: two whole float buffers). Items: the floats written.
int64_t LimitBytesPerPass(LimitKind kind, size_t bytes) {
  return (kind == LimitKind::kRmw ? 2 : 1) * static_cast<int64_t>(bytes);
}

int64_t LimitItemsPerPass(LimitKind kind, size_t bytes) {
  return static_cast<int64_t>(LimitFloats(kind, bytes));
}

std::vector<LimitRow> LimitRows(RowSet set) {
  std::vector<LimitRow> rows;
  for (size_t bytes : DistinctSizes(set, [](LimitKind k) { return k != LimitKind::kCopy; }))
    for (LimitKind kind : {LimitKind::kRmw, LimitKind::kWrite}) rows.push_back({kind, bytes});
  for (size_t bytes : DistinctSizes(set, [](LimitKind k) { return k == LimitKind::kCopy; }))
    rows.push_back({LimitKind::kCopy, bytes});
  return rows;
}

const char* LimitKindName(LimitKind kind) {
  switch (kind) {
    case LimitKind::kRmw:
      return "limit_rmw";
    case LimitKind::kWrite:
      return "limit_write";
    case LimitKind::kCopy:
      break;
  }
  return "limit_copy";
}

std::string LimitRowName(LimitKind kind, size_t bytes) {
  return std::string(LimitKindName(kind)) + "/bytes:" + std::to_string(bytes);
}

std::string LimitFmaRowName(const std::string& layer) { return "limit_fma/" + layer; }

std::vector<std::string> LimitFmaRowNames() {
  std::vector<std::string> names;
  for (const limit_fma_loop* loop : UsableFmaLoops()) names.push_back(LimitFmaRowName(loop->name));
  return names;
}

std::vector<std::string> LimitMixRowNames() {
  std::vector<std::string> names;
  for (const limit_mix_loop* mix : UsableMixes()) names.push_back(MixRowName(mix));
  return names;
}

std::string LimitMixRowName(const RowGroup& group, const std::string& variant) {
  const limit_mix_loop* mix = GroupMix(group, variant);
  return mix ? MixRowName(mix) : "";
}

std::pair<std::string, unsigned> LimitMixOps(const RowGroup& group, const std::string& variant) {
  const limit_mix_loop* mix = GroupMix(group, variant);
  if (!mix) return {"", 0};
  return {mix->ops, mix->elements};
}

void RegisterLimitRows(RowSet set, bool paired_apart) {
  for (const LimitRow& row : LimitRows(set))
    if (!paired_apart || row.bytes < kPairedMinBytes)
      benchmark::RegisterBenchmark(LimitRowName(row.kind, row.bytes).c_str(), RunLimit, row.kind,
                                   row.bytes);
  for (const limit_fma_loop* loop : UsableFmaLoops())
    benchmark::RegisterBenchmark(LimitFmaRowName(loop->name).c_str(), RunLimitFma, loop);
  for (const limit_mix_loop* mix : UsableMixes())
    benchmark::RegisterBenchmark(MixRowName(mix).c_str(), RunLimitMix, mix);
}

}  // namespace posenc_bench
