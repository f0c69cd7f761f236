#include "runner/runner.hpp"

#include <chrono>
#include <cstdio>
#include <random>

#include "common/elapsed.hpp"
#include "common/errors.hpp"
#include "common/text.hpp"
#include "infra/remote_snapshot.hpp"

namespace skewbench::runner {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

template <typename T>
json optional_name(const std::optional<T>& value) {
  return value ? json(policy::to_string(*value)) : json(nullptr);
}

// The closing measurement, read back from the remote's own state and from the
// outbox at the reference time of the last step.
FinalMeasurement measure_final(infra::RemoteApi& remote, infra::OutboxApi& outbox, const steps::StepContext& context,
                               time::LogicalSeconds at_s) {
  auto ex = remote.status(context.operation_id, at_s);
  FinalMeasurement out;
  out.evaluation_time_s = at_s;
  out.remote = context.checked_snapshot(ex.answer, "the closing GET /status answered, but");
  const auto row = outbox.read(context.operation_id);
  out.outbox_status = row.status;
  out.delivery_attempts = row.delivery_attempts;
  out.business_state = row.business_state;
  out.idempotency_mode = ex.answer.idempotency_mode;
  out.durable_idempotency_records = ex.answer.durable_idempotency_records;
  out.exchange = ex.release_json();
  return out;
}

}  // namespace

json to_json(const StepRecord& record) {
  json out = {{"index", record.index},
              {"kind", record.kind},
              {"node", record.node ? json(*record.node) : json(nullptr)},
              {"at_s", record.at_s},
              {"reference_time_s", record.reference_time_s},
              {"parameters", record.parameters},
              {"duration_us", record.duration_us}};
  if (record.outcome) {
    out["observed"] = record.outcome->observed;
    out["exchanges"] = record.outcome->exchanges;
  }
  if (!record.process_clocks.is_null()) out["process_clocks"] = record.process_clocks;
  return out;
}

json to_json(const std::vector<StepRecord>& timeline) {
  json out = json::array();
  for (const auto& record : timeline) out.push_back(to_json(record));
  return out;
}

const steps::RecoveryResult* ScenarioResult::last_recovery() const {
  const steps::RecoveryResult* found = nullptr;
  for (const auto& record : timeline) {
    if (const auto* recovery = record.recovery()) found = recovery;
  }
  return found;
}

json ScenarioResult::temporal_state() const {
  const auto* recovery = last_recovery();
  return recovery ? optional_name(recovery->temporal_state) : json(nullptr);
}

json ScenarioResult::decision() const {
  const auto* recovery = last_recovery();
  return recovery ? optional_name(recovery->decision) : json(nullptr);
}

json FinalMeasurement::to_json(Verdict verdict) const {
  json out = {
      {"evaluation_time_s", evaluation_time_s},
      {"effect_count", remote.effect_count},
      {"post_requests", remote.post_requests},
      {"ack_drops", remote.ack_drops},
      {"active_idempotency_records",
       remote.active_idempotency_records ? json(*remote.active_idempotency_records) : json(nullptr)},
      {"status", remote_effect::kOperationStatuses.name(remote.status)},
      {"outbox_status", infra::to_string(outbox_status)},
      {"delivery_attempts", delivery_attempts},
      {"business_state", infra::to_string(business_state)},
      {"verdict", verdict},
  };
  out["idempotency_mode"] = idempotency_mode ? json(remote_effect::dedupe_mode_name(*idempotency_mode)) : json(nullptr);
  out["durable_idempotency_records"] = durable_idempotency_records ? json(*durable_idempotency_records) : json(nullptr);
  return out;
}

json ScenarioResult::final_json() const { return final_measurement ? final_measurement->to_json(verdict) : json(); }

