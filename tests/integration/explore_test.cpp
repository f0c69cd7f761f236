// skewbench explore end to end: the real executable, its exit codes and
// files, each finding confirmed on a real stack it starts, and a finding
// whose in-process measurement was altered caught as the engines disagreeing.

#include <csignal>
#include <thread>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/digest.hpp"
#include "common/subprocess.hpp"
#include "explore/confirm.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kNodeLocal = source_path("scenarios/explore/018-node-local.json");
const std::string kDeclaredAuthority = source_path("scenarios/explore/018-declared-authority.json");

CommandResult explore_cli(const std::string& bounds, const fs::path& out, std::vector<std::string> more) {
  std::vector<std::string> args = {"explore", bounds, "--out", out.string()};
  args.insert(args.end(), more.begin(), more.end());
  return run_skewbench(args);
}

// The folder with its findings taken out, explore.json saying it broke
// nothing, and the manifest written again for what is left: a forgery that
// agrees with its manifest, which only the counts can give away.
void remove_findings(const fs::path& out) {
  auto summary = read_json(out / "explore.json");
  summary["findings"] = json::array();
  summary["scenarios_breaking"] = 0;
  const auto text = summary.dump(2) + "\n";
  write_file_atomically(out / "explore.json", text);
  fs::remove_all(out / "findings");
  auto manifest = read_json(out / "manifest.json");
  json kept = json::array();
  for (auto entry : manifest["files"]) {
    const auto path = entry["path"].get<std::string>();
    if (path.rfind("findings/", 0) == 0) continue;
    if (path == "explore.json") {
      entry["bytes"] = text.size();
      entry["sha256"] = sha256_hex(text);
    }
    kept.push_back(entry);
  }
  manifest["files"] = kept;
  write_file_atomically(out / "manifest.json", manifest.dump(2) + "\n");
}

}  // namespace

