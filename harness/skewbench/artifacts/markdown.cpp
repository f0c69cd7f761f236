#include "artifacts/markdown.hpp"

#include <sstream>

#include <skewbench/build_info.hpp>

#include "common/text.hpp"
#include "published/published.hpp"

namespace skewbench::artifacts {

using nlohmann::json;
using text::cell;
using text::markdown_escape;

namespace {

// One list item per failed check, and one per ERROR scenario with its error
// (its checks were never measured, so listing them would only repeat that).
// Every text is escaped: a multi-line error stays one list item.
std::string failures_markdown(const std::vector<runner::ScenarioResult>& results) {
  std::ostringstream md;
  for (const auto& r : results) {
    if (r.error) {
      md << "- " << markdown_escape(r.scenario_id) << ": ERROR: " << markdown_escape(*r.error) << "\n";
      continue;
    }
    for (const auto& c : r.checks) {
      if (c.pass) continue;
      md << "- " << markdown_escape(r.scenario_id) << ": " << markdown_escape(c.id) << " expected "
         << markdown_escape(c.expected.dump()) << ", observed "
         << markdown_escape(c.measured ? c.observed.dump() : std::string("not measured")) << "\n";
    }
  }
  const auto items = md.str();
  return items.empty() ? items : "\n## Failures\n\n" + items;
}

}  // namespace

std::string result_markdown(const std::vector<const scenario::Scenario*>& scenarios,
                            const std::vector<runner::ScenarioResult>& results, const json& summary,
                            const std::vector<published::PublishedFile>& published,
                            const evidence::RunEnvironment& env) {
  std::ostringstream md;
  md << "# skewbench run " << env.run_id << "\n\n";
  std::vector<const json*> reported;  // the published results whose sections ran
  for (const auto& file : published) {
    if (published::run_reports_on(*file.benchmark, scenarios)) reported.push_back(&file.result);
  }
  md << "Schema " << evidence::kSchemaVersion << "; outcome **" << summary["outcome"].get<std::string>() << "**.\n\n";
  if (!reported.empty()) {
    md << "| published benchmark | result file | checks | score |\n|---|---|---|---|\n";
    for (const auto& file : published) {
      if (!published::run_reports_on(*file.benchmark, scenarios)) continue;
      md << "| " << file.benchmark->id << " | `" << file.benchmark->result_file << "` | "
         << file.result["outcome"].get<std::string>() << " | " << published::score_line(file.result) << " |\n";
    }
    md << "\n";
  }
  md << "| scenario | policy | temporal state | decision | POSTs | effects | final status | verdict | pass |\n";
  md << "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : results) {
    const json row_final = r.final_measurement ? r.final_json() : json::object();
    md << "| " << r.scenario_id << " | " << r.policy << " | " << cell(r.temporal_state()) << " | " << cell(r.decision())
       << " | " << cell(row_final.value("post_requests", json(nullptr))) << " | "
       << cell(row_final.value("effect_count", json(nullptr))) << " | "
       << cell(row_final.value("status", json(nullptr))) << " | " << to_string(r.verdict) << " | "
       << (r.pass ? "yes" : "**no**") << " |\n";
  }
  for (const auto* result : reported) md << "\n" << published::published_checks_markdown(*result);
  md << failures_markdown(results);
  md << "\n## Environment\n\n";
  md << "- harness: " << build_info::kVersion << " (" << build_info::kGitCommit << ", " << build_info::kBuildType
     << ")\n";
  md << "- engine: " << env.engine << "\n";
  if (env.postgresql.is_object()) {
    md << "- PostgreSQL: " << cell(env.postgresql.value("server_version", json(nullptr)));
    if (env.postgresql.value("embedded", false)) {
      md << " (started from " << cell(env.postgresql.value("bin_dir", json(nullptr))) << ", source "
         << cell(env.postgresql.value("source", json(nullptr))) << ")";
    }
    md << "\n";
  } else {
    md << "- PostgreSQL: none (the in-process engine's outbox double)\n";
  }
  md << "- remote-effect: " << cell(env.remote_effect.value("version", json(nullptr))) << ", SQLite "
     << cell(env.remote_effect.value("sqlite_version", json(nullptr))) << ", sync "
     << cell(env.remote_effect.value("sync", json(nullptr))) << ", boot_id "
     << cell(env.remote_effect.value("boot_id", json(nullptr))) << "\n";
  md << "- core digest: `" << summary["core_digest"].get<std::string>() << "`\n";
  if (!env.warnings.empty()) {
    md << "\n## Warnings\n\n";
    for (const auto& w : env.warnings) md << "- **" << markdown_escape(w) << "**\n";
  }
  return md.str();
}

}  // namespace skewbench::artifacts
