// CI-native output: a failing expectation, a new CONFLICT in compare and an
// invalid scenario file each appear as a JUnit failure that validates against
// tests/data/junit/junit.xsd (xmllint), and, under GITHUB_ACTIONS=true, as an
// ::error annotation on the file to blame, with the outcome appended to
// $GITHUB_STEP_SUMMARY.

#include <cstdlib>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "artifacts/junit.hpp"
#include "common/digest.hpp"
#include "evidence/evidence.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// GITHUB_ACTIONS=true and a summary file for the children of one test.
class UnderGithubActions {
 public:
  explicit UnderGithubActions(const fs::path& summary) {
    ::setenv("GITHUB_ACTIONS", "true", 1);
    ::setenv("GITHUB_STEP_SUMMARY", summary.c_str(), 1);
  }
  ~UnderGithubActions() {
    ::unsetenv("GITHUB_ACTIONS");
    ::unsetenv("GITHUB_STEP_SUMMARY");
  }
  UnderGithubActions(const UnderGithubActions&) = delete;
  UnderGithubActions& operator=(const UnderGithubActions&) = delete;
};

// xmllint's verdict on the file against the JUnit schema the consumers read.
void require_schema_valid(const fs::path& junit) {
  const auto r =
      run_command({"xmllint", "--noout", "--schema", source_path("tests/data/junit/junit.xsd"), junit.string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

fs::path crafted_run(const fs::path& dir, const std::vector<std::pair<std::string, std::string>>& id_verdicts) {
  json rows = json::array();
  for (const auto& [id, verdict] : id_verdicts) {
    rows.push_back(
        {{"id", id}, {"policy", "node_local"}, {"verdict", verdict}, {"core_digest", sha256_hex(id + verdict)}});
  }
  fs::create_directories(dir);
  write_file_atomically(dir / "summary.json", json{{"schema_version", evidence::kSchemaVersion},
                                                   {"kind", "run_summary"},
                                                   {"scenarios", rows},
                                                   {"core_digest", evidence::run_core_digest(rows)}}
                                                  .dump());
  return dir;
}

}  // namespace

TEST_CASE("a failing expectation is a JUnit failure with what was measured, and an annotation on its file") {
  TempDir dir("skewbench-ci");
  auto doc = read_json(source_path("scenarios/018-unsafe-node-local.json"));
  doc["expect"]["effect_count"] = 1;  // the run measures 2
  const auto scenario = dir.path() / "018-unsafe-node-local.json";
  write_file_atomically(scenario, doc.dump(2));
  const auto junit = dir.path() / "run.xml";
  const UnderGithubActions github(dir.path() / "summary.md");
  const auto r = run_skewbench(
      {"run", scenario.string(), "--out", (dir.path() / "out").string(), "-q", "--junit", junit.string()});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  require_schema_valid(junit);
  const auto xml = read_file(junit);
  CHECK_THAT(xml, ContainsSubstring("name=\"final.effect_count\""));
  CHECK_THAT(xml, ContainsSubstring("<failure message=\"expected 1, observed 2\""));
  CHECK_THAT(xml, ContainsSubstring("<testsuite name=\"018-clock-skew-expiry-disagreement\""));
  CHECK_THAT(xml, ContainsSubstring("<property name=\"postgresql_version\""));
  CHECK_THAT(r.output, ContainsSubstring("::group::skewbench: the scenarios\n"));
  CHECK_THAT(r.output, ContainsSubstring("::endgroup::\n"));
  CHECK_THAT(r.output, ContainsSubstring("::error file=" + scenario.string() +
                                         ",title=skewbench%3A 018-unsafe-node-local final.effect_count::expected 1, "
                                         "observed 2"));
  CHECK_THAT(read_file(dir.path() / "summary.md"), ContainsSubstring("| 018-unsafe-node-local | node_local |"));
}

TEST_CASE("a new CONFLICT in compare is a JUnit failure, and an annotation on the candidate's summary") {
  TempDir dir("skewbench-ci");
  const auto base = crafted_run(dir.path() / "base", {{"a", "SAFE"}, {"b", "SAFE"}});
  const auto candidate = crafted_run(dir.path() / "candidate", {{"a", "CONFLICT"}, {"b", "CONFLICT"}});
  const auto junit = dir.path() / "compare.xml";
  const UnderGithubActions github(dir.path() / "summary.md");
  // --limit shortens what is printed, never what fails: both rows fail.
  const auto r =
      run_skewbench({"compare", base.string(), candidate.string(), "--limit", "1", "--junit", junit.string()});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  require_schema_valid(junit);
  const auto xml = read_file(junit);
  CHECK_THAT(xml, ContainsSubstring("<testcase classname=\"compare scenario\" name=\"a\""));
  CHECK_THAT(xml, ContainsSubstring("<testcase classname=\"compare scenario\" name=\"b\""));
  CHECK_THAT(xml, ContainsSubstring("<testsuite name=\"skewbench compare"));
  CHECK_THAT(xml, ContainsSubstring("failures=\"2\""));
  CHECK_THAT(xml, ContainsSubstring("<failure message=\"new CONFLICT: verdict=CONFLICT"));
  CHECK_THAT(r.output, ContainsSubstring("::error file=" + (candidate / "summary.json").string() +
                                         ",title=skewbench compare%3A new CONFLICT::scenario a is CONFLICT"));
  CHECK_THAT(read_file(dir.path() / "summary.md"), ContainsSubstring("CONFLICT"));
}

TEST_CASE("an invalid scenario file is a JUnit failure and an annotation naming the file and JSON path") {
  TempDir dir("skewbench-ci");
  auto doc = read_json(source_path("scenarios/018-uncertainty.json"));
  doc["ttl_s"] = "sixty";
  const auto scenario = dir.path() / "broken.json";
  write_file_atomically(scenario, doc.dump(2));
  const auto junit = dir.path() / "run.xml";
  const UnderGithubActions github(dir.path() / "summary.md");
  const auto r =
      run_skewbench({"run", scenario.string(), "--out", (dir.path() / "out").string(), "--junit", junit.string()});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  require_schema_valid(junit);
  const auto xml = read_file(junit);
  CHECK_THAT(xml, ContainsSubstring("name=\"$.ttl_s\""));
  CHECK_THAT(xml, ContainsSubstring("file=\"" + scenario.string() + "\""));
  CHECK_THAT(xml, ContainsSubstring("<failure message=\"" + scenario.string() + ": $.ttl_s:"));
  CHECK_THAT(r.output,
             ContainsSubstring("::error file=" + scenario.string() + ",title=skewbench run%3A invalid input::"));
  CHECK_FALSE(fs::exists(dir.path() / "out"));
}

TEST_CASE("without GITHUB_ACTIONS a failing run annotates nothing, --github makes it, and a pass has no failure") {
  TempDir dir("skewbench-ci");
  ::unsetenv("GITHUB_ACTIONS");  // also when this suite itself runs under GitHub Actions
  ::unsetenv("GITHUB_STEP_SUMMARY");
  auto doc = read_json(source_path("scenarios/018-uncertainty.json"));
  doc["expect"]["post_requests"] = 2;  // the run measures 1
  const auto failing = dir.path() / "018-uncertainty.json";
  write_file_atomically(failing, doc.dump(2));
  const auto quiet = run_skewbench({"run", failing.string(), "--out", (dir.path() / "a").string(), "-q"});
  CHECK(quiet.exit_code == 1);
  CHECK_THAT(quiet.output, !ContainsSubstring("::error"));
  const auto forced = run_skewbench({"run", failing.string(), "--out", (dir.path() / "b").string(), "-q", "--github"});
  CHECK(forced.exit_code == 1);
  CHECK_THAT(forced.output, ContainsSubstring("::error file=" + failing.string() + ","));

  const auto junit = dir.path() / "run.xml";
  const auto r = run_skewbench({"run", source_path("scenarios/018-uncertainty.json"), "--out",
                                (dir.path() / "out").string(), "-q", "--junit", junit.string()});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  require_schema_valid(junit);
  const auto xml = read_file(junit);
  CHECK_THAT(xml, ContainsSubstring("failures=\"0\" errors=\"0\""));
  CHECK_THAT(xml, !ContainsSubstring("<failure"));
}

TEST_CASE("JUnit XML stays well-formed and schema-valid whatever bytes a message holds") {
  TempDir dir("skewbench-ci");
  const std::string hostile = std::string("a <b> & \"c\" \x01\x1b[31m \xff\xfe ") + "\xed\xa0\x80 ok";
  const auto file = dir.path() / "hostile.xml";
  artifacts::write_junit(file, {{.name = hostile,
                                 .cases = {{.classname = hostile,
                                            .name = hostile,
                                            .result = artifacts::CaseResult::error,
                                            .message = hostile,
                                            .text = hostile,
                                            .file = hostile}},
                                 .properties = {{"p", hostile}},
                                 .time_s = 0}});
  require_schema_valid(file);
  const auto xml = read_file(file);
  CHECK_THAT(xml, ContainsSubstring("a &lt;b&gt; &amp;"));
  CHECK_THAT(xml, ContainsSubstring("\xef\xbf\xbd"));  // U+FFFD for the bytes that are not UTF-8
  CHECK_THAT(xml, !ContainsSubstring("\x01"));
}
