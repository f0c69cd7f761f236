#include "evidence/count_history.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "remote_effect/answers.hpp"

namespace skewbench::evidence {
namespace {

using nlohmann::json;

// The count fields an answer may carry, each held to [0, 2^53].
constexpr std::array kCountFields = {
    "effect_count",   "post_requests",         "ack_drops", "active_idempotency_records", "durable_idempotency_records",
    "temporal_epoch", "current_temporal_epoch"};

// What a POST's exchange says of the effect.
enum class Post { none, applied, lost, other };

// Where a reading was taken: "step 3 (recover), exchange 1 (POST /effects)",
// "step 2 (restart_remote)" or "the closing measurement (GET /status/...)".
// Spelled out only when a contradiction names it: a history that holds (nearly
// every one) builds no text.
struct Where {
  // The step's index as the timeline holds it (a number, or what a
  // hand-edited file holds there); neither: the closing measurement.
  std::optional<std::size_t> index;
  const json* index_json = nullptr;
  const std::string* kind = nullptr;
  std::size_t exchange_number = 0;  // 1-based; 0: the step itself
  const json* exchange = nullptr;   // its name is read from its request

  std::string text() const;
};

// One answer's word on the operation, as the history reads it.
struct Reading {
  Where where;
  const std::string* instance = nullptr;  // the instance that answered; null: the scenario reaches one
  Post post = Post::none;
  const json* counts = nullptr;   // the answer's counts (read when it holds effect_count); null: none
  const json* boot_id = nullptr;  // a string; null: not reported
  bool measured = false;          // counted by skewbench, not said by the service
};

const json* member(const json& object, const char* name) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

const std::string& no_text() {
  static const std::string empty;
  return empty;
}

// The string `value` holds, by reference; "" when it is no string.
const std::string& text_of(const json* value) {
  return value && value->is_string() ? value->get_ref<const std::string&>() : no_text();
}

std::string who(const std::string* instance) {
  return instance == nullptr || instance->empty() ? "the service" : *instance;
}

std::string exchange_name(const json& exchange) {
  const auto* request = member(exchange, "request");
  return request ? text_of(member(*request, "method")) + " " + text_of(member(*request, "path")) : " ";
}

std::string Where::text() const {
  if (!index && !index_json) {
    return exchange ? "the closing measurement (" + exchange_name(*exchange) + ")" : "the closing measurement";
  }
  auto out = "step " + (index ? std::to_string(*index) : index_json->dump()) + " (" + (kind ? *kind : no_text()) + ")";
  if (exchange_number > 0) {
    out += ", exchange " + std::to_string(exchange_number) + " (" + exchange_name(*exchange) + ")";
  }
  return out;
}

Post post_of(const json& exchange) {
  const auto& outcome = text_of(member(exchange, "transport_outcome"));
  if (outcome.empty()) return Post::none;
  if (outcome == "ACK_UNKNOWN") return Post::lost;
  if (outcome != "ACK_RECEIVED") return Post::other;
  // A service of its own wire is classified by its target file; the protocol's
  // answer names its delivery.
  const auto* harness = member(exchange, "harness");
  const auto* answer_class = harness ? member(*harness, "answer_class") : nullptr;
  const auto* response = member(exchange, "response");
  const auto& delivery = answer_class ? text_of(answer_class)
                         : response   ? text_of(member(*response, "delivery"))
                                      : no_text();
  return delivery == "applied" ? Post::applied : Post::other;
}

Reading reading_of(const json& exchange, Where where) {
  const auto* harness = member(exchange, "harness");
  const auto* counted = harness ? member(*harness, "counted_by_skewbench") : nullptr;
  const auto* response = member(exchange, "response");
  const auto* counts = counted && counted->is_object() ? counted : response;
  const auto* boot_id = response ? member(*response, "boot_id") : nullptr;
  const auto* instance = harness ? member(*harness, "instance") : nullptr;
  return {.where = where,
          .instance = instance && instance->is_string() ? &instance->get_ref<const std::string&>() : nullptr,
          .post = post_of(exchange),
          .counts = counts,
          .boot_id = boot_id && boot_id->is_string() ? boot_id : nullptr,
          .measured = counted && (counted->is_object() || *counted == true)};
}

// The history of one operation, read answer by answer.
class History {
 public:
  // A step that restarts the service begins: the instances' next boot_ids
  // must differ from those before it, and the next count may fall.
  void restart(const Where& step) {
    for (auto& [instance, seen] : boot_ids_) restarted_from_[instance] = {seen.first, step};
    boot_ids_.clear();
    restart_ = step;
  }

