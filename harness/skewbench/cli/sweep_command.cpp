// skewbench sweep and skewbench merge: parse, call app/, print.

#include <iostream>

#include "app/sweep.hpp"
#include "cli/commands.hpp"
#include "cli/github.hpp"
#include "cli/junit_suites.hpp"
#include "common/errors.hpp"
#include "sweep/console.hpp"

namespace skewbench::cli {

int run_sweep(const SweepArgs& args) {
  if (args.dry_run) {
    const auto plan = app::plan_sweep(args.grid_path, args.shard, stderr_observer());
    if (!plan) return exit_code::kUsage;
    if (args.format == OutputFormat::Json) {
      std::cout << sweep::plan_json(plan->grid, plan->shard).dump(2) << "\n";
    } else {
      std::cout << sweep::plan_text(plan->grid, plan->shard);
    }
    return exit_code::kPass;
  }
  use_log_groups(github_actions(args.github));
  const auto result = app::sweep(args, interrupted_flag(), stderr_observer());
  end_log_group();
  bool junit_written = true;
  if (args.junit) {
    const auto suites =
        result.summary
            ? sweep_suites(*result.summary, args.grid_path)
            : std::vector<artifacts::JunitSuite>{
                  {.name = "skewbench sweep " + args.grid_path,
                   .cases = {{.classname = "skewbench sweep",
                              .name = "cells ran",
                              .result = artifacts::CaseResult::error,
                              .message = "the sweep ended with exit code " + std::to_string(result.exit_code) +
                                         " before its cells ran (see the log)",
                              .file = args.grid_path}},
                   .properties = {},
                   .time_s = 0}};
    junit_written = write_junit_file(args.junit, suites);
  }
  if (!result.summary) return result.exit_code;
  if (github_actions(args.github)) {
    const auto errors = result.summary->value("errors", 0);
    if (errors > 0) {
      std::cerr << github_error(args.grid_path, std::nullopt, "skewbench sweep: ERROR cells",
                                std::to_string(errors) + " cells ended in ERROR (see " + result.dir.string() +
                                    "/cells.jsonl; --resume runs them again)")
                << "\n";
    }
    append_step_summary("```\n" + sweep::end_text(*result.summary, result.dir, args.grid_path) + "```\n");
  }
  if (args.format == OutputFormat::Json) {
    std::cout << sweep::end_json(*result.summary, result.dir, result.exit_code).dump(2) << "\n";
  } else {
    std::cout << sweep::end_text(*result.summary, result.dir, args.grid_path);
  }
  // A JUnit file that could not be written fails a sweep that went well; a worse code stays.
  return !junit_written && result.exit_code == exit_code::kPass ? exit_code::kInfrastructure : result.exit_code;
}

int merge_sweeps(const MergeArgs& args) {
  const auto result = app::merge(args, stderr_observer());
  if (result.shard_count > 0) {
    std::cout << "merged " << result.shard_count << " shards: " << result.cells << " cells, core digest "
              << result.core_digest << "\n";
  }
  return result.exit_code;
}

}  // namespace skewbench::cli
