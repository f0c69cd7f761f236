#pragma once

// What a pipeline tells its caller while it works. The commands print the
// lines on stderr; the bench times the phases.

#include <string>

namespace skewbench::app {

// The phases of a run, in order. A sweep passes through `services` and
// `cells`; a run through `services`, `scenarios` and `evidence`.
enum class Phase { services, scenarios, cells, evidence };

class Observer {
 public:
  Observer() = default;
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;
  virtual ~Observer() = default;

  // One line for the user: progress, a warning or why the pipeline stopped
  // (without the program's name).
  virtual void say(const std::string& line) = 0;
  // The pipeline begins `phase`.
  virtual void entering(Phase /*phase*/) {}
};

}  // namespace skewbench::app
