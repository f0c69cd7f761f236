#pragma once

// sweep.json: what a sweep (or a shard of one) ran, against what, and with
// what result, next to its cells.jsonl.

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "sweep/grid.hpp"
#include "sweep/sweep_runner.hpp"

namespace skewbench::sweep {

// The grid in resolved form (policies, axes with their values, maps, marks),
// enough for merge, compare and report without the original files.
nlohmann::json resolved_grid(const Grid& grid);

nlohmann::json sweep_summary(const Grid& grid, const Shard& shard, const SweepOutcome& outcome,
                             const nlohmann::json& environment, const std::vector<std::string>& warnings,
                             unsigned jobs);

// Reads DIR/sweep.json; throws std::runtime_error naming the file when it is
// missing or not a sweep summary.
nlohmann::json read_sweep_summary(const std::filesystem::path& dir);

}  // namespace skewbench::sweep
