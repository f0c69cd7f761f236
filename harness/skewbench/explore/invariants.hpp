#pragma once

// The invariants of a bounds file, held against a scenario's result.

#include <optional>
#include <string>

#include "explore/bounds.hpp"
#include "runner/runner.hpp"
#include "scenario/scenario.hpp"

namespace skewbench::explore {

struct Breach {
  std::size_t invariant = 0;  // index into Bounds::invariants
  std::string why;            // what was measured, in a sentence
};

// Holds `result`, as the runner returned it, to the count rule first
// (evidence::hold_counts, which makes it an ERROR where the counts cannot be
// true), then to `bounds`' invariants in their order; returns the first one
// it breaks, nullopt when every one holds.
std::optional<Breach> first_breach(const Bounds& bounds, const scenario::Scenario& scenario,
                                   runner::ScenarioResult& result);

}  // namespace skewbench::explore
