#pragma once

// The transactional outbox in PostgreSQL (libpqxx). All rows of one run carry
// its run id, so runs against a long-lived database never collide.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "infra/database_description.hpp"
#include "infra/ports.hpp"

namespace skewbench::infra {

inline constexpr int kOutboxSchemaVersion = 1;

// Every wait on PostgreSQL is bounded (--db-timeout): connecting (libpq
// connect_timeout), each statement on the server (statement_timeout), and each
// transaction from the client side, timeout_s + 1 s, since a server that stops
// answering (SIGSTOP, a dead host) never cancels its own statement.
struct DbTimeouts {
  int timeout_s = 30;
  // When set and it turns true (Ctrl-C), a statement still waiting is cut at
  // once, as its deadline would cut it, instead of waiting out timeout_s, and
  // throws Interrupted.
  const std::atomic<bool>* stop = nullptr;
};

class PgOutbox final : public OutboxApi {
 public:
  // Connects, reads the schema version, creates the schema only when it is
  // absent or older (under an advisory lock, so parallel workers may start at
  // once) and prepares the statements. Throws
  // InfrastructureError when the database cannot be reached or its schema is
  // newer than this harness.
  PgOutbox(const std::string& database_url, std::string run_id, DbTimeouts timeouts = {});
  ~PgOutbox() override;

  void declare_operation(const std::string& operation_id, std::int64_t business_version) override;
  OutboxRow commit_operation(const std::string& operation_id, const std::string& idempotency_key,
                             std::int64_t ttl_s) override;
  void record_attempt(const std::string& operation_id, std::int64_t logical_time_s) override;
  void record_outcome(const std::string& operation_id, TransportOutcome outcome, bool delivered,
                      std::int64_t logical_time_s) override;
  void mark_delivered(const std::string& operation_id, std::int64_t logical_time_s) override;
  OutboxRow read(const std::string& operation_id) override;
  void reconnect() override;

  const PostgresInfo& info() const { return info_; }

  // What the outbox calls above have sent PostgreSQL since this object was
  // made: wire round trips, and of those the ones that commit, which wait for
  // the WAL flush. Each call is one statement sent on its own: a write is one
  // round trip that commits (autocommit), a read one that does not.
  // Connecting and the schema check are not counted; nor is the one extra
  // round trip that prepares a statement on its first use on a connection
  // (libpqxx 6.4 prepares lazily).
  struct WireCount {
    std::uint64_t round_trips = 0;
    std::uint64_t commits = 0;
  };
  const WireCount& wire_count() const { return wire_; }

 private:
  struct Connection;  // wraps pqxx::connection, whose type differs between libpqxx versions
  class Deadline;     // shuts the socket down when a transaction overstays

  template <typename F>
  auto in_transaction(const char* what, F&& body);
  // Sends one prepared statement ($1 run id, $2 operation id, then args) on
  // its own, autocommit, and requires it to change exactly one row.
  template <typename... Args>
  auto write_statement(const char* what, const char* statement, const std::string& operation_id, Args&&... args);
  void connect();
  bool schema_is_current();
  void create_schema();
  void prepare_statements();

  // Runs one round-trip sequence under the client-side deadline; a libpq error
  // after the deadline fired is reported as the timeout it is.
  template <typename F>
  auto bounded(const char* what, F&& body);

  std::unique_ptr<Connection> connection_;
  std::unique_ptr<Deadline> deadline_;
  std::string database_url_;
  DbTimeouts timeouts_;
  std::string run_id_;
  PostgresInfo info_;
  WireCount wire_;
};

// Adds connect_timeout to a libpq URL or key=value connection string.
std::string with_connect_timeout(const std::string& database_url, int timeout_s);

// The connection string skewbench hands to libpq for database_url: with
// connect_timeout, and gssencmode=disable unless the URL or $PGGSSENCMODE
// already chooses a GSSAPI encryption mode.
std::string libpq_connection_string(const std::string& database_url, int timeout_s);

}  // namespace skewbench::infra
