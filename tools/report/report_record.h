// What posenc-report saves beside Google Benchmark's JSON: a "posenc" object with the CPU
// description, the run's options, the self-check's results, the row groups and the bytes/s
// of every row (the median of its repetitions: what the tables show and the plots draw),
// written as the first member of Google Benchmark's top-level object (whose "context" and
// "benchmarks" stay as Google Benchmark wrote them).
#ifndef POSENC_TOOLS_REPORT_RECORD_H
#define POSENC_TOOLS_REPORT_RECORD_H

#include <cstdint>
#include <string>
#include <vector>

#include "posenc.h"
#include "report_json.h"

namespace posenc_report {

// How the active ISA was chosen, taken before anything calls posenc_set_isa() (the
// self-check and the benchmark rows do).
struct IsaChoice {
  posenc_isa active;
  posenc_isa_source source;
  posenc_isa requested;
  std::vector<int> kernels;  // per posenc_kernel, the tier that serves it (posenc_kernel_isa)
};
IsaChoice CurrentIsaChoice();

// Version, CPU name and features, ISAs (compiled, available, active and why), logical CPUs,
// caches and clock as Google Benchmark sees them.
JsonValue CpuDescriptionJson(const IsaChoice& isa);

// The self-check's tables, read back from its printed text: per table, the rows of each ISA
// (column name -> number or string, "result" PASS/FAIL), plus the text itself.
JsonValue SelfCheckJson(uint64_t seed, bool pass, const std::string& text);

// Writes Google Benchmark's JSON from `benchmark_json_path` to `path` with `posenc`, plus its
// "bytes_per_second" of every row (report_rates.h), added as the first member of its
// top-level object. Returns false and sets `error` on failure.
bool WriteReportJson(const std::string& benchmark_json_path, JsonValue posenc,
                     const std::string& path, std::string& error);

}  // namespace posenc_report

#endif  // POSENC_TOOLS_REPORT_RECORD_H
