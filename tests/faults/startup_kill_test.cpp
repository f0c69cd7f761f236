// skewbench killed with SIGKILL at each phase of start-up and mid-run: nothing
// it started may keep running, and the next run removes what it left in
// TMPDIR.

#include <csignal>
#include <thread>

#include <catch2/catch_test_macros.hpp>

#include "infra/postgres_cluster.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
namespace fs = std::filesystem;

namespace {

// Processes whose command line mentions `needle` (our private TMPDIR).
int processes_mentioning(const std::string& needle) {
  int found = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline;
    try {
      cmdline = read_file(entry.path() / "cmdline");
    } catch (const std::exception&) {
      continue;  // the process ended while we looked
    }
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) ++found;
  }
  return found;
}

std::vector<fs::path> entries_of(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) out.push_back(entry.path());
  }
  return out;
}

bool any_has(const fs::path& dir, const std::string& prefix, const std::string& relative) {
  for (const auto& p : entries_of(dir, prefix)) {
    std::error_code ec;
    if (fs::exists(p / relative, ec)) return true;
  }
  return false;
}

struct KillCase {
  const char* phase;
  const char* prefix;    // the TempDir to watch
  const char* relative;  // killed as soon as this path exists inside it
};

void kill_at(const KillCase& c, const infra::PostgresCluster& shared) {
  TempDir tmp("skewbench-kill");
  fs::permissions(tmp.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);  // the postgres user enters it
  TempDir out("skewbench-kill-out");
  Subprocess::Options options;
  options.env["TMPDIR"] = tmp.path().string();
  options.stderr_path = (out.path() / "stderr.log").string();
  Subprocess run({SKEWBENCH_CLI_BIN, "run", source_path("scenarios/018-uncertainty.json"), "--out",
                  (out.path() / "run").string(), "-q"},
                 options);
  // Deadlines a loaded machine meets: each wait ends on its condition.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  while (!any_has(tmp.path(), c.prefix, c.relative) && run.running() && std::chrono::steady_clock::now() < deadline) {
    run.wait_for_exit(std::chrono::milliseconds(2));
  }
  REQUIRE(run.running());
  run.send_signal(SIGKILL);
  run.wait_for_exit(std::chrono::seconds(10));

  // The cluster's watchdog alone may wait 10 s for the postmaster to go.
  const auto cleanup_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (processes_mentioning(tmp.path().string()) > 0 && std::chrono::steady_clock::now() < cleanup_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(processes_mentioning(tmp.path().string()) == 0);

  // The next run (embedded remote, so it makes a TempDir) removes the rest.
  options.stderr_path = (out.path() / "stderr-next.log").string();
  Subprocess next({SKEWBENCH_CLI_BIN, "run", source_path("scenarios/018-uncertainty.json"), "--out",
                   (out.path() / "next").string(), "--database-url", shared.url(), "-q"},
                  options);
  const auto next_code = next.wait_for_exit(std::chrono::seconds(180));
  INFO("the next run's stderr: " << read_file(out.path() / "stderr-next.log"));
  CHECK(next_code == 0);
  CHECK(entries_of(tmp.path(), "skewbench-").empty());
}

}  // namespace

TEST_CASE("skewbench killed at any start-up phase leaves nothing running, and the next run removes its directories") {
  infra::PostgresCluster shared;
  for (const auto& c : {KillCase{"initdb", "skewbench-pg-", "data/PG_VERSION"},
                        KillCase{"postgres start", "skewbench-pg-", "data/postmaster.pid"},
                        KillCase{"mid-run", "skewbench-run-", "remote-effect.sqlite3"}}) {
    INFO("killed during " << c.phase);
    kill_at(c, shared);
  }
}
