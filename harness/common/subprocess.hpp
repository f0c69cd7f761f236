#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <csignal>

#include <sys/types.h>

namespace skewbench {

// Result of a command run to completion.
struct CommandResult {
  int exit_code = -1;  // 128 + signal when the command was killed by a signal
  std::string output;  // stdout and stderr, interleaved
};

// A user for a child to run as (resolved before fork: getpwnam is not safe
// between fork and exec in a threaded program).
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
  // Resolves a user name; throws std::runtime_error when there is none.
  static RunAs user(const std::string& name);
};

// Runs argv to completion and returns its exit code and output. The command
// is killed (SIGKILL) if this process dies first, so that an initdb or a
// pg_ctl never outlives the run that started it. Throws std::runtime_error
// when the program cannot be started.
CommandResult run_command(const std::vector<std::string>& argv, std::optional<RunAs> run_as = std::nullopt);

// A child process that lives as long as this object. Its stdout is a pipe the
// parent reads line by line (a service's ready line); its stderr is inherited or
// sent to a file. The child gets a signal (SIGTERM unless told otherwise) if
// the thread that started it dies, also when it runs as another user, and the
// destructor stops it: SIGTERM, a grace period, then SIGKILL.
class Subprocess {
 public:
  struct Options {
    std::map<std::string, std::string> env;  // added to the inherited environment
    std::optional<std::string> stderr_path;  // append stderr here instead of inheriting it
    std::optional<RunAs> run_as;             // drop to this user before exec (we are root)
    int parent_death_signal = SIGTERM;
  };

  Subprocess(const std::vector<std::string>& argv, const Options& options);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }

  // Reads one line from the child's stdout. Returns nullopt on EOF or when the
  // timeout passes first.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);

  void send_signal(int signal_number);
  // To the child's whole process group (it leads one): also what it forked.
  void signal_group(int signal_number);

  // Waits for the child to exit; returns its exit code (128+signal when killed),
  // or nullopt when the timeout passed.
  std::optional<int> wait_for_exit(std::chrono::milliseconds timeout);

  // SIGTERM, wait up to `grace`, then SIGKILL. Returns the exit code.
  int stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

  bool running() const { return !exit_code_.has_value(); }

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  std::optional<int> exit_code_;
};

}  // namespace skewbench
