// The --out folder of run, sweep and merge: what may be written where, the
// manifest, the lock, up-front checks, verify, and resuming a sweep.

#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/digest.hpp"
#include "evidence/evidence.hpp"
#include "support/cli.hpp"
#include "support/shared_stack.hpp"
#include "support/sweep_fixture.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

CommandResult run_into(const std::vector<std::string>& inputs, const fs::path& out,
                       std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), inputs.begin(), inputs.end());
  args.insert(args.end(), {"--out", out.string()});
  const auto services = shared_stack().service_args();
  args.insert(args.end(), services.begin(), services.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return run_skewbench(args);
}

json small_grid(int offsets = 3) {
  json values = json::array();
  for (int i = 0; i < offsets; ++i) values.push_back(i * 5);
  auto doc = testing::small_grid_document(values, source_path("scenarios/sweeps/018-base.json"));
  doc["maps"] = json::array({{{"x", "node_b_offset_s"}, {"y", "max_clock_error_s"}}});
  return doc;
}

fs::path write_grid(const fs::path& dir, const json& grid) {
  const auto path = dir / "grid.json";
  write_file_atomically(path, grid.dump(2));
  return path;
}

std::vector<std::string> sweep_args(const fs::path& grid, const fs::path& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"sweep", grid.string(), "--out", out.string()};
  const auto services = shared_stack().service_args();
  args.insert(args.end(), services.begin(), services.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

CommandResult sweep_into(const fs::path& grid, const fs::path& out, std::vector<std::string> extra = {}) {
  return run_skewbench(sweep_args(grid, out, std::move(extra)));
}

// small_grid() written into DIR and swept whole into DIR/sweep.
struct SweptGrid {
  fs::path grid;
  fs::path out;
  json cells_core_digest;
};
SweptGrid swept_small_grid(const fs::path& dir) {
  SweptGrid swept{.grid = write_grid(dir, small_grid()), .out = dir / "sweep", .cells_core_digest = nullptr};
  REQUIRE(sweep_into(swept.grid, swept.out).exit_code == 0);
  swept.cells_core_digest = read_json(swept.out / "sweep.json")["cells_core_digest"];
  return swept;
}

// A copy of a checkout's inputs: scenarios/*.json, scenarios/sweeps/, and a
// file of the user's own among them.
fs::path make_checkout(const fs::path& root) {
  fs::create_directories(root / "scenarios" / "sweeps");
  for (const auto& entry : fs::directory_iterator(shared_service_scenarios())) {
    if (entry.is_regular_file()) fs::copy_file(entry.path(), root / "scenarios" / entry.path().filename());
  }
  fs::copy_file(source_path("scenarios/sweeps/018-base.json"), root / "scenarios" / "sweeps" / "018-base.json");
  write_file_atomically(root / "scenarios" / "my-notes.txt", "mine\n");
  return root;
}

std::string bytes_of(const fs::path& path) { return read_file(path); }

// Writes DIR/FILE and rewrites its manifest entry to match, as someone who
// edits the evidence and covers the edit would.
void write_with_manifest(const fs::path& dir, const std::string& file, const std::string& bytes) {
  write_file_atomically(dir / file, bytes);
  auto manifest = read_json(dir / "manifest.json");
  for (auto& f : manifest["files"]) {
    if (f["path"] == file) {
      f["sha256"] = sha256_hex(bytes);
      f["bytes"] = bytes.size();
    }
  }
  write_file_atomically(dir / "manifest.json", manifest.dump(2));
}

std::size_t line_count(const fs::path& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace

TEST_CASE(
    "an --out that contains its inputs is refused with exit 2, with or without --overwrite, and nothing is lost") {
  TempDir dir("skewbench-evidir-it");
  const auto root = make_checkout(dir.path() / "checkout");
  const auto before = bytes_of(root / "scenarios" / "018-uncertainty.json");
  for (const auto& extra : {std::vector<std::string>{}, std::vector<std::string>{"--overwrite"}}) {
    const auto r = run_into({(root / "scenarios").string()}, root, extra);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring("contains the input"));
  }
  CHECK(bytes_of(root / "scenarios" / "018-uncertainty.json") == before);
  CHECK(fs::exists(root / "scenarios" / "sweeps" / "018-base.json"));
  CHECK(fs::exists(root / "scenarios" / "my-notes.txt"));
  CHECK_FALSE(fs::exists(root / "summary.json"));
  CHECK_FALSE(fs::exists(root / "manifest.json"));

  // The same for an --out equal to, or inside, an input folder.
  const auto inside = run_into({(root / "scenarios").string()}, root / "scenarios" / "out", {"--overwrite"});
  CHECK(inside.exit_code == 2);
  CHECK_THAT(inside.output, ContainsSubstring("lies inside the input"));
  CHECK_FALSE(fs::exists(root / "scenarios" / "out"));
  const auto same = run_into({(root / "scenarios").string()}, root / "scenarios", {"--overwrite"});
  CHECK(same.exit_code == 2);
  CHECK_THAT(same.output, ContainsSubstring("is the input"));
}

TEST_CASE("a folder that is not empty and has no manifest is refused even with --overwrite") {
  TempDir dir("skewbench-evidir-it");
  const auto out = dir.path() / "out";
  fs::create_directories(out / "scenarios");
  write_file_atomically(out / "scenarios" / "mine.json", "{}");
  write_file_atomically(out / "summary.json", "{}");
  const auto r = run_into({shared_service_scenarios()}, out, {"--overwrite"});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("holds no manifest.json"));
  CHECK(bytes_of(out / "scenarios" / "mine.json") == "{}");
  CHECK(bytes_of(out / "summary.json") == "{}");
}

