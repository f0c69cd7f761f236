// The protocol's answer readers: what the service's writers produce reads back
// field for field, an absent field is "not observed", and a malformed one is
// an error that names it.

#include <string>
#include <utility>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "remote_effect/answers.hpp"

namespace re = skewbench::remote_effect;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;

namespace {

re::OperationState two_effects() {
  re::OperationState state;
  state.effects = {{1, "op-1", "key-1", 100}, {7, "op-1", "key-2", 170}};
  state.records = {{"key-1", "op-1", 100, 160, "x"}, {"key-2", "op-1", 170, 230, "y"}};
  state.post_requests = 3;
  state.ack_drops = 1;
  state.durable_idempotency_records = 2;
  state.temporal_epoch = 4;
  return state;
}

re::PostRequest request_at(std::int64_t t) {
  return re::PostRequest{.operation_id = "op-1",
                         .idempotency_key = "key-2",
                         .logical_time_s = t,
                         .ttl_s = 60,
                         .expires_at_s = t + 60,
                         .drop_ack = false,
                         .body_sha256 = "y",
                         .fence_epoch = std::nullopt};
}

}  // namespace

TEST_CASE("a snapshot the service writes reads back field for field") {
  const auto answer =
      re::read_status_answer(re::snapshot_json("op-1", 160, two_effects(), "boot", re::DedupeMode::volatile_));
  CHECK(answer == re::StatusAnswer{.operation_id = "op-1",
                                   .evaluation_time_s = 160,
                                   .status = re::OperationStatus::conflict,
                                   .effect_count = 2,
                                   .post_requests = 3,
                                   .ack_drops = 1,
                                   .active_idempotency_records = 1,
                                   .durable_idempotency_records = 2,
                                   .temporal_epoch = 4,
                                   .idempotency_mode = re::DedupeMode::volatile_,
                                   .boot_id = "boot"});
}

TEST_CASE("a POST answer, a fenced-out refusal, a refusal and a GC answer read back as written") {
  const auto state = two_effects();
  const auto applied = re::read_post_answer(
      re::post_json(request_at(170), re::Delivery::applied, state, "boot", re::DedupeMode::durable));
  CHECK(applied.delivery == re::Delivery::applied);
  CHECK(applied.idempotency_key == "key-2");
  CHECK(applied.ttl_s == 60);
  CHECK_FALSE(applied.error);
  CHECK(applied.snapshot ==
        re::read_status_answer(re::snapshot_json("op-1", 170, state, "boot", re::DedupeMode::durable)));

  const auto fenced = re::read_post_answer(re::fenced_out_json(2, 3));
  CHECK(fenced.delivery == re::Delivery::fenced_out);
  CHECK(fenced.error == "temporal_epoch_mismatch");
  CHECK(fenced.expected_temporal_epoch == 2);
  CHECK(fenced.current_temporal_epoch == 3);
  CHECK(fenced.snapshot == re::StatusAnswer{});

  const auto refused = re::read_post_answer(re::refusal_error(re::Delivery::refused_other_operation).to_json());
  CHECK(refused.error == "active_idempotency_key_reused_for_different_operation");
  CHECK_FALSE(refused.delivery);

  const auto gc = re::read_gc_answer(re::gc_json({.operation_id = "op-1", .logical_time_s = 70}, {1, 1, 2}));
  CHECK(gc == re::GcAnswer{.operation_id = "op-1",
                           .logical_time_s = 70,
                           .removed_records = 1,
                           .temporal_epoch_before = 1,
                           .temporal_epoch_after = 2});
}

TEST_CASE("a field the answer does not carry is not observed, never a default") {
  const auto minimal = re::read_status_answer({{"status", "committed"}, {"effect_count", 1}});
  CHECK(minimal.status == re::OperationStatus::committed);
  CHECK(minimal.effect_count == 1);
  CHECK_FALSE(minimal.boot_id);
  CHECK_FALSE(minimal.post_requests);
  CHECK_FALSE(minimal.evaluation_time_s);
  CHECK_FALSE(minimal.idempotency_mode);
  CHECK(re::read_health_answer(json::object()) == re::HealthAnswer{});
  CHECK(re::read_gc_answer(json::object()) == re::GcAnswer{});
  // A fenced-out answer to a POST that carried no epoch writes it as null.
  CHECK_FALSE(re::read_post_answer({{"expected_temporal_epoch", nullptr}}).expected_temporal_epoch);
}

