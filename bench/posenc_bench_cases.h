// The posenc benchmark rows, as a library: posenc_bench (main + this) and posenc-report
// register and run the very same benchmarks.
//
// Row names are a contract that reports and plots parse (DESIGN.md, "Benchmarks"):
//   <kernel>/<variant>/<arg>:<value>/...     variant: an available ISA name, or "naive"
//     rope_f32_neox/avx512/tokens:512/heads:40/dim:128     (heads: Q + K heads)
//     rope_out_f32_bf16_neox/avx2/tokens:512/heads:40/dim:128  (posenc_rope_out from an f32
//       [L, 40, 128] source into a separate destination; also _f32_f32_neox, _f32_f16_neox,
//       _f32_f32_gptj; no naive rows)
//     copy_then_rope_f32_f32_neox/avx2/tokens:512/heads:40/dim:128  (the same job done the old
//       way: memcpy, then posenc_rope_f32 in place on the copy; also _gptj; no naive rows)
//     rope_apply_f32_neox/avx2/tokens:512/heads:40/dim:128  (posenc_rope_apply in place on the
//       Q and K of rope_f32_neox, factors made beforehand, untimed; no naive rows)
//     rope_rerotate_f32/avx2/tokens:4096/heads:8/dim:128/shift:1024/longrope:0   (K heads;
//       also _bf16, and rope_rerotate_two_pass_f32: INVERSE then forward posenc_rope_f32)
//     mrope_f32_neox/avx512/tokens:4096/heads:32/dim:128/vision:1
//     sinusoid_fill_f32/avx2/rows:4096/dim:4096
//     sinusoid_add_f32/sse4/rows:512/dim:4096
//     sinusoid_fill_bf16/avx512/rows:4096/dim:4096           (also _f16: 2-byte elements)
//     alibi_add_f32/naive/heads:32/q:1/k:4096/causal:1
//     alibi_add_bf16/avx2/heads:32/q:512/k:512/causal:0       (also _f16)
//     alibi_softmax_f32/avx512/heads:32/q:512/k:512/causal:1
//     softmax_f32/avx512/heads:32/q:512/k:512/mask:kvcache    (posenc_softmax, in place; mask:
//       none, causal, kvcache (f32 [n_q, n_k] mask), kvcache16 (f16 mask); also q:1/k:4096,
//       .../mask:causal/sinks:1, .../mask:causal/window:256; softmax_bf16: bf16 x and y)
//     learned_add_f32/scalar/tokens:512/dim:4096
//   limit_rmw/bytes:<n>, limit_write/bytes:<n>, limit_copy/bytes:<n>   n: the bytes of a group
//   rope_decode_layers_f32/avx2/layers:32/heads:32/kv:8/dim:128/mode:percall  (and mode:shared
//     per ISA; rope_decode_layers_f32/naive/layers:32/heads:32/kv:8/dim:128): one decode token
//     through 32 layers, not a group (no limit row): see "Decode through the layers" below.
// Every row sets bytes_per_second (bytes read + written) and items_per_second (elements
// produced). Each kernel row is compared with one limit row (RowGroup::limit_*), and the two
// count the same bytes, so that ratios of bytes/s are ratios of time:
//   - in place (rope, sinusoid_add, alibi_add, the alibi softmax rows, softmax without a mask
//     array) on an n-byte buffer: 2n, every byte read and written once; limit_rmw/bytes:n
//     counts 2n. Causal rows count
//     their whole buffer as in place although the masked elements are only written, not
//     read: the row states the cost of the call on that buffer, whatever the kernel skips.
//   - store-only (sinusoid_fill) on an n-byte output: n; limit_write/bytes:n counts n.
//   n counts the bytes of the storage type: 2 per element for bf16 / f16 rows.
//   - out of place (rope_out) from an s-byte source into a d-byte destination: s + d, each
//     byte read or written once; limit_copy/bytes:n (n = s + d) reads n/2 bytes and writes
//     n/2 other bytes and counts n (for f32 -> bf16 / f16 the split differs, 2:1, the total
//     is the same). copy_then_rope counts the same s + d as rope_out (the cost of the same
//     job; its memcpy and in-place pass move more bytes than that).
//   - the exceptions, rows that also read an input array beside the in-place buffer:
//     learned_add: 2n for its n-byte x in place plus n for the gathered table rows read
//     (3n), compared with limit_rmw/bytes:n (2n), the in-place stream over x that the
//     kernel cannot beat. Its ratio of bytes/s is a ratio of bandwidths (1.5 x the ratio of
//     times) and may exceed 100%. softmax with a mask array (mask:kvcache, kvcache16): 2n
//     for the n bytes of scores in place plus the m bytes of the [n_q, n_k] mask, counted
//     once (the heads share it), against limit_rmw/bytes:n: (2n + m) / 2n = 1 + 1/(2 x 32
//     heads) times the ratio of times for an f32 mask on f32 scores. Causal and windowed
//     softmax rows count their whole buffer as in place, as causal alibi_add does (a decode
//     row with window:256 reads 1/16 of its row and writes all of it: it may pass 100%).
// Work outside the buffers is not counted (naive's precomputed tables, posenc's plans,
// rope_apply's factors, ALiBi slopes, softmax sinks).
//
// Decode through the layers (rope_decode_layers_f32, decode_layers_cases.cc): one Google
// Benchmark iteration is one decode token at position 1000 + (token index % 4096) through
// 32 layers. Per layer: read an 8 MiB stand-in for the layer's weights (a slice of a ring of
// at least 256 MiB and twice the last-level cache, summed as integers) so that the caches
// hold weights, not RoPE's data, while the token's fresh q [32, 128] and k [8, 128] f32 rows
// are written as a matvec writes its outputs (the stream in 40 parts, each followed by the
// writes of one head vector: the early heads leave the inner caches before RoPE, as in a
// runtime); then RoPE:
//   mode:percall  posenc_rope_f32(plan, q, k) per layer;
//   mode:shared   posenc_rope_factors_compute once per token (timed), then posenc_rope_apply
//                 on q and on k per layer (2 calls);
//   naive         the inline loop of small C runtimes (llama2.c): powf, cosf, sinf per head
//                 and pair, NEOX pairs (rope_naive.c);
//   naive mode:factors  a plain C loop applying a cos/sin table made once per token (timed):
//                 no library call, no sin/cos per layer, the cost of the data itself.
// Only RoPE is timed: a steady_clock reading before and after each layer's RoPE (and around
// the factors), less the clock's own cost measured at start-up (counter clock_ns), summed per
// token; the stand-in and the writes are outside those intervals. (A twin loop without RoPE,
// subtracted, would leave RoPE's ~1-2 us per layer inside the jitter of the ~1 ms stream.)
// The sum / 32 is the iteration's manual time (UseManualTime): the reported time is RoPE's
// time per token per layer (counter rope_ns_per_layer; factors_ns: shared's factors per
// token, included; token_ms: the whole token, wall clock).
// Bytes: q and k read and written once per layer (2 x 20480); items: their 5120 elements.
// Google Benchmark sizes a manual-time run by its manual time alone (no wall-clock cap), and
// an iteration's manual time is ~1/10000 of its wall time, so each run is a fixed 64 tokens
// (Iterations(64)); Google Benchmark appends "/iterations:64/manual_time" to these names
// (DecodeLayersRunName), in its output, its JSON and what --benchmark_filter matches.
#ifndef POSENC_BENCH_CASES_H
#define POSENC_BENCH_CASES_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace posenc_bench {

