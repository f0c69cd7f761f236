// The real remote-effect binary, started on a free loopback port with a
// temporary state file, checked rule by rule through its HTTP API.

#include <barrier>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <sqlite3.h>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <nlohmann/json.hpp>
#include <skewbench/build_info.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/files.hpp"
#include "common/subprocess.hpp"
#include "remote_effect/launcher.hpp"
#include "support/remote_effect_fixture.hpp"

namespace re = skewbench::remote_effect;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
using namespace remote_effect_fixture;

TEST_CASE("a fresh key is applied once and the status shows one committed effect") {
  Service service;
  auto client = service.client();

  const auto reply = post_ok(client, {"op-1", "key-1", 100, 10});
  CHECK(reply.at("delivery") == "applied");
  CHECK(reply.at("idempotency_key") == "key-1");
  CHECK(reply.at("ttl_seconds") == 10);
  CHECK(reply.at("status") == "committed");
  CHECK(reply.at("boot_id") == service.process.boot_id());

  const auto snapshot = status(client, "op-1", 105);
  CHECK(snapshot.at("operation_id") == "op-1");
  CHECK(snapshot.at("evaluation_time") == 105);
  CHECK(snapshot.at("status") == "committed");
  CHECK(snapshot.at("effect_count") == 1);
  REQUIRE(snapshot.at("effects").size() == 1);
  CHECK(snapshot.at("effects")[0].at("operation_id") == "op-1");
  CHECK(snapshot.at("effects")[0].at("idempotency_key") == "key-1");
  CHECK(snapshot.at("effects")[0].at("created_at") == 100);
  REQUIRE(snapshot.at("idempotency_records").size() == 1);
  CHECK(snapshot.at("idempotency_records")[0] == json{{"idempotency_key", "key-1"},
                                                      {"operation_id", "op-1"},
                                                      {"created_at", 100},
                                                      {"expires_at", 110},
                                                      {"active_at_query", true}});
  CHECK(snapshot.at("active_idempotency_records") == 1);
  CHECK(snapshot.at("post_requests") == 1);
  CHECK(snapshot.at("ack_drops") == 0);
  CHECK(snapshot.at("boot_id") == service.process.boot_id());

  const auto absent = status(client, "op-never-posted", 105);
  CHECK(absent.at("status") == "absent");
  CHECK(absent.at("effect_count") == 0);
  CHECK(absent.at("post_requests") == 0);
}

TEST_CASE("an active key reused by the same operation with the same body is deduplicated") {
  Service service;
  auto client = service.client();
  post_ok(client, {"op-1", "key-1", 100, 10, false, "payload"});

  const auto reply = post_ok(client, {"op-1", "key-1", 105, 10, false, "payload"});
  CHECK(reply.at("delivery") == "deduplicated");
  CHECK(reply.at("effect_count") == 1);

  const auto snapshot = status(client, "op-1", 105);
  CHECK(snapshot.at("effect_count") == 1);
  CHECK(snapshot.at("post_requests") == 2);
  // Deduplication leaves the record as the first POST wrote it.
  CHECK(snapshot.at("idempotency_records")[0].at("created_at") == 100);
  CHECK(snapshot.at("idempotency_records")[0].at("expires_at") == 110);
}

TEST_CASE("an active key reused by another operation is refused with 409") {
  Service service;
  auto client = service.client();
  post_ok(client, {"op-1", "key-1", 100, 10});

  const auto result = post(client, {"op-2", "key-1", 109, 10});
  REQUIRE(result);
  CHECK(result->status == 409);
  CHECK(body_of(result) == json{{"error", "active_idempotency_key_reused_for_different_operation"}});

  const auto other = status(client, "op-2", 109);
  CHECK(other.at("effect_count") == 0);
  CHECK(other.at("idempotency_records").empty());
  CHECK(other.at("post_requests") == 0);
  const auto owner = status(client, "op-1", 109);
  CHECK(owner.at("effect_count") == 1);
  CHECK(owner.at("idempotency_records")[0].at("operation_id") == "op-1");
}

