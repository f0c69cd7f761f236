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

// What one scenario has sent to the remote, to hold every answer against: the
// process it talks to (boot_id) and the operation's request log. A remote that
// restarted unasked, lost a request or counts one this scenario never sent
// has had a fault the scenario did not plan, and nothing it then says may
// become a verdict.
struct RemoteLedger {
  std::string boot_id;             // from the scenario's first exchange; changed only by a step that restarts it
  std::int64_t post_requests = 0;  // POSTs the remote must have logged (answered 200, or planned drops)
  std::int64_t ack_drops = 0;      // of those, sent with X-Drop-Ack

  // Throws InfrastructureError naming `where` and every field that disagrees.
  void check(const RemoteSnapshot& snapshot, const std::string& where) const;
};

}  // namespace skewbench::infra
