#include "policy/temporal.hpp"

namespace skewbench::policy {

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

ReconcileAction reconcile(std::int64_t remote_effect_count) {
  if (remote_effect_count == 1) return ReconcileAction::CompleteWithoutReplay;
  if (remote_effect_count == 0) return ReconcileAction::ReplayAfterReconcile;
  return ReconcileAction::HoldAndEscalate;
}

}  // namespace skewbench::policy