Verdict compute_verdict(const std::optional<FinalMeasurement>& final_measurement,
                        const std::vector<StepRecord>& timeline) {
  if (!final_measurement) return Verdict::Error;
  const auto effects = final_measurement->remote.effect_count;
  if (effects >= 2) return Verdict::Conflict;
  bool refused = false;
  for (const auto& record : timeline) {
    if (const auto* recovery = record.recovery()) refused = refused || recovery->refused();
  }
  if (effects == 1 && final_measurement->outbox_status == infra::OutboxStatus::Delivered && !refused)
    return Verdict::Safe;
  return Verdict::Held;
}

std::string operation_id_for(const std::string& run_id, const std::string& scenario_id) {
  return run_id + "." + scenario_id;
}

std::string idempotency_key_for(const std::string& run_id, const std::string& scenario_id) {
  return run_id + "." + scenario_id + ".key";
}

std::string new_run_id() {
  std::random_device device;
  std::uniform_int_distribution<std::uint64_t> dist;
  const auto value = (static_cast<std::uint64_t>(device()) << 32) ^ device() ^ dist(device);
  char buf[20];
  std::snprintf(buf, sizeof(buf), "r%016llx", static_cast<unsigned long long>(value));
  return buf;
}

ScenarioRunner::ScenarioRunner(infra::RemoteApi& remote, infra::OutboxApi& outbox, RunnerOptions options)
    : remote_(remote), outbox_(outbox), options_(std::move(options)) {}

namespace {

// A result naming the scenario and its ids, before anything ran.
ScenarioResult new_result(const scenario::Scenario& s, const std::string& run_id) {
  ScenarioResult result;
  result.scenario_id = s.id;
  result.policy = std::string(s.policy->name());
  result.operation_id = operation_id_for(run_id, s.id);
  result.idempotency_key = idempotency_key_for(run_id, s.id);
  result.operation_name = s.operation.name;
  result.stable_key_name = s.operation.stable_key_name();
  return result;
}

// Runs one step and appends its record to the timeline, also when it throws.
// The process clocks that follow a node or the authority are set to the
// step's time before it runs, and again after it (a clock step takes effect
// at once); then each process is asked what time it reads.
void run_step(const scenario::Scenario& s, std::size_t i, steps::StepContext& context, ScenarioInstances& instances,
              ScenarioResult& result) {
  const auto& step = *s.steps[i].step;
  context.step_reference_s = context.reference_time(step.at_s());
  context.step_index = i;
  instances.drive_clocks();
  StepRecord record{.index = i,
                    .kind = std::string(step.kind()),
                    .role = step.role(),
                    .node = step.node(),
                    .at_s = step.at_s(),
                    .reference_time_s = context.reference_time(step.at_s()),
                    .parameters = step.parameters(),
                    .outcome = std::nullopt,
                    .duration_us = 0};
  const auto step_started = Clock::now();
  try {
    record.outcome = step.execute(context);
    record.duration_us = micros_since(step_started);
    instances.drive_clocks();
    record.process_clocks = instances.process_clocks();
  } catch (const InfrastructureError& e) {
    // The error names the step whose exchange failed, before what failed.
    record.duration_us = micros_since(step_started);
    result.timeline.push_back(std::move(record));
    throw InfrastructureError("step " + std::to_string(i) + " (" + std::string(step.kind()) + "): " + e.what());
  } catch (...) {
    record.duration_us = micros_since(step_started);
    result.timeline.push_back(std::move(record));
    throw;
  }
  result.timeline.push_back(std::move(record));
}

// One expectation against what was measured: the closing measurement, or the
// observation of the step it names.
CheckResult check_expectation(const scenario::Expectation& expectation, const ScenarioResult& result) {
  CheckResult check;
  check.id = expectation.id;
  check.expected = expectation.expected;
  const json* source = nullptr;
  json final_fields;
  if (expectation.step_index < 0) {
    if (result.final_measurement) {
      final_fields = result.final_json();
      source = &final_fields;
    }
  } else if (static_cast<std::size_t>(expectation.step_index) < result.timeline.size()) {
    source = result.timeline[static_cast<std::size_t>(expectation.step_index)].observed();
  }
  if (source && source->contains(expectation.field)) {
    check.measured = true;
    check.observed = (*source)[expectation.field];
  }
  check.pass = check.measured && !result.error && check.observed == check.expected;
  return check;
}

}  // namespace

