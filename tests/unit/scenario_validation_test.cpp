// The scenario validator: every error names the JSON path, and the shipped
// scenario files are valid.

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <set>

#include "common/files.hpp"
#include "scenario/scenario.hpp"

using namespace skewbench;
using namespace skewbench::scenario;
using nlohmann::json;

namespace {

json valid_document() {
  return json::parse(R"({
    "id": "t-1", "description": "d", "t0_s": 100, "ttl_s": 60,
    "nodes": [{"id": "node-a", "clock_offset_s": 0}, {"id": "node-b", "clock_offset_s": 20}],
    "policy": {"name": "node_local"},
    "steps": [
      {"kind": "commit_operation", "node": "node-a", "at_s": 0},
      {"kind": "post_effect", "node": "node-a", "at_s": 0, "drop_ack": true},
      {"kind": "recover", "node": "node-b", "at_s": 50, "expect": {"temporal_state": "EXPIRED"}}
    ],
    "expect": {"effect_count": 2}
  })");
}

// The JSON path of the error a document raises.
std::string error_path(const json& doc) {
  try {
    parse_scenario(doc, "test.json");
  } catch (const ScenarioFileError& e) {
    CHECK(e.file() == "test.json");
    return e.json_path();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("a valid scenario parses with its steps and expectations") {
  const auto s = parse_scenario(valid_document(), "test.json");
  CHECK(s.id == "t-1");
  CHECK(s.steps.size() == 3);
  CHECK(std::string(s.policy->name()) == "node_local");
  REQUIRE(s.expectations.size() == 2);
  CHECK(s.expectations[0].id == "steps[2].temporal_state");
  CHECK(s.expectations[1].id == "final.effect_count");
}

TEST_CASE("the shipped #018 scenario files are valid") {
  const auto files = collect_scenario_files({std::string(SKEWBENCH_SOURCE_DIR) + "/scenarios"});
  REQUIRE(files.size() >= 3);
  for (const auto& f : files) CHECK_NOTHROW(load_scenario_file(f));
}

TEST_CASE("an unknown key is rejected with its path") {
  auto doc = valid_document();
  doc["steps"][1]["drop_acks"] = true;
  CHECK(error_path(doc) == "$.steps[1].drop_acks");
  doc = valid_document();
  doc["colour"] = "blue";
  CHECK(error_path(doc) == "$.colour");
}

TEST_CASE("a wrong type is rejected with its path") {
  auto doc = valid_document();
  doc["steps"][2]["at_s"] = "50";
  CHECK(error_path(doc) == "$.steps[2].at_s");
  doc = valid_document();
  doc["ttl_s"] = 60.5;
  CHECK(error_path(doc) == "$.ttl_s");
  doc = valid_document();
  doc["nodes"] = json::object();
  CHECK(error_path(doc) == "$.nodes");
}

TEST_CASE("a missing field is rejected with its path") {
  auto doc = valid_document();
  doc["nodes"][1].erase("clock_offset_s");
  CHECK(error_path(doc) == "$.nodes[1].clock_offset_s");
  doc = valid_document();
  doc.erase("expect");
  CHECK(error_path(doc) == "$.expect");
}

TEST_CASE("an expectation must name a field its step observes, with a value of the right type") {
  auto doc = valid_document();
  doc["steps"][2]["expect"] = {{"effect_counts", 1}};
  CHECK(error_path(doc) == "$.steps[2].expect.effect_counts");
  doc = valid_document();
  doc["steps"][2]["expect"] = {{"temporal_state", "MAYBE"}};
  CHECK(error_path(doc) == "$.steps[2].expect.temporal_state");
  doc = valid_document();
  doc["expect"] = {{"effect_count", "two"}};
  CHECK(error_path(doc) == "$.expect.effect_count");
}

TEST_CASE("step order rules: known node, known kind, reference time never goes back, recover after a post") {
  auto doc = valid_document();
  doc["steps"][2]["node"] = "node-z";
  CHECK(error_path(doc) == "$.steps[2].node");
  doc = valid_document();
  doc["steps"][2]["kind"] = "teleport";
  CHECK(error_path(doc) == "$.steps[2].kind");
  doc = valid_document();
  doc["steps"][1]["at_s"] = -5;
  CHECK(error_path(doc) == "$.steps[1].at_s");
  doc = valid_document();
  doc["steps"].erase(1);
  CHECK(error_path(doc) == "$.steps[1].kind");
  doc = valid_document();
  doc["nodes"][1]["id"] = "node-a";
  CHECK(error_path(doc) == "$.nodes[1].id");
}

TEST_CASE("a file that is not JSON, or is missing, names the file") {
  CHECK_THROWS_WITH(load_scenario_file("/nonexistent/x.json"),
                    Catch::Matchers::ContainsSubstring("/nonexistent/x.json"));
  CHECK_THROWS_AS(collect_scenario_files({"/nonexistent/dir"}), ScenarioFileError);
}

TEST_CASE("the shipped JSON Schema names exactly the step kinds, policies and expectable fields the validator knows") {
  const auto schema = json::parse(read_file(std::string(SKEWBENCH_SOURCE_DIR) + "/schemas/scenario.schema.json"));
  const auto& registry = steps::builtin_steps();
  std::set<std::string> schema_kinds;
  for (const auto& ref : schema["properties"]["steps"]["items"]["oneOf"]) {
    schema_kinds.insert(ref["$ref"].get<std::string>().substr(std::string("#/$defs/").size()));
  }
  const auto names = registry.names();
  CHECK(schema_kinds == std::set<std::string>(names.begin(), names.end()));
  for (const auto& name : names) {
    std::set<std::string> in_schema;
    for (const auto& [field, _] : schema["$defs"][name]["properties"]["expect"]["properties"].items()) {
      in_schema.insert(field);
    }
    std::set<std::string> in_code;
    for (const auto& [field, _] : registry.find(name)->observed) in_code.insert(field);
    INFO("step kind " << name);
    CHECK(in_schema == in_code);
  }
  std::set<std::string> final_in_schema;
  for (const auto& [field, _] : schema["properties"]["expect"]["properties"].items()) final_in_schema.insert(field);
  std::set<std::string> final_in_code;
  for (const auto& [field, _] : final_fields()) final_in_code.insert(field);
  CHECK(final_in_schema == final_in_code);

  std::set<std::string> schema_policies;
  for (const auto& p : schema["properties"]["policy"]["oneOf"]) {
    schema_policies.insert(p["properties"]["name"]["const"].get<std::string>());
  }
  const auto policies = policy::builtin_policies().names();
  CHECK(schema_policies == std::set<std::string>(policies.begin(), policies.end()));
}
