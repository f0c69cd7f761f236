// skewbench: runs clock-skew replay scenarios against a real PostgreSQL outbox
// and a real remote-effect service, and writes evidence.

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <string_view>

#include <CLI/CLI.hpp>

#include <skewbench/build_info.hpp>

#include "cli/commands.hpp"
#include "common/allocator.hpp"
#include "common/errors.hpp"
#include "common/subprocess.hpp"
#include "common/text.hpp"

namespace {

namespace cli = skewbench::cli;

// A number that is not NaN or infinite: CLI11's Range lets NaN through, as no
// comparison with it is true.
const CLI::Validator kFiniteNumber(
    [](const std::string& text) -> std::string {
      try {
        std::size_t used = 0;
        const double value = std::stod(text, &used);
        if (used == text.size() && std::isfinite(value)) return {};
      } catch (const std::exception&) {
      }
      return "\"" + text + "\" is not a finite number";
    },
    "FINITE");

// Digits only (no sign, so that CLI11 cannot read "-1" as 2^64-1), and at
// least 1 when `zero_allowed` is false.
CLI::Validator whole_number(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](const std::string& text) -> std::string {
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        if (!digits) return "\"" + text + "\" is not a whole number of digits (0 or more, no sign)";
        if (!zero_allowed && text.find_first_not_of('0') == std::string::npos) return "must be at least 1, not 0";
        errno = 0;
        std::strtoull(text.c_str(), nullptr, 10);
        if (errno == ERANGE) return text + " is more than 2^64-1";
        return {};
      },
      zero_allowed ? "UINT" : "UINT>=1");
}
using skewbench::cli::OutputFormat;

constexpr const char* kCommands[] = {"run",    "validate", "sweep",   "merge",  "compare",
                                     "report", "verify",   "targets", "explore"};

// Every --help ends with an example and what the exit codes mean.
std::string footer(const std::string& example, const std::string& exit_codes) {
  return "\nExample:\n  " + example + "\n\nExit codes:\n" + exit_codes;
}

constexpr const char* kRunExitCodes =
    "  0    every scenario went as its expectations say\n"
    "  1    an expectation was not met (the failing checks are listed)\n"
    "  2    bad arguments or input files; nothing started\n"
    "  3    infrastructure error: PostgreSQL or remote-effect failed (ERROR results)\n"
    "  130  interrupted (Ctrl-C, SIGTERM); services were stopped\n";

// The options run and sweep share: where the services are, or how to start them.
void add_service_options(CLI::App* command, cli::ServiceArgs& services) {
  auto* database_url = command->add_option("--database-url", services.database_url,
                                           "PostgreSQL connection URL; without it a throwaway cluster is started");
  command
      ->add_option("--postgres-bin", services.postgres_bin,
                   "directory with initdb, pg_ctl and postgres for the throwaway cluster (default: "
                   "$SKEWBENCH_POSTGRES_BIN, the cached PostgreSQL 17.6, a system PostgreSQL 17, any system one)")
      ->excludes(database_url);
  auto* remote_url = command->add_option("--remote-url", services.remote_url,
                                         "base URL (http://HOST:PORT) of a running remote-effect, or of any service "
                                         "of its protocol; without it the service is started");
  auto* remote_bin = command->add_option("--remote-effect-bin", services.remote_effect_binary,
                                         "remote-effect executable to start (default: next to skewbench, then PATH)");
  command
      ->add_option("--remote-command", services.remote_command,
                   "start this service of the protocol instead of remote-effect, and restart it where a step "
                   "does: one command, in which {port}, {state_db}, {dedupe} and {host} become this run's "
                   "values (also in $PORT, $STATE_DB, $IDEMPOTENCY_MODE, $HOST); ready when GET /health says "
                   "\"status\": \"ok\" (docs/wire-compatibility.md)")
      ->excludes(remote_url)
      ->excludes(remote_bin);
  auto* remote_command = command->get_option("--remote-command");
  command
      ->add_option("--remote-port", services.remote_port,
                   "with --remote-command: the port that service listens on, when it cannot be told one "
                   "(default: a free port, given as {port})")
      ->check(CLI::Range(1, 65535))
      ->needs(remote_command);
  command->add_option("--remote-sync", services.remote_sync, "SQLite synchronous mode of a started remote-effect")
      ->check(CLI::IsMember({"full", "normal"}));
  command
      ->add_option_function<std::string>(
          "--durability",
          [&services](const std::string& name) { services.durability = skewbench::runner::kDurabilities.parse(name); },
          "what the services skewbench starts keep: durable (every commit on disk; default for run) or "
          "throwaway (no power-loss durability, process crashes still survived; default for sweep)")
      ->check(CLI::IsMember(skewbench::runner::kDurabilities.names()));
  command->add_flag("--quiet,-q", services.quiet, "no progress on stderr, no results table; failures still shown");
  command
      ->add_option("--http-timeout", services.http_timeout_s,
                   "seconds one exchange with the remote may take, connect to the last byte of its answer "
                   "(default 30)")
      ->check(CLI::Range(1, 3600));
  command
      ->add_option("--max-answer-bytes", services.max_answer_bytes,
                   "the largest answer body read from the remote; a larger one is an ERROR (default 1048576)")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 30));
  command
      ->add_option("--db-timeout", services.db_timeout_s,
                   "seconds to wait on PostgreSQL to connect or run a statement (default 30)")
      ->check(CLI::Range(1, 3600));
}

