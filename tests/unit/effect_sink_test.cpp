// The effect sink (infra/effect_sink.hpp) on loopback: what it records of a
// call, where it reads the operation id, and its faults: hold (on events),
// slow, 500, reset and no answer. A service's effects are counted here, so a
// call counted wrongly would let the system under test set its own verdict.

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include <cerrno>
#include <cstring>

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch2/catch_test_macros.hpp>

#include "common/digest.hpp"
#include "infra/effect_sink.hpp"

namespace {

using skewbench::infra::EffectSink;
using skewbench::infra::OperationIdSource;
using skewbench::infra::SinkAnswer;
using skewbench::infra::SinkFault;
using skewbench::infra::SinkFaultKind;
using namespace std::chrono_literals;

constexpr std::int64_t kFixedNowMs = 1'700'000'000'000;

EffectSink::Options options(OperationIdSource source = {}) {
  EffectSink::Options o;
  o.operation_id = std::move(source);
  o.now_unix_ms = [] { return kFixedNowMs; };
  return o;
}

struct Answer {
  std::optional<int> status;  // unset: no answer
  httplib::Error error = httplib::Error::Success;
};

// One call as a service makes it: POST {base}/charges with a JSON body and
// the operation id in Idempotency-Key.
Answer call(const EffectSink& sink, const std::string& instance, const std::string& key,
            const std::string& body = R"({"amount":100})", const std::string& path = "/charges") {
  httplib::Client client("127.0.0.1", sink.port());
  client.set_tcp_nodelay(true);
  client.set_read_timeout(20, 0);
  httplib::Headers headers;
  if (!key.empty()) headers.emplace("Idempotency-Key", key);
  const auto result = client.Post(("/instance/" + instance + path).c_str(), headers, body, "application/json");
  if (!result) return {std::nullopt, result.error()};
  return {result->status, httplib::Error::Success};
}

// A connection to the sink, as a raw socket.
int connect_to(const EffectSink& sink) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(sink.port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

void send_all(int fd, const std::string& bytes) {
  REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
}

// What a raw socket reads after sending one call: "answer" when bytes came,
// "closed" for a clean close (FIN), "reset" for an abort (ECONNRESET).
std::string how_it_ends(const EffectSink& sink, const std::string& key) {
  const int fd = connect_to(sink);
  send_all(fd, "POST /instance/node-a/charges HTTP/1.1\r\nHost: sink\r\nIdempotency-Key: " + key +
                   "\r\nContent-Length: 2\r\n\r\n{}");
  char byte = 0;
  const ssize_t n = ::recv(fd, &byte, 1, 0);
  const int error = errno;
  ::close(fd);
  if (n > 0) return "answer";
  if (n == 0) return "closed";
  return error == ECONNRESET ? "reset" : std::string("error ") + std::strerror(error);
}

}  // namespace

TEST_CASE("The sink records every call: instance, operation id, method, path, body digest, answer") {
  EffectSink sink(options());
  REQUIRE(sink.url("node-a") == "http://127.0.0.1:" + std::to_string(sink.port()) + "/instance/node-a");
  CHECK(call(sink, "node-a", "op-1").status == 200);
  CHECK(call(sink, "node-b", "op-1", R"({"amount":5})", "/v1/charges?expand=1").status == 200);
  const auto calls = sink.calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].sequence == 1);
  CHECK(calls[0].received_unix_ms == kFixedNowMs);
  CHECK(calls[0].instance == "node-a");
  CHECK(calls[0].operation_id == "op-1");
  CHECK(calls[0].method == "POST");
  CHECK(calls[0].path == "/charges");
  CHECK(calls[0].body_sha256 == skewbench::sha256_hex(R"({"amount":100})"));
  CHECK(calls[0].body_bytes == 14);
  CHECK(calls[0].answer == SinkAnswer::ok);
  CHECK_FALSE(calls[0].fault.has_value());
  CHECK(calls[1].instance == "node-b");
  CHECK(calls[1].path == "/v1/charges?expand=1");
  CHECK(sink.applied("op-1") == 2);
  CHECK(sink.applied("op-2") == 0);
  const auto line = calls[0].to_json();
  CHECK(line["applied"] == true);
  CHECK(line["answer"] == "ok");
  CHECK(line["fault"].is_null());
}

TEST_CASE("A call without the operation id where the target said is recorded with none, and counts for none") {
  EffectSink sink(options());
  CHECK(call(sink, "node-a", "").status == 200);
  httplib::Client client("127.0.0.1", sink.port());
  CHECK(client.Post("/no-prefix", "{}", "application/json")->status == 200);
  const auto calls = sink.calls();
  REQUIRE(calls.size() == 2);
  CHECK_FALSE(calls[0].operation_id.has_value());
  CHECK_FALSE(calls[1].instance.has_value());
  CHECK(calls[1].path == "/no-prefix");
  CHECK(calls[0].to_json()["operation_id"].is_null());
}

