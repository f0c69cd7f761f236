// skewbench run and skewbench validate: parse, call app/, print.

#include <csignal>
#include <cstdlib>
#include <iostream>

#include <unistd.h>

#include "app/run.hpp"
#include "artifacts/console.hpp"
#include "cli/commands.hpp"
#include "cli/github.hpp"
#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "common/stop_request.hpp"
#include "common/text.hpp"
#include "explore/explore.hpp"
#include "published/published.hpp"
#include "sweep/file_check.hpp"

namespace skewbench::cli {

std::atomic<bool>& interrupted_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {

// The flag for the checks between steps; the stop request for the waits in
// between (an HTTP exchange, a service's start), which it cuts at once.
extern "C" void on_stop_signal(int) {
  interrupted_flag().store(true);
  request_stop();
}

// The pipelines' lines, on stderr after the program's name; under GitHub
// Actions each phase in a log group of its own.
class StderrObserver final : public app::Observer {
 public:
  void say(const std::string& line) override { std::cerr << "skewbench: " << line << "\n"; }
  void entering(app::Phase phase) override {
    if (!groups_) return;
    close_group();
    static constexpr const char* kTitles[] = {"skewbench: starting the services", "skewbench: the scenarios",
                                              "skewbench: the cells", "skewbench: writing the evidence"};
    std::cerr << "::group::" << kTitles[static_cast<int>(phase)] << "\n";
    open_ = true;
  }
  void use_log_groups(bool groups) { groups_ = groups; }
  void close_group() {
    if (open_) std::cerr << "::endgroup::\n";
    open_ = false;
  }

 private:
  bool groups_ = false;
  bool open_ = false;
};

StderrObserver& the_stderr_observer() {
  static StderrObserver observer;
  return observer;
}

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

app::Observer& stderr_observer() { return the_stderr_observer(); }

void use_log_groups(bool groups) { the_stderr_observer().use_log_groups(groups); }

void end_log_group() { the_stderr_observer().close_group(); }

void install_signal_handlers() {
  stop_request_fd();  // created here, never in the handler
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool stdout_wants_colour() { return artifacts::colour_wanted(::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR")); }

namespace {

// An explore bounds file (docs/explore.md) names invariants; a scenario or
// grid never does.
std::optional<sweep::FileCheck> check_bounds_file(const std::filesystem::path& path, const nlohmann::json& document) {
  if (!document.is_object() || !document.contains("invariants")) return std::nullopt;
  sweep::FileCheck check{.path = path.string(), .kind = "explore bounds", .summary = "", .errors = {}};
  try {
    const auto bounds = explore::load_bounds(path);
    explore::check_bounds(bounds);
    check.summary = "explore bounds " + bounds.id + ", " + text::plural(bounds.invariants.size(), "invariant") +
                    ", up to " + text::plural(bounds.max_steps, "step") + " of " +
                    text::plural(bounds.step_kinds.size(), "kind");
  } catch (const InputError& e) {
    check.errors.push_back(path.string() + ": " + e.json_path() + ": " + e.message());
  } catch (const std::exception& e) {
    check.errors.push_back(path.string() + ": " + e.what());
  }
  return check;
}

}  // namespace

int validate_files(const std::vector<std::string>& paths) {
  const auto checks = sweep::check_files(paths, check_bounds_file);
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

bool write_junit_file(const std::optional<std::string>& file, const std::vector<artifacts::JunitSuite>& suites) {
  if (!file) return true;
  try {
    artifacts::write_junit(*file, suites);
    return true;
  } catch (const std::exception& e) {
    std::cerr << "skewbench: cannot write --junit " << *file << ": " << e.what() << "\n";
    return false;
  }
}

namespace {

// The run as JUnit: its suites, the input it refused, or why it has no evidence.
std::vector<artifacts::JunitSuite> run_junit(const app::RunOutcome& outcome) {
  if (!outcome.input_problems.empty()) return artifacts::input_suites("run", outcome.input_problems);
  if (outcome.report) return artifacts::run_suites(outcome.scenarios, outcome.results, *outcome.report);
  // Interrupted, or the evidence could not be written: what ran, what did not
  // (skipped), and why there is no evidence.
  auto suites = artifacts::run_suites(outcome.scenarios, outcome.results, artifacts::RunReport{});
  suites.push_back({.name = "skewbench run",
                    .cases = {{.classname = "skewbench run",
                               .name = "evidence written",
                               .result = artifacts::CaseResult::error,
                               .message = "the run ended with exit code " + std::to_string(outcome.exit_code) +
                                          " before its evidence was written (see the log)"}},
                    .properties = {},
                    .time_s = 0});
  return suites;
}

// Under GitHub Actions: an annotation on the scenario file of each check that
// did not hold and each scenario in ERROR, and on each file refused; RESULT.md
// in the job's summary.
void report_to_github(const RunArgs& args, const app::RunOutcome& outcome) {
  if (!github_actions(args.github)) return;
  auto& out = std::cerr;  // the runner reads workflow commands there too; stdout may be a file or a document
  for (const auto& p : outcome.input_problems) {
    out << github_error(p.file.empty() ? std::nullopt : std::optional<std::string>(p.file), std::nullopt,
                        "skewbench run: invalid input", p.message)
        << "\n";
  }
  for (std::size_t i = 0; i < outcome.results.size() && i < outcome.scenarios.size(); ++i) {
    const auto& r = outcome.results[i];
    const auto& source = outcome.scenarios[i].source;
    if (r.error) {
      out << github_error(source, std::nullopt, "skewbench: " + r.scenario_id + " ERROR", *r.error) << "\n";
      continue;
    }
    for (const auto& check : r.checks) {
      if (check.pass) continue;
      out << github_error(source, std::nullopt, "skewbench: " + r.scenario_id + " " + check.id,
                          "expected " + check.expected.dump() + ", observed " +
                              (check.observed.is_null() ? std::string("null (not observed)") : check.observed.dump()))
          << "\n";
    }
  }
  if (outcome.report) {
    try {
      append_step_summary(read_file(outcome.report->evidence_dir / "RESULT.md"));
    } catch (const std::exception& e) {
      std::cerr << "skewbench: no step summary: " << e.what() << "\n";
    }
  }
}

}  // namespace

int run_scenarios(const RunArgs& given) {
  auto args = given;
  if (args.target) {
    auto services = app::services_of_target(*args.target, args.targets_dir, args.services, stderr_observer());
    if (!services) return exit_code::kUsage;
    args.services = std::move(*services);
  }
  use_log_groups(github_actions(args.github));
  const auto outcome = app::run(args, interrupted_flag(), stderr_observer());
  end_log_group();
  if (outcome.report) print_run_outcome(args, outcome.results, *outcome.report);
  report_to_github(args, outcome);
  // A JUnit file that could not be written fails a run that went well; a worse code stays.
  if (args.junit && !write_junit_file(args.junit, run_junit(outcome)) && outcome.exit_code == exit_code::kPass) {
    return exit_code::kInfrastructure;
  }
  return outcome.exit_code;
}

}  // namespace skewbench::cli
