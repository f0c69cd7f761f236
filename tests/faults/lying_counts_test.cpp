// The rule for counts (docs/evidence.md, "Counts a service reports") held
// against tests/faults/lying_counts.py: a real remote-effect behind a service
// on loopback that writes one lie into its answers. The real skewbench runs
// scenarios/targets/018-two-instances-skewed.json against it in real-clock
// mode (two instances, each a liar in front of its own remote-effect on one
// state file): every lie ends with exit 3 and an ERROR row, never a verdict;
// the same service telling the truth gives the verdict the truth implies.

#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "infra/postgres_cluster.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

infra::PostgresCluster& cluster() {
  static infra::PostgresCluster c;
  return c;
}

struct Run {
  CommandResult ended;
  json row;  // the scenario's row of summary.json
};

// The #018 two-instance scenario on real clocks against the liar telling `lie`.
Run run_lying(const std::string& lie, const fs::path& out) {
  const std::string command = "python3 " + source_path("tests/faults/lying_counts.py") + " --lie " + lie +
                              " --port {port} -- " + SKEWBENCH_REMOTE_EFFECT_BIN +
                              " --port INNER_PORT --state-db {state_db} --dedupe {dedupe} --clock system";
  Run run;
  run.ended =
      run_skewbench({"run", source_path("scenarios/targets/018-two-instances-skewed.json"), "--clock-mode", "real",
                     "--remote-command", command, "--database-url", cluster().url(), "--out", out.string(), "--quiet"});
  const auto summary = read_json(out / "summary.json");
  REQUIRE(summary["scenarios"].size() == 1);
  run.row = summary["scenarios"][0];
  return run;
}

}  // namespace

TEST_CASE("told the truth through the liar's proxy, the two instances give the verdict the truth implies") {
  TempDir tmp("skewbench-lying");
  const auto run = run_lying("honest", tmp.path() / "out");
  INFO(run.ended.output);
  CHECK(run.ended.exit_code == 0);
  CHECK(run.row["verdict"] == "CONFLICT");
  CHECK(run.row["effect_count"] == 2);
}

TEST_CASE("a count the service cannot have had ends the run with exit 3 and an ERROR row, never a verdict") {
  struct Case {
    std::string lie;
    std::vector<std::string> named;
  };
  const std::vector<Case> cases = {
      {"wrap",
       {"step 1 (post_effect)", "\"effect_count\" is 18446744073709551615, not a count (an integer from 0 to 2^53)"}},
      {"negative", {"step 1 (post_effect)", "\"effect_count\" is -1, not a count"}},
      // Each instance's liar repeats the first count it passed on: the count
      // never rises past it.
      {"flat", {"what the service reported cannot be true", "effect_count fell to 1 from 2", "(POST /effects)"}},
      {"many",
       {"what the service reported cannot be true: step 1 (post_effect), exchange 2 (GET /status/",
        "effect_count is 1000, but 1 is the most it can be (0 POST(s) answered applied and 1 whose answer was lost)"}},
      {"boot", {"what the service reported cannot be true", "boot_id is", "no step between restarted the service"}},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.lie) {
      TempDir tmp("skewbench-lying");
      const auto run = run_lying(c.lie, tmp.path() / "out");
      INFO(run.ended.output);
      CHECK(run.ended.exit_code == 3);
      CHECK(run.row["verdict"] == "ERROR");
      const auto error = run.row.value("error", std::string());
      for (const auto& part : c.named) CHECK_THAT(error, ContainsSubstring(part));
      // The folder verifies: it says ERROR, as its exchanges require.
      CHECK(run_skewbench({"verify", (tmp.path() / "out").string()}).exit_code == 0);
    }
  }
}
