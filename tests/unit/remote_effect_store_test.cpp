// The remote-effect SQLite store on a temporary file: no process, no socket.

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <sqlite3.h>
#include <catch2/catch_test_macros.hpp>

#include "common/digest.hpp"
#include "common/files.hpp"
#include "remote_effect/store.hpp"

namespace re = skewbench::remote_effect;

namespace {

re::PostRequest post(std::string operation_id, std::string key, std::int64_t now_s, std::int64_t ttl_s = 10,
                     std::string body = "", bool drop_ack = false) {
  re::PostRequest request;
  request.operation_id = std::move(operation_id);
  request.idempotency_key = std::move(key);
  request.logical_time_s = now_s;
  request.ttl_s = ttl_s;
  request.expires_at_s = now_s + ttl_s;
  request.drop_ack = drop_ack;
  request.body_sha256 = skewbench::sha256_hex(body);
  return request;
}

// Runs `sql` on the file through a connection of its own, as any SQLite client
// could; returns the first column of the first row (0 when none).
std::int64_t sql_on_file(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    FAIL("cannot open " << path);
  }
  std::int64_t value = 0;
  char* message = nullptr;
  const int rc = sqlite3_exec(
      db, sql.c_str(),
      [](void* out, int columns, char** values, char**) {
        if (columns > 0 && values[0]) *static_cast<std::int64_t*>(out) = std::stoll(values[0]);
        return 0;
      },
      &value, &message);
  INFO(sql << ": " << (message ? message : ""));
  sqlite3_free(message);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
  return value;
}

std::int64_t records_in_file(const std::filesystem::path& path) {
  return sql_on_file(path, "SELECT COUNT(*) FROM idempotency_records");
}

// A state file holding two key records (op-1/key-1 and op-2/key-2, created at
// 100 with a 60 s TTL), made by this build and then taken back to what an
// older build left: `downgrade` is the SQL that removes what it lacked.
void older_file_with_two_records(const std::filesystem::path& path, const std::string& downgrade) {
  {
    re::Store store(path, re::SyncMode::full);
    store.post(post("op-1", "key-1", 100, 60));
    store.post(post("op-2", "key-2", 100, 60));
  }
  sql_on_file(
      path, "DROP TRIGGER idempotency_records_counted_in; DROP TRIGGER idempotency_records_counted_out; " + downgrade);
}

// The number the triggers keep, read from the file itself.
std::int64_t records_kept(const std::filesystem::path& path) {
  return sql_on_file(path, "SELECT value FROM metadata WHERE name = 'idempotency_records'");
}

}  // namespace

TEST_CASE("the store applies a fresh key once and records effect, key and request") {
  skewbench::TempDir dir("re-store");
  re::Store store(dir.path() / "state.db", re::SyncMode::full);

  const auto result = store.post(post("op-1", "key-1", 100));
  CHECK(result.delivery == re::Delivery::applied);
  REQUIRE(result.state.effects.size() == 1);
  CHECK(result.state.effects[0].operation_id == "op-1");
  CHECK(result.state.effects[0].idempotency_key == "key-1");
  CHECK(result.state.effects[0].created_at_s == 100);
  REQUIRE(result.state.records.size() == 1);
  CHECK(result.state.records[0].created_at_s == 100);
  CHECK(result.state.records[0].expires_at_s == 110);
  CHECK(result.state.post_requests == 1);
  CHECK(result.state.ack_drops == 0);
}

TEST_CASE("the store writes nothing for a refused POST") {
  skewbench::TempDir dir("re-store");
  re::Store store(dir.path() / "state.db", re::SyncMode::full);
  store.post(post("op-1", "key-1", 100, 10, "a"));

  CHECK(store.post(post("op-2", "key-1", 109)).delivery == re::Delivery::refused_other_operation);
  CHECK(store.post(post("op-1", "key-1", 109, 10, "b")).delivery == re::Delivery::refused_different_payload);

  const auto op1 = store.read("op-1");
  CHECK(op1.effects.size() == 1);
  CHECK(op1.post_requests == 1);
  CHECK(op1.records.at(0).body_sha256 == skewbench::sha256_hex("a"));
  const auto op2 = store.read("op-2");
  CHECK(op2.effects.empty());
  CHECK(op2.records.empty());
  CHECK(op2.post_requests == 0);
}

