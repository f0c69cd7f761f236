// result.json against the published #018 values, field by field, from the
// shipped scenarios run on the fakes; a run with other numbers; and runs that
// cover only part of the published checks.

#include <algorithm>
#include <set>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/files.hpp"
#include "evidence/evidence.hpp"
#include "published/published.hpp"
#include "runner/runner.hpp"
#include "scenario/scenario.hpp"
#include "support/fakes.hpp"
#include "support/published_fields.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;

namespace {

const char* const kShipped[] = {"018-unsafe-node-local.json", "018-declared-authority.json", "018-uncertainty.json"};

json shipped_document(const std::string& name) {
  return scenario::load_scenario_file(std::string(SKEWBENCH_SOURCE_DIR) + "/scenarios/" + name).document;
}

// Scenarios run on the fakes, and the result.json built from them.
struct FakeRun {
  std::vector<scenario::Scenario> scenarios;
  std::vector<runner::ScenarioResult> results;

  json published() const {
    std::vector<const scenario::Scenario*> pointers;
    for (const auto& s : scenarios) pointers.push_back(&s);
    evidence::RunEnvironment env;
    env.run_id = "rtest";
    env.postgresql = {{"server_version", "17.6 (Debian 17.6-1.pgdg120+1)"}, {"server_version_num", 170006}};
    return published::published_result(pointers, results, env);
  }
};

FakeRun run_on_fakes(const std::vector<json>& documents) {
  FakeRun run;
  for (const auto& doc : documents) run.scenarios.push_back(scenario::parse_scenario(doc, "test"));
  for (const auto& s : run.scenarios) {
    testing::FakeRemote remote;
    testing::FakeOutbox outbox;
    runner::ScenarioRunner runner(remote, outbox, {.run_id = "rtest"});
    run.results.push_back(runner.run(s));
  }
  return run;
}

std::vector<json> shipped_documents() {
  std::vector<json> out;
  for (const char* name : kShipped) out.push_back(shipped_document(name));
  return out;
}

const json& check_by_id(const json& published, const std::string& id) {
  for (const auto& c : published["checks"]) {
    if (c["id"] == id) return c;
  }
  FAIL("no check " << id);
  throw std::logic_error("unreachable");
}

json field(const json& published, const std::string& path) {
  const auto* value = testing::at_dotted_path(published, path);
  return value ? *value : json("<absent>");
}

}  // namespace

TEST_CASE("result.json of the three #018 scenarios holds every published field with its type and value") {
  const auto published = run_on_fakes(shipped_documents()).published();
  const auto expected = testing::published_values("018-idempotency-clock-skew");
  REQUIRE(expected["fields"].size() >= 30);
  for (const auto& [path, value] : expected["fields"].items()) {
    INFO("field " << path);
    const auto* actual = testing::at_dotted_path(published, path);
    REQUIRE(actual != nullptr);
    CHECK(testing::json_type(*actual) == testing::json_type(value));
    CHECK(*actual == value);
  }
  // The environment's field: the server's own version, as the published run named 17.6.
  for (const auto& [path, value] : expected["environment_fields"].items()) {
    INFO("field " << path);
    const auto* actual = testing::at_dotted_path(published, path);
    REQUIRE(actual != nullptr);
    CHECK(testing::json_type(*actual) == testing::json_type(value));
    CHECK(*actual == value);  // this fake environment is a 17.6 server
  }
}

TEST_CASE("result.json keeps the five published check ids with 2 points each") {
  const auto published = run_on_fakes(shipped_documents()).published();
  const auto expected = testing::published_values("018-idempotency-clock-skew")["checks"];
  REQUIRE(published["checks"].size() == expected.size());
  for (const auto& c : published["checks"]) {
    INFO("check " << c["id"]);
    REQUIRE(expected.contains(c["id"].get<std::string>()));
    CHECK(c["max_points"] == expected[c["id"].get<std::string>()]);
    CHECK(c["points"] == c["max_points"]);
    CHECK(c["passed"] == true);
    CHECK(c["status"] == "passed");
  }
  CHECK(published["outcome"] == "pass");
  CHECK(published["score_coverage"]["complete"] == true);
  CHECK(published::score_line(published) == "10/10");
}

