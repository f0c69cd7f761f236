#pragma once

// The skewbench subcommands. Each returns a process exit code (see
// common/errors.hpp) and writes its messages to stderr.

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace skewbench::cli {

// Set by SIGINT/SIGTERM; long-running commands check it between steps.
std::atomic<bool>& interrupted_flag();
void install_signal_handlers();

struct RunArgs {
  std::vector<std::string> paths;
  std::string out_dir;
  std::optional<std::string> database_url;
  std::optional<std::string> remote_url;
  std::optional<std::string> remote_effect_binary;
  std::string remote_sync = "full";
  bool overwrite = false;
  bool quiet = false;
};
int run_scenarios(const RunArgs& args);

int validate_scenarios(const std::vector<std::string>& paths);

}  // namespace skewbench::cli