TEST_CASE("The operation id is read from a header, a JSON pointer into the body, or a path segment") {
  using skewbench::infra::read_operation_id;
  const httplib::Headers headers{{"idempotency-key", "op-h"}, {"X-Other", "x"}};
  const std::string body = R"({"metadata":{"operation_id":"op-b","n":42}})";
  OperationIdSource source;
  CHECK(read_operation_id(source, headers, "/charges", body) == "op-h");  // names compare case-insensitively
  source.header = "X-Missing";
  CHECK_FALSE(read_operation_id(source, headers, "/charges", body).has_value());

  source.from = OperationIdSource::From::json_pointer;
  source.json_pointer = "/metadata/operation_id";
  CHECK(read_operation_id(source, headers, "/", body) == "op-b");
  source.json_pointer = "/metadata/n";
  CHECK(read_operation_id(source, headers, "/", body) == "42");
  source.json_pointer = "/metadata";  // an object is not an id
  CHECK_FALSE(read_operation_id(source, headers, "/", body).has_value());
  source.json_pointer = "/nowhere";
  CHECK_FALSE(read_operation_id(source, headers, "/", body).has_value());
  source.json_pointer = "/metadata/operation_id";
  CHECK_FALSE(read_operation_id(source, headers, "/", "not json").has_value());
  CHECK_FALSE(read_operation_id(source, headers, "/", std::string(100, '[')).has_value());

  source.from = OperationIdSource::From::path_segment;
  source.path_segment = 1;
  CHECK(read_operation_id(source, headers, "/charges/op-p/capture", "") == "op-p");
  CHECK(read_operation_id(source, headers, "//charges//op-p", "") == "op-p");
  source.path_segment = 3;
  CHECK_FALSE(read_operation_id(source, headers, "/charges/op-p/capture", "").has_value());
}

TEST_CASE("A held call is answered only when released, and counts only then") {
  EffectSink sink(options());
  sink.arm({.kind = SinkFaultKind::hold, .operation_id = "op-1"});
  CHECK_FALSE(sink.wait_until_held("op-1", 1, 0ms));
  auto answer = std::async(std::launch::async, [&] { return call(sink, "node-a", "op-1"); });
  REQUIRE(sink.wait_until_held("op-1", 1, 10s));
  CHECK(answer.wait_for(0ms) == std::future_status::timeout);
  CHECK(sink.applied("op-1") == 0);
  CHECK(sink.calls().at(0).answer == SinkAnswer::pending);
  // A call for another operation is not held behind it.
  CHECK(call(sink, "node-a", "op-2").status == 200);
  CHECK(sink.release("op-2") == 0);
  CHECK(sink.release("op-1") == 1);
  CHECK(answer.get().status == 200);
  CHECK(sink.applied("op-1") == 1);
  CHECK(sink.calls().at(0).fault == SinkFaultKind::hold);
  CHECK(sink.release(std::nullopt) == 0);
}

TEST_CASE("Held calls wait for as many as asked, and release(nullopt) answers them all") {
  EffectSink sink(options());
  sink.arm({.kind = SinkFaultKind::hold, .calls = 2});
  auto first = std::async(std::launch::async, [&] { return call(sink, "node-a", "op-1"); });
  auto second = std::async(std::launch::async, [&] { return call(sink, "node-b", "op-1"); });
  REQUIRE(sink.wait_until_held(std::nullopt, 2, 10s));
  CHECK(sink.release(std::nullopt) == 2);
  CHECK(first.get().status == 200);
  CHECK(second.get().status == 200);
  CHECK(call(sink, "node-a", "op-1").status == 200);  // the fault was taken by two calls only
  CHECK(sink.applied("op-1") == 3);
}

TEST_CASE("Held calls of an instance whose caller died are dropped: closed unanswered, not applied; others stay held") {
  EffectSink sink(options());
  sink.arm({.kind = SinkFaultKind::hold, .calls = 2});
  auto dying = std::async(std::launch::async, [&] { return call(sink, "node-a", "op-1"); });
  auto living = std::async(std::launch::async, [&] { return call(sink, "node-b", "op-1"); });
  REQUIRE(sink.wait_until_held("op-1", 2, 10s));
  CHECK(sink.drop_held("node-c") == 0);
  CHECK(sink.drop_held("node-a") == 1);
  CHECK_FALSE(dying.get().status.has_value());
  CHECK(living.wait_for(0ms) == std::future_status::timeout);  // node-b's call is still held
  CHECK(sink.drop_held("node-a") == 0);
  CHECK(sink.release("op-1") == 1);
  CHECK(living.get().status == 200);
  const auto calls = sink.calls();
  const auto dropped = std::find_if(calls.begin(), calls.end(), [](const auto& c) { return c.instance == "node-a"; });
  REQUIRE(dropped != calls.end());
  CHECK(dropped->answer == SinkAnswer::dropped);
  CHECK_FALSE(dropped->applied());
  CHECK(sink.applied("op-1") == 1);
}

