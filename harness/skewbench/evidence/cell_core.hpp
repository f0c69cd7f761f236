#pragma once

// A sweep cell's record as evidence. The sweep's core digest is SHA-256 over
// each cell's core line (the record without timings or error text) followed by
// "\n", in cell-index order, so a sweep split into shards and merged has the
// same digest as the whole; sweep.json's per_policy is the tally of the
// records' verdicts.

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "scenario/verdict.hpp"

namespace skewbench::evidence {

// The deterministic part of a cell record, serialised canonically.
std::string cell_core_line(const nlohmann::json& record);

// Per-policy verdict counts, keyed by policy label.
class VerdictTally {
 public:
  void add(const nlohmann::json& record);
  nlohmann::json to_json() const;
  std::uint64_t count(scenario::Verdict verdict) const;

 private:
  std::map<std::string, std::pair<std::string, std::map<std::string, std::uint64_t>>> by_label_;
};

}  // namespace skewbench::evidence
