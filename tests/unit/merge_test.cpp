// The merge of a sweep's shards (sweep/merge.hpp) on shard folders written as
// a sweep writes them: the merged cells are the unsharded sweep's, and every
// way the shards can fail to be one whole sweep is refused, naming why.

#include <fstream>
#include <functional>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/files.hpp"
#include "support/sweep_fixture.hpp"
#include "sweep/cells.hpp"
#include "sweep/grid.hpp"
#include "sweep/merge.hpp"
#include "sweep/sweep_runner.hpp"
#include "sweep/sweep_summary.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Two policies, one axis of three values: six cells.
sweep::Grid small_grid(int first_offset_s = 0) {
  auto doc = testing::small_grid_document({first_offset_s, 10, 20});
  doc["axes"].erase(1);
  return sweep::Grid::parse(doc, "grid.json", SKEWBENCH_SOURCE_DIR);
}

// Shard I/N of the grid in DIR, as a finished sweep leaves it; the cell at
// `error_cell` (if any) ended in ERROR.
fs::path write_shard(const fs::path& dir, const sweep::Grid& grid, const std::string& shard_text,
                     std::optional<std::uint64_t> error_cell = std::nullopt) {
  const auto shard = sweep::Shard::parse(shard_text);
  fs::create_directories(dir);
  sweep::CellWriter writer((dir / "cells.jsonl").string());
  for (std::uint64_t k = 0; k < shard.size_of(grid.cell_count()); ++k) {
    const auto cell = grid.cell(shard.cell_at(k));
    const bool error = error_cell == cell.index;
    writer.write(sweep::cell_record(grid, cell, nullptr, nullptr,
                                    {{"post_requests", 1}, {"effect_count", 1}, {"status", "delivered"}},
                                    error ? scenario::Verdict::Error : scenario::Verdict::Safe,
                                    error ? std::optional<std::string>("lost") : std::nullopt, 10));
  }
  sweep::SweepOutcome outcome;
  outcome.cells_planned = shard.size_of(grid.cell_count());
  outcome.cells_done = writer.written();
  outcome.cells_core_digest = writer.finish();
  outcome.per_policy = writer.tally().to_json();
  outcome.errors = writer.tally().count(scenario::Verdict::Error);
  outcome.duration_s = 1.5;
  const json environment = {{"run_id", "r-" + shard_text.substr(0, 1)}};
  write_file_atomically(dir / "sweep.json",
                        sweep::sweep_summary(grid, shard, outcome, environment, {}, 1).dump(2) + "\n");
  return dir;
}