void add_format_option(CLI::App* command, OutputFormat& format, const std::vector<std::string>& names,
                       const std::string& help) {
  const std::map<std::string, OutputFormat> known = {
      {"text", OutputFormat::Text}, {"markdown", OutputFormat::Markdown}, {"json", OutputFormat::Json}};
  std::map<std::string, OutputFormat> allowed;
  for (const auto& name : names) allowed.emplace(name, known.at(name));
  command->add_option("--format", format, help)->transform(CLI::CheckedTransformer(allowed, CLI::ignore_case));
}

// An unknown first word: name it and list the commands (CLI11 would only say
// that an argument was not expected).
bool is_unknown_command(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  for (const char* command : kCommands) {
    if (std::string_view(argv[1]) == command) return false;
  }
  std::cerr << "skewbench: unknown command \"" << argv[1] << "\"; the commands are: "
            << skewbench::text::join(std::vector<std::string>(std::begin(kCommands), std::end(kCommands)), ", ")
            << " (skewbench --help)\n";
  return true;
}

// --junit FILE: JUnit XML for the CI's test report; --github: GitHub Actions
// annotations and step summary (docs/ci.md).
void add_ci_options(CLI::App* command, std::optional<std::string>& file, bool& github) {
  command->add_option(
      "--junit", file,
      "also write the outcome as JUnit XML to FILE, for a CI's test report (docs/ci.md, \"JUnit XML\")");
  command->add_flag("--github", github,
                    "write GitHub Actions annotations and append to $GITHUB_STEP_SUMMARY, as under "
                    "GITHUB_ACTIONS=true (docs/ci.md)");
}

// CLI11's own message, on a line that says who speaks, and where help is.
int parse_error(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
  std::string command = "skewbench";
  for (const auto* sub : app.get_subcommands()) command += " " + sub->get_name();
  std::cerr << "skewbench: " << e.what() << " (" << command << " --help)\n";
  return skewbench::exit_code::kUsage;
}

// Whose clock the service reads, and how an answer is lost (docs/real-clocks.md).
void add_clock_options(CLI::App* command, cli::ServiceArgs& services) {
  command
      ->add_option_function<std::string>(
          "--clock-mode",
          [&services](const std::string& name) {
            services.clock_mode = *skewbench::runner::kClockModes.parse(name);
            services.clock_mode_given = true;
          },
          "whose clock gives a request its time: logical (X-Logical-Time on every request; default) or real (the "
          "service reads its own wall clock, which skewbench sets under libfaketime before each request)")
      ->check(CLI::IsMember(skewbench::runner::kClockModes.names()));
  command->add_option("--libfaketime", services.libfaketime,
                      "with --clock-mode real: the libfaketime.so.1 to start the service with (default: "
                      "$SKEWBENCH_LIBFAKETIME, then the system's library folders)");
  command
      ->add_option_function<std::string>(
          "--ack-loss",
          [&services](const std::string& name) { services.ack_loss = skewbench::infra::kAckLosses.parse(name); },
          "how a drop_ack POST loses its answer: header (X-Drop-Ack, the service drops it; default in logical "
          "mode) or proxy (skewbench's fault proxy reads the answer and drops it; default in real mode)")
      ->check(CLI::IsMember(skewbench::infra::kAckLosses.names()));
}

