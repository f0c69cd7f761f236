#pragma once

// What sweep prints: the plan (--dry-run), the end of a sweep, and the same as
// JSON for machines.

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sweep/grid.hpp"
#include "sweep/sweep_runner.hpp"

namespace skewbench::sweep {

// "0.42 s", "12 s", "3 min 05 s": rounded to what a reader needs.
std::string format_duration(double seconds);

// "sweep g" or "sweep g shard 2/3".
std::string sweep_name(const std::string& grid_id, const Shard& shard);

// A warning when the shard holds no cell of the grid (e.g. 200/200 of 180 cells).
std::optional<std::string> empty_shard_warning(const Shard& shard, std::uint64_t total_cells);

// The cells the shard runs, per policy label, in the grid's order.
nlohmann::json planned_cells(const Grid& grid, const Shard& shard);

// sweep --dry-run: the plan, as text or JSON.
std::string plan_text(const Grid& grid, const Shard& shard);
nlohmann::json plan_json(const Grid& grid, const Shard& shard);

// The end of a sweep, from its sweep.json content: cells, time, verdicts per
// policy, the output folder and the next command.
// An interrupted sweep shows no core digest, and says how to resume it
// (grid_path is the grid as given on the command line).
std::string end_text(const nlohmann::json& summary, const std::filesystem::path& out_dir,
                     const std::string& grid_path = "GRID");
nlohmann::json end_json(const nlohmann::json& summary, const std::filesystem::path& out_dir, int exit_code);

}  // namespace skewbench::sweep
