#include "report_plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <posenc.h>

extern char** environ;

namespace posenc_report {
namespace {

#ifndef POSENC_PLOT_SCRIPT_SOURCE
#define POSENC_PLOT_SCRIPT_SOURCE ""
#endif

// Runs argv (searched in PATH) and returns its exit status, or -1 if it could not start or
// did not exit normally. quiet: its stdout and stderr go to /dev/null.
int Spawn(const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  pid_t pid;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

std::string PlotScript() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("POSENC_PLOT_SCRIPT"); env && *env) return env;
  std::error_code ec;
  const fs::path beside = fs::read_symlink("/proc/self/exe", ec).parent_path() / "posenc_plot.py";
  if (!ec && fs::exists(beside, ec)) return beside.string();
  if (fs::exists(POSENC_PLOT_SCRIPT_SOURCE, ec)) return POSENC_PLOT_SCRIPT_SOURCE;
  return "";
}

std::vector<std::string> PythonCandidates() {
  if (const char* env = std::getenv("POSENC_PYTHON"); env && *env) return {env};
  return {"python3", "/usr/bin/python3"};
}

}  // namespace

bool RunPlotScript(const std::vector<std::string>& args, std::ostream& out) {
  const std::string script = PlotScript();
  if (script.empty()) {
    out << "Plots: not drawn: posenc_plot.py not found (set POSENC_PLOT_SCRIPT)\n";
    return false;
  }
  std::string tried;
  for (const std::string& python : PythonCandidates()) {
    if (Spawn({python, script, "--check"}, true) != 0) {
      tried += (tried.empty() ? "" : ", ") + python;
      continue;
    }
    out.flush();
    std::string isas;  // the header's enum order: the one ISA list
    for (int i = 0; i < POSENC_ISA_COUNT; ++i)
      isas += (i ? "," : "") + std::string(posenc_isa_name(static_cast<posenc_isa>(i)));
    std::vector<std::string> command = {python, script, "--isas", isas};
    command.insert(command.end(), args.begin(), args.end());
    if (Spawn(command, false) == 0) return true;
    out << "Plots: " << script << " failed (see above)\n";
    return false;
  }
  out << "Plots: not drawn: no Python with matplotlib (tried " << tried
      << "). Install it with scripts/install-deps.sh --plots (Debian: python3-matplotlib), or\n"
         "  point POSENC_PYTHON at a Python that has it. The table and the JSON are complete.\n";
  return false;
}

}  // namespace posenc_report
