#pragma once

// In-memory stand-ins for the outbox and the remote, for unit tests only;
// integration tests use the real service.
// FakeRemote keeps its state in maps but judges every request with the
// service's own protocol library (remote_effect/protocol.hpp): the same
// request parsing, fence, expiry and dedupe rules, refusals (409 for another
// operation's active key or a stale temporal epoch, 422 for another payload)
// and JSON answers. Only storage and transport are fake.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/errors.hpp"
#include "infra/ports.hpp"
#include "remote_effect/protocol.hpp"

namespace skewbench::testing {

namespace protocol = remote_effect;

class FakeRemote final : public infra::RemoteApi {
 public:
  bool fail_everything = false;
  // Faults a scenario did not plan, as a transport that does not check would
  // report them: the next POST vanishes before the remote reads it (no answer,
  // nothing logged); the next POST is applied but its answer is lost although
  // it was not sent with drop_ack; the remote restarts after the next POST.
  bool lose_next_post = false;
  bool vanish_next_answer = false;
  bool restart_after_next_post = false;
  std::string boot_id = "fake-boot-1";
  std::int64_t temporal_epoch = protocol::kFirstTemporalEpoch;
  protocol::DedupeMode mode = protocol::DedupeMode::durable;

  // A restart as the service has one: a new boot_id; the effects, counts and
  // epoch survive, the key records only in durable mode.
  std::string restart() {
    boot_id = "fake-boot-" + std::to_string(++boots_);
    if (mode == protocol::DedupeMode::volatile_) records_.clear();
    return boot_id;
  }

  infra::HttpExchange post_effect(const infra::PostEffectRequest& r) override {
    if (fail_everything) throw InfrastructureError("fake remote is down");
    if (lose_next_post) {
      lose_next_post = false;
      infra::HttpExchange lost;
      lost.outcome = infra::TransportOutcome::AckUnknown;
      return lost;
    }
    if (restart_after_next_post) {
      restart_after_next_post = false;
      restart();
    }
    const auto headers = protocol::post_effect_headers({.operation_id = r.operation_id,
                                                        .idempotency_key = r.idempotency_key,
                                                        .ttl_s = r.ttl_s,
                                                        .logical_time_s = r.logical_time_s,
                                                        .drop_ack = r.drop_ack,
                                                        .fence_epoch = r.expected_temporal_epoch});
    infra::HttpExchange ex;
    ex.request = {{"method", "POST"}, {"path", "/effects"}, {"headers", headers_json(headers)}, {"body", r.body}};
    const auto parsed = protocol::parse_post_request({headers.begin(), headers.end()}, r.body, kDefaultTtlS);
    if (const auto* error = std::get_if<protocol::RequestError>(&parsed)) {
      throw InfrastructureError("POST /effects answered " + std::to_string(error->http_status) + ": " +
                                error->to_json().dump());
    }
    const auto& request = std::get<protocol::PostRequest>(parsed);
    const auto delivery = apply(request);
    if (delivery == protocol::Delivery::fenced_out) {
      return answer(std::move(ex), 409, protocol::fenced_out_json(*request.fence_epoch, temporal_epoch),
                    infra::TransportOutcome::FencedOut);
    }
    if (protocol::is_refusal(delivery)) {
      const auto refusal = protocol::refusal_error(delivery);
      return answer(std::move(ex), refusal.http_status, refusal.to_json(), infra::TransportOutcome::Rejected);
    }
    if (r.drop_ack || vanish_next_answer) {
      if (!r.drop_ack) vanish_next_answer = false;
      ex.outcome = infra::TransportOutcome::AckUnknown;
      return ex;
    }
    return answer(std::move(ex), 200, protocol::post_json(request, delivery, state(r.operation_id), boot_id, mode),
                  infra::TransportOutcome::AckReceived);
  }

  infra::HttpExchange status(const std::string& operation_id, std::int64_t t) override {
    if (fail_everything) throw InfrastructureError("fake remote is down");
    const auto headers = protocol::logical_time_headers(t);
    infra::HttpExchange ex;
    ex.request = {{"method", "GET"}, {"path", "/status/" + operation_id}, {"headers", headers_json(headers)}};
    const auto request = parse_or_throw(protocol::parse_status_request(operation_id, {headers.begin(), headers.end()}));
    return answer(std::move(ex), 200,
                  protocol::snapshot_json(operation_id, request.evaluation_time_s, state(operation_id), boot_id, mode),
                  infra::TransportOutcome::AckReceived);
  }

  nlohmann::json health() override { return {{"status", "ok"}, {"boot_id", boot_id}}; }

  infra::HttpExchange gc(const std::string& operation_id, std::int64_t t) override {
    if (fail_everything) throw InfrastructureError("fake remote is down");
    const auto headers = protocol::logical_time_headers(t);
    infra::HttpExchange ex;
    ex.request = {{"method", "POST"}, {"path", "/maintenance/gc/" + operation_id}, {"headers", headers_json(headers)}};
    const auto request = parse_or_throw(protocol::parse_gc_request(operation_id, {headers.begin(), headers.end()}));
    protocol::GcResult result{.temporal_epoch_before = temporal_epoch};
    for (auto it = records_.begin(); it != records_.end();) {
      const bool collect = it->second.operation_id == operation_id &&
                           protocol::is_collectable(request.logical_time_s, it->second.expires_at_s);
      if (collect) ++result.removed_records;
      it = collect ? records_.erase(it) : std::next(it);
    }
    temporal_epoch = protocol::epoch_after_gc(temporal_epoch, result.removed_records);
    result.temporal_epoch_after = temporal_epoch;
    return answer(std::move(ex), 200, protocol::gc_json(request, result), infra::TransportOutcome::AckReceived);
  }