TEST_CASE("overwrite removes exactly the files the manifest lists and keeps the user's own") {
  TempDir dir("skewbench-evidir-it");
  const auto out = dir.path() / "out";
  const auto first = run_into({shared_service_scenarios()}, out);
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  const auto manifest = read_json(out / "manifest.json");
  CHECK(manifest["contents"] == "run");
  std::size_t scenario_files = 0;
  for (const auto& entry : fs::directory_iterator(shared_service_scenarios())) {
    if (entry.path().extension() == ".json") ++scenario_files;
  }
  // One evidence file per scenario, then summary.json, RESULT.md, result.json
  // (#018) and result-015.json and result-017.json (the other benchmarks run).
  CHECK(manifest["files"].size() == scenario_files + 5);
  write_file_atomically(out / "scenarios" / "my-notes.txt", "mine\n");

  // Without --overwrite: refused, untouched.
  const auto refused = run_into({source_path("scenarios/018-uncertainty.json")}, out);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, ContainsSubstring("already holds a run's evidence"));

  const auto second = run_into({source_path("scenarios/018-uncertainty.json")}, out, {"--overwrite"});
  INFO(second.output);
  REQUIRE(second.exit_code == 0);
  CHECK(fs::exists(out / "scenarios" / "018-uncertainty.json"));
  CHECK_FALSE(fs::exists(out / "scenarios" / "018-unsafe-node-local.json"));
  CHECK(bytes_of(out / "scenarios" / "my-notes.txt") == "mine\n");
  const auto summary = read_json(out / "summary.json");
  CHECK(summary["scenarios"].size() == 1);
  CHECK(read_json(out / "manifest.json")["run_id"] == summary["environment"]["run_id"]);
  // No hidden leftovers of the publication.
  for (const auto& entry : fs::directory_iterator(out)) {
    const auto name = entry.path().filename().string();
    CHECK((name[0] != '.' || name == ".skewbench.lock"));
  }
}

TEST_CASE("a run is refused at once with exit 2 naming the holder while another process holds the folder") {
  TempDir dir("skewbench-evidir-it");
  const auto out = dir.path() / "out";
  fs::create_directories(out);
  FileLock holder(out / ".skewbench.lock", "pid 4242 (skewbench run, since 2026-11-30T00:00:00Z)");
  REQUIRE(holder.held());
  const auto started = std::chrono::steady_clock::now();
  const auto r = run_into({shared_service_scenarios()}, out);
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("in use by pid 4242 (skewbench run"));
  // The holder never lets go: a run that waited for it would not end. The
  // bound is generous (a busy machine starts skewbench slowly), and still
  // far below a wait with retries.
  CHECK(seconds < 20);
  CHECK_FALSE(fs::exists(out / "summary.json"));
  const auto s = sweep_into(write_grid(dir.path(), small_grid()), out);
  CHECK(s.exit_code == 2);
  CHECK_THAT(s.output, ContainsSubstring("in use by pid 4242"));
}

