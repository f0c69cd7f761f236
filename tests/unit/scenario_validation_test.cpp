// The scenario validator: every error names the JSON path, and the shipped
// scenario files are valid.

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstdint>
#include <functional>
#include <set>

#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "common/text.hpp"
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

TEST_CASE("the shipped scenario files are valid") {
  const auto files = collect_scenario_files({std::string(SKEWBENCH_SOURCE_DIR) + "/scenarios"});
  REQUIRE(files.size() >= 3);
  for (const auto& f : files) CHECK_NOTHROW(load_scenario_file(f));
  const auto per_node = collect_scenario_files({std::string(SKEWBENCH_SOURCE_DIR) + "/scenarios/instances"});
  REQUIRE(per_node.size() >= 2);
  for (const auto& f : per_node) {
    INFO(f);
    CHECK(load_scenario_file(f).service.instances == InstanceLayout::per_node);
  }
}

TEST_CASE("a scenario's instances and their clock are read from $.remote, and a clock they cannot have is refused") {
  auto doc = valid_document();
  auto s = parse_scenario(doc, "test.json");
  CHECK(s.instance_count() == 1);
  CHECK(s.service.clock == ServiceClock::request);
  CHECK(s.instance_of("node-b") == 0);

  doc["remote"] = {{"instances", "per_node"}, {"clock", "node"}};
  s = parse_scenario(doc, "test.json");
  CHECK(s.instance_count() == 2);
  CHECK(s.service.clock == ServiceClock::node);
  CHECK(s.instance_of("node-a") == 0);
  CHECK(s.instance_of("node-b") == 1);
  CHECK(s.instance_of(std::nullopt) == 0);
  CHECK_FALSE(s.dedupe_mode);

  doc["remote"] = {{"clock", "node"}};  // one instance has no node clock
  CHECK(error_path(doc) == "$.remote.clock");
  doc["remote"] = {{"instances", "per_node"}, {"clock", "authority"}};  // node_local declares none
  CHECK(error_path(doc) == "$.remote.clock");
  doc["policy"] = {{"name", "declared_authority"}, {"authority", {{"identity", "a"}, {"offset_s", 5}}}};
  CHECK(parse_scenario(doc, "test.json").policy->authority()->offset_s == 5);
  doc["remote"] = {{"instances", "two"}};
  CHECK(error_path(doc) == "$.remote.instances");
  doc["remote"] = {{"clock", "wall"}};
  CHECK(error_path(doc) == "$.remote.clock");
  doc["remote"] = {{"instances", "one"}, {"replicas", 2}};
  CHECK(error_path(doc) == "$.remote.replicas");
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

  const auto& remote = schema["properties"]["remote"]["properties"];
  CHECK(remote["dedupe"]["enum"].get<std::vector<std::string>>() == remote_effect::kDedupeModes.names());
  CHECK(remote["instances"]["enum"].get<std::vector<std::string>>() == kInstanceLayouts.names());
  CHECK(remote["clock"]["enum"].get<std::vector<std::string>>() == kServiceClocks.names());
}

TEST_CASE("every time a scenario gives must lie within +-10^15 s, so no sum the engine forms can overflow") {
  // Before the bound, at_s = INT64_MAX wrapped reference_time_s to a negative
  // number and gave a verdict; now each is refused naming its JSON path.
  struct Case {
    std::string path;
    std::function<void(json&, const json&)> set;
  };
  const auto value = GENERATE(as<json>{}, INT64_MAX, INT64_MIN, 1'000'000'000'000'001, -1'000'000'000'000'001);
  const auto c = GENERATE(values<Case>({
      {"$.t0_s", [](json& d, const json& v) { d["t0_s"] = v; }},
      {"$.ttl_s", [](json& d, const json& v) { d["ttl_s"] = v; }},
      {"$.nodes[1].clock_offset_s", [](json& d, const json& v) { d["nodes"][1]["clock_offset_s"] = v; }},
      {"$.steps[2].at_s", [](json& d, const json& v) { d["steps"][2]["at_s"] = v; }},
      {"$.policy.max_clock_error_s",
       [](json& d, const json& v) {
         d["policy"] = {{"name", "uncertainty"}, {"max_clock_error_s", v}};
       }},
      {"$.policy.authority.offset_s",
       [](json& d, const json& v) {
         d["policy"] = {{"name", "declared_authority"}, {"authority", {{"identity", "a"}, {"offset_s", v}}}};
       }},
      {"$.steps[2].offset_s",
       [](json& d, const json& v) {
         d["steps"].insert(
             d["steps"].begin() + 2,
             json::object({{"kind", "set_clock_offset"}, {"node", "node-b"}, {"at_s", 50}, {"offset_s", v}}));
       }},
  }));
  auto doc = valid_document();
  c.set(doc, value);
  INFO(c.path << " = " << value.dump());
  CHECK(error_path(doc) == c.path);
  try {
    parse_scenario(doc, "test.json");
  } catch (const ScenarioFileError& e) {
    CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring("is out of range: must lie within ["));
  }
}