TEST_CASE("the store moves an expired key to the operation that reuses it") {
  skewbench::TempDir dir("re-store");
  re::Store store(dir.path() / "state.db", re::SyncMode::normal);
  store.post(post("op-1", "key-1", 100, 10));

  const auto result = store.post(post("op-2", "key-1", 110, 5));
  CHECK(result.delivery == re::Delivery::applied);
  REQUIRE(result.state.records.size() == 1);
  CHECK(result.state.records[0].operation_id == "op-2");
  CHECK(result.state.records[0].created_at_s == 110);
  CHECK(result.state.records[0].expires_at_s == 115);
  CHECK(store.read("op-1").records.empty());
  CHECK(store.read("op-1").effects.size() == 1);
}

TEST_CASE("the store counts dropped acknowledgements per operation") {
  skewbench::TempDir dir("re-store");
  re::Store store(dir.path() / "state.db", re::SyncMode::full);
  store.post(post("op-1", "key-1", 100, 10, "", true));
  store.post(post("op-1", "key-1", 101, 10, "", true));
  store.post(post("op-1", "key-1", 102, 10, "", false));

  const auto state = store.read("op-1");
  CHECK(state.effects.size() == 1);
  CHECK(state.post_requests == 3);
  CHECK(state.ack_drops == 2);
}

TEST_CASE("the store keeps its state across a reopen of the same file") {
  skewbench::TempDir dir("re-store");
  const auto path = dir.path() / "nested" / "state.db";
  {
    re::Store store(path, re::SyncMode::full);
    store.post(post("op-1", "key-1", 100));
  }
  re::Store reopened(path, re::SyncMode::full);
  const auto state = reopened.read("op-1");
  CHECK(state.effects.size() == 1);
  CHECK(state.records.size() == 1);
  CHECK(state.post_requests == 1);
  CHECK(reopened.post(post("op-1", "key-1", 105)).delivery == re::Delivery::deduplicated);
}

TEST_CASE("the store in memory judges as the file does and writes no file") {
  skewbench::TempDir dir("re-store");
  for (const auto mode : {re::DedupeMode::durable, re::DedupeMode::volatile_}) {
    re::Store on_file(dir.path() / (std::string(re::dedupe_mode_name(mode)) + ".db"), re::SyncMode::normal, mode);
    re::Store in_memory(re::Store::InMemory{}, mode);
    for (auto* store : {&on_file, &in_memory}) {
      CHECK(store->post(post("op-1", "key-1", 100)).delivery == re::Delivery::applied);
      CHECK(store->post(post("op-1", "key-1", 105)).delivery == re::Delivery::deduplicated);
      CHECK(store->post(post("op-2", "key-1", 105)).delivery == re::Delivery::refused_other_operation);
      CHECK(store->post(post("op-1", "key-1", 110)).delivery == re::Delivery::applied);  // expired at 110
      CHECK(store->gc(re::GcRequest{.operation_id = "op-1", .logical_time_s = 200}).temporal_epoch_after == 2);
    }
    const auto a = on_file.read("op-1");
    const auto b = in_memory.read("op-1");
    CHECK(a.effects.size() == b.effects.size());
    CHECK(a.records.size() == b.records.size());
    CHECK(a.post_requests == b.post_requests);
    CHECK(a.temporal_epoch == b.temporal_epoch);
    CHECK(on_file.totals().durable_idempotency_records == in_memory.totals().durable_idempotency_records);
  }
  CHECK_FALSE(std::filesystem::exists(":memory:"));
}

