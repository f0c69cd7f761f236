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
