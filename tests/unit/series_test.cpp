// What the #015-#019 series added, against in-memory fakes: the monotonic
// watermark, minting a new key per attempt, reconcile-first outcomes, expiry
// cleanup and the temporal epoch fence.

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "policy/policy.hpp"
#include "runner/runner.hpp"
#include "scenario/scenario.hpp"
#include "support/fakes.hpp"

using namespace skewbench;
using nlohmann::json;

namespace {

scenario::Scenario shipped(const std::string& name) {
  return scenario::load_scenario_file(std::string(SKEWBENCH_SOURCE_DIR) + "/scenarios/" + name);
}

runner::ScenarioResult run_on(infra::RemoteApi& remote, const scenario::Scenario& s) {
  testing::FakeOutbox outbox;
  runner::ScenarioRunner r(remote, outbox, {.run_id = "rtest"});
  return r.run(s);
}

runner::ScenarioResult run_with_fakes(const scenario::Scenario& s) {
  testing::FakeRemote remote;
  return run_on(remote, s);
}

const json& observed(const runner::ScenarioResult& r, std::size_t step) { return *r.timeline.at(step).observed(); }

// The first POST reaches the remote's request log, but the remote fails
// before it applies the effect and the caller sees no answer: the status stays
// "absent" while the log holds the planned drop, as the driver's ledger expects.
class LosingRemote final : public infra::ForwardingRemote {
 public:
  LosingRemote() : ForwardingRemote(inner) {}
  infra::PostExchange post_effect(const infra::PostEffectRequest& r) override {
    if (lost_ > 0) {
      auto ex = inner.post_effect(r);
      return infra::read_post(logged(ex), ex.transport_outcome(), "POST /effects");
    }
    ++lost_;
    infra::HttpExchange ex;
    ex.request = {{"method", "POST"}, {"path", "/effects"}, {"headers", {{"Idempotency-Key", r.idempotency_key}}}};
    return infra::read_post(std::move(ex), infra::TransportOutcome::AckUnknown, "POST /effects");
  }
  infra::StatusExchange status(const std::string& op, std::int64_t t) override {
    return infra::read_status(logged(inner.status(op, t)), "GET /status");
  }

  testing::FakeRemote inner;

 private:
  // Adds the lost request to the counts the inner fake reports.
  infra::HttpExchange logged(infra::HttpExchange ex) const {
    auto& body = ex.response_body;
    if (body.contains("post_requests")) body["post_requests"] = body["post_requests"].get<std::int64_t>() + lost_;
    if (body.contains("ack_drops")) body["ack_drops"] = body["ack_drops"].get<std::int64_t>() + lost_;
    return ex;
  }
  int lost_ = 0;
};

json reconcile_first_doc() {
  return {{"id", "reconcile"},
          {"description", "d"},
          {"t0_s", 1000},
          {"ttl_s", 60},
          {"nodes", {{{"id", "w"}, {"clock_offset_s", 0}}}},
          {"policy", {{"name", "reconcile_first"}}},
          {"steps",
           {{{"kind", "commit_operation"}, {"node", "w"}, {"at_s", 0}},
            {{"kind", "post_effect"}, {"node", "w"}, {"at_s", 0}, {"drop_ack", true}},
            {{"kind", "recover"}, {"node", "w"}, {"at_s", 10}}}},
          {"expect", json::object()}};
}

}  // namespace

TEST_CASE("the effective time of a monotonic node is max(watermark, clock)") {
  CHECK(policy::effective_time_s(std::nullopt, 50) == 50);
  CHECK(policy::effective_time_s(70, 50) == 70);  // the clock rolled back: the watermark holds
  CHECK(policy::effective_time_s(70, 90) == 90);  // the clock moved on: it leads
  CHECK(policy::effective_time_s(70, 70) == 70);
}

TEST_CASE("monotonic_watermark reconciles on EXPIRED and replays only on ACTIVE") {
  const auto policy = policy::builtin_policies().make({{"name", "monotonic_watermark"}}, "$.policy");
  // Rolled back to T0+50 after having read T0+70: the record stays EXPIRED.
  const auto rolled_back = policy->evaluate({50, {"n", 0}, 60, 70});
  CHECK(rolled_back.reading_s == 50);
  CHECK(rolled_back.decision_time_s == 70);
  CHECK(rolled_back.state == policy::TemporalState::Expired);
  CHECK(rolled_back.decision == policy::Decision::ReconcileFirst);
  CHECK(rolled_back.extra == json{{"watermark_s", 70}});
  // Without a higher watermark the clock decides, and ACTIVE replays.
  const auto fresh = policy->evaluate({50, {"n", 0}, 60, std::nullopt});
  CHECK(fresh.state == policy::TemporalState::Active);
  CHECK(fresh.decision == policy::Decision::ReplaySameKey);
  CHECK(fresh.extra == json{{"watermark_s", nullptr}});
}