TEST_CASE("an active key reused by the same operation with a different body is refused with 422") {
  Service service;
  auto client = service.client();
  post_ok(client, {"op-1", "key-1", 100, 10, false, R"({"amount":10})"});

  const auto result = post(client, {"op-1", "key-1", 101, 10, false, R"({"amount":99})"});
  REQUIRE(result);
  CHECK(result->status == 422);
  CHECK(body_of(result) == json{{"error", "idempotency_key_reused_with_different_payload"}});

  // An empty body is a payload too: it differs from the first one.
  const auto empty = post(client, {"op-1", "key-1", 101, 10, false, ""});
  REQUIRE(empty);
  CHECK(empty->status == 422);

  const auto snapshot = status(client, "op-1", 101);
  CHECK(snapshot.at("effect_count") == 1);
  CHECK(snapshot.at("post_requests") == 1);
}

TEST_CASE("a key is active at expires_at - 1 and expired at exactly expires_at") {
  Service service;
  auto client = service.client();
  post_ok(client, {"op-a", "key-1", 100, 10});  // expires_at = 110

  SECTION("the status marks the record by the strict rule") {
    const auto before = status(client, "op-a", 109);
    CHECK(before.at("idempotency_records")[0].at("active_at_query") == true);
    CHECK(before.at("active_idempotency_records") == 1);
    const auto at = status(client, "op-a", 110);
    CHECK(at.at("idempotency_records")[0].at("active_at_query") == false);
    CHECK(at.at("active_idempotency_records") == 0);
  }

  SECTION("another operation is refused at 109 and applied at 110") {
    const auto refused = post(client, {"op-b", "key-1", 109, 10});
    REQUIRE(refused);
    CHECK(refused->status == 409);

    const auto applied = post_ok(client, {"op-b", "key-1", 110, 10});
    CHECK(applied.at("delivery") == "applied");
    CHECK(applied.at("idempotency_records")[0].at("expires_at") == 120);
    // The key's record moved to op-b; op-a keeps its effect.
    const auto a = status(client, "op-a", 110);
    CHECK(a.at("effect_count") == 1);
    CHECK(a.at("idempotency_records").empty());
  }

  SECTION("the same operation is deduplicated at 109 and applied again at 110: a conflict") {
    CHECK(post_ok(client, {"op-a", "key-1", 109, 10}).at("delivery") == "deduplicated");
    const auto again = post_ok(client, {"op-a", "key-1", 110, 10});
    CHECK(again.at("delivery") == "applied");
    const auto snapshot = status(client, "op-a", 110);
    CHECK(snapshot.at("status") == "conflict");
    CHECK(snapshot.at("effect_count") == 2);
    CHECK(snapshot.at("post_requests") == 3);
    CHECK(snapshot.at("effects")[1].at("created_at") == 110);
  }
}

TEST_CASE("the default TTL applies when X-Idempotency-TTL is absent") {
  Service service("full", 7);
  auto client = service.client();
  const auto reply = post_ok(client, {"op-1", "key-1", 10, std::nullopt});
  CHECK(reply.at("ttl_seconds") == 7);
  CHECK(reply.at("idempotency_records")[0].at("expires_at") == 17);
}

