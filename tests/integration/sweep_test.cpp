// skewbench sweep and merge: determinism, sharding and grid errors (compare
// is tested in unit/compare_test.cpp and integration/cli_test.cpp).

#include <fstream>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "evidence/cell_core.hpp"
#include "infra/postgres_cluster.hpp"
#include "remote_effect/launcher.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// One PostgreSQL cluster and one remote-effect for every sweep in this file.
struct SharedStack {
  infra::PostgresCluster cluster;
  TempDir dir{"skewbench-sweep-it"};
  remote_effect::RemoteEffectProcess remote{[this] {
    remote_effect::LaunchOptions o;
    o.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
    o.state_db = dir.path() / "remote.sqlite3";
    return o;
  }()};
};

SharedStack& stack() {
  static SharedStack s;
  return s;
}

json small_grid() {
  return {{"id", "small"},
          {"description", "a small grid for tests"},
          {"base_scenario", source_path("scenarios/sweeps/018-base.json")},
          {"policies", json::array({{{"policy", {{"name", "node_local"}}}},
                                    {{"policy", {{"name", "uncertainty"}, {"max_clock_error_s", 20}}}}})},
          {"axes",
           json::array({{{"name", "node_b_offset_s"}, {"pointer", "/nodes/1/clock_offset_s"}, {"values", {0, 10, 20}}},
                        {{"name", "max_clock_error_s"},
                         {"pointer", "/policy/max_clock_error_s"},
                         {"values", {0, 20}},
                         {"policies", {"uncertainty"}}}})}};
}

fs::path write_grid(const fs::path& dir, const json& grid, const std::string& name = "grid.json") {
  const auto path = dir / name;
  write_file_atomically(path, grid.dump(2));
  return path;
}

CommandResult run_sweep(const fs::path& grid, const fs::path& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"sweep",
                                   grid.string(),
                                   "--out",
                                   out.string(),
                                   "--database-url",
                                   stack().cluster.url(),
                                   "--remote-url",
                                   stack().remote.base_url(),
                                   "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_skewbench(args);
}

std::vector<std::string> core_lines(const fs::path& dir) {
  std::ifstream in(dir / "cells.jsonl");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(evidence::cell_core_line(json::parse(line)));
  return out;
}

}  // namespace

TEST_CASE("a small sweep run twice gives identical cells and core digest") {
  TempDir dir("skewbench-sweep-it");
  const auto grid = write_grid(dir.path(), small_grid());
  const auto a = run_sweep(grid, dir.path() / "a", {"--jobs", "2"});
  const auto b = run_sweep(grid, dir.path() / "b", {"--jobs", "1"});
  INFO(a.output << b.output);
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  const auto sa = read_json(dir.path() / "a" / "sweep.json");
  const auto sb = read_json(dir.path() / "b" / "sweep.json");
  CHECK(sa["cells_total"] == 9);  // node_local: 3 offsets; uncertainty: 3 offsets x 2 bounds
  CHECK(sa["cells_done"] == 9);
  CHECK(sa["cells_core_digest"] == sb["cells_core_digest"]);
  CHECK(core_lines(dir.path() / "a") == core_lines(dir.path() / "b"));
  // The measured outcomes, cell by cell: node B at +20 replays an expired key.
  const auto lines = core_lines(dir.path() / "a");
  REQUIRE(lines.size() == 9);
  const auto node_local_plus20 = json::parse(lines[2]);
  CHECK(node_local_plus20["parameters"]["node_b_offset_s"] == 20);
  CHECK(node_local_plus20["verdict"] == "CONFLICT");
  CHECK(node_local_plus20["effect_count"] == 2);
  CHECK(sa["per_policy"]["uncertainty"]["cells"] == 6);
}

