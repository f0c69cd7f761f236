// Hostile and clumsy input to the real skewbench executable: files nested a
// million levels deep, times at the int64 limits, a grid range whose step
// would wrap, and a remote that never answers the dedupe-mode check. Each
// must end in a documented exit code with a message naming what is wrong,
// within seconds, never in a crash or a hang.

#include <chrono>
#include <csignal>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "remote_effect/launcher.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// SIGSEGV and SIGABRT show as 128 + signal: never a documented exit code.
void check_refused(const CommandResult& r, const std::string& words) {
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring(words));
}

}  // namespace

TEST_CASE("a scenario or grid nested a million levels deep is exit 2 for validate, run and sweep, not a crash") {
  TempDir tmp("skewbench-bad-input");
  const auto deep = tmp.path() / "deep.json";
  write_file_atomically(deep, std::string(1'000'000, '[') + std::string(1'000'000, ']'));
  const auto out = (tmp.path() / "out").string();
  check_refused(run_skewbench({"validate", deep.string()}), "nested deeper than 64");
  check_refused(run_skewbench({"run", deep.string(), "--out", out, "-q"}), "nested deeper than 64");
  check_refused(run_skewbench({"sweep", deep.string(), "--out", out, "-q"}), "nested deeper than 64");
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("a time at the int64 limit is exit 2 naming its JSON path, before anything starts") {
  TempDir tmp("skewbench-bad-input");
  auto doc = read_json(source_path("scenarios/018-uncertainty.json"));
  doc.erase("$schema");
  doc["steps"].back()["at_s"] = INT64_MAX;
  const auto file = tmp.path() / "huge.json";
  write_file_atomically(file, doc.dump(2));
  const auto started = Clock::now();
  const auto r = run_skewbench({"run", file.string(), "--out", (tmp.path() / "out").string(), "-q"});
  check_refused(r,
                "$.steps[" + std::to_string(doc["steps"].size() - 1) + "].at_s: 9223372036854775807 is out of range");
  CHECK(Clock::now() - started < std::chrono::seconds(10));  // refused before a cluster starts
  check_refused(run_skewbench({"validate", file.string()}), "is out of range");
}

TEST_CASE("a grid range whose next step would pass INT64_MAX is exit 2 at once, not an allocation without end") {
  TempDir tmp("skewbench-bad-input");
  const json grid = {
      {"id", "wrap"},
      {"description", "a range whose step would wrap"},
      {"base_scenario", source_path("scenarios/sweeps/018-base.json")},
      {"policies", json::array({{{"policy", {{"name", "node_local"}}}}})},
      {"axes", json::array({{{"name", "offset"},
                             {"pointer", "/nodes/1/clock_offset_s"},
                             {"range", {{"from", 1}, {"to", INT64_MAX}, {"step", 4611686018427387904}}}}})}};
  const auto file = tmp.path() / "grid.json";
  write_file_atomically(file, grid.dump(2));
  const auto started = Clock::now();
  check_refused(run_skewbench({"sweep", file.string(), "--dry-run"}), "$.axes[0].values[1]");
  CHECK(Clock::now() - started < std::chrono::seconds(10));
}

TEST_CASE("a hung --remote-url costs the dedupe-mode check --http-timeout, not the client's default 30 s") {
  TempDir tmp("skewbench-bad-input");
  remote_effect::LaunchOptions o;
  o.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
  o.state_db = tmp.path() / "remote.sqlite3";
  remote_effect::RemoteEffectProcess remote(o);
  auto doc = read_json(source_path("scenarios/018-uncertainty.json"));
  doc.erase("$schema");
  doc["remote"] = {{"dedupe", "durable"}};
  const auto file = tmp.path() / "durable.json";
  write_file_atomically(file, doc.dump(2));
  ::kill(remote.pid(), SIGSTOP);
  const auto started = Clock::now();
  const auto r = run_skewbench({"run", file.string(), "--out", (tmp.path() / "out").string(), "-q", "--remote-url",
                                remote.base_url(), "--http-timeout", "1"});
  const auto took = Clock::now() - started;
  ::kill(remote.pid(), SIGCONT);
  INFO(r.output);
  CHECK(r.exit_code == 3);  // the remote never answered: an infrastructure error
  CHECK(took < std::chrono::seconds(20));
}

TEST_CASE("explore refuses a budget that is no number, a negative or too large seed and 0 scenarios, exit 2") {
  TempDir tmp("skewbench-bad-input");
  const std::string bounds = source_path("scenarios/explore/018-node-local.json");
  const auto out = (tmp.path() / "out").string();
  const auto explore = [&](const std::string& flag, const std::string& value) {
    return run_skewbench({"explore", bounds, "--out", out, flag, value});
  };
  check_refused(explore("--budget-s", "nan"), "\"nan\" is not a finite number");
  check_refused(explore("--budget-s", "inf"), "\"inf\" is not a finite number");
  check_refused(explore("--seed", "-1"), "\"-1\" is not a whole number");
  check_refused(explore("--seed", "18446744073709551616"), "is more than 2^64-1");
  check_refused(explore("--max-scenarios", "0"), "must be at least 1, not 0");
  CHECK_FALSE(fs::exists(out));
}
