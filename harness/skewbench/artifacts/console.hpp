#pragma once

// What run prints at its end: the results table, then the failing checks (as
// pytest's short summary does), or the same as one JSON document.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/runner.hpp"

namespace skewbench::artifacts {

// Colour only on a terminal, and never when NO_COLOR is set to anything but
// the empty string (https://no-color.org).
bool colour_wanted(bool is_terminal, const char* no_color_env);

// The plain-text table printed at the end of a run. Its last column says
// whether the scenario went as its expectations say ("as expected"), which is
// not whether the policy was safe.
std::string results_table(const std::vector<runner::ScenarioResult>& results, bool colour = false);

// One line per failed check (scenario, check, expected, observed) and per
// ERROR scenario (its error); empty when everything went as expected.
std::string failures_summary(const std::vector<runner::ScenarioResult>& results, bool colour = false);

// The closing line: how many scenarios went as expected.
std::string outcome_line(const std::vector<runner::ScenarioResult>& results);

// A run's outcome for machines (run --format json); `published` carries #018's
// published checks' outcome, score and coverage (null when the run reports on
// no #018 section), `published_series` the same for every benchmark of the
// series the run reports on, #018 included.
struct RunReport {
  std::filesystem::path evidence_dir;
  std::string core_digest;
  std::vector<std::string> warnings;
  int exit_code = 0;
  // result.json when the run reports on a published section, else null.
  nlohmann::json published = nullptr;
  // The result file of each benchmark the run reports on, in series order.
  std::vector<nlohmann::json> published_series;
  std::string postgresql_version = {};  // as the server reports it
  std::string engine = "real";          // what ran the scenarios: "real" or "in-process"
};
nlohmann::json run_json(const std::vector<runner::ScenarioResult>& results, const RunReport& report);

}  // namespace skewbench::artifacts
