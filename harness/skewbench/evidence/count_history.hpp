#pragma once

// The rule every count a service reports is held to (docs/evidence.md,
// "Counts a service reports"). The checker never takes the system's word for
// what happened: a count is believed only where it agrees with itself and
// with what skewbench sent and saw, and a contradiction makes the scenario an
// ERROR, never a verdict.
//
// Over a scenario's recorded exchanges, in order, then its closing
// measurement:
//  - every count an answer carries (effect_count, post_requests, ack_drops,
//    the record counts) is an integer from 0 to 2^53;
//  - effect_count never falls, except across a step that restarts the service
//    (StepNeeds::restarts_service), which may lose what it kept in memory;
//  - an answer "applied" raises effect_count above what the answer before it
//    said;
//  - effect_count is at least the POSTs answered "applied" and at most those
//    plus the POSTs whose answer was lost, counted from the operation's start
//    (it has no effect before its first POST) or from the first reading after
//    a restart;
//  - an instance's boot_id (read from every answer that carries one) changes
//    only across a step that restarts the service, and must change across one.
// Counts skewbench took itself (an effect sink's, marked
// "counted_by_skewbench") are measurements, not the service's word: they are
// not held to the rule; the readings after one are held against it.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runner/runner.hpp"
#include "scenario/scenario.hpp"

namespace skewbench::evidence {

// The first contradiction in a scenario's history, naming the exchange and
// both numbers; nullopt when the history holds. Pure. `timeline`,
// `closing_exchange` and `final_measurement` as the evidence writes them
// ("timeline", "closing_exchange", "final"; null when not taken): the closing
// exchange is read where there is one, else the counts of "final");
// `scenario` says which steps restart the service.
std::optional<std::string> count_contradiction(const scenario::Scenario& scenario, const nlohmann::json& timeline,
                                               const nlohmann::json& closing_exchange,
                                               const nlohmann::json& final_measurement);

// The same, of a scenarios/<id>.json file as written (for verify). Throws
// (json or scenario errors) when the file lacks its input or timeline.
std::optional<std::string> count_contradiction_of_evidence(const nlohmann::json& evidence);

// Makes `result` an ERROR naming the contradiction when its history breaks
// the rule; a result that is an ERROR already is left as it is. Every run and
// sweep calls it on each scenario's result before a row is made of it.
void hold_counts(const scenario::Scenario& scenario, runner::ScenarioResult& result);

}  // namespace skewbench::evidence
