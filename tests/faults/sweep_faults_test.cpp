// A sweep whose services fail under it: the remote killed and restarted, the
// remote hung, PostgreSQL stopped and restarted, PostgreSQL gone for good.
// Every cell must equal the fault-free sweep's verdict or be ERROR, the exit
// code must say which, and a fault costs at most one cell per worker.

#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "infra/postgres_cluster.hpp"
#include "remote_effect/launcher.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr int kJobs = 4;

struct Services {
  infra::PostgresCluster cluster;
  TempDir dir{"skewbench-sweep-faults"};
  remote_effect::RemoteEffectProcess remote{[this] {
    remote_effect::LaunchOptions o;
    o.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
    o.state_db = dir.path() / "remote.sqlite3";
    o.stderr_path = (dir.path() / "remote.log").string();
    return o;
  }()};
};

// 57 cells: node B's offset from -90 to +90 s under all three policies.
fs::path write_grid(const fs::path& dir) {
  const json grid = {
      {"id", "faults"},
      {"description", "node B's offset under all three policies, for fault injection"},
      {"base_scenario", source_path("scenarios/sweeps/018-base.json")},
      {"policies",
       json::array({{{"policy", {{"name", "node_local"}}}},
                    {{"policy",
                      {{"name", "declared_authority"},
                       {"authority", {{"identity", "remote_effect_service_logical_clock"}, {"offset_s", 5}}}}}},
                    {{"policy", {{"name", "uncertainty"}, {"max_clock_error_s", 20}}}}})},
      {"axes", json::array({{{"name", "node_b_offset_s"},
                             {"pointer", "/nodes/1/clock_offset_s"},
                             {"range", {{"from", -90}, {"to", 90}, {"step", 10}}}}})}};
  write_file_atomically(dir / "grid.json", grid.dump(2));
  return dir / "grid.json";
}

