// The runner, steps and evidence core against in-memory fakes: decisions,
// verdicts from measured counts, failing checks, errors, and digests.

#include <set>

#include <httplib.h>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/digest.hpp"
#include "common/json_reader.hpp"
#include "evidence/evidence.hpp"
#include "infra/database_description.hpp"
#include "infra/remote_snapshot.hpp"
#include "runner/runner.hpp"
#include "scenario/scenario.hpp"
#include "support/fakes.hpp"

using namespace skewbench;
using nlohmann::json;

namespace {

scenario::Scenario shipped(const std::string& name) {
  return scenario::load_scenario_file(std::string(SKEWBENCH_SOURCE_DIR) + "/scenarios/" + name);
}

runner::ScenarioResult run_with_fakes(const scenario::Scenario& s, const std::string& run_id = "rtest") {
  testing::FakeRemote remote;
  testing::FakeOutbox outbox;
  runner::ScenarioRunner r(remote, outbox, {.run_id = run_id});
  return r.run(s);
}

runner::ScenarioResult run_with_remote(testing::FakeRemote& remote, const std::string& name) {
  testing::FakeOutbox outbox;
  runner::ScenarioRunner r(remote, outbox, {.run_id = "rtest"});
  return r.run(shipped(name));
}

}  // namespace

TEST_CASE("the three #018 scenarios reach their published outcomes under the fakes") {
  const auto unsafe = run_with_fakes(shipped("018-unsafe-node-local.json"));
  CHECK(unsafe.verdict == runner::Verdict::Conflict);
  CHECK(unsafe.final_measurement->remote.effect_count == 2);
  CHECK(unsafe.pass);

  const auto authority = run_with_fakes(shipped("018-declared-authority.json"));
  CHECK(authority.verdict == runner::Verdict::Safe);
  CHECK(authority.final_measurement->remote.post_requests == 2);
  CHECK(authority.pass);

  const auto guard = run_with_fakes(shipped("018-uncertainty.json"));
  CHECK(guard.verdict == runner::Verdict::Held);
  CHECK(guard.temporal_state() == "TIME_UNKNOWN");
  CHECK(guard.final_measurement->remote.post_requests == 1);
  CHECK(guard.pass);
}

TEST_CASE("a deliberately wrong expectation fails its check and records what was measured") {
  auto doc = shipped("018-unsafe-node-local.json").document;
  doc["expect"]["effect_count"] = 1;
  const auto s = scenario::parse_scenario(doc, "wrong.json");
  const auto r = run_with_fakes(s);
  CHECK_FALSE(r.pass);
  bool found = false;
  for (const auto& c : r.checks) {
    if (c.id == "final.effect_count") {
      found = true;
      CHECK_FALSE(c.pass);
      CHECK(c.measured);
      CHECK(c.expected == 1);
      CHECK(c.observed == 2);
    }
  }
  CHECK(found);
  CHECK(r.verdict == runner::Verdict::Conflict);  // the verdict comes from the measurement, not the expectation
}

TEST_CASE("an infrastructure failure is verdict ERROR and no check passes") {
  testing::FakeRemote remote;
  remote.fail_everything = true;
  testing::FakeOutbox outbox;
  runner::ScenarioRunner r(remote, outbox, {.run_id = "rtest"});
  const auto result = r.run(shipped("018-declared-authority.json"));
  CHECK(result.verdict == runner::Verdict::Error);
  REQUIRE(result.error.has_value());
  CHECK_FALSE(result.pass);
  for (const auto& c : result.checks) CHECK_FALSE(c.pass);
}

// A timeline of one recovery step that decided `recovery`.
std::vector<runner::StepRecord> one_recovery(steps::RecoveryResult recovery) {
  steps::StepOutcome outcome;
  outcome.recovery = recovery;
  return {runner::StepRecord{.index = 0,
                             .kind = "recover",
                             .role = steps::StepRole::Recovery,
                             .node = "node-a",
                             .at_s = 0,
                             .reference_time_s = 0,
                             .parameters = json::object(),
                             .outcome = outcome,
                             .duration_us = 0}};
}

