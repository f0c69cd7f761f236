#pragma once

// The checks run and sweep make before any service starts. Each tells the
// observer why it failed (the command then exits 2).

#include <memory>
#include <vector>

#include "app/observer.hpp"
#include "artifacts/out_folder.hpp"
#include "runner/stack.hpp"
#include "scenario/scenario.hpp"

namespace skewbench::app {

// --remote-url (or that the remote-effect to start exists) and --postgres-bin.
bool service_options_are_usable(const runner::StackOptions& services, Observer& observer);

// Against --remote-url, every scenario that declares a dedupe mode needs the
// service to run in it.
bool remote_modes_match(const runner::StackOptions& services, const std::vector<scenario::Scenario>& scenarios,
                        Observer& observer);

// An --out folder, checked, locked and probed; nullptr when it cannot be used.
std::unique_ptr<artifacts::OutFolder> open_out_folder(const artifacts::OutFolderRequest& request, Observer& observer);

}  // namespace skewbench::app