TEST_CASE("two runs started together into one folder: one writes, the other exits 2") {
  TempDir dir("skewbench-evidir-it");
  const auto out = dir.path() / "out";
  // Start the shared services on this thread: a child's parent-death signal
  // follows the thread that forked it, and the runs' threads end early.
  shared_stack();
  CommandResult results[2];
  std::thread runs[2];
  for (int i = 0; i < 2; ++i)
    runs[i] = std::thread([&, i] { results[i] = run_into({shared_service_scenarios()}, out); });
  for (auto& t : runs) t.join();
  INFO(results[0].output << results[1].output);
  CHECK(((results[0].exit_code == 0 && results[1].exit_code == 2) ||
         (results[0].exit_code == 2 && results[1].exit_code == 0)));
  const auto summary = read_json(out / "summary.json");
  for (const auto& row : summary["scenarios"]) {
    const auto evidence = read_json(out / "scenarios" / (row["id"].get<std::string>() + ".json"));
    CHECK(evidence["environment"]["run_id"] == summary["environment"]["run_id"]);
  }
  CHECK(run_skewbench({"verify", out.string()}).exit_code == 0);
}

TEST_CASE("an unusable --out or remote-effect binary is exit 2 before any service starts") {
  // No URLs: a run that got past the checks would start PostgreSQL and say so.
  const auto run = run_skewbench({"run", shared_service_scenarios(), "--out", "/proc/skewbench-out"});
  INFO(run.output);
  CHECK(run.exit_code == 2);
  CHECK_THAT(run.output, ContainsSubstring("/proc/skewbench-out"));
  CHECK_THAT(run.output, !ContainsSubstring("starting"));

  TempDir dir("skewbench-evidir-it");
  const auto grid = write_grid(dir.path(), small_grid());
  const auto sweep = run_skewbench({"sweep", grid.string(), "--out", "/proc/skewbench-out"});
  INFO(sweep.output);
  CHECK(sweep.exit_code == 2);
  CHECK_THAT(sweep.output, !ContainsSubstring("starting"));

  const auto bin = run_skewbench({"run", shared_service_scenarios(), "--out", (dir.path() / "o").string(),
                                  "--remote-effect-bin", (dir.path() / "nothing").string()});
  INFO(bin.output);
  CHECK(bin.exit_code == 2);
  CHECK_THAT(bin.output, ContainsSubstring("nothing is not an executable file"));
  CHECK_THAT(bin.output, !ContainsSubstring("starting"));
  CHECK_FALSE(fs::exists(dir.path() / "o"));
}