ScenarioResult ScenarioRunner::run(const scenario::Scenario& s) {
  const auto started = Clock::now();
  ScenarioResult result = new_result(s, options_.run_id);
  std::map<std::string, time::NodeClock> nodes;
  for (const auto& n : s.nodes) nodes.emplace(n.node_id, n);
  steps::StepContext context{.t0_s = s.t0_s,
                             .ttl_s = s.ttl_s,
                             .nodes = nodes,
                             .policy = *s.policy,
                             .remote = &remote_,
                             .outbox = outbox_,
                             .remote_control = options_.remote_control,
                             .database_control = options_.database_control,
                             .operation_id = result.operation_id,
                             .idempotency_key = result.idempotency_key,
                             .payload = json{{"scenario", s.id}}.dump(),
                             .ledger = infra::RemoteLedger{},
                             .operation = s.operation,
                             .node_remotes = {},
                             .node_instances = {},
                             .step_reference_s = s.t0_s,
                             .step_index = 0,
                             .effect_sink = options_.effect_sink,
                             .posts_sent = 0,
                             .bound_temporal_epoch = std::nullopt,
                             .watermarks_s = {},
                             .in_flight = {}};
  const auto first_sink_call = sink_calls_seen_;
  if (options_.effect_sink) options_.effect_sink->begin_window();
  try {
    execute(s, context, result);
    if (options_.effect_sink) check_sink_calls(first_sink_call, result);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    // An infrastructure fault, or a step that could not run: the scenario says
    // nothing, and nothing in it may read as a pass.
    result.error = e.what();
    result.verdict = Verdict::Error;
    // Its calls are still its own: the instances stop before they are read.
    try {
      settle_sink_callers();
    } catch (const std::exception& settle_error) {
      result.error = *result.error + "; then, stopping the service: " + settle_error.what();
    }
  }
  if (options_.effect_sink) record_sink_calls(s, first_sink_call, result);
  bool all_pass = !result.error.has_value();
  if (options_.evaluate_expectations) {
    for (const auto& expectation : s.expectations) {
      result.checks.push_back(check_expectation(expectation, result));
      all_pass = all_pass && result.checks.back().pass;
    }
  }
  result.pass = all_pass;
  result.duration_us = micros_since(started);
  return result;
}

void ScenarioRunner::execute(const scenario::Scenario& s, steps::StepContext& context, ScenarioResult& result) {
  // A harness-started remote runs in the mode the scenario needs (durable by default).
  if (options_.remote_control)
    options_.remote_control->use_dedupe_mode(s.dedupe_mode.value_or(remote_effect::kDefaultDedupeMode));
  outbox_.declare_operation(result.operation_id, s.operation.initial_business_version);
  ScenarioInstances instances(s, context, remote_, options_.instances);
  // The processes every later answer must come from.
  context.ledger.boot_ids = context.boot_ids();
  try {
    for (std::size_t i = 0; i < s.steps.size(); ++i) {
      if (options_.interrupted && options_.interrupted->load()) throw Interrupted();
      run_step(s, i, context, instances, result);
    }
    if (const auto left = steps::in_flight_left(context)) throw InfrastructureError(*left);
  } catch (...) {
    // A POST in flight reaches the service through `instances`: it ends first.
    steps::abandon_in_flight(context);
    throw;
  }
  const auto last_at_s = s.steps.back().step->at_s();
  settle_sink_callers();
  result.final_measurement = measure_final(instances.first(), outbox_, context, context.reference_time(last_at_s));
  result.verdict = compute_verdict(result.final_measurement, result.timeline);
}