TEST_CASE("each malformed POST is refused with 400 and applies nothing") {
  Service service;
  auto client = service.client();
  const httplib::Headers good = {{"X-Operation-Id", "op-bad"},
                                 {"Idempotency-Key", "key-bad"},
                                 {"X-Logical-Time", "100"},
                                 {"X-Idempotency-TTL", "10"}};
  auto replace = [&](const std::string& name, std::optional<std::string> value) {
    auto headers = good;
    headers.erase(name);
    if (value) headers.emplace(name, *value);
    return headers;
  };
  struct Case {
    std::string what;
    httplib::Headers headers;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"missing operation id", replace("X-Operation-Id", std::nullopt), "missing_operation_id"},
      {"missing key", replace("Idempotency-Key", std::nullopt), "missing_idempotency_key"},
      {"logical time with junk", replace("X-Logical-Time", "100abc"), "invalid_or_missing_logical_time"},
      {"logical time overflowing int64", replace("X-Logical-Time", "9223372036854775808"),
       "invalid_or_missing_logical_time"},
      {"non-integer ttl", replace("X-Idempotency-TTL", "1.5"), "invalid_ttl"},
      {"zero ttl", replace("X-Idempotency-TTL", "0"), "invalid_ttl"},
      {"negative ttl", replace("X-Idempotency-TTL", "-3"), "invalid_ttl"},
      {"drop-ack other than 0 or 1", replace("X-Drop-Ack", "yes"), "invalid_drop_ack"},
      {"key over 256 bytes", replace("Idempotency-Key", std::string(257, 'k')), "invalid_header_value"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    const auto result = client.Post("/effects", c.headers, "", "text/plain");
    REQUIRE(result);
    CHECK(result->status == 400);
    CHECK(body_of(result).at("error") == c.error);
  }

  // A control character cannot be sent through a client library; send it raw.
  const auto raw =
      raw_exchange(service.process.port(), raw_post("X-Operation-Id: op\x01-bad\r\nIdempotency-Key: key-bad\r\n"
                                                    "X-Logical-Time: 100\r\n"));
  CHECK_THAT(raw, ContainsSubstring("HTTP/1.1 400"));
  CHECK_THAT(raw, ContainsSubstring(R"({"detail":)"));
  CHECK_THAT(raw, ContainsSubstring(R"("error":"invalid_header_value","header":"X-Operation-Id"})"));

  // Garbage that is not HTTP at all gets a JSON 400 and does not hurt the process.
  // cpp-httplib keeps that connection open for a next request; stop reading after 1 s.
  const auto garbage =
      raw_exchange(service.process.port(), "\x16\x03\x01 NOT HTTP\r\n\r\n", std::chrono::milliseconds(1000));
  CHECK_THAT(garbage, ContainsSubstring("HTTP/1.1 400"));
  CHECK_THAT(garbage, ContainsSubstring(R"({"error":"bad_request"})"));

  const auto snapshot = status(client, "op-bad", 100);
  CHECK(snapshot.at("effect_count") == 0);
  CHECK(snapshot.at("post_requests") == 0);
  CHECK(snapshot.at("idempotency_records").empty());
  CHECK(service.process.running());
}

TEST_CASE("a status query with an invalid logical time or no operation id is refused with 400") {
  Service service;
  auto client = service.client();
  for (const auto* bad : {"", "12x", "1.0", "99999999999999999999"}) {
    INFO(bad);
    const auto result = client.Get("/status/op-1", {{"X-Logical-Time", bad}});
    REQUIRE(result);
    CHECK(result->status == 400);
    CHECK(body_of(result).at("error") == "invalid_or_missing_logical_time");
  }
  const auto empty = client.Get("/status/", {{"X-Logical-Time", "1"}});
  REQUIRE(empty);
  CHECK(empty->status == 400);
  CHECK(body_of(empty).at("error") == "missing_operation_id");
}

TEST_CASE("requests without X-Logical-Time are clock-less: the key never expires, and a GC still needs a time") {
  Service service;
  auto client = service.client();
  const httplib::Headers post = {{"X-Operation-Id", "op-c"}, {"Idempotency-Key", "key-c"}, {"X-Idempotency-TTL", "5"}};
  auto first = client.Post("/effects", post, "{}", "application/json");
  REQUIRE(first);
  CHECK(first->status == 200);
  CHECK(body_of(first).at("delivery") == "applied");
  CHECK(body_of(first).at("ttl_seconds").is_null());
  CHECK(body_of(first).at("evaluation_time").is_null());
  CHECK(body_of(first).at("idempotency_records").at(0).at("expires_at").is_null());

  auto again = client.Post("/effects", post, "{}", "application/json");
  REQUIRE(again);
  CHECK(body_of(again).at("delivery") == "deduplicated");
  // A time a billion seconds later still finds the key active; a GC then removes nothing.
  auto later = post;
  later.emplace("X-Logical-Time", "1000000000");
  auto timed = client.Post("/effects", later, "{}", "application/json");
  REQUIRE(timed);
  CHECK(body_of(timed).at("delivery") == "deduplicated");
  auto gc = client.Post("/maintenance/gc/op-c", {{"X-Logical-Time", "1000000000"}}, "", "text/plain");
  REQUIRE(gc);
  CHECK(body_of(gc).at("removed_records") == 0);
  auto untimed_gc = client.Post("/maintenance/gc/op-c", httplib::Headers{}, "", "text/plain");
  REQUIRE(untimed_gc);
  CHECK(untimed_gc->status == 400);
  CHECK(body_of(untimed_gc).at("error") == "invalid_or_missing_logical_time");

  auto status = client.Get("/status/op-c");
  REQUIRE(status);
  CHECK(status->status == 200);
  CHECK(body_of(status).at("evaluation_time").is_null());
  CHECK(body_of(status).at("active_idempotency_records") == 1);
  CHECK(body_of(status).at("effect_count") == 1);
  CHECK(body_of(status).at("post_requests") == 3);
}

