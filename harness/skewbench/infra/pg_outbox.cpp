#include "infra/pg_outbox.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include <sys/socket.h>

#include "common/errors.hpp"
#include "infra/pqxx_compat.hpp"

namespace skewbench::infra {
namespace {

constexpr const char* kSchemaSql = R"sql(
CREATE SCHEMA IF NOT EXISTS skewbench;
CREATE TABLE IF NOT EXISTS skewbench.schema_version (
  version     integer PRIMARY KEY,
  description text NOT NULL,
  applied_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS skewbench.business_operation (
  run_id       text   NOT NULL,
  operation_id text   NOT NULL,
  state        text   NOT NULL CHECK (state IN ('absent', 'committed')),
  version      bigint NOT NULL,
  PRIMARY KEY (run_id, operation_id)
);
CREATE TABLE IF NOT EXISTS skewbench.outbox (
  run_id                 text    NOT NULL,
  operation_id           text    NOT NULL,
  idempotency_key        text    NOT NULL UNIQUE,
  ttl_s                  bigint  NOT NULL CHECK (ttl_s > 0),
  key_created_at_s       bigint,
  key_expires_at_s       bigint,
  status                 text    NOT NULL CHECK (status IN ('pending', 'delivered')),
  delivery_attempts      integer NOT NULL DEFAULT 0,
  last_transport_outcome text,
  delivered_at_s         bigint,
  PRIMARY KEY (run_id, operation_id),
  FOREIGN KEY (run_id, operation_id) REFERENCES skewbench.business_operation (run_id, operation_id)
);
INSERT INTO skewbench.schema_version (version, description)
VALUES (1, 'business operation and transactional outbox')
ON CONFLICT (version) DO NOTHING;
)sql";

// Any stable 64-bit number serialises concurrent schema creation.
constexpr const char* kSchemaLockSql = "SELECT pg_advisory_xact_lock(7263415901)";

void require_one_row(const pqxx::result& r, const char* what, const std::string& operation_id) {
  if (r.affected_rows() != 1) {
    throw InfrastructureError(std::string("outbox: ") + what + " changed " + std::to_string(r.affected_rows()) +
                              " rows for operation " + operation_id + " (expected 1)");
  }
}

std::optional<std::int64_t> optional_int(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<std::int64_t>();
}

// A row in read_outbox's columns: business state and version, then the outbox
// row's (all null when the operation has no outbox row yet).
OutboxRow outbox_row(const std::string& operation_id, const pqxx::row& row) {
  OutboxRow out;
  out.operation_id = operation_id;
  const auto business_state = kBusinessStates.parse(row[0].c_str());
  if (!business_state) {
    throw InfrastructureError(std::string("the business row has an unknown state \"") + row[0].c_str() + "\"");
  }
  out.business_state = *business_state;
  out.business_version = row[1].as<std::int64_t>();
  if (row[2].is_null()) {
    out.status = OutboxStatus::Absent;
    return out;
  }
  out.idempotency_key = row[2].c_str();
  out.ttl_s = row[3].as<std::int64_t>();
  out.key_created_at_s = optional_int(row[4]);
  out.key_expires_at_s = optional_int(row[5]);
  const auto status = kOutboxStatuses.parse(row[6].c_str());
  // The table's CHECK allows only pending and delivered.
  if (!status || *status == OutboxStatus::Absent) {
    throw InfrastructureError(std::string("the outbox row has an unknown status \"") + row[6].c_str() + "\"");
  }
  out.status = *status;
  out.delivery_attempts = row[7].as<std::int64_t>();
  if (!row[8].is_null()) out.last_transport_outcome = row[8].c_str();
  out.delivered_at_s = optional_int(row[9]);
  return out;
}

}  // namespace

std::string with_connect_timeout(const std::string& database_url, int timeout_s) {
  const auto setting = "connect_timeout=" + std::to_string(timeout_s);
  const bool is_uri = database_url.rfind("postgresql://", 0) == 0 || database_url.rfind("postgres://", 0) == 0;
  if (!is_uri) return database_url.empty() ? setting : database_url + " " + setting;
  return database_url + (database_url.find('?') == std::string::npos ? "?" : "&") + setting;
}

namespace {

bool is_libpq_uri(const std::string& database_url) {
  return database_url.rfind("postgresql://", 0) == 0 || database_url.rfind("postgres://", 0) == 0;
}

// Whether the URL (query parameter) or key=value string names gssencmode.
bool names_gssencmode(const std::string& database_url) {
  if (is_libpq_uri(database_url)) {
    const auto query = database_url.find('?');
    if (query == std::string::npos) return false;
    for (auto at = database_url.find("gssencmode=", query); at != std::string::npos;
         at = database_url.find("gssencmode=", at + 1)) {
      if (database_url[at - 1] == '?' || database_url[at - 1] == '&') return true;
    }
    return false;
  }
  for (auto at = database_url.find("gssencmode"); at != std::string::npos;
       at = database_url.find("gssencmode", at + 1)) {
    const bool starts_token = at == 0 || database_url[at - 1] == ' ';
    const auto equals = database_url.find_first_not_of(' ', at + std::strlen("gssencmode"));
    if (starts_token && equals != std::string::npos && database_url[equals] == '=') return true;
  }
  return false;
}

}  // namespace

std::string libpq_connection_string(const std::string& database_url, int timeout_s) {
  auto out = with_connect_timeout(database_url, timeout_s);
  // libpq's default (prefer) first asks the server for GSSAPI encryption
  // whenever a Kerberos credential cache exists: a wasted round trip on every
  // connect for a server that has none. What the user chose (URL or
  // PGGSSENCMODE) stands.
  const char* from_environment = std::getenv("PGGSSENCMODE");
  if (names_gssencmode(database_url) || (from_environment && *from_environment)) return out;
  return out + (is_libpq_uri(out) ? "&" : " ") + "gssencmode=disable";
}

struct PgOutbox::Connection {
  explicit Connection(const std::string& url) : pq(url) {}
  pqxx::connection pq;
};

// One helper thread per connection. While armed it waits for the deadline;
// when the deadline passes first it shuts the socket down, which ends libpq's
// blocked read with an error instead of waiting forever. Arming and disarming
// wake the thread only when it sleeps with no deadline: otherwise it wakes at
// the deadline it last saw, never later than a newer one, and looks again, so
// a call that takes a millisecond costs no thread switch.
class PgOutbox::Deadline {
 public:
  explicit Deadline(const std::atomic<bool>* stop) : stop_(stop), thread_([this] { watch(); }) {}
  ~Deadline() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  void arm(int socket_fd, std::chrono::milliseconds limit) {
    std::lock_guard<std::mutex> lock(mutex_);
    socket_fd_ = socket_fd;
    until_ = std::chrono::steady_clock::now() + limit;
    armed_ = true;
    fired_ = false;
    if (idle_) changed_.notify_all();
  }