  std::optional<std::string> read(const Reading& r) {
    if (r.post == Post::applied) ++applied_;
    if (r.post == Post::lost) ++lost_;
    measured_seen_ = measured_seen_ || r.measured;
    if (auto why = boot_id(r)) return why;
    if (!r.counts || !member(*r.counts, "effect_count")) return std::nullopt;
    for (const char* field : kCountFields) {
      const auto* value = member(*r.counts, field);
      if (value && !remote_effect::is_count(*value)) {
        return r.where.text() + ": " + field + " is " + value->dump() + ", not a count (an integer from 0 to 2^53)";
      }
    }
    const auto count = r.counts->at("effect_count").get<std::int64_t>();
    if (r.measured || restart_) {
      if (auto why = restart_ && !r.measured ? above_bound(r, count) : std::nullopt) return why;
      // A measurement, or the first reading after a restart, is where the
      // bounds count from.
      base_ = count;
      base_where_ = r.where;
      applied_ = lost_ = 0;
      restart_.reset();
    } else if (auto why = effect_count(r, count)) {
      return why;
    }
    last_ = count;
    last_where_ = r.where;
    return std::nullopt;
  }

  // Whether any reading so far was skewbench's own count: the service's
  // counts are then all skewbench's (an effect sink's), the closing one too.
  bool measured() const { return measured_seen_; }

 private:
  std::optional<std::string> boot_id(const Reading& r) {
    if (!r.boot_id || r.measured) return std::nullopt;
    const auto& id = r.boot_id->get_ref<const std::string&>();
    const auto& instance = r.instance ? *r.instance : no_text();
    if (const auto it = restarted_from_.find(instance); it != restarted_from_.end()) {
      const auto [before, step] = it->second;
      restarted_from_.erase(it);
      if (id == before) {
        return r.where.text() + ": " + who(r.instance) + "'s boot_id is still " + id + " after " + step.text() +
               " restarted it: the service did not restart";
      }
    } else if (const auto seen = boot_ids_.find(instance); seen != boot_ids_.end() && seen->second.first != id) {
      return r.where.text() + ": " + who(r.instance) + "'s boot_id is " + id + ", but it was " + seen->second.first +
             " at " + seen->second.second.text() + ", and no step between restarted the service";
    }
    if (const auto seen = boot_ids_.find(instance); seen != boot_ids_.end()) {
      seen->second.second = r.where;
    } else {
      boot_ids_.emplace(instance, std::pair{id, r.where});
    }
    return std::nullopt;
  }

  std::optional<std::string> effect_count(const Reading& r, std::int64_t count) const {
    const auto was = " at " + (last_where_ ? last_where_->text() : std::string("the operation's start"));
    if (r.post == Post::applied && count <= last_) {
      return r.where.text() + ": answered applied, yet effect_count " + std::to_string(count) +
             " did not rise above the " + std::to_string(last_) + was;
    }
    if (count < last_) {
      return r.where.text() + ": effect_count fell to " + std::to_string(count) + " from " + std::to_string(last_) +
             was + ", and no step between restarted the service";
    }
    // The least it can be, the POSTs answered applied, follows from these two
    // rules: each applied answer raised it, and it never fell.
    return above_bound(r, count);
  }

  std::optional<std::string> above_bound(const Reading& r, std::int64_t count) const {
    const auto most = base_ + applied_ + lost_;
    if (count <= most) return std::nullopt;
    return r.where.text() + ": effect_count is " + std::to_string(count) + ", but " + std::to_string(most) +
           " is the most it can be (" + std::to_string(applied_) + " POST(s) answered applied and " +
           std::to_string(lost_) + " whose answer was lost" + since() + ")";
  }

  std::string since() const {
    return base_where_ ? ", counted from the " + std::to_string(base_) + " read at " + base_where_->text() : "";
  }

