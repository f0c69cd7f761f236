#include "remote_effect/protocol.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <iterator>
#include <limits>

#include "common/digest.hpp"

namespace skewbench::remote_effect {
namespace {

char lower_ascii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

RequestError bad_request(std::string error, std::optional<std::string> header = std::nullopt,
                         std::optional<std::string> detail = std::nullopt) {
  return RequestError{400, std::move(error), std::move(header), std::move(detail)};
}

// The single value of a protocol header, nullopt when absent, or the reason it
// cannot be used (repeated, too long, control characters).
using HeaderValue = std::variant<std::optional<std::string>, RequestError>;

HeaderValue single_header(const Headers& headers, std::string_view name) {
  const auto [first, last] = headers.equal_range(name);
  if (first == last) return std::optional<std::string>{};
  if (std::next(first) != last) {
    return bad_request("duplicate_header", std::string(name), "the header may appear at most once");
  }
  if (!is_valid_header_value(first->second)) {
    return bad_request("invalid_header_value", std::string(name),
                       "header values are at most 256 bytes of valid UTF-8 with no control characters");
  }
  return std::optional<std::string>{first->second};
}

constexpr std::array kIntegerHeaders = {kLogicalTimeHeader, kTtlHeader, kDropAckHeader, kRequireFenceHeader,
                                        kExpectedEpochHeader};

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower_ascii(x) == lower_ascii(y); });
}

bool is_space_or_tab(char c) { return c == ' ' || c == '\t'; }

// A padded value: more than one space (or any tab) before it, or any space or
// tab after it. An empty value is not padded (it is refused as invalid).
bool is_padded(std::string_view raw_value) {
  if (!raw_value.empty() && raw_value.front() == ' ') raw_value.remove_prefix(1);
  if (raw_value.empty()) return false;
  return is_space_or_tab(raw_value.front()) || is_space_or_tab(raw_value.back());
}

std::optional<RequestError> padded_header_error(std::string_view request_head) {
  if (auto name = find_padded_integer_header(request_head)) {
    return bad_request("invalid_header_value", *name, "integer headers take no spaces or tabs around the value");
  }
  return std::nullopt;
}

// True when the raw head has a header line `name:` (any case): cpp-httplib
// leaves a header with an empty value out of the parsed ones, and an empty
// X-Logical-Time is a bad time, not a request without one.
bool head_names_header(std::string_view request_head, std::string_view name) {
  while (!request_head.empty()) {
    const auto end = request_head.find('\n');
    const std::string_view line = request_head.substr(0, end);
    request_head.remove_prefix(end == std::string_view::npos ? request_head.size() : end + 1);
    const auto colon = line.find(':');
    if (colon != std::string_view::npos && equals_ignoring_case(line.substr(0, colon), name)) return true;
  }
  return false;
}

// X-Logical-Time as sent: nullopt when absent, "" when sent empty.
HeaderValue logical_time_text(const Headers& headers, std::string_view request_head) {
  auto value = single_header(headers, kLogicalTimeHeader);
  if (const auto* text = std::get_if<std::optional<std::string>>(&value);
      text && !*text && head_names_header(request_head, kLogicalTimeHeader)) {
    return std::optional<std::string>(std::string());
  }
  return value;
}

// Reads X-Logical-Time: nullopt when the request has none (a clock-less
// request), an error when it is there but not a base-10 int64.
Parsed<std::optional<std::int64_t>> optional_logical_time(const Headers& headers, std::string_view request_head) {
  auto value = logical_time_text(headers, request_head);
  if (auto* error = std::get_if<RequestError>(&value)) return *error;
  const auto& text = std::get<std::optional<std::string>>(value);
  if (!text) return std::optional<std::int64_t>{};
  const auto now_s = parse_int64(*text);
  if (!now_s || *now_s == kNoLogicalTime) {
    return bad_request(std::string(kErrorBadLogicalTime), std::string(kLogicalTimeHeader),
                       "X-Logical-Time must be a base-10 int64 of logical seconds, above -9223372036854775808");
  }
  return now_s;
}

