#include "policy/temporal.hpp"

namespace skewbench::policy {

std::string_view to_string(TemporalState state) {
  switch (state) {
    case TemporalState::Active:
      return "ACTIVE";
    case TemporalState::Expired:
      return "EXPIRED";
    case TemporalState::TimeUnknown:
      return "TIME_UNKNOWN";
  }
  return "INVALID";
}

std::string_view to_string(Decision decision) {
  switch (decision) {
    case Decision::ReplaySameKey:
      return "REPLAY_SAME_KEY";
    case Decision::ReconcileFirst:
      return "RECONCILE_FIRST";
    case Decision::ReplayNewKey:
      return "REPLAY_NEW_KEY";
  }
  return "INVALID";
}

std::string_view to_string(ReconcileAction action) {
  switch (action) {
    case ReconcileAction::CompleteWithoutReplay:
      return "COMPLETE_WITHOUT_REPLAY";
    case ReconcileAction::ReplayAfterReconcile:
      return "REPLAY_AFTER_RECONCILE";
    case ReconcileAction::HoldAndEscalate:
      return "HOLD_AND_ESCALATE";
  }
  return "INVALID";
}

TemporalState classify_point(LogicalSeconds t, LogicalSeconds expires_at_s) {
  return t < expires_at_s ? TemporalState::Active : TemporalState::Expired;
}

TemporalState classify_interval(const time::UncertaintyInterval& interval, LogicalSeconds expires_at_s) {
  if (interval.definitely_before(expires_at_s)) return TemporalState::Active;
  if (interval.definitely_at_or_after(expires_at_s)) return TemporalState::Expired;
  return TemporalState::TimeUnknown;
}

Decision decide(TemporalState state) {
  return state == TemporalState::TimeUnknown ? Decision::ReconcileFirst : Decision::ReplaySameKey;
}

ReconcileAction reconcile(std::string_view remote_status) {
  if (remote_status == "committed") return ReconcileAction::CompleteWithoutReplay;
  if (remote_status == "absent") return ReconcileAction::ReplayAfterReconcile;
  return ReconcileAction::HoldAndEscalate;
}

}  // namespace skewbench::policy
