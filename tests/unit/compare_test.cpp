// compare's engine on crafted run and sweep directories: MISSING rows, core
// digests recomputed from the rows, errors that name the side and the axis,
// rows that show only what changed, and the exit code of each outcome.

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/digest.hpp"
#include "common/files.hpp"
#include "compare/compare.hpp"
#include "evidence/cell_core.hpp"
#include "evidence/evidence.hpp"
#include "scenario/verdict.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json run_row(const std::string& id, const std::string& verdict, int effects = 1) {
  return {{"id", id},
          {"policy", "node_local"},
          {"verdict", verdict},
          {"effect_count", effects},
          {"decision", "REPLAY_SAME_KEY"},
          {"pass", true},
          {"core_digest", sha256_hex(id + verdict + std::to_string(effects))}};
}

// A run directory whose summary.json is what write_run_artifacts would write.
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

json axis(const std::string& name, const json& values) {
  return {{"name", name}, {"pointer", "/nodes/1/" + name}, {"values", values}, {"policies", json::array()}};
}

struct CraftedCell {
  std::string policy;
  json parameters;
  std::string verdict;
};

// A sweep directory with a consistent sweep.json and cells.jsonl.
fs::path crafted_sweep(const fs::path& dir, const std::vector<CraftedCell>& cells,
                       const json& axes = json::array({axis("x", {0, 1, 2})}), const json& shard = nullptr) {
  fs::create_directories(dir);
  std::string lines;
  Sha256 digest;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const json record = {{"cell", i},
                         {"policy", cells[i].policy},
                         {"policy_name", "node_local"},
                         {"parameters", cells[i].parameters},
                         {"decision", "REPLAY_SAME_KEY"},
                         {"effect_count", cells[i].verdict == "CONFLICT" ? 2 : 1},
                         {"verdict", cells[i].verdict},
                         {"duration_us", 10 + i}};
    lines += record.dump() + "\n";
    digest.update(evidence::cell_core_line(record) + "\n");
  }
  write_file_atomically(dir / "cells.jsonl", lines);
  const json grid = {{"policies", {{{"label", "p"}, {"policy", {{"name", "node_local"}}}}}},
                     {"axes", axes},
                     {"identity_digest", json_digest(axes)}};
  write_file_atomically(dir / "sweep.json", json{{"schema_version", evidence::kSchemaVersion},
                                                 {"kind", "sweep_summary"},
                                                 {"grid", grid},
                                                 {"base_scenario_digest", "b"},
                                                 {"shard", shard},
                                                 {"complete", true},
                                                 {"cells_core_digest", digest.hex_digest()}}
                                                .dump());
  return dir;
}

std::vector<CraftedCell> cells(const std::vector<std::string>& verdicts) {
  std::vector<CraftedCell> out;
  for (std::size_t i = 0; i < verdicts.size(); ++i) out.push_back({"p", {{"x", i}}, verdicts[i]});
  return out;
}

compare::Comparison compare_dirs(const fs::path& base, const fs::path& candidate) {
  return compare::compare_dirs(base, candidate, {});
}

}  // namespace

TEST_CASE("compare of identical runs exits 0 and says the core digests are equal") {
  TempDir dir("skewbench-compare");
  const std::vector<json> rows = {run_row("a", "SAFE"), run_row("b", "HELD")};
  const auto c = compare_dirs(crafted_run(dir.path() / "base", rows), crafted_run(dir.path() / "same", rows));
  CHECK(c.exit_code() == 0);
  CHECK(c.core_digests_equal());
  CHECK(c.rows.empty());
  CHECK_THAT(compare::to_text(c), ContainsSubstring("core digests: equal"));
}

TEST_CASE("a candidate run that lacks a scenario of the base is a MISSING row and exit 1") {
  TempDir dir("skewbench-compare");
  const auto base = crafted_run(dir.path() / "base", {run_row("a", "SAFE"), run_row("b", "HELD")});
  const auto fewer = crafted_run(dir.path() / "fewer", {run_row("a", "SAFE")});
  const auto c = compare_dirs(base, fewer);
  CHECK(c.exit_code() == 1);
  CHECK(c.missing == 1);
  REQUIRE(c.rows.size() == 1);
  CHECK(c.rows[0].status == compare::RowStatus::Missing);
  CHECK(c.rows[0].key == "b");
  CHECK_FALSE(c.core_digests_equal());
  CHECK_THAT(compare::to_text(c), ContainsSubstring("MISSING"));
  CHECK_THAT(compare::to_text(c), ContainsSubstring("core digests: differ"));
}

TEST_CASE("a candidate sweep that lacks cells of the base has MISSING rows naming their coordinates and exit 1") {
  TempDir dir("skewbench-compare");
  const auto base = crafted_sweep(dir.path() / "base", cells({"SAFE", "HELD", "SAFE"}));
  const auto fewer = crafted_sweep(dir.path() / "fewer", cells({"SAFE", "HELD"}), json::array({axis("x", {0, 1})}));
  const auto c = compare_dirs(base, fewer);
  CHECK(c.exit_code() == 1);
  CHECK(c.missing == 1);
  REQUIRE(c.rows.size() == 1);
  CHECK(c.rows[0].status == compare::RowStatus::Missing);
  CHECK(c.rows[0].key == "p x=2");
  CHECK(c.rows[0].coordinates == json{{"policy", "p"}, {"x", 2}});
  CHECK_FALSE(c.notes.empty());  // the axis values differ: said, not refused
}

