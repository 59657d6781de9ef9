// posenc-report: the CPU and ISA summary, a self-check of every available variant against
// the scalar reference, and the benchmark tables (each ISA and the naive loop against the
// machine's own stream limits on the same bytes). Exits 1 if a self-check fails.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "bench_report.h"
#include "isa_summary.h"
#include "self_check.h"

namespace {

struct Options {
  posenc_report::BenchOptions bench;
  uint64_t seed = 1;
  bool run_benchmarks = true;
};

void PrintUsage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--quick] [--json FILE] [--filter REGEX] [--seed N] [--check-only]\n"
               "  --quick        short benchmark runs (min_time 0.05 s, 1 repetition)\n"
               "  --json FILE    also save Google Benchmark's JSON (with the CPU) to FILE\n"
               "  --filter REGEX run only the benchmark rows matching REGEX\n"
               "  --seed N       seed of the self-check's random cases (default 1)\n"
               "  --check-only   self-check only, no benchmarks\n",
               argv0);
}

// Returns false on a bad command line.
bool ParseOptions(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(arg, "--quick")) {
      o.bench.min_time = 0.05;
      o.bench.repetitions = 1;
    } else if (!std::strcmp(arg, "--check-only")) {
      o.run_benchmarks = false;
    } else if (!std::strcmp(arg, "--json") && has_value) {
      o.bench.json_path = argv[++i];
    } else if (!std::strcmp(arg, "--filter") && has_value) {
      o.bench.filter = argv[++i];
    } else if (!std::strcmp(arg, "--seed") && has_value) {
      o.seed = std::strtoull(argv[++i], nullptr, 0);
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, options)) {
    PrintUsage(argv[0]);
    return 2;
  }
  posenc_print_isa_summary(stdout);
  std::fflush(stdout);
  const bool checks_pass = posenc_report::RunSelfCheck(options.seed, std::cout);
  benchmark::AddCustomContext("posenc_self_check", checks_pass ? "PASS" : "FAIL");
  if (options.run_benchmarks && !posenc_report::RunBenchmarks(options.bench, std::cout)) {
    std::cerr << "posenc-report: no benchmark ran\n";
    return 1;
  }
  return checks_pass ? 0 : 1;
}
