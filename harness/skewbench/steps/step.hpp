#pragma once

// The steps layer: the scenario vocabulary. A step kind is a small class with
// one execute() method, registered once by name with the fields it observes.
// A scenario file lists steps; each may carry an "expect" object whose keys
// must be fields its kind observes. A new family of scenarios (a remote
// restart, a clock rollback, a recovery later than the TTL) is a new step kind
// or new data, never a change to the runner.

#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_reader.hpp"
#include "common/registry.hpp"
#include "common/vocabulary.hpp"
#include "infra/effect_sink.hpp"
#include "infra/ports.hpp"
#include "infra/remote_snapshot.hpp"
#include "policy/policy.hpp"
#include "remote_effect/protocol.hpp"
#include "time/logical_time.hpp"

namespace skewbench::steps {

using time::LogicalSeconds;

// Lets a step restart or hang the remote service; present only when the
// harness started the service itself. Faults a scenario author chooses are
// steps like any other.
class RemoteControl {
 public:
  virtual ~RemoteControl() = default;
  // Restarts every instance of the service on the same state file; a step
  // reads the new boot_ids back from the instances themselves.
  virtual void restart_remote() = 0;
  // Stops every instance (SIGSTOP) and lets it go on (SIGCONT) after
  // `duration` of wall time; returns at once, so the next steps meet a hung
  // remote.
  virtual void pause_remote(std::chrono::milliseconds duration) = 0;
  // Makes the service run with this dedupe memory, restarting it on the
  // same state file and port when it runs another.
  virtual void use_dedupe_mode(remote_effect::DedupeMode mode) = 0;
  // Kills the service's backing store, when it runs as a process of its own
  // (a target's Redis), and starts it again on the same port and data.
  virtual void restart_store() = 0;
  // Kills instance `index` of the service (0 is the first; SIGKILL to its
  // process group: a crash, nothing flushed or drained) and starts it again
  // on the same store and port; the other instances run on. Returns the
  // instance's name, as its provider calls name it at the effect sink.
  virtual std::string kill_instance(std::size_t index) = 0;
};

// Lets a step restart PostgreSQL; present only when the harness started the
// cluster itself.
class DatabaseControl {
 public:
  virtual ~DatabaseControl() = default;
  // Stops the server (immediately: as a crash would, or fast) and starts it
  // again on the same data and port.
  virtual void restart_database(bool immediate) = 0;
};

// How a scenario's operation is named and which key each delivery carries.
// `name` is the un-namespaced operation name the scenario declares (the one
// published results show); the wire ids stay namespaced by the run id.
enum class RetryIdentity {
  StableKey,         // every attempt reuses the operation's stable key
  NewKeyPerAttempt,  // every attempt mints a new key "<prefix>:attempt:N" (unsafe)
};
// As a scenario's $.operation.retry_identity spells it.
inline constexpr auto kRetryIdentities = vocabulary<RetryIdentity>(
    {{RetryIdentity::StableKey, "stable_key"}, {RetryIdentity::NewKeyPerAttempt, "new_key_per_attempt"}});

struct OperationSettings {
  std::string name;  // the operation's name; the scenario id when not declared
  RetryIdentity retry_identity = RetryIdentity::StableKey;
  std::string minted_key_prefix;              // defaults to name
  std::int64_t initial_business_version = 0;  // the business row's version before the commit

  std::string stable_key_name() const { return name + ":effect:v1"; }
  std::string minted_key_name(int attempt) const { return minted_key_prefix + ":attempt:" + std::to_string(attempt); }
};

std::string_view to_string(RetryIdentity identity);

// The key one delivery attempt carries: on the wire, and by name.
struct DeliveryKey {
  int attempt = 0;   // 1 for the first POST of the scenario
  std::string wire;  // namespaced by the run id
  std::string name;  // as published: the stable key name or a minted one
};

// A POST a step sent and left in flight (steps/in_flight_steps.cpp): its
// answer arrives on another thread and is collected by a later step, or by
// abandon_in_flight() before the scenario ends.
struct InFlightPost {
  std::size_t step_index = 0;  // the step that sent it
  std::string step_kind;
  std::string node;                   // the node that sent it (the instance it reached is that node's)
  LogicalSeconds logical_time_s = 0;  // the sending node's reading
  DeliveryKey key;
  std::future<infra::PostExchange> answer;
};

// Everything a step may read or touch while it runs.
struct StepContext {
  LogicalSeconds t0_s = 0;
  LogicalSeconds ttl_s = 0;
  std::map<std::string, time::NodeClock>& nodes;
  const policy::ReplayPolicy& policy;
  // The first instance of the service, as the scenario reaches it (through
  // the clock it judges by): steps without a node reach it.
  infra::RemoteApi* remote;
  infra::OutboxApi& outbox;
  RemoteControl* remote_control = nullptr;      // null against an external remote
  DatabaseControl* database_control = nullptr;  // null against an external database
  std::string operation_id;                     // namespaced by the run id
  std::string idempotency_key;                  // namespaced by the run id
  std::string payload;                          // the request body every POST sends
  infra::RemoteLedger ledger;                   // what was sent, to hold every answer against