TEST_CASE("an unknown path or method gets 404 with a JSON body") {
  Service service;
  auto client = service.client();
  const json not_found = {{"error", "not_found"}};

  auto result = client.Get("/nope");
  REQUIRE(result);
  CHECK(result->status == 404);
  CHECK(body_of(result) == not_found);

  result = client.Put("/effects", "", "text/plain");
  REQUIRE(result);
  CHECK(result->status == 404);
  CHECK(body_of(result) == not_found);

  result = client.Post("/status/op-1", "", "text/plain");
  REQUIRE(result);
  CHECK(result->status == 404);
  CHECK(body_of(result) == not_found);

  result = client.Delete("/health");
  REQUIRE(result);
  CHECK(result->status == 404);
  CHECK(body_of(result) == not_found);

  result = client.Get("/effects");
  REQUIRE(result);
  CHECK(result->status == 404);
}

TEST_CASE("a POST without Content-Length has an empty body and is answered at once") {
  Service service;
  const auto start = std::chrono::steady_clock::now();
  const auto raw = raw_exchange(service.process.port(),
                                "POST /effects HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                                "X-Operation-Id: op-1\r\nIdempotency-Key: key-1\r\nX-Logical-Time: 5\r\n\r\n");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK_THAT(raw, ContainsSubstring("HTTP/1.1 200"));
  CHECK_THAT(raw, ContainsSubstring(R"("delivery":"applied")"));
  CHECK(elapsed < std::chrono::seconds(2));
}

TEST_CASE("a body over 64 KiB is refused with 413 and applies nothing") {
  Service service;
  auto client = service.client();

  const auto result = post(client, {"op-big", "key-big", 1, 10, false, std::string(65537, 'x')});
  REQUIRE(result);
  CHECK(result->status == 413);
  CHECK(body_of(result) == json{{"error", "payload_too_large"}, {"limit_bytes", 65536}});
  CHECK(status(client, "op-big", 1).at("effect_count") == 0);

  // Exactly 64 KiB is accepted, on the same keep-alive client.
  const auto reply = post_ok(client, {"op-big", "key-big", 1, 10, false, std::string(65536, 'x')});
  CHECK(reply.at("delivery") == "applied");
  CHECK(status(client, "op-big", 1).at("effect_count") == 1);
}

TEST_CASE("a dropped acknowledgement sends no response byte yet commits the effect") {
  Service service;
  auto client = service.client();

  SECTION("seen on the wire: the connection closes with zero bytes") {
    const auto raw =
        raw_exchange(service.process.port(),
                     raw_post("X-Operation-Id: op-drop\r\nIdempotency-Key: key-drop\r\nX-Logical-Time: 100\r\n"
                              "X-Idempotency-TTL: 10\r\nX-Drop-Ack: 1\r\n",
                              "payload"));
    CHECK(raw.empty());
  }

  SECTION("seen by an HTTP client: no response, a read error") {
    const auto result = post(client, {"op-drop", "key-drop", 100, 10, true, "payload"});
    CHECK_FALSE(result);
    CHECK(result.error() == httplib::Error::Read);
  }

  const auto snapshot = status(client, "op-drop", 100);
  CHECK(snapshot.at("status") == "committed");
  CHECK(snapshot.at("effect_count") == 1);
  CHECK(snapshot.at("ack_drops") == 1);
  CHECK(snapshot.at("post_requests") == 1);
  CHECK(snapshot.at("idempotency_records")[0].at("expires_at") == 110);

  // The retry that recovery would send is deduplicated, and acknowledged.
  const auto retry = post_ok(client, {"op-drop", "key-drop", 101, 10, false, "payload"});
  CHECK(retry.at("delivery") == "deduplicated");
  CHECK(retry.at("post_requests") == 2);
  CHECK(retry.at("ack_drops") == 1);
}

TEST_CASE("a keep-alive client does not silently re-send a POST whose acknowledgement was dropped") {
  Service service;
  auto client = service.client();
  // Open the keep-alive connection first, so the POST travels on a reused one.
  const auto health = client.Get("/health");
  REQUIRE(health);
  REQUIRE(health->status == 200);
  REQUIRE(client.is_socket_open());

  const auto result = post(client, {"op-ka", "key-ka", 100, 10, true});
  CHECK_FALSE(result);
  CHECK(result.error() == httplib::Error::Read);

  const auto snapshot = status(client, "op-ka", 100);
  CHECK(snapshot.at("post_requests") == 1);
  CHECK(snapshot.at("ack_drops") == 1);
  CHECK(snapshot.at("effect_count") == 1);
}

TEST_CASE("a keep-alive connection serves far more than cpp-httplib's default five requests") {
  Service service;
  auto client = service.client();
  for (int i = 0; i < 50; ++i) {
    INFO("request " << i);
    post_ok(client, {"op-" + std::to_string(i), "key-" + std::to_string(i), i, 10});
    REQUIRE(client.is_socket_open());
  }
  CHECK(status(client, "op-49", 49).at("effect_count") == 1);
}

TEST_CASE("a committed effect survives kill -9 and a restart on the same file, with a new boot_id") {
  Service service;
  const auto first_boot = service.process.boot_id();
  const auto first_port = service.process.port();
  std::int64_t effect_id = 0;
  {
    auto client = service.client();
    const auto reply = post_ok(client, {"op-crash", "key-crash", 100, 50, false, "payload"});
    REQUIRE(reply.at("delivery") == "applied");
    effect_id = reply.at("effects")[0].at("effect_id").get<std::int64_t>();
  }

  service.process.kill_hard();
  CHECK_FALSE(service.process.running());
  service.process.restart();
  CHECK(service.process.port() == first_port);
  CHECK(service.process.boot_id() != first_boot);

  auto client = service.client();
  const auto snapshot = status(client, "op-crash", 120);
  CHECK(snapshot.at("boot_id") == service.process.boot_id());
  CHECK(snapshot.at("status") == "committed");
  CHECK(snapshot.at("effect_count") == 1);
  CHECK(snapshot.at("effects")[0].at("effect_id") == effect_id);
  CHECK(snapshot.at("effects")[0].at("created_at") == 100);
  REQUIRE(snapshot.at("idempotency_records").size() == 1);
  CHECK(snapshot.at("idempotency_records")[0].at("expires_at") == 150);
  CHECK(snapshot.at("idempotency_records")[0].at("active_at_query") == true);
  CHECK(snapshot.at("post_requests") == 1);

  // The surviving record still guards the key, body fingerprint included.
  CHECK(post_ok(client, {"op-crash", "key-crash", 120, 50, false, "payload"}).at("delivery") == "deduplicated");
  const auto changed = post(client, {"op-crash", "key-crash", 120, 50, false, "other"});
  REQUIRE(changed);
  CHECK(changed->status == 422);
}

TEST_CASE("sixteen clients posting one key at the same moment: exactly one is applied") {
  constexpr int kClients = 16;
  const bool same_operation = GENERATE(true, false);
  INFO((same_operation ? "one operation" : "sixteen operations"));
  Service service;

  std::barrier start(kClients);
  std::vector<int> statuses(kClients, 0);
  std::vector<std::string> deliveries(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      auto client = service.client();
      const auto warm = client.Get("/health");  // connected before the race starts
      start.arrive_and_wait();
      const auto result = post(client, {same_operation ? "op-race" : "op-race-" + std::to_string(i), "key-race", 100,
                                        10, false, "same-body"});
      if (!warm || !result) return;
      statuses[static_cast<size_t>(i)] = result->status;
      const auto reply = json::parse(result->body, nullptr, false);  // no throwing off-thread
      if (result->status == 200 && reply.is_object() && reply.contains("delivery")) {
        deliveries[static_cast<size_t>(i)] = reply["delivery"].get<std::string>();
      }
    });
  }
  for (auto& thread : threads) thread.join();

  int applied = 0;
  int deduplicated = 0;
  int refused = 0;
  for (int i = 0; i < kClients; ++i) {
    if (statuses[static_cast<size_t>(i)] == 409) ++refused;
    if (deliveries[static_cast<size_t>(i)] == "applied") ++applied;
    if (deliveries[static_cast<size_t>(i)] == "deduplicated") ++deduplicated;
  }
  CHECK(applied == 1);
  auto client = service.client();
  if (same_operation) {
    CHECK(deduplicated == kClients - 1);
    const auto snapshot = status(client, "op-race", 100);
    CHECK(snapshot.at("effect_count") == 1);
    CHECK(snapshot.at("post_requests") == kClients);
  } else {
    CHECK(refused == kClients - 1);
    int effects = 0;
    for (int i = 0; i < kClients; ++i) {
      effects += status(client, "op-race-" + std::to_string(i), 100).at("effect_count").get<int>();
    }
    CHECK(effects == 1);
  }
}

