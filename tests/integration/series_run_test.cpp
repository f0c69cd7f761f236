// The other benchmarks of the series (#015, #016, #017, #019) on the real
// stack: every shipped scenario file of each benchmark meets its expectations
// against a real PostgreSQL and a real remote-effect process, which skewbench
// starts in the dedupe mode each scenario declares.

#include <algorithm>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "infra/postgres_cluster.hpp"
#include "remote_effect/launcher.hpp"
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

TEST_CASE("#016: a volatile dedupe memory lost in a restart duplicates; durable memory or reconciling does not") {
  TempDir out("skewbench-series");
  const auto summary = run_benchmark("016", out, 3);
  CHECK(row_for(summary, "016-unsafe-volatile-restart")["effect_count"] == 2);
  CHECK(row_for(summary, "016-unsafe-volatile-restart")["verdict"] == "CONFLICT");
  CHECK(row_for(summary, "016-safe-durable-restart")["effect_count"] == 1);
  CHECK(row_for(summary, "016-reconcile-after-restart")["post_requests"] == 1);
  // Each scenario ran against a remote in the mode it declares, restarted once.
  for (const char* id : {"016-unsafe-volatile-restart", "016-safe-durable-restart", "016-reconcile-after-restart"}) {
    INFO(id);
    const auto evidence = read_json(out.path() / "scenarios" / (std::string(id) + ".json"));
    const auto declared = evidence["input"]["remote"]["dedupe"];
    CHECK(evidence["final"]["idempotency_mode"] == declared);
    bool restarted = false;
    for (const auto& record : evidence["timeline"]) {
      if (record["kind"] == "restart_remote") restarted = record["observed"]["boot_id_changed"] == true;
    }
    CHECK(restarted);
  }
  CHECK(read_json(out.path() / "result-016.json")["score"] == 10);
}

TEST_CASE("#019: a rollback after cleanup duplicates; the epoch fence or the watermark does not") {
  TempDir out("skewbench-series");
  const auto summary = run_benchmark("019", out, 4);
  CHECK(row_for(summary, "019-aba-visibility")["verdict"] == "HELD");
  CHECK(row_for(summary, "019-purge-then-rollback")["effect_count"] == 2);
  CHECK(row_for(summary, "019-temporal-epoch-fence")["effect_count"] == 1);
  CHECK(row_for(summary, "019-watermark")["decision"] == "RECONCILE_FIRST");
  CHECK(read_json(out.path() / "result-019.json")["score"] == 10);
}

TEST_CASE("against --remote-url a scenario needing another dedupe mode is exit 2 before anything runs") {
  infra::PostgresCluster cluster;
  TempDir dir("skewbench-series");
  remote_effect::LaunchOptions launch;
  launch.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
  launch.state_db = dir.path() / "remote.sqlite3";
  remote_effect::RemoteEffectProcess remote(launch);  // durable, the default

  auto doc = read_json(source_path("scenarios/016-unsafe-volatile-restart.json"));
  json steps = json::array();
  for (const auto& step : doc["steps"]) {
    if (step["kind"] == "restart_remote") continue;
    steps.push_back(step);
    steps.back().erase("expect");
  }
  doc["steps"] = steps;
  // Without the restart the volatile memory still holds the key: deduplicated.
  doc["expect"] = {{"effect_count", 1}, {"status", "committed"}, {"idempotency_mode", "volatile"}};
  doc.erase("report_as");
  const auto file = dir.path() / "volatile.json";
  write_file_atomically(file, doc.dump(2));
  const auto out = dir.path() / "out";
  const auto r = run_skewbench({"run", file.string(), "--database-url", cluster.url(), "--remote-url",
                                remote.base_url(), "--out", out.string(), "-q"});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Matchers::ContainsSubstring("needs remote dedupe mode \"volatile\""));
  CHECK_FALSE(fs::exists(out / "summary.json"));

  // The same file against a remote started in that mode runs.
  TempDir dir2("skewbench-series");
  launch.state_db = dir2.path() / "remote.sqlite3";
  launch.dedupe = skewbench::remote_effect::DedupeMode::volatile_;
  remote_effect::RemoteEffectProcess volatile_remote(launch);
  const auto ok = run_skewbench({"run", file.string(), "--database-url", cluster.url(), "--remote-url",
                                 volatile_remote.base_url(), "--out", out.string(), "-q"});
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK(read_json(out / "summary.json")["outcome"] == "pass");
}
