#pragma once

// The counts read back from remote-effect's own state (a /status snapshot).
// Verdicts are computed from these numbers, never from expectations.

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "remote_effect/answers.hpp"

namespace skewbench::infra {

// The fields of a snapshot that a verdict is computed from. The counts are
// required: every service of the protocol reports them (docs/wire-compatibility.md).
// The rest is reported by some services only (the clock-less ones have no
// time and no key records, #015's has no boot_id) and is nullopt, "not
// observed", where the service does not report it.
struct RemoteSnapshot {
  remote_effect::OperationStatus status = remote_effect::OperationStatus::absent;
  std::int64_t effect_count = 0;
  std::int64_t post_requests = 0;
  std::int64_t ack_drops = 0;
  std::optional<std::int64_t> active_idempotency_records;
  std::optional<std::int64_t> evaluation_time_s;
  std::optional<std::string> boot_id;
};

// The snapshot of a /status answer, or of a POST /effects answer (which
// carries the same fields). Throws InfrastructureError naming the first count
// the answer did not carry: what was not observed is never guessed at.
RemoteSnapshot required_snapshot(const remote_effect::StatusAnswer& answer);

// What one scenario has sent to the remote, to hold every answer against: the
// process it talks to (boot_id) and the operation's request log. A remote that
// restarted unasked, lost a request or counts one this scenario never sent
// has had a fault the scenario did not plan, and nothing it then says may
// become a verdict.
// A remote that reports no boot_id is held to its counts alone: a restart
// that lost its request log shows as counts that went back.
struct RemoteLedger {
  // The boot_id of each instance the scenario reaches, read as it starts;
  // changed only by a step that restarts the service. Empty: not reported.
  std::set<std::string> boot_ids;
  std::int64_t post_requests = 0;  // POSTs the remote must have logged (answered 200, or planned drops)
  std::int64_t ack_drops = 0;      // of those, sent with X-Drop-Ack

  // Throws InfrastructureError naming `where` and every field that disagrees.
  void check(const RemoteSnapshot& snapshot, const std::string& where) const;
};

// Whether the remote restarted between two snapshots of one operation, told
// by the boot_id where both report one, else by the request log: a process
// that lost it (counts lower than before) has restarted. Nullopt when neither
// tells: no boot_id, and counts that did not go back.
std::optional<bool> restarted_between(const RemoteSnapshot& before, const RemoteSnapshot& after);

}  // namespace skewbench::infra
