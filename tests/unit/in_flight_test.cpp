// Requests in flight together (steps/in_flight_steps.cpp), run by the
// scenario runner against a stand-in payment service on loopback whose
// provider is a real effect sink: a POST whose provider call the sink holds,
// the same POST again while it is held, the release, POSTs sent at once. The
// stand-in is written several ways (it refuses a key in progress, it keeps no
// record until the charge returns, it makes the second request wait for the
// first; it checks the body of a key it completed, or charges another body
// again), and the verdict follows what the sink counted, never the service.

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <httplib.h>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "infra/effect_sink.hpp"
#include "infra/in_process.hpp"
#include "infra/own_wire_remote.hpp"
#include "runner/runner.hpp"
#include "runner/session.hpp"
#include "scenario/scenario.hpp"
#include "steps/step.hpp"

namespace {

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;

enum class Behaviour {
  refuses_in_progress,    // a record in progress before the charge: a second request gets 409
  no_in_progress_record,  // the record is written once the charge returned: a second request charges too
  waits_for_first,        // the key is locked across the charge: a second request waits, then replays
  never_answers,          // takes the request and never answers it (until the stand-in stops)
  errs_after_charge,      // refuses a key in progress; charges, then answers 500 with bytes that are not text
  checks_body,            // refuses a key in progress; a completed key with another body gets 422
  charges_other_body,     // refuses a key in progress; a completed key with another body is charged again
  locks_on_failure,       // refuses a key in progress, and keeps it in progress when the charge failed
};

class StandIn {
 public:
  StandIn(const infra::EffectSink& sink, Behaviour behaviour) : provider_port_(sink.port()), behaviour_(behaviour) {
    server_.Post("/payments",
                 [this](const httplib::Request& request, httplib::Response& response) { handle(request, response); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~StandIn() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void handle(const httplib::Request& request, httplib::Response& response) {
    const auto key = request.get_header_value("Idempotency-Key");
    const auto order = json::parse(request.body)["order_id"].get<std::string>();
    std::unique_lock lock(mutex_);
    if (behaviour_ == Behaviour::never_answers) {
      changed_.wait(lock, [this] { return stopping_; });
      return;
    }
    if (behaviour_ == Behaviour::waits_for_first) {
      changed_.wait(lock, [&] { return state_[key] != "in_progress"; });
    }
    const bool other_body = bodies_.contains(key) && bodies_[key] != request.body;
    if (state_[key] == "completed" && other_body && behaviour_ == Behaviour::checks_body) {
      response.status = 422;
      return;
    }
    if (state_[key] == "completed" && !(other_body && behaviour_ == Behaviour::charges_other_body)) {
      response.status = 200;
      return;
    }
    bodies_[key] = request.body;
    const bool refuses = behaviour_ != Behaviour::no_in_progress_record && behaviour_ != Behaviour::waits_for_first;
    if (state_[key] == "in_progress" && refuses) {
      response.status = 409;
      return;
    }
    if (behaviour_ != Behaviour::no_in_progress_record) state_[key] = "in_progress";
    lock.unlock();
    httplib::Client provider("127.0.0.1", provider_port_);
    const auto charged = provider.Post("/instance/app/charges", json{{"reference", order}}.dump(), "application/json");
    lock.lock();
    const bool paid = charged && charged->status == 200;
    state_[key] = paid ? "completed" : behaviour_ == Behaviour::locks_on_failure ? "in_progress" : "";
    changed_.notify_all();
    response.status = charged && charged->status == 200 ? 201 : 502;
    if (behaviour_ == Behaviour::errs_after_charge) {
      response.status = 500;
      response.set_content(std::string("\xff\xfe\x01 failed", 10), "application/octet-stream");
    }
  }

  httplib::Server server_;
  int provider_port_;
  Behaviour behaviour_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> state_;
  std::map<std::string, std::string> bodies_;  // the body each key was first charged with
  bool stopping_ = false;
};

infra::OwnWire payments_wire() {
  infra::OwnWire wire;
  wire.target = "app";
  wire.path = "/payments";
  wire.headers = {{"Content-Type", "application/json"}};
  wire.body = R"({"order_id":"{operation_id}","amount":{amount}})";
  wire.by_status = {{201, infra::AnswerClass::applied},
                    {200, infra::AnswerClass::replayed},
                    {409, infra::AnswerClass::refused_in_progress},
                    {422, infra::AnswerClass::refused_mismatch}};
  return wire;
}

// A service of its own wire, its sink and the runner, for one test.
struct Rig {
  explicit Rig(Behaviour behaviour, infra::OwnWire wire = payments_wire())
      : sink({.operation_id = {.from = infra::OperationIdSource::From::json_pointer,
                               .header = "",
                               .json_pointer = "/reference",
                               .path_segment = 0},
              .now_unix_ms = [] { return std::int64_t{0}; }}),
        service(sink, behaviour),
        remote(std::move(wire), service.url(), {.timeout_s = 2}, sink, tally, nullptr),
        runner(remote, outbox, {.run_id = "inflight", .effect_sink = &sink}) {}

  runner::ScenarioResult run(const json& doc) { return runner.run(scenario::parse_scenario(doc, "test.json")); }

  infra::EffectSink sink;
  StandIn service;
  infra::PostTally tally;
  infra::OwnWireRemote remote;
  infra::InProcessOutbox outbox;
  runner::ScenarioRunner runner;
};

json shipped(const std::string& name) {
  return scenario::load_scenario_file(SKEWBENCH_SOURCE_DIR "/scenarios/targets/" + name).document;
}

json steps_doc(json steps) {
  return {{"id", "in-flight"},
          {"description", "requests in flight"},
          {"t0_s", 1000},
          {"ttl_s", 60},
          {"nodes", {{{"id", "a"}, {"clock_offset_s", 0}}}},
          {"policy", {{"name", "node_local"}}},
          {"steps", std::move(steps)},
          {"expect", json::object()}};
}

const json& observed(const runner::ScenarioResult& r, std::size_t step) {
  return r.timeline.at(step).outcome->observed;
}

using FieldsSeen = std::map<std::string, std::set<std::string>>;

void note_fields(const runner::ScenarioResult& r, FieldsSeen& seen) {
  for (const auto& record : r.timeline) {
    if (!record.outcome) continue;
    for (const auto& [field, _] : record.outcome->observed.items()) seen[record.kind].insert(field);
  }
}

}  // namespace

TEST_CASE("in flight: a service that refuses a key in progress is SAFE, one that keeps no record charges twice") {
  FieldsSeen seen;
  {
    Rig rig(Behaviour::refuses_in_progress);
    const auto r = rig.run(shipped("020-in-flight-same-instance.json"));
    INFO(r.error.value_or(""));
    CHECK(r.pass);
    CHECK(r.verdict == runner::Verdict::Safe);
    CHECK(r.final_measurement->remote.effect_count == 1);
    CHECK(observed(r, 1)["provider_call"] == "held");
    CHECK(observed(r, 2)["refused_answers"] == 1);
    CHECK(observed(r, 2)["in_flight"] == 0);
    CHECK(observed(r, 3)["released_calls"] == 1);
    CHECK(observed(r, 3)["applied_answers"] == 1);
    // The first POST's answer is in the release's evidence, with the step that sent it.
    REQUIRE(r.timeline[3].outcome->exchanges.size() == 1);
    CHECK(r.timeline[3].outcome->exchanges[0]["harness"]["sent_by_step"] == 1);
    note_fields(r, seen);
  }
  {
    Rig rig(Behaviour::no_in_progress_record);
    const auto r = rig.run(shipped("020-in-flight-same-instance.json"));
    INFO(r.error.value_or(""));
    CHECK(r.verdict == runner::Verdict::Conflict);
    CHECK(r.final_measurement->remote.effect_count == 2);
    CHECK(observed(r, 2)["applied_answers"] == 1);
    note_fields(r, seen);
  }
  {
    // The key already completed: the held POST is replayed without a provider call.
    Rig rig(Behaviour::refuses_in_progress);
    const auto r = rig.run(steps_doc({{{"kind", "commit_operation"}, {"node", "a"}, {"at_s", 0}},
                                      {{"kind", "post_concurrent"}, {"node", "a"}, {"at_s", 0}},
                                      {{"kind", "post_held"}, {"node", "a"}, {"at_s", 1}},
                                      {{"kind", "release_provider"}, {"at_s", 2}}}));
    INFO(r.error.value_or(""));
    CHECK(r.verdict == runner::Verdict::Safe);
    CHECK(observed(r, 2)["provider_call"] == "not_called");
    CHECK(observed(r, 2)["replayed_answers"] == 1);
    CHECK(observed(r, 3)["released_calls"] == 0);
    note_fields(r, seen);
  }
  for (const auto* kind : {"post_held", "post_concurrent", "release_provider"}) {
    std::set<std::string> registered;
    for (const auto& [field, _] : steps::builtin_steps().find(kind)->observed) registered.insert(field);
    INFO("step kind " << kind);
    CHECK(seen[kind] == registered);
  }
}

TEST_CASE("in flight: a second POST the service makes wait for the first is measured after the release, not hung") {
  Rig rig(Behaviour::waits_for_first);
  auto doc = shipped("020-in-flight-same-instance.json");
  doc["steps"][2]["answer_within_ms"] = 200;
  const auto r = rig.run(doc);
  INFO(r.error.value_or(""));
  CHECK(r.verdict == runner::Verdict::Safe);
  CHECK(observed(r, 2)["answered"] == 0);
  CHECK(observed(r, 2)["in_flight"] == 1);
  CHECK(observed(r, 3)["answered"] == 2);
  CHECK(observed(r, 3)["applied_answers"] == 1);
  CHECK(observed(r, 3)["replayed_answers"] == 1);
  CHECK(r.final_measurement->remote.effect_count == 1);
}

TEST_CASE("in flight: a POST still unanswered when the scenario ends makes it an ERROR naming the step that sent it") {
  Rig rig(Behaviour::never_answers);
  const auto r =
      rig.run(steps_doc({{{"kind", "commit_operation"}, {"node", "a"}, {"at_s", 0}},
                         {{"kind", "post_concurrent"}, {"node", "a"}, {"at_s", 0}, {"answer_within_ms", 50}}}));
  CHECK(r.verdict == runner::Verdict::Error);
  REQUIRE(r.error);
  CHECK_THAT(*r.error, ContainsSubstring("step 1 (post_concurrent) sent a POST still in flight when the scenario "
                                         "ended: a release_provider step after it collects its answer"));
}

TEST_CASE("in flight: a held POST the service answers with an error after the release is an ERROR, never a verdict") {
  Rig rig(Behaviour::errs_after_charge);
  const auto r = rig.run(shipped("020-in-flight-same-instance.json"));
  CHECK(r.verdict == runner::Verdict::Error);
  CHECK_FALSE(r.pass);
  REQUIRE(r.error);
  CHECK_THAT(*r.error, ContainsSubstring("step 3 (release_provider): the POST step 1 (post_held) sent: target app: "
                                         "POST /payments answered 500"));
  CHECK(observed(r, 2)["refused_answers"] == 1);  // the second POST, refused while the first was held
}

TEST_CASE("in flight: a held call needs a later release, and the steps' fields are validated with their path") {
  auto doc = steps_doc({{{"kind", "commit_operation"}, {"node", "a"}, {"at_s", 0}},
                        {{"kind", "post_held"}, {"node", "a"}, {"at_s", 0}},
                        {{"kind", "release_provider"}, {"at_s", 1}},
                        {{"kind", "post_held"}, {"node", "a"}, {"at_s", 2}}});
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"),
                    "x.json: $.steps[3].kind: post_held leaves a provider call held: a later step must release it "
                    "(release_provider), or kill its node's instance (kill_instance)");
  doc["steps"][3] = {{"kind", "post_concurrent"}, {"node", "a"}, {"at_s", 2}, {"count", 65}};
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"),
                    "x.json: $.steps[3].count: 65 is out of range: must lie within [1, 64]");
  doc["steps"][3] = {{"kind", "post_concurrent"}, {"node", "a"}, {"at_s", 2}, {"answer_within_ms", 0}};
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"),
                    "x.json: $.steps[3].answer_within_ms: 0 is out of range: must lie within [1, 60000]");
  doc["steps"][3] = {{"kind", "release_provider"}, {"at_s", 2}, {"node", "a"}};
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"), ContainsSubstring("$.steps[3].node"));
}