TEST_CASE("the largest times a scenario may give are accepted") {
  auto doc = valid_document();
  doc["t0_s"] = 1'000'000'000'000'000;
  doc["ttl_s"] = 1'000'000'000'000'000;
  doc["nodes"][1]["clock_offset_s"] = -1'000'000'000'000'000;
  CHECK(error_path(doc) == "(accepted)");
}

TEST_CASE("a file nested a million levels deep is refused as input, not a crash") {
  // Copying such a value recursed once per level and overflowed the stack.
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  try {
    parse_json_text(deep);
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "$");
    CHECK_THAT(e.message(), Catch::Matchers::ContainsSubstring("nested deeper than 64"));
  }
  CHECK_THROWS_WITH(parse_bounded_json(deep), Catch::Matchers::ContainsSubstring("nested deeper than 64"));
  // Brackets inside strings are text, not nesting.
  CHECK(parse_bounded_json(json({{"s", std::string(1000, '[')}}).dump())["s"].get<std::string>().size() == 1000);
  CHECK_NOTHROW(parse_json_text(std::string(64, '[') + std::string(64, ']')));
}

TEST_CASE("comments are read only where a file may hold them, and never count as nesting") {
  const std::string commented = "// a target\n{\"a\": 1, /* [[[ */ \"b\": \"//x\"} // [{\n";
  CHECK_THROWS_AS(parse_json_text(commented), InputError);
  CHECK_THROWS(parse_bounded_json(commented));
  const auto read = parse_json_text(commented, JsonComments::allowed);
  CHECK(read == json({{"a", 1}, {"b", "//x"}}));
  // Brackets in a comment are not nesting; brackets after it are.
  const std::string shallow = "/* " + std::string(100, '[') + " */ [1]";
  CHECK(parse_json_text(shallow, JsonComments::allowed) == json::array({1}));
  const std::string deep = "// x\n" + std::string(65, '[') + std::string(65, ']');
  CHECK_THROWS_WITH(parse_json_text(deep, JsonComments::allowed), Catch::Matchers::ContainsSubstring("nested deeper"));
  CHECK_THROWS_AS(parse_json_text("{\"a\": 1} /* not closed", JsonComments::allowed), InputError);
}

TEST_CASE("both JSON parsers refuse a text longer than kMaxJsonBytes before parsing it") {
  const std::string huge = "\"" + std::string(kMaxJsonBytes, 'a') + "\"";
  CHECK_THROWS_WITH(parse_bounded_json(huge), Catch::Matchers::ContainsSubstring("more than the 67108864"));
  CHECK_THROWS_WITH(parse_json_text(huge), Catch::Matchers::ContainsSubstring("more than the 67108864"));
  const std::string largest = "\"" + std::string(kMaxJsonBytes - 2, 'a') + "\"";
  CHECK(parse_bounded_json(largest).get<std::string>().size() == kMaxJsonBytes - 2);
}

TEST_CASE("a short prefix of untrusted bytes is printable and says how much was left off") {
  CHECK(text::short_prefix("ok") == "ok");
  CHECK(text::short_prefix(std::string("a\nb\0\xff", 5)) == "a\\x0ab\\x00\\xff");
  CHECK(text::short_prefix(std::string(300, 'x'), 10) == std::string(10, 'x') + "... (300 bytes in all)");
}

TEST_CASE("ids and report_as names keep their pattern") {
  const auto with_id = [](const std::string& id) {
    auto doc = valid_document();
    doc["id"] = id;
    return error_path(doc);
  };
  for (const auto* id : {"a", "Z9", "0.a_b-c", "t-1"}) CHECK(with_id(id) == "(accepted)");
  CHECK(with_id(std::string(64, 'x')) == "(accepted)");
  for (const auto* id : {"", "-a", ".a", "_a", "a b", "a/b", "a:b", "é"}) {
    INFO(id);
    CHECK(with_id(id) == "$.id");
  }
  CHECK(with_id(std::string(65, 'x')) == "$.id");
  const auto with_section = [](const std::string& name) {
    auto doc = valid_document();
    doc["report_as"] = name;
    return error_path(doc);
  };
  for (const auto* name : {"unsafe", "018:unsafe", "015:a.b"}) CHECK(with_section(name) == "(accepted)");
  for (const auto* name : {"", "18:unsafe", "0188:unsafe", "abc:unsafe", "018:", "018:-x", ":unsafe", "018:a:b"}) {
    INFO(name);
    CHECK(with_section(name) == "$.report_as");
  }
}