TEST_CASE("a summary.json whose core digest does not match its rows cannot be compared, naming the file") {
  TempDir dir("skewbench-compare");
  const auto base = crafted_run(dir.path() / "base", {run_row("a", "SAFE")});
  const auto cand = crafted_run(dir.path() / "cand", {run_row("a", "SAFE")});
  const auto side = GENERATE(as<std::string>{}, "base", "cand");
  const auto edited = dir.path() / side / "summary.json";
  auto summary = json::parse(read_file(edited));
  summary["scenarios"][0]["core_digest"] = sha256_hex("edited");  // e.g. a row replaced by hand
  write_file_atomically(edited, summary.dump());
  try {
    compare_dirs(base, cand);
    FAIL("an edited summary.json was accepted");
  } catch (const compare::CannotCompare& e) {
    CHECK_THAT(e.what(), ContainsSubstring(edited.string()));
    CHECK_THAT(e.what(), ContainsSubstring("does not match its own rows"));
  }
}

TEST_CASE("a cells.jsonl edited after its sweep.json was written cannot be compared, naming the file") {
  TempDir dir("skewbench-compare");
  const auto base = crafted_sweep(dir.path() / "base", cells({"SAFE", "CONFLICT"}));
  const auto cand = crafted_sweep(dir.path() / "cand", cells({"SAFE", "CONFLICT"}));
  // CONFLICT rewritten as SAFE: the gate must not believe it.
  auto lines = read_file(cand / "cells.jsonl");
  lines.replace(lines.find("CONFLICT"), 8, "SAFE");
  write_file_atomically(cand / "cells.jsonl", lines);
  try {
    compare_dirs(base, cand);
    FAIL("an edited cells.jsonl was accepted");
  } catch (const compare::CannotCompare& e) {
    CHECK_THAT(e.what(), ContainsSubstring((cand / "cells.jsonl").string()));
    CHECK_THAT(e.what(), ContainsSubstring("candidate"));
  }
}

TEST_CASE("cannot-compare errors name the side and what differs") {
  TempDir dir("skewbench-compare");
  const auto base = crafted_sweep(dir.path() / "base", cells({"SAFE"}));
  struct Case {
    std::string name;
    json axes;
    json shard;
    std::string expected;
  };
  auto moved = axis("x", {0, 1, 2});
  moved["pointer"] = "/nodes/0/x";
  const auto c = GENERATE_COPY(values<Case>({
      {"another pointer", json::array({moved}), nullptr, "axis \"x\" has pointer"},
      {"an axis only in the candidate", json::array({axis("x", {0, 1, 2}), axis("y", {0})}), nullptr,
       "axis \"y\" is in the candidate"},
      {"an axis only in the base", json::array({axis("z", {0})}), nullptr, "axis \"x\" is in the base"},
      {"a shard", json::array({axis("x", {0, 1, 2})}), json{{"index", 1}, {"count", 2}}, "the candidate ("},
  }));
  INFO(c.name);
  const auto cand = crafted_sweep(dir.path() / "cand", cells({"SAFE"}), c.axes, c.shard);
  try {
    compare_dirs(base, cand);
    FAIL("compared");
  } catch (const compare::CannotCompare& e) {
    CHECK_THAT(e.what(), ContainsSubstring(c.expected));
    CHECK_THAT(e.what(), ContainsSubstring(cand.string()));
  }
}

TEST_CASE("a run compared with a sweep cannot be compared, and the message says which is which") {
  TempDir dir("skewbench-compare");
  const auto run = crafted_run(dir.path() / "run", {run_row("a", "SAFE")});
  const auto swept = crafted_sweep(dir.path() / "sweep", cells({"SAFE"}));
  try {
    compare_dirs(run, swept);
    FAIL("compared");
  } catch (const compare::CannotCompare& e) {
    CHECK_THAT(e.what(), ContainsSubstring("the base (" + run.string() + ") is a run"));
    CHECK_THAT(e.what(), ContainsSubstring("sweep"));
  }
}

TEST_CASE("a changed row lists only the fields that changed") {
  TempDir dir("skewbench-compare");
  const auto base = crafted_run(dir.path() / "base", {run_row("a", "SAFE", 1), run_row("b", "HELD", 1)});
  const auto cand = crafted_run(dir.path() / "cand", {run_row("a", "CONFLICT", 2), run_row("b", "HELD", 1)});
  const auto c = compare_dirs(base, cand);
  REQUIRE(c.rows.size() == 1);
  CHECK(c.rows[0].changed_fields == std::vector<std::string>{"verdict", "effect_count"});
  CHECK(c.rows[0].new_conflict);
  const auto text = compare::to_text(c);
  CHECK_THAT(text, ContainsSubstring("verdict SAFE -> CONFLICT, effect_count 1 -> 2"));
  CHECK_THAT(text, !ContainsSubstring("decision"));
}

