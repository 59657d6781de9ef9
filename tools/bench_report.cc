#include "bench_report.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "posenc_bench_cases.h"

namespace posenc_report {
namespace {

using posenc_bench::RopeShape;

struct RowResult {
  double bytes_per_second = 0;
  std::string label;
};
using Results = std::map<std::string, RowResult>;

// Prints Google Benchmark's usual lines (to stderr: progress) and keeps, per row, the
// median when there are repetitions, else the single run.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  explicit CollectingReporter(Results& results) : ConsoleReporter(OO_None), results_(results) {
    SetOutputStream(&std::cerr);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const bool wanted = run.run_type == Run::RT_Iteration || run.aggregate_name == "median";
      if (run.error_occurred || !wanted) continue;
      const auto bytes = run.counters.find("bytes_per_second");
      if (bytes == run.counters.end()) continue;
      results_[run.run_name.str()] = {bytes->second.value, run.report_label};
    }
  }

 private:
  Results& results_;
};

std::vector<std::string> GoogleBenchmarkArgs(const BenchOptions& o) {
  std::vector<std::string> args = {"posenc-report",
                                   "--benchmark_min_time=" + std::to_string(o.min_time),
                                   "--benchmark_repetitions=" + std::to_string(o.repetitions),
                                   "--benchmark_report_aggregates_only=true"};
  // Repetitions of different rows interleaved at random, so that a slow drift of the
  // machine's memory bandwidth does not favour the rows measured first.
  if (o.repetitions > 1) args.push_back("--benchmark_enable_random_interleaving=true");
  if (!o.filter.empty()) args.push_back("--benchmark_filter=" + o.filter);
  if (!o.json_path.empty()) {
    args.push_back("--benchmark_out=" + o.json_path);
    args.push_back("--benchmark_out_format=json");
  }
  return args;
}

// Google Benchmark keeps argv[0]: `args` must outlive the run.
bool InitializeGoogleBenchmark(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  benchmark::Initialize(&argc, argv.data());
  return !benchmark::ReportUnrecognizedArguments(argc, argv.data());
}

std::optional<double> Rate(const Results& results, const std::string& name) {
  const auto it = results.find(name);
  if (it == results.end()) return std::nullopt;
  return it->second.bytes_per_second;
}

// scale * num / den printed with `format`, or "-" when either side is missing.
std::string Ratio(std::optional<double> num, std::optional<double> den, const char* format,
                  double scale = 1.0) {
  if (!num || !den || *den <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, scale * *num / *den);
  return buf;
}

std::string GigaBytes(std::optional<double> rate) { return Ratio(rate, 1e9, "%.1f"); }

bool AnyRopeRow(const Results& results, const std::string& kernel, const RopeShape& shape) {
  for (const std::string& variant : posenc_bench::RopeVariants())
    if (results.count(posenc_bench::RopeRowName(kernel, variant, shape))) return true;
  return false;
}

// One row per variant; rows missing from `results` (filtered out, or failed) show "-".
void PrintShapeTable(const Results& results, const std::string& kernel, const RopeShape& shape,
                     std::ostream& out) {
  using posenc_bench::RopeRowName;
  if (!AnyRopeRow(results, kernel, shape)) return;
  const size_t bytes = posenc_bench::RopeBufferBytes(shape);
  const auto limit = Rate(results, posenc_bench::LimitRowName(true, bytes));
  const auto scalar = Rate(results, RopeRowName(kernel, "scalar", shape));
  const auto naive = Rate(results, RopeRowName(kernel, "naive", shape));
  char line[160];
  std::snprintf(line, sizeof line, "\n%s %s  (%zu bytes in place, 32 Q + 8 K heads)\n",
                kernel.c_str(), posenc_bench::RopeShapeName(shape).c_str(), bytes);
  out << line << "  variant     GB/s  of limit_rmw  vs scalar  vs naive\n";
  for (const std::string& variant : posenc_bench::RopeVariants()) {
    const auto rate = Rate(results, RopeRowName(kernel, variant, shape));
    std::snprintf(line, sizeof line, "  %-8s %7s %13s %10s %9s\n", variant.c_str(),
                  GigaBytes(rate).c_str(), Ratio(rate, limit, "%.0f%%", 100.0).c_str(),
                  Ratio(rate, scalar, "%.2fx").c_str(), Ratio(rate, naive, "%.2fx").c_str());
    out << line;
  }
}

void PrintLimitTable(const Results& results, std::ostream& out) {
  out << "\nLimits: the fastest plain stream found per size (GB/s counts bytes read + written)\n"
      << "         bytes  rmw GB/s  rmw loop            write GB/s  write loop\n";
  for (size_t bytes : posenc_bench::LimitSizes()) {
    const std::string rmw = posenc_bench::LimitRowName(true, bytes);
    const std::string write = posenc_bench::LimitRowName(false, bytes);
    if (!results.count(rmw) && !results.count(write)) continue;
    const auto label = [&](const std::string& name) {
      const auto it = results.find(name);
      return it == results.end() ? std::string("-") : it->second.label;
    };
    char line[160];
    std::snprintf(line, sizeof line, "  %12zu %9s  %-18s %10s  %s\n", bytes,
                  GigaBytes(Rate(results, rmw)).c_str(), label(rmw).c_str(),
                  GigaBytes(Rate(results, write)).c_str(), label(write).c_str());
    out << line;
  }
}

void PrintTables(const Results& results, std::ostream& out) {
  out << "\nThroughput in GB/s of bytes read + written. A rope row and limit_rmw of its size\n"
         "count the same bytes, so every ratio is a time ratio. naive: the plain C loop with a\n"
         "cos/sin table given for free (its table reads not counted).\n";
  for (const std::string& kernel : posenc_bench::RopeKernelNames())
    for (const RopeShape& shape : posenc_bench::RopeShapes())
      PrintShapeTable(results, kernel, shape, out);
  PrintLimitTable(results, out);
}

}  // namespace

bool RunBenchmarks(const BenchOptions& options, std::ostream& out) {
  std::vector<std::string> args = GoogleBenchmarkArgs(options);
  if (!InitializeGoogleBenchmark(args)) return false;
  posenc_bench::RegisterAll();
  posenc_bench::AddCpuContext();
  Results results;
  CollectingReporter reporter(results);
  out << "\nRunning benchmarks (min_time " << options.min_time << " s, " << options.repetitions
      << " repetition(s); progress on stderr)..." << std::endl;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  PrintTables(results, out);
  return !results.empty();
}

}  // namespace posenc_report
