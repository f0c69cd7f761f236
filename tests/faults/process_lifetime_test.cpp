// Every process skewbench starts ends with it, and the service it grades is
// the one it started (docs/faults.md, "Processes skewbench starts"). The real
// skewbench runs scenarios/018-uncertainty.json against a real remote-effect
// started through tests/faults/unruly_service.py, which leaves behind a daemon
// (forked, setsid, its parent gone), a grandchild in a process group of its
// own, or a parent that ignores SIGTERM. skewbench runs beside a sentinel in
// its own process group (both started by one shell): whatever the way the run
// ends, the sentinel lives, and nothing the service made is alive or listening.

#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/process_tree.hpp"
#include "infra/postgres_cluster.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

infra::PostgresCluster& cluster() {
  static infra::PostgresCluster c;
  return c;
}

// One line of the unruly service's --pids file.
struct Noted {
  std::string role;
  pid_t pid = 0;
  int port = 0;
};

std::vector<Noted> read_noted(const fs::path& path) {
  std::vector<Noted> noted;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    Noted n;
    if (fields >> n.role >> n.pid) {
      fields >> n.port;
      noted.push_back(n);
    }
  }
  return noted;
}

bool alive(pid_t pid) {
  const auto entry = process_tree::entry_of(pid);
  return entry && !entry->zombie;
}

bool listening(int port) { return !process_tree::listening_socket_inodes(port).empty(); }

