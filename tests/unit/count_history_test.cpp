// The rule for counts (evidence/count_history.hpp, docs/evidence.md "Counts a
// service reports") over tables of histories: the honest history of every
// shipped scenario holds, and each lie a service can tell is caught with the
// exchange and both numbers named.

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "evidence/count_history.hpp"
#include "evidence/evidence.hpp"
#include "runner/runner.hpp"
#include "scenario/scenario.hpp"
#include "support/fakes.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = SKEWBENCH_SOURCE_DIR;

// A run's evidence of a published scenario, as the real stack wrote it.
json reference(const std::string& id) {
  return parse_json_text(read_file(kSource / "results/reference/scenarios" / (id + ".json")));
}

json& response(json& evidence, std::size_t step, std::size_t exchange) {
  return evidence["timeline"][step]["exchanges"][exchange]["response"];
}

struct Lie {
  std::string name;
  std::string history;  // the reference evidence it is told in
  std::function<void(json&)> tell;
  std::vector<std::string> named;  // what the contradiction must say
};

// In 018-unsafe-node-local: step 1 POSTs (answer lost) and reads the status
// (1 effect), steps 2 and 3 observe (1), step 4 replays (applied, 2), closing
// 2. In 016-unsafe-volatile-restart step 2 restarts the service (new boot_id).
std::vector<Lie> lies() {
  return {
      {"a count of 2^64 - 1 (read as -1 by a 64-bit signed reader)",
       "018-unsafe-node-local",
       [](json& e) { response(e, 1, 1)["effect_count"] = std::uint64_t{18446744073709551615ULL}; },
       {"step 1 (post_effect), exchange 2 (GET /status/", "effect_count is 18446744073709551615, not a count"}},
      {"a negative count",
       "018-unsafe-node-local",
       [](json& e) { response(e, 2, 0)["post_requests"] = -1; },
       {"step 2 (observe), exchange 1 (GET /status/", "post_requests is -1, not a count"}},
      {"a count past 2^53",
       "018-unsafe-node-local",
       [](json& e) { response(e, 2, 0)["effect_count"] = (std::int64_t{1} << 53) + 1; },
       {"step 2 (observe), exchange 1", "effect_count is 9007199254740993, not a count"}},
      {"applied, and the count does not rise",
       "018-unsafe-node-local",
       [](json& e) { response(e, 4, 0)["effect_count"] = 1; },
       {"step 4 (recover), exchange 1 (POST /effects): answered applied, yet effect_count 1 did not rise above the 1 "
        "at step 3 (observe), exchange 1 (GET /status/"}},
      {"too many effects for the POSTs sent",
       "018-unsafe-node-local",
       [](json& e) { e["final"]["effect_count"] = 1000; },
       {"the closing measurement: effect_count is 1000, but 2 is the most it can be (1 POST(s) answered applied and "
        "1 whose answer was lost)"}},
      {"an effect before the answer that could have made it",
       "018-unsafe-node-local",
       [](json& e) {
         for (auto* r : {&response(e, 1, 1), &response(e, 2, 0), &response(e, 3, 0)}) (*r)["effect_count"] = 2;
       },
       {"step 1 (post_effect), exchange 2 (GET /status/", "effect_count is 2, but 1 is the most it can be"}},
      {"a count that falls",
       "018-unsafe-node-local",
       [](json& e) { response(e, 3, 0)["effect_count"] = 0; },
       {"step 3 (observe), exchange 1 (GET /status/", "effect_count fell to 0 from 1 at step 2 (observe), exchange 1",
        "no step between restarted the service"}},
      {"a boot_id that changes with no restart",
       "018-unsafe-node-local",
       [](json& e) { response(e, 3, 0)["boot_id"] = "another-process"; },
       {"step 3 (observe), exchange 1 (GET /status/", "the service's boot_id is another-process, but it was",
        "at step 2 (observe), exchange 1", "no step between restarted the service"}},
      {"a restart after which the boot_id is the same",
       "016-unsafe-volatile-restart",
       [](json& e) { response(e, 2, 0)["boot_id"] = response(e, 1, 1)["boot_id"]; },
       {"step 2 (restart_remote), exchange 1 (GET /status/", "after step 2 (restart_remote) restarted it",
        "the service did not restart"}},
      {"a restart that invents an effect",
       "016-unsafe-volatile-restart",
       [](json& e) { response(e, 2, 0)["effect_count"] = 5; },
       {"step 2 (restart_remote), exchange 1", "effect_count is 5, but 1 is the most it can be"}},
  };
}

