// The remote-effect service's decisions, tested without processes or sockets.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <variant>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include "common/digest.hpp"
#include "remote_effect/protocol.hpp"

namespace re = skewbench::remote_effect;

namespace {

re::Headers valid_post_headers() {
  return {
      {"X-Operation-Id", "op-1"}, {"Idempotency-Key", "key-1"}, {"X-Logical-Time", "100"}, {"X-Idempotency-TTL", "60"}};
}

re::RequestError post_error(const re::Headers& headers, std::string_view body = "") {
  auto parsed = re::parse_post_request(headers, body, 60);
  REQUIRE(std::holds_alternative<re::RequestError>(parsed));
  return std::get<re::RequestError>(parsed);
}

re::PostRequest post_ok(const re::Headers& headers, std::string_view body = "", std::int64_t default_ttl_s = 60) {
  auto parsed = re::parse_post_request(headers, body, default_ttl_s);
  if (const auto* error = std::get_if<re::RequestError>(&parsed)) {
    FAIL("refused: " << error->to_json().dump());
  }
  return std::get<re::PostRequest>(parsed);
}

re::Headers with(re::Headers headers, const std::string& name, const std::string& value) {
  headers.erase(name);
  headers.emplace(name, value);
  return headers;
}

re::Headers without(re::Headers headers, const std::string& name) {
  headers.erase(name);
  return headers;
}

re::PostRequest request_at(std::int64_t now_s, std::string operation_id, std::string body_sha256 = "body-a") {
  re::PostRequest request;
  request.operation_id = std::move(operation_id);
  request.idempotency_key = "key-1";
  request.logical_time_s = now_s;
  request.ttl_s = 60;
  request.expires_at_s = now_s + 60;
  request.body_sha256 = std::move(body_sha256);
  return request;
}

re::IdempotencyRecord record_expiring_at(std::int64_t expires_at_s, std::string operation_id,
                                         std::string body_sha256 = "body-a") {
  return re::IdempotencyRecord{"key-1", std::move(operation_id), expires_at_s - 60, expires_at_s,
                               std::move(body_sha256)};
}

}  // namespace

TEST_CASE("a key is active strictly before its expiry and expired at exactly expires_at") {
  CHECK(re::is_active(109, 110));
  CHECK_FALSE(re::is_active(110, 110));
  CHECK_FALSE(re::is_active(111, 110));
  CHECK(re::is_active(std::numeric_limits<std::int64_t>::min(), -5));
}

TEST_CASE("status is absent for no effect, committed for one and conflict for two or more") {
  CHECK(re::status_name(0) == "absent");
  CHECK(re::status_name(1) == "committed");
  CHECK(re::status_name(2) == "conflict");
  CHECK(re::status_name(17) == "conflict");
}

TEST_CASE("an integer header must be a full-string base-10 int64") {
  CHECK(re::parse_int64("0") == 0);
  CHECK(re::parse_int64("1700000000") == 1700000000);
  CHECK(re::parse_int64("-20") == -20);
  CHECK(re::parse_int64("007") == 7);
  CHECK(re::parse_int64("9223372036854775807") == std::numeric_limits<std::int64_t>::max());
  CHECK(re::parse_int64("-9223372036854775808") == std::numeric_limits<std::int64_t>::min());

  CHECK_FALSE(re::parse_int64(""));
  CHECK_FALSE(re::parse_int64("12abc"));
  CHECK_FALSE(re::parse_int64("12 "));
  CHECK_FALSE(re::parse_int64(" 12"));
  CHECK_FALSE(re::parse_int64("+12"));
  CHECK_FALSE(re::parse_int64("1.5"));
  CHECK_FALSE(re::parse_int64("1e3"));
  CHECK_FALSE(re::parse_int64("0x10"));
  CHECK_FALSE(re::parse_int64("-"));
  CHECK_FALSE(re::parse_int64("9223372036854775808"));
  CHECK_FALSE(re::parse_int64("-9223372036854775809"));
}