TEST_CASE("A call held when the sink stops is closed unanswered and not applied") {
  auto sink = std::make_unique<EffectSink>(options());
  sink->arm({.kind = SinkFaultKind::hold});
  auto answer = std::async(std::launch::async, [&sink] { return call(*sink, "node-a", "op-1"); });
  REQUIRE(sink->wait_until_held("op-1", 1, 10s));
  sink.reset();
  CHECK_FALSE(answer.get().status.has_value());
}

TEST_CASE("Failed calls are answered 500, reset or closed without an answer, and are not effects") {
  EffectSink sink(options());
  sink.arm({.kind = SinkFaultKind::fail_500, .operation_id = "op-1"});
  sink.arm({.kind = SinkFaultKind::reset, .operation_id = "op-1"});
  sink.arm({.kind = SinkFaultKind::no_answer, .operation_id = "op-1"});
  CHECK(call(sink, "node-a", "op-2").status == 200);  // faults for op-1 only
  CHECK(call(sink, "node-a", "op-1").status == 500);
  const auto reset = call(sink, "node-a", "op-1");
  CHECK_FALSE(reset.status.has_value());
  const auto closed = call(sink, "node-a", "op-1");
  CHECK_FALSE(closed.status.has_value());
  CHECK(call(sink, "node-a", "op-1").status == 200);  // every fault taken
  const auto calls = sink.calls();
  REQUIRE(calls.size() == 5);
  CHECK(calls[1].answer == SinkAnswer::fail_500);
  CHECK(calls[2].answer == SinkAnswer::reset);
  CHECK(calls[3].answer == SinkAnswer::no_answer);
  CHECK(calls[3].to_json()["applied"] == false);
  CHECK(sink.applied("op-1") == 1);
  CHECK(sink.applied("op-2") == 1);
}

TEST_CASE("A reset aborts the connection, and no answer closes it cleanly") {
  EffectSink sink(options());
  sink.arm({.kind = SinkFaultKind::reset});
  sink.arm({.kind = SinkFaultKind::no_answer});
  CHECK(how_it_ends(sink, "op-1") == "reset");
  CHECK(how_it_ends(sink, "op-1") == "closed");
  CHECK(how_it_ends(sink, "op-1") == "answer");
  CHECK(sink.applied("op-1") == 1);
}

TEST_CASE("A slow call is answered after its delay, and a disarmed fault is never taken") {
  EffectSink sink(options());
  sink.arm({.kind = SinkFaultKind::slow, .delay_ms = 300});
  const auto start = std::chrono::steady_clock::now();
  CHECK(call(sink, "node-a", "op-1").status == 200);
  CHECK(std::chrono::steady_clock::now() - start >= 300ms);
  sink.arm({.kind = SinkFaultKind::fail_500});
  sink.disarm_all();
  CHECK(call(sink, "node-a", "op-1").status == 200);
  CHECK(sink.applied("op-1") == 2);
}

TEST_CASE("A fault that cannot be is refused") {
  EffectSink sink(options());
  CHECK_THROWS_AS(sink.arm({.kind = SinkFaultKind::hold, .calls = 0}), std::invalid_argument);
  CHECK_THROWS_AS(sink.arm({.kind = SinkFaultKind::slow, .delay_ms = 60'001}), std::invalid_argument);
  CHECK_THROWS_AS(sink.arm({.kind = SinkFaultKind::slow, .delay_ms = -1}), std::invalid_argument);
  CHECK_THROWS_AS(EffectSink(EffectSink::Options{}), std::invalid_argument);
}

TEST_CASE("The sink is quiet only when no call has come for the quiet time and none is on its way in") {
  EffectSink sink(options());
  CHECK(sink.wait_quiet(20ms, 5s));
  CHECK(call(sink, "node-a", "op-1").status == 200);
  CHECK(sink.wait_quiet(20ms, 5s));

  // A call whose body is still coming is not recorded yet: the sink is not
  // quiet until it is, however long nothing else arrives.
  const int fd = connect_to(sink);
  send_all(fd,
           "POST /instance/node-a/charges HTTP/1.1\r\nHost: sink\r\nIdempotency-Key: op-2\r\n"
           "Content-Length: 14\r\n\r\n{\"amount\"");
  CHECK_FALSE(sink.wait_quiet(20ms, 400ms));
  send_all(fd, ":100}");
  CHECK(sink.wait_quiet(20ms, 5s));
  CHECK(sink.applied("op-2") == 1);

  // A connection that holds no request does not keep it waiting.
  CHECK(sink.wait_quiet(20ms, 5s));
  ::close(fd);
  const int idle = connect_to(sink);
  CHECK(sink.wait_quiet(20ms, 5s));
  ::close(idle);
}

TEST_CASE("A held call, recorded already, does not keep the sink from being quiet") {
  EffectSink sink(options());
  sink.arm({.kind = SinkFaultKind::hold, .operation_id = "op-1"});
  auto answer = std::async(std::launch::async, [&] { return call(sink, "node-a", "op-1"); });
  REQUIRE(sink.wait_until_held("op-1", 1, 10s));
  CHECK(sink.wait_quiet(20ms, 5s));
  CHECK(sink.release("op-1") == 1);
  CHECK(answer.get().status == 200);
}
