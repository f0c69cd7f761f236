// The in-process engine against the real stack (docs/engines.md): on every
// cell of the three shipped grids the two engines measure the same thing, and
// everything the in-process engine writes says where it came from.

#include <algorithm>
#include <fstream>
#include <map>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "evidence/cell_core.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::vector<json> cells_of(const fs::path& dir) {
  std::ifstream in(dir / "cells.jsonl");
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

// A record as both engines must measure it: everything but the wall time,
// the error text and the engine's own name.
json measured(json record) {
  record.erase("duration_us");
  record.erase("error");
  record.erase("engine");
  return record;
}

CommandResult sweep(const std::string& grid, const fs::path& out, std::vector<std::string> extra) {
  std::vector<std::string> args = {"sweep", source_path("scenarios/sweeps/" + grid), "--out", out.string(), "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_skewbench(args);
}

}  // namespace

TEST_CASE("the in-process engine measures what the real stack measures on every cell of the shipped grids") {
  const std::string grid =
      GENERATE("018-offset-by-epsilon.json", "017-ttl-by-recovery-delay.json", "019-rollback-by-gc.json");
  INFO(grid);
  TempDir dir("skewbench-engine-it");
  // The real stack as a user runs it: a throwaway PostgreSQL and one
  // remote-effect process per job, started by skewbench.
  const auto real = sweep(grid, dir.path() / "real", {"--jobs", "2"});
  const auto in_process = sweep(grid, dir.path() / "in-process", {"--engine", "in-process", "--jobs", "2"});
  INFO(real.output << in_process.output);
  REQUIRE(real.exit_code == 0);
  REQUIRE(in_process.exit_code == 0);

  const auto real_cells = cells_of(dir.path() / "real");
  const auto in_process_cells = cells_of(dir.path() / "in-process");
  const auto real_summary = read_json(dir.path() / "real" / "sweep.json");
  const auto in_process_summary = read_json(dir.path() / "in-process" / "sweep.json");
  REQUIRE(real_cells.size() == real_summary["cells_total"].get<std::size_t>());
  REQUIRE(in_process_cells.size() == real_cells.size());
  std::map<std::string, int> verdicts;
  for (std::size_t i = 0; i < real_cells.size(); ++i) {
    INFO("cell " << i << ": real " << real_cells[i].dump() << "\nin-process " << in_process_cells[i].dump());
    CHECK(measured(in_process_cells[i]) == measured(real_cells[i]));
    CHECK(in_process_cells[i]["engine"] == "in-process");
    CHECK_FALSE(real_cells[i].contains("engine"));
    CHECK(real_cells[i]["verdict"] != "ERROR");
    ++verdicts[real_cells[i]["verdict"].get<std::string>()];
  }
  // The grids are not uniform: an equality of one verdict everywhere would prove little.
  CHECK(verdicts.size() >= 2);
  CHECK(in_process_summary["per_policy"] == real_summary["per_policy"]);

  // Every record and digest says which engine ran it.
  CHECK(real_summary["engine"] == "real");
  CHECK(real_summary["environment"]["engine"] == "real");
  CHECK(in_process_summary["engine"] == "in-process");
  CHECK(in_process_summary["environment"]["engine"] == "in-process");
  CHECK(in_process_summary["environment"]["postgresql"].is_null());
  CHECK(in_process_summary["cells_core_digest"] != real_summary["cells_core_digest"]);
  CHECK_THAT(in_process_summary["warnings"].dump(), ContainsSubstring("in-process engine"));
  CHECK(run_skewbench({"verify", (dir.path() / "in-process").string()}).exit_code == 0);
}

