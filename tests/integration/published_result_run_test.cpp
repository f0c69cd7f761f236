// result.json of real runs (a throwaway PostgreSQL cluster and a real
// remote-effect process) against the published #018 values, field by field;
// a run with other numbers; and a run covering part of the published checks.

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "support/cli.hpp"
#include "support/published_fields.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json field(const json& document, const std::string& path) {
  const auto* value = at_dotted_path(document, path);
  return value ? *value : json("<absent>");
}

}  // namespace

TEST_CASE("a real run of scenarios/ gives every published field, type and value of the five result files") {
  TempDir out("skewbench-published");
  const auto r = run_skewbench({"run", source_path("scenarios"), "--out", out.path().string(), "-q"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const char* benchmark :
       {"015-http-idempotency-boundary", "016-idempotency-state-durability", "017-idempotency-ttl-replay",
        "018-idempotency-clock-skew", "019-idempotency-clock-rollback"}) {
    INFO("benchmark " << benchmark);
    const auto expected = published_values(benchmark);
    const auto result = read_json(out.path() / expected["result_file"].get<std::string>());
    for (const auto& [path, value] : expected["fields"].items()) {
      INFO("field " << path);
      const auto* actual = at_dotted_path(result, path);
      REQUIRE(actual != nullptr);
      CHECK(json_type(*actual) == json_type(value));
      CHECK(*actual == value);
    }
    REQUIRE(result["checks"].size() == expected["checks"].size());
    for (const auto& c : result["checks"]) {
      INFO("check " << c["id"]);
      CHECK(expected["checks"].value(c["id"].get<std::string>(), 0) == 2);
      CHECK(c["points"] == 2);
    }
    CHECK(result["score"] == 10);
    CHECK(result["outcome"] == "pass");
  }
  const auto result = read_json(out.path() / "result.json");
  const auto expected = published_values("018-idempotency-clock-skew");
  // The published run used PostgreSQL 17.6; this one names its own server the same way.
  for (const auto& [path, value] : expected["environment_fields"].items()) {
    INFO("field " << path);
    REQUIRE(at_dotted_path(result, path) != nullptr);
    CHECK(json_type(*at_dotted_path(result, path)) == json_type(value));
  }
  const int num = result["database"]["server_version_num"].get<int>();
  CHECK(result["database"]["server_version"] == std::to_string(num / 10000) + "." + std::to_string(num % 100));
  CHECK_THAT(r.output, ContainsSubstring("score 10/10"));
}

TEST_CASE("a real run with node B 30 s ahead and a 90 s TTL gives a result.json describing that run") {
  TempDir dir("skewbench-published");
  fs::create_directories(dir.path() / "in");
  for (const char* name : {"018-unsafe-node-local.json", "018-declared-authority.json", "018-uncertainty.json"}) {
    auto doc = read_json(source_path(std::string("scenarios/") + name));
    doc["ttl_s"] = 90;
    doc["nodes"][1]["clock_offset_s"] = 30;
    write_file_atomically(dir.path() / "in" / name, doc.dump(2));
  }
  const auto out = dir.path() / "out";
  const auto r = run_skewbench({"run", (dir.path() / "in").string(), "--out", out.string(), "-q"});
  INFO(r.output);
  CHECK(r.exit_code == 1);  // the files still expect the published numbers
  const auto result = read_json(out / "result.json");
  CHECK(field(result, "clock_model.ttl_seconds") == 90);
  CHECK(field(result, "clock_model.node_a_offset_seconds") == 50);
  CHECK(field(result, "clock_model.node_b_offset_seconds") == 80);
  CHECK(field(result, "clock_model.clock_disagreement_seconds") == 30);
  CHECK(field(result, "unsafe_node_clock.expires_at") == 4'000'090);
  CHECK(field(result, "unsafe_node_clock.node_b_evaluation_time") == 4'000'080);
  CHECK(field(result, "unsafe_node_clock.node_b_active_idempotency_records") == 1);
  CHECK(field(result, "unsafe_node_clock.second_post_delivery") == "deduplicated");
  CHECK(field(result, "unsafe_node_clock.final_effect_count") == 1);
  CHECK(field(result, "safe_skew_guard.expires_at") == 6'000'090);
  CHECK(field(result, "safe_skew_guard.uncertainty_interval") == json::array({6'000'040, 6'000'080}));
  CHECK(field(result, "safe_skew_guard.expiry_inside_uncertainty") == false);
  CHECK(field(result, "safe_skew_guard.temporal_decision") == "active");
  CHECK(field(result, "safe_skew_guard.second_post_made") == true);
  CHECK(result["score"] != 10);
}

TEST_CASE("a real run of only the uncertainty scenario exits 0 and says the published score is incomplete") {
  TempDir out("skewbench-published");
  const auto r =
      run_skewbench({"run", source_path("scenarios/018-uncertainty.json"), "--out", out.path().string(), "-q"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(read_json(out.path() / "summary.json")["outcome"] == "pass");

  const auto result = read_json(out.path() / "result.json");
  CHECK(result["outcome"] == "incomplete");
  CHECK(result["score"] == 2);
  CHECK(result["score_coverage"]["complete"] == false);
  CHECK(result["score_coverage"]["checks"]["not_run"].size() == 4);

  const auto md = read_file(out.path() / "RESULT.md");
  CHECK_THAT(
      md,
      ContainsSubstring(
          "| 018-clock-skew-expiry-disagreement | `result.json` | incomplete | 2 of 2 points that ran; 8 not run |"));
  // No section of the other benchmarks ran: no result file of theirs, no score.
  for (const char* other : {"result-015.json", "result-016.json", "result-017.json", "result-019.json"}) {
    CHECK_FALSE(fs::exists(out.path() / other));
  }
  CHECK_THAT(md, !ContainsSubstring("015-http-idempotency-boundary"));
  CHECK_THAT(md, ContainsSubstring("| ttp_clock_authority_invariant_proved | not run"));
  CHECK_THAT(md, !ContainsSubstring("**no**"));
  CHECK_THAT(r.output, ContainsSubstring("score 2 of 2 points that ran; 8 not run"));
  CHECK_THAT(r.output, ContainsSubstring("not run  caller_local_clock_expiry_allows_same_key_duplicate"));
}
