#include "remote_effect/answers.hpp"

#include <limits>

namespace skewbench::remote_effect {
namespace {

using nlohmann::json;

// Reads the fields of one answer object; every accessor is absent-tolerant
// and type-strict.
class AnswerReader {
 public:
  AnswerReader(const json& body, std::string_view answer) : body_(body), answer_(answer) {
    if (!body.is_object()) throw AnswerError(answer_ + " is not a JSON object");
  }

  std::optional<std::int64_t> integer(const char* name) const {
    const auto* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) throw mistyped(name, "an integer");
    // An unsigned number past int64's range would wrap to a negative one.
    if (v->is_number_unsigned() &&
        v->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw AnswerError(answer_ + " field \"" + name + "\" is " + v->dump() + ", beyond a 64-bit integer");
    }
    return v->get<std::int64_t>();
  }

  // A count the service keeps (of effects, requests, records, epochs): an
  // integer in [0, kMaxCount], which every JSON reader holds exactly.
  std::optional<std::int64_t> count(const char* name) const {
    const auto* v = find(name);
    if (!v) return std::nullopt;
    if (v->is_number_integer() && !is_count(*v)) {
      throw AnswerError(answer_ + " field \"" + name + "\" is " + v->dump() +
                        ", not a count (an integer from 0 to 2^53)");
    }
    return integer(name);
  }

  // An integer that may be written as null (e.g. an epoch the request lacked).
  std::optional<std::int64_t> nullable_integer(const char* name) const {
    const auto* v = find(name);
    return v && v->is_null() ? std::nullopt : integer(name);
  }

  std::optional<std::string> text(const char* name) const {
    const auto* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_string()) throw mistyped(name, "a string");
    return v->get<std::string>();
  }

  template <typename Enum, std::size_t N>
  std::optional<Enum> word(const char* name, const Vocabulary<Enum, N>& vocabulary) const {
    const auto spelled = text(name);
    if (!spelled) return std::nullopt;
    if (const auto value = vocabulary.parse(*spelled)) return value;
    throw AnswerError(answer_ + " field \"" + name + "\" is \"" + *spelled + "\", not one of " + vocabulary.listed());
  }

  bool has(const char* name) const { return find(name) != nullptr; }

 private:
  const json* find(const char* name) const {
    const auto it = body_.find(name);
    return it == body_.end() ? nullptr : &*it;
  }
  AnswerError mistyped(const char* name, const char* type) const {
    return AnswerError(answer_ + " field \"" + name + "\" is not " + type);
  }

  const json& body_;
  std::string answer_;
};

StatusAnswer read_snapshot_fields(const AnswerReader& in) {
  return StatusAnswer{
      .operation_id = in.text("operation_id"),
      // null: the snapshot of a clock-less request, evaluated at no time.
      .evaluation_time_s =
          in.has("evaluation_time") ? in.nullable_integer("evaluation_time") : in.nullable_integer("logical_time"),
      .status = in.word("status", kOperationStatuses),
      .effect_count = in.count("effect_count"),
      .post_requests = in.count("post_requests"),
      .ack_drops = in.count("ack_drops"),
      .active_idempotency_records = in.count("active_idempotency_records"),
      .durable_idempotency_records = in.count("durable_idempotency_records"),
      .temporal_epoch = in.count("temporal_epoch"),
      .idempotency_mode = in.word("idempotency_mode", kDedupeModes),
      .boot_id = in.text("boot_id"),
  };
}

}  // namespace

bool is_count(const json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxCount);
  if (!value.is_number_integer()) return false;
  const auto n = value.get<std::int64_t>();
  return n >= 0 && n <= kMaxCount;
}

StatusAnswer read_status_answer(const json& body) { return read_snapshot_fields(AnswerReader(body, "the snapshot")); }

PostAnswer read_post_answer(const json& body) {
  const AnswerReader in(body, "the POST answer");
  return PostAnswer{.delivery = in.word("delivery", kDeliveries),
                    .error = in.text("error"),
                    .idempotency_key = in.text("idempotency_key"),
                    .ttl_s = in.nullable_integer("ttl_seconds"),  // null: a clock-less POST
                    .expected_temporal_epoch = in.nullable_integer("expected_temporal_epoch"),
                    .current_temporal_epoch = in.count("current_temporal_epoch"),
                    .snapshot = read_snapshot_fields(in)};
}

GcAnswer read_gc_answer(const json& body) {
  const AnswerReader in(body, "the GC answer");
  return GcAnswer{.operation_id = in.text("operation_id"),
                  .logical_time_s = in.integer("logical_time"),
                  .removed_records = in.count("removed_records"),
                  .temporal_epoch_before = in.count("temporal_epoch_before"),
                  .temporal_epoch_after = in.count("temporal_epoch_after")};
}

HealthAnswer read_health_answer(const json& body) {
  const AnswerReader in(body, "the health answer");
  return HealthAnswer{.service = in.text("service"),
                      .boot_id = in.text("boot_id"),
                      .idempotency_mode = in.word("idempotency_mode", kDedupeModes),
                      .temporal_epoch = in.count("temporal_epoch"),
                      .clock = in.word("clock", kClockSources),
                      .wall_clock_s = in.nullable_integer("wall_clock_s")};
}

}  // namespace skewbench::remote_effect
