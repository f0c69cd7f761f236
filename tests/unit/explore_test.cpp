// skewbench explore as a library: bounds files, generation from a seed,
// invariants and shrinking, on the in-process engine.

#include <atomic>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/json_reader.hpp"
#include "explore/bounds.hpp"
#include "explore/engines.hpp"
#include "explore/explore.hpp"
#include "explore/invariants.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::explore;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;

namespace {

Bounds shipped(const std::string& name) { return load_bounds(testing::source_path("scenarios/explore/" + name)); }

json minimal_bounds() {
  return {{"id", "t"},
          {"steps", {{"max", 3}, {"kinds", {"observe", "recover"}}}},
          {"policies", json::array({{{"name", "node_local"}}})},
          {"invariants", json::array({{{"check", "at_most_one_effect"}}})}};
}

// The JSON path of the InputError parse_bounds (then check_bounds) throws for `document`.
std::string refused_at(const json& document) {
  try {
    check_bounds(parse_bounds(document, "test"));
  } catch (const InputError& e) {
    return e.json_path() + ": " + e.message();
  }
  return "(accepted)";
}

ExploreSettings seeded(std::uint64_t seed, std::uint64_t scenarios) {
  return {.seed = seed, .budget_s = 600, .max_scenarios = scenarios, .interrupted = nullptr};
}

std::vector<std::string> kinds_of(const json& scenario) {
  std::vector<std::string> kinds;
  for (const auto& step : scenario.at("steps")) kinds.push_back(step.at("kind").get<std::string>());
  return kinds;
}

}  // namespace

TEST_CASE("explore: the same seed gives the same scenarios, findings and digest; another seed other scenarios") {
  const auto bounds = shipped("018-node-local.json");
  const auto first = run_explore(bounds, seeded(11, 1500));
  const auto again = run_explore(bounds, seeded(11, 1500));
  const auto other = run_explore(bounds, seeded(12, 1500));
  CHECK(first.tried == 1500);
  CHECK(first.stopped_by == "max_scenarios");
  REQUIRE(first.scenarios_core_digest.size() == 64);
  CHECK(again.scenarios_core_digest == first.scenarios_core_digest);
  CHECK(again.verdicts == first.verdicts);
  REQUIRE(again.findings.size() == first.findings.size());
  for (std::size_t i = 0; i < first.findings.size(); ++i) {
    CHECK(again.findings[i].minimal == first.findings[i].minimal);
    CHECK(again.findings[i].found_at == first.findings[i].found_at);
    CHECK(again.findings[i].shrinks == first.findings[i].shrinks);
  }
  CHECK(other.scenarios_core_digest != first.scenarios_core_digest);
}

TEST_CASE("explore: node-local expiry duplicates, shrunk to a lost answer and one recovery after expiry") {
  const auto outcome = run_explore(shipped("018-node-local.json"), seeded(1, 2000));
  REQUIRE(outcome.findings.size() == 1);
  const auto& finding = outcome.findings[0];
  CHECK(finding.policy == "node_local");
  CHECK(finding.occurrences >= 1);
  CHECK(finding.occurrences == outcome.breaking);
  const auto& minimal = finding.minimal;
  CHECK(kinds_of(minimal) == std::vector<std::string>{"commit_operation", "post_effect", "recover"});
  CHECK(minimal.at("nodes").size() == 1);
  CHECK(minimal.at("steps")[1].at("drop_ack") == true);
  // Shrunk as far as it goes: the TTL at the bounds' lowest, the recovery the
  // TTL after the POST on a clock with no offset.
  CHECK(minimal.at("ttl_s") == 1);
  CHECK(minimal.at("nodes")[0].at("clock_offset_s") == 0);
  CHECK(minimal.at("steps")[2].at("at_s") == 1);
  CHECK(minimal.at("expect") == json{{"effect_count", 1}});
  // Its evidence is the measurement: two effects, CONFLICT.
  CHECK(finding.evidence.at("final").at("effect_count") == 2);
  CHECK(finding.evidence.at("verdict") == "CONFLICT");
  CHECK(finding.evidence.at("engine") == "in-process");
  CHECK_THAT(finding.why, ContainsSubstring("node_local left 2 effects"));
}

