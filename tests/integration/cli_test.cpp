// The skewbench executable's conventions, without any service: unknown
// commands, error lines, --help, validate, sweep --dry-run and compare's exit
// codes and formats.

#include <sstream>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/digest.hpp"
#include "evidence/evidence.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Every non-empty line of the output.
std::vector<std::string> lines_of(const std::string& output) {
  std::vector<std::string> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

fs::path crafted_run(const fs::path& dir, const std::vector<json>& row_list) {
  const json rows = row_list;  // a JSON array, even of one row
  fs::create_directories(dir);
  write_file_atomically(dir / "summary.json", json{{"schema_version", evidence::kSchemaVersion},
                                                   {"kind", "run_summary"},
                                                   {"scenarios", rows},
                                                   {"core_digest", evidence::run_core_digest(rows)}}
                                                  .dump());
  return dir;
}

json row(const std::string& id, const std::string& verdict) {
  return {{"id", id}, {"policy", "node_local"}, {"verdict", verdict}, {"core_digest", sha256_hex(id + verdict)}};
}

}  // namespace

TEST_CASE("an unknown command names itself and lists the commands, exit 2") {
  const auto r = run_skewbench({"rnu", "scenarios"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("skewbench: unknown command \"rnu\""));
  CHECK_THAT(r.output, ContainsSubstring("run, validate, sweep, merge, compare, report"));
}

TEST_CASE("every error line of a usage error starts with skewbench:") {
  const auto args = GENERATE(
      as<std::vector<std::string>>{}, std::vector<std::string>{"run"}, std::vector<std::string>{"compare", "only-one"},
      std::vector<std::string>{"sweep", "grid.json", "--jobs", "99"},
      std::vector<std::string>{"compare", "a", "b", "--format", "yaml"}, std::vector<std::string>{});
  const auto r = run_skewbench(args);
  CHECK(r.exit_code == 2);
  REQUIRE_FALSE(lines_of(r.output).empty());
  for (const auto& line : lines_of(r.output)) CHECK_THAT(line, StartsWith("skewbench: "));
}

TEST_CASE("each command's --help shows an example and the exit codes") {
  const auto command = GENERATE(as<std::string>{}, "run", "validate", "sweep", "merge", "compare", "report");
  const auto r = run_skewbench({command, "--help"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, ContainsSubstring("Example:\n  skewbench " + command));
  CHECK_THAT(r.output, ContainsSubstring("Exit codes:"));
}

TEST_CASE("run without paths where there is no scenarios folder says so in words") {
  TempDir dir("skewbench-cli");
  const auto r =
      run_command({"sh", "-c", "cd '" + dir.path().string() + "' && '" + SKEWBENCH_CLI_BIN + "' run --out out"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("no scenarios folder"));
  CHECK_THAT(r.output, !ContainsSubstring("$:"));
}

TEST_CASE("validate lists every broken file and exits 2") {
  TempDir dir("skewbench-cli");
  auto doc = read_json(source_path("scenarios/018-uncertainty.json"));
  for (int i = 0; i < 3; ++i) {
    doc["id"] = "bad-" + std::to_string(i);
    doc["policy"]["max_clock_error_s"] = -1;
    write_file_atomically(dir.path() / ("bad-" + std::to_string(i) + ".json"), doc.dump());
  }
  const auto r = run_skewbench({"validate", dir.path().string()});
  CHECK(r.exit_code == 2);
  for (int i = 0; i < 3; ++i) CHECK_THAT(r.output, ContainsSubstring("bad-" + std::to_string(i) + ".json"));
  CHECK_THAT(r.output, ContainsSubstring("3 of 3 files invalid"));
}

TEST_CASE(
    "a report_as that names no published section is exit 2 from validate and run, naming the file, before any service "
    "starts") {
  TempDir dir("skewbench-cli");
  auto doc = read_json(source_path("scenarios/018-uncertainty.json"));
  doc["report_as"] = "018:no_such_section";
  const auto file = dir.path() / "misnamed.json";
  write_file_atomically(file, doc.dump());
  for (const auto& command : {std::string("validate"), std::string("run")}) {
    INFO(command);
    const auto r = command == "run" ? run_skewbench({"run", file.string(), "--out", (dir.path() / "out").string()})
                                    : run_skewbench({"validate", file.string()});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring("misnamed.json"));
    CHECK_THAT(r.output, ContainsSubstring("$.report_as"));
    CHECK_THAT(r.output, ContainsSubstring("\"018:no_such_section\" is not one of: 015:unsafe"));
  }
  CHECK_FALSE(fs::exists(dir.path() / "out"));
}

TEST_CASE("validate accepts the shipped grids and scenarios") {
  const auto r = run_skewbench({"validate", source_path("scenarios"), source_path("scenarios/sweeps")});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, ContainsSubstring("grid 018-offset-by-epsilon"));
}

TEST_CASE("sweep --dry-run prints the cells per policy and exits 0 without starting anything") {
  const auto grid = source_path("scenarios/sweeps/018-offset-by-epsilon.json");
  auto r = run_skewbench({"sweep", grid, "--dry-run"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, ContainsSubstring("uncertainty"));
  CHECK_THAT(r.output, ContainsSubstring("760 cells"));
  r = run_skewbench({"sweep", grid, "--dry-run", "--shard", "999/999", "--format", "json"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, ContainsSubstring("holds no cell"));
}

TEST_CASE("compare exits 1 when the candidate lacks a scenario, and prints JSON on request") {
  TempDir dir("skewbench-cli");
  const auto base = crafted_run(dir.path() / "base", {row("a", "SAFE"), row("b", "HELD")});
  const auto fewer = crafted_run(dir.path() / "fewer", {row("a", "SAFE")});
  auto r = run_skewbench({"compare", base.string(), fewer.string()});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, ContainsSubstring("MISSING"));
  const auto c = run_command({SKEWBENCH_CLI_BIN, "compare", base.string(), fewer.string(), "--format", "json"});
  CHECK(c.exit_code == 1);
  CHECK_THAT(c.output, ContainsSubstring("\"MISSING\""));
}

TEST_CASE("compare exits 2 naming the file when a summary.json no longer matches its rows") {
  TempDir dir("skewbench-cli");
  const auto base = crafted_run(dir.path() / "base", {row("a", "SAFE")});
  const auto edited = crafted_run(dir.path() / "edited", {row("a", "CONFLICT")});
  auto summary = read_json(edited / "summary.json");
  summary["scenarios"][0]["verdict"] = "SAFE";  // hides the CONFLICT
  summary["scenarios"][0]["core_digest"] = sha256_hex("aSAFE");
  write_file_atomically(edited / "summary.json", summary.dump());
  const auto r = run_skewbench({"compare", base.string(), edited.string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring((edited / "summary.json").string()));
  CHECK_THAT(r.output, StartsWith("skewbench: cannot compare: "));
}
