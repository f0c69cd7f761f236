#pragma once

// One run, from scenario files to an exit code: checks, services, scenarios,
// the published evidence and the report of the published benchmarks it ran.

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/observer.hpp"
#include "artifacts/console.hpp"
#include "artifacts/junit.hpp"
#include "runner/runner.hpp"
#include "runner/stack.hpp"

namespace skewbench::app {

struct RunRequest {
  std::vector<std::string> paths;  // scenario files or folders
  std::string out_dir;
  runner::StackOptions services;  // where the services are, or how to start them
  bool overwrite = false;
};

struct RunOutcome {
  int exit_code = 0;  // common/errors.hpp
  std::vector<runner::ScenarioResult> results;
  // Set once the evidence is published; absent when the run stopped before.
  std::optional<artifacts::RunReport> report;
  std::vector<scenario::Scenario> scenarios = {};  // as loaded, in run order
  // Why the run was refused before it started (exit 2): the file and JSON
  // path where known.
  std::vector<artifacts::InputProblem> input_problems = {};
};

// Runs the scenarios of `request`; `stop` (SIGINT/SIGTERM) is read between
// steps and while waiting on a service.
RunOutcome run(const RunRequest& request, const std::atomic<bool>& stop, Observer& observer);

}  // namespace skewbench::app
