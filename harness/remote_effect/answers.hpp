#pragma once

// The answers of the protocol as a client reads them: one struct per answer,
// one reader per struct, next to the writers in protocol.hpp that produce
// them (read_status_answer(snapshot_json(...)) gives back what the service
// wrote; the round trip is tested).
//
// A reader is tolerant of absence and strict about form: a field the answer
// does not carry stays nullopt ("not observed"), because services written to
// the same protocol name or omit fields differently; a field that is present
// with the wrong type, or a word outside its vocabulary, is an AnswerError
// naming the field. What a caller cannot do without, it requires itself and
// says so.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "remote_effect/protocol.hpp"

namespace skewbench::remote_effect {

// The largest count a service may report (of effects, requests, records,
// epochs): 2^53, the largest integer that every JSON reader, one that reads
// numbers as doubles too, holds exactly.
inline constexpr std::int64_t kMaxCount = std::int64_t{1} << 53;

// Whether `value` is a count: a JSON integer from 0 to kMaxCount. A reader
// refuses any other value of a count's field (AnswerError), so that 2^64 - 1
// is never read as -1.
bool is_count(const nlohmann::json& value);

// An answer the client cannot read: not an object, a field of the wrong type,
// an unknown word.
class AnswerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// GET /status/{id}: the operation's state evaluated at a time. Also the
// snapshot part of a POST answer. The effect and record lists stay as the
// service wrote them (the client keeps them in the evidence, and reads none).
struct StatusAnswer {
  std::optional<std::string> operation_id;
  // "evaluation_time"; services of the same protocol also call it "logical_time".
  std::optional<std::int64_t> evaluation_time_s;
  std::optional<OperationStatus> status;
  std::optional<std::int64_t> effect_count;
  std::optional<std::int64_t> post_requests;
  std::optional<std::int64_t> ack_drops;
  std::optional<std::int64_t> active_idempotency_records;
  std::optional<std::int64_t> durable_idempotency_records;
  std::optional<std::int64_t> temporal_epoch;
  std::optional<DedupeMode> idempotency_mode;
  std::optional<std::string> boot_id;

  bool operator==(const StatusAnswer&) const = default;
};

// POST /effects: a 200 (applied or deduplicated, with the snapshot after the
// request), or a refusal (409, 422) whose "error" names the rule; a fenced-out
// refusal also names the epochs.
struct PostAnswer {
  std::optional<Delivery> delivery;
  std::optional<std::string> error;
  std::optional<std::string> idempotency_key;
  std::optional<std::int64_t> ttl_s;  // "ttl_seconds"
  std::optional<std::int64_t> expected_temporal_epoch;
  std::optional<std::int64_t> current_temporal_epoch;
  StatusAnswer snapshot;

  bool operator==(const PostAnswer&) const = default;
};

// POST /maintenance/gc/{id}.
struct GcAnswer {
  std::optional<std::string> operation_id;
  std::optional<std::int64_t> logical_time_s;  // "logical_time"
  std::optional<std::int64_t> removed_records;
  std::optional<std::int64_t> temporal_epoch_before;
  std::optional<std::int64_t> temporal_epoch_after;

  bool operator==(const GcAnswer&) const = default;
};

// GET /health: the fields a client acts on (the rest stays in the raw body).
struct HealthAnswer {
  std::optional<std::string> service;
  std::optional<std::string> boot_id;
  std::optional<DedupeMode> idempotency_mode;
  std::optional<std::int64_t> temporal_epoch;
  std::optional<ClockSource> clock;          // whose clock gives a request its time
  std::optional<std::int64_t> wall_clock_s;  // the process's own clock as it answered

  bool operator==(const HealthAnswer&) const = default;
};

// Each throws AnswerError when `body` is not a JSON object or a present field
// is malformed.
StatusAnswer read_status_answer(const nlohmann::json& body);
PostAnswer read_post_answer(const nlohmann::json& body);
GcAnswer read_gc_answer(const nlohmann::json& body);
HealthAnswer read_health_answer(const nlohmann::json& body);

}  // namespace skewbench::remote_effect
