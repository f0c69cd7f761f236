#pragma once

// Scenario files: pure data. A scenario names its logical T0, the TTL, the
// simulated nodes and their clock offsets, one replay policy with its
// parameters, the ordered steps, and what it expects to be measured. The
// format is documented in docs/scenario-format.md and schemas/scenario.schema.json.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_reader.hpp"
#include "policy/policy.hpp"
#include "steps/step.hpp"
#include "time/logical_time.hpp"

namespace skewbench::scenario {

using time::LogicalSeconds;

// A scenario file that cannot be used. Maps to exit code 2; the message names
// the file and the JSON path.
class ScenarioFileError : public std::runtime_error {
 public:
  ScenarioFileError(std::string file, std::string json_path, const std::string& message)
      : std::runtime_error(file + ": " + json_path + ": " + message),
        file_(std::move(file)),
        json_path_(std::move(json_path)) {}
  const std::string& file() const { return file_; }
  const std::string& json_path() const { return json_path_; }

 private:
  std::string file_;
  std::string json_path_;
};

// One expected value: the field of a step's observation (or of the final
// measurement, step_index == -1) and the value the scenario expects.
struct Expectation {
  std::string id;  // "steps[3].delivery" or "final.effect_count"
  int step_index = -1;
  std::string field;
  nlohmann::json expected;
};

struct ScenarioStep {
  std::unique_ptr<steps::Step> step;
  nlohmann::json input;  // the step object as written in the file
};

struct Scenario {
  std::string id;
  std::string description;
  std::optional<std::string> report_as;
  LogicalSeconds t0_s = 0;
  LogicalSeconds ttl_s = 0;
  std::vector<time::NodeClock> nodes;
  std::unique_ptr<policy::ReplayPolicy> policy;
  steps::OperationSettings operation;  // name, retry identity
  // $.remote.dedupe, the remote's dedupe memory the scenario needs: durable
  // (an SQLite table that survives a restart) or volatile (process memory,
  // lost on restart); empty = any.
  std::optional<remote_effect::DedupeMode> dedupe_mode;
  std::vector<ScenarioStep> steps;
  std::vector<Expectation> expectations;
  nlohmann::json document;  // the whole file as parsed: the run's exact input
  std::string source;       // where it came from (a path, or "sweep cell N")

  // A step that restarts or hangs the remote (steps::StepNeeds::remote_control).
  bool needs_remote_control() const;
  // A step that restarts PostgreSQL (steps::StepNeeds::database_control).
  bool needs_database_control() const;
  // The kinds of its steps whose outcome depends on the remote's service-wide
  // state (steps::StepNeeds::reads_service_wide_state), each once, in step
  // order; empty when its outcome depends on its own operation's state only.
  std::vector<std::string> service_wide_reader_kinds() const {
    return kinds_that(&steps::StepNeeds::reads_service_wide_state);
  }
  // The kinds of its steps that declare `need`, each once, in step order.
  std::vector<std::string> kinds_that(bool steps::StepNeeds::*need) const;
};

// The fields of the closing measurement a scenario's top-level "expect" may name.
const steps::ObservedFields& final_fields();

// Parses a scenario document. Throws ScenarioFileError naming `source`.
Scenario parse_scenario(const nlohmann::json& document, const std::string& source);

// Reads and parses one file. Throws ScenarioFileError.
Scenario load_scenario_file(const std::filesystem::path& path);

// Expands the command line's files and directories into scenario files: a
// directory contributes its *.json files (not its subdirectories), sorted by
// name. Throws ScenarioFileError for a path that does not exist or a
// directory with no scenarios.
std::vector<std::filesystem::path> collect_scenario_files(const std::vector<std::string>& paths);

}  // namespace skewbench::scenario