TEST_CASE("database.server_version is the server's own major.minor, not the published one") {
  auto run = run_on_fakes({shipped_document(kShipped[0])});
  std::vector<const scenario::Scenario*> pointers = {&run.scenarios[0]};
  evidence::RunEnvironment env;
  env.postgresql = {{"server_version", "15.20 (Debian 15.20-0+deb12u1)"}, {"server_version_num", 150020}};
  const auto published = published::published_result(pointers, run.results, env);
  CHECK(published["database"]["server_version"] == "15.20");
  CHECK(published["database"]["server_version_full"] == "15.20 (Debian 15.20-0+deb12u1)");
}

TEST_CASE("result.json describes a run with other numbers, not the published one") {
  auto documents = shipped_documents();
  for (auto& doc : documents) {
    doc["ttl_s"] = 90;
    doc["nodes"][1]["clock_offset_s"] = 30;
  }
  documents[1]["policy"]["authority"]["offset_s"] = 12;
  documents[2]["policy"]["max_clock_error_s"] = 35;
  const auto published = run_on_fakes(documents).published();

  CHECK(field(published, "clock_model.ttl_seconds") == 90);
  CHECK(field(published, "clock_model.node_a_offset_seconds") == 50);
  CHECK(field(published, "clock_model.node_b_offset_seconds") == 80);
  CHECK(field(published, "clock_model.clock_disagreement_seconds") == 30);
  CHECK(field(published, "clock_model.authority_offset_seconds") == 62);
  CHECK(field(published, "clock_model.max_clock_error_seconds") == 35);

  // With a 90 s TTL node B (T0+80) still sees the record: no disagreement,
  // and node-local recovery is deduplicated.
  CHECK(field(published, "unsafe_node_clock.expires_at") == 4'000'090);
  CHECK(field(published, "unsafe_node_clock.node_b_evaluation_time") == 4'000'080);
  CHECK(field(published, "unsafe_node_clock.node_b_active_idempotency_records") == 1);
  CHECK(field(published, "unsafe_node_clock.second_post_delivery") == "deduplicated");
  CHECK(field(published, "unsafe_node_clock.final_effect_count") == 1);
  CHECK(field(published, "unsafe_node_clock.final_status") == "committed");
  CHECK(field(published, "safe_clock_authority.node_b_local_time") == 5'000'080);
  CHECK(field(published, "safe_clock_authority.authority_time") == 5'000'062);
  CHECK(field(published, "safe_clock_authority.expires_at") == 5'000'090);
  // Node C reads T0+60; ±35 reaches T0+95, past the expiry at T0+90.
  CHECK(field(published, "safe_skew_guard.uncertainty_interval") == json::array({6'000'025, 6'000'095}));
  CHECK(field(published, "safe_skew_guard.expiry_inside_uncertainty") == true);
  CHECK(field(published, "safe_skew_guard.expires_at") == 6'000'090);

  CHECK(check_by_id(published, "same_record_yields_active_and_expired_under_clock_disagreement")["passed"] == false);
  CHECK(check_by_id(published, "caller_local_clock_expiry_allows_same_key_duplicate")["passed"] == false);
  // Only the guard's check still holds: its interval [T0+25, T0+95] straddles T0+90.
  CHECK(check_by_id(published, "skew_bound_crossing_expiry_preserves_time_unknown_and_reconciles")["passed"] == true);
  CHECK(published["score"] == 2);
  CHECK(published["outcome"] == "fail");
}

