#pragma once

// The two systems a scenario touches, as interfaces. The runner uses the real
// adapters (PostgreSQL through libpqxx, remote-effect through cpp-httplib);
// unit tests of steps may use fakes.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/vocabulary.hpp"
#include "remote_effect/answers.hpp"

namespace skewbench::infra {

// How a POST ended on the wire.
enum class TransportOutcome {
  AckReceived,  // 200 with a delivery (applied or deduplicated)
  AckUnknown,   // the connection closed with no response: the effect may or may not exist
  Rejected,     // 409 or 422: the remote refused by protocol rule, nothing applied
  FencedOut,    // 409 "fenced_out": the POST carried a stale temporal epoch; nothing applied
  // A service of its own wire answered an error while skewbench's effect sink
  // had failed its provider call for the operation and held none applied:
  // the provider's failure, passed on; nothing applied.
  ProviderFailed,
};
// The outcome as the evidence and the outbox record it, e.g. "ACK_UNKNOWN".
inline constexpr auto kTransportOutcomes =
    vocabulary<TransportOutcome>({{TransportOutcome::AckReceived, "ACK_RECEIVED"},
                                  {TransportOutcome::AckUnknown, "ACK_UNKNOWN"},
                                  {TransportOutcome::Rejected, "REJECTED"},
                                  {TransportOutcome::FencedOut, "FENCED_OUT"},
                                  {TransportOutcome::ProviderFailed, "PROVIDER_FAILED"}});
constexpr std::string_view to_string(TransportOutcome outcome) { return kTransportOutcomes.name(outcome); }

// How a POST that is to lose its answer (drop_ack) loses it.
//  - header: it carries X-Drop-Ack: 1, and the service commits, then closes the
//    connection without answering (the published wire).
//  - proxy: it carries X-Skewbench-Fault: drop_ack to skewbench's fault proxy
//    (infra/fault_proxy.hpp), which strips it, forwards the request, reads the
//    whole answer and closes the connection instead of sending it: ack loss
//    for any service, X-Drop-Ack or not.
enum class AckLoss { header, proxy };
inline constexpr auto kAckLosses = vocabulary<AckLoss>({{AckLoss::header, "header"}, {AckLoss::proxy, "proxy"}});

using PostEffectRequest = remote_effect::PostEffect;

// One request and what came back, as recorded in the timeline.
struct HttpExchange {
  nlohmann::json request;          // method, path, headers
  std::optional<int> http_status;  // absent when no response arrived
  nlohmann::json response_body;    // null when no response arrived
  // How a POST /effects ended; nullopt for the requests that only read or
  // collect, which either answer or throw.
  std::optional<TransportOutcome> outcome;
  std::int64_t duration_us = 0;  // wall time; never part of the core digest
  // What skewbench itself did to this exchange or checked of it, when anything:
  // the process clock it set and the time the service judged at (real-clock
  // mode), the fault proxy's count of dropped acknowledgements. Null otherwise.
  nlohmann::json harness = nullptr;

  // The exchange as the evidence's timeline records it.
  nlohmann::json to_json() const;
  // The same, with the request, answer body and harness moved out into it
  // (left null here); the status, outcome and a typed answer stay.
  nlohmann::json release_json();
};

// An exchange whose request is recorded as sent (method, path, headers, and
// the body of a POST /effects), before anything came back.
HttpExchange sent(std::string method, std::string path, const std::vector<std::pair<std::string, std::string>>& headers,
                  const std::optional<std::string>& body = std::nullopt);

// An exchange and its answer, read by the protocol's reader. The raw exchange
// stays for the evidence; the steps act on the typed answer.
struct PostExchange : HttpExchange {
  remote_effect::PostAnswer answer;  // every field absent when no answer arrived
  TransportOutcome transport_outcome() const { return outcome.value_or(TransportOutcome::AckUnknown); }
};
struct StatusExchange : HttpExchange {
  remote_effect::StatusAnswer answer;
};
struct GcExchange : HttpExchange {
  remote_effect::GcAnswer answer;
};
struct HealthExchange {
  nlohmann::json body;  // as the remote wrote it (the evidence keeps it whole)
  remote_effect::HealthAnswer answer;
};

// Read the answer of an exchange with the protocol's reader; throw
// InfrastructureError naming `what` (e.g. "GET /status/op") when it is
// malformed.
PostExchange read_post(HttpExchange exchange, TransportOutcome outcome, const std::string& what);
StatusExchange read_status(HttpExchange exchange, const std::string& what);
GcExchange read_gc(HttpExchange exchange, const std::string& what);
HealthExchange read_health(nlohmann::json body, const std::string& what);

class RemoteApi {
 public:
  virtual ~RemoteApi() = default;
  // Throws InfrastructureError when the remote is unreachable or answers with a
  // status outside the protocol (anything but 200, 409, 422).
  virtual PostExchange post_effect(const PostEffectRequest& request) = 0;
  // GET /status/{operation_id} at a logical time. Throws InfrastructureError
  // unless the answer is a 200 snapshot.
  virtual StatusExchange status(const std::string& operation_id, std::int64_t logical_time_s) = 0;
  virtual HealthExchange health() = 0;
  // POST /maintenance/gc/{operation_id} at a logical time: removes the
  // operation's idempotency records with expires_at <= that time. Throws
  // InfrastructureError unless the answer is a 200 JSON object.
  virtual GcExchange gc(const std::string& operation_id, std::int64_t logical_time_s) = 0;
};

// Forwards every call to another RemoteApi. A test double or a decorator
// derives from it and overrides only the calls it changes, so a method added
// to RemoteApi is forwarded here once, not in every double.
class ForwardingRemote : public RemoteApi {
 public:
  explicit ForwardingRemote(RemoteApi& inner) : inner_(&inner) {}
  PostExchange post_effect(const PostEffectRequest& request) override { return inner_->post_effect(request); }
  StatusExchange status(const std::string& operation_id, std::int64_t logical_time_s) override {
    return inner_->status(operation_id, logical_time_s);
  }
  HealthExchange health() override { return inner_->health(); }
  GcExchange gc(const std::string& operation_id, std::int64_t logical_time_s) override {
    return inner_->gc(operation_id, logical_time_s);
  }

