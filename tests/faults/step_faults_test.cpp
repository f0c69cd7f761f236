// Faults a scenario author chooses, as steps: a hung remote during recovery
// (pause_remote) and PostgreSQL restarted before recovery (restart_database),
// run by the real skewbench against the services it starts itself.

#include <catch2/catch_test_macros.hpp>

#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The shipped declared-authority scenario (SAFE) with `fault` inserted just
// before recovery, and the step expectations that recovery must still meet.
json with_fault_before_recovery(const std::string& id, const json& fault) {
  auto doc = read_json(source_path("scenarios/018-declared-authority.json"));
  doc.erase("$schema");
  doc.erase("report_as");
  doc["id"] = id;
  auto& steps = doc["steps"];
  steps.insert(steps.begin() + 4, fault);
  return doc;
}

json summary_row(const json& summary, const std::string& id) {
  for (const auto& row : summary["scenarios"]) {
    if (row["id"] == id) return row;
  }
  FAIL("no row for " << id);
  return nullptr;
}

}  // namespace

TEST_CASE("a short pause_remote and a restart_database before recovery leave the verdict as it was") {
  TempDir tmp("skewbench-step-faults");
  const auto in = tmp.path() / "in";
  write_file_atomically(
      in / "paused.json",
      with_fault_before_recovery("paused", {{"kind", "pause_remote"}, {"at_s", 50}, {"duration_ms", 500}}).dump(2));
  write_file_atomically(
      in / "restarted.json",
      with_fault_before_recovery(
          "restarted",
          {{"kind", "restart_database"},
           {"at_s", 50},
           {"expect", {{"business_state", "committed"}, {"outbox_status", "pending"}, {"delivery_attempts", 1}}}})
          .dump(2));
  const auto r =
      run_skewbench({"run", in.string(), "--out", (tmp.path() / "out").string(), "-q", "--http-timeout", "2"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const auto summary = read_json(tmp.path() / "out" / "summary.json");
  CHECK(summary_row(summary, "paused")["verdict"] == "SAFE");
  CHECK(summary_row(summary, "restarted")["verdict"] == "SAFE");
  CHECK(summary_row(summary, "restarted")["pass"] == true);
}

TEST_CASE("a pause_remote longer than --http-timeout during recovery is ERROR naming the timeout") {
  TempDir tmp("skewbench-step-faults");
  const auto in = tmp.path() / "hung.json";
  write_file_atomically(
      in, with_fault_before_recovery("hung", {{"kind", "pause_remote"}, {"at_s", 50}, {"duration_ms", 4000}}).dump(2));
  const auto r =
      run_skewbench({"run", in.string(), "--out", (tmp.path() / "out").string(), "-q", "--http-timeout", "2"});
  INFO(r.output);
  CHECK(r.exit_code == 3);
  const auto row = summary_row(read_json(tmp.path() / "out" / "summary.json"), "hung");
  CHECK(row["verdict"] == "ERROR");
  CHECK(row["error"].get<std::string>().find("timed out after 2 s") != std::string::npos);
}

TEST_CASE("fault steps need services skewbench started") {
  TempDir tmp("skewbench-step-faults");
  const auto in = tmp.path() / "restarted.json";
  write_file_atomically(in,
                        with_fault_before_recovery("restarted", {{"kind", "restart_database"}, {"at_s", 50}}).dump(2));
  const auto r = run_skewbench({"run", in.string(), "--out", (tmp.path() / "out").string(), "--database-url",
                                "postgresql://postgres@127.0.0.1:1/postgres"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("restart_database needs a PostgreSQL started by skewbench") != std::string::npos);
}

TEST_CASE("a throwaway run keeps synchronous commits when a step stops PostgreSQL, and run defaults to durable") {
  TempDir tmp("skewbench-step-faults");
  const auto in = tmp.path() / "in";
  write_file_atomically(
      in / "restarted.json",
      with_fault_before_recovery("restarted", {{"kind", "restart_database"},
                                               {"at_s", 50},
                                               {"expect", {{"outbox_status", "pending"}, {"delivery_attempts", 1}}}})
          .dump(2));
  const auto r = run_skewbench(
      {"run", in.string(), "--out", (tmp.path() / "throwaway").string(), "-q", "--durability", "throwaway"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const auto summary = read_json(tmp.path() / "throwaway" / "summary.json");
  CHECK(summary_row(summary, "restarted")["pass"] == true);
  const auto& environment = summary["environment"];
  CHECK(environment["durability"] == "throwaway");
  CHECK(environment["postgresql"]["settings"]["fsync"] == "off");
  CHECK(environment["postgresql"]["settings"]["synchronous_commit"] == "on");  // the restart must not lose commits
  CHECK(environment["remote_effect"]["sync"] == "normal");

  const auto durable = run_skewbench(
      {"run", source_path("scenarios/018-uncertainty.json"), "--out", (tmp.path() / "durable").string(), "-q"});
  INFO(durable.output);
  CHECK(durable.exit_code == 0);
  const auto defaults = read_json(tmp.path() / "durable" / "summary.json")["environment"];
  CHECK(defaults["durability"] == "durable");
  CHECK(defaults["postgresql"]["settings"]["fsync"] == "on");
  CHECK(defaults["postgresql"]["settings"]["synchronous_commit"] == "on");
  CHECK(defaults["remote_effect"]["sync"] == "full");
}
