#include "sweep/merge.hpp"

#include <algorithm>

#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "evidence/evidence.hpp"
#include "sweep/cells.hpp"
#include "sweep/sweep_summary.hpp"

namespace skewbench::sweep {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A whole (unsharded) sweep counts as shard 1/1.
std::uint64_t index_of_shard(const json& summary) {
  return summary.at("shard").is_object() ? summary["shard"].at("index").get<std::uint64_t>() : 1;
}
std::uint64_t shards_cut_into(const json& summary) {
  return summary.at("shard").is_object() ? summary["shard"].at("count").get<std::uint64_t>() : 1;
}

std::string shard_name(std::uint64_t index, std::uint64_t count) {
  return std::to_string(index) + "/" + std::to_string(count);
}

}  // namespace

ShardMerge::ShardMerge(std::vector<std::string> dirs, std::vector<json> summaries)
    : dirs_(std::move(dirs)), summaries_(std::move(summaries)) {
  count_ = shards_cut_into(summaries_.front());
}

ShardMerge ShardMerge::check(const std::vector<std::string>& shard_dirs) {
  if (shard_dirs.empty()) throw MergeError("no shard folder given");
  std::vector<json> summaries;
  try {
    for (const auto& dir : shard_dirs) summaries.push_back(read_sweep_summary(dir));
  } catch (const std::runtime_error& e) {
    throw MergeError(e.what());
  }
  ShardMerge merge(shard_dirs, std::move(summaries));
  std::vector<bool> seen(merge.count_ + 1, false);
  for (std::size_t i = 0; i < merge.summaries_.size(); ++i) merge.check_shard(i, seen);
  for (std::uint64_t i = 1; i <= merge.count_; ++i) {
    if (!seen[i]) throw MergeError("shard " + shard_name(i, merge.count_) + " is missing");
  }
  return merge;
}

// Shard i is of the first shard's grid, base scenario and cut, not seen
// before, and complete.
void ShardMerge::check_shard(std::size_t i, std::vector<bool>& seen) const {
  const auto& first = summaries_.front();
  const auto& s = summaries_[i];
  const auto where = dirs_[i] + "/sweep.json";
  if (s["schema_version"] != first["schema_version"]) {
    throw MergeError(where + " has schema " + s["schema_version"].dump() + ", not " + first["schema_version"].dump());
  }
  if (s["grid"]["identity_digest"] != first["grid"]["identity_digest"] ||
      s["base_scenario_digest"] != first["base_scenario_digest"]) {
    throw MergeError(where + " is a shard of a different grid or base scenario");
  }
  if (const auto engine = evidence::recorded_engine(s), first_engine = evidence::recorded_engine(first);
      engine != first_engine) {
    throw MergeError(where + " ran on the " + std::string(to_string(engine)) + " engine and the first shard on the " +
                     std::string(to_string(first_engine)) + " one: a sweep's cells all come from one engine");
  }
  const auto index = index_of_shard(s);
  const auto n = shards_cut_into(s);
  if (index < 1 || index > n) throw MergeError(where + " names an impossible shard " + shard_name(index, n));
  if (n != count_) {
    throw MergeError(where + " is shard " + shard_name(index, n) + ", but others are of " + std::to_string(count_));
  }
  if (seen[index]) throw MergeError("shard " + shard_name(index, count_) + " is given twice");
  seen[index] = true;
  if (!s["complete"].get<bool>()) {
    throw MergeError(where + " is incomplete (" + s["cells_done"].dump() + " of " + s["cells_planned"].dump() +
                     " cells)");
  }
}

std::string ShardMerge::run_id() const {
  return summaries_.front()["environment"].value("run_id", std::string("merged"));
}

void ShardMerge::open_cells() {
  inputs_ = std::vector<std::ifstream>(count_);
  for (std::size_t i = 0; i < summaries_.size(); ++i) {
    auto& in = inputs_[index_of_shard(summaries_[i]) - 1];
    try {
      in = open_input_file(fs::path(dirs_[i]) / "cells.jsonl");
    } catch (const std::exception& e) {
      throw MergeError(e.what());
    }
  }
}

MergedSweep ShardMerge::write(const fs::path& dir) {
  // Reading one line from each shard in turn restores the global order
  // without holding more than N lines.
  const auto total = summaries_.front()["cells_total"].get<std::uint64_t>();
  CellWriter writer((dir / "cells.jsonl").string());
  std::string line;
  for (std::uint64_t cell = 0; cell < total; ++cell) {
    const auto shard = shard_name(cell % count_ + 1, count_);
    if (!std::getline(inputs_.at(cell % count_), line)) {
      throw MergeError("shard " + shard + " ends before cell " + std::to_string(cell));
    }
    const auto record = parse_bounded_json(line);
    if (record.value("cell", std::uint64_t{0}) != cell) {
      throw MergeError("shard " + shard + " has cell " + record["cell"].dump() + " where cell " + std::to_string(cell) +
                       " belongs");
    }
    writer.write(record);
  }
  MergedSweep merged;
  merged.core_digest = writer.finish();
  merged.cells = writer.written();
  merged.errors = writer.tally().count(scenario::Verdict::Error);
  merged.summary = merged_summary(merged, writer.tally().to_json());
  write_file_unsynced(dir / "sweep.json", merged.summary.dump(2) + "\n");
  return merged;
}

// The first shard's summary, made the whole sweep's.
json ShardMerge::merged_summary(const MergedSweep& cells, const json& per_policy) const {
  const auto& first = summaries_.front();
  const auto total = first["cells_total"].get<std::uint64_t>();
  json merged = first;
  merged["shard"] = nullptr;
  merged["cells_planned"] = total;
  merged["cells_done"] = cells.cells;
  merged["complete"] = cells.cells == total;
  merged["per_policy"] = per_policy;
  merged["cells_core_digest"] = cells.core_digest;
  merged["errors"] = cells.errors;
  json shards = json::array();
  double duration = 0;
  for (const auto& s : summaries_) {
    shards.push_back({{"shard", s["shard"]}, {"environment", s["environment"]}, {"duration_s", s["duration_s"]}});
    duration = std::max(duration, s["duration_s"].get<double>());
  }
  merged["merged_from"] = shards;
  merged["environment"] = first["environment"];
  // The shards ran apart: the wall time is the slowest shard's, and a rate or
  // a job count of the whole would be invented.
  merged["duration_s"] = duration;
  merged["jobs"] = nullptr;
  merged["cells_per_s"] = nullptr;
  return merged;
}

}  // namespace skewbench::sweep
