#include "report_progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

namespace posenc_report {
namespace {

std::string MinutesSeconds(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

size_t TerminalColumns(std::FILE* stream) {
  winsize size{};
  if (ioctl(fileno(stream), TIOCGWINSZ, &size) == 0 && size.ws_col > 20) return size.ws_col;
  return 80;
}

}  // namespace

Progress::Progress(size_t total, std::FILE* stream)
    : stream_(stream),
      terminal_(isatty(fileno(stream)) != 0),
      total_(total),
      start_(std::chrono::steady_clock::now()) {}

double Progress::Elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::Enter(const std::string& row, int64_t max_iterations) {
  const bool same_run = row == row_ && max_iterations > max_iterations_;
  row_ = row;
  max_iterations_ = max_iterations;
  if (same_run) return;
  ++done_;
  Draw();
}

void Progress::Draw() {
  const double elapsed = Elapsed();
  std::string counts = "[" + std::to_string(done_);
  if (total_) counts += "/" + std::to_string(total_);
  counts += "]";
  if (terminal_) {
    std::string line = counts + " " + MinutesSeconds(elapsed);
    if (total_ && done_ > 1 && done_ <= total_)
      line += ", ~" + MinutesSeconds(elapsed / (done_ - 1) * (total_ - done_ + 1)) + " left";
    line += "  " + row_;
    const size_t width = TerminalColumns(stream_) - 1;
    if (line.size() > width) line.resize(width);
    std::fprintf(stream_, "\r\033[K%s", line.c_str());
    std::fflush(stream_);
    return;
  }
  // Not a terminal (a log): a line at each tenth of the runs.
  if (!total_) return;
  const int tenths = static_cast<int>(10 * (done_ - 1) / total_);
  if (tenths <= tenths_shown_ && done_ > 1) return;
  tenths_shown_ = tenths;
  std::fprintf(stream_, "posenc-report: benchmarks %s %3d%%, %s  %s\n", counts.c_str(),
               static_cast<int>(100 * (done_ - 1) / total_), MinutesSeconds(elapsed).c_str(),
               row_.c_str());
  std::fflush(stream_);
}

void Progress::Finish() {
  if (terminal_) std::fprintf(stream_, "\r\033[K");
  std::fprintf(stream_, "posenc-report: %zu benchmark runs in %s\n", done_,
               MinutesSeconds(Elapsed()).c_str());
  std::fflush(stream_);
}

}  // namespace posenc_report
