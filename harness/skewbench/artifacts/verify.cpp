#include "artifacts/verify.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "artifacts/manifest.hpp"
#include "artifacts/out_folder.hpp"
#include "artifacts/schema_check.hpp"
#include "common/digest.hpp"
#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "evidence/cell_core.hpp"
#include "evidence/count_history.hpp"
#include "evidence/evidence.hpp"
#include "published/published.hpp"
#include "scenario/scenario.hpp"

namespace skewbench::artifacts {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

class Checker {
 public:
  explicit Checker(const fs::path& dir) : dir_(dir) {}

  void problem(const std::string& file, const std::string& what) { result_.problems.push_back(file + ": " + what); }

  // Parses a file and checks it against a schema; nullopt when either fails.
  std::optional<json> document(const std::string& file, const std::string& schema) {
    if (unreadable_.contains(file)) return std::nullopt;  // named once, by check_manifest
    json doc;
    try {
      doc = parse_bounded_json(read_file(dir_ / file));
    } catch (const InputFileError& e) {
      problem(file, e.what());
      return std::nullopt;
    } catch (const std::exception& e) {
      problem(file, std::string("not JSON: ") + e.what());
      return std::nullopt;
    }
    const auto problems = schema_problems(schema, doc);
    for (const auto& p : problems) problem(file, p + " (schemas/" + schema + ".schema.json)");
    if (!problems.empty()) return std::nullopt;
    return doc;
  }

  bool check_manifest();
  void check_run();
  // A scenario's file whose exchanges break the rule for counts
  // (evidence/count_history.hpp) may give no verdict: a run gives it ERROR.
  void hold_counts(const std::string& file, const json& evidence);
  void check_row(std::size_t i, const json& row, std::map<std::string, json>& row_by_id);
  void check_sweep();
  void check_explore();
  // explore.json's counts against each other and its findings.
  void check_explore_counts(const json& summary);
  // A finding's evidence file: its schema, counts and core digest, and that
  // it is the evidence of the scenario `scenario` (null: unread).
  void check_finding_evidence(const std::string& file, const json& scenario);
  FolderKind kind() const { return manifest_.kind; }
  Verification take() { return std::move(result_); }

