// FakeRemote judges requests with remote-effect's own protocol library: these
// tests hold it to the service's answers (docs/remote-effect.md), refusals
// included, so unit tests of steps and the runner meet the real rules.

#include <catch2/catch_test_macros.hpp>

#include "support/fakes.hpp"

using namespace skewbench;
namespace re = skewbench::remote_effect;

namespace {

infra::PostEffectRequest post(const std::string& operation, const std::string& key, std::int64_t t,
                              const std::string& body = "{\"amount\":1}") {
  infra::PostEffectRequest r;
  r.operation_id = operation;
  r.idempotency_key = key;
  r.ttl_s = 60;
  r.logical_time_s = t;
  r.body = body;
  return r;
}

}  // namespace

TEST_CASE("the fake deduplicates an active key and applies it again at exactly its expiry") {
  testing::FakeRemote remote;
  const auto first = remote.post_effect(post("op-1", "k", 0));
  CHECK(first.http_status == 200);
  CHECK(first.answer.delivery == re::Delivery::applied);
  const auto again = remote.post_effect(post("op-1", "k", 59));
  CHECK(again.answer.delivery == re::Delivery::deduplicated);
  CHECK(again.answer.snapshot.effect_count == 1);
  const auto expired = remote.post_effect(post("op-1", "k", 60));
  CHECK(expired.answer.delivery == re::Delivery::applied);
  CHECK(expired.answer.snapshot.status == re::OperationStatus::conflict);
  CHECK(expired.answer.snapshot.post_requests == 3);
}

TEST_CASE("the fake answers 409 when another operation holds the active key, and counts nothing") {
  testing::FakeRemote remote;
  remote.post_effect(post("op-1", "shared", 0));
  const auto refused = remote.post_effect(post("op-2", "shared", 30));
  CHECK(refused.http_status == 409);
  CHECK(refused.transport_outcome() == infra::TransportOutcome::Rejected);
  CHECK(refused.answer.error == "active_idempotency_key_reused_for_different_operation");
  const auto status = remote.status("op-2", 30);
  CHECK(status.answer.status == re::OperationStatus::absent);
  CHECK(status.answer.post_requests == 0);
}

TEST_CASE("the fake answers 422 when the same operation sends another payload under its active key") {
  testing::FakeRemote remote;
  remote.post_effect(post("op-1", "k", 0));
  const auto refused = remote.post_effect(post("op-1", "k", 10, "{\"amount\":2}"));
  CHECK(refused.http_status == 422);
  CHECK(refused.transport_outcome() == infra::TransportOutcome::Rejected);
  CHECK(refused.answer.error == "idempotency_key_reused_with_different_payload");
  CHECK(remote.status("op-1", 10).answer.post_requests == 1);
}

TEST_CASE("the fake fences out a POST carrying a stale temporal epoch after a collection raised it") {
  testing::FakeRemote remote;
  remote.post_effect(post("op-1", "k", 0));
  const auto gc = remote.gc("op-1", 60);  // exactly at expiry: collected
  CHECK(gc.answer.removed_records == 1);
  CHECK(gc.answer.temporal_epoch_after == 2);
  auto stale = post("op-1", "k", 61);
  stale.expected_temporal_epoch = 1;
  const auto fenced = remote.post_effect(stale);
  CHECK(fenced.http_status == 409);
  CHECK(fenced.transport_outcome() == infra::TransportOutcome::FencedOut);
  CHECK(fenced.answer.delivery == re::Delivery::fenced_out);
  CHECK(fenced.answer.current_temporal_epoch == 2);
  CHECK(remote.status("op-1", 61).answer.effect_count == 1);
}

TEST_CASE("the fake refuses a request the service would refuse, as the driver's client reports it") {
  testing::FakeRemote remote;
  CHECK_THROWS_AS(remote.post_effect(post("op\x01", "k", 0)), InfrastructureError);  // a control character
}

TEST_CASE("the in-process remote in memory answers as the one on a file, and a cleared one starts afresh") {
  testing::FakeRemote on_file;
  infra::InProcessRemote in_memory(
      {.state_file = std::nullopt, .mode = re::kDefaultDedupeMode, .boot_id = on_file.boot_id, .default_ttl_s = 60});
  for (infra::RemoteApi* remote :
       {static_cast<infra::RemoteApi*>(&on_file), static_cast<infra::RemoteApi*>(&in_memory)}) {
    auto lost = post("op-1", "k", 0);
    lost.drop_ack = true;
    CHECK(remote->post_effect(lost).transport_outcome() == infra::TransportOutcome::AckUnknown);
    CHECK(remote->post_effect(post("op-1", "k", 30)).answer.delivery == re::Delivery::deduplicated);
    CHECK(remote->gc("op-1", 60).answer.temporal_epoch_after == 2);
  }
  const auto a = on_file.status("op-1", 70);
  const auto b = in_memory.status("op-1", 70);
  CHECK(a.response_body == b.response_body);
  CHECK(a.request == b.request);
  CHECK_THROWS_AS(in_memory.restart("again", re::kDefaultDedupeMode), std::logic_error);
  in_memory.clear();
  CHECK(in_memory.status("op-1", 70).answer.effect_count == 0);
  CHECK(in_memory.health().answer.temporal_epoch == re::kFirstTemporalEpoch);
}

TEST_CASE("the outbox double keeps PgOutbox's one-row writes") {
  infra::InProcessOutbox outbox;
  CHECK_THROWS_AS(outbox.read("op-1"), InfrastructureError);
  CHECK_THROWS_AS(outbox.commit_operation("op-1", "k", 60), InfrastructureError);  // not declared
  outbox.declare_operation("op-1", 0);
  CHECK_THROWS_AS(outbox.declare_operation("op-1", 0), InfrastructureError);
  CHECK_THROWS_AS(outbox.record_attempt("op-1", 0), InfrastructureError);  // no outbox row yet
  CHECK(outbox.read("op-1").status == infra::OutboxStatus::Absent);
  const auto committed = outbox.commit_operation("op-1", "k", 60);
  CHECK(committed.business_state == infra::BusinessState::Committed);
  CHECK(committed.business_version == 1);
  CHECK(committed.status == infra::OutboxStatus::Pending);
  CHECK_THROWS_AS(outbox.commit_operation("op-1", "k", 60), InfrastructureError);  // already committed
  outbox.record_attempt("op-1", 10);
  outbox.record_attempt("op-1", 20);
  outbox.record_outcome("op-1", infra::TransportOutcome::AckUnknown, false, 20);
  auto row = outbox.read("op-1");
  CHECK(row.delivery_attempts == 2);
  CHECK(row.key_created_at_s == 10);
  CHECK(row.key_expires_at_s == 70);
  CHECK(row.last_transport_outcome == "ACK_UNKNOWN");
  CHECK(row.status == infra::OutboxStatus::Pending);
  outbox.mark_delivered("op-1", 30);
  outbox.record_outcome("op-1", infra::TransportOutcome::AckReceived, true, 40);
  row = outbox.read("op-1");
  CHECK(row.status == infra::OutboxStatus::Delivered);
  CHECK(row.delivered_at_s == 30);
  outbox.clear();
  CHECK_THROWS_AS(outbox.read("op-1"), InfrastructureError);
}
