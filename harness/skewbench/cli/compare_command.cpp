// skewbench compare BASE CANDIDATE: parses the arguments and prints what
// compare/compare.hpp finds.

#include <iostream>

#include "cli/commands.hpp"
#include "cli/github.hpp"
#include "cli/junit_suites.hpp"
#include "common/errors.hpp"
#include "compare/compare.hpp"

namespace skewbench::cli {
namespace {

// An annotation on the candidate's summary (a run) or cells (a sweep) for each
// new CONFLICT and each MISSING row; the Markdown rendering in the summary.
void report_to_github(const compare::Comparison& comparison) {
  auto& out = std::cerr;  // stdout is the rendering, often redirected to a file
  const auto file =
      (comparison.candidate.dir / (comparison.kind == compare::Kind::Run ? "summary.json" : "cells.jsonl")).string();
  for (const auto& row : comparison.rows) {
    if (row.new_conflict) {
      out << github_error(
                 file, std::nullopt, std::string("skewbench compare: new CONFLICT"),
                 std::string(comparison.unit()) + " " + row.key + " is CONFLICT in the candidate, not in the base")
          << "\n";
    } else if (row.status == compare::RowStatus::Missing) {
      out << github_error(file, std::nullopt, std::string("skewbench compare: MISSING"),
                          std::string(comparison.unit()) + " " + row.key + " is in the base, not in the candidate")
          << "\n";
    }
  }
  append_step_summary(compare::to_markdown(comparison));
}

}  // namespace

int compare_results(const CompareArgs& args) {
  compare::Comparison comparison;
  try {
    comparison =
        compare::compare_dirs(args.base, args.candidate, {.limit = args.limit, .across_engines = args.across_engines});
  } catch (const compare::CannotCompare& e) {
    std::cerr << "skewbench: cannot compare: " << e.what() << "\n";
    if (github_actions(args.github)) {
      std::cerr << github_error(std::nullopt, std::nullopt, "skewbench compare: cannot compare", e.what()) << "\n";
    }
    write_junit_file(
        args.junit,
        artifacts::input_suites(
            "compare",
            {{.file = args.candidate, .json_path = "", .message = std::string("cannot compare: ") + e.what()}}));
    return exit_code::kUsage;
  }
  switch (args.format) {
    case OutputFormat::Json:
      std::cout << compare::to_json(comparison).dump(2) << "\n";
      break;
    case OutputFormat::Markdown:
      std::cout << compare::to_markdown(comparison);
      break;
    case OutputFormat::Text:
      std::cout << compare::to_text(comparison);
      break;
  }
  const bool github = github_actions(args.github);
  if (github || args.junit) {
    // Every row, whatever --limit shows: a regression past it must not pass.
    const auto all = args.limit == 0 ? comparison
                                     : compare::compare_dirs(args.base, args.candidate,
                                                             {.limit = 0, .across_engines = args.across_engines});
    if (github) report_to_github(all);
    if (!write_junit_file(args.junit, compare_suites(all)) && comparison.exit_code() == exit_code::kPass) {
      return exit_code::kInfrastructure;
    }
  }
  return comparison.exit_code();
}

}  // namespace skewbench::cli