TEST_CASE("a cleared store holds what a new file holds") {
  for (const auto mode : {re::DedupeMode::durable, re::DedupeMode::volatile_}) {
    re::Store store(re::Store::InMemory{}, mode);
    store.post(post("op-1", "key-1", 100));
    store.post(post("op-1", "key-1", 105, 10, "", true));
    store.gc(re::GcRequest{.operation_id = "op-1", .logical_time_s = 200});
    CHECK(store.totals().temporal_epoch == 2);
    store.post(post("op-1", "key-1", 300));
    store.clear();
    const auto state = store.read("op-1");
    CHECK(state.effects.empty());
    CHECK(state.records.empty());
    CHECK(state.post_requests == 0);
    CHECK(state.ack_drops == 0);
    CHECK(state.temporal_epoch == re::kFirstTemporalEpoch);
    CHECK(store.totals().durable_idempotency_records == 0);
    // The key is free again, and effect ids start again at 1.
    CHECK(store.post(post("op-2", "key-1", 300)).delivery == re::Delivery::applied);
    CHECK(store.read("op-2").effects.at(0).effect_id == 1);
  }
}

TEST_CASE("the store refuses a file that is not a SQLite database, naming it") {
  skewbench::TempDir dir("re-store");
  const auto path = dir.path() / "garbage.db";
  skewbench::write_file_atomically(path, std::string(4096, 'x'));
  try {
    re::Store store(path, re::SyncMode::full);
    FAIL("a garbage file was accepted");
  } catch (const re::StoreError& e) {
    CHECK(std::string(e.what()).find(path.string()) != std::string::npos);
  }
}

TEST_CASE("the store commits nothing when the response cannot be built before the commit") {
  skewbench::TempDir dir("re-store");
  for (const auto mode : {re::DedupeMode::durable, re::DedupeMode::volatile_}) {
    re::Store store(dir.path() / (std::string(re::dedupe_mode_name(mode)) + ".db"), re::SyncMode::full, mode);
    CHECK_THROWS(store.post(post("op-1", "key-1", 100), [](const re::PostResult&) { throw std::runtime_error("x"); }));
    const auto state = store.read("op-1");
    CHECK(state.effects.empty());
    CHECK(state.records.empty());
    CHECK(state.post_requests == 0);
    CHECK(store.post(post("op-1", "key-1", 101)).delivery == re::Delivery::applied);
  }
}

TEST_CASE("a fresh state file starts at temporal epoch 1 and keeps its epoch across a reopen") {
  skewbench::TempDir dir("re-store");
  const auto path = dir.path() / "state.db";
  {
    re::Store store(path, re::SyncMode::full);
    CHECK(store.totals().temporal_epoch == 1);
    store.post(post("op-1", "key-1", 100, 60));
    CHECK(store.gc(re::GcRequest{.operation_id = "op-1", .logical_time_s = 160}).temporal_epoch_after == 2);
  }
  re::Store reopened(path, re::SyncMode::full, re::DedupeMode::volatile_);
  CHECK(reopened.totals().temporal_epoch == 2);
  CHECK(reopened.read("op-9").temporal_epoch == 2);
}

TEST_CASE("GC removes a record at exactly expires_at and advances the epoch only when it removed one") {
  skewbench::TempDir dir("re-store");
  for (const auto mode : {re::DedupeMode::durable, re::DedupeMode::volatile_}) {
    re::Store store(dir.path() / (std::string(re::dedupe_mode_name(mode)) + ".db"), re::SyncMode::full, mode);
    store.post(post("op-1", "key-1", 100, 60));
    store.post(post("op-2", "key-2", 100, 60));

    auto result = store.gc(re::GcRequest{.operation_id = "op-1", .logical_time_s = 159});
    CHECK(result.removed_records == 0);
    CHECK(result.temporal_epoch_before == 1);
    CHECK(result.temporal_epoch_after == 1);

    result = store.gc(re::GcRequest{.operation_id = "op-1", .logical_time_s = 160});
    CHECK(result.removed_records == 1);
    CHECK(result.temporal_epoch_before == 1);
    CHECK(result.temporal_epoch_after == 2);
    CHECK(store.read("op-1").records.empty());
    CHECK(store.read("op-1").effects.size() == 1);  // the ledger is untouched
    CHECK(store.read("op-2").records.size() == 1);  // another operation's record stays

    CHECK(store.gc(re::GcRequest{.operation_id = "op-1", .logical_time_s = 500}).temporal_epoch_after ==
          2);  // nothing left: no advance
    CHECK(store.totals().temporal_epoch == 2);
  }
}

