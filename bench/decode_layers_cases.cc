// Decode through the layers: one decode token through the 32 layers of a Llama-3-8B-like
// model (32 Q heads, 8 K heads, head_dim 128), each layer's RoPE on the token's fresh q and k
// after the layer's weights went through the caches. posenc_bench_cases.h ("Decode through
// the layers") describes the rows:
//   rope_decode_layers_f32/<isa>/layers:32/heads:32/kv:8/dim:128/mode:percall
//   rope_decode_layers_f32/<isa>/layers:32/heads:32/kv:8/dim:128/mode:shared
//   rope_decode_layers_f32/naive/layers:32/heads:32/kv:8/dim:128
// (Google Benchmark reports them with "/iterations:<n>/manual_time" appended.)
// The cold rows time the same layers with a larger stand-in, E MiB per layer, in the three
// forms a runtime has (posenc_bench_cases.h, "Cold calls"):
//   rope_cold_layer_f32/{posenc,floor,runtime_loop}/stream_mib:{32,256}
//
// How RoPE alone is timed: a steady_clock reading right before and right after each layer's
// RoPE (percall: the posenc_rope_f32 call; shared: the two posenc_rope_apply calls; naive:
// the inline loop), plus one interval around shared's posenc_rope_factors_compute at the
// start of the token; each interval less the clock's own cost (the median of back-to-back
// readings, measured once: counter clock_ns). The stand-in stream and the q / k writes lie
// outside every interval. The token's sum / 32 is the iteration's manual time, so the time
// Google Benchmark reports is RoPE per token per layer (shared: the factors' cost spread
// over the 32 layers). A twin loop without RoPE subtracted from the whole token's time was
// not used: RoPE is ~1-2 us of a ~1 ms layer, inside the stream's own jitter.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bench_buffer.h"
#include "bench_rows.h"
#include "caller_inline.h"
#include "posenc.h"
#include "posenc_bench_cases.h"
#include "rope_naive.h"

namespace posenc_bench {
namespace {

constexpr size_t kLayers = 32, kQHeads = 32, kKHeads = 8, kDim = 128;
constexpr double kBase = 10000.0;
constexpr int32_t kFirstPosition = 1000;  // token j at 1000 + j % 4096
constexpr int64_t kPositionPeriod = 4096;
constexpr size_t kLayerWeightBytes = 8 << 20;  // the stand-in read per layer
constexpr size_t kMinRingBytes = kLayers * kLayerWeightBytes;
// Tokens per run: Google Benchmark sizes manual-time runs by the manual time alone (no
// wall-clock cap), and an iteration's manual time (~2 us: RoPE per layer) is ~1/10000 of its
// wall time (~30 ms), so it would run millions of tokens to reach min_time.
constexpr int64_t kTokensPerRun = 64;
constexpr size_t kQElements = kQHeads * kDim, kKElements = kKHeads * kDim;
constexpr const char* kKernel = "rope_decode_layers_f32";

enum class Mode { kPerCall, kShared, kInline, kNaive, kNaiveFactors };

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The cost of one interval measured with nothing in it: the median of many back-to-back
// pairs of readings.
double ClockOverheadSeconds() {
  static const double overhead = [] {
    std::vector<double> samples(2001);
    for (double& s : samples) {
      const Clock::time_point a = Clock::now();
      const Clock::time_point b = Clock::now();
      s = Seconds(b - a);
    }
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
    return samples[samples.size() / 2];
  }();
  return overhead;
}

// The weights' stand-in, shared by the rows of one slice size and made once: a ring of
// slices of `slice_bytes` (8 MiB for the decode rows, E MiB for the cold rows), at least two,
// at least 32 x 8 MiB in all and at least twice the last-level cache, so that a slice is
// never still cached when it is read again. Filled with a pattern (pages faulted in here).
struct WeightRing {
  explicit WeightRing(size_t slice_bytes) {
    const auto slices_for = [&](size_t bytes) { return (bytes + slice_bytes - 1) / slice_bytes; };
    slices =
        std::max({size_t{2}, slices_for(kMinRingBytes), slices_for(2 * LastLevelCacheBytes())});
    words_per_slice = slice_bytes / sizeof(uint64_t);
    const size_t bytes = slices * slice_bytes;
    data.reset(static_cast<uint64_t*>(std::aligned_alloc(64, bytes)));
    if (!data) throw std::bad_alloc();
    for (size_t i = 0; i < slices * words_per_slice; ++i) data[i] = i * 0x9E3779B97F4A7C15ull;
  }
  const uint64_t* Slice(size_t i) const { return data.get() + (i % slices) * words_per_slice; }
  std::unique_ptr<uint64_t[], FreeDeleter> data;
  size_t slices = 0;
  size_t words_per_slice = 0;
};

// The ring of one slice size (made on first use; kept: rows repeat).
const WeightRing& Ring(size_t slice_bytes) {
  static std::map<size_t, std::unique_ptr<WeightRing>> rings;
  std::unique_ptr<WeightRing>& ring = rings[slice_bytes];
  if (!ring) ring = std::make_unique<WeightRing>(slice_bytes);
  return *ring;
}

// The cheap reduction that reads a slice through (integer adds: the compiler vectorises them).
uint64_t ReadSlice(const uint64_t* words, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += words[i];
  return sum;
}

// The token's q and k rows, the values a layer's projections would write, and the RoPE of
// each mode.
struct DecodeState {
  explicit DecodeState(Mode m)
      : mode(m),
        q(AlignedFloatArray(kQElements)),
        k(AlignedFloatArray(kKElements)),
        fresh(RandomFloats(kQElements + kKElements + kLayers * kDim, 5)),
        factor_bytes(posenc_rope_factors_bytes(kDim, 1, POSENC_ROPE_NEOX)),
        factor_storage(AlignedFloatArray(factor_bytes / sizeof(float) + 1)) {}

