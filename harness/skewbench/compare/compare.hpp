#pragma once

// Layer: compare. What changed between two runs or two sweeps, and whether the
// candidate is a safety regression: the CI gate. The CLI only parses its
// arguments and prints one of the renderings below.
//
// Exit codes (Comparison::exit_code): 0 no new CONFLICT and nothing missing;
// 1 a scenario or cell is CONFLICT in the candidate but not in the base, or the
// base has a scenario or cell the candidate lacks (MISSING); 2 the two cannot be
// compared, or a side's core digest does not match its own rows (CannotCompare);
// 3 the candidate holds ERROR results (so it cannot vouch for safety) and
// nothing else was found.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/vocabulary.hpp"
#include "scenario/verdict.hpp"

namespace skewbench::compare {

// The two directories cannot be compared, or one of them contradicts itself;
// the message names the side (base or candidate), its file and what differs.
class CannotCompare : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Kind { Run, Sweep };

// CHANGED: on both sides, some compared field differs. MISSING: in the base,
// not in the candidate. ADDED: in the candidate, not in the base.
enum class RowStatus { Changed, Missing, Added };

// The fields a row compares, as summary.json and cells.jsonl name them.
inline constexpr std::array<const char*, 6> kComparedFields = {"verdict",      "decision",      "temporal_state",
                                                               "effect_count", "post_requests", "final_status"};

struct Row {
  RowStatus status = RowStatus::Changed;
  std::string key;             // the scenario id, or the cell's policy and axis values as text
  nlohmann::json coordinates;  // {"scenario": id} or {"policy": label, axis: value, ...}
  nlohmann::json base;         // the compared fields on each side; null on a side without the row
  nlohmann::json candidate;
  std::vector<std::string> changed_fields;  // of kComparedFields, in that order
  bool new_conflict = false;                // CONFLICT in the candidate, not in the base
};

struct Side {
  std::filesystem::path dir;
  std::string core_digest;  // recomputed from the rows and equal to the one recorded
};

struct VerdictCounts {
  std::array<std::uint64_t, scenario::kAllVerdicts.size()> base{};
  std::array<std::uint64_t, scenario::kAllVerdicts.size()> candidate{};
};

struct Comparison {
  Kind kind = Kind::Run;
  Side base;
  Side candidate;
  std::vector<Row> rows;  // at most Options::limit of them (all with limit 0)
  std::uint64_t changed = 0;
  std::uint64_t missing = 0;
  std::uint64_t added = 0;
  std::uint64_t new_conflicts = 0;
  std::uint64_t candidate_errors = 0;
  std::map<std::string, VerdictCounts> totals;  // per policy (label)
  std::vector<std::string> notes;               // differences that do not prevent comparing

  std::uint64_t rows_total() const { return changed + missing + added; }
  bool core_digests_equal() const { return base.core_digest == candidate.core_digest; }
  int exit_code() const;
  // "scenario" or "cell".
  const char* unit() const { return kind == Kind::Run ? "scenario" : "cell"; }
};

struct Options {
  std::size_t limit = 500;  // rows kept; 0 = all (the counts are always complete)
  // Compare a run or sweep of the in-process engine with one of the real stack
  // (--across-engines); without it that is CannotCompare.
  bool across_engines = false;
};

// Reads BASE and CANDIDATE (two run or two sweep directories), recomputes
// both core digests from their rows, and matches scenarios by id and cells by
// policy label and axis values. Throws CannotCompare.
Comparison compare_dirs(const std::filesystem::path& base_dir, const std::filesystem::path& candidate_dir,
                        const Options& options);

std::string to_text(const Comparison& comparison);
std::string to_markdown(const Comparison& comparison);
nlohmann::json to_json(const Comparison& comparison);

inline constexpr auto kRowStatuses = vocabulary<RowStatus>(
    {{RowStatus::Changed, "CHANGED"}, {RowStatus::Missing, "MISSING"}, {RowStatus::Added, "ADDED"}});
constexpr std::string_view to_string(RowStatus status) { return kRowStatuses.name(status); }

}  // namespace skewbench::compare
