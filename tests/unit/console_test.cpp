// What a reader sees of a run: the console table and its failures summary,
// colour rules, the JSON summary, and RESULT.md after an infrastructure error.

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <sstream>

#include "artifacts/console.hpp"
#include "artifacts/markdown.hpp"
#include "common/text.hpp"
#include "evidence/evidence.hpp"
#include "runner/runner.hpp"
#include "scenario/scenario.hpp"
#include "support/fakes.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;

namespace {

scenario::Scenario shipped(const std::string& name) {
  return scenario::load_scenario_file(std::string(SKEWBENCH_SOURCE_DIR) + "/scenarios/" + name);
}

runner::ScenarioResult run_with_fakes(const scenario::Scenario& s) {
  testing::FakeRemote remote;
  testing::FakeOutbox outbox;
  runner::ScenarioRunner r(remote, outbox, {.run_id = "rtest"});
  return r.run(s);
}

// The unsafe #018 scenario with a wrong expectation: it fails one check.
runner::ScenarioResult failing_result() {
  auto doc = shipped("018-unsafe-node-local.json").document;
  doc["expect"]["effect_count"] = 1;
  return run_with_fakes(scenario::parse_scenario(doc, "wrong.json"));
}

// What run records for a scenario it could not run: ERROR, nothing measured.
runner::ScenarioResult errored(const scenario::Scenario& s, const std::string& error) {
  runner::ScenarioResult r;
  r.scenario_id = s.id;
  r.policy = std::string(s.policy->name());
  r.error = error;
  r.final_measurement = std::nullopt;
  for (const auto& e : s.expectations) r.checks.push_back({e.id, e.expected, nullptr, false, false});
  return r;
}

std::size_t count_lines(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("the results table says its last column means as expected") {
  const auto table = artifacts::results_table({failing_result()});
  CHECK_THAT(table, ContainsSubstring("as expected"));
  CHECK_THAT(table, ContainsSubstring("NO"));
}

TEST_CASE("the failures summary names the scenario, the check, the expected and the observed value") {
  const auto r = failing_result();
  const auto summary = artifacts::failures_summary({r, run_with_fakes(shipped("018-uncertainty.json"))});
  CHECK_THAT(summary, ContainsSubstring("FAILED " + r.scenario_id + ": final.effect_count: expected 1, observed 2"));
  CHECK(count_lines(summary, "FAILED") == 1);
  CHECK(artifacts::failures_summary({run_with_fakes(shipped("018-uncertainty.json"))}).empty());
}

TEST_CASE("an ERROR scenario is one line with its error, not one line per unmeasured check") {
  const auto s = shipped("018-uncertainty.json");
  const auto summary = artifacts::failures_summary({errored(s, "connection refused")});
  CHECK_THAT(summary, ContainsSubstring("ERROR  " + s.id + ": connection refused"));
  CHECK_THAT(summary, !ContainsSubstring("not measured"));
}

TEST_CASE("colour only on a terminal and only without NO_COLOR") {
  struct Case {
    bool terminal;
    const char* no_color;
    bool colour;
  };
  const auto c = GENERATE(values<Case>(
      {{true, nullptr, true}, {true, "", true}, {true, "1", false}, {false, nullptr, false}, {false, "1", false}}));
  CHECK(artifacts::colour_wanted(c.terminal, c.no_color) == c.colour);
}

TEST_CASE("without colour the console holds no escape sequence, and with colour it does") {
  const std::vector<runner::ScenarioResult> results = {failing_result()};
  CHECK(artifacts::results_table(results, false).find('\x1b') == std::string::npos);
  CHECK(artifacts::failures_summary(results, false).find('\x1b') == std::string::npos);
  const auto coloured = artifacts::results_table(results, true);
  CHECK(coloured.find('\x1b') != std::string::npos);
}

TEST_CASE("run's JSON summary lists every scenario and every failed check") {
  const auto r = failing_result();
  const auto j = artifacts::run_json({r}, {.evidence_dir = "out",
                                           .core_digest = "d",
                                           .warnings = {},
                                           .exit_code = 1,
                                           .published = nullptr,
                                           .published_series = {}});
  CHECK(j["exit_code"] == 1);
  CHECK(j["scenarios"][0]["as_expected"] == false);
  REQUIRE(j["failures"].size() == 1);
  CHECK(j["failures"][0]["check"] == "final.effect_count");
  CHECK(j["failures"][0]["observed"] == 2);
}

TEST_CASE("RESULT.md after an infrastructure error has one line per ERROR scenario, its error escaped") {
  const std::vector<std::string> names = {"018-unsafe-node-local.json", "018-declared-authority.json",
                                          "018-uncertainty.json"};
  std::vector<scenario::Scenario> scenarios;
  for (const auto& n : names) scenarios.push_back(shipped(n));
  std::vector<const scenario::Scenario*> pointers;
  std::vector<runner::ScenarioResult> results;
  const std::string libpq_error =
      "connection to server at \"127.0.0.1\", port 1 failed: Connection refused\n"
      "\tIs the server running on that host and accepting TCP/IP connections?\n";
  for (const auto& s : scenarios) {
    pointers.push_back(&s);
    results.push_back(errored(s, libpq_error));
  }
  evidence::RunEnvironment env;
  env.run_id = "r1";
  const json summary = {{"outcome", "error"}, {"core_digest", "d"}};
  const auto md =
      artifacts::result_markdown(pointers, results, summary, published::published_files(pointers, results, env), env);
  CHECK_THAT(md, !ContainsSubstring("not measured"));
  CHECK(count_lines(md, ": ERROR: ") == 3);
  CHECK_THAT(md, ContainsSubstring("Connection refused / Is the server running"));
  // Every line of the failures section is a list item: no error text escapes it.
  const auto from = md.find("## Failures\n\n") + 13;
  std::istringstream section(md.substr(from, md.find("\n## ", from) - from));
  std::size_t items = 0;
  for (std::string line; std::getline(section, line);) {
    if (line.empty()) continue;
    CHECK(line.rfind("- ", 0) == 0);
    ++items;
  }
  CHECK(items == 3);
}

TEST_CASE("markdown_escape keeps a line intact and shows exactly the text") {
  struct Case {
    std::string in;
    std::string out;
  };
  const auto c = GENERATE(values<Case>({
      {"plain words", "plain words"},
      {"two\nlines", "two / lines"},
      {"trailing newline\n", "trailing newline"},
      {"a | b", "a \\| b"},
      {"*bold* `code` <b>", "\\*bold\\* \\`code\\` \\<b>"},
      {"max_clock_error_s", "max_clock_error_s"},
      {"_emphasis_", "\\_emphasis\\_"},
      {"line\n\tindented", "line / indented"},
  }));
  CHECK(text::markdown_escape(c.in) == c.out);
}
