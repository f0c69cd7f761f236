#pragma once

// The series against every target (skewbench targets): one run per target, as
// `skewbench run --target NAME` makes it, each in a folder of its own, then
// the findings table computed from their evidence, written beside them and
// held against a committed table when one is given.

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "app/observer.hpp"
#include "runner/stack.hpp"
#include "targets/findings.hpp"

namespace skewbench::app {

struct TargetsRequest {
  std::vector<std::string> names;  // the targets to run; empty: every one under targets_dir
  std::string targets_dir = "targets";
  std::vector<std::string> scenario_paths = {"scenarios/targets"};
  std::string out_dir;
  std::optional<std::string> expect_file;  // a Markdown file holding the findings table (docs/targets.md)
  runner::StackOptions services;           // PostgreSQL, timeouts, libfaketime: what every run shares
  bool overwrite = false;
};

struct TargetsOutcome {
  int exit_code = 0;
  std::vector<targets::FindingRow> rows;
  std::vector<targets::ExpectedRow> expected;  // the table of expect_file, when given
  std::vector<std::string> differences;        // between the rows and that table
};

// The services of `skewbench run --target NAME`: `services` with the target's
// service, store, real clocks and ack loss by the fault proxy; nullopt (and
// why, said to `observer`) when the target file cannot be used, something it
// needs is missing, or a flag asks for what a target cannot be (its own
// --remote-url or --remote-command, --clock-mode logical).
std::optional<runner::StackOptions> services_of_target(const std::string& name_or_path, const std::string& targets_dir,
                                                       runner::StackOptions services, Observer& observer);

// Runs the scenarios against each target; `stop` is read between runs and
// within them. Exit 0: every row as expected (or no table given) and no
// ERROR; 1: a row differs from the table, or a scenario's own expectation
// failed; 2: a target, scenario or table file cannot be used, or something a
// target needs is missing (nothing started); 3: a run had an infrastructure
// error; 130: interrupted.
TargetsOutcome run_targets(const TargetsRequest& request, const std::atomic<bool>& stop, Observer& observer);

}  // namespace skewbench::app
