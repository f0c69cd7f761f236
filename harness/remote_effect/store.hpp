#pragma once

// The service's durable state: one SQLite file in WAL mode.
//
// One connection, guarded by one mutex: every POST runs its read-decide-write
// inside a BEGIN IMMEDIATE transaction while holding the mutex, so two
// concurrent POSTs with one key are judged one after the other and can never
// both apply. Concurrent POSTs may share one transaction (post_group): each
// runs in a savepoint of its own, so a POST that fails leaves the others of
// its group intact, and all of them are committed by one COMMIT, which with
// synchronous=FULL has reached the disk before post_group returns.
//
// Effects, the request log and the temporal epoch are always in the file. The
// key records are in the file (DedupeMode::durable) or in this object's memory
// (DedupeMode::volatile_), where a restart loses them.

#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "remote_effect/protocol.hpp"

namespace skewbench::remote_effect {

enum class SyncMode { full, normal };

std::string_view sync_mode_name(SyncMode mode);
std::optional<SyncMode> parse_sync_mode(std::string_view text);

// The state file cannot be opened, created, or used.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PostResult {
  Delivery delivery = Delivery::applied;
  // The operation's state after the commit; empty for the refusals (409, 422),
  // which write nothing, except temporal_epoch, which is always the current one.
  OperationState state;
};

// Called inside the transaction, after the writes and before COMMIT; when it
// throws, nothing is committed. The service builds its response here, so that
// no effect is committed whose response cannot be built.
using BeforeCommit = std::function<void(const PostResult&)>;

// One POST handed to Store::post_group, and what became of it: once
// post_group returns, exactly one of result and error is set.
struct PendingPost {
  const PostRequest* request = nullptr;
  BeforeCommit before_commit;
  std::optional<PostResult> result;  // committed (or a refusal, which writes nothing)
  std::exception_ptr error;          // failed: nothing of this POST is committed
};

// Totals for /health.
struct StoreTotals {
  std::int64_t durable_idempotency_records = 0;
  std::int64_t temporal_epoch = kFirstTemporalEpoch;
  // Transactions that committed POSTs since this object opened the file (with
  // synchronous=FULL, one fsync each).
  std::int64_t post_commits = 0;
};

class Store {
 public:
  // Opens or creates the file (and its parent directory), switches it to WAL,
  // sets the synchronous level and creates the schema when absent. Throws
  // StoreError naming the path.
  Store(const std::filesystem::path& path, SyncMode sync, DedupeMode dedupe = DedupeMode::durable);
  // The same store in memory: no file, no WAL, nothing synced, gone with this
  // object. The in-process engine (docs/engines.md) runs on it.
  struct InMemory {};
  explicit Store(InMemory in_memory, DedupeMode dedupe = DedupeMode::durable);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Judges and records one POST /effects in one transaction: the temporal
  // fence first, then the idempotency decision.
  PostResult post(const PostRequest& request, const BeforeCommit& before_commit = {});

  // Judges and records several POSTs, in order, in one transaction with one
  // COMMIT (one fsync with synchronous=FULL). Each POST runs in a savepoint of
  // its own and sees the writes of those before it, exactly as if they had
  // been posted one after the other. A POST that fails (a statement, or its
  // before_commit) is rolled back to its savepoint and gets its error; the
  // others are unaffected. When the group's transaction itself is lost (BEGIN
  // or COMMIT fails, or SQLite rolls the whole transaction back), nothing of
  // it is committed and every POST is run again in a transaction of its own.
  // Never throws for a POST's failure: it lands in that POST's error.
  void post_group(std::span<PendingPost* const> group);

  // Removes the operation's key records with expires_at <= now and advances the
  // temporal epoch by one when it removed any, in one transaction.
  GcResult gc(const GcRequest& request);

  // Everything stored about one operation.
  OperationState read(std::string_view operation_id);

  StoreTotals totals();

  // Removes every effect, key record and logged request and puts the temporal
  // epoch back to the first, in one transaction: the store holds what a new
  // file holds. The in-process engine starts each sweep cell on it.
  void clear();

  SyncMode sync() const { return sync_; }
  DedupeMode dedupe() const { return dedupe_; }

  // The SQLite library version in use, e.g. "3.40.1".
  static std::string sqlite_version();

  // The schema this build writes and understands.
  // 2 added the metadata table (temporal_epoch), 3 the key-record count kept
  // by triggers; a version-1 or version-2 file is upgraded.
  static constexpr int kSchemaVersion = 3;

 private:
  struct Impl;
  class VolatileJournal;
  // Opens `name` (a path, or ":memory:") and creates the schema; `where`
  // names it in errors.
  void open(const std::string& name, const std::string& where, bool in_memory);
  PostResult post_alone_locked(const PostRequest& request, const BeforeCommit& before_commit);
  bool post_together_locked(std::span<PendingPost* const> group);
  bool post_in_savepoint_locked(PendingPost& post, VolatileJournal& journal);
  PostResult apply_locked(const PostRequest& request, const BeforeCommit& before_commit, VolatileJournal& journal);
  OperationState read_locked(std::string_view operation_id);
  std::optional<IdempotencyRecord> find_record_locked(const std::string& idempotency_key);
  void write_record_locked(const IdempotencyRecord& record, VolatileJournal& journal);
  std::int64_t epoch_locked();

  std::mutex mutex_;
  SyncMode sync_;
  DedupeMode dedupe_;
  std::unique_ptr<Impl> impl_;
  // DedupeMode::volatile_: the key records, by key; guarded by mutex_.
  using VolatileRecords = std::map<std::string, IdempotencyRecord, std::less<>>;
  VolatileRecords volatile_records_;
  std::int64_t post_commits_ = 0;  // guarded by mutex_
};

}  // namespace skewbench::remote_effect
