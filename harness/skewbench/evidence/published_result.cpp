// result.json: the published #018 result's shape, recomputed from what this
// run measured. Each check reads counts and states from the timeline and the
// closing measurement; none reads a scenario's expectations.

#include <map>

#include "common/digest.hpp"
#include "evidence/evidence.hpp"

namespace skewbench::evidence {
namespace {

using nlohmann::json;
using runner::ScenarioResult;
using scenario::Scenario;

struct Section {
  const Scenario* scenario = nullptr;
  const ScenarioResult* result = nullptr;
  bool usable() const { return scenario && result && !result->error && result->final_measurement.is_object(); }
};

const json* first_recover(const ScenarioResult& r) {
  for (const auto& rec : r.timeline) {
    if (rec["kind"] == "recover" && rec.contains("observed")) return &rec["observed"];
  }
  return nullptr;
}

// Observations made before recovery: the nodes' disagreement about one record.
json observations_before_recovery(const ScenarioResult& r) {
  json out = json::array();
  for (const auto& rec : r.timeline) {
    if (rec["kind"] == "recover") break;
    if (rec["kind"] != "observe" || !rec.contains("observed")) continue;
    const auto& o = rec["observed"];
    out.push_back({{"node", rec["node"]},
                   {"logical_time", o["logical_time_s"]},
                   {"active_idempotency_records", o["active_idempotency_records"]},
                   {"effect_count", o["effect_count"]},
                   {"temporal_state", o["temporal_state"]}});
  }
  return out;
}

// The idempotency keys every POST of the scenario carried.
std::vector<std::string> post_keys(const ScenarioResult& r) {
  std::vector<std::string> keys;
  for (const auto& rec : r.timeline) {
    if (!rec.contains("exchanges")) continue;
    for (const auto& ex : rec["exchanges"]) {
      if (ex["request"]["method"] == "POST") keys.push_back(ex["request"]["headers"].value("Idempotency-Key", ""));
    }
  }
  return keys;
}

bool same_key_throughout(const ScenarioResult& r) {
  const auto keys = post_keys(r);
  if (keys.size() < 2) return false;
  for (const auto& k : keys) {
    if (k != keys.front()) return false;
  }
  return true;
}

// Two observations of the same record (one effect) that disagree: one node
// sees it active, another sees it expired.
bool observations_disagree(const json& observations) {
  bool active = false;
  bool expired = false;
  for (const auto& o : observations) {
    if (o["effect_count"] != 1) return false;
    if (o["active_idempotency_records"] == 1 && o["temporal_state"] == "ACTIVE") active = true;
    if (o["active_idempotency_records"] == 0 && o["temporal_state"] == "EXPIRED") expired = true;
  }
  return active && expired;
}

json section_json(const Section& s) {
  if (!s.scenario || !s.result) return {{"ran", false}};
  const auto& r = *s.result;
  json out = {{"ran", true},
              {"scenario_id", s.scenario->id},
              {"policy", r.policy},
              {"policy_parameters", s.scenario->policy->parameters()},
              {"t0", s.scenario->t0_s},
              {"ttl_seconds", s.scenario->ttl_s},
              {"verdict", r.verdict},
              {"error", r.error ? json(*r.error) : json(nullptr)}};
  out["observations"] = observations_before_recovery(r);
  if (const auto* rec = first_recover(r)) {
    out["expires_at"] = (*rec)["expires_at_s"];
    out["recovery"] = *rec;
    out["temporal_state"] = (*rec)["temporal_state"];
    out["decision"] = (*rec)["decision"];
    out["second_post_delivery"] = (*rec)["delivery"];
    if (!(*rec)["interval_lower_s"].is_null()) {
      out["uncertainty_interval"] = {(*rec)["interval_lower_s"], (*rec)["interval_upper_s"]};
    }
  }
  if (r.final_measurement.is_object()) {
    const auto& f = r.final_measurement;
    out["post_requests"] = f["post_requests"];
    out["effect_count"] = f["effect_count"];
    out["ack_drops"] = f["ack_drops"];
    out["final_status"] = f["status"];
    out["outbox_status"] = f["outbox_status"];
  }
  return out;
}

json relative(const json& value, std::int64_t t0) {
  return value.is_number_integer() ? json(value.get<std::int64_t>() - t0) : json(nullptr);
}

json clock_model(const std::map<std::string, Section>& sections) {
  json model = {{"unit", "logical seconds; *_relative_s values are relative to the section's t0"},
                {"sections", json::object()}};
  for (const auto& [name, s] : sections) {
    if (!s.scenario) continue;
    json m = {{"t0", s.scenario->t0_s}, {"ttl_seconds", s.scenario->ttl_s}};
    json offsets = json::object();
    for (const auto& n : s.scenario->nodes) offsets[n.node_id] = n.offset_s;
    m["node_clock_offsets_s"] = offsets;
    if (s.result) {
      json readings = json::object();
      for (const auto& o : observations_before_recovery(*s.result)) {
        readings[o["node"].get<std::string>()] = relative(o["logical_time"], s.scenario->t0_s);
      }
      m["observed_readings_relative_s"] = readings;
      if (const auto* rec = first_recover(*s.result)) {
        m["expires_at_relative_s"] = relative((*rec)["expires_at_s"], s.scenario->t0_s);
        m["decision_time_basis"] = (*rec)["time_basis"];
        m["decision_reading_relative_s"] = relative((*rec)["reading_s"], s.scenario->t0_s);
        if (!(*rec)["interval_lower_s"].is_null()) {
          m["uncertainty_interval_relative_s"] = {relative((*rec)["interval_lower_s"], s.scenario->t0_s),
                                                  relative((*rec)["interval_upper_s"], s.scenario->t0_s)};
        }
      }
    }
    m["policy"] = s.scenario->policy->name();
    m["policy_parameters"] = s.scenario->policy->parameters();
    model["sections"][name] = m;
  }
  return model;
}

json check(const char* id, bool passed, json evidence) {
  return {
      {"id", id}, {"passed", passed}, {"points", passed ? 2 : 0}, {"max_points", 2}, {"evidence", std::move(evidence)}};
}

json missing(const char* id, const char* section) {
  return check(id, false, {{"reason", std::string("section ") + section + " did not run or ended in ERROR"}});
}

}  // namespace

json published_result(const std::vector<const Scenario*>& scenarios, const std::vector<ScenarioResult>& results,
                      const RunEnvironment& env) {
  std::map<std::string, Section> sections;
  for (const char* name : scenario::kReportSections) sections[name] = {};
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    if (scenarios[i]->report_as) sections[*scenarios[i]->report_as] = {scenarios[i], &results[i]};
  }
  const Section unsafe = sections["unsafe_node_clock"];
  const Section authority = sections["safe_clock_authority"];
  const Section guard = sections["safe_skew_guard"];

