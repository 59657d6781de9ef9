// posenc-report: the CPU and ISA summary, a self-check of every available variant against
// the scalar reference, and the benchmark tables (each ISA and the naive loop against the
// machine's own stream limits on the same bytes), saved into an output directory as text,
// JSON (Google Benchmark's, plus the CPU and the self-check) and plots. Exits 1 if a
// self-check fails or no benchmark ran.
// `posenc-report compare a.json b.json ...` puts saved reports side by side.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_report.h"
#include "isa_summary.h"
#include "report_compare.h"
#include "report_json.h"
#include "report_plot.h"
#include "report_record.h"
#include "self_check.h"

namespace {

namespace fs = std::filesystem;
using posenc_report::JsonValue;

constexpr double kQuickMinTime = 0.02;  // seconds per run with --quick
constexpr double kFullMinTime = 0.25;   // seconds per run with --full
constexpr int kFullRepetitions = 3;
constexpr double kQuickPairedSeconds = 0.05;  // per paired group with --quick

struct Options {
  posenc_report::BenchOptions bench;
  uint64_t seed = 1;
  bool run_benchmarks = true;
  bool quick = false;
  bool plots = true;
  std::string out_dir = "report";
  std::string json_path;  // empty: <out_dir>/posenc-report.json
};

void PrintUsage(const char* argv0) {
  std::fprintf(
      stderr,
      "usage: %s [--quick | --full] [--out DIR] [--json FILE] [--filter REGEX] [--no-plots]\n"
      "          [--min-time S] [--repetitions N] [--seed N] [--pick-within F] [--check-only]\n"
      "          [--verbose]\n"
      "       %s compare [--out DIR] [--no-plots] A.json B.json ...\n"
      "  (default)      the core rows: every kernel, storage type and ISA at a cache-resident\n"
      "                 and at a DRAM-sized shape, 5 interleaved repetitions of 0.05 s (scalar\n"
      "                 and naive rows 3); the SIMD rows of groups of 16 MiB and more with\n"
      "                 their limit row in paired rounds instead, 1 s per group; the cold\n"
      "                 rows (about 4 minutes on 2 cores)\n"
      "  --full         every row (posenc_bench's, the decode rows too), 3 repetitions of\n"
      "                 0.25 s (about 15 minutes)\n"
      "  --quick        the core rows, short runs (min_time 0.02 s, 1 repetition, 0.05 s per\n"
      "                 paired group; about a minute)\n"
      "  --out DIR      where the report goes (default: report): posenc-report.txt (what is\n"
      "                 printed), posenc-report.json, plots/*.png and *.svg\n"
      "  --json FILE    save the JSON to FILE instead of DIR/posenc-report.json\n"
      "  --filter REGEX run only the benchmark rows matching REGEX (Google Benchmark's filter)\n"
      "  --no-plots     no plots (they need Python 3 with matplotlib)\n"
      "  --min-time S   seconds per benchmark run (default 0.05; --full 0.25; --quick 0.02)\n"
      "  --repetitions N  runs per row, interleaved, median reported (default 5; --full 3;\n"
      "                 --quick 1; scalar and naive rows at most 3)\n"
      "  --seed N       seed of the self-check's random cases (default 1)\n"
      "  --pick-within F  the dispatcher check's bound: the picked variant's rate over the\n"
      "                 fastest's (default 0.95); a group below it is measured again side by\n"
      "                 side (above 1: every group, and none passes)\n"
      "  --check-only   self-check only: no benchmarks, nothing saved\n"
      "  --verbose      Google Benchmark's own lines on stderr instead of the progress line\n"
      "  compare        side-by-side table and plot of saved JSON files (other CPUs, builds)\n",
      argv0, argv0);
}

// Returns false on a bad command line.
bool ParseOptions(int argc, char** argv, Options& o) {
  double min_time = 0;  // 0: the default of the mode
  int repetitions = 0;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(arg, "--quick")) {
      o.quick = true;
    } else if (!std::strcmp(arg, "--full")) {
      o.bench.full = true;
    } else if (!std::strcmp(arg, "--check-only")) {
      o.run_benchmarks = false;
    } else if (!std::strcmp(arg, "--no-plots")) {
      o.plots = false;
    } else if (!std::strcmp(arg, "--verbose")) {
      o.bench.verbose = true;
    } else if (!std::strcmp(arg, "--min-time") && has_value) {
      min_time = std::strtod(argv[++i], nullptr);
    } else if (!std::strcmp(arg, "--repetitions") && has_value) {
      repetitions = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(arg, "--out") && has_value) {
      o.out_dir = argv[++i];
    } else if (!std::strcmp(arg, "--json") && has_value) {
      o.json_path = argv[++i];
    } else if (!std::strcmp(arg, "--filter") && has_value) {
      o.bench.filter = argv[++i];
    } else if (!std::strcmp(arg, "--pick-within") && has_value) {
      o.bench.pick_within = std::strtod(argv[++i], nullptr);
      if (!(o.bench.pick_within > 0 && o.bench.pick_within <= 2)) return false;
    } else if (!std::strcmp(arg, "--seed") && has_value) {
      o.seed = std::strtoull(argv[++i], nullptr, 0);
    } else {
      return false;
    }
  }
  if (o.quick && o.bench.full) return false;
  o.bench.min_time = min_time > 0   ? min_time
                     : o.quick      ? kQuickMinTime
                     : o.bench.full ? kFullMinTime
                                    : o.bench.min_time;
  if (o.quick) {  // a glimpse: a few rounds of each paired group
    o.bench.paired_seconds = kQuickPairedSeconds;
    o.bench.paired_min_rounds = 3;
  }
  o.bench.repetitions = repetitions > 0 ? repetitions
                        : o.quick       ? 1
                        : o.bench.full  ? kFullRepetitions
                                        : o.bench.repetitions;
  if (o.json_path.empty()) o.json_path = o.out_dir + "/posenc-report.json";
  return true;
}