  // Layer l's projections as a matvec makes them: the layer's weights (`slice`, n words)
  // stream through the caches in one part per output head vector (32 Q, then 8 K), each
  // part followed by the writes of that head's fresh q or k values (a window of `fresh`
  // that moves with the layer), so that the rows are written while the weights stream, as
  // the output elements of a matvec are, and not all at once right before RoPE.
  uint64_t StreamAndProject(size_t layer, const uint64_t* slice, size_t n) {
    const float* from = fresh.get() + layer * kDim;
    const size_t heads = kQHeads + kKHeads, part = n / heads;
    uint64_t sum = 0;
    for (size_t h = 0; h < heads; ++h) {
      sum += ReadSlice(slice + h * part, h + 1 == heads ? n - h * part : part);
      float* to = h < kQHeads ? q.get() + h * kDim : k.get() + (h - kQHeads) * kDim;
      std::memcpy(to, from + h * kDim, kDim * sizeof(float));
    }
    return sum;
  }

  // The token's work before its first layer (shared: the factors of its position).
  posenc_status BeginToken(int32_t position) {
    if (mode == Mode::kNaiveFactors) {
      naive_rope_table(1, &position, kDim, kBase, naive_cos, naive_sin);
      return POSENC_OK;
    }
    if (mode != Mode::kShared && mode != Mode::kInline) return POSENC_OK;
    return posenc_rope_factors_compute(plan.get(), 1, &position, 0, POSENC_ROPE_NEOX,
                                       factor_storage.get(), factor_bytes, &factors);
  }