void ScenarioRunner::record_sink_calls(const scenario::Scenario& s, std::size_t first, ScenarioResult& result) {
  result.effect_sink_calls = json::array();
  const auto calls = options_.effect_sink->calls();
  for (auto i = first; i < calls.size(); ++i) result.effect_sink_calls.push_back(calls[i].to_json());
  sink_calls_seen_ = calls.size();
  counted_operations_.emplace(result.operation_id, s.id);
  if (const auto refused = options_.effect_sink->refused_in_window(); refused > 0) {
    fail_with(result, "the service called the effect sink more than " + std::to_string(infra::kMaxCallsPerWindow) +
                          " times in this scenario: the sink recorded the first " +
                          std::to_string(infra::kMaxCallsPerWindow) + " and refused " + std::to_string(refused) +
                          " more (answered 503, not applied), so its count is no measurement");
  }
}

void ScenarioRunner::settle_sink_callers() {
  if (options_.effect_sink && options_.instances) options_.instances->settle();
}

void ScenarioRunner::check_sink_calls(std::size_t first, const ScenarioResult& result) const {
  const auto calls = options_.effect_sink->calls();
  for (auto i = first; i < calls.size(); ++i) {
    const auto& call = calls[i];
    if (!call.instance) {
      throw InfrastructureError("the effect sink got call " + std::to_string(call.sequence) + " (" + call.method + " " +
                                text::short_prefix(call.path) +
                                ") outside every instance's {sink_url} (no /instance/NAME prefix): the service "
                                "must append its path to {sink_url} as given, so that each call names its instance");
    }
    if (call.operation_id == result.operation_id) continue;
    const auto from = " from " + *call.instance;
    std::string whose = "with no operation id where the target's $.sink.operation_id says it is";
    if (call.operation_id) {
      const auto earlier = counted_operations_.find(*call.operation_id);
      whose = "for operation " + text::short_prefix(*call.operation_id) +
              (earlier == counted_operations_.end()
                   ? ", not this scenario's"
                   : " of scenario " + earlier->second + ", which had ended (its row is an ERROR too)");
    }
    throw InfrastructureError("the effect sink got call " + std::to_string(call.sequence) + " (" + call.method + " " +
                              text::short_prefix(call.path) + from + ") " + whose +
                              ": an effect skewbench cannot attribute to this scenario, so no verdict");
  }
}

void fail_scenarios_called_late(std::vector<ScenarioResult>& results) {
  if (results.size() < 2 || !results.back().effect_sink_calls.is_array()) return;
  const auto& last = results.back();
  for (const auto& call : last.effect_sink_calls) {
    const auto& operation = call["operation_id"];
    if (!operation.is_string() || operation == last.operation_id) continue;
    for (std::size_t i = 0; i + 1 < results.size(); ++i) {
      if (results[i].operation_id != operation.get<std::string>()) continue;
      fail_with(results[i], "the effect sink got call " + call["sequence"].dump() +
                                " for this scenario's operation after its count was read, while " + last.scenario_id +
                                " ran: " + (call["applied"] == true ? "an effect" : "a call") +
                                " its count and verdict do not hold");
    }
  }
}

std::optional<std::string> ScenarioRunner::late_sink_calls() const {
  if (!options_.effect_sink) return std::nullopt;
  const auto calls = options_.effect_sink->calls();
  if (calls.size() <= sink_calls_seen_) return std::nullopt;
  const auto& call = calls[sink_calls_seen_];
  return "the effect sink got " + std::to_string(calls.size() - sink_calls_seen_) +
         " call(s) after the last scenario ended, the first " + call.method + " " + text::short_prefix(call.path) +
         " for operation " +
         (call.operation_id ? text::short_prefix(*call.operation_id) : std::string("(none found)")) +
         ": an effect no scenario can be held to, so no verdict";
}

void fail_with(ScenarioResult& result, const std::string& why) {
  result.error = result.error ? *result.error + "; " + why : why;
  result.verdict = Verdict::Error;
  result.pass = false;
  for (auto& check : result.checks) check.pass = false;
}

}  // namespace skewbench::runner
