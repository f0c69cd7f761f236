#pragma once

// The counts read back from remote-effect's own state (a /status snapshot).
// Verdicts are computed from these numbers, never from expectations.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace skewbench::infra {

struct RemoteSnapshot {
  std::string status;  // absent | committed | conflict
  std::int64_t effect_count = 0;
  std::int64_t post_requests = 0;
  std::int64_t ack_drops = 0;
  std::int64_t active_idempotency_records = 0;
  std::int64_t evaluation_time_s = 0;
  std::string boot_id;
};

// Reads a snapshot from a /status body, or from a POST /effects body (which
// carries the same fields). Throws InfrastructureError naming the first field
// that is missing or mistyped: an unexpected reply is never guessed at.
RemoteSnapshot parse_snapshot(const nlohmann::json& body);

}  // namespace skewbench::infra
