#include "app/sweep.hpp"

#include <algorithm>
#include <thread>

#include "app/preflight.hpp"
#include "artifacts/manifest.hpp"
#include "artifacts/out_folder.hpp"
#include "common/digest.hpp"
#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "evidence/evidence.hpp"
#include "runner/runner.hpp"
#include "runner/session.hpp"
#include "sweep/cells.hpp"
#include "sweep/console.hpp"
#include "sweep/merge.hpp"
#include "sweep/sweep_summary.hpp"

namespace skewbench::app {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr unsigned kMaxJobs = 32;
constexpr const char* kCellsFile = "cells.jsonl";
// A resumed sweep writes here and renames over cells.jsonl when it stops, so
// the cells it resumed from stay whole until then, even on SIGKILL.
constexpr const char* kResumeCellsFile = ".skewbench-resume-cells.jsonl";

fs::path base_scenario_path(const fs::path& grid_path, const sweep::Grid& grid) {
  const auto& doc = grid.document();
  if (!doc.contains("base_scenario") || !doc["base_scenario"].is_string()) return grid_path;
  const fs::path base = doc["base_scenario"].get<std::string>();
  return base.is_absolute() ? base : grid_path.parent_path() / base;
}

// Throws naming why the sweep summarised in DIR is not one of this very grid,
// base scenario, shard and engine.
void check_same_sweep(const fs::path& dir, const SweepPlan& plan, infra::Engine wanted_engine) {
  const auto summary = sweep::read_sweep_summary(dir);
  const auto where = (dir / "sweep.json").string();
  const auto identity = summary.at("grid").at("identity_digest");
  if (identity != plan.grid.identity_digest()) {
    throw std::runtime_error(where + " is a sweep of another grid (identity digest " + identity.dump() +
                             ", this grid's is \"" + plan.grid.identity_digest() + "\")");
  }
  if (summary.at("base_scenario_digest") != json_digest(plan.grid.base_scenario())) {
    throw std::runtime_error(where + " ran another base scenario (its digest differs)");
  }
  const json wanted_shard = plan.shard.whole() ? json(nullptr) : plan.shard.to_json();
  if (summary.at("shard") != wanted_shard) {
    throw std::runtime_error(where + " is shard " + summary["shard"].dump() + ", not " + wanted_shard.dump());
  }
  if (const auto engine = evidence::recorded_engine(summary); engine != wanted_engine) {
    throw std::runtime_error(where + " ran on the " + std::string(to_string(engine)) + " engine, not the " +
                             std::string(to_string(wanted_engine)) +
                             " one: one sweep's cells all come from one engine");
  }
}

// --resume: DIR must hold a sweep of this very grid, base scenario and shard.
// Returns its finished cells, or says why not and returns nullptr.
std::unique_ptr<sweep::PreviousCells> cells_to_resume(const fs::path& dir, const SweepPlan& plan, infra::Engine engine,
                                                      Observer& observer) {
  try {
    check_same_sweep(dir, plan, engine);
    auto previous = std::make_unique<sweep::PreviousCells>((dir / kCellsFile).string(), plan.grid.cell_count());
    if (const auto torn = previous->dropped_torn_line()) {
      observer.say((dir / kCellsFile).string() + ":" + std::to_string(*torn) +
                   " is a record cut short (an append the sweep could not finish); its cell runs again");
    }
    return previous;
  } catch (const std::exception& e) {
    observer.say(std::string("cannot resume: ") + e.what());
    return nullptr;
  }
}

// Writes sweep.json, then the manifest of the sweep's files.
void write_sweep_files(artifacts::OutFolder& out, const json& summary, const std::string& run_id) {
  sync_path(out.path() / kCellsFile);
  write_file_atomically(out.path() / "sweep.json", summary.dump(2) + "\n");
  write_manifest(out.path(), artifacts::make_manifest(out.path(), artifacts::FolderKind::kSweep, run_id,
                                                      {kCellsFile, "sweep.json"}));
}

// What a sweep records of its services before the first cell.
struct SweepEnvironment {
  json environment;
  std::vector<std::string> warnings;
};

// sweep.json and the manifest before the first cell: a sweep killed part-way
// can then be resumed or overwritten.
void start_sweep_files(artifacts::OutFolder& out, const SweepPlan& plan, const SweepEnvironment& env, unsigned jobs,
                       const std::string& run_id) {
  out.remove_previous();
  write_file_atomically(out.path() / kCellsFile, "");
  sweep::SweepOutcome none;
  none.cells_planned = plan.shard.size_of(plan.grid.cell_count());
  none.per_policy = json::object();
  none.cells_core_digest = sha256_hex("");
  write_sweep_files(out, sweep::sweep_summary(plan.grid, plan.shard, none, env.environment, env.warnings, jobs),
                    run_id);
}

SweepEnvironment describe_sweep_environment(const SweepRequest& request, runner::Session& session,
                                            const std::string& run_id) {
  const auto& services = session.description();
  auto env = evidence::describe_environment(run_id, services);
  env.timeouts = request.services.timeouts_json();
  env.timeouts["max_unreachable_s"] = request.max_unreachable_s;
  env.durability = runner::to_string(request.services.durability.value_or(runner::Durability::throwaway));
  auto described = SweepEnvironment{.environment = env.to_json(), .warnings = env.warnings};
  described.environment["remote_effect"]["instances"] = session.stack().remote_urls().size();
  return described;
}

// The services the cells run on: the real stack's session (one remote-effect
// per job), or none on the in-process engine, whose workers each make their
// own remote and outbox.
struct CellServices {
  std::unique_ptr<runner::Session> session;
  SweepEnvironment env;
};

CellServices open_cell_services(const SweepRequest& request, const scenario::Scenario& base, unsigned jobs,
                                const std::string& run_id) {
  const auto dedupe_mode = base.dedupe_mode.value_or(remote_effect::kDefaultDedupeMode);
  if (request.services.engine == infra::Engine::in_process) {
    // The remote each worker makes, as its /health describes it.
    infra::InProcessRemote remote(sweep::in_process_remote_options(dedupe_mode, run_id));
    const auto env = evidence::describe_in_process_environment(run_id, remote.health().body);
    auto described = SweepEnvironment{.environment = env.to_json(), .warnings = env.warnings};
    described.environment["remote_effect"]["instances"] = jobs;
    return {.session = nullptr, .env = std::move(described)};
  }
  // Every cell shares the base scenario's dedupe mode (no axis may vary it).
  // A started remote-effect runs once per job (docs/sweeps.md, "Isolation").
  auto services = request.services;
  services.remote_instances = jobs;
  services.durability = services.durability.value_or(runner::Durability::throwaway);
  auto session = std::make_unique<runner::Session>(
      runner::SessionOptions{.services = services, .run_id = run_id, .dedupe_mode = base.dedupe_mode});
  auto env = describe_sweep_environment(request, *session, run_id);
  session->close_connections();  // the workers open their own
  return {.session = std::move(session), .env = std::move(env)};
}

std::string sweep_start_line(const SweepPlan& plan, unsigned jobs, const sweep::PreviousCells* previous) {
  auto line = sweep::sweep_name(plan.grid.id(), plan.shard) + ": " +
              std::to_string(plan.shard.size_of(plan.grid.cell_count())) + " of " +
              text::plural(plan.grid.cell_count(), "cell") + ", " + text::plural(jobs, "job");
  if (previous) line += ", " + std::to_string(previous->kept_count()) + " kept from the sweep resumed";
  return line;
}

int sweep_exit_code(const sweep::SweepOutcome& outcome) {
  return outcome.unreachable   ? exit_code::kInfrastructure
         : outcome.interrupted ? exit_code::kInterrupted
         : outcome.errors > 0  ? exit_code::kInfrastructure
                               : exit_code::kPass;
}

// The workers' settings: one database, one remote per job; or the in-process
// engine, in the base scenario's dedupe mode.
sweep::SweepSettings cell_settings(const SweepRequest& request, const SweepPlan& plan, const scenario::Scenario& base,
                                   runner::Session* session, const std::string& run_id, unsigned jobs,
                                   const std::atomic<bool>& stop, sweep::PreviousCells* previous) {
  return {.engine = request.services.engine,
          .dedupe_mode = base.dedupe_mode.value_or(remote_effect::kDefaultDedupeMode),
          .database_url = session ? session->stack().database_url() : std::string(),
          .remote_urls = session ? session->stack().remote_urls() : std::vector<std::string>(),
          .remote_control = nullptr,
          .run_id = run_id,
          .jobs = jobs,
          .shard = plan.shard,
          .progress = !request.services.quiet,
          .interrupted = &stop,
          .http_limits = request.services.http_limits(),
          .db_timeouts = {.timeout_s = request.services.db_timeout_s, .stop = &stop},
          .max_unreachable_s = request.max_unreachable_s,
          .previous = previous,
          .cells_file = previous ? kResumeCellsFile : kCellsFile};
}

// What the run of cells needs beside the request.
struct SweepRun {
  const SweepPlan& plan;
  const scenario::Scenario& base;  // cell 0's scenario: its dedupe mode is every cell's
  artifacts::OutFolder& out;
  sweep::PreviousCells* previous;
  unsigned jobs;
};

// Runs the cells on the session's services into the folder, then writes sweep.json.
SweepResult sweep_in_session(const SweepRequest& request, const SweepRun& run, const std::atomic<bool>& stop,
                             Observer& observer) {
  observer.entering(Phase::services);
  const auto run_id = runner::new_run_id();
  auto services = open_cell_services(request, run.base, run.jobs, run_id);
  auto& env = services.env;
  if (run.previous) {
    run.out.remove_previous({kCellsFile, "sweep.json"});  // an old report no longer matches
  } else {
    start_sweep_files(run.out, run.plan, env, run.jobs, run_id);
  }
  if (!request.services.quiet) observer.say(sweep_start_line(run.plan, run.jobs, run.previous));
  observer.entering(Phase::cells);
  SweepResult result;
  result.cells = sweep::run_cells(
      run.plan.grid,
      cell_settings(request, run.plan, run.base, services.session.get(), run_id, run.jobs, stop, run.previous),
      run.out.path());
  if (run.previous) fs::rename(run.out.path() / kResumeCellsFile, run.out.path() / kCellsFile);
  env.environment["finished_at_utc"] = evidence::utc_now_iso8601();
  observer.entering(Phase::evidence);
  result.summary =
      sweep::sweep_summary(run.plan.grid, run.plan.shard, result.cells, env.environment, env.warnings, run.jobs);
  write_sweep_files(run.out, *result.summary, run_id);
  result.exit_code = sweep_exit_code(result.cells);
  result.dir = run.out.path();
  if (result.cells.unreachable) {
    observer.say("sweep stopped after " + std::to_string(result.cells.cells_done) + " of " +
                 std::to_string(result.cells.cells_planned) + " cells: " + *result.cells.unreachable);
  }
  return result;
}

SweepResult run_sweep_cells(const SweepRequest& request, const SweepRun& run, const std::atomic<bool>& stop,
                            Observer& observer) {
  try {
    return sweep_in_session(request, run, stop, observer);
  } catch (const scenario::ScenarioFileError& e) {
    // Two axes together can still make a cell invalid (each value alone was checked).
    observer.say(std::string("invalid grid cell: ") + e.what());
    return {.exit_code = exit_code::kUsage, .summary = std::nullopt, .dir = {}, .cells = {}};
  } catch (const std::exception& e) {
    observer.say(std::string("infrastructure error: ") + e.what());
    return {.exit_code = exit_code::kInfrastructure, .summary = std::nullopt, .dir = {}, .cells = {}};
  }
}

// What a sweep cannot vary or run, found before anything starts.
bool grid_is_sweepable(const SweepRequest& request, const sweep::Grid& grid, const scenario::Scenario& base,
                       Observer& observer) {
  if (base.needs_remote_control() || base.needs_database_control()) {
    // Workers share the services; one cell restarting or hanging them would break the others.
    auto kinds = base.kinds_that(&steps::StepNeeds::remote_control);
    for (auto& kind : base.kinds_that(&steps::StepNeeds::database_control)) kinds.push_back(std::move(kind));
    observer.say(request.grid_path + ": the base scenario has a " + text::join(kinds, " and a ") +
                 " step, which restarts or hangs a service the sweep's cells share; a sweep cannot run it");
    return false;
  }
  if (const auto kinds = base.kinds_that(&steps::StepNeeds::provider_control); !kinds.empty()) {
    observer.say(request.grid_path + ": the base scenario has a " + text::join(kinds, " and a ") +
                 " step, which needs a service whose provider calls reach skewbench's effect sink; a sweep runs " +
                 "remote-effect, which performs its effect itself (use skewbench run --target)");
    return false;
  }
  if (base.instance_count() > 1) {
    // Each job has one instance of its own; instances per node would each need several.
    observer.say(request.grid_path + ": the base scenario runs an instance of the service per node " +
                 "($.remote.instances); a sweep runs one instance per job, so it cannot run it (use skewbench run)");
    return false;
  }
  for (const auto& axis : grid.axes()) {
    if (axis.pointer == "/remote" || axis.pointer.starts_with("/remote/")) {
      // The workers share one remote-effect, which runs in one dedupe mode.
      observer.say(request.grid_path + ": axis \"" + axis.name + "\" varies " + axis.pointer +
                   "; a sweep runs every cell against one remote in the base scenario's dedupe mode");
      return false;
    }
  }
  return true;
}

// How many cells run at once. Each job holds one PostgreSQL connection and
// one remote; a started remote-effect runs once per job, so cells that run at
// once never share its service-wide state. An external remote (--remote-url)
// is one service for every job: a grid whose cells have steps that read its
// service-wide state then runs one cell at a time, and an explicit --jobs
// above 1 is refused. Returns 0 (and says why) when the flags cannot be met.
unsigned sweep_jobs(const SweepRequest& request, const sweep::Grid& grid, Observer& observer) {
  const unsigned jobs = request.jobs > 0 ? static_cast<unsigned>(request.jobs)
                                         : std::clamp(std::thread::hardware_concurrency(), 1u, kMaxJobs);
  const auto& shared_kinds = grid.service_wide_reader_kinds();
  if (!request.services.remote_url || shared_kinds.empty() || jobs == 1) return jobs;
  const auto why = request.grid_path + ": its cells' " + text::join(shared_kinds, " and ") +
                   " steps depend on state the remote keeps for every operation (its temporal epoch), and the "
                   "jobs of a sweep share the one --remote-url, so cells running at once would change each "
                   "other's outcome";
  if (request.jobs > 0) {
    observer.say(why + "; pass --jobs 1, or drop --remote-url to let skewbench start one remote-effect per job");
    return 0;
  }
  if (!request.services.quiet) observer.say(why + ": running 1 job");
  return 1;
}

// The checks before anything starts: the flags, the grid and the services.
// Returns the number of jobs, or 0 (and why).
// `base` holds cell 0's scenario.
unsigned checked_jobs(const SweepRequest& request, const sweep::Grid& grid, const std::vector<scenario::Scenario>& base,
                      Observer& observer) {
  if (request.out_dir.empty()) {
    observer.say("sweep needs --out DIR (or --dry-run to only list the cells)");
    return 0;
  }
  if (!grid_is_sweepable(request, grid, base.front(), observer)) return 0;
  if (!service_options_are_usable(request.services, observer)) return 0;
  if (!remote_modes_match(request.services, base, observer)) return 0;
  return sweep_jobs(request, grid, observer);
}

SweepResult usage_error() { return {.exit_code = exit_code::kUsage, .summary = std::nullopt, .dir = {}, .cells = {}}; }

}  // namespace

