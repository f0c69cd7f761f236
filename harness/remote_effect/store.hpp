#pragma once

// The service's durable state: one SQLite file in WAL mode.
//
// One connection, guarded by one mutex: every POST runs its read-decide-write
// in a single BEGIN IMMEDIATE transaction while holding the mutex, so two
// concurrent POSTs with one key are judged one after the other and can never
// both apply. A POST returns only after its COMMIT, which with
// synchronous=FULL has reached the disk.

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "remote_effect/logic.hpp"

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
  // which write nothing.
  OperationState state;
};

class Store {
 public:
  // Opens or creates the file (and its parent directory), switches it to WAL,
  // sets the synchronous level and creates the schema when absent. Throws
  // StoreError naming the path.
  Store(const std::filesystem::path& path, SyncMode sync);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Judges and records one POST /effects in one transaction.
  PostResult post(const PostRequest& request);

  // Everything stored about one operation.
  OperationState read(std::string_view operation_id);

  SyncMode sync() const { return sync_; }

  // The SQLite library version in use, e.g. "3.40.1".
  static std::string sqlite_version();

  // The schema this build writes and understands.
  static constexpr int kSchemaVersion = 1;

 private:
  struct Impl;
  OperationState read_locked(std::string_view operation_id);

  std::mutex mutex_;
  SyncMode sync_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace skewbench::remote_effect
