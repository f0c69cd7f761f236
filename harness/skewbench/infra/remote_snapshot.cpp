#include "infra/remote_snapshot.hpp"

#include "common/errors.hpp"

namespace skewbench::infra {
namespace {

template <typename T>
T required(const std::optional<T>& field, const char* name) {
  if (!field) throw InfrastructureError(std::string("remote snapshot has no field \"") + name + "\"");
  return *field;
}

}  // namespace

RemoteSnapshot required_snapshot(const remote_effect::StatusAnswer& answer) {
  return RemoteSnapshot{
      .status = required(answer.status, "status"),
      .effect_count = required(answer.effect_count, "effect_count"),
      .post_requests = required(answer.post_requests, "post_requests"),
      .ack_drops = required(answer.ack_drops, "ack_drops"),
      .active_idempotency_records = answer.active_idempotency_records,
      .evaluation_time_s = answer.evaluation_time_s,
      .boot_id = answer.boot_id,
  };
}

std::optional<bool> restarted_between(const RemoteSnapshot& before, const RemoteSnapshot& after) {
  if (before.boot_id && after.boot_id) return *before.boot_id != *after.boot_id;
  if (after.post_requests < before.post_requests || after.ack_drops < before.ack_drops) return true;
  return std::nullopt;
}

void RemoteLedger::check(const RemoteSnapshot& snapshot, const std::string& where) const {
  std::string problems;
  auto add = [&](const std::string& text) { problems += (problems.empty() ? "" : "; ") + text; };
  if (!boot_ids.empty() && snapshot.boot_id && !boot_ids.contains(*snapshot.boot_id)) {
    std::string known;
    for (const auto& id : boot_ids) known += (known.empty() ? "" : ", ") + id;
    add("the remote restarted (boot_id " + *snapshot.boot_id + " is not " + (boot_ids.size() == 1 ? "" : "one of ") +
        known + ") and no step of the scenario restarted it");
  }
  if (snapshot.post_requests != post_requests || snapshot.ack_drops != ack_drops) {
    add("the remote's request log holds post_requests " + std::to_string(snapshot.post_requests) + ", ack_drops " +
        std::to_string(snapshot.ack_drops) + " for this operation, but this scenario sent " +
        std::to_string(post_requests) + " and " + std::to_string(ack_drops));
  }
  if (!problems.empty()) throw InfrastructureError(where + ": " + problems);
}

}  // namespace skewbench::infra
