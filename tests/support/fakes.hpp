#pragma once

// In-memory stand-ins for the outbox and the remote, for unit tests only.
// FakeRemote follows the remote-effect rules (strict expiry, same-key
// deduplication, drop-ack commits then answers nothing) closely enough to
// exercise steps and the runner; integration tests use the real service.

#include <map>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "infra/ports.hpp"

namespace skewbench::testing {

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
      boot_id = "fake-boot-2";
    }
    auto& op = operations_[r.operation_id];
    infra::HttpExchange ex;
    ex.request = {{"method", "POST"}, {"path", "/effects"}, {"headers", {{"Idempotency-Key", r.idempotency_key}}}};
    // A fenced-out POST writes and counts nothing, as in remote-effect.
    if (r.expected_temporal_epoch && *r.expected_temporal_epoch != temporal_epoch) {
      ex.http_status = 409;
      ex.outcome = infra::TransportOutcome::FencedOut;
      ex.response_body = {{"error", "temporal_epoch_mismatch"},
                          {"delivery", "fenced_out"},
                          {"expected_temporal_epoch", *r.expected_temporal_epoch},
                          {"current_temporal_epoch", temporal_epoch}};
      return ex;
    }
    ++op.post_requests;
    std::string delivery = "applied";
    const auto it = records_.find(r.idempotency_key);
    if (it != records_.end() && r.logical_time_s < it->second.second) {
      delivery = "deduplicated";
    } else {
      ++op.effects;
      records_[r.idempotency_key] = {r.operation_id, r.logical_time_s + r.ttl_s};
    }
    if (r.drop_ack) ++op.ack_drops;
    if (r.drop_ack || vanish_next_answer) {
      if (!r.drop_ack) vanish_next_answer = false;
      ex.outcome = infra::TransportOutcome::AckUnknown;
      return ex;
    }
    ex.http_status = 200;
    ex.response_body = snapshot(r.operation_id, r.logical_time_s);
    ex.response_body["delivery"] = delivery;
    return ex;
  }

  infra::HttpExchange status(const std::string& operation_id, std::int64_t t) override {
    if (fail_everything) throw InfrastructureError("fake remote is down");
    infra::HttpExchange ex;
    ex.request = {{"method", "GET"}, {"path", "/status/" + operation_id}};
    ex.http_status = 200;
    ex.response_body = snapshot(operation_id, t);
    return ex;
  }

  nlohmann::json health() override { return {{"status", "ok"}, {"boot_id", boot_id}}; }

  infra::HttpExchange gc(const std::string& operation_id, std::int64_t t) override {
    if (fail_everything) throw InfrastructureError("fake remote is down");
    std::int64_t removed = 0;
    for (auto it = records_.begin(); it != records_.end();) {
      const bool expired = it->second.first == operation_id && it->second.second <= t;
      if (expired) ++removed;
      it = expired ? records_.erase(it) : std::next(it);
    }
    const auto before = temporal_epoch;
    if (removed > 0) ++temporal_epoch;
    infra::HttpExchange ex;
    ex.request = {{"method", "POST"}, {"path", "/maintenance/gc/" + operation_id}};
    ex.http_status = 200;
    ex.response_body = {{"operation_id", operation_id},
                        {"logical_time", t},
                        {"removed_records", removed},
                        {"temporal_epoch_before", before},
                        {"temporal_epoch_after", temporal_epoch}};
    return ex;
  }

  std::int64_t temporal_epoch = 1;

 private:
  struct Operation {
    std::int64_t effects = 0, post_requests = 0, ack_drops = 0;
  };

  nlohmann::json snapshot(const std::string& operation_id, std::int64_t t) {
    const auto& op = operations_[operation_id];
    std::int64_t active = 0;
    for (const auto& [key, record] : records_) {
      if (record.first == operation_id && t < record.second) ++active;
    }
    const char* status = op.effects == 0 ? "absent" : (op.effects == 1 ? "committed" : "conflict");
    return {{"operation_id", operation_id},
            {"evaluation_time", t},
            {"status", status},
            {"effect_count", op.effects},
            {"post_requests", op.post_requests},
            {"ack_drops", op.ack_drops},
            {"active_idempotency_records", active},
            {"temporal_epoch", temporal_epoch},
            {"boot_id", boot_id}};
  }

  std::map<std::string, Operation> operations_;
  std::map<std::string, std::pair<std::string, std::int64_t>> records_;  // key -> (operation, expires_at)
};

class FakeOutbox final : public infra::OutboxApi {
 public:
  void declare_operation(const std::string& id, std::int64_t version) override {
    rows_[id].business_state = "absent";
    rows_[id].business_version = version;
  }
  void commit_operation(const std::string& id, const std::string& key, std::int64_t ttl_s) override {
    auto& row = rows_.at(id);
    row.business_state = "committed";
    ++row.business_version;
    row.idempotency_key = key;
    row.ttl_s = ttl_s;
    row.status = "pending";
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
