#pragma once

// A throwaway PostgreSQL cluster: initdb into a temporary directory (as the
// postgres user when we are root, since PostgreSQL refuses to run as root),
// trust authentication, listening on 127.0.0.1 at a free port. The postmaster
// is a child of this process that gets SIGQUIT (immediate shutdown) if we die
// at any moment, initdb is killed with us, and the directory carries our pid,
// so a later run removes it once we are gone (see TempDir).

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "common/subprocess.hpp"
#include "infra/database_description.hpp"

namespace skewbench::infra {

// Where find_postgres_binaries looks, in its order of preference. The
// defaults (default_postgres_search) are this machine's.
struct PostgresSearch {
  std::optional<std::filesystem::path> flag = std::nullopt;  // --postgres-bin
  std::optional<std::filesystem::path> env =
      std::nullopt;                                 // $SKEWBENCH_POSTGRES_BIN, or the older $SKEWBENCH_PG_BINDIR
  std::string env_name = "SKEWBENCH_POSTGRES_BIN";  // named in errors
  std::optional<std::filesystem::path> cache =
      std::nullopt;                                // <cache dir>/postgresql-17.6.0, used once its marker exists
  std::vector<std::filesystem::path> system = {};  // pg_config --bindir, then /usr/lib/postgresql/*/bin, newest first
  // Reads `BIN_DIR/postgres --version` (as the postgres user when we are
  // root, since that user runs the server); empty when it does not run.
  std::function<std::string(const std::filesystem::path& bin_dir)> version_of = nullptr;
};

// The PostgreSQL release skewbench's scripts install into the cache, and the
// marker file they write last.
inline constexpr const char* kCachedPostgresDir = "postgresql-17.6.0";
inline constexpr const char* kCachedPostgresMarker = ".skewbench-complete";
// Among system servers, this major is preferred: the published #018 run's.
inline constexpr int kPreferredPostgresMajor = 17;

// $SKEWBENCH_CACHE_DIR, else /var/cache/skewbench for root, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/skewbench; nullopt when none can be named.
std::optional<std::filesystem::path> skewbench_cache_dir();

// The search on this machine, with FLAG as --postgres-bin.
PostgresSearch default_postgres_search(std::optional<std::filesystem::path> flag = std::nullopt);

// Chooses the binaries: the flag; the environment variable; the cached 17.6;
// a system PostgreSQL 17; any system PostgreSQL (pg_config's first, then the
// newest). An explicit directory without initdb and pg_ctl is an error, never
// skipped. Throws InfrastructureError, with an install hint, when none is found.
PostgresBinaries find_postgres_binaries(const PostgresSearch& search);

// True when DIR holds initdb, pg_ctl and postgres.
bool is_postgres_bindir(const std::filesystem::path& dir);

// The major release in `postgres --version` output, 0 when there is none.
int postgres_major_of(const std::string& version);

class PostgresCluster {
 public:
  // Without BINARIES, find_postgres_binaries(default_postgres_search()) chooses.
  // Each of `settings` ("name=value") is passed to the server as -c.
  explicit PostgresCluster(std::optional<PostgresBinaries> binaries = std::nullopt,
                           std::vector<std::string> settings = {});
  ~PostgresCluster();
  PostgresCluster(const PostgresCluster&) = delete;
  PostgresCluster& operator=(const PostgresCluster&) = delete;

  // postgresql://postgres@127.0.0.1:PORT/postgres
  std::string url() const;
  int port() const { return port_; }
  // The ports its start gave up, each with why: taken by another process
  // before the server bound them (start_on_free_port).
  const std::vector<std::string>& ports_given_up() const { return ports_given_up_; }
  bool running() const;
  pid_t pid() const { return server_ ? server_->pid() : -1; }
  const PostgresBinaries& binaries() const { return binaries_; }
  // Stops the server now (fast shutdown: connections are ended). Idempotent.
  void stop();
  // Stops the server as a crash would (immediate shutdown, no checkpoint).
  void stop_immediately();
  // Starts a stopped server again on the same port and data (after stop(),
  // stop_immediately(), or to restart a running one). Throws InfrastructureError.
  void restart();

 private:
  void start(int port);
  // Stops the server and throws when what listens on its port is not it.
  void require_own_port();
  void start_watchdog();
  std::filesystem::path data_dir() const;

  PostgresBinaries binaries_;
  std::vector<std::string> settings_;
  std::filesystem::path bindir_;
  TempDir dir_;
  std::optional<RunAs> run_as_;
  int port_ = 0;
  std::vector<std::string> ports_given_up_;
  std::unique_ptr<Subprocess> server_;
  std::unique_ptr<Subprocess> watchdog_;
};

}  // namespace skewbench::infra
