#pragma once

// `skewbench explore` (docs/explore.md): scenarios generated at random within
// a bounds file from one seed, run on the in-process engine, held to the
// bounds' invariants; a scenario that breaks one is shrunk to a minimal
// scenario that still breaks it, written as an ordinary scenario file.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "explore/bounds.hpp"
#include "infra/in_process.hpp"
#include "runner/stack.hpp"

namespace skewbench::explore {

struct ExploreSettings {
  std::uint64_t seed = 0;
  double budget_s = 60;             // wall time for generating; shrinking a finding may go past it
  std::uint64_t max_scenarios = 0;  // 0: only the budget ends it
  const std::atomic<bool>* interrupted = nullptr;
};

// What findings are told apart by: a scenario's nodes and the kinds of its
// generated steps (sorted; the commit and the first POST every scenario has
// are not among them).
struct Shape {
  std::size_t nodes = 1;
  std::vector<std::string> kinds;
  bool operator==(const Shape&) const = default;
};

// One invariant broken for one policy in one way: the first scenario that
// broke it, and the minimal scenario it shrank to, whose shape no other
// finding of that invariant and policy has.
struct Finding {
  std::size_t invariant = 0;  // index into Bounds::invariants
  std::string policy;
  std::uint64_t found_at = 0;  // the number of the scenario that first broke it (from 1)
  std::string found_why;
  std::size_t found_steps = 0;  // that scenario's steps
  // Scenarios that broke it for this policy with at least its minimal
  // scenario's nodes and step kinds.
  std::uint64_t occurrences = 0;
  std::size_t shrinks = 0;        // shrinks taken on the way to the minimal scenario
  std::uint64_t shrink_runs = 0;  // scenarios run while shrinking
  nlohmann::json minimal;         // the minimal scenario, as a scenario file
  Shape shape;                    // the minimal scenario's
  std::string why;                // what the minimal scenario broke, as measured
  nlohmann::json evidence;        // its evidence, as `run` writes scenarios/<id>.json
  // On the real stack (explore/confirm.hpp): nullopt until it ran there; true
  // when it broke the same invariant there with the same measured values.
  std::optional<bool> confirmed;
  std::string real_why;                     // what it broke there, as measured
  nlohmann::json real_evidence;             // its evidence there
  std::optional<std::string> disagreement;  // where the engines measured differently (a skewbench bug)
};

struct ExploreOutcome {
  std::uint64_t tried = 0;                        // scenarios generated and run (not the shrinks)
  std::uint64_t breaking = 0;                     // of them, those that broke an invariant
  std::map<std::string, std::uint64_t> verdicts;  // of the scenarios tried
  std::vector<Finding> findings;
  // SHA-256 over the core of every scenario tried, in order (the scenario,
  // what each step observed, the closing measurement and verdict): the same
  // seed, bounds and number of scenarios give the same digest.
  std::string scenarios_core_digest;
  double duration_s = 0;    // generating and shrinking
  double generating_s = 0;  // generating and running the scenarios tried
  std::string stopped_by;   // max_scenarios, budget or interrupted
  infra::Engine engine = infra::Engine::in_process;
  nlohmann::json target = nullptr;  // the target's name, when explore ran against one
};

// Checks that each policy of `bounds` makes a valid scenario (the scenario
// parser's rules); throws InputError naming the policy's path.
void check_bounds(const Bounds& bounds);

// What the engine and services of `services` cannot run of what `bounds`
// may generate (a scenario of each policy with every node and every step
// kind, held to the checks `run` makes before anything starts: a step that
// restarts a process or an instance per node on the in-process engine, a
// restart_store without a store, gc against a service of its own wire, ...);
// nullopt when they can run all of it.
std::optional<std::string> engine_problem(const Bounds& bounds, const runner::StackOptions& services);

// Tells what happens as it happens (a finding, its shrinking); may be empty.
using ExploreLog = std::function<void(const std::string& line)>;

class Engine;  // explore/engines.hpp

ExploreOutcome run_explore(const Bounds& bounds, const ExploreSettings& settings, Engine& engine,
                           const ExploreLog& log = {});
// On the in-process engine.
ExploreOutcome run_explore(const Bounds& bounds, const ExploreSettings& settings, const ExploreLog& log = {});

// explore.json: the seed, the bounds, the counts, the digest and each finding
// (without its minimal scenario and evidence, which have files of their own).
nlohmann::json explore_summary(const Bounds& bounds, const ExploreSettings& settings, const ExploreOutcome& outcome);

// The folder of finding `index` (from 1) under an explore's --out:
// findings/<index>-<invariant>-<policy>.
std::string finding_folder(const Bounds& bounds, const Finding& finding, std::size_t index);

// Writes explore.json and, per finding, its folder with scenario.json (the
// minimal scenario) and evidence.json into `out_dir`, which exists.
void write_explore(const std::filesystem::path& out_dir, const Bounds& bounds, const ExploreSettings& settings,
                   const ExploreOutcome& outcome);

}  // namespace skewbench::explore
