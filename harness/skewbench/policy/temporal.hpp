#pragma once

// The policy layer's vocabulary: the temporal state of an idempotency record and the
// decisions a recovering node can take. Names match the evidence files.

#include <optional>
#include <string>
#include <string_view>

#include "common/vocabulary.hpp"
#include "time/logical_time.hpp"

namespace skewbench::policy {

using time::LogicalSeconds;

enum class TemporalState { Active, Expired, TimeUnknown };

// What a policy decides from the temporal state alone.
enum class Decision {
  ReplaySameKey,   // send the delivery again with the stable idempotency key
  ReconcileFirst,  // do not replay on time grounds; read the remote's state first
  ReplayNewKey,    // send the delivery again under a newly minted key (no dedupe possible)
};

// What recovery does after reading the authoritative remote state.
enum class ReconcileAction {
  CompleteWithoutReplay,  // the remote already committed the effect
  ReplayAfterReconcile,   // the remote has no effect: a fresh replay is safe
  HoldAndEscalate,        // anything else (e.g. a conflict): stop and ask a person
};

// The words the evidence, the outbox and scenario expectations use.
inline constexpr auto kTemporalStates = vocabulary<TemporalState>({{TemporalState::Active, "ACTIVE"},
                                                                   {TemporalState::Expired, "EXPIRED"},
                                                                   {TemporalState::TimeUnknown, "TIME_UNKNOWN"}});
inline constexpr auto kDecisions = vocabulary<Decision>({{Decision::ReplaySameKey, "REPLAY_SAME_KEY"},
                                                         {Decision::ReconcileFirst, "RECONCILE_FIRST"},
                                                         {Decision::ReplayNewKey, "REPLAY_NEW_KEY"}});
inline constexpr auto kReconcileActions =
    vocabulary<ReconcileAction>({{ReconcileAction::CompleteWithoutReplay, "COMPLETE_WITHOUT_REPLAY"},
                                 {ReconcileAction::ReplayAfterReconcile, "REPLAY_AFTER_RECONCILE"},
                                 {ReconcileAction::HoldAndEscalate, "HOLD_AND_ESCALATE"}});
constexpr std::string_view to_string(TemporalState state) { return kTemporalStates.name(state); }
constexpr std::string_view to_string(Decision decision) { return kDecisions.name(decision); }
constexpr std::string_view to_string(ReconcileAction action) { return kReconcileActions.name(action); }

// A point reading decides strictly: active iff t < expires_at, so at exactly
// expires_at the record is expired (the remote-effect rule).
TemporalState classify_point(LogicalSeconds t, LogicalSeconds expires_at_s);

// An interval decides only when it lies wholly on one side of expiry:
// ACTIVE iff upper < expiry, EXPIRED iff lower >= expiry, else TIME_UNKNOWN.
TemporalState classify_interval(const time::UncertaintyInterval& interval, LogicalSeconds expires_at_s);

// Uncertain time never becomes permission: only a definite state may replay.
Decision decide(TemporalState state);

// The reconcile rule, from the effects the remote's own state holds for the
// operation: exactly one completes the delivery, none allows a replay, and
// anything else (a conflict) holds and escalates.
ReconcileAction reconcile(std::int64_t remote_effect_count);

}  // namespace skewbench::policy