  OperationSettings operation;
  // The instance each node reaches when the scenario runs one per node
  // ($.remote.instances); a node not named here reaches `remote`.
  std::map<std::string, infra::RemoteApi*> node_remotes;
  // The index of that instance (0 is the first), for a step that kills it.
  std::map<std::string, std::size_t> node_instances;

  // The reference time of the step that runs now (of the last step during the
  // closing measurement): the time an instance on a node's clock reads at.
  LogicalSeconds step_reference_s = 0;
  std::size_t step_index = 0;  // the index of the step that runs now

  // The sink the service calls as its provider, when it is skewbench's
  // (a target of its own wire); null when the service performs its effect
  // itself (remote-effect). Steps that hold or fail a provider call need it.
  infra::EffectSink* effect_sink = nullptr;

  // State that recovery carries between steps.
  int posts_sent = 0;                                  // delivery POSTs so far (numbers minted keys)
  std::optional<std::int64_t> bound_temporal_epoch;    // set by bind_temporal_epoch: replays carry a fence
  std::map<std::string, LogicalSeconds> watermarks_s;  // per node: the largest time it has read
  std::vector<InFlightPost> in_flight;                 // POSTs sent and not yet answered

  LogicalSeconds reference_time(LogicalSeconds at_s) const { return t0_s + at_s; }
  // The first instance of the service, which steps without a node reach.
  infra::RemoteApi& first() const { return *remote; }
  // The instance of the service a node's requests reach.
  infra::RemoteApi& remote_of(const std::string& node_id) const;
  // Every instance the scenario reaches, each once, the first first.
  std::vector<infra::RemoteApi*> instances() const;
  // The boot_id of every instance that reports one, asked of each.
  std::set<std::string> boot_ids() const;
  const time::NodeClock& clock(const std::string& node_id) const { return nodes.at(node_id); }
  // Reads a node's clock at a step's time and raises the node's watermark.
  LogicalSeconds read_clock(const std::string& node_id, LogicalSeconds at_s);
  // The largest time the node has read so far; empty before its first reading.
  std::optional<LogicalSeconds> watermark_s(const std::string& node_id) const;
  // The key the next delivery POST carries (stable, or minted per attempt).
  DeliveryKey next_delivery_key();
  // The snapshot of a remote answer, with every field a verdict needs, checked
  // against the ledger.
  infra::RemoteSnapshot checked_snapshot(const remote_effect::StatusAnswer& answer, const std::string& where) const;
};

// The part a step plays in a scenario. The runner and the evidence find a
// scenario's recovery and its observations by role, never by a kind's name, so
// a new kind that recovers or observes is read the same way.
enum class StepRole {
  Setup,        // commits the business operation and its outbox row
  Delivery,     // sends the effect
  Observation,  // a node reads the remote's state at its own clock
  Recovery,     // recovers a delivery whose acknowledgement was lost
  ClockChange,  // moves a node's clock
  Fault,        // restarts or hangs a service
  Maintenance,  // acts on the remote's records (expiry cleanup, epoch binding)
};

// What a step needs beyond the remote API and the outbox every step has. The
// session, sweeps and scenario checks read these declarations, never a kind's
// name, so a new kind that restarts a service or touches shared state is
// treated the same way.
struct StepNeeds {
  bool remote_control = false;    // restarts or hangs the remote: only a remote skewbench started
  bool database_control = false;  // restarts PostgreSQL: only a cluster skewbench started
  bool store_control = false;     // restarts the service's store: only a store process skewbench started
  // Its outcome depends on state the remote keeps for every operation at once
  // (the temporal epoch, which a gc of any operation advances), not only on
  // its own operation's: two cells that run at once on one remote can then
  // change each other's outcome, so a sweep must not let them share one.
  bool reads_service_wide_state = false;
  // It must come after a delivery step (it reads what the first POST left).
  bool follows_delivery = false;
  // It restarts every instance of the service: each must come back with a
  // new boot_id (where it reports one), and a service that kept its counts in
  // memory may come back without them (docs/evidence.md, "Counts a service
  // reports"). No other step may change a boot_id or see a count fall.
  bool restarts_service = false;
  // It holds or releases the service's provider calls at skewbench's effect
  // sink: only a service whose effects are calls to that sink (a target of
  // its own wire).
  bool provider_control = false;
  // It leaves a provider call held: a later step must release it.
  bool holds_provider_call = false;
  // It releases every held provider call and collects the POSTs in flight.
  bool releases_provider_calls = false;
  // It ends what its node's instance holds in flight (the instance dies):
  // that node's held provider call and POSTs in flight need no release.
  bool ends_node_in_flight = false;
  // It sends a POST of another amount than the others (another body for the
  // same key): only a service whose request carries the amount.
  bool sends_another_amount = false;
};

// What a recovery decided, typed: the verdict reads this, never the observed
// JSON. Empty fields were not reached (e.g. no reconcile when the policy
// replayed at once; nothing at all when the operation was already delivered).
struct RecoveryResult {
  std::optional<policy::TemporalState> temporal_state;
  std::optional<policy::Decision> decision;
  std::optional<policy::ReconcileAction> reconcile_action;

