#include "artifacts/junit.hpp"

#include <cstdio>
#include <map>

#include <tinyxml2.h>
#include <skewbench/build_info.hpp>

#include "common/files.hpp"
#include "published/published.hpp"

namespace skewbench::artifacts {
namespace {

using nlohmann::json;

std::string seconds_text(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f", seconds);
  return buffer;
}

// Text an XML 1.0 document may hold: control characters other than tab, CR
// and LF become '?', and bytes that are not UTF-8 become U+FFFD, so that what a
// service or a file said can never make the report unreadable.
std::string xml_safe(const std::string& text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      out += (byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r') || byte == 0x7f ? '?' : text[i];
      ++i;
      continue;
    }
    const std::size_t length = byte >= 0xf0 && byte <= 0xf4  ? 4
                               : byte >= 0xe0                ? 3
                               : byte >= 0xc2 && byte < 0xe0 ? 2
                                                             : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) valid = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    if (valid && length == 3) {
      const auto second = static_cast<unsigned char>(text[i + 1]);
      valid = !(byte == 0xe0 && second < 0xa0) && !(byte == 0xed && second >= 0xa0);  // overlong, surrogates
    }
    if (valid && length == 4) {
      const auto second = static_cast<unsigned char>(text[i + 1]);
      valid = !(byte == 0xf0 && second < 0x90) && !(byte == 0xf4 && second >= 0x90);  // overlong, past U+10FFFF
    }
    if (valid) {
      out.append(text, i, length);
      i += length;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

std::string value_text(const json& value) { return value.is_null() ? "null (not observed)" : value.dump(); }

void add_case(tinyxml2::XMLDocument& doc, tinyxml2::XMLElement& suite, const JunitCase& c) {
  auto* element = suite.InsertNewChildElement("testcase");
  element->SetAttribute("classname", xml_safe(c.classname).c_str());
  element->SetAttribute("name", xml_safe(c.name).c_str());
  element->SetAttribute("time", seconds_text(c.time_s).c_str());
  if (c.file) element->SetAttribute("file", xml_safe(*c.file).c_str());
  const char* tag = nullptr;
  switch (c.result) {
    case CaseResult::passed:
      return;
    case CaseResult::failure:
      tag = "failure";
      break;
    case CaseResult::error:
      tag = "error";
      break;
    case CaseResult::skipped:
      tag = "skipped";
      break;
  }
  auto* outcome = element->InsertNewChildElement(tag);
  outcome->SetAttribute("message", xml_safe(c.message).c_str());
  if (c.result != CaseResult::skipped) outcome->SetAttribute("type", tag);
  if (!c.text.empty()) outcome->InsertEndChild(doc.NewText(xml_safe(c.text).c_str()));
}

struct Counts {
  std::size_t failures = 0;
  std::size_t errors = 0;
  std::size_t skipped = 0;
};

Counts count(const JunitSuite& suite) {
  Counts out;
  for (const auto& c : suite.cases) {
    if (c.result == CaseResult::failure) ++out.failures;
    if (c.result == CaseResult::error) ++out.errors;
    if (c.result == CaseResult::skipped) ++out.skipped;
  }
  return out;
}

void set_counts(tinyxml2::XMLElement& element, std::size_t tests, const Counts& counts) {
  element.SetAttribute("tests", static_cast<std::int64_t>(tests));
  element.SetAttribute("failures", static_cast<std::int64_t>(counts.failures));
  element.SetAttribute("errors", static_cast<std::int64_t>(counts.errors));
  element.SetAttribute("skipped", static_cast<std::int64_t>(counts.skipped));
}

// The expectations of one scenario, or one error case when it could not run.
void add_scenario_cases(const scenario::Scenario& s, const runner::ScenarioResult& r, JunitSuite& suite) {
  const double time_s = static_cast<double>(r.duration_us) / 1e6;
  for (const auto& check : r.checks) {
    JunitCase c{.classname = s.id, .name = check.id, .file = s.source, .time_s = 0};
    if (r.error) {
      c.result = CaseResult::error;
      c.message = "ERROR: " + *r.error;
    } else if (!check.pass) {
      c.result = CaseResult::failure;
      c.message = "expected " + check.expected.dump() + ", observed " + value_text(check.observed);
      c.text = "scenario " + s.id + " (" + s.source + "), verdict " + std::string(scenario::to_string(r.verdict));
    }
    suite.cases.push_back(std::move(c));
  }
  if (r.checks.empty()) {
    JunitCase c{.classname = s.id, .name = "runs", .file = s.source, .time_s = time_s};
    if (r.error) {
      c.result = CaseResult::error;
      c.message = "ERROR: " + *r.error;
    }
    suite.cases.push_back(std::move(c));
  }
  suite.time_s += time_s;
}

// The checks of one published result file.
void add_published_cases(const json& result, JunitSuite& suite) {
  const std::string benchmark = result.value("benchmark", "published");
  for (const auto& check : result.value("checks", json::array())) {
    JunitCase c{.classname = benchmark, .name = check.value("id", "?"), .time_s = 0};
    const auto status = published::kCheckStatuses.parse(check.value("status", ""));
    const auto points_of = [&](const char* name) {
      const auto it = check.find(name);
      return it != check.end() && it->is_number_integer() ? std::to_string(it->get<std::int64_t>()) : std::string("-");
    };
    const std::string points = points_of("points") + "/" + points_of("max_points");
    if (status == published::CheckStatus::Failed) {
      c.result = CaseResult::failure;
      c.message = "published check failed (" + points + " points)";
      c.text = check.value("evidence", json::object()).dump(2);
    } else if (status == published::CheckStatus::Error) {
      c.result = CaseResult::error;
      c.message = "a section it reads ended in ERROR";
    } else if (status == published::CheckStatus::NotRun || status == published::CheckStatus::NotMeasured) {
      c.result = CaseResult::skipped;
      c.message =
          std::string(published::kCheckStatuses.name(*status)) + ": " + check.value("evidence", json::object()).dump();
    } else if (status != published::CheckStatus::Passed) {
      c.result = CaseResult::error;
      c.message = "unknown check status " + check.value("status", json()).dump();
    }
    suite.cases.push_back(std::move(c));
  }
}

std::vector<std::pair<std::string, std::string>> run_properties(const RunReport& report) {
  return {{"core_digest", report.core_digest},
          {"harness_version", build_info::kVersion},
          {"harness_commit", build_info::kGitCommit},
          {"postgresql_version", report.postgresql_version},
          {"evidence_dir", report.evidence_dir.string()}};
}

}  // namespace

std::string junit_xml(const std::vector<JunitSuite>& suites) {
  tinyxml2::XMLDocument doc;
  doc.InsertEndChild(doc.NewDeclaration());
  auto* root = doc.NewElement("testsuites");
  doc.InsertEndChild(root);
  root->SetAttribute("name", "skewbench");
  std::size_t tests = 0;
  Counts total;
  double time_s = 0;
  for (const auto& suite : suites) {
    auto* element = root->InsertNewChildElement("testsuite");
    element->SetAttribute("name", xml_safe(suite.name).c_str());
    const auto counts = count(suite);
    set_counts(*element, suite.cases.size(), counts);
    element->SetAttribute("time", seconds_text(suite.time_s).c_str());
    if (!suite.properties.empty()) {
      auto* properties = element->InsertNewChildElement("properties");
      for (const auto& [name, value] : suite.properties) {
        auto* property = properties->InsertNewChildElement("property");
        property->SetAttribute("name", xml_safe(name).c_str());
        property->SetAttribute("value", xml_safe(value).c_str());
      }
    }
    for (const auto& c : suite.cases) add_case(doc, *element, c);
    tests += suite.cases.size();
    total.failures += counts.failures;
    total.errors += counts.errors;
    total.skipped += counts.skipped;
    time_s += suite.time_s;
  }
  set_counts(*root, tests, total);
  root->SetAttribute("time", seconds_text(time_s).c_str());
  tinyxml2::XMLPrinter printer;
  doc.Print(&printer);
  return printer.CStr();
}

void write_junit(const std::filesystem::path& file, const std::vector<JunitSuite>& suites) {
  write_file_atomically(file, junit_xml(suites));
}

std::vector<JunitSuite> run_suites(const std::vector<scenario::Scenario>& scenarios,
                                   const std::vector<runner::ScenarioResult>& results, const RunReport& report) {
  std::vector<JunitSuite> suites;
  std::map<std::string, std::size_t> by_name;
  auto suite_for = [&](const std::string& name) -> JunitSuite& {
    if (const auto it = by_name.find(name); it != by_name.end()) return suites[it->second];
    by_name.emplace(name, suites.size());
    suites.push_back({.name = name, .cases = {}, .properties = run_properties(report), .time_s = 0});
    return suites.back();
  };
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    const auto* benchmark = published::benchmark_reported_by(scenarios[i]);
    auto& suite = suite_for(benchmark ? benchmark->id : "scenarios");
    if (i < results.size()) {
      add_scenario_cases(scenarios[i], results[i], suite);
    } else {
      suite.cases.push_back({.classname = scenarios[i].id,
                             .name = "runs",
                             .result = CaseResult::skipped,
                             .message = "not run: the run stopped before it",
                             .file = scenarios[i].source});
    }
  }
  for (const auto& result : report.published_series)
    add_published_cases(result, suite_for(result.value("benchmark", "")));
  return suites;
}

std::vector<JunitSuite> input_suites(const std::string& command, const std::vector<InputProblem>& problems) {
  JunitSuite suite{.name = "skewbench " + command + ": input", .cases = {}, .properties = {}, .time_s = 0};
  for (const auto& p : problems) {
    suite.cases.push_back({.classname = p.file.empty() ? "skewbench " + command : p.file,
                           .name = p.json_path.empty() ? "usable" : p.json_path,
                           .result = CaseResult::failure,
                           .message = p.message,
                           .text = p.message,
                           .file = p.file.empty() ? std::nullopt : std::optional<std::string>(p.file),
                           .time_s = 0});
  }
  return {suite};
}

}  // namespace skewbench::artifacts
