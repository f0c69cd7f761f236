#pragma once

// Starts the real remote-effect binary as a child process and waits for its
// ready line. Used by the driver's embedded mode, the integration tests and
// the benchmark, so that all of them exercise the same executable. It starts
// another service of the same protocol from a command just as well
// (LaunchOptions::command), so that skewbench can restart and switch it too.

#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>
#include <nlohmann/json.hpp>

#include "common/subprocess.hpp"
#include "remote_effect/protocol.hpp"

namespace skewbench::remote_effect {

// When a service of LaunchOptions::command is ready to be asked.
struct Readiness {
  enum class Kind {
    protocol_health,  // GET /health of skewbench's protocol (see LaunchOptions::command)
    http_get,         // GET `value` (a path of its own) answers 2xx
    tcp_port,         // its port accepts a connection
    log_line,         // its log (stdout and stderr) holds `value`, written since it started
  };
  Kind kind = Kind::protocol_health;
  std::string value;

  // What the evidence records: {"http_get": "/healthz"}, {"tcp_port": true}, ...
  nlohmann::json to_json() const;
};

// How a service of LaunchOptions::command is stopped and restarted.
struct Stopping {
  // At the end of a run, and by a graceful restart: this signal to its process
  // group, then SIGKILL when it has not exited within `grace`.
  int signal = SIGTERM;
  std::chrono::milliseconds grace{5000};
  // A restart kills it (SIGKILL to its process group: a crash, what it held
  // only in memory is gone, as a container is removed) unless `graceful`,
  // when it is stopped as above first, as a deploy restarts it.
  bool graceful_restart = false;

  // What the evidence records: {"signal": "SIGTERM", "grace_ms": 5000, "restart": "kill"}.
  nlohmann::json to_json() const;
};

// The signals a service may be stopped with, by name ("SIGTERM", "SIGINT",
// "SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2"); 0 when NAME is none of them.
int stop_signal_named(std::string_view name);
std::string stop_signal_name(int signal_number);

struct LaunchOptions {
  std::string binary;  // path of the remote-effect executable
  // Another service of the protocol instead of the binary: one command,
  // started by /bin/sh with exec (so that it gets the signals), in which
  // {port}, {state_db}, {dedupe} and {host} become the values of this launch
  // (shell-quoted); it also finds them in $PORT, $STATE_DB, $IDEMPOTENCY_MODE,
  // $DEFAULT_TTL_SECONDS and $HOST, and may start with VAR=value. Its stdout
  // goes to stderr_path with its stderr. It is ready when GET /health answers
  // 200 with "status": "ok", where it reports an idempotency_mode the one asked
  // for, and after a restart a boot_id of its own (where it reports one).
  // `port` 0 picks a free one (common/loopback_port.hpp), kept across
  // restarts; when the service exits before it is ready with that port in
  // use by another process, or another process holds it, it is started again
  // on another one, at most kPortAttempts times (ports_given_up() says why).
  // A service that listens on a fixed port is given that port. Signals go to its process group; a
  // restart is a SIGKILL, as a container is removed, unless `stopping` says
  // it is graceful.
  std::optional<std::string> command;
  std::filesystem::path state_db;
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = let the service pick a free port
  std::string sync = "full";
  DedupeMode dedupe = kDefaultDedupeMode;  // --dedupe
  int default_ttl_seconds = 60;
  // --clock: remote-effect only (a service of `command` reads its own clock).
  ClockSource clock = ClockSource::logical;
  // Added to the inherited environment (e.g. libfaketime's, so that the
  // process reads the clock skewbench drives); kept across restarts.
  std::map<std::string, std::string> env;
  // More "{name}" placeholders of `command` and their values (a target's
  // {target_dir}, its store's {store_port}), filled in, shell-quoted, in the
  // same pass as {port}, {state_db}, {dedupe} and {host}.
  std::map<std::string, std::string> placeholders;
  std::vector<std::string> extra_args;     // appended as given (e.g. --max-connections 8)
  std::optional<std::string> stderr_path;  // service log; inherit stderr when empty
  std::chrono::milliseconds ready_timeout{10000};
  // How a service of `command` shows it is ready; a service of its own wire
  // (a black-box target) says which.
  Readiness ready;
  // How a service of `command` is stopped and restarted.
  Stopping stopping;
};

// The placeholders a LaunchOptions::command may hold.
inline constexpr std::string_view kCommandPlaceholders[] = {"{port}", "{state_db}", "{dedupe}", "{host}"};

// The command with its placeholders replaced; throws std::invalid_argument
// naming a "{...}" that is not one of kCommandPlaceholders.
std::string expand_command(const std::string& command, const LaunchOptions& options, int port);

// One running remote-effect process. The destructor stops it (SIGTERM, then
// SIGKILL after a grace period). The child is also sent SIGKILL when the
// thread that started it exits (PR_SET_PDEATHSIG in Subprocess), so start it,
// and restart() it, from a thread that lives as long as the service should.
// Once ready, the socket listening on its port must be held by a descendant
// of this process (require_own_listener), or it is stopped and the start
// throws InfrastructureError naming the holder.
class RemoteEffectProcess {
 public:
  // Starts the binary and waits for its ready line. Throws std::runtime_error
  // carrying the service's own words (from stderr_path, when set) if it exits
  // or stays silent instead.
  explicit RemoteEffectProcess(LaunchOptions options);
  ~RemoteEffectProcess();
  RemoteEffectProcess(const RemoteEffectProcess&) = delete;
  RemoteEffectProcess& operator=(const RemoteEffectProcess&) = delete;

  std::string base_url() const;  // "http://127.0.0.1:PORT"
  int port() const { return port_; }
  const std::string& boot_id() const { return boot_id_; }
  pid_t pid() const;
  const nlohmann::json& ready_line() const { return ready_line_; }
  // The ports its start gave up, each with why ("port 23456: ..."): taken by
  // another process before the service bound them.
  const std::vector<std::string>& ports_given_up() const { return ports_given_up_; }
  bool running() const;

  // Asks the running service once, the way its readiness does (GET /health,
  // or its own path; GET / for one ready by its port or a log line), and
  // returns how long the answer took, whatever its status: how promptly the
  // service's process runs on this machine now. nullopt when no answer
  // began within `deadline`.
  std::optional<std::chrono::microseconds> answer_time(std::chrono::milliseconds deadline) const;

  // SIGKILL and reap: the process gets no chance to clean up (crash tests).
  void kill_hard();

  // SIGTERM (a service of `command`: its stop signal to its process group,
  // SIGKILL after the grace period); returns the exit code (0 for a clean
  // shutdown).
  int stop();

  // Starts the binary again on the same state_db and the same port (stopping
  // it first if it still runs). The new process has a new boot_id.
  void restart();

 private:
  void start(int port);
  void start_command(int port);
  void start_command_on(int port);
  // Polls until the service is ready (LaunchOptions::ready).
  void wait_until_healthy(Subprocess& process, int port, std::uintmax_t log_offset,
                          const std::string& previous_boot_id);

  LaunchOptions options_;
  std::unique_ptr<Subprocess> process_;
  int port_ = 0;
  std::string boot_id_;
  nlohmann::json ready_line_;
  std::optional<int> exit_code_;
  std::vector<std::string> ports_given_up_;
};

}  // namespace skewbench::remote_effect
