// What `run` and `sweep` share before and after the services (runner/session.hpp):
// scenario ids and report_as sections are unique across the files loaded, and
// a scenario that never ran is ERROR with every expectation unmeasured. The
// session's services themselves are exercised by the integration tests.

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/files.hpp"
#include "runner/session.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json shipped(const std::string& name) {
  return json::parse(read_file(fs::path(SKEWBENCH_SOURCE_DIR) / "scenarios" / name));
}

// The ScenarioFileError loading the folder throws ("" when none).
std::string load_error(const fs::path& dir) {
  try {
    runner::load_scenarios({dir.string()});
  } catch (const scenario::ScenarioFileError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("scenarios loaded together need distinct ids and report_as sections, naming both files") {
  TempDir dir("skewbench-session");
  auto a = shipped("015-safe-stable-key-redelivery.json");
  auto b = shipped("015-unsafe-new-key-per-attempt.json");
  write_file_atomically(dir.path() / "a.json", a.dump());
  SECTION("distinct") {
    write_file_atomically(dir.path() / "b.json", b.dump());
    CHECK(load_error(dir.path()).empty());
    CHECK(runner::load_scenarios({dir.path().string()}).size() == 2);
  }
  SECTION("the same id") {
    b["id"] = a["id"];
    write_file_atomically(dir.path() / "b.json", b.dump());
    CHECK_THAT(load_error(dir.path()), ContainsSubstring("$.id: scenario id " + a["id"].dump() + " is also used by " +
                                                         (dir.path() / "a.json").string()));
  }
  SECTION("the same section") {
    b["report_as"] = a["report_as"];
    write_file_atomically(dir.path() / "b.json", b.dump());
    CHECK_THAT(load_error(dir.path()), ContainsSubstring("$.report_as: section " + a["report_as"].dump() +
                                                         " is also reported by " + (dir.path() / "a.json").string()));
  }
}

TEST_CASE("a scenario that never ran is ERROR with every expectation unmeasured and failed") {
  TempDir dir("skewbench-session");
  write_file_atomically(dir.path() / "a.json", shipped("015-safe-stable-key-redelivery.json").dump());
  const auto scenarios = runner::load_scenarios({dir.path().string()});
  const auto r = runner::never_ran(scenarios.at(0), "connection refused");
  CHECK(r.scenario_id == scenarios[0].id);
  CHECK(r.verdict == runner::Verdict::Error);
  CHECK(r.error == "connection refused");
  CHECK_FALSE(r.pass);
  REQUIRE(r.checks.size() == scenarios[0].expectations.size());
  REQUIRE_FALSE(r.checks.empty());
  for (const auto& c : r.checks) {
    CHECK_FALSE(c.measured);
    CHECK_FALSE(c.pass);
    CHECK(c.observed.is_null());
  }
}