TEST_CASE("in flight: killing a node's instance ends its held call; another node's held call still needs a release") {
  auto doc = steps_doc({{{"kind", "commit_operation"}, {"node", "a"}, {"at_s", 0}},
                        {{"kind", "post_held"}, {"node", "a"}, {"at_s", 0}},
                        {{"kind", "kill_instance"}, {"node", "a"}, {"at_s", 1}},
                        {{"kind", "post_effect"}, {"node", "b"}, {"at_s", 5}}});
  doc["nodes"].push_back({{"id", "b"}, {"clock_offset_s", 0}});
  doc["remote"] = {{"instances", "per_node"}, {"clock", "node"}};
  CHECK_NOTHROW(scenario::parse_scenario(doc, "x.json"));
  doc["steps"][2]["node"] = "b";
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"),
                    "x.json: $.steps[1].kind: post_held leaves a provider call held: a later step must release it "
                    "(release_provider), or kill its node's instance (kill_instance)");
  doc["steps"][2] = {{"kind", "kill_instance"}, {"at_s", 1}};
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"), ContainsSubstring("$.steps[2].node"));
}

TEST_CASE("in flight: kill_instance where skewbench did not start the service is an ERROR naming what it needs") {
  Rig rig(Behaviour::refuses_in_progress);  // the runner has no control of the service's process
  const auto r = rig.run(steps_doc({{{"kind", "commit_operation"}, {"node", "a"}, {"at_s", 0}},
                                    {{"kind", "post_held"}, {"node", "a"}, {"at_s", 0}},
                                    {{"kind", "kill_instance"}, {"node", "a"}, {"at_s", 1}}}));
  CHECK(r.verdict == runner::Verdict::Error);
  REQUIRE(r.error);
  CHECK_THAT(*r.error, ContainsSubstring("step 2 (kill_instance): kill_instance needs a service started by skewbench"));
}

