#include "infra/in_process.hpp"

#include <stdexcept>
#include <utility>
#include <variant>

#include <skewbench/build_info.hpp>

#include "common/errors.hpp"
#include "remote_effect/store.hpp"

namespace skewbench::infra {
namespace protocol = remote_effect;
using nlohmann::json;

namespace {

// The request as the service's parser reads it; a refusal (400) is an
// InfrastructureError, as an HTTP client reports a status outside the protocol.
template <typename T>
T parsed_or_throw(const protocol::Parsed<T>& parsed, const std::string& what) {
  if (const auto* error = std::get_if<protocol::RequestError>(&parsed)) {
    throw InfrastructureError(what + " answered " + std::to_string(error->http_status) + ": " +
                              error->to_json().dump());
  }
  return std::get<T>(parsed);
}

HttpExchange answered(HttpExchange exchange, int http_status, json body) {
  exchange.http_status = http_status;
  exchange.response_body = std::move(body);
  return exchange;
}

}  // namespace

InProcessRemote::InProcessRemote(Options options) : options_(std::move(options)) { open(); }

InProcessRemote::~InProcessRemote() = default;

void InProcessRemote::open() {
  store_.reset();
  health_body_ = nullptr;
  if (options_.state_file) {
    // Synchronous NORMAL: a commit reaches the operating system; nothing here
    // needs power-loss durability.
    store_ = std::make_unique<protocol::Store>(*options_.state_file, protocol::SyncMode::normal, options_.mode);
  } else {
    store_ = std::make_unique<protocol::Store>(protocol::Store::InMemory{}, options_.mode);
  }
}

void InProcessRemote::restart(std::string boot_id, protocol::DedupeMode mode) {
  if (!options_.state_file) throw std::logic_error("an in-process remote in memory has no file to restart on");
  options_.boot_id = std::move(boot_id);
  options_.mode = mode;
  open();
}

void InProcessRemote::clear() { store_->clear(); }

PostExchange InProcessRemote::post_effect(const PostEffectRequest& r) {
  const std::string what = "POST /effects";
  const auto headers = protocol::post_effect_headers(r);
  auto exchange = sent("POST", "/effects", headers, r.body);
  const auto request = parsed_or_throw(
      protocol::parse_post_request({headers.begin(), headers.end()}, r.body, options_.default_ttl_s), what);
  const auto result = store_->post(request);
  if (result.delivery == protocol::Delivery::fenced_out) {
    return read_post(answered(std::move(exchange), 409,
                              protocol::fenced_out_json(*request.fence_epoch, result.state.temporal_epoch)),
                     TransportOutcome::FencedOut, what);
  }
  if (protocol::is_refusal(result.delivery)) {
    const auto refusal = protocol::refusal_error(result.delivery);
    return read_post(answered(std::move(exchange), refusal.http_status, refusal.to_json()), TransportOutcome::Rejected,
                     what);
  }
  // Committed; with drop_ack the answer is withheld, as X-Drop-Ack has the
  // service close the connection instead of answering.
  if (r.drop_ack) return read_post(std::move(exchange), TransportOutcome::AckUnknown, what);
  return read_post(
      answered(std::move(exchange), 200,
               protocol::post_json(request, result.delivery, result.state, options_.boot_id, options_.mode)),
      TransportOutcome::AckReceived, what);
}

StatusExchange InProcessRemote::status(const std::string& operation_id, std::int64_t logical_time_s) {
  const std::string what = "GET /status/" + operation_id;
  const auto headers = protocol::logical_time_headers(logical_time_s);
  auto exchange = sent("GET", "/status/" + operation_id, headers);
  const auto request =
      parsed_or_throw(protocol::parse_status_request(operation_id, {headers.begin(), headers.end()}), what);
  return read_status(answered(std::move(exchange), 200,
                              protocol::snapshot_json(operation_id, request.evaluation_time_s,
                                                      store_->read(operation_id), options_.boot_id, options_.mode)),
                     what);
}

GcExchange InProcessRemote::gc(const std::string& operation_id, std::int64_t logical_time_s) {
  const std::string what = "POST /maintenance/gc/" + operation_id;
  const auto headers = protocol::logical_time_headers(logical_time_s);
  auto exchange = sent("POST", "/maintenance/gc/" + operation_id, headers);
  const auto request =
      parsed_or_throw(protocol::parse_gc_request(operation_id, {headers.begin(), headers.end()}), what);
  return read_gc(answered(std::move(exchange), 200, protocol::gc_json(request, store_->gc(request))), what);
}

HealthExchange InProcessRemote::health() {
  // What does not change until a restart is written once; the counts are
  // read from the store on each call.
  if (health_body_.is_null()) {
    health_body_ = {{"status", "ok"},
                    {"service", "remote-effect (in-process)"},
                    {"boot_id", options_.boot_id},
                    {"state_db", options_.state_file ? json(options_.state_file->string()) : json(":memory:")},
                    {"default_ttl_seconds", options_.default_ttl_s},
                    {"sync", options_.state_file ? "normal" : "none"},
                    {"idempotency_mode", protocol::dedupe_mode_name(options_.mode)},
                    {"clock", protocol::clock_source_name(protocol::ClockSource::logical)},
                    {"wall_clock_s", nullptr},
                    {"durable_idempotency_records", 0},
                    {"temporal_epoch", 0},
                    {"schema_version", protocol::Store::kSchemaVersion},
                    {"version", build_info::kVersion},
                    {"git_commit", build_info::kGitCommit},
                    {"build_type", build_info::kBuildType},
                    {"sqlite_version", protocol::Store::sqlite_version()}};
  }
  const auto totals = store_->totals();
  json body = health_body_;
  body["durable_idempotency_records"] = totals.durable_idempotency_records;
  body["temporal_epoch"] = totals.temporal_epoch;
  return read_health(std::move(body), "GET /health");
}

OutboxRow& InProcessOutbox::row_to_write(const char* what, const std::string& operation_id, bool needs_outbox_row) {
  const auto it = rows_.find(operation_id);
  if (it == rows_.end() || (needs_outbox_row && it->second.status == OutboxStatus::Absent)) {
    throw InfrastructureError(std::string("outbox: ") + what + " changed 0 rows for operation " + operation_id +
                              " (expected 1)");
  }
  return it->second;
}

void InProcessOutbox::declare_operation(const std::string& operation_id, std::int64_t business_version) {
  if (rows_.contains(operation_id)) {
    // The business table's primary key refuses a second row.
    throw InfrastructureError("outbox: declare_operation: operation " + operation_id + " is already declared");
  }
  OutboxRow row;
  row.operation_id = operation_id;
  row.business_version = business_version;
  rows_.emplace(operation_id, std::move(row));
}

OutboxRow InProcessOutbox::commit_operation(const std::string& operation_id, const std::string& idempotency_key,
                                            std::int64_t ttl_s) {
  const auto it = rows_.find(operation_id);
  // As commit_business: only an operation this call moves from absent to committed.
  if (it == rows_.end() || it->second.business_state != BusinessState::Absent) {
    throw InfrastructureError("outbox: commit_operation changed 0 rows for operation " + operation_id +
                              " (expected 1)");
  }
  auto& row = it->second;
  row.business_state = BusinessState::Committed;
  ++row.business_version;
  row.idempotency_key = idempotency_key;
  row.ttl_s = ttl_s;
  row.status = OutboxStatus::Pending;
  return row;
}

void InProcessOutbox::record_attempt(const std::string& operation_id, std::int64_t logical_time_s) {
  auto& row = row_to_write("record_attempt", operation_id, true);
  ++row.delivery_attempts;
  if (!row.key_created_at_s) row.key_created_at_s = logical_time_s;
  if (!row.key_expires_at_s) row.key_expires_at_s = logical_time_s + row.ttl_s;
}

void InProcessOutbox::record_outcome(const std::string& operation_id, TransportOutcome outcome, bool delivered,
                                     std::int64_t logical_time_s) {
  auto& row = row_to_write("record_outcome", operation_id, true);
  row.last_transport_outcome = std::string(to_string(outcome));
  if (delivered) {
    row.status = OutboxStatus::Delivered;
    if (!row.delivered_at_s) row.delivered_at_s = logical_time_s;
  }
}

void InProcessOutbox::mark_delivered(const std::string& operation_id, std::int64_t logical_time_s) {
  auto& row = row_to_write("mark_delivered", operation_id, true);
  row.status = OutboxStatus::Delivered;
  if (!row.delivered_at_s) row.delivered_at_s = logical_time_s;
}

OutboxRow InProcessOutbox::read(const std::string& operation_id) {
  const auto it = rows_.find(operation_id);
  if (it == rows_.end()) throw InfrastructureError("outbox: no business operation " + operation_id);
  return it->second;
}

}  // namespace skewbench::infra
