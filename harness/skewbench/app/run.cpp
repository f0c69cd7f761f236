#include "app/run.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>

#include "app/preflight.hpp"
#include "artifacts/out_folder.hpp"
#include "artifacts/run_folder.hpp"
#include "common/errors.hpp"
#include "common/files.hpp"
#include "evidence/count_history.hpp"
#include "evidence/evidence.hpp"
#include "infra/in_process.hpp"
#include "published/published.hpp"
#include "runner/session.hpp"
#include "scenario/scenario.hpp"

namespace skewbench::app {
namespace fs = std::filesystem;

namespace {

int run_exit_code(const std::vector<runner::ScenarioResult>& results) {
  bool any_error = false;
  bool all_pass = true;
  for (const auto& r : results) {
    any_error = any_error || r.error.has_value();
    all_pass = all_pass && r.pass;
  }
  if (any_error) return exit_code::kInfrastructure;
  return all_pass ? exit_code::kPass : exit_code::kExpectationFailed;
}

// Writes the run's evidence into its hidden folder `incoming` (which may hold
// the services' logs already), then publishes it whole.
std::string publish_run(artifacts::OutFolder& out, const fs::path& incoming,
                        const std::vector<const scenario::Scenario*>& scenarios,
                        const std::vector<runner::ScenarioResult>& results, const evidence::RunEnvironment& env) {
  // On failure the space goes back: on a full disk the next attempt needs it.
  auto discard = [&] {
    std::error_code ignored;
    fs::remove_all(incoming, ignored);
  };
  std::string digest;
  try {
    digest = artifacts::write_run_artifacts(incoming, scenarios, results, env);
  } catch (const std::exception& e) {
    discard();
    throw std::runtime_error(std::string(e.what()) + "; the folder's earlier contents are unchanged");
  }
  try {
    out.publish(incoming, artifacts::FolderKind::kRun, env.run_id);
  } catch (...) {
    discard();
    throw;
  }
  return digest;
}

// The folder of the evidence that holds the started services' logs.
constexpr const char* kLogsFolder = "logs";

// The services' logs stay in the evidence when a scenario is an ERROR (they
// say why), and are left out otherwise.
void keep_logs_only_for_errors(const fs::path& incoming, const std::vector<runner::ScenarioResult>& results,
                               Observer& observer, const std::string& out_dir) {
  const bool any_error =
      std::any_of(results.begin(), results.end(), [](const auto& r) { return r.verdict == scenario::Verdict::Error; });
  std::error_code ec;
  if (!fs::exists(incoming / kLogsFolder, ec)) return;
  if (any_error && !fs::is_empty(incoming / kLogsFolder, ec)) {
    observer.say("the started services' logs are kept in " + (fs::path(out_dir) / kLogsFolder).string());
    return;
  }
  fs::remove_all(incoming / kLogsFolder, ec);
}

// How a run in one session ended: every scenario ran, or an infrastructure
// error stopped it, or Ctrl-C did.
struct SessionEnd {
  bool interrupted = false;
  std::optional<std::string> infrastructure_error;
};

// What the session's services say of themselves, for the evidence.
void describe_services(const runner::Session& session, const runner::StackOptions& services,
                       evidence::RunEnvironment& env) {
  const auto& description = session.description();
  const auto started_at = env.started_at_utc;
  env = evidence::describe_environment(env.run_id, description);
  env.started_at_utc = started_at;
  env.timeouts = services.timeouts_json();
  env.durability = runner::to_string(services.durability_or_durable());
}

// The in-process remote's one control a run needs: a scenario of another
// dedupe mode restarts it in that mode on the same state file, as a started
// remote-effect is restarted. The steps that restart or hang a process are
// refused before the run (runner::in_process_scenario_problem).
class InProcessControl final : public steps::RemoteControl {
 public:
  InProcessControl(infra::InProcessRemote& remote, std::string run_id) : remote_(remote), run_id_(std::move(run_id)) {}

