#pragma once

// The skewbench subcommands. Each returns a process exit code (see
// common/errors.hpp) and writes its messages to stderr.

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "evidence/out_folder.hpp"
#include "runner/stack.hpp"
#include "scenario/scenario.hpp"

namespace skewbench::cli {

// Set by SIGINT/SIGTERM; long-running commands check it between steps.
std::atomic<bool>& interrupted_flag();
void install_signal_handlers();

// Where the services are (URLs), or how to start them; shared by run and sweep.
using ServiceArgs = runner::StackOptions;

// Checks --remote-url (or that the remote-effect to start exists) and
// --postgres-bin before anything starts; prints why and returns false.
bool service_options_are_usable(const ServiceArgs& services);

// Against --remote-url, every scenario that declares a dedupe mode needs the
// service to run in it; prints which does not and returns false.
bool remote_modes_match(const ServiceArgs& services, const std::vector<scenario::Scenario>& scenarios);

// Opens an --out folder (checked, locked, probed); prints why and returns
// nullptr when it cannot be used (exit code 2).
std::unique_ptr<evidence::OutFolder> open_out_folder(const evidence::OutFolderRequest& request);

// How a command prints its outcome on stdout: for a reader, or one JSON
// document for a machine (progress and errors stay on stderr).
enum class OutputFormat { Text, Markdown, Json };

// Colour for stdout: a terminal, and NO_COLOR unset or empty.
bool stdout_wants_colour();

struct RunArgs {
  std::vector<std::string> paths;
  std::string out_dir;
  ServiceArgs services;
  bool overwrite = false;
  OutputFormat format = OutputFormat::Text;
};
int run_scenarios(const RunArgs& args);

// Checks scenario and grid files; reports every error of every file.
int validate_files(const std::vector<std::string>& paths);

struct SweepArgs {
  std::string grid_path;
  std::string out_dir;
  int jobs = 0;  // 0 = the number of cores
  std::string shard = "1/1";
  ServiceArgs services;
  int max_unreachable_s = 60;  // a service unreachable this long stops the sweep (exit 3)
  bool overwrite = false;
  bool dry_run = false;
  OutputFormat format = OutputFormat::Text;
  bool resume = false;  // continue the sweep in out_dir: keep its finished cells, run the rest
};
int run_sweep(const SweepArgs& args);

struct MergeArgs {
  std::vector<std::string> shard_dirs;
  std::string out_dir;
  bool overwrite = false;
};
int merge_sweeps(const MergeArgs& args);

struct CompareArgs {
  std::string base;
  std::string candidate;
  OutputFormat format = OutputFormat::Text;
  std::size_t limit = 500;  // changed rows shown; 0 = all
};
int compare_results(const CompareArgs& args);

struct ReportArgs {
  std::string sweep_dir;
  std::optional<std::string> out_dir;  // default: sweep_dir
};
int render_report(const ReportArgs& args);

struct VerifyArgs {
  std::string dir;
};
int verify_evidence(const VerifyArgs& args);

}  // namespace skewbench::cli
