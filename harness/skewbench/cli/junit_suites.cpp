#include "cli/junit_suites.hpp"

#include <skewbench/build_info.hpp>

namespace skewbench::cli {
namespace {

using artifacts::CaseResult;
using artifacts::JunitCase;
using artifacts::JunitSuite;
using nlohmann::json;

std::string status_word(compare::RowStatus status) {
  switch (status) {
    case compare::RowStatus::Changed:
      return "changed";
    case compare::RowStatus::Missing:
      return "missing";
    case compare::RowStatus::Added:
      return "added";
  }
  return "?";
}

// The compared fields of one side, as "verdict=SAFE effect_count=1 ...".
std::string fields_text(const json& side) {
  if (!side.is_object()) return "(absent)";
  std::string out;
  for (const char* field : compare::kComparedFields) {
    if (!side.contains(field)) continue;
    out += (out.empty() ? "" : " ") + std::string(field) + "=" +
           (side[field].is_string() ? side[field].get<std::string>() : side[field].dump());
  }
  return out;
}

JunitCase row_case(const compare::Comparison& comparison, const compare::Row& row) {
  JunitCase c{.classname = std::string("compare ") + comparison.unit(), .name = row.key};
  const auto candidate_verdict = row.candidate.is_object() ? row.candidate.value("verdict", "") : std::string();
  c.text = "base: " + fields_text(row.base) + "\ncandidate: " + fields_text(row.candidate);
  if (row.new_conflict) {
    c.result = CaseResult::failure;
    c.message = "new CONFLICT: " + fields_text(row.candidate) + " (base: " + fields_text(row.base) + ")";
  } else if (row.status == compare::RowStatus::Missing) {
    c.result = CaseResult::failure;
    c.message = std::string("MISSING: the base has this ") + comparison.unit() + ", the candidate does not";
  } else if (candidate_verdict == "ERROR") {
    c.result = CaseResult::error;
    c.message = "ERROR in the candidate: it cannot vouch for safety";
  } else {
    c.message = status_word(row.status);
  }
  return c;
}

}  // namespace

std::vector<JunitSuite> compare_suites(const compare::Comparison& comparison) {
  JunitSuite suite{
      .name = "skewbench compare " + comparison.base.dir.string() + " " + comparison.candidate.dir.string(),
      .cases = {},
      .properties = {{"base_core_digest", comparison.base.core_digest},
                     {"candidate_core_digest", comparison.candidate.core_digest},
                     {"harness_version", build_info::kVersion}},
      .time_s = 0};
  bool error_row = false;
  for (const auto& row : comparison.rows) {
    suite.cases.push_back(row_case(comparison, row));
    error_row = error_row || suite.cases.back().result == CaseResult::error;
  }
  if (comparison.rows.size() < comparison.rows_total()) {
    suite.cases.push_back({.classname = "compare",
                           .name = "rows not listed",
                           .result = CaseResult::skipped,
                           .message = std::to_string(comparison.rows_total() - comparison.rows.size()) +
                                      " more rows (compare with --limit 0)"});
  }
  if (comparison.candidate_errors > 0 && !error_row) {
    // An ERROR the base had too is no changed row, but the candidate still cannot vouch for safety.
    suite.cases.push_back({.classname = "compare",
                           .name = "candidate ERROR results",
                           .result = CaseResult::error,
                           .message = std::to_string(comparison.candidate_errors) + " " + comparison.unit() +
                                      (comparison.candidate_errors == 1 ? "" : "s") +
                                      " in ERROR in the candidate: it cannot vouch for safety"});
  }
  suite.cases.push_back({.classname = "compare",
                         .name = "core digests",
                         .message = comparison.core_digests_equal() ? "equal" : "different"});
  return {suite};
}

std::vector<JunitSuite> verify_suites(const std::string& dir, const artifacts::Verification& result) {
  JunitSuite suite{.name = "skewbench verify " + dir,
                   .cases = {},
                   .properties = {{"digest", result.digest}, {"files", std::to_string(result.files)}},
                   .time_s = 0};
  for (const auto& problem : result.problems) {
    // A problem starts with the file it names, relative to dir.
    const auto file = problem.substr(0, problem.find(':'));
    suite.cases.push_back({.classname = "verify " + dir,
                           .name = problem,
                           .result = CaseResult::failure,
                           .message = problem,
                           .file = dir + "/" + file});
  }
  if (result.problems.empty()) {
    suite.cases.push_back({.classname = "verify " + dir, .name = "whole and unaltered", .message = result.digest});
  }
  return {suite};
}

std::vector<JunitSuite> sweep_suites(const json& summary, const std::string& grid_path) {
  JunitSuite suite{.name = summary.value("grid_id", grid_path),
                   .cases = {},
                   .properties = {{"cells_core_digest", summary.value("cells_core_digest", "")},
                                  {"cells_done", std::to_string(summary.value("cells_done", 0))},
                                  {"cells_total", std::to_string(summary.value("cells_total", 0))},
                                  {"harness_version", build_info::kVersion}},
                   .time_s = summary.value("duration_s", 0.0)};
  for (const auto& [policy, counts] : summary.value("per_policy", json::object()).items()) {
    JunitCase c{.classname = suite.name, .name = policy, .file = grid_path};
    const auto errors = counts.value("ERROR", 0);
    c.message = std::to_string(counts.value("cells", 0)) + " cells: " + std::to_string(counts.value("SAFE", 0)) +
                " SAFE, " + std::to_string(counts.value("HELD", 0)) + " HELD, " +
                std::to_string(counts.value("CONFLICT", 0)) + " CONFLICT, " + std::to_string(errors) + " ERROR";
    if (errors > 0) c.result = CaseResult::error;
    suite.cases.push_back(std::move(c));
  }
  if (!summary.value("complete", true)) {
    suite.cases.push_back({.classname = suite.name,
                           .name = "complete",
                           .result = CaseResult::error,
                           .message = "the sweep is incomplete: " + std::to_string(summary.value("cells_done", 0)) +
                                      " of " + std::to_string(summary.value("cells_total", 0)) +
                                      " cells (--resume continues it)",
                           .file = grid_path});
  }
  return {suite};
}

}  // namespace skewbench::cli