  posenc_status Rope(int32_t position) {
    switch (mode) {
      case Mode::kPerCall: {
        const posenc_rope_tensor qt = {q.get(), kQHeads, kQElements, kDim};
        const posenc_rope_tensor kt = {k.get(), kKHeads, kKElements, kDim};
        return posenc_rope_f32(plan.get(), kDim, 1, &position, 0, &qt, &kt, POSENC_ROPE_NEOX);
      }
      case Mode::kShared: {
        const posenc_rope_view qv = {q.get(), POSENC_DTYPE_F32, kQHeads, kQElements, kDim, 0};
        const posenc_rope_view kv = {k.get(), POSENC_DTYPE_F32, kKHeads, kKElements, kDim, 0};
        const posenc_status q_status =
            posenc_rope_apply(&factors, 0, 0, kDim, 1, 1, &qv, &qv, POSENC_ROPE_NEOX);
        const posenc_status k_status =
            posenc_rope_apply(&factors, 0, 0, kDim, 1, 1, &kv, &kv, POSENC_ROPE_NEOX);
        return q_status != POSENC_OK ? q_status : k_status;
      }
      case Mode::kInline:
        return bench_inline_apply_qk(&factors, q.get(), kQHeads, k.get(), kKHeads, kDim);
      case Mode::kNaiveFactors:
        naive_rope_neox(q.get(), 1, kQHeads, kDim, kDim, naive_cos, naive_sin);
        naive_rope_neox(k.get(), 1, kKHeads, kDim, kDim, naive_cos, naive_sin);
        return POSENC_OK;
      case Mode::kNaive:
        break;
    }
    naive_rope_decode_inline(q.get(), kQHeads, k.get(), kKHeads, kDim, position);
    return POSENC_OK;
  }

  Mode mode;
  std::shared_ptr<posenc_rope_plan> plan;
  AlignedFloats q, k, fresh;
  size_t factor_bytes;
  AlignedFloats factor_storage;
  posenc_rope_factors factors = {};
  float naive_cos[kDim / 2], naive_sin[kDim / 2];  // kNaiveFactors: the token's table
};

struct TokenTimes {
  double rope = 0;     // seconds of RoPE over the token's layers, with shared's factors
  double factors = 0;  // shared: the factors' part of that
  bool ok = true;      // every call returned POSENC_OK
};

// One token through the layers. Each interval counts its time less the clock's cost, at
// least 0.
TokenTimes RunToken(DecodeState& s, const WeightRing& ring, int64_t token, uint64_t& sink) {
  const int32_t position = kFirstPosition + static_cast<int32_t>(token % kPositionPeriod);
  const double overhead = ClockOverheadSeconds();
  TokenTimes times;
  if (s.mode == Mode::kShared || s.mode == Mode::kInline || s.mode == Mode::kNaiveFactors) {
    const Clock::time_point t0 = Clock::now();
    times.ok &= s.BeginToken(position) == POSENC_OK;
    const Clock::time_point t1 = Clock::now();
    times.factors = std::max(Seconds(t1 - t0) - overhead, 0.0);
    times.rope = times.factors;
  }
  for (size_t layer = 0; layer < kLayers; ++layer) {
    sink += s.StreamAndProject(layer, ring.Slice(static_cast<size_t>(token) * kLayers + layer),
                               ring.words_per_slice);
    const Clock::time_point t0 = Clock::now();
    times.ok &= s.Rope(position) == POSENC_OK;
    const Clock::time_point t1 = Clock::now();
    times.rope += std::max(Seconds(t1 - t0) - overhead, 0.0);
  }
  benchmark::DoNotOptimize(s.q.get()[0]);
  benchmark::DoNotOptimize(s.k.get()[kKElements - 1]);
  return times;
}

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kPerCall:
      return "percall";
    case Mode::kShared:
      return "shared";
    case Mode::kNaiveFactors:
      return "factors";
    case Mode::kInline:
      return "inline";
    default:
      return "";  // the naive row has no mode
  }
}
bool IsNaive(Mode mode) { return mode == Mode::kNaive || mode == Mode::kNaiveFactors; }