TEST_CASE("a sweep is refused in a run's folder and a run in a sweep's") {
  TempDir dir("skewbench-evidir-it");
  const auto grid = write_grid(dir.path(), small_grid());
  REQUIRE(run_into({source_path("scenarios/018-uncertainty.json")}, dir.path() / "run").exit_code == 0);
  REQUIRE(sweep_into(grid, dir.path() / "sweep").exit_code == 0);
  const auto s = sweep_into(grid, dir.path() / "run", {"--overwrite"});
  CHECK(s.exit_code == 2);
  CHECK_THAT(s.output, ContainsSubstring("holds a run's evidence; a sweep cannot be written there"));
  const auto r = run_into({source_path("scenarios/018-uncertainty.json")}, dir.path() / "sweep", {"--overwrite"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("holds a sweep's evidence; a run cannot be written there"));
  CHECK(run_skewbench({"verify", (dir.path() / "run").string()}).exit_code == 0);
  CHECK(run_skewbench({"verify", (dir.path() / "sweep").string()}).exit_code == 0);
}

TEST_CASE("sweep --overwrite removes the old report.html and maps/, which report listed in the manifest") {
  TempDir dir("skewbench-evidir-it");
  const auto grid = write_grid(dir.path(), small_grid());
  const auto out = dir.path() / "sweep";
  REQUIRE(sweep_into(grid, out).exit_code == 0);
  const auto report = run_skewbench({"report", out.string()});
  INFO(report.output);
  REQUIRE(report.exit_code == 0);
  REQUIRE(fs::exists(out / "report.html"));
  CHECK(run_skewbench({"verify", out.string()}).exit_code == 0);
  const auto again = sweep_into(grid, out, {"--overwrite"});
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK_FALSE(fs::exists(out / "report.html"));
  CHECK_FALSE(fs::exists(out / "maps"));
  CHECK(run_skewbench({"verify", out.string()}).exit_code == 0);
}

TEST_CASE("verify says valid for a run and a sweep as written, and names what was altered") {
  TempDir dir("skewbench-evidir-it");
  const auto run = dir.path() / "run";
  REQUIRE(run_into({shared_service_scenarios()}, run).exit_code == 0);
  const auto ok = run_skewbench({"verify", run.string()});
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.output, ContainsSubstring("valid: "));
  CHECK_THAT(ok.output, ContainsSubstring(read_json(run / "summary.json")["core_digest"].get<std::string>()));

  SECTION("an edited scenario file") {
    auto evidence = read_json(run / "scenarios" / "018-unsafe-node-local.json");
    evidence["verdict"] = "SAFE";
    write_file_atomically(run / "scenarios" / "018-unsafe-node-local.json", evidence.dump(2) + "\n");
    const auto r = run_skewbench({"verify", run.string()});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, ContainsSubstring("scenarios/018-unsafe-node-local.json: "));
    CHECK_THAT(r.output, ContainsSubstring("changed after skewbench wrote it"));
    CHECK_THAT(r.output, ContainsSubstring("core_digest"));
  }
  SECTION("a file the manifest does not list, and one it lists that is gone") {
    write_file_atomically(run / "scenarios" / "extra.json", "{}");
    fs::remove(run / "RESULT.md");
    const auto r = run_skewbench({"verify", run.string()});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, ContainsSubstring("scenarios/extra.json: not listed in the manifest"));
    CHECK_THAT(r.output, ContainsSubstring("RESULT.md: listed in the manifest but missing"));
  }
  SECTION("a summary that breaks its schema, manifest updated to match") {
    auto summary = read_json(run / "summary.json");
    summary["scenarios"][0].erase("verdict");
    write_with_manifest(run, "summary.json", summary.dump(2) + "\n");
    const auto r = run_skewbench({"verify", run.string()});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, ContainsSubstring("summary.json: $.scenarios[0]"));
    CHECK_THAT(r.output, ContainsSubstring("schemas/summary.schema.json"));
  }
  SECTION("a row turned from CONFLICT to SAFE, with the run digest and the manifest rewritten to match") {
    // compare would refuse the row through the run digest; a forger who
    // recomputes it still meets the row's own scenario file here.
    auto summary = read_json(run / "summary.json");
    std::size_t i = 0;
    while (summary["scenarios"][i]["id"] != "018-unsafe-node-local") ++i;
    REQUIRE(summary["scenarios"][i]["verdict"] == "CONFLICT");
    summary["scenarios"][i]["verdict"] = "SAFE";
    summary["scenarios"][i]["effect_count"] = 1;
    summary["core_digest"] = evidence::run_core_digest(summary["scenarios"]);
    write_with_manifest(run, "summary.json", summary.dump(2) + "\n");
    const auto r = run_skewbench({"verify", run.string()});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    const auto at = "summary.json: $.scenarios[" + std::to_string(i) + "]";
    CHECK_THAT(r.output, ContainsSubstring(at + ".verdict is \"SAFE\", but scenarios/018-unsafe-node-local.json "
                                                "gives \"CONFLICT\""));
    CHECK_THAT(r.output,
               ContainsSubstring(at + ".effect_count is 1, but scenarios/018-unsafe-node-local.json gives 2"));
  }
  SECTION("an exchange's count doctored (outside the core digest), manifest rewritten to match") {
    // The closing counts are in the core digest; the exchanges are not, and
    // are held to the rule for counts instead (docs/evidence.md).
    const auto file = std::string("scenarios/018-unsafe-node-local.json");
    auto evidence = read_json(run / file);
    auto& timeline = evidence["timeline"];
    std::size_t step = 0;
    while (timeline[step]["kind"] != "recover") ++step;
    auto& answer = timeline[step]["exchanges"][0]["response"];
    REQUIRE(answer["effect_count"] == 2);
    answer["effect_count"] = 1000;
    write_with_manifest(run, file, evidence.dump(2) + "\n");
    const auto r = run_skewbench({"verify", run.string()});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, ContainsSubstring(file + ": gives verdict \"CONFLICT\", but a count in it cannot be true"));
    CHECK_THAT(r.output, ContainsSubstring("step " + std::to_string(step) +
                                           " (recover), exchange 1 (POST /effects): effect_count is 1000, but 2 is "
                                           "the most it can be"));
  }
  SECTION("no manifest, or not a folder") {
    fs::remove(run / "manifest.json");
    CHECK(run_skewbench({"verify", run.string()}).exit_code == 1);
    CHECK(run_skewbench({"verify", (run / "nothing").string()}).exit_code == 2);
  }
}