TEST_CASE("in flight: against a service that performs its effect itself, the steps say what they need") {
  infra::InProcessOutbox outbox;
  infra::EffectSink sink({.operation_id = {}, .now_unix_ms = [] { return std::int64_t{0}; }});
  StandIn service(sink, Behaviour::refuses_in_progress);
  infra::PostTally tally;
  infra::OwnWireRemote remote(payments_wire(), service.url(), {.timeout_s = 2}, sink, tally, nullptr);
  runner::ScenarioRunner r(remote, outbox, {.run_id = "nosink"});  // no sink: as remote-effect runs
  const auto result = r.run(scenario::parse_scenario(shipped("020-in-flight-same-instance.json"), "x.json"));
  CHECK(result.verdict == runner::Verdict::Error);
  REQUIRE(result.error);
  CHECK_THAT(*result.error, ContainsSubstring("step 1 (post_held): post_held needs a service whose provider calls "
                                              "reach skewbench's effect sink"));
}

TEST_CASE("in flight: eight POSTs at once let exactly one through to the provider, whatever the service answers") {
  for (const auto behaviour : {Behaviour::refuses_in_progress, Behaviour::waits_for_first}) {
    Rig rig(behaviour);
    const auto r = rig.run(shipped("020-eight-at-once.json"));
    INFO(r.error.value_or(""));
    CHECK(r.pass);
    CHECK(r.verdict == runner::Verdict::Safe);
    CHECK(r.final_measurement->remote.effect_count == 1);
    const auto& sent = observed(r, 1);
    CHECK(sent["sent"] == 8);
    CHECK(sent["answered"].get<int>() + observed(r, 2)["answered"].get<int>() == 8);
    CHECK(sent["applied_answers"] == 1);
    // A service that makes the others wait replays its answer to each of them.
    if (behaviour == Behaviour::waits_for_first) CHECK(sent["replayed_answers"] == 7);
    CHECK(r.final_measurement->remote.post_requests ==
          1 + sent["replayed_answers"].get<int>() + observed(r, 2)["replayed_answers"].get<int>());
  }
}

