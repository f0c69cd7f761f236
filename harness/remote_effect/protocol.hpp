#pragma once

// The remote-effect wire protocol and its rules, written once and free of
// sockets, SQLite and clocks: what a client sends (post_effect_headers,
// logical_time_headers), how the service reads it (parse_*), the expiry,
// dedupe, fence and GC rules, and the JSON answers. Every function takes the
// caller's logical time as an argument; nothing reads the system clock.
// The service's HTTP layer (service.cpp) and store (store.cpp), the driver's
// HTTP client (infra/http_remote.cpp) and the unit tests' FakeRemote all use
// these functions instead of spelling the protocol out themselves.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/vocabulary.hpp"

namespace skewbench::remote_effect {

// Wire names, kept exactly as the published service spells them.
inline constexpr std::string_view kOperationIdHeader = "X-Operation-Id";
inline constexpr std::string_view kIdempotencyKeyHeader = "Idempotency-Key";
inline constexpr std::string_view kTtlHeader = "X-Idempotency-TTL";
inline constexpr std::string_view kDropAckHeader = "X-Drop-Ack";
inline constexpr std::string_view kLogicalTimeHeader = "X-Logical-Time";
inline constexpr std::string_view kRequireFenceHeader = "X-Require-Temporal-Fence";
inline constexpr std::string_view kExpectedEpochHeader = "X-Expected-Temporal-Epoch";

// The error names of refusals, as they appear in the JSON body's "error".
inline constexpr std::string_view kErrorEpochMismatch = "temporal_epoch_mismatch";
inline constexpr std::string_view kErrorInvalidFence = "invalid_temporal_fence";
inline constexpr std::string_view kErrorInvalidEpoch = "invalid_expected_temporal_epoch";
inline constexpr std::string_view kErrorMissingEpoch = "missing_expected_temporal_epoch";
inline constexpr std::string_view kErrorBadLogicalTime = "invalid_or_missing_logical_time";

// The delivery named in a 409 answer to a POST that the temporal fence refused.
inline constexpr std::string_view kDeliveryFencedOut = "fenced_out";

// The temporal epoch of a fresh state file.
inline constexpr std::int64_t kFirstTemporalEpoch = 1;

inline constexpr std::size_t kMaxHeaderValueBytes = 256;
inline constexpr std::size_t kMaxBodyBytes = 64 * 1024;

// A request without X-Logical-Time is clock-less, as every request to a
// service without a clock is: a stored key protects its operation for as long
// as it is stored, and the key such a POST writes never expires. The file
// keeps these two values where a time would be; answers write them as null.
// Neither is a time a request may carry: X-Logical-Time is above
// kNoLogicalTime, and now + TTL below kNeverExpires.
inline constexpr std::int64_t kNoLogicalTime = std::numeric_limits<std::int64_t>::min();
inline constexpr std::int64_t kNeverExpires = std::numeric_limits<std::int64_t>::max();

// A key is active strictly before its expiry: at exactly expires_at it has
// expired. Both values are seconds of the caller's logical epoch. A key that
// never expires is active at every time.
constexpr bool is_active(std::int64_t now_s, std::int64_t expires_at_s) {
  return expires_at_s == kNeverExpires || now_s < expires_at_s;
}

// Garbage collection removes a record at now_s when expires_at_s <= now_s: a
// record exactly at its expiry is collected (the complement of is_active).
constexpr bool is_collectable(std::int64_t now_s, std::int64_t expires_at_s) { return !is_active(now_s, expires_at_s); }

// The epoch after a collection: one more when anything was removed, else unchanged.
constexpr std::int64_t epoch_after_gc(std::int64_t epoch_before, std::int64_t removed_records) {
  return removed_records > 0 ? epoch_before + 1 : epoch_before;
}

// How the service remembers which operation holds a key.
enum class DedupeMode {
  durable,   // in the SQLite file, with the effects
  volatile_  // in process memory only: gone after a restart
};
inline constexpr auto kDedupeModes =
    vocabulary<DedupeMode>({{DedupeMode::durable, "durable"}, {DedupeMode::volatile_, "volatile"}});
// The mode of a service started without --dedupe, and of a scenario that names none.
inline constexpr DedupeMode kDefaultDedupeMode = DedupeMode::durable;
inline std::string_view dedupe_mode_name(DedupeMode mode) { return kDedupeModes.name(mode); }
inline std::optional<DedupeMode> parse_dedupe_mode(std::string_view text) { return kDedupeModes.parse(text); }

// Whose clock gives a request its time. logical: the caller's X-Logical-Time
// (absent: the request is clock-less). system: the service's own wall clock,
// read once as the request arrives; X-Logical-Time is ignored, and every other
// rule is the same. A process started under libfaketime reads the time the
// harness writes for it (docs/real-clocks.md).
enum class ClockSource { logical, system };
inline constexpr auto kClockSources =
    vocabulary<ClockSource>({{ClockSource::logical, "logical"}, {ClockSource::system, "system"}});
inline std::string_view clock_source_name(ClockSource clock) { return kClockSources.name(clock); }

// How many effects an operation has, as its snapshot's "status" names it.
enum class OperationStatus {
  absent,     // no effect
  committed,  // exactly one
  conflict,   // two or more: the operation took effect more than once
};
inline constexpr auto kOperationStatuses = vocabulary<OperationStatus>({{OperationStatus::absent, "absent"},
                                                                        {OperationStatus::committed, "committed"},
                                                                        {OperationStatus::conflict, "conflict"}});
constexpr OperationStatus operation_status(std::size_t effect_count) {
  if (effect_count == 0) return OperationStatus::absent;
  return effect_count == 1 ? OperationStatus::committed : OperationStatus::conflict;
}
// "absent", "committed" or "conflict".
inline std::string_view status_name(std::size_t effect_count) {
  return kOperationStatuses.name(operation_status(effect_count));
}

// Parses a full-string base-10 int64: an optional '-' and digits, nothing else
// (no '+', no spaces, no trailing junk), and no overflow.
std::optional<std::int64_t> parse_int64(std::string_view text);

// True when the bytes are well-formed UTF-8 (no overlong forms, no surrogates,
// nothing above U+10FFFF).
bool is_valid_utf8(std::string_view text);

// True when the value is at most kMaxHeaderValueBytes long, valid UTF-8, and
// has no control characters (bytes below 0x20, and 0x7f).
bool is_valid_header_value(std::string_view value);

// The integer protocol headers (X-Logical-Time, X-Idempotency-TTL, X-Drop-Ack,
// X-Require-Temporal-Fence, X-Expected-Temporal-Epoch) must be written as
// "Name: value" or "Name:value" with no other space or tab around the value.
// HTTP strips that whitespace before a handler sees the value, so the rule is
// checked on the request head as received. Returns the first header that
// breaks it, or nullopt.
std::optional<std::string> find_padded_integer_header(std::string_view request_head);

// True when a header line of the head (any line after the request line and
// before the blank line that ends the head) starts with a space or a tab: the
// obsolete line folding that RFC 9112 section 5.2 lets a server reject with
// 400, which remote-effect does rather than guess what the folded line meant.
bool has_obsolete_line_folding(std::string_view request_head);

// Case-insensitive header names, several values per name, as received.
struct CaseInsensitiveLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const;
};
using Headers = std::multimap<std::string, std::string, CaseInsensitiveLess>;

