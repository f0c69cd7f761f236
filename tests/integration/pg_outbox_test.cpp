// The PostgreSQL outbox adapter against a real cluster: each call is one
// statement sent on its own, and the single-statement commit keeps the
// business commit and its outbox row together or leaves neither.

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/errors.hpp"
#include "infra/pg_outbox.hpp"
#include "infra/postgres_cluster.hpp"
#include "infra/pqxx_compat.hpp"
#include "runner/runner.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::Equals;

namespace {

infra::PostgresCluster& cluster() {
  static infra::PostgresCluster c;
  return c;
}

// Outbox rows of one operation, read on a connection of its own.
long outbox_rows(const std::string& run_id, const std::string& operation_id) {
  pqxx::connection c(cluster().url());
  pqxx::nontransaction tx(c);
  const auto r = infra::pq::exec(tx, "SELECT count(*) FROM skewbench.outbox WHERE run_id = $1 AND operation_id = $2",
                                 run_id, operation_id);
  return r[0][0].as<long>();
}

std::string no_row_error(const char* statement, const std::string& operation_id) {
  return std::string("outbox: ") + statement + " changed 0 rows for operation " + operation_id + " (expected 1)";
}

}  // namespace

TEST_CASE("an outbox write is one round trip that commits, a read one round trip that does not") {
  infra::PgOutbox outbox(cluster().url(), runner::new_run_id());
  const auto before = outbox.wire_count();
  outbox.declare_operation("op-trips", 7);
  outbox.commit_operation("op-trips", "op-trips.key", 60);
  outbox.record_attempt("op-trips", 100);
  outbox.record_outcome("op-trips", infra::TransportOutcome::AckUnknown, false, 100);
  outbox.mark_delivered("op-trips", 101);
  const auto row = outbox.read("op-trips");
  CHECK(outbox.wire_count().round_trips - before.round_trips == 6);
  CHECK(outbox.wire_count().commits - before.commits == 5);
  CHECK(row.business_state == infra::BusinessState::Committed);
  CHECK(row.business_version == 8);
  CHECK(row.idempotency_key == "op-trips.key");
  CHECK(row.status == infra::OutboxStatus::Delivered);
  CHECK(row.delivery_attempts == 1);
  CHECK(row.key_expires_at_s == 160);
  CHECK(row.last_transport_outcome == "ACK_UNKNOWN");
  CHECK(row.delivered_at_s == 101);
}

TEST_CASE("committing an operation answers with the row it wrote, as a read then finds it") {
  infra::PgOutbox outbox(cluster().url(), runner::new_run_id());
  outbox.declare_operation("op-answer", 41);
  const auto before = outbox.wire_count();
  const auto committed = outbox.commit_operation("op-answer", "op-answer.key", 45);
  // One round trip: the row comes back from the statement that wrote it.
  CHECK(outbox.wire_count().round_trips - before.round_trips == 1);
  const auto read = outbox.read("op-answer");
  CHECK(committed.operation_id == "op-answer");
  CHECK(committed.business_state == infra::BusinessState::Committed);
  CHECK(committed.business_version == 42);
  CHECK(committed.idempotency_key == "op-answer.key");
  CHECK(committed.ttl_s == 45);
  CHECK(committed.status == infra::OutboxStatus::Pending);
  CHECK(committed.delivery_attempts == 0);
  CHECK_FALSE(committed.key_expires_at_s.has_value());
  CHECK(committed.business_state == read.business_state);
  CHECK(committed.business_version == read.business_version);
  CHECK(committed.idempotency_key == read.idempotency_key);
  CHECK(committed.ttl_s == read.ttl_s);
  CHECK(committed.status == read.status);
  CHECK(committed.delivery_attempts == read.delivery_attempts);
  CHECK(committed.key_created_at_s == read.key_created_at_s);
  CHECK(committed.last_transport_outcome == read.last_transport_outcome);
  CHECK(committed.delivered_at_s == read.delivered_at_s);
}