TEST_CASE("explore finds node-local expiry's duplicate, shrinks it, confirms it on the real stack; run reproduces it") {
  TempDir dir("skewbench-explore-cli");
  const auto out = dir.path() / "out";
  const auto r = explore_cli(kNodeLocal, out, {"--seed", "1", "--max-scenarios", "2000"});
  INFO(r.output);
  REQUIRE(r.exit_code == 1);
  CHECK_THAT(r.output, ContainsSubstring("with seed 1"));
  CHECK_THAT(r.output, ContainsSubstring("real stack: confirmed: node_local left 2 effects"));
  const auto summary = read_json(out / "explore.json");
  CHECK(summary.at("seed") == 1);
  CHECK(summary.at("engine") == "in-process");
  CHECK(summary.at("scenarios_tried") == 2000);
  CHECK(summary.at("stopped_by") == "max_scenarios");
  CHECK(summary.at("budget_s") == 86400);  // --max-scenarios alone: the count is the only bound
  REQUIRE(summary.at("findings").size() == 1);
  const auto& finding = summary.at("findings")[0];
  CHECK(finding.at("invariant") == "at_most_one_effect");
  CHECK(finding.at("confirmed_on_real_stack") == true);
  CHECK(finding.at("engines_disagree").is_null());
  CHECK(finding.at("minimal_steps") == 3);
  const auto scenario_file = out / finding.at("scenario_file").get<std::string>();
  CHECK(fs::is_regular_file(out / finding.at("evidence_file").get<std::string>()));
  CHECK(fs::is_regular_file(scenario_file.parent_path() / "real-stack-evidence.json"));
  // The folder is evidence as a run's is: its manifest, and verify holds each file to it.
  const auto verified = run_skewbench({"verify", out.string()});
  INFO(verified.output);
  CHECK(verified.exit_code == 0);
  CHECK_THAT(verified.output, ContainsSubstring("explore"));
  // Unless the folder is published as written: a minimal scenario edited after it is named.
  {
    auto edited = read_json(scenario_file);
    edited["ttl_s"] = 2;
    const auto saved = read_file(scenario_file);
    write_file_atomically(scenario_file, edited.dump(2) + "\n");
    const auto refused = run_skewbench({"verify", out.string()});
    CHECK(refused.exit_code == 1);
    CHECK_THAT(refused.output, ContainsSubstring("SHA-256 differs from the manifest's"));
    CHECK_THAT(refused.output, ContainsSubstring("evidence.json: $.input is not the scenario.json beside it"));
    write_file_atomically(scenario_file, saved);
  }
  CHECK(read_json(scenario_file.parent_path() / "real-stack-evidence.json").at("final").at("effect_count") == 2);
  // explore.json, the minimal scenario and both evidence files, and the
  // shipped bounds files, against the published schemas (python3-jsonschema).
  const auto schemas =
      run_command({"python3", source_path("tests/support/check_schemas.py"), source_path("schemas"), out.string(),
                   kNodeLocal, kDeclaredAuthority, source_path("scenarios/explore/target.json"),
                   source_path("scenarios/explore/target-declared-authority.json")});
  INFO(schemas.output);
  CHECK(schemas.exit_code == 0);
  CHECK_THAT(schemas.output, ContainsSubstring("8 documents checked, 0 problems"));

  // The minimal scenario is an ordinary scenario file: run fails where it breaks.
  const auto run = run_skewbench(
      {"run", scenario_file.string(), "--engine", "in-process", "--out", (dir.path() / "run").string(), "-q"});
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.output, ContainsSubstring("final.effect_count: expected 1, observed 2"));

  // The same seed again (not confirmed this time): the same scenarios and digest.
  const auto again_out = dir.path() / "again";
  const auto again = explore_cli(kNodeLocal, again_out, {"--seed", "1", "--max-scenarios", "2000", "--no-confirm"});
  CHECK(again.exit_code == 1);
  const auto again_summary = read_json(again_out / "explore.json");
  CHECK(again_summary.at("scenarios_core_digest") == summary.at("scenarios_core_digest"));
  CHECK(again_summary.at("findings")[0].at("confirmed_on_real_stack").is_null());
  CHECK(read_json(again_out / again_summary.at("findings")[0].at("scenario_file").get<std::string>()) ==
        read_json(scenario_file));

  // verify holds explore.json's counts to each other: its findings taken out
  // and the manifest written again, its CONFLICT verdicts still count breaches.
  remove_findings(again_out);
  const auto forged = run_skewbench({"verify", again_out.string()});
  INFO(forged.output);
  CHECK(forged.exit_code == 1);
  CHECK_THAT(forged.output, ContainsSubstring("each a breach of at_most_one_effect, but $.scenarios_breaking says 0"));
}

