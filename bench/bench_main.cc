// posenc_bench: Google Benchmark's main over the rows of posenc_bench_cases.
#include <benchmark/benchmark.h>

#include "posenc_bench_cases.h"

int main(int argc, char** argv) {
  posenc_bench::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  posenc_bench::AddCpuContext();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