TEST_CASE("shard 1/2 and shard 2/2 merged equal the unsharded sweep") {
  TempDir dir("skewbench-sweep-it");
  const auto grid = write_grid(dir.path(), small_grid());
  REQUIRE(run_sweep(grid, dir.path() / "whole").exit_code == 0);
  REQUIRE(run_sweep(grid, dir.path() / "s1", {"--shard", "1/2"}).exit_code == 0);
  REQUIRE(run_sweep(grid, dir.path() / "s2", {"--shard", "2/2"}).exit_code == 0);
  CHECK(read_json(dir.path() / "s1" / "sweep.json")["cells_done"] == 5);
  CHECK(read_json(dir.path() / "s2" / "sweep.json")["cells_done"] == 4);

  const auto merged = run_skewbench(
      {"merge", (dir.path() / "s2").string(), (dir.path() / "s1").string(), "--out", (dir.path() / "merged").string()});
  INFO(merged.output);
  REQUIRE(merged.exit_code == 0);
  const auto whole = read_json(dir.path() / "whole" / "sweep.json");
  const auto joined = read_json(dir.path() / "merged" / "sweep.json");
  CHECK(joined["cells_core_digest"] == whole["cells_core_digest"]);
  CHECK(joined["per_policy"] == whole["per_policy"]);
  CHECK(joined["shard"].is_null());
  CHECK(core_lines(dir.path() / "merged") == core_lines(dir.path() / "whole"));

  // A missing shard is refused.
  const auto partial = run_skewbench({"merge", (dir.path() / "s1").string(), "--out", (dir.path() / "m2").string()});
  CHECK(partial.exit_code == 2);
  CHECK_THAT(partial.output, Catch::Matchers::ContainsSubstring("shard 2/2 is missing"));
}