  // Returns whether the deadline fired while armed.
  bool disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
    return fired_;
  }
  // Whether it fired because the stop flag was set rather than at the deadline.
  bool stopped() const { return stop_ && stop_->load(); }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!quit_) {
      if (!armed_) {
        idle_ = true;
        changed_.wait(lock);
        idle_ = false;
      } else if (std::chrono::steady_clock::now() >= until_ || (stop_ && stop_->load())) {
        ::shutdown(socket_fd_, SHUT_RDWR);
        fired_ = true;
        armed_ = false;
      } else if (stop_) {
        // A stop flag is polled: a signal handler may set it, and cannot notify.
        changed_.wait_until(lock, std::min(until_, std::chrono::steady_clock::now() + kStopPoll));
      } else {
        changed_.wait_until(lock, until_);
      }
    }
  }

  static constexpr std::chrono::milliseconds kStopPoll{50};
  const std::atomic<bool>* stop_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool quit_ = false;
  bool armed_ = false;
  bool fired_ = false;
  bool idle_ = false;  // waiting with no deadline: arm() must wake it
  int socket_fd_ = -1;
  std::chrono::steady_clock::time_point until_;
  std::thread thread_;
};

template <typename F>
auto PgOutbox::bounded(const char* what, F&& body) {
  deadline_->arm(connection_->pq.sock(), std::chrono::seconds(timeouts_.timeout_s + 1));
  struct Disarm {
    Deadline& deadline;
    ~Disarm() { deadline.disarm(); }
  } disarm{*deadline_};
  try {
    return body();
  } catch (const InfrastructureError&) {
    throw;
  } catch (const std::exception& e) {
    if (deadline_->disarm()) {
      // Ctrl-C cut the statement short: the work in hand is not done, and
      // not an infrastructure fault either.
      if (deadline_->stopped()) throw Interrupted();
      throw InfrastructureError(std::string("PostgreSQL did not answer ") + what + " within " +
                                std::to_string(timeouts_.timeout_s + 1) +
                                " s (--db-timeout + 1 s); the connection was closed");
    }
    throw InfrastructureError(std::string("PostgreSQL failed during ") + what + ": " + e.what());
  }
}