TEST_CASE("a fenced POST with a stale epoch writes and logs nothing; the current epoch passes") {
  skewbench::TempDir dir("re-store");
  re::Store store(dir.path() / "state.db", re::SyncMode::full);
  store.post(post("op-1", "key-1", 100, 60));
  store.gc(re::GcRequest{.operation_id = "op-1", .logical_time_s = 170});  // epoch 1 -> 2

  auto stale = post("op-1", "key-1", 150, 60);
  stale.fence_epoch = 1;
  const auto refused = store.post(stale);
  CHECK(refused.delivery == re::Delivery::fenced_out);
  CHECK(refused.state.temporal_epoch == 2);
  const auto state = store.read("op-1");
  CHECK(state.effects.size() == 1);
  CHECK(state.post_requests == 1);

  auto current = stale;
  current.fence_epoch = 2;
  CHECK(store.post(current).delivery == re::Delivery::applied);
}

TEST_CASE("volatile dedupe keeps key records in memory only: a reopen forgets them, not the effects") {
  skewbench::TempDir dir("re-store");
  const auto path = dir.path() / "state.db";
  {
    re::Store store(path, re::SyncMode::full, re::DedupeMode::volatile_);
    store.post(post("op-1", "key-1", 100, 60));
    CHECK(store.post(post("op-1", "key-1", 101, 60)).delivery == re::Delivery::deduplicated);
    const auto state = store.read("op-1");
    CHECK(state.records.size() == 1);
    CHECK(state.durable_idempotency_records == 0);
    CHECK(store.totals().durable_idempotency_records == 0);
  }
  re::Store reopened(path, re::SyncMode::full, re::DedupeMode::volatile_);
  CHECK(reopened.read("op-1").records.empty());
  CHECK(reopened.read("op-1").effects.size() == 1);
  CHECK(reopened.post(post("op-1", "key-1", 102, 60)).delivery == re::Delivery::applied);
  CHECK(reopened.read("op-1").effects.size() == 2);
}

TEST_CASE("durable dedupe counts its key records in the file") {
  skewbench::TempDir dir("re-store");
  re::Store store(dir.path() / "state.db", re::SyncMode::full);
  store.post(post("op-1", "key-1", 100, 60));
  CHECK(store.read("op-1").durable_idempotency_records == 1);
  CHECK(store.totals().durable_idempotency_records == 1);
}

TEST_CASE("the key-record total follows every committed write and none that rolled back") {
  skewbench::TempDir dir("re-store");
  const auto path = dir.path() / "state.db";
  re::Store store(path, re::SyncMode::full);
  const auto total_matches_file = [&] {
    const auto total = store.totals().durable_idempotency_records;
    CHECK(total == records_in_file(path));
    CHECK(total == records_kept(path));
    return total;
  };
  CHECK(total_matches_file() == 0);
  store.post(post("op-1", "key-1", 100, 10));
  CHECK(total_matches_file() == 1);
  CHECK(store.post(post("op-1", "key-1", 105, 10)).delivery == re::Delivery::deduplicated);
  CHECK(total_matches_file() == 1);
  // An expired key reused by another operation is rewritten, not added.
  CHECK(store.post(post("op-2", "key-1", 110, 10)).delivery == re::Delivery::applied);
  CHECK(total_matches_file() == 1);
  store.post(post("op-2", "key-2", 110, 10));
  store.post(post("op-3", "key-3", 110, 10));
  CHECK(total_matches_file() == 3);
  // Refused, and failed before its commit: neither counts.
  CHECK(store.post(post("op-9", "key-2", 111)).delivery == re::Delivery::refused_other_operation);
  CHECK_THROWS(store.post(post("op-4", "key-4", 111), [](const re::PostResult&) { throw std::runtime_error("x"); }));
  CHECK(total_matches_file() == 3);
  // In a group, the POST whose savepoint is rolled back takes its record with it.
  std::vector<re::PostRequest> requests = {post("op-5", "key-5", 112), post("op-6", "key-6", 112),
                                           post("op-7", "key-7", 112)};
  std::vector<re::PendingPost> posts;
  for (auto& r : requests) {
    posts.push_back(re::PendingPost{.request = &r, .before_commit = {}, .result = std::nullopt, .error = nullptr});
  }
  posts[1].before_commit = [](const re::PostResult&) { throw std::runtime_error("no answer"); };
  std::vector<re::PendingPost*> group = {&posts[0], &posts[1], &posts[2]};
  store.post_group(group);
  CHECK(posts[1].error);
  CHECK(total_matches_file() == 5);
  // GC removes op-2's two expired records.
  CHECK(store.gc(re::GcRequest{.operation_id = "op-2", .logical_time_s = 200}).removed_records == 2);
  CHECK(total_matches_file() == 3);
}

