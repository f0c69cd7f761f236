#pragma once

// Generating scenarios within bounds, and shrinking them, with RapidCheck's
// generators and shrink trees: a Draft is the few numbers a scenario is made
// of; scenario_document writes it as an ordinary scenario file. Every draft
// makes a valid scenario (a commit, a first POST, then the generated steps;
// node indexes wrap), so every shrink of a draft is one too.

#include <cstdint>
#include <string>
#include <vector>

#include <rapidcheck/Gen.h>
#include <nlohmann/json.hpp>

#include "explore/bounds.hpp"

namespace skewbench::explore {

struct StepDraft {
  std::size_t kind = 0;       // index into Bounds::step_kinds (shrinks toward the first)
  std::size_t node = 0;       // index into the nodes, modulo their number
  std::int64_t gap_s = 0;     // after the step before
  bool drop_ack = false;      // post_effect: the answer is lost
  std::int64_t offset_s = 0;  // set_clock_offset: the node's new offset
};

// A number drawn from a range, with the value it shrinks toward.
struct DrawnValue {
  std::int64_t value = 0;
  std::int64_t target = 0;
};

struct Draft {
  std::size_t policy = 0;  // index into Bounds::policies
  // Every policy's ranged fields (Bounds::policy_ranges, flattened); the
  // scenario takes its policy's.
  std::vector<DrawnValue> policy_values;
  std::int64_t ttl_s = 0;
  std::int64_t first_node_offset_s = 0;
  std::vector<std::int64_t> other_node_offsets_s;  // the other nodes' offsets
  std::size_t post_node = 0;
  std::int64_t post_at_s = 0;
  bool post_drop_ack = false;
  std::vector<StepDraft> steps;

  std::size_t node_count() const { return 1 + other_node_offsets_s.size(); }
};

// Drafts within `bounds`; each value shrinks toward fewer steps and nodes,
// smaller gaps, offsets and TTLs, the first policy and step kind, and no
// lost answer.
rc::Gen<Draft> draft_generator(const Bounds& bounds);

// The policy object of a draft: its policy with each ranged field set to the
// value drawn (to the value it shrinks toward when the draft has none).
nlohmann::json policy_document(const Bounds& bounds, const Draft& draft);

// The scenario a draft stands for, as a scenario file holds it.
nlohmann::json scenario_document(const Bounds& bounds, const Draft& draft, const std::string& id,
                                 const std::string& description);

}  // namespace skewbench::explore