TEST_CASE("verdicts are computed from the closing measurement") {
  const std::vector<runner::StepRecord> no_refusal;
  const auto measured = [](std::int64_t effects, infra::OutboxStatus outbox_status) {
    runner::FinalMeasurement f;
    f.remote.effect_count = effects;
    f.outbox_status = outbox_status;
    return std::optional(f);
  };
  const auto delivered_once = measured(1, infra::OutboxStatus::Delivered);
  CHECK(runner::compute_verdict(measured(2, infra::OutboxStatus::Delivered), no_refusal) == runner::Verdict::Conflict);
  CHECK(runner::compute_verdict(delivered_once, no_refusal) == runner::Verdict::Safe);
  CHECK(runner::compute_verdict(measured(1, infra::OutboxStatus::Pending), no_refusal) == runner::Verdict::Held);
  CHECK(runner::compute_verdict(measured(0, infra::OutboxStatus::Pending), no_refusal) == runner::Verdict::Held);
  using policy::Decision;
  using policy::ReconcileAction;
  using policy::TemporalState;
  const steps::RecoveryResult time_unknown{.temporal_state = TemporalState::TimeUnknown,
                                           .decision = Decision::ReconcileFirst,
                                           .reconcile_action = ReconcileAction::CompleteWithoutReplay};
  const steps::RecoveryResult escalated{.temporal_state = TemporalState::Expired,
                                        .decision = Decision::ReconcileFirst,
                                        .reconcile_action = ReconcileAction::HoldAndEscalate};
  const steps::RecoveryResult reconciled{.temporal_state = TemporalState::Expired,
                                         .decision = Decision::ReconcileFirst,
                                         .reconcile_action = ReconcileAction::CompleteWithoutReplay};
  CHECK(runner::compute_verdict(delivered_once, one_recovery(time_unknown)) == runner::Verdict::Held);
  CHECK(runner::compute_verdict(delivered_once, one_recovery(escalated)) == runner::Verdict::Held);
  CHECK(runner::compute_verdict(delivered_once, one_recovery(reconciled)) == runner::Verdict::Safe);
  CHECK(runner::compute_verdict(std::nullopt, no_refusal) == runner::Verdict::Error);
}

TEST_CASE("the core digest ignores run ids and timings but not outcomes") {
  const auto s = shipped("018-unsafe-node-local.json");
  const auto a = run_with_fakes(s, "rfirst");
  const auto b = run_with_fakes(s, "rsecond");
  CHECK(a.operation_id != b.operation_id);
  CHECK(json_digest(evidence::scenario_core(s, a)) == json_digest(evidence::scenario_core(s, b)));

  auto changed = b;
  changed.final_measurement->remote.effect_count = 1;
  CHECK(json_digest(evidence::scenario_core(s, a)) != json_digest(evidence::scenario_core(s, changed)));
}

TEST_CASE("a clock rollback step moves a node's reading back without moving reference time") {
  auto doc = shipped("018-unsafe-node-local.json").document;
  // Node B's clock is corrected back by 30 s before it recovers: it now reads
  // T0+40, sees the key ACTIVE, and its replay is deduplicated.
  const json rollback = {{"kind", "set_clock_offset"},
                         {"node", "node-b"},
                         {"at_s", 50},
                         {"offset_s", -10},
                         {"expect", {{"reading_s", 4'000'040}}}};
  doc["steps"].insert(doc["steps"].begin() + 4, rollback);
  doc["steps"][5]["expect"] = {{"temporal_state", "ACTIVE"}, {"delivery", "deduplicated"}};
  doc["expect"] = {{"effect_count", 1}, {"verdict", "SAFE"}};
  const auto r = run_with_fakes(scenario::parse_scenario(doc, "rollback.json"));
  CHECK(r.pass);
  CHECK(r.verdict == runner::Verdict::Safe);
}

TEST_CASE("connection URLs in evidence never show a password") {
  CHECK(infra::redact_url("postgresql://user:secret@db:5432/x") == "postgresql://***@db:5432/x");
  CHECK(infra::redact_url("postgresql://db:5432/x?sslmode=require&password=secret") ==
        "postgresql://db:5432/x?sslmode=require&password=***");
  CHECK(infra::redact_url("host=db password=secret dbname=x") == "host=db password=*** dbname=x");
  CHECK(infra::redact_url("host=db password='se cret' dbname=x") == "host=db password=*** dbname=x");
  CHECK(infra::redact_url("postgresql://postgres@127.0.0.1:5432/postgres") ==
        "postgresql://***@127.0.0.1:5432/postgres");
}

TEST_CASE("a scenario file with a key given twice is refused") {
  CHECK_THROWS_AS(parse_json_text(R"({"id": "a", "id": "b"})"), InputError);
  CHECK_THROWS_AS(parse_json_text(R"({"x": {"k": 1, "k": 2}})"), InputError);
  CHECK_NOTHROW(parse_json_text(R"({"x": {"k": 1}, "y": {"k": 2}})"));
}