// What runs the scenarios (docs/engines.md).
void add_engine_option(CLI::App* command, cli::ServiceArgs& services) {
  command
      ->add_option_function<std::string>(
          "--engine",
          [&services](const std::string& name) { services.engine = *skewbench::infra::kEngines.parse(name); },
          "real (PostgreSQL and remote-effect processes over HTTP; default) or in-process (remote-effect's rules "
          "and store in memory and an outbox double, in this process: fast, evidence marked in-process; "
          "docs/engines.md)")
      ->check(CLI::IsMember(skewbench::infra::kEngines.names()));
}

CLI::App* add_run(CLI::App& app, cli::RunArgs& run) {
  auto* command = app.add_subcommand("run", "run scenario files against PostgreSQL and remote-effect");
  command->add_option("paths", run.paths, "scenario files or directories of them (default: scenarios/)");
  command->add_option("--out", run.out_dir, "directory for the evidence (created if missing)")->required();
  add_engine_option(command, run.services);
  add_service_options(command, run.services);
  add_clock_options(command, run.services);
  command->add_option("--target", run.target,
                      "run against this target's service and store instead of remote-effect: a name under "
                      "--targets-dir, or a target folder (docs/targets.md); on real clocks, ack loss by the proxy");
  command->add_option("--targets-dir", run.targets_dir, "where --target NAME is looked up (default: targets)");
  command->add_flag("--overwrite", run.overwrite, "write into an --out directory that already holds evidence");
  add_format_option(command, run.format, {"text", "json"},
                    "text (a table, then the failing checks) or json (one document on stdout; progress on stderr)");
  add_ci_options(command, run.junit, run.github);
  command->footer(footer("skewbench run scenarios/018-uncertainty.json --out evidence/run-1", kRunExitCodes));
  return command;
}

CLI::App* add_validate(CLI::App& app, std::vector<std::string>& validate_paths) {
  auto* command = app.add_subcommand("validate", "check scenario, grid and explore bounds files without running them");
  command->add_option("paths", validate_paths, "scenario, grid or explore bounds files, or directories of them")
      ->required();
  command->footer(footer("skewbench validate scenarios/ scenarios/sweeps/ scenarios/explore/",
                         "  0    every file is valid\n"
                         "  2    a file is invalid (every error of every file is listed)\n"));
  return command;
}

CLI::App* add_sweep(CLI::App& app, cli::SweepArgs& sweep) {
  auto* command = app.add_subcommand("sweep", "run every cell of a parameter grid");
  command->add_option("grid", sweep.grid_path, "grid file (see docs/sweeps.md)")->required();
  command->add_option("--out", sweep.out_dir, "directory for cells.jsonl and sweep.json");
  command->add_option("--jobs,-j", sweep.jobs, "parallel workers, at most 32 (default: the number of cores)")
      ->check(CLI::Range(0, 32));
  command->add_option("--shard", sweep.shard, "run only slice I of N (cells with index % N == I-1), e.g. 1/2");
  command->add_flag("--dry-run", sweep.dry_run, "print the cells per policy and exit; nothing starts");
  add_engine_option(command, sweep.services);
  add_service_options(command, sweep.services);
  command
      ->add_option("--max-unreachable-s", sweep.max_unreachable_s,
                   "stop the sweep (exit 3) when a service stays unreachable this long (default 60)")
      ->check(CLI::Range(1, 86400));
  auto* overwrite =
      command->add_flag("--overwrite", sweep.overwrite, "replace the sweep an --out directory already holds");
  command
      ->add_flag("--resume", sweep.resume,
                 "continue the sweep in --out (same grid and shard): keep its finished cells, run the rest and "
                 "the ERROR ones")
      ->excludes(overwrite);
  add_format_option(command, sweep.format, {"text", "json"},
                    "text or json (one document on stdout; progress on stderr)");
  add_ci_options(command, sweep.junit, sweep.github);
  command->footer(footer("skewbench sweep scenarios/sweeps/018-offset-by-epsilon.json --out sweeps/eps -j 2",
                         "  0    every cell ran (or --dry-run)\n"
                         "  2    bad arguments, grid file or --out; nothing started\n"
                         "  3    infrastructure error: some cells are ERROR, or a service stayed unreachable\n"
                         "       (--resume runs them again)\n"
                         "  130  interrupted; the cells done so far are kept (--resume continues)\n"));
  return command;
}

