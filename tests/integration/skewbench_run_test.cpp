// skewbench run against a real PostgreSQL cluster and a real remote-effect
// process: the #018 reproduction, digests, exit codes, isolation of runs.

#include <algorithm>
#include <csignal>
#include <thread>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/loopback_port.hpp"
#include "infra/postgres_cluster.hpp"
#include "remote_effect/launcher.hpp"
#include "support/cli.hpp"
#include "support/shared_stack.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json row_for(const json& summary, const std::string& id) {
  for (const auto& row : summary["scenarios"]) {
    if (row["id"] == id) return row;
  }
  FAIL("no summary row for " << id);
  return nullptr;
}

json observation(const json& evidence, const std::string& node) {
  for (const auto& step : evidence["timeline"]) {
    if (step["kind"] == "observe" && step["node"] == node) return step["observed"];
  }
  FAIL("no observation by " << node);
  return nullptr;
}

void write_json(const fs::path& path, const json& value) { write_file_atomically(path, value.dump(2)); }

}  // namespace

TEST_CASE("the three #018 scenarios reproduce the published numbers and result.json scores 10/10") {
  TempDir out("skewbench-it");
  const auto r = run_skewbench({"run", source_path("scenarios"), "--out", out.path().string(), "--quiet"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);

  const auto summary = read_json(out.path() / "summary.json");
  CHECK(summary["outcome"] == "pass");
  CHECK(summary["schema_version"] == "skewbench-evidence/2");

  const auto unsafe = row_for(summary, "018-unsafe-node-local");
  CHECK(unsafe["temporal_state"] == "EXPIRED");
  CHECK(unsafe["post_requests"] == 2);
  CHECK(unsafe["effect_count"] == 2);
  CHECK(unsafe["final_status"] == "conflict");
  CHECK(unsafe["verdict"] == "CONFLICT");

  const auto authority = row_for(summary, "018-declared-authority");
  CHECK(authority["post_requests"] == 2);
  CHECK(authority["effect_count"] == 1);
  CHECK(authority["final_status"] == "committed");

  const auto guard = row_for(summary, "018-uncertainty");
  CHECK(guard["temporal_state"] == "TIME_UNKNOWN");
  CHECK(guard["decision"] == "RECONCILE_FIRST");
  CHECK(guard["post_requests"] == 1);
  CHECK(guard["effect_count"] == 1);

  const auto unsafe_evidence = read_json(out.path() / "scenarios" / "018-unsafe-node-local.json");
  CHECK(observation(unsafe_evidence, "node-a")["active_idempotency_records"] == 1);
  CHECK(observation(unsafe_evidence, "node-b")["active_idempotency_records"] == 0);
  CHECK(observation(unsafe_evidence, "node-b")["effect_count"] == 1);
  CHECK(unsafe_evidence["final"]["ack_drops"] == 1);

  const auto guard_evidence = read_json(out.path() / "scenarios" / "018-uncertainty.json");
  CHECK(guard_evidence["final"]["outbox_status"] == "delivered");

  const auto result = read_json(out.path() / "result.json");
  CHECK(result["score"] == 10);
  CHECK(result["max_score"] == 10);
  REQUIRE(result["checks"].size() == 5);
  for (const auto& c : result["checks"]) CHECK(c["passed"] == true);
  CHECK(result["safe_clock_authority"]["second_post_delivery"] == "deduplicated");
  CHECK(result["safe_skew_guard"]["uncertainty_interval"] == json::array({6'000'040, 6'000'080}));
  CHECK(result["database"]["server_version"].get<std::string>().size() > 0);
  CHECK(result["http_service"]["boot_id"].get<std::string>().size() == 32);
  CHECK(fs::exists(out.path() / "RESULT.md"));
}

TEST_CASE("two runs of the same inputs give the same core digest") {
  TempDir first("skewbench-it");
  TempDir second("skewbench-it");
  REQUIRE(run_skewbench({"run", source_path("scenarios"), "--out", first.path().string(), "-q"}).exit_code == 0);
  REQUIRE(run_skewbench({"run", source_path("scenarios"), "--out", second.path().string(), "-q"}).exit_code == 0);
  const auto a = read_json(first.path() / "summary.json");
  const auto b = read_json(second.path() / "summary.json");
  CHECK(a["environment"]["run_id"] != b["environment"]["run_id"]);
  CHECK(a["environment"]["remote_effect"]["boot_id"] != b["environment"]["remote_effect"]["boot_id"]);
  CHECK(a["core_digest"] == b["core_digest"]);
  CHECK(read_json(first.path() / "result.json")["core_digest"] ==
        read_json(second.path() / "result.json")["core_digest"]);
}

TEST_CASE("a deliberately wrong expectation makes run exit 1 and marks that check failed") {
  TempDir dir("skewbench-it");
  auto doc = read_json(source_path("scenarios/018-declared-authority.json"));
  doc["expect"]["effect_count"] = 2;  // the remote will hold one effect
  fs::create_directories(dir.path() / "in");
  write_json(dir.path() / "in" / "wrong.json", doc);
  const auto out = dir.path() / "out";
  const auto r = run_skewbench({"run", (dir.path() / "in").string(), "--out", out.string(), "-q"});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  const auto evidence = read_json(out / "scenarios" / "018-declared-authority.json");
  CHECK(evidence["pass"] == false);
  bool seen = false;
  for (const auto& c : evidence["checks"]) {
    if (c["id"] == "final.effect_count") {
      seen = true;
      CHECK(c["pass"] == false);
      CHECK(c["expected"] == 2);
      CHECK(c["observed"] == 1);
    } else {
      CHECK(c["pass"] == true);
    }
  }
  CHECK(seen);
  CHECK(read_json(out / "summary.json")["outcome"] == "fail");
  // The console names the failed check after the table, not only "NO".
  CHECK_THAT(r.output, Catch::Matchers::ContainsSubstring(
                           "FAILED 018-declared-authority: final.effect_count: expected 2, observed 1"));

  // The same as one JSON document on stdout.
  const auto j = run_command({SKEWBENCH_CLI_BIN, "run", (dir.path() / "in").string(), "--out",
                              (dir.path() / "out-json").string(), "-q", "--format", "json"});
  CHECK(j.exit_code == 1);
  const auto doc_out = nlohmann::json::parse(j.output.substr(j.output.find('{')));
  CHECK(doc_out["exit_code"] == 1);
  CHECK(doc_out["failures"][0]["check"] == "final.effect_count");
}

TEST_CASE("a stopped database gives exit 3 and nothing claims a pass") {
  std::string url;
  {
    infra::PostgresCluster cluster;
    url = cluster.url();
    cluster.stop();
  }
  TempDir out("skewbench-it");
  const auto r =
      run_skewbench({"run", source_path("scenarios"), "--database-url", url, "--out", out.path().string(), "-q"});
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Catch::Matchers::ContainsSubstring("PostgreSQL"));
  const auto summary = read_json(out.path() / "summary.json");
  CHECK(summary["outcome"] == "error");
  for (const auto& row : summary["scenarios"]) {
    CHECK(row["pass"] == false);
    CHECK(row["verdict"] == "ERROR");
  }
  const auto result = read_json(out.path() / "result.json");
  CHECK(result["score"] == 0);
}

