// The protocol of the #016 and #019 benchmarks on the real binary: dedupe
// memory that survives (durable) or not (volatile) a kill -9, the temporal
// epoch, expiry GC and the epoch fence.

#include <barrier>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <nlohmann/json.hpp>

#include "common/subprocess.hpp"
#include "support/remote_effect_fixture.hpp"

using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
using namespace remote_effect_fixture;

namespace {

constexpr std::int64_t kT0 = 8'000'000;

httplib::Result gc(httplib::Client& client, const std::string& operation_id, std::int64_t now_s) {
  return client.Post("/maintenance/gc/" + operation_id, {{"X-Logical-Time", std::to_string(now_s)}}, "",
                     "application/octet-stream");
}

json gc_ok(httplib::Client& client, const std::string& operation_id, std::int64_t now_s) {
  const auto result = gc(client, operation_id, now_s);
  REQUIRE(result);
  INFO(result->body);
  REQUIRE(result->status == 200);
  return body_of(result);
}

httplib::Result fenced_post(httplib::Client& client, const Post& p, std::int64_t expected_epoch) {
  return client.Post("/effects",
                     {{"X-Operation-Id", p.operation_id},
                      {"Idempotency-Key", p.key},
                      {"X-Logical-Time", std::to_string(p.now_s)},
                      {"X-Idempotency-TTL", std::to_string(p.ttl_s.value_or(60))},
                      {"X-Require-Temporal-Fence", "1"},
                      {"X-Expected-Temporal-Epoch", std::to_string(expected_epoch)}},
                     p.body, "application/octet-stream");
}

json health(httplib::Client& client) {
  const auto result = client.Get("/health");
  REQUIRE(result);
  REQUIRE(result->status == 200);
  return body_of(result);
}

}  // namespace

TEST_CASE("a volatile remote killed with SIGKILL loses its dedupe memory but not its effects") {
  Service service("full", 60, re::DedupeMode::volatile_);
  const auto first_boot = service.process.boot_id();
  {
    auto client = service.client();
    CHECK(health(client).at("idempotency_mode") == "volatile");
    CHECK_FALSE(post(client, {"op-vol", "op-vol:effect:v1", kT0, 60, true}));  // ack dropped
    const auto before = status(client, "op-vol", kT0);
    CHECK(before.at("effect_count") == 1);
    CHECK(before.at("active_idempotency_records") == 1);
    CHECK(before.at("durable_idempotency_records") == 0);
  }
  service.process.kill_hard();
  service.process.restart();
  CHECK(service.process.boot_id() != first_boot);

  auto client = service.client();
  const auto after = status(client, "op-vol", kT0 + 1);
  CHECK(after.at("effect_count") == 1);  // the ledger survived
  CHECK(after.at("idempotency_records").empty());
  const auto retry = post_ok(client, {"op-vol", "op-vol:effect:v1", kT0 + 1, 60});
  CHECK(retry.at("delivery") == "applied");  // the memory of the key did not
  CHECK(retry.at("effect_count") == 2);
  CHECK(retry.at("status") == "conflict");
  CHECK(retry.at("idempotency_mode") == "volatile");
  CHECK(retry.at("durable_idempotency_records") == 0);
  CHECK(retry.at("ack_drops") == 1);
  CHECK(retry.at("post_requests") == 2);
}

TEST_CASE("a durable remote killed with SIGKILL keeps both its effects and its dedupe memory") {
  Service service;
  {
    auto client = service.client();
    CHECK(health(client).at("idempotency_mode") == "durable");
    CHECK_FALSE(post(client, {"op-dur", "op-dur:effect:v1", kT0, 60, true}));
  }
  service.process.kill_hard();
  service.process.restart();

  auto client = service.client();
  const auto retry = post_ok(client, {"op-dur", "op-dur:effect:v1", kT0 + 1, 60});
  CHECK(retry.at("delivery") == "deduplicated");
  CHECK(retry.at("effect_count") == 1);
  CHECK(retry.at("status") == "committed");
  CHECK(retry.at("durable_idempotency_records") == 1);
  CHECK(health(client).at("durable_idempotency_records") == 1);
}

TEST_CASE("IDEMPOTENCY_MODE selects the dedupe mode when --dedupe is absent") {
  skewbench::TempDir dir("re-series");
  skewbench::Subprocess::Options options;
  options.env = {{"STATE_DB", (dir.path() / "env.db").string()}, {"IDEMPOTENCY_MODE", "volatile"}};
  skewbench::Subprocess process({SKEWBENCH_REMOTE_EFFECT_BIN, "--port", "0"}, options);
  const auto line = process.read_line(std::chrono::seconds(10));
  REQUIRE(line);
  const auto ready = json::parse(*line);
  CHECK(ready.at("idempotency_mode") == "volatile");
  httplib::Client client("127.0.0.1", ready.at("port").get<int>());
  CHECK(health(client).at("idempotency_mode") == "volatile");
  CHECK(process.stop() == 0);
}

