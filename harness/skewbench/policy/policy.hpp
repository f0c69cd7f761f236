#pragma once

// The policy layer: replay policies. A policy turns what a recovering node knows (its own
// clock, the record's expires_at, and whatever time source the policy declares)
// into a temporal state and a decision. Policies are small classes registered
// by name; a scenario names one and gives its parameters.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/json_reader.hpp"
#include "common/registry.hpp"
#include "policy/temporal.hpp"
#include "time/logical_time.hpp"

namespace skewbench::policy {

// What a recovering node knows when it decides. All times are logical.
struct RecoveryContext {
  LogicalSeconds reference_s = 0;   // the step's reference ("true") time
  time::NodeClock node_clock;       // the recovering node's clock
  LogicalSeconds expires_at_s = 0;  // the idempotency record's expiry
  // The largest time the recovering node has read before this decision (its
  // monotonic watermark); empty when it has read none.
  std::optional<LogicalSeconds> watermark_s = std::nullopt;
};

struct PolicyEvaluation {
  std::string time_basis;              // whose time decided, e.g. "authority:<identity>"
  LogicalSeconds reading_s = 0;        // that time source's reading
  LogicalSeconds decision_time_s = 0;  // the X-Logical-Time a replay carries
  std::optional<time::UncertaintyInterval> interval;
  TemporalState state = TemporalState::TimeUnknown;
  Decision decision = Decision::ReconcileFirst;
  // Fields only this policy observes (e.g. the watermark); merged into the
  // recover step's observation, and absent for policies that add none.
  nlohmann::json extra = nlohmann::json::object();

  nlohmann::json to_json() const;
};

class ReplayPolicy {
 public:
  virtual ~ReplayPolicy() = default;
  virtual std::string_view name() const = 0;
  // The policy's parameters as they appear in a scenario file (for evidence).
  virtual nlohmann::json parameters() const = 0;
  virtual PolicyEvaluation evaluate(const RecoveryContext& context) const = 0;
  // The clock the policy declares the authority on expiry, if it declares one
  // (a scenario may put the service's instances on it: $.remote.clock).
  virtual const time::DeclaredAuthority* authority() const { return nullptr; }
};

// A monotonic node's effective time: max(watermark, clock); the clock alone
// when the node has read no time yet.
LogicalSeconds effective_time_s(std::optional<LogicalSeconds> watermark_s, LogicalSeconds clock_reading_s);

// Builds a policy from the scenario's "policy" object; the reader has already
// consumed "name" and the factory must read (or reject) every other key.
using PolicyFactory = std::function<std::unique_ptr<ReplayPolicy>(ObjectReader& spec)>;

// add() throws std::logic_error when the name is already taken.
class PolicyRegistry : public Registry<PolicyFactory> {
 public:
  PolicyRegistry() : Registry("policy") {}
  // Throws InputError (unknown name, bad parameters) with the JSON path.
  std::unique_ptr<ReplayPolicy> make(const nlohmann::json& spec, const std::string& path) const;
};

// The registry holding node_local, declared_authority, uncertainty,
// reconcile_first and monotonic_watermark.
const PolicyRegistry& builtin_policies();

}  // namespace skewbench::policy