// The limit row a group is compared with: the in-place stream (limit_rmw), the store-only
// one (limit_write), or the copy from one buffer into another (limit_copy).
enum class LimitKind { kRmw, kWrite, kCopy };

// One kernel at one shape: the rows <kernel>/<variant>/<shape> of every variant, and the
// limit row they are compared with.
struct RowGroup {
  std::string kernel;  // "alibi_add_f32"
  std::string shape;   // "heads:32/q:512/k:512/causal:1"
  LimitKind limit;     // the kind of that limit row
  size_t limit_bytes;  // the n of that limit row
  std::string about;   // for the report: the buffers, "8388608 bytes in place"
  bool naive = true;   // has a naive row
  // The one dispatch-table kernel (posenc_kernel) its posenc rows call, or -1 for a row
  // that calls more than one (copy_then_rope, alibi_add_then_softmax,
  // rope_rerotate_two_pass): set from the kernel's name (DispatchKernelOf).
  int dispatch_kernel = -1;
  // The compute side of the row's roofline: the multiply-class vector operations (FMA,
  // multiply, scale: what limit_fma's loop runs) the kernel needs per element produced, at
  // least (adds, compares, conversions, shuffles and loads run on other units and are not
  // counted). Set from the kernel's name (FmaOpsPerItem, which derives each count).
  double fma_ops_per_item = 0;
  // The fraction of the elements the kernel computes (1 but where a mask hides some: those
  // are written 0 or skipped; with a mask array, each row from its first visible cell to its
  // last, the hidden cells inside computed as -inf lanes); the compute side of the roofline
  // counts these alone.
  double visible = 1.0;
  // One of the kernel's two core groups (posenc-report's default run, RowSet::kCore): its
  // group with the largest buffer of at most kCoreCacheBytes (cache-resident), and its group
  // with the largest buffer (DRAM-sized where the buffer passes the last-level cache); the
  // first registered of equal sizes. Set by RowGroups().
  bool core = false;
  // Every byte a pass touches where that is more than limit_bytes (learned_add's table, read
  // by a gather: 64 MiB at 512 x 4096); 0: limit_bytes (FootprintBytes).
  size_t footprint_bytes = 0;
};
inline size_t FootprintBytes(const RowGroup& group) {
  return group.footprint_bytes > group.limit_bytes ? group.footprint_bytes : group.limit_bytes;
}

