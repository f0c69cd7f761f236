#pragma once

// RESULT.md: a run's evidence as Markdown for a reader.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "evidence/evidence.hpp"
#include "published/published.hpp"

namespace skewbench::artifacts {

// The run's table, its published checks (when a scenario reports a section),
// its failures, environment and warnings. `summary` is summary.json's content,
// `published` the run's published result files (without their environment);
// the checks of each benchmark the run reports on are shown.
std::string result_markdown(const std::vector<const scenario::Scenario*>& scenarios,
                            const std::vector<runner::ScenarioResult>& results, const nlohmann::json& summary,
                            const std::vector<published::PublishedFile>& published,
                            const evidence::RunEnvironment& env);

}  // namespace skewbench::artifacts