// One row: tokens through the layers, a ring of slice_bytes slices as the weights; `run_name`
// as Google Benchmark reports it.
void RunLayers(benchmark::State& state, const std::string& run_name, posenc_isa isa, Mode mode,
               size_t slice_bytes) {
  NotifyRowEnter(run_name, state.max_iterations);
  if (!IsNaive(mode) && posenc_set_isa(isa) != POSENC_OK) {
    state.SkipWithError("posenc_set_isa failed");
    return;
  }
  DecodeState s(mode);
  posenc_rope_plan* raw_plan = nullptr;
  if (posenc_rope_plan_create(&raw_plan, kDim, kBase, 1.0) != POSENC_OK) {
    state.SkipWithError("posenc_rope_plan_create failed");
    return;
  }
  s.plan.reset(raw_plan, posenc_rope_plan_destroy);
  const WeightRing& ring = Ring(slice_bytes);
  uint64_t sink = 0;
  // One untimed token: checks the calls, warms what a running model has warm (code, plan).
  if (!RunToken(s, ring, 0, sink).ok) {
    state.SkipWithError("a RoPE call failed");
    return;
  }
  double rope_seconds = 0, factor_seconds = 0, token_seconds = 0;
  int64_t token = 0;
  bool ok = true;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    const TokenTimes times = RunToken(s, ring, token++, sink);
    token_seconds += Seconds(Clock::now() - start);
    ok &= times.ok;
    rope_seconds += times.rope;
    factor_seconds += times.factors;
    state.SetIterationTime(times.rope / kLayers);
  }
  benchmark::DoNotOptimize(sink);
  if (!ok) {
    state.SkipWithError("a RoPE call failed");
    return;
  }
  const int64_t iterations = static_cast<int64_t>(state.iterations());
  using benchmark::Counter;
  state.counters["rope_ns_per_layer"] =
      Counter(rope_seconds * 1e9 / kLayers, Counter::kAvgIterations);
  state.counters["token_ms"] = Counter(token_seconds * 1e3, Counter::kAvgIterations);
  state.counters["clock_ns"] = Counter(ClockOverheadSeconds() * 1e9);
  if (mode == Mode::kShared || mode == Mode::kInline)
    state.counters["factors_ns"] = Counter(factor_seconds * 1e9, Counter::kAvgIterations);
  state.SetBytesProcessed(iterations * 2 * FloatBytes(kQElements + kKElements));
  state.SetItemsProcessed(iterations * static_cast<int64_t>(kQElements + kKElements));
}

void RunDecodeLayers(benchmark::State& state, posenc_isa isa, Mode mode) {
  const std::string variant = IsNaive(mode) ? "naive" : posenc_isa_name(isa);
  RunLayers(state, DecodeLayersRunName(variant, ModeName(mode)), isa, mode, kLayerWeightBytes);
}

// The cold rows: rope_cold_layer_f32/<form>/stream_mib:<E>, forms in registration order.
constexpr const char* kColdKernel = "rope_cold_layer_f32";
constexpr size_t kColdStreamMib[] = {32, 256};
struct ColdForm {
  const char* name;
  Mode mode;
};
constexpr ColdForm kColdForms[] = {{"posenc", Mode::kInline},
                                   {"posenc_call", Mode::kShared},
                                   {"floor", Mode::kNaiveFactors},
                                   {"runtime_loop", Mode::kNaive}};

// Tokens per run: 8 GiB streamed per run (32 layers x E MiB per token).
int64_t ColdTokensPerRun(size_t mib) {
  return std::max<int64_t>(1, static_cast<int64_t>(256 / mib));
}

std::string ColdRowName(const char* form, size_t mib) {
  return std::string(kColdKernel) + "/" + form + "/stream_mib:" + std::to_string(mib);
}

std::string ColdRunName(const char* form, size_t mib) {
  return ColdRowName(form, mib) + "/iterations:" + std::to_string(ColdTokensPerRun(mib)) +
         "/manual_time";
}

// The tier the posenc form runs: the automatic choice (or POSENC_ISA's), as a runtime gets it,
// read at registration, before any row sets one.
posenc_isa ColdIsa() {
  static const posenc_isa isa = posenc_active_isa();
  return isa;
}