// What posenc-report's default run calls cache-resident: at most this many limit bytes.
constexpr size_t kCoreCacheBytes = size_t{1} << 20;

// The rows RegisterAll registers: every group (kAll: posenc_bench, posenc-report --full), or
// the core groups alone (kCore); both with the cold rows and every limit and compute-limit
// row their groups need, kAll with the decode rows (rope_decode_layers_f32: a minute of
// streamed stand-ins, which the cold rows measure the way a runtime sees it).
enum class RowSet { kAll, kCore };
inline bool InRowSet(const RowGroup& group, RowSet set) {
  return set == RowSet::kAll || group.core;
}

// The multiply-class operations per element of a kernel (RowGroup::fma_ops_per_item).
double FmaOpsPerItem(const std::string& kernel);

// The posenc_kernel a group's rows call, from its kernel name; -1 for composites.
int DispatchKernelOf(const std::string& kernel);

// Every group, in registration order: rope (rope_f32_neox, _gptj, bf16, f16, rope_f32_neox_det),
// rope_out (f32_f32_neox, copy_then_rope_f32_f32_neox,
// the same for gptj, f32_bf16_neox, f32_f16_neox), rope_apply_f32_neox, rope_rerotate (f32,
// bf16, two_pass_f32), mrope_f32_neox, sinusoid_fill, sinusoid_add, sinusoid_fill_bf16,
// sinusoid_fill_f16, alibi_add (f32, then bf16 and f16), alibi_softmax_f32,
// alibi_softmax_bf16, alibi_add_then_softmax_f32, softmax_f32, softmax_bf16, softmax_out_f32,
// learned_add.
const std::vector<RowGroup>& RowGroups();

// The variants registered: every ISA posenc_isa_available() reports, in posenc_isa order,
// then "naive" (registered only in the groups that have it).
std::vector<std::string> Variants();

// Variants() without the tiers that have no variant of their own for `kernel` (a
// posenc_kernel), "naive" kept.
std::vector<std::string> KernelVariants(int kernel);

// The variants of `group` that have a row: Variants(), without "naive" unless group.naive,
// and without a tier that has no variant of its own for the group's kernel (avx512bf16 for
// the f32 and f16 kernels: the avx512 row is the same code).
std::vector<std::string> GroupVariants(const RowGroup& group);

// "rope_f32_neox/avx512/tokens:512/heads:40/dim:128"
std::string RowName(const std::string& kernel, const std::string& variant,
                    const std::string& shape);

