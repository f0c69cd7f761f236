// skewbench sweep and skewbench merge.

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli/commands.hpp"
#include "common/digest.hpp"
#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "evidence/evidence.hpp"
#include "evidence/manifest.hpp"
#include "runner/runner.hpp"
#include "runner/session.hpp"
#include "runner/stack.hpp"
#include "sweep/cells.hpp"
#include "sweep/console.hpp"
#include "sweep/grid.hpp"
#include "sweep/merge.hpp"
#include "sweep/sweep_summary.hpp"

namespace skewbench::cli {
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

// --resume: DIR must hold a sweep of this very grid, base scenario and shard.
// Returns its finished cells, or prints why not and returns nullptr.
std::unique_ptr<sweep::PreviousCells> cells_to_resume(const fs::path& dir, const sweep::Grid& grid,
                                                      const sweep::Shard& shard) {
  try {
    const auto summary = sweep::read_sweep_summary(dir);
    const auto where = (dir / "sweep.json").string();
    const auto identity = summary.at("grid").at("identity_digest");
    if (identity != grid.identity_digest()) {
      throw std::runtime_error(where + " is a sweep of another grid (identity digest " + identity.dump() +
                               ", this grid's is \"" + grid.identity_digest() + "\")");
    }
    if (summary.at("base_scenario_digest") != json_digest(grid.base_scenario())) {
      throw std::runtime_error(where + " ran another base scenario (its digest differs)");
    }
    const json wanted_shard = shard.whole() ? json(nullptr) : shard.to_json();
    if (summary.at("shard") != wanted_shard) {
      throw std::runtime_error(where + " is shard " + summary["shard"].dump() + ", not " + wanted_shard.dump());
    }
    auto previous = std::make_unique<sweep::PreviousCells>((dir / kCellsFile).string(), grid.cell_count());
    if (const auto torn = previous->dropped_torn_line()) {
      std::cerr << "skewbench: " << (dir / kCellsFile).string() << ":" << *torn
                << " is a record cut short (an append the sweep could not finish); its cell runs again\n";
    }
    return previous;
  } catch (const std::exception& e) {
    std::cerr << "skewbench: cannot resume: " << e.what() << "\n";
    return nullptr;
  }
}

// Writes sweep.json, then the manifest of the sweep's files.
void write_sweep_files(evidence::OutFolder& out, const json& summary, const std::string& run_id) {
  sync_path(out.path() / kCellsFile);
  write_file_atomically(out.path() / "sweep.json", summary.dump(2) + "\n");
  write_manifest(out.path(),
                 evidence::make_manifest(out.path(), evidence::FolderKind::kSweep, run_id, {kCellsFile, "sweep.json"}));
}

// sweep.json and the manifest before the first cell: a sweep killed part-way
// can then be resumed or overwritten.
void start_sweep_files(evidence::OutFolder& out, const sweep::Grid& grid, const sweep::Shard& shard,
                       const json& environment, const std::vector<std::string>& warnings, unsigned jobs,
                       const std::string& run_id) {
  out.remove_previous();
  write_file_atomically(out.path() / kCellsFile, "");
  sweep::SweepOutcome none;
  none.cells_planned = shard.size_of(grid.cell_count());
  none.per_policy = json::object();
  none.cells_core_digest = sha256_hex("");
  write_sweep_files(out, sweep::sweep_summary(grid, shard, none, environment, warnings, jobs), run_id);
}

// What a sweep records of its services before the first cell.
struct SweepEnvironment {
  nlohmann::json environment;
  std::vector<std::string> warnings;
};

SweepEnvironment describe_sweep_environment(const SweepArgs& args, const runner::Session& session,
                                            const std::string& run_id) {
  const auto& services = session.description();
  auto env = evidence::describe_environment(run_id, services.database, services.remote_health, services.remote_url,
                                            services.embedded_remote);
  env.timeouts = args.services.timeouts_json();
  env.timeouts["max_unreachable_s"] = args.max_unreachable_s;
  env.durability = runner::to_string(args.services.durability.value_or(runner::Durability::throwaway));
  return {.environment = env.to_json(), .warnings = env.warnings};
}

void print_sweep_start(const sweep::Grid& grid, const sweep::Shard& shard, unsigned jobs,
                       const sweep::PreviousCells* previous) {
  std::cerr << "skewbench: " << sweep::sweep_name(grid.id(), shard) << ": " << shard.size_of(grid.cell_count())
            << " of " << text::plural(grid.cell_count(), "cell") << ", " << text::plural(jobs, "job");
  if (previous) std::cerr << ", " << previous->kept_count() << " kept from the sweep resumed";
  std::cerr << "\n";
}

int sweep_exit_code(const sweep::SweepOutcome& outcome) {
  return outcome.unreachable   ? exit_code::kInfrastructure
         : outcome.interrupted ? exit_code::kInterrupted
         : outcome.errors > 0  ? exit_code::kInfrastructure
                               : exit_code::kPass;
}

void print_sweep_end(const SweepArgs& args, const json& summary, const sweep::SweepOutcome& outcome,
                     const fs::path& dir, int code) {
  if (args.format == OutputFormat::Json) {
    std::cout << sweep::end_json(summary, dir, code).dump(2) << "\n";
  } else {
    std::cout << sweep::end_text(summary, dir, args.grid_path);
  }
  if (outcome.unreachable) {
    std::cerr << "skewbench: sweep stopped after " << outcome.cells_done << " of " << outcome.cells_planned
              << " cells: " << *outcome.unreachable << "\n";
  }
}

// Runs the cells on the session's services into `out`, then writes sweep.json
// and prints the outcome.
int sweep_in_session(const SweepArgs& args, const sweep::Grid& grid, const sweep::Shard& shard,
                     evidence::OutFolder& out, sweep::PreviousCells* previous, unsigned jobs) {
  const auto run_id = runner::new_run_id();
  // Every cell shares the base scenario's dedupe mode (no axis may vary it).
  // A started remote-effect runs once per job (docs/sweeps.md, "Isolation").
  auto services = args.services;
  services.remote_instances = jobs;
  services.durability = services.durability.value_or(runner::Durability::throwaway);
  runner::Session session(
      {.services = services, .run_id = run_id, .dedupe_mode = grid.cell_scenario(grid.cell(0)).dedupe_mode});
  auto [environment, warnings] = describe_sweep_environment(args, session, run_id);
  const auto remote_urls = session.stack().remote_urls();
  environment["remote_effect"]["instances"] = remote_urls.size();
  session.close_connections();  // the workers open their own
  if (previous) {
    out.remove_previous({kCellsFile, "sweep.json"});  // an old report no longer matches
  } else {
    start_sweep_files(out, grid, shard, environment, warnings, jobs, run_id);
  }
  if (!args.services.quiet) print_sweep_start(grid, shard, jobs, previous);
  sweep::SweepSettings settings{.database_url = session.stack().database_url(),
                                .remote_urls = remote_urls,
                                .remote_control = nullptr,
                                .run_id = run_id,
                                .jobs = jobs,
                                .shard = shard,
                                .progress = !args.services.quiet,
                                .interrupted = &interrupted_flag(),
                                .http_timeouts = {.timeout_s = args.services.http_timeout_s},
                                .db_timeouts = {.timeout_s = args.services.db_timeout_s, .stop = &interrupted_flag()},
                                .max_unreachable_s = args.max_unreachable_s,
                                .previous = previous,
                                .cells_file = previous ? kResumeCellsFile : kCellsFile};
  const auto outcome = sweep::run_cells(grid, settings, out.path());
  if (previous) fs::rename(out.path() / kResumeCellsFile, out.path() / kCellsFile);
  environment["finished_at_utc"] = evidence::utc_now_iso8601();
  const auto summary = sweep::sweep_summary(grid, shard, outcome, environment, warnings, jobs);
  write_sweep_files(out, summary, run_id);
  const int code = sweep_exit_code(outcome);
  print_sweep_end(args, summary, outcome, out.path(), code);
  return code;
}

int run_sweep_cells(const SweepArgs& args, const sweep::Grid& grid, const sweep::Shard& shard, evidence::OutFolder& out,
                    sweep::PreviousCells* previous, unsigned jobs) {
  try {
    return sweep_in_session(args, grid, shard, out, previous, jobs);
  } catch (const scenario::ScenarioFileError& e) {
    // Two axes together can still make a cell invalid (each value alone was checked).
    std::cerr << "skewbench: invalid grid cell: " << e.what() << "\n";
    return exit_code::kUsage;
  } catch (const std::exception& e) {
    std::cerr << "skewbench: infrastructure error: " << e.what() << "\n";
    return exit_code::kInfrastructure;
  }
}

// What a sweep cannot vary or run, found before anything starts.
bool grid_is_sweepable(const SweepArgs& args, const sweep::Grid& grid) {
  if (const auto base = grid.cell_scenario(grid.cell(0));
      base.needs_remote_control() || base.needs_database_control()) {
    // Workers share the services; one cell restarting or hanging them would break the others.
    std::cerr << "skewbench: " << args.grid_path
              << ": the base scenario has a restart_remote, pause_remote or restart_database step, which a sweep "
                 "cannot run\n";
    return false;
  }
  for (const auto& axis : grid.axes()) {
    if (axis.pointer == "/remote" || axis.pointer.starts_with("/remote/")) {
      // The workers share one remote-effect, which runs in one dedupe mode.
      std::cerr << "skewbench: " << args.grid_path << ": axis \"" << axis.name << "\" varies " << axis.pointer
                << "; a sweep runs every cell against one remote in the base scenario's dedupe mode\n";
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
unsigned sweep_jobs(const SweepArgs& args, const sweep::Grid& grid) {
  const unsigned jobs =
      args.jobs > 0 ? static_cast<unsigned>(args.jobs) : std::clamp(std::thread::hardware_concurrency(), 1u, kMaxJobs);
  const auto& shared_kinds = grid.service_wide_reader_kinds();
  if (!args.services.remote_url || shared_kinds.empty() || jobs == 1) return jobs;
  const auto why = args.grid_path + ": its cells' " + text::join(shared_kinds, " and ") +
                   " steps depend on state the remote keeps for every operation (its temporal epoch), and the "
                   "jobs of a sweep share the one --remote-url, so cells running at once would change each "
                   "other's outcome";
  if (args.jobs > 0) {
    std::cerr << "skewbench: " << why << "; pass --jobs 1, or drop --remote-url to let skewbench start one "
              << "remote-effect per job\n";
    return 0;
  }
  if (!args.services.quiet) std::cerr << "skewbench: " << why << ": running 1 job\n";
  return 1;
}

// Checks the flags, opens --out and runs the sweep (or resumes it).
int start_sweep(const SweepArgs& args, const sweep::Grid& grid, const sweep::Shard& shard) {
  if (args.out_dir.empty()) {
    std::cerr << "skewbench: sweep needs --out DIR (or --dry-run to only list the cells)\n";
    return exit_code::kUsage;
  }
  if (!grid_is_sweepable(args, grid)) return exit_code::kUsage;
  if (!service_options_are_usable(args.services)) return exit_code::kUsage;
  std::vector<scenario::Scenario> base;
  base.push_back(grid.cell_scenario(grid.cell(0)));
  if (!remote_modes_match(args.services, base)) return exit_code::kUsage;
  const auto jobs = sweep_jobs(args, grid);
  if (jobs == 0) return exit_code::kUsage;
  const auto out = open_out_folder({.path = args.out_dir,
                                    .kind = evidence::FolderKind::kSweep,
                                    .overwrite = args.overwrite,
                                    .resume = args.resume,
                                    .inputs = {args.grid_path, base_scenario_path(args.grid_path, grid)},
                                    .command = "sweep"});
  if (!out) return exit_code::kUsage;
  std::unique_ptr<sweep::PreviousCells> previous;
  if (args.resume && !(previous = cells_to_resume(out->path(), grid, shard))) return exit_code::kUsage;
  return run_sweep_cells(args, grid, shard, *out, previous.get(), jobs);
}

}  // namespace

int run_sweep(const SweepArgs& args) {
  sweep::Shard shard;
  try {
    shard = sweep::Shard::parse(args.shard);
  } catch (const std::invalid_argument& e) {
    std::cerr << "skewbench: " << e.what() << "\n";
    return exit_code::kUsage;
  }
  std::optional<sweep::Grid> grid;
  try {
    grid = sweep::Grid::load(args.grid_path);
  } catch (const scenario::ScenarioFileError& e) {
    std::cerr << "skewbench: invalid grid: " << e.what() << "\n";
    return exit_code::kUsage;
  }
  if (const auto warning = sweep::empty_shard_warning(shard, grid->cell_count())) {
    std::cerr << "skewbench: warning: " << *warning << "\n";
  }
  if (!args.dry_run) return start_sweep(args, *grid, shard);
  if (args.format == OutputFormat::Json) {
    std::cout << sweep::plan_json(*grid, shard).dump(2) << "\n";
  } else {
    std::cout << sweep::plan_text(*grid, shard);
  }
  return exit_code::kPass;
}

namespace {

// Publishes the merged sweep written into `incoming` whole, as a run is.
int merge_into(const MergeArgs& args, sweep::ShardMerge& shards) {
  const auto out = open_out_folder({.path = args.out_dir,
                                    .kind = evidence::FolderKind::kSweep,
                                    .overwrite = args.overwrite,
                                    .resume = false,
                                    .inputs = {args.shard_dirs.begin(), args.shard_dirs.end()},
                                    .command = "merge"});
  if (!out) return exit_code::kUsage;
  shards.open_cells();
  const auto run_id = shards.run_id();
  const auto incoming = out->make_incoming(run_id);
  const auto merged = shards.write(incoming);
  try {
    out->publish(incoming, evidence::FolderKind::kSweep, run_id);
  } catch (const std::exception& e) {
    std::error_code ignored;
    fs::remove_all(incoming, ignored);
    std::cerr << "skewbench: cannot write the merged sweep to " << args.out_dir << ": " << e.what() << "\n";
    return exit_code::kInfrastructure;
  }
  std::cout << "merged " << shards.shard_count() << " shards: " << merged.cells << " cells, core digest "
            << merged.core_digest << "\n";
  return merged.errors > 0 ? exit_code::kInfrastructure : exit_code::kPass;
}

}  // namespace

int merge_sweeps(const MergeArgs& args) {
  try {
    auto shards = sweep::ShardMerge::check(args.shard_dirs);
    return merge_into(args, shards);
  } catch (const sweep::MergeError& e) {
    std::cerr << "skewbench: " << e.what() << "\n";
    return exit_code::kUsage;
  } catch (const std::exception& e) {
    // A malformed sweep.json or cells.jsonl: say which, never guess.
    std::cerr << "skewbench: cannot merge: " << e.what() << "\n";
    return exit_code::kUsage;
  }
}

}  // namespace skewbench::cli