TEST_CASE("reconcile_first reconciles whatever the clock says") {
  const auto policy = policy::builtin_policies().make({{"name", "reconcile_first"}}, "$.policy");
  CHECK(policy->evaluate({50, {"n", 0}, 60, std::nullopt}).decision == policy::Decision::ReconcileFirst);   // ACTIVE
  CHECK(policy->evaluate({500, {"n", 0}, 60, std::nullopt}).decision == policy::Decision::ReconcileFirst);  // EXPIRED
  CHECK(policy->evaluate({500, {"n", 0}, 60, std::nullopt}).state == policy::TemporalState::Expired);
}

TEST_CASE("new_key_per_attempt mints <prefix>:attempt:N and the remote applies the retry again") {
  const auto r = run_with_fakes(shipped("015-unsafe-new-key-per-attempt.json"));
  REQUIRE(r.error == std::nullopt);
  CHECK(observed(r, 1)["idempotency_key"] == "http-unsafe:attempt:1");
  CHECK(observed(r, 1)["attempt"] == 1);
  CHECK(observed(r, 2)["decision"] == "REPLAY_NEW_KEY");
  CHECK(observed(r, 2)["idempotency_key"] == "http-unsafe:attempt:2");
  CHECK(observed(r, 2)["delivery"] == "applied");
  // On the wire both keys stay namespaced by the run id, and differ.
  const auto wire_1 = r.timeline[1].outcome->exchanges[0]["request"]["headers"]["Idempotency-Key"];
  const auto wire_2 = r.timeline[2].outcome->exchanges[0]["request"]["headers"]["Idempotency-Key"];
  CHECK(wire_1 == r.idempotency_key + ":attempt:1");
  CHECK(wire_2 == r.idempotency_key + ":attempt:2");
  CHECK(r.verdict == runner::Verdict::Conflict);
  CHECK(r.pass);
}

TEST_CASE("the stable key is reused on every attempt and named <operation>:effect:v1") {
  const auto r = run_with_fakes(shipped("015-safe-stable-key-redelivery.json"));
  CHECK(r.operation_name == "http-safe-redelivery-op");
  CHECK(r.stable_key_name == "http-safe-redelivery-op:effect:v1");
  CHECK(observed(r, 3)["idempotency_key"] == "http-safe-redelivery-op:effect:v1");
  CHECK(observed(r, 3)["delivery"] == "deduplicated");
  CHECK(r.timeline[3].outcome->exchanges[0]["request"]["headers"]["Idempotency-Key"] == r.idempotency_key);
  CHECK(r.verdict == runner::Verdict::Safe);
  CHECK(r.pass);
}

TEST_CASE("reconcile_first: committed completes without a replay") {
  const auto r = run_with_fakes(scenario::parse_scenario(reconcile_first_doc(), "r.json"));
  const auto& o = observed(r, 2);
  CHECK(o["reconciled_status"] == "committed");
  CHECK(o["reconcile_action"] == "COMPLETE_WITHOUT_REPLAY");
  CHECK(o["replayed"] == false);
  CHECK(r.final_measurement->remote.post_requests == 1);
  CHECK(r.verdict == runner::Verdict::Safe);
}

TEST_CASE("reconcile_first: absent replays after reconciling") {
  LosingRemote remote;
  const auto r = run_on(remote, scenario::parse_scenario(reconcile_first_doc(), "r.json"));
  const auto& o = observed(r, 2);
  CHECK(o["reconciled_status"] == "absent");
  CHECK(o["reconcile_action"] == "REPLAY_AFTER_RECONCILE");
  CHECK(o["replayed"] == true);
  CHECK(o["delivery"] == "applied");
  CHECK(r.final_measurement->remote.effect_count == 1);
  CHECK(r.verdict == runner::Verdict::Safe);
}

TEST_CASE("reconcile_first: anything else holds and escalates without a replay") {
  auto doc = reconcile_first_doc();
  doc["operation"] = {{"name", "op"}, {"retry_identity", "new_key_per_attempt"}};
  // A second POST under a new key: the remote now holds two effects (conflict).
  doc["steps"].insert(doc["steps"].begin() + 2,
                      json::object({{"kind", "post_effect"}, {"node", "w"}, {"at_s", 5}, {"drop_ack", true}}));
  const auto r = run_with_fakes(scenario::parse_scenario(doc, "r.json"));
  const auto& o = observed(r, 3);
  CHECK(o["reconciled_status"] == "conflict");
  CHECK(o["reconcile_action"] == "HOLD_AND_ESCALATE");
  CHECK(o["replayed"] == false);
  CHECK(r.final_measurement->remote.post_requests == 2);
}

