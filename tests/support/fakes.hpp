#pragma once

// Stand-ins for the outbox and the remote, for unit tests only; integration
// tests use the real service.
// FakeRemote is the service without its HTTP layer and process: it judges
// every request with the service's own protocol library
// (remote_effect/protocol.hpp: request parsing, the JSON answers, refusals)
// and keeps its state in the service's own store (remote_effect/store.hpp) on
// a temporary SQLite file, so the fence, expiry, dedupe and GC rules and what
// they write are the service's, not a copy. Only the transport is fake.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "infra/ports.hpp"
#include "remote_effect/protocol.hpp"
#include "remote_effect/store.hpp"
#include "steps/step.hpp"

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
  // Fields left out of every answer, as a service that does not report them
  // (e.g. #015's, which has no clock and no boot_id) answers.
  std::set<std::string> unreported;

  FakeRemote() { open(); }

  protocol::DedupeMode mode() const { return mode_; }
  // The service started again in another dedupe mode, on the same file.
  void set_mode(protocol::DedupeMode mode) {
    mode_ = mode;
    open();
  }

  // A restart as the service has one: a new boot_id and the store opened
  // again on its file, so the effects, counts and epoch survive and the key
  // records only in durable mode.
  std::string restart() {
    boot_id = "fake-boot-" + std::to_string(++boots_);
    open();
    return boot_id;
  }

  infra::PostExchange post_effect(const infra::PostEffectRequest& r) override {
    if (fail_everything) throw InfrastructureError("fake remote is down");
    if (lose_next_post) {
      lose_next_post = false;
      return infra::read_post({}, infra::TransportOutcome::AckUnknown, "POST /effects");
    }
    if (restart_after_next_post) {
      restart_after_next_post = false;
      restart();
    }
    const auto headers = protocol::post_effect_headers(r);
    auto ex = infra::sent("POST", "/effects", headers, r.body);
    const auto request =
        parse_or_throw(protocol::parse_post_request({headers.begin(), headers.end()}, r.body, kDefaultTtlS));
    const auto result = store_->post(request);
    if (result.delivery == protocol::Delivery::fenced_out) {
      return posted(std::move(ex), 409, protocol::fenced_out_json(*request.fence_epoch, result.state.temporal_epoch),
                    infra::TransportOutcome::FencedOut);
    }
    if (protocol::is_refusal(result.delivery)) {
      const auto refusal = protocol::refusal_error(result.delivery);
      return posted(std::move(ex), refusal.http_status, refusal.to_json(), infra::TransportOutcome::Rejected);
    }
    if (r.drop_ack || vanish_next_answer) {
      if (!r.drop_ack) vanish_next_answer = false;
      return infra::read_post(std::move(ex), infra::TransportOutcome::AckUnknown, "POST /effects");
    }
    return posted(std::move(ex), 200, protocol::post_json(request, result.delivery, result.state, boot_id, mode_),
                  infra::TransportOutcome::AckReceived);
  }

  infra::StatusExchange status(const std::string& operation_id, std::int64_t t) override {
    if (fail_everything) throw InfrastructureError("fake remote is down");
    const auto headers = protocol::logical_time_headers(t);
    auto ex = infra::sent("GET", "/status/" + operation_id, headers);
    const auto request = parse_or_throw(protocol::parse_status_request(operation_id, {headers.begin(), headers.end()}));
    return infra::read_status(answered(std::move(ex), 200,
                                       protocol::snapshot_json(operation_id, request.evaluation_time_s,
                                                               store_->read(operation_id), boot_id, mode_)),
                              "GET /status");
  }

  infra::HealthExchange health() override {
    nlohmann::json body = {
        {"status", "ok"}, {"boot_id", boot_id}, {"idempotency_mode", protocol::dedupe_mode_name(mode_)}};
    for (const auto& field : unreported) body.erase(field);
    return infra::read_health(body, "GET /health");
  }

  infra::GcExchange gc(const std::string& operation_id, std::int64_t t) override {
    if (fail_everything) throw InfrastructureError("fake remote is down");
    const auto headers = protocol::logical_time_headers(t);
    auto ex = infra::sent("POST", "/maintenance/gc/" + operation_id, headers);
    const auto request = parse_or_throw(protocol::parse_gc_request(operation_id, {headers.begin(), headers.end()}));
    return infra::read_gc(answered(std::move(ex), 200, protocol::gc_json(request, store_->gc(request))),
                          "POST /maintenance/gc");
  }

 private:
  static constexpr std::int64_t kDefaultTtlS = 60;

  // The service's own store on a file of this fake's (synchronous NORMAL:
  // nothing here needs power-loss durability).
  void open() {
    store_.reset();
    store_ = std::make_unique<protocol::Store>(dir_.path() / "remote.sqlite3", protocol::SyncMode::normal, mode_);
  }

  template <typename T>
  static T parse_or_throw(const protocol::Parsed<T>& parsed) {
    if (const auto* error = std::get_if<protocol::RequestError>(&parsed)) {
      throw InfrastructureError("fake remote answered " + std::to_string(error->http_status) + ": " +
                                error->to_json().dump());
    }
    return std::get<T>(parsed);
  }

  infra::HttpExchange answered(infra::HttpExchange ex, int http_status, nlohmann::json body) const {
    for (const auto& field : unreported) body.erase(field);
    ex.http_status = http_status;
    ex.response_body = std::move(body);
    return ex;
  }
  infra::PostExchange posted(infra::HttpExchange ex, int http_status, nlohmann::json body,
                             infra::TransportOutcome outcome) const {
    return infra::read_post(answered(std::move(ex), http_status, std::move(body)), outcome, "POST /effects");
  }

  TempDir dir_{"skewbench-fake-remote"};
  protocol::DedupeMode mode_ = protocol::kDefaultDedupeMode;
  std::unique_ptr<protocol::Store> store_;
  int boots_ = 1;
};

// Restarts and dedupe modes act on the FakeRemote; pauses and database
// restarts have nothing to act on and only count.
class FakeControl final : public steps::RemoteControl, public steps::DatabaseControl {
 public:
  explicit FakeControl(FakeRemote& remote) : remote_(remote) {}
  void restart_remote() override { remote_.restart(); }
  void restart_store() override { ++store_restarts; }
  void pause_remote(std::chrono::milliseconds) override { ++pauses; }
  void use_dedupe_mode(remote_effect::DedupeMode mode) override { remote_.set_mode(mode); }
  void restart_database(bool) override { ++database_restarts; }
  int pauses = 0;
  int database_restarts = 0;
  int store_restarts = 0;

 private:
  FakeRemote& remote_;
};

class FakeOutbox final : public infra::OutboxApi {
 public:
  void declare_operation(const std::string& id, std::int64_t version) override {
    rows_[id].business_state = infra::BusinessState::Absent;
    rows_[id].business_version = version;
  }
  infra::OutboxRow commit_operation(const std::string& id, const std::string& key, std::int64_t ttl_s) override {
    auto& row = rows_.at(id);
    row.business_state = infra::BusinessState::Committed;
    ++row.business_version;
    row.idempotency_key = key;
    row.ttl_s = ttl_s;
    row.status = infra::OutboxStatus::Pending;
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
    row.status = infra::OutboxStatus::Delivered;
    if (!row.delivered_at_s) row.delivered_at_s = t;
  }
  void reconnect() override {}
  infra::OutboxRow read(const std::string& id) override {
    auto row = rows_.at(id);
    row.operation_id = id;
    return row;
  }

 private:
  std::map<std::string, infra::OutboxRow> rows_;
};

}  // namespace skewbench::testing