TEST_CASE("an unreachable remote gives exit 3") {
  TempDir out("skewbench-it");
  const auto port = free_loopback_port();
  const auto r = run_skewbench({"run", source_path("scenarios/018-uncertainty.json"), "--remote-url",
                                "http://127.0.0.1:" + std::to_string(port), "--out", out.path().string(), "-q"});
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK(read_json(out.path() / "summary.json")["scenarios"][0]["verdict"] == "ERROR");
}

TEST_CASE("a scenario file error is exit 2 naming the file and the JSON path, and nothing starts") {
  TempDir dir("skewbench-it");
  auto doc = read_json(source_path("scenarios/018-uncertainty.json"));
  doc["policy"]["max_clock_error_s"] = "twenty";
  write_json(dir.path() / "bad.json", doc);
  const auto out = dir.path() / "out";
  const auto r = run_skewbench({"run", (dir.path() / "bad.json").string(), "--out", out.string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Matchers::ContainsSubstring("bad.json"));
  CHECK_THAT(r.output, Catch::Matchers::ContainsSubstring("$.policy.max_clock_error_s"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("an --out directory that already holds evidence is refused with exit 2") {
  TempDir out("skewbench-it");
  write_file_atomically(out.path() / "summary.json", "{}");
  const auto r = run_skewbench({"run", source_path("scenarios"), "--out", out.path().string()});
  CHECK(r.exit_code == 2);
  CHECK(read_file(out.path() / "summary.json") == "{}");
}

TEST_CASE("two runs at once against one database and one remote do not interfere") {
  infra::PostgresCluster cluster;
  TempDir dir("skewbench-it");
  remote_effect::LaunchOptions launch;
  launch.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
  launch.state_db = dir.path() / "remote.sqlite3";
  remote_effect::RemoteEffectProcess remote(launch);

  CommandResult results[2];
  std::thread runs[2];
  for (int i = 0; i < 2; ++i) {
    runs[i] = std::thread([&, i] {
      results[i] =
          run_skewbench({"run", shared_service_scenarios(), "--database-url", cluster.url(), "--remote-url",
                         remote.base_url(), "--out", (dir.path() / ("out" + std::to_string(i))).string(), "-q"});
    });
  }
  for (auto& t : runs) t.join();
  INFO(results[0].output << results[1].output);
  CHECK(results[0].exit_code == 0);
  CHECK(results[1].exit_code == 0);
  CHECK(read_json(dir.path() / "out0" / "summary.json")["core_digest"] ==
        read_json(dir.path() / "out1" / "summary.json")["core_digest"]);

  // A third run on the same long-lived services still reproduces #018.
  const auto third = run_skewbench({"run", shared_service_scenarios(), "--database-url", cluster.url(), "--remote-url",
                                    remote.base_url(), "--out", (dir.path() / "out2").string(), "-q"});
  CHECK(third.exit_code == 0);
}

TEST_CASE("a remote restart between the lost acknowledgement and recovery keeps the committed effect") {
  TempDir dir("skewbench-it");
  const json scenario = json::parse(R"({
    "id": "restart-then-recover",
    "description": "remote-effect restarts after the lost acknowledgement; recovery under a declared authority deduplicates",
    "t0_s": 7000000, "ttl_s": 60,
    "nodes": [{"id": "node-a", "clock_offset_s": 0}, {"id": "node-b", "clock_offset_s": 20}],
    "policy": {"name": "declared_authority", "authority": {"identity": "remote_effect_service_logical_clock", "offset_s": 5}},
    "steps": [
      {"kind": "commit_operation", "node": "node-a", "at_s": 0},
      {"kind": "post_effect", "node": "node-a", "at_s": 0, "drop_ack": true, "expect": {"transport_outcome": "ACK_UNKNOWN"}},
      {"kind": "restart_remote", "at_s": 10, "expect": {"boot_id_changed": true, "effect_count": 1}},
      {"kind": "recover", "node": "node-b", "at_s": 50, "expect": {"delivery": "deduplicated"}}
    ],
    "expect": {"effect_count": 1, "post_requests": 2, "verdict": "SAFE"}
  })");
  write_json(dir.path() / "restart.json", scenario);
  const auto r =
      run_skewbench({"run", (dir.path() / "restart.json").string(), "--out", (dir.path() / "out").string(), "-q"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
}

namespace {

// Processes whose command line mentions `needle` (e.g. a cluster's directory).
int processes_mentioning(const std::string& needle) {
  int found = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline;
    try {
      cmdline = read_file(entry.path() / "cmdline");
    } catch (const std::exception&) {
      continue;  // the process ended while we looked
    }
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) ++found;
  }
  return found;
}

}  // namespace

TEST_CASE("a throwaway cluster does not outlive a skewbench killed with SIGKILL") {
  TempDir tmp("skewbench-kill");
  fs::permissions(tmp.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);  // the postgres user enters it
  Subprocess::Options options;
  options.env["TMPDIR"] = tmp.path().string();
  options.stderr_path = (tmp.path() / "stderr.log").string();
  const auto out = tmp.path() / "out";
  Subprocess sweep({SKEWBENCH_CLI_BIN, "sweep", source_path("scenarios/sweeps/018-offset-by-epsilon.json"), "--out",
                    out.string(), "-q"},
                   options);
  // Wait until cells are being written: the cluster is up and in use.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    if (fs::exists(out / "cells.jsonl", ec) && fs::file_size(out / "cells.jsonl", ec) > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(processes_mentioning(tmp.path().string() + "/skewbench-pg") > 0);
  sweep.send_signal(SIGKILL);
  sweep.wait_for_exit(std::chrono::seconds(10));

  const auto cleanup_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (processes_mentioning(tmp.path().string() + "/skewbench-pg") > 0 &&
         std::chrono::steady_clock::now() < cleanup_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(processes_mentioning(tmp.path().string() + "/skewbench-pg") == 0);
  bool cluster_dir_left = false;
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    cluster_dir_left = cluster_dir_left || entry.path().filename().string().rfind("skewbench-pg", 0) == 0;
  }
  CHECK_FALSE(cluster_dir_left);
}

TEST_CASE("a service given by --remote-command is started, restarted and switched as remote-effect is") {
  // remote-effect itself, given as a command: the #016 scenarios restart it and
  // switch its dedupe mode, and must give the reference's core digests.
  TempDir dir("skewbench-it");
  const auto out = dir.path() / "out";
  const std::string command = std::string(SKEWBENCH_REMOTE_EFFECT_BIN) +
                              " --host {host} --port {port} --state-db {state_db} --dedupe {dedupe} --sync normal";
  std::vector<std::string> args = {"run"};
  for (const char* name :
       {"016-reconcile-after-restart.json", "016-safe-durable-restart.json", "016-unsafe-volatile-restart.json"}) {
    args.push_back(source_path(std::string("scenarios/") + name));
  }
  args.insert(args.end(), {"--out", out.string(), "-q", "--remote-command", command});
  const auto r = run_skewbench(args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto summary = read_json(out / "summary.json");
  const auto reference = read_json(source_path("results/reference/summary.json"));
  for (const auto& row : summary["scenarios"]) {
    INFO(row["id"]);
    CHECK(row["core_digest"] == row_for(reference, row["id"].get<std::string>())["core_digest"]);
  }
  const auto evidence = read_json(out / "scenarios" / "016-safe-durable-restart.json");
  CHECK(evidence["environment"]["remote_effect"]["command"] == command);
  CHECK(evidence["environment"]["remote_effect"]["embedded"] == true);
}

TEST_CASE("a --remote-command that cannot be expanded, or comes with --remote-url, is exit 2 before anything starts") {
  TempDir dir("skewbench-it");
  const auto out = dir.path() / "out";
  const auto scenario = source_path("scenarios/018-uncertainty.json");
  const auto unknown = run_skewbench({"run", scenario, "--out", out.string(), "--remote-command", "svc --p {prot}"});
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.output, Catch::Matchers::ContainsSubstring("--remote-command: unknown placeholder {prot}"));
  const auto both = run_skewbench(
      {"run", scenario, "--out", out.string(), "--remote-command", "svc", "--remote-url", "http://127.0.0.1:1"});
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.output, Catch::Matchers::ContainsSubstring("--remote-command"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("a --remote-command that exits before it is ready is an infrastructure error in its own words") {
  TempDir dir("skewbench-it");
  const auto out = dir.path() / "out";
  const auto r = run_skewbench({"run", source_path("scenarios/018-uncertainty.json"), "--out", out.string(), "-q",
                                "--remote-command", "sh -c 'echo no state at $STATE_DB >&2; exit 7'"});
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Catch::Matchers::ContainsSubstring("exited with code 7 before it was ready"));
  CHECK_THAT(r.output, Catch::Matchers::ContainsSubstring("no state at "));
}
