#pragma once

#include <stdexcept>
#include <string>

namespace skewbench {

// The database, the remote service or the machine failed us: the run cannot
// say anything about the scenario. Maps to exit code 3 and verdict ERROR; it is
// never read as a pass.
class InfrastructureError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The user asked us to stop (Ctrl-C, SIGTERM).
class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

// Exit codes of every skewbench command (documented in docs/cli.md, "Exit codes").
namespace exit_code {
inline constexpr int kPass = 0;  // every expectation met
inline constexpr int kExpectationFailed = 1;
inline constexpr int kUsage = 2;           // bad arguments or input files
inline constexpr int kInfrastructure = 3;  // database/remote unreachable, unexpected reply
inline constexpr int kInterrupted = 130;   // SIGINT/SIGTERM; services were stopped
}  // namespace exit_code

}  // namespace skewbench
