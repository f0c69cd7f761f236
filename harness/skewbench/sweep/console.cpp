#include "sweep/console.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/text.hpp"
#include "scenario/verdict.hpp"

namespace skewbench::sweep {
using nlohmann::json;

std::string format_duration(double seconds) {
  char buffer[64];
  if (seconds < 10) {
    std::snprintf(buffer, sizeof buffer, "%.2f s", seconds);
  } else if (seconds < 60) {
    std::snprintf(buffer, sizeof buffer, "%.0f s", seconds);
  } else {
    const auto whole = static_cast<long long>(std::llround(seconds));
    std::snprintf(buffer, sizeof buffer, "%lld min %02lld s", whole / 60, whole % 60);
  }
  return buffer;
}

std::string sweep_name(const std::string& grid_id, const Shard& shard) {
  std::string name = "sweep " + grid_id;
  if (!shard.whole()) name += " shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count);
  return name;
}

std::optional<std::string> empty_shard_warning(const Shard& shard, std::uint64_t total_cells) {
  if (shard.size_of(total_cells) > 0) return std::nullopt;
  return "shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) + " holds no cell: the grid has " +
         text::plural(total_cells, "cell") + ", so shards past " + std::to_string(total_cells) + " are empty";
}

json planned_cells(const Grid& grid, const Shard& shard) {
  json per_policy = json::object();
  for (const auto& p : grid.policies()) per_policy[p.label] = 0;
  for (std::uint64_t k = 0, n = shard.size_of(grid.cell_count()); k < n; ++k) {
    const auto cell = grid.cell(shard.cell_at(k));
    auto& count = per_policy[grid.policies()[cell.policy_index].label];
    count = count.get<std::uint64_t>() + 1;
  }
  return per_policy;
}

std::string plan_text(const Grid& grid, const Shard& shard) {
  std::ostringstream out;
  const auto planned = shard.size_of(grid.cell_count());
  out << sweep_name(grid.id(), shard) << ": " << planned << " of " << text::plural(grid.cell_count(), "cell")
      << " (dry run: nothing started)\n";
  const auto per_policy = planned_cells(grid, shard);  // items() must not outlive it
  for (const auto& [label, count] : per_policy.items()) {
    out << "  " << text::pad(label, 24) << " " << text::plural(count.get<std::uint64_t>(), "cell") << "\n";
  }
  return out.str();
}

json plan_json(const Grid& grid, const Shard& shard) {
  json warnings = json::array();
  if (const auto warning = empty_shard_warning(shard, grid.cell_count())) warnings.push_back(*warning);
  return {{"command", "sweep"},
          {"dry_run", true},
          {"grid_id", grid.id()},
          {"shard", shard.whole() ? json(nullptr) : shard.to_json()},
          {"cells_total", grid.cell_count()},
          {"cells_planned", shard.size_of(grid.cell_count())},
          {"cells_per_policy", planned_cells(grid, shard)},
          {"warnings", warnings},
          {"exit_code", 0}};
}

std::string end_text(const json& summary, const std::filesystem::path& out_dir, const std::string& grid_path) {
  std::ostringstream out;
  Shard shard;
  if (summary.value("shard", json()).is_object()) {
    shard = {.index = summary["shard"].value("index", std::uint64_t{1}),
             .count = summary["shard"].value("count", std::uint64_t{1})};
  }
  // A partial sweep's digest would read like a result: only a finished one
  // without ERROR cells shows it. Any other is to be resumed: --resume runs
  // the cells that are missing or ended in ERROR.
  const bool interrupted = summary.value("interrupted", false);
  const bool errors = summary.value("errors", json(0)) != json(0);
  const bool resumable = interrupted || !summary.value("complete", true) || errors;
  out << sweep_name(summary.value("grid_id", ""), shard) << (interrupted ? " interrupted" : "") << ": "
      << text::cell(summary["cells_done"]) << "/" << text::cell(summary["cells_planned"]) << " cells in "
      << format_duration(summary.value("duration_s", 0.0));
  if (summary.value("jobs", json()).is_number())
    out << " with " << text::plural(summary["jobs"].get<std::uint64_t>(), "job");
  out << "\n";
  const auto per_policy = summary.value("per_policy", json::object());  // items() must not outlive it
  for (const auto& [label, counts] : per_policy.items()) {
    out << "  " << text::pad(label, 24);
    for (const auto verdict : scenario::kAllVerdicts) {
      const std::string word(scenario::to_string(verdict));
      out << " " << word << " " << counts.value(word, 0);
    }
    out << "\n";
  }
  if (!resumable) out << "cells core digest: " << text::cell(summary.value("cells_core_digest", json())) << "\n";
  for (const auto& w : summary.value("warnings", json::array())) out << "warning: " << text::cell(w) << "\n";
  out << "output: " << out_dir.string() << "\n";
  const auto shard_flag =
      shard.whole() ? std::string() : " --shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count);
  out << "next:   "
      << (resumable       ? "skewbench sweep " + grid_path + " --out " + out_dir.string() + shard_flag + " --resume"
          : shard.whole() ? "skewbench report " + out_dir.string()
                          : "skewbench merge <every shard's folder> --out DIR, then skewbench report DIR")
      << "\n";
  return out.str();
}

json end_json(const json& summary, const std::filesystem::path& out_dir, int exit_code) {
  json out = {{"command", "sweep"}, {"out_dir", out_dir.string()}, {"exit_code", exit_code}};
  for (const char* field :
       {"engine", "grid_id", "shard", "cells_total", "cells_planned", "cells_done", "complete", "interrupted",
        "cells_reused", "per_policy", "cells_core_digest", "errors", "jobs", "duration_s", "warnings"}) {
    out[field] = summary.value(field, json(nullptr));
  }
  return out;
}

}  // namespace skewbench::sweep