TEST_CASE("health reports the sync mode, the versions and a fresh boot_id") {
  Service service("normal", 45);
  auto client = service.client();
  const auto result = client.Get("/health");
  REQUIRE(result);
  REQUIRE(result->status == 200);
  const auto health = body_of(result);

  CHECK(health.at("status") == "ok");
  CHECK(health.at("service") == "remote-effect");
  CHECK(health.at("sync") == "normal");
  CHECK(health.at("default_ttl_seconds") == 45);
  CHECK(health.at("pid") == service.process.pid());
  CHECK(health.at("state_db") == (service.dir.path() / "remote.db").string());
  CHECK(health.at("version") == skewbench::build_info::kVersion);
  CHECK(health.at("git_commit") == skewbench::build_info::kGitCommit);
  CHECK(health.at("sqlite_version") == sqlite3_libversion());
  CHECK(health.at("post_commits") == 0);
  CHECK(health.at("largest_post_group") == 0);
  CHECK_FALSE(health.at("hostname").get<std::string>().empty());
  const auto boot_id = health.at("boot_id").get<std::string>();
  CHECK(boot_id == service.process.boot_id());
  CHECK(boot_id.size() == 32);
  CHECK(boot_id.find_first_not_of("0123456789abcdef") == std::string::npos);

  const auto& ready = service.process.ready_line();
  CHECK(ready.at("service") == "remote-effect");
  CHECK(ready.at("port") == service.process.port());
  CHECK(ready.at("sync") == "normal");
  CHECK(ready.at("host") == "127.0.0.1");

  service.process.restart();
  auto again = service.client();
  const auto after = body_of(again.Get("/health"));
  CHECK(after.at("boot_id") != boot_id);
  CHECK(after.at("boot_id") == service.process.boot_id());
}