// The limit rows, in registration order: for each distinct limit_bytes of the groups
// compared with limit_rmw or limit_write, ascending, both of those rows (rmw, then write);
// then limit_copy for each distinct limit_bytes of the groups compared with it, ascending.
struct LimitRow {
  LimitKind kind;
  size_t bytes;
};
std::vector<LimitRow> LimitRows(RowSet set = RowSet::kAll);
// "limit_rmw", "limit_write" or "limit_copy".
const char* LimitKindName(LimitKind kind);
// "limit_rmw/bytes:<n>", "limit_write/bytes:<n>" or "limit_copy/bytes:<n>".
std::string LimitRowName(LimitKind kind, size_t bytes);
// The compute-limit rows, registered after the stream limits: one per vector layer of the
// bench that this CPU runs ("limit_fma/avx512", "limit_fma/avx2", "limit_fma/sse2",
// "limit_fma/portable"): LIMIT_FMA_CHAINS (limit_candidates.h) independent chains of vector
// FMAs; items are vector FMAs, counters fma and flop (per second). No bytes: the report's
// fractions of the stream limits skip them.
std::string LimitFmaRowName(const std::string& layer);
std::vector<std::string> LimitFmaRowNames();
// The operation-mix rows (limit_mix.h), registered with the compute limits: for a kernel
// whose variant is bound by conversions and integer rounding rather than multiplies,
// independent chains of the operations it needs per `elements` elements;
// "limit_mix/<kernel>/<variant>" ("limit_mix/rope_bf16_neox/avx512bf16"), or
// "limit_mix/<kernel>/<variant>/<shape>" for a mix that serves the kernel's groups whose shape
// holds <shape> ("limit_mix/softmax_f32/avx512/mask:kvcache"), one per mix this CPU runs.
// Items are elements (the report's compute side of a row's roofline, in place of its
// multiply-class count); the label lists the operations.
std::vector<std::string> LimitMixRowNames();
// The mix row that bounds the group's rows of that variant ("": none), and the operations one
// round of it stands for with its elements ("" and 0: no mix).
std::string LimitMixRowName(const RowGroup& group, const std::string& variant);
std::pair<std::string, unsigned> LimitMixOps(const RowGroup& group, const std::string& variant);

// The decode-through-layers rows (see above): "layers:32/heads:32/kv:8/dim:128".
std::string DecodeLayersShape();
// The modes of the ISA rows, in registration order: "percall", "shared".
std::vector<std::string> DecodeLayersModes();
// The name a row is registered under: "rope_decode_layers_f32/avx2/<shape>/mode:percall"; for
// variant "naive", "rope_decode_layers_f32/naive/<shape>" (mode "") or ".../mode:factors".
std::string DecodeLayersRowName(const std::string& variant, const std::string& mode);
// The same name as Google Benchmark reports and filters it (its results, JSON, and what
// --benchmark_filter matches): the row name + "/iterations:<n>/manual_time".
std::string DecodeLayersRunName(const std::string& variant, const std::string& mode);
// Every decode row's run name, in registration order: per ISA percall then shared, then naive
// and naive mode:factors.
std::vector<std::string> DecodeLayersRunNames();

// Cold calls: RoPE of one decode token's q and k (32 Q + 8 K heads x 128, f32, NEOX) in each
// of 32 layers, after E MiB of the layer's weight stand-in streamed through the caches (the
// library's code, tables and TLB entries evicted, as in a real decode), ns per layer as the
// decode rows count it (counter rope_ns_per_layer; the token's factors or table included,
// spread over its layers). Forms: posenc (what the integration guide recommends: factors
// once per token by posenc_rope_factors_compute, applied to q and k in every layer by
// posenc_inline.h's step compiled into the caller with the naive loops' flags, label: the
// inline loop, or posenc_rope_apply where that build has no FMA), posenc_call (the same
// factors, then two posenc_rope_apply calls per layer, at the tier posenc chose at
// start-up, the row's label), floor (a cos/sin table made once per token by the bench's own
// C, applied by a plain loop compiled into the bench) and runtime_loop (powf/cosf/sinf
// inline per head and pair, as small C runtimes write it). Run names
// "rope_cold_layer_f32/<form>/stream_mib:<E>/iterations:<n>/manual_time", n tokens per run
// (8 GiB streamed).
std::vector<std::string> ColdLayerForms();  // "posenc", "posenc_call", "floor", "runtime_loop"
std::vector<size_t> ColdLayerStreamMib();   // 32, 256
std::string ColdLayerRunName(const std::string& form, size_t mib);
std::vector<std::string> ColdLayerRunNames();  // per E, per form, in registration order

