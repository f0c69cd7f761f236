#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <unistd.h>

#include "cli/commands.hpp"
#include "common/errors.hpp"
#include "common/text.hpp"
#include "evidence/console.hpp"
#include "evidence/evidence.hpp"
#include "evidence/out_folder.hpp"
#include "evidence/published_result.hpp"
#include "infra/http_remote.hpp"
#include "infra/postgres_cluster.hpp"
#include "runner/runner.hpp"
#include "runner/session.hpp"
#include "runner/stack.hpp"
#include "scenario/scenario.hpp"
#include "sweep/file_check.hpp"

namespace skewbench::cli {
namespace fs = std::filesystem;
using nlohmann::json;

std::atomic<bool>& interrupted_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {

extern "C" void on_stop_signal(int) { interrupted_flag().store(true); }

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

// The table (unless --quiet), then what did not go as expected, then the outcome;
// or all of it as one JSON document.
void print_run_outcome(const RunArgs& args, const std::vector<runner::ScenarioResult>& results,
                       const evidence::RunReport& report) {
  if (args.format == OutputFormat::Json) {
    std::cout << evidence::run_json(results, report).dump(2) << "\n";
    return;
  }
  const bool colour = stdout_wants_colour();
  if (!args.services.quiet) std::cout << evidence::results_table(results, colour);
  std::cout << evidence::failures_summary(results, colour);
  for (const auto& published : report.published_series) std::cout << evidence::published_checks_text(published);
  std::cout << evidence::outcome_line(results) << "\n";
  std::cout << "evidence: " << report.evidence_dir.string() << "  core digest: " << report.core_digest << "\n";
  for (const auto& w : report.warnings) std::cout << "warning: " << w << "\n";
}

// Writes the run's evidence into a hidden folder, then publishes it whole.
std::string publish_run(evidence::OutFolder& out, const std::vector<const scenario::Scenario*>& scenarios,
                        const std::vector<runner::ScenarioResult>& results, const evidence::RunEnvironment& env) {
  const auto incoming = out.make_incoming(env.run_id);
  // On failure the space goes back: on a full disk the next attempt needs it.
  auto discard = [&] {
    std::error_code ignored;
    fs::remove_all(incoming, ignored);
  };
  std::string digest;
  try {
    digest = evidence::write_run_artifacts(incoming, scenarios, results, env);
  } catch (const std::exception& e) {
    discard();
    throw std::runtime_error(std::string(e.what()) + "; the folder's earlier contents are unchanged");
  }
  try {
    out.publish(incoming, evidence::FolderKind::kRun, env.run_id);
  } catch (...) {
    discard();
    throw;
  }
  return digest;
}

}  // namespace

void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool stdout_wants_colour() { return evidence::colour_wanted(::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR")); }

bool service_options_are_usable(const ServiceArgs& services) {
  const auto problem = runner::service_options_problem(services);
  if (problem) std::cerr << "skewbench: " << *problem << "\n";
  return !problem;
}

bool remote_modes_match(const ServiceArgs& services, const std::vector<scenario::Scenario>& scenarios) {
  const auto problem = runner::remote_mode_problem(services, scenarios);
  if (problem) std::cerr << "skewbench: " << *problem << "\n";
  return !problem;
}

std::unique_ptr<evidence::OutFolder> open_out_folder(const evidence::OutFolderRequest& request) {
  try {
    return std::make_unique<evidence::OutFolder>(request);
  } catch (const evidence::OutFolderError& e) {
    std::cerr << "skewbench: " << e.what() << "\n";
    return nullptr;
  }
}

int validate_files(const std::vector<std::string>& paths) {
  const auto checks = sweep::check_files(paths);
  std::size_t invalid = 0;
  for (const auto& check : checks) {
    if (check.ok()) {
      std::cout << "ok  " << check.path << "  (" << check.summary << ")\n";
      continue;
    }
    ++invalid;
    for (const auto& error : check.errors) {
      std::cerr << "skewbench: invalid " << (check.kind.empty() ? "path" : check.kind) << ": " << error << "\n";
    }
  }
  if (invalid == 0) return exit_code::kPass;
  std::cerr << "skewbench: " << invalid << " of " << text::plural(checks.size(), "file") << " invalid\n";
  return exit_code::kUsage;
}

namespace {

// How a run in one session ended: every scenario ran, or an infrastructure
// error stopped it, or Ctrl-C did.
struct SessionEnd {
  bool interrupted = false;
  std::optional<std::string> infrastructure_error;
};

// Runs the scenarios against the session's services, appending to `results`;
// `env` takes what the services say of themselves.
SessionEnd run_in_session(const RunArgs& args, const std::vector<scenario::Scenario>& scenarios,
                          evidence::RunEnvironment& env, std::vector<runner::ScenarioResult>& results) {
  try {
    auto services_options = args.services;
    // A throwaway cluster keeps synchronous commits when a step stops it.
    services_options.database_restarts =
        std::any_of(scenarios.begin(), scenarios.end(), [](const auto& s) { return s.needs_database_control(); });
    runner::Session session({.services = services_options, .run_id = env.run_id});
    const auto& services = session.description();
    const auto started_at = env.started_at_utc;
    env = evidence::describe_environment(env.run_id, services.database, services.remote_health, services.remote_url,
                                         services.embedded_remote);
    env.started_at_utc = started_at;
    env.timeouts = args.services.timeouts_json();
    env.durability = runner::to_string(services_options.durability_or_durable());

    runner::ScenarioRunner scenario_runner(session.remote(), session.outbox(),
                                           {.run_id = env.run_id,
                                            .remote_control = session.stack().remote_control(),
                                            .interrupted = &interrupted_flag(),
                                            .evaluate_expectations = true,
                                            .database_control = session.stack().database_control()});
    for (const auto& s : scenarios) {
      if (!args.services.quiet) std::cerr << "skewbench: running " << s.id << "\n";
      results.push_back(scenario_runner.run(s));
    }
    return {};
  } catch (const Interrupted&) {
    return {.interrupted = true, .infrastructure_error = std::nullopt};
  } catch (const std::exception& e) {
    // Ctrl-C during start-up (initdb, pg_ctl) fails the start: that is not
    // an infrastructure fault.
    if (interrupted_flag().load()) return {.interrupted = true, .infrastructure_error = std::nullopt};
    return {.infrastructure_error = e.what()};
  }
}

// Every scenario that did not run is an ERROR, so no artifact can read as a pass.
void record_infrastructure_error(const std::string& error, const std::vector<scenario::Scenario>& scenarios,
                                 evidence::RunEnvironment& env, std::vector<runner::ScenarioResult>& results) {
  std::cerr << "skewbench: infrastructure error: " << error << "\n";
  for (std::size_t i = results.size(); i < scenarios.size(); ++i)
    results.push_back(runner::never_ran(scenarios[i], error));
  env.warnings.push_back("infrastructure error: " + error);
}

// The report of a published run: its evidence, and the published results of
// the benchmarks whose sections it ran.
evidence::RunReport run_report(const fs::path& out_dir, const std::string& digest,
                               const std::vector<const scenario::Scenario*>& scenarios,
                               const std::vector<runner::ScenarioResult>& results,
                               const evidence::RunEnvironment& env) {
  evidence::RunReport report{.evidence_dir = out_dir,
                             .core_digest = digest,
                             .warnings = env.warnings,
                             .exit_code = run_exit_code(results),
                             .published = nullptr,
                             .published_series = {}};
  for (auto& file : evidence::published_files(scenarios, results, env)) {
    if (!evidence::run_reports_on(*file.benchmark, scenarios)) continue;
    if (file.benchmark == &evidence::benchmark_018()) report.published = file.result;
    report.published_series.push_back(std::move(file.result));
  }
  return report;
}

// Runs the loaded scenarios into the opened folder, publishes the evidence
// and prints the outcome.
int run_into(const RunArgs& args, const std::vector<scenario::Scenario>& scenarios, evidence::OutFolder& out) {
  evidence::RunEnvironment env;
  env.run_id = runner::new_run_id();
  env.started_at_utc = evidence::utc_now_iso8601();  // replaced once the services answer
  env.timeouts = args.services.timeouts_json();
  std::vector<runner::ScenarioResult> results;
  const auto end = run_in_session(args, scenarios, env, results);
  if (end.interrupted) {
    std::cerr << "skewbench: interrupted; services stopped, no evidence written\n";
    return exit_code::kInterrupted;
  }
  if (end.infrastructure_error) record_infrastructure_error(*end.infrastructure_error, scenarios, env, results);
  for (const auto& s : scenarios) {
    if (s.expectations.empty()) env.warnings.push_back("scenario " + s.id + " expects nothing: it cannot fail");
  }
  env.finished_at_utc = evidence::utc_now_iso8601();

  std::vector<const scenario::Scenario*> scenario_ptrs;
  for (const auto& s : scenarios) scenario_ptrs.push_back(&s);
  std::string digest;
  try {
    digest = publish_run(out, scenario_ptrs, results, env);
  } catch (const std::exception& e) {
    std::cerr << "skewbench: cannot write evidence to " << args.out_dir << ": " << e.what() << "\n";
    return exit_code::kInfrastructure;
  }
  const auto report = run_report(args.out_dir, digest, scenario_ptrs, results, env);
  print_run_outcome(args, results, report);
  return report.exit_code;
}

}  // namespace

int run_scenarios(const RunArgs& args) {
  std::vector<scenario::Scenario> scenarios;
  try {
    scenarios = runner::load_scenarios(args.paths);
  } catch (const scenario::ScenarioFileError& e) {
    std::cerr << "skewbench: invalid scenario: " << e.what() << "\n";
    return exit_code::kUsage;
  }
  if (!service_options_are_usable(args.services)) return exit_code::kUsage;
  if (!remote_modes_match(args.services, scenarios)) return exit_code::kUsage;
  if (const auto problem = runner::control_step_problem(args.services, scenarios)) {
    std::cerr << "skewbench: " << *problem << "\n";
    return exit_code::kUsage;
  }
  std::vector<fs::path> inputs(args.paths.begin(), args.paths.end());
  for (const auto& s : scenarios) inputs.emplace_back(s.source);
  // Checked, locked and probed before any service starts; held to the end.
  const auto out = open_out_folder({.path = args.out_dir,
                                    .kind = evidence::FolderKind::kRun,
                                    .overwrite = args.overwrite,
                                    .resume = false,
                                    .inputs = inputs,
                                    .command = "run"});
  if (!out) return exit_code::kUsage;
  return run_into(args, scenarios, *out);
}

}  // namespace skewbench::cli
