// Hostile clients against the real remote-effect binary on loopback: bytes
// that are not UTF-8, oversized chunked bodies, idle and slow connections,
// pipelining and padded integers. Every test is bounded by short timeouts.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <nlohmann/json.hpp>

#include "support/remote_effect_fixture.hpp"

using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
using namespace remote_effect_fixture;
using Clock = std::chrono::steady_clock;

namespace {

// A raw loopback connection that the test drives byte by byte.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  }
  ~RawConnection() { ::close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // False once the peer has closed or reset the connection.
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }

  // What arrives until the peer closes, `until` appears, or the timeout passes.
  std::string receive(std::chrono::milliseconds timeout, const std::string& until = "") {
    std::string received;
    const auto deadline = Clock::now() + timeout;
    while (until.empty() || received.find(until) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) break;
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left)) <= 0) break;
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      received.append(buffer, static_cast<std::size_t>(n));
    }
    return received;
  }

  // True when the peer closes the connection within the timeout.
  bool closed_within(std::chrono::milliseconds timeout) {
    receive(timeout);
    return closed_;
  }

 private:
  int fd_;
  bool closed_ = false;
};

std::string health_request() { return "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"; }

std::string keep_alive_post(const std::string& headers, const std::string& body = "") {
  return "POST /effects HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + "Content-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

// The service's resident memory, from /proc.
std::int64_t resident_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  FAIL("no VmRSS for pid " << pid);
  return 0;
}