// Writes everything to two stream buffers: the terminal and the saved text.
class TeeBuf : public std::streambuf {
 public:
  TeeBuf(std::streambuf* a, std::streambuf* b) : a_(a), b_(b) {}

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    const bool ok = a_->sputc(static_cast<char>(c)) != traits_type::eof() &&
                    b_->sputc(static_cast<char>(c)) != traits_type::eof();
    return ok ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    return std::min(a_->sputn(s, n), b_->sputn(s, n));
  }
  int sync() override { return a_->pubsync() == 0 && b_->pubsync() == 0 ? 0 : -1; }

 private:
  std::streambuf* a_;
  std::streambuf* b_;
};

std::string IsaSummaryText() {
  char* buf = nullptr;
  size_t size = 0;
  FILE* memory = open_memstream(&buf, &size);
  if (!memory) return "";
  posenc_print_isa_summary(memory);
  std::fclose(memory);
  std::string text(buf, size);
  std::free(buf);
  return text;
}

JsonValue OptionsJson(const Options& o) {
  JsonValue options = JsonValue::Object();
  options.Set("quick", JsonValue::Bool(o.quick));
  options.Set("full", JsonValue::Bool(o.bench.full));
  options.Set("min_time", JsonValue::Number(o.bench.min_time));
  options.Set("repetitions", JsonValue::Number(o.bench.repetitions));
  options.Set("filter", JsonValue::String(o.bench.filter));
  return options;
}

