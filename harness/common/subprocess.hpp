#pragma once

// The supervisor: the one place that starts and ends the processes skewbench
// runs (the remote-effect service, instances, targets' services and stores,
// PostgreSQL, short commands). Each child leads a process group of its own and
// is SIGKILLed when the thread that started it dies (PR_SET_PDEATHSIG); the
// program that supervises (skewbench's main) adopts what its children leave
// behind (become_subreaper) and ends every descendant when it ends
// (end_descendants). Nothing here signals a process that is not a descendant
// of this one: no process group of its own, no name, no port's owner.

#include <chrono>
#include <map>
#include <optional>
#include <set>
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

// libfaketime 0.9.10 leaves /dev/shm/faketime_shm_PID and
// /dev/shm/sem.faketime_sem_PID behind a process that does not exit normally
// (a SIGKILL), and a later process given that pid then cannot start. Removes
// them for each of `pids` that has ended (gone, or a zombie not yet reaped);
// the supervisor calls it for every process it ends.
void remove_clock_leftovers(const std::vector<pid_t>& pids);

// Makes this process a child subreaper (PR_SET_CHILD_SUBREAPER): a descendant
// whose parent exits (a service that double-forks, or forks, calls setsid and
// exits) becomes its child instead of init's, so end_descendants() finds it.
// Call once, at the start of main. Throws std::runtime_error when the kernel
// refuses.
void become_subreaper();

// Ends every descendant of this process still alive: SIGTERM to each, up to
// `grace` for them to exit, then SIGKILL to those left; reaps those that end
// up its children. Descendants are found by walking /proc's parent links from
// this process, and each is signalled through a pidfd taken while it is
// still a descendant. Does nothing when /proc is not of this process's pid
// namespace (it could not tell whose a pid is). Returns how many were alive
// at the start.
std::size_t end_descendants(std::chrono::milliseconds grace);

// Throws InfrastructureError unless every TCP socket listening on `port` is
// held by a descendant of this process, naming `what` (for example "the
// service"), the port, and each other holder's pid and command line. Called
// once a started process is ready, so that skewbench never grades a service
// it did not start. Checks nothing when /proc is not of this pid namespace.
// The exception for a foreign holder is PortTaken (common/loopback_port.hpp).
void require_own_listener(int port, const std::string& what);

// The pids and command lines of the processes holding a socket listening on
// `port` when one of them is not a descendant of this process; nullopt when
// none is (or /proc is not of this pid namespace).
std::optional<std::string> foreign_listener(int port);

// Runs argv to completion and returns its exit code and output. The command
// is killed (SIGKILL) if this process dies first, so that an initdb or a
// pg_ctl never outlives the run that started it. Throws std::runtime_error
// when the program cannot be started.
CommandResult run_command(const std::vector<std::string>& argv, std::optional<RunAs> run_as = std::nullopt);

// A child process that lives as long as this object. Its stdout is a pipe the
// parent reads line by line (a service's ready line); its stderr is inherited or
// sent to a file. The child gets a signal (SIGKILL unless told otherwise) if
// the thread that started it dies, also when it runs as another user, and the
// destructor stops it: SIGTERM, a grace period, then SIGKILL.
class Subprocess {
 public:
  struct Options {
    std::map<std::string, std::string> env;  // added to the inherited environment
    std::optional<std::string> stderr_path;  // append stderr here instead of inheriting it
    std::optional<RunAs> run_as;             // drop to this user before exec (we are root)
    // Only skewbench's own programs that clean up and exit at once may ask
    // for another signal (PostgreSQL's SIGQUIT, its immediate shutdown).
    int parent_death_signal = SIGKILL;
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
  // Notes the descendants of the child before it is signalled (tree_).
  void note_tree();

  pid_t pid_ = -1;
  std::set<pid_t> tree_;  // its descendants when it was signalled: their clock leftovers go with it
  int stdout_fd_ = -1;
  std::string buffer_;
  std::optional<int> exit_code_;
};

}  // namespace skewbench