TEST_CASE("a drop_ack POST that never reached the remote is ERROR, not ACK_UNKNOWN") {
  // Seen in a sweep against a restarted remote: a CONFLICT cell read as SAFE.
  for (const auto* name : {"018-unsafe-node-local.json", "018-declared-authority.json", "018-uncertainty.json"}) {
    testing::FakeRemote remote;
    remote.lose_next_post = true;
    const auto r = run_with_remote(remote, name);
    CHECK(r.verdict == runner::Verdict::Error);
    REQUIRE(r.error);
    CHECK(r.error->find("request log") != std::string::npos);
    CHECK_FALSE(r.pass);
  }
}

TEST_CASE("a POST not sent with drop_ack whose answer is lost is ERROR") {
  testing::FakeRemote remote;
  remote.vanish_next_answer = true;
  const auto r = run_with_remote(remote, "018-declared-authority.json");
  CHECK(r.verdict == runner::Verdict::Error);
  REQUIRE(r.error);
  CHECK(r.error->find("not sent with X-Drop-Ack") != std::string::npos);
}

TEST_CASE("a remote that restarted without a restart_remote step is ERROR") {
  testing::FakeRemote remote;
  remote.restart_after_next_post = true;
  const auto r = run_with_remote(remote, "018-unsafe-node-local.json");
  CHECK(r.verdict == runner::Verdict::Error);
  REQUIRE(r.error);
  CHECK(r.error->find("restarted") != std::string::npos);
  CHECK(r.error->find("fake-boot-2") != std::string::npos);
}

TEST_CASE("the remote ledger names every counter that disagrees") {
  infra::RemoteLedger ledger{.boot_ids = {"a"}, .post_requests = 2, .ack_drops = 1};
  infra::RemoteSnapshot snapshot;
  snapshot.status = remote_effect::OperationStatus::committed;
  snapshot.post_requests = 2;
  snapshot.ack_drops = 1;
  snapshot.boot_id = "a";
  CHECK_NOTHROW(ledger.check(snapshot, "here"));
  snapshot.post_requests = 1;
  CHECK_THROWS_WITH(ledger.check(snapshot, "here"),
                    "here: the remote's request log holds post_requests 1, ack_drops 1 for this operation, but this "
                    "scenario sent 2 and 1");
}

TEST_CASE("a remote that reports only the counts gives the same verdicts, its other fields not observed") {
  // As #015's service answers: no time, no key records, no boot_id, no mode.
  const std::set<std::string> counts_only = {"evaluation_time", "idempotency_records", "active_idempotency_records",
                                             "boot_id",         "idempotency_mode",    "durable_idempotency_records",
                                             "temporal_epoch"};
  for (const char* name : {"015-unsafe-new-key-per-attempt.json", "015-safe-stable-key-redelivery.json",
                           "015-safe-reconcile-before-retry.json", "016-safe-durable-restart.json"}) {
    INFO(name);
    testing::FakeRemote full;
    testing::FakeRemote sparse;
    sparse.unreported = counts_only;
    if (std::string(name).starts_with("016")) {
      full.set_mode(remote_effect::DedupeMode::durable);
      sparse.set_mode(remote_effect::DedupeMode::durable);
    }
    testing::FakeOutbox outbox;
    testing::FakeControl control(full);
    const auto expected =
        runner::ScenarioRunner(full, outbox, {.run_id = "rtest", .remote_control = &control}).run(shipped(name));
    testing::FakeOutbox sparse_outbox;
    testing::FakeControl sparse_control(sparse);
    const auto r = runner::ScenarioRunner(sparse, sparse_outbox, {.run_id = "rtest", .remote_control = &sparse_control})
                       .run(shipped(name));
    CHECK_FALSE(expected.error);
    CHECK_FALSE(r.error);
    CHECK(r.verdict == expected.verdict);
    REQUIRE(r.final_measurement);
    CHECK(r.final_measurement->remote.effect_count == expected.final_measurement->remote.effect_count);
    CHECK(r.final_measurement->remote.post_requests == expected.final_measurement->remote.post_requests);
    CHECK_FALSE(r.final_measurement->remote.active_idempotency_records);
    CHECK_FALSE(r.final_measurement->remote.boot_id);
    CHECK(r.final_json()["active_idempotency_records"].is_null());
    CHECK(r.final_json()["idempotency_mode"].is_null());
    // What fails is only what was not observed, and it fails as null.
    CHECK(expected.pass);
    for (const auto& check : r.checks) {
      INFO(check.id);
      if (!check.pass) CHECK(check.observed.is_null());
    }
    if (std::string(name).starts_with("015")) CHECK(r.pass);
  }
}