 private:
  static constexpr std::int64_t kDefaultTtlS = 60;

  struct Operation {
    std::vector<protocol::Effect> effects;
    std::int64_t post_requests = 0, ack_drops = 0;
  };

  static nlohmann::json headers_json(const std::vector<std::pair<std::string, std::string>>& headers) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [name, value] : headers) out[name] = value;
    return out;
  }

  template <typename T>
  static T parse_or_throw(const protocol::Parsed<T>& parsed) {
    if (const auto* error = std::get_if<protocol::RequestError>(&parsed)) {
      throw InfrastructureError("fake remote answered " + std::to_string(error->http_status) + ": " +
                                error->to_json().dump());
    }
    return std::get<T>(parsed);
  }

  static infra::HttpExchange answer(infra::HttpExchange ex, int http_status, nlohmann::json body,
                                    infra::TransportOutcome outcome) {
    ex.http_status = http_status;
    ex.response_body = std::move(body);
    ex.outcome = outcome;
    return ex;
  }

  // The store's read-decide-write (remote_effect/store.cpp): a refusal or a
  // fenced-out POST writes and counts nothing; an accepted one is counted, and
  // an applied one adds an effect and (re)writes the key's record.
  protocol::Delivery apply(const protocol::PostRequest& request) {
    if (protocol::check_fence(request.fence_epoch, temporal_epoch)) return protocol::Delivery::fenced_out;
    const auto found = records_.find(request.idempotency_key);
    const auto existing =
        found == records_.end() ? std::nullopt : std::optional<protocol::IdempotencyRecord>(found->second);
    const auto delivery = protocol::decide(existing, request);
    if (protocol::is_refusal(delivery)) return delivery;
    auto& op = operations_[request.operation_id];
    if (delivery == protocol::Delivery::applied) {
      op.effects.push_back({.effect_id = ++last_effect_id_,
                            .operation_id = request.operation_id,
                            .idempotency_key = request.idempotency_key,
                            .created_at_s = request.logical_time_s});
      records_[request.idempotency_key] = {.idempotency_key = request.idempotency_key,
                                           .operation_id = request.operation_id,
                                           .created_at_s = request.logical_time_s,
                                           .expires_at_s = request.expires_at_s,
                                           .body_sha256 = request.body_sha256};
    }
    ++op.post_requests;
    if (request.drop_ack) ++op.ack_drops;
    return delivery;
  }

  protocol::OperationState state(const std::string& operation_id) {
    const auto& op = operations_[operation_id];
    protocol::OperationState out;
    out.effects = op.effects;
    out.post_requests = op.post_requests;
    out.ack_drops = op.ack_drops;
    out.temporal_epoch = temporal_epoch;
    for (const auto& [key, record] : records_) {
      if (record.operation_id == operation_id) out.records.push_back(record);
    }
    if (mode == protocol::DedupeMode::durable) {
      out.durable_idempotency_records = static_cast<std::int64_t>(out.records.size());
    }
    return out;
  }

  std::map<std::string, Operation> operations_;
  std::map<std::string, protocol::IdempotencyRecord> records_;  // by idempotency key, as the store's table
  std::int64_t last_effect_id_ = 0;
  int boots_ = 1;
};

class FakeOutbox final : public infra::OutboxApi {
 public:
  void declare_operation(const std::string& id, std::int64_t version) override {
    rows_[id].business_state = "absent";
    rows_[id].business_version = version;
  }
  infra::OutboxRow commit_operation(const std::string& id, const std::string& key, std::int64_t ttl_s) override {
    auto& row = rows_.at(id);
    row.business_state = "committed";
    ++row.business_version;
    row.idempotency_key = key;
    row.ttl_s = ttl_s;
    row.status = "pending";
    return read(id);
  }
  void record_attempt(const std::string& id, std::int64_t t) override {
    auto& row = rows_.at(id);
    ++row.delivery_attempts;
    if (!row.key_created_at_s) {
      row.key_created_at_s = t;
      row.key_expires_at_s = t + row.ttl_s;
    }
  }
  void record_outcome(const std::string& id, infra::TransportOutcome outcome, bool delivered, std::int64_t t) override {
    auto& row = rows_.at(id);
    row.last_transport_outcome = infra::to_string(outcome);
    if (delivered) mark_delivered(id, t);
  }
  void mark_delivered(const std::string& id, std::int64_t t) override {
    auto& row = rows_.at(id);
    row.status = "delivered";
    if (!row.delivered_at_s) row.delivered_at_s = t;
  }
  void reconnect() override {}
  infra::OutboxRow read(const std::string& id) override {
    auto row = rows_.at(id);
    row.operation_id = id;
    if (row.status.empty()) row.status = "absent";
    return row;
  }

 private:
  std::map<std::string, infra::OutboxRow> rows_;
};

}  // namespace skewbench::testing