template <typename F>
auto PgOutbox::in_transaction(const char* what, F&& body) {
  return bounded(what, [&] {
    pqxx::work tx(connection_->pq);
    if constexpr (std::is_void_v<decltype(body(tx))>) {
      body(tx);
      tx.commit();
    } else {
      auto out = body(tx);
      tx.commit();
      return out;
    }
  });
}

// An outbox write is one prepared statement sent on its own, autocommit: one
// round trip, no BEGIN or COMMIT. One statement is atomic, so a failure leaves
// nothing of it behind, and one that changes no row fails as before. Returns
// what the statement answered (rows it RETURNs, if any).
template <typename... Args>
auto PgOutbox::write_statement(const char* what, const char* statement, const std::string& operation_id,
                               Args&&... args) {
  return bounded(what, [&] {
    pqxx::nontransaction tx(connection_->pq);
    ++wire_.round_trips;
    ++wire_.commits;
    auto r = pq::exec_prepared(tx, statement, run_id_, operation_id, std::forward<Args>(args)...);
    require_one_row(r, statement, operation_id);
    return r;
  });
}

PgOutbox::PgOutbox(const std::string& database_url, std::string run_id, DbTimeouts timeouts)
    : database_url_(database_url), timeouts_(timeouts), run_id_(std::move(run_id)) {
  if (timeouts_.timeout_s < 1) throw std::invalid_argument("the database timeout must be at least 1 s");
  deadline_ = std::make_unique<Deadline>(timeouts_.stop);
  connect();
}

void PgOutbox::reconnect() {
  connection_.reset();
  connect();
}

void PgOutbox::connect() {
  try {
    // libpq waits at least 2 s for a connection, whatever is asked.
    connection_ = std::make_unique<Connection>(libpq_connection_string(database_url_, timeouts_.timeout_s));
  } catch (const std::exception& e) {
    throw InfrastructureError("cannot connect to PostgreSQL at " + redact_url(database_url_) + " within " +
                              std::to_string(std::max(2, timeouts_.timeout_s)) + " s (--db-timeout): " + e.what());
  }
  if (!schema_is_current()) create_schema();
  prepare_statements();
}

// The common case costs two reads and no lock: the session settings and
// server version, then the schema version when its table exists.
bool PgOutbox::schema_is_current() {
  return bounded("schema check", [&] {
    pqxx::nontransaction tx(connection_->pq);
    // Kept for the session: set_config(..., false) outside a transaction block.
    const auto s = pq::exec(tx,
                            "SELECT set_config('statement_timeout', $1, false), current_setting('server_version'), "
                            "current_setting('server_version_num'), "
                            "to_regclass('skewbench.schema_version') IS NOT NULL, current_setting('fsync'), "
                            "current_setting('synchronous_commit'), current_setting('full_page_writes')",
                            std::to_string(timeouts_.timeout_s * 1000));
    info_.server_version = s[0][1].c_str();
    info_.server_version_num = s[0][2].as<int>();
    info_.fsync = s[0][4].c_str();
    info_.synchronous_commit = s[0][5].c_str();
    info_.full_page_writes = s[0][6].c_str();
    if (!s[0][3].as<bool>()) return false;
    const auto v = pq::exec0(tx, "SELECT max(version) FROM skewbench.schema_version");
    return !v[0][0].is_null() && v[0][0].as<int>() == kOutboxSchemaVersion;
  });
}

// A missing or different schema: created (or refused when newer) under an
// advisory lock, so parallel workers may start at once.
void PgOutbox::create_schema() {
  in_transaction("schema creation", [&](pqxx::work& tx) {
    pq::exec0(tx, kSchemaLockSql);
    pq::exec0(tx, kSchemaSql);
    const auto v = pq::exec0(tx, "SELECT max(version) FROM skewbench.schema_version");
    const auto version = v[0][0].as<int>();
    if (version > kOutboxSchemaVersion) {
      throw InfrastructureError("database schema version " + std::to_string(version) +
                                " is newer than this harness understands (" + std::to_string(kOutboxSchemaVersion) +
                                ")");
    }
  });
}

