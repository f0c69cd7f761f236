// skewbench explore BOUNDS: scenarios generated within the bounds from one
// seed, run on the in-process engine and held to the bounds' invariants; each
// one broken is shrunk to a minimal scenario (docs/explore.md).
//
// Exit codes: 0 no invariant broken; 1 an invariant broken (the findings are
// written); 2 bad arguments, bounds file or --out, nothing run; 130
// interrupted (what was found so far is written).

#include <iostream>
#include <random>
#include <system_error>

#include "cli/commands.hpp"
#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "explore/confirm.hpp"
#include "explore/explore.hpp"

namespace skewbench::cli {
namespace {

namespace fs = std::filesystem;

// Why explore must not write into `out`, or an empty string. An earlier
// explore's explore.json and findings/ are replaced only with --overwrite.
std::string out_problem(const fs::path& out, bool overwrite) {
  std::error_code ec;
  const auto status = fs::symlink_status(out, ec);
  if (!fs::exists(status)) return "";
  if (fs::is_symlink(status)) return out.string() + " is a symbolic link; name the folder itself";
  if (!fs::is_directory(status)) return out.string() + " exists and is not a folder";
  if (fs::directory_iterator(out, ec) == fs::directory_iterator()) return "";
  if (!overwrite) return out.string() + " is not empty; pass --overwrite to replace an earlier explore's files";
  // The file rule for what is written: explore.json a regular file, and no
  // link on the way to a finding's files.
  for (const auto* relative : {"explore.json", "findings/scenario.json"}) {
    if (auto problem = output_path_problem(out, relative)) return *problem;
  }
  return "";
}

std::uint64_t fresh_seed() {
  std::random_device device;
  // Below 2^53, so that the seed reads back exactly from JSON anywhere.
  return ((static_cast<std::uint64_t>(device()) << 32) ^ device()) & ((std::uint64_t{1} << 53) - 1);
}

void print_text(const explore::Bounds& bounds, const explore::ExploreSettings& settings,
                const explore::ExploreOutcome& outcome, const fs::path& out) {
  std::cout << "explore " << bounds.id << ": " << outcome.tried << " scenarios in " << outcome.duration_s << " s (seed "
            << settings.seed << ", stopped by " << outcome.stopped_by << "), " << outcome.breaking
            << " broke an invariant\n";
  for (std::size_t i = 0; i < outcome.findings.size(); ++i) {
    const auto& f = outcome.findings[i];
    const auto folder = out / explore::finding_folder(bounds, f, i + 1);
    std::cout << "  " << bounds.invariants[f.invariant].name() << " (" << f.policy << "): " << f.occurrences
              << " scenario(s), first #" << f.found_at << "; shrunk from " << f.found_steps << " to "
              << f.minimal.at("steps").size() << " steps: " << f.why << "\n"
              << "    real stack: "
              << (!f.confirmed ? std::string("not run (--no-confirm)")
                               : (*f.confirmed ? "confirmed: " : "NOT confirmed: ") + f.real_why)
              << "\n"
              << "    " << (folder / "scenario.json").string() << "\n";
  }
  std::cout << "scenarios core digest: " << outcome.scenarios_core_digest << "\n"
            << "warning: the scenarios ran on the in-process engine (docs/engines.md); a finding's scenario.json "
               "runs anywhere with skewbench run\n"
            << "output: " << out.string() << "\n";
}

// Runs the findings again on the real stack; returns the exit code: 1 when
// both engines agree, 3 when the stack could not run them or they disagree.
int confirm(const explore::Bounds& bounds, explore::ExploreOutcome& outcome, const ExploreArgs& args) {
  std::cerr << "skewbench: explore: running " << outcome.findings.size()
            << " finding(s) again on the real stack (PostgreSQL and remote-effect, started here; --no-confirm "
               "skips this)\n";
  try {
    explore::confirm_on_real_stack(bounds, outcome, args.services, &interrupted_flag());
  } catch (const Interrupted&) {
    std::cerr << "skewbench: explore: interrupted while confirming; the findings are written unconfirmed\n";
    return exit_code::kInterrupted;
  } catch (const std::exception& e) {
    std::cerr << "skewbench: explore: cannot confirm the findings on the real stack: " << e.what()
              << "; they are written unconfirmed (--no-confirm skips this)\n";
    return exit_code::kInfrastructure;
  }
  int code = exit_code::kExpectationFailed;
  for (std::size_t i = 0; i < outcome.findings.size(); ++i) {
    const auto& f = outcome.findings[i];
    if (f.disagreement) {
      std::cerr << "skewbench: BUG: the engines disagree on finding " << (i + 1) << " ("
                << bounds.invariants[f.invariant].name() << ", " << f.policy << "): " << *f.disagreement
                << "; one of them is wrong, and no verdict of either can be trusted until it is found\n";
      code = exit_code::kInfrastructure;
    }
  }
  return code;
}

}  // namespace

int explore_scenarios(const ExploreArgs& args) {
  if (args.engine != infra::Engine::in_process) {
    std::cerr << "skewbench: explore runs on the in-process engine only (--engine in-process); run a finding's "
                 "scenario.json on the real stack with skewbench run\n";
    return exit_code::kUsage;
  }
  explore::Bounds bounds;
  try {
    bounds = explore::load_bounds(args.bounds_path);
    explore::check_bounds(bounds);
  } catch (const InputError& e) {
    std::cerr << "skewbench: " << args.bounds_path << ": " << e.json_path() << ": " << e.message() << "\n";
    return exit_code::kUsage;
  } catch (const std::exception& e) {
    std::cerr << "skewbench: cannot read the bounds: " << e.what() << "\n";
    return exit_code::kUsage;
  }
  const fs::path out(args.out_dir);
  if (const auto problem = out_problem(out, args.overwrite); !problem.empty()) {
    std::cerr << "skewbench: --out: " << problem << "\n";
    return exit_code::kUsage;
  }
  explore::ExploreSettings settings{.seed = args.seed.value_or(fresh_seed()),
                                    .budget_s = args.budget_s,
                                    .max_scenarios = args.max_scenarios,
                                    .interrupted = &interrupted_flag()};
  std::cerr << "skewbench: explore " << bounds.id << " with seed " << settings.seed << " (--seed " << settings.seed
            << " runs the same scenarios again)\n";
  auto outcome = explore::run_explore(
      bounds, settings, [](const std::string& line) { std::cerr << "skewbench: explore: " << line << "\n"; });
  int code = outcome.findings.empty() ? exit_code::kPass : exit_code::kExpectationFailed;
  if (args.confirm && !outcome.findings.empty() && outcome.stopped_by != "interrupted") {
    code = confirm(bounds, outcome, args);
  }
  try {
    fs::create_directories(out);
    std::error_code ec;
    fs::remove_all(out / "findings", ec);
    explore::write_explore(out, bounds, settings, outcome);
  } catch (const std::exception& e) {
    std::cerr << "skewbench: cannot write the findings: " << e.what() << "\n";
    return exit_code::kInfrastructure;
  }
  if (args.format == OutputFormat::Json) {
    std::cout << explore::explore_summary(bounds, settings, outcome).dump(2) << "\n";
  } else {
    print_text(bounds, settings, outcome, out);
  }
  if (outcome.stopped_by == "interrupted") return exit_code::kInterrupted;
  return code;
}

}  // namespace skewbench::cli
