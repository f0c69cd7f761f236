#pragma once

// A published benchmark's result file, recomputed from what a run measured.
// A benchmark is data: its sections (each filled by the scenario whose
// `report_as` names it), its run-level blocks (e.g. #018's `clock_model`), and
// a table of checks, each one function reading measured values only. The
// engine here turns such a table into the result file: each check passed,
// failed, was not measured (its sections ran, but not the step it reads), did
// not run (a section it reads was not in the run) or is in error (a section it
// reads ended in ERROR), and the score says whether it is complete. The
// layer also owns the section names a scenario may report as. Adding a
// benchmark of the series is one more table plus one function per section and
// per check.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/vocabulary.hpp"
#include "evidence/evidence.hpp"
#include "runner/runner.hpp"
#include "scenario/scenario.hpp"

namespace skewbench::published {

// The spelling of a vocabulary's value as a JSON string, to compare with a
// field the evidence or an answer holds.
template <typename Enum>
nlohmann::json word(Enum value) {
  return std::string(to_string(value));
}
inline nlohmann::json word(remote_effect::DedupeMode mode) {
  return std::string(remote_effect::dedupe_mode_name(mode));
}
inline nlohmann::json word(remote_effect::Delivery delivery) {
  return std::string(remote_effect::delivery_name(delivery));
}

using evidence::RunEnvironment;

// A field of a measured object; null when the object or the field is missing
// (a value that was not measured is published as null).
nlohmann::json field_of(const nlohmann::json* object, const char* name);

// One published section as this run filled it: the scenario reported as that
// section and its result, or nothing when no scenario of the run stands for it.
struct SectionRun {
  const scenario::Scenario* scenario = nullptr;
  const runner::ScenarioResult* result = nullptr;

  bool ran() const { return scenario != nullptr && result != nullptr; }
  bool errored() const;  // ran, but ended in ERROR or without a closing measurement
  // The first recovery's observation; null when no recovery step ran.
  const nlohmann::json* recovery() const;
  // The first recovery's timeline record (its node and at_s); null when none.
  const runner::StepRecord* recovery_step() const;
  // The observation steps before the first recovery that observed, in order.
  std::vector<const runner::StepRecord*> observations_before_recovery_steps() const;
  // Those observations as published: node, logical time, what the remote
  // reported and how the node classified the record.
  nlohmann::json observations_before_recovery() const;
  // The last observation `node_id` made before the first recovery; null when none.
  const nlohmann::json* observation_by(const std::string& node_id) const;
  // The scenario's n-th declared node (nodes[0] is node A, nodes[1] node B).
  std::optional<std::string> node_id(std::size_t index) const;
  // The node's clock reading at the first recovery's moment: what it observed
  // then, or else its clock (offset and any set_clock_offset before) read there.
  nlohmann::json node_reading_at_recovery(std::size_t node_index) const;
  // A logical time minus the scenario's T0 (null when `value` is not an integer).
  nlohmann::json relative_to_t0(const nlohmann::json& value) const;
  // The Idempotency-Key of every POST the scenario made, in order.
  std::vector<std::string> post_keys() const;
  nlohmann::json final_measurement() const { return result->final_json(); }
};

using SectionRuns = std::map<std::string, SectionRun, std::less<>>;

// What became of one published check, as the result file spells it: passed
// or failed on measured values; not measured (its sections ran, but not the
// step it reads); not run (a section it reads was not in the run); in error
// (a section it reads ended in ERROR). Only "passed" earns points.
enum class CheckStatus { Passed, Failed, NotMeasured, NotRun, Error };
inline constexpr auto kCheckStatuses = vocabulary<CheckStatus>({{CheckStatus::Passed, "passed"},
                                                                {CheckStatus::Failed, "failed"},
                                                                {CheckStatus::NotMeasured, "not_measured"},
                                                                {CheckStatus::NotRun, "not_run"},
                                                                {CheckStatus::Error, "error"}});

// What a check function decided from the measured values: passed, failed, or
// not measured when a value it needs was never observed (that is not a
// failure, and never a pass).
struct CheckOutcome {
  CheckOutcome(bool passed, nlohmann::json measured)
      : status(passed ? CheckStatus::Passed : CheckStatus::Failed), evidence(std::move(measured)) {}
  static CheckOutcome not_measured(nlohmann::json why) {
    CheckOutcome out(false, std::move(why));
    out.status = CheckStatus::NotMeasured;
    return out;
  }

