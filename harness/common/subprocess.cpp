#include "common/subprocess.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/errors.hpp"
#include "common/loopback_port.hpp"
#include "common/process_tree.hpp"

namespace skewbench {
namespace {

std::vector<char*> to_argv(const std::vector<std::string>& args) {
  std::vector<char*> out;
  out.reserve(args.size() + 1);
  for (const auto& a : args) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

[[noreturn]] void exec_or_die(const std::vector<std::string>& argv) {
  auto cargv = to_argv(argv);
  ::execvp(cargv[0], cargv.data());
  const std::string msg = "cannot execute " + argv[0] + ": " + std::strerror(errno) + "\n";
  [[maybe_unused]] auto ignored = ::write(STDERR_FILENO, msg.data(), msg.size());
  ::_exit(127);
}

// In a forked child: become the given user, then ask for `signal_number` when
// the parent dies. The order matters: changing the user clears the request.
void become_child_of(pid_t parent, const std::optional<RunAs>& run_as, int signal_number) {
  if (run_as) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(run_as->gid) != 0 || ::setuid(run_as->uid) != 0) {
      const std::string msg = std::string("cannot change user: ") + std::strerror(errno) + "\n";
      [[maybe_unused]] auto ignored = ::write(STDERR_FILENO, msg.data(), msg.size());
      ::_exit(127);
    }
  }
  ::prctl(PR_SET_PDEATHSIG, signal_number);
  if (::getppid() != parent) ::_exit(1);  // the parent died before the request took effect
}

// Signals `pid` only while it is a descendant of this process: a pidfd pins
// the process, so a pid reused after the check cannot be hit.
void signal_descendant(pid_t pid, int signal_number) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return;  // gone
  if (process_tree::is_descendant_of(pid, ::getpid())) {
    ::syscall(SYS_pidfd_send_signal, pidfd, signal_number, nullptr, 0);
  }
  ::close(pidfd);
}

// Reaps each child of this process that has exited; returns how many
// descendants are still alive.
std::size_t reap_and_count_alive() {
  std::size_t alive = 0;
  for (const auto& entry : process_tree::descendants_of(::getpid())) {
    if (entry.zombie && entry.parent == ::getpid()) {
      int status = 0;
      ::waitpid(entry.pid, &status, WNOHANG);
    } else if (!entry.zombie) {
      ++alive;
    }
  }
  return alive;
}

// Waits up to `timeout` for every descendant to exit, reaping; true when none is left.
bool wait_for_no_descendants(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (reap_and_count_alive() == 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void signal_descendants(int signal_number) {
  for (const auto& entry : process_tree::descendants_of(::getpid())) {
    if (!entry.zombie) signal_descendant(entry.pid, signal_number);
  }
}

std::string holder_names(const std::vector<pid_t>& pids) {
  if (pids.empty()) return "a process skewbench cannot see";
  std::string names;
  for (const pid_t pid : pids) {
    if (!names.empty()) names += ", ";
    const auto command = process_tree::command_line_of(pid);
    names += "pid " + std::to_string(pid) + " (" + (command.empty() ? "no command line" : command) + ")";
  }
  return names;
}

}  // namespace

void remove_clock_leftovers(const std::vector<pid_t>& pids) {
  for (const pid_t pid : pids) {
    const auto entry = process_tree::entry_of(pid);
    if (entry && !entry->zombie) continue;  // still alive: its files are its own
    const auto id = std::to_string(pid);
    ::unlink(("/dev/shm/faketime_shm_" + id).c_str());
    ::unlink(("/dev/shm/sem.faketime_sem_" + id).c_str());
  }
}

void become_subreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    throw std::runtime_error(std::string("cannot become a child subreaper: ") + std::strerror(errno));
  }
}

std::size_t end_descendants(std::chrono::milliseconds grace) {
  if (!process_tree::proc_is_own_namespace()) return 0;
  const std::size_t alive = reap_and_count_alive();
  if (alive == 0) return 0;
  std::vector<pid_t> ended;
  for (const auto& entry : process_tree::descendants_of(::getpid())) ended.push_back(entry.pid);
  const struct Cleanup {
    const std::vector<pid_t>& pids;
    ~Cleanup() { remove_clock_leftovers(pids); }
  } cleanup{ended};
  signal_descendants(SIGTERM);
  if (wait_for_no_descendants(grace)) return alive;
  // A SIGKILLed parent's children become ours and are found on the next pass.
  for (int pass = 0; pass < 10; ++pass) {
    signal_descendants(SIGKILL);
    if (wait_for_no_descendants(std::chrono::milliseconds(500))) break;
  }
  return alive;
}

