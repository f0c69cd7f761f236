#pragma once

// The time layer, the lowest. Everything here is a pure function of its arguments; nothing
// reads the system clock. A "logical second" is an integer second of the
// scenario's logical epoch, the same unit the remote-effect service uses.

#include <cstdint>
#include <string>

namespace skewbench::time {

using LogicalSeconds = std::int64_t;

// The largest magnitude a scenario may give any logical time, offset, TTL or
// clock error: 10^15 s, about 31.7 million years. Every time the engine forms
// is a sum of a few such values (t0 + at + offset + TTL +- error), so none
// can overflow int64 (about 9.2 * 10^18) or PostgreSQL's bigint; the scenario
// reader refuses anything larger, naming its JSON path.
inline constexpr LogicalSeconds kMaxLogicalSeconds = 1'000'000'000'000'000;

// One simulated node's clock. The scenario's reference time is the "true" time
// of a step; a node reads reference_s + offset_s. A negative offset is a clock
// that runs behind.
struct NodeClock {
  std::string node_id;
  LogicalSeconds offset_s = 0;

  LogicalSeconds read(LogicalSeconds reference_s) const { return reference_s + offset_s; }
};

// A declared decision-time authority: a named clock whose reading, and only
// whose reading, decides expiry. The identity is recorded in the evidence so a
// reader knows whose time was trusted.
struct DeclaredAuthority {
  std::string identity;
  LogicalSeconds offset_s = 0;

  LogicalSeconds read(LogicalSeconds reference_s) const { return reference_s + offset_s; }
};

// A reading with a declared maximum clock error: the true time lies somewhere in
// [reading_s - max_clock_error_s, reading_s + max_clock_error_s]. The predicates
// follow TrueTime: "definitely before t" needs the whole interval before t,
// "definitely at or after t" needs the whole interval at or after t, and any
// interval containing t in (lower, upper] is "unknown".
struct UncertaintyInterval {
  LogicalSeconds lower_s = 0;
  LogicalSeconds upper_s = 0;

  static UncertaintyInterval around(LogicalSeconds reading_s, LogicalSeconds max_clock_error_s) {
    return {reading_s - max_clock_error_s, reading_s + max_clock_error_s};
  }

  // Every possible true time is strictly before t.
  bool definitely_before(LogicalSeconds t) const { return upper_s < t; }
  // Every possible true time is at or after t.
  bool definitely_at_or_after(LogicalSeconds t) const { return lower_s >= t; }
  // Neither of the above: t may or may not have passed.
  bool straddles(LogicalSeconds t) const { return lower_s < t && t <= upper_s; }
};

}  // namespace skewbench::time
