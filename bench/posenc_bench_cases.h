// The posenc benchmark rows, as a library: posenc_bench (main + this) and posenc-report
// register and run the very same benchmarks.
//
// Row names are a contract that reports and plots parse (DESIGN.md, "Benchmarks"):
//   <kernel>/<variant>/tokens:<L>/heads:<Hq+Hk>/dim:<D>   variant: an ISA name or "naive"
//   limit_rmw/bytes:<n>, limit_write/bytes:<n>            n: the rope rows' Q + K bytes
// Every row sets bytes_per_second (bytes read + written) and items_per_second (elements
// produced). A rope row and the limit_rmw row of its size count the same bytes (2 * n: the
// in-place stream reads and writes each byte), so ratios of bytes/s are ratios of time.
#ifndef POSENC_BENCH_CASES_H
#define POSENC_BENCH_CASES_H

#include <cstddef>
#include <string>
#include <vector>

namespace posenc_bench {

// Llama-3-8B-like heads: 32 Q heads and 8 K heads (GQA), head_dim = rotary_dim = 128,
// layout [L, H, D] with separate Q and K buffers.
struct RopeShape {
  size_t tokens;
  size_t q_heads;
  size_t k_heads;
  size_t head_dim;
  size_t rotary_dim;
};

// Decode (1 token), cache resident (16), prefill (512, 4096).
const std::vector<RopeShape>& RopeShapes();

// "rope_f32_neox", "rope_f32_gptj".
const std::vector<std::string>& RopeKernelNames();

// The variants registered: every ISA posenc_isa_available() reports, in posenc_isa order,
// then "naive".
std::vector<std::string> RopeVariants();

// "tokens:512/heads:40/dim:128"
std::string RopeShapeName(const RopeShape& shape);
// "rope_f32_neox/avx512/tokens:512/heads:40/dim:128"
std::string RopeRowName(const std::string& kernel, const std::string& variant,
                        const RopeShape& shape);

// Bytes of the Q and K buffers of a shape (f32): the n of its limit rows.
size_t RopeBufferBytes(const RopeShape& shape);

// The distinct RopeBufferBytes of RopeShapes(), ascending.
std::vector<size_t> LimitSizes();
// "limit_rmw/bytes:<n>" (rmw = true) or "limit_write/bytes:<n>".
std::string LimitRowName(bool rmw, size_t bytes);

// Registers every rope and limit row with Google Benchmark. Call once, before
// benchmark::RunSpecifiedBenchmarks().
void RegisterAll();

// Adds the CPU (name, features, available ISAs, posenc version) to Google Benchmark's
// context, so that its JSON output says what ran.
void AddCpuContext();

// Registration helpers, defined in rope_cases.cc and limit_cases.cc.
void RegisterRopeRows();
void RegisterLimitRows();

}  // namespace posenc_bench

#endif  // POSENC_BENCH_CASES_H
