// Limit rows: the fastest plain stream this bench can find over a buffer of each size that a
// kernel row is compared with (RowGroup::limit_bytes), in both kinds.
// The candidates (limit_<layer>.c) are timed briefly the first time a size runs, and the
// fastest one is then measured as the row; its name is the row's label.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>
#include <vector>

#include "bench_buffer.h"
#include "bench_rows.h"
#include "limit_candidates.h"
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

const LayerCandidates kLayers[] = {
    limit_candidates_portable,
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

// The largest cache Google Benchmark found (0 if none): non-temporal stores are tried only
// on buffers larger than this.
size_t LastLevelCacheBytes() {
  int largest = 0;
  for (const auto& cache : benchmark::CPUInfo::Get().caches)
    largest = std::max(largest, cache.size);
  return static_cast<size_t>(largest);
}

std::vector<limit_candidate> UsableCandidates(limit_kind kind, size_t bytes) {
  static const std::vector<limit_candidate> compiled = CompiledCandidates();
  static const size_t llc = LastLevelCacheBytes();
  std::vector<limit_candidate> usable;
  for (const limit_candidate& c : compiled)
    if (c.kind == kind && posenc_isa_available(c.isa) && (!c.non_temporal || bytes > llc))
      usable.push_back(c);
  return usable;
}

void OnePass(const limit_candidate& c, float* x, size_t n) {
  if (c.kind == LIMIT_RMW)
    c.fn(x, n, g_scale, g_offset);
  else
    c.fn(x, n, 0.0f, g_fill);
}

double SecondsPerPass(const limit_candidate& c, float* x, size_t n, int passes) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < passes; ++i) OnePass(c, x, n);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / passes;
}

// Passes per timing so that one timing takes about kChoiceBatchSeconds (after a warm-up).
int PassesPerTiming(const limit_candidate& c, float* x, size_t n) {
  OnePass(c, x, n);
  const double once = SecondsPerPass(c, x, n, 1);
  return static_cast<int>(std::clamp(kChoiceBatchSeconds / std::max(once, 1e-9), 1.0, 1e6));
}

// Times every usable candidate kChoiceRounds times, round-robin (so that drift hits all of
// them alike), and returns the one with the best time.
limit_candidate Fastest(limit_kind kind, float* x, size_t n) {
  const std::vector<limit_candidate> candidates = UsableCandidates(kind, n * sizeof(float));
  std::vector<int> passes;
  for (const limit_candidate& c : candidates) passes.push_back(PassesPerTiming(c, x, n));
  std::vector<double> best(candidates.size(), 1e300);
  for (int round = 0; round < kChoiceRounds; ++round)
    for (size_t i = 0; i < candidates.size(); ++i)
      best[i] = std::min(best[i], SecondsPerPass(candidates[i], x, n, passes[i]));
  return candidates[std::min_element(best.begin(), best.end()) - best.begin()];
}

// The choice is made once per (kind, size) and kept for later runs and repetitions.
const limit_candidate& ChosenCandidate(limit_kind kind, float* x, size_t n) {
  static std::map<std::pair<limit_kind, size_t>, limit_candidate> chosen;
  const auto key = std::make_pair(kind, n);
  auto it = chosen.find(key);
  if (it == chosen.end()) it = chosen.emplace(key, Fastest(kind, x, n)).first;
  return it->second;
}

// Bytes read + written per pass: 2n for the in-place rmw stream, n for store-only.
void RunLimit(benchmark::State& state, limit_kind kind, size_t bytes) {
  NotifyRowEnter(LimitRowName(kind == LIMIT_RMW, bytes), state.max_iterations);
  const size_t n = bytes / sizeof(float);
  const AlignedFloats buf = RandomFloats(n, 3);
  const limit_candidate& candidate = ChosenCandidate(kind, buf.get(), n);
  state.SetLabel(candidate.name);
  OnePass(candidate, buf.get(), n);
  for (auto _ : state) {
    OnePass(candidate, buf.get(), n);
    benchmark::ClobberMemory();
  }
  const auto iterations = static_cast<int64_t>(state.iterations());
  const int64_t traffic = (kind == LIMIT_RMW ? 2 : 1) * static_cast<int64_t>(bytes);
  state.SetBytesProcessed(iterations * traffic);
  state.SetItemsProcessed(iterations * static_cast<int64_t>(n));
}

}  // namespace

std::vector<size_t> LimitSizes() {
  std::vector<size_t> sizes;
  for (const RowGroup& group : RowGroups()) sizes.push_back(group.limit_bytes);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::string LimitRowName(bool rmw, size_t bytes) {
  return std::string(rmw ? "limit_rmw" : "limit_write") + "/bytes:" + std::to_string(bytes);
}

void RegisterLimitRows() {
  for (size_t bytes : LimitSizes())
    for (limit_kind kind : {LIMIT_RMW, LIMIT_WRITE})
      benchmark::RegisterBenchmark(LimitRowName(kind == LIMIT_RMW, bytes).c_str(), RunLimit, kind,
                                   bytes);
}

}  // namespace posenc_bench
