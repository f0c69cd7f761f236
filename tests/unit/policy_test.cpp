// Policies and their boundaries: pure functions of logical time.

#include <catch2/catch_test_macros.hpp>

#include "common/json_reader.hpp"
#include "policy/policy.hpp"

using namespace skewbench;
using namespace skewbench::policy;
using nlohmann::json;

namespace {

PolicyEvaluation evaluate(const json& spec, LogicalSeconds reference_s, LogicalSeconds node_offset_s,
                          LogicalSeconds expires_at_s) {
  const auto policy = builtin_policies().make(spec, "$.policy");
  return policy->evaluate({reference_s, {"node-x", node_offset_s}, expires_at_s});
}

}  // namespace

TEST_CASE("a point reading equal to expires_at is EXPIRED, one second earlier is ACTIVE") {
  CHECK(classify_point(59, 60) == TemporalState::Active);
  CHECK(classify_point(60, 60) == TemporalState::Expired);
  CHECK(classify_point(61, 60) == TemporalState::Expired);
}

TEST_CASE("an interval whose upper bound equals expiry is TIME_UNKNOWN") {
  CHECK(classify_interval({40, 60}, 60) == TemporalState::TimeUnknown);
  CHECK(classify_interval({40, 59}, 60) == TemporalState::Active);
}

TEST_CASE("an interval whose lower bound equals expiry is EXPIRED") {
  CHECK(classify_interval({60, 80}, 60) == TemporalState::Expired);
  CHECK(classify_interval({59, 80}, 60) == TemporalState::TimeUnknown);
}

TEST_CASE("uncertainty policy holds when the interval straddles expiry") {
  const auto e = evaluate({{"name", "uncertainty"}, {"max_clock_error_s", 20}}, 6'000'050, 10, 6'000'060);
  CHECK(e.reading_s == 6'000'060);
  REQUIRE(e.interval.has_value());
  CHECK(e.interval->lower_s == 6'000'040);
  CHECK(e.interval->upper_s == 6'000'080);
  CHECK(e.state == TemporalState::TimeUnknown);
  CHECK(e.decision == Decision::ReconcileFirst);
}

TEST_CASE("uncertainty policy with zero error behaves like the node's own clock") {
  for (LogicalSeconds reading : {58, 59, 60, 61}) {
    const auto e = evaluate({{"name", "uncertainty"}, {"max_clock_error_s", 0}}, reading, 0, 60);
    CHECK(e.state == classify_point(reading, 60));
    CHECK(e.decision == Decision::ReplaySameKey);
  }
}

TEST_CASE("node_local policy follows the recovering node's clock, including a clock that runs behind") {
  const json spec = {{"name", "node_local"}};
  CHECK(evaluate(spec, 50, 20, 60).state == TemporalState::Expired);   // reads 70
  CHECK(evaluate(spec, 50, -20, 60).state == TemporalState::Active);   // reads 30
  CHECK(evaluate(spec, 70, -10, 60).state == TemporalState::Expired);  // reads 60: the boundary
  CHECK(evaluate(spec, 50, 20, 60).time_basis == "node_clock:node-x");
  CHECK(evaluate(spec, 50, 20, 60).decision_time_s == 70);
}

TEST_CASE("declared_authority policy ignores the node's clock and replays at the authority's time") {
  const json spec = {{"name", "declared_authority"},
                     {"authority", {{"identity", "remote_effect_service_logical_clock"}, {"offset_s", 5}}}};
  const auto e = evaluate(spec, 5'000'050, 20, 5'000'060);
  CHECK(e.reading_s == 5'000'055);
  CHECK(e.decision_time_s == 5'000'055);
  CHECK(e.time_basis == "authority:remote_effect_service_logical_clock");
  CHECK(e.state == TemporalState::Active);
  const json behind = {{"name", "declared_authority"}, {"authority", {{"identity", "a"}, {"offset_s", -90}}}};
  CHECK(evaluate(behind, 100, 0, 60).state == TemporalState::Active);  // the authority reads 10
}

TEST_CASE("reconcile completes on one remote effect, replays on none, escalates on a conflict") {
  CHECK(reconcile(1) == ReconcileAction::CompleteWithoutReplay);
  CHECK(reconcile(0) == ReconcileAction::ReplayAfterReconcile);
  CHECK(reconcile(2) == ReconcileAction::HoldAndEscalate);
  CHECK(reconcile(17) == ReconcileAction::HoldAndEscalate);
  CHECK(reconcile(-1) == ReconcileAction::HoldAndEscalate);
}

TEST_CASE("the policy registry rejects unknown names, unknown parameters and duplicate registrations") {
  CHECK_THROWS_AS(builtin_policies().make({{"name", "wall_clock"}}, "$.policy"), InputError);
  try {
    builtin_policies().make({{"name", "uncertainty"}, {"max_clock_error_s", 20}, {"epsilon", 3}}, "$.policy");
    FAIL("an unknown parameter was accepted");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "$.policy.epsilon");
  }
  try {
    builtin_policies().make({{"name", "uncertainty"}, {"max_clock_error_s", -1}}, "$.policy");
    FAIL("a negative error bound was accepted");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "$.policy.max_clock_error_s");
  }
  try {
    builtin_policies().make({{"name", "declared_authority"}, {"authority", {{"identity", "x"}}}}, "$.policy");
    FAIL("a missing authority offset was accepted");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "$.policy.authority.offset_s");
  }
  PolicyRegistry registry;
  registry.add("p", [](ObjectReader&) -> std::unique_ptr<ReplayPolicy> { return nullptr; });
  CHECK_THROWS_AS(registry.add("p", [](ObjectReader&) -> std::unique_ptr<ReplayPolicy> { return nullptr; }),
                  std::logic_error);
}