 private:
  fs::path dir_;
  std::set<std::string> unreadable_;  // listed files that are not regular files
  Manifest manifest_;
  Verification result_;
};

bool Checker::check_manifest() {
  const auto doc = document(kManifestFile, "manifest");
  if (!doc) return false;
  try {
    manifest_ = *read_manifest(dir_);
  } catch (const ManifestError& e) {
    problem(kManifestFile, e.what());
    return false;
  }
  result_.contents = to_string(manifest_.kind);
  result_.files = manifest_.files.size();
  for (const auto& f : manifest_.files) {
    std::error_code ec;
    const auto path = dir_ / f.path;
    if (const auto what = input_file_problem(path)) {
      // Never opened: a FIFO would hang the check, a link carry it elsewhere.
      unreadable_.insert(f.path);
      problem(f.path, *what == "does not exist" ? "listed in the manifest but missing" : *what);
    } else if (fs::file_size(path, ec) != f.bytes) {
      problem(f.path, "has " + std::to_string(fs::file_size(path, ec)) + " bytes, the manifest says " +
                          std::to_string(f.bytes) + ": the file changed after skewbench wrote it");
    } else if (file_sha256(path) != f.sha256) {
      problem(f.path, "SHA-256 differs from the manifest's: the file changed after skewbench wrote it");
    }
  }
  for (const auto& f : evidence_files_under(dir_)) {
    if (f != kManifestFile && !manifest_.lists(f)) problem(f, "not listed in the manifest");
  }
  return true;
}

void Checker::hold_counts(const std::string& file, const json& evidence) {
  const auto verdict = evidence.value("verdict", json(nullptr));
  if (verdict == "ERROR") return;
  std::optional<std::string> why;
  try {
    why = evidence::count_contradiction_of_evidence(evidence);
  } catch (const std::exception& e) {
    problem(file, std::string("its exchanges cannot be read back: ") + e.what());
    return;
  }
  if (why) {
    problem(file, "gives verdict " + verdict.dump() + ", but a count in it cannot be true (docs/evidence.md, " +
                      "\"Counts a service reports\"): " + *why);
  }
}

void Checker::check_run() {
  const auto summary = document("summary.json", "summary");
  std::map<std::string, json> row_by_id;  // what each scenario file implies
  for (const auto& f : manifest_.files) {
    if (f.path.rfind("scenarios/", 0) != 0) continue;
    const auto evidence = document(f.path, "scenario-evidence");
    if (!evidence) continue;
    json implied;
    try {
      implied = evidence::row_of_evidence(*evidence);
    } catch (const std::exception& e) {
      problem(f.path, std::string("cannot be read back as a scenario's evidence: ") + e.what());
      continue;
    }
    hold_counts(f.path, *evidence);
    // json against json: nlohmann 3.11 in C++20 has no std::string == json.
    if ((*evidence)["core_digest"] != implied["core_digest"]) {
      problem(f.path, "core_digest " + (*evidence)["core_digest"].dump() + " differs from the recomputed " +
                          implied["core_digest"].get<std::string>());
    }
    row_by_id[(*evidence)["scenario_id"].get<std::string>()] = std::move(implied);
  }
  for (const auto* benchmark : published::series_benchmarks()) {
    if (!manifest_.lists(benchmark->result_file) || unreadable_.contains(benchmark->result_file)) continue;
    try {
      if (!json::accept(read_file(dir_ / benchmark->result_file))) problem(benchmark->result_file, "not JSON");
    } catch (const std::exception& e) {
      problem(benchmark->result_file, e.what());
    }
  }
  if (!summary) return;
  for (std::size_t i = 0; i < (*summary)["scenarios"].size(); ++i) check_row(i, (*summary)["scenarios"][i], row_by_id);
  for (const auto& [id, _] : row_by_id) problem("scenarios/" + id + ".json", "has no row in summary.json");
  result_.digest = evidence::run_core_digest((*summary)["scenarios"]);
  if ((*summary)["core_digest"] != result_.digest) {
    problem("summary.json", "$.core_digest differs from the recomputed " + result_.digest);
  }
}

// Row i of summary.json must say what its scenario file says, field by field:
// a row edited by hand (and the manifest rewritten to match) is named here.
void Checker::check_row(std::size_t i, const json& row, std::map<std::string, json>& row_by_id) {
  const auto id = row["id"].get<std::string>();
  const auto at = "$.scenarios[" + std::to_string(i) + "]";
  const auto it = row_by_id.find(id);
  if (it == row_by_id.end()) {
    problem("summary.json", at + ": no valid scenarios/" + id + ".json beside it");
    return;
  }
  for (const auto& [field, implied] : it->second.items()) {
    const auto stated = row.value(field, json(nullptr));
    if (stated != implied) {
      problem("summary.json",
              at + "." + field + " is " + stated.dump() + ", but scenarios/" + id + ".json gives " + implied.dump());
    }
  }
  row_by_id.erase(it);
}

void Checker::check_sweep() {
  const auto summary = document("sweep.json", "sweep");
  if (unreadable_.contains("cells.jsonl")) return;
  std::ifstream in;
  try {
    in = open_input_file(dir_ / "cells.jsonl");
  } catch (const std::exception& e) {
    problem("cells.jsonl", e.what());
    return;
  }
  Sha256 digest;
  evidence::VerdictTally tally;
  std::uint64_t lines = 0;
  std::int64_t last_cell = -1;
  std::size_t line_problems = 0;
  auto line_problem = [&](std::uint64_t number, const std::string& what) {
    if (++line_problems <= 20) problem("cells.jsonl:" + std::to_string(number), what);
  };
  std::string line;
  while (std::getline(in, line)) {
    ++lines;
    json record;
    try {
      record = parse_bounded_json(line);
    } catch (const std::exception& e) {
      line_problem(lines, std::string("not JSON: ") + e.what());
      continue;
    }
    const auto problems = schema_problems("cell", record);
    for (const auto& p : problems) line_problem(lines, p + " (schemas/cell.schema.json)");
    if (!problems.empty()) continue;
    const auto cell = record["cell"].get<std::int64_t>();
    if (cell <= last_cell) line_problem(lines, "cell " + std::to_string(cell) + " is out of order");
    last_cell = cell;
    digest.update(evidence::cell_core_line(record));
    digest.update("\n");
    tally.add(record);
  }
  if (line_problems > 20) problem("cells.jsonl", std::to_string(line_problems - 20) + " more problems not shown");
  result_.digest = digest.hex_digest();
  if (!summary) return;
  const auto& s = *summary;
  auto mismatch = [&](const std::string& field, const json& stated, const json& counted) {
    if (stated != counted) {
      problem("sweep.json", "$." + field + " is " + stated.dump() + ", cells.jsonl gives " + counted.dump());
    }
  };
  mismatch("cells_done", s["cells_done"], lines);
  mismatch("cells_core_digest", s["cells_core_digest"], result_.digest);
  mismatch("per_policy", s["per_policy"], tally.to_json());
  mismatch("errors", s["errors"], tally.count(scenario::Verdict::Error));
  mismatch("complete", s["complete"], s["cells_done"] == s["cells_planned"]);
  if (last_cell >= s["cells_total"].get<std::int64_t>()) {
    problem("cells.jsonl", "cell " + std::to_string(last_cell) + " is beyond the grid's " + s["cells_total"].dump());
  }
}

void Checker::check_finding_evidence(const std::string& file, const json& scenario) {
  const auto evidence = document(file, "scenario-evidence");
  if (!evidence) return;
  json implied;
  try {
    implied = evidence::row_of_evidence(*evidence);
  } catch (const std::exception& e) {
    problem(file, std::string("cannot be read back as a scenario's evidence: ") + e.what());
    return;
  }
  hold_counts(file, *evidence);
  if ((*evidence)["core_digest"] != implied["core_digest"]) {
    problem(file, "core_digest " + (*evidence)["core_digest"].dump() + " differs from the recomputed " +
                      implied["core_digest"].get<std::string>());
  }
  if (!scenario.is_null() && (*evidence)["input"] != scenario) {
    problem(file, "$.input is not the scenario.json beside it");
  }
}

// explore.json and each finding it names: its minimal scenario (a scenario
// file), its evidence and, when it was run on the real stack, that evidence;
// nothing under findings/ that no finding names.
void Checker::check_explore_counts(const json& summary) {
  const auto tried = summary["scenarios_tried"].get<std::uint64_t>();
  const auto breaking = summary["scenarios_breaking"].get<std::uint64_t>();
  std::uint64_t verdicts = 0;
  for (const auto& [verdict, count] : summary["verdicts"].items()) verdicts += count.get<std::uint64_t>();
  if (verdicts != tried) {
    problem("explore.json", "$.verdicts count " + std::to_string(verdicts) + " scenarios, $.scenarios_tried says " +
                                std::to_string(tried));
  }
  std::uint64_t occurrences = 0;
  for (const auto& finding : summary["findings"]) {
    occurrences += finding["occurrences"].get<std::uint64_t>();
    if (finding["found_at_scenario"].get<std::uint64_t>() > tried) {
      problem("explore.json", "a finding was found at scenario " + finding["found_at_scenario"].dump() + " of " +
                                  std::to_string(tried) + " tried");
    }
  }
  if (occurrences != breaking) {
    problem("explore.json", "its findings count " + std::to_string(occurrences) +
                                " breaking scenarios, $.scenarios_breaking says " + std::to_string(breaking));
  }
  // Every CONFLICT breaks at_most_one_effect where it holds for every policy
  // the bounds draw from.
  const auto& bounds = summary["bounds"];
  const auto covers_every_policy = [&](const json& invariant) {
    const auto& held = invariant["policies"];
    return held.empty() || std::all_of(bounds["policies"].begin(), bounds["policies"].end(), [&](const json& policy) {
             return std::find(held.begin(), held.end(), policy) != held.end();
           });
  };
  const bool every_conflict_breaks =
      std::any_of(bounds["invariants"].begin(), bounds["invariants"].end(), [&](const json& invariant) {
        return invariant["check"] == "at_most_one_effect" && covers_every_policy(invariant);
      });
  const auto conflicts = summary["verdicts"].value("CONFLICT", std::uint64_t{0});
  if (every_conflict_breaks && conflicts > breaking) {
    problem("explore.json", "$.verdicts counts " + std::to_string(conflicts) +
                                " CONFLICT, each a breach of at_most_one_effect, but $.scenarios_breaking says " +
                                std::to_string(breaking));
  }
}

void Checker::check_explore() {
  const auto summary = document("explore.json", "explore");
  if (!summary) return;
  check_explore_counts(*summary);
  std::set<std::string> named;
  const auto& findings = (*summary)["findings"];
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const auto& finding = findings[i];
    const auto at = "$.findings[" + std::to_string(i) + "]";
    const auto scenario_file = finding["scenario_file"].get<std::string>();
    const auto evidence_file = finding["evidence_file"].get<std::string>();
    std::vector<std::string> files = {scenario_file, evidence_file};
    const auto real_file = (fs::path(scenario_file).parent_path() / "real-stack-evidence.json").generic_string();
    if (!finding["confirmed_on_real_stack"].is_null()) files.push_back(real_file);
    bool listed = true;
    for (const auto& file : files) {
      named.insert(file);
      if (!manifest_.lists(file)) {
        problem("explore.json", at + " names " + file + ", which the manifest does not list");
        listed = false;
      }
    }
    if (!listed) continue;
    json scenario;
    try {
      scenario = parse_bounded_json(read_file(dir_ / scenario_file));
      const auto parsed = scenario::parse_scenario(scenario, scenario_file);
      if (parsed.steps.size() != finding["minimal_steps"].get<std::size_t>()) {
        problem(scenario_file, "has " + std::to_string(parsed.steps.size()) + " steps, explore.json " + at +
                                   ".minimal_steps says " + finding["minimal_steps"].dump());
      }
    } catch (const scenario::ScenarioFileError& e) {
      problem(scenario_file, std::string("not a scenario: ") + e.what());
      scenario = nullptr;
    } catch (const InputError& e) {
      problem(scenario_file, "not a scenario: " + e.json_path() + ": " + e.message());
      scenario = nullptr;
    } catch (const std::exception& e) {
      problem(scenario_file, e.what());
      scenario = nullptr;
    }
    check_finding_evidence(evidence_file, scenario);
    if (files.size() == 3) check_finding_evidence(real_file, scenario);
  }
  for (const auto& f : manifest_.files) {
    if (f.path.rfind("findings/", 0) == 0 && !named.contains(f.path)) {
      problem(f.path, "no finding of explore.json names it");
    }
  }
  result_.digest = (*summary)["scenarios_core_digest"].get<std::string>();
}

}  // namespace

Verification verify_folder(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::invalid_argument(dir.string() + " is not a folder");
  Checker checker(dir);
  if (!fs::exists(dir / kManifestFile, ec)) {
    checker.problem(kManifestFile, "missing: this folder holds no evidence skewbench finished writing");
    return checker.take();
  }
  if (checker.check_manifest()) {
    switch (checker.kind()) {
      case FolderKind::kRun:
        checker.check_run();
        break;
      case FolderKind::kSweep:
        checker.check_sweep();
        break;
      case FolderKind::kExplore:
        checker.check_explore();
        break;
    }
  }
  return checker.take();
}

}  // namespace skewbench::artifacts