TEST_CASE("in flight: answers that do not say applied or replayed read the sink's one call as one applied answer") {
  // As a library that replays its first answer as it was sent: 201 for both.
  auto wire = payments_wire();
  wire.by_status[201] = infra::AnswerClass::applied_or_replayed;
  wire.by_status[200] = infra::AnswerClass::applied_or_replayed;
  Rig rig(Behaviour::waits_for_first, wire);
  const auto r = rig.run(shipped("020-eight-at-once.json"));
  INFO(r.error.value_or(""));
  CHECK(r.verdict == runner::Verdict::Safe);
  // Every answer arrived after the one call: one of them is read as applied, seven as replays.
  CHECK(observed(r, 1)["applied_answers"] == 1);
  CHECK(observed(r, 1)["replayed_answers"] == 7);
}

TEST_CASE("the same key with another body: another amount reaches the service, and the sink decides the verdict") {
  const auto doc = shipped("020-other-body-after-completion.json");
  {
    Rig rig(Behaviour::checks_body);
    const auto r = rig.run(doc);
    INFO(r.error.value_or(""));
    CHECK(r.verdict == runner::Verdict::Safe);
    CHECK(observed(r, 2)["http_status"] == 422);
    CHECK(observed(r, 2)["transport_outcome"] == "REJECTED");
    CHECK(r.timeline[2].parameters["amount"] == 2000);
    const auto& sent = r.timeline[2].outcome->exchanges.at(0)["request"];
    CHECK_THAT(sent.dump(), ContainsSubstring("2000"));
    CHECK(r.final_measurement->remote.effect_count == 1);
  }
  {
    Rig rig(Behaviour::refuses_in_progress);  // no body check: the first answer, replayed
    const auto r = rig.run(doc);
    CHECK(r.verdict == runner::Verdict::Safe);
    CHECK(observed(r, 2)["delivery"] == "deduplicated");
    CHECK(r.final_measurement->remote.effect_count == 1);
  }
  {
    Rig rig(Behaviour::charges_other_body);
    const auto r = rig.run(doc);
    CHECK(r.verdict == runner::Verdict::Conflict);
    CHECK(r.final_measurement->remote.effect_count == 2);
  }
  // remote-effect, the control, refuses another body for an active key (422).
  infra::InProcessRemote control({});
  infra::InProcessOutbox outbox;
  runner::ScenarioRunner runner(control, outbox, {.run_id = "body"});
  const auto r = runner.run(scenario::parse_scenario(doc, "x.json"));
  INFO(r.error.value_or(""));
  CHECK(r.verdict == runner::Verdict::Safe);
  CHECK(observed(r, 2)["http_status"] == 422);
  CHECK(r.final_measurement->remote.effect_count == 1);
}