TEST_CASE("a guard whose interval stays before expiry replays and says so in result.json") {
  auto documents = shipped_documents();
  documents[2]["policy"]["max_clock_error_s"] = 5;
  documents[2]["nodes"][2]["clock_offset_s"] = 0;  // node C reads T0+50, interval [T0+45, T0+55]
  const auto published = run_on_fakes(documents).published();
  CHECK(field(published, "safe_skew_guard.observed_local_time") == 6'000'050);
  CHECK(field(published, "safe_skew_guard.expiry_inside_uncertainty") == false);
  CHECK(field(published, "safe_skew_guard.temporal_decision") == "active");
  CHECK(field(published, "safe_skew_guard.second_post_made") == true);
  CHECK(field(published, "safe_skew_guard.reconciled_status") == nullptr);
  CHECK(field(published, "clock_model.max_clock_error_seconds") == 5);
  CHECK(check_by_id(published, "skew_bound_crossing_expiry_preserves_time_unknown_and_reconciles")["passed"] == false);
}

TEST_CASE("a run of only the uncertainty scenario marks the other published checks not run") {
  const auto published = run_on_fakes({shipped_document("018-uncertainty.json")}).published();
  int not_run = 0;
  for (const auto& c : published["checks"]) {
    INFO("check " << c["id"]);
    if (c["id"] == "skew_bound_crossing_expiry_preserves_time_unknown_and_reconciles") {
      CHECK(c["status"] == "passed");
      continue;
    }
    ++not_run;
    CHECK(c["status"] == "not_run");
    CHECK(c["passed"] == nullptr);
    CHECK(c["points"] == nullptr);
  }
  CHECK(not_run == 4);
  CHECK(published["score"] == 2);
  CHECK(published["max_score"] == 10);
  CHECK(published["score_coverage"]["complete"] == false);
  CHECK(published["score_coverage"]["points_that_ran"] == 2);
  CHECK(published["score_coverage"]["points_not_run"] == 8);
  CHECK(published["score_coverage"]["checks"]["not_run"].size() == 4);
  CHECK(published["outcome"] == "incomplete");
  CHECK(published::score_line(published) == "2 of 2 points that ran; 8 not run");
  CHECK(published["unsafe_node_clock"] == json{{"ran", false}});
  CHECK(field(published, "clock_model.node_b_offset_seconds") == 70);
  CHECK(field(published, "clock_model.authority_offset_seconds") == nullptr);
}

TEST_CASE("RESULT.md and the console say which published checks did not run") {
  const auto published = run_on_fakes({shipped_document("018-uncertainty.json")}).published();
  const auto md = published::published_checks_markdown(published);
  CHECK_THAT(md, ContainsSubstring("| caller_local_clock_expiry_allows_same_key_duplicate | not run"));
  CHECK_THAT(md, !ContainsSubstring("**no**"));
  CHECK_THAT(md, ContainsSubstring("| -/2 |"));
  CHECK_THAT(md, ContainsSubstring("Score: **2 of 2 points that ran; 8 not run**"));
  CHECK_THAT(md, ContainsSubstring("incomplete: 4 of 5 published checks were not evaluated"));
  const auto text = published::published_checks_text(published);
  CHECK_THAT(text, ContainsSubstring("score 2 of 2 points that ran; 8 not run"));
  CHECK_THAT(text, ContainsSubstring("not run  ttp_clock_authority_invariant_proved"));
  CHECK_THAT(text, ContainsSubstring("yes      skew_bound_crossing_expiry_preserves_time_unknown_and_reconciles"));
}

TEST_CASE("a published section that ended in ERROR leaves its checks in error, never failed or passed") {
  auto run = run_on_fakes(shipped_documents());
  run.results[1].error = "PostgreSQL went away";
  run.results[1].final_measurement = std::nullopt;
  const auto published = run.published();
  const auto& c = check_by_id(published, "declared_clock_authority_deduplicates_despite_local_disagreement");
  CHECK(c["status"] == "error");
  CHECK(c["passed"] == nullptr);
  CHECK(check_by_id(published, "ttp_clock_authority_invariant_proved")["status"] == "error");
  CHECK(published["score"] == 6);
  CHECK(published["outcome"] == "error");
  CHECK(published::score_line(published) == "6 of 6 points that ran; 4 in ERROR");
}

