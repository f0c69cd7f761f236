#pragma once

// JUnit XML for CI systems (GitLab, Jenkins, Azure Pipelines, CircleCI,
// Buildkite and the GitHub test-report actions read it): one <testsuites>
// document, a <testsuite> per benchmark, grid or check, a <testcase> per
// expectation or check, written with tinyxml2 (docs/ci.md, "JUnit XML").
// tests/data/junit/junit.xsd is the schema a test holds the output to.

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "artifacts/console.hpp"
#include "runner/runner.hpp"
#include "scenario/scenario.hpp"

namespace skewbench::artifacts {

// What became of one test case. A failure is a verdict or a check that did
// not hold; an error is a case that could not be judged (ERROR); skipped is
// "not run" or "not measured".
enum class CaseResult { passed, failure, error, skipped };

struct JunitCase {
  std::string classname;  // the scenario, benchmark or grid it belongs to
  std::string name;       // the expectation or check
  CaseResult result = CaseResult::passed;
  std::string message = {};              // one line: what was expected and what was measured
  std::string text = {};                 // the detail, when there is more
  std::optional<std::string> file = {};  // the input file it comes from
  double time_s = 0;
};

struct JunitSuite {
  std::string name;
  std::vector<JunitCase> cases;
  std::vector<std::pair<std::string, std::string>> properties;  // e.g. core_digest
  double time_s = 0;
};

// The document, as text.
std::string junit_xml(const std::vector<JunitSuite>& suites);

// Writes the document to `file` atomically (a reader never sees half of it).
void write_junit(const std::filesystem::path& file, const std::vector<JunitSuite>& suites);

// The suites of a run: one per published benchmark the run reports on (the
// expectations of its scenarios, then its published checks), and
// "scenarios" for the scenarios that report on none. Properties: the core
// digest, the harness version and commit, the PostgreSQL server version.
std::vector<JunitSuite> run_suites(const std::vector<scenario::Scenario>& scenarios,
                                   const std::vector<runner::ScenarioResult>& results, const RunReport& report);

// An input that could not be used: one failed case naming the file (and the
// JSON path where it is known).
struct InputProblem {
  std::string file;
  std::string json_path;  // empty when the whole file (or a flag) is to blame
  std::string message;
};
std::vector<JunitSuite> input_suites(const std::string& command, const std::vector<InputProblem>& problems);

}  // namespace skewbench::artifacts
