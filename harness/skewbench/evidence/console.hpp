#pragma once

// What a run prints on the console at its end.

#include <string>
#include <vector>

#include "runner/runner.hpp"

namespace skewbench::evidence {

// The plain-text table printed at the end of a run.
std::string results_table(const std::vector<runner::ScenarioResult>& results);

}  // namespace skewbench::evidence
