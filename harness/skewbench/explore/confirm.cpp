#include "explore/confirm.hpp"

#include "evidence/evidence.hpp"
#include "explore/engines.hpp"

namespace skewbench::explore {
namespace {

using nlohmann::json;

// The deterministic core of a scenario's evidence, without the engine that
// wrote it: what both engines must agree on.
json engine_free_core(const json& evidence) {
  auto core = evidence::scenario_core_of_evidence(evidence);
  core.erase("engine");
  return core;
}

// Where two cores first differ (nlohmann's JSON Patch between them), for a
// message: the path and both values.
std::string first_difference(const json& in_process, const json& real) {
  const auto patch = json::diff(in_process, real);
  if (patch.empty()) return "";
  const json::json_pointer at(patch[0].at("path").get<std::string>());
  const auto value_at = [&at](const json& core) { return core.contains(at) ? core.at(at).dump() : "(absent)"; };
  return at.to_string() + ": in-process " + value_at(in_process) + ", real stack " + value_at(real);
}

}  // namespace

void confirm_on_real_stack(const Bounds& bounds, ExploreOutcome& outcome, runner::StackOptions services,
                           const std::atomic<bool>* stop) {
  if (outcome.findings.empty()) return;
  services.engine = infra::Engine::real;
  services.quiet = true;
  const auto engine = real_engine(bounds, services, stop);
  const auto environment = engine->environment();
  for (auto& finding : outcome.findings) {
    auto ran = engine->run(finding.minimal);
    finding.real_evidence = evidence::scenario_evidence(ran.scenario, ran.result, environment);
    finding.real_why = ran.breach ? ran.breach->why : "no invariant broken";
    const auto in_process = engine_free_core(finding.evidence);
    const auto real = engine_free_core(finding.real_evidence);
    if (in_process != real) finding.disagreement = first_difference(in_process, real);
    finding.confirmed = !finding.disagreement && ran.breach && ran.breach->invariant == finding.invariant;
  }
}

}  // namespace skewbench::explore
