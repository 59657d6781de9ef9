// The throughput of each benchmark row, read out of Google Benchmark's JSON in one place:
// posenc-report saves it in its JSON's "posenc" object ("bytes_per_second"), compare reads it
// from every file, and the plot script (posenc_plot.py) draws what these functions give.
#ifndef POSENC_TOOLS_REPORT_RATES_H
#define POSENC_TOOLS_REPORT_RATES_H

#include <map>
#include <string>
#include <vector>

#include "report_json.h"

namespace posenc_report {

// Bytes/s per row name: Google Benchmark's median aggregate when it has one, else the median
// of the row's iteration runs (failed runs left out).
struct RowRates {
  std::vector<std::string> names;  // rows with iteration runs as they first appear, then the
                                   // rows that have only a median aggregate
  std::map<std::string, double> bytes_per_second;
  // Per row with iteration runs: 4 bytes per item times the items of one pass (the last
  // run's items_per_second x real_time), an estimate of its buffer size.
  std::map<std::string, double> buffer_estimate;
};

// The median of `v` (0 if empty), and the value below which a fraction q of it lies (linear
// between neighbours).
double Median(std::vector<double> v);
double Quantile(std::vector<double> v, double q);

// A limit row (limit_rmw/bytes:<n>, limit_write/bytes:<n>, ...), and its <n>.
bool IsLimitRow(const std::string& name);
// `text` without the "/repeats:<n>" that Google Benchmark puts in the name of a row registered
// with repetitions of its own (posenc-report's scalar and naive rows: BenchOptions::
// baseline_repetitions); row names are a contract (bench/posenc_bench_cases.h) that has none.
std::string WithoutRepeats(std::string text);
unsigned long long LimitRowBytes(const std::string& name);

// `benchmarks`: the "benchmarks" array of a Google Benchmark JSON file.
RowRates MedianRates(const JsonValue& benchmarks);

// Adds the rows of posenc-report's "paired" object ({row: {"bytes_per_second", ...}}: the rows
// measured in paired rounds, not by Google Benchmark) to `rates`, after its rows.
void AddPairedRates(const JsonValue& paired_rows, RowRates& rates);

// {row: bytes/s} in the order of `rates.names`.
JsonValue RatesJson(const RowRates& rates);

// Row groups (kernel, shape, buffer_bytes, limit) for a JSON file without posenc-report's
// "groups" (a plain posenc_bench file): a kernel row is compared with limit_copy for the
// out-of-place rows (rope_out, copy_then_rope, softmax_out; estimate doubled: source +
// destination), limit_write for table fills, else limit_rmw, and its buffer size is its estimate
// snapped to the nearest size of the file's limit rows of that kind (of any kind if it has none).
// Rows without an estimate, and the decode and cold rows (rope_decode_layers, rope_cold_layer: no
// limit), have no group.
JsonValue EstimatedRowGroupsJson(const RowRates& rates);

}  // namespace posenc_report

#endif  // POSENC_TOOLS_REPORT_RATES_H