TEST_CASE("a header value over 256 bytes or with a control character is invalid") {
  CHECK(re::is_valid_header_value(std::string(256, 'a')));
  CHECK_FALSE(re::is_valid_header_value(std::string(257, 'a')));
  CHECK(re::is_valid_header_value("op with spaces and UTF-8 \xc3\xa9"));
  CHECK_FALSE(re::is_valid_header_value(std::string("a\0b", 3)));
  CHECK_FALSE(re::is_valid_header_value("a\tb"));
  CHECK_FALSE(re::is_valid_header_value("a\x01"));
  CHECK_FALSE(re::is_valid_header_value("a\x7f"));
}

TEST_CASE("a valid POST is parsed with its expiry and the SHA-256 of its body") {
  const auto request = post_ok(valid_post_headers(), "payload");
  CHECK(request.operation_id == "op-1");
  CHECK(request.idempotency_key == "key-1");
  CHECK(request.logical_time_s == 100);
  CHECK(request.ttl_s == 60);
  CHECK(request.expires_at_s == 160);
  CHECK_FALSE(request.drop_ack);
  CHECK(request.body_sha256 == skewbench::sha256_hex("payload"));
}

TEST_CASE("header names are matched case-insensitively") {
  const re::Headers headers = {{"x-operation-id", "op-1"}, {"IDEMPOTENCY-KEY", "key-1"}, {"x-logical-time", "5"}};
  const auto request = post_ok(headers);
  CHECK(request.operation_id == "op-1");
  CHECK(request.logical_time_s == 5);
}

