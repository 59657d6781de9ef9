// posenc-report's progress line while the benchmark rows run (on stderr): rewritten in place
// on a terminal ("[17/103] 0:12, ~0:40 left  rope_f32_neox/avx2/tokens:512/..."), one line
// per tenth of the runs otherwise.
#ifndef POSENC_TOOLS_REPORT_PROGRESS_H
#define POSENC_TOOLS_REPORT_PROGRESS_H

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace posenc_report {

class Progress {
 public:
  // total: the runs expected (rows x repetitions); 0 if unknown.
  Progress(size_t total, std::FILE* stream);

  // Google Benchmark entered `row` (posenc_bench::RowEnterHook): a new run unless it is the
  // same run of the same row sizing its iteration count (max_iterations grew).
  void Enter(const std::string& row, int64_t max_iterations);

  // Clears the line and prints how many runs took how long.
  void Finish();

 private:
  void Draw();
  double Elapsed() const;

  std::FILE* stream_;
  bool terminal_;
  size_t total_;
  size_t done_ = 0;  // runs started
  int tenths_shown_ = 0;
  std::string row_;
  int64_t max_iterations_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace posenc_report

#endif  // POSENC_TOOLS_REPORT_PROGRESS_H