std::vector<std::string> sweep_args(Services& s, const fs::path& grid, const fs::path& out,
                                    std::vector<std::string> extra) {
  std::vector<std::string> args = {SKEWBENCH_CLI_BIN,     "sweep",
                                   grid.string(),         "--out",
                                   out.string(),          "--database-url",
                                   s.cluster.url(),       "--remote-url",
                                   s.remote.base_url(),   "--jobs",
                                   std::to_string(kJobs), "-q",
                                   "--http-timeout",      "2",
                                   "--db-timeout",        "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::size_t lines_in(const fs::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

std::map<std::uint64_t, json> read_cells(const fs::path& dir) {
  std::map<std::uint64_t, json> out;
  std::ifstream in(dir / "cells.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto record = json::parse(line);
    out[record["cell"].get<std::uint64_t>()] = record;
  }
  return out;
}

struct FaultRun {
  int exit_code = -1;
  std::map<std::uint64_t, json> cells;
  json summary;
  std::string stderr_text;
};

// Starts the sweep, calls fault(wait_for) where wait_for(n) blocks until n
// cells are written, and waits (bounded) for the sweep to end.
template <typename Fault>
FaultRun sweep_with_fault(Services& s, const TempDir& tmp, std::vector<std::string> extra, Fault fault) {
  const auto out = tmp.path() / "faulted";
  Subprocess::Options options;
  options.stderr_path = (tmp.path() / "stderr.log").string();
  Subprocess sweep(sweep_args(s, write_grid(tmp.path()), out, std::move(extra)), options);
  auto wait_for = [&](std::size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (lines_in(out / "cells.jsonl") < n && sweep.running() && std::chrono::steady_clock::now() < deadline) {
      sweep.wait_for_exit(std::chrono::milliseconds(10));
    }
    REQUIRE(lines_in(out / "cells.jsonl") >= n);
  };
  fault(wait_for);
  FaultRun run;
  run.exit_code = sweep.wait_for_exit(std::chrono::seconds(90)).value_or(-1);
  run.cells = read_cells(out);
  run.summary = read_json(out / "sweep.json");
  run.stderr_text = read_file(tmp.path() / "stderr.log");
  return run;
}

std::map<std::uint64_t, json> baseline(Services& s, const TempDir& tmp) {
  const auto out = tmp.path() / "baseline";
  const auto r = run_command(sweep_args(s, write_grid(tmp.path()), out, {}));
  REQUIRE(r.exit_code == 0);
  return read_cells(out);
}

// Every cell equals the fault-free one or is ERROR; returns the ERROR count.
std::size_t check_against(const FaultRun& run, const std::map<std::uint64_t, json>& base) {
  std::size_t errors = 0;
  for (const auto& [cell, record] : run.cells) {
    INFO("cell " << cell << ": " << record.dump());
    REQUIRE(base.contains(cell));
    if (record["verdict"] == "ERROR") {
      ++errors;
      CHECK(record["error"].is_string());
      continue;
    }
    CHECK(record["verdict"] == base.at(cell)["verdict"]);
    CHECK(record["effect_count"] == base.at(cell)["effect_count"]);
  }
  CHECK(run.summary["errors"] == errors);
  return errors;
}

}  // namespace

TEST_CASE("a remote killed and restarted three times mid-sweep costs at most one cell per worker each time") {
  Services s;
  TempDir tmp("skewbench-sweep-faults");
  const auto base = baseline(s, tmp);
  const auto run = sweep_with_fault(s, tmp, {}, [&](auto wait_for) {
    for (std::size_t i = 1; i <= 3; ++i) {
      wait_for(12 * i);
      s.remote.kill_hard();
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      s.remote.restart();
    }
  });
  INFO(run.stderr_text);
  CHECK(run.summary["complete"] == true);
  CHECK(run.cells.size() == base.size());
  const auto errors = check_against(run, base);
  CHECK(errors <= 3 * kJobs);
  CHECK(run.exit_code == (errors > 0 ? 3 : 0));
}

TEST_CASE("a remote hung longer than --http-timeout mid-sweep makes the cells it held ERROR and exits 3") {
  Services s;
  TempDir tmp("skewbench-sweep-faults");
  const auto base = baseline(s, tmp);
  const auto run = sweep_with_fault(s, tmp, {}, [&](auto wait_for) {
    wait_for(12);
    ::kill(s.remote.pid(), SIGSTOP);
    std::this_thread::sleep_for(std::chrono::seconds(4));
    ::kill(s.remote.pid(), SIGCONT);
  });
  INFO(run.stderr_text);
  CHECK(run.summary["complete"] == true);
  CHECK(run.cells.size() == base.size());
  const auto errors = check_against(run, base);
  CHECK(errors >= 1);  // the workers' requests in flight timed out
  CHECK(errors <= kJobs);
  CHECK(run.exit_code == 3);
  bool named = false;
  for (const auto& [cell, record] : run.cells) {
    named = named || (record["error"].is_string() &&
                      record["error"].get<std::string>().find("timed out after 2 s") != std::string::npos);
  }
  CHECK(named);
  CHECK(run.summary["environment"]["timeouts"]["http_timeout_s"] == 2);
}

TEST_CASE("PostgreSQL stopped and restarted mid-sweep costs at most one cell per worker; the sweep completes") {
  Services s;
  TempDir tmp("skewbench-sweep-faults");
  const auto base = baseline(s, tmp);
  const auto run = sweep_with_fault(s, tmp, {}, [&](auto wait_for) {
    wait_for(12);
    s.cluster.stop_immediately();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    s.cluster.restart();
  });
  INFO(run.stderr_text);
  CHECK(run.summary["complete"] == true);
  CHECK(run.cells.size() == base.size());
  const auto errors = check_against(run, base);
  CHECK(errors <= kJobs);
  CHECK(run.exit_code == (errors > 0 ? 3 : 0));
}

TEST_CASE("PostgreSQL gone for longer than --max-unreachable-s stops the sweep incomplete with exit 3") {
  Services s;
  TempDir tmp("skewbench-sweep-faults");
  const auto base = baseline(s, tmp);
  const auto started = std::chrono::steady_clock::now();
  const auto run = sweep_with_fault(s, tmp, {"--max-unreachable-s", "3"}, [&](auto wait_for) {
    wait_for(12);
    s.cluster.stop_immediately();
  });
  INFO(run.stderr_text);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(45));
  CHECK(run.exit_code == 3);
  CHECK(run.summary["complete"] == false);
  CHECK(run.summary["unreachable"].is_string());
  CHECK(run.cells.size() < base.size());
  CHECK(check_against(run, base) <= kJobs);
  CHECK(run.stderr_text.find("--max-unreachable-s") != std::string::npos);
}