std::optional<SweepPlan> plan_sweep(const std::string& grid_path, const std::string& shard_text, Observer& observer) {
  sweep::Shard shard;
  try {
    shard = sweep::Shard::parse(shard_text);
  } catch (const std::invalid_argument& e) {
    observer.say(e.what());
    return std::nullopt;
  }
  try {
    auto plan = SweepPlan{.grid = sweep::Grid::load(grid_path), .shard = shard};
    if (const auto warning = sweep::empty_shard_warning(shard, plan.grid.cell_count())) {
      observer.say("warning: " + *warning);
    }
    return plan;
  } catch (const scenario::ScenarioFileError& e) {
    observer.say(std::string("invalid grid: ") + e.what());
    return std::nullopt;
  }
}

SweepResult sweep(const SweepRequest& request, const std::atomic<bool>& stop, Observer& observer) {
  const auto plan = plan_sweep(request.grid_path, request.shard, observer);
  if (!plan) return usage_error();
  // Cell 0's scenario, built once: the checks and the session read it.
  std::vector<scenario::Scenario> base;
  try {
    base.push_back(plan->grid.cell_scenario(plan->grid.cell(0)));
  } catch (const scenario::ScenarioFileError& e) {
    observer.say(std::string("invalid grid cell: ") + e.what());
    return usage_error();
  }
  const auto jobs = checked_jobs(request, plan->grid, base, observer);
  if (jobs == 0) return usage_error();
  const auto out = open_out_folder({.path = request.out_dir,
                                    .kind = artifacts::FolderKind::kSweep,
                                    .overwrite = request.overwrite,
                                    .resume = request.resume,
                                    .inputs = {request.grid_path, base_scenario_path(request.grid_path, plan->grid)},
                                    .command = "sweep"},
                                   observer);
  if (!out) return usage_error();
  std::unique_ptr<sweep::PreviousCells> previous;
  if (request.resume && !(previous = cells_to_resume(out->path(), *plan, request.services.engine, observer)))
    return usage_error();
  return run_sweep_cells(request,
                         {.plan = *plan, .base = base.front(), .out = *out, .previous = previous.get(), .jobs = jobs},
                         stop, observer);
}

