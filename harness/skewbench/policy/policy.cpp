#include "policy/policy.hpp"

#include <algorithm>
#include <stdexcept>

namespace skewbench::policy {

nlohmann::json PolicyEvaluation::to_json() const {
  nlohmann::json out = {
      {"time_basis", time_basis},           {"reading_s", reading_s},          {"decision_time_s", decision_time_s},
      {"temporal_state", to_string(state)}, {"decision", to_string(decision)},
  };
  if (interval) out["interval_s"] = {interval->lower_s, interval->upper_s};
  return out;
}

LogicalSeconds effective_time_s(std::optional<LogicalSeconds> watermark_s, LogicalSeconds clock_reading_s) {
  return watermark_s ? std::max(*watermark_s, clock_reading_s) : clock_reading_s;
}

namespace {

// A decision at one point in time: `reading_s` read from `time_basis`, judged
// against expiry at `decision_time_s`, decided by the classification.
PolicyEvaluation at_point(std::string time_basis, LogicalSeconds reading_s, LogicalSeconds decision_time_s,
                          LogicalSeconds expires_at_s) {
  PolicyEvaluation e;
  e.time_basis = std::move(time_basis);
  e.reading_s = reading_s;
  e.decision_time_s = decision_time_s;
  e.state = classify_point(decision_time_s, expires_at_s);
  e.decision = decide(e.state);
  return e;
}

// The node's own clock is the replay authority. This is the unsafe policy the
// benchmark exists to expose: two nodes reading the same record at different
// local times reach opposite decisions.
class NodeLocalPolicy final : public ReplayPolicy {
 public:
  std::string_view name() const override { return "node_local"; }
  nlohmann::json parameters() const override { return nlohmann::json::object(); }

  PolicyEvaluation evaluate(const RecoveryContext& c) const override {
    const auto reading_s = c.node_clock.read(c.reference_s);
    return at_point("node_clock:" + c.node_clock.node_id, reading_s, reading_s, c.expires_at_s);
  }
};

// Expiry is judged at one declared authority's time, whatever the local clock
// of the recovering node says; the replay carries that time to the remote.
class DeclaredAuthorityPolicy final : public ReplayPolicy {
 public:
  explicit DeclaredAuthorityPolicy(time::DeclaredAuthority authority) : authority_(std::move(authority)) {}

  std::string_view name() const override { return "declared_authority"; }
  nlohmann::json parameters() const override {
    return {{"authority", {{"identity", authority_.identity}, {"offset_s", authority_.offset_s}}}};
  }

  PolicyEvaluation evaluate(const RecoveryContext& c) const override {
    const auto reading_s = authority_.read(c.reference_s);
    return at_point("authority:" + authority_.identity, reading_s, reading_s, c.expires_at_s);
  }
  const time::DeclaredAuthority* authority() const override { return &authority_; }

 private:
  time::DeclaredAuthority authority_;
};

// The node declares how wrong its clock may be. Only an interval wholly on one
// side of expiry decides; one that straddles expiry stays TIME_UNKNOWN and the
// node reconciles with the remote instead of replaying.
class UncertaintyPolicy final : public ReplayPolicy {
 public:
  explicit UncertaintyPolicy(LogicalSeconds max_clock_error_s) : max_clock_error_s_(max_clock_error_s) {}

  std::string_view name() const override { return "uncertainty"; }
  nlohmann::json parameters() const override { return {{"max_clock_error_s", max_clock_error_s_}}; }

  PolicyEvaluation evaluate(const RecoveryContext& c) const override {
    PolicyEvaluation e;
    e.reading_s = c.node_clock.read(c.reference_s);
    e.time_basis = "interval:" + c.node_clock.node_id;
    e.decision_time_s = e.reading_s;
    e.interval = time::UncertaintyInterval::around(e.reading_s, max_clock_error_s_);
    e.state = classify_interval(*e.interval, c.expires_at_s);
    e.decision = decide(e.state);
    return e;
  }

