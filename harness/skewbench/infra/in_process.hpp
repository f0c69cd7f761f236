#pragma once

// The in-process engine (docs/engines.md): the remote and the outbox a
// scenario talks to, in this process, with no network and no other process.
// It runs the real rule code and only replaces the transport and the servers:
//  - InProcessRemote is the remote-effect service without its HTTP layer and
//    process. Each request is written as the driver's HTTP client writes it
//    (remote_effect::post_effect_headers), read by the service's own parser,
//    judged and stored by the service's own store (remote_effect::Store,
//    SQLite, in memory or on a file), and answered with the service's own
//    JSON (post_json, snapshot_json, gc_json), which the driver reads with
//    the same readers as a real answer. A POST with drop_ack is committed
//    and its answer withheld, as the service does with X-Drop-Ack.
//  - InProcessOutbox keeps the contract of the PostgreSQL outbox
//    (infra/pg_outbox.hpp) in memory: the same rows, the same one-row writes
//    (a write that would change no row, or one already committed, is an
//    InfrastructureError as PgOutbox's is), one caller at a time.
// What it does not model (processes, real clocks, ack loss through the fault
// proxy, targets) is refused before a run starts (runner/engine.hpp).

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/vocabulary.hpp"
#include "infra/ports.hpp"
#include "remote_effect/protocol.hpp"

namespace skewbench::remote_effect {
class Store;
}  // namespace skewbench::remote_effect

namespace skewbench::infra {

// What runs a scenario: the real stack (PostgreSQL, remote-effect processes,
// HTTP) or the in-process engine. Every record of an in-process run says so.
enum class Engine { real, in_process };
inline constexpr auto kEngines = vocabulary<Engine>({{Engine::real, "real"}, {Engine::in_process, "in-process"}});
constexpr std::string_view to_string(Engine engine) { return kEngines.name(engine); }

class InProcessRemote final : public RemoteApi {
 public:
  struct Options {
    // The store's file, which a restart opens again; none keeps it in memory.
    std::optional<std::filesystem::path> state_file = std::nullopt;
    remote_effect::DedupeMode mode = remote_effect::kDefaultDedupeMode;
    std::string boot_id = "in-process-1";
    // The TTL of a POST that names none, as remote-effect's --default-ttl.
    std::int64_t default_ttl_s = 60;
  };
  explicit InProcessRemote(Options options);
  ~InProcessRemote() override;
  InProcessRemote(const InProcessRemote&) = delete;
  InProcessRemote& operator=(const InProcessRemote&) = delete;

  // A request the service would refuse with 400 is an InfrastructureError
  // naming its answer, as an HTTP client reports a status outside the protocol.
  PostExchange post_effect(const PostEffectRequest& request) override;
  StatusExchange status(const std::string& operation_id, std::int64_t logical_time_s) override;
  HealthExchange health() override;
  GcExchange gc(const std::string& operation_id, std::int64_t logical_time_s) override;

  // The service started again with `boot_id`, in `mode`, on the same file: the
  // effects, counts and epoch survive, the key records only in durable mode.
  // A store in memory has no file to open again: std::logic_error.
  void restart(std::string boot_id, remote_effect::DedupeMode mode);
  // Empties the store: what a fresh state file holds (a sweep cell starts here).
  void clear();

  remote_effect::DedupeMode mode() const { return options_.mode; }
  const std::string& boot_id() const { return options_.boot_id; }

 private:
  void open();

  Options options_;
  std::unique_ptr<remote_effect::Store> store_;
  nlohmann::json health_body_;  // GET /health's answer but for its counts; null until asked, and after a restart
};

class InProcessOutbox final : public OutboxApi {
 public:
  void declare_operation(const std::string& operation_id, std::int64_t business_version) override;
  OutboxRow commit_operation(const std::string& operation_id, const std::string& idempotency_key,
                             std::int64_t ttl_s) override;
  void record_attempt(const std::string& operation_id, std::int64_t logical_time_s) override;
  void record_outcome(const std::string& operation_id, TransportOutcome outcome, bool delivered,
                      std::int64_t logical_time_s) override;
  void mark_delivered(const std::string& operation_id, std::int64_t logical_time_s) override;
  OutboxRow read(const std::string& operation_id) override;
  // Nothing to reconnect to: the rows stay, as a database's do.
  void reconnect() override {}

  // Forgets every row (a sweep cell starts with none).
  void clear() { rows_.clear(); }

 private:
  // The operation's row that a write of `what` changes; throws as PgOutbox
  // does when the write would change no row.
  OutboxRow& row_to_write(const char* what, const std::string& operation_id, bool needs_outbox_row);

  std::map<std::string, OutboxRow, std::less<>> rows_;
};

}  // namespace skewbench::infra