TEST_CASE("the in-process engine refuses an option that names a service, before anything starts") {
  TempDir dir("skewbench-engine-it");
  const auto out = dir.path() / "out";
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--database-url", "postgresql://127.0.0.1:1/none"},
                                                        {"--remote-url", "http://127.0.0.1:1"},
                                                        {"--remote-command", "sleep 600"},
                                                        {"--durability", "durable"}}) {
    INFO(flag);
    const auto r = sweep("018-offset-by-epsilon.json", out, {"--engine", "in-process", flag, value});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring("--engine in-process"));
    CHECK_THAT(r.output, ContainsSubstring(flag));
    CHECK_FALSE(fs::exists(out));
  }
  const auto unknown = sweep("018-offset-by-epsilon.json", out, {"--engine", "simulated"});
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.output, ContainsSubstring("--engine"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("a sweep's cells come from one engine: resume and merge refuse to mix them") {
  TempDir dir("skewbench-engine-it");
  const std::string grid = "019-rollback-by-gc.json";
  for (const auto* shard : {"1/2", "2/2"}) {
    const auto r =
        sweep(grid, dir.path() / (std::string("in-process-") + shard[0]), {"--engine", "in-process", "--shard", shard});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  const auto real = sweep(grid, dir.path() / "real-2", {"--shard", "2/2", "--jobs", "1"});
  INFO(real.output);
  REQUIRE(real.exit_code == 0);

  const auto mixed = run_skewbench({"merge", (dir.path() / "in-process-1").string(), (dir.path() / "real-2").string(),
                                    "--out", (dir.path() / "merged").string()});
  CHECK(mixed.exit_code == 2);
  CHECK_THAT(mixed.output, ContainsSubstring("one engine"));
  CHECK_FALSE(fs::exists(dir.path() / "merged" / "sweep.json"));
  const auto same = run_skewbench({"merge", (dir.path() / "in-process-1").string(),
                                   (dir.path() / "in-process-2").string(), "--out", (dir.path() / "merged").string()});
  INFO(same.output);
  CHECK(same.exit_code == 0);
  CHECK(read_json(dir.path() / "merged" / "sweep.json")["engine"] == "in-process");

  // Resuming the real shard on the in-process engine would mix the two in one cells.jsonl.
  const auto before = read_file(dir.path() / "real-2" / "cells.jsonl");
  const auto resumed = sweep(grid, dir.path() / "real-2", {"--shard", "2/2", "--engine", "in-process", "--resume"});
  CHECK(resumed.exit_code == 2);
  CHECK_THAT(resumed.output, ContainsSubstring("one engine"));
  CHECK(read_file(dir.path() / "real-2" / "cells.jsonl") == before);
}

TEST_CASE("compare refuses an in-process sweep against a real one unless asked") {
  TempDir dir("skewbench-engine-it");
  const std::string grid = "017-ttl-by-recovery-delay.json";
  const auto real = sweep(grid, dir.path() / "real", {"--jobs", "1"});
  const auto in_process = sweep(grid, dir.path() / "in-process", {"--engine", "in-process"});
  const auto in_process_again =
      sweep(grid, dir.path() / "in-process-again", {"--engine", "in-process", "--jobs", "1", "--format", "json"});
  INFO(real.output << in_process.output << in_process_again.output);
  REQUIRE(real.exit_code == 0);
  REQUIRE(in_process.exit_code == 0);
  REQUIRE(in_process_again.exit_code == 0);
  CHECK(json::parse(in_process_again.output.substr(in_process_again.output.find('{')))["engine"] == "in-process");
  const auto real_dir = (dir.path() / "real").string();
  const auto in_process_dir = (dir.path() / "in-process").string();

  const auto refused = run_skewbench({"compare", real_dir, in_process_dir});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, ContainsSubstring("in-process engine"));
  CHECK_THAT(refused.output, ContainsSubstring("--across-engines"));
  const auto reversed = run_skewbench({"compare", in_process_dir, real_dir});
  CHECK(reversed.exit_code == 2);

  const auto asked = run_skewbench({"compare", real_dir, in_process_dir, "--across-engines", "--format", "json"});
  INFO(asked.output);
  CHECK(asked.exit_code == 0);
  const auto comparison = json::parse(asked.output.substr(asked.output.find('{')));
  CHECK(comparison["counts"]["changed"] == 0);
  CHECK(comparison["counts"]["missing"] == 0);
  CHECK_THAT(comparison.dump(), ContainsSubstring("--across-engines"));

  // Two in-process sweeps compare as any two sweeps do, to the same digest.
  const auto same = run_skewbench({"compare", in_process_dir, (dir.path() / "in-process-again").string()});
  INFO(same.output);
  CHECK(same.exit_code == 0);
}

namespace {

// The series' scenarios the in-process engine runs: every one but those whose
// steps restart a process (#016's).
std::vector<std::string> in_process_scenarios() {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(source_path("scenarios"))) {
    const auto name = entry.path().filename().string();
    if (entry.is_regular_file() && entry.path().extension() == ".json" && !name.starts_with("016-")) {
      out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

CommandResult run_scenarios(const std::vector<std::string>& scenarios, const fs::path& out,
                            std::vector<std::string> extra) {
  std::vector<std::string> args = {"run", "--out", out.string(), "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), scenarios.begin(), scenarios.end());
  return run_skewbench(args);
}

}  // namespace

TEST_CASE("run --engine in-process measures what the real stack measures on the series' scenarios") {
  TempDir dir("skewbench-engine-it");
  const auto scenarios = in_process_scenarios();
  REQUIRE(scenarios.size() >= 10);
  const auto real = run_scenarios(scenarios, dir.path() / "real", {});
  const auto in_process = run_scenarios(scenarios, dir.path() / "in-process", {"--engine", "in-process"});
  INFO(real.output << in_process.output);
  REQUIRE(real.exit_code == 0);
  REQUIRE(in_process.exit_code == 0);

  const auto real_summary = read_json(dir.path() / "real" / "summary.json");
  const auto in_process_summary = read_json(dir.path() / "in-process" / "summary.json");
  const auto& real_rows = real_summary["scenarios"];
  const auto& in_process_rows = in_process_summary["scenarios"];
  REQUIRE(real_rows.size() == scenarios.size());
  REQUIRE(in_process_rows.size() == real_rows.size());
  std::map<std::string, int> verdicts;
  for (std::size_t i = 0; i < real_rows.size(); ++i) {
    auto real_row = real_rows[i];
    auto in_process_row = in_process_rows[i];
    INFO("real " << real_row.dump() << "\nin-process " << in_process_row.dump());
    CHECK(in_process_row["engine"] == "in-process");
    CHECK_FALSE(real_row.contains("engine"));
    // Its own core digest: the same measurements, marked in-process.
    CHECK(in_process_row["core_digest"] != real_row["core_digest"]);
    for (auto* row : {&real_row, &in_process_row}) {
      row->erase("core_digest");
      row->erase("error");
      row->erase("engine");
    }
    CHECK(in_process_row == real_row);
    ++verdicts[real_row["verdict"].get<std::string>()];
    const auto evidence =
        read_json(dir.path() / "in-process" / "scenarios" / (real_row["id"].get<std::string>() + ".json"));
    CHECK(evidence["engine"] == "in-process");
  }
  CHECK(verdicts.size() >= 3);
  CHECK(in_process_summary["environment"]["engine"] == "in-process");
  CHECK(in_process_summary["environment"]["postgresql"].is_null());
  CHECK(in_process_summary["core_digest"] != real_summary["core_digest"]);
  CHECK_THAT(read_file(dir.path() / "in-process" / "RESULT.md"), ContainsSubstring("engine: in-process"));

  // Published results are evidence of the real stack only.
  CHECK(fs::exists(dir.path() / "real" / "result.json"));
  CHECK(fs::exists(dir.path() / "real" / "result-019.json"));
  for (const auto& entry : fs::directory_iterator(dir.path() / "in-process")) {
    CHECK_FALSE(entry.path().filename().string().starts_with("result"));
  }
  const auto verified = run_skewbench({"verify", (dir.path() / "in-process").string()});
  INFO(verified.output);
  CHECK(verified.exit_code == 0);

  const auto refused = run_skewbench({"compare", (dir.path() / "real").string(), (dir.path() / "in-process").string()});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, ContainsSubstring("--across-engines"));
}

TEST_CASE("run --engine in-process refuses what it cannot model, naming it, before anything starts") {
  TempDir dir("skewbench-engine-it");
  const auto out = dir.path() / "out";
  const auto restart =
      run_scenarios({source_path("scenarios/016-safe-durable-restart.json")}, out, {"--engine", "in-process"});
  CHECK(restart.exit_code == 2);
  CHECK_THAT(restart.output, ContainsSubstring("016-safe-durable-restart.json"));
  CHECK_THAT(restart.output, ContainsSubstring("restart_remote"));
  CHECK_THAT(restart.output, ContainsSubstring("--engine in-process"));
  CHECK_FALSE(fs::exists(out));

  const auto real_clock = run_scenarios({source_path("scenarios/018-uncertainty.json")}, out,
                                        {"--engine", "in-process", "--clock-mode", "real"});
  CHECK(real_clock.exit_code == 2);
  CHECK_THAT(real_clock.output, ContainsSubstring("--clock-mode real"));
  CHECK_FALSE(fs::exists(out));

  const auto target = run_scenarios({source_path("scenarios/018-uncertainty.json")}, out,
                                    {"--engine", "in-process", "--target", "powertools-redis"});
  CHECK(target.exit_code == 2);
  CHECK_THAT(target.output, ContainsSubstring("--engine in-process"));
  CHECK_FALSE(fs::exists(out));
}