  json checks = json::array();

  if (unsafe.usable()) {
    const auto obs = observations_before_recovery(*unsafe.result);
    checks.push_back(check("same_record_yields_active_and_expired_under_clock_disagreement", observations_disagree(obs),
                           {{"section", "unsafe_node_clock"}, {"observations", obs}}));
  } else {
    checks.push_back(missing("same_record_yields_active_and_expired_under_clock_disagreement", "unsafe_node_clock"));
  }

  if (unsafe.usable() && first_recover(*unsafe.result)) {
    const auto& rec = *first_recover(*unsafe.result);
    const auto& f = unsafe.result->final_measurement;
    const bool same_key = same_key_throughout(*unsafe.result);
    const bool passed = rec["temporal_state"] == "EXPIRED" && rec["replayed"] == true && rec["delivery"] == "applied" &&
                        same_key && f["post_requests"] == 2 && f["effect_count"] == 2 && f["status"] == "conflict";
    checks.push_back(check("caller_local_clock_expiry_allows_same_key_duplicate", passed,
                           {{"temporal_state", rec["temporal_state"]},
                            {"second_post_delivery", rec["delivery"]},
                            {"same_idempotency_key", same_key},
                            {"post_requests", f["post_requests"]},
                            {"effect_count", f["effect_count"]},
                            {"status", f["status"]}}));
  } else {
    checks.push_back(missing("caller_local_clock_expiry_allows_same_key_duplicate", "unsafe_node_clock"));
  }

