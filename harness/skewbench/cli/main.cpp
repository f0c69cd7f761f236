// skewbench: runs clock-skew replay scenarios against a real PostgreSQL outbox
// and a real remote-effect service, and writes evidence.

#include <iostream>

#include <CLI/CLI.hpp>

#include <skewbench/build_info.hpp>

#include "cli/commands.hpp"
#include "common/errors.hpp"

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
  run_cmd->add_option("--database-url", run.database_url,
                      "PostgreSQL connection URL; without it a throwaway cluster is started");
  run_cmd->add_option("--remote-url", run.remote_url,
                      "remote-effect base URL (http://HOST:PORT); without it the service is started");
  run_cmd->add_option("--remote-effect-bin", run.remote_effect_binary,
                      "remote-effect executable to start (default: next to skewbench, then PATH)");
  run_cmd->add_option("--remote-sync", run.remote_sync, "SQLite synchronous mode of a started remote-effect")
      ->check(CLI::IsMember({"full", "normal"}));
  run_cmd->add_flag("--overwrite", run.overwrite, "write into an --out directory that already holds evidence");
  run_cmd->add_flag("--quiet,-q", run.quiet, "no progress lines on stderr");

  std::vector<std::string> validate_paths;
  auto* validate_cmd = app.add_subcommand("validate", "check scenario files without running them");
  validate_cmd->add_option("paths", validate_paths, "scenario files or directories")->required();

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
  } catch (const std::exception& e) {
    std::cerr << "skewbench: " << e.what() << "\n";
    return exit_code::kInfrastructure;
  }
  return exit_code::kUsage;
}
