#include "bench_report.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "posenc_bench_cases.h"
#include "report_progress.h"

namespace posenc_report {
namespace {

struct RowResult {
  double bytes_per_second = 0;
  std::string label;
};
using Results = std::map<std::string, RowResult>;

// Keeps, per row, the median when there are repetitions, else the single run. Verbose:
// prints Google Benchmark's usual lines to stderr; otherwise only the rows that failed.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  CollectingReporter(Results& results, bool verbose)
      : ConsoleReporter(OO_None), results_(results), verbose_(verbose) {
    SetOutputStream(&std::cerr);
    SetErrorStream(&std::cerr);
  }
  bool ReportContext(const Context& context) override {
    return verbose_ ? ConsoleReporter::ReportContext(context) : true;
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    if (verbose_) ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const bool wanted = run.run_type == Run::RT_Iteration || run.aggregate_name == "median";
      if (run.error_occurred && !verbose_ && run.run_type == Run::RT_Iteration)
        std::cerr << "\nposenc-report: " << run.benchmark_name() << ": " << run.error_message
                  << "\n";
      if (run.error_occurred || !wanted) continue;
      const auto bytes = run.counters.find("bytes_per_second");
      if (bytes == run.counters.end()) continue;
      results_[run.run_name.str()] = {bytes->second.value, run.report_label};
    }
  }

 private:
  Results& results_;
  bool verbose_;
};

// Every row name RegisterAll() registers, in its order.
std::vector<std::string> AllRowNames() {
  std::vector<std::string> names;
  for (const posenc_bench::RowGroup& group : posenc_bench::RowGroups())
    for (const std::string& variant : posenc_bench::Variants())
      names.push_back(posenc_bench::RowName(group.kernel, variant, group.shape));
  for (size_t bytes : posenc_bench::LimitSizes())
    for (bool rmw : {true, false}) names.push_back(posenc_bench::LimitRowName(rmw, bytes));
  return names;
}

// The runs Google Benchmark will make: rows matching the filter as it matches them (POSIX
// extended regex searched in the name; a leading '-' negates) x repetitions; 0 if the
// filter does not compile here.
size_t ExpectedRuns(const BenchOptions& o) {
  std::string spec = o.filter.empty() || o.filter == "all" ? "." : o.filter;
  const bool negative = spec[0] == '-';
  if (negative) spec.erase(0, 1);
  size_t rows = 0;
  try {
    const std::regex re(spec, std::regex::extended);
    for (const std::string& name : AllRowNames())
      if (std::regex_search(name, re) != negative) ++rows;
  } catch (const std::regex_error&) {
    return 0;
  }
  return rows * static_cast<size_t>(o.repetitions);
}

Progress* g_progress = nullptr;

void OnRowEnter(const std::string& row, int64_t max_iterations) {
  if (g_progress) g_progress->Enter(row, max_iterations);
}

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
  CollectingReporter reporter(results, options.verbose);
  out << "\nRunning benchmarks (min_time " << options.min_time << " s, " << options.repetitions
      << " repetition(s); progress on stderr)..." << std::endl;
  Progress progress(ExpectedRuns(options), stderr);
  if (!options.verbose) {
    g_progress = &progress;
    posenc_bench::SetRowEnterHook(OnRowEnter);
  }
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  posenc_bench::SetRowEnterHook(nullptr);
  g_progress = nullptr;
  if (!options.verbose) progress.Finish();
  PrintTables(results, out);
  return !results.empty();
}

JsonValue RowGroupsJson() {
  JsonValue groups = JsonValue::Array();
  for (const posenc_bench::RowGroup& g : posenc_bench::RowGroups()) {
    JsonValue& group = groups.Push(JsonValue::Object());
    group.Set("kernel", JsonValue::String(g.kernel));
    group.Set("shape", JsonValue::String(g.shape));
    group.Set("limit", JsonValue::String(posenc_bench::LimitRowName(g.limit_rmw, g.limit_bytes)));
    group.Set("buffer_bytes", JsonValue::Number(static_cast<double>(g.limit_bytes)));
    group.Set("about", JsonValue::String(g.about));
  }
  return groups;
}

}  // namespace posenc_report