  std::int64_t last_ = 0;            // the operation has no effect before its first POST
  std::optional<Where> last_where_;  // none: the operation's start
  std::int64_t base_ = 0;            // the effects the bounds count from
  std::optional<Where> base_where_;  // where they were read; none: the operation's start
  std::int64_t applied_ = 0;
  std::int64_t lost_ = 0;
  bool measured_seen_ = false;
  std::optional<Where> restart_;  // the restart step whose first reading is still to come
  // Per instance: its boot_id and where it was read; and, across a restart,
  // the boot_id it had before and the step that restarted it.
  std::map<std::string, std::pair<std::string, Where>, std::less<>> boot_ids_;
  std::map<std::string, std::pair<std::string, Where>, std::less<>> restarted_from_;
};

bool restarts_service(const scenario::Scenario& scenario, std::size_t index) {
  return index < scenario.steps.size() && scenario.steps[index].step->needs().restarts_service;
}

// One step of the timeline as the history reads it.
struct StepView {
  Where where;                      // the step itself (exchange_number 0)
  bool restarts = false;            // the scenario's step restarts the service
  const json* exchanges = nullptr;  // its recorded exchanges; null: none (it threw)
};

// The steps as the evidence's timeline writes them.
std::vector<StepView> steps_of(const scenario::Scenario& scenario, const json& timeline) {
  std::vector<StepView> out;
  if (!timeline.is_array()) return out;
  out.reserve(timeline.size());
  for (const auto& record : timeline) {
    static const json kNull = nullptr;
    const auto* index = member(record, "index");
    const auto* kind = member(record, "kind");
    const auto* exchanges = member(record, "exchanges");
    out.push_back(
        {.where = {.index = std::nullopt,
                   .index_json = index ? index : &kNull,
                   .kind = &text_of(kind),
                   .exchange_number = 0,
                   .exchange = nullptr},
         .restarts = index && index->is_number_unsigned() && restarts_service(scenario, index->get<std::size_t>()),
         .exchanges = exchanges && exchanges->is_array() ? exchanges : nullptr});
  }
  return out;
}

// The steps as the runner recorded them.
std::vector<StepView> steps_of(const scenario::Scenario& scenario, const std::vector<runner::StepRecord>& timeline) {
  std::vector<StepView> out;
  out.reserve(timeline.size());
  for (const auto& record : timeline) {
    out.push_back({.where = {.index = record.index,
                             .index_json = nullptr,
                             .kind = &record.kind,
                             .exchange_number = 0,
                             .exchange = nullptr},
                   .restarts = restarts_service(scenario, record.index),
                   .exchanges = record.outcome ? &record.outcome->exchanges : nullptr});
  }
  return out;
}

std::optional<std::string> contradiction(const std::vector<StepView>& steps, const json& closing_exchange,
                                         const json& final_measurement) {
  History history;
  for (const auto& step : steps) {
    if (step.restarts) history.restart(step.where);
    if (!step.exchanges) continue;
    for (std::size_t i = 0; i < step.exchanges->size(); ++i) {
      const auto& exchange = (*step.exchanges)[i];
      auto where = step.where;
      where.exchange_number = i + 1;
      where.exchange = &exchange;
      if (auto why = history.read(reading_of(exchange, where))) return why;
    }
  }
  if (closing_exchange.is_object()) {
    auto closing = reading_of(closing_exchange, Where{.index = std::nullopt,
                                                      .index_json = nullptr,
                                                      .kind = nullptr,
                                                      .exchange_number = 0,
                                                      .exchange = &closing_exchange});
    closing.measured = closing.measured || history.measured();
    return history.read(closing);
  }
  if (!final_measurement.is_object()) return std::nullopt;
  return history.read({.where = {},
                       .instance = nullptr,
                       .post = Post::none,
                       .counts = &final_measurement,
                       .boot_id = nullptr,
                       .measured = history.measured()});
}

}  // namespace

std::optional<std::string> count_contradiction(const scenario::Scenario& scenario, const json& timeline,
                                               const json& closing_exchange, const json& final_measurement) {
  return contradiction(steps_of(scenario, timeline), closing_exchange, final_measurement);
}

namespace {

// A row counted at an effect sink, recounted from the calls its evidence
// holds: each call's applied is its answer "ok"; every call is for the
// scenario's operation (another would have made the row an ERROR); the
// effect count is the applied calls, and two or more are a CONFLICT.
std::optional<std::string> sink_contradiction(const json& evidence) {
  const auto& calls = evidence.at("effect_sink_calls");
  const auto& operation = evidence.at("operation_id");
  std::int64_t applied = 0;
  for (const auto& call : calls) {
    const bool ok = call.at("answer") == "ok";
    if (call.at("applied") != ok) {
      return "sink call " + call.at("sequence").dump() + " is answered " + call.at("answer").dump() +
             " but says applied " + call.at("applied").dump();
    }
    if (call.at("operation_id") != operation) {
      return "sink call " + call.at("sequence").dump() + " is for operation " + call.at("operation_id").dump() +
             ", not the scenario's, in a row with a verdict";
    }
    if (ok) ++applied;
  }
  const auto& final_measurement = evidence.value("final", json(nullptr));
  if (!final_measurement.is_object()) return "a row counted at the sink has no closing measurement";
  if (final_measurement.value("effect_count", json(nullptr)) != applied) {
    return "its closing effect_count is " + final_measurement.value("effect_count", json(nullptr)).dump() +
           ", but its effect_sink_calls hold " + std::to_string(applied) + " applied call(s) for its operation";
  }
  if ((applied >= 2) != (evidence.at("verdict") == "CONFLICT")) {
    return "its verdict is " + evidence.at("verdict").dump() + " with " + std::to_string(applied) +
           " applied sink call(s): two or more are a CONFLICT, fewer are not";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> count_contradiction_of_evidence(const json& evidence) {
  if (evidence.contains("effect_sink_calls")) {
    if (auto why = sink_contradiction(evidence)) return why;
  }
  const auto input = scenario::parse_scenario(evidence.at("input"), "scenario evidence input");
  return count_contradiction(input, evidence.at("timeline"), evidence.value("closing_exchange", json(nullptr)),
                             evidence.value("final", json(nullptr)));
}

void hold_counts(const scenario::Scenario& scenario, runner::ScenarioResult& result) {
  if (result.error) return;
  static const json kNone = nullptr;
  const auto& closing = result.final_measurement ? result.final_measurement->exchange : kNone;
  // The timeline as recorded, not as JSON: the same rule reads the same
  // exchanges, without copying them into a document first.
  // The counts of "final" are read only when there is no closing exchange.
  const auto final_measurement = closing.is_object() ? json(nullptr) : result.final_json();
  if (auto why = contradiction(steps_of(scenario, result.timeline), closing, final_measurement)) {
    runner::fail_with(result, "what the service reported cannot be true: " + *why);
  }
}

}  // namespace skewbench::evidence
