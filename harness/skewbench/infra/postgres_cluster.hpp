#pragma once

// A throwaway PostgreSQL cluster: initdb into a temporary directory (as the
// postgres user when we are root, since PostgreSQL refuses to run as root),
// trust authentication, listening on 127.0.0.1 at a free port. pg_ctl stops it
// and the directory is removed when the object goes away.

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
  // Stops the server now (pg_ctl -m fast). Idempotent.
  void stop();

 private:
  std::vector<std::string> as_postgres(std::vector<std::string> argv) const;

  void start_watchdog();

  std::filesystem::path bindir_;
  TempDir dir_;
  int port_ = 0;
  bool running_ = false;
  bool as_root_ = false;
  // A shell that stops the server and removes its directory if skewbench dies
  // without cleaning up (SIGKILL): it gets SIGTERM when its parent exits.
  std::unique_ptr<Subprocess> watchdog_;
};

}  // namespace skewbench::infra
