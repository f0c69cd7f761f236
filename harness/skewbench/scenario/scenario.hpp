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
#include "common/vocabulary.hpp"
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

// $.remote.instances: how many processes of the service under test the
// scenario's nodes reach.
//  - one: every node reaches the same instance (the published topology).
//  - per_node: each node reaches an instance of its own, every instance on the
//    same backing store (remote-effect: one SQLite file), as behind a load
//    balancer where a retry lands on another instance.
enum class InstanceLayout { one, per_node };
inline constexpr auto kInstanceLayouts =
    vocabulary<InstanceLayout>({{InstanceLayout::one, "one"}, {InstanceLayout::per_node, "per_node"}});

// $.remote.clock: whose time an instance judges a request at (expiry, GC).
//  - request: the time the request carries, which the sending node's clock or
//    its policy chose (the published wire: X-Logical-Time).
//  - node: the clock of the node the instance serves (per_node only): the
//    reference time plus the node's offset, moved by set_clock_offset.
//  - authority: the policy's declared authority (declared_authority only).
// How the time reaches the process is the run's --clock-mode: in a header
// (logical) or as the process's own wall clock (real); the answer is the same.
enum class ServiceClock { request, node, authority };
inline constexpr auto kServiceClocks = vocabulary<ServiceClock>(
    {{ServiceClock::request, "request"}, {ServiceClock::node, "node"}, {ServiceClock::authority, "authority"}});

struct ServiceLayout {
  InstanceLayout instances = InstanceLayout::one;
  ServiceClock clock = ServiceClock::request;
  // $.remote.store_node: the clock of the service's backing store, when it
  // runs as a process of its own (a target's Redis), is this node's clock
  // (its offset, moved by set_clock_offset); empty: the reference time. A
  // service without a store process has no such clock.
  std::optional<std::string> store_node;
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
  // $.remote.instances and $.remote.clock.
  ServiceLayout service;
  std::vector<ScenarioStep> steps;
  std::vector<Expectation> expectations;
  nlohmann::json document;  // the whole file as parsed: the run's exact input
  std::string source;       // where it came from (a path, or "sweep cell N")

  // How many instances of the service it reaches: one, or one per node.
  std::size_t instance_count() const { return service.instances == InstanceLayout::per_node ? nodes.size() : 1; }
  // The instance a node's requests reach (0 for a step without a node).
  std::size_t instance_of(const std::optional<std::string>& node_id) const;
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
