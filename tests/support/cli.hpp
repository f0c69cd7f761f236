#pragma once

// Runs the real skewbench executable and reads what it wrote.

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/files.hpp"
#include "common/subprocess.hpp"

namespace skewbench::testing {

// A test's skewbench runs as anywhere else even when the suite itself runs
// under GitHub Actions: no annotations, nothing appended to the job summary
// (ci_output_test sets both itself). Done once, before any test runs.
inline const bool kGithubActionsScrubbed = [] {
  ::unsetenv("GITHUB_ACTIONS");
  ::unsetenv("GITHUB_STEP_SUMMARY");
  return true;
}();

inline CommandResult run_skewbench(std::vector<std::string> args) {
  args.insert(args.begin(), SKEWBENCH_CLI_BIN);
  return run_command(args);
}

inline nlohmann::json read_json(const std::filesystem::path& path) { return nlohmann::json::parse(read_file(path)); }

inline std::string source_path(const std::string& relative) {
  return std::string(SKEWBENCH_SOURCE_DIR) + "/" + relative;
}

}  // namespace skewbench::testing