runner::ScenarioResult run_with_fakes(const scenario::Scenario& s) {
  testing::FakeRemote remote;
  testing::FakeOutbox outbox;
  testing::FakeControl control(remote);
  runner::ScenarioRunner runner(remote, outbox, {.run_id = "rcounts", .remote_control = &control});
  return runner.run(s);
}

}  // namespace

TEST_CASE("the reference run's history of every published scenario holds") {
  std::size_t read = 0;
  for (const auto& entry : fs::directory_iterator(kSource / "results/reference/scenarios")) {
    INFO(entry.path().filename().string());
    const auto evidence = parse_json_text(read_file(entry.path()));
    CHECK(evidence::count_contradiction_of_evidence(evidence) == std::nullopt);
    ++read;
  }
  CHECK(read == 16);
}

TEST_CASE("the honest history of every shipped scenario the fakes can run holds, and hold_counts leaves it") {
  std::size_t held = 0;
  for (const char* folder : {"scenarios", "scenarios/targets", "scenarios/instances"}) {
    for (const auto& entry : fs::directory_iterator(kSource / folder)) {
      if (entry.path().extension() != ".json") continue;
      INFO(entry.path().string());
      const auto s = scenario::load_scenario_file(entry.path().string());
      auto result = run_with_fakes(s);
      // One instance and no store of its own: what the fakes cannot be.
      if (result.error) continue;
      const auto closing = result.final_measurement->exchange;
      CHECK(evidence::count_contradiction(s, runner::to_json(result.timeline), closing, result.final_json()) ==
            std::nullopt);
      const auto verdict = result.verdict;
      evidence::hold_counts(s, result);
      CHECK(result.verdict == verdict);
      CHECK_FALSE(result.error);
      ++held;
    }
  }
  CHECK(held >= 16);
}

TEST_CASE("each lie about the counts is caught, naming the exchange and both numbers") {
  for (const auto& lie : lies()) {
    INFO(lie.name);
    auto evidence = reference(lie.history);
    REQUIRE(evidence::count_contradiction_of_evidence(evidence) == std::nullopt);
    lie.tell(evidence);
    const auto why = evidence::count_contradiction_of_evidence(evidence);
    REQUIRE(why);
    for (const auto& part : lie.named) CHECK_THAT(*why, ContainsSubstring(part));
  }
}

TEST_CASE("the closing exchange is read where the evidence has one: its boot_id and counts too") {
  auto evidence = reference("018-unsafe-node-local");
  auto closing = evidence["timeline"][3]["exchanges"][0];
  closing["response"]["effect_count"] = 2;
  evidence["closing_exchange"] = closing;
  CHECK(evidence::count_contradiction_of_evidence(evidence) == std::nullopt);
  evidence["closing_exchange"]["response"]["boot_id"] = "a-fresh-one";
  const auto why = evidence::count_contradiction_of_evidence(evidence);
  REQUIRE(why);
  CHECK_THAT(*why, ContainsSubstring("the closing measurement (GET /status/"));
  CHECK_THAT(*why, ContainsSubstring("boot_id is a-fresh-one"));
}

TEST_CASE("instances are held to their own boot_ids: two instances, two boot_ids, no contradiction") {
  auto evidence = reference("018-unsafe-node-local");
  for (std::size_t step : {1, 2}) evidence["timeline"][step]["exchanges"].back()["harness"] = {{"instance", "a"}};
  for (std::size_t step : {3, 4}) {
    evidence["timeline"][step]["exchanges"].back()["harness"] = {{"instance", "b"}};
    response(evidence, step, 0)["boot_id"] = "instance-b";
  }
  CHECK(evidence::count_contradiction_of_evidence(evidence) == std::nullopt);
  response(evidence, 4, 0)["boot_id"] = "instance-b-again";
  const auto why = evidence::count_contradiction_of_evidence(evidence);
  REQUIRE(why);
  CHECK_THAT(*why, ContainsSubstring("step 4 (recover), exchange 1 (POST /effects): b's boot_id is instance-b-again, "
                                     "but it was instance-b at step 3 (observe)"));
}