TEST_CASE("an empty body has a fingerprint too") {
  const auto request = post_ok(valid_post_headers(), "");
  CHECK(request.body_sha256 == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("a POST without X-Idempotency-TTL takes the service's default TTL") {
  const auto request = post_ok(without(valid_post_headers(), "X-Idempotency-TTL"), "", 7);
  CHECK(request.ttl_s == 7);
  CHECK(request.expires_at_s == 107);
}

TEST_CASE("a POST without an operation id or key is refused with 400") {
  CHECK(post_error(without(valid_post_headers(), "X-Operation-Id")).error == "missing_operation_id");
  CHECK(post_error(with(valid_post_headers(), "X-Operation-Id", "")).error == "missing_operation_id");
  CHECK(post_error(without(valid_post_headers(), "Idempotency-Key")).error == "missing_idempotency_key");
  CHECK(post_error(with(valid_post_headers(), "Idempotency-Key", "")).error == "missing_idempotency_key");
}

TEST_CASE("a POST with an empty or non-integer logical time is refused with 400") {
  for (const auto* bad : {"", "12abc", "1.5", "9223372036854775808", "+5"}) {
    const auto error = post_error(with(valid_post_headers(), "X-Logical-Time", bad));
    CHECK(error.http_status == 400);
    CHECK(error.error == "invalid_or_missing_logical_time");
  }
}

TEST_CASE("a POST without X-Logical-Time is clock-less: no TTL, and a key that never expires") {
  const auto request = post_ok(with(without(valid_post_headers(), "X-Logical-Time"), "X-Idempotency-TTL", "junk"));
  CHECK(request.clockless);
  CHECK(request.logical_time_s == re::kNoLogicalTime);
  CHECK(request.ttl_s == 0);  // a TTL header is not read: there is no time to count it from
  CHECK(request.expires_at_s == re::kNeverExpires);
  CHECK_FALSE(post_ok(valid_post_headers()).clockless);
}

TEST_CASE("an X-Logical-Time sent empty is a bad time, not a clock-less request") {
  // cpp-httplib leaves a header with an empty value out; the raw head still has it.
  const std::string head = "GET /status/op-1 HTTP/1.1\r\nHost: x\r\nx-logical-time:\r\n\r\n";
  const auto status = re::parse_status_request("op-1", {}, head);
  REQUIRE(std::holds_alternative<re::RequestError>(status));
  CHECK(std::get<re::RequestError>(status).error == "invalid_or_missing_logical_time");
  auto post = re::parse_post_request(without(valid_post_headers(), "X-Logical-Time"), "", 60,
                                     "POST /effects HTTP/1.1\r\nX-Logical-Time: \r\n\r\n");
  REQUIRE(std::holds_alternative<re::RequestError>(post));
  CHECK(std::get<re::RequestError>(post).error == "invalid_or_missing_logical_time");
  // A path that holds a colon names no header.
  CHECK(std::holds_alternative<re::StatusRequest>(
      re::parse_status_request("X-Logical-Time", {}, "GET /status/X-Logical-Time: HTTP/1.1\r\n\r\n")));
}

TEST_CASE("a clock-less POST is deduplicated by any stored record of its key, whatever its expiry") {
  auto clockless = request_at(0, "op-1");
  clockless.clockless = true;
  clockless.logical_time_s = re::kNoLogicalTime;
  CHECK(re::decide(record_expiring_at(160, "op-1"), clockless) == re::Delivery::deduplicated);
  CHECK(re::decide(record_expiring_at(re::kNeverExpires, "op-1"), clockless) == re::Delivery::deduplicated);
  CHECK(re::decide(record_expiring_at(160, "op-2"), clockless) == re::Delivery::refused_other_operation);
  CHECK(re::decide(std::nullopt, clockless) == re::Delivery::applied);
  // A key written without a time is active at every time, and never collected.
  CHECK(re::decide(record_expiring_at(re::kNeverExpires, "op-1"), request_at(1'000'000'000, "op-1")) ==
        re::Delivery::deduplicated);
  CHECK_FALSE(re::is_collectable(1'000'000'000, re::kNeverExpires));
  // Even at the largest time there is: "never" is not a time a key reaches.
  CHECK(re::is_active(std::numeric_limits<std::int64_t>::max(), re::kNeverExpires));
  CHECK_FALSE(re::is_collectable(std::numeric_limits<std::int64_t>::max(), re::kNeverExpires));
}

TEST_CASE("the two values that stand for no time and for never are not times a request may carry") {
  // INT64_MIN is "no time": refused as a time, or a timed request would be read as clock-less.
  CHECK(post_error(with(valid_post_headers(), "X-Logical-Time", "-9223372036854775808")).error ==
        "invalid_or_missing_logical_time");
  auto status = re::parse_status_request("op-1", {{"X-Logical-Time", "-9223372036854775808"}});
  REQUIRE(std::holds_alternative<re::RequestError>(status));
  // now + TTL reaching INT64_MAX would be "never expires".
  auto at_max = with(valid_post_headers(), "X-Logical-Time", "9223372036854775747");
  CHECK(post_error(with(at_max, "X-Idempotency-TTL", "60")).error == "invalid_ttl");
  CHECK(post_ok(with(at_max, "X-Idempotency-TTL", "59")).expires_at_s == 9223372036854775806);
}

TEST_CASE("a clock-less snapshot counts every stored record active and writes its times as null") {
  re::OperationState state;
  state.effects = {{1, "op-1", "key-1", re::kNoLogicalTime}};
  state.records = {{"key-1", "op-1", re::kNoLogicalTime, re::kNeverExpires, "x"}, {"key-2", "op-1", 100, 160, "y"}};
  const auto snapshot = re::snapshot_json("op-1", re::kNoLogicalTime, state, "boot", re::DedupeMode::durable);
  CHECK(snapshot.at("evaluation_time").is_null());
  CHECK(snapshot.at("active_idempotency_records") == 2);
  CHECK(snapshot.at("effects").at(0).at("created_at").is_null());
  CHECK(snapshot.at("idempotency_records").at(0).at("expires_at").is_null());
  CHECK(snapshot.at("idempotency_records").at(1).at("expires_at") == 160);
  // At a time, the record written without one is still active; the other has expired.
  const auto timed = re::snapshot_json("op-1", 200, state, "boot", re::DedupeMode::durable);
  CHECK(timed.at("active_idempotency_records") == 1);
}

TEST_CASE("a POST whose TTL is not a positive int64 is refused with 400") {
  for (const auto* bad : {"0", "-5", "1.5", "ten", "99999999999999999999"}) {
    const auto error = post_error(with(valid_post_headers(), "X-Idempotency-TTL", bad));
    CHECK(error.http_status == 400);
    CHECK(error.error == "invalid_ttl");
    CHECK(error.header == "X-Idempotency-TTL");
  }
}

TEST_CASE("a POST whose expiry would overflow int64, or reach its largest value (never), is refused with 400") {
  auto headers = with(valid_post_headers(), "X-Logical-Time", "9223372036854775800");
  headers = with(headers, "X-Idempotency-TTL", "8");
  CHECK(post_error(headers).error == "invalid_ttl");
  headers = with(headers, "X-Idempotency-TTL", "7");
  CHECK(post_error(headers).error == "invalid_ttl");
  headers = with(headers, "X-Idempotency-TTL", "6");
  CHECK(post_ok(headers).expires_at_s == std::numeric_limits<std::int64_t>::max() - 1);
}

TEST_CASE("X-Drop-Ack accepts only 0 and 1") {
  CHECK_FALSE(post_ok(with(valid_post_headers(), "X-Drop-Ack", "0")).drop_ack);
  CHECK(post_ok(with(valid_post_headers(), "X-Drop-Ack", "1")).drop_ack);
  for (const auto* bad : {"true", "yes", "2", ""}) {
    CHECK(post_error(with(valid_post_headers(), "X-Drop-Ack", bad)).error == "invalid_drop_ack");
  }
}

TEST_CASE("an oversized or control-character protocol header is refused naming the header") {
  auto error = post_error(with(valid_post_headers(), "Idempotency-Key", std::string(257, 'k')));
  CHECK(error.http_status == 400);
  CHECK(error.error == "invalid_header_value");
  CHECK(error.header == "Idempotency-Key");
  CHECK(error.to_json().at("header") == "Idempotency-Key");

  error = post_error(with(valid_post_headers(), "X-Operation-Id", "op\x01"));
  CHECK(error.error == "invalid_header_value");
  CHECK(error.header == "X-Operation-Id");
}

TEST_CASE("a repeated protocol header is refused with 400") {
  auto headers = valid_post_headers();
  headers.emplace("Idempotency-Key", "key-2");
  const auto error = post_error(headers);
  CHECK(error.error == "duplicate_header");
  CHECK(error.header == "Idempotency-Key");
}

TEST_CASE("a status query needs an integer logical time and a non-empty operation id") {
  const re::Headers time = {{"X-Logical-Time", "42"}};
  auto parsed = re::parse_status_request("op-1", time);
  REQUIRE(std::holds_alternative<re::StatusRequest>(parsed));
  CHECK(std::get<re::StatusRequest>(parsed).evaluation_time_s == 42);

  parsed = re::parse_status_request("op-1", {{"X-Logical-Time", "4x"}});
  REQUIRE(std::holds_alternative<re::RequestError>(parsed));
  CHECK(std::get<re::RequestError>(parsed).error == "invalid_or_missing_logical_time");

  parsed = re::parse_status_request("op-1", {});  // clock-less
  REQUIRE(std::holds_alternative<re::StatusRequest>(parsed));
  CHECK(std::get<re::StatusRequest>(parsed).clockless);
  CHECK(std::get<re::StatusRequest>(parsed).evaluation_time_s == re::kNoLogicalTime);

  parsed = re::parse_status_request("", time);
  REQUIRE(std::holds_alternative<re::RequestError>(parsed));
  CHECK(std::get<re::RequestError>(parsed).error == "missing_operation_id");

  parsed = re::parse_status_request(std::string("a\0b", 3), time);
  REQUIRE(std::holds_alternative<re::RequestError>(parsed));
  CHECK(std::get<re::RequestError>(parsed).error == "invalid_operation_id");
}

TEST_CASE("a fresh key is applied") {
  CHECK(re::decide(std::nullopt, request_at(100, "op-1")) == re::Delivery::applied);
}

TEST_CASE("an active key reused by the same operation with the same body is deduplicated") {
  CHECK(re::decide(record_expiring_at(160, "op-1"), request_at(159, "op-1")) == re::Delivery::deduplicated);
}

TEST_CASE("an active key reused by another operation is refused with 409") {
  const auto delivery = re::decide(record_expiring_at(160, "op-1"), request_at(159, "op-2"));
  CHECK(delivery == re::Delivery::refused_other_operation);
  const auto error = re::refusal_error(delivery);
  CHECK(error.http_status == 409);
  CHECK(error.to_json() == nlohmann::json{{"error", "active_idempotency_key_reused_for_different_operation"}});
}

TEST_CASE("an active key reused by the same operation with a different body is refused with 422") {
  const auto delivery = re::decide(record_expiring_at(160, "op-1", "body-a"), request_at(159, "op-1", "body-b"));
  CHECK(delivery == re::Delivery::refused_different_payload);
  const auto error = re::refusal_error(delivery);
  CHECK(error.http_status == 422);
  CHECK(error.to_json() == nlohmann::json{{"error", "idempotency_key_reused_with_different_payload"}});
}

TEST_CASE("a key reused at exactly expires_at is applied again, whoever reuses it") {
  CHECK(re::decide(record_expiring_at(160, "op-1"), request_at(160, "op-1")) == re::Delivery::applied);
  CHECK(re::decide(record_expiring_at(160, "op-1"), request_at(160, "op-2")) == re::Delivery::applied);
  CHECK(re::decide(record_expiring_at(160, "op-1", "a"), request_at(160, "op-1", "b")) == re::Delivery::applied);
}

TEST_CASE("the snapshot marks each record active at the evaluation time and names the status") {
  re::OperationState state;
  state.effects = {{1, "op-1", "key-1", 100}, {7, "op-1", "key-2", 170}};
  state.records = {{"key-1", "op-1", 100, 160, "x"}, {"key-2", "op-1", 170, 230, "y"}};
  state.post_requests = 3;
  state.ack_drops = 1;

  const auto snapshot = re::snapshot_json("op-1", 160, state, "boot", re::DedupeMode::durable);
  CHECK(snapshot.at("operation_id") == "op-1");
  CHECK(snapshot.at("evaluation_time") == 160);
  CHECK(snapshot.at("status") == "conflict");
  CHECK(snapshot.at("effect_count") == 2);
  CHECK(snapshot.at("effects").at(1) ==
        nlohmann::json{{"effect_id", 7}, {"operation_id", "op-1"}, {"idempotency_key", "key-2"}, {"created_at", 170}});
  CHECK(snapshot.at("idempotency_records").at(0).at("active_at_query") == false);
  CHECK(snapshot.at("idempotency_records").at(1).at("active_at_query") == true);
  CHECK_FALSE(snapshot.at("idempotency_records").at(0).contains("body_sha256"));
  CHECK(snapshot.at("active_idempotency_records") == 1);
  CHECK(snapshot.at("post_requests") == 3);
  CHECK(snapshot.at("ack_drops") == 1);
  CHECK(snapshot.at("boot_id") == "boot");

  CHECK(re::snapshot_json("op-1", 159, state, "boot", re::DedupeMode::durable).at("active_idempotency_records") == 2);
  CHECK(re::snapshot_json("op-9", 0, re::OperationState{}, "boot", re::DedupeMode::volatile_).at("status") == "absent");
}

TEST_CASE("the snapshot reports the dedupe mode, the durable record count and the temporal epoch") {
  re::OperationState state;
  state.durable_idempotency_records = 1;
  state.temporal_epoch = 3;
  const auto durable = re::snapshot_json("op-1", 0, state, "boot", re::DedupeMode::durable);
  CHECK(durable.at("idempotency_mode") == "durable");
  CHECK(durable.at("durable_idempotency_records") == 1);
  CHECK(durable.at("temporal_epoch") == 3);
  CHECK(re::snapshot_json("op-1", 0, state, "boot", re::DedupeMode::volatile_).at("idempotency_mode") == "volatile");
}

TEST_CASE("an operation id or key that is not valid UTF-8 is refused with 400 naming the header") {
  for (const std::string bad : {"\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"}) {
    INFO(bad);
    auto error = post_error(with(valid_post_headers(), "Idempotency-Key", bad));
    CHECK(error.http_status == 400);
    CHECK(error.error == "invalid_header_value");
    CHECK(error.header == "Idempotency-Key");
    error = post_error(with(valid_post_headers(), "X-Operation-Id", "op" + bad));
    CHECK(error.header == "X-Operation-Id");
  }
  CHECK(post_ok(with(valid_post_headers(), "Idempotency-Key", "cl\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80"))
            .idempotency_key == "cl\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80");
}

TEST_CASE("UTF-8 validation rejects overlong forms, surrogates, truncations and code points past U+10FFFF") {
  CHECK(re::is_valid_utf8(""));
  CHECK(re::is_valid_utf8("plain ascii"));
  CHECK(re::is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf"));
  CHECK_FALSE(re::is_valid_utf8("\x80"));
  CHECK_FALSE(re::is_valid_utf8("\xc1\xbf"));
  CHECK_FALSE(re::is_valid_utf8("\xe0\x9f\xbf"));
  CHECK_FALSE(re::is_valid_utf8("\xed\xbf\xbf"));
  CHECK_FALSE(re::is_valid_utf8("\xf4\x90\x80\x80"));
  CHECK_FALSE(re::is_valid_utf8("\xf5\x80\x80\x80"));
  CHECK_FALSE(re::is_valid_utf8("\xe2\x82"));
  CHECK_FALSE(re::is_valid_utf8("\xe2\x28\xa1"));
}

TEST_CASE("a status or GC path whose operation id is not valid UTF-8 is refused with 400") {
  const re::Headers time = {{"X-Logical-Time", "5"}};
  auto status = re::parse_status_request("\xff", time);
  REQUIRE(std::holds_alternative<re::RequestError>(status));
  CHECK(std::get<re::RequestError>(status).error == "invalid_operation_id");
  auto gc = re::parse_gc_request("op-\xff", time);
  REQUIRE(std::holds_alternative<re::RequestError>(gc));
  CHECK(std::get<re::RequestError>(gc).error == "invalid_operation_id");
}

TEST_CASE("an integer header padded with spaces or tabs in the raw request is refused naming it") {
  const std::string clean = "POST /effects HTTP/1.1\r\nX-Logical-Time: 5\r\nX-Idempotency-TTL:60\r\n\r\n";
  CHECK_FALSE(re::find_padded_integer_header(clean));
  CHECK(re::find_padded_integer_header("GET / HTTP/1.1\r\nX-Logical-Time:  5\r\n\r\n") == "X-Logical-Time");
  CHECK(re::find_padded_integer_header("GET / HTTP/1.1\r\nx-logical-time: 5\t\r\n\r\n") == "X-Logical-Time");
  CHECK(re::find_padded_integer_header("GET / HTTP/1.1\r\nX-Logical-Time:\t5\r\n\r\n") == "X-Logical-Time");
  CHECK(re::find_padded_integer_header("GET / HTTP/1.1\r\nX-Idempotency-TTL: 60 \r\n\r\n") == "X-Idempotency-TTL");
  CHECK(re::find_padded_integer_header("GET / HTTP/1.1\r\nX-Expected-Temporal-Epoch: 2 \n\n") ==
        "X-Expected-Temporal-Epoch");
  // Other headers may carry spaces, which HTTP strips.
  CHECK_FALSE(re::find_padded_integer_header("GET / HTTP/1.1\r\nUser-Agent:  x \r\n\r\n"));
}

TEST_CASE("a POST or status query whose raw logical time is padded is refused with 400") {
  const std::string head = "POST /effects HTTP/1.1\r\nX-Logical-Time: 100 \r\n\r\n";
  auto parsed = re::parse_post_request(valid_post_headers(), "", 60, head);
  REQUIRE(std::holds_alternative<re::RequestError>(parsed));
  CHECK(std::get<re::RequestError>(parsed).error == "invalid_header_value");
  CHECK(std::get<re::RequestError>(parsed).header == "X-Logical-Time");
  auto status = re::parse_status_request("op-1", {{"X-Logical-Time", "5"}},
                                         "GET /status/op-1 HTTP/1.1\r\n"
                                         "X-Logical-Time:  5\r\n\r\n");
  CHECK(std::holds_alternative<re::RequestError>(status));
}

TEST_CASE("negative logical times are legal: the expiry rule holds across zero") {
  const auto request = post_ok(with(with(valid_post_headers(), "X-Logical-Time", "-1"), "X-Idempotency-TTL", "1"));
  CHECK(request.logical_time_s == -1);
  CHECK(request.expires_at_s == 0);
  CHECK(re::is_active(-1, request.expires_at_s));
  CHECK_FALSE(re::is_active(0, request.expires_at_s));
}

TEST_CASE("GC collects a record at exactly expires_at, which the active test already calls expired") {
  CHECK(re::is_collectable(160, 160));
  CHECK(re::is_collectable(161, 160));
  CHECK_FALSE(re::is_collectable(159, 160));
  for (std::int64_t now_s = 150; now_s <= 170; ++now_s)
    CHECK(re::is_collectable(now_s, 160) != re::is_active(now_s, 160));
}

TEST_CASE("the temporal epoch advances by one only when GC removed something") {
  CHECK(re::epoch_after_gc(1, 0) == 1);
  CHECK(re::epoch_after_gc(1, 1) == 2);
  CHECK(re::epoch_after_gc(2, 5) == 3);
}

TEST_CASE("the fence lets a POST through only when its expected epoch equals the current one") {
  CHECK_FALSE(re::check_fence(std::nullopt, 7));
  CHECK_FALSE(re::check_fence(7, 7));
  const auto refused = re::check_fence(2, 3);
  REQUIRE(refused);
  CHECK(refused->http_status == 409);
  CHECK(refused->error == "temporal_epoch_mismatch");
  CHECK(re::check_fence(4, 3));
  CHECK(re::fenced_out_json(2, 3) == nlohmann::json{{"error", "temporal_epoch_mismatch"},
                                                    {"delivery", "fenced_out"},
                                                    {"expected_temporal_epoch", 2},
                                                    {"current_temporal_epoch", 3}});
}

TEST_CASE("the fence headers parse into an expected epoch, and bad values are refused with named errors") {
  auto headers = with(with(valid_post_headers(), "X-Require-Temporal-Fence", "1"), "X-Expected-Temporal-Epoch", "2");
  CHECK(post_ok(headers).fence_epoch == 2);
  CHECK_FALSE(post_ok(with(headers, "X-Require-Temporal-Fence", "0")).fence_epoch);
  CHECK_FALSE(post_ok(without(headers, "X-Require-Temporal-Fence")).fence_epoch);
  CHECK(post_error(with(headers, "X-Expected-Temporal-Epoch", "two")).error == "invalid_expected_temporal_epoch");
  CHECK(post_error(with(headers, "X-Expected-Temporal-Epoch", "1.0")).error == "invalid_expected_temporal_epoch");
  CHECK(post_error(without(headers, "X-Expected-Temporal-Epoch")).error == "missing_expected_temporal_epoch");
  CHECK(post_error(with(headers, "X-Require-Temporal-Fence", "yes")).error == "invalid_temporal_fence");
}

TEST_CASE("a GC request needs an integer logical time and an operation id") {
  auto parsed = re::parse_gc_request("op-1", {{"X-Logical-Time", "70"}});
  REQUIRE(std::holds_alternative<re::GcRequest>(parsed));
  CHECK(std::get<re::GcRequest>(parsed).logical_time_s == 70);
  parsed = re::parse_gc_request("op-1", {});
  REQUIRE(std::holds_alternative<re::RequestError>(parsed));
  CHECK(std::get<re::RequestError>(parsed).error == "invalid_or_missing_logical_time");
  parsed = re::parse_gc_request("", {{"X-Logical-Time", "70"}});
  REQUIRE(std::holds_alternative<re::RequestError>(parsed));
  CHECK(std::get<re::RequestError>(parsed).error == "missing_operation_id");
  CHECK(re::gc_json(re::GcRequest{.operation_id = "op-1", .logical_time_s = 70}, re::GcResult{1, 1, 2}) ==
        nlohmann::json{{"operation_id", "op-1"},
                       {"logical_time", 70},
                       {"removed_records", 1},
                       {"temporal_epoch_before", 1},
                       {"temporal_epoch_after", 2}});
}

TEST_CASE("the dedupe mode has two names") {
  CHECK(re::parse_dedupe_mode("durable") == re::DedupeMode::durable);
  CHECK(re::parse_dedupe_mode("volatile") == re::DedupeMode::volatile_);
  CHECK_FALSE(re::parse_dedupe_mode("Volatile"));
  CHECK(re::dedupe_mode_name(re::DedupeMode::volatile_) == "volatile");
}

TEST_CASE("the headers a client writes parse back into the request it meant") {
  const auto fenced = GENERATE(false, true);
  const auto drop_ack = GENERATE(false, true);
  const re::PostEffect sent{.operation_id = "op-7",
                            .idempotency_key = "op-7:effect:v1",
                            .ttl_s = 45,
                            .logical_time_s = -20,
                            .drop_ack = drop_ack,
                            .body = "{\"amount\":1}",
                            .expected_temporal_epoch = fenced ? std::optional<std::int64_t>(3) : std::nullopt};
  const auto headers = re::post_effect_headers(sent);
  const auto parsed = re::parse_post_request({headers.begin(), headers.end()}, sent.body, 60);
  REQUIRE(std::holds_alternative<re::PostRequest>(parsed));
  const auto& request = std::get<re::PostRequest>(parsed);
  CHECK(request.operation_id == "op-7");
  CHECK(request.idempotency_key == "op-7:effect:v1");
  CHECK(request.ttl_s == 45);
  CHECK(request.logical_time_s == -20);
  CHECK(request.expires_at_s == 25);
  CHECK(request.drop_ack == drop_ack);
  CHECK(request.fence_epoch == sent.expected_temporal_epoch);

  const auto time_headers = re::logical_time_headers(170);
  const auto status = re::parse_status_request("op-7", {time_headers.begin(), time_headers.end()});
  REQUIRE(std::holds_alternative<re::StatusRequest>(status));
  CHECK(std::get<re::StatusRequest>(status).evaluation_time_s == 170);
}

TEST_CASE("a header line that starts with a space or a tab is obsolete line folding (RFC 9112 section 5.2)") {
  CHECK_FALSE(re::has_obsolete_line_folding("POST /effects HTTP/1.1\r\nX-Logical-Time: 5\r\nHost: a\r\n\r\n"));
  CHECK(re::has_obsolete_line_folding("POST /effects HTTP/1.1\r\nX-Operation-Id: op\r\n  -continued\r\n\r\n"));
  CHECK(re::has_obsolete_line_folding("GET / HTTP/1.1\r\nHost: a\r\n\tb\r\n\r\n"));
  CHECK(re::has_obsolete_line_folding("GET / HTTP/1.1\nHost: a\n b\n\n"));  // bare LF lines too
  // The body after the blank line is not part of the head.
  CHECK_FALSE(re::has_obsolete_line_folding("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n  x"));
  CHECK_FALSE(re::has_obsolete_line_folding(""));
}