TEST_CASE("verify checks a sweep's cells against sweep.json") {
  TempDir dir("skewbench-evidir-it");
  const auto out = dir.path() / "sweep";
  REQUIRE(sweep_into(write_grid(dir.path(), small_grid()), out).exit_code == 0);
  REQUIRE(run_skewbench({"verify", out.string()}).exit_code == 0);
  // A cell's verdict changed and the manifest made to match: the recomputed
  // digest and counts still disagree with sweep.json.
  std::string lines = read_file(out / "cells.jsonl");
  const auto at = lines.find("\"verdict\":\"CONFLICT\"");
  REQUIRE(at != std::string::npos);
  lines.replace(at, 20, "\"verdict\":\"SAFE\"");
  write_with_manifest(out, "cells.jsonl", lines);
  const auto r = run_skewbench({"verify", out.string()});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, ContainsSubstring("sweep.json: $.cells_core_digest"));
  CHECK_THAT(r.output, ContainsSubstring("sweep.json: $.per_policy"));
}

TEST_CASE("an interrupted sweep says so, and --resume ends with the uninterrupted sweep's digest") {
  TempDir dir("skewbench-evidir-it");
  const auto grid = write_grid(dir.path(), small_grid(30));  // 30 + 60 cells
  const auto whole = dir.path() / "whole";
  REQUIRE(sweep_into(grid, whole, {"--jobs", "2"}).exit_code == 0);
  const auto expected = read_json(whole / "sweep.json")["cells_core_digest"];

  const auto out = dir.path() / "partial";
  auto args = sweep_args(grid, out, {"--jobs", "1"});
  args.insert(args.begin(), SKEWBENCH_CLI_BIN);
  Subprocess sweep(args, {});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (line_count(out / "cells.jsonl") < 5 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  sweep.send_signal(SIGINT);
  const auto code = sweep.wait_for_exit(std::chrono::seconds(60));
  std::string stdout_text;
  while (const auto line = sweep.read_line(std::chrono::milliseconds(200))) stdout_text += *line + "\n";
  INFO(stdout_text);
  REQUIRE(code == 130);
  const auto partial = read_json(out / "sweep.json");
  CHECK(partial["complete"] == false);
  CHECK(partial["interrupted"] == true);
  REQUIRE(partial["cells_done"].get<int>() < 90);
  // A cell that Ctrl-C cut short is not done: it is left out, never written as ERROR.
  CHECK_THAT(read_file(out / "cells.jsonl"), !ContainsSubstring("\"verdict\":\"ERROR\""));
  CHECK_THAT(stdout_text, ContainsSubstring("interrupted"));
  CHECK_THAT(stdout_text, ContainsSubstring("--resume"));
  CHECK_THAT(stdout_text, !ContainsSubstring("core digest"));
  CHECK(run_skewbench({"verify", out.string()}).exit_code == 0);

  const auto resumed = sweep_into(grid, out, {"--resume", "--jobs", "2"});
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  const auto done = read_json(out / "sweep.json");
  CHECK(done["complete"] == true);
  CHECK(done["interrupted"] == false);
  CHECK(done["cells_reused"] == partial["cells_done"]);
  CHECK(done["cells_core_digest"] == expected);
  CHECK(run_skewbench({"verify", out.string()}).exit_code == 0);
}

TEST_CASE("a sweep whose last cells.jsonl line was cut short (a full disk) resumes and ends on the whole digest") {
  TempDir dir("skewbench-evidir-it");
  const auto [grid, out, expected] = swept_small_grid(dir.path());
  auto text = read_file(out / "cells.jsonl");
  text.resize(text.size() - 40);  // the last append stopped part-way: no newline
  write_file_atomically(out / "cells.jsonl", text);
  const auto resumed = sweep_into(grid, out, {"--resume"});
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK_THAT(resumed.output, ContainsSubstring("is a record cut short"));
  const auto done = read_json(out / "sweep.json");
  CHECK(done["cells_reused"] == done["cells_total"].get<int>() - 1);
  CHECK(done["cells_core_digest"] == expected);
  CHECK(run_skewbench({"verify", out.string()}).exit_code == 0);
}

TEST_CASE("a publish journal naming a file outside --out is exit 2, and that file is kept") {
  TempDir dir("skewbench-evidir-it");
  const auto out = dir.path() / "o";
  fs::create_directories(out);
  write_file_atomically(dir.path() / "victim.txt", "mine\n");
  for (const auto& name : {std::string("../victim.txt"), (dir.path() / "victim.txt").string()}) {
    INFO(name);
    write_file_atomically(out / ".skewbench-publishing.json", json({{"files", {name}}}).dump());
    const auto r = run_into({source_path("scenarios/018-uncertainty.json")}, out, {"--overwrite"});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring("would reach outside"));
    CHECK(read_file(dir.path() / "victim.txt") == "mine\n");
  }
}

