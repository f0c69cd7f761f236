// The fields a scenario file may expect of a step (its kind's registration,
// which schemas/scenario.schema.json must list: scenario_validation_test.cpp)
// are the fields runs produce: a step observes no field its kind does not
// register, each with the registered type, and every registered field is
// observed by some scenario. Some fields appear only in some scenarios (with
// an "operation", a monotonic watermark, a refused fence:
// docs/scenario-format.md), so each shipped scenario runs against the fakes,
// plus one scenario for the fault kinds no shipped file of scenarios/ uses.

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <catch2/catch_test_macros.hpp>

#include "runner/runner.hpp"
#include "scenario/scenario.hpp"
#include "steps/step.hpp"
#include "support/fakes.hpp"

using namespace skewbench;
using nlohmann::json;

namespace {

runner::ScenarioResult run_on_fakes(const scenario::Scenario& s) {
  testing::FakeRemote remote;
  testing::FakeOutbox outbox;
  testing::FakeControl control(remote);
  runner::ScenarioRunner r(remote, outbox,
                           {.run_id = "fields", .remote_control = &control, .database_control = &control});
  return r.run(s);
}

scenario::Scenario fault_kinds_scenario() {
  const json doc = {{"id", "fault-kinds"},
                    {"description", "the fault step kinds no shipped scenario uses"},
                    {"t0_s", 1000},
                    {"ttl_s", 60},
                    {"nodes", {{{"id", "w"}, {"clock_offset_s", 0}}}},
                    {"policy", {{"name", "node_local"}}},
                    {"steps",
                     {{{"kind", "commit_operation"}, {"node", "w"}, {"at_s", 0}},
                      {{"kind", "pause_remote"}, {"at_s", 0}, {"duration_ms", 1}},
                      {{"kind", "restart_database"}, {"at_s", 0}},
                      {{"kind", "restart_store"}, {"at_s", 0}},
                      {{"kind", "post_effect"}, {"node", "w"}, {"at_s", 1}},
                      {{"kind", "observe"}, {"node", "w"}, {"at_s", 2}}}},
                    {"expect", json::object()}};
  return scenario::parse_scenario(doc, "fault-kinds");
}

using FieldsSeen = std::map<std::string, std::set<std::string>>;  // kind -> observed fields

// Adds what each record observed to `seen`, and fails a CHECK for any field
// its kind does not register or whose value has another type.
void check_fields(const runner::ScenarioResult& result, FieldsSeen& seen) {
  const auto& registry = steps::builtin_steps();
  REQUIRE_FALSE(result.error.has_value());
  for (const auto& record : result.timeline) {
    const auto& kind = record.kind;
    const auto* registered = registry.find(kind);
    REQUIRE(registered != nullptr);
    REQUIRE(record.outcome.has_value());
    // A typed recovery result comes from, and only from, a recovery step.
    CHECK((record.role == steps::StepRole::Recovery) == record.outcome->recovery.has_value());
    auto& fields = seen[kind];
    for (const auto& [field, value] : record.outcome->observed.items()) {
      fields.insert(field);
      INFO(result.scenario_id << ": " << kind << "." << field << " = " << value.dump());
      const auto it = registered->observed.find(field);
      CHECK(it != registered->observed.end());
      if (it != registered->observed.end()) {
        CHECK_NOTHROW(steps::validate_expected_value(it->second, value, "$." + field));
      }
    }
  }
}

}  // namespace

TEST_CASE(
    "steps observe only the fields their kind registers, with its types, and every registered field is observed") {
  FieldsSeen seen;
  for (const auto& entry : std::filesystem::directory_iterator(SKEWBENCH_SOURCE_DIR "/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    check_fields(run_on_fakes(scenario::load_scenario_file(entry.path().string())), seen);
  }
  check_fields(run_on_fakes(fault_kinds_scenario()), seen);
  const auto& registry = steps::builtin_steps();
  for (const auto& kind : registry.names()) {
    // The in-flight kinds need a service of its own wire and its effect sink:
    // in_flight_test.cpp runs them, and checks their fields the same way;
    // kill_instance kills a process skewbench started, as the targets' runs do.
    if (kind == "post_held" || kind == "post_concurrent" || kind == "release_provider" || kind == "fail_provider" ||
        kind == "kill_instance") {
      continue;
    }
    std::set<std::string> registered;
    for (const auto& [field, _] : registry.find(kind)->observed) registered.insert(field);
    INFO("step kind " << kind);
    CHECK(seen[kind] == registered);
  }
}
