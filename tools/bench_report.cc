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

bool AnyRow(const Results& results, const posenc_bench::RowGroup& group) {
  for (const std::string& variant : posenc_bench::Variants())
    if (results.count(posenc_bench::RowName(group.kernel, variant, group.shape))) return true;
  return false;
}

// One row per variant; rows missing from `results` (filtered out, or failed) show "-".
void PrintGroupTable(const Results& results, const posenc_bench::RowGroup& group,
                     std::ostream& out) {
  if (!AnyRow(results, group)) return;
  const auto row = [&](const std::string& variant) {
    return Rate(results, posenc_bench::RowName(group.kernel, variant, group.shape));
  };
  const auto limit = Rate(results, posenc_bench::LimitRowName(group.limit_rmw, group.limit_bytes));
  const auto scalar = row("scalar"), naive = row("naive");
  out << "\n" << group.kernel << " " << group.shape << "  (" << group.about << ")\n";
  char line[160];
  std::snprintf(line, sizeof line, "  variant     GB/s %14s  vs scalar  vs naive\n",
                group.limit_rmw ? "of limit_rmw" : "of limit_write");
  out << line;
  for (const std::string& variant : posenc_bench::Variants()) {
    const auto rate = row(variant);
    std::snprintf(line, sizeof line, "  %-8s %7s %14s %10s %9s\n", variant.c_str(),
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
  out << "\nThroughput in GB/s of bytes read + written. A kernel row and the limit row of its\n"
         "table count the same bytes, so every ratio is a time ratio, except learned_add: its\n"
         "3n bytes against limit_rmw's 2n for its n-byte x make 'of limit' a ratio of\n"
         "bandwidths (1.5 x the time ratio; it may exceed 100%). Causal alibi_add counts its\n"
         "masked elements (only written) as read and written. naive: the plain C loop an\n"
         "integrator writes, -O3 -march=native: rope with a cos/sin table given for free (its\n"
         "reads not counted), sinusoids with libm sinf/cosf of the float32 angle (float)p *\n"
         "inv_freq, ALiBi's triple loop, learned's gather-add loop.\n";
  for (const posenc_bench::RowGroup& group : posenc_bench::RowGroups())
    PrintGroupTable(results, group, out);
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