TEST_CASE(
    "explore: a declared authority never duplicates while it judges before expiry; cleanup on a node's clock does") {
  const auto without_gc = run_explore(shipped("018-declared-authority.json"), seeded(1, 3000));
  CHECK(without_gc.findings.empty());
  CHECK(without_gc.breaking == 0);
  CHECK(without_gc.verdicts.count("SAFE") == 1);

  auto document = json::parse(read_file(testing::source_path("scenarios/explore/018-declared-authority.json")));
  document["steps"]["kinds"].push_back("gc");
  const auto with_gc = run_explore(parse_bounds(document, "with gc"), seeded(1, 2000));
  REQUIRE(with_gc.findings.size() == 1);
  const auto& minimal = with_gc.findings[0].minimal;
  const auto kinds = kinds_of(minimal);
  CHECK(std::find(kinds.begin(), kinds.end(), "gc") != kinds.end());
  CHECK(kinds.size() <= 4);
  CHECK_THAT(with_gc.findings[0].why, ContainsSubstring("replayed at"));
}

TEST_CASE("explore: a policy's number drawn from a range; a bound too small for the skew duplicates") {
  auto document = minimal_bounds();
  document["clock_offset_s"] = {{"min", -60}, {"max", 60}};
  document["nodes"] = {{"max", 2}};
  document["policies"] = json::array({{{"name", "uncertainty"}, {"max_clock_error_s", {{"min", 0}, {"max", 30}}}}});
  document["invariants"] = json::array({{{"check", "at_most_one_effect"}, {"policies", {"uncertainty"}}}});
  const auto bounds = parse_bounds(document, "ranged");
  REQUIRE(bounds.policy_ranges.size() == 1);
  REQUIRE(bounds.policy_ranges[0].size() == 1);
  CHECK(bounds.policy_ranges[0][0].field.to_string() == "/max_clock_error_s");
  check_bounds(bounds);
  const auto outcome = run_explore(bounds, seeded(5, 3000));
  REQUIRE(outcome.findings.size() == 1);
  const auto& policy = outcome.findings[0].minimal.at("policy");
  CHECK(policy.at("name") == "uncertainty");
  REQUIRE(policy.at("max_clock_error_s").is_number_integer());
  CHECK(policy.at("max_clock_error_s").get<int>() >= 0);
  CHECK(policy.at("max_clock_error_s").get<int>() <= 30);
  CHECK(outcome.findings[0].evidence.at("final").at("effect_count") == 2);

  document["policies"][0]["max_clock_error_s"] = {{"min", 30}, {"max", 0}};
  CHECK_THAT(refused_at(document), ContainsSubstring("$.policies[0].max_clock_error_s.max: is below min (30)"));
}

TEST_CASE("explore: invariants are judged from the result, an ERROR never passing as a verdict") {
  const auto bounds = parse_bounds(
      {{"id", "t"},
       {"steps", {{"max", 0}, {"kinds", json::array()}}},
       {"policies", json::array({{{"name", "node_local"}}})},
       {"invariants", json::array({{{"check", "no_verdict_on_error"}}, {{"check", "runs_to_a_verdict"}}})}},
      "t");
  const auto scenario = scenario::load_scenario_file(testing::source_path("scenarios/018-unsafe-node-local.json"));
  runner::ScenarioResult result;
  result.verdict = runner::Verdict::Safe;
  result.error = "the remote went away";
  auto breach = first_breach(bounds, scenario, result);
  REQUIRE(breach);
  CHECK(breach->invariant == 0);
  CHECK_THAT(breach->why, ContainsSubstring("with the verdict SAFE"));

  result.verdict = runner::Verdict::Error;
  breach = first_breach(bounds, scenario, result);
  REQUIRE(breach);
  CHECK(breach->invariant == 1);
  CHECK_THAT(breach->why, ContainsSubstring("the remote went away"));

  result.error.reset();
  breach = first_breach(bounds, scenario, result);
  REQUIRE(breach);
  CHECK(breach->invariant == 0);
  CHECK(breach->why == "ERROR without an error");
}

