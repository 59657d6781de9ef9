// posenc-report's benchmark part: runs the posenc_bench rows in this process (a progress
// line on stderr) and prints one table per kernel and shape (each ISA and naive against the
// limit of the same bytes), then the limit rows.
#ifndef POSENC_TOOLS_BENCH_REPORT_H
#define POSENC_TOOLS_BENCH_REPORT_H

#include <ostream>
#include <string>
#include <vector>

#include "report_json.h"

namespace posenc_report {

struct BenchOptions {
  double min_time = 0.05;  // seconds per run (Google Benchmark's --benchmark_min_time)
  int repetitions = 5;     // > 1: tables use the median of the repetitions (interleaved)
  // The scalar and naive rows' repetitions (posenc_bench::IsBaselineRow; at most
  // `repetitions`): they give the tables' "vs scalar" and "vs naive" columns, and with 3
  // instead of 5 the default run spends 35 s less on them.
  int baseline_repetitions = 3;
  bool full = false;        // every group (posenc_bench's rows), not the core ones
  std::string filter = "";  // --benchmark_filter; empty: every row
  std::string json_path;    // non-empty: also write Google Benchmark's JSON there
  bool verbose = false;     // Google Benchmark's own lines on stderr, not the progress line
  // Per posenc_kernel, the tier the dispatcher picked before the rows ran (they switch it):
  // the dispatcher check compares them with the fastest rows (pick_within). Empty: no check.
  std::vector<int> kernel_picks;
  // The check's bound: a pick PASSes at this fraction of the fastest row's rate or more; a
  // group below it is measured again side by side (--pick-within; above 1 every group is,
  // which the report's test uses).
  double pick_within = 0.95;
  // The paired groups (posenc_bench::IsPairedGroup: 16 MiB and more) have their SIMD rows and
  // limit row measured apart from Google Benchmark's run, in paired rounds
  // (posenc_bench::MeasurePaired): this many seconds and at least this many rounds per group,
  // split among sweeps over all of them.
  double paired_seconds = 1.0;
  int paired_min_rounds = 16;
};

// Runs the rows and prints the tables to `out`, then the dispatcher check: for every group
// whose rows call one kernel, the picked tier's row against the fastest ISA row of the group
// (PASS within 5%). Returns false if Google Benchmark could not run or no row ran (a FAIL of
// the check is printed, not returned: timings are not a test). *paired (if given): the rows
// measured in paired rounds, {"seconds_per_group", "min_rounds", "rows": {row:
// {"bytes_per_second", "rounds", "limit", "of_limit": [q25, median, q75]}}} (limit rows:
// "bytes_per_second", "rounds" and "loops", the loops timed, the best of them per round).
bool RunBenchmarks(const BenchOptions& options, std::ostream& out, JsonValue* paired = nullptr);

// Every row group (kernel, shape, the limit row it is compared with and its bytes, what the
// buffers are), in registration order: what plots need beside Google Benchmark's JSON.
JsonValue RowGroupsJson();

}  // namespace posenc_report

#endif  // POSENC_TOOLS_BENCH_REPORT_H
