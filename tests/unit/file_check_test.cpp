// validate's engine and sweep's plan: every error of every file, grids
// validated with their base, cells per policy, and the sweep's console words.

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/files.hpp"
#include "sweep/console.hpp"
#include "sweep/file_check.hpp"
#include "sweep/grid.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string source(const std::string& relative) { return std::string(SKEWBENCH_SOURCE_DIR) + "/" + relative; }

json shipped_json(const std::string& relative) { return json::parse(read_file(source(relative))); }

std::size_t invalid_count(const std::vector<sweep::FileCheck>& checks) {
  std::size_t n = 0;
  for (const auto& c : checks) n += c.ok() ? 0 : 1;
  return n;
}

}  // namespace

TEST_CASE("validate reports every broken file of a directory, not only the first") {
  TempDir dir("skewbench-validate");
  auto good = shipped_json("scenarios/018-uncertainty.json");
  write_file_atomically(dir.path() / "00-good.json", good.dump(2));
  for (int i = 1; i <= 18; ++i) {
    auto bad = good;
    bad["id"] = "bad-" + std::to_string(i);
    bad["policy"]["max_clock_error_s"] = -i;
    write_file_atomically(dir.path() / ("bad-" + std::to_string(100 + i) + ".json"), bad.dump(2));
  }
  const auto checks = sweep::check_files({dir.path().string()});
  REQUIRE(checks.size() == 19);
  CHECK(invalid_count(checks) == 18);
  for (const auto& c : checks) {
    if (!c.ok()) CHECK_THAT(c.errors.front(), ContainsSubstring(c.path));
  }
}

TEST_CASE("validate names a scenario id used by two files and a path that does not exist, and goes on") {
  TempDir dir("skewbench-validate");
  const auto good = shipped_json("scenarios/018-uncertainty.json");
  write_file_atomically(dir.path() / "a.json", good.dump());
  write_file_atomically(dir.path() / "b.json", good.dump());
  const auto checks = sweep::check_files({(dir.path() / "nowhere").string(), dir.path().string()});
  REQUIRE(checks.size() == 3);
  CHECK_FALSE(checks[0].ok());
  CHECK_THAT(checks[0].errors.front(), ContainsSubstring("no such file or directory"));
  CHECK(checks[1].ok());
  CHECK_FALSE(checks[2].ok());
  CHECK_THAT(checks[2].errors.front(), ContainsSubstring("is also used by"));
}

TEST_CASE("validate checks a grid as a grid, with its base scenario") {
  const auto shipped = sweep::check_files({source("scenarios/sweeps")});
  // Each shipped grid beside its base scenario: 017-*, 018-*, then 019-*.
  REQUIRE(shipped.size() == 6);
  for (const auto& c : shipped) CHECK(c.ok());
  CHECK(shipped[0].kind == "scenario");
  CHECK(shipped[1].kind == "grid");
  CHECK_THAT(shipped[1].summary, ContainsSubstring("grid 017-ttl-by-recovery-delay"));
  CHECK(shipped[3].kind == "grid");
  CHECK_THAT(shipped[3].summary, ContainsSubstring("grid 018-offset-by-epsilon"));
  CHECK(shipped[5].kind == "grid");
  CHECK_THAT(shipped[5].summary, ContainsSubstring("grid 019-rollback-by-gc"));

  TempDir dir("skewbench-validate");
  auto grid = shipped_json("scenarios/sweeps/018-offset-by-epsilon.json");
  grid["base_scenario"] = source("scenarios/sweeps/018-base.json");
  struct Case {
    std::string pointer;
    json value;
    std::string expected;
  };
  const auto c = GENERATE(values<Case>({
      {"/axes/0/pointer", "/nodes/1/clock_ofset_s", "clock_ofset_s"},
      {"/policies/2/policy/max_clock_error_s", -3, "$.policies[2].policy.max_clock_error_s"},
      {"/axes/1/policies/0", "uncertainy", "$.axes[1].policies[0]"},
      {"/base_scenario", "missing-base.json", "missing-base.json"},
  }));
  grid[json::json_pointer(c.pointer)] = c.value;
  write_file_atomically(dir.path() / "grid.json", grid.dump());
  const auto checks = sweep::check_files({(dir.path() / "grid.json").string()});
  REQUIRE(checks.size() == 1);
  CHECK(checks[0].kind == "grid");
  REQUIRE_FALSE(checks[0].ok());
  CHECK_THAT(checks[0].errors.front(), ContainsSubstring(c.expected));
}