TEST_CASE("explore under a declared authority finds nothing, exit 0") {
  TempDir dir("skewbench-explore-cli");
  const auto r = explore_cli(kDeclaredAuthority, dir.path() / "out", {"--seed", "3", "--max-scenarios", "3000"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const auto summary = read_json(dir.path() / "out" / "explore.json");
  CHECK(summary.at("findings").empty());
  CHECK(summary.at("scenarios_breaking") == 0);
  CHECK(summary.at("scenarios_tried") == 3000);
}

TEST_CASE("explore refuses bad bounds, a used --out and another engine with exit 2, before anything runs") {
  TempDir dir("skewbench-explore-cli");
  auto bounds = read_json(kNodeLocal);
  bounds["steps"]["kinds"].push_back("restart_remote");
  write_file_atomically(dir.path() / "bounds.json", bounds.dump());
  auto r = explore_cli((dir.path() / "bounds.json").string(), dir.path() / "out", {"--seed", "1"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("the bounds may generate what this engine cannot run"));
  CHECK_THAT(r.output, ContainsSubstring("restart_remote acts on a process of the service"));
  CHECK_FALSE(fs::exists(dir.path() / "out"));

  bounds["steps"]["kinds"].push_back("restart_store");
  write_file_atomically(dir.path() / "bounds.json", bounds.dump());
  r = explore_cli((dir.path() / "bounds.json").string(), dir.path() / "out", {"--engine", "real"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("restart_store needs a service whose store runs as a process of its own"));
  CHECK_FALSE(fs::exists(dir.path() / "out"));

  r = run_skewbench({"explore", "--out", (dir.path() / "out").string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("explore needs a bounds file"));
  r = run_skewbench({"explore", "--target", "remote-effect", "--targets-dir", source_path("targets"), "--engine",
                     "in-process", "--out", (dir.path() / "out").string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("--target remote-effect: a target's service runs as a process of its own"));
  r = run_skewbench({"explore", "--target", "no-such-target", "--targets-dir", source_path("targets"), "--out",
                     (dir.path() / "out").string()});
  CHECK(r.exit_code == 2);
  CHECK_FALSE(fs::exists(dir.path() / "out"));

  // --out follows the evidence folders' rules (docs/evidence.md): a folder
  // skewbench did not write is refused, --overwrite or not, and keeps what it holds.
  fs::create_directories(dir.path() / "used");
  write_file_atomically(dir.path() / "used" / "notes.txt", "mine");
  for (const auto& overwrite : std::vector<std::vector<std::string>>{{}, {"--overwrite"}}) {
    auto more = overwrite;
    more.insert(more.end(), {"--max-scenarios", "10"});
    r = explore_cli(kDeclaredAuthority, dir.path() / "used", more);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring("is not empty and holds no manifest.json"));
    CHECK_FALSE(fs::exists(dir.path() / "used" / "explore.json"));
    CHECK(read_file(dir.path() / "used" / "notes.txt") == "mine");
  }
  // An earlier explore's folder is replaced only with --overwrite; a run's never.
  REQUIRE(explore_cli(kDeclaredAuthority, dir.path() / "mine", {"--max-scenarios", "10"}).exit_code == 0);
  r = explore_cli(kDeclaredAuthority, dir.path() / "mine", {"--max-scenarios", "10"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output,
             ContainsSubstring("already holds an explore's evidence; choose another --out or pass --overwrite"));
  r = explore_cli(kDeclaredAuthority, dir.path() / "mine", {"--max-scenarios", "20", "--overwrite"});
  CHECK(r.exit_code == 0);
  CHECK(read_json(dir.path() / "mine" / "explore.json").at("scenarios_tried") == 20);
  REQUIRE(run_skewbench({"run", source_path("scenarios/018-declared-authority.json"), "--engine", "in-process", "--out",
                         (dir.path() / "run").string(), "-q"})
              .exit_code == 0);
  r = explore_cli(kDeclaredAuthority, dir.path() / "run", {"--max-scenarios", "10", "--overwrite"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("holds a run's evidence; an explore cannot be written there"));
}

TEST_CASE("validate checks explore bounds files as explore does, beside scenarios and grids") {
  auto r = run_skewbench({"validate", source_path("scenarios/explore")});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, ContainsSubstring("(explore bounds 018-node-local, 4 invariants, up to 6 steps of 5 kinds)"));
  CHECK_THAT(r.output, ContainsSubstring("(explore bounds target-node-local,"));

  TempDir dir("skewbench-explore-cli");
  auto bounds = read_json(kNodeLocal);
  bounds["ttl_s"]["max"] = 0;
  bounds["policies"] = json::array({{{"name", "uncertainty"}}});
  write_file_atomically(dir.path() / "bad.json", bounds.dump());
  write_file_atomically(dir.path() / "scenario.json", read_file(source_path("scenarios/018-declared-authority.json")));
  r = run_skewbench({"validate", dir.path().string()});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("invalid explore bounds: " + (dir.path() / "bad.json").string() +
                                         ": $.ttl_s.max: 0 is out of range"));
  CHECK_THAT(r.output, ContainsSubstring("ok  " + (dir.path() / "scenario.json").string()));
  CHECK_THAT(r.output, ContainsSubstring("1 of 2 files invalid"));
  bounds["ttl_s"]["max"] = 10;
  write_file_atomically(dir.path() / "bad.json", bounds.dump());
  r = run_skewbench({"validate", (dir.path() / "bad.json").string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("$.policies[0]: this policy makes no valid scenario"));
}

TEST_CASE("explore on the real engine finds and shrinks what the in-process engine does, from the same seed") {
  TempDir dir("skewbench-explore-cli");
  const auto real =
      explore_cli(kNodeLocal, dir.path() / "real", {"--seed", "1", "--max-scenarios", "40", "--engine", "real"});
  INFO(real.output);
  REQUIRE(real.exit_code == 1);
  CHECK_THAT(real.output, ContainsSubstring("found and shrunk on the real stack"));
  const auto in_process =
      explore_cli(kNodeLocal, dir.path() / "in-process", {"--seed", "1", "--max-scenarios", "40", "--no-confirm"});
  REQUIRE(in_process.exit_code == 1);
  const auto real_summary = read_json(dir.path() / "real" / "explore.json");
  const auto in_process_summary = read_json(dir.path() / "in-process" / "explore.json");
  CHECK(real_summary.at("engine") == "real");
  CHECK(real_summary.at("target").is_null());
  CHECK(real_summary.at("verdicts") == in_process_summary.at("verdicts"));
  REQUIRE(real_summary.at("findings").size() == in_process_summary.at("findings").size());
  const auto& finding = real_summary.at("findings")[0];
  CHECK(finding.at("found_at_scenario") == in_process_summary.at("findings")[0].at("found_at_scenario"));
  CHECK(finding.at("shrinks") == in_process_summary.at("findings")[0].at("shrinks"));
  CHECK(finding.at("confirmed_on_real_stack").is_null());
  const auto scenario = finding.at("scenario_file").get<std::string>();
  CHECK(read_json(dir.path() / "real" / scenario) == read_json(dir.path() / "in-process" / scenario));
  const auto evidence = read_json(dir.path() / "real" / finding.at("evidence_file").get<std::string>());
  CHECK_FALSE(evidence.contains("engine"));  // only the in-process engine marks its evidence
  CHECK(evidence.at("final").at("effect_count") == 2);
}

TEST_CASE("explore on the real engine, interrupted, writes what it found before; the scenario cut short is left out") {
  TempDir dir("skewbench-explore-cli");
  const auto out = dir.path() / "out";
  const auto log = dir.path() / "stderr.txt";
  Subprocess explore({SKEWBENCH_CLI_BIN, "explore", kNodeLocal, "--engine", "real", "--seed", "1", "--budget-s", "600",
                      "--out", out.string()},
                     {.env = {}, .stderr_path = log.string()});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  const auto said = [&log] { return fs::exists(log) ? read_file(log) : std::string(); };
  while (said().find("shrunk to") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // in the middle of a later scenario
  explore.send_signal(SIGINT);
  const auto code = explore.wait_for_exit(std::chrono::seconds(60));
  INFO(said());
  REQUIRE(code == 130);
  const auto summary = read_json(out / "explore.json");
  CHECK(summary.at("stopped_by") == "interrupted");
  CHECK(summary.at("budget_s") == 600);
  CHECK(summary.at("scenarios_tried").get<int>() >= 26);
  REQUIRE(summary.at("findings").size() == 1);
  CHECK(summary.at("findings")[0].at("minimal_steps") == 3);
  std::uint64_t verdicts = 0;
  for (const auto& [verdict, count] : summary.at("verdicts").items()) verdicts += count.get<std::uint64_t>();
  CHECK(verdicts == summary.at("scenarios_tried").get<std::uint64_t>());
  CHECK(summary.at("verdicts").count("ERROR") == 0);
}

TEST_CASE("a finding the real stack measures otherwise is reported as the engines disagreeing") {
  const auto bounds = explore::load_bounds(kNodeLocal);
  auto outcome =
      explore::run_explore(bounds, {.seed = 1, .budget_s = 600, .max_scenarios = 2000, .interrupted = nullptr});
  REQUIRE(outcome.findings.size() == 1);
  // What the in-process engine measured, altered: the real stack must not agree.
  outcome.findings[0].evidence["final"]["effect_count"] = 3;
  runner::StackOptions services;
  services.remote_effect_binary = SKEWBENCH_REMOTE_EFFECT_BIN;
  explore::confirm_on_real_stack(bounds, outcome, services, nullptr);
  const auto& finding = outcome.findings[0];
  REQUIRE(finding.disagreement);
  CHECK_THAT(*finding.disagreement, ContainsSubstring("final"));
  CHECK(finding.confirmed == false);
  CHECK(finding.real_evidence.at("final").at("effect_count") == 2);
}
