#include "remote_effect/logic.hpp"

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
                       "header values are at most 256 bytes with no control characters");
  }
  return std::optional<std::string>{first->second};
}

}  // namespace

std::string_view status_name(std::size_t effect_count) {
  if (effect_count == 0) return "absent";
  if (effect_count == 1) return "committed";
  return "conflict";
}

std::optional<std::int64_t> parse_int64(std::string_view text) {
  if (text.empty() || text.front() == '+') return std::nullopt;
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, 10);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

bool is_valid_header_value(std::string_view value) {
  if (value.size() > kMaxHeaderValueBytes) return false;
  return std::none_of(value.begin(), value.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
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

Parsed<PostRequest> parse_post_request(const Headers& headers, std::string_view body, std::int64_t default_ttl_s) {
  static constexpr std::array kProtocolHeaders = {kOperationIdHeader, kIdempotencyKeyHeader, kLogicalTimeHeader,
                                                  kTtlHeader, kDropAckHeader};
  std::array<std::optional<std::string>, kProtocolHeaders.size()> values;
  for (std::size_t i = 0; i < kProtocolHeaders.size(); ++i) {
    auto value = single_header(headers, kProtocolHeaders[i]);
    if (auto* error = std::get_if<RequestError>(&value)) return *error;
    values[i] = std::get<std::optional<std::string>>(std::move(value));
  }
  const auto& [operation_id, key, logical_time, ttl, drop_ack] = values;

  if (!operation_id || operation_id->empty()) {
    return bad_request("missing_operation_id", std::string(kOperationIdHeader));
  }
  if (!key || key->empty()) {
    return bad_request("missing_idempotency_key", std::string(kIdempotencyKeyHeader));
  }

  PostRequest request;
  request.operation_id = *operation_id;
  request.idempotency_key = *key;

  const auto now_s = logical_time ? parse_int64(*logical_time) : std::nullopt;
  if (!now_s) {
    return bad_request("invalid_or_missing_logical_time", std::string(kLogicalTimeHeader),
                       "X-Logical-Time must be a base-10 int64 of logical seconds");
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
  if (request.logical_time_s > std::numeric_limits<std::int64_t>::max() - request.ttl_s) {
    return bad_request("invalid_ttl", std::string(kTtlHeader), "logical time plus TTL overflows int64");
  }
  request.expires_at_s = request.logical_time_s + request.ttl_s;

  if (!drop_ack || *drop_ack == "0") {
    request.drop_ack = false;
  } else if (*drop_ack == "1") {
    request.drop_ack = true;
  } else {
    return bad_request("invalid_drop_ack", std::string(kDropAckHeader), "X-Drop-Ack must be 0 or 1");
  }

  request.body_sha256 = sha256_hex(body);
  return request;
}

Parsed<StatusRequest> parse_status_request(std::string_view operation_id, const Headers& headers) {
  auto logical_time = single_header(headers, kLogicalTimeHeader);
  if (auto* error = std::get_if<RequestError>(&logical_time)) return *error;
  const auto& time_text = std::get<std::optional<std::string>>(logical_time);
  const auto now_s = time_text ? parse_int64(*time_text) : std::nullopt;
  if (!now_s) {
    return bad_request("invalid_or_missing_logical_time", std::string(kLogicalTimeHeader),
                       "X-Logical-Time must be a base-10 int64 of logical seconds");
  }
  if (operation_id.empty()) return bad_request("missing_operation_id");
  if (!is_valid_header_value(operation_id)) {
    return bad_request("invalid_operation_id", std::nullopt,
                       "operation ids are at most 256 bytes with no control characters");
  }
  return StatusRequest{std::string(operation_id), *now_s};
}

std::string_view delivery_name(Delivery delivery) {
  switch (delivery) {
    case Delivery::applied:
      return "applied";
    case Delivery::deduplicated:
      return "deduplicated";
    case Delivery::refused_other_operation:
      return "refused_other_operation";
    case Delivery::refused_different_payload:
      return "refused_different_payload";
  }
  return "unknown";
}

Delivery decide(const std::optional<IdempotencyRecord>& existing, const PostRequest& request) {
  if (!existing || !is_active(request.logical_time_s, existing->expires_at_s)) {
    return Delivery::applied;
  }
  if (existing->operation_id != request.operation_id) return Delivery::refused_other_operation;
  if (existing->body_sha256 != request.body_sha256) return Delivery::refused_different_payload;
  return Delivery::deduplicated;
}

RequestError refusal_error(Delivery delivery) {
  if (delivery == Delivery::refused_other_operation) {
    return RequestError{409, "active_idempotency_key_reused_for_different_operation", std::nullopt, std::nullopt};
  }
  return RequestError{422, "idempotency_key_reused_with_different_payload", std::nullopt, std::nullopt};
}

nlohmann::json snapshot_json(std::string_view operation_id, std::int64_t evaluation_time_s, const OperationState& state,
                             std::string_view boot_id) {
  nlohmann::json effects = nlohmann::json::array();
  for (const auto& effect : state.effects) {
    effects.push_back({{"effect_id", effect.effect_id},
                       {"operation_id", effect.operation_id},
                       {"idempotency_key", effect.idempotency_key},
                       {"created_at", effect.created_at_s}});
  }
  nlohmann::json records = nlohmann::json::array();
  std::int64_t active_records = 0;
  for (const auto& record : state.records) {
    const bool active = is_active(evaluation_time_s, record.expires_at_s);
    if (active) ++active_records;
    records.push_back({{"idempotency_key", record.idempotency_key},
                       {"operation_id", record.operation_id},
                       {"created_at", record.created_at_s},
                       {"expires_at", record.expires_at_s},
                       {"active_at_query", active}});
  }
  return {{"operation_id", operation_id},
          {"evaluation_time", evaluation_time_s},
          {"status", status_name(state.effects.size())},
          {"effect_count", state.effects.size()},
          {"effects", std::move(effects)},
          {"idempotency_records", std::move(records)},
          {"active_idempotency_records", active_records},
          {"post_requests", state.post_requests},
          {"ack_drops", state.ack_drops},
          {"boot_id", boot_id}};
}

}  // namespace skewbench::remote_effect