TEST_CASE("committing an operation twice raises the same error and leaves its one outbox row as it was") {
  const auto run_id = runner::new_run_id();
  infra::PgOutbox outbox(cluster().url(), run_id);
  outbox.declare_operation("op-twice", 3);
  outbox.commit_operation("op-twice", "op-twice.first", 60);
  CHECK_THROWS_WITH(outbox.commit_operation("op-twice", "op-twice.second", 30),
                    Equals(no_row_error("commit_business", "op-twice")));
  const auto row = outbox.read("op-twice");
  CHECK(row.business_version == 4);
  CHECK(row.idempotency_key == "op-twice.first");
  CHECK(row.ttl_s == 60);
  CHECK(outbox_rows(run_id, "op-twice") == 1);
  // An operation never declared: nothing to commit, no outbox row.
  CHECK_THROWS_WITH(outbox.commit_operation("op-undeclared", "op-undeclared.key", 60),
                    Equals(no_row_error("commit_business", "op-undeclared")));
  CHECK(outbox_rows(run_id, "op-undeclared") == 0);
  CHECK_THROWS_WITH(outbox.record_attempt("op-undeclared", 5), Equals(no_row_error("record_attempt", "op-undeclared")));
  CHECK_THROWS_WITH(outbox.declare_operation("op-twice", 3),
                    ContainsSubstring("PostgreSQL failed during declare_operation"));
}

TEST_CASE("a commit whose outbox row cannot be inserted leaves the business operation absent") {
  const auto run_id = runner::new_run_id();
  infra::PgOutbox outbox(cluster().url(), run_id);
  outbox.declare_operation("op-holder", 1);
  outbox.commit_operation("op-holder", run_id + ".shared-key", 60);
  outbox.declare_operation("op-clash", 1);
  // The idempotency key is unique: the outbox insert fails, and with it the
  // business update of the same statement.
  CHECK_THROWS_WITH(outbox.commit_operation("op-clash", run_id + ".shared-key", 60),
                    ContainsSubstring("PostgreSQL failed during commit_operation"));
  const auto row = outbox.read("op-clash");
  CHECK(row.business_state == infra::BusinessState::Absent);
  CHECK(row.business_version == 1);
  CHECK(row.status == infra::OutboxStatus::Absent);
  CHECK(outbox_rows(run_id, "op-clash") == 0);
  // The connection is usable after the failed statement.
  outbox.commit_operation("op-clash", run_id + ".own-key", 60);
  CHECK(outbox.read("op-clash").business_state == infra::BusinessState::Committed);
}

namespace {

// The server and every backend it forked, stopped (SIGSTOP) or resumed.
void signal_cluster(int signal) {
  const pid_t server = cluster().pid();
  ::kill(server, signal);
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string pid, name, state;
    pid_t parent = 0;
    // /proc/PID/stat: pid (comm) state ppid ...; a backend's comm has no spaces.
    if (stat >> pid >> name >> state >> parent && parent == server) ::kill(std::stoi(pid), signal);
  }
}

}  // namespace

TEST_CASE("a database that stops answering mid-call fails with the client-side deadline, after many calls too") {
  infra::PgOutbox outbox(cluster().url(), runner::new_run_id(), {.timeout_s = 1});
  outbox.declare_operation("op-stopped", 1);
  // Many short calls first: the deadline was armed and disarmed each time.
  for (int i = 0; i < 50; ++i) outbox.read("op-stopped");
  signal_cluster(SIGSTOP);
  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(outbox.record_attempt("op-stopped", 5),
                    Equals("PostgreSQL did not answer record_attempt within 2 s (--db-timeout + 1 s); the connection "
                           "was closed"));
  const auto waited = std::chrono::steady_clock::now() - started;
  signal_cluster(SIGCONT);
  CHECK(waited >= std::chrono::seconds(2));
  CHECK(waited < std::chrono::seconds(4));
  // The statement sent may still run when the server resumes: its answer was
  // lost, not necessarily its effect. The connection is new and usable.
  outbox.reconnect();
  CHECK(outbox.read("op-stopped").delivery_attempts <= 1);
}
