// #018 clock skew / expiry disagreement: result.json's sections, its
// clock_model and its five checks. Every number is read from the scenarios
// and what the run measured; only the names and the clock model's type are
// the published ones. Node A is a scenario's first declared node, node B its
// second.

#include <algorithm>
#include <cctype>

#include "evidence/evidence.hpp"
#include "published/published.hpp"
#include "time/logical_time.hpp"

namespace skewbench::published {
namespace {

using nlohmann::json;

inline constexpr const char* kUnsafe = "unsafe_node_clock";
inline constexpr const char* kAuthority = "safe_clock_authority";
inline constexpr const char* kGuard = "safe_skew_guard";

json recovery_field(const SectionRun& run, const char* name) { return field_of(run.recovery(), name); }

json final_field(const SectionRun& run, const char* name) {
  const auto final_measurement = run.final_measurement();
  return field_of(&final_measurement, name);
}

json observed_by_node(const SectionRun& run, std::size_t node_index, const char* name) {
  const auto node = run.node_id(node_index);
  return node ? field_of(run.observation_by(*node), name) : json(nullptr);
}

// The record's expiry as the outbox holds it, read at recovery (or, without
// one, at the last observation).
json expires_at(const SectionRun& run) {
  if (const auto* recovery = run.recovery()) return (*recovery)["expires_at_s"];
  const auto observations = run.observations_before_recovery();
  if (observations.empty()) return nullptr;
  const auto node = observations.back()["node"].get<std::string>();
  return field_of(run.observation_by(node), "expires_at_s");
}

// The remote's effect count in the last observation before recovery.
json effect_count_before_recovery(const SectionRun& run) {
  const auto observations = run.observations_before_recovery();
  return observations.empty() ? json(nullptr) : observations.back()["effect_count"];
}

json difference(const json& a, const json& b) {
  if (!a.is_number_integer() || !b.is_number_integer()) return nullptr;
  return a.get<std::int64_t>() - b.get<std::int64_t>();
}

json lower_case(const json& value) {
  if (!value.is_string()) return nullptr;
  auto text = value.get<std::string>();
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::optional<time::UncertaintyInterval> interval_of(const SectionRun& run) {
  const auto lower = recovery_field(run, "interval_lower_s");
  const auto upper = recovery_field(run, "interval_upper_s");
  if (!lower.is_number_integer() || !upper.is_number_integer()) return std::nullopt;
  return time::UncertaintyInterval{lower.get<std::int64_t>(), upper.get<std::int64_t>()};
}

json expiry_inside(const SectionRun& run) {
  const auto interval = interval_of(run);
  const auto expiry = expires_at(run);
  if (!interval || !expiry.is_number_integer()) return nullptr;
  return interval->straddles(expiry.get<std::int64_t>());
}

// --- sections --------------------------------------------------------------

json unsafe_node_clock(const SectionRun& run) {
  return {{"expires_at", expires_at(run)},
          {"node_a_evaluation_time", observed_by_node(run, 0, "logical_time_s")},
          {"node_a_active_idempotency_records", observed_by_node(run, 0, "active_idempotency_records")},
          {"node_b_evaluation_time", observed_by_node(run, 1, "logical_time_s")},
          {"node_b_active_idempotency_records", observed_by_node(run, 1, "active_idempotency_records")},
          {"effect_count_before_replay", effect_count_before_recovery(run)},
          {"second_post_delivery", recovery_field(run, "delivery")},
          {"final_effect_count", final_field(run, "effect_count")},
          {"final_status", final_field(run, "status")}};
}

json safe_clock_authority(const SectionRun& run) {
  const auto state = recovery_field(run, "temporal_state");
  return {{"node_a_local_time", observed_by_node(run, 0, "logical_time_s")},
          {"node_b_local_time", observed_by_node(run, 1, "logical_time_s")},
          {"authority_time", recovery_field(run, "decision_time_s")},
          {"expires_at", expires_at(run)},
          // The authority's own classification of the record at its time.
          {"authoritative_record_active",
           state.is_string() ? json(state == word(policy::TemporalState::Active)) : json(nullptr)},
          {"second_post_delivery", recovery_field(run, "delivery")},
          {"final_effect_count", final_field(run, "effect_count")},
          {"final_status", final_field(run, "status")}};
}

json safe_skew_guard(const SectionRun& run) {
  const auto interval = interval_of(run);
  return {{"expires_at", expires_at(run)},
          {"observed_local_time", recovery_field(run, "reading_s")},
          {"uncertainty_interval", interval ? json::array({interval->lower_s, interval->upper_s}) : json(nullptr)},
          {"expiry_inside_uncertainty", expiry_inside(run)},
          {"temporal_decision", lower_case(recovery_field(run, "temporal_state"))},
          {"reconciled_status", recovery_field(run, "reconciled_status")},
          {"second_post_made", run.post_keys().size() >= 2},
          {"final_effect_count", final_field(run, "effect_count")}};
}

// --- clock_model -----------------------------------------------------------

// Our per-section detail of the clocks, kept under clock_model.sections.
json clock_section_detail(const SectionRun& run) {
  const auto& s = *run.scenario;
  json offsets = json::object();
  for (const auto& n : s.nodes) offsets[n.node_id] = n.offset_s;
  json readings = json::object();
  for (const auto& o : run.observations_before_recovery()) {
    readings[o["node"].get<std::string>()] = run.relative_to_t0(o["logical_time"]);
  }
  json m = {{"t0", s.t0_s},
            {"ttl_seconds", s.ttl_s},
            {"node_clock_offsets_s", offsets},
            {"observed_readings_relative_s", readings},
            {"policy", s.policy->name()},
            {"policy_parameters", s.policy->parameters()}};
  if (const auto* rec = run.recovery()) {
    m["expires_at_relative_s"] = run.relative_to_t0((*rec)["expires_at_s"]);
    m["decision_time_basis"] = (*rec)["time_basis"];
    m["decision_reading_relative_s"] = run.relative_to_t0((*rec)["reading_s"]);
    if (const auto interval = interval_of(run)) {
      m["uncertainty_interval_relative_s"] = {run.relative_to_t0(interval->lower_s),
                                              run.relative_to_t0(interval->upper_s)};
    }
  }
  return m;
}

// The section the shared clock parameters (TTL, node A and B) are read from:
// the unsafe one, or the first other that ran.
const char* clock_source(const SectionRuns& runs) {
  for (const char* name : {kUnsafe, kAuthority, kGuard}) {
    if (runs.at(name).ran()) return name;
  }
  return nullptr;
}

json clock_model(const SectionRuns& runs) {
  const char* source = clock_source(runs);
  const SectionRun none;
  const auto& nodes = source ? runs.at(source) : none;
  const auto node_a = nodes.relative_to_t0(nodes.node_reading_at_recovery(0));
  const auto node_b = nodes.relative_to_t0(nodes.node_reading_at_recovery(1));
  const auto& authority = runs.at(kAuthority);
  const auto& guard = runs.at(kGuard);
  json sections = json::object();
  for (const auto& [name, run] : runs) {
    if (run.ran()) sections[name] = clock_section_detail(run);
  }
  return {{"type", "deterministic logical epochs"},
          {"ttl_seconds", source ? json(nodes.scenario->ttl_s) : json(nullptr)},
          {"node_a_offset_seconds", node_a},
          {"node_b_offset_seconds", node_b},
          {"clock_disagreement_seconds", difference(node_b, node_a)},
          {"authority_offset_seconds", authority.relative_to_t0(recovery_field(authority, "decision_time_s"))},
          {"max_clock_error_seconds",
           difference(recovery_field(guard, "interval_upper_s"), recovery_field(guard, "reading_s"))},
          {"derived_from",
           {{"ttl_seconds", source ? json(source) : json(nullptr)},
            {"node_offsets", source ? json(source) : json(nullptr)},
            {"authority_offset_seconds", kAuthority},
            {"max_clock_error_seconds", kGuard}}},
          {"unit", "logical seconds; *_offset_seconds and *_relative_s values are relative to the section's t0"},
          {"sections", sections}};
}

// --- checks ----------------------------------------------------------------

bool same_key_throughout(const SectionRun& run) {
  const auto keys = run.post_keys();
  return keys.size() >= 2 && std::all_of(keys.begin(), keys.end(), [&](const auto& k) { return k == keys.front(); });
}

// Observations of the same record (one effect) that disagree: one node sees
// it active, another sees it expired.
bool observations_disagree(const json& observations) {
  bool active = false;
  bool expired = false;
  for (const auto& o : observations) {
    if (o["effect_count"] != 1) return false;
    if (o["active_idempotency_records"] == 1 && o["temporal_state"] == word(policy::TemporalState::Active))
      active = true;
    if (o["active_idempotency_records"] == 0 && o["temporal_state"] == word(policy::TemporalState::Expired))
      expired = true;
  }
  return active && expired;
}

CheckOutcome no_recovery(const char* section) {
  return CheckOutcome::not_measured({{"section", section}, {"reason", "no recovery step ran"}});
}

CheckOutcome disagreement(const SectionRuns& runs) {
  const auto observations = runs.at(kUnsafe).observations_before_recovery();
  for (const auto& o : observations) {
    if (auto missing = unreported("active_idempotency_records", kUnsafe, {o["active_idempotency_records"]})) {
      return *missing;
    }
  }
  return {observations_disagree(observations), {{"section", kUnsafe}, {"observations", observations}}};
}

CheckOutcome local_expiry_duplicates(const SectionRuns& runs) {
  const auto& run = runs.at(kUnsafe);
  const auto* rec = run.recovery();
  if (!rec) return no_recovery(kUnsafe);
  const auto& f = run.final_measurement();
  const bool same_key = same_key_throughout(run);
  const bool passed = (*rec)["temporal_state"] == word(policy::TemporalState::Expired) && (*rec)["replayed"] == true &&
                      (*rec)["delivery"] == word(remote_effect::Delivery::applied) && same_key &&
                      f["post_requests"] == 2 && f["effect_count"] == 2 && f["status"] == "conflict";
  return {passed,
          {{"temporal_state", (*rec)["temporal_state"]},
           {"second_post_delivery", (*rec)["delivery"]},
           {"same_idempotency_key", same_key},
           {"post_requests", f["post_requests"]},
           {"effect_count", f["effect_count"]},
           {"status", f["status"]}}};
}

CheckOutcome authority_deduplicates(const SectionRuns& runs) {
  const auto& run = runs.at(kAuthority);
  const auto* rec = run.recovery();
  if (!rec) return no_recovery(kAuthority);
  const auto& f = run.final_measurement();
  const bool disagree = observations_disagree(run.observations_before_recovery());
  const bool same_key = same_key_throughout(run);
  const auto& basis = (*rec)["time_basis"];
  const bool by_authority = basis.is_string() && basis.get<std::string>().rfind("authority:", 0) == 0;
  const bool passed = disagree && by_authority && (*rec)["temporal_state"] == word(policy::TemporalState::Active) &&
                      (*rec)["delivery"] == word(remote_effect::Delivery::deduplicated) && same_key &&
                      f["post_requests"] == 2 && f["effect_count"] == 1 && f["status"] == "committed";
  return {passed,
          {{"local_disagreement", disagree},
           {"time_basis", basis},
           {"decision_time", (*rec)["decision_time_s"]},
           {"temporal_state", (*rec)["temporal_state"]},
           {"second_post_delivery", (*rec)["delivery"]},
           {"post_requests", f["post_requests"]},
           {"effect_count", f["effect_count"]},
           {"status", f["status"]}}};
}

CheckOutcome uncertainty_reconciles(const SectionRuns& runs) {
  const auto& run = runs.at(kGuard);
  const auto* rec = run.recovery();
  if (!rec) return no_recovery(kGuard);
  const auto& f = run.final_measurement();
  const bool straddles = expiry_inside(run) == true;
  const bool passed = straddles && (*rec)["temporal_state"] == word(policy::TemporalState::TimeUnknown) &&
                      (*rec)["reconciled_status"] == "committed" && (*rec)["replayed"] == false &&
                      f["post_requests"] == 1 && f["effect_count"] == 1 &&
                      f["outbox_status"] == word(infra::OutboxStatus::Delivered);
  return {passed,
          {{"interval", {(*rec)["interval_lower_s"], (*rec)["interval_upper_s"]}},
           {"expires_at", (*rec)["expires_at_s"]},
           {"temporal_state", (*rec)["temporal_state"]},
           {"reconciled_status", (*rec)["reconciled_status"]},
           {"replayed", (*rec)["replayed"]},
           {"post_requests", f["post_requests"]},
           {"effect_count", f["effect_count"]},
           {"outbox_status", f["outbox_status"]}}};
}

// The invariant: under the same clock disagreement, node-local expiry
// duplicated the effect while both declared time policies kept exactly one.
CheckOutcome invariant(const SectionRuns& runs) {
  const auto unsafe = runs.at(kUnsafe).final_measurement()["effect_count"];
  const auto authority = runs.at(kAuthority).final_measurement()["effect_count"];
  const auto guard = runs.at(kGuard).final_measurement()["effect_count"];
  return {unsafe == 2 && authority == 1 && guard == 1,
          {{"unsafe_effect_count", unsafe},
           {"declared_authority_effect_count", authority},
           {"uncertainty_effect_count", guard}}};
}

}  // namespace

const PublishedBenchmark& benchmark_018() {
  static const PublishedBenchmark benchmark{
      .id = "018-clock-skew-expiry-disagreement",
      .result_file = "result.json",
      .report_prefix = "",
      .sections = {{kUnsafe, unsafe_node_clock}, {kAuthority, safe_clock_authority}, {kGuard, safe_skew_guard}},
      .blocks = {{"clock_model", clock_model}},
      .checks = {{"same_record_yields_active_and_expired_under_clock_disagreement", {kUnsafe}, disagreement},
                 {"caller_local_clock_expiry_allows_same_key_duplicate", {kUnsafe}, local_expiry_duplicates},
                 {"declared_clock_authority_deduplicates_despite_local_disagreement",
                  {kAuthority},
                  authority_deduplicates},
                 {"skew_bound_crossing_expiry_preserves_time_unknown_and_reconciles", {kGuard}, uncertainty_reconciles},
                 {"ttp_clock_authority_invariant_proved", {kUnsafe, kAuthority, kGuard}, invariant}},
      .points_per_check = 2};
  return benchmark;
}

json published_result(const std::vector<const scenario::Scenario*>& scenarios,
                      const std::vector<runner::ScenarioResult>& results, const RunEnvironment& env) {
  return published_result(benchmark_018(), scenarios, results, env);
}

}  // namespace skewbench::published