TEST_CASE("compare's exit code says what the candidate did") {
  TempDir dir("skewbench-compare");
  struct Case {
    std::vector<std::string> base;
    std::vector<std::string> candidate;
    int exit_code;
  };
  const auto c = GENERATE(values<Case>({
      {{"SAFE", "HELD"}, {"SAFE", "HELD"}, 0},
      {{"SAFE", "HELD"}, {"SAFE", "CONFLICT"}, 1},  // a new CONFLICT
      {{"SAFE", "CONFLICT"}, {"SAFE", "HELD"}, 0},  // a CONFLICT removed
      {{"SAFE", "HELD"}, {"SAFE", "ERROR"}, 3},     // cannot vouch for safety
      {{"SAFE", "HELD"}, {"SAFE"}, 1},              // a cell missing
  }));
  const auto base = crafted_sweep(dir.path() / "base", cells(c.base));
  json candidate_axes = json::array({axis("x", {0, 1, 2})});
  const auto cand = crafted_sweep(dir.path() / "cand", cells(c.candidate), candidate_axes);
  CHECK(compare_dirs(base, cand).exit_code() == c.exit_code);
}

TEST_CASE("compare's JSON holds the rows, the counts, the digests and the exit code") {
  TempDir dir("skewbench-compare");
  const auto base = crafted_run(dir.path() / "base", {run_row("a", "SAFE"), run_row("b", "HELD")});
  const auto cand = crafted_run(dir.path() / "cand", {run_row("a", "CONFLICT", 2)});
  const auto j = compare::to_json(compare_dirs(base, cand));
  CHECK(j["exit_code"] == 1);
  CHECK(j["core_digests_equal"] == false);
  CHECK(j["counts"]["missing"] == 1);
  CHECK(j["counts"]["new_conflicts"] == 1);
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["rows"][0]["status"] == "CHANGED");
  CHECK(j["rows"][1]["status"] == "MISSING");
  CHECK(j["rows"][1]["candidate"].is_null());
}

TEST_CASE("compare's Markdown keeps a table row per changed scenario") {
  TempDir dir("skewbench-compare");
  const auto base = crafted_run(dir.path() / "base", {run_row("a", "SAFE")});
  const auto cand = crafted_run(dir.path() / "cand", {run_row("a", "CONFLICT", 2)});
  const auto md = compare::to_markdown(compare_dirs(base, cand));
  CHECK_THAT(md,
             ContainsSubstring("| CHANGED | a | verdict SAFE -> CONFLICT, effect_count 1 -> 2 | **NEW CONFLICT** |"));
  // The totals: one column per verdict, in the order the verdicts are listed.
  CHECK_THAT(md, ContainsSubstring("| policy | SAFE | CONFLICT | HELD | ERROR |\n|---|---|---|---|---|\n"));
  CHECK(scenario::verdict_words() == "SAFE, CONFLICT, HELD or ERROR");
}

TEST_CASE("a run row edited by hand in any field compare reads cannot be compared: the run digest binds them") {
  // Before, the run digest covered only each row's id and core digest, so a
  // CONFLICT turned SAFE (with its effect count) read as "no new CONFLICT".
  TempDir dir("skewbench-compare");
  auto conflict = run_row("a", "CONFLICT", 2);
  conflict["temporal_state"] = "EXPIRED";
  conflict["post_requests"] = 2;
  conflict["final_status"] = "committed";
  const auto base = crafted_run(dir.path() / "base", {conflict});
  const auto cand = crafted_run(dir.path() / "cand", {conflict});
  const auto [field, edited_value] = GENERATE(table<std::string, json>({{"verdict", "SAFE"},
                                                                        {"effect_count", 1},
                                                                        {"decision", "RECONCILE_FIRST"},
                                                                        {"temporal_state", "ACTIVE"},
                                                                        {"post_requests", 1},
                                                                        {"final_status", "conflict"},
                                                                        {"policy", "uncertainty"},
                                                                        {"pass", false}}));
  INFO(field);
  const auto path = cand / "summary.json";
  auto summary = json::parse(read_file(path));
  summary["scenarios"][0][field] = edited_value;
  write_file_atomically(path, summary.dump());
  try {
    compare_dirs(base, cand);
    FAIL("an edited row was compared");
  } catch (const compare::CannotCompare& e) {
    CHECK_THAT(e.what(), ContainsSubstring("does not match its own rows"));
  }
}

TEST_CASE("a run row's error text is not in the run digest: it names ports and ids that differ between runs") {
  TempDir dir("skewbench-compare");
  auto errored = run_row("a", "ERROR", 0);
  errored["error"] = "cannot reach 127.0.0.1:40001";
  const json rows = json::array({errored});
  auto other = errored;
  other["error"] = "cannot reach 127.0.0.1:40002";
  CHECK(evidence::run_core_digest(rows) == evidence::run_core_digest(json::array({other})));
}