namespace {

// The postmaster and every backend of the cluster: SIGSTOP of all of them is
// a database that accepts connections and never answers.
std::vector<pid_t> cluster_processes(pid_t postmaster) {
  std::vector<pid_t> pids = {postmaster};
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text;
    std::getline(stat, text);
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 2));
    std::string state;
    pid_t parent = 0;
    fields >> state >> parent;
    if (parent == postmaster) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

}  // namespace

TEST_CASE("Ctrl-C while PostgreSQL hangs ends the sweep within seconds, not after the 30 s database timeout") {
  // Before, a statement waited out --db-timeout and the reconnect then ran a
  // whole connect (another --db-timeout) before it looked at the stop flag.
  Services s;
  TempDir tmp("skewbench-sweep-faults");
  const auto out = tmp.path() / "hung";
  std::vector<std::string> args = {SKEWBENCH_CLI_BIN,
                                   "sweep",
                                   write_grid(tmp.path()).string(),
                                   "--out",
                                   out.string(),
                                   "--database-url",
                                   s.cluster.url(),
                                   "--remote-url",
                                   s.remote.base_url(),
                                   "--jobs",
                                   "2",
                                   "-q",
                                   "--db-timeout",
                                   "30"};
  Subprocess::Options options;
  options.stderr_path = (tmp.path() / "stderr.log").string();
  Subprocess sweep(args, options);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (lines_in(out / "cells.jsonl") < 6 && sweep.running() && std::chrono::steady_clock::now() < deadline) {
    sweep.wait_for_exit(std::chrono::milliseconds(10));
  }
  REQUIRE(lines_in(out / "cells.jsonl") >= 6);
  const auto hung = cluster_processes(s.cluster.pid());
  for (const auto pid : hung) ::kill(pid, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the workers now wait on PostgreSQL
  const auto asked = std::chrono::steady_clock::now();
  sweep.send_signal(SIGINT);
  const auto code = sweep.wait_for_exit(std::chrono::seconds(60));
  const auto took = std::chrono::steady_clock::now() - asked;
  for (const auto pid : hung) ::kill(pid, SIGCONT);
  std::string stdout_text;
  while (const auto line = sweep.read_line(std::chrono::milliseconds(200))) stdout_text += *line + "\n";
  INFO(stdout_text << read_file(tmp.path() / "stderr.log"));
  REQUIRE(code);
  CHECK(*code == 130);
  CHECK(took < std::chrono::seconds(10));
  CHECK_THAT(stdout_text, Catch::Matchers::ContainsSubstring("--resume"));
  // The cells cut short are not done, so none is written, and certainly not
  // as an ERROR (an interruption is not an infrastructure fault); the sweep
  // summary says it stopped part-way, and --resume runs them.
  const auto cells = read_cells(out);
  for (const auto& [cell, record] : cells) {
    INFO("cell " << cell << ": " << record.dump());
    CHECK(record["verdict"] != "ERROR");
  }
  const auto summary = read_json(out / "sweep.json");
  CHECK(summary["interrupted"] == true);
  CHECK(summary["cells_done"] == cells.size());
  CHECK(summary["cells_done"].get<std::size_t>() < summary["cells_planned"].get<std::size_t>());
}
