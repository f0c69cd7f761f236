#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include <unistd.h>

#include "cli/commands.hpp"
#include "common/errors.hpp"
#include "common/text.hpp"
#include "evidence/console.hpp"
#include "evidence/evidence.hpp"
#include "evidence/out_folder.hpp"
#include "evidence/published_result.hpp"
#include "infra/http_remote.hpp"
#include "infra/pg_outbox.hpp"
#include "infra/postgres_cluster.hpp"
#include "runner/runner.hpp"
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

// Loads every scenario before anything starts, so a bad file costs nothing.
std::vector<scenario::Scenario> load_all(const std::vector<std::string>& paths) {
  std::vector<scenario::Scenario> out;
  std::map<std::string, std::string> ids;
  std::map<std::string, std::string> sections;
  for (const auto& file : scenario::collect_scenario_files(paths)) {
    auto s = scenario::load_scenario_file(file);
    if (const auto [it, inserted] = ids.emplace(s.id, s.source); !inserted) {
      throw scenario::ScenarioFileError(s.source, "$.id", "scenario id \"" + s.id + "\" is also used by " + it->second);
    }
    if (s.report_as) {
      if (const auto [it, inserted] = sections.emplace(*s.report_as, s.source); !inserted) {
        throw scenario::ScenarioFileError(s.source, "$.report_as",
                                          "section \"" + *s.report_as + "\" is also reported by " + it->second);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

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

// --postgres-bin must name a directory with the server binaries.
bool postgres_bin_is_usable(const ServiceArgs& services) {
  if (!services.postgres_bin || infra::is_postgres_bindir(*services.postgres_bin)) return true;
  std::cerr << "skewbench: --postgres-bin " << *services.postgres_bin
            << ": not a directory holding initdb, pg_ctl and postgres\n";
  return false;
}

bool service_options_are_usable(const ServiceArgs& services) {
  if (!postgres_bin_is_usable(services)) return false;
  if (!services.remote_url) {
    // A remote-effect that cannot be found is known now, not after PostgreSQL started.
    try {
      runner::find_remote_effect_binary(services.remote_effect_binary);
      return true;
    } catch (const std::exception& e) {
      std::cerr << "skewbench: " << e.what() << "\n";
      return false;
    }
  }
  try {
    infra::parse_http_url(*services.remote_url);
    return true;
  } catch (const std::invalid_argument& e) {
    std::cerr << "skewbench: --remote-url: " << e.what() << "\n";
    return false;
  }
}

// An unreachable remote is left to the run, which reports it as an
// infrastructure error.
bool remote_modes_match(const ServiceArgs& services, const std::vector<scenario::Scenario>& scenarios) {
  if (!services.remote_url) return true;
  std::optional<std::string> running;
  try {
    infra::HttpRemote remote(*services.remote_url);
    const auto health = remote.health();
    running = health.value("idempotency_mode", json(nullptr)).is_string()
                  ? health["idempotency_mode"].get<std::string>()
                  : std::string("(not reported)");
  } catch (const std::exception&) {
    return true;
  }
  for (const auto& s : scenarios) {
    if (s.dedupe_mode && *s.dedupe_mode != *running) {
      std::cerr << "skewbench: " << s.source << ": needs remote dedupe mode \"" << *s.dedupe_mode << "\" but "
                << *services.remote_url << " runs \"" << *running << "\"; start it with --dedupe " << *s.dedupe_mode
                << " or drop --remote-url\n";
      return false;
    }
  }
  return true;
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

int run_scenarios(const RunArgs& args) {
  std::vector<scenario::Scenario> scenarios;
  try {
    scenarios = load_all(args.paths);
  } catch (const scenario::ScenarioFileError& e) {
    std::cerr << "skewbench: invalid scenario: " << e.what() << "\n";
    return exit_code::kUsage;
  }
  const fs::path out_dir = args.out_dir;
  if (!service_options_are_usable(args.services)) return exit_code::kUsage;
  if (!remote_modes_match(args.services, scenarios)) return exit_code::kUsage;
  if (args.services.remote_url) {
    for (const auto& s : scenarios) {
      if (s.needs_remote_control()) {
        std::cerr << "skewbench: " << s.source
                  << ": restart_remote and pause_remote need a remote-effect started by skewbench; drop --remote-url\n";
        return exit_code::kUsage;
      }
    }
  }
  if (args.services.database_url) {
    for (const auto& s : scenarios) {
      if (s.needs_database_control()) {
        std::cerr << "skewbench: " << s.source
                  << ": restart_database needs a PostgreSQL started by skewbench; drop --database-url\n";
        return exit_code::kUsage;
      }
    }
  }
  std::vector<fs::path> inputs(args.paths.begin(), args.paths.end());
  for (const auto& s : scenarios) inputs.emplace_back(s.source);
  // Checked, locked and probed before any service starts; held to the end.
  const auto out = open_out_folder({.path = out_dir,
                                    .kind = evidence::FolderKind::kRun,
                                    .overwrite = args.overwrite,
                                    .resume = false,
                                    .inputs = inputs,
                                    .command = "run"});
  if (!out) return exit_code::kUsage;

  evidence::RunEnvironment env;
  env.run_id = runner::new_run_id();
  env.started_at_utc = evidence::utc_now_iso8601();  // replaced once the services answer
  env.timeouts = args.services.timeouts_json();
  std::vector<runner::ScenarioResult> results;
  std::vector<const scenario::Scenario*> scenario_ptrs;
  for (const auto& s : scenarios) scenario_ptrs.push_back(&s);

  std::optional<std::string> infrastructure_error;
  try {
    runner::Stack stack(args.services);
    infra::PgOutbox outbox(stack.database_url(), env.run_id, {.timeout_s = args.services.db_timeout_s});
    infra::HttpRemote remote(stack.remote_url(), {.timeout_s = args.services.http_timeout_s});
    const auto started_at = env.started_at_utc;
    env = evidence::describe_environment(
        env.run_id, infra::describe_database(outbox.info(), stack.database_url(), stack.postgres_binaries()),
        remote.health(), stack.remote_url(), stack.embedded_remote());
    env.started_at_utc = started_at;
    env.timeouts = args.services.timeouts_json();

    runner::ScenarioRunner scenario_runner(remote, outbox,
                                           {.run_id = env.run_id,
                                            .remote_control = stack.remote_control(),
                                            .interrupted = &interrupted_flag(),
                                            .evaluate_expectations = true,
                                            .database_control = stack.database_control()});
    for (const auto& s : scenarios) {
      if (!args.services.quiet) std::cerr << "skewbench: running " << s.id << "\n";
      results.push_back(scenario_runner.run(s));
    }
  } catch (const Interrupted&) {
    std::cerr << "skewbench: interrupted; services stopped, no evidence written\n";
    return exit_code::kInterrupted;
  } catch (const std::exception& e) {
    if (interrupted_flag().load()) {
      // Ctrl-C during start-up (initdb, pg_ctl) fails the start: that is not
      // an infrastructure fault.
      std::cerr << "skewbench: interrupted; services stopped, no evidence written\n";
      return exit_code::kInterrupted;
    }
    infrastructure_error = e.what();
  }

  if (infrastructure_error) {
    // Every scenario that did not run is an ERROR, so no artifact can read as a pass.
    std::cerr << "skewbench: infrastructure error: " << *infrastructure_error << "\n";
    for (std::size_t i = results.size(); i < scenarios.size(); ++i) {
      runner::ScenarioResult r;
      r.scenario_id = scenarios[i].id;
      r.policy = std::string(scenarios[i].policy->name());
      r.error = *infrastructure_error;
      r.final_measurement = nullptr;
      for (const auto& e : scenarios[i].expectations) r.checks.push_back({e.id, e.expected, nullptr, false, false});
      results.push_back(std::move(r));
    }
    env.warnings.push_back("infrastructure error: " + *infrastructure_error);
  }
  for (const auto& s : scenarios) {
    if (s.expectations.empty()) env.warnings.push_back("scenario " + s.id + " expects nothing: it cannot fail");
  }
  env.finished_at_utc = evidence::utc_now_iso8601();

  std::string digest;
  try {
    digest = publish_run(*out, scenario_ptrs, results, env);
  } catch (const std::exception& e) {
    std::cerr << "skewbench: cannot write evidence to " << out_dir.string() << ": " << e.what() << "\n";
    return exit_code::kInfrastructure;
  }

  const int code = run_exit_code(results);
  evidence::RunReport report{.evidence_dir = out_dir,
                             .core_digest = digest,
                             .warnings = env.warnings,
                             .exit_code = code,
                             .published = nullptr,
                             .published_series = {}};
  for (auto& file : evidence::published_files(scenario_ptrs, results, env)) {
    if (!evidence::run_reports_on(*file.benchmark, scenario_ptrs)) continue;
    if (file.benchmark == &evidence::benchmark_018()) report.published = file.result;
    report.published_series.push_back(std::move(file.result));
  }
  print_run_outcome(args, results, report);
  return code;
}

}  // namespace skewbench::cli
