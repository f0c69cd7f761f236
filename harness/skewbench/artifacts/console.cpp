#include "artifacts/console.hpp"

#include <sstream>

#include "common/text.hpp"
#include "evidence/evidence.hpp"
#include "published/published.hpp"
#include "scenario/verdict.hpp"

namespace skewbench::artifacts {

using nlohmann::json;
using scenario::Verdict;
using text::cell;
using text::pad;

namespace {

constexpr const char* kReset = "\x1b[0m";

const char* verdict_colour(Verdict verdict) {
  switch (verdict) {
    case Verdict::Safe:
      return "\x1b[32m";  // green
    case Verdict::Conflict:
      return "\x1b[1;31m";  // bold red
    case Verdict::Held:
      return "\x1b[33m";  // yellow
    case Verdict::Error:
      return "\x1b[1;35m";  // bold magenta
  }
  return "";
}

// Pads first, so escape sequences never shift the columns.
std::string painted(const std::string& s, std::size_t width, const char* colour, bool enabled) {
  if (!enabled || *colour == '\0') return pad(s, width);
  return colour + s + kReset + pad("", width > s.size() ? width - s.size() : 0);
}

json final_of(const runner::ScenarioResult& r) { return r.final_measurement ? r.final_json() : json::object(); }

// The failed check's observed value as a reader needs it.
std::string observed_text(const runner::CheckResult& c) {
  return c.measured ? c.observed.dump() : std::string("not measured");
}

}  // namespace

bool colour_wanted(bool is_terminal, const char* no_color_env) {
  return is_terminal && (no_color_env == nullptr || *no_color_env == '\0');
}

std::string results_table(const std::vector<runner::ScenarioResult>& results, bool colour) {
  const std::vector<std::pair<std::string, std::size_t>> columns = {
      {"scenario", 34}, {"policy", 19}, {"temporal", 13}, {"decision", 16},   {"POSTs", 6},
      {"effects", 8},   {"status", 10}, {"verdict", 9},   {"as expected", 11}};
  std::ostringstream out;
  for (const auto& [name, width] : columns) out << pad(name, width) << " ";
  out << "\n";
  for (const auto& r : results) {
    const json f = final_of(r);
    const std::vector<std::string> values = {r.scenario_id,
                                             r.policy,
                                             cell(r.temporal_state()),
                                             cell(r.decision()),
                                             cell(f.value("post_requests", json(nullptr))),
                                             cell(f.value("effect_count", json(nullptr))),
                                             cell(f.value("status", json(nullptr)))};
    for (std::size_t i = 0; i < values.size(); ++i) out << pad(values[i], columns[i].second) << " ";
    out << painted(std::string(to_string(r.verdict)), columns[7].second, verdict_colour(r.verdict), colour) << " "
        << painted(r.pass ? "yes" : "NO", 0, r.pass ? "" : "\x1b[1;31m", colour) << "\n";
  }
  return out.str();
}

std::string failures_summary(const std::vector<runner::ScenarioResult>& results, bool colour) {
  std::ostringstream out;
  for (const auto& r : results) {
    if (r.error) {
      // An ERROR scenario's checks were never measured: its error says it all.
      out << painted(std::string(to_string(Verdict::Error)), 7, verdict_colour(Verdict::Error), colour) << r.scenario_id
          << ": " << *r.error << "\n";
      continue;
    }
    for (const auto& c : r.checks) {
      if (c.pass) continue;
      out << painted("FAILED", 7, "\x1b[1;31m", colour) << r.scenario_id << ": " << c.id << ": expected "
          << c.expected.dump() << ", observed " << observed_text(c) << "\n";
    }
  }
  const auto lines = out.str();
  return lines.empty() ? lines : "not as expected (scenario: check: expected, observed):\n" + lines;
}

std::string outcome_line(const std::vector<runner::ScenarioResult>& results) {
  std::size_t as_expected = 0;
  std::size_t errors = 0;
  for (const auto& r : results) {
    as_expected += r.pass ? 1 : 0;
    errors += r.error ? 1 : 0;
  }
  std::string line = std::to_string(as_expected) + " of " + std::to_string(results.size()) + " scenario" +
                     (results.size() == 1 ? "" : "s") + " as expected";
  if (errors > 0) line += ", " + std::to_string(errors) + " ERROR";
  return line;
}

json run_json(const std::vector<runner::ScenarioResult>& results, const RunReport& report) {
  json scenarios = json::array();
  json failures = json::array();
  for (const auto& r : results) {
    auto row = evidence::outcome_row(r);
    row["as_expected"] = r.pass;
    scenarios.push_back(std::move(row));
    for (const auto& c : r.checks) {
      if (c.pass || r.error) continue;
      failures.push_back({{"scenario", r.scenario_id},
                          {"check", c.id},
                          {"expected", c.expected},
                          {"observed", c.observed},
                          {"measured", c.measured}});
    }
  }
  json series = json::array();
  for (const auto& file : report.published_series) series.push_back(published::published_summary(file));
  return {{"command", "run"},
          {"engine", report.engine},
          {"exit_code", report.exit_code},
          {"evidence_dir", report.evidence_dir.string()},
          {"core_digest", report.core_digest},
          {"scenarios", scenarios},
          {"failures", failures},
          {"published", published::published_summary(report.published)},
          {"published_series", series},
          {"warnings", report.warnings}};
}

}  // namespace skewbench::artifacts
