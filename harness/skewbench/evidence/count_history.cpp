#include "evidence/count_history.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <utility>

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

// One answer's word on the operation, as the history reads it.
struct Reading {
  std::string where;     // "step 3 (recover), exchange 1 (POST /effects)"
  std::string instance;  // the instance that answered: "" when the scenario reaches one
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

std::string text_of(const json* value) { return value && value->is_string() ? value->get<std::string>() : ""; }

std::string who(const std::string& instance) { return instance.empty() ? "the service" : instance; }

Post post_of(const json& exchange) {
  const auto outcome = text_of(member(exchange, "transport_outcome"));
  if (outcome.empty()) return Post::none;
  if (outcome == "ACK_UNKNOWN") return Post::lost;
  if (outcome != "ACK_RECEIVED") return Post::other;
  // A service of its own wire is classified by its target file; the protocol's
  // answer names its delivery.
  const auto* harness = member(exchange, "harness");
  const auto* answer_class = harness ? member(*harness, "answer_class") : nullptr;
  const auto* response = member(exchange, "response");
  const auto delivery = answer_class ? text_of(answer_class) : response ? text_of(member(*response, "delivery")) : "";
  return delivery == "applied" ? Post::applied : Post::other;
}

Reading reading_of(const json& exchange, std::string where) {
  const auto* harness = member(exchange, "harness");
  const auto* counted = harness ? member(*harness, "counted_by_skewbench") : nullptr;
  const auto* response = member(exchange, "response");
  const auto* counts = counted && counted->is_object() ? counted : response;
  const auto* boot_id = response ? member(*response, "boot_id") : nullptr;
  return {.where = std::move(where),
          .instance = harness ? text_of(member(*harness, "instance")) : "",
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
  void restart(const std::string& step) {
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
        return r.where + ": " + field + " is " + value->dump() + ", not a count (an integer from 0 to 2^53)";
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
    const auto id = r.boot_id->get<std::string>();
    if (const auto it = restarted_from_.find(r.instance); it != restarted_from_.end()) {
      const auto [before, step] = it->second;
      restarted_from_.erase(it);
      if (id == before) {
        return r.where + ": " + who(r.instance) + "'s boot_id is still " + id + " after " + step +
               " restarted it: the service did not restart";
      }
    } else if (const auto seen = boot_ids_.find(r.instance); seen != boot_ids_.end() && seen->second.first != id) {
      return r.where + ": " + who(r.instance) + "'s boot_id is " + id + ", but it was " + seen->second.first + " at " +
             seen->second.second + ", and no step between restarted the service";
    }
    boot_ids_[r.instance] = {id, r.where};
    return std::nullopt;
  }

  std::optional<std::string> effect_count(const Reading& r, std::int64_t count) const {
    const auto was = " at " + last_where_;
    if (r.post == Post::applied && count <= last_) {
      return r.where + ": answered applied, yet effect_count " + std::to_string(count) + " did not rise above the " +
             std::to_string(last_) + was;
    }
    if (count < last_) {
      return r.where + ": effect_count fell to " + std::to_string(count) + " from " + std::to_string(last_) + was +
             ", and no step between restarted the service";
    }
    // The least it can be, the POSTs answered applied, follows from these two
    // rules: each applied answer raised it, and it never fell.
    return above_bound(r, count);
  }

  std::optional<std::string> above_bound(const Reading& r, std::int64_t count) const {
    const auto most = base_ + applied_ + lost_;
    if (count <= most) return std::nullopt;
    return r.where + ": effect_count is " + std::to_string(count) + ", but " + std::to_string(most) +
           " is the most it can be (" + std::to_string(applied_) + " POST(s) answered applied and " +
           std::to_string(lost_) + " whose answer was lost" + since() + ")";
  }

  std::string since() const {
    return base_where_.empty() ? "" : ", counted from the " + std::to_string(base_) + " read at " + base_where_;
  }

  std::int64_t last_ = 0;  // the operation has no effect before its first POST
  std::string last_where_ = "the operation's start";
  std::int64_t base_ = 0;   // the effects the bounds count from
  std::string base_where_;  // where they were read; empty: the operation's start
  std::int64_t applied_ = 0;
  std::int64_t lost_ = 0;
  bool measured_seen_ = false;
  std::optional<std::string> restart_;  // the restart step whose first reading is still to come
  // Per instance: its boot_id and where it was read; and, across a restart,
  // the boot_id it had before and the step that restarted it.
  std::map<std::string, std::pair<std::string, std::string>> boot_ids_;
  std::map<std::string, std::pair<std::string, std::string>> restarted_from_;
};

std::string exchange_name(const json& exchange) {
  const auto& request = exchange.value("request", json::object());
  return text_of(member(request, "method")) + " " + text_of(member(request, "path"));
}

bool restarts_service(const scenario::Scenario& scenario, const json& record) {
  const auto* index = member(record, "index");
  if (!index || !index->is_number_unsigned() || index->get<std::size_t>() >= scenario.steps.size()) return false;
  return scenario.steps[index->get<std::size_t>()].step->needs().restarts_service;
}

}  // namespace

std::optional<std::string> count_contradiction(const scenario::Scenario& scenario, const json& timeline,
                                               const json& closing_exchange, const json& final_measurement) {
  History history;
  for (const auto& record : timeline.is_array() ? timeline : json::array()) {
    const auto step =
        "step " + record.value("index", json(nullptr)).dump() + " (" + text_of(member(record, "kind")) + ")";
    if (restarts_service(scenario, record)) history.restart(step);
    const auto* exchanges = member(record, "exchanges");
    if (!exchanges || !exchanges->is_array()) continue;
    for (std::size_t i = 0; i < exchanges->size(); ++i) {
      const auto& exchange = (*exchanges)[i];
      const auto where = step + ", exchange " + std::to_string(i + 1) + " (" + exchange_name(exchange) + ")";
      if (auto why = history.read(reading_of(exchange, where))) return why;
    }
  }
  const auto where = "the closing measurement";
  if (closing_exchange.is_object()) {
    auto closing = reading_of(closing_exchange, std::string(where) + " (" + exchange_name(closing_exchange) + ")");
    closing.measured = closing.measured || history.measured();
    return history.read(closing);
  }
  if (!final_measurement.is_object()) return std::nullopt;
  return history.read({.where = where,
                       .instance = "",
                       .post = Post::none,
                       .counts = &final_measurement,
                       .boot_id = nullptr,
                       .measured = history.measured()});
}

std::optional<std::string> count_contradiction_of_evidence(const json& evidence) {
  const auto input = scenario::parse_scenario(evidence.at("input"), "scenario evidence input");
  return count_contradiction(input, evidence.at("timeline"), evidence.value("closing_exchange", json(nullptr)),
                             evidence.value("final", json(nullptr)));
}

void hold_counts(const scenario::Scenario& scenario, runner::ScenarioResult& result) {
  if (result.error) return;
  const auto closing = result.final_measurement ? result.final_measurement->exchange : json(nullptr);
  if (auto why = count_contradiction(scenario, runner::to_json(result.timeline), closing, result.final_json())) {
    runner::fail_with(result, "what the service reported cannot be true: " + *why);
  }
}

}  // namespace skewbench::evidence