// A refusal: the HTTP status and the JSON body {"error": ..., [header], [detail]}.
struct RequestError {
  int http_status = 400;
  std::string error;                  // snake_case reason
  std::optional<std::string> header;  // the offending header, when one is to blame
  std::optional<std::string> detail;  // a sentence for a human

  nlohmann::json to_json() const;
};

// POST /effects, validated.
struct PostRequest {
  std::string operation_id;
  std::string idempotency_key;
  std::int64_t logical_time_s = 0;
  std::int64_t ttl_s = 0;
  std::int64_t expires_at_s = 0;  // logical_time_s + ttl_s, checked for overflow
  // Sent without X-Logical-Time: logical_time_s is kNoLogicalTime, ttl_s 0
  // and expires_at_s kNeverExpires.
  bool clockless = false;
  bool drop_ack = false;
  std::string body_sha256;  // hex SHA-256 of the body (the empty body has one too)
  // X-Require-Temporal-Fence: 1 with X-Expected-Temporal-Epoch: N, else nullopt.
  std::optional<std::int64_t> fence_epoch;
};

// GET /status/{operation_id}, validated.
struct StatusRequest {
  std::string operation_id;
  std::int64_t evaluation_time_s = 0;  // kNoLogicalTime when clockless
  bool clockless = false;              // sent without X-Logical-Time
};

template <typename T>
using Parsed = std::variant<T, RequestError>;

// POST /maintenance/gc/{operation_id}, validated.
struct GcRequest {
  std::string operation_id;
  std::int64_t logical_time_s = 0;
};

// request_head: the request line and headers as received (for
// find_padded_integer_header); empty when unknown.
Parsed<PostRequest> parse_post_request(const Headers& headers, std::string_view body, std::int64_t default_ttl_s,
                                       std::string_view request_head = {});

// operation_id is the decoded path segment after "/status/".
Parsed<StatusRequest> parse_status_request(std::string_view operation_id, const Headers& headers,
                                           std::string_view request_head = {});

// operation_id is the decoded path segment after "/maintenance/gc/".
Parsed<GcRequest> parse_gc_request(std::string_view operation_id, const Headers& headers,
                                   std::string_view request_head = {});