// Waits (up to 30 s: thread start-up is slow under sanitizers) until the
// service serves at least `count` connections, as /health reports them.
void wait_until_open(int port, std::size_t count) {
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  for (;;) {
    RawConnection connection(port);
    REQUIRE(connection.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
    const auto reply = connection.receive(std::chrono::milliseconds(30000));
    const auto body = reply.find("\r\n\r\n");
    REQUIRE(body != std::string::npos);
    if (json::parse(reply.substr(body + 4)).at("open_connections").get<std::size_t>() >= count) return;
    REQUIRE(Clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Milliseconds a fresh connection waits for a /health answer (capped).
std::int64_t health_latency_ms(int port) {
  const auto start = Clock::now();
  RawConnection connection(port);
  REQUIRE(connection.send(health_request()));
  const auto reply = connection.receive(std::chrono::milliseconds(5000), "\r\n\r\n");
  CHECK_THAT(reply, ContainsSubstring("HTTP/1.1 200"));
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

}  // namespace

TEST_CASE("a key or operation id that is not valid UTF-8 is refused with 400 and nothing is committed") {
  Service service;
  const int port = service.process.port();
  // A raw 0xFF byte, and %FF, which cpp-httplib decodes in header values.
  for (const auto& key : {std::string("key-\xff"), std::string("key-%FF")}) {
    INFO(key);
    const auto raw = raw_exchange(
        port, raw_post("X-Operation-Id: op-utf8\r\nIdempotency-Key: " + key + "\r\nX-Logical-Time: 5\r\n"));
    CHECK_THAT(raw, ContainsSubstring("HTTP/1.1 400"));
    CHECK_THAT(raw, ContainsSubstring(R"("header":"Idempotency-Key")"));
  }
  const auto raw =
      raw_exchange(port, raw_post("X-Operation-Id: op-\xc3\r\nIdempotency-Key: key-1\r\nX-Logical-Time: 5\r\n"));
  CHECK_THAT(raw, ContainsSubstring("HTTP/1.1 400"));
  CHECK_THAT(raw, ContainsSubstring(R"("header":"X-Operation-Id")"));

  auto client = service.client();
  const auto snapshot = status(client, "op-utf8", 5);
  CHECK(snapshot.at("effect_count") == 0);
  CHECK(snapshot.at("post_requests") == 0);

  const auto unknown = client.Get("/status/%FF", {{"X-Logical-Time", "5"}});
  REQUIRE(unknown);
  CHECK(unknown->status == 400);
  CHECK(body_of(unknown).at("error") == "invalid_operation_id");
}

TEST_CASE("a chunked body over 64 KiB is refused with 413 whatever its size, without buffering it") {
  Service service;
  const int port = service.process.port();
  const auto rss_before_kib = resident_kib(service.process.pid());
  for (const std::size_t size :
       {std::size_t{72} * 1024, std::size_t{1} << 20, std::size_t{10} << 20, std::size_t{50} << 20}) {
    INFO("chunked body of " << size << " bytes");
    RawConnection connection(port);
    REQUIRE(connection.send(
        "POST /effects HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Operation-Id: op-chunked\r\nIdempotency-Key: key-chunked\r\n"
        "X-Logical-Time: 5\r\nTransfer-Encoding: chunked\r\n\r\n"));
    std::atomic<bool> refused{false};
    std::thread sender([&] {
      const std::string chunk = "4000\r\n" + std::string(0x4000, 'x') + "\r\n";
      for (std::size_t sent = 0; sent < size && !refused; sent += 0x4000) {
        if (!connection.send(chunk)) return;  // the service closed the connection
      }
      connection.send("0\r\n\r\n");
    });
    const auto reply = connection.receive(std::chrono::milliseconds(10000), "}");
    refused = true;
    sender.join();
    CHECK_THAT(reply, ContainsSubstring("HTTP/1.1 413"));
    CHECK_THAT(reply, ContainsSubstring("payload_too_large"));
  }
  auto client = service.client();
  CHECK(status(client, "op-chunked", 5).at("effect_count") == 0);
  // 61 MiB were offered; the service kept at most a few buffers of them.
  CHECK(resident_kib(service.process.pid()) - rss_before_kib < 16 * 1024);
}

TEST_CASE("a declared Content-Length over 64 KiB is refused with 413 before any body byte is sent") {
  Service service;
  RawConnection connection(service.process.port());
  REQUIRE(connection.send(
      "POST /effects HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Operation-Id: op-big\r\nIdempotency-Key: key-big\r\n"
      "X-Logical-Time: 5\r\nContent-Length: 65537\r\n\r\n"));
  CHECK_THAT(connection.receive(std::chrono::milliseconds(2000), "}"), ContainsSubstring("HTTP/1.1 413"));
}

TEST_CASE("two hundred idle connections do not delay /health beyond a second") {
  Service service;
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 200; ++i) idle.push_back(std::make_unique<RawConnection>(service.process.port()));
  wait_until_open(service.process.port(), 201);  // the 200 and the asking one
  CHECK(health_latency_ms(service.process.port()) < 1000);
}

TEST_CASE("slow clients trickling their headers do not block others and get 408 at the header timeout") {
  Service service("full", 60, re::DedupeMode::durable, {"--header-timeout-seconds", "3"});
  const int port = service.process.port();
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 64; ++i) {
    slow.push_back(std::make_unique<RawConnection>(port));
    REQUIRE(slow.back()->send("GET /health HTTP/1.1\r\n"));
  }
  wait_until_open(port, 65);
  CHECK(health_latency_ms(port) < 1000);
  const auto start = Clock::now();
  for (int second = 0; second < 2; ++second) {
    for (auto& connection : slow) connection->send("X");  // a byte now and then keeps no request alive
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  for (auto& connection : slow) {
    CHECK_THAT(connection->receive(std::chrono::milliseconds(3000), "}"), ContainsSubstring("HTTP/1.1 408"));
  }
  CHECK(Clock::now() - start < std::chrono::seconds(10));  // bounded: a byte now and then is not a request
}

TEST_CASE("a request that cannot be parsed gets 400 and its connection is closed at once") {
  Service service;
  RawConnection connection(service.process.port());
  REQUIRE(connection.send("GARBAGE\r\n\r\n"));
  const auto start = Clock::now();
  CHECK_THAT(connection.receive(std::chrono::milliseconds(3000)), ContainsSubstring("HTTP/1.1 400"));
  CHECK(connection.closed_within(std::chrono::milliseconds(1000)));
  CHECK(Clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("an idle connection is closed after the idle timeout") {
  Service service("full", 60, re::DedupeMode::durable, {"--idle-timeout-seconds", "1"});
  RawConnection connection(service.process.port());
  REQUIRE(connection.send(health_request()));
  CHECK_THAT(connection.receive(std::chrono::milliseconds(2000), "}"), ContainsSubstring("HTTP/1.1 200"));
  CHECK(connection.closed_within(std::chrono::milliseconds(3000)));
}

TEST_CASE("a connection over --max-connections is answered 503 at once; a freed slot serves again") {
  Service service("full", 60, re::DedupeMode::durable, {"--max-connections", "4"});
  const int port = service.process.port();
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<RawConnection>(port));
    REQUIRE(held.back()->send(health_request()));
    REQUIRE_THAT(held.back()->receive(std::chrono::milliseconds(2000), "}"), ContainsSubstring("HTTP/1.1 200"));
  }
  {
    RawConnection extra(port);
    const auto reply = extra.receive(std::chrono::milliseconds(2000), "}");
    CHECK_THAT(reply, ContainsSubstring("HTTP/1.1 503"));
    CHECK_THAT(reply, ContainsSubstring("too_many_connections"));
  }
  held.pop_back();
  // Served again once the service has seen the close, however long that takes
  // it; and the probe that is let in is answered at once. (Each probe's own
  // close is seen later again, so a second connection now could be the fifth.)
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  for (;;) {
    const auto start = Clock::now();
    RawConnection probe(port);
    REQUIRE(probe.send(health_request()));
    if (probe.receive(std::chrono::milliseconds(5000), "\r\n\r\n").find("HTTP/1.1 200") != std::string::npos) {
      CHECK(Clock::now() - start < std::chrono::seconds(1));
      break;
    }
    REQUIRE(Clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TEST_CASE("pipelined requests are answered in order and a pipelined POST is applied") {
  Service service;
  RawConnection connection(service.process.port());
  REQUIRE(connection.send(
      health_request() +
      keep_alive_post("X-Operation-Id: op-pipe\r\nIdempotency-Key: key-pipe\r\nX-Logical-Time: 5\r\n", "body") +
      "GET /status/op-pipe HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Logical-Time: 5\r\n\r\n"));
  const auto start = Clock::now();
  std::string replies;
  while (count_of(replies, "HTTP/1.1 200") < 3 && Clock::now() - start < std::chrono::seconds(3)) {
    replies += connection.receive(std::chrono::milliseconds(200));
  }
  CHECK(count_of(replies, "HTTP/1.1 200") == 3);
  const auto health_at = replies.find(R"("service":"remote-effect")");
  const auto applied_at = replies.find(R"("delivery":"applied")");
  const auto status_at = replies.rfind(R"("effect_count":1)");
  CHECK(health_at < applied_at);
  CHECK(applied_at < status_at);
  CHECK(status_at != std::string::npos);
  auto client = service.client();
  CHECK(status(client, "op-pipe", 5).at("effect_count") == 1);
}

TEST_CASE("an integer header padded with spaces or a tab is refused with 400; -1 is a legal logical time") {
  Service service;
  const int port = service.process.port();
  for (const std::string padded : {"X-Logical-Time:  5\r\n", "X-Logical-Time: 5\t\r\n", "X-Logical-Time: 5 \r\n",
                                   "X-Logical-Time:\t5\r\n", "X-Logical-Time: 5\r\nX-Idempotency-TTL:  10\r\n"}) {
    INFO(padded);
    const auto raw = raw_exchange(port, raw_post("X-Operation-Id: op-pad\r\nIdempotency-Key: key-pad\r\n" + padded));
    CHECK_THAT(raw, ContainsSubstring("HTTP/1.1 400"));
    CHECK_THAT(raw, ContainsSubstring("invalid_header_value"));
  }
  auto client = service.client();
  CHECK(status(client, "op-pad", 5).at("post_requests") == 0);
  const auto reply = post_ok(client, {"op-negative", "key-negative", -1, 1});
  CHECK(reply.at("delivery") == "applied");
  CHECK(reply.at("idempotency_records")[0].at("expires_at") == 0);
}

TEST_CASE("a request line that never ends gets the documented 408 at the header timeout, then the close") {
  // cpp-httplib gives up on a request line cut short without a word; the
  // client that sent part of one is owed the 408 as much as a slow header.
  Service service("full", 60, re::DedupeMode::durable, {"--header-timeout-seconds", "1"});
  RawConnection connection(service.process.port());
  REQUIRE(connection.send("GET /heal"));
  const auto reply = connection.receive(std::chrono::milliseconds(5000), "}");
  CHECK_THAT(reply, ContainsSubstring("HTTP/1.1 408"));
  CHECK_THAT(reply, ContainsSubstring(R"({"error":"request_timeout"})"));
  CHECK(connection.closed_within(std::chrono::milliseconds(3000)));
}

TEST_CASE("a header folded onto a continuation line (obs-fold) is refused with 400, never half-read") {
  Service service;
  RawConnection connection(service.process.port());
  REQUIRE(connection.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: first\r\n  second\r\n\r\n"));
  const auto reply = connection.receive(std::chrono::milliseconds(3000), "}");
  CHECK_THAT(reply, ContainsSubstring("HTTP/1.1 400"));
  CHECK_THAT(reply, ContainsSubstring("obsolete_line_folding"));
  CHECK(connection.closed_within(std::chrono::milliseconds(2000)));
  // A POST with a folded protocol header applies nothing.
  RawConnection post(service.process.port());
  REQUIRE(post.send(
      keep_alive_post("X-Operation-Id: op-fold\r\n\t-2\r\nX-Idempotency-Key: k-fold\r\nX-Logical-Time: 1\r\n")));
  CHECK_THAT(post.receive(std::chrono::milliseconds(3000), "}"), ContainsSubstring("HTTP/1.1 400"));
  RawConnection status(service.process.port());
  REQUIRE(status.send("GET /status/op-fold HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Logical-Time: 2\r\n\r\n"));
  CHECK_THAT(status.receive(std::chrono::milliseconds(3000), "}"), ContainsSubstring(R"("effect_count":0)"));
}