TEST_CASE("the service reads STATE_DB and DEFAULT_TTL_SECONDS when the flags are absent") {
  skewbench::TempDir dir("re-it");
  const auto state_db = dir.path() / "from-env.db";
  skewbench::Subprocess::Options options;
  options.env = {{"STATE_DB", state_db.string()}, {"DEFAULT_TTL_SECONDS", "9"}};
  skewbench::Subprocess process({SKEWBENCH_REMOTE_EFFECT_BIN, "--port", "0"}, options);
  const auto line = process.read_line(std::chrono::seconds(10));
  REQUIRE(line);
  const auto ready = json::parse(*line);
  CHECK(ready.at("state_db") == state_db.string());

  httplib::Client client("127.0.0.1", ready.at("port").get<int>());
  const auto health = body_of(client.Get("/health"));
  CHECK(health.at("default_ttl_seconds") == 9);
  CHECK(health.at("sync") == "full");
  CHECK(process.stop() == 0);
}

TEST_CASE("SIGTERM shuts the service down promptly with exit code 0, even with idle connections") {
  Service service;
  auto client = service.client();
  post_ok(client, {"op-1", "key-1", 1, 10});
  REQUIRE(client.is_socket_open());  // an idle keep-alive connection stays open

  const auto start = std::chrono::steady_clock::now();
  CHECK(service.process.stop() == 0);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
  CHECK_THAT(skewbench::read_file(service.dir.path() / "remote-effect.log"), ContainsSubstring("SIGTERM received"));
}

