#pragma once

// The skewbench subcommands. Each returns a process exit code (see
// common/errors.hpp) and writes its messages to stderr.

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/observer.hpp"
#include "app/run.hpp"
#include "app/sweep.hpp"
#include "app/targets.hpp"
#include "artifacts/junit.hpp"
#include "runner/stack.hpp"

namespace skewbench::cli {

// Set by SIGINT/SIGTERM; long-running commands check it between steps.
std::atomic<bool>& interrupted_flag();
void install_signal_handlers();

// Where the services are (URLs), or how to start them; shared by run and sweep.
using ServiceArgs = runner::StackOptions;

// Prints the pipelines' lines on stderr, after "skewbench: ".
app::Observer& stderr_observer();
// Under GitHub Actions: each phase of the pipeline in a log group of its own
// (::group:: ... ::endgroup::); end_log_group closes the last one.
void use_log_groups(bool groups);
void end_log_group();

// How a command prints its outcome on stdout: for a reader, or one JSON
// document for a machine (progress and errors stay on stderr).
enum class OutputFormat { Text, Markdown, Json };

// Colour for stdout: a terminal, and NO_COLOR unset or empty.
bool stdout_wants_colour();

struct RunArgs : app::RunRequest {
  std::optional<std::string> target;    // --target NAME|PATH: the service comes from a target file
  std::string targets_dir = "targets";  // --targets-dir: where --target NAME is looked up
  OutputFormat format = OutputFormat::Text;
  std::optional<std::string> junit;  // --junit FILE
  bool github = false;               // --github: annotations and step summary outside GitHub Actions too
};

// Writes the JUnit XML of a command to `file` (when given); false, saying
// why on stderr, when it cannot be written.
bool write_junit_file(const std::optional<std::string>& file, const std::vector<artifacts::JunitSuite>& suites);
int run_scenarios(const RunArgs& args);

// Checks scenario and grid files; reports every error of every file.
int validate_files(const std::vector<std::string>& paths);

struct SweepArgs : app::SweepRequest {
  bool dry_run = false;  // list the cells, run nothing
  OutputFormat format = OutputFormat::Text;
  std::optional<std::string> junit;  // --junit FILE
  bool github = false;               // --github
};
int run_sweep(const SweepArgs& args);

using MergeArgs = app::MergeRequest;
int merge_sweeps(const MergeArgs& args);

struct CompareArgs {
  std::string base;
  std::string candidate;
  OutputFormat format = OutputFormat::Text;
  std::size_t limit = 500;           // changed rows shown; 0 = all
  bool across_engines = false;       // --across-engines: an in-process side against a real one
  std::optional<std::string> junit;  // --junit FILE
  bool github = false;               // --github
};
int compare_results(const CompareArgs& args);

struct TargetsArgs : app::TargetsRequest {
  std::string init_name;  // skewbench targets init NAME
};
// Runs the series against every target and prints the findings table.
int run_targets(const TargetsArgs& args);
// Prints the commented target.json of a new target (skewbench targets init).
int print_target_template(const std::string& name);

struct ReportArgs {
  std::string sweep_dir;
  std::optional<std::string> out_dir;  // default: sweep_dir
  bool overwrite = false;              // replace an earlier report's files
};
int render_report(const ReportArgs& args);

struct VerifyArgs {
  std::string dir;
  std::optional<std::string> junit;  // --junit FILE
  bool github = false;               // --github
};
int verify_evidence(const VerifyArgs& args);

inline constexpr double kDefaultExploreBudget_s = 60;
inline constexpr double kMaxExploreBudget_s = 86400;

struct ExploreArgs {
  std::string bounds_path;  // empty: with --target, scenarios/explore/target.json (compiled in)
  std::string out_dir;
  std::optional<std::uint64_t> seed;  // default: a fresh one, printed
  // --budget-s; else 60 s, or with --max-scenarios none (kMaxExploreBudget_s),
  // so that the seed and the count alone fix what is tried, on any machine.
  std::optional<double> budget_s = std::nullopt;
  std::uint64_t max_scenarios = 0;  // 0: the budget alone ends it
  // --engine; else in-process, or real with --target.
  std::optional<infra::Engine> engine = std::nullopt;
  std::optional<std::string> target = std::nullopt;  // --target NAME: its service and store, on real clocks
  std::string targets_dir = "targets";               // --targets-dir: where --target NAME is looked up
  bool confirm = true;   // run each in-process finding again on the real stack (--no-confirm: not)
  ServiceArgs services;  // how the real stack is started (to run on, or to confirm the findings)
  bool overwrite = false;
  OutputFormat format = OutputFormat::Text;
};
int explore_scenarios(const ExploreArgs& args);

}  // namespace skewbench::cli
