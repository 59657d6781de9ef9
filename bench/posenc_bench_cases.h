// The posenc benchmark rows, as a library: posenc_bench (main + this) and posenc-report
// register and run the very same benchmarks.
//
// Row names are a contract that reports and plots parse (DESIGN.md, "Benchmarks"):
//   <kernel>/<variant>/<arg>:<value>/...     variant: an available ISA name, or "naive"
//     rope_f32_neox/avx512/tokens:512/heads:40/dim:128     (heads: Q + K heads)
//     rope_rerotate_f32/avx2/tokens:4096/heads:8/dim:128/shift:1024/longrope:0   (K heads;
//       also _bf16, and rope_rerotate_two_pass_f32: INVERSE then forward posenc_rope_f32)
//     mrope_f32_neox/avx512/tokens:4096/heads:32/dim:128/vision:1
//     sinusoid_fill_f32/avx2/rows:4096/dim:4096
//     sinusoid_add_f32/sse4/rows:512/dim:4096
//     sinusoid_fill_bf16/avx512/rows:4096/dim:4096           (also _f16: 2-byte elements)
//     alibi_add_f32/naive/heads:32/q:1/k:4096/causal:1
//     alibi_add_bf16/avx2/heads:32/q:512/k:512/causal:0       (also _f16)
//     alibi_softmax_f32/avx512/heads:32/q:512/k:512/causal:1
//     learned_add_f32/scalar/tokens:512/dim:4096
//   limit_rmw/bytes:<n>, limit_write/bytes:<n>              n: a buffer size of the rows
// Every row sets bytes_per_second (bytes read + written) and items_per_second (elements
// produced). Each kernel row is compared with one limit row (RowGroup::limit_*), and the two
// count the same bytes, so that ratios of bytes/s are ratios of time:
//   - in place (rope, sinusoid_add, alibi_add, the alibi softmax rows) on an n-byte buffer:
//     2n, every byte read and written once; limit_rmw/bytes:n counts 2n. Causal rows count
//     their whole buffer as in place although the masked elements are only written, not
//     read: the row states the cost of the call on that buffer, whatever the kernel skips.
//   - store-only (sinusoid_fill) on an n-byte output: n; limit_write/bytes:n counts n.
//   n counts the bytes of the storage type: 2 per element for bf16 / f16 rows.
//   - the one exception, learned_add: 2n for its n-byte x in place plus n for the gathered
//     table rows read (3n), compared with limit_rmw/bytes:n (2n), the in-place stream over
//     x that the kernel cannot beat. Its ratio of bytes/s is a ratio of bandwidths (1.5 x
//     the ratio of times) and may exceed 100%.
// Work outside the buffers is not counted (naive's precomputed tables, posenc's plans).
#ifndef POSENC_BENCH_CASES_H
#define POSENC_BENCH_CASES_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace posenc_bench {

// One kernel at one shape: the rows <kernel>/<variant>/<shape> of every variant, and the
// limit row they are compared with.
struct RowGroup {
  std::string kernel;  // "alibi_add_f32"
  std::string shape;   // "heads:32/q:512/k:512/causal:1"
  bool limit_rmw;      // compared with limit_rmw (in place), else with limit_write
  size_t limit_bytes;  // the n of that limit row
  std::string about;   // for the report: the buffers, "8388608 bytes in place"
};

// Every group, in registration order: rope, rope_rerotate (f32, bf16, two_pass_f32),
// mrope_f32_neox, sinusoid_fill, sinusoid_add, sinusoid_fill_bf16,
// sinusoid_fill_f16, alibi_add (f32, then bf16 and f16), alibi_softmax_f32,
// alibi_softmax_bf16, alibi_add_then_softmax_f32, learned_add.
const std::vector<RowGroup>& RowGroups();

// The variants registered: every ISA posenc_isa_available() reports, in posenc_isa order,
// then "naive".
std::vector<std::string> Variants();

// "rope_f32_neox/avx512/tokens:512/heads:40/dim:128"
std::string RowName(const std::string& kernel, const std::string& variant,
                    const std::string& shape);

// The distinct limit_bytes of RowGroups(), ascending; each has both limit rows.
std::vector<size_t> LimitSizes();
// "limit_rmw/bytes:<n>" (rmw = true) or "limit_write/bytes:<n>".
std::string LimitRowName(bool rmw, size_t bytes);

// Registers every kernel and limit row with Google Benchmark. Call once, before
// benchmark::RunSpecifiedBenchmarks().
void RegisterAll();

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