void require_own_listener(int port, const std::string& what) {
  if (!process_tree::proc_is_own_namespace()) return;
  const auto inodes = process_tree::listening_socket_inodes(port);
  if (inodes.empty()) {
    throw InfrastructureError(what + " was ready, but no socket listens on its port " + std::to_string(port) +
                              " in this network namespace: it does not serve there, or what its readiness check "
                              "reached is not a process skewbench started");
  }
  if (const auto holder = foreign_listener(port)) {
    throw PortTaken("port " + std::to_string(port) + ", where " + what + " should listen, is held by " + *holder +
                    ", which skewbench did not start: what answers there is not " + what + " it started");
  }
}

std::optional<std::string> foreign_listener(int port) {
  if (!process_tree::proc_is_own_namespace()) return std::nullopt;
  const auto inodes = process_tree::listening_socket_inodes(port);
  if (inodes.empty()) return std::nullopt;
  std::vector<pid_t> own;
  for (const auto& entry : process_tree::descendants_of(::getpid())) {
    if (!entry.zombie) own.push_back(entry.pid);
  }
  for (const auto inode : inodes) {
    if (!own.empty() && !process_tree::holders_of_socket(inode, own).empty()) continue;
    return holder_names(process_tree::holders_of_socket(inode, {}));
  }
  return std::nullopt;
}

RunAs RunAs::user(const std::string& name) {
  const passwd* pw = ::getpwnam(name.c_str());
  if (pw == nullptr) throw std::runtime_error("there is no user \"" + name + "\"");
  return {pw->pw_uid, pw->pw_gid};
}

CommandResult run_command(const std::vector<std::string>& argv, std::optional<RunAs> run_as) {
  if (argv.empty()) throw std::invalid_argument("run_command: empty argv");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    become_child_of(parent, run_as, SIGKILL);
    ::setpgid(0, 0);  // Ctrl-C reaches skewbench, which decides; not initdb or pg_ctl
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    exec_or_die(argv);
  }
  ::close(pipe_fds[1]);
  CommandResult result;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof(buf));
    if (n > 0) {
      result.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = decode_status(status);
  return result;
}

Subprocess::Subprocess(const std::vector<std::string>& argv, const Options& options) {
  if (argv.empty()) throw std::invalid_argument("Subprocess: empty argv");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  int stderr_fd = -1;
  if (options.stderr_path) {
    stderr_fd = ::open(options.stderr_path->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (stderr_fd < 0) {
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
      throw std::runtime_error("cannot open " + *options.stderr_path + ": " + std::strerror(errno));
    }
  }
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    const std::string reason = std::strerror(errno);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    if (stderr_fd >= 0) ::close(stderr_fd);
    throw std::runtime_error("fork failed: " + reason);
  }
  if (pid_ == 0) {
    // The child must not outlive a parent that was killed without cleanup.
    become_child_of(parent, options.run_as, options.parent_death_signal);
    ::setpgid(0, 0);  // Ctrl-C in the terminal reaches the parent only; it stops us.
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    if (stderr_fd >= 0) ::dup2(stderr_fd, STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    for (const auto& [key, value] : options.env) ::setenv(key.c_str(), value.c_str(), 1);
    exec_or_die(argv);
  }
  ::close(pipe_fds[1]);
  if (stderr_fd >= 0) ::close(stderr_fd);
  stdout_fd_ = pipe_fds[0];
}

Subprocess::~Subprocess() {
  if (running()) stop();
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
}

std::optional<std::string> Subprocess::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd pfd{stdout_fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char buf[4096];
    const ssize_t n = ::read(stdout_fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

void Subprocess::note_tree() {
  if (!process_tree::proc_is_own_namespace()) return;
  for (const auto& entry : process_tree::descendants_of(pid_)) tree_.insert(entry.pid);
}

void Subprocess::send_signal(int signal_number) {
  if (!running()) return;
  note_tree();
  ::kill(pid_, signal_number);
}

void Subprocess::signal_group(int signal_number) {
  if (!running()) return;
  note_tree();
  ::kill(-pid_, signal_number);
}

std::optional<int> Subprocess::wait_for_exit(std::chrono::milliseconds timeout) {
  if (exit_code_) return exit_code_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = decode_status(status);
      std::vector<pid_t> ended(tree_.begin(), tree_.end());
      ended.push_back(pid_);
      remove_clock_leftovers(ended);
      return exit_code_;
    }
    if (r < 0 && errno != EINTR) {
      exit_code_ = -1;
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int Subprocess::stop(std::chrono::milliseconds grace) {
  if (!running()) return *exit_code_;
  send_signal(SIGTERM);
  if (auto code = wait_for_exit(grace)) return *code;
  send_signal(SIGKILL);
  return wait_for_exit(std::chrono::milliseconds(10000)).value_or(-1);
}

}  // namespace skewbench