TEST_CASE("explore: a bounds file that is not one is refused at its JSON path") {
  auto database = minimal_bounds();
  database["steps"]["kinds"] = {"observe", "restart_database"};
  CHECK_THAT(refused_at(database), ContainsSubstring("$.steps.kinds[1]: \"restart_database\" is not a step kind"));

  auto remote = minimal_bounds();
  remote["remote"] = {{"clock", "node"}};
  CHECK_THAT(refused_at(remote),
             ContainsSubstring("$.policies[0]: this policy makes no valid scenario ($.remote.clock"));

  auto twice = minimal_bounds();
  twice["steps"]["kinds"] = {"observe", "observe"};
  CHECK_THAT(refused_at(twice), ContainsSubstring("$.steps.kinds[1]: \"observe\" is listed twice"));

  auto range = minimal_bounds();
  range["clock_offset_s"] = {{"min", 10}, {"max", -10}};
  CHECK_THAT(refused_at(range), ContainsSubstring("$.clock_offset_s.max: is below min (10)"));

  auto ttl = minimal_bounds();
  ttl["ttl_s"] = {{"min", 0}, {"max", 10}};
  CHECK_THAT(refused_at(ttl), ContainsSubstring("$.ttl_s.min"));

  auto unknown = minimal_bounds();
  unknown["invariants"] = json::array({{{"check", "at_most_two_effects"}}});
  CHECK_THAT(refused_at(unknown),
             ContainsSubstring("$.invariants[0].check: \"at_most_two_effects\" is not an invariant"));

  auto misplaced = minimal_bounds();
  misplaced["invariants"] = json::array({{{"check", "runs_to_a_verdict"}, {"policies", {"node_local"}}}});
  CHECK_THAT(refused_at(misplaced), ContainsSubstring("$.invariants[0].policies"));

  auto stray = minimal_bounds();
  stray["node"] = {{"max", 2}};
  CHECK_THAT(refused_at(stray), ContainsSubstring("$"));
  CHECK(refused_at(stray) != "(accepted)");

  auto policy = minimal_bounds();
  policy["policies"] = json::array({{{"name", "uncertainty"}}});
  CHECK_THAT(refused_at(policy), ContainsSubstring("$.policies[0]: this policy makes no valid scenario"));

  CHECK(refused_at(minimal_bounds()) == "(accepted)");
}

TEST_CASE("explore: what an engine cannot run is refused before anything runs, naming the step or field") {
  const runner::StackOptions in_process{.engine = infra::Engine::in_process};
  auto restarts = minimal_bounds();
  restarts["steps"]["kinds"] = {"observe", "restart_remote"};
  const auto bounds = parse_bounds(restarts, "restarts.json");
  check_bounds(bounds);
  auto problem = engine_problem(bounds, in_process);
  REQUIRE(problem);
  CHECK_THAT(*problem, ContainsSubstring("restarts.json: restart_remote acts on a process"));
  CHECK_THAT(*problem, ContainsSubstring("use --engine real"));

  auto instances = minimal_bounds();
  instances["nodes"] = {{"max", 2}};
  instances["remote"] = {{"instances", "per_node"}, {"clock", "node"}};
  problem = engine_problem(parse_bounds(instances, "instances.json"), in_process);
  REQUIRE(problem);
  CHECK_THAT(*problem, ContainsSubstring("$.remote.instances: an instance per node is 2 processes"));
  instances["nodes"] = {{"max", 1}};
  CHECK_FALSE(engine_problem(parse_bounds(instances, "instances.json"), in_process));

  // remote-effect has no store process to restart.
  auto store = minimal_bounds();
  store["steps"]["kinds"] = {"restart_store"};
  problem = engine_problem(parse_bounds(store, "store.json"), runner::StackOptions{.engine = infra::Engine::real});
  REQUIRE(problem);
  CHECK_THAT(*problem, ContainsSubstring("restart_store needs a service whose store runs as a process of its own"));
  CHECK_FALSE(engine_problem(shipped("018-node-local.json"), in_process));
}

