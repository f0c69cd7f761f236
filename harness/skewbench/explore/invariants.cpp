#include "explore/invariants.hpp"

#include <algorithm>

#include "evidence/count_history.hpp"

namespace skewbench::explore {
namespace {

using nlohmann::json;

std::string effects_text(const runner::ScenarioResult& result) {
  return std::to_string(result.final_measurement->remote.effect_count) + " effects (verdict " +
         std::string(scenario::to_string(result.verdict)) + ")";
}

bool has_duplicate(const runner::ScenarioResult& result) {
  return !result.error && result.final_measurement && result.final_measurement->remote.effect_count >= 2;
}

// Every replay a recovery made was judged before the key's expiry; false when
// none replayed (the effects then came from POSTs no policy decided).
bool replays_before_expiry(const runner::ScenarioResult& result, std::string& judged) {
  bool replayed = false;
  for (const auto& record : result.timeline) {
    if (!record.recovery() || !record.observed()) continue;
    const auto& o = *record.observed();
    if (!o.value("replayed", false)) continue;
    replayed = true;
    const auto& at = o.value("decision_time_s", json(nullptr));
    const auto& expires = o.value("expires_at_s", json(nullptr));
    if (!at.is_number_integer() || !expires.is_number_integer() ||
        at.get<std::int64_t>() >= expires.get<std::int64_t>())
      return false;
    judged += (judged.empty() ? "" : ", ") + std::string("step ") + std::to_string(record.index) + " replayed at " +
              std::to_string(at.get<std::int64_t>()) + " < expires_at " + std::to_string(expires.get<std::int64_t>());
  }
  return replayed;
}

// Every POST the scenario sent (a step's exchange with a transport outcome)
// left before the first one's reference time plus the TTL: the key was live
// in true time at each; false when fewer than two POSTs went.
bool posts_within_ttl(const scenario::Scenario& scenario, const runner::ScenarioResult& result, std::string& sent) {
  std::optional<std::int64_t> first_s;
  std::size_t posts = 0;
  for (const auto& record : result.timeline) {
    if (!record.outcome) continue;
    const auto& exchanges = record.outcome->exchanges;
    const bool posted = std::any_of(exchanges.begin(), exchanges.end(),
                                    [](const json& e) { return e.is_object() && e.contains("transport_outcome"); });
    if (!posted) continue;
    ++posts;
    const auto at_s = record.reference_time_s;
    if (!first_s) first_s = at_s;
    if (at_s >= *first_s + scenario.ttl_s) return false;
    sent += (sent.empty() ? "" : ", ") + std::to_string(at_s);
  }
  if (posts < 2) return false;
  sent = "every POST was sent within the TTL of the first by the reference clock (at " + sent + ", before " +
         std::to_string(*first_s + scenario.ttl_s) + ")";
  return true;
}

bool holds_for(const Invariant& invariant, const std::string& policy) {
  const auto& listed = invariant.policies;
  return listed.empty() || std::find(listed.begin(), listed.end(), policy) != listed.end();
}

std::optional<std::string> breach_of(const Invariant& invariant, const scenario::Scenario& scenario,
                                     const runner::ScenarioResult& result, const std::optional<std::string>& counts) {
  const std::string policy(scenario.policy->name());
  switch (invariant.kind) {
    case InvariantKind::effects_within_posts:
      return counts;
    case InvariantKind::no_verdict_on_error:
      if (result.error && result.verdict != runner::Verdict::Error) {
        return "an error (" + *result.error + ") with the verdict " + std::string(scenario::to_string(result.verdict));
      }
      if (!result.error && result.verdict == runner::Verdict::Error) return std::string("ERROR without an error");
      return std::nullopt;
    case InvariantKind::runs_to_a_verdict:
      if (result.verdict == runner::Verdict::Error) return "ERROR: " + result.error.value_or("(no error text)");
      return std::nullopt;
    case InvariantKind::at_most_one_effect:
      if (holds_for(invariant, policy) && has_duplicate(result)) return policy + " left " + effects_text(result);
      return std::nullopt;
    case InvariantKind::at_most_one_effect_within_ttl: {
      std::string sent;
      if (holds_for(invariant, policy) && has_duplicate(result) && posts_within_ttl(scenario, result, sent)) {
        return policy + " left " + effects_text(result) + " though " + sent;
      }
      return std::nullopt;
    }
    case InvariantKind::declared_authority_before_expiry: {
      std::string judged;
      if (policy == "declared_authority" && has_duplicate(result) && replays_before_expiry(result, judged)) {
        return "declared_authority left " + effects_text(result) + " though " + judged;
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Breach> first_breach(const Bounds& bounds, const scenario::Scenario& scenario,
                                   runner::ScenarioResult& result) {
  const bool was_error = result.error.has_value();
  evidence::hold_counts(scenario, result);
  const auto counts = !was_error && result.error ? result.error : std::nullopt;
  for (std::size_t i = 0; i < bounds.invariants.size(); ++i) {
    if (auto why = breach_of(bounds.invariants[i], scenario, result, counts)) return Breach{i, std::move(*why)};
  }
  return std::nullopt;
}

}  // namespace skewbench::explore