TEST_CASE("resume runs the ERROR cells again and refuses another grid") {
  TempDir dir("skewbench-evidir-it");
  const auto [grid, out, expected] = swept_small_grid(dir.path());
  // Cell 4 as an infrastructure failure would have left it.
  std::ifstream in(out / "cells.jsonl");
  std::string text;
  for (std::string line; std::getline(in, line);) {
    auto record = json::parse(line);
    if (record["cell"] == 4) {
      record["verdict"] = "ERROR";
      record["error"] = "connection refused";
      record["effect_count"] = nullptr;
    }
    text += record.dump() + "\n";
  }
  write_file_atomically(out / "cells.jsonl", text);

  const auto resumed = sweep_into(grid, out, {"--resume"});
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  const auto done = read_json(out / "sweep.json");
  CHECK(done["cells_reused"] == done["cells_total"].get<int>() - 1);
  CHECK(done["errors"] == 0);
  CHECK(done["cells_core_digest"] == expected);

  auto other = small_grid(4);
  const auto other_grid = dir.path() / "other" / "grid.json";
  fs::create_directories(other_grid.parent_path());
  write_file_atomically(other_grid, other.dump(2));
  const auto refused = sweep_into(other_grid, out, {"--resume"});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, ContainsSubstring("is a sweep of another grid"));
  const auto nothing = sweep_into(grid, dir.path() / "empty", {"--resume"});
  CHECK(nothing.exit_code == 2);
  CHECK_THAT(nothing.output, ContainsSubstring("nothing to resume"));
}

TEST_CASE("what run and sweep write conforms to schemas/ by python3-jsonschema too") {
  TempDir dir("skewbench-evidir-it");
  REQUIRE(run_into({shared_service_scenarios()}, dir.path() / "run").exit_code == 0);
  REQUIRE(sweep_into(write_grid(dir.path(), small_grid()), dir.path() / "sweep").exit_code == 0);
  const auto r = run_command({"python3", source_path("tests/support/check_schemas.py"), source_path("schemas"),
                              (dir.path() / "run").string(), (dir.path() / "sweep").string()});
  INFO(r.output);
  if (r.exit_code == 77) SKIP("python3-jsonschema is not installed");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, ContainsSubstring("0 problems"));
  // The checker can fail: a summary without its outcome is caught.
  auto summary = read_json(dir.path() / "run" / "summary.json");
  summary.erase("outcome");
  write_file_atomically(dir.path() / "run" / "summary.json", summary.dump());
  CHECK(run_command({"python3", source_path("tests/support/check_schemas.py"), source_path("schemas"),
                     (dir.path() / "run").string()})
            .exit_code == 1);
}