TEST_CASE("a bad command-line flag exits with code 2 and says which") {
  skewbench::TempDir dir("re-it");
  const std::string db = (dir.path() / "x.db").string();
  const std::string bin = SKEWBENCH_REMOTE_EFFECT_BIN;
  struct Case {
    std::vector<std::string> argv;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{bin, "--port", "0", "--state-db", db, "--sync", "fast"}, "--sync"},
      {{bin, "--port", "0", "--state-db", db, "--bogus"}, "--bogus"},
      {{bin, "--port", "70000", "--state-db", db}, "--port"},
      {{bin, "--port", "0", "--state-db", db, "--default-ttl-seconds", "0"}, "--default-ttl-seconds"},
      {{bin, "--port", "0", "--state-db", db, "--default-ttl-seconds", "ten"}, "--default-ttl-seconds"},
      {{bin, "--port", "0"}, "--state-db"},
  };
  for (const auto& c : cases) {
    INFO(c.says);
    const auto result = skewbench::run_command(c.argv);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, ContainsSubstring(c.says));
  }
  CHECK_FALSE(std::filesystem::exists(db));

  const auto version = skewbench::run_command({bin, "--version"});
  CHECK(version.exit_code == 0);
  CHECK_THAT(version.output, ContainsSubstring(skewbench::build_info::kVersion));
}

TEST_CASE("an unusable state database or port exits with code 3 and names it") {
  skewbench::TempDir dir("re-it");
  const std::string bin = SKEWBENCH_REMOTE_EFFECT_BIN;

  const auto directory = dir.path() / "a-directory.db";
  std::filesystem::create_directories(directory);
  auto result = skewbench::run_command({bin, "--port", "0", "--state-db", directory.string()});
  CHECK(result.exit_code == 3);
  CHECK_THAT(result.output, ContainsSubstring(directory.string()));

  // A port held by another listener is reported, not shared.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(holder >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  REQUIRE(::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  REQUIRE(::listen(holder, 1) == 0);
  REQUIRE(::getsockname(holder, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  const auto port = std::to_string(ntohs(address.sin_port));
  result = skewbench::run_command({bin, "--port", port, "--state-db", (dir.path() / "ok.db").string()});
  ::close(holder);
  CHECK(result.exit_code == 3);
  CHECK_THAT(result.output, ContainsSubstring("cannot bind 127.0.0.1:" + port));
}

TEST_CASE("the launcher reports the service's own words when it cannot start") {
  skewbench::TempDir dir("re-it");
  std::filesystem::create_directories(dir.path() / "a-directory.db");
  re::LaunchOptions launch;
  launch.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
  launch.state_db = dir.path() / "a-directory.db";
  launch.stderr_path = (dir.path() / "log").string();
  try {
    re::RemoteEffectProcess process(launch);
    FAIL("the service started on a directory");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), ContainsSubstring("exited with code 3"));
    CHECK_THAT(e.what(), ContainsSubstring("a-directory.db"));
  }
}