// Reads X-Logical-Time where a time is required (garbage collection).
Parsed<std::int64_t> logical_time(const Headers& headers, std::string_view request_head) {
  auto now_s = optional_logical_time(headers, request_head);
  if (auto* error = std::get_if<RequestError>(&now_s)) return *error;
  if (const auto& value = std::get<std::optional<std::int64_t>>(now_s)) return *value;
  return bad_request(std::string(kErrorBadLogicalTime), std::string(kLogicalTimeHeader),
                     "X-Logical-Time is required: garbage collection removes the keys expired at a time");
}

// An operation id taken from a path: same rules as a header value.
std::optional<RequestError> path_operation_id_error(std::string_view operation_id) {
  if (operation_id.empty()) return bad_request("missing_operation_id");
  if (!is_valid_header_value(operation_id)) {
    return bad_request("invalid_operation_id", std::nullopt,
                       "operation ids are at most 256 bytes of valid UTF-8 with no control characters");
  }
  return std::nullopt;
}

// X-Require-Temporal-Fence and X-Expected-Temporal-Epoch.
Parsed<std::optional<std::int64_t>> fence_epoch(const std::optional<std::string>& require,
                                                const std::optional<std::string>& expected) {
  std::optional<std::int64_t> epoch;
  if (expected) {
    epoch = parse_int64(*expected);
    if (!epoch) {
      return bad_request(std::string(kErrorInvalidEpoch), std::string(kExpectedEpochHeader),
                         "X-Expected-Temporal-Epoch must be a base-10 int64");
    }
  }
  if (!require || *require == "0") return std::optional<std::int64_t>{};
  if (*require != "1") {
    return bad_request(std::string(kErrorInvalidFence), std::string(kRequireFenceHeader),
                       "X-Require-Temporal-Fence must be 0 or 1");
  }
  if (!epoch) {
    return bad_request(std::string(kErrorMissingEpoch), std::string(kExpectedEpochHeader),
                       "X-Require-Temporal-Fence: 1 needs X-Expected-Temporal-Epoch");
  }
  return epoch;
}

}  // namespace

std::optional<std::int64_t> parse_int64(std::string_view text) {
  if (text.empty() || text.front() == '+') return std::nullopt;
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, 10);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

bool is_valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xbf;  // the range of the second byte
    if (lead < 0x80) {
      ++i;
      continue;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      if (lead == 0xe0) low = 0xa0;   // overlong
      if (lead == 0xed) high = 0x9f;  // surrogates
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      if (lead == 0xf0) low = 0x90;   // overlong
      if (lead == 0xf4) high = 0x8f;  // above U+10FFFF
    } else {
      return false;
    }
    if (text.size() - i < length) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto byte = static_cast<unsigned char>(text[i + k]);
      if (byte < (k == 1 ? low : 0x80) || byte > (k == 1 ? high : 0xbf)) return false;
    }
    i += length;
  }
  return true;
}