void PgOutbox::prepare_statements() {
  auto& c = connection_->pq;
  c.prepare("declare_operation",
            "INSERT INTO skewbench.business_operation (run_id, operation_id, state, version) "
            "VALUES ($1, $2, 'absent', $3)");
  // The business commit and its outbox row in one statement: the row is
  // inserted only for a business operation this statement moved from absent
  // to committed, so a missing or already committed one inserts nothing and
  // changes no row.
  c.prepare("commit_business",
            "WITH committed AS ("
            "UPDATE skewbench.business_operation SET state = 'committed', version = version + 1 "
            "WHERE run_id = $1 AND operation_id = $2 AND state = 'absent' "
            "RETURNING run_id, operation_id, state, version), "
            "inserted AS ("
            "INSERT INTO skewbench.outbox (run_id, operation_id, idempotency_key, ttl_s, status) "
            "SELECT run_id, operation_id, $3::text, $4::bigint, 'pending' FROM committed "
            "RETURNING run_id, operation_id, idempotency_key, ttl_s, key_created_at_s, key_expires_at_s, status, "
            "delivery_attempts, last_transport_outcome, delivered_at_s) "
            // The row as written, in read_outbox's columns, so one reader parses both.
            "SELECT c.state, c.version, i.idempotency_key, i.ttl_s, i.key_created_at_s, i.key_expires_at_s, "
            "i.status, i.delivery_attempts, i.last_transport_outcome, i.delivered_at_s "
            "FROM committed c JOIN inserted i USING (run_id, operation_id)");
  c.prepare("record_attempt",
            "UPDATE skewbench.outbox SET delivery_attempts = delivery_attempts + 1, "
            "key_created_at_s = COALESCE(key_created_at_s, $3::bigint), "
            "key_expires_at_s = COALESCE(key_expires_at_s, $3::bigint + ttl_s) "
            "WHERE run_id = $1 AND operation_id = $2");
  c.prepare("record_outcome",
            "UPDATE skewbench.outbox SET last_transport_outcome = $3, "
            "status = CASE WHEN $4::boolean THEN 'delivered' ELSE status END, "
            "delivered_at_s = CASE WHEN $4::boolean AND delivered_at_s IS NULL THEN $5::bigint "
            "ELSE delivered_at_s END "
            "WHERE run_id = $1 AND operation_id = $2");
  c.prepare("mark_delivered",
            "UPDATE skewbench.outbox SET status = 'delivered', "
            "delivered_at_s = COALESCE(delivered_at_s, $3::bigint) "
            "WHERE run_id = $1 AND operation_id = $2");
  c.prepare("read_outbox",
            "SELECT b.state, b.version, o.idempotency_key, o.ttl_s, o.key_created_at_s, o.key_expires_at_s, "
            "o.status, o.delivery_attempts, o.last_transport_outcome, o.delivered_at_s "
            "FROM skewbench.business_operation b "
            "LEFT JOIN skewbench.outbox o USING (run_id, operation_id) "
            "WHERE b.run_id = $1 AND b.operation_id = $2");
}

PgOutbox::~PgOutbox() = default;

void PgOutbox::declare_operation(const std::string& operation_id, std::int64_t business_version) {
  write_statement("declare_operation", "declare_operation", operation_id, business_version);
}

OutboxRow PgOutbox::commit_operation(const std::string& operation_id, const std::string& idempotency_key,
                                     std::int64_t ttl_s) {
  // The committed row comes back from the statement that wrote it: no read after.
  const auto r = write_statement("commit_operation", "commit_business", operation_id, idempotency_key, ttl_s);
  return outbox_row(operation_id, r[0]);
}

void PgOutbox::record_attempt(const std::string& operation_id, std::int64_t logical_time_s) {
  write_statement("record_attempt", "record_attempt", operation_id, logical_time_s);
}

void PgOutbox::record_outcome(const std::string& operation_id, TransportOutcome outcome, bool delivered,
                              std::int64_t logical_time_s) {
  write_statement("record_outcome", "record_outcome", operation_id, std::string(to_string(outcome)), delivered,
                  logical_time_s);
}

void PgOutbox::mark_delivered(const std::string& operation_id, std::int64_t logical_time_s) {
  write_statement("mark_delivered", "mark_delivered", operation_id, logical_time_s);
}

OutboxRow PgOutbox::read(const std::string& operation_id) {
  // One statement, one round trip: no BEGIN/COMMIT around a single read.
  return bounded("read", [&] {
    pqxx::nontransaction tx(connection_->pq);
    ++wire_.round_trips;
    const auto r = pq::exec_prepared(tx, "read_outbox", run_id_, operation_id);
    if (r.size() != 1) throw InfrastructureError("outbox: no business operation " + operation_id);
    return outbox_row(operation_id, r[0]);
  });
}

}  // namespace skewbench::infra
