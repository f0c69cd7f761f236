#pragma once

// The database a run used, as its evidence records it: plain values that the
// PostgreSQL adapters fill in (PgOutbox::info(), a started cluster's
// binaries), so that the evidence describes the database without depending
// on an adapter, and never sees a password.

#include <filesystem>
#include <optional>
#include <string>

namespace skewbench::infra {

// What the server says of itself.
struct PostgresInfo {
  std::string server_version;  // SHOW server_version, e.g. "17.6 (Debian ...)"
  int server_version_num = 0;  // e.g. 170006
  // The settings that decide what a commit survives, as the server reports
  // them ("on" or "off"): fsync, synchronous_commit, full_page_writes.
  std::string fsync;
  std::string synchronous_commit;
  std::string full_page_writes;
  int major() const { return server_version_num / 10000; }
};

// The server binaries a throwaway cluster runs on.
struct PostgresBinaries {
  std::filesystem::path bin_dir;  // holds initdb, pg_ctl and postgres
  std::string source;             // "flag", "env", "cache" or "system"
  std::string version;            // what `postgres --version` says, e.g. "postgres (PostgreSQL) 17.6"
};

struct DatabaseDescription {
  PostgresInfo server;
  std::string redacted_url;                 // the connection URL without credentials
  std::optional<PostgresBinaries> started;  // the binaries of a cluster skewbench started; empty when external
};

// Removes a scheme's credentials from a connection URL for evidence files.
std::string redact_url(const std::string& url);

// The description of a database reached at `database_url`; `started` is null
// for an external database.
DatabaseDescription describe_database(const PostgresInfo& server, const std::string& database_url,
                                      const PostgresBinaries* started);

}  // namespace skewbench::infra
