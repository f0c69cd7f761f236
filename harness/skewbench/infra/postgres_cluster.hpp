#pragma once

// A throwaway PostgreSQL cluster: initdb into a temporary directory (as the
// postgres user when we are root, since PostgreSQL refuses to run as root),
// trust authentication, listening on 127.0.0.1 at a free port. The postmaster
// is a child of this process that gets SIGQUIT (immediate shutdown) if we die
// at any moment, initdb is killed with us, and the directory carries our pid,
// so a later run removes it once we are gone (see TempDir).

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "common/subprocess.hpp"

namespace skewbench::infra {

// Finds the directory holding initdb and pg_ctl: $SKEWBENCH_PG_BINDIR, then
// `pg_config --bindir`, then the newest /usr/lib/postgresql/*/bin. Throws
// InfrastructureError with an install hint when there is none.
std::filesystem::path find_postgres_bindir();

class PostgresCluster {
 public:
  explicit PostgresCluster(std::optional<std::filesystem::path> bindir = std::nullopt);
  ~PostgresCluster();
  PostgresCluster(const PostgresCluster&) = delete;
  PostgresCluster& operator=(const PostgresCluster&) = delete;

  // postgresql://postgres@127.0.0.1:PORT/postgres
  std::string url() const;
  int port() const { return port_; }
  bool running() const;
  pid_t pid() const { return server_ ? server_->pid() : -1; }
  // Stops the server now (fast shutdown: connections are ended). Idempotent.
  void stop();
  // Stops the server as a crash would (immediate shutdown, no checkpoint).
  void stop_immediately();
  // Starts a stopped server again on the same port and data (after stop(),
  // stop_immediately(), or to restart a running one). Throws InfrastructureError.
  void restart();

 private:
  void start(int port);
  void start_watchdog();
  std::filesystem::path data_dir() const;

  std::filesystem::path bindir_;
  TempDir dir_;
  std::optional<RunAs> run_as_;
  int port_ = 0;
  std::unique_ptr<Subprocess> server_;
  std::unique_ptr<Subprocess> watchdog_;
};

}  // namespace skewbench::infra