TEST_CASE("a section that ran without the step a check reads leaves that check not measured, never failed") {
  auto run = run_on_fakes(shipped_documents());
  auto& timeline = run.results[2].timeline;  // 018-uncertainty: the TIME_UNKNOWN section
  std::erase_if(timeline, [](const runner::StepRecord& r) { return r.role == steps::StepRole::Recovery; });
  const auto published = run.published();
  const auto& c = check_by_id(published, "skew_bound_crossing_expiry_preserves_time_unknown_and_reconciles");
  CHECK(c["status"] == "not_measured");
  CHECK(c["passed"] == nullptr);
  CHECK(c["points"] == nullptr);
  CHECK(c["evidence"]["reason"] == "no recovery step ran");
  CHECK(published["score"] == 8);
  CHECK(published["score_coverage"]["complete"] == false);
  CHECK(published["score_coverage"]["points_not_measured"] == 2);
  CHECK(published["score_coverage"]["checks"]["not_measured"].size() == 1);
  CHECK(published["outcome"] == "incomplete");
  CHECK(published::score_line(published) == "8 of 8 points that ran; 2 not measured");
  const auto md = published::published_checks_markdown(published);
  CHECK_THAT(md, ContainsSubstring(
                     "| skew_bound_crossing_expiry_preserves_time_unknown_and_reconciles | not measured (no recovery "
                     "step ran) | -/2 |"));
  CHECK_THAT(md, !ContainsSubstring("**no**"));
  CHECK_THAT(published::published_checks_text(published),
             ContainsSubstring("not measured skew_bound_crossing_expiry_preserves_time_unknown_and_reconciles"));
}

TEST_CASE("a failed check outranks checks that did not run in the published outcome") {
  auto doc = shipped_document("018-uncertainty.json");
  doc["policy"]["max_clock_error_s"] = 5;
  doc["nodes"][2]["clock_offset_s"] = 0;  // node C reads T0+50: [T0+45, T0+55], before expiry: it replays
  const auto published = run_on_fakes({doc}).published();
  CHECK(published["outcome"] == "fail");
  CHECK(published::score_line(published) == "0 of 2 points that ran; 8 not run");
}

TEST_CASE("the published tables name every section a scenario may report as, as the scenario schema lists them") {
  const auto sections = published::report_sections();
  std::vector<std::string> of_018;
  for (const auto& s : published::benchmark_018().sections) of_018.emplace_back(s.name);
  CHECK(of_018 == std::vector<std::string>{"unsafe_node_clock", "safe_clock_authority", "safe_skew_guard"});
  CHECK(std::string(published::benchmark_018().result_file) == "result.json");
  CHECK(sections.size() == 16);
  CHECK(std::find(sections.begin(), sections.end(), "safe_skew_guard") != sections.end());
  CHECK(std::find(sections.begin(), sections.end(), "019:safe_monotonic_watermark") != sections.end());
  const auto schema = json::parse(read_file(std::string(SKEWBENCH_SOURCE_DIR) + "/schemas/scenario.schema.json"));
  const auto listed = schema["properties"]["report_as"]["enum"].get<std::vector<std::string>>();
  CHECK(std::set<std::string>(listed.begin(), listed.end()) == std::set<std::string>(sections.begin(), sections.end()));
}

TEST_CASE("a report_as that names no published section is refused, naming every section there is") {
  auto doc = shipped_document("018-uncertainty.json");
  const auto valid = scenario::parse_scenario(doc, "test");
  CHECK_FALSE(published::report_as_problem(valid));
  doc["report_as"] = "018:safe_skew_guard";  // #018's sections carry no prefix
  const auto problem = published::report_as_problem(scenario::parse_scenario(doc, "test"));
  REQUIRE(problem);
  CHECK_THAT(*problem, ContainsSubstring("\"018:safe_skew_guard\" is not one of: 015:unsafe, "));
  CHECK_THAT(*problem, ContainsSubstring(", safe_skew_guard, 019:temporal_aba_visibility"));
  doc["report_as"] = "not a section";  // not even a section's name: the parser refuses it
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "test"), ContainsSubstring("$.report_as"));
  doc.erase("report_as");
  CHECK_FALSE(published::report_as_problem(scenario::parse_scenario(doc, "test")));
}