// Each way a grid can be malformed is a unit test of the grid parser
// (unit/grid_test.cpp); this is the path from it to the command's exit code.
TEST_CASE("a malformed grid file is exit 2 naming the file and the field, and nothing is written") {
  TempDir dir("skewbench-sweep-it");
  auto grid = small_grid();
  grid["axes"][0]["values"] = "0,10";
  const auto path = write_grid(dir.path(), grid);
  const auto r = run_skewbench({"sweep", path.string(), "--out", (dir.path() / "o").string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Matchers::ContainsSubstring("skewbench: invalid grid: " + path.string() +
                                                          ": $.axes[0].values: expected a non-empty array"));
  CHECK_FALSE(fs::exists(dir.path() / "o" / "cells.jsonl"));
}

namespace {

// #019's fence flow swept: the worker binds the remote's temporal epoch after
// its first POST, then cleans up (or only reads), rolls its clock back and
// replays. A cleanup of another cell advances the same epoch, so if two
// cells ran at once on one remote, one could be fenced out by the other.
json fence_grid() {
  json rollback = json::array();
  for (int offset = 0; offset >= -70; offset -= 5) rollback.push_back(offset);
  return {{"id", "fence"},
          {"description", "the #019 fence under rollbacks, with and without cleanup"},
          {"base_scenario", source_path("scenarios/019-temporal-epoch-fence.json")},
          {"policies", json::array({{{"policy", {{"name", "node_local"}}}},
                                    {{"policy", {{"name", "monotonic_watermark"}}}},
                                    {{"policy", {{"name", "reconcile_first"}}}}})},
          {"axes", json::array({{{"name", "rollback_offset_s"}, {"pointer", "/steps/5/offset_s"}, {"values", rollback}},
                                {{"name", "cleanup"}, {"pointer", "/steps/4/kind"}, {"values", {"gc", "observe"}}}})}};
}

// A sweep whose remote-effect skewbench starts itself (one per job).
CommandResult run_isolated_sweep(const fs::path& grid, const fs::path& out, std::vector<std::string> extra) {
  std::vector<std::string> args = {"sweep",          grid.string(),         "--out", out.string(),
                                   "--database-url", stack().cluster.url(), "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_skewbench(args);
}

}  // namespace

TEST_CASE("a sweep that binds the remote's temporal epoch gives one digest at every --jobs and when sharded") {
  TempDir dir("skewbench-sweep-it");
  const auto grid = write_grid(dir.path(), fence_grid());
  const auto one = run_isolated_sweep(grid, dir.path() / "jobs-1", {"--jobs", "1"});
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  const auto summary = read_json(dir.path() / "jobs-1" / "sweep.json");
  REQUIRE(summary["cells_done"] == 90);
  CHECK(summary["environment"]["remote_effect"]["instances"] == 1);
  const auto expected = summary["cells_core_digest"];
  // Some cells must be fenced (SAFE after a cleanup) and some must not, or
  // the digest could not tell interference from none.
  CHECK(summary["per_policy"]["node_local"]["SAFE"].get<int>() > 0);
  CHECK(summary["per_policy"]["node_local"]["CONFLICT"].get<int>() > 0);
  for (const char* jobs : {"2", "4"}) {
    INFO("--jobs " << jobs);
    const auto out = dir.path() / (std::string("jobs-") + jobs);
    const auto r = run_isolated_sweep(grid, out, {"--jobs", jobs});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto s = read_json(out / "sweep.json");
    CHECK(s["environment"]["remote_effect"]["instances"] == std::stoi(jobs));
    CHECK(s["cells_core_digest"] == expected);
  }
  REQUIRE(run_isolated_sweep(grid, dir.path() / "s1", {"--shard", "1/2", "--jobs", "2"}).exit_code == 0);
  REQUIRE(run_isolated_sweep(grid, dir.path() / "s2", {"--shard", "2/2", "--jobs", "3"}).exit_code == 0);
  const auto merged = run_skewbench(
      {"merge", (dir.path() / "s1").string(), (dir.path() / "s2").string(), "--out", (dir.path() / "merged").string()});
  INFO(merged.output);
  REQUIRE(merged.exit_code == 0);
  CHECK(read_json(dir.path() / "merged" / "sweep.json")["cells_core_digest"] == expected);
}

TEST_CASE("against one --remote-url, a grid that binds the temporal epoch runs one job, and --jobs 2 is exit 2") {
  TempDir dir("skewbench-sweep-it");
  const auto grid = write_grid(dir.path(), fence_grid());
  const auto refused = run_sweep(grid, dir.path() / "refused", {"--jobs", "2"});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, ContainsSubstring("bind_temporal_epoch steps depend on state the remote keeps"));
  CHECK_THAT(refused.output, ContainsSubstring("pass --jobs 1"));
  CHECK_FALSE(fs::exists(dir.path() / "refused"));
  // Without --jobs: one job, said on stderr (-q keeps progress quiet, not this).
  std::vector<std::string> args = {
      "sweep",          grid.string(),         "--out",        (dir.path() / "one").string(),
      "--database-url", stack().cluster.url(), "--remote-url", stack().remote.base_url()};
  const auto r = run_skewbench(args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, ContainsSubstring("running 1 job"));
  CHECK(read_json(dir.path() / "one" / "sweep.json")["jobs"] == 1);
}

TEST_CASE("a sweep's own services are throwaway unless --durability durable, and the evidence holds what they report") {
  // Started PostgreSQL and remote-effect (no URLs): the profile applies.
  TempDir dir("skewbench-sweep-it");
  const auto grid = write_grid(dir.path(), small_grid());
  struct Case {
    std::vector<std::string> flags;
    std::string profile, fsync, synchronous_commit, remote_sync;
  };
  const std::vector<Case> cases = {{{}, "throwaway", "off", "off", "normal"},
                                   {{"--durability", "durable"}, "durable", "on", "on", "full"}};
  std::vector<json> digests;
  for (const auto& c : cases) {
    INFO(c.profile);
    const auto out = dir.path() / c.profile;
    std::vector<std::string> args = {"sweep", grid.string(), "--out", out.string(), "-q", "--jobs", "2"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const auto r = run_skewbench(args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto environment = read_json(out / "sweep.json")["environment"];
    CHECK(environment["durability"] == c.profile);
    CHECK(environment["postgresql"]["settings"]["fsync"] == c.fsync);
    CHECK(environment["postgresql"]["settings"]["full_page_writes"] == c.fsync);
    CHECK(environment["postgresql"]["settings"]["synchronous_commit"] == c.synchronous_commit);
    CHECK(environment["remote_effect"]["sync"] == c.remote_sync);
    digests.push_back(read_json(out / "sweep.json")["cells_core_digest"]);
  }
  CHECK(digests[0] == digests[1]);  // the profile is not part of the outcome
}

TEST_CASE("a sweep's progress lines count the CONFLICT and ERROR cells written so far, and -q has none") {
  TempDir dir("skewbench-sweep-it");
  const auto grid = source_path("scenarios/sweeps/019-rollback-by-gc.json");
  const auto out = dir.path() / "out";
  const auto r = run_skewbench({"sweep", grid, "--out", out.string(), "-j", "2"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::uint64_t conflicts = 0;
  const auto summary = read_json(out / "sweep.json");
  for (const auto& [policy, counts] : summary["per_policy"].items()) {
    conflicts += counts["CONFLICT"].get<std::uint64_t>();
  }
  REQUIRE(conflicts > 0);  // else the count below could not tell
  // Not a terminal: one plain line per tenth, the last one complete.
  CHECK_THAT(r.output, ContainsSubstring("sweep: 60/60 cells (100%)"));
  CHECK_THAT(r.output, ContainsSubstring("CONFLICT " + std::to_string(conflicts) + "  ERROR 0\n"));
  const auto quiet = run_skewbench({"sweep", grid, "--out", (dir.path() / "quiet").string(), "-j", "2", "-q"});
  CHECK(quiet.exit_code == 0);
  CHECK_THAT(quiet.output, !ContainsSubstring("sweep: "));
}
