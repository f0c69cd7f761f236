// The step kinds and recovery state the #015-#019 series adds: naming the
// key each delivery carries, the nodes' monotonic watermarks, expiry cleanup
// on the remote (gc) and binding a replay to the remote's temporal epoch.

#include <algorithm>

#include "common/errors.hpp"
#include "steps/step.hpp"

namespace skewbench::steps {

using nlohmann::json;

std::string_view to_string(RetryIdentity identity) { return kRetryIdentities.name(identity); }

LogicalSeconds StepContext::read_clock(const std::string& node_id, LogicalSeconds at_s) {
  const auto reading_s = clock(node_id).read(reference_time(at_s));
  const auto [it, inserted] = watermarks_s.emplace(node_id, reading_s);
  if (!inserted) it->second = std::max(it->second, reading_s);
  return reading_s;
}

std::optional<LogicalSeconds> StepContext::watermark_s(const std::string& node_id) const {
  const auto it = watermarks_s.find(node_id);
  if (it == watermarks_s.end()) return std::nullopt;
  return it->second;
}

DeliveryKey StepContext::next_delivery_key() {
  DeliveryKey key;
  key.attempt = ++posts_sent;
  if (operation.retry_identity == RetryIdentity::NewKeyPerAttempt) {
    key.wire = idempotency_key + ":attempt:" + std::to_string(key.attempt);
    key.name = operation.minted_key_name(key.attempt);
  } else {
    key.wire = idempotency_key;
    key.name = operation.stable_key_name();
  }
  return key;
}

namespace {

// A field the step cannot do without.
std::int64_t required(const std::optional<std::int64_t>& field, const char* name, const char* what) {
  if (!field) throw InfrastructureError(std::string(what) + " answered without an integer \"" + name + "\"");
  return *field;
}

// Expiry cleanup at a node's time: the remote deletes the operation's
// idempotency records with expires_at <= that time and, when it removed any,
// advances its temporal epoch.
class GcStep final : public Step {
 public:
  GcStep(LogicalSeconds at_s, std::string node) : Step(at_s), node_(std::move(node)) {}
  std::string_view kind() const override { return "gc"; }
  StepRole role() const override { return StepRole::Maintenance; }
  std::optional<std::string> node() const override { return node_; }

  StepOutcome execute(StepContext& ctx) const override {
    const auto t = ctx.read_clock(node_, at_s());
    auto ex = ctx.remote_of(node_).gc(ctx.operation_id, t);
    StepOutcome out;
    out.exchanges.push_back(ex.release_json());
    const auto& gc = ex.answer;
    const char* what = "POST /maintenance/gc";
    out.observed = {{"logical_time_s", t},
                    {"removed_records", required(gc.removed_records, "removed_records", what)},
                    {"temporal_epoch_before", required(gc.temporal_epoch_before, "temporal_epoch_before", what)},
                    {"temporal_epoch_after", required(gc.temporal_epoch_after, "temporal_epoch_after", what)}};
    return out;
  }

 private:
  std::string node_;
};

// Reads the remote's temporal epoch after the first POST and binds every later
// replay to it: a replay then carries the fence, and the remote refuses it
// (FENCED_OUT) once cleanup has advanced the epoch.
class BindTemporalEpochStep final : public Step {
 public:
  BindTemporalEpochStep(LogicalSeconds at_s, std::string node) : Step(at_s), node_(std::move(node)) {}
  std::string_view kind() const override { return "bind_temporal_epoch"; }
  StepRole role() const override { return StepRole::Maintenance; }
  // The epoch it binds is the service's, which a gc of any operation advances.
  StepNeeds needs() const override { return {.reads_service_wide_state = true, .follows_delivery = true}; }
  std::optional<std::string> node() const override { return node_; }

  StepOutcome execute(StepContext& ctx) const override {
    const auto t = ctx.read_clock(node_, at_s());
    auto ex = ctx.remote_of(node_).status(ctx.operation_id, t);
    StepOutcome out;
    out.exchanges.push_back(ex.release_json());
    ctx.checked_snapshot(ex.answer, "bind_temporal_epoch: GET /status answered, but");
    ctx.bound_temporal_epoch = required(ex.answer.temporal_epoch, "temporal_epoch", "GET /status");
    out.observed = {{"temporal_epoch", *ctx.bound_temporal_epoch}};
    return out;
  }

 private:
  std::string node_;
};

}  // namespace

void add_series_steps(StepRegistry& r) {
  r.add({"gc",
         "expiry cleanup on the remote at the node's clock: removes the operation's expired idempotency records "
         "and advances the temporal epoch when it removed any",
         StepRole::Maintenance,
         {{"logical_time_s", integer()},
          {"removed_records", integer()},
          {"temporal_epoch_before", integer()},
          {"temporal_epoch_after", integer()}},
         [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext& ctx) -> std::unique_ptr<Step> {
           return std::make_unique<GcStep>(at_s, require_node(spec, ctx));
         }});
  r.add({"bind_temporal_epoch",
         "read the remote's temporal epoch after the first POST; later replays carry it as a fence",
         StepRole::Maintenance,
         {{"temporal_epoch", integer()}},
         [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext& ctx) -> std::unique_ptr<Step> {
           return std::make_unique<BindTemporalEpochStep>(at_s, require_node(spec, ctx));
         }});
}

}  // namespace skewbench::steps
