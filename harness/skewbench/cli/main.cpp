// skewbench: runs clock-skew replay scenarios against a real PostgreSQL outbox
// and a real remote-effect service, and writes evidence.

#include <iostream>

#include <CLI/CLI.hpp>

#include <skewbench/build_info.hpp>

#include "cli/commands.hpp"
#include "common/errors.hpp"

namespace {

// The options run and sweep share: where the services are, or how to start them.
void add_service_options(CLI::App* command, skewbench::cli::ServiceArgs& services) {
  command->add_option("--database-url", services.database_url,
                      "PostgreSQL connection URL; without it a throwaway cluster is started");
  command->add_option("--remote-url", services.remote_url,
                      "remote-effect base URL (http://HOST:PORT); without it the service is started");
  command->add_option("--remote-effect-bin", services.remote_effect_binary,
                      "remote-effect executable to start (default: next to skewbench, then PATH)");
  command->add_option("--remote-sync", services.remote_sync, "SQLite synchronous mode of a started remote-effect")
      ->check(CLI::IsMember({"full", "normal"}));
  command->add_flag("--quiet,-q", services.quiet, "no progress on stderr");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace skewbench;
  CLI::App app{"skewbench: whose clock decides idempotency-key expiry? Scenarios as data, evidence as JSON."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(build_info::kVersion) + " (" + build_info::kGitCommit + ", " +
                                        build_info::kBuildType + ")");

  cli::RunArgs run;
  auto* run_cmd = app.add_subcommand("run", "run scenario files against PostgreSQL and remote-effect");
  run_cmd->add_option("paths", run.paths, "scenario files or directories of them (default: scenarios/)");
  run_cmd->add_option("--out", run.out_dir, "directory for the evidence (created if missing)")->required();
  add_service_options(run_cmd, run.services);
  run_cmd->add_flag("--overwrite", run.overwrite, "write into an --out directory that already holds evidence");

  std::vector<std::string> validate_paths;
  auto* validate_cmd = app.add_subcommand("validate", "check scenario files without running them");
  validate_cmd->add_option("paths", validate_paths, "scenario files or directories")->required();

  cli::SweepArgs sweep;
  auto* sweep_cmd = app.add_subcommand("sweep", "run every cell of a parameter grid on the real stack");
  sweep_cmd->add_option("grid", sweep.grid_path, "grid file (see docs/sweeps.md)")->required();
  sweep_cmd->add_option("--out", sweep.out_dir, "directory for cells.jsonl and sweep.json")->required();
  sweep_cmd->add_option("--jobs,-j", sweep.jobs, "parallel workers, at most 32 (default: the number of cores)")
      ->check(CLI::Range(0, 32));
  sweep_cmd->add_option("--shard", sweep.shard, "run only slice I of N (cells with index % N == I-1), e.g. 1/2");
  add_service_options(sweep_cmd, sweep.services);
  sweep_cmd->add_flag("--overwrite", sweep.overwrite, "write into an --out directory that already holds a sweep");

  cli::MergeArgs merge;
  auto* merge_cmd = app.add_subcommand("merge", "combine the shards of one sweep into the whole sweep");
  merge_cmd->add_option("shards", merge.shard_dirs, "the shard directories (every shard exactly once)")->required();
  merge_cmd->add_option("--out", merge.out_dir, "directory for the merged cells.jsonl and sweep.json")->required();
  merge_cmd->add_flag("--overwrite", merge.overwrite, "write into an --out directory that already holds a sweep");

  cli::CompareArgs compare;
  auto* compare_cmd =
      app.add_subcommand("compare", "what changed between two runs or two sweeps; exit 1 on a new CONFLICT");
  compare_cmd->add_option("base", compare.base, "the base run or sweep directory")->required();
  compare_cmd->add_option("candidate", compare.candidate, "the candidate run or sweep directory")->required();
  compare_cmd->add_option("--format", compare.format, "text or markdown")->check(CLI::IsMember({"text", "markdown"}));
  compare_cmd->add_option("--limit", compare.limit, "show at most this many changed rows (default 500; 0 = all)");

  cli::ReportArgs report;
  auto* report_cmd =
      app.add_subcommand("report", "draw a sweep as report.html and one SVG heat map per policy and map");
  report_cmd->add_option("dir", report.sweep_dir, "the sweep directory (sweep.json and cells.jsonl)")->required();
  report_cmd->add_option("--out", report.out_dir, "directory for report.html and maps/ (default: the sweep directory)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? exit_code::kPass : exit_code::kUsage;
  }

  cli::install_signal_handlers();
  try {
    if (*run_cmd) {
      if (run.paths.empty()) run.paths.push_back("scenarios");
      return cli::run_scenarios(run);
    }
    if (*validate_cmd) return cli::validate_scenarios(validate_paths);
    if (*sweep_cmd) return cli::run_sweep(sweep);
    if (*merge_cmd) return cli::merge_sweeps(merge);
    if (*compare_cmd) return cli::compare_results(compare);
    if (*report_cmd) return cli::render_report(report);
  } catch (const std::exception& e) {
    std::cerr << "skewbench: " << e.what() << "\n";
    return exit_code::kInfrastructure;
  }
  return exit_code::kUsage;
}