  CheckStatus status;
  nlohmann::json evidence;
};

// Not measured when a value the check reads is null because the remote does
// not report `field` (a clock-less service has no key records to count): such
// a service can neither pass nor fail the check. Nullopt when every value is there.
std::optional<CheckOutcome> unreported(const char* field, const char* section,
                                       std::initializer_list<nlohmann::json> values);

struct PublishedCheck {
  const char* id;
  std::vector<const char*> sections;  // the sections the check reads
  // Called only when every section in `sections` ran without ERROR.
  CheckOutcome (*evaluate)(const SectionRuns&);
};

// A section's published fields, computed from its run (called when it ran).
struct PublishedSection {
  const char* name;
  nlohmann::json (*fields)(const SectionRun&);
};

// A run-level block of the result (e.g. `clock_model`), from all sections.
struct PublishedBlock {
  const char* name;
  nlohmann::json (*build)(const SectionRuns&);
};

struct PublishedBenchmark {
  const char* id;           // as the result file names it in `benchmark`
  const char* result_file;  // the file's name inside --out
  // A scenario stands for section NAME when its report_as is this prefix + NAME
  // ("015:" + "unsafe"); #018's sections have no prefix.
  const char* report_prefix = "";
  std::vector<PublishedSection> sections;
  std::vector<PublishedBlock> blocks;
  std::vector<PublishedCheck> checks;
  int points_per_check = 2;
};

// #018 clock skew / expiry disagreement (benchmark_018.cpp).
const PublishedBenchmark& benchmark_018();
// The rest of the series (series.cpp): #015 HTTP idempotency
// boundary, #016 state durability across a restart, #017 TTL replay, #019
// clock rollback.
const PublishedBenchmark& benchmark_015();
const PublishedBenchmark& benchmark_016();
const PublishedBenchmark& benchmark_017();
const PublishedBenchmark& benchmark_019();

// Every benchmark of the series, #015 to #019.
const std::vector<const PublishedBenchmark*>& series_benchmarks();

// result.json in the published #018 shape, computed from measured results only.
nlohmann::json published_result(const std::vector<const scenario::Scenario*>& scenarios,
                                const std::vector<runner::ScenarioResult>& results, const RunEnvironment& env);

// One benchmark's result file as a run computed it.
struct PublishedFile {
  const PublishedBenchmark* benchmark = nullptr;
  nlohmann::json result;
};

// The result file of every benchmark the run reports on, in series order;
// #018's result.json is always among them (its checks not run when no #018
// scenario ran), the others only when one of their sections ran. None for a
// run of the in-process engine: published results come from the real stack.
std::vector<PublishedFile> published_files(const std::vector<const scenario::Scenario*>& scenarios,
                                           const std::vector<runner::ScenarioResult>& results,
                                           const RunEnvironment& env);

// The result file of `benchmark` for this run, computed from measured results only.
nlohmann::json published_result(const PublishedBenchmark& benchmark,
                                const std::vector<const scenario::Scenario*>& scenarios,
                                const std::vector<runner::ScenarioResult>& results, const RunEnvironment& env);

// Every section a scenario may report as, in series order: "<section>" for
// #018, "<benchmark>:<section>" for the rest (report_prefix + name).
std::vector<std::string> report_sections();

// The benchmark whose section the scenario reports as; null when none.
const PublishedBenchmark* benchmark_reported_by(const scenario::Scenario& scenario);

// Why a scenario's report_as names no published section ("\"x\" is not one
// of: ..."); nullopt when it names one or the scenario reports on none.
std::optional<std::string> report_as_problem(const scenario::Scenario& scenario);

// Whether any scenario of the run stands for a section of `benchmark`.
bool run_reports_on(const PublishedBenchmark& benchmark, const std::vector<const scenario::Scenario*>& scenarios);

// "10/10" for a complete score; "2 of 2 points that ran; 8 not run" otherwise
// (and how many points are in ERROR).
std::string score_line(const nlohmann::json& published);

// The published checks' outcome for machines (run --format json): benchmark,
// outcome, score, max_score, score_line, score_coverage; null for null.
nlohmann::json published_summary(const nlohmann::json& published);

// The published checks as a Markdown section for RESULT.md.
std::string published_checks_markdown(const nlohmann::json& published);

// The published checks as plain text for the end of a run's console output.
std::string published_checks_text(const nlohmann::json& published);

}  // namespace skewbench::published