 protected:
  RemoteApi& inner() { return *inner_; }
  // Forwards from now on to `inner` (e.g. a client of a restarted service).
  void forward_to(RemoteApi& inner) { inner_ = &inner; }

 private:
  RemoteApi* inner_;
};

// Where the outbox stands on an operation's delivery: no outbox row yet
// (absent), committed and not yet known delivered (pending), or delivered (an
// acknowledgement arrived, or recovery found the effect on the remote).
enum class OutboxStatus { Absent, Pending, Delivered };
inline constexpr auto kOutboxStatuses = vocabulary<OutboxStatus>(
    {{OutboxStatus::Absent, "absent"}, {OutboxStatus::Pending, "pending"}, {OutboxStatus::Delivered, "delivered"}});
constexpr std::string_view to_string(OutboxStatus status) { return kOutboxStatuses.name(status); }

// The business row an operation commits: absent before, committed after.
enum class BusinessState { Absent, Committed };
inline constexpr auto kBusinessStates =
    vocabulary<BusinessState>({{BusinessState::Absent, "absent"}, {BusinessState::Committed, "committed"}});
constexpr std::string_view to_string(BusinessState state) { return kBusinessStates.name(state); }

struct OutboxRow {
  std::string operation_id;
  BusinessState business_state = BusinessState::Absent;
  std::int64_t business_version = 0;
  std::string idempotency_key;
  std::int64_t ttl_s = 0;
  std::optional<std::int64_t> key_created_at_s;
  std::optional<std::int64_t> key_expires_at_s;
  OutboxStatus status = OutboxStatus::Absent;
  std::int64_t delivery_attempts = 0;
  std::optional<std::string> last_transport_outcome;
  std::optional<std::int64_t> delivered_at_s;

  nlohmann::json to_json() const;
};

class OutboxApi {
 public:
  virtual ~OutboxApi() = default;
  // Declares the operation: business state absent, at the given version.
  virtual void declare_operation(const std::string& operation_id, std::int64_t business_version) = 0;
  // One transaction: business absent -> committed (version + 1) and an outbox
  // row, status pending, holding the stable idempotency key and its TTL.
  // Returns the row as that transaction wrote it, read back from the store.
  virtual OutboxRow commit_operation(const std::string& operation_id, const std::string& idempotency_key,
                                     std::int64_t ttl_s) = 0;
  // Before a POST: delivery_attempts + 1; the first attempt also fixes the
  // key's window [created_at, created_at + ttl).
  virtual void record_attempt(const std::string& operation_id, std::int64_t logical_time_s) = 0;
  // After a POST: the transport outcome; delivered -> status delivered at time.
  virtual void record_outcome(const std::string& operation_id, TransportOutcome outcome, bool delivered,
                              std::int64_t logical_time_s) = 0;
  // Recovery concluded from the remote's state that the effect exists.
  virtual void mark_delivered(const std::string& operation_id, std::int64_t logical_time_s) = 0;
  virtual OutboxRow read(const std::string& operation_id) = 0;
  // Opens a new connection (after the database restarted). Throws
  // InfrastructureError when it cannot.
  virtual void reconnect() = 0;
};

}  // namespace skewbench::infra
