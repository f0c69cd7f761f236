#pragma once

// The evidence layer: what one run's records hold. Every artifact names its schema version, the exact inputs,
// the versions of everything it ran against, its warnings, and a SHA-256 digest
// over its deterministic core: inputs, decisions, counts and verdicts, but not
// timings, hosts, run ids or boot ids. The same inputs give the same core
// digest on every run.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/host.hpp"
#include "infra/database_description.hpp"
#include "infra/in_process.hpp"
#include "runner/runner.hpp"
#include "runner/session.hpp"
#include "scenario/scenario.hpp"

namespace skewbench::evidence {

// The version of every artifact's format. 2: every step observes what it did
// whatever the scenario declares (the key and attempt of each POST, the
// remote's ack_drops at each observation, its dedupe mode and durable records
// in the closing measurement). compare refuses to hold two versions together.
inline constexpr const char* kSchemaVersion = "skewbench-evidence/2";
// The PostgreSQL major the published #018 run used.
inline constexpr int kReferencePostgresMajor = 17;

// Where and with what a run happened. Nothing here enters a core digest.
struct RunEnvironment {
  std::string run_id;
  // What ran the scenarios: "real" (PostgreSQL and remote-effect processes)
  // or "in-process" (docs/engines.md).
  std::string engine = std::string(to_string(infra::Engine::real));
  // server_version, server_version_num, url, embedded, and for a started
  // cluster the binaries it ran on: bin_dir, source, binaries_version.
  nlohmann::json postgresql = nlohmann::json::object();
  nlohmann::json remote_effect = nlohmann::json::object();  // url, boot_id, version, sqlite_version, sync, embedded
  nlohmann::json timeouts = nlohmann::json::object();       // the --http-timeout and --db-timeout in force
  // The durability profile of the services skewbench started ("durable" or
  // "throwaway"); the settings each service reports sit in its own object.
  std::string durability;
  // Whose clock the service read and how answers were lost (mode, ack_loss,
  // libfaketime, fault_proxy_url); null when not recorded.
  nlohmann::json clock = nullptr;
  std::string started_at_utc;
  std::string finished_at_utc;
  std::vector<std::string> warnings;
  std::string host = host_name();  // read once, when the run's record is made

  // The record as every artifact of the run writes it (no I/O: the same
  // object gives the same JSON each time it is written).
  nlohmann::json to_json() const;
};

// The harness's own identity: version, git commit, build type.
nlohmann::json harness_json();

// What a run talks to, as recorded in every artifact: PostgreSQL's version and
// (redacted) URL, the binaries of a started cluster (null: an external
// database), and what remote-effect's /health says of itself. Also sets the
// standard warnings and the start time.
RunEnvironment describe_environment(const std::string& run_id, const runner::ServicesDescription& services);

// The same for the in-process engine: no PostgreSQL (null), and the remote as
// the in-process remote's /health describes itself.
RunEnvironment describe_in_process_environment(const std::string& run_id, const nlohmann::json& remote_health);

// The engine a run's summary.json or a sweep's sweep.json records ("engine",
// then environment.engine); a file from before engines were recorded is of
// the real stack. Throws std::runtime_error for an engine this build does
// not know.
infra::Engine recorded_engine(const nlohmann::json& summary);

// Warnings every artifact must show: a Debug build, a PostgreSQL major other
// than the reference one.
std::vector<std::string> standard_warnings(int postgres_major);

// The deterministic core of one scenario's result, and its digest. On the
// in-process engine the core holds "engine": "in-process", so that its digest
// is never the real stack's.
nlohmann::json scenario_core(const scenario::Scenario& scenario, const runner::ScenarioResult& result,
                             infra::Engine engine = infra::Engine::real);

// "in-process" for a record of the in-process engine; null (no field) for the
// real stack's, as every reference file was written.
nlohmann::json engine_mark(infra::Engine engine);

// The engine a run's environment names.
infra::Engine engine_of(const RunEnvironment& env);

// The run's core digest from summary.json's rows: SHA-256 over the rows in
// order, each without its error text (which names ports and ids that differ
// between runs). It covers every field compare reads (verdict, decision,
// temporal state, counts, status, policy), so compare, which recomputes it,
// refuses a row edited by hand.
std::string run_core_digest(const nlohmann::json& summary_rows);

// The same core, rebuilt from a scenarios/<id>.json file as written (for
// verify). Throws nlohmann::json::exception when a field is missing.
nlohmann::json scenario_core_of_evidence(const nlohmann::json& evidence);

// The summary.json row a scenarios/<id>.json file implies, from that file
// alone: its id, policy, the last recovery's temporal state and decision (the
// recovery found by role in its own input), the closing counts and status,
// verdict, error, pass and its recomputed core digest. verify holds each row
// of summary.json against it. Throws (json or scenario errors) when the file
// lacks what it needs.
nlohmann::json row_of_evidence(const nlohmann::json& evidence);

// A scenario's outcome in a line: id, policy, the recovery's temporal state and
// decision, the closing counts and status, the verdict and any error. The rows
// of summary.json and of `run --format json` both start from it.
nlohmann::json outcome_row(const runner::ScenarioResult& result);

// One row of summary.json ("engine" on a row of the in-process engine).
nlohmann::json summary_row(const scenario::Scenario& scenario, const runner::ScenarioResult& result,
                           infra::Engine engine = infra::Engine::real);

// A scenario's evidence file (scenarios/<id>.json) as a run writes it.
nlohmann::json scenario_evidence(const scenario::Scenario& scenario, const runner::ScenarioResult& result,
                                 const RunEnvironment& env);

// summary.json: every scenario's row, the run's outcome and core digest.
nlohmann::json run_summary(const std::vector<const scenario::Scenario*>& scenarios,
                           const std::vector<runner::ScenarioResult>& results, const RunEnvironment& env);

// UTC time as 2026-11-30T01:58:30Z (wall clock: for the record only).
std::string utc_now_iso8601();

}  // namespace skewbench::evidence
