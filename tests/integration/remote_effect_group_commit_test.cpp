// Group commit on the real binary: concurrent POSTs share transactions, and
// still every 200 answer's effect is in the file after kill -9, and a POST
// that fails leaves the others of its group applied.

#include <barrier>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <sqlite3.h>
#include <catch2/catch_test_macros.hpp>
#include <nlohmann/json.hpp>

#include "support/remote_effect_fixture.hpp"

using nlohmann::json;
using namespace remote_effect_fixture;

namespace {

// What one POST was answered: the status, and the effect of a 200.
struct Answer {
  std::string operation_id;
  std::string key;
  int status = 0;  // 0: no answer
  std::string delivery;
  std::int64_t effect_id = 0;
  bool dropped = false;  // the connection closed without a response byte (X-Drop-Ack: 1)
};

using SendPost = std::function<httplib::Result(httplib::Client&, const Post&)>;
struct PlannedPost {
  Post post;
  SendPost send;
};

// Each of `clients` threads opens its connection, waits for the others, then
// sends its POSTs one after the other; make_post(client, i) says what POST i
// of that client is and how it is sent.
std::vector<Answer> post_concurrently(const Service& service, int clients, int posts_per_client,
                                      const std::function<PlannedPost(int client, int i)>& make_post) {
  std::barrier start(clients);
  std::vector<std::vector<Answer>> answers(static_cast<std::size_t>(clients));
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto client = service.client();
      const auto warm = client.Get("/health");  // connected before the race starts
      start.arrive_and_wait();
      for (int i = 0; i < posts_per_client; ++i) {
        const auto planned = make_post(c, i);
        Answer answer{.operation_id = planned.post.operation_id,
                      .key = planned.post.key,
                      .status = 0,
                      .delivery = "",
                      .effect_id = 0,
                      .dropped = false};
        const auto result = planned.send(client, planned.post);
        if (warm && result) {
          answer.status = result->status;
          // No throwing off the test's thread: a body that is not the expected JSON leaves the fields empty.
          const auto reply = json::parse(result->body, nullptr, false);
          if (result->status == 200 && reply.is_object() && reply.contains("delivery") && reply.contains("effects")) {
            answer.delivery = reply["delivery"].get<std::string>();
            for (const auto& effect : reply["effects"]) {
              if (effect.value("idempotency_key", "") == answer.key) answer.effect_id = effect.value("effect_id", 0);
            }
          }
        }
        answer.dropped = warm && !result && result.error() == httplib::Error::Read;
        answers[static_cast<std::size_t>(c)].push_back(answer);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<Answer> all;
  for (const auto& per_client : answers) all.insert(all.end(), per_client.begin(), per_client.end());
  return all;
}

const SendPost kPlainPost = [](httplib::Client& client, const Post& p) { return post(client, p); };

// The effects in the state file, read with SQLite itself (no service): by effect_id,
// "operation_id key".
std::map<std::int64_t, std::string> effects_in_file(const std::filesystem::path& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  std::map<std::int64_t, std::string> effects;
  sqlite3_stmt* select = nullptr;
  const int rc =
      sqlite3_prepare_v2(db, "SELECT effect_id, operation_id, idempotency_key FROM effects", -1, &select, nullptr);
  while (rc == SQLITE_OK && sqlite3_step(select) == SQLITE_ROW) {
    effects[sqlite3_column_int64(select, 0)] =
        std::string(reinterpret_cast<const char*>(sqlite3_column_text(select, 1))) + " " +
        reinterpret_cast<const char*>(sqlite3_column_text(select, 2));
  }
  sqlite3_finalize(select);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
  return effects;
}

json health(httplib::Client& client) {
  const auto result = client.Get("/health");
  REQUIRE(result);
  REQUIRE(result->status == 200);
  return body_of(result);
}

// Makes the INSERT of an effect fail for operation ids starting with "poison",
// through a second SQLite connection to the service's own file.
void install_poison(const std::filesystem::path& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(db,
                              "CREATE TRIGGER poison BEFORE INSERT ON effects WHEN NEW.operation_id LIKE 'poison%'"
                              " BEGIN SELECT RAISE(ABORT, 'poisoned effect'); END",
                              nullptr, nullptr, &message);
  INFO((message ? message : ""));
  sqlite3_free(message);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

}  // namespace

TEST_CASE(
    "every effect answered 200 or ack-dropped under concurrent clients is in the state file after kill -9 right "
    "after") {
  constexpr int kClients = 16;
  constexpr int kPostsPerClient = 8;
  Service service;  // --sync full
  const auto distinct_keys = [](const std::string& round, bool drop_ack) {
    return [round, drop_ack](int c, int i) {
      const auto id = round + "-" + std::to_string(c) + "-" + std::to_string(i);
      return PlannedPost{.post = Post("op-" + id, "key-" + id, 100, 60, drop_ack, "body-" + id), .send = kPlainPost};
    };
  };

  // The first round shows that these clients' POSTs share commits.
  auto answers = post_concurrently(service, kClients, kPostsPerClient, distinct_keys("first", false));
  {
    auto client = service.client();
    const auto counters = health(client);
    INFO(counters.dump());
    CHECK(counters.at("post_commits").get<int>() < kClients * kPostsPerClient);
    CHECK(counters.at("largest_post_group").get<int>() > 1);
  }
  // The second round is killed the moment its last answer arrives.
  const auto second = post_concurrently(service, kClients, kPostsPerClient, distinct_keys("second", false));
  service.process.kill_hard();
  answers.insert(answers.end(), second.begin(), second.end());

  const auto stored = effects_in_file(service.dir.path() / "remote.db");
  CHECK(stored.size() == answers.size());
  for (const auto& answer : answers) {
    INFO(answer.operation_id << " answered " << answer.status << " " << answer.delivery);
    REQUIRE(answer.status == 200);
    CHECK(answer.delivery == "applied");
    const auto it = stored.find(answer.effect_id);
    REQUIRE(it != stored.end());
    CHECK(it->second == answer.operation_id + " " + answer.key);
  }

  // Dropped acknowledgements: each connection closes only after the commit
  // holding its POST, so killing the process once all have closed loses none.
  service.process.restart();
  const auto dropped = post_concurrently(service, kClients, 1, distinct_keys("dropped", true));
  service.process.kill_hard();
  std::set<std::string> stored_keys;
  for (const auto& [effect_id, operation_and_key] : effects_in_file(service.dir.path() / "remote.db")) {
    stored_keys.insert(operation_and_key);
  }
  CHECK(stored_keys.size() == answers.size() + kClients);
  for (const auto& answer : dropped) {
    INFO(answer.operation_id << " answered " << answer.status);
    CHECK(answer.dropped);
    CHECK(stored_keys.count(answer.operation_id + " " + answer.key) == 1);
  }
}

TEST_CASE("a POST that fails among concurrent POSTs fails alone: the others of its group are applied") {
  constexpr int kClients = 16;
  constexpr int kRounds = 4;
  Service service;
  auto client = service.client();
  // A key held with another payload (422), and the temporal epoch moved to 2 (a fence on 1 is 409).
  post_ok(client, {"op-held", "key-held", 100, 600, false, "first"});
  post_ok(client, {"op-gc", "key-gc", 0, 10});
  const auto gc = client.Post("/maintenance/gc/op-gc", {{"X-Logical-Time", "100"}}, "", "application/octet-stream");
  REQUIRE(gc);
  REQUIRE(gc->status == 200);
  REQUIRE(json::parse(gc->body).at("temporal_epoch_after") == 2);
  install_poison(service.dir.path() / "remote.db");

  const SendPost fenced_on_epoch_1 = [](httplib::Client& c, const Post& p) {
    return c.Post("/effects",
                  {{"X-Operation-Id", p.operation_id},
                   {"Idempotency-Key", p.key},
                   {"X-Logical-Time", std::to_string(p.now_s)},
                   {"X-Require-Temporal-Fence", "1"},
                   {"X-Expected-Temporal-Epoch", "1"}},
                  p.body, "application/octet-stream");
  };
  // In each round, client 0 reuses the held key with another payload, client
  // 5 sends a stale fence, client 10 hits the failing statement, and the others post fresh keys.
  const auto answers = post_concurrently(service, kClients, kRounds, [&](int c, int round) {
    const auto id = std::to_string(c) + "-" + std::to_string(round);
    if (c == 0) return PlannedPost{.post = Post("op-held", "key-held", 101, 600, false, "other"), .send = kPlainPost};
    if (c == 5) return PlannedPost{.post = Post("op-fenced-" + id, "key-fenced-" + id, 101), .send = fenced_on_epoch_1};
    if (c == 10) return PlannedPost{.post = Post("poison-" + id, "key-poison-" + id, 101), .send = kPlainPost};
    return PlannedPost{.post = Post("op-" + id, "key-" + id, 101), .send = kPlainPost};
  });

  for (const auto& answer : answers) {
    INFO(answer.operation_id << " answered " << answer.status << " " << answer.delivery);
    if (answer.operation_id == "op-held") {
      CHECK(answer.status == 422);
    } else if (answer.operation_id.rfind("op-fenced-", 0) == 0) {
      CHECK(answer.status == 409);
      CHECK(status(client, answer.operation_id, 101).at("post_requests") == 0);
    } else if (answer.operation_id.rfind("poison-", 0) == 0) {
      CHECK(answer.status == 500);
      const auto snapshot = status(client, answer.operation_id, 101);
      CHECK(snapshot.at("effect_count") == 0);
      CHECK(snapshot.at("post_requests") == 0);
      CHECK(snapshot.at("active_idempotency_records") == 0);
    } else {
      CHECK(answer.status == 200);
      CHECK(answer.delivery == "applied");
      CHECK(status(client, answer.operation_id, 101).at("effect_count") == 1);
    }
  }
  CHECK(status(client, "op-held", 101).at("post_requests") == 1);
  const auto counters = health(client);
  INFO(counters.dump());
  CHECK(counters.at("largest_post_group").get<int>() > 1);
}
