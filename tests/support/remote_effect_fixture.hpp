#pragma once

// The real remote-effect binary on a free loopback port with a temporary state
// file, and the small HTTP and raw-socket helpers its tests share.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <httplib.h>
#include <catch2/catch_test_macros.hpp>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/files.hpp"
#include "remote_effect/launcher.hpp"

namespace remote_effect_fixture {

namespace re = skewbench::remote_effect;
using nlohmann::json;

// One service on its own temporary state file; the log stays next to it.
struct Service {
  explicit Service(std::string sync = "full", int default_ttl_s = 60, re::DedupeMode dedupe = re::kDefaultDedupeMode,
                   std::vector<std::string> extra_args = {})
      : dir("re-it"), process(options(dir, std::move(sync), default_ttl_s, dedupe, std::move(extra_args))) {}

  static re::LaunchOptions options(const skewbench::TempDir& dir, std::string sync, int default_ttl_s,
                                   re::DedupeMode dedupe, std::vector<std::string> extra_args) {
    re::LaunchOptions launch;
    launch.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
    launch.state_db = dir.path() / "remote.db";
    launch.sync = std::move(sync);
    launch.dedupe = dedupe;
    launch.default_ttl_seconds = default_ttl_s;
    launch.extra_args = std::move(extra_args);
    launch.stderr_path = (dir.path() / "remote-effect.log").string();
    return launch;
  }

  httplib::Client client() const {
    httplib::Client client(process.base_url());
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);
    client.set_connection_timeout(std::chrono::seconds(5));
    client.set_read_timeout(std::chrono::seconds(10));
    return client;
  }

  skewbench::TempDir dir;
  re::RemoteEffectProcess process;
};

// One POST /effects; ttl_s = nullopt sends no X-Idempotency-TTL header.
struct Post {
  Post(std::string operation_id_, std::string key_, std::int64_t now_s_, std::optional<std::int64_t> ttl_s_ = 10,
       bool drop_ack_ = false, std::string body_ = "")
      : operation_id(std::move(operation_id_)),
        key(std::move(key_)),
        now_s(now_s_),
        ttl_s(ttl_s_),
        drop_ack(drop_ack_),
        body(std::move(body_)) {}

  std::string operation_id;
  std::string key;
  std::int64_t now_s;
  std::optional<std::int64_t> ttl_s;
  bool drop_ack;
  std::string body;
};

inline httplib::Result post(httplib::Client& client, const Post& p) {
  httplib::Headers headers = {
      {"X-Operation-Id", p.operation_id}, {"Idempotency-Key", p.key}, {"X-Logical-Time", std::to_string(p.now_s)}};
  if (p.ttl_s) headers.emplace("X-Idempotency-TTL", std::to_string(*p.ttl_s));
  if (p.drop_ack) headers.emplace("X-Drop-Ack", "1");
  return client.Post("/effects", headers, p.body, "application/octet-stream");
}

inline json body_of(const httplib::Result& result) {
  REQUIRE(result);
  CHECK(result->get_header_value("Content-Type") == "application/json");
  return json::parse(result->body);
}

// POST that must succeed; returns its JSON body.
inline json post_ok(httplib::Client& client, const Post& p) {
  const auto result = post(client, p);
  REQUIRE(result);
  INFO(result->body);
  REQUIRE(result->status == 200);
  return body_of(result);
}

inline json status(httplib::Client& client, const std::string& operation_id, std::int64_t now_s) {
  const auto result = client.Get("/status/" + operation_id, {{"X-Logical-Time", std::to_string(now_s)}});
  REQUIRE(result);
  INFO(result->body);
  REQUIRE(result->status == 200);
  return body_of(result);
}

// Sends raw bytes on a fresh connection and returns everything the server
// sends back until it closes the connection (or the timeout passes).
inline std::string raw_exchange(int port, const std::string& request,
                                std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  std::string received;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) break;
    char buffer[4096];
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;  // EOF or reset: the server closed the connection
    received.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return received;
}

inline std::string raw_post(const std::string& extra_headers, const std::string& body = "") {
  return "POST /effects HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace remote_effect_fixture