  // The recovery declined a time-based decision: the state was TIME_UNKNOWN,
  // or reconciliation held the operation and escalated.
  bool refused() const {
    return temporal_state == policy::TemporalState::TimeUnknown ||
           reconcile_action == policy::ReconcileAction::HoldAndEscalate;
  }
};

// What one step produced. `observed` holds the values expectations compare
// against and is part of the deterministic core; `exchanges` holds the raw HTTP
// traffic (with run-specific ids and timings) and is not. `recovery` is set by
// steps of the Recovery role.
struct StepOutcome {
  nlohmann::json observed = nlohmann::json::object();
  nlohmann::json exchanges = nlohmann::json::array();
  std::optional<RecoveryResult> recovery;
};

class Step {
 public:
  explicit Step(LogicalSeconds at_s) : at_s_(at_s) {}
  virtual ~Step() = default;

  virtual std::string_view kind() const = 0;
  virtual StepRole role() const = 0;
  // The node that performs the step, if any.
  virtual std::optional<std::string> node() const { return std::nullopt; }
  // The step's own parameters (without kind, at_s, node, expect).
  virtual nlohmann::json parameters() const { return nlohmann::json::object(); }
  virtual StepNeeds needs() const { return {}; }
  virtual StepOutcome execute(StepContext& context) const = 0;

  LogicalSeconds at_s() const { return at_s_; }

 private:
  LogicalSeconds at_s_;
};

// The JSON type an observed field has, for validating expectations.
enum class FieldType { Integer, String, Boolean, NullableString, NullableInteger };

struct ObservedField {
  FieldType type = FieldType::Integer;
  std::vector<std::string> allowed;  // for strings: the closed set of values, if any
};

using ObservedFields = std::map<std::string, ObservedField, std::less<>>;

// An observed field's declaration, as a kind's registration writes it.
inline ObservedField integer() { return {FieldType::Integer, {}}; }
inline ObservedField nullable_integer() { return {FieldType::NullableInteger, {}}; }
inline ObservedField boolean() { return {FieldType::Boolean, {}}; }
inline ObservedField string_of(std::vector<std::string> allowed) { return {FieldType::String, std::move(allowed)}; }
inline ObservedField nullable_string_of(std::vector<std::string> allowed) {
  return {FieldType::NullableString, std::move(allowed)};
}

// What a factory gets besides the step's own JSON object.
struct StepParseContext {
  const std::set<std::string>& node_ids;
};

using StepFactory =
    std::function<std::unique_ptr<Step>(ObjectReader& spec, LogicalSeconds at_s, const StepParseContext& context)>;

struct StepKind {
  std::string name;
  std::string summary;  // one line, for --help and the docs
  // The part its steps play (each step's role() says the same; the scenario
  // parser checks): scenario checks name the kinds that play a part from here.
  StepRole role;
  ObservedFields observed;
  StepFactory factory;
  bool takes_node = true;  // "node" is required (and checked against the scenario's nodes)
};

class StepRegistry : public Registry<StepKind> {
 public:
  StepRegistry() : Registry("step kind") {}
  using Registry::add;
  // Under the kind's own name; throws std::logic_error on a duplicate name.
  void add(StepKind kind) {
    auto name = kind.name;
    add(std::move(name), std::move(kind));
  }
};

// The names of the registered kinds that play `role`, in name order.
std::vector<std::string> kinds_playing(const StepRegistry& registry, StepRole role);

// commit_operation, post_effect, observe, recover, set_clock_offset,
// restart_remote, restart_store, pause_remote, restart_database, the
// series kinds (gc, bind_temporal_epoch) and the in-flight kinds (post_held,
// post_concurrent, release_provider, fail_provider, kill_instance).
const StepRegistry& builtin_steps();

// Registers the step kinds the #015-#019 series adds (steps/series_steps.cpp).
void add_series_steps(StepRegistry& registry);

// Registers the step kinds that make requests overlap: post_held,
// post_concurrent, release_provider, fail_provider and kill_instance
// (steps/in_flight_steps.cpp).
void add_in_flight_steps(StepRegistry& registry);

// Why the scenario cannot end yet: the first POST still in flight, named by
// the step that sent it; nullopt when none is.
std::optional<std::string> in_flight_left(const StepContext& context);
// Releases what the sink holds for the operation and waits for every POST in
// flight to end, keeping none of their answers (a scenario that ends in ERROR).
void abandon_in_flight(StepContext& context);

// The step's "node", which must be one of the scenario's nodes; throws InputError.
std::string require_node(ObjectReader& spec, const StepParseContext& context);

// Checks an expectation value against a field's declared type; throws InputError.
void validate_expected_value(const ObservedField& field, const nlohmann::json& value, const std::string& path);

}  // namespace skewbench::steps
