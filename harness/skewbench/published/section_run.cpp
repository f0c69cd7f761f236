// Reading one published section's run: its timeline, observations and
// recovery, for the section and check functions of every benchmark.

#include "published/published.hpp"

namespace skewbench::published {

using nlohmann::json;

json field_of(const json* object, const char* name) {
  return object && object->is_object() ? object->value(name, json(nullptr)) : json(nullptr);
}

bool SectionRun::errored() const { return ran() && (result->error.has_value() || !result->final_measurement); }

const runner::StepRecord* SectionRun::recovery_step() const {
  if (!ran()) return nullptr;
  for (const auto& record : result->timeline) {
    if (record.role == steps::StepRole::Recovery && record.outcome) return &record;
  }
  return nullptr;
}

const json* SectionRun::recovery() const {
  const auto* step = recovery_step();
  return step ? step->observed() : nullptr;
}

std::vector<const runner::StepRecord*> SectionRun::observations_before_recovery_steps() const {
  std::vector<const runner::StepRecord*> out;
  if (!ran()) return out;
  for (const auto& record : result->timeline) {
    if (record.role == steps::StepRole::Recovery) break;
    if (record.role == steps::StepRole::Observation && record.outcome) out.push_back(&record);
  }
  return out;
}

json SectionRun::observations_before_recovery() const {
  json out = json::array();
  for (const auto* record : observations_before_recovery_steps()) {
    const auto& o = *record->observed();
    out.push_back({{"node", record->node ? json(*record->node) : json(nullptr)},
                   {"logical_time", o["logical_time_s"]},
                   {"active_idempotency_records", o["active_idempotency_records"]},
                   {"effect_count", o["effect_count"]},
                   {"temporal_state", o["temporal_state"]}});
  }
  return out;
}

const json* SectionRun::observation_by(const std::string& node_id) const {
  const json* last = nullptr;
  for (const auto* record : observations_before_recovery_steps()) {
    if (record->node == node_id) last = record->observed();
  }
  return last;
}

std::optional<std::string> SectionRun::node_id(std::size_t index) const {
  if (!scenario || index >= scenario->nodes.size()) return std::nullopt;
  return scenario->nodes[index].node_id;
}

json SectionRun::node_reading_at_recovery(std::size_t node_index) const {
  const auto node = node_id(node_index);
  const auto* step = recovery_step();
  if (!node || !step) return nullptr;
  const auto at_s = step->at_s;
  // What the node itself read at that moment, when it observed then.
  for (const auto& record : result->timeline) {
    if (record.role == steps::StepRole::Observation && record.node == *node && record.at_s == at_s && record.outcome) {
      return record.outcome->observed["logical_time_s"];
    }
  }
  // Otherwise its clock: the declared offset, as last set before that moment.
  auto offset_s = scenario->nodes[node_index].offset_s;
  for (const auto& record : result->timeline) {
    if (record.role == steps::StepRole::ClockChange && record.node == *node && record.at_s <= at_s) {
      offset_s = record.parameters["offset_s"].get<std::int64_t>();
    }
  }
  return scenario->t0_s + at_s + offset_s;
}

json SectionRun::relative_to_t0(const json& value) const {
  if (!scenario || !value.is_number_integer()) return nullptr;
  return value.get<std::int64_t>() - scenario->t0_s;
}

std::vector<std::string> SectionRun::post_keys() const {
  std::vector<std::string> keys;
  if (!ran()) return keys;
  for (const auto& record : result->timeline) {
    if (!record.outcome) continue;
    for (const auto& ex : record.outcome->exchanges) {
      const auto& request = ex["request"];
      if (request["method"] != "POST" || request.value("path", "") != "/effects") continue;
      keys.push_back(request["headers"].value("Idempotency-Key", ""));
    }
  }
  return keys;
}

}  // namespace skewbench::published