CLI::App* add_targets(CLI::App& app, cli::TargetsArgs& targets) {
  auto* command = app.add_subcommand(
      "targets", "run the target series against every idempotency library under targets/ and print the findings");
  command->add_option("names", targets.names, "the targets to run (default: every one under --targets-dir)");
  command->add_option("--out", targets.out_dir,
                      "directory for each target's evidence and findings.md/.json (required to run)");
  command->add_option("--targets-dir", targets.targets_dir, "the folder of targets (default: targets)");
  command->add_option("--scenarios", targets.scenario_paths,
                      "scenario files or folders to run against each target (default: scenarios/targets)");
  command->add_option("--expect", targets.expect_file,
                      "a Markdown file holding the findings table to hold the rows against (e.g. docs/targets.md)");
  command->add_flag("--overwrite", targets.overwrite, "write into target folders that already hold evidence");
  auto& services = targets.services;
  command->add_option("--database-url", services.database_url,
                      "PostgreSQL connection URL; without it each target's run starts a throwaway cluster");
  command->add_option("--postgres-bin", services.postgres_bin, "directory with initdb, pg_ctl and postgres");
  command->add_option("--libfaketime", services.libfaketime, "the libfaketime.so.1 the services are started with");
  command->add_option("--remote-effect-bin", services.remote_effect_binary,
                      "remote-effect executable, for a target that runs it (default: next to skewbench, then PATH)");
  command->add_flag("--quiet,-q", services.quiet, "no progress on stderr");
  command
      ->add_option("--http-timeout", services.http_timeout_s,
                   "seconds one exchange with a service may take (default 30)")
      ->check(CLI::Range(1, 3600));
  command
      ->add_option("--max-answer-bytes", services.max_answer_bytes,
                   "the largest answer body read from a service; a larger one is an ERROR (default 1048576)")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 30));
  command->add_option("--db-timeout", services.db_timeout_s, "seconds to wait on PostgreSQL (default 30)")
      ->check(CLI::Range(1, 3600));
  auto* init = command->add_subcommand(
      "init",
      "print a commented target.json for a service of your own (docs/targets.md, \"Put your own service "
      "under the series\")");
  init->add_option("name", targets.init_name, "the target's name, which is its folder's name")->required();
  init->footer(
      footer("mkdir -p my-targets/payments && skewbench targets init payments > my-targets/payments/target.json",
             "  0    printed\n"
             "  2    not a target's name\n"));
  command->footer(footer("skewbench targets --out findings --expect docs/targets.md",
                         "  0    every row as the --expect table says (or no table given), no ERROR\n"
                         "  1    a row differs from the table (each is named), or a scenario's own check failed\n"
                         "  2    a target, scenario or table file cannot be used, or a target's needs are "
                         "missing; nothing started\n"
                         "  3    infrastructure error: some rows are ERROR\n"
                         "  130  interrupted\n"));
  return command;
}

CLI::App* add_merge(CLI::App& app, cli::MergeArgs& merge) {
  auto* command = app.add_subcommand("merge", "combine the shards of one sweep into the whole sweep");
  command->add_option("shards", merge.shard_dirs, "the shard directories (every shard exactly once)")->required();
  command->add_option("--out", merge.out_dir, "directory for the merged cells.jsonl and sweep.json")->required();
  command->add_flag("--overwrite", merge.overwrite, "write into an --out directory that already holds a sweep");
  command->footer(footer("skewbench merge sweeps/eps-1 sweeps/eps-2 --out sweeps/eps",
                         "  0    merged\n"
                         "  2    the shards are not the complete, disjoint slices of one grid\n"
                         "  3    the merged sweep holds ERROR cells\n"));
  return command;
}

