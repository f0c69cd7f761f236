// skewbench sweep and skewbench merge: parse, call app/, print.

#include <iostream>

#include "app/sweep.hpp"
#include "cli/commands.hpp"
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
  const auto result = app::sweep(args, interrupted_flag(), stderr_observer());
  if (!result.summary) return result.exit_code;
  if (args.format == OutputFormat::Json) {
    std::cout << sweep::end_json(*result.summary, result.dir, result.exit_code).dump(2) << "\n";
  } else {
    std::cout << sweep::end_text(*result.summary, result.dir, args.grid_path);
  }
  return result.exit_code;
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