  void use_dedupe_mode(remote_effect::DedupeMode mode) override {
    if (mode == remote_.mode()) return;
    remote_.restart("in-process-" + run_id_ + "-" + std::to_string(++restarts_ + 1), mode);
  }
  void restart_remote() override { throw std::logic_error("the in-process engine restarts no process"); }
  void pause_remote(std::chrono::milliseconds /*duration*/) override {
    throw std::logic_error("the in-process engine hangs no process");
  }
  void restart_store() override { throw std::logic_error("the in-process engine has no store process"); }
  std::string kill_instance(std::size_t /*index*/) override {
    throw std::logic_error("the in-process engine kills no process");
  }

 private:
  infra::InProcessRemote& remote_;
  std::string run_id_;
  int restarts_ = 0;
};

// Runs the scenarios in this process (--engine in-process): remote-effect's
// rules and store on a file of a temporary folder, and the outbox double,
// shared by the scenarios as a run's services are.
SessionEnd run_in_process(const RunRequest& request, const std::vector<scenario::Scenario>& scenarios,
                          const std::atomic<bool>& stop, Observer& observer, evidence::RunEnvironment& env,
                          std::vector<runner::ScenarioResult>& results) {
  try {
    observer.entering(Phase::services);
    const TempDir dir("skewbench-in-process");
    infra::InProcessRemote remote({.state_file = dir.path() / "remote-effect.sqlite3",
                                   .mode = scenarios.front().dedupe_mode.value_or(remote_effect::kDefaultDedupeMode),
                                   .boot_id = "in-process-" + env.run_id + "-1",
                                   .default_ttl_s = 60});
    infra::InProcessOutbox outbox;
    InProcessControl control(remote, env.run_id);
    const auto started_at = env.started_at_utc;
    env = evidence::describe_in_process_environment(env.run_id, remote.health().body);
    env.started_at_utc = started_at;
    runner::ScenarioRunner scenario_runner(remote, outbox,
                                           {.run_id = env.run_id,
                                            .remote_control = &control,
                                            .interrupted = &stop,
                                            .evaluate_expectations = true,
                                            .database_control = nullptr,
                                            .instances = nullptr,
                                            .effect_sink = nullptr});
    observer.entering(Phase::scenarios);
    for (const auto& s : scenarios) {
      if (!request.services.quiet) observer.say("running " + s.id);
      auto result = scenario_runner.run(s);
      evidence::hold_counts(s, result);
      results.push_back(std::move(result));
    }
    return {};
  } catch (const Interrupted&) {
    return {.interrupted = true, .infrastructure_error = std::nullopt};
  } catch (const std::exception& e) {
    return {.infrastructure_error = e.what()};
  }
}

// Runs the scenarios against the session's services, appending to `results`;
// `env` takes what the services say of themselves.
SessionEnd run_in_session(const RunRequest& request, const std::vector<scenario::Scenario>& scenarios,
                          const std::atomic<bool>& stop, Observer& observer, evidence::RunEnvironment& env,
                          std::vector<runner::ScenarioResult>& results) {
  try {
    observer.entering(Phase::services);
    auto services = request.services;
    // A throwaway cluster keeps synchronous commits when a step stops it.
    services.database_restarts =
        std::any_of(scenarios.begin(), scenarios.end(), [](const auto& s) { return s.needs_database_control(); });
    runner::Session session({.services = services, .run_id = env.run_id});
    describe_services(session, services, env);
    runner::ScenarioRunner scenario_runner(session.remote(), session.outbox(),
                                           {.run_id = env.run_id,
                                            .remote_control = session.stack().remote_control(),
                                            .interrupted = &stop,
                                            .evaluate_expectations = true,
                                            .database_control = session.stack().database_control(),
                                            .instances = &session,
                                            .effect_sink = session.stack().effect_sink()});
    observer.entering(Phase::scenarios);
    for (const auto& s : scenarios) {
      if (!services.quiet) observer.say("running " + s.id);
      session.stack().start_stopped_instances();
      auto result = scenario_runner.run(s);
      evidence::hold_counts(s, result);
      results.push_back(std::move(result));
      runner::fail_scenarios_called_late(results);
    }
    if (const auto late = scenario_runner.late_sink_calls(); late && !results.empty()) {
      runner::fail_with(results.back(), *late);
    }
    env.clock["instances"] = session.instances_json();
    for (auto& port : session.stack().ports_given_up()) env.warnings.push_back(std::move(port));
    return {};
  } catch (const Interrupted&) {
    return {.interrupted = true, .infrastructure_error = std::nullopt};
  } catch (const std::exception& e) {
    // Ctrl-C during start-up (initdb, pg_ctl) fails the start: that is not
    // an infrastructure fault.
    if (stop.load()) return {.interrupted = true, .infrastructure_error = std::nullopt};
    return {.infrastructure_error = e.what()};
  }
}

// Every scenario that did not run is an ERROR, so no artifact can read as a pass.
void record_infrastructure_error(const std::string& error, const std::vector<scenario::Scenario>& scenarios,
                                 Observer& observer, evidence::RunEnvironment& env,
                                 std::vector<runner::ScenarioResult>& results) {
  observer.say("infrastructure error: " + error);
  for (std::size_t i = results.size(); i < scenarios.size(); ++i)
    results.push_back(runner::never_ran(scenarios[i], error));
  env.warnings.push_back("infrastructure error: " + error);
}

// The report of a published run: its evidence, and the published results of
// the benchmarks whose sections it ran.
artifacts::RunReport run_report(const fs::path& out_dir, const std::string& digest,
                                const std::vector<const scenario::Scenario*>& scenarios,
                                const std::vector<runner::ScenarioResult>& results,
                                const evidence::RunEnvironment& env) {
  artifacts::RunReport report{
      .evidence_dir = out_dir,
      .core_digest = digest,
      .warnings = env.warnings,
      .exit_code = run_exit_code(results),
      .published = nullptr,
      .published_series = {},
      .postgresql_version = env.postgresql.is_object() ? env.postgresql.value("server_version", "") : "",
      .engine = env.engine};
  for (auto& file : published::published_files(scenarios, results, env)) {
    if (!published::run_reports_on(*file.benchmark, scenarios)) continue;
    if (file.benchmark == &published::benchmark_018()) report.published = file.result;
    report.published_series.push_back(std::move(file.result));
  }
  return report;
}

// Runs the loaded scenarios into the opened folder and publishes the evidence.
RunOutcome run_into(const RunRequest& request, const std::vector<scenario::Scenario>& scenarios,
                    artifacts::OutFolder& out, const std::atomic<bool>& stop, Observer& observer) {
  evidence::RunEnvironment env;
  env.run_id = runner::new_run_id();
  env.started_at_utc = evidence::utc_now_iso8601();  // replaced once the services answer
  env.timeouts = request.services.timeouts_json();
  RunOutcome outcome;
  // The evidence's hidden folder exists from the start: the services write
  // their logs into it, and the evidence keeps them when a scenario is an
  // ERROR (docs/evidence.md).
  fs::path incoming;
  try {
    incoming = out.make_incoming(env.run_id);
  } catch (const std::exception& e) {
    observer.say("cannot write evidence to " + request.out_dir + ": " + e.what());
    outcome.exit_code = exit_code::kInfrastructure;
    return outcome;
  }
  auto with_logs = request;
  with_logs.services.log_dir = incoming / kLogsFolder;
  const auto end = request.services.engine == infra::Engine::in_process
                       ? run_in_process(request, scenarios, stop, observer, env, outcome.results)
                       : run_in_session(with_logs, scenarios, stop, observer, env, outcome.results);
  if (end.interrupted) {
    std::error_code ignored;
    fs::remove_all(incoming, ignored);
    observer.say("interrupted; services stopped, no evidence written");
    outcome.exit_code = exit_code::kInterrupted;
    return outcome;
  }
  if (end.infrastructure_error)
    record_infrastructure_error(*end.infrastructure_error, scenarios, observer, env, outcome.results);
  for (const auto& s : scenarios) {
    if (s.expectations.empty()) env.warnings.push_back("scenario " + s.id + " expects nothing: it cannot fail");
  }
  env.finished_at_utc = evidence::utc_now_iso8601();

  observer.entering(Phase::evidence);
  std::vector<const scenario::Scenario*> scenario_ptrs;
  for (const auto& s : scenarios) scenario_ptrs.push_back(&s);
  keep_logs_only_for_errors(incoming, outcome.results, observer, request.out_dir);
  std::string digest;
  try {
    digest = publish_run(out, incoming, scenario_ptrs, outcome.results, env);
  } catch (const std::exception& e) {
    observer.say("cannot write evidence to " + request.out_dir + ": " + e.what());
    outcome.exit_code = exit_code::kInfrastructure;
    return outcome;
  }
  outcome.report = run_report(request.out_dir, digest, scenario_ptrs, outcome.results, env);
  outcome.exit_code = outcome.report->exit_code;
  return outcome;
}

// Says what it is told, and keeps it: why a run was refused.
class RecordingObserver final : public Observer {
 public:
  explicit RecordingObserver(Observer& next) : next_(next) {}
  void say(const std::string& line) override {
    lines.push_back(line);
    next_.say(line);
  }
  void entering(Phase phase) override { next_.entering(phase); }
  std::vector<std::string> lines;