TEST_CASE("a post_effect's amount is validated with its path") {
  auto doc = steps_doc({{{"kind", "commit_operation"}, {"node", "a"}, {"at_s", 0}},
                        {{"kind", "post_effect"}, {"node", "a"}, {"at_s", 0}, {"amount", 0}}});
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"),
                    "x.json: $.steps[1].amount: 0 is out of range: must lie within [1, 1000000000]");
  doc["steps"][1]["amount"] = "2000";
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"), ContainsSubstring("$.steps[1].amount"));
}

TEST_CASE("another amount is refused against a target whose request does not carry it: its body would not change") {
  std::vector<scenario::Scenario> other;
  other.push_back(scenario::parse_scenario(shipped("020-other-body-after-completion.json"), "other.json"));
  std::vector<scenario::Scenario> same;
  same.push_back(scenario::parse_scenario(shipped("020-in-flight-same-instance.json"), "same.json"));
  runner::StackOptions services;
  services.ack_loss = infra::AckLoss::proxy;  // as a target of its own wire runs
  services.own_wire = payments_wire();
  CHECK_FALSE(runner::own_wire_problem(services, other));
  services.own_wire->body = R"({"order_id":"{operation_id}"})";
  const auto problem = runner::own_wire_problem(services, other);
  REQUIRE(problem);
  CHECK_THAT(*problem, ContainsSubstring("other.json: a post_effect with another amount, but target app's request "
                                         "carries no {amount}"));
  services.own_wire->headers.emplace_back("X-Amount", "{amount}");  // carried in a header: another request
  CHECK_FALSE(runner::own_wire_problem(services, other));
  // A scenario whose POSTs all charge the one amount needs none.
  services.own_wire->headers.clear();
  CHECK_FALSE(runner::own_wire_problem(services, same));
}

