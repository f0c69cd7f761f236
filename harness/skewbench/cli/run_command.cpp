// skewbench run and skewbench validate: parse, call app/, print.

#include <csignal>
#include <cstdlib>
#include <iostream>

#include <unistd.h>

#include "app/run.hpp"
#include "artifacts/console.hpp"
#include "cli/commands.hpp"
#include "common/errors.hpp"
#include "common/text.hpp"
#include "published/published.hpp"
#include "sweep/file_check.hpp"

namespace skewbench::cli {

std::atomic<bool>& interrupted_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {

extern "C" void on_stop_signal(int) { interrupted_flag().store(true); }

// The pipelines' lines, on stderr after the program's name.
class StderrObserver final : public app::Observer {
 public:
  void say(const std::string& line) override { std::cerr << "skewbench: " << line << "\n"; }
};

// The table (unless --quiet), then what did not go as expected, then the outcome;
// or all of it as one JSON document.
void print_run_outcome(const RunArgs& args, const std::vector<runner::ScenarioResult>& results,
                       const artifacts::RunReport& report) {
  if (args.format == OutputFormat::Json) {
    std::cout << artifacts::run_json(results, report).dump(2) << "\n";
    return;
  }
  const bool colour = stdout_wants_colour();
  if (!args.services.quiet) std::cout << artifacts::results_table(results, colour);
  std::cout << artifacts::failures_summary(results, colour);
  for (const auto& published : report.published_series) std::cout << published::published_checks_text(published);
  std::cout << artifacts::outcome_line(results) << "\n";
  std::cout << "evidence: " << report.evidence_dir.string() << "  core digest: " << report.core_digest << "\n";
  for (const auto& w : report.warnings) std::cout << "warning: " << w << "\n";
}

}  // namespace

app::Observer& stderr_observer() {
  static StderrObserver observer;
  return observer;
}

void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool stdout_wants_colour() { return artifacts::colour_wanted(::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR")); }

int validate_files(const std::vector<std::string>& paths) {
  const auto checks = sweep::check_files(paths);
  std::size_t invalid = 0;
  for (const auto& check : checks) {
    if (check.ok()) {
      std::cout << "ok  " << check.path << "  (" << check.summary << ")\n";
      continue;
    }
    ++invalid;
    for (const auto& error : check.errors) {
      std::cerr << "skewbench: invalid " << (check.kind.empty() ? "path" : check.kind) << ": " << error << "\n";
    }
  }
  if (invalid == 0) return exit_code::kPass;
  std::cerr << "skewbench: " << invalid << " of " << text::plural(checks.size(), "file") << " invalid\n";
  return exit_code::kUsage;
}

int run_scenarios(const RunArgs& args) {
  const auto outcome = app::run(args, interrupted_flag(), stderr_observer());
  if (outcome.report) print_run_outcome(args, outcome.results, *outcome.report);
  return outcome.exit_code;
}

}  // namespace skewbench::cli
