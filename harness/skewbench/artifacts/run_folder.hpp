#pragma once

// The files of one run, written into its incoming folder.

#include <filesystem>
#include <string>
#include <vector>

#include "evidence/evidence.hpp"

namespace skewbench::artifacts {

// Writes DIR/scenarios/<id>.json, DIR/summary.json, the published result files
// (result.json and the series' result-NNN.json) and DIR/RESULT.md without
// flushing them: DIR is a run's incoming folder, which OutFolder::publish
// flushes and moves into place at once. Returns the run's core digest.
std::string write_run_artifacts(const std::filesystem::path& out_dir,
                                const std::vector<const scenario::Scenario*>& scenarios,
                                const std::vector<runner::ScenarioResult>& results,
                                const evidence::RunEnvironment& env);

}  // namespace skewbench::artifacts