TEST_CASE("a version-2 state file is upgraded and counts the key records it already holds") {
  skewbench::TempDir dir("re-store");
  const auto path = dir.path() / "state.db";
  // A version-2 build kept no count and had no triggers.
  older_file_with_two_records(path,
                              "DELETE FROM metadata WHERE name = 'idempotency_records'; "
                              "UPDATE schema_version SET version = 2");
  {
    re::Store store(path, re::SyncMode::full);
    CHECK(store.totals().durable_idempotency_records == 2);
    store.post(post("op-3", "key-3", 100, 60));
    CHECK(store.totals().durable_idempotency_records == 3);
  }
  CHECK(sql_on_file(path, "SELECT version FROM schema_version") == re::Store::kSchemaVersion);
  re::Store reopened(path, re::SyncMode::full);
  CHECK(reopened.totals().durable_idempotency_records == 3);
  CHECK(records_in_file(path) == 3);
  CHECK(records_kept(path) == 3);
}

TEST_CASE("a version-1 state file is upgraded: epoch 1, and the key records it holds are counted") {
  skewbench::TempDir dir("re-store");
  const auto path = dir.path() / "state.db";
  // A version-1 build had no metadata table and no triggers.
  older_file_with_two_records(path, "DROP TABLE metadata; UPDATE schema_version SET version = 1");
  re::Store store(path, re::SyncMode::full);
  CHECK(store.totals().temporal_epoch == 1);
  CHECK(store.totals().durable_idempotency_records == 2);
  CHECK(store.gc(re::GcRequest{.operation_id = "op-1", .logical_time_s = 160}).removed_records == 1);
  CHECK(store.totals().durable_idempotency_records == 1);
  CHECK(records_kept(path) == 1);
  CHECK(sql_on_file(path, "SELECT version FROM schema_version") == re::Store::kSchemaVersion);
}

TEST_CASE("a state file of another schema version is refused and left as it was") {
  skewbench::TempDir dir("re-store");
  const auto path = dir.path() / "state.db";
  older_file_with_two_records(path,
                              "DELETE FROM metadata WHERE name = 'idempotency_records'; "
                              "UPDATE schema_version SET version = 99");
  try {
    re::Store store(path, re::SyncMode::full);
    FAIL("a version-99 file was opened");
  } catch (const re::StoreError& e) {
    CHECK(std::string(e.what()).find("schema version 99 is not the version this build understands (" +
                                     std::to_string(re::Store::kSchemaVersion) + ")") != std::string::npos);
  }
  CHECK(sql_on_file(path, "SELECT version FROM schema_version") == 99);
  CHECK(sql_on_file(path, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger'") == 0);
  CHECK(sql_on_file(path, "SELECT COUNT(*) FROM metadata WHERE name = 'idempotency_records'") == 0);
}
