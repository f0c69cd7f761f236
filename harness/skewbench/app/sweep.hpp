#pragma once

// One sweep, from a grid file to an exit code: the plan, resume, one
// remote-effect per job, the cells, sweep.json and the manifest; and the merge
// of a sweep's shards.

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/observer.hpp"
#include "runner/stack.hpp"
#include "sweep/grid.hpp"
#include "sweep/sweep_runner.hpp"

namespace skewbench::app {

// The grid and the slice of it a sweep runs.
struct SweepPlan {
  sweep::Grid grid;
  sweep::Shard shard;
};

// Loads the grid and parses --shard; nullopt (and why) when either is invalid.
std::optional<SweepPlan> plan_sweep(const std::string& grid_path, const std::string& shard, Observer& observer);

struct SweepRequest {
  std::string grid_path;
  std::string out_dir;
  int jobs = 0;  // 0 = the number of cores
  std::string shard = "1/1";
  runner::StackOptions services;
  int max_unreachable_s = 60;  // a service unreachable this long stops the sweep (exit 3)
  bool overwrite = false;
  bool resume = false;  // continue the sweep in out_dir: keep its finished cells, run the rest
};

struct SweepResult {
  int exit_code = 0;  // common/errors.hpp
  // Set once the cells have run (sweep.json as written, its folder, the cells' outcome).
  std::optional<nlohmann::json> summary;
  std::filesystem::path dir;
  sweep::SweepOutcome cells;
};

// Runs (or resumes) the sweep of `request`; `stop` (SIGINT/SIGTERM) ends it
// after the cells in flight, keeping every finished cell.
SweepResult sweep(const SweepRequest& request, const std::atomic<bool>& stop, Observer& observer);

struct MergeRequest {
  std::vector<std::string> shard_dirs;
  std::string out_dir;
  bool overwrite = false;
};

struct MergeResult {
  int exit_code = 0;
  std::size_t shard_count = 0;
  std::uint64_t cells = 0;
  std::string core_digest;
};

// Checks that the folders are the complete, disjoint shards of one grid and
// publishes their merge into out_dir whole.
MergeResult merge(const MergeRequest& request, Observer& observer);

}  // namespace skewbench::app
