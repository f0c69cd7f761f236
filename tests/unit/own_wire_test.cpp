// A service of its own wire (infra/own_wire_remote.hpp) against a stand-in
// service on loopback that calls the effect sink as its provider: the request
// as the target file renders it, the answer as its rules classify it, and
// every count from skewbench's own sink and tally, never from the service.

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <httplib.h>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "infra/effect_sink.hpp"
#include "infra/own_wire_remote.hpp"

namespace {

using namespace skewbench::infra;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;

// How the stand-in behaves.
enum class Behaviour { honest, performs_elsewhere, wrong_reference, answers_500, charges_once };

// POST /payments: calls the sink's POST {provider}/charges with the order id
// as "reference" (as an honest service does), then answers 201 with a count
// of effects it makes up.
class StandIn {
 public:
  StandIn(const EffectSink& sink, Behaviour behaviour) : provider_port_(sink.port()), behaviour_(behaviour) {
    server_.Post("/payments", [this](const httplib::Request& request, httplib::Response& response) {
      const auto body = json::parse(request.body);
      if (behaviour_ == Behaviour::answers_500) {
        response.status = 500;
        return;
      }
      const bool charged_before = behaviour_ == Behaviour::charges_once && requests_++ > 0;
      if (behaviour_ != Behaviour::performs_elsewhere && !charged_before) {
        httplib::Client provider("127.0.0.1", provider_port_);
        const auto reference = behaviour_ == Behaviour::wrong_reference ? std::string("someone-else")
                                                                        : body["order_id"].get<std::string>();
        provider.Post("/instance/app/charges", json{{"reference", reference}}.dump(), "application/json");
      }
      last_key = request.get_header_value("Idempotency-Key");
      last_body = request.body;
      response.status = 201;
      // A count the service makes up: nothing of skewbench's may read it.
      response.set_content(json{{"effect_count", 1000}, {"status", "succeeded"}}.dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~StandIn() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::string last_key;
  std::string last_body;

 private:
  httplib::Server server_;
  int provider_port_;
  Behaviour behaviour_;
  int requests_ = 0;
  int port_ = 0;
  std::thread thread_;
};

OwnWire payments_wire() {
  OwnWire wire;
  wire.target = "app";
  wire.path = "/payments";
  wire.headers = {{"Content-Type", "application/json"}};
  wire.body = R"({"order_id":"{operation_id}","amount":{amount}})";
  wire.by_status = {{201, AnswerClass::applied}, {200, AnswerClass::replayed}, {409, AnswerClass::refused_in_progress}};
  return wire;
}

EffectSink::Options sink_options() {
  EffectSink::Options o;
  o.operation_id = {.from = OperationIdSource::From::json_pointer, .json_pointer = "/reference"};
  o.now_unix_ms = [] { return std::int64_t{0}; };
  return o;
}

PostEffectRequest post(const std::string& operation_id) {
  return {.operation_id = operation_id, .idempotency_key = operation_id + ".key", .body = "{}"};
}

}  // namespace

TEST_CASE("A request template is rendered with the operation, the key and the amount; JSON braces stay") {
  const std::map<std::string, std::string> values = {
      {"{operation_id}", "op-1"}, {"{idempotency_key}", "k"}, {"{amount}", "1000"}};
  CHECK(render_template(R"({"id":"{operation_id}","n":{amount},"o":{}})", values) ==
        R"({"id":"op-1","n":1000,"o":{}})");
  CHECK(render_template("/p/{idempotency_key}", values) == "/p/k");
  CHECK_THROWS_WITH(render_template("/p/{order}", values), ContainsSubstring("{order} is not a placeholder"));
}

TEST_CASE("An answer is classified by a JSON field first, then by its status; anything unlisted is an error") {
  auto wire = payments_wire();
  CHECK(classify_answer(wire, 201, "") == AnswerClass::applied);
  CHECK(classify_answer(wire, 500, "") == AnswerClass::error);
  wire.json_pointer = "/outcome";
  wire.by_value = {{"duplicate", AnswerClass::replayed}};
  CHECK(classify_answer(wire, 201, R"({"outcome":"duplicate"})") == AnswerClass::replayed);
  CHECK(classify_answer(wire, 201, R"({"outcome":"other"})") == AnswerClass::applied);
  CHECK(classify_answer(wire, 201, "not json") == AnswerClass::applied);
  CHECK(classify_answer(wire, 418, R"({"outcome":"x"})") == AnswerClass::error);
}

TEST_CASE("Effects are counted at the sink and POSTs by skewbench, whatever the service says") {
  EffectSink sink(sink_options());
  StandIn service(sink, Behaviour::honest);
  PostTally tally;
  OwnWireRemote remote(payments_wire(), service.url(), {.timeout_s = 5}, sink, tally, nullptr);
  const auto ex = remote.post_effect(post("op-1"));
  CHECK(ex.transport_outcome() == TransportOutcome::AckReceived);
  CHECK(ex.answer.delivery == skewbench::remote_effect::Delivery::applied);
  CHECK(ex.answer.snapshot.effect_count == 1);  // not the service's 1000
  CHECK(ex.answer.snapshot.post_requests == 1);
  CHECK(service.last_key == "op-1.key");
  CHECK(service.last_body == R"({"order_id":"op-1","amount":1000})");
  CHECK(ex.request["path"] == "/payments");
  CHECK(ex.harness["answer_class"] == "applied");
  remote.post_effect(post("op-1"));
  const auto status = remote.status("op-1", 0);
  CHECK(status.answer.effect_count == 2);
  CHECK(status.answer.status == skewbench::remote_effect::OperationStatus::conflict);
  CHECK(status.answer.post_requests == 2);
  CHECK(status.request["method"] == "READ");
  CHECK_FALSE(remote.health().answer.boot_id.has_value());
  CHECK_THROWS_AS(remote.gc("op-1", 0), skewbench::InfrastructureError);
}

TEST_CASE(
    "An effect claimed without a sink call, or an answer the rules call an error, is an error naming the target") {
  EffectSink sink(sink_options());
  PostTally tally;
  SECTION("the service performs its effect elsewhere") {
    StandIn service(sink, Behaviour::performs_elsewhere);
    OwnWireRemote remote(payments_wire(), service.url(), {.timeout_s = 5}, sink, tally, nullptr);
    CHECK_THROWS_WITH(remote.post_effect(post("op-1")),
                      ContainsSubstring("target app: POST /payments answered 201 (applied) but the effect sink "
                                        "holds no applied call for operation op-1"));
    CHECK_THROWS_WITH(remote.post_effect(post("op-1")),
                      ContainsSubstring("the sink took no call while it was in flight"));
  }
  SECTION("the service answers applied again without calling the sink again") {
    StandIn service(sink, Behaviour::charges_once);
    OwnWireRemote remote(payments_wire(), service.url(), {.timeout_s = 5}, sink, tally, nullptr);
    CHECK(remote.post_effect(post("op-1")).answer.snapshot.effect_count == 1);
    CHECK_THROWS_WITH(remote.post_effect(post("op-1")),
                      ContainsSubstring("target app: POST /payments answered 201 (applied) but the effect sink took "
                                        "no call for operation op-1 while it was in flight (it holds 1 applied"));
    CHECK(tally.of("op-1") == 1);  // the first, honest, POST only
    return;
  }
  SECTION("the sink rule finds another id") {
    StandIn service(sink, Behaviour::wrong_reference);
    OwnWireRemote remote(payments_wire(), service.url(), {.timeout_s = 5}, sink, tally, nullptr);
    // The message shows what the sink took, and what the rule read in it.
    CHECK_THROWS_WITH(remote.post_effect(post("op-1")),
                      ContainsSubstring("no applied call for operation op-1") &&
                          ContainsSubstring("the sink's calls while it was in flight: POST /charges (operation id "
                                            "read: \"someone-else\", ok)"));
    CHECK(sink.calls().at(0).operation_id == "someone-else");
  }
  SECTION("the service answers 500") {
    StandIn service(sink, Behaviour::answers_500);
    OwnWireRemote remote(payments_wire(), service.url(), {.timeout_s = 5}, sink, tally, nullptr);
    CHECK_THROWS_WITH(remote.post_effect(post("op-1")),
                      ContainsSubstring("target app: POST /payments answered 500, which its target file classifies"));
  }
  CHECK(tally.of("op-1") == 0);
}

TEST_CASE("An answer that does not say applied or replayed is read by the sink: applied when it took a call then") {
  EffectSink sink(sink_options());
  PostTally tally;
  auto wire = payments_wire();
  wire.by_status = {{201, AnswerClass::applied_or_replayed}};
  SECTION("a replay that is the first answer as it was sent") {
    StandIn service(sink, Behaviour::charges_once);
    OwnWireRemote remote(wire, service.url(), {.timeout_s = 5}, sink, tally, nullptr);
    const auto first = remote.post_effect(post("op-1"));
    CHECK(first.answer.delivery == skewbench::remote_effect::Delivery::applied);
    CHECK(first.harness["answer_class"] == "applied");
    CHECK(first.harness["answer_rule"] == "applied_or_replayed");
    const auto again = remote.post_effect(post("op-1"));
    CHECK(again.answer.delivery == skewbench::remote_effect::Delivery::deduplicated);
    CHECK(again.harness["answer_class"] == "replayed");
    CHECK(again.answer.snapshot.effect_count == 1);
    CHECK(tally.of("op-1") == 2);
  }
  SECTION("a replay that charges again is applied, and counted") {
    StandIn service(sink, Behaviour::honest);
    OwnWireRemote remote(wire, service.url(), {.timeout_s = 5}, sink, tally, nullptr);
    remote.post_effect(post("op-1"));
    const auto again = remote.post_effect(post("op-1"));
    CHECK(again.harness["answer_class"] == "applied");
    CHECK(again.answer.snapshot.effect_count == 2);
  }
  SECTION("a 2xx while the sink holds no call for the operation is still an error") {
    StandIn service(sink, Behaviour::performs_elsewhere);
    OwnWireRemote remote(wire, service.url(), {.timeout_s = 5}, sink, tally, nullptr);
    CHECK_THROWS_WITH(remote.post_effect(post("op-1")),
                      ContainsSubstring("answered 201 (replayed) but the effect sink holds no applied call"));
    CHECK(tally.of("op-1") == 0);
  }
}
