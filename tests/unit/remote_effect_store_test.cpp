// The remote-effect SQLite store on a temporary file: no process, no socket.

#include <cstdint>
#include <string>

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
