#pragma once

// The backing store of a service under test (a target's Redis, its DynamoDB
// stand-in), when it runs as a process of its own: started from a command,
// ready when its port accepts a connection, restarted as a crash (SIGKILL to
// its whole process group) on the same port and data folder, and stopped with
// the stack. Its clock is the environment's business (libfaketime's, given by
// the caller), like the instances'. docs/targets.md describes the target
// files that declare one.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/subprocess.hpp"

namespace skewbench::infra {

struct StoreOptions {
  std::string name;  // its log's and clock file's name ("redis", "dynalite")
  // Run as `exec env COMMAND` by /bin/sh; {store_port}, {store_dir} and
  // `placeholders` are filled in, shell-quoted, in one pass.
  std::string command;
  std::map<std::string, std::string> env;           // added to its environment; values may hold the same placeholders
  std::map<std::string, std::string> placeholders;  // more "{name}" values (a target's {target_dir})
  // Which library makes it read the clock skewbench drives ("libfaketime",
  // or "skewbench" for a program libfaketime cannot start: docs/real-clocks.md).
  std::string wall_clock = "libfaketime";
  // Asks the store its wall clock (Redis: `redis-cli -p {store_port} TIME`):
  // one command, run as `exec env COMMAND` by /bin/sh like the store's, with
  // the same placeholders, outside the clock library (it asks; the store
  // answers by its own clock); the first whole number on its standard output
  // is the store's Unix second, and its standard error goes to the store's
  // log. Empty: the store cannot be asked.
  std::string clock_probe;
  // A command that exits 0 once the store serves (`pg_isready -p {store_port}`:
  // PostgreSQL accepts connections while it still recovers), run like the
  // clock probe, after the port accepts a connection and until it exits 0.
  // Empty: a connection to the port is enough.
  std::string ready_command;
  // When skewbench runs as root, the store runs as this user (a server that
  // refuses root, as PostgreSQL does): its data folder is handed to the user,
  // and the folder holding it and its clock file is made traversable (not
  // readable) by others. Ignored when skewbench is not root.
  std::optional<std::string> run_as;
  std::chrono::milliseconds ready_timeout{10000};
  std::chrono::seconds probe_timeout{10};  // for one answer of the clock probe
};

class StoreProcess {
 public:
  // Starts the store on a free loopback port with `data_dir` as its folder
  // (created), logging to `log_path`, with `clock_env` added to its
  // environment; on another port when that one is taken before the store
  // binds it (start_on_free_port; ports_given_up() says why). Throws
  // InfrastructureError when it exits or does not accept a connection within
  // the ready timeout (the message holds its log).
  StoreProcess(StoreOptions options, std::filesystem::path data_dir, std::filesystem::path log_path,
               std::map<std::string, std::string> clock_env);
  ~StoreProcess();
  StoreProcess(const StoreProcess&) = delete;
  StoreProcess& operator=(const StoreProcess&) = delete;

  int port() const { return port_; }
  const std::vector<std::string>& ports_given_up() const { return ports_given_up_; }
  const std::string& name() const { return options_.name; }
  pid_t pid() const { return process_->pid(); }
  // Its {store_port} and {store_dir}, for the service's command and
  // environment to name it by.
  std::map<std::string, std::string> placeholders() const;
  // Kills the store's process group (a crash: what it had not written is
  // lost) and starts it again on the same port and folder.
  void restart();
  // The store's wall clock as it reads it, through the clock probe; nullopt
  // when the target declares none. Throws InfrastructureError when the probe
  // fails or prints no number.
  std::optional<std::int64_t> wall_clock_s() const;

 private:
  void start();
  // Ends the store and throws when what listens on its port is not it.
  void require_own_port();
  // As root with run_as: resolves the user, hands it the data folder.
  void hand_over_to_user();
  // Runs one of the target's commands about the store (a probe) with its
  // placeholders, outside the clock library, within `timeout`.
  CommandResult run_probe(const std::string& command, std::chrono::seconds timeout) const;
  // True once the ready command exits 0 (or there is none).
  bool serves() const;
  // The target's placeholders and the store's own, and a command of the
  // target's with them filled in (shell-quoted).
  std::map<std::string, std::string> all_placeholders() const;
  std::string expanded(const std::string& command) const;

  StoreOptions options_;
  std::filesystem::path data_dir_;
  std::filesystem::path log_path_;
  std::map<std::string, std::string> clock_env_;
  int port_ = 0;
  std::vector<std::string> ports_given_up_;
  std::optional<RunAs> run_as_;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace skewbench::infra