// Groups of at least this many limit bytes (L3- and DRAM-sized: 16 MiB and up) are what
// posenc-report measures in paired rounds (MeasurePaired) rather than in Google Benchmark's
// run: at these sizes this host's bandwidth moves 10-20% from one run of a row to the next
// (and ~2x within minutes), so rows timed seconds or minutes apart do not give a ratio.
constexpr size_t kPairedMinBytes = size_t{16} << 20;
inline bool IsPairedGroup(const RowGroup& group) { return group.limit_bytes >= kPairedMinBytes; }
// The groups whose dispatcher check (a pick below 95% of the fastest row) is measured again in
// paired rounds: those that touch kPairedMinBytes or more (FootprintBytes).
inline bool IsPairedCheck(const RowGroup& group) {
  return FootprintBytes(group) >= kPairedMinBytes;
}
// The rows of a paired group measured in paired rounds: its SIMD ISA rows. Its scalar row
// (bound by its operations there, at 1-35% of the limit) and its naive loop (not posenc's)
// stay in Google Benchmark's run.
inline bool IsPairedRow(const RowGroup& group, const std::string& variant) {
  return IsPairedGroup(group) && variant != "naive" && variant != "scalar";
}

// Registers every kernel row, then the decode rows, then the limit rows with Google
// Benchmark. Call once, before benchmark::RunSpecifiedBenchmarks(). paired_apart: leave out
// the paired rows (IsPairedRow) and the limit rows of kPairedMinBytes and more, which
// MeasurePaired measures instead. baseline_repetitions > 0: the scalar and naive rows of the
// groups (IsBaselineRow) run that many repetitions instead of --benchmark_repetitions'
// (posenc-report's default run: they give the "vs scalar" and "vs naive" columns, not the
// fractions of the limit).
void RegisterAll(RowSet set = RowSet::kAll, bool paired_apart = false,
                 int baseline_repetitions = 0);

// The scalar and naive rows of a group (variant "scalar" or "naive").
inline bool IsBaselineRow(const std::string& variant) {
  return variant == "scalar" || variant == "naive";
}

// One row of a paired measurement: the name Google Benchmark gives it, its bytes and items
// per pass (as its Google Benchmark row counts them) and one time per round, in seconds.
struct PairedRow {
  std::string name;
  int64_t bytes_per_pass = 0;
  int64_t items_per_pass = 0;
  std::vector<double> seconds;
  std::string label;  // the limit row's loops ("avx2/x4 sse2/x4_pf16k ..."); "" for a kernel row
  std::string error;  // setup or the first pass failed: no seconds
};

// The rows of `variants` (ISA names, or "naive") of `group` (an element of RowGroups(): its
// rows are found by its place there) and then its limit row, measured side by side: each row
// set up once (its plan, its buffers: the ISA rows share one copy, SharedBuffers), then the
// limit row timed, rounds of the ISA rows, and the limit row again. A row timed after a row on
// other buffers first runs warm-up passes until its passes stop getting faster (at most
// enough to stream 4 x the last-level cache, 2 to 16), after one on the same buffers one pass;
// then each of its passes is timed once (the limit row: three of its loops, LimitPasses,
// bench_rows.h), the best time kept. In each round every ISA row is timed once, the order
// rotated by one row each round; rounds until `seconds` have passed, at least min_rounds, at
// most max_rounds. The limit row's best time of its two stands for every round. Within a
// group's rounds (about a second) the host's drift is small against the minutes between rows
// of Google Benchmark's run, and the rows on one copy of the buffers see one state of the
// caches: the state a loop of calls leaves, whichever ISA ran last. The limit row is last.
std::vector<PairedRow> MeasurePaired(const RowGroup& group,
                                     const std::vector<std::string>& variants, double seconds,
                                     int min_rounds, int max_rounds);

// Adds the CPU (name, features, available ISAs, posenc version) to Google Benchmark's
// context, so that its JSON output says what ran.
void AddCpuContext();

// Called each time Google Benchmark enters a row's function, before the row's untimed setup:
// several times in a row's first repetition (max_iterations grows while Google Benchmark
// sizes the run), once in each later one. For posenc-report's progress line; nullptr (the
// default): none.
using RowEnterHook = void (*)(const std::string& row_name, int64_t max_iterations);
void SetRowEnterHook(RowEnterHook hook);

}  // namespace posenc_bench

#endif  // POSENC_BENCH_CASES_H
