// The rest of the published series (#015, #016, #017, #019): each result
// file's sections, run-level values and five checks. Every value is read from
// the scenarios and what the run measured; only names, the published
// vocabulary of transport outcomes and #017's clock model sentence are fixed.

#include <algorithm>
#include <cctype>

#include "evidence/evidence.hpp"
#include "published/published.hpp"

namespace skewbench::published {
namespace {

using nlohmann::json;

// --- reading a section's run -----------------------------------------------

json final_field(const SectionRun& run, const char* name) {
  const auto final_measurement = run.final_measurement();
  return field_of(&final_measurement, name);
}

json recovery_field(const SectionRun& run, const char* name) { return field_of(run.recovery(), name); }

// The first timeline record of `role` whose observation holds the field
// `marker` (the field that says which act it was: a restart's
// boot_id_changed, a collection's removed_records); null when there is none.
// A published field is read by the part a step played and what it observed,
// never by the step's kind, so any kind that plays the part is read the same.
const runner::StepRecord* step_of(const SectionRun& run, steps::StepRole role, const char* marker) {
  if (!run.ran()) return nullptr;
  for (const auto& record : run.result->timeline) {
    if (record.role == role && record.outcome && record.observed()->contains(marker)) return &record;
  }
  return nullptr;
}

// Field `name` of that record; null when there is none.
json observed_in(const SectionRun& run, steps::StepRole role, const char* marker, const char* name) {
  const auto* step = step_of(run, role, marker);
  return step ? field_of(step->observed(), name) : json(nullptr);
}
json observed_in(const SectionRun& run, steps::StepRole role, const char* name) {
  return observed_in(run, role, name, name);
}

// Every observation, in order (also after a recovery).
std::vector<const json*> observations(const SectionRun& run) {
  std::vector<const json*> out;
  if (!run.ran()) return out;
  for (const auto& record : run.result->timeline) {
    if (record.role == steps::StepRole::Observation && record.outcome) out.push_back(record.observed());
  }
  return out;
}

// The last observation before the first recovery.
const json* last_observation_before_recovery(const SectionRun& run) {
  const auto steps = run.observations_before_recovery_steps();
  return steps.empty() ? nullptr : steps.back()->observed();
}

// The recovery's exchange of a method (POST: its replay; GET: its reconcile).
const json* recovery_exchange(const SectionRun& run, const char* method) {
  const auto* step = run.recovery_step();
  if (!step) return nullptr;
  for (const auto& ex : step->outcome->exchanges) {
    if (ex["request"]["method"] == method) return &ex;
  }
  return nullptr;
}

json lower_case(const json& value) {
  if (!value.is_string()) return nullptr;
  auto text = value.get<std::string>();
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// Our transport outcomes in the published vocabulary.
json outcome_name(const json& transport_outcome) {
  if (transport_outcome == word(infra::TransportOutcome::AckReceived)) return "acknowledged";
  if (transport_outcome == word(infra::TransportOutcome::AckUnknown)) return "ack_unknown";
  return lower_case(transport_outcome);  // rejected, fenced_out
}

// ACK_UNKNOWN arises only when the connection closed after the request went
// out and before any response: what the published (Python) client names
// RemoteDisconnected. Any other outcome had no transport error.
json error_type(const json& transport_outcome) {
  return transport_outcome == word(infra::TransportOutcome::AckUnknown) ? json("RemoteDisconnected") : json(nullptr);
}

bool second_post_made(const SectionRun& run) { return run.post_keys().size() >= 2; }

bool same_key_throughout(const SectionRun& run) {
  const auto keys = run.post_keys();
  return keys.size() >= 2 && std::all_of(keys.begin(), keys.end(), [&](const auto& k) { return k == keys.front(); });
}

json remote_counts(const json& snapshot) {
  return {{"status", field_of(&snapshot, "status")},
          {"effect_count", field_of(&snapshot, "effect_count")},
          {"post_requests", field_of(&snapshot, "post_requests")},
          {"ack_drops", field_of(&snapshot, "ack_drops")}};
}

json final_outbox(const SectionRun& run) {
  return {{"status", final_field(run, "outbox_status")}, {"delivery_attempts", final_field(run, "delivery_attempts")}};
}

json final_counts(const SectionRun& run) { return remote_counts(run.final_measurement()); }

json effects(const SectionRun& run) { return run.final_measurement()["effect_count"]; }

// A check whose section ran without the step it reads: not measured.
CheckOutcome no_step(const char* section, const char* kind) {
  return CheckOutcome::not_measured({{"section", section}, {"reason", std::string("no ") + kind + " step ran"}});
}

// --- #015 HTTP idempotency boundary ----------------------------------------

inline constexpr const char* k15Unsafe = "unsafe";
inline constexpr const char* k15Redelivery = "safe_redelivery";
inline constexpr const char* k15Reconcile = "safe_reconcile_before_retry";

json operation_fields(const SectionRun& run) {
  return {{"operation", run.result->operation_name},
          {"business_state", observed_in(run, steps::StepRole::Setup, "business_state")},
          {"business_version", observed_in(run, steps::StepRole::Setup, "business_version")}};
}

json first_post(const SectionRun& run) {
  const auto outcome = observed_in(run, steps::StepRole::Delivery, "transport_outcome");
  return {{"idempotency_key", observed_in(run, steps::StepRole::Delivery, "idempotency_key")},
          {"outcome", outcome_name(outcome)},
          {"error_type", error_type(outcome)}};
}

json recovery_post(const SectionRun& run) {
  const auto* ex = recovery_exchange(run, "POST");
  return {{"idempotency_key", recovery_field(run, "idempotency_key")},
          {"outcome", outcome_name(recovery_field(run, "transport_outcome"))},
          {"delivery", recovery_field(run, "delivery")},
          {"http_status", field_of(ex, "http_status")}};
}

json s015_unsafe(const SectionRun& run) {
  auto out = operation_fields(run);
  const auto keys = run.post_keys();
  out["logical_outbox_key"] = run.result->stable_key_name;
  out["first_post"] = first_post(run);
  out["retry_post"] = recovery_post(run);
  out["remote_status"] = final_field(run, "status");
  out["remote_post_requests"] = final_field(run, "post_requests");
  out["remote_effect_count"] = final_field(run, "effect_count");
  out["retry_identity_reused"] = keys.size() >= 2 ? json(keys[0] == keys[1]) : json(nullptr);
  return out;
}

json s015_redelivery(const SectionRun& run) {
  auto out = operation_fields(run);
  auto first = first_post(run);
  first.erase("idempotency_key");
  auto second = recovery_post(run);
  second.erase("idempotency_key");
  out["stable_key"] = run.result->stable_key_name;
  out["first_post"] = first;
  const auto* seen = last_observation_before_recovery(run);
  out["status_after_ack_loss"] = seen ? remote_counts(*seen) : json(nullptr);
  out["second_post"] = second;
  out["final_http_status"] = final_counts(run);
  out["final_outbox"] = final_outbox(run);
  return out;
}

json s015_reconcile(const SectionRun& run) {
  auto out = operation_fields(run);
  auto first = first_post(run);
  first.erase("idempotency_key");
  out["stable_key"] = run.result->stable_key_name;
  out["first_post"] = first;
  const auto* ex = recovery_exchange(run, "GET");
  out["reconciled_http_status"] = ex ? remote_counts((*ex)["response"]) : json(nullptr);
  out["second_post_made"] = second_post_made(run);
  out["final_outbox"] = final_outbox(run);
  return out;
}

// Each section crossed both systems: a PostgreSQL transaction committed the
// business state, the POST to the separate HTTP service lost its ack (the
// service counted the drop), and the outbox ended delivered.
CheckOutcome c015_boundary(const SectionRuns& runs) {
  bool passed = true;
  json evidence = json::object();
  for (const char* name : {k15Unsafe, k15Redelivery, k15Reconcile}) {
    const auto& run = runs.at(name);
    const auto committed = observed_in(run, steps::StepRole::Setup, "business_state");
    const auto first = observed_in(run, steps::StepRole::Delivery, "transport_outcome");
    const auto& f = run.final_measurement();
    passed = passed && committed == "committed" && first == word(infra::TransportOutcome::AckUnknown) &&
             f["ack_drops"] == 1 && f["outbox_status"] == word(infra::OutboxStatus::Delivered);
    evidence[name] = {{"business_state", committed},
                      {"first_post_outcome", first},
                      {"remote_ack_drops", f["ack_drops"]},
                      {"outbox_status", f["outbox_status"]}};
  }
  return {passed, evidence};
}

CheckOutcome c015_new_identity(const SectionRuns& runs) {
  const auto& run = runs.at(k15Unsafe);
  if (!run.recovery()) return no_step(k15Unsafe, "recovery");
  const auto keys = run.post_keys();
  const bool new_key = keys.size() == 2 && keys[0] != keys[1];
  const auto& f = run.final_measurement();
  const bool passed =
      new_key &&
      observed_in(run, steps::StepRole::Delivery, "transport_outcome") == word(infra::TransportOutcome::AckUnknown) &&
      recovery_field(run, "delivery") == word(remote_effect::Delivery::applied) && f["effect_count"] == 2 &&
      f["status"] == "conflict";
  return {passed,
          {{"retry_used_new_key", new_key},
           {"retry_delivery", recovery_field(run, "delivery")},
           {"effect_count", f["effect_count"]},
           {"status", f["status"]}}};
}

CheckOutcome c015_stable_key(const SectionRuns& runs) {
  const auto& run = runs.at(k15Redelivery);
  if (!run.recovery()) return no_step(k15Redelivery, "recovery");
  const bool same_key = same_key_throughout(run);
  const auto& f = run.final_measurement();
  const bool passed = same_key && recovery_field(run, "delivery") == word(remote_effect::Delivery::deduplicated) &&
                      f["effect_count"] == 1 && f["post_requests"] == 2 &&
                      f["outbox_status"] == word(infra::OutboxStatus::Delivered);
  return {passed,
          {{"same_idempotency_key", same_key},
           {"second_post_delivery", recovery_field(run, "delivery")},
           {"effect_count", f["effect_count"]},
           {"post_requests", f["post_requests"]},
           {"outbox_status", f["outbox_status"]}}};
}

CheckOutcome c015_reconcile(const SectionRuns& runs) {
  const auto& run = runs.at(k15Reconcile);
  if (!run.recovery()) return no_step(k15Reconcile, "recovery");
  const auto& f = run.final_measurement();
  const bool passed = recovery_field(run, "reconciled_status") == "committed" && !second_post_made(run) &&
                      f["post_requests"] == 1 && f["effect_count"] == 1 &&
                      f["outbox_status"] == word(infra::OutboxStatus::Delivered);
  return {passed,
          {{"reconciled_status", recovery_field(run, "reconciled_status")},
           {"second_post_made", second_post_made(run)},
           {"post_requests", f["post_requests"]},
           {"effect_count", f["effect_count"]},
           {"outbox_status", f["outbox_status"]}}};
}

CheckOutcome c015_invariant(const SectionRuns& runs) {
  const auto& unsafe = effects(runs.at(k15Unsafe));
  const auto& redelivery = effects(runs.at(k15Redelivery));
  const auto& reconcile = effects(runs.at(k15Reconcile));
  return {unsafe == 2 && redelivery == 1 && reconcile == 1,
          {{"new_key_effect_count", unsafe},
           {"stable_key_effect_count", redelivery},
           {"reconcile_effect_count", reconcile}}};
}

// --- #016 state durability across a restart --------------------------------

inline constexpr const char* k16Unsafe = "unsafe_volatile_restart";
inline constexpr const char* k16Durable = "safe_durable_restart";
inline constexpr const char* k16Reconcile = "safe_reconcile_after_restart";

json restart_fields(const SectionRun& run) {
  return {{"idempotency_mode", final_field(run, "idempotency_mode")},
          {"boot_id_changed", observed_in(run, steps::StepRole::Fault, "boot_id_changed")},
          {"attempt_1", observed_in(run, steps::StepRole::Delivery, "attempt")},
          {"final_remote",
           {{"effect_count", final_field(run, "effect_count")},
            {"post_requests", final_field(run, "post_requests")},
            {"status", final_field(run, "status")},
            {"durable_idempotency_records", final_field(run, "durable_idempotency_records")},
            {"ack_drops", final_field(run, "ack_drops")}}},
          {"final_local", {{"outbox", final_outbox(run)}}}};
}

json s016_replay(const SectionRun& run) {
  auto out = restart_fields(run);
  out["stable_key_reused"] = same_key_throughout(run);
  out["attempt_2"] = recovery_field(run, "attempt");
  out["second_post"] = {{"payload", {{"delivery", recovery_field(run, "delivery")}}}};
  return out;
}

json s016_reconcile(const SectionRun& run) {
  auto out = restart_fields(run);
  out["second_post_made"] = second_post_made(run);
  return out;
}

CheckOutcome c016_ledger(const SectionRuns& runs) {
  bool passed = true;
  json evidence = json::object();
  for (const char* name : {k16Unsafe, k16Durable, k16Reconcile}) {
    const auto& run = runs.at(name);
    const auto changed = observed_in(run, steps::StepRole::Fault, "boot_id_changed");
    const auto after = observed_in(run, steps::StepRole::Fault, "boot_id_changed", "effect_count");
    passed = passed && changed == true && after == 1;
    evidence[name] = {{"boot_id_changed", changed}, {"effect_count_after_restart", after}};
  }
  return {passed, evidence};
}

CheckOutcome c016_volatile(const SectionRuns& runs) {
  const auto& run = runs.at(k16Unsafe);
  if (!run.recovery()) return no_step(k16Unsafe, "recovery");
  const auto& f = run.final_measurement();
  const bool passed = f["idempotency_mode"] == word(remote_effect::DedupeMode::volatile_) && same_key_throughout(run) &&
                      recovery_field(run, "delivery") == word(remote_effect::Delivery::applied) &&
                      f["effect_count"] == 2;
  return {passed,
          {{"idempotency_mode", f["idempotency_mode"]},
           {"stable_key_reused", same_key_throughout(run)},
           {"second_post_delivery", recovery_field(run, "delivery")},
           {"effect_count", f["effect_count"]}}};
}

CheckOutcome c016_durable(const SectionRuns& runs) {
  const auto& run = runs.at(k16Durable);
  if (!run.recovery()) return no_step(k16Durable, "recovery");
  const auto& f = run.final_measurement();
  const auto& records = f["durable_idempotency_records"];
  const bool passed = f["idempotency_mode"] == word(remote_effect::DedupeMode::durable) &&
                      records.is_number_integer() && records >= 1 &&
                      recovery_field(run, "delivery") == word(remote_effect::Delivery::deduplicated) &&
                      f["effect_count"] == 1;
  return {passed,
          {{"idempotency_mode", f["idempotency_mode"]},
           {"durable_idempotency_records", records},
           {"second_post_delivery", recovery_field(run, "delivery")},
           {"effect_count", f["effect_count"]}}};
}

CheckOutcome c016_reconcile(const SectionRuns& runs) {
  const auto& run = runs.at(k16Reconcile);
  if (!run.recovery()) return no_step(k16Reconcile, "recovery");
  const auto& f = run.final_measurement();
  const bool passed = f["idempotency_mode"] == word(remote_effect::DedupeMode::volatile_) &&
                      recovery_field(run, "reconciled_status") == "committed" && !second_post_made(run) &&
                      f["effect_count"] == 1 && f["outbox_status"] == word(infra::OutboxStatus::Delivered);
  return {passed,
          {{"idempotency_mode", f["idempotency_mode"]},
           {"reconciled_status", recovery_field(run, "reconciled_status")},
           {"second_post_made", second_post_made(run)},
           {"effect_count", f["effect_count"]}}};
}

CheckOutcome c016_invariant(const SectionRuns& runs) {
  const auto& unsafe = effects(runs.at(k16Unsafe));
  const auto& durable = effects(runs.at(k16Durable));
  const auto& reconcile = effects(runs.at(k16Reconcile));
  return {
      unsafe == 2 && durable == 1 && reconcile == 1,
      {{"volatile_effect_count", unsafe}, {"durable_effect_count", durable}, {"reconcile_effect_count", reconcile}}};
}

// --- #017 TTL shorter than the recovery window -----------------------------

inline constexpr const char* k17Unsafe = "unsafe";
inline constexpr const char* k17Retention = "safe_retention";
inline constexpr const char* k17Reconcile = "safe_reconcile_after_expiry";

// Seconds from the first POST to the recovery, in reference time.
json recovery_window(const SectionRun& run) {
  const auto* post = step_of(run, steps::StepRole::Delivery, "transport_outcome");
  const auto* recover = run.recovery_step();
  if (!post || !recover) return nullptr;
  return recover->at_s - post->at_s;
}

const SectionRun& first_ran(const SectionRuns& runs, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (runs.at(name).ran()) return runs.at(name);
  }
  return runs.at(*names.begin());
}

json ttl_of(const SectionRun& run) { return run.ran() ? json(run.scenario->ttl_s) : json(nullptr); }

json s017_unsafe(const SectionRun& run) {
  const auto seen = observations(run);
  const auto* before = last_observation_before_recovery(run);
  return {{"idempotency_key", run.result->stable_key_name},
          {"initial_active_idempotency_records",
           seen.empty() ? json(nullptr) : (*seen.front())["active_idempotency_records"]},
          {"after_expiry_active_idempotency_records", field_of(before, "active_idempotency_records")},
          {"effect_count_before_delayed_retry", field_of(before, "effect_count")},
          {"delayed_retry_delivery", recovery_field(run, "delivery")},
          {"final_effect_count", final_field(run, "effect_count")},
          {"final_status", final_field(run, "status")}};
}

json s017_retention(const SectionRun& run) {
  return {{"idempotency_key", run.result->stable_key_name},
          {"active_idempotency_records_at_retry",
           field_of(last_observation_before_recovery(run), "active_idempotency_records")},
          {"delayed_retry_delivery", recovery_field(run, "delivery")},
          {"final_effect_count", final_field(run, "effect_count")},
          {"final_status", final_field(run, "status")}};
}

json s017_reconcile(const SectionRun& run) {
  return {{"idempotency_key", run.result->stable_key_name},
          {"active_idempotency_records_at_recovery",
           field_of(last_observation_before_recovery(run), "active_idempotency_records")},
          {"authoritative_remote_status", recovery_field(run, "reconciled_status")},
          {"second_post_made", second_post_made(run)},
          {"final_effect_count", final_field(run, "effect_count")}};
}

json b017_clock_model(const SectionRuns&) {
  return "deterministic logical epoch supplied over HTTP; no wall-clock "
         "waiting";
}

json b017_window(const SectionRuns& runs) {
  return recovery_window(first_ran(runs, {k17Unsafe, k17Retention, k17Reconcile}));
}

json b017_unsafe_ttl(const SectionRuns& runs) { return ttl_of(runs.at(k17Unsafe)); }

json b017_safe_ttl(const SectionRuns& runs) { return ttl_of(runs.at(k17Retention)); }

bool below(const json& a, const json& b) { return a.is_number_integer() && b.is_number_integer() && a < b; }

CheckOutcome c017_expires(const SectionRuns& runs) {
  const auto& run = runs.at(k17Unsafe);
  const auto seen = observations(run);
  if (seen.size() < 2) return no_step(k17Unsafe, "second observe");
  const auto& first = *seen.front();
  const auto* later = last_observation_before_recovery(run);
  if (auto missing =
          unreported("active_idempotency_records", k17Unsafe,
                     {first["active_idempotency_records"], later ? (*later)["active_idempotency_records"] : json(0)})) {
    return *missing;
  }
  const bool passed = first["active_idempotency_records"] == 1 && first["effect_count"] == 1 && later &&
                      (*later)["active_idempotency_records"] == 0 && (*later)["effect_count"] == 1;
  return {passed,
          {{"active_records", {first["active_idempotency_records"], field_of(later, "active_idempotency_records")}},
           {"effect_counts", {first["effect_count"], field_of(later, "effect_count")}}}};
}

CheckOutcome c017_short_ttl(const SectionRuns& runs) {
  const auto& run = runs.at(k17Unsafe);
  if (!run.recovery()) return no_step(k17Unsafe, "recovery");
  const auto window = recovery_window(run);
  const auto& f = run.final_measurement();
  const bool passed = below(ttl_of(run), window) && same_key_throughout(run) &&
                      recovery_field(run, "delivery") == word(remote_effect::Delivery::applied) &&
                      f["effect_count"] == 2 && f["status"] == "conflict";
  return {passed,
          {{"ttl_seconds", ttl_of(run)},
           {"recovery_window_seconds", window},
           {"same_idempotency_key", same_key_throughout(run)},
           {"delayed_retry_delivery", recovery_field(run, "delivery")},
           {"effect_count", f["effect_count"]},
           {"status", f["status"]}}};
}

CheckOutcome c017_retention(const SectionRuns& runs) {
  const auto& run = runs.at(k17Retention);
  if (!run.recovery()) return no_step(k17Retention, "recovery");
  const auto window = recovery_window(run);
  const auto& f = run.final_measurement();
  const bool passed = below(window, ttl_of(run)) && same_key_throughout(run) &&
                      recovery_field(run, "delivery") == word(remote_effect::Delivery::deduplicated) &&
                      f["effect_count"] == 1;
  return {passed,
          {{"ttl_seconds", ttl_of(run)},
           {"recovery_window_seconds", window},
           {"delayed_retry_delivery", recovery_field(run, "delivery")},
           {"effect_count", f["effect_count"]}}};
}

CheckOutcome c017_reconcile(const SectionRuns& runs) {
  const auto& run = runs.at(k17Reconcile);
  if (!run.recovery()) return no_step(k17Reconcile, "recovery");
  const auto* before = last_observation_before_recovery(run);
  if (auto missing = unreported("active_idempotency_records", k17Reconcile,
                                {before ? (*before)["active_idempotency_records"] : json(0)})) {
    return *missing;
  }
  const auto& f = run.final_measurement();
  const bool passed = field_of(before, "active_idempotency_records") == 0 &&
                      recovery_field(run, "reconciled_status") == "committed" && !second_post_made(run) &&
                      f["effect_count"] == 1 && f["outbox_status"] == word(infra::OutboxStatus::Delivered);
  return {passed,
          {{"active_idempotency_records_at_recovery", field_of(before, "active_idempotency_records")},
           {"reconciled_status", recovery_field(run, "reconciled_status")},
           {"second_post_made", second_post_made(run)},
           {"effect_count", f["effect_count"]}}};
}

CheckOutcome c017_invariant(const SectionRuns& runs) {
  const auto& unsafe = effects(runs.at(k17Unsafe));
  const auto& retention = effects(runs.at(k17Retention));
  const auto& reconcile = effects(runs.at(k17Reconcile));
  return {unsafe == 2 && retention == 1 && reconcile == 1,
          {{"short_ttl_effect_count", unsafe},
           {"retention_effect_count", retention},
           {"reconcile_effect_count", reconcile}}};
}

// --- #019 clock rollback (temporal ABA) -------------------------------------

inline constexpr const char* k19Aba = "temporal_aba_visibility";
inline constexpr const char* k19Unsafe = "unsafe_purge_then_rollback";
inline constexpr const char* k19Fence = "safe_temporal_epoch_fence";
inline constexpr const char* k19Watermark = "safe_monotonic_watermark";

json expires_at(const SectionRun& run) {
  if (const auto* rec = run.recovery()) return (*rec)["expires_at_s"];
  const auto seen = observations(run);
  return seen.empty() ? json(nullptr) : (*seen.front())["expires_at_s"];
}

json s019_aba(const SectionRun& run) {
  json sequence = json::array();
  for (const auto* o : observations(run)) {
    sequence.push_back({{"time", (*o)["logical_time_s"]},
                        {"state", lower_case((*o)["temporal_state"])},
                        {"effect_count", (*o)["effect_count"]}});
  }
  return {{"expires_at", expires_at(run)}, {"sequence", sequence}};
}

json s019_unsafe(const SectionRun& run) {
  return {{"original_expires_at", expires_at(run)},
          {"expired_time", observed_in(run, steps::StepRole::Maintenance, "removed_records", "logical_time_s")},
          {"gc_removed_records", observed_in(run, steps::StepRole::Maintenance, "removed_records")},
          {"temporal_epoch_before_gc",
           observed_in(run, steps::StepRole::Maintenance, "removed_records", "temporal_epoch_before")},
          {"temporal_epoch_after_gc",
           observed_in(run, steps::StepRole::Maintenance, "removed_records", "temporal_epoch_after")},
          {"rollback_time", recovery_field(run, "reading_s")},
          {"same_idempotency_key", same_key_throughout(run) ? json(run.result->stable_key_name) : json(nullptr)},
          {"second_delivery", recovery_field(run, "delivery")},
          {"final_effect_count", final_field(run, "effect_count")},
          {"final_status", final_field(run, "status")}};
}

json s019_fence(const SectionRun& run) {
  return {{"bound_temporal_epoch", observed_in(run, steps::StepRole::Maintenance, "temporal_epoch")},
          {"temporal_epoch_after_gc",
           observed_in(run, steps::StepRole::Maintenance, "removed_records", "temporal_epoch_after")},
          {"rollback_time", recovery_field(run, "reading_s")},
          {"http_status", recovery_field(run, "replay_http_status")},
          {"delivery", recovery_field(run, "delivery")},
          {"error", recovery_field(run, "fence_error")},
          {"final_effect_count", final_field(run, "effect_count")},
          {"final_status", final_field(run, "status")}};
}

json s019_watermark(const SectionRun& run) {
  const auto* before = last_observation_before_recovery(run);
  return {{"forward_time", field_of(before, "logical_time_s")},
          {"rollback_wall_clock", recovery_field(run, "reading_s")},
          {"monotonic_watermark_before_rollback", recovery_field(run, "watermark_s")},
          {"effective_time_after_rollback", recovery_field(run, "decision_time_s")},
          {"temporal_decision", lower_case(recovery_field(run, "temporal_state"))},
          {"second_post_made", second_post_made(run)},
          {"final_effect_count", final_field(run, "effect_count")},
          {"final_status", final_field(run, "status")}};
}

// ACTIVE, then EXPIRED, then ACTIVE again at an earlier time than the
// EXPIRED reading, with one effect throughout.
CheckOutcome c019_reenters(const SectionRuns& runs) {
  const auto sequence = s019_aba(runs.at(k19Aba))["sequence"];
  bool passed = false;
  for (std::size_t i = 0; i + 2 < sequence.size() && !passed; ++i) {
    for (std::size_t j = i + 1; j + 1 < sequence.size() && !passed; ++j) {
      for (std::size_t k = j + 1; k < sequence.size() && !passed; ++k) {
        passed = sequence[i]["state"] == "active" && sequence[j]["state"] == "expired" &&
                 sequence[k]["state"] == "active" && below(sequence[k]["time"], sequence[j]["time"]);
      }
    }
  }
  for (const auto& s : sequence) passed = passed && s["effect_count"] == 1;
  return {passed, {{"sequence", sequence}}};
}

CheckOutcome c019_purge_duplicates(const SectionRuns& runs) {
  const auto& run = runs.at(k19Unsafe);
  if (!run.recovery()) return no_step(k19Unsafe, "recovery");
  const auto fields = s019_unsafe(run);
  const auto& f = run.final_measurement();
  const bool advanced = fields["temporal_epoch_before_gc"].is_number_integer() &&
                        fields["temporal_epoch_after_gc"] == fields["temporal_epoch_before_gc"].get<std::int64_t>() + 1;
  const bool passed = fields["gc_removed_records"] == 1 && advanced &&
                      below(fields["rollback_time"], fields["original_expires_at"]) &&
                      !below(fields["expired_time"], fields["original_expires_at"]) && same_key_throughout(run) &&
                      fields["second_delivery"] == word(remote_effect::Delivery::applied) && f["effect_count"] == 2;
  return {passed, fields};
}

CheckOutcome c019_fence(const SectionRuns& runs) {
  const auto& run = runs.at(k19Fence);
  if (!run.recovery()) return no_step(k19Fence, "recovery");
  const auto fields = s019_fence(run);
  const auto& f = run.final_measurement();
  const bool passed = below(fields["bound_temporal_epoch"], fields["temporal_epoch_after_gc"]) &&
                      recovery_field(run, "transport_outcome") == word(infra::TransportOutcome::FencedOut) &&
                      fields["http_status"] == 409 && fields["delivery"] == "fenced_out" &&
                      recovery_field(run, "reconciled_status") == "committed" && f["effect_count"] == 1 &&
                      f["outbox_status"] == word(infra::OutboxStatus::Delivered);
  return {passed, fields};
}

// The clock alone would read the record ACTIVE again; the effective time keeps
// it EXPIRED.
CheckOutcome c019_watermark(const SectionRuns& runs) {
  const auto& run = runs.at(k19Watermark);
  if (!run.recovery()) return no_step(k19Watermark, "recovery");
  const auto fields = s019_watermark(run);
  const auto expiry = expires_at(run);
  const bool passed = below(fields["rollback_wall_clock"], expiry) &&
                      !below(fields["effective_time_after_rollback"], expiry) &&
                      fields["temporal_decision"] == "expired" && fields["second_post_made"] == false &&
                      fields["final_effect_count"] == 1;
  auto evidence = fields;
  evidence["expires_at"] = expiry;
  return {passed, evidence};
}

CheckOutcome c019_invariant(const SectionRuns& runs) {
  const auto& aba = effects(runs.at(k19Aba));
  const auto& unsafe = effects(runs.at(k19Unsafe));
  const auto& fence = effects(runs.at(k19Fence));
  const auto& watermark = effects(runs.at(k19Watermark));
  return {aba == 1 && unsafe == 2 && fence == 1 && watermark == 1,
          {{"visibility_effect_count", aba},
           {"purge_then_rollback_effect_count", unsafe},
           {"epoch_fence_effect_count", fence},
           {"watermark_effect_count", watermark}}};
}

}  // namespace

const PublishedBenchmark& benchmark_015() {
  static const PublishedBenchmark benchmark{
      .id = "015-http-idempotency-boundary",
      .result_file = "result-015.json",
      .report_prefix = "015:",
      .sections = {{k15Unsafe, s015_unsafe}, {k15Redelivery, s015_redelivery}, {k15Reconcile, s015_reconcile}},
      .blocks = {},
      .checks = {{"real_postgresql_and_separate_http_service_boundary",
                  {k15Unsafe, k15Redelivery, k15Reconcile},
                  c015_boundary},
                 {"unsafe_http_ack_loss_new_identity_duplicates_remote_effect", {k15Unsafe}, c015_new_identity},
                 {"stable_idempotency_key_dedupes_real_http_redelivery", {k15Redelivery}, c015_stable_key},
                 {"http_status_reconciliation_avoids_second_post", {k15Reconcile}, c015_reconcile},
                 {"ttp_http_boundary_final_invariant", {k15Unsafe, k15Redelivery, k15Reconcile}, c015_invariant}},
      .points_per_check = 2};
  return benchmark;
}

const PublishedBenchmark& benchmark_016() {
  static const PublishedBenchmark benchmark{
      .id = "016-idempotency-state-durability",
      .result_file = "result-016.json",
      .report_prefix = "016:",
      .sections = {{k16Unsafe, s016_replay}, {k16Durable, s016_replay}, {k16Reconcile, s016_reconcile}},
      .blocks = {},
      .checks = {{"service_restart_preserves_effect_ledger", {k16Unsafe, k16Durable, k16Reconcile}, c016_ledger},
                 {"volatile_dedupe_memory_lost_on_restart_duplicates_effect", {k16Unsafe}, c016_volatile},
                 {"durable_idempotency_state_survives_restart_and_dedupes", {k16Durable}, c016_durable},
                 {"authoritative_reconcile_avoids_replay_after_restart", {k16Reconcile}, c016_reconcile},
                 {"ttp_restart_memory_invariant_proved", {k16Unsafe, k16Durable, k16Reconcile}, c016_invariant}},
      .points_per_check = 2};
  return benchmark;
}

const PublishedBenchmark& benchmark_017() {
  static const PublishedBenchmark benchmark{
      .id = "017-idempotency-ttl-replay",
      .result_file = "result-017.json",
      .report_prefix = "017:",
      .sections = {{k17Unsafe, s017_unsafe}, {k17Retention, s017_retention}, {k17Reconcile, s017_reconcile}},
      .blocks = {{"clock_model", b017_clock_model},
                 {"recovery_window_seconds", b017_window},
                 {"unsafe_ttl_seconds", b017_unsafe_ttl},
                 {"safe_ttl_seconds", b017_safe_ttl}},
      .checks = {{"ttl_record_is_active_then_expires_while_effect_persists", {k17Unsafe}, c017_expires},
                 {"ttl_shorter_than_recovery_window_allows_duplicate", {k17Unsafe}, c017_short_ttl},
                 {"retention_covering_recovery_window_dedupes_delayed_retry", {k17Retention}, c017_retention},
                 {"authoritative_reconcile_after_ttl_expiry_avoids_replay", {k17Reconcile}, c017_reconcile},
                 {"ttp_time_memory_recovery_invariant_proved",
                  {k17Unsafe, k17Retention, k17Reconcile},
                  c017_invariant}},
      .points_per_check = 2};
  return benchmark;
}

const PublishedBenchmark& benchmark_019() {
  static const PublishedBenchmark benchmark{
      .id = "019-idempotency-clock-rollback",
      .result_file = "result-019.json",
      .report_prefix = "019:",
      .sections = {{k19Aba, s019_aba},
                   {k19Unsafe, s019_unsafe},
                   {k19Fence, s019_fence},
                   {k19Watermark, s019_watermark}},
      .blocks = {},
      .checks = {{"same_record_reenters_active_after_wall_clock_rollback", {k19Aba}, c019_reenters},
                 {"expiry_cleanup_plus_clock_rollback_reproduces_same_key_duplicate",
                  {k19Unsafe},
                  c019_purge_duplicates},
                 {"monotonic_temporal_epoch_fences_stale_post_rollback_retry", {k19Fence}, c019_fence},
                 {"monotonic_time_watermark_prevents_expired_to_active_reentry", {k19Watermark}, c019_watermark},
                 {"ttp_temporal_aba_invariant_proved", {k19Aba, k19Unsafe, k19Fence, k19Watermark}, c019_invariant}},
      .points_per_check = 2};
  return benchmark;
}

}  // namespace skewbench::published