void edit_summary(const fs::path& dir, const std::function<void(json&)>& edit) {
  auto summary = json::parse(read_file(dir / "sweep.json"));
  edit(summary);
  write_file_atomically(dir / "sweep.json", summary.dump(2));
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

void write_lines(const fs::path& file, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  write_file_atomically(file, text);
}

// Checks and merges the shards into DIR/merged.
sweep::MergedSweep merge(const std::vector<fs::path>& shards, const fs::path& dir) {
  std::vector<std::string> dirs;
  for (const auto& s : shards) dirs.push_back(s.string());
  auto merge = sweep::ShardMerge::check(dirs);
  merge.open_cells();
  fs::create_directories(dir / "merged");
  return merge.write(dir / "merged");
}

// The MergeError that merging the shards throws ("" when none).
std::string merge_error(const std::vector<fs::path>& shards, const fs::path& dir) {
  try {
    merge(shards, dir);
  } catch (const sweep::MergeError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("shards 2/2 and 1/2 merge into the cells and core digest of the unsharded sweep") {
  TempDir dir("skewbench-merge");
  const auto grid = small_grid();
  const auto whole = write_shard(dir.path() / "whole", grid, "1/1");
  const auto merged =
      merge({write_shard(dir.path() / "s2", grid, "2/2"), write_shard(dir.path() / "s1", grid, "1/2")}, dir.path());
  CHECK(merged.cells == 6);
  CHECK(merged.errors == 0);
  CHECK(lines_of(dir.path() / "merged" / "cells.jsonl") == lines_of(whole / "cells.jsonl"));
  const auto summary = json::parse(read_file(dir.path() / "merged" / "sweep.json"));
  const auto unsharded = json::parse(read_file(whole / "sweep.json"));
  CHECK(summary == merged.summary);
  CHECK(summary["cells_core_digest"] == unsharded["cells_core_digest"]);
  CHECK(summary["per_policy"] == unsharded["per_policy"]);
  CHECK(summary["shard"].is_null());
  CHECK(summary["complete"] == true);
  CHECK(summary["merged_from"].size() == 2);
  // The shards ran apart: no rate or job count of the whole is made up.
  CHECK(summary["jobs"].is_null());
  CHECK(summary["cells_per_s"].is_null());
  CHECK(summary["duration_s"] == 1.5);
}

TEST_CASE("a merge counts the cells that ended in ERROR") {
  TempDir dir("skewbench-merge");
  const auto grid = small_grid();
  const auto merged =
      merge({write_shard(dir.path() / "s1", grid, "1/2", 4), write_shard(dir.path() / "s2", grid, "2/2")}, dir.path());
  CHECK(merged.errors == 1);
  CHECK(merged.summary["errors"] == 1);
}

TEST_CASE("shards that are not the whole of one sweep are refused, naming why") {
  struct Case {
    std::string name;
    std::function<std::vector<fs::path>(const fs::path&)> shards;
    std::string error;
  };
  const auto grid = small_grid();
  const auto edited = [&grid](const fs::path& dir, const std::string& shard, const std::function<void(json&)>& edit) {
    const auto path = write_shard(dir / ("edited-" + shard.substr(0, 1)), grid, shard);
    edit_summary(path, edit);
    return path;
  };
  const auto c = GENERATE_REF(values<Case>({
      {"a missing shard", [&](const fs::path& d) { return std::vector{write_shard(d / "a", grid, "1/2")}; },
       "shard 2/2 is missing"},
      {"a shard given twice",
       [&](const fs::path& d) {
         return std::vector{write_shard(d / "a", grid, "1/2"), write_shard(d / "b", grid, "1/2")};
       },
       "shard 1/2 is given twice"},
      {"a shard of another grid",
       [&](const fs::path& d) {
         return std::vector{write_shard(d / "a", grid, "1/2"), write_shard(d / "b", small_grid(5), "2/2")};
       },
       "b/sweep.json is a shard of a different grid or base scenario"},
      {"a shard of another cut",
       [&](const fs::path& d) {
         return std::vector{write_shard(d / "a", grid, "1/2"), write_shard(d / "b", grid, "2/3")};
       },
       "b/sweep.json is shard 2/3, but others are of 2"},
      {"an impossible shard",
       [&](const fs::path& d) {
         return std::vector{edited(d, "1/1", [](json& s) { s["shard"] = {{"index", 3}, {"count", 1}}; })};
       },
       "names an impossible shard 3/1"},
      {"an incomplete shard",
       [&](const fs::path& d) {
         return std::vector{write_shard(d / "a", grid, "1/2"), edited(d, "2/2", [](json& s) {
                              s["complete"] = false;
                              s["cells_done"] = 1;
                            })};
       },
       "edited-2/sweep.json is incomplete (1 of 3 cells)"},
      {"another schema version",
       [&](const fs::path& d) {
         return std::vector{write_shard(d / "a", grid, "1/2"),
                            edited(d, "2/2", [](json& s) { s["schema_version"] = "0.0"; })};
       },
       "edited-2/sweep.json has schema \"0.0\""},
      {"a folder without sweep.json",
       [&](const fs::path& d) {
         fs::create_directories(d / "empty");
         return std::vector{d / "empty"};
       },
       "empty/sweep.json"},
      {"a sweep.json of something else",
       [&](const fs::path& d) { return std::vector{edited(d, "1/1", [](json& s) { s["kind"] = "run_summary"; })}; },
       "is not a skewbench sweep summary"},
  }));
  INFO(c.name);
  TempDir dir("skewbench-merge");
  const auto shards = c.shards(dir.path());
  CHECK_THAT(merge_error(shards, dir.path()), ContainsSubstring(c.error));
}

TEST_CASE("a shard whose cells.jsonl is missing, short or out of order is refused, naming the shard") {
  TempDir dir("skewbench-merge");
  const auto grid = small_grid();
  const auto s1 = write_shard(dir.path() / "s1", grid, "1/2");
  const auto s2 = write_shard(dir.path() / "s2", grid, "2/2");
  auto lines = lines_of(s2 / "cells.jsonl");
  std::string error;
  SECTION("missing") {
    fs::remove(s2 / "cells.jsonl");
    error = "cannot open " + s2.string() + "/cells.jsonl: No such file or directory";
  }
  SECTION("short") {
    lines.pop_back();
    write_lines(s2 / "cells.jsonl", lines);
    error = "shard 2/2 ends before cell 5";
  }
  SECTION("out of order") {
    std::swap(lines[0], lines[1]);
    write_lines(s2 / "cells.jsonl", lines);
    error = "shard 2/2 has cell 3 where cell 1 belongs";
  }
  CHECK_THAT(merge_error({s1, s2}, dir.path()), ContainsSubstring(error));
}