TEST_CASE("steps keep their order: one commit, before any delivery, and recovery after a delivery") {
  struct Case {
    std::vector<std::string> kinds;
    std::string error;
  };
  const auto c = GENERATE(
      Case{{"commit_operation", "commit_operation", "post_effect", "recover"},
           "x.json: $.steps[1].kind: the operation is already committed by an earlier step"},
      Case{{"post_effect", "commit_operation", "recover"},
           "x.json: $.steps[0].kind: post_effect needs an earlier commit_operation step"},
      Case{{"recover", "commit_operation", "post_effect"},
           "x.json: $.steps[0].kind: recover needs an earlier commit_operation step"},
      Case{{"commit_operation", "recover", "post_effect"},
           "x.json: $.steps[1].kind: recover needs an earlier post_concurrent or post_effect or post_held step"},
      Case{{"commit_operation", "post_held", "post_concurrent"},
           "x.json: $.steps[1].kind: post_held leaves a provider call held: a later step must "
           "release it (release_provider), or kill its node's instance (kill_instance)"},

      Case{{"commit_operation", "observe", "post_effect", "observe", "recover"}, ""});
  auto doc = reconcile_first_doc();
  doc["steps"] = json::array();
  for (const auto& kind : c.kinds) doc["steps"].push_back(json{{"kind", kind}, {"node", "w"}, {"at_s", 0}});
  INFO(doc["steps"].dump());
  if (c.error.empty()) {
    CHECK_NOTHROW(scenario::parse_scenario(doc, "x.json"));
  } else {
    CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"), c.error);
  }
}

TEST_CASE("scenario settings are validated with their JSON path") {
  auto doc = reconcile_first_doc();
  doc["operation"] = {{"name", "op"}, {"retry_identity", "sometimes"}};
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"),
                    "x.json: $.operation.retry_identity: \"sometimes\" is not one of: stable_key, new_key_per_attempt");
  doc = reconcile_first_doc();
  doc["remote"] = {{"dedupe", "forgetful"}};
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"),
                    "x.json: $.remote.dedupe: \"forgetful\" is not one of: durable, volatile");
  doc = reconcile_first_doc();
  doc["steps"].insert(doc["steps"].begin() + 1,
                      json::object({{"kind", "bind_temporal_epoch"}, {"node", "w"}, {"at_s", 0}}));
  CHECK_THROWS_WITH(
      scenario::parse_scenario(doc, "x.json"),
      "x.json: $.steps[1].kind: bind_temporal_epoch needs an earlier post_concurrent or post_effect or post_held step");
}

TEST_CASE("a node's watermark is the largest time it has read, across a rollback") {
  const auto s = shipped("019-watermark.json");
  const auto r = run_with_fakes(s);
  REQUIRE(r.error == std::nullopt);
  const auto& recovery = *r.timeline.back().observed();
  CHECK(recovery["watermark_s"] == 10'000'070);
  CHECK(recovery["reading_s"] == 10'000'050);
  CHECK(recovery["decision_time_s"] == 10'000'070);
  CHECK(recovery["temporal_state"] == "EXPIRED");
  CHECK(recovery["decision"] == "RECONCILE_FIRST");
  CHECK(recovery["replayed"] == false);
  CHECK(r.verdict == runner::Verdict::Safe);
  CHECK(r.pass);
}

TEST_CASE("gc removes the expired record and advances the epoch; the fenced replay is refused, then reconciled") {
  const auto r = run_with_fakes(shipped("019-temporal-epoch-fence.json"));
  REQUIRE(r.error == std::nullopt);
  json gc, recovery;
  for (const auto& rec : r.timeline) {
    if (rec.kind == "gc") gc = *rec.observed();
    if (rec.role == steps::StepRole::Recovery) recovery = *rec.observed();
  }
  CHECK(gc["removed_records"] == 1);
  CHECK(gc["temporal_epoch_after"] == gc["temporal_epoch_before"].get<int>() + 1);
  CHECK(recovery["transport_outcome"] == "FENCED_OUT");
  CHECK(recovery["delivery"] == "fenced_out");
  CHECK(recovery["replay_http_status"] == 409);
  CHECK(recovery["fence_error"] == "temporal_epoch_mismatch");
  CHECK(recovery["bound_temporal_epoch"] == gc["temporal_epoch_before"]);
  CHECK(recovery["reconcile_action"] == "COMPLETE_WITHOUT_REPLAY");
  CHECK(r.final_measurement->remote.effect_count == 1);
  CHECK(r.final_measurement->outbox_status == infra::OutboxStatus::Delivered);
  CHECK(r.verdict == runner::Verdict::Safe);
  CHECK(r.pass);
}

TEST_CASE("without a fence the same purge and rollback duplicates the effect") {
  const auto r = run_with_fakes(shipped("019-purge-then-rollback.json"));
  REQUIRE(r.error == std::nullopt);
  CHECK(r.final_measurement->remote.effect_count == 2);
  CHECK(r.verdict == runner::Verdict::Conflict);
  CHECK(r.pass);
}