TEST_CASE("a dry run counts the cells of each policy in the shard") {
  const auto grid = sweep::Grid::load(source("scenarios/sweeps/018-offset-by-epsilon.json"));
  const auto whole = sweep::planned_cells(grid, sweep::Shard{});
  // 19 offsets x 5 recovery times; uncertainty also sweeps 8 bounds.
  CHECK(whole == json{{"node_local", 95}, {"declared_authority", 95}, {"uncertainty", 760}});
  const auto half = sweep::planned_cells(grid, sweep::Shard{1, 2});
  std::uint64_t total = 0;
  for (const auto& [label, n] : half.items()) total += n.get<std::uint64_t>();
  CHECK(total == sweep::Shard{1, 2}.size_of(grid.cell_count()));
  const auto text = sweep::plan_text(grid, sweep::Shard{});
  CHECK_THAT(text, ContainsSubstring("950 of 950 cells"));
  CHECK_THAT(text, ContainsSubstring("uncertainty"));
}

TEST_CASE("a shard past the last cell is named and warned about as empty") {
  CHECK(sweep::empty_shard_warning({200, 200}, 180).has_value());
  CHECK_THAT(*sweep::empty_shard_warning({200, 200}, 180), ContainsSubstring("200/200"));
  CHECK_FALSE(sweep::empty_shard_warning({180, 200}, 180).has_value());
  CHECK(sweep::sweep_name("g", {2, 3}) == "sweep g shard 2/3");
  CHECK(sweep::sweep_name("g", {}) == "sweep g");
}

TEST_CASE("sweep times are rounded to what a reader needs") {
  struct Case {
    double seconds;
    std::string text;
  };
  const auto c =
      GENERATE(values<Case>({{0.123456, "0.12 s"}, {9.996, "10.00 s"}, {12.4, "12 s"}, {185.2, "3 min 05 s"}}));
  CHECK(sweep::format_duration(c.seconds) == c.text);
}

TEST_CASE("a sweep's end names its output folder, the next command, and counts jobs in words") {
  const json summary = {{"grid_id", "g"},
                        {"shard", nullptr},
                        {"cells_done", 4},
                        {"cells_planned", 4},
                        {"duration_s", 1.23456},
                        {"jobs", 1},
                        {"per_policy", {{"p", {{"SAFE", 4}}}}},
                        {"cells_core_digest", "d"},
                        {"warnings", json::array()}};
  const auto text = sweep::end_text(summary, "out/dir");
  CHECK_THAT(text, ContainsSubstring("4/4 cells in 1.23 s with 1 job\n"));
  CHECK_THAT(text, ContainsSubstring("skewbench report out/dir"));
  auto shard = summary;
  shard["shard"] = {{"index", 2}, {"count", 3}};
  CHECK_THAT(sweep::end_text(shard, "out/dir"), ContainsSubstring("sweep g shard 2/3"));
}

TEST_CASE("a sweep that stopped early or has ERROR cells ends with the --resume line and no digest") {
  const json finished = {{"grid_id", "g"},           {"shard", nullptr},         {"cells_done", 4},
                         {"cells_planned", 4},       {"complete", true},         {"errors", 0},
                         {"interrupted", false},     {"cells_core_digest", "d"}, {"per_policy", json::object()},
                         {"warnings", json::array()}};
  CHECK_THAT(sweep::end_text(finished, "out/dir", "grid.json"), ContainsSubstring("cells core digest: d"));
  auto unreachable = finished;  // stopped by --max-unreachable-s: not interrupted, not complete
  unreachable["cells_done"] = 2;
  unreachable["complete"] = false;
  auto with_errors = finished;
  with_errors["errors"] = 1;
  for (const auto& summary : {unreachable, with_errors}) {
    const auto text = sweep::end_text(summary, "out/dir", "grid.json");
    INFO(text);
    CHECK_THAT(text, ContainsSubstring("next:   skewbench sweep grid.json --out out/dir --resume"));
    CHECK_THAT(text, !ContainsSubstring("core digest"));
    CHECK_THAT(text, !ContainsSubstring("skewbench report"));
  }
}