 private:
  LogicalSeconds max_clock_error_s_;
};

// Recovery never lets time decide: it reads the remote's status before any
// replay, whatever the clock says. The node's reading and its classification
// are recorded, but the decision is always RECONCILE_FIRST.
class ReconcileFirstPolicy final : public ReplayPolicy {
 public:
  std::string_view name() const override { return "reconcile_first"; }
  nlohmann::json parameters() const override { return nlohmann::json::object(); }

  PolicyEvaluation evaluate(const RecoveryContext& c) const override {
    const auto reading_s = c.node_clock.read(c.reference_s);
    auto e = at_point("node_clock:" + c.node_clock.node_id, reading_s, reading_s, c.expires_at_s);
    e.decision = Decision::ReconcileFirst;
    return e;
  }
};

// The node never lets its time go backwards: its effective time is the larger
// of its clock and the largest time it has already read (its watermark). A
// rolled-back clock therefore cannot make an expired record ACTIVE again. An
// ACTIVE record may be replayed with the stable key; an EXPIRED one no longer
// protects a replay, so the node reconciles instead.
class MonotonicWatermarkPolicy final : public ReplayPolicy {
 public:
  std::string_view name() const override { return "monotonic_watermark"; }
  nlohmann::json parameters() const override { return nlohmann::json::object(); }

  PolicyEvaluation evaluate(const RecoveryContext& c) const override {
    const auto reading_s = c.node_clock.read(c.reference_s);
    auto e = at_point("monotonic_watermark:" + c.node_clock.node_id, reading_s,
                      effective_time_s(c.watermark_s, reading_s), c.expires_at_s);
    e.decision = e.state == TemporalState::Active ? Decision::ReplaySameKey : Decision::ReconcileFirst;
    e.extra = {{"watermark_s", c.watermark_s ? nlohmann::json(*c.watermark_s) : nlohmann::json(nullptr)}};
    return e;
  }
};

PolicyRegistry make_builtin_registry() {
  PolicyRegistry registry;
  registry.add("node_local", [](ObjectReader&) { return std::make_unique<NodeLocalPolicy>(); });
  registry.add("declared_authority", [](ObjectReader& spec) {
    ObjectReader authority(spec.require_object("authority"), spec.child_path("authority"));
    time::DeclaredAuthority a{
        authority.require_string("identity"),
        authority.require_int_within("offset_s", -time::kMaxLogicalSeconds, time::kMaxLogicalSeconds)};
    if (a.identity.empty()) throw InputError(authority.child_path("identity"), "must not be empty");
    authority.finish();
    return std::make_unique<DeclaredAuthorityPolicy>(std::move(a));
  });
  registry.add("uncertainty", [](ObjectReader& spec) {
    const auto eps = spec.require_int_within("max_clock_error_s", 0, time::kMaxLogicalSeconds);
    return std::make_unique<UncertaintyPolicy>(eps);
  });
  registry.add("reconcile_first", [](ObjectReader&) { return std::make_unique<ReconcileFirstPolicy>(); });
  registry.add("monotonic_watermark", [](ObjectReader&) { return std::make_unique<MonotonicWatermarkPolicy>(); });
  return registry;
}

}  // namespace

std::unique_ptr<ReplayPolicy> PolicyRegistry::make(const nlohmann::json& spec, const std::string& path) const {
  ObjectReader reader(spec, path);
  const auto name = reader.require_string("name");
  const auto* factory = find(name);
  if (factory == nullptr) {
    throw InputError(reader.child_path("name"), "unknown policy \"" + name + "\" (known: " + known_names() + ")");
  }
  auto policy = (*factory)(reader);
  reader.finish();
  return policy;
}

const PolicyRegistry& builtin_policies() {
  static const PolicyRegistry registry = make_builtin_registry();
  return registry;
}

}  // namespace skewbench::policy
