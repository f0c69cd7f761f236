// The policy gate's commands as .github/workflows/policy-gate.yml runs them
// (scripts/policy-gate.sh): shards as separate processes, each on its own
// throwaway PostgreSQL and remote-effect, then merge + report + verify, then
// compare against a reference made the same way.

#include <memory>
#include <sstream>
#include <thread>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/digest.hpp"
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

constexpr int kShards = 2;

// One shard job's services: its own cluster and remote-effect.
struct ShardStack {
  explicit ShardStack(const fs::path& dir)
      : remote([&] {
          remote_effect::LaunchOptions o;
          o.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
          o.state_db = dir / "remote.sqlite3";
          return o;
        }()) {}
  infra::PostgresCluster cluster;
  remote_effect::RemoteEffectProcess remote;
};

CommandResult gate(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {"env", std::string("SKEWBENCH=") + SKEWBENCH_CLI_BIN};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.insert(argv.end(), {"bash", source_path("scripts/policy-gate.sh")});
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

json small_grid() {
  return {{"id", "gate"},
          {"description", "a small grid for the policy gate test"},
          {"base_scenario", source_path("scenarios/sweeps/018-base.json")},
          {"policies", json::array({{{"policy", {{"name", "node_local"}}}},
                                    {{"policy", {{"name", "uncertainty"}, {"max_clock_error_s", 20}}}}})},
          {"axes",
           json::array({{{"name", "node_b_offset_s"}, {"pointer", "/nodes/1/clock_offset_s"}, {"values", {0, 10, 20}}},
                        {{"name", "recovery_at_s"}, {"pointer", "/steps/2/at_s"}, {"values", {50, 70}}}})},
          {"maps", json::array({{{"x", "node_b_offset_s"}, {"y", "recovery_at_s"}}})}};
}

// The shard jobs in parallel, then the merge job's first step; returns the merged folder.
fs::path sweep_in_shards(const fs::path& dir, const fs::path& grid, const std::string& name) {
  std::vector<std::unique_ptr<ShardStack>> stacks;
  for (int i = 0; i < kShards; ++i) {
    fs::create_directories(dir / (name + "-stack-" + std::to_string(i)));
    stacks.push_back(std::make_unique<ShardStack>(dir / (name + "-stack-" + std::to_string(i))));
  }
  CommandResult results[kShards];
  std::vector<std::thread> jobs;
  for (int i = 0; i < kShards; ++i) {
    jobs.emplace_back([&, i] {
      results[i] = gate({"shard", grid.string(), std::to_string(i + 1), std::to_string(kShards),
                         (dir / (name + "-shard-" + std::to_string(i + 1))).string()},
                        {"SKEWBENCH_DATABASE_URL=" + stacks[i]->cluster.url(),
                         "SKEWBENCH_REMOTE_URL=" + stacks[i]->remote.base_url()});
    });
  }
  for (auto& j : jobs) j.join();
  for (const auto& r : results) {
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  std::vector<std::string> merge = {"merge", (dir / name).string()};
  for (int i = 0; i < kShards; ++i) merge.push_back((dir / (name + "-shard-" + std::to_string(i + 1))).string());
  const auto merged = gate(merge);
  INFO(merged.output);
  REQUIRE(merged.exit_code == 0);
  CHECK_THAT(merged.output, ContainsSubstring("valid: "));
  CHECK(fs::exists(dir / name / "report.html"));
  return dir / name;
}

}  // namespace

TEST_CASE("the policy gate's shard, merge, verify and compare pass on an unchanged sweep and fail on a new CONFLICT") {
  TempDir dir("skewbench-gate-it");
  const auto grid = dir.path() / "grid.json";
  write_file_atomically(grid, small_grid().dump(2));
  const auto reference = sweep_in_shards(dir.path(), grid, "reference");
  const auto candidate = sweep_in_shards(dir.path(), grid, "candidate");
  CHECK(read_json(reference / "sweep.json")["cells_core_digest"] ==
        read_json(candidate / "sweep.json")["cells_core_digest"]);

  const auto same = gate({"compare", reference.string(), candidate.string()});
  INFO(same.output);
  CHECK(same.exit_code == 0);

  // A reference in which the CONFLICT cells were SAFE: the candidate's are new.
  fs::create_directories(dir.path() / "older");
  std::string lines = read_file(reference / "cells.jsonl");
  for (auto at = lines.find("\"verdict\":\"CONFLICT\""); at != std::string::npos;
       at = lines.find("\"verdict\":\"CONFLICT\"")) {
    lines.replace(at, 20, "\"verdict\":\"SAFE\"");
  }
  write_file_atomically(dir.path() / "older" / "cells.jsonl", lines);
  // compare recomputes the digest and counts: the older sweep must be consistent.
  Sha256 digest;
  evidence::VerdictTally tally;
  std::istringstream in(lines);
  for (std::string line; std::getline(in, line);) {
    const auto record = json::parse(line);
    digest.update(evidence::cell_core_line(record) + "\n");
    tally.add(record);
  }
  auto older = read_json(reference / "sweep.json");
  older["cells_core_digest"] = digest.hex_digest();
  older["per_policy"] = tally.to_json();
  write_file_atomically(dir.path() / "older" / "sweep.json", older.dump(2));
  const auto regressed = gate({"compare", (dir.path() / "older").string(), candidate.string()});
  INFO(regressed.output);
  CHECK(regressed.exit_code == 1);
}