TEST_CASE("a service that keeps its counts in memory may lose them across a restart step, and only there") {
  auto evidence = reference("016-unsafe-volatile-restart");
  response(evidence, 2, 0)["effect_count"] = 0;  // the restart lost the effect ledger
  response(evidence, 3, 0)["effect_count"] = 1;  // the replay is its first effect again
  evidence["final"]["effect_count"] = 1;
  CHECK(evidence::count_contradiction_of_evidence(evidence) == std::nullopt);
  // After the restart the bounds count from its first reading: 0 + 1 applied.
  evidence["final"]["effect_count"] = 2;
  const auto why = evidence::count_contradiction_of_evidence(evidence);
  REQUIRE(why);
  CHECK_THAT(
      *why,
      ContainsSubstring(
          "the closing measurement: effect_count is 2, but 1 is the most it can be (1 "
          "POST(s) answered applied and 0 whose answer was lost, counted from the 0 read at step 2 (restart_remote), "
          "exchange 1 (GET /status/"));
}

TEST_CASE("counts skewbench took itself at its effect sink are measurements, not held to the service's word") {
  // A service of its own wire that replayed by calling its provider again:
  // two effects for one applied answer and one replay is a CONFLICT skewbench
  // measured, not a lie.
  auto evidence = reference("018-unsafe-node-local");
  for (std::size_t step : {1, 2, 3})
    evidence["timeline"][step]["exchanges"].back()["harness"] = {{"counted_by_skewbench", true}};
  auto& replay = evidence["timeline"][4]["exchanges"][0];
  replay["response"] = {{"id", "own wire"}};
  replay["harness"] = {{"answer_class", "replayed"},
                       {"counted_by_skewbench", {{"effect_count", 2}, {"post_requests", 2}, {"ack_drops", 1}}}};
  CHECK(evidence::count_contradiction_of_evidence(evidence) == std::nullopt);
  evidence["final"]["effect_count"] = 3;  // a late call at the sink: measured too
  CHECK(evidence::count_contradiction_of_evidence(evidence) == std::nullopt);
}

TEST_CASE("hold_counts makes a contradicted result an ERROR and leaves an ERROR as it is") {
  const auto s = scenario::load_scenario_file((kSource / "scenarios/018-unsafe-node-local.json").string());
  auto result = run_with_fakes(s);
  REQUIRE_FALSE(result.error);
  REQUIRE(result.verdict == runner::Verdict::Conflict);
  REQUIRE(result.pass);
  result.final_measurement->exchange["response"]["effect_count"] = 7;
  evidence::hold_counts(s, result);
  CHECK(result.verdict == runner::Verdict::Error);
  CHECK_FALSE(result.pass);
  REQUIRE(result.error);
  CHECK_THAT(*result.error, ContainsSubstring("what the service reported cannot be true: the closing measurement"));
  CHECK_THAT(*result.error, ContainsSubstring("effect_count is 7, but 2 is the most it can be"));
  for (const auto& check : result.checks) CHECK_FALSE(check.pass);
  const auto before = *result.error;
  evidence::hold_counts(s, result);
  CHECK(*result.error == before);
}

TEST_CASE("a restart step after which /health gives the same boot_id is an ERROR: the service did not restart") {
  // A control whose restart does nothing: the service goes on as it was.
  class NoRestart final : public steps::RemoteControl {
   public:
    explicit NoRestart(testing::FakeRemote& remote) : remote_(remote) {}
    void restart_remote() override {}
    void pause_remote(std::chrono::milliseconds) override {}
    void use_dedupe_mode(remote_effect::DedupeMode mode) override { remote_.set_mode(mode); }
    void restart_store() override {}
    std::string kill_instance(std::size_t) override { return {}; }

   private:
    testing::FakeRemote& remote_;
  };
  testing::FakeRemote remote;
  testing::FakeOutbox outbox;
  NoRestart control(remote);
  const auto s = scenario::load_scenario_file((kSource / "scenarios/016-safe-durable-restart.json").string());
  const auto result = runner::ScenarioRunner(remote, outbox, {.run_id = "rcounts", .remote_control = &control}).run(s);
  CHECK(result.verdict == runner::Verdict::Error);
  REQUIRE(result.error);
  CHECK_THAT(*result.error, ContainsSubstring("restart_remote: the service's /health gives boot_id fake-boot-1 before "
                                              "and after the restart: the service did not restart"));
}
