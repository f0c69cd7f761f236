#include <algorithm>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/text.hpp"
#include "infra/remote_snapshot.hpp"
#include "steps/step.hpp"

namespace skewbench::steps {
namespace {

using nlohmann::json;

// The largest amount a step may charge.
constexpr std::int64_t kMaxAmount = 1'000'000'000;

json opt(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

json delivery_json(const std::optional<remote_effect::Delivery>& delivery) {
  return delivery ? json(remote_effect::delivery_name(*delivery)) : json(nullptr);
}

json status_json(remote_effect::OperationStatus status) { return remote_effect::kOperationStatuses.name(status); }

// A POST with X-Drop-Ack whose connection closed unanswered: that is the
// planned outcome only if the remote logged it. A reset before the remote read
// the request looks the same on the wire, so the request log decides.
void confirm_dropped_ack(StepContext& ctx, infra::RemoteApi& remote, LogicalSeconds logical_time_s, StepOutcome& out) {
  auto ex = remote.status(ctx.operation_id, logical_time_s);
  out.exchanges.push_back(ex.release_json());
  ctx.checked_snapshot(ex.answer, "the X-Drop-Ack POST got no answer, but");
}

// One delivery attempt through the outbox: the attempt is recorded before the
// POST and the outcome after it, each in its own transaction, so a crash in
// between leaves an attempt whose outcome is unknown, exactly as on the wire.
// The key is the stable one or a minted one (the scenario's retry identity);
// a bound temporal epoch, when given, travels as a fence. `remote` is the
// instance the delivering node reaches.
struct Delivered {
  infra::TransportOutcome outcome = infra::TransportOutcome::AckUnknown;
  remote_effect::PostAnswer answer;
  json observed;
};

// The body of a POST charging `amount`: the scenario's payload, which names
// the amount only when it is not the one every POST charges (so a POST of
// another amount is the same key with another body).
std::string body_with_amount(const StepContext& ctx, std::int64_t amount) {
  if (amount == remote_effect::kDefaultAmount) return ctx.payload;
  auto body = parse_bounded_json(ctx.payload);
  body["amount"] = amount;
  return body.dump();
}

Delivered deliver(StepContext& ctx, infra::RemoteApi& remote, LogicalSeconds logical_time_s, bool drop_ack,
                  StepOutcome& out, std::optional<std::int64_t> fence_epoch = std::nullopt,
                  std::int64_t amount = remote_effect::kDefaultAmount) {
  ctx.outbox.record_attempt(ctx.operation_id, logical_time_s);
  const auto key = ctx.next_delivery_key();
  auto ex = remote.post_effect({.operation_id = ctx.operation_id,
                                .idempotency_key = key.wire,
                                .ttl_s = ctx.ttl_s,
                                .logical_time_s = logical_time_s,
                                .drop_ack = drop_ack,
                                .body = body_with_amount(ctx, amount),
                                .expected_temporal_epoch = fence_epoch,
                                .amount = amount});
  out.exchanges.push_back(ex.release_json());
  const auto outcome = ex.transport_outcome();
  if (outcome == infra::TransportOutcome::AckUnknown) {
    if (!drop_ack) throw InfrastructureError("POST /effects got no answer, and it was not sent with X-Drop-Ack");
    ++ctx.ledger.post_requests;
    ++ctx.ledger.ack_drops;
    confirm_dropped_ack(ctx, remote, logical_time_s, out);
  }
  json observed = {
      {"transport_outcome", infra::to_string(outcome)},
      {"http_status", ex.http_status ? json(*ex.http_status) : json(nullptr)},
      {"delivery", nullptr},
      {"effect_count", nullptr},
      {"post_requests", nullptr},
  };
  observed["idempotency_key"] = key.name;
  observed["attempt"] = key.attempt;
  const auto& answer = ex.answer;
  if (outcome == infra::TransportOutcome::FencedOut) {
    observed["delivery"] = delivery_json(answer.delivery);
    observed["fence_error"] = answer.error ? json(*answer.error) : json(nullptr);
    observed["current_temporal_epoch"] = opt(answer.current_temporal_epoch);
  }
  if (outcome == infra::TransportOutcome::AckReceived) {
    if (!answer.delivery) throw InfrastructureError("POST /effects answered 200 without a \"delivery\" field");
    observed["delivery"] = delivery_json(answer.delivery);
    ++ctx.ledger.post_requests;
    const auto snapshot = ctx.checked_snapshot(answer.snapshot, "POST /effects answered 200, but");
    observed["effect_count"] = snapshot.effect_count;
    observed["post_requests"] = snapshot.post_requests;
  }
  const bool delivered = outcome == infra::TransportOutcome::AckReceived;
  ctx.outbox.record_outcome(ctx.operation_id, outcome, delivered, logical_time_s);
  return {outcome, answer, std::move(observed)};
}

// --- commit_operation ------------------------------------------------------

class CommitOperationStep final : public Step {
 public:
  CommitOperationStep(LogicalSeconds at_s, std::string node) : Step(at_s), node_(std::move(node)) {}
  std::string_view kind() const override { return "commit_operation"; }
  StepRole role() const override { return StepRole::Setup; }
  std::optional<std::string> node() const override { return node_; }

  StepOutcome execute(StepContext& ctx) const override {
    const auto row = ctx.outbox.commit_operation(ctx.operation_id, ctx.idempotency_key, ctx.ttl_s);
    StepOutcome out;
    out.observed = {{"business_state", infra::to_string(row.business_state)},
                    {"business_version", row.business_version},
                    {"outbox_status", infra::to_string(row.status)}};
    return out;
  }

 private:
  std::string node_;
};

// --- post_effect -----------------------------------------------------------

class PostEffectStep final : public Step {
 public:
  PostEffectStep(LogicalSeconds at_s, std::string node, bool drop_ack, std::int64_t amount)
      : Step(at_s), node_(std::move(node)), drop_ack_(drop_ack), amount_(amount) {}
  std::string_view kind() const override { return "post_effect"; }
  StepRole role() const override { return StepRole::Delivery; }
  std::optional<std::string> node() const override { return node_; }
  json parameters() const override {
    json out = {{"drop_ack", drop_ack_}};
    if (amount_ != remote_effect::kDefaultAmount) out["amount"] = amount_;
    return out;
  }
  StepNeeds needs() const override { return {.sends_another_amount = amount_ != remote_effect::kDefaultAmount}; }

  StepOutcome execute(StepContext& ctx) const override {
    const auto t = ctx.read_clock(node_, at_s());
    StepOutcome out;
    out.observed = deliver(ctx, ctx.remote_of(node_), t, drop_ack_, out, std::nullopt, amount_).observed;
    out.observed["logical_time_s"] = t;
    return out;
  }

 private:
  std::string node_;
  bool drop_ack_;
  std::int64_t amount_;
};

// --- observe ---------------------------------------------------------------

// A node's view of the remote at its own time: what the remote says is active
// at that reading, and how the node itself classifies the record's expiry.
class ObserveStep final : public Step {
 public:
  ObserveStep(LogicalSeconds at_s, std::string node) : Step(at_s), node_(std::move(node)) {}
  std::string_view kind() const override { return "observe"; }
  StepRole role() const override { return StepRole::Observation; }
  std::optional<std::string> node() const override { return node_; }

  StepOutcome execute(StepContext& ctx) const override {
    const auto t = ctx.read_clock(node_, at_s());
    StepOutcome out;
    auto ex = ctx.remote_of(node_).status(ctx.operation_id, t);
    out.exchanges.push_back(ex.release_json());
    const auto snapshot = ctx.checked_snapshot(ex.answer, "observe: GET /status answered, but");
    const auto row = ctx.outbox.read(ctx.operation_id);
    json state = nullptr;
    if (row.key_expires_at_s) state = policy::to_string(policy::classify_point(t, *row.key_expires_at_s));
    out.observed = {
        {"logical_time_s", t},
        {"active_idempotency_records", opt(snapshot.active_idempotency_records)},
        {"effect_count", snapshot.effect_count},
        {"post_requests", snapshot.post_requests},
        {"status", status_json(snapshot.status)},
        {"temporal_state", state},
        {"expires_at_s", opt(row.key_expires_at_s)},
    };
    out.observed["ack_drops"] = snapshot.ack_drops;
    return out;
  }

 private:
  std::string node_;
};

// --- recover ---------------------------------------------------------------

// Reads the remote's authoritative status and applies the reconcile rule:
// committed completes the delivery without a replay, absent allows one, anything
// else holds. Returns whether a replay may follow.
bool reconcile_with_remote(StepContext& ctx, infra::RemoteApi& remote, LogicalSeconds time_s, StepOutcome& out) {
  auto ex = remote.status(ctx.operation_id, time_s);
  out.exchanges.push_back(ex.release_json());
  const auto snapshot = ctx.checked_snapshot(ex.answer, "recover: GET /status answered, but");
  const auto action = policy::reconcile(snapshot.effect_count);
  out.observed["reconciled_status"] = status_json(snapshot.status);
  out.observed["reconcile_action"] = policy::to_string(action);
  out.recovery->reconcile_action = action;
  if (action == policy::ReconcileAction::CompleteWithoutReplay) ctx.outbox.mark_delivered(ctx.operation_id, time_s);
  return action == policy::ReconcileAction::ReplayAfterReconcile;
}

// Sends the delivery again. With a bound temporal epoch the replay carries
// the fence; a FENCED_OUT answer is never a success: recovery reconciles, and
// a replay that reconciliation still allows is bound to the current epoch.
void replay_delivery(StepContext& ctx, infra::RemoteApi& remote, LogicalSeconds time_s, StepOutcome& out) {
  json& o = out.observed;
  if (ctx.bound_temporal_epoch) o["bound_temporal_epoch"] = *ctx.bound_temporal_epoch;
  auto delivered = deliver(ctx, remote, time_s, false, out, ctx.bound_temporal_epoch);
  const auto& first = delivered.observed;
  o["replayed"] = true;
  o["transport_outcome"] = first["transport_outcome"];
  o["delivery"] = first["delivery"];
  o["idempotency_key"] = first["idempotency_key"];
  o["attempt"] = first["attempt"];
  if (delivered.outcome != infra::TransportOutcome::FencedOut) return;
  o["replay_http_status"] = first["http_status"];
  o["fence_error"] = first["fence_error"];
  o["current_temporal_epoch"] = first["current_temporal_epoch"];
  if (!reconcile_with_remote(ctx, remote, time_s, out)) return;
  if (!delivered.answer.current_temporal_epoch) {
    throw InfrastructureError("a fenced_out answer without an integer \"current_temporal_epoch\"");
  }
  ctx.bound_temporal_epoch = delivered.answer.current_temporal_epoch;
  delivered = deliver(ctx, remote, time_s, false, out, ctx.bound_temporal_epoch);
  o["transport_outcome"] = delivered.observed["transport_outcome"];
  o["delivery"] = delivered.observed["delivery"];
}

// Recovery after an unknown acknowledgement, under the scenario's policy:
// replay with the stable key when the policy's time basis says the state is
// definite, otherwise reconcile with the remote's authoritative state first.
class RecoverStep final : public Step {
 public:
  RecoverStep(LogicalSeconds at_s, std::string node) : Step(at_s), node_(std::move(node)) {}
  std::string_view kind() const override { return "recover"; }
  StepRole role() const override { return StepRole::Recovery; }
  std::optional<std::string> node() const override { return node_; }

  StepOutcome execute(StepContext& ctx) const override {
    const auto reference = ctx.reference_time(at_s());
    const auto row = ctx.outbox.read(ctx.operation_id);
    StepOutcome out;
    out.recovery.emplace();
    json& o = out.observed;
    o = {{"time_basis", nullptr},
         {"reading_s", nullptr},
         {"decision_time_s", nullptr},
         {"interval_lower_s", nullptr},
         {"interval_upper_s", nullptr},
         {"temporal_state", nullptr},
         {"decision", nullptr},
         {"reconciled_status", nullptr},
         {"reconcile_action", nullptr},
         {"replayed", false},
         {"transport_outcome", nullptr},
         {"delivery", nullptr},
         {"expires_at_s", opt(row.key_expires_at_s)},
         {"outbox_status_before", infra::to_string(row.status)}};
    if (row.status == infra::OutboxStatus::Delivered) return out;  // nothing to recover
    if (!row.key_expires_at_s) {
      throw std::logic_error("recover: the operation was never attempted, so its key has no expiry yet");
    }

    const auto watermark_before = ctx.watermark_s(node_);
    ctx.read_clock(node_, at_s());
    const auto eval = ctx.policy.evaluate({reference, ctx.clock(node_), *row.key_expires_at_s, watermark_before});
    o["time_basis"] = eval.time_basis;
    o["reading_s"] = eval.reading_s;
    o["decision_time_s"] = eval.decision_time_s;
    if (eval.interval) {
      o["interval_lower_s"] = eval.interval->lower_s;
      o["interval_upper_s"] = eval.interval->upper_s;
    }
    o["temporal_state"] = policy::to_string(eval.state);
    out.recovery->temporal_state = eval.state;
    auto decision = eval.decision;
    if (decision == policy::Decision::ReplaySameKey &&
        ctx.operation.retry_identity == RetryIdentity::NewKeyPerAttempt) {
      decision = policy::Decision::ReplayNewKey;
    }
    o["decision"] = policy::to_string(decision);
    out.recovery->decision = decision;
    for (const auto& [field, value] : eval.extra.items()) o[field] = value;

    auto& remote = ctx.remote_of(node_);
    bool replay = decision != policy::Decision::ReconcileFirst;
    if (!replay) replay = reconcile_with_remote(ctx, remote, eval.decision_time_s, out);
    if (replay) replay_delivery(ctx, remote, eval.decision_time_s, out);
    return out;
  }

 private:
  std::string node_;
};

// --- set_clock_offset ------------------------------------------------------

// A node's clock jumps (a step correction or a rollback) from this step on.
class SetClockOffsetStep final : public Step {
 public:
  SetClockOffsetStep(LogicalSeconds at_s, std::string node, LogicalSeconds offset_s)
      : Step(at_s), node_(std::move(node)), offset_s_(offset_s) {}
  std::string_view kind() const override { return "set_clock_offset"; }
  StepRole role() const override { return StepRole::ClockChange; }
  std::optional<std::string> node() const override { return node_; }
  json parameters() const override { return {{"offset_s", offset_s_}}; }

  StepOutcome execute(StepContext& ctx) const override {
    ctx.nodes.at(node_).offset_s = offset_s_;
    StepOutcome out;
    out.observed = {{"reading_s", ctx.read_clock(node_, at_s())}};
    return out;
  }

 private:
  std::string node_;
  LogicalSeconds offset_s_;
};

// --- restart_remote --------------------------------------------------------

// Restarts remote-effect on the same state file (needs a harness-started
// remote), every instance of it, and reads the operation's status back from
// the first.
class RestartRemoteStep final : public Step {
 public:
  explicit RestartRemoteStep(LogicalSeconds at_s) : Step(at_s) {}
  std::string_view kind() const override { return "restart_remote"; }
  StepRole role() const override { return StepRole::Fault; }
  StepNeeds needs() const override { return {.remote_control = true, .restarts_service = true}; }

  StepOutcome execute(StepContext& ctx) const override {
    if (ctx.remote_control == nullptr) {
      throw InfrastructureError("restart_remote needs a remote-effect started by skewbench (no --remote-url)");
    }
    const auto boot_before = ctx.first().health().answer.boot_id;
    if (!ctx.ledger.boot_ids.empty() && boot_before && !ctx.ledger.boot_ids.contains(*boot_before)) {
      throw InfrastructureError("restart_remote: the remote had already restarted unasked (its boot_id is now " +
                                *boot_before + ")");
    }
    // What the ledger holds is what the remote held before: the boot_id and
    // the request log of this operation.
    infra::RemoteSnapshot before;
    before.post_requests = ctx.ledger.post_requests;
    before.ack_drops = ctx.ledger.ack_drops;
    before.boot_id = boot_before;
    ctx.remote_control->restart_remote();
    ctx.ledger.boot_ids = ctx.boot_ids();
    if (boot_before && ctx.ledger.boot_ids.contains(*boot_before)) {
      throw InfrastructureError("restart_remote: the service's /health gives boot_id " + *boot_before +
                                " before and after the restart: the service did not restart");
    }
    StepOutcome out;
    auto ex = ctx.first().status(ctx.operation_id, ctx.reference_time(at_s()));
    out.exchanges.push_back(ex.release_json());
    const auto after = infra::required_snapshot(ex.answer);
    const auto restarted = infra::restarted_between(before, after);
    if (!after.boot_id && restarted.value_or(false)) {
      // A service without a boot_id that lost its request log in the restart
      // (as #015's keeps it in memory): its counts start again from here.
      ctx.ledger.post_requests = after.post_requests;
      ctx.ledger.ack_drops = after.ack_drops;
    }
    const auto snapshot = ctx.checked_snapshot(ex.answer, "restart_remote: GET /status answered, but");
    out.observed = {{"boot_id_changed", restarted ? json(*restarted) : json(nullptr)},
                    {"effect_count", snapshot.effect_count},
                    {"status", status_json(snapshot.status)}};
    return out;
  }
};

// --- restart_store ---------------------------------------------------------

// Kills the service's backing store (a target's Redis or DynamoDB stand-in),
// a crash that loses what it had not written, starts it again, and reads the
// operation's status back: the service's effects live elsewhere and must not
// change.
class RestartStoreStep final : public Step {
 public:
  explicit RestartStoreStep(LogicalSeconds at_s) : Step(at_s) {}
  std::string_view kind() const override { return "restart_store"; }
  StepRole role() const override { return StepRole::Fault; }
  StepNeeds needs() const override { return {.remote_control = true, .store_control = true}; }

  StepOutcome execute(StepContext& ctx) const override {
    if (ctx.remote_control == nullptr) {
      throw InfrastructureError("restart_store needs a service skewbench started, with a store of its own");
    }
    ctx.remote_control->restart_store();
    StepOutcome out;
    auto ex = ctx.first().status(ctx.operation_id, ctx.reference_time(at_s()));
    out.exchanges.push_back(ex.release_json());
    const auto snapshot = ctx.checked_snapshot(ex.answer, "restart_store: GET /status answered, but");
    out.observed = {{"effect_count", snapshot.effect_count}, {"status", status_json(snapshot.status)}};
    return out;
  }
};

// --- pause_remote ----------------------------------------------------------

// Hangs remote-effect (SIGSTOP) for a stretch of wall time; the steps after it
// meet a remote that accepts connections and answers nothing. Shorter than
// --http-timeout, they only wait; longer, the scenario is ERROR, as it must be.
class PauseRemoteStep final : public Step {
 public:
  PauseRemoteStep(LogicalSeconds at_s, std::int64_t duration_ms) : Step(at_s), duration_ms_(duration_ms) {}
  std::string_view kind() const override { return "pause_remote"; }
  StepRole role() const override { return StepRole::Fault; }
  StepNeeds needs() const override { return {.remote_control = true}; }
  json parameters() const override { return {{"duration_ms", duration_ms_}}; }

  StepOutcome execute(StepContext& ctx) const override {
    if (ctx.remote_control == nullptr) {
      throw InfrastructureError("pause_remote needs a remote-effect started by skewbench (no --remote-url)");
    }
    ctx.remote_control->pause_remote(std::chrono::milliseconds(duration_ms_));
    return {};
  }

 private:
  std::int64_t duration_ms_;
};

// --- restart_database ------------------------------------------------------

// Stops PostgreSQL (immediately by default: a crash, no checkpoint) and starts
// it again, then reconnects and reads the outbox row back: what was committed
// must still be there.
class RestartDatabaseStep final : public Step {
 public:
  RestartDatabaseStep(LogicalSeconds at_s, bool immediate) : Step(at_s), immediate_(immediate) {}
  std::string_view kind() const override { return "restart_database"; }
  StepRole role() const override { return StepRole::Fault; }
  StepNeeds needs() const override { return {.database_control = true}; }
  json parameters() const override { return {{"mode", immediate_ ? "immediate" : "fast"}}; }

  StepOutcome execute(StepContext& ctx) const override {
    if (ctx.database_control == nullptr) {
      throw InfrastructureError("restart_database needs a PostgreSQL started by skewbench (no --database-url)");
    }
    ctx.database_control->restart_database(immediate_);
    ctx.outbox.reconnect();
    const auto row = ctx.outbox.read(ctx.operation_id);
    StepOutcome out;
    out.observed = {{"business_state", infra::to_string(row.business_state)},
                    {"outbox_status", infra::to_string(row.status)},
                    {"delivery_attempts", row.delivery_attempts}};
    return out;
  }

 private:
  bool immediate_;
};

// --- registry --------------------------------------------------------------

const std::vector<std::string> kTemporalStates = policy::kTemporalStates.names();
const std::vector<std::string> kRemoteStatuses = remote_effect::kOperationStatuses.names();
const std::vector<std::string> kOutboxStatuses = infra::kOutboxStatuses.names();
// An outbox row once committed: pending or delivered, never absent.
const std::vector<std::string> kCommittedOutboxStatuses = {std::string(to_string(infra::OutboxStatus::Pending)),
                                                           std::string(to_string(infra::OutboxStatus::Delivered))};
const std::vector<std::string> kTransportOutcomes = infra::kTransportOutcomes.names();
// What a POST the remote answered with 200 or a fence refusal says it did.
const std::vector<std::string> kDeliveries = {
    std::string(remote_effect::delivery_name(remote_effect::Delivery::applied)),
    std::string(remote_effect::delivery_name(remote_effect::Delivery::deduplicated)),
    std::string(remote_effect::delivery_name(remote_effect::Delivery::fenced_out))};

// --- the kinds as registered ----------------------------------------------

StepKind commit_operation_kind() {
  return {"commit_operation",
          "commit the business operation and its outbox row (stable idempotency key) in one transaction",
          StepRole::Setup,
          {{"business_state", string_of(infra::kBusinessStates.names())},
           {"business_version", integer()},
           {"outbox_status", string_of(kCommittedOutboxStatuses)}},
          [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext& ctx) -> std::unique_ptr<Step> {
            return std::make_unique<CommitOperationStep>(at_s, require_node(spec, ctx));
          }};
}

StepKind post_effect_kind() {
  return {"post_effect",
          "deliver the outbox row: POST /effects at the node's clock; drop_ack makes the remote commit and "
          "close the connection without answering; amount, the request's amount, makes it another body for the "
          "same key",
          StepRole::Delivery,
          {{"logical_time_s", integer()},
           {"transport_outcome", string_of(kTransportOutcomes)},
           {"http_status", nullable_integer()},
           {"delivery", nullable_string_of(kDeliveries)},
           {"effect_count", nullable_integer()},
           {"post_requests", nullable_integer()},
           {"idempotency_key", string_of({})},
           {"attempt", integer()}},
          [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext& ctx) -> std::unique_ptr<Step> {
            auto node = require_node(spec, ctx);
            const auto amount =
                spec.optional_int_within("amount", 1, kMaxAmount).value_or(remote_effect::kDefaultAmount);
            return std::make_unique<PostEffectStep>(at_s, std::move(node),
                                                    spec.optional_bool("drop_ack").value_or(false), amount);
          }};
}

StepKind observe_kind() {
  return {"observe",
          "a node reads the remote's status at its own clock and classifies the record's expiry locally",
          StepRole::Observation,
          {{"logical_time_s", integer()},
           {"active_idempotency_records", integer()},
           {"effect_count", integer()},
           {"post_requests", integer()},
           {"status", string_of(kRemoteStatuses)},
           {"temporal_state", nullable_string_of(kTemporalStates)},
           {"expires_at_s", nullable_integer()},
           {"ack_drops", integer()}},
          [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext& ctx) -> std::unique_ptr<Step> {
            return std::make_unique<ObserveStep>(at_s, require_node(spec, ctx));
          }};
}

StepKind recover_kind() {
  return {"recover",
          "a node recovers a pending delivery under the scenario's policy: replay, or reconcile first",
          StepRole::Recovery,
          {{"time_basis", {FieldType::NullableString, {}}},
           {"reading_s", nullable_integer()},
           {"decision_time_s", nullable_integer()},
           {"interval_lower_s", nullable_integer()},
           {"interval_upper_s", nullable_integer()},
           {"temporal_state", nullable_string_of(kTemporalStates)},
           {"decision", nullable_string_of(policy::kDecisions.names())},
           {"reconciled_status", nullable_string_of(kRemoteStatuses)},
           {"reconcile_action", nullable_string_of(policy::kReconcileActions.names())},
           {"replayed", boolean()},
           {"transport_outcome", nullable_string_of(kTransportOutcomes)},
           {"delivery", nullable_string_of(kDeliveries)},
           {"expires_at_s", nullable_integer()},
           {"outbox_status_before", string_of(kCommittedOutboxStatuses)},
           {"watermark_s", nullable_integer()},
           {"idempotency_key", string_of({})},
           {"attempt", integer()},
           {"bound_temporal_epoch", integer()},
           {"replay_http_status", nullable_integer()},
           {"fence_error", nullable_string_of({})},
           {"current_temporal_epoch", nullable_integer()}},
          [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext& ctx) -> std::unique_ptr<Step> {
            return std::make_unique<RecoverStep>(at_s, require_node(spec, ctx));
          }};
}

StepKind set_clock_offset_kind() {
  return {"set_clock_offset",
          "a node's clock jumps to a new offset from the reference time (a step or a rollback)",
          StepRole::ClockChange,
          {{"reading_s", integer()}},
          [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext& ctx) -> std::unique_ptr<Step> {
            auto node = require_node(spec, ctx);
            const auto offset_s =
                spec.require_int_within("offset_s", -time::kMaxLogicalSeconds, time::kMaxLogicalSeconds);
            return std::make_unique<SetClockOffsetStep>(at_s, std::move(node), offset_s);
          }};
}

StepKind restart_remote_kind() {
  return {"restart_remote",
          "restart remote-effect on the same SQLite file (only when skewbench started it)",
          StepRole::Fault,
          {{"boot_id_changed", boolean()}, {"effect_count", integer()}, {"status", string_of(kRemoteStatuses)}},
          [](ObjectReader&, LogicalSeconds at_s, const StepParseContext&) -> std::unique_ptr<Step> {
            return std::make_unique<RestartRemoteStep>(at_s);
          },
          /*takes_node=*/false};
}

StepKind restart_store_kind() {
  return {"restart_store",
          "kill the service's backing store (a target's Redis or DynamoDB stand-in) and start it again on the same "
          "data; only a store skewbench started",
          StepRole::Fault,
          {{"effect_count", integer()}, {"status", string_of(kRemoteStatuses)}},
          [](ObjectReader&, LogicalSeconds at_s, const StepParseContext&) -> std::unique_ptr<Step> {
            return std::make_unique<RestartStoreStep>(at_s);
          },
          /*takes_node=*/false};
}

StepKind pause_remote_kind() {
  return {"pause_remote",
          "hang remote-effect (SIGSTOP) for duration_ms of wall time, then let it go on (SIGCONT); only when "
          "skewbench started it",
          StepRole::Fault,
          {},
          [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext&) -> std::unique_ptr<Step> {
            const auto duration_ms = spec.require_int_within("duration_ms", 1, 600000);
            return std::make_unique<PauseRemoteStep>(at_s, duration_ms);
          },
          /*takes_node=*/false};
}

StepKind restart_database_kind() {
  return {"restart_database",
          "stop PostgreSQL (mode immediate: as a crash; fast) and start it again, then reconnect; only when "
          "skewbench started it",
          StepRole::Fault,
          {{"business_state", string_of(infra::kBusinessStates.names())},
           {"outbox_status", string_of(kOutboxStatuses)},
           {"delivery_attempts", integer()}},
          [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext&) -> std::unique_ptr<Step> {
            const auto mode = spec.optional_string("mode").value_or("immediate");
            if (mode != "immediate" && mode != "fast") {
              throw InputError(spec.child_path("mode"), "\"" + mode + "\" is not one of: immediate, fast");
            }
            return std::make_unique<RestartDatabaseStep>(at_s, mode == "immediate");
          },
          /*takes_node=*/false};
}

StepRegistry make_builtin_registry() {
  StepRegistry r;
  r.add(commit_operation_kind());
  r.add(post_effect_kind());
  r.add(observe_kind());
  r.add(recover_kind());
  r.add(set_clock_offset_kind());
  r.add(restart_remote_kind());
  r.add(restart_store_kind());
  r.add(pause_remote_kind());
  r.add(restart_database_kind());
  add_series_steps(r);
  add_in_flight_steps(r);
  return r;
}

}  // namespace

std::string require_node(ObjectReader& spec, const StepParseContext& ctx) {
  auto node = spec.require_string("node");
  if (!ctx.node_ids.contains(node)) {
    throw InputError(spec.child_path("node"), "unknown node \"" + node + "\" (declare it in $.nodes)");
  }
  return node;
}

infra::RemoteApi& StepContext::remote_of(const std::string& node_id) const {
  const auto it = node_remotes.find(node_id);
  return it == node_remotes.end() ? *remote : *it->second;
}

std::vector<infra::RemoteApi*> StepContext::instances() const {
  std::vector<infra::RemoteApi*> out = {remote};
  for (const auto& [node, instance] : node_remotes) {
    if (std::find(out.begin(), out.end(), instance) == out.end()) out.push_back(instance);
  }
  return out;
}

std::set<std::string> StepContext::boot_ids() const {
  std::set<std::string> out;
  for (auto* instance : instances()) {
    if (const auto boot_id = instance->health().answer.boot_id) out.insert(*boot_id);
  }
  return out;
}

infra::RemoteSnapshot StepContext::checked_snapshot(const remote_effect::StatusAnswer& answer,
                                                    const std::string& where) const {
  const auto snapshot = infra::required_snapshot(answer);
  ledger.check(snapshot, where);
  return snapshot;
}

std::vector<std::string> kinds_playing(const StepRegistry& registry, StepRole role) {
  std::vector<std::string> names;
  for (const auto& [name, kind] : registry.entries()) {
    if (kind.role == role) names.push_back(name);
  }
  return names;
}

const StepRegistry& builtin_steps() {
  static const StepRegistry registry = make_builtin_registry();
  return registry;
}

void validate_expected_value(const ObservedField& field, const json& value, const std::string& path) {
  const bool nullable = field.type == FieldType::NullableString || field.type == FieldType::NullableInteger;
  if (value.is_null()) {
    if (!nullable) throw InputError(path, "must not be null");
    return;
  }
  switch (field.type) {
    case FieldType::Integer:
    case FieldType::NullableInteger:
      expect_int(value, path);
      return;
    case FieldType::Boolean:
      if (!value.is_boolean()) throw InputError(path, "expected a boolean, got " + std::string(json_type_name(value)));
      return;
    case FieldType::String:
    case FieldType::NullableString: {
      const auto given = expect_string(value, path);
      if (field.allowed.empty()) return;
      for (const auto& a : field.allowed) {
        if (a == given) return;
      }
      throw InputError(path, "\"" + given + "\" is not one of: " + text::join(field.allowed, ", "));
    }
  }
}

}  // namespace skewbench::steps
