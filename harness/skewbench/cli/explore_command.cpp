// skewbench explore [BOUNDS] [--target NAME]: scenarios generated within the
// bounds from one seed, run on the in-process engine, the real stack or a
// target's service, and held to the bounds' invariants; each one broken is
// shrunk to a minimal scenario (docs/explore.md).
//
// Exit codes: 0 no invariant broken; 1 an invariant broken (the findings are
// written); 2 bad arguments, bounds file, target or --out, nothing run; 3 the
// services could not start, the in-process findings could not be confirmed
// or the engines disagree; 130 interrupted (what was found so far is written).

#include <iostream>
#include <random>
#include <system_error>

#include <skewbench/target_bounds.hpp>

#include "app/preflight.hpp"
#include "app/targets.hpp"
#include "artifacts/out_folder.hpp"
#include "cli/commands.hpp"
#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "explore/confirm.hpp"
#include "explore/engines.hpp"
#include "explore/explore.hpp"
#include "runner/session.hpp"

namespace skewbench::cli {
namespace {

namespace fs = std::filesystem;

std::uint64_t fresh_seed() {
  std::random_device device;
  // Below 2^53, so that the seed reads back exactly from JSON anywhere.
  return ((static_cast<std::uint64_t>(device()) << 32) ^ device()) & ((std::uint64_t{1} << 53) - 1);
}

// Where a finding was found, and whether the real stack confirmed it.
std::string confirmation_text(const explore::ExploreOutcome& outcome, const explore::Finding& f) {
  if (outcome.engine == infra::Engine::real) {
    return outcome.target.is_string() ? "found and shrunk against target " + outcome.target.get<std::string>()
                                      : std::string("found and shrunk on the real stack");
  }
  if (!f.confirmed) return "real stack: not run (--no-confirm)";
  return std::string("real stack: ") + (*f.confirmed ? "confirmed: " : "NOT confirmed: ") + f.real_why;
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
              << "    " << confirmation_text(outcome, f) << "\n"
              << "    " << (folder / "scenario.json").string() << "\n";
  }
  std::cout << "scenarios core digest: " << outcome.scenarios_core_digest << "\n";
  if (outcome.engine == infra::Engine::in_process) {
    std::cout << "warning: the scenarios ran on the in-process engine (docs/engines.md); a finding's scenario.json "
                 "runs anywhere with skewbench run\n";
  }
  std::cout << "output: " << out.string() << "\n";
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

// The bounds of the command line: its file, or with --target and no file the
// compiled-in scenarios/explore/target.json, whose TTL becomes the one a
// service keeps when its target file fixes one. nullopt (said) when unusable.
std::optional<explore::Bounds> bounds_of(const ExploreArgs& args, const runner::StackOptions& services) {
  const std::string name = args.bounds_path.empty() ? std::string(explore::kTargetBoundsName) : args.bounds_path;
  try {
    auto bounds = args.bounds_path.empty()
                      ? explore::parse_bounds(parse_json_text(std::string(explore::kTargetBounds)), name)
                      : explore::load_bounds(args.bounds_path);
    if (args.bounds_path.empty() && services.service_ttl_s) {
      bounds.ttl_s = {.min_s = *services.service_ttl_s, .max_s = *services.service_ttl_s};
    }
    explore::check_bounds(bounds);
    if (const auto problem = explore::engine_problem(bounds, services)) {
      std::cerr << "skewbench: " << *problem << "\n";
      return std::nullopt;
    }
    return bounds;
  } catch (const InputError& e) {
    std::cerr << "skewbench: " << name << ": " << e.json_path() << ": " << e.message() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "skewbench: cannot read the bounds: " << e.what() << "\n";
  }
  return std::nullopt;
}

// The services of the command line: the in-process engine, the real stack,
// or a target's service (real engine); nullopt (said) when unusable.
std::optional<runner::StackOptions> services_of(const ExploreArgs& args) {
  auto services = args.services;
  services.quiet = true;
  services.engine = args.engine.value_or(args.target ? infra::Engine::real : infra::Engine::in_process);
  if (args.target) return app::services_of_target(*args.target, args.targets_dir, services, stderr_observer());
  if (services.engine == infra::Engine::in_process && services.postgres_bin) {
    // --postgres-bin is for the real stack that confirms the findings.
    auto checked = services;
    checked.engine = infra::Engine::real;
    if (auto problem = runner::service_options_problem(checked)) {
      std::cerr << "skewbench: " << *problem << "\n";
      return std::nullopt;
    }
    return services;
  }
  if (auto problem = runner::service_options_problem(services)) {
    std::cerr << "skewbench: " << *problem << "\n";
    return std::nullopt;
  }
  return services;
}

// The --out folder, checked and locked before anything runs, and written as
// every evidence folder is: whole, with its manifest (docs/evidence.md).
// Null (said) when it cannot be used.
std::unique_ptr<artifacts::OutFolder> open_folder(const ExploreArgs& args) {
  std::vector<fs::path> inputs;
  if (!args.bounds_path.empty()) inputs.emplace_back(args.bounds_path);
  return app::open_out_folder({.path = args.out_dir,
                               .kind = artifacts::FolderKind::kExplore,
                               .overwrite = args.overwrite,
                               .resume = false,
                               .inputs = inputs,
                               .command = "explore"},
                              stderr_observer());
}

// Explores on the engine `services` names, which is stopped before it
// returns; nullopt (said, with the exit code in `code`) when its services
// cannot start.
std::optional<explore::ExploreOutcome> explore_on(const runner::StackOptions& services, const explore::Bounds& bounds,
                                                  const explore::ExploreSettings& settings, int& code) {
  std::unique_ptr<explore::Engine> engine;
  try {
    engine = services.engine == infra::Engine::in_process ? explore::in_process_engine(bounds)
                                                          : explore::real_engine(bounds, services, &interrupted_flag());
  } catch (const std::exception& e) {
    if (interrupted_flag().load()) {
      code = exit_code::kInterrupted;
    } else {
      std::cerr << "skewbench: explore: cannot start the services: " << e.what() << "\n";
      code = exit_code::kInfrastructure;
    }
    return std::nullopt;
  }
  return explore::run_explore(bounds, settings, *engine,
                              [](const std::string& line) { std::cerr << "skewbench: explore: " << line << "\n"; });
}

// explore.json and the findings, published into the folder; false (said)
// when they cannot be written.
bool publish(artifacts::OutFolder& folder, const explore::Bounds& bounds, const explore::ExploreSettings& settings,
             const explore::ExploreOutcome& outcome) {
  try {
    const auto id = runner::new_run_id();
    const auto incoming = folder.make_incoming(id);
    explore::write_explore(incoming, bounds, settings, outcome);
    folder.publish(incoming, artifacts::FolderKind::kExplore, id);
    return true;
  } catch (const std::exception& e) {
    std::cerr << "skewbench: cannot write the findings to " << folder.path().string() << ": " << e.what() << "\n";
    return false;
  }
}

}  // namespace

int explore_scenarios(const ExploreArgs& args) {
  if (args.bounds_path.empty() && !args.target) {
    std::cerr << "skewbench: explore needs a bounds file (docs/explore.md), or --target NAME, whose bounds are "
              << explore::kTargetBoundsName << " when none is given\n";
    return exit_code::kUsage;
  }
  const auto services = services_of(args);
  if (!services) return exit_code::kUsage;
  const auto bounds = bounds_of(args, *services);
  if (!bounds) return exit_code::kUsage;
  const auto folder = open_folder(args);
  if (!folder) return exit_code::kUsage;
  explore::ExploreSettings settings{
      .seed = args.seed.value_or(fresh_seed()),
      .budget_s = args.budget_s.value_or(args.max_scenarios > 0 ? kMaxExploreBudget_s : kDefaultExploreBudget_s),
      .max_scenarios = args.max_scenarios,
      .interrupted = &interrupted_flag()};
  std::cerr << "skewbench: explore " << bounds->id << " with seed " << settings.seed << " (--seed " << settings.seed
            << " runs the same scenarios again)\n";
  int code = exit_code::kPass;
  auto outcome = explore_on(*services, *bounds, settings, code);
  if (!outcome) return code;
  if (args.target) outcome->target = services->target.value("name", *args.target);
  code = outcome->findings.empty() ? exit_code::kPass : exit_code::kExpectationFailed;
  if (outcome->engine == infra::Engine::in_process && args.confirm && !outcome->findings.empty() &&
      outcome->stopped_by != "interrupted") {
    code = confirm(*bounds, *outcome, args);
  }
  if (!publish(*folder, *bounds, settings, *outcome)) return exit_code::kInfrastructure;
  if (args.format == OutputFormat::Json) {
    std::cout << explore::explore_summary(*bounds, settings, *outcome).dump(2) << "\n";
  } else {
    print_text(*bounds, settings, *outcome, folder->path());
  }
  if (outcome->stopped_by == "interrupted") return exit_code::kInterrupted;
  return code;
}

}  // namespace skewbench::cli
