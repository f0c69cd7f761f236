#pragma once

// The runner layer executes a scenario's steps against the database and the
// remote service, takes a closing measurement read back from both, and checks
// the scenario's expectations against what was measured.

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infra/effect_sink.hpp"
#include "infra/ports.hpp"
#include "runner/instances.hpp"
#include "scenario/scenario.hpp"
#include "scenario/verdict.hpp"
#include "steps/step.hpp"

namespace skewbench::runner {

using scenario::kAllVerdicts;
using scenario::Verdict;
using scenario::verdict_from_string;

struct CheckResult {
  std::string id;
  nlohmann::json expected;
  nlohmann::json observed;  // null when the value was never measured
  bool measured = false;
  bool pass = false;
};

// One executed step, as the timeline holds it. `outcome` is empty when the
// step threw (an infrastructure fault): the step then observed nothing.
struct StepRecord {
  std::size_t index = 0;
  std::string kind;
  steps::StepRole role = steps::StepRole::Setup;
  std::optional<std::string> node;
  time::LogicalSeconds at_s = 0;
  time::LogicalSeconds reference_time_s = 0;
  nlohmann::json parameters = nlohmann::json::object();
  std::optional<steps::StepOutcome> outcome;
  std::int64_t duration_us = 0;
  // In --clock-mode real, each process clock after the step, as set and as the
  // process read it (ScenarioInstances::process_clocks); null otherwise.
  nlohmann::json process_clocks = nullptr;

  // What the step observed; null when it threw.
  const nlohmann::json* observed() const { return outcome ? &outcome->observed : nullptr; }
  // What a recovery decided; null for other roles and when the step threw.
  const steps::RecoveryResult* recovery() const { return outcome && outcome->recovery ? &*outcome->recovery : nullptr; }
};

// The record as the evidence's timeline writes it (without the role, which
// the kind implies; without observed and exchanges when the step threw).
nlohmann::json to_json(const StepRecord& record);
nlohmann::json to_json(const std::vector<StepRecord>& timeline);

// The closing measurement, read back after the last step: the remote's own
// counts and the outbox row, at the reference time of the last step.
struct FinalMeasurement {
  time::LogicalSeconds evaluation_time_s = 0;
  infra::RemoteSnapshot remote;
  infra::OutboxStatus outbox_status = infra::OutboxStatus::Absent;
  std::int64_t delivery_attempts = 0;
  infra::BusinessState business_state = infra::BusinessState::Absent;
  // The remote's dedupe mode and the operation's records in its durable key
  // table; nullopt when the remote does not report them.
  std::optional<remote_effect::DedupeMode> idempotency_mode;
  std::optional<std::int64_t> durable_idempotency_records;
  // The closing GET /status as the evidence's "closing_exchange" records it
  // (with the instance that answered and its boot_id); not in "final".
  nlohmann::json exchange = nullptr;

  // As the evidence's "final" writes it, with the verdict computed from it.
  nlohmann::json to_json(Verdict verdict) const;
};

struct ScenarioResult {
  std::string scenario_id;
  std::string policy;
  std::string operation_id;                           // on the wire: namespaced by the run id
  std::string idempotency_key;                        // the stable key on the wire
  std::string operation_name;                         // as the scenario names it (published results show this)
  std::string stable_key_name;                        // "<operation_name>:effect:v1"
  std::vector<StepRecord> timeline;                   // one record per executed step
  std::optional<FinalMeasurement> final_measurement;  // nullopt when never taken
  std::vector<CheckResult> checks;
  Verdict verdict = Verdict::Error;
  std::optional<std::string> error;  // set when infrastructure failed
  bool pass = false;                 // every check passed and no error
  std::int64_t duration_us = 0;
  // The effect sink's calls while the scenario ran, as the evidence records
  // them; null when the service calls no sink.
  nlohmann::json effect_sink_calls = nullptr;