CLI::App* add_compare(CLI::App& app, cli::CompareArgs& compare) {
  auto* command = app.add_subcommand(
      "compare", "what changed between two runs or two sweeps; exit 1 on a new CONFLICT or a missing scenario/cell");
  command->add_option("base", compare.base, "the base run or sweep directory")->required();
  command->add_option("candidate", compare.candidate, "the candidate run or sweep directory")->required();
  add_format_option(command, compare.format, {"text", "markdown", "json"}, "text, markdown or json");
  command->add_option("--limit", compare.limit, "show at most this many rows (default 500; 0 = all)");
  command->add_flag("--across-engines", compare.across_engines,
                    "compare a run or sweep of the in-process engine with one of the real stack (refused without it; "
                    "docs/engines.md)");
  add_ci_options(command, compare.junit, compare.github);
  command->footer(footer("skewbench compare evidence/main evidence/branch --format markdown",
                         "  0    no new CONFLICT and nothing missing\n"
                         "  1    a new CONFLICT, or a scenario or cell of the base is MISSING\n"
                         "  2    the two cannot be compared, or a core digest does not match its rows\n"
                         "  3    the candidate holds ERROR results (and nothing above was found)\n"));
  return command;
}

CLI::App* add_report(CLI::App& app, cli::ReportArgs& report) {
  auto* command = app.add_subcommand("report", "draw a sweep as report.html and one SVG heat map per policy and map");
  command->add_option("dir", report.sweep_dir, "the sweep directory (sweep.json and cells.jsonl)")->required();
  command->add_option("--out", report.out_dir, "directory for report.html and maps/ (default: the sweep directory)");
  command->add_flag("--overwrite", report.overwrite, "replace the report.html and maps an earlier report wrote");
  command->footer(footer("skewbench report sweeps/eps",
                         "  0    written\n"
                         "  2    not a sweep directory, a malformed file (named), an existing report without\n"
                         "       --overwrite, or an output that is a symbolic link or inside one\n"
                         "  3    the output could not be written\n"));
  return command;
}

CLI::App* add_explore(CLI::App& app, cli::ExploreArgs& explore) {
  auto* command = app.add_subcommand(
      "explore", "generate scenarios within bounds, hold them to invariants, and shrink each one that breaks");
  command->add_option("bounds", explore.bounds_path,
                      "bounds file (see docs/explore.md); with --target, scenarios/explore/target.json when absent");
  command->add_option("--out", explore.out_dir, "folder for explore.json and the findings")->required();
  command
      ->add_option("--seed", explore.seed,
                   "the seed, 0 to 2^64-1 (default: a fresh one, printed); the same seed, bounds "
                   "and --max-scenarios give the same scenarios and results")
      ->check(whole_number(true));
  command
      ->add_option("--budget-s", explore.budget_s,
                   "seconds to generate scenarios for (default 60; with --max-scenarios, none: the count alone "
                   "ends it)")
      ->check(kFiniteNumber)
      ->check(CLI::Range(0.0, cli::kMaxExploreBudget_s));
  command
      ->add_option("--max-scenarios", explore.max_scenarios,
                   "stop after this many scenarios, at least 1 (default: only --budget-s ends it)")
      ->check(whole_number(false));
  command
      ->add_option_function<std::string>(
          "--engine", [&explore](const std::string& name) { explore.engine = *skewbench::infra::kEngines.parse(name); },
          "in-process (the default) or real: PostgreSQL and remote-effect, or with --target the target's service, "
          "started once for every scenario (docs/explore.md)")
      ->check(CLI::IsMember(skewbench::infra::kEngines.names()));
  command->add_option("--target", explore.target,
                      "explore the target NAME (a folder under --targets-dir, or a path to one) on real clocks: its "
                      "service's instances and store run for every scenario that does not restart them");
  command->add_option("--targets-dir", explore.targets_dir, "where --target NAME is looked up (default: targets)");
  command->add_flag("--confirm,!--no-confirm", explore.confirm,
                    "run each in-process finding's minimal scenario again on the real stack, which skewbench starts "
                    "(default), or not");
  command->add_option("--postgres-bin", explore.services.postgres_bin, "PostgreSQL server binaries for the real stack");
  command->add_flag("--overwrite", explore.overwrite, "replace an earlier explore's files in --out");
  add_format_option(command, explore.format, {"text", "json"}, "text or json (explore.json on stdout)");
  command->footer(
      footer("skewbench explore scenarios/explore/018-node-local.json --seed 1 --out explore/1\n"
             "  skewbench explore --target powertools-redis --seed 1 --budget-s 300 --out explore/pt",
             "  0    no invariant broken\n"
             "  1    an invariant broken: each finding's minimal scenario is under --out/findings/\n"
             "  2    bad arguments, bounds file or --out; nothing ran\n"
             "  3    the real stack could not confirm the findings, or the engines disagree (a bug)\n"
             "  130  interrupted; what was found so far is written\n"));
  return command;
}

