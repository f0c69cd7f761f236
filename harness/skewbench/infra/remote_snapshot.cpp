#include "infra/remote_snapshot.hpp"

#include "common/errors.hpp"

namespace skewbench::infra {
namespace {

const nlohmann::json& field(const nlohmann::json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end()) throw InfrastructureError(std::string("remote snapshot has no field \"") + name + "\"");
  return *it;
}

std::int64_t int_field(const nlohmann::json& body, const char* name) {
  const auto& v = field(body, name);
  if (!v.is_number_integer())
    throw InfrastructureError(std::string("remote snapshot field \"") + name + "\" is not an integer");
  return v.get<std::int64_t>();
}

std::string string_field(const nlohmann::json& body, const char* name) {
  const auto& v = field(body, name);
  if (!v.is_string()) throw InfrastructureError(std::string("remote snapshot field \"") + name + "\" is not a string");
  return v.get<std::string>();
}

}  // namespace

RemoteSnapshot parse_snapshot(const nlohmann::json& body) {
  if (!body.is_object()) throw InfrastructureError("remote snapshot is not a JSON object");
  // A POST answer may nest the snapshot; a /status answer is the snapshot.
  const auto& s = body.contains("snapshot") && body["snapshot"].is_object() ? body["snapshot"] : body;
  RemoteSnapshot out;
  out.status = string_field(s, "status");
  out.effect_count = int_field(s, "effect_count");
  out.post_requests = int_field(s, "post_requests");
  out.ack_drops = int_field(s, "ack_drops");
  out.active_idempotency_records = int_field(s, "active_idempotency_records");
  out.evaluation_time_s = int_field(s, "evaluation_time");
  out.boot_id = string_field(s, "boot_id");
  if (out.status != "absent" && out.status != "committed" && out.status != "conflict") {
    throw InfrastructureError("remote snapshot has an unknown status \"" + out.status + "\"");
  }
  return out;
}

void RemoteLedger::check(const RemoteSnapshot& snapshot, const std::string& where) const {
  std::string problems;
  auto add = [&](const std::string& text) { problems += (problems.empty() ? "" : "; ") + text; };
  if (!boot_id.empty() && snapshot.boot_id != boot_id) {
    add("the remote restarted (boot_id " + boot_id + " became " + snapshot.boot_id +
        ") and no step of the scenario restarted it");
  }
  if (snapshot.post_requests != post_requests || snapshot.ack_drops != ack_drops) {
    add("the remote's request log holds post_requests " + std::to_string(snapshot.post_requests) + ", ack_drops " +
        std::to_string(snapshot.ack_drops) + " for this operation, but this scenario sent " +
        std::to_string(post_requests) + " and " + std::to_string(ack_drops));
  }
  if (!problems.empty()) throw InfrastructureError(where + ": " + problems);
}

}  // namespace skewbench::infra