// Waits until `done` holds, up to `timeout`.
template <typename Done>
bool eventually(Done done, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

// The --pids file holds every role named.
bool noted_all(const fs::path& path, const std::vector<std::string>& roles) {
  const auto noted = read_noted(path);
  for (const auto& role : roles) {
    if (std::none_of(noted.begin(), noted.end(), [&](const Noted& n) { return n.role == role; })) return false;
  }
  return true;
}

// What the unruly service made that is still alive, named; empty when nothing is.
std::string left_alive(const std::vector<Noted>& noted) {
  std::string left;
  for (const auto& n : noted) {
    if (alive(n.pid)) left += n.role + " (pid " + std::to_string(n.pid) + ") is alive; ";
    if (n.port != 0 && listening(n.port)) left += n.role + "'s port " + std::to_string(n.port) + " listens; ";
  }
  return left;
}

// Ends, by the pids the unruly service noted, what a test expected to be left
// (or what a failing run left), so that the suite's last check sees only what
// skewbench itself failed to end.
struct EndsWhatIsNoted {
  fs::path path;
  ~EndsWhatIsNoted() {
    for (const auto& n : read_noted(path)) {
      if (alive(n.pid)) ::kill(n.pid, SIGKILL);
    }
  }
};

std::string unruly_command(const std::string& flags, const fs::path& pids) {
  return "python3 " + source_path("tests/faults/unruly_service.py") + " " + flags + " --pids " + pids.string() +
         " -- " + SKEWBENCH_REMOTE_EFFECT_BIN + " --port {port} --state-db {state_db} --dedupe {dedupe}";
}

std::vector<std::string> skewbench_run(const std::string& remote_command, const fs::path& out,
                                       std::vector<std::string> more = {}) {
  std::vector<std::string> args = {SKEWBENCH_CLI_BIN,  "run",          source_path("scenarios/018-uncertainty.json"),
                                   "--remote-command", remote_command, "--database-url",
                                   cluster().url(),    "--out",        out.string(),
                                   "--quiet"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// A command started by one shell beside a sentinel (`sleep`): both in the
// shell's process group, neither the other's descendant.
class BesideSentinel {
 public:
  BesideSentinel(const std::vector<std::string>& command, const fs::path& log) {
    std::vector<std::string> argv = {"/bin/sh", "-c",
                                     "log=$1; shift; sleep 1000 >/dev/null 2>&1 & echo \"sentinel $!\"; "
                                     "\"$@\" >\"$log\" 2>&1 & echo \"command $!\"; wait $!; echo \"exit $?\"",
                                     "sh", log.string()};
    argv.insert(argv.end(), command.begin(), command.end());
    shell_.emplace(argv, Subprocess::Options{.stderr_path = (log.parent_path() / "shell.log").string()});
    sentinel_ = pid_after("sentinel ");
    command_ = pid_after("command ");
    log_ = log;
  }
  ~BesideSentinel() {
    if (sentinel_ > 0 && alive(sentinel_)) ::kill(sentinel_, SIGKILL);
  }
  BesideSentinel(const BesideSentinel&) = delete;
  BesideSentinel& operator=(const BesideSentinel&) = delete;

  pid_t command_pid() const { return command_; }
  bool sentinel_alive() const { return sentinel_ > 0 && alive(sentinel_); }
  bool same_group() const { return ::getpgid(sentinel_) == ::getpgid(command_); }

  // The command's exit code, once it ended (nullopt when not within `timeout`).
  std::optional<int> exit_code(milliseconds timeout) {
    const auto line = shell_->read_line(timeout);
    if (!line || line->rfind("exit ", 0) != 0) return std::nullopt;
    return std::stoi(line->substr(5));
  }
  std::string output() const {
    try {
      return read_file(log_);
    } catch (const std::exception&) {
      return "";
    }
  }

 private:
  pid_t pid_after(const std::string& prefix) {
    const auto line = shell_->read_line(milliseconds(10000));
    REQUIRE(line);
    REQUIRE(line->rfind(prefix, 0) == 0);
    return static_cast<pid_t>(std::stol(line->substr(prefix.size())));
  }

  std::optional<Subprocess> shell_;
  pid_t sentinel_ = -1;
  pid_t command_ = -1;
  fs::path log_;
};

// skewbench run beside a sentinel against remote-effect started through
// unruly_service.py with `flags`, in a folder of its own; what the service
// noted is ended by pid at the end, whatever the test found. (Not under
// unshare: pids noted inside a pid namespace name other processes outside.)
struct UnrulyRun {
  explicit UnrulyRun(const std::string& flags)
      : tmp("skewbench-lifetime"),
        pids(tmp.path() / "pids"),
        cleanup{pids},
        run(skewbench_run(unruly_command(flags, pids), tmp.path() / "out"), tmp.path() / "log") {}

  TempDir tmp;
  fs::path pids;
  EndsWhatIsNoted cleanup;
  BesideSentinel run;
};

}  // namespace

TEST_CASE("after a run that ends with exit 0, neither a setsid daemon nor a grandchild of its own group is left") {
  UnrulyRun unruly("--daemon --grandchild --ignore-term --then exec");
  auto& run = unruly.run;
  const auto& pids = unruly.pids;
  REQUIRE(run.same_group());
  const auto code = run.exit_code(milliseconds(120000));
  INFO(run.output());
  CHECK(code == 0);
  CHECK(run.sentinel_alive());
  const auto noted = read_noted(pids);
  CHECK(noted_all(pids, {"self", "daemon", "grandchild"}));
  CHECK(left_alive(noted) == "");
}

TEST_CASE("a service that forks, calls setsid and exits is ERROR, exit 3, and its daemon is ended") {
  UnrulyRun unruly("--daemon --ignore-term --then exit");
  auto& run = unruly.run;
  const auto& pids = unruly.pids;
  const auto code = run.exit_code(milliseconds(120000));
  INFO(run.output());
  CHECK(code == 3);
  CHECK_THAT(run.output(), ContainsSubstring("exited with code 0 before it was ready"));
  CHECK(run.sentinel_alive());
  CHECK(noted_all(pids, {"self", "daemon"}));
  CHECK(left_alive(read_noted(pids)) == "");
}

TEST_CASE("a run stopped by SIGINT or SIGTERM ends with 130, and what the service left is ended") {
  for (const int signal_number : {SIGINT, SIGTERM}) {
    DYNAMIC_SECTION(strsignal(signal_number)) {
      // The service waits 3 s before it starts: the signal comes while
      // skewbench waits for it to be ready.
      UnrulyRun unruly("--daemon --grandchild --ignore-term --delay-s 3 --then wait");
      auto& run = unruly.run;
      const auto& pids = unruly.pids;
      REQUIRE(eventually([&] { return noted_all(pids, {"self", "daemon", "grandchild"}); }, milliseconds(60000)));
      ::kill(run.command_pid(), signal_number);
      const auto code = run.exit_code(milliseconds(60000));
      INFO(run.output());
      CHECK(code == 130);
      CHECK(run.sentinel_alive());
      CHECK(left_alive(read_noted(pids)) == "");
    }
  }
}

TEST_CASE("after kill -9 of skewbench, the service it started is gone although it ignores SIGTERM") {
  UnrulyRun unruly("--ignore-term --delay-s 3 --then wait");
  auto& run = unruly.run;
  const auto& pids = unruly.pids;
  REQUIRE(eventually([&] { return noted_all(pids, {"self"}); }, milliseconds(60000)));
  ::kill(run.command_pid(), SIGKILL);
  CHECK(run.exit_code(milliseconds(10000)) == 128 + SIGKILL);
  const auto noted = read_noted(pids);
  // "self" is skewbench's direct child: its parent-death signal is SIGKILL.
  CHECK(eventually([&] { return !alive(noted.front().pid); }, milliseconds(5000)));
  CHECK(run.sentinel_alive());
}

TEST_CASE("under unshare --pid --fork --kill-child --mount-proc, kill -9 of skewbench ends everything it started") {
  if (::geteuid() != 0) SKIP("a new pid namespace needs root");
  TempDir tmp("skewbench-lifetime");
  const auto pids = tmp.path() / "pids";
  auto command =
      skewbench_run(unruly_command("--daemon --grandchild --ignore-term --then wait", pids), tmp.path() / "out");
  command.insert(command.begin(), {"unshare", "--pid", "--fork", "--kill-child", "--mount-proc"});
  BesideSentinel run(command, tmp.path() / "log");
  // Inside, pids are the namespace's: the processes are found from outside as
  // descendants of unshare, and the ports as they are.
  if (!eventually([&] { return noted_all(pids, {"self", "daemon", "grandchild", "service"}); }, milliseconds(60000))) {
    const auto code = run.exit_code(milliseconds(1000));
    FAIL("the service did not start; exit " << code.value_or(-1) << ": " << run.output());
  }
  const auto inside = process_tree::descendants_of(run.command_pid());
  REQUIRE(!inside.empty());
  const pid_t skewbench = inside.front().pid;  // unshare's only child
  REQUIRE(process_tree::command_line_of(skewbench).find("skewbench") != std::string::npos);
  ::kill(skewbench, SIGKILL);
  CHECK(run.exit_code(milliseconds(10000)).has_value());
  CHECK(
      eventually([&] { return std::none_of(inside.begin(), inside.end(), [](const auto& e) { return alive(e.pid); }); },
                 milliseconds(5000)));
  for (const auto& n : read_noted(pids)) {
    if (n.port != 0) CHECK_FALSE(listening(n.port));
  }
  CHECK(run.sentinel_alive());
}

TEST_CASE("a --remote-port held by a service skewbench did not start is ERROR, exit 3, naming its owner") {
  TempDir tmp("skewbench-lifetime");
  Subprocess other({SKEWBENCH_REMOTE_EFFECT_BIN, "--port", "0", "--state-db", (tmp.path() / "other.db").string()},
                   Subprocess::Options{});
  const auto ready = other.read_line(milliseconds(10000));
  REQUIRE(ready);
  const int port = nlohmann::json::parse(*ready).at("port").get<int>();
  BesideSentinel run(skewbench_run("sleep 600", tmp.path() / "out", {"--remote-port", std::to_string(port)}),
                     tmp.path() / "log");
  const auto code = run.exit_code(milliseconds(120000));
  INFO(run.output());
  CHECK(code == 3);
  CHECK_THAT(run.output(),
             ContainsSubstring("port " + std::to_string(port) +
                               ", where the service should listen, is "
                               "held by pid " +
                               std::to_string(other.pid()) + " (" + SKEWBENCH_REMOTE_EFFECT_BIN + " --port 0"));
  CHECK_THAT(run.output(), ContainsSubstring("which skewbench did not start"));
  const auto summary = read_json(tmp.path() / "out" / "summary.json");
  CHECK(summary["scenarios"][0]["verdict"] == "ERROR");
  CHECK(run.sentinel_alive());
  CHECK(other.running());
}
