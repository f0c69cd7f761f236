// The throwaway cluster runs on the PostgreSQL binaries the evidence names,
// and --postgres-bin chooses them. scripts/test.sh sets
// SKEWBENCH_TEST_POSTGRES_MAJOR to the major it installed or chose (17 by
// default, the system's with SKEWBENCH_TEST_POSTGRES=system), so the suite
// proves which server it ran on.

#include <cstdlib>

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

json run_environment(const std::vector<std::string>& extra_args) {
  TempDir out("skewbench-it");
  std::vector<std::string> args = {"run", source_path("scenarios/018-uncertainty.json"), "--out", out.path().string(),
                                   "-q"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  const auto r = run_skewbench(args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return read_json(out.path() / "summary.json");
}

bool warns_of_major(const json& summary, int major) {
  const auto needle = "PostgreSQL major " + std::to_string(major) + " differs from 17";
  for (const auto& w : summary["warnings"]) {
    if (w.get<std::string>().find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("the started cluster's evidence names its binaries, and the server is the release they claim") {
  const auto summary = run_environment({});
  const auto pg = summary["environment"]["postgresql"];
  INFO(pg.dump(2));
  CHECK(pg["embedded"] == true);
  const auto source = pg["source"].get<std::string>();
  CHECK((source == "env" || source == "cache" || source == "system"));
  CHECK(infra::is_postgres_bindir(pg["bin_dir"].get<std::string>()));
  const int major = infra::postgres_major_of(pg["binaries_version"].get<std::string>());
  CHECK(major == pg["server_version_num"].get<int>() / 10000);
  CHECK(warns_of_major(summary, major) == (major != 17));

  if (const char* expected = std::getenv("SKEWBENCH_TEST_POSTGRES_MAJOR"); expected && *expected) {
    CHECK(major == std::stoi(expected));
  }
  if (const char* env = std::getenv("SKEWBENCH_POSTGRES_BIN"); env && *env) {
    CHECK(pg["source"] == "env");
    CHECK(pg["bin_dir"] == env);
  }
}

TEST_CASE("the flag --postgres-bin starts the cluster from the named directory and says so") {
  const auto chosen = infra::find_postgres_binaries(infra::default_postgres_search());
  const auto summary = run_environment({"--postgres-bin", chosen.bin_dir.string()});
  const auto pg = summary["environment"]["postgresql"];
  CHECK(pg["source"] == "flag");
  CHECK(pg["bin_dir"] == chosen.bin_dir.string());
  CHECK(pg["binaries_version"] == chosen.version);
}

TEST_CASE(
    "the flag --postgres-bin without the server binaries, or with --database-url, is exit 2 before anything starts") {
  TempDir dir("skewbench-it");
  const auto out = dir.path() / "out";
  const auto missing = run_skewbench({"run", source_path("scenarios/018-uncertainty.json"), "--out", out.string(),
                                      "--postgres-bin", dir.path().string()});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, ContainsSubstring("skewbench: --postgres-bin " + dir.path().string()));
  CHECK_FALSE(fs::exists(out));

  const auto both =
      run_skewbench({"run", source_path("scenarios/018-uncertainty.json"), "--out", out.string(), "--postgres-bin",
                     dir.path().string(), "--database-url", "postgresql://postgres@127.0.0.1:1/postgres"});
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.output, ContainsSubstring("--postgres-bin"));
  CHECK_FALSE(fs::exists(out));

  const auto sweep = run_skewbench({"sweep", source_path("scenarios/sweeps/018-offset-by-epsilon.json"), "--out",
                                    out.string(), "--postgres-bin", dir.path().string()});
  CHECK(sweep.exit_code == 2);
  CHECK_THAT(sweep.output, ContainsSubstring("skewbench: --postgres-bin " + dir.path().string()));
  CHECK_FALSE(fs::exists(out));
}