 private:
  Observer& next_;
};

// The scenarios of the request, or nullopt (and why, in `problems`) when a
// file or a flag cannot be used.
std::optional<std::vector<scenario::Scenario>> checked_scenarios(const RunRequest& request, Observer& next,
                                                                 std::vector<artifacts::InputProblem>& problems) {
  std::vector<scenario::Scenario> scenarios;
  const auto invalid = [&](const scenario::ScenarioFileError& e) {
    next.say(std::string("invalid scenario: ") + e.what());
    problems.push_back({.file = e.file(), .json_path = e.json_path(), .message = e.what()});
    return std::nullopt;
  };
  try {
    scenarios = runner::load_scenarios(request.paths);
  } catch (const scenario::ScenarioFileError& e) {
    return invalid(e);
  }
  for (const auto& s : scenarios) {
    if (const auto problem = published::report_as_problem(s)) {
      return invalid(scenario::ScenarioFileError(s.source, "$.report_as", *problem));
    }
  }
  RecordingObserver observer(next);
  const auto refused = [&] {
    for (const auto& line : observer.lines) problems.push_back({.file = "", .json_path = "", .message = line});
    return std::nullopt;
  };
  if (!service_options_are_usable(request.services, observer)) return refused();
  if (!remote_modes_match(request.services, scenarios, observer)) return refused();
  for (const auto& problem :
       {runner::in_process_scenario_problem(request.services, scenarios),
        runner::control_step_problem(request.services, scenarios),
        runner::clock_mode_problem(request.services, scenarios), runner::instances_problem(request.services, scenarios),
        runner::own_wire_problem(request.services, scenarios)}) {
    if (!problem) continue;
    observer.say(*problem);
    return refused();
  }
  return scenarios;
}

}  // namespace

RunOutcome run(const RunRequest& request, const std::atomic<bool>& stop, Observer& observer) {
  std::vector<artifacts::InputProblem> problems;
  auto scenarios = checked_scenarios(request, observer, problems);
  if (!scenarios) {
    return {.exit_code = exit_code::kUsage, .results = {}, .report = std::nullopt, .input_problems = problems};
  }
  std::vector<fs::path> inputs(request.paths.begin(), request.paths.end());
  for (const auto& s : *scenarios) inputs.emplace_back(s.source);
  // Checked, locked and probed before any service starts; held to the end.
  const auto out = open_out_folder({.path = request.out_dir,
                                    .kind = artifacts::FolderKind::kRun,
                                    .overwrite = request.overwrite,
                                    .resume = false,
                                    .inputs = inputs,
                                    .command = "run"},
                                   observer);
  if (!out) return {.exit_code = exit_code::kUsage, .results = {}, .report = std::nullopt};
  auto outcome = run_into(request, *scenarios, *out, stop, observer);
  outcome.scenarios = std::move(*scenarios);
  return outcome;
}

}  // namespace skewbench::app
