#pragma once

// A finding of the in-process engine, run again on the real stack: its
// minimal scenario on a PostgreSQL cluster and a remote-effect process
// skewbench starts, held to the same invariants. The two engines must agree
// on every measured value; where they do not, skewbench has a bug, and the
// finding says so.

#include <atomic>

#include "explore/explore.hpp"
#include "runner/stack.hpp"

namespace skewbench::explore {

// Sets each finding's confirmation. Throws InfrastructureError when the
// services cannot be started.
void confirm_on_real_stack(const Bounds& bounds, ExploreOutcome& outcome, runner::StackOptions services,
                           const std::atomic<bool>* stop);

}  // namespace skewbench::explore
