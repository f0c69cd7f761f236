// The committed references pin the engine's behaviour: a run of scenarios/
// and a sweep of each shipped grid, on fresh services, give exactly the core
// digests of results/reference*/. A refactoring that changes a decision, a
// count or a verdict anywhere fails here. When a change is meant to alter
// behaviour, regenerate the references (CONTRIBUTING.md, "Tests") in the same
// commit, so that the difference is reviewed as evidence.

#include <catch2/catch_test_macros.hpp>

#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
namespace fs = std::filesystem;

TEST_CASE("a run of scenarios/ gives the core digest of results/reference") {
  TempDir out("skewbench-pin");
  const auto r = run_skewbench({"run", source_path("scenarios"), "--out", out.path().string(), "-q"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto reference = read_json(source_path("results/reference/summary.json"));
  const auto summary = read_json(out.path() / "summary.json");
  CHECK(summary["core_digest"] == reference["core_digest"]);
  // Scenario by scenario, so a failure names what moved.
  REQUIRE(summary["scenarios"].size() == reference["scenarios"].size());
  for (std::size_t i = 0; i < summary["scenarios"].size(); ++i) {
    INFO(reference["scenarios"][i]["id"]);
    CHECK(summary["scenarios"][i]["core_digest"] == reference["scenarios"][i]["core_digest"]);
  }
}

TEST_CASE("a sweep of each shipped grid gives the cells digest of its reference sweep") {
  const std::pair<const char*, const char*> grids[] = {
      {"scenarios/sweeps/018-offset-by-epsilon.json", "results/reference-sweep"},
      {"scenarios/sweeps/017-ttl-by-recovery-delay.json", "results/reference-sweep-017"},
      {"scenarios/sweeps/019-rollback-by-gc.json", "results/reference-sweep-019"},
  };
  for (const auto& [grid, reference_dir] : grids) {
    INFO(grid);
    TempDir out("skewbench-pin");
    const auto r = run_skewbench({"sweep", source_path(grid), "--out", out.path().string(), "-q"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto reference = read_json(source_path(std::string(reference_dir) + "/sweep.json"));
    const auto sweep = read_json(out.path() / "sweep.json");
    CHECK(sweep["cells_core_digest"] == reference["cells_core_digest"]);
    CHECK(sweep["cells_done"] == reference["cells_done"]);
  }
}