TEST_CASE("GC at exactly expires_at removes the record and advances the epoch; the epoch and fence survive a restart") {
  Service service;
  {
    auto client = service.client();
    CHECK(health(client).at("temporal_epoch") == 1);
    post_ok(client, {"op-gc", "op-gc:effect:v1", kT0, 60});

    const auto early = gc_ok(client, "op-gc", kT0 + 59);
    CHECK(early == json{{"operation_id", "op-gc"},
                        {"logical_time", kT0 + 59},
                        {"removed_records", 0},
                        {"temporal_epoch_before", 1},
                        {"temporal_epoch_after", 1}});
    const auto at_expiry = gc_ok(client, "op-gc", kT0 + 60);
    CHECK(at_expiry.at("removed_records") == 1);
    CHECK(at_expiry.at("temporal_epoch_before") == 1);
    CHECK(at_expiry.at("temporal_epoch_after") == 2);
    CHECK(gc_ok(client, "op-gc", kT0 + 70).at("temporal_epoch_after") == 2);  // nothing left to remove
  }
  service.process.restart();

  auto client = service.client();
  CHECK(health(client).at("temporal_epoch") == 2);
  const auto stale = fenced_post(client, {"op-gc", "op-gc:effect:v1", kT0 + 50, 60}, 1);
  REQUIRE(stale);
  CHECK(stale->status == 409);
  CHECK(body_of(stale) == json{{"error", "temporal_epoch_mismatch"},
                               {"delivery", "fenced_out"},
                               {"expected_temporal_epoch", 1},
                               {"current_temporal_epoch", 2}});
  const auto after_fence = status(client, "op-gc", kT0 + 50);
  CHECK(after_fence.at("effect_count") == 1);
  CHECK(after_fence.at("post_requests") == 1);  // the fenced POST is not logged as a delivery
  CHECK(after_fence.at("temporal_epoch") == 2);

  const auto current = fenced_post(client, {"op-gc", "op-gc:effect:v1", kT0 + 50, 60}, 2);
  REQUIRE(current);
  CHECK(current->status == 200);
  CHECK(body_of(current).at("delivery") == "applied");
}

TEST_CASE("bad fence and GC requests are refused with 400 and a named error") {
  Service service;
  auto client = service.client();
  auto result = client.Post("/effects",
                            {{"X-Operation-Id", "op-f"},
                             {"Idempotency-Key", "k"},
                             {"X-Logical-Time", "5"},
                             {"X-Require-Temporal-Fence", "1"}},
                            "", "application/octet-stream");
  REQUIRE(result);
  CHECK(result->status == 400);
  CHECK(body_of(result).at("error") == "missing_expected_temporal_epoch");
  result = fenced_post(client, {"op-f", "k", 5}, 1);
  REQUIRE(result);
  CHECK(result->status == 200);

  result = client.Post("/effects",
                       {{"X-Operation-Id", "op-f"},
                        {"Idempotency-Key", "k"},
                        {"X-Logical-Time", "5"},
                        {"X-Require-Temporal-Fence", "1"},
                        {"X-Expected-Temporal-Epoch", "one"}},
                       "", "application/octet-stream");
  REQUIRE(result);
  CHECK(result->status == 400);
  CHECK(body_of(result).at("error") == "invalid_expected_temporal_epoch");

  result = client.Post("/maintenance/gc/op-f", "", "application/octet-stream");
  REQUIRE(result);
  CHECK(result->status == 400);
  CHECK(body_of(result).at("error") == "invalid_or_missing_logical_time");
  CHECK(status(client, "op-f", 5).at("post_requests") == 1);
}

TEST_CASE("sixteen fenced POSTs racing a GC on an expired key apply at most once") {
  constexpr int kClients = 16;
  Service service;
  {
    auto client = service.client();
    post_ok(client, {"op-race", "op-race:effect:v1", kT0, 60});
  }
  // At T0+70 the key has expired: each POST would apply it again unless
  // deduplicated by the one that did, or fenced out by the GC's new epoch.
  std::barrier start(kClients + 1);
  std::vector<int> statuses(kClients, 0);
  std::vector<std::string> deliveries(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      auto client = service.client();
      const auto warm = client.Get("/health");
      start.arrive_and_wait();
      const auto result = fenced_post(client, {"op-race", "op-race:effect:v1", kT0 + 70, 60}, 1);
      if (!warm || !result) return;
      statuses[static_cast<std::size_t>(i)] = result->status;
      const auto reply = json::parse(result->body, nullptr, false);
      if (reply.is_object() && reply.contains("delivery")) {
        deliveries[static_cast<std::size_t>(i)] = reply["delivery"].get<std::string>();
      }
    });
  }
  json gc_reply;
  {
    auto client = service.client();
    const auto warm = client.Get("/health");
    start.arrive_and_wait();
    const auto result = gc(client, "op-race", kT0 + 70);
    if (warm && result && result->status == 200) gc_reply = json::parse(result->body);
  }
  for (auto& thread : threads) thread.join();
  REQUIRE(gc_reply.is_object());

  int applied = 0, deduplicated = 0, fenced = 0;
  for (int i = 0; i < kClients; ++i) {
    const auto& delivery = deliveries[static_cast<std::size_t>(i)];
    if (delivery == "applied") ++applied;
    if (delivery == "deduplicated") ++deduplicated;
    if (delivery == "fenced_out" && statuses[static_cast<std::size_t>(i)] == 409) ++fenced;
  }
  INFO("applied " << applied << ", deduplicated " << deduplicated << ", fenced " << fenced << ", gc "
                  << gc_reply.dump());
  CHECK(applied + deduplicated + fenced == kClients);
  CHECK(applied <= 1);
  // Either a POST won (the GC then found the rewritten record active and left
  // the epoch), or the GC won and fenced out every POST.
  if (gc_reply.at("removed_records") == 1) {
    CHECK(fenced == kClients);
  } else {
    CHECK(applied == 1);
    CHECK(deduplicated == kClients - 1);
  }
  auto client = service.client();
  CHECK(status(client, "op-race", kT0 + 70).at("effect_count") == 1 + applied);
}