TEST_CASE("explore: at_most_one_effect_within_ttl breaks only where every POST came within the TTL in true time") {
  auto document = minimal_bounds();
  document["invariants"] = json::array({{{"check", "at_most_one_effect_within_ttl"}}});
  const auto bounds = parse_bounds(document, "within-ttl.json");
  const auto engine = in_process_engine(bounds);
  const auto run_file = [&engine](const std::string& file) {
    return engine->run(json::parse(read_file(testing::source_path("scenarios/" + file))));
  };
  // Node B, 20 s ahead, retries 50 s after the POST: inside the 60 s TTL in
  // true time, past it on its clock.
  const auto skewed = run_file("018-unsafe-node-local.json");
  REQUIRE(skewed.breach);
  CHECK(skewed.result.final_measurement->remote.effect_count == 2);
  CHECK_THAT(skewed.breach->why, ContainsSubstring("every POST was sent within the TTL of the first"));
  // A retry after the TTL in true time may apply again: two effects, no breach.
  const auto late = run_file("017-unsafe-short-ttl.json");
  CHECK(late.result.final_measurement->remote.effect_count == 2);
  CHECK_FALSE(late.breach);
  // One POST within the TTL deduplicated: nothing to break.
  const auto declared = run_file("018-declared-authority.json");
  CHECK(declared.result.final_measurement->remote.effect_count == 1);
  CHECK_FALSE(declared.breach);
}

TEST_CASE("explore: breaches that shrink to other nodes or step kinds are findings of their own") {
  auto document = minimal_bounds();
  document["nodes"] = {{"max", 2}};
  document["clock_offset_s"] = {{"min", -30}, {"max", 30}};
  document["steps"] = {{"max", 4}, {"kinds", {"recover", "set_clock_offset"}}};
  document["invariants"] = json::array({{{"check", "at_most_one_effect_within_ttl"}}});
  const auto bounds = parse_bounds(document, "shapes.json");
  const auto outcome = run_explore(bounds, seeded(3, 3000));
  REQUIRE(outcome.findings.size() >= 2);
  std::uint64_t counted = 0;
  bool two_nodes = false;
  for (std::size_t i = 0; i < outcome.findings.size(); ++i) {
    const auto& f = outcome.findings[i];
    counted += f.occurrences;
    // No later finding has at least an earlier one's nodes and kinds: it
    // would have been counted there.
    for (std::size_t j = i + 1; j < outcome.findings.size(); ++j) {
      const auto& later = outcome.findings[j].shape;
      const bool has_kinds =
          std::includes(later.kinds.begin(), later.kinds.end(), f.shape.kinds.begin(), f.shape.kinds.end());
      CHECK_FALSE((later.nodes >= f.shape.nodes && has_kinds));
    }
    CHECK(f.shape.nodes == f.minimal.at("nodes").size());
    if (f.shape.nodes == 2 && f.shape.kinds == std::vector<std::string>{"recover"}) {
      two_nodes = true;
      // The published #018 schedule's length: a commit, a lost POST, a retry from the other node.
      CHECK(f.minimal.at("steps").size() == 3);
    }
  }
  CHECK(two_nodes);
  CHECK(counted == outcome.breaking);
}

TEST_CASE("explore: Ctrl-C while a finding is shrunk keeps the scenario that broke it, unshrunk, and its count") {
  std::atomic<bool> stop{false};
  auto settings = seeded(1, 2000);
  settings.interrupted = &stop;
  // The flag goes up as the first breach starts to shrink, as a Ctrl-C then would.
  const auto outcome = run_explore(shipped("018-node-local.json"), settings, [&](const std::string& line) {
    if (line.find("; shrinking") != std::string::npos) stop = true;
  });
  CHECK(outcome.stopped_by == "interrupted");
  CHECK(outcome.breaking == 1);
  REQUIRE(outcome.findings.size() == 1);
  const auto& finding = outcome.findings[0];
  CHECK(finding.occurrences == 1);
  CHECK(finding.shrinks == 0);
  CHECK(finding.minimal.at("steps").size() == finding.found_steps);
  CHECK_THAT(finding.minimal.at("description").get<std::string>(), ContainsSubstring("Not shrunk"));
  CHECK(finding.evidence.at("verdict") == "CONFLICT");
  CHECK(finding.why == finding.found_why);
}

TEST_CASE("explore: bounds whose largest scenario is no valid one are refused before anything runs") {
  auto document = minimal_bounds();
  document["step_gap_s"] = {{"min", 0}, {"max", 900'000'000'000'000}};
  CHECK_THAT(refused_at(document), ContainsSubstring("$.policies[0]: this policy makes an invalid scenario at its "
                                                     "largest ($.steps[2].at_s"));
  document["step_gap_s"] = {{"min", 0}, {"max", 200'000'000'000'000}};  // 4 gaps at most
  CHECK(refused_at(document) == "(accepted)");
}
