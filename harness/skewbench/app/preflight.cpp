#include "app/preflight.hpp"

#include "runner/session.hpp"

namespace skewbench::app {

bool service_options_are_usable(const runner::StackOptions& services, Observer& observer) {
  const auto problem = runner::service_options_problem(services);
  if (problem) observer.say(*problem);
  return !problem;
}

bool remote_modes_match(const runner::StackOptions& services, const std::vector<scenario::Scenario>& scenarios,
                        Observer& observer) {
  const auto problem = runner::remote_mode_problem(services, scenarios);
  if (problem) observer.say(*problem);
  return !problem;
}

std::unique_ptr<artifacts::OutFolder> open_out_folder(const artifacts::OutFolderRequest& request, Observer& observer) {
  try {
    return std::make_unique<artifacts::OutFolder>(request);
  } catch (const artifacts::OutFolderError& e) {
    observer.say(e.what());
    return nullptr;
  }
}

}  // namespace skewbench::app