TEST_CASE("the time a snapshot was evaluated at is read under either of its protocol names") {
  CHECK(re::read_status_answer({{"evaluation_time", 55}}).evaluation_time_s == 55);
  CHECK(re::read_status_answer({{"logical_time", 55}}).evaluation_time_s == 55);
  CHECK(re::read_status_answer({{"evaluation_time", 55}, {"logical_time", 70}}).evaluation_time_s == 55);
}

TEST_CASE("a present field of the wrong type, or a word outside its vocabulary, is an error naming it") {
  CHECK_THROWS_WITH(re::read_status_answer({{"effect_count", "1"}}),
                    "the snapshot field \"effect_count\" is not an integer");
  CHECK_THROWS_WITH(re::read_status_answer({{"effect_count", 1.5}}),
                    "the snapshot field \"effect_count\" is not an integer");
  CHECK_THROWS_WITH(re::read_status_answer({{"boot_id", 7}}), "the snapshot field \"boot_id\" is not a string");
  CHECK_THROWS_WITH(re::read_status_answer({{"status", "committed_twice"}}),
                    "the snapshot field \"status\" is \"committed_twice\", not one of absent, committed or conflict");
  CHECK_THROWS_WITH(re::read_status_answer({{"status", "Committed"}}), ContainsSubstring("not one of"));
  CHECK_THROWS_WITH(re::read_post_answer({{"delivery", "maybe"}}), ContainsSubstring("\"delivery\" is \"maybe\""));
  CHECK_THROWS_WITH(re::read_health_answer({{"idempotency_mode", "DURABLE"}}),
                    ContainsSubstring("\"idempotency_mode\" is \"DURABLE\""));
  CHECK_THROWS_WITH(re::read_gc_answer({{"removed_records", nullptr}}),
                    "the GC answer field \"removed_records\" is not an integer");
  CHECK_THROWS_WITH(re::read_status_answer(json::array()), "the snapshot is not a JSON object");
  CHECK_THROWS_WITH(re::read_post_answer("ok"), "the POST answer is not a JSON object");
  CHECK_THROWS_AS(re::read_health_answer(nullptr), re::AnswerError);
}

TEST_CASE("a count outside [0, 2^53] is an error naming the field and the number, never a wrapped value") {
  const json max_u64 = std::uint64_t{18446744073709551615ULL};
  const json past = (std::int64_t{1} << 53) + 1;
  for (const auto& [field, value] : std::vector<std::pair<std::string, json>>{{"effect_count", max_u64},
                                                                              {"effect_count", -1},
                                                                              {"post_requests", past},
                                                                              {"ack_drops", -5},
                                                                              {"active_idempotency_records", max_u64},
                                                                              {"durable_idempotency_records", -1},
                                                                              {"temporal_epoch", past}}) {
    INFO(field << " = " << value.dump());
    const json body = {{field, value}};
    CHECK_THROWS_WITH(re::read_status_answer(body), ContainsSubstring("field \"" + field + "\" is " + value.dump() +
                                                                      ", not a count (an integer from 0 to 2^53)"));
    CHECK_THROWS_AS(re::read_post_answer(body), re::AnswerError);
  }
  CHECK_THROWS_WITH(re::read_gc_answer({{"removed_records", -1}}), ContainsSubstring("\"removed_records\" is -1"));
  CHECK(re::read_status_answer({{"effect_count", std::int64_t{1} << 53}}).effect_count == std::int64_t{1} << 53);
  CHECK(re::read_status_answer({{"effect_count", 0}}).effect_count == 0);
  CHECK(re::is_count(json(0)));
  CHECK(re::is_count(json(std::uint64_t{1} << 53)));
  CHECK_FALSE(re::is_count(json(1.0)));
  CHECK_FALSE(re::is_count(json("1")));
}

TEST_CASE("an integer past int64 is an error, not a negative number") {
  const json body = {{"evaluation_time", std::uint64_t{9223372036854775808ULL}}};
  CHECK_THROWS_WITH(re::read_status_answer(body),
                    ContainsSubstring("\"evaluation_time\" is 9223372036854775808, beyond a 64-bit integer"));
}
