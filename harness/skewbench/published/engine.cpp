// The engine that turns a published benchmark's table (sections, blocks,
// checks) into its result file. Nothing here knows a benchmark's numbers: the
// tables and their functions (benchmark_018.cpp, series.cpp) read them from
// the run.

#include "published/published.hpp"

#include <algorithm>
#include <sstream>

#include "common/digest.hpp"
#include "common/text.hpp"
#include "evidence/evidence.hpp"

namespace skewbench::published {
namespace {

using nlohmann::json;

std::string status_word(CheckStatus status) { return std::string(kCheckStatuses.name(status)); }
const std::string kPassed = status_word(CheckStatus::Passed);
const std::string kFailed = status_word(CheckStatus::Failed);
const std::string kNotMeasured = status_word(CheckStatus::NotMeasured);
const std::string kNotRun = status_word(CheckStatus::NotRun);
const std::string kError = status_word(CheckStatus::Error);

SectionRuns collect_sections(const PublishedBenchmark& benchmark,
                             const std::vector<const scenario::Scenario*>& scenarios,
                             const std::vector<runner::ScenarioResult>& results) {
  SectionRuns runs;
  for (const auto& section : benchmark.sections) runs[section.name] = {};
  for (std::size_t i = 0; i < scenarios.size() && i < results.size(); ++i) {
    const auto& report_as = scenarios[i]->report_as;
    const std::string_view prefix = benchmark.report_prefix;
    if (!report_as || !report_as->starts_with(prefix)) continue;
    const auto name = report_as->substr(prefix.size());
    if (runs.contains(name)) runs[name] = {scenarios[i], &results[i]};
  }
  return runs;
}

// Our own description of a section's run; the benchmark's published fields are
// laid over it, so where a name is shared the published meaning holds.
json section_json(const PublishedSection& section, const SectionRun& run) {
  if (!run.ran()) return {{"ran", false}};
  const auto& r = *run.result;
  json out = {{"ran", true},
              {"scenario_id", run.scenario->id},
              {"policy", r.policy},
              {"policy_parameters", run.scenario->policy->parameters()},
              {"t0", run.scenario->t0_s},
              {"ttl_seconds", run.scenario->ttl_s},
              {"verdict", r.verdict},
              {"error", r.error ? json(*r.error) : json(nullptr)},
              {"observations", run.observations_before_recovery()}};
  if (const auto* recovery = run.recovery()) {
    out["recovery"] = *recovery;
    out["temporal_state"] = (*recovery)["temporal_state"];
    out["decision"] = (*recovery)["decision"];
  }
  if (const auto& f = r.final_measurement) {
    out["post_requests"] = f->remote.post_requests;
    out["effect_count"] = f->remote.effect_count;
    out["ack_drops"] = f->remote.ack_drops;
    out["outbox_status"] = infra::to_string(f->outbox_status);
    out["final_status"] = remote_effect::kOperationStatuses.name(f->remote.status);
  }
  const auto published = section.fields(run);
  for (const auto& [name, value] : published.items()) out[name] = value;
  return out;
}

json check_json(const PublishedCheck& check, const SectionRuns& runs, int points) {
  json not_run = json::array();
  json errored = json::array();
  for (const char* name : check.sections) {
    const auto& run = runs.at(name);
    if (!run.ran()) {
      not_run.push_back(name);
    } else if (run.errored()) {
      errored.push_back(name);
    }
  }
  json out = {{"id", check.id}, {"sections", check.sections}, {"max_points", points}};
  if (!not_run.empty() || !errored.empty()) {
    // Not evaluated: neither a pass nor a failure.
    out["status"] = not_run.empty() ? kError : kNotRun;
    out["passed"] = nullptr;
    out["points"] = nullptr;
    out["evidence"] = {{"sections_not_run", not_run}, {"sections_in_error", errored}};
    return out;
  }
  auto outcome = check.evaluate(runs);
  out["status"] = status_word(outcome.status);
  out["evidence"] = std::move(outcome.evidence);
  if (outcome.status == CheckStatus::NotMeasured) {
    out["passed"] = nullptr;
    out["points"] = nullptr;
    return out;
  }
  const bool passed = outcome.status == CheckStatus::Passed;
  out["passed"] = passed;
  out["points"] = passed ? points : 0;
  return out;
}

// How much of the published score this run could decide.
json score_coverage(const json& checks) {
  json by_status = json::object();
  for (const auto status : kCheckStatuses.values()) by_status[status_word(status)] = json::array();
  int points_that_ran = 0;
  int points_not_measured = 0;
  int points_not_run = 0;
  int points_in_error = 0;
  for (const auto& c : checks) {
    const auto status = c["status"].get<std::string>();
    by_status[status].push_back(c["id"]);
    const int max_points = c["max_points"].get<int>();
    if (status == kNotRun) {
      points_not_run += max_points;
    } else if (status == kError) {
      points_in_error += max_points;
    } else if (status == kNotMeasured) {
      points_not_measured += max_points;
    } else {
      points_that_ran += max_points;
    }
  }
  return {{"complete", points_not_run == 0 && points_in_error == 0 && points_not_measured == 0},
          {"checks", by_status},
          {"points_that_ran", points_that_ran},
          {"points_not_measured", points_not_measured},
          {"points_not_run", points_not_run},
          {"points_in_error", points_in_error}};
}

// Unknown never reads as a pass: an ERROR, then a failure, then a check that
// did not run decide the outcome before a pass can.
std::string outcome_of(const json& coverage) {
  const auto& checks = coverage["checks"];
  if (!checks[kError].empty()) return "error";
  if (!checks[kFailed].empty()) return "fail";
  if (!checks[kNotRun].empty() || !checks[kNotMeasured].empty()) return "incomplete";
  return "pass";
}

// The database as the published result names it: `server_version` is the
// server's own major.minor (e.g. "17.6"), the full banner stays beside it.
json database_json(const json& postgresql) {
  json out = postgresql;
  const auto num = postgresql.value("server_version_num", 0);
  if (num > 0) {
    out["server_version_full"] = postgresql.value("server_version", json(nullptr));
    out["server_version"] = std::to_string(num / 10000) + "." + std::to_string(num % 100);
  }
  return out;
}

json result_core(const PublishedBenchmark& benchmark, const json& out) {
  json core = {{"checks", out["checks"]}, {"score", out["score"]}};
  for (const auto& block : benchmark.blocks) core[block.name] = out[block.name];
  for (const auto& section : benchmark.sections) {
    auto fields = out[section.name];
    fields.erase("recovery");  // its raw record repeats what the section already holds
    core[section.name] = fields;
  }
  return core;
}

std::string check_mark(const json& c) {
  const auto status = c["status"].get<std::string>();
  if (status == kPassed) return "yes";
  if (status == kFailed) return "no";
  if (status == kNotRun) return "not run";
  if (status == kNotMeasured) return "not measured";
  return "ERROR";
}

// Why a check was not evaluated, e.g. "not in this run: safe_clock_authority".
std::string not_evaluated_reason(const json& c) {
  const std::pair<const char*, const char*> kinds[] = {{"sections_not_run", "not in this run: "},
                                                       {"sections_in_error", "in ERROR: "}};
  std::string reason = c["status"] == kNotMeasured ? c["evidence"].value("reason", std::string()) : std::string();
  for (const auto& [key, label] : kinds) {
    const auto names = c["evidence"].value(key, json::array());
    if (names.empty()) continue;
    reason +=
        (reason.empty() ? "" : "; ") + std::string(label) + text::join(names.get<std::vector<std::string>>(), ", ");
  }
  return reason;
}

std::string points_cell(const json& c) {
  const auto max_points = std::to_string(c["max_points"].get<int>());
  return (c["points"].is_null() ? std::string("-") : std::to_string(c["points"].get<int>())) + "/" + max_points;
}

std::string incomplete_note(const json& published) {
  const auto& checks = published["score_coverage"]["checks"];
  const auto total = published["checks"].size();
  std::ostringstream out;
  out << "incomplete: " << (checks[kNotRun].size() + checks[kError].size() + checks[kNotMeasured].size()) << " of "
      << total << " published checks were not evaluated";
  return out.str();
}

}  // namespace

std::optional<CheckOutcome> unreported(const char* field, const char* section, std::initializer_list<json> values) {
  for (const auto& value : values) {
    if (value.is_null()) {
      return CheckOutcome::not_measured(
          {{"section", section}, {"reason", std::string("the remote does not report ") + field}});
    }
  }
  return std::nullopt;
}

json published_result(const PublishedBenchmark& benchmark, const std::vector<const scenario::Scenario*>& scenarios,
                      const std::vector<runner::ScenarioResult>& results, const RunEnvironment& env) {
  const auto runs = collect_sections(benchmark, scenarios, results);
  json checks = json::array();
  int score = 0;
  for (const auto& check : benchmark.checks) {
    checks.push_back(check_json(check, runs, benchmark.points_per_check));
    if (checks.back()["points"].is_number()) score += checks.back()["points"].get<int>();
  }
  json out = {{"schema_version", evidence::kSchemaVersion},
              {"kind", "published_result"},
              {"benchmark", benchmark.id},
              {"harness", evidence::harness_json()},
              {"run_id", env.run_id},
              {"database", database_json(env.postgresql)},
              {"http_service", env.remote_effect},
              {"checks", checks},
              {"score", score},
              {"max_score", benchmark.points_per_check * static_cast<int>(benchmark.checks.size())},
              {"warnings", env.warnings}};
  for (const auto& block : benchmark.blocks) out[block.name] = block.build(runs);
  for (const auto& section : benchmark.sections) out[section.name] = section_json(section, runs.at(section.name));
  out["score_coverage"] = score_coverage(checks);
  out["outcome"] = outcome_of(out["score_coverage"]);
  out["core_digest"] = json_digest(result_core(benchmark, out));
  return out;
}

std::vector<std::string> report_sections() {
  std::vector<std::string> out;
  for (const auto* benchmark : series_benchmarks()) {
    for (const auto& section : benchmark->sections) out.push_back(std::string(benchmark->report_prefix) + section.name);
  }
  return out;
}

std::optional<std::string> report_as_problem(const scenario::Scenario& scenario) {
  if (!scenario.report_as) return std::nullopt;
  const auto sections = report_sections();
  if (std::find(sections.begin(), sections.end(), *scenario.report_as) != sections.end()) return std::nullopt;
  return "\"" + *scenario.report_as + "\" is not one of: " + text::join(sections, ", ");
}

const PublishedBenchmark* benchmark_reported_by(const scenario::Scenario& scenario) {
  if (!scenario.report_as) return nullptr;
  for (const auto* benchmark : series_benchmarks()) {
    for (const auto& section : benchmark->sections) {
      if (*scenario.report_as == std::string(benchmark->report_prefix) + section.name) return benchmark;
    }
  }
  return nullptr;
}

bool run_reports_on(const PublishedBenchmark& benchmark, const std::vector<const scenario::Scenario*>& scenarios) {
  for (const auto* s : scenarios) {
    for (const auto& section : benchmark.sections) {
      if (s->report_as && *s->report_as == std::string(benchmark.report_prefix) + section.name) return true;
    }
  }
  return false;
}

const std::vector<const PublishedBenchmark*>& series_benchmarks() {
  static const std::vector<const PublishedBenchmark*> all = {&benchmark_015(), &benchmark_016(), &benchmark_017(),
                                                             &benchmark_018(), &benchmark_019()};
  return all;
}

std::vector<PublishedFile> published_files(const std::vector<const scenario::Scenario*>& scenarios,
                                           const std::vector<runner::ScenarioResult>& results,
                                           const RunEnvironment& env) {
  std::vector<PublishedFile> files;
  // A published result is evidence of the real stack: the in-process engine
  // writes none (docs/engines.md).
  if (env.engine == to_string(infra::Engine::in_process)) return files;
  for (const auto* benchmark : series_benchmarks()) {
    if (benchmark != &benchmark_018() && !run_reports_on(*benchmark, scenarios)) continue;
    files.push_back({benchmark, published_result(*benchmark, scenarios, results, env)});
  }
  return files;
}

std::string score_line(const json& published) {
  const auto& coverage = published["score_coverage"];
  const auto score = std::to_string(published["score"].get<int>());
  if (coverage["complete"].get<bool>()) return score + "/" + std::to_string(published["max_score"].get<int>());
  std::string line = score + " of " + std::to_string(coverage["points_that_ran"].get<int>()) + " points that ran";
  if (const int n = coverage["points_not_measured"].get<int>(); n > 0)
    line += "; " + std::to_string(n) + " not measured";
  if (const int n = coverage["points_not_run"].get<int>(); n > 0) line += "; " + std::to_string(n) + " not run";
  if (const int n = coverage["points_in_error"].get<int>(); n > 0) line += "; " + std::to_string(n) + " in ERROR";
  return line;
}

json published_summary(const json& published) {
  if (published.is_null()) return nullptr;
  return {{"benchmark", published["benchmark"]}, {"outcome", published["outcome"]},
          {"score", published["score"]},         {"max_score", published["max_score"]},
          {"score_line", score_line(published)}, {"score_coverage", published["score_coverage"]}};
}

std::string published_checks_markdown(const json& published) {
  std::ostringstream md;
  md << "## Published checks (" << published["benchmark"].get<std::string>() << ")\n\n";
  md << "| check | passed | points |\n|---|---|---|\n";
  for (const auto& c : published["checks"]) {
    const auto mark = check_mark(c);
    const auto reason = not_evaluated_reason(c);
    md << "| " << c["id"].get<std::string>() << " | " << (mark == "no" ? "**no**" : mark)
       << (reason.empty() ? "" : " (" + reason + ")") << " | " << points_cell(c) << " |\n";
  }
  md << "\nScore: **" << score_line(published) << "**";
  if (!published["score_coverage"]["complete"].get<bool>()) md << " (" << incomplete_note(published) << ")";
  md << "\n";
  return md.str();
}

std::string published_checks_text(const json& published) {
  std::ostringstream out;
  out << "published checks (" << published["benchmark"].get<std::string>() << "): score " << score_line(published);
  if (!published["score_coverage"]["complete"].get<bool>()) out << " (" << incomplete_note(published) << ")";
  out << "\n";
  for (const auto& c : published["checks"]) {
    const auto reason = not_evaluated_reason(c);
    out << "  " << check_mark(c) << std::string(9 - std::min<std::size_t>(8, check_mark(c).size()), ' ')
        << c["id"].get<std::string>() << (reason.empty() ? "" : " (" + reason + ")") << "\n";
  }
  return out.str();
}

}  // namespace skewbench::published