  if (authority.usable() && first_recover(*authority.result)) {
    const auto& rec = *first_recover(*authority.result);
    const auto& f = authority.result->final_measurement;
    const auto obs = observations_before_recovery(*authority.result);
    const bool disagree = observations_disagree(obs);
    const bool same_key = same_key_throughout(*authority.result);
    const bool passed = disagree && rec["temporal_state"] == "ACTIVE" && rec["time_basis"].is_string() &&
                        rec["time_basis"].get<std::string>().rfind("authority:", 0) == 0 &&
                        rec["delivery"] == "deduplicated" && same_key && f["post_requests"] == 2 &&
                        f["effect_count"] == 1 && f["status"] == "committed";
    checks.push_back(check("declared_clock_authority_deduplicates_despite_local_disagreement", passed,
                           {{"local_disagreement", disagree},
                            {"time_basis", rec["time_basis"]},
                            {"decision_time", rec["decision_time_s"]},
                            {"temporal_state", rec["temporal_state"]},
                            {"second_post_delivery", rec["delivery"]},
                            {"post_requests", f["post_requests"]},
                            {"effect_count", f["effect_count"]},
                            {"status", f["status"]}}));
  } else {
    checks.push_back(
        missing("declared_clock_authority_deduplicates_despite_local_disagreement", "safe_clock_authority"));
  }

  if (guard.usable() && first_recover(*guard.result)) {
    const auto& rec = *first_recover(*guard.result);
    const auto& f = guard.result->final_measurement;
    bool straddles = false;
    if (rec["interval_lower_s"].is_number_integer() && rec["expires_at_s"].is_number_integer()) {
      const auto lower = rec["interval_lower_s"].get<std::int64_t>();
      const auto upper = rec["interval_upper_s"].get<std::int64_t>();
      const auto expiry = rec["expires_at_s"].get<std::int64_t>();
      straddles = lower < expiry && expiry <= upper;
    }
    const bool passed = straddles && rec["temporal_state"] == "TIME_UNKNOWN" &&
                        rec["reconciled_status"] == "committed" && rec["replayed"] == false &&
                        f["post_requests"] == 1 && f["effect_count"] == 1 && f["outbox_status"] == "delivered";
    checks.push_back(check("skew_bound_crossing_expiry_preserves_time_unknown_and_reconciles", passed,
                           {{"interval", {rec["interval_lower_s"], rec["interval_upper_s"]}},
                            {"expires_at", rec["expires_at_s"]},
                            {"temporal_state", rec["temporal_state"]},
                            {"reconciled_status", rec["reconciled_status"]},
                            {"replayed", rec["replayed"]},
                            {"post_requests", f["post_requests"]},
                            {"effect_count", f["effect_count"]},
                            {"outbox_status", f["outbox_status"]}}));
  } else {
    checks.push_back(missing("skew_bound_crossing_expiry_preserves_time_unknown_and_reconciles", "safe_skew_guard"));
  }

  // The invariant: under the same clock disagreement, node-local expiry
  // duplicated the effect while both declared time policies kept exactly one.
  if (unsafe.usable() && authority.usable() && guard.usable()) {
    const auto e_unsafe = unsafe.result->final_measurement["effect_count"];
    const auto e_authority = authority.result->final_measurement["effect_count"];
    const auto e_guard = guard.result->final_measurement["effect_count"];
    const bool passed = e_unsafe == 2 && e_authority == 1 && e_guard == 1;
    checks.push_back(check("ttp_clock_authority_invariant_proved", passed,
                           {{"unsafe_effect_count", e_unsafe},
                            {"declared_authority_effect_count", e_authority},
                            {"uncertainty_effect_count", e_guard}}));
  } else {
    checks.push_back(missing("ttp_clock_authority_invariant_proved", "all three"));
  }

  int score = 0;
  for (const auto& c : checks) score += c["points"].get<int>();

  json out = {{"schema_version", kSchemaVersion},
              {"kind", "published_result"},
              {"benchmark", "018-clock-skew-expiry-disagreement"},
              {"harness", harness_json()},
              {"run_id", env.run_id},
              {"clock_model", clock_model(sections)},
              {"unsafe_node_clock", section_json(unsafe)},
              {"safe_clock_authority", section_json(authority)},
              {"safe_skew_guard", section_json(guard)},
              {"database", env.postgresql},
              {"http_service", env.remote_effect},
              {"checks", checks},
              {"score", score},
              {"max_score", 10},
              {"warnings", env.warnings}};
  json core = {{"clock_model", out["clock_model"]}, {"checks", checks}, {"score", score}};
  for (const char* name : scenario::kReportSections) {
    auto section = out[name];
    if (section.contains("recovery")) section.erase("recovery");
    core[name] = section;
  }
  out["core_digest"] = json_digest(core);
  return out;
}

}  // namespace skewbench::evidence