  // The closing measurement and verdict as the evidence writes them (null when
  // never taken); expectations on the final measurement read these fields.
  nlohmann::json final_json() const;
  // The last recovery's decision; null when no recovery ran to completion.
  const steps::RecoveryResult* last_recovery() const;
  // The last recovery's temporal state and decision as published (null when none).
  nlohmann::json temporal_state() const;
  nlohmann::json decision() const;
};

// The verdict from measured values only: CONFLICT when the remote holds two or
// more effects; SAFE when it holds exactly one, the outbox says delivered and no
// recovery had to refuse a time-based decision; HELD otherwise (recovery saw
// TIME_UNKNOWN or escalated, or the effect is not in place).
Verdict compute_verdict(const std::optional<FinalMeasurement>& final_measurement,
                        const std::vector<StepRecord>& timeline);

struct RunnerOptions {
  std::string run_id;
  steps::RemoteControl* remote_control = nullptr;
  const std::atomic<bool>* interrupted = nullptr;  // checked before each step
  bool evaluate_expectations = true;               // false for sweep cells
  steps::DatabaseControl* database_control = nullptr;
  // The service's other instances and its process clocks (the session); null
  // when the runner reaches one instance, told the time in each request.
  ServiceInstances* instances = nullptr;
  // The sink a service of its own wire calls for its effects; null for the
  // others. Every call while a scenario runs must be for its operation.
  infra::EffectSink* effect_sink = nullptr;
};

class ScenarioRunner {
 public:
  ScenarioRunner(infra::RemoteApi& remote, infra::OutboxApi& outbox, RunnerOptions options);

  // Never throws for infrastructure failures: they become verdict ERROR with
  // the message in `error`. Throws Interrupted when asked to stop.
  ScenarioResult run(const scenario::Scenario& scenario);

  // After the last scenario: why the effect sink's calls since it ended (a
  // call that arrived after its scenario ended, which no scenario can be
  // held to) make it an ERROR; nullopt when there are none.
  std::optional<std::string> late_sink_calls() const;

 private:
  // The steps, then the closing measurement and the verdict; throws on a fault.
  void execute(const scenario::Scenario& scenario, steps::StepContext& context, ScenarioResult& result);
  // Throws InfrastructureError naming the first call to the effect sink since
  // call `first` that is not for the scenario's operation.
  void check_sink_calls(std::size_t first, const ScenarioResult& result) const;
  // The sink's calls since call `first` into the result's evidence, the
  // scenario an ERROR when the sink refused calls past its window.
  void record_sink_calls(const scenario::Scenario& scenario, std::size_t first, ScenarioResult& result);
  // With an effect sink: stops the service's instances (ServiceInstances::
  // settle) so that every call they make after their answers is counted.
  void settle_sink_callers();

  infra::RemoteApi& remote_;
  infra::OutboxApi& outbox_;
  RunnerOptions options_;
  // The sink's calls the scenarios so far were held to: each scenario is held
  // to every call since the one before it ended, those in between included.
  std::size_t sink_calls_seen_ = 0;
  // The operations whose sink calls were read, and their scenarios.
  std::map<std::string, std::string> counted_operations_;
};

// With the results so far, the last one just run: every earlier scenario
// whose operation a sink call in the last one's window carries is made an
// ERROR (an effect after its count was read), whatever its verdict was.
void fail_scenarios_called_late(std::vector<ScenarioResult>& results);

// Makes `result` an ERROR for `why`: no check of it passes.
void fail_with(ScenarioResult& result, const std::string& why);

// Ids sent to the remote and stored in the database: namespaced by run id so
// that runs sharing a database or a remote never collide.
std::string operation_id_for(const std::string& run_id, const std::string& scenario_id);
std::string idempotency_key_for(const std::string& run_id, const std::string& scenario_id);

// A fresh run id: "r" + 16 hex digits from a random device.
std::string new_run_id();

}  // namespace skewbench::runner