bool is_valid_header_value(std::string_view value) {
  if (value.size() > kMaxHeaderValueBytes || !is_valid_utf8(value)) return false;
  return std::none_of(value.begin(), value.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

std::optional<std::string> find_padded_integer_header(std::string_view request_head) {
  while (!request_head.empty()) {
    const auto end = request_head.find('\n');
    std::string_view line = request_head.substr(0, end);
    request_head.remove_prefix(end == std::string_view::npos ? request_head.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const auto name = line.substr(0, colon);
    for (const auto header : kIntegerHeaders) {
      if (equals_ignoring_case(name, header) && is_padded(line.substr(colon + 1))) return std::string(header);
    }
  }
  return std::nullopt;
}

bool has_obsolete_line_folding(std::string_view request_head) {
  bool request_line = true;
  while (!request_head.empty()) {
    const auto end = request_head.find('\n');
    std::string_view line = request_head.substr(0, end);
    request_head.remove_prefix(end == std::string_view::npos ? request_head.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (request_line) {
      request_line = false;
      continue;
    }
    if (line.empty()) return false;  // the end of the head: a body may follow
    if (line.front() == ' ' || line.front() == '\t') return true;
  }
  return false;
}

OwnClockRequest on_own_clock(Headers headers, std::string_view request_head, std::int64_t now_s) {
  headers.erase(std::string(kLogicalTimeHeader));
  headers.emplace(std::string(kLogicalTimeHeader), std::to_string(now_s));
  std::string head;
  head.reserve(request_head.size());
  while (!request_head.empty()) {
    const auto end = request_head.find('\n');
    const std::string_view line = request_head.substr(0, end == std::string_view::npos ? request_head.size() : end + 1);
    request_head.remove_prefix(line.size());
    const auto colon = line.find(':');
    if (colon != std::string_view::npos && equals_ignoring_case(line.substr(0, colon), kLogicalTimeHeader)) continue;
    head.append(line);
  }
  return {std::move(headers), std::move(head)};
}

bool CaseInsensitiveLess::operator()(std::string_view a, std::string_view b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                      [](char x, char y) { return lower_ascii(x) < lower_ascii(y); });
}

nlohmann::json RequestError::to_json() const {
  nlohmann::json body = {{"error", error}};
  if (header) body["header"] = *header;
  if (detail) body["detail"] = *detail;
  return body;
}

namespace {

// The POST's logical time, TTL (the default when absent) and the key's expiry.
// Without X-Logical-Time the POST is clock-less: no time, no TTL (a TTL
// header is ignored), and the key it writes never expires.
std::optional<RequestError> read_key_lifetime(const std::optional<std::string>& logical_time,
                                              const std::optional<std::string>& ttl, std::int64_t default_ttl_s,
                                              PostRequest& request) {
  if (!logical_time) {
    request.clockless = true;
    request.logical_time_s = kNoLogicalTime;
    request.ttl_s = 0;
    request.expires_at_s = kNeverExpires;
    return std::nullopt;
  }
  const auto now_s = parse_int64(*logical_time);
  if (!now_s || *now_s == kNoLogicalTime) {
    return bad_request("invalid_or_missing_logical_time", std::string(kLogicalTimeHeader),
                       "X-Logical-Time must be a base-10 int64 of logical seconds, above -9223372036854775808");
  }
  request.logical_time_s = *now_s;
  if (ttl) {
    const auto ttl_s = parse_int64(*ttl);
    if (!ttl_s) {
      return bad_request("invalid_ttl", std::string(kTtlHeader),
                         "X-Idempotency-TTL must be a base-10 int64 of seconds");
    }
    request.ttl_s = *ttl_s;
  } else {
    request.ttl_s = default_ttl_s;
  }
  if (request.ttl_s <= 0) {
    return bad_request("invalid_ttl", std::string(kTtlHeader), "the TTL must be positive");
  }
  if (request.logical_time_s >= kNeverExpires - request.ttl_s) {
    return bad_request("invalid_ttl", std::string(kTtlHeader),
                       "logical time plus TTL must stay below 9223372036854775807");
  }
  request.expires_at_s = request.logical_time_s + request.ttl_s;
  return std::nullopt;
}

}  // namespace

Parsed<PostRequest> parse_post_request(const Headers& headers, std::string_view body, std::int64_t default_ttl_s,
                                       std::string_view request_head) {
  static constexpr std::array kProtocolHeaders = {kOperationIdHeader,  kIdempotencyKeyHeader, kLogicalTimeHeader,
                                                  kTtlHeader,          kDropAckHeader,        kRequireFenceHeader,
                                                  kExpectedEpochHeader};
  std::array<std::optional<std::string>, kProtocolHeaders.size()> values;
  for (std::size_t i = 0; i < kProtocolHeaders.size(); ++i) {
    auto value = kProtocolHeaders[i] == kLogicalTimeHeader ? logical_time_text(headers, request_head)
                                                           : single_header(headers, kProtocolHeaders[i]);
    if (auto* error = std::get_if<RequestError>(&value)) return *error;
    values[i] = std::get<std::optional<std::string>>(std::move(value));
  }
  const auto& [operation_id, key, logical_time, ttl, drop_ack, require_fence, expected_epoch] = values;
  if (auto error = padded_header_error(request_head)) return *error;

  if (!operation_id || operation_id->empty()) {
    return bad_request("missing_operation_id", std::string(kOperationIdHeader));
  }
  if (!key || key->empty()) {
    return bad_request("missing_idempotency_key", std::string(kIdempotencyKeyHeader));
  }

  PostRequest request;
  request.operation_id = *operation_id;
  request.idempotency_key = *key;

  if (auto error = read_key_lifetime(logical_time, ttl, default_ttl_s, request)) return *error;
  if (!drop_ack || *drop_ack == "0") {
    request.drop_ack = false;
  } else if (*drop_ack == "1") {
    request.drop_ack = true;
  } else {
    return bad_request("invalid_drop_ack", std::string(kDropAckHeader), "X-Drop-Ack must be 0 or 1");
  }

  auto fence = fence_epoch(require_fence, expected_epoch);
  if (auto* error = std::get_if<RequestError>(&fence)) return *error;
  request.fence_epoch = std::get<std::optional<std::int64_t>>(fence);

  request.body_sha256 = sha256_hex(body);
  return request;
}

Parsed<StatusRequest> parse_status_request(std::string_view operation_id, const Headers& headers,
                                           std::string_view request_head) {
  if (auto error = padded_header_error(request_head)) return *error;
  auto now_s = optional_logical_time(headers, request_head);
  if (auto* error = std::get_if<RequestError>(&now_s)) return *error;
  if (auto error = path_operation_id_error(operation_id)) return *error;
  const auto& time_s = std::get<std::optional<std::int64_t>>(now_s);
  return StatusRequest{.operation_id = std::string(operation_id),
                       .evaluation_time_s = time_s.value_or(kNoLogicalTime),
                       .clockless = !time_s};
}

Parsed<GcRequest> parse_gc_request(std::string_view operation_id, const Headers& headers,
                                   std::string_view request_head) {
  if (auto error = padded_header_error(request_head)) return *error;
  auto now_s = logical_time(headers, request_head);
  if (auto* error = std::get_if<RequestError>(&now_s)) return *error;
  if (auto error = path_operation_id_error(operation_id)) return *error;
  return GcRequest{.operation_id = std::string(operation_id), .logical_time_s = std::get<std::int64_t>(now_s)};
}

std::optional<RequestError> check_fence(const std::optional<std::int64_t>& fence_epoch, std::int64_t current_epoch) {
  if (!fence_epoch || *fence_epoch == current_epoch) return std::nullopt;
  return RequestError{409, std::string(kErrorEpochMismatch), std::nullopt, std::nullopt};
}

nlohmann::json fenced_out_json(std::int64_t expected_epoch, std::int64_t current_epoch) {
  return {{"error", kErrorEpochMismatch},
          {"delivery", kDeliveryFencedOut},
          {"expected_temporal_epoch", expected_epoch},
          {"current_temporal_epoch", current_epoch}};
}

nlohmann::json gc_json(const GcRequest& request, const GcResult& result) {
  return {{"operation_id", request.operation_id},
          {"logical_time", request.logical_time_s},
          {"removed_records", result.removed_records},
          {"temporal_epoch_before", result.temporal_epoch_before},
          {"temporal_epoch_after", result.temporal_epoch_after}};
}

std::vector<std::pair<std::string, std::string>> post_effect_headers(const PostEffect& request) {
  std::vector<std::pair<std::string, std::string>> headers = {
      {std::string(kOperationIdHeader), request.operation_id},
      {std::string(kIdempotencyKeyHeader), request.idempotency_key},
      {std::string(kTtlHeader), std::to_string(request.ttl_s)},
      {std::string(kLogicalTimeHeader), std::to_string(request.logical_time_s)},
      {std::string(kDropAckHeader), request.drop_ack ? "1" : "0"},
  };
  if (request.expected_temporal_epoch) {
    headers.emplace_back(std::string(kRequireFenceHeader), "1");
    headers.emplace_back(std::string(kExpectedEpochHeader), std::to_string(*request.expected_temporal_epoch));
  }
  return headers;
}

std::vector<std::pair<std::string, std::string>> logical_time_headers(std::int64_t logical_time_s) {
  return {{std::string(kLogicalTimeHeader), std::to_string(logical_time_s)}};
}

Delivery decide(const std::optional<IdempotencyRecord>& existing, const PostRequest& request) {
  // A clock-less POST has no time to judge expiry at: a stored key protects.
  if (!existing || (!request.clockless && !is_active(request.logical_time_s, existing->expires_at_s))) {
    return Delivery::applied;
  }
  if (existing->operation_id != request.operation_id) return Delivery::refused_other_operation;
  if (existing->body_sha256 != request.body_sha256) return Delivery::refused_different_payload;
  return Delivery::deduplicated;
}

RequestError refusal_error(Delivery delivery) {
  if (delivery == Delivery::fenced_out) {
    return RequestError{409, std::string(kErrorEpochMismatch), std::nullopt, std::nullopt};
  }
  if (delivery == Delivery::refused_other_operation) {
    return RequestError{409, "active_idempotency_key_reused_for_different_operation", std::nullopt, std::nullopt};
  }
  return RequestError{422, "idempotency_key_reused_with_different_payload", std::nullopt, std::nullopt};
}

namespace {

// A time as JSON, or null where it stands for "no time" (or "never").
nlohmann::json time_or_null(std::int64_t time_s, std::int64_t none_s) {
  return time_s == none_s ? nlohmann::json(nullptr) : nlohmann::json(time_s);
}

}  // namespace

nlohmann::json snapshot_json(std::string_view operation_id, std::int64_t evaluation_time_s, const OperationState& state,
                             std::string_view boot_id, DedupeMode mode) {
  const bool clockless = evaluation_time_s == kNoLogicalTime;
  nlohmann::json effects = nlohmann::json::array();
  for (const auto& effect : state.effects) {
    effects.push_back({{"effect_id", effect.effect_id},
                       {"operation_id", effect.operation_id},
                       {"idempotency_key", effect.idempotency_key},
                       {"created_at", time_or_null(effect.created_at_s, kNoLogicalTime)}});
  }
  nlohmann::json records = nlohmann::json::array();
  std::int64_t active_records = 0;
  for (const auto& record : state.records) {
    // Without a time every stored record protects its key.
    const bool active = clockless || is_active(evaluation_time_s, record.expires_at_s);
    if (active) ++active_records;
    records.push_back({{"idempotency_key", record.idempotency_key},
                       {"operation_id", record.operation_id},
                       {"created_at", time_or_null(record.created_at_s, kNoLogicalTime)},
                       {"expires_at", time_or_null(record.expires_at_s, kNeverExpires)},
                       {"active_at_query", active}});
  }
  return {{"operation_id", operation_id},
          {"evaluation_time", time_or_null(evaluation_time_s, kNoLogicalTime)},
          {"status", status_name(state.effects.size())},
          {"effect_count", state.effects.size()},
          {"effects", std::move(effects)},
          {"idempotency_records", std::move(records)},
          {"active_idempotency_records", active_records},
          {"post_requests", state.post_requests},
          {"ack_drops", state.ack_drops},
          {"idempotency_mode", dedupe_mode_name(mode)},
          {"durable_idempotency_records", state.durable_idempotency_records},
          {"temporal_epoch", state.temporal_epoch},
          {"boot_id", boot_id}};
}

nlohmann::json post_json(const PostRequest& request, Delivery delivery, const OperationState& state,
                         std::string_view boot_id, DedupeMode mode) {
  auto json = snapshot_json(request.operation_id, request.logical_time_s, state, boot_id, mode);
  json["delivery"] = delivery_name(delivery);
  json["idempotency_key"] = request.idempotency_key;
  json["ttl_seconds"] = request.clockless ? nlohmann::json(nullptr) : nlohmann::json(request.ttl_s);
  return json;
}

}  // namespace skewbench::remote_effect
