#pragma once

// The counts read back from remote-effect's own state (a /status snapshot).
// Verdicts are computed from these numbers, never from expectations.

#include <cstdint>
#include <string>

#include "remote_effect/answers.hpp"

namespace skewbench::infra {

// The fields of a snapshot that a verdict is computed from, all observed.
struct RemoteSnapshot {
  remote_effect::OperationStatus status = remote_effect::OperationStatus::absent;
  std::int64_t effect_count = 0;
  std::int64_t post_requests = 0;
  std::int64_t ack_drops = 0;
  std::int64_t active_idempotency_records = 0;
  std::int64_t evaluation_time_s = 0;
  std::string boot_id;
};

// The snapshot of a /status answer, or of a POST /effects answer (which
// carries the same fields), with every field a verdict needs. Throws
// InfrastructureError naming the first one the answer did not carry: what
// was not observed is never guessed at.
RemoteSnapshot required_snapshot(const remote_effect::StatusAnswer& answer);

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