// The report's JSON: Google Benchmark's (written to a temporary file by the run) with the
// "posenc" object added. Returns false (and says why) on failure.
bool SaveJson(const Options& o, const std::string& benchmark_json, const JsonValue& cpu,
              const JsonValue& self_check, const JsonValue& paired, std::ostream& out) {
  JsonValue posenc = JsonValue::Object();
  posenc.Set("report_format", JsonValue::Number(1));
  posenc.Set("cpu", cpu);
  posenc.Set("options", OptionsJson(o));
  posenc.Set("self_check", self_check);
  posenc.Set("groups", posenc_report::RowGroupsJson());
  posenc.Set("paired", paired);
  std::string error;
  const bool ok = posenc_report::WriteReportJson(benchmark_json, posenc, o.json_path, error);
  std::error_code ec;
  fs::remove(benchmark_json, ec);
  if (!ok) out << "posenc-report: JSON not saved: " << error << "\n";
  return ok;
}

// The PNG files the plot script wrote, sorted.
std::vector<std::string> PlotFiles(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".png") files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

// Draws the plots into <out>/plots and lists them.
void DrawPlots(const Options& o, std::ostream& out) {
  const std::string dir = o.out_dir + "/plots";
  std::error_code ec;
  fs::create_directories(dir, ec);
  for (const std::string& old : PlotFiles(dir)) {  // nothing stale from an earlier run
    fs::remove(dir + "/" + old, ec);
    fs::remove(dir + "/" + fs::path(old).replace_extension(".svg").string(), ec);
  }
  if (!posenc_report::RunPlotScript({"report", o.json_path, dir}, out)) return;
  out << "Plots (GB/s against buffer size per ISA, with the limit; PNG and SVG): " << dir << "/\n ";
  for (const std::string& png : PlotFiles(dir)) out << " " << fs::path(png).stem().string();
  out << "\n";
}

int RunReport(const Options& options) {
  const posenc_report::IsaChoice isa = posenc_report::CurrentIsaChoice();
  std::ostringstream saved;
  TeeBuf tee(std::cout.rdbuf(), saved.rdbuf());
  std::ostream out(&tee);
  out << IsaSummaryText() << std::flush;

  std::ostringstream check_text;
  TeeBuf check_tee(out.rdbuf(), check_text.rdbuf());
  std::ostream check_out(&check_tee);
  const auto start = std::chrono::steady_clock::now();
  const bool checks_pass = posenc_report::RunSelfCheck(options.seed, check_out);
  check_out.flush();
  out << "Self-check: "
      << static_cast<long>(
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() + 0.5)
      << " s\n";
  if (!options.run_benchmarks) return checks_pass ? 0 : 1;

  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (const fs::path parent = fs::path(options.json_path).parent_path(); !parent.empty())
    fs::create_directories(parent, ec);
  benchmark::AddCustomContext("posenc_self_check", checks_pass ? "PASS" : "FAIL");
  benchmark::AddCustomContext("posenc_isa_active", posenc_isa_name(isa.active));
  posenc_report::BenchOptions bench = options.bench;
  bench.kernel_picks = isa.kernels;
  bench.json_path = options.json_path + ".benchmark.tmp";
  JsonValue paired = JsonValue::Object();
  if (!posenc_report::RunBenchmarks(bench, out, &paired)) {
    fs::remove(bench.json_path, ec);
    std::cerr << "posenc-report: no benchmark ran\n";
    return 1;
  }
  out << "\n";
  const bool json_saved = SaveJson(
      options, bench.json_path, posenc_report::CpuDescriptionJson(isa),
      posenc_report::SelfCheckJson(options.seed, checks_pass, check_text.str()), paired, out);
  const std::string text_path = options.out_dir + "/posenc-report.txt";
  out << "Table: " << text_path << "\n";
  if (json_saved) out << "JSON:  " << options.json_path << "\n";
  if (options.plots && json_saved) DrawPlots(options, out);
  out.flush();
  std::ofstream text_file(text_path);
  text_file << saved.str();
  if (!text_file) std::cerr << "posenc-report: cannot write " << text_path << "\n";
  return checks_pass && json_saved ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && !std::strcmp(argv[1], "compare"))
    return posenc_report::RunCompare(argc - 2, argv + 2);
  Options options;
  if (!ParseOptions(argc, argv, options)) {
    PrintUsage(argv[0]);
    return 2;
  }
  return RunReport(options);
}
