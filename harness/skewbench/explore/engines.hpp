#pragma once

// What explore runs its scenarios on (docs/explore.md, "Engines"):
//  - in-process: remote-effect's rules and an outbox double in this process,
//    emptied before each scenario (docs/engines.md);
//  - real: the services a run starts (PostgreSQL and remote-effect, or a
//    target's service and store on real clocks), started once and reused by
//    every scenario, each on operation ids and keys of its own; an instance a
//    scenario restarted, or that died, is started again before the next one.

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "evidence/evidence.hpp"
#include "explore/bounds.hpp"
#include "explore/invariants.hpp"
#include "infra/in_process.hpp"
#include "runner/runner.hpp"
#include "runner/stack.hpp"
#include "scenario/scenario.hpp"

namespace skewbench::explore {

// A scenario as it ran, and the first invariant it broke.
struct Ran {
  scenario::Scenario scenario;
  runner::ScenarioResult result;
  std::optional<Breach> breach;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual infra::Engine kind() const = 0;
  // Runs the scenario `document` holds (its id new to this engine) and holds
  // it to the bounds' invariants. A fault of the services is the result's
  // ERROR; throws Interrupted when asked to stop.
  virtual Ran run(const nlohmann::json& document) = 0;
  // The environment a finding's evidence records.
  virtual evidence::RunEnvironment environment() = 0;
};

std::unique_ptr<Engine> in_process_engine(const Bounds& bounds);

// Starts the services `services` describes (throws InfrastructureError when
// one cannot start); `stop` is read between steps.
std::unique_ptr<Engine> real_engine(const Bounds& bounds, const runner::StackOptions& services,
                                    const std::atomic<bool>* stop);

}  // namespace skewbench::explore