TEST_CASE("a restart is told by the boot_id where both snapshots have one, else by a request log that went back") {
  infra::RemoteSnapshot before;
  before.post_requests = 1;
  before.ack_drops = 1;
  auto after = before;
  CHECK_FALSE(infra::restarted_between(before, after));  // nothing tells
  after.post_requests = 0;
  after.ack_drops = 0;
  CHECK(infra::restarted_between(before, after) == true);  // the log was lost: a new process
  before.boot_id = "a";
  after.boot_id = "a";
  CHECK(infra::restarted_between(before, after) == false);  // the boot_id decides where there is one
  after.boot_id = "b";
  after.post_requests = 1;
  after.ack_drops = 1;
  CHECK(infra::restarted_between(before, after) == true);
}

TEST_CASE("a snapshot without a boot_id is held to its counts, never to a boot_id it does not report") {
  infra::RemoteLedger ledger{.boot_ids = {"a"}, .post_requests = 1, .ack_drops = 1};
  infra::RemoteSnapshot snapshot;
  snapshot.post_requests = 1;
  snapshot.ack_drops = 1;
  CHECK_NOTHROW(ledger.check(snapshot, "here"));
  snapshot.post_requests = 0;
  CHECK_THROWS_WITH(ledger.check(snapshot, "here"), Catch::Matchers::ContainsSubstring("post_requests 0"));
}

TEST_CASE("one instance on the authority's clock judges every request at the authority, observations included") {
  auto doc = shipped("018-declared-authority.json").document;
  doc["remote"] = {{"clock", "authority"}};
  doc["steps"][3]["expect"]["active_idempotency_records"] = 1;  // node B's reading says T0+70; the remote judges T0+55
  const auto s = scenario::parse_scenario(doc, "authority-one-instance");
  const auto r = run_with_fakes(s);
  INFO(r.error.value_or(""));
  CHECK(r.pass);
  CHECK(r.timeline[3].outcome->observed["logical_time_s"] == 5'000'070);
  CHECK(r.timeline[3].outcome->observed["active_idempotency_records"] == 1);
  // On the request's clock the same observation finds the key expired.
  doc["remote"] = {{"clock", "request"}};
  CHECK(run_with_fakes(scenario::parse_scenario(doc, "request-clock"))
            .timeline[3]
            .outcome->observed["active_idempotency_records"] == 0);
}

TEST_CASE("every effect sink call is held to a scenario: one for another operation, or after the last, is an ERROR") {
  infra::EffectSink sink({.operation_id = {.from = infra::OperationIdSource::From::header, .header = "X-Op"},
                          .now_unix_ms = [] { return std::int64_t{0}; }});
  const auto stray_call = [&](const std::string& operation_id) {
    httplib::Client client("127.0.0.1", sink.port());
    REQUIRE(client.Post("/instance/svc/charges", {{"X-Op", operation_id}}, "{}", "application/json")->status == 200);
  };
  testing::FakeRemote remote;
  testing::FakeOutbox outbox;
  runner::ScenarioRunner r(remote, outbox, {.run_id = "rtest", .effect_sink = &sink});
  CHECK_FALSE(r.late_sink_calls().has_value());
  stray_call("someone-else");  // before (between) scenarios: the next one is held to it
  const auto first = r.run(shipped("018-declared-authority.json"));
  CHECK(first.verdict == runner::Verdict::Error);
  CHECK_FALSE(first.pass);
  REQUIRE(first.error);
  CHECK_THAT(*first.error, Catch::Matchers::ContainsSubstring("the effect sink got call 1 (POST /charges from svc) "
                                                              "for operation someone-else, not this scenario's"));
  REQUIRE(first.effect_sink_calls.size() == 1);
  CHECK(first.effect_sink_calls[0]["operation_id"] == "someone-else");
  const auto second = r.run(shipped("018-uncertainty.json"));
  CHECK_FALSE(second.error.has_value());  // no call since the first ended
  CHECK(second.verdict == runner::Verdict::Held);
  CHECK(second.effect_sink_calls.empty());
  stray_call("late");
  const auto late = r.late_sink_calls();
  REQUIRE(late);
  CHECK_THAT(*late, Catch::Matchers::ContainsSubstring("1 call(s) after the last scenario ended"));
  auto result = second;
  runner::fail_with(result, *late);
  CHECK(result.verdict == runner::Verdict::Error);
  CHECK_FALSE(result.pass);
}
