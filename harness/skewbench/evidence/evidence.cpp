#include "evidence/evidence.hpp"

#include <ctime>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include <skewbench/build_info.hpp>

#include "common/digest.hpp"
#include "common/files.hpp"

namespace skewbench::evidence {
namespace {

using nlohmann::json;

json check_json(const runner::CheckResult& c) {
  return {{"id", c.id}, {"expected", c.expected}, {"observed", c.observed}, {"measured", c.measured}, {"pass", c.pass}};
}

// A step record without what varies between runs of the same inputs.
json core_step(const json& record) {
  return {{"index", record["index"]},
          {"kind", record["kind"]},
          {"node", record["node"]},
          {"at_s", record["at_s"]},
          {"parameters", record["parameters"]},
          {"observed", record.value("observed", json(nullptr))}};
}

// The same fields, from the record as the run holds it.
json core_step(const runner::StepRecord& record) {
  const auto* observed = record.observed();
  return {{"index", record.index},
          {"kind", record.kind},
          {"node", record.node ? json(*record.node) : json(nullptr)},
          {"at_s", record.at_s},
          {"parameters", record.parameters},
          {"observed", observed ? *observed : json(nullptr)}};
}

}  // namespace

json harness_json() {
  return {{"name", "skewbench"},
          {"version", build_info::kVersion},
          {"git_commit", build_info::kGitCommit},
          {"build_type", build_info::kBuildType}};
}

std::vector<std::string> standard_warnings(int postgres_major) {
  std::vector<std::string> out;
  if (build_info::kIsDebugBuild) {
    out.push_back("harness built as Debug: timings are not representative");
  }
  if (postgres_major != kReferencePostgresMajor) {
    out.push_back("PostgreSQL major " + std::to_string(postgres_major) + " differs from " +
                  std::to_string(kReferencePostgresMajor) + ", the major of the published #018 run");
  }
  return out;
}

RunEnvironment describe_environment(const std::string& run_id, const runner::ServicesDescription& services) {
  const auto& database = services.database;
  const auto& health = services.remote_health;
  RunEnvironment env;
  env.run_id = run_id;
  env.started_at_utc = utc_now_iso8601();
  env.postgresql = {{"server_version", database.server.server_version},
                    {"server_version_num", database.server.server_version_num},
                    {"url", database.redacted_url},
                    {"embedded", database.started.has_value()},
                    {"settings",
                     {{"fsync", database.server.fsync},
                      {"synchronous_commit", database.server.synchronous_commit},
                      {"full_page_writes", database.server.full_page_writes}}},
                    {"bin_dir", nullptr},
                    {"source", nullptr},
                    {"binaries_version", nullptr}};
  if (database.started) {
    env.postgresql["bin_dir"] = database.started->bin_dir.string();
    env.postgresql["source"] = database.started->source;
    env.postgresql["binaries_version"] = database.started->version;
  }
  env.remote_effect = {{"url", services.remote_url},
                       {"embedded", services.embedded_remote},
                       {"command", services.remote_command ? json(*services.remote_command) : json(nullptr)}};
  for (const char* field :
       {"service", "boot_id", "version", "git_commit", "sqlite_version", "sync", "default_ttl_seconds", "library"}) {
    env.remote_effect[field] = health.value(field, json(nullptr));
  }
  env.remote_effect["target"] = services.target;
  env.remote_effect["store"] = services.store;
  env.clock = services.clock.empty() ? json(nullptr) : services.clock;
  env.warnings = standard_warnings(database.server.major());
  return env;
}

RunEnvironment describe_in_process_environment(const std::string& run_id, const json& remote_health) {
  RunEnvironment env;
  env.run_id = run_id;
  env.engine = std::string(to_string(infra::Engine::in_process));
  env.started_at_utc = utc_now_iso8601();
  env.postgresql = nullptr;
  env.remote_effect = {{"url", nullptr}, {"embedded", true}, {"command", nullptr}};
  for (const char* field : {"service", "boot_id", "version", "git_commit", "sqlite_version", "sync",
                            "default_ttl_seconds", "idempotency_mode"}) {
    env.remote_effect[field] = remote_health.value(field, json(nullptr));
  }
  env.timeouts = nullptr;
  env.warnings = standard_warnings(kReferencePostgresMajor);
  env.warnings.push_back(
      "ran on the in-process engine: remote-effect's rules and an outbox double in one process, no PostgreSQL, "
      "no remote-effect process, no network (docs/engines.md); not evidence of the real stack");
  return env;
}

infra::Engine recorded_engine(const json& summary) {
  const json* named = nullptr;
  if (summary.is_object() && summary.contains("engine")) {
    named = &summary["engine"];
  } else if (summary.is_object() && summary.contains("environment") && summary["environment"].is_object() &&
             summary["environment"].contains("engine")) {
    named = &summary["environment"]["engine"];
  }
  if (!named) return infra::Engine::real;
  const auto engine = named->is_string() ? infra::kEngines.parse(named->get<std::string>()) : std::nullopt;
  if (!engine) throw std::runtime_error("engine " + named->dump() + " is none this build knows (real, in-process)");
  return *engine;
}

json RunEnvironment::to_json() const {
  return {{"run_id", run_id},
          {"engine", engine},
          {"harness", harness_json()},
          {"postgresql", postgresql},
          {"remote_effect", remote_effect},
          {"timeouts", timeouts},
          {"durability", durability.empty() ? nlohmann::json(nullptr) : nlohmann::json(durability)},
          {"clock", clock},
          {"host", host},
          {"started_at_utc", started_at_utc},
          {"finished_at_utc", finished_at_utc}};
}

namespace {

// The one definition of a scenario's core, from its parts as written (the
// timeline as the evidence file holds it, or as the run does).
// `engine` is null for the real stack, "in-process" otherwise (engine_mark):
// a run of the in-process engine has other digests than the real stack's.
template <typename Timeline>
json core_of(const json& input, const Timeline& timeline, const json& final_measurement, const json& checks,
             const json& verdict, bool errored, const json& pass, const json& engine) {
  json steps = json::array();
  for (const auto& record : timeline) steps.push_back(core_step(record));
  json core = {{"input", input},   {"steps", steps},     {"final", final_measurement},
               {"checks", checks}, {"verdict", verdict}, {"errored", errored},
               {"pass", pass}};
  if (!engine.is_null()) core["engine"] = engine;
  return core;
}

}  // namespace

json engine_mark(infra::Engine engine) {
  return engine == infra::Engine::real ? json(nullptr) : json(to_string(engine));
}

infra::Engine engine_of(const RunEnvironment& env) {
  return infra::kEngines.parse(env.engine).value_or(infra::Engine::real);
}

json scenario_core(const scenario::Scenario& s, const runner::ScenarioResult& r, infra::Engine engine) {
  json checks = json::array();
  for (const auto& c : r.checks) checks.push_back(check_json(c));
  return core_of(s.document, r.timeline, r.final_json(), checks, r.verdict, r.error.has_value(), r.pass,
                 engine_mark(engine));
}

json scenario_core_of_evidence(const json& evidence) {
  return core_of(evidence.at("input"), evidence.at("timeline"), evidence.at("final"), evidence.at("checks"),
                 evidence.at("verdict"), !evidence.at("error").is_null(), evidence.at("pass"),
                 evidence.value("engine", json(nullptr)));
}

json outcome_row(const runner::ScenarioResult& r) {
  const json f = r.final_measurement ? r.final_json() : json::object();
  return {{"id", r.scenario_id},
          {"policy", r.policy},
          {"temporal_state", r.temporal_state()},
          {"decision", r.decision()},
          {"post_requests", f.value("post_requests", json(nullptr))},
          {"effect_count", f.value("effect_count", json(nullptr))},
          {"final_status", f.value("status", json(nullptr))},
          {"verdict", r.verdict},
          {"error", r.error ? json(*r.error) : json(nullptr)}};
}

json summary_row(const scenario::Scenario& s, const runner::ScenarioResult& r, infra::Engine engine) {
  auto row = outcome_row(r);
  row["pass"] = r.pass;
  row["core_digest"] = json_digest(scenario_core(s, r, engine));
  if (const auto mark = engine_mark(engine); !mark.is_null()) row["engine"] = mark;
  return row;
}

std::string run_core_digest(const json& summary_rows) {
  json core_rows = json::array();
  for (const auto& row : summary_rows) {
    json core = row;
    if (core.is_object()) core.erase("error");
    core_rows.push_back(std::move(core));
  }
  return json_digest(core_rows);
}

namespace {

// The observed fields of the last recovery that ran, as ScenarioResult's
// last_recovery() finds it: by the role of the step in the scenario's input.
json last_recovery_observed(const json& evidence) {
  const auto input = scenario::parse_scenario(evidence.at("input"), "scenario evidence input");
  json found = nullptr;
  for (const auto& record : evidence.at("timeline")) {
    const auto index = record.at("index").get<std::size_t>();
    if (index >= input.steps.size() || input.steps[index].step->role() != steps::StepRole::Recovery) continue;
    if (record.contains("observed")) found = record["observed"];
  }
  return found;
}

}  // namespace

json row_of_evidence(const json& evidence) {
  const auto recovery = last_recovery_observed(evidence);
  const auto& f = evidence.at("final");
  const auto field = [](const json& object, const char* name) {
    return object.is_object() ? object.value(name, json(nullptr)) : json(nullptr);
  };
  json row = {{"id", evidence.at("scenario_id")},
              {"policy", evidence.at("policy").at("name")},
              {"temporal_state", field(recovery, "temporal_state")},
              {"decision", field(recovery, "decision")},
              {"post_requests", field(f, "post_requests")},
              {"effect_count", field(f, "effect_count")},
              {"final_status", field(f, "status")},
              {"verdict", evidence.at("verdict")},
              {"error", evidence.at("error")},
              {"pass", evidence.at("pass")},
              {"core_digest", json_digest(scenario_core_of_evidence(evidence))}};
  if (evidence.contains("engine")) row["engine"] = evidence["engine"];
  return row;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  std::ostringstream out;
  out << std::put_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  return out.str();
}

json scenario_evidence(const scenario::Scenario& s, const runner::ScenarioResult& r, const RunEnvironment& env) {
  json checks = json::array();
  for (const auto& c : r.checks) checks.push_back(check_json(c));
  json out = {{"schema_version", kSchemaVersion},
              {"kind", "scenario_evidence"},
              {"environment", env.to_json()},
              {"warnings", env.warnings},
              {"scenario_id", s.id},
              {"source", s.source},
              {"input", s.document},
              {"policy", {{"name", r.policy}, {"parameters", s.policy->parameters()}}},
              {"operation_id", r.operation_id},
              {"idempotency_key", r.idempotency_key},
              {"timeline", runner::to_json(r.timeline)},
              {"final", r.final_json()},
              {"closing_exchange", r.final_measurement ? r.final_measurement->exchange : json(nullptr)},
              {"checks", checks},
              {"verdict", r.verdict},
              {"error", r.error ? json(*r.error) : json(nullptr)},
              {"pass", r.pass},
              {"duration_us", r.duration_us},
              {"core_digest", json_digest(scenario_core(s, r, engine_of(env)))}};
  if (const auto mark = engine_mark(engine_of(env)); !mark.is_null()) out["engine"] = mark;
  if (!r.effect_sink_calls.is_null()) out["effect_sink_calls"] = r.effect_sink_calls;
  return out;
}

json run_summary(const std::vector<const scenario::Scenario*>& scenarios,
                 const std::vector<runner::ScenarioResult>& results, const RunEnvironment& env) {
  json rows = json::array();
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    rows.push_back(summary_row(*scenarios[i], results[i], engine_of(env)));
  }
  bool all_pass = !results.empty();
  bool any_error = false;
  for (const auto& r : results) {
    all_pass = all_pass && r.pass;
    any_error = any_error || r.error.has_value();
  }
  const auto run_digest = run_core_digest(rows);
  return {{"schema_version", kSchemaVersion},
          {"kind", "run_summary"},
          {"environment", env.to_json()},
          {"warnings", env.warnings},
          {"outcome", any_error ? "error" : (all_pass ? "pass" : "fail")},
          {"scenarios", rows},
          {"core_digest", run_digest}};
}

}  // namespace skewbench::evidence
