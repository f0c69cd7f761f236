#pragma once

// Stand-ins for the outbox and the remote, for unit tests only; integration
// tests use the real service.
// FakeRemote is the in-process engine's remote (infra/in_process.hpp: the
// service's own parser, rules, store and answers, without its HTTP layer and
// process) on a temporary SQLite file, so that it restarts as the service
// does, with the faults a scenario did not plan added around it. FakeOutbox is
// the engine's outbox double.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "infra/in_process.hpp"
#include "infra/ports.hpp"
#include "remote_effect/protocol.hpp"
#include "steps/step.hpp"

namespace skewbench::testing {

namespace protocol = remote_effect;

class FakeRemote final : public infra::RemoteApi {
 public:
  bool fail_everything = false;
  // Faults a scenario did not plan, as a transport that does not check would
  // report them: the next POST vanishes before the remote reads it (no answer,
  // nothing logged); the next POST is applied but its answer is lost although
  // it was not sent with drop_ack; the remote restarts after the next POST.
  bool lose_next_post = false;
  bool vanish_next_answer = false;
  bool restart_after_next_post = false;
  std::string boot_id = "fake-boot-1";
  // Fields left out of every answer, as a service that does not report them
  // (e.g. #015's, which has no clock and no boot_id) answers.
  std::set<std::string> unreported;

  FakeRemote() = default;

  protocol::DedupeMode mode() const { return engine_.mode(); }
  // The service started again in another dedupe mode, on the same file.
  void set_mode(protocol::DedupeMode mode) { engine_.restart(boot_id, mode); }

  // A restart as the service has one: a new boot_id and the store opened
  // again on its file, so the effects, counts and epoch survive and the key
  // records only in durable mode.
  std::string restart() {
    boot_id = "fake-boot-" + std::to_string(++boots_);
    engine_.restart(boot_id, engine_.mode());
    return boot_id;
  }

  infra::PostExchange post_effect(const infra::PostEffectRequest& r) override {
    if (fail_everything) throw InfrastructureError("fake remote is down");
    if (lose_next_post) {
      lose_next_post = false;
      return infra::read_post({}, infra::TransportOutcome::AckUnknown, "POST /effects");
    }
    if (restart_after_next_post) {
      restart_after_next_post = false;
      restart();
    }
    auto posted = engine_.post_effect(r);
    if (vanish_next_answer && posted.transport_outcome() == infra::TransportOutcome::AckReceived &&
        posted.http_status == 200) {
      vanish_next_answer = false;
      infra::HttpExchange lost = posted;
      lost.http_status.reset();
      lost.response_body = nullptr;
      return infra::read_post(std::move(lost), infra::TransportOutcome::AckUnknown, "POST /effects");
    }
    return infra::read_post(unreport(posted), *posted.outcome, "POST /effects");
  }

  infra::StatusExchange status(const std::string& operation_id, std::int64_t t) override {
    if (fail_everything) throw InfrastructureError("fake remote is down");
    return infra::read_status(unreport(engine_.status(operation_id, t)), "GET /status");
  }

  infra::HealthExchange health() override {
    nlohmann::json body = {
        {"status", "ok"}, {"boot_id", boot_id}, {"idempotency_mode", protocol::dedupe_mode_name(mode())}};
    for (const auto& field : unreported) body.erase(field);
    return infra::read_health(body, "GET /health");
  }

  infra::GcExchange gc(const std::string& operation_id, std::int64_t t) override {
    if (fail_everything) throw InfrastructureError("fake remote is down");
    return engine_.gc(operation_id, t);
  }

 private:
  // The exchange with the unreported fields taken out of its answer.
  infra::HttpExchange unreport(infra::HttpExchange exchange) const {
    if (exchange.response_body.is_object()) {
      for (const auto& field : unreported) exchange.response_body.erase(field);
    }
    return exchange;
  }

  TempDir dir_{"skewbench-fake-remote"};
  infra::InProcessRemote engine_{{.state_file = dir_.path() / "remote.sqlite3",
                                  .mode = protocol::kDefaultDedupeMode,
                                  .boot_id = boot_id,
                                  .default_ttl_s = 60}};
  int boots_ = 1;
};

// Restarts and dedupe modes act on the FakeRemote; pauses and database
// restarts have nothing to act on and only count.
class FakeControl final : public steps::RemoteControl, public steps::DatabaseControl {
 public:
  explicit FakeControl(FakeRemote& remote) : remote_(remote) {}
  void restart_remote() override { remote_.restart(); }
  void restart_store() override { ++store_restarts; }
  void pause_remote(std::chrono::milliseconds) override { ++pauses; }
  void use_dedupe_mode(remote_effect::DedupeMode mode) override { remote_.set_mode(mode); }
  void restart_database(bool) override { ++database_restarts; }
  std::string kill_instance(std::size_t index) override {
    killed.push_back(index);
    return "instance-" + std::to_string(index);
  }
  std::vector<std::size_t> killed;
  int pauses = 0;
  int database_restarts = 0;
  int store_restarts = 0;

 private:
  FakeRemote& remote_;
};

// The in-process engine's outbox: PgOutbox's contract, in memory.
using FakeOutbox = infra::InProcessOutbox;

}  // namespace skewbench::testing