// A request as a service on its own clock reads it: every X-Logical-Time is
// removed, from the headers and from the head as received (so a padded one
// is not refused either), and now_s is put in its place.
struct OwnClockRequest {
  Headers headers;
  std::string request_head;
};
OwnClockRequest on_own_clock(Headers headers, std::string_view request_head, std::int64_t now_s);

// The temporal fence: nullopt when the POST may proceed (no fence, or the
// expected epoch equals the current one), else the 409 refusal.
std::optional<RequestError> check_fence(const std::optional<std::int64_t>& fence_epoch, std::int64_t current_epoch);

// The JSON body of a 409 fence refusal.
nlohmann::json fenced_out_json(std::int64_t expected_epoch, std::int64_t current_epoch);

// What a client sends as POST /effects.
// The amount every POST charges unless its step names another.
inline constexpr std::int64_t kDefaultAmount = 1000;

struct PostEffect {
  std::string operation_id;
  std::string idempotency_key;
  std::int64_t ttl_s = 60;
  std::int64_t logical_time_s = 0;
  bool drop_ack = false;
  std::string body;
  // When set, the POST carries the temporal fence (X-Require-Temporal-Fence: 1,
  // X-Expected-Temporal-Epoch: N) and the service refuses it on any other epoch.
  std::optional<std::int64_t> expected_temporal_epoch;
  // What the request charges: the {amount} of a service of its own wire. A
  // request with another amount carries another body (see body_with_amount).
  std::int64_t amount = kDefaultAmount;
};
// Its protocol headers, in the order the driver writes them.
std::vector<std::pair<std::string, std::string>> post_effect_headers(const PostEffect& request);

// The one header of GET /status/{id} and POST /maintenance/gc/{id}.
std::vector<std::pair<std::string, std::string>> logical_time_headers(std::int64_t logical_time_s);

// The idempotency record currently stored for a key.
struct IdempotencyRecord {
  std::string idempotency_key;
  std::string operation_id;
  std::int64_t created_at_s = 0;
  std::int64_t expires_at_s = 0;
  std::string body_sha256;
};

enum class Delivery {
  applied,                    // new effect; the key's record is (re)written
  deduplicated,               // active key, same operation, same body: nothing new
  refused_other_operation,    // 409: active key held by another operation
  refused_different_payload,  // 422: active key, same operation, different body
  fenced_out,                 // 409: the temporal fence's epoch is not the current one
};

// True for the deliveries that write nothing and are answered with an error.
constexpr bool is_refusal(Delivery delivery) {
  return delivery == Delivery::refused_other_operation || delivery == Delivery::refused_different_payload ||
         delivery == Delivery::fenced_out;
}

inline constexpr auto kDeliveries =
    vocabulary<Delivery>({{Delivery::applied, "applied"},
                          {Delivery::deduplicated, "deduplicated"},
                          {Delivery::refused_other_operation, "refused_other_operation"},
                          {Delivery::refused_different_payload, "refused_different_payload"},
                          {Delivery::fenced_out, kDeliveryFencedOut}});
inline std::string_view delivery_name(Delivery delivery) { return kDeliveries.name(delivery); }

// The whole idempotency rule, judged at the request's logical time.
Delivery decide(const std::optional<IdempotencyRecord>& existing, const PostRequest& request);

// The refusal body for 409 and 422.
RequestError refusal_error(Delivery delivery);

struct Effect {
  std::int64_t effect_id = 0;
  std::string operation_id;
  std::string idempotency_key;
  std::int64_t created_at_s = 0;
};

// What the store holds about one operation.
struct OperationState {
  std::vector<Effect> effects;             // by effect_id
  std::vector<IdempotencyRecord> records;  // by idempotency_key
  std::int64_t post_requests = 0;
  std::int64_t ack_drops = 0;
  std::int64_t durable_idempotency_records = 0;  // of this operation, in the SQLite file
  std::int64_t temporal_epoch = kFirstTemporalEpoch;
};

// The /status snapshot, evaluated at evaluation_time_s (active_at_query uses
// the strict expiry rule); at kNoLogicalTime every stored record is active and
// "evaluation_time" is null.
nlohmann::json snapshot_json(std::string_view operation_id, std::int64_t evaluation_time_s, const OperationState& state,
                             std::string_view boot_id, DedupeMode mode);

// The 200 answer to an accepted POST (applied or deduplicated): the snapshot
// at the request's logical time, the delivery, the key and its TTL.
nlohmann::json post_json(const PostRequest& request, Delivery delivery, const OperationState& state,
                         std::string_view boot_id, DedupeMode mode);

// What a collection did, and its JSON answer.
struct GcResult {
  std::int64_t removed_records = 0;
  std::int64_t temporal_epoch_before = kFirstTemporalEpoch;
  std::int64_t temporal_epoch_after = kFirstTemporalEpoch;
};
nlohmann::json gc_json(const GcRequest& request, const GcResult& result);

}  // namespace skewbench::remote_effect
