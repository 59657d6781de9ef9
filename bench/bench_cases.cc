#include <benchmark/benchmark.h>

#include <string>

#include "posenc.h"
#include "posenc_bench_cases.h"

namespace posenc_bench {

void RegisterAll() {
  RegisterRopeRows();
  RegisterLimitRows();
}

void AddCpuContext() {
  std::string isas;
  for (const std::string& v : RopeVariants())
    if (v != "naive") isas += (isas.empty() ? "" : " ") + v;
  benchmark::AddCustomContext("posenc_version", posenc_version());
  benchmark::AddCustomContext("posenc_cpu", posenc_cpu_name());
  benchmark::AddCustomContext("posenc_cpu_features", posenc_cpu_features());
  benchmark::AddCustomContext("posenc_isas_available", isas);
}

}  // namespace posenc_bench
