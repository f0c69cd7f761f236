#pragma once

// The findings table: one row per target and scenario, computed from each
// scenario's evidence (the counts the service reported, and the clocks each
// process read), and held against the table docs/targets.md keeps.
//
// "expiry decided by" says whose clock made the library let a replay through
// as new, from what was measured at the replay: the key's expiry (the first
// POST's time at the first instance's clock plus the TTL), the clock of the
// instance the replay reached and that of the store:
//  - instance, store: the replay was applied again, and only that clock had
//    passed the key's expiry; "instance or store" when both had;
//  - none: some clock had passed the key's expiry, and the replay was still
//    deduplicated: no clock expired the key;
//  - n/a: no replay, or no clock had passed expiry (a duplicate then came from
//    something else: a new key, a memory lost in a restart).
// A replay that reached another instance than the one that took the first
// POST is held against the target's control: a measured run across
// instances in which no clock had passed expiry. A clock is named for a
// duplicate across instances only when that control deduplicated (the
// instances share their records); when it duplicated, or none was measured,
// the row names no clock and says why (qualify_across_instances).

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace skewbench::targets {

inline constexpr const char* kNotApplicable = "n/a";

struct FindingRow {
  std::string target;
  std::string scenario;
  std::string verdict;                        // SAFE, CONFLICT, HELD, ERROR; n/a when the target cannot run it
  std::optional<std::int64_t> post_requests;  // as the service counted them
  std::optional<std::int64_t> effect_count;
  std::string decided_by;  // instance, store, instance or store, none, n/a
  std::string evidence;    // the scenario's evidence file, relative to the findings' folder
  // For a duplicated effect: the exchange that applied it again, and the
  // clocks at that moment (step, instance, instance_clock_s, store_clock_s,
  // key_expires_at_s); else null.
  nlohmann::json duplicate = nullptr;
  std::string note;  // why it did not run, or the error
  // Measured at the replay: it reached another instance than the one that
  // took the first POST; some clock had passed the key's expiry.
  bool across_instances = false;
  bool clock_past_expiry = false;

  nlohmann::json to_json() const;
};

// The row of one scenario's evidence file (a run against `target`).
FindingRow finding_of(const std::string& target, const nlohmann::json& evidence, const std::string& evidence_path);
// The row of a scenario the target cannot run, and why.
FindingRow not_applicable(const std::string& target, const std::string& scenario, const std::string& why);

// The rows of one target, with a clock named for a duplicate across
// instances only when the target's control (across instances, no clock past
// expiry) was measured and deduplicated; else the row names no clock and
// says why.
void qualify_across_instances(std::vector<FindingRow>& rows_of_one_target);

// A row of the table a findings file keeps (docs/targets.md), as written.
struct ExpectedRow {
  std::string target;
  std::string scenario;
  std::string verdict;
  std::string post_requests;
  std::string effect_count;
  std::string decided_by;
  std::string why;
  int line = 0;
};

// The findings table in a Markdown text: the table whose header starts
// "| target | scenario | verdict | POSTs | effects | expiry decided by |".
// Cells are read as Markdown reads them ("\|" is a pipe in a cell, "\_" an
// underscore). A POSTs or effects cell may hold a range "A–B" (en dash): a
// count the requests' timing decides, held when the run's count is within it;
// a verdict cell may name two, "CONFLICT or SAFE", for a race that timing
// decides (the why says which race).
// Throws std::invalid_argument when there is none, a row is
// malformed, or two rows for one target and scenario contradict each other
// (naming both lines).
std::vector<ExpectedRow> read_expected_table(const std::string& markdown);

// The rows as that table writes them; "why" from `expected` where it has the
// row. Every cell is escaped (text::markdown_escape): a service's words,
// HTML included, are shown as text, never rendered.
std::string markdown_table(const std::vector<FindingRow>& rows, const std::vector<ExpectedRow>& expected = {});

// findings.md: the table, the exchanges that duplicated an effect, and the
// differences from the expected table, every word escaped as in the table.
std::string findings_markdown(const std::vector<FindingRow>& rows, const std::vector<ExpectedRow>& expected,
                              const std::vector<std::string>& differences);

// Every difference between what ran and what `expected` says of the targets
// that ran (other targets' rows are not asked about): a row that differs,
// one the table lacks, one the run lacks. Each names the row and its line.
std::vector<std::string> differences(const std::vector<FindingRow>& rows, const std::vector<ExpectedRow>& expected,
                                     const std::set<std::string>& targets_run);

}  // namespace skewbench::targets