TEST_CASE(
    "the provider fails the first call: the error the service passes on is PROVIDER_FAILED, and the retry decides") {
  const auto doc = shipped("020-provider-fails-first-call.json");
  {
    Rig rig(Behaviour::refuses_in_progress);  // forgets a failed request: the retry charges
    const auto r = rig.run(doc);
    INFO(r.error.value_or(""));
    CHECK(r.verdict == runner::Verdict::Safe);
    CHECK(observed(r, 1)["armed"] == "fail_500");
    std::set<std::string> registered;  // the fields fail_provider registers, all observed
    for (const auto& [field, _] : steps::builtin_steps().find("fail_provider")->observed) registered.insert(field);
    FieldsSeen seen;
    note_fields(r, seen);
    CHECK(seen["fail_provider"] == registered);
    CHECK(observed(r, 2)["transport_outcome"] == "PROVIDER_FAILED");
    CHECK(observed(r, 2)["http_status"] == 502);
    CHECK(observed(r, 3)["delivery"] == "applied");
    CHECK(r.final_measurement->remote.effect_count == 1);
  }
  {
    Rig rig(Behaviour::locks_on_failure);  // the key stays in progress: refused for its TTL
    const auto r = rig.run(doc);
    INFO(r.error.value_or(""));
    CHECK(r.verdict == runner::Verdict::Held);
    CHECK(observed(r, 3)["transport_outcome"] == "REJECTED");
    CHECK(r.final_measurement->remote.effect_count == 0);
  }
  {
    auto reset = doc;
    reset["steps"][1]["answer"] = "reset";
    reset["steps"][1]["expect"]["armed"] = "reset";
    Rig rig(Behaviour::refuses_in_progress);
    const auto r = rig.run(reset);
    INFO(r.error.value_or(""));
    CHECK(r.pass);
    CHECK(observed(r, 2)["transport_outcome"] == "PROVIDER_FAILED");
    CHECK(r.verdict == runner::Verdict::Safe);
  }
  // An error answer while the sink failed no call stays an ERROR: the service's word alone is no outcome.
  Rig rig(Behaviour::errs_after_charge);
  const auto r = rig.run(steps_doc({{{"kind", "commit_operation"}, {"node", "a"}, {"at_s", 0}},
                                    {{"kind", "post_effect"}, {"node", "a"}, {"at_s", 0}}}));
  CHECK(r.verdict == runner::Verdict::Error);
  auto bad = doc;
  bad["steps"][1]["answer"] = "502";
  CHECK_THROWS_WITH(scenario::parse_scenario(bad, "x.json"), "x.json: $.steps[1].answer: must be 500 or reset");
}
