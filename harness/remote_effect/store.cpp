#include "remote_effect/store.hpp"

#include <system_error>
#include <utility>
#include <vector>

#include <sqlite3.h>

namespace skewbench::remote_effect {
namespace {

// The schema. Every statement is idempotent, so opening an existing file is a
// no-op; schema_version guards against a file written by an incompatible build.
constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS effects ("
    " effect_id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " operation_id TEXT NOT NULL,"
    " idempotency_key TEXT NOT NULL,"
    " created_at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS effects_by_operation ON effects(operation_id, effect_id)",
    "CREATE TABLE IF NOT EXISTS idempotency_records ("
    " idempotency_key TEXT PRIMARY KEY,"
    " operation_id TEXT NOT NULL,"
    " created_at INTEGER NOT NULL,"
    " expires_at INTEGER NOT NULL,"
    " body_sha256 TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS idempotency_records_by_operation"
    " ON idempotency_records(operation_id, idempotency_key)",
    // One row per POST that reached the idempotency decision and was accepted
    // (applied or deduplicated); ack_drops counts the rows with drop_ack = 1.
    "CREATE TABLE IF NOT EXISTS request_log ("
    " request_id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " operation_id TEXT NOT NULL,"
    " idempotency_key TEXT NOT NULL,"
    " logical_time INTEGER NOT NULL,"
    " delivery TEXT NOT NULL,"
    " body_sha256 TEXT NOT NULL,"
    " drop_ack INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS request_log_by_operation ON request_log(operation_id)",
    // Schema 2: named integers; temporal_epoch starts at 1 and only grows.
    "CREATE TABLE IF NOT EXISTS metadata (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO metadata(name, value) VALUES ('temporal_epoch', 1)",
    // Schema 3: the number of key records, kept by triggers in the writing
    // transaction (so a rolled-back POST or savepoint takes its change with
    // it) and read in one step by /health, however many records the file
    // holds. An upsert that updates a record fires no INSERT trigger. The
    // records already there are counted when the row is missing: on the
    // first open at schema 3, not on later ones.
    "INSERT INTO metadata(name, value)"
    " SELECT 'idempotency_records', (SELECT COUNT(*) FROM idempotency_records)"
    " WHERE NOT EXISTS (SELECT 1 FROM metadata WHERE name = 'idempotency_records')",
    "CREATE TRIGGER IF NOT EXISTS idempotency_records_counted_in AFTER INSERT ON idempotency_records"
    " BEGIN UPDATE metadata SET value = value + 1 WHERE name = 'idempotency_records'; END",
    "CREATE TRIGGER IF NOT EXISTS idempotency_records_counted_out AFTER DELETE ON idempotency_records"
    " BEGIN UPDATE metadata SET value = value - 1 WHERE name = 'idempotency_records'; END",
};

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
      throw StoreError(std::string("cannot prepare \"") + sql + "\": " + sqlite3_errmsg(db));
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  sqlite3* db() const { return db_; }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// One use of a prepared statement: binds, steps, and resets it on scope exit
// so that no read transaction stays open between requests.
class Query {
 public:
  explicit Query(Statement& statement) : statement_(statement) {}
  ~Query() {
    sqlite3_reset(statement_.get());
    sqlite3_clear_bindings(statement_.get());
  }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  Query& bind(int index, std::string_view text) {
    check(sqlite3_bind_text(statement_.get(), index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Query& bind(int index, std::int64_t value) {
    check(sqlite3_bind_int64(statement_.get(), index, value));
    return *this;
  }

  // True when a row is available, false when the statement is done.
  bool step() {
    const int rc = sqlite3_step(statement_.get());
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw StoreError(std::string("SQLite: ") + sqlite3_errmsg(statement_.db()) + " in \"" +
                     sqlite3_sql(statement_.get()) + "\"");
  }
  void run() {
    while (step()) {
    }
  }

  std::int64_t int64(int column) const { return sqlite3_column_int64(statement_.get(), column); }
  std::string text(int column) const {
    const auto* bytes = sqlite3_column_text(statement_.get(), column);
    const int size = sqlite3_column_bytes(statement_.get(), column);
    return bytes ? std::string(reinterpret_cast<const char*>(bytes), static_cast<size_t>(size)) : std::string();
  }

 private:
  void check(int rc) const {
    if (rc != SQLITE_OK) throw StoreError(std::string("SQLite bind: ") + sqlite3_errstr(rc));
  }
  Statement& statement_;
};

void exec(sqlite3* db, const char* sql) {
  Statement statement(db, sql);
  Query(statement).run();
}

std::string pragma_text(sqlite3* db, const char* sql) {
  Statement statement(db, sql);
  Query query(statement);
  return query.step() ? query.text(0) : std::string();
}

}  // namespace

std::string_view sync_mode_name(SyncMode mode) { return mode == SyncMode::full ? "full" : "normal"; }

std::optional<SyncMode> parse_sync_mode(std::string_view text) {
  if (text == "full") return SyncMode::full;
  if (text == "normal") return SyncMode::normal;
  return std::nullopt;
}

struct Store::Impl {
  explicit Impl(sqlite3* connection) : db(connection) {}
  ~Impl() {
    for (auto* statement :
         {&begin,          &commit,         &rollback,        &savepoint,      &release,        &rollback_to,
          &select_record,  &insert_effect,  &upsert_record,   &insert_request, &select_effects, &select_records,
          &count_requests, &select_epoch,   &update_epoch,    &delete_record,  &count_records,  &clear_effects,
          &clear_records,  &clear_requests, &clear_sequences, &reset_epoch}) {
      statement->reset();
    }
    // The last connection to close checkpoints the WAL into the main file.
    sqlite3_close_v2(db);
  }

  void prepare() {
    begin = std::make_unique<Statement>(db, "BEGIN IMMEDIATE");
    commit = std::make_unique<Statement>(db, "COMMIT");
    rollback = std::make_unique<Statement>(db, "ROLLBACK");
    savepoint = std::make_unique<Statement>(db, "SAVEPOINT one_post");
    release = std::make_unique<Statement>(db, "RELEASE one_post");
    rollback_to = std::make_unique<Statement>(db, "ROLLBACK TO one_post");
    select_record =
        std::make_unique<Statement>(db,
                                    "SELECT idempotency_key, operation_id, created_at, expires_at, body_sha256"
                                    " FROM idempotency_records WHERE idempotency_key = ?1");
    insert_effect = std::make_unique<Statement>(
        db, "INSERT INTO effects(operation_id, idempotency_key, created_at) VALUES (?1, ?2, ?3)");
    upsert_record = std::make_unique<Statement>(
        db,
        "INSERT INTO idempotency_records(idempotency_key, operation_id, created_at, expires_at,"
        " body_sha256) VALUES (?1, ?2, ?3, ?4, ?5)"
        " ON CONFLICT(idempotency_key) DO UPDATE SET operation_id = excluded.operation_id,"
        " created_at = excluded.created_at, expires_at = excluded.expires_at,"
        " body_sha256 = excluded.body_sha256");
    insert_request =
        std::make_unique<Statement>(db,
                                    "INSERT INTO request_log(operation_id, idempotency_key, logical_time, delivery,"
                                    " body_sha256, drop_ack) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    select_effects =
        std::make_unique<Statement>(db,
                                    "SELECT effect_id, operation_id, idempotency_key, created_at FROM effects"
                                    " WHERE operation_id = ?1 ORDER BY effect_id");
    select_records =
        std::make_unique<Statement>(db,
                                    "SELECT idempotency_key, operation_id, created_at, expires_at, body_sha256"
                                    " FROM idempotency_records WHERE operation_id = ?1 ORDER BY idempotency_key");
    count_requests = std::make_unique<Statement>(
        db, "SELECT COUNT(*), COALESCE(SUM(drop_ack), 0) FROM request_log WHERE operation_id = ?1");
    select_epoch = std::make_unique<Statement>(db, "SELECT value FROM metadata WHERE name = 'temporal_epoch'");
    update_epoch = std::make_unique<Statement>(db, "UPDATE metadata SET value = ?1 WHERE name = 'temporal_epoch'");
    delete_record = std::make_unique<Statement>(db, "DELETE FROM idempotency_records WHERE idempotency_key = ?1");
    count_records = std::make_unique<Statement>(db, "SELECT value FROM metadata WHERE name = 'idempotency_records'");
    clear_effects = std::make_unique<Statement>(db, "DELETE FROM effects");
    clear_records = std::make_unique<Statement>(db, "DELETE FROM idempotency_records");
    clear_requests = std::make_unique<Statement>(db, "DELETE FROM request_log");
    clear_sequences = std::make_unique<Statement>(db, "DELETE FROM sqlite_sequence");
    reset_epoch = std::make_unique<Statement>(db, "UPDATE metadata SET value = 1 WHERE name = 'temporal_epoch'");
  }

  sqlite3* db;
  std::unique_ptr<Statement> begin, commit, rollback, savepoint, release, rollback_to, select_record, insert_effect,
      upsert_record, insert_request, select_effects, select_records, count_requests, select_epoch, update_epoch,
      delete_record, count_records, clear_effects, clear_records, clear_requests, clear_sequences, reset_epoch;
};

namespace {

// BEGIN IMMEDIATE now; ROLLBACK on scope exit unless commit() succeeded.
class Transaction {
 public:
  Transaction(Statement& begin, Statement& commit, Statement& rollback) : commit_(commit), rollback_(rollback) {
    Query(begin).run();
  }
  ~Transaction() {
    if (open_) {
      try {
        Query(rollback_).run();
      } catch (const StoreError&) {
        // SQLite may already have rolled back after a failed COMMIT.
      }
    }
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void commit() {
    Query(commit_).run();
    open_ = false;
  }

 private:
  Statement& commit_;
  Statement& rollback_;
  bool open_ = true;
};

}  // namespace

Store::Store(const std::filesystem::path& path, SyncMode sync, DedupeMode dedupe) : sync_(sync), dedupe_(dedupe) {
  const auto where = "state database " + path.string();
  if (path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) throw StoreError("cannot create the directory of " + where + ": " + ec.message());
  }
  open(path.string(), where, false);
}

Store::Store(InMemory /*unused*/, DedupeMode dedupe) : sync_(SyncMode::normal), dedupe_(dedupe) {
  open(":memory:", "state database in memory", true);
}

void Store::open(const std::string& name, const std::string& where, bool in_memory) {
  // SQLite's memory statistics take one process-wide mutex on every
  // allocation, which serialises stores used from several threads (the
  // in-process engine's workers); nothing reads them. Only possible before
  // SQLite initialises, so once, before the first open.
  static std::once_flag no_memory_statistics;
  std::call_once(no_memory_statistics, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(name.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    throw StoreError("cannot open " + where + ": " + message);
  }
  impl_ = std::make_unique<Impl>(db);
  try {
    sqlite3_extended_result_codes(db, 1);
    exec(db, "PRAGMA busy_timeout = 5000");
    // A database in memory has its own journal and nothing to sync.
    if (!in_memory) {
      const auto journal = pragma_text(db, "PRAGMA journal_mode = WAL");
      if (journal != "wal") throw StoreError("journal_mode is \"" + journal + "\", not wal");
      exec(db, sync_ == SyncMode::full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    }
    exec(db, "BEGIN IMMEDIATE");
    for (const char* sql : kSchema) exec(db, sql);
    {
      Statement select(db, "SELECT version FROM schema_version");
      Query query(select);
      if (!query.step()) {
        Statement insert(db, "INSERT INTO schema_version(version) VALUES (?1)");
        Query(insert).bind(1, std::int64_t{kSchemaVersion}).run();
      } else if (query.int64(0) == 1 || query.int64(0) == 2) {
        // Version 1 lacks the metadata table, version 2 the record count and
        // its triggers; both were created above.
        Statement update(db, "UPDATE schema_version SET version = ?1");
        Query(update).bind(1, std::int64_t{kSchemaVersion}).run();
      } else if (query.int64(0) != kSchemaVersion) {
        throw StoreError("schema version " + std::to_string(query.int64(0)) +
                         " is not the version this build understands (" + std::to_string(kSchemaVersion) + ")");
      }
    }
    exec(db, "COMMIT");
    impl_->prepare();
  } catch (const StoreError& e) {
    impl_.reset();
    throw StoreError("cannot use " + where + ": " + e.what());
  }
}

Store::~Store() = default;

std::string Store::sqlite_version() { return sqlite3_libversion(); }

// The changes made to the volatile key records inside the open transaction, in
// order, so that they are undone with the SQL writes they belong to: one POST's
// (from its mark) when its savepoint is rolled back, all of them when the
// transaction is. Whatever is not forgotten after the COMMIT is undone on
// destruction.
class Store::VolatileJournal {
 public:
  explicit VolatileJournal(VolatileRecords& records) : records_(records) {}
  ~VolatileJournal() { undo_to(0); }
  VolatileJournal(const VolatileJournal&) = delete;
  VolatileJournal& operator=(const VolatileJournal&) = delete;

  void write(const IdempotencyRecord& record) {
    std::optional<IdempotencyRecord> previous;
    if (const auto it = records_.find(record.idempotency_key); it != records_.end()) previous = it->second;
    entries_.push_back(Entry{record.idempotency_key, std::move(previous)});
    records_[record.idempotency_key] = record;
  }

  std::size_t mark() const { return entries_.size(); }

  // Restores the records as they were when mark() returned `mark`.
  void undo_to(std::size_t mark) {
    while (entries_.size() > mark) {
      auto& entry = entries_.back();
      if (entry.previous) {
        records_[entry.key] = *entry.previous;
      } else {
        records_.erase(entry.key);
      }
      entries_.pop_back();
    }
  }

  // The transaction committed: the changes stay.
  void forget() { entries_.clear(); }

 private:
  struct Entry {
    std::string key;
    std::optional<IdempotencyRecord> previous;
  };
  VolatileRecords& records_;
  std::vector<Entry> entries_;
};

std::int64_t Store::epoch_locked() {
  Query query(*impl_->select_epoch);
  if (!query.step()) throw StoreError("the metadata table has no temporal_epoch row");
  return query.int64(0);
}

std::optional<IdempotencyRecord> Store::find_record_locked(const std::string& idempotency_key) {
  if (dedupe_ == DedupeMode::volatile_) {
    const auto it = volatile_records_.find(idempotency_key);
    if (it == volatile_records_.end()) return std::nullopt;
    return it->second;
  }
  Query query(*impl_->select_record);
  query.bind(1, idempotency_key);
  if (!query.step()) return std::nullopt;
  return IdempotencyRecord{query.text(0), query.text(1), query.int64(2), query.int64(3), query.text(4)};
}

void Store::write_record_locked(const IdempotencyRecord& record, VolatileJournal& journal) {
  if (dedupe_ == DedupeMode::volatile_) {
    journal.write(record);
    return;
  }
  Query(*impl_->upsert_record)
      .bind(1, record.idempotency_key)
      .bind(2, record.operation_id)
      .bind(3, record.created_at_s)
      .bind(4, record.expires_at_s)
      .bind(5, record.body_sha256)
      .run();
}

PostResult Store::post(const PostRequest& request, const BeforeCommit& before_commit) {
  std::lock_guard lock(mutex_);
  return post_alone_locked(request, before_commit);
}

void Store::post_group(std::span<PendingPost* const> group) {
  std::lock_guard lock(mutex_);
  if (group.size() > 1 && post_together_locked(group)) return;
  // A group of one, or a group whose shared transaction was lost: one
  // transaction per POST, each judged on what the ones before it committed.
  for (auto* post : group) {
    post->result.reset();
    post->error = nullptr;
    try {
      post->result = post_alone_locked(*post->request, post->before_commit);
    } catch (...) {
      post->error = std::current_exception();
    }
  }
}

PostResult Store::post_alone_locked(const PostRequest& request, const BeforeCommit& before_commit) {
  auto& s = *impl_;
  VolatileJournal journal(volatile_records_);
  Transaction transaction(*s.begin, *s.commit, *s.rollback);
  auto result = apply_locked(request, before_commit, journal);
  if (is_refusal(result.delivery)) return result;  // Rolled back: a refusal writes and logs nothing.
  transaction.commit();
  ++post_commits_;
  journal.forget();
  return result;
}

// False when the group's transaction was lost and nothing of it committed.
bool Store::post_together_locked(std::span<PendingPost* const> group) {
  auto& s = *impl_;
  VolatileJournal journal(volatile_records_);
  try {
    Transaction transaction(*s.begin, *s.commit, *s.rollback);
    for (auto* post : group) {
      if (!post_in_savepoint_locked(*post, journal)) return false;
    }
    transaction.commit();
  } catch (...) {
    return false;  // BEGIN, a savepoint statement or COMMIT failed: rolled back.
  }
  ++post_commits_;
  journal.forget();
  return true;
}

// One POST of a group in its own savepoint. False when its failure took the
// whole transaction with it.
bool Store::post_in_savepoint_locked(PendingPost& post, VolatileJournal& journal) {
  auto& s = *impl_;
  Query(*s.savepoint).run();
  const auto mark = journal.mark();
  try {
    post.result = apply_locked(*post.request, post.before_commit, journal);
    if (!is_refusal(post.result->delivery)) {
      Query(*s.release).run();
      return true;
    }
  } catch (...) {
    post.result.reset();
    post.error = std::current_exception();
    // SQLite may have rolled the whole transaction back (SQLITE_FULL,
    // SQLITE_IOERR, a trigger's RAISE(ROLLBACK), ...): then no savepoint is left.
    if (sqlite3_get_autocommit(s.db) != 0) return false;
  }
  // A refusal, or a failure: this POST's writes are undone, the others' kept.
  journal.undo_to(mark);
  Query(*s.rollback_to).run();
  Query(*s.release).run();
  return true;
}

// The read-decide-write of one POST inside the open transaction; a refusal
// returns before writing anything.
PostResult Store::apply_locked(const PostRequest& request, const BeforeCommit& before_commit,
                               VolatileJournal& journal) {
  auto& s = *impl_;
  PostResult result;
  result.state.temporal_epoch = epoch_locked();
  if (check_fence(request.fence_epoch, result.state.temporal_epoch)) {
    result.delivery = Delivery::fenced_out;
    return result;  // A fenced-out POST writes and logs nothing.
  }
  result.delivery = decide(find_record_locked(request.idempotency_key), request);
  if (is_refusal(result.delivery)) return result;

  if (result.delivery == Delivery::applied) {
    Query(*s.insert_effect)
        .bind(1, request.operation_id)
        .bind(2, request.idempotency_key)
        .bind(3, request.logical_time_s)
        .run();
    write_record_locked(IdempotencyRecord{request.idempotency_key, request.operation_id, request.logical_time_s,
                                          request.expires_at_s, request.body_sha256},
                        journal);
  }
  Query(*s.insert_request)
      .bind(1, request.operation_id)
      .bind(2, request.idempotency_key)
      .bind(3, request.logical_time_s)
      .bind(4, delivery_name(result.delivery))
      .bind(5, request.body_sha256)
      .bind(6, std::int64_t{request.drop_ack ? 1 : 0})
      .run();
  result.state = read_locked(request.operation_id);
  if (before_commit) before_commit(result);
  return result;
}

GcResult Store::gc(const GcRequest& request) {
  std::lock_guard lock(mutex_);
  auto& s = *impl_;
  Transaction transaction(*s.begin, *s.commit, *s.rollback);
  GcResult result;
  result.temporal_epoch_before = epoch_locked();

  std::vector<std::string> collected;
  for (const auto& record : read_locked(request.operation_id).records) {
    if (is_collectable(request.logical_time_s, record.expires_at_s)) collected.push_back(record.idempotency_key);
  }
  result.removed_records = static_cast<std::int64_t>(collected.size());
  result.temporal_epoch_after = epoch_after_gc(result.temporal_epoch_before, result.removed_records);
  if (dedupe_ == DedupeMode::durable) {
    for (const auto& key : collected) Query(*s.delete_record).bind(1, key).run();
  }
  if (result.temporal_epoch_after != result.temporal_epoch_before) {
    Query(*s.update_epoch).bind(1, result.temporal_epoch_after).run();
  }
  transaction.commit();
  if (dedupe_ == DedupeMode::volatile_) {
    for (const auto& key : collected) volatile_records_.erase(key);
  }
  return result;
}

void Store::clear() {
  std::lock_guard lock(mutex_);
  auto& s = *impl_;
  Transaction transaction(*s.begin, *s.commit, *s.rollback);
  // The key records first: their trigger counts each one out.
  for (auto* statement : {&s.clear_records, &s.clear_effects, &s.clear_requests, &s.clear_sequences, &s.reset_epoch}) {
    Query(**statement).run();
  }
  transaction.commit();
  volatile_records_.clear();
}

StoreTotals Store::totals() {
  std::lock_guard lock(mutex_);
  StoreTotals totals;
  totals.temporal_epoch = epoch_locked();
  totals.post_commits = post_commits_;
  Query query(*impl_->count_records);
  if (!query.step()) throw StoreError("the metadata table has no idempotency_records row");
  totals.durable_idempotency_records = query.int64(0);
  return totals;
}

OperationState Store::read(std::string_view operation_id) {
  std::lock_guard lock(mutex_);
  return read_locked(operation_id);
}

OperationState Store::read_locked(std::string_view operation_id) {
  auto& s = *impl_;
  OperationState state;
  {
    Query query(*s.select_effects);
    query.bind(1, operation_id);
    while (query.step()) {
      state.effects.push_back(Effect{query.int64(0), query.text(1), query.text(2), query.int64(3)});
    }
  }
  {
    Query query(*s.select_records);
    query.bind(1, operation_id);
    while (query.step()) {
      state.records.push_back(
          IdempotencyRecord{query.text(0), query.text(1), query.int64(2), query.int64(3), query.text(4)});
    }
  }
  state.durable_idempotency_records = static_cast<std::int64_t>(state.records.size());
  if (dedupe_ == DedupeMode::volatile_) {
    // The file's table is neither read nor written in this mode; the records
    // are the ones in memory (the map is ordered by key, like the query).
    state.records.clear();
    for (const auto& [key, record] : volatile_records_) {
      if (record.operation_id == operation_id) state.records.push_back(record);
    }
  }
  {
    Query query(*s.count_requests);
    query.bind(1, operation_id);
    if (query.step()) {
      state.post_requests = query.int64(0);
      state.ack_drops = query.int64(1);
    }
  }
  state.temporal_epoch = epoch_locked();
  return state;
}

}  // namespace skewbench::remote_effect