namespace {

// Publishes the merged sweep, written into a hidden folder, whole.
MergeResult merge_into(const MergeRequest& request, sweep::ShardMerge& shards, Observer& observer) {
  const auto out = open_out_folder({.path = request.out_dir,
                                    .kind = artifacts::FolderKind::kSweep,
                                    .overwrite = request.overwrite,
                                    .resume = false,
                                    .inputs = {request.shard_dirs.begin(), request.shard_dirs.end()},
                                    .command = "merge"},
                                   observer);
  if (!out) return {.exit_code = exit_code::kUsage, .shard_count = 0, .cells = 0, .core_digest = {}};
  shards.open_cells();
  const auto run_id = shards.run_id();
  const auto incoming = out->make_incoming(run_id);
  const auto merged = shards.write(incoming);
  try {
    out->publish(incoming, artifacts::FolderKind::kSweep, run_id);
  } catch (const std::exception& e) {
    std::error_code ignored;
    fs::remove_all(incoming, ignored);
    observer.say("cannot write the merged sweep to " + request.out_dir + ": " + e.what());
    return {.exit_code = exit_code::kInfrastructure, .shard_count = 0, .cells = 0, .core_digest = {}};
  }
  return {.exit_code = merged.errors > 0 ? exit_code::kInfrastructure : exit_code::kPass,
          .shard_count = shards.shard_count(),
          .cells = merged.cells,
          .core_digest = merged.core_digest};
}

}  // namespace

MergeResult merge(const MergeRequest& request, Observer& observer) {
  try {
    auto shards = sweep::ShardMerge::check(request.shard_dirs);
    return merge_into(request, shards, observer);
  } catch (const sweep::MergeError& e) {
    observer.say(e.what());
  } catch (const std::exception& e) {
    // A malformed sweep.json or cells.jsonl: say which, never guess.
    observer.say(std::string("cannot merge: ") + e.what());
  }
  return {.exit_code = exit_code::kUsage, .shard_count = 0, .cells = 0, .core_digest = {}};
}

}  // namespace skewbench::app