void RunColdLayer(benchmark::State& state, ColdForm form, size_t mib) {
  if (form.mode == Mode::kShared) state.SetLabel(posenc_isa_name(ColdIsa()));
  if (form.mode == Mode::kInline)
    state.SetLabel(bench_inline_has_fma_loop() ? "posenc_inline.h, inline loop"
                                               : "posenc_inline.h, no FMA: posenc_rope_apply");
  RunLayers(state, ColdRunName(form.name, mib), ColdIsa(), form.mode, mib << 20);
}

void RegisterColdLayerRows() {
  ColdIsa();  // read now, before any row sets a tier
  for (size_t mib : kColdStreamMib)
    for (const ColdForm& form : kColdForms)
      benchmark::RegisterBenchmark(ColdRowName(form.name, mib).c_str(), RunColdLayer, form, mib)
          ->UseManualTime()
          ->Iterations(ColdTokensPerRun(mib));
}

}  // namespace

std::vector<std::string> ColdLayerForms() {
  std::vector<std::string> forms;
  for (const ColdForm& form : kColdForms) forms.push_back(form.name);
  return forms;
}

std::vector<size_t> ColdLayerStreamMib() {
  return std::vector<size_t>(std::begin(kColdStreamMib), std::end(kColdStreamMib));
}

std::string ColdLayerRunName(const std::string& form, size_t mib) {
  return ColdRunName(form.c_str(), mib);
}

std::vector<std::string> ColdLayerRunNames() {
  std::vector<std::string> names;
  for (size_t mib : kColdStreamMib)
    for (const ColdForm& form : kColdForms) names.push_back(ColdRunName(form.name, mib));
  return names;
}

std::string DecodeLayersShape() {
  return "layers:" + std::to_string(kLayers) + "/heads:" + std::to_string(kQHeads) +
         "/kv:" + std::to_string(kKHeads) + "/dim:" + std::to_string(kDim);
}

std::vector<std::string> DecodeLayersModes() { return {"percall", "shared"}; }

std::string DecodeLayersRowName(const std::string& variant, const std::string& mode) {
  const std::string row = RowName(kKernel, variant, DecodeLayersShape());
  return mode.empty() ? row : row + "/mode:" + mode;
}

std::string DecodeLayersRunName(const std::string& variant, const std::string& mode) {
  return DecodeLayersRowName(variant, mode) + "/iterations:" + std::to_string(kTokensPerRun) +
         "/manual_time";
}

std::vector<std::string> DecodeLayersRunNames() {
  std::vector<std::string> names;
  for (const std::string& variant : KernelVariants(POSENC_KERNEL_ROPE_F32)) {
    if (variant == "naive") {
      names.push_back(DecodeLayersRunName(variant, ""));
      names.push_back(DecodeLayersRunName(variant, "factors"));
    } else
      for (const std::string& mode : DecodeLayersModes())
        names.push_back(DecodeLayersRunName(variant, mode));
  }
  return names;
}

void RegisterDecodeLayersRows(RowSet set) {
  const auto add = [](const std::string& variant, posenc_isa isa, Mode mode) {
    const std::string name = DecodeLayersRowName(variant, ModeName(mode));
    benchmark::RegisterBenchmark(name.c_str(), RunDecodeLayers, isa, mode)
        ->UseManualTime()
        ->Iterations(kTokensPerRun);
  };
  if (set == RowSet::kAll) {
    for (const std::string& variant : KernelVariants(POSENC_KERNEL_ROPE_F32)) {
      posenc_isa isa;
      if (posenc_isa_from_name(variant.c_str(), &isa) != POSENC_OK) {
        add(variant, POSENC_ISA_SCALAR, Mode::kNaive);  // "naive": the ISA is not used
        add(variant, POSENC_ISA_SCALAR, Mode::kNaiveFactors);
        continue;
      }
      for (Mode mode : {Mode::kPerCall, Mode::kShared}) add(variant, isa, mode);
    }
  }
  RegisterColdLayerRows();
}

}  // namespace posenc_bench
