// Requests in flight together (steps/in_flight_steps.cpp), run by the
// scenario runner against a stand-in payment service on loopback whose
// provider is a real effect sink: a POST whose provider call the sink holds,
// the same POST again while it is held, the release, POSTs sent at once. The
// stand-in is written three ways (it refuses a key in progress, it keeps no
// record until the charge returns, it makes the second request wait for the
// first), and the verdict follows what the sink counted, never the service.

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
    if (state_[key] == "completed") {
      response.status = 200;
      return;
    }
    const bool refuses = behaviour_ == Behaviour::refuses_in_progress || behaviour_ == Behaviour::errs_after_charge;
    if (state_[key] == "in_progress" && refuses) {
      response.status = 409;
      return;
    }
    if (behaviour_ != Behaviour::no_in_progress_record) state_[key] = "in_progress";
    lock.unlock();
    httplib::Client provider("127.0.0.1", provider_port_);
    const auto charged = provider.Post("/instance/app/charges", json{{"reference", order}}.dump(), "application/json");
    lock.lock();
    state_[key] = charged && charged->status == 200 ? "completed" : "";
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
                    {409, infra::AnswerClass::refused_in_progress}};
  return wire;
}

// A service of its own wire, its sink and the runner, for one test.
struct Rig {
  explicit Rig(Behaviour behaviour)
      : sink({.operation_id = {.from = infra::OperationIdSource::From::json_pointer,
                               .header = "",
                               .json_pointer = "/reference",
                               .path_segment = 0},
              .now_unix_ms = [] { return std::int64_t{0}; }}),
        service(sink, behaviour),
        remote(payments_wire(), service.url(), {.timeout_s = 2}, sink, tally, nullptr),
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

TEST_CASE("in flight: eight POSTs with one key at once are one effect where the service refuses a key in progress") {
  Rig rig(Behaviour::refuses_in_progress);
  const auto r = rig.run(steps_doc({{{"kind", "commit_operation"}, {"node", "a"}, {"at_s", 0}},
                                    {{"kind", "post_concurrent"}, {"node", "a"}, {"at_s", 0}, {"count", 8}}}));
  INFO(r.error.value_or(""));
  CHECK(r.verdict == runner::Verdict::Safe);
  CHECK(observed(r, 1)["sent"] == 8);
  CHECK(observed(r, 1)["answered"] == 8);
  CHECK(observed(r, 1)["applied_answers"] == 1);
  CHECK(observed(r, 1)["refused_answers"].get<int>() + observed(r, 1)["replayed_answers"].get<int>() == 7);
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
                    "(release_provider)");
  doc["steps"][3] = {{"kind", "post_concurrent"}, {"node", "a"}, {"at_s", 2}, {"count", 65}};
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"), "x.json: $.steps[3].count: must be between 1 and 64");
  doc["steps"][3] = {{"kind", "post_concurrent"}, {"node", "a"}, {"at_s", 2}, {"answer_within_ms", 0}};
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"),
                    "x.json: $.steps[3].answer_within_ms: must be between 1 and 60000");
  doc["steps"][3] = {{"kind", "release_provider"}, {"at_s", 2}, {"node", "a"}};
  CHECK_THROWS_WITH(scenario::parse_scenario(doc, "x.json"), ContainsSubstring("$.steps[3].node"));
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