CLI::App* add_verify(CLI::App& app, cli::VerifyArgs& verify) {
  auto* command = app.add_subcommand(
      "verify", "check a run, sweep or explore folder: manifest, digests, JSON Schemas (see docs/evidence.md)");
  command->add_option("dir", verify.dir, "the run, sweep or explore directory")->required();
  add_ci_options(command, verify.junit, verify.github);
  command->footer(footer("skewbench verify evidence/run-1",
                         "  0    valid: every file matches the manifest, its schema and its digests\n"
                         "  1    not valid (every problem is listed)\n"
                         "  2    not a folder\n"
                         "  3    valid, but the --junit file could not be written\n"));
  return command;
}

// Without paths, run takes ./scenarios; when there is none, it says so.
bool default_scenarios(std::vector<std::string>& paths) {
  if (!paths.empty()) return true;
  if (!std::filesystem::is_directory("scenarios")) {
    std::cerr << "skewbench: no scenario files named, and there is no scenarios folder in "
              << std::filesystem::current_path().string()
              << " to default to; name scenario files or folders (skewbench run --help)\n";
    return false;
  }
  paths.push_back("scenarios");
  return true;
}

}  // namespace

namespace {

// However the command ends (a return, an exception, SIGINT or SIGTERM, which
// unwind to a return), every process it started, and every process those
// left behind, ends before skewbench exits.
struct EndsDescendants {
  static constexpr std::chrono::milliseconds kGrace{2000};
  EndsDescendants() {
    skewbench::become_subreaper();
    std::set_terminate([] {
      skewbench::end_descendants(kGrace);
      std::abort();
    });
  }
  ~EndsDescendants() { skewbench::end_descendants(kGrace); }
  EndsDescendants(const EndsDescendants&) = delete;
  EndsDescendants& operator=(const EndsDescendants&) = delete;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace skewbench;
  const EndsDescendants supervisor;
  if (is_unknown_command(argc, argv)) return exit_code::kUsage;
  CLI::App app{"skewbench: whose clock decides idempotency-key expiry? Scenarios as data, evidence as JSON."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(build_info::kVersion) + " (" + build_info::kGitCommit + ", " +
                                        build_info::kBuildType + ", " + allocator_name() + ")");
  app.footer(footer("skewbench run scenarios/ --out evidence/run-1", kRunExitCodes) +
             "\nEach command's --help shows its own example and exit codes.\n");

  cli::RunArgs run;
  std::vector<std::string> validate_paths;
  cli::SweepArgs sweep;
  cli::MergeArgs merge;
  cli::CompareArgs compare;
  cli::ReportArgs report;
  auto* run_cmd = add_run(app, run);
  auto* validate_cmd = add_validate(app, validate_paths);
  auto* sweep_cmd = add_sweep(app, sweep);
  auto* merge_cmd = add_merge(app, merge);
  auto* compare_cmd = add_compare(app, compare);
  auto* report_cmd = add_report(app, report);

  cli::VerifyArgs verify;
  auto* verify_cmd = add_verify(app, verify);
  cli::TargetsArgs targets;
  auto* targets_cmd = add_targets(app, targets);
  cli::ExploreArgs explore;
  auto* explore_cmd = add_explore(app, explore);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return parse_error(app, e);
  }

  cli::install_signal_handlers();
  try {
    if (*run_cmd) return default_scenarios(run.paths) ? cli::run_scenarios(run) : exit_code::kUsage;
    if (*validate_cmd) return cli::validate_files(validate_paths);
    if (*sweep_cmd) return cli::run_sweep(sweep);
    if (*merge_cmd) return cli::merge_sweeps(merge);
    if (*compare_cmd) return cli::compare_results(compare);
    if (*report_cmd) return cli::render_report(report);
    if (*verify_cmd) return cli::verify_evidence(verify);
    if (*explore_cmd) return cli::explore_scenarios(explore);
    if (*targets_cmd) {
      const bool init = targets_cmd->get_subcommand("init")->parsed();
      return init ? cli::print_target_template(targets.init_name) : cli::run_targets(targets);
    }
  } catch (const std::exception& e) {
    std::cerr << "skewbench: " << e.what() << "\n";
    return exit_code::kInfrastructure;
  }
  return exit_code::kUsage;
}
