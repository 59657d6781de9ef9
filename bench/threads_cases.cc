// Thread-scaling rows: one RoPE prefill split over tokens across OpenMP threads, the way a
// caller's thread pool splits it (examples/prefill_openmp.c); posenc itself stays
// single-threaded. Thread j of n rotates tokens [L*j/n, L*(j+1)/n) in one posenc_rope_f32
// call per pass.
//   rope_f32_neox_threads/<isa>/tokens:<L>/heads:40/dim:128/threads:<n>
// for n = 1, 2, 4, ... and the processor count, on scalar and on the ISA the dispatcher picks
// by itself. Shapes, base, positions (1000 + t) and byte counting are those of rope_cases.cc's
// rope_f32_neox rows, so threads:1 matches that row and bytes/s ratios are time ratios.
// Wall-clock time (UseRealTime; Google Benchmark appends "/real_time" to these names, and its
// bytes/s divide by wall time). Registered when posenc_bench starts, by this file alone
// (posenc_bench_cases, which posenc-report shares, knows nothing of it); built only where
// the compiler has OpenMP.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <memory>
#include <string>
#include <vector>

#include "bench_buffer.h"
#include "bench_rows.h"
#include "posenc.h"
#include "posenc_bench_cases.h"

namespace posenc_bench {
namespace {

constexpr double kBase = 10000.0;
constexpr int32_t kFirstPosition = 1000;
constexpr size_t kQHeads = 32, kKHeads = 8, kDim = 128;  // Llama-3-8B-like, as rope_cases.cc
const size_t kTokens[] = {512, 4096};                    // prefill: 10 MiB and 80 MiB of Q + K
constexpr int kTeamTooSmall = 1000;                      // a "status" above every posenc_status

struct Prefill {
  size_t tokens;
  const posenc_rope_plan* plan;
  float* q;  // [tokens, 32, 128]
  float* k;  // [tokens, 8, 128]
  const int32_t* positions;
};

// Thread j's slice of n: tokens [t0, t1).
size_t SliceStart(size_t tokens, int j, int n) { return tokens * j / n; }

posenc_status RotateSlice(const Prefill& p, int j, int n) {
  const size_t t0 = SliceStart(p.tokens, j, n), t1 = SliceStart(p.tokens, j + 1, n);
  const posenc_rope_tensor q = {p.q + t0 * kQHeads * kDim, kQHeads, kQHeads * kDim, kDim};
  const posenc_rope_tensor k = {p.k + t0 * kKHeads * kDim, kKHeads, kKHeads * kDim, kDim};
  return posenc_rope_f32(p.plan, kDim, t1 - t0, p.positions + t0, 0, &q, &k, POSENC_ROPE_NEOX);
}

// Values in [-1, 1) from the element index (a hash), so that any thread can fill any slice.
float ValueAt(size_t i) {
  uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  return static_cast<float>(h >> 40) * 0x1p-23f - 1.0f;
}

// Each thread first touches the rows it will rotate (page placement on NUMA machines, as in a
// runtime whose previous layer wrote them with the same split).
void FillSlice(const Prefill& p, int j, int n) {
  const size_t t0 = SliceStart(p.tokens, j, n), t1 = SliceStart(p.tokens, j + 1, n);
  for (size_t i = t0 * kQHeads * kDim; i < t1 * kQHeads * kDim; ++i) p.q[i] = ValueAt(i);
  for (size_t i = t0 * kKHeads * kDim; i < t1 * kKHeads * kDim; ++i) p.k[i] = -ValueAt(i);
}

// One parallel region of `threads` threads, thread j on slice j. Returns the worst status, or
// kTeamTooSmall if OpenMP gave fewer threads (OMP_THREAD_LIMIT, OMP_DYNAMIC).
int ParallelPass(const Prefill& p, int threads, bool fill) {
  int worst = POSENC_OK;
#pragma omp parallel num_threads(threads) reduction(max : worst)
  {
    const int j = omp_get_thread_num();
    if (omp_get_num_threads() != threads) {
      worst = kTeamTooSmall;
    } else if (fill) {
      FillSlice(p, j, threads);
    } else {
      worst = static_cast<int>(RotateSlice(p, j, threads));
    }
  }
  return worst;
}

void RunThreads(benchmark::State& state, posenc_isa isa, size_t tokens, int threads) {
  if (posenc_set_isa(isa) != POSENC_OK) {
    state.SkipWithError("posenc_set_isa failed");
    return;
  }
  posenc_rope_plan* raw_plan = nullptr;
  if (posenc_rope_plan_create(&raw_plan, kDim, kBase, 1.0) != POSENC_OK) {
    state.SkipWithError("posenc_rope_plan_create failed");
    return;
  }
  const std::unique_ptr<posenc_rope_plan, void (*)(posenc_rope_plan*)> plan(
      raw_plan, posenc_rope_plan_destroy);
  const size_t q_elements = tokens * kQHeads * kDim, k_elements = tokens * kKHeads * kDim;
  const AlignedFloats q = AlignedFloatArray(q_elements), k = AlignedFloatArray(k_elements);
  std::vector<int32_t> positions(tokens);
  for (size_t t = 0; t < tokens; ++t) positions[t] = kFirstPosition + static_cast<int32_t>(t);
  const Prefill p = {tokens, plan.get(), q.get(), k.get(), positions.data()};

  ParallelPass(p, threads, /*fill=*/true);
  const int first = ParallelPass(p, threads, /*fill=*/false);  // untimed: checks, warms
  if (first != POSENC_OK) {
    state.SkipWithError(first == kTeamTooSmall ? "OpenMP gave fewer threads than asked"
                                               : "posenc_rope_f32 failed");
    return;
  }
  for (auto _ : state) {
    ParallelPass(p, threads, /*fill=*/false);
    benchmark::ClobberMemory();
  }
  const auto iterations = static_cast<int64_t>(state.iterations());
  const size_t elements = q_elements + k_elements;
  state.SetBytesProcessed(iterations * 2 * FloatBytes(elements));  // read + written
  state.SetItemsProcessed(iterations * static_cast<int64_t>(elements));
}

// 1, 2, 4, ... below the processor count, then the processor count.
std::vector<int> ThreadCounts() {
  const int procs = omp_get_num_procs();
  std::vector<int> counts;
  for (int n = 1; n < procs; n *= 2) counts.push_back(n);
  counts.push_back(procs);
  return counts;
}

void RegisterThreadRows() {
  std::vector<posenc_isa> isas = {POSENC_ISA_SCALAR};
  const posenc_isa best = posenc_active_isa();  // nothing has called posenc_set_isa yet
  if (best != POSENC_ISA_SCALAR) isas.push_back(best);
  for (posenc_isa isa : isas)
    for (size_t tokens : kTokens)
      for (int threads : ThreadCounts()) {
        const std::string shape =
            "tokens:" + std::to_string(tokens) + "/heads:" + std::to_string(kQHeads + kKHeads) +
            "/dim:" + std::to_string(kDim) + "/threads:" + std::to_string(threads);
        const std::string name = RowName("rope_f32_neox_threads", posenc_isa_name(isa), shape);
        benchmark::RegisterBenchmark(name.c_str(), RunThreads, isa, tokens, threads)->UseRealTime();
      }
}

// posenc_bench's main registers the other rows after these.
const bool registered = (RegisterThreadRows(), true);

}  // namespace
}  // namespace posenc_bench
