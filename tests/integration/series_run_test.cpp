// The other benchmarks of the series (#015, #016, #017, #019) on the real
// stack: every shipped scenario file of each benchmark meets its expectations
// against a real PostgreSQL and a real remote-effect process.

#include <algorithm>

#include <catch2/catch_test_macros.hpp>

#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The shipped scenario files of one benchmark ("015-*.json"), sorted.
std::vector<std::string> scenario_files(const std::string& benchmark) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(source_path("scenarios"))) {
    const auto name = entry.path().filename().string();
    if (name.rfind(benchmark + "-", 0) == 0 && entry.path().extension() == ".json") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs the benchmark's files and checks that every scenario passed.
json run_benchmark(const std::string& benchmark, const TempDir& out, std::size_t expected_files) {
  const auto files = scenario_files(benchmark);
  REQUIRE(files.size() == expected_files);
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), files.begin(), files.end());
  args.insert(args.end(), {"--out", out.path().string(), "--quiet"});
  const auto r = run_skewbench(args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto summary = read_json(out.path() / "summary.json");
  CHECK(summary["outcome"] == "pass");
  REQUIRE(summary["scenarios"].size() == expected_files);
  for (const auto& row : summary["scenarios"]) {
    INFO(row.dump());
    CHECK(row["pass"] == true);
  }
  return summary;
}

json row_for(const json& summary, const std::string& id) {
  for (const auto& row : summary["scenarios"]) {
    if (row["id"] == id) return row;
  }
  FAIL("no summary row for " << id);
  return nullptr;
}

}  // namespace

TEST_CASE("#015: a new key per attempt duplicates, the stable key dedupes, reconciling avoids the second POST") {
  TempDir out("skewbench-series");
  const auto summary = run_benchmark("015", out, 3);
  CHECK(row_for(summary, "015-unsafe-new-key-per-attempt")["verdict"] == "CONFLICT");
  CHECK(row_for(summary, "015-unsafe-new-key-per-attempt")["decision"] == "REPLAY_NEW_KEY");
  CHECK(row_for(summary, "015-safe-stable-key-redelivery")["verdict"] == "SAFE");
  CHECK(row_for(summary, "015-safe-reconcile-before-retry")["post_requests"] == 1);
  // On the wire the two attempts carried different, run-namespaced keys.
  const auto evidence = read_json(out.path() / "scenarios" / "015-unsafe-new-key-per-attempt.json");
  const auto first = evidence["timeline"][1]["exchanges"][0]["request"]["headers"]["Idempotency-Key"];
  const auto retry = evidence["timeline"][2]["exchanges"][0]["request"]["headers"]["Idempotency-Key"];
  CHECK(first == evidence["idempotency_key"].get<std::string>() + ":attempt:1");
  CHECK(retry == evidence["idempotency_key"].get<std::string>() + ":attempt:2");
}

TEST_CASE("#017: a TTL shorter than the recovery window duplicates; retention or reconciling does not") {
  TempDir out("skewbench-series");
  const auto summary = run_benchmark("017", out, 3);
  CHECK(row_for(summary, "017-unsafe-short-ttl")["effect_count"] == 2);
  CHECK(row_for(summary, "017-safe-retention")["effect_count"] == 1);
  CHECK(row_for(summary, "017-reconcile-after-expiry")["decision"] == "RECONCILE_FIRST");
  CHECK(row_for(summary, "017-reconcile-after-expiry")["verdict"] == "SAFE");
}
