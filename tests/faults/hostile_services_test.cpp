// Bounded exchanges (docs/faults.md, "Bounded exchanges"), held against
// tests/faults/hostile_http.py: a service on loopback that trickles its answers
// one byte a second, answers 200 MB, nests its /health two million arrays
// deep, or never answers. The real skewbench runs against it, directly
// (--remote-url), through the fault proxy (--ack-loss proxy), and as a
// service it starts itself (--remote-command), and each run is timed and its
// peak memory read from the kernel (wait4).

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/files.hpp"
#include "common/subprocess.hpp"
#include "infra/postgres_cluster.hpp"
#include "remote_effect/launcher.hpp"
#include "support/cli.hpp"

extern char** environ;

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

// A run held by a stalled or trickling service ends at its 5 s --http-timeout
// (or the 10 s time to get ready): these bounds, generous for a busy
// machine, are still far below what waiting on the service would take (a
// trickled answer of one byte a second lasts minutes).
constexpr double kEndsByDeadline_s = 30;
constexpr double kEndsByReadyDeadline_s = 45;

const std::string kHostile = source_path("tests/faults/hostile_http.py");
const std::string kScenario = source_path("scenarios/018-unsafe-node-local.json");

// hostile_http.py in one mode, started by skewbench on a port of its
// choosing, which the command writes to `port_file` first.
std::string started_hostile(const std::string& mode, const fs::path& port_file) {
  return "sh -c 'echo {port} > " + port_file.string() + "; exec python3 " + kHostile + " --mode " + mode +
         " --port {port}'";
}

// The port written to `port_file`, once it is (10 s at most); 0 before.
int port_in(const fs::path& port_file) {
  const auto until = Clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::ifstream in(port_file);
    int port = 0;
    if ((in >> port) && port > 0) return port;
    if (Clock::now() > until) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

infra::PostgresCluster& cluster() {
  static infra::PostgresCluster c;
  return c;
}

// hostile_http.py in one mode, on a free port; its stdout says what it read.
class HostileServer {
 public:
  explicit HostileServer(std::vector<std::string> args) {
    args.insert(args.begin(), {"python3", kHostile});
    process_.emplace(args, Subprocess::Options{});
    const auto line = process_->read_line(std::chrono::seconds(10));
    REQUIRE(line);
    port_ = json::parse(*line).at("port").get<int>();
  }
  ~HostileServer() {
    const auto pid = process_->pid();
    process_.reset();  // SIGTERM, then SIGKILL; reaped
    CHECK(::kill(pid, 0) == -1);
  }
  HostileServer(const HostileServer&) = delete;
  HostileServer& operator=(const HostileServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  // Waits until the server has read a request whose line holds `what`.
  void wait_for_request(const std::string& what) {
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < until) {
      const auto line = process_->read_line(std::chrono::milliseconds(200));
      if (line && line->find(what) != std::string::npos) return;
    }
    FAIL("the hostile server never read a request holding " << what);
  }

 private:
  std::optional<Subprocess> process_;
  int port_ = 0;
};

// How one skewbench run ended, as the kernel saw it.
struct Ended {
  int exit_code = -1;  // 128 + signal when a signal ended it
  double seconds = 0;
  long max_rss_kb = 0;
  std::string output;  // stdout and stderr
};

// The real skewbench, started with posix_spawn so that wait4 gives its peak
// resident memory. `meanwhile(pid)` runs while it does (signals it, say).
Ended run_measured(std::vector<std::string> args, const std::function<void(pid_t)>& meanwhile = nullptr) {
  TempDir log_dir("skewbench-hostile-log");
  const auto log = (log_dir.path() / "output").string();
  args.insert(args.begin(), SKEWBENCH_CLI_BIN);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const auto started = Clock::now();
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  if (meanwhile) meanwhile(pid);
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  Ended ended;
  ended.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  ended.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  ended.max_rss_kb = usage.ru_maxrss;
  ended.output = read_file(log);
  return ended;
}

// skewbench run of the #018 unsafe scenario against `remote_url`.
std::vector<std::string> run_args(const std::string& remote_url, const fs::path& out,
                                  std::vector<std::string> more = {}, const std::string& http_timeout_s = "5") {
  std::vector<std::string> args = {"run",           kScenario, "--remote-url", remote_url,       "--database-url",
                                   cluster().url(), "--out",   out.string(),   "--http-timeout", http_timeout_s};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// The one scenario's error in summary.json.
std::string scenario_error(const fs::path& out) {
  const auto summary = read_json(out / "summary.json");
  REQUIRE(summary["scenarios"].size() == 1);
  const auto& row = summary["scenarios"][0];
  CHECK(row["verdict"] == "ERROR");
  return row.value("error", std::string());
}

std::uintmax_t folder_bytes(const fs::path& dir) {
  std::uintmax_t total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

// True while something listens on 127.0.0.1:port.
bool listening(int port) {
  for (const auto* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    char hex[8];
    std::snprintf(hex, sizeof hex, "%04X", port);
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (state == "0A" && local.size() > 5 && local.substr(local.size() - 4) == hex) return true;
    }
  }
  return false;
}

// What run_measured does meanwhile in the SIGINT tests: once `ready()`
// returns, one more second, then SIGINT, noting when in `signalled`.
std::function<void(pid_t)> sigint_once(std::function<void()> ready, std::optional<Clock::time_point>& signalled) {
  return [ready = std::move(ready), &signalled](pid_t pid) {
    ready();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    signalled = Clock::now();
    ::kill(pid, SIGINT);
  };
}

// Seconds from `signalled` to now.
double seconds_since(const std::optional<Clock::time_point>& signalled) {
  return std::chrono::duration<double>(Clock::now() - *signalled).count();
}

}  // namespace

TEST_CASE("an answer trickled one byte a second ends the run at --http-timeout, exit 3, naming the exchange") {
  HostileServer server({"--mode", "trickle", "--on", "/effects"});
  TempDir tmp("skewbench-hostile");
  const auto ended = run_measured(run_args(server.url(), tmp.path() / "out"));
  INFO(ended.output);
  CHECK(ended.exit_code == 3);
  CHECK(ended.seconds < kEndsByDeadline_s);
  const auto error = scenario_error(tmp.path() / "out");
  CHECK_THAT(error, ContainsSubstring("step 1 (post_effect)"));
  CHECK_THAT(error, ContainsSubstring("POST " + server.url() + "/effects"));
  CHECK_THAT(error, ContainsSubstring("timed out after 5 s"));
  CHECK_THAT(error, ContainsSubstring("no answer head had arrived"));
}

TEST_CASE("a service that answers bytes that are not HTTP is named with those bytes, never as a closed connection") {
  HostileServer server({"--mode", "garbage"});
  TempDir tmp("skewbench-hostile");
  const auto ended = run_measured(run_args(server.url(), tmp.path() / "out"));
  INFO(ended.output);
  CHECK(ended.exit_code == 3);
  CHECK(ended.seconds < kEndsByDeadline_s);
  CHECK_THAT(ended.output, ContainsSubstring("or it sent bytes that are not HTTP"));
  CHECK_THAT(ended.output, ContainsSubstring("answered with bytes that are not HTTP: \"\\x00\\x7fnot http"));
  CHECK_THAT(ended.output, !ContainsSubstring("closed without a response"));
}

TEST_CASE("an answer that never starts ends the run at --http-timeout, exit 3") {
  HostileServer server({"--mode", "silent", "--on", "/effects"});
  TempDir tmp("skewbench-hostile");
  const auto ended = run_measured(run_args(server.url(), tmp.path() / "out"));
  INFO(ended.output);
  CHECK(ended.exit_code == 3);
  CHECK(ended.seconds < kEndsByDeadline_s);
  CHECK_THAT(scenario_error(tmp.path() / "out"), ContainsSubstring("timed out after 5 s"));
}

TEST_CASE("SIGINT during a trickled answer ends the run at once with 130") {
  HostileServer server({"--mode", "trickle", "--on", "/effects"});
  TempDir tmp("skewbench-hostile");
  std::optional<Clock::time_point> signalled;
  const auto ended = run_measured(run_args(server.url(), tmp.path() / "out", {}, "60"),
                                  sigint_once([&] { server.wait_for_request("POST /effects"); }, signalled));
  INFO(ended.output);
  REQUIRE(signalled);
  CHECK(ended.exit_code == 130);
  CHECK(seconds_since(signalled) < 2);
  CHECK_THAT(ended.output, ContainsSubstring("interrupted"));
}

TEST_CASE("a 200 MB answer is an ERROR naming --max-answer-bytes; skewbench stays small and so does its evidence") {
  HostileServer server({"--mode", "huge", "--on", "/effects"});
  for (const std::vector<std::string> how : {std::vector<std::string>{}, {"--ack-loss", "proxy"}}) {
    TempDir tmp("skewbench-hostile");
    const auto out = tmp.path() / "out";
    const auto ended = run_measured(run_args(server.url(), out, how));
    INFO((how.empty() ? "direct" : "through the fault proxy") << "\n" << ended.output);
    CHECK(ended.exit_code == 3);
    CHECK(ended.max_rss_kb < 100 * 1024);
    CHECK(folder_bytes(out) < 1024 * 1024);
    const auto error = scenario_error(out);
    CHECK_THAT(error, ContainsSubstring("step 1 (post_effect)"));
    CHECK_THAT(error, ContainsSubstring("larger than 1048576 bytes (--max-answer-bytes)"));
    if (!how.empty()) CHECK_THAT(error, ContainsSubstring("the fault proxy got no usable answer from the service"));
  }
}

TEST_CASE("a trickled answer through the fault proxy ends at --http-timeout: the proxy never holds the run") {
  HostileServer server({"--mode", "trickle", "--on", "/effects"});
  TempDir tmp("skewbench-hostile");
  const auto ended = run_measured(run_args(server.url(), tmp.path() / "out", {"--ack-loss", "proxy"}));
  INFO(ended.output);
  CHECK(ended.exit_code == 3);
  CHECK(ended.seconds < kEndsByDeadline_s);
  // The driver's deadline or the proxy's, whichever fires first: both are the 5 s.
  CHECK_THAT(scenario_error(tmp.path() / "out"), ContainsSubstring("5 s (--http-timeout"));
}

TEST_CASE("a /health nested deep is refused by the bounded parser, never a crash") {
  // Two million deep is 4 MB: the size limit refuses it. 100 000 deep is
  // 200 kB: under the size limit, so the parser's depth bound refuses it.
  for (const auto* depth : {"2000000", "100000"}) {
    HostileServer server({"--mode", "deep", "--on", "/health", "--depth", depth});
    TempDir tmp("skewbench-hostile");
    const auto ended = run_measured(run_args(server.url(), tmp.path() / "out"));
    INFO(depth << " deep\n" << ended.output);
    CHECK(ended.exit_code == 3);
    CHECK_THAT(ended.output, ContainsSubstring("GET " + server.url() + "/health"));
    CHECK_THAT(ended.output,
               ContainsSubstring(std::string(depth) == "100000" ? "nested deeper than 64" : "--max-answer-bytes"));
  }
}

TEST_CASE("a started service whose /health is deep, trickled or silent fails its start with the reason") {
  struct Case {
    std::string mode, reason;
  };
  for (const auto& c :
       {Case{"deep", "its body is larger than 1048576 bytes"}, Case{"trickle", "no whole answer within 2000 ms"},
        Case{"garbage",
             "GET /health: no HTTP answer could be read (a GET /health sent again on a new connection was "
             "answered with bytes that are not HTTP: \"\\x00\\x7fnot http <b>at all</b>"}}) {
    TempDir tmp("skewbench-hostile");
    // The port is skewbench's choice: one taken before the service binds it is chosen again.
    const auto command = started_hostile(c.mode, tmp.path() / "port");
    const auto ended = run_measured({"run", kScenario, "--remote-command", command, "--database-url", cluster().url(),
                                     "--out", (tmp.path() / "out").string()});
    INFO(c.mode << "\n" << ended.output);
    const int port = port_in(tmp.path() / "port");
    REQUIRE(port > 0);
    CHECK(ended.exit_code == 3);
    CHECK(ended.seconds < kEndsByReadyDeadline_s);
    CHECK_THAT(ended.output, ContainsSubstring("not ready within 10000 ms"));
    CHECK_THAT(ended.output, ContainsSubstring(c.reason));
    // The service's log is kept in the evidence, which says where.
    const auto logs = tmp.path() / "out" / "logs";
    CHECK_THAT(ended.output, ContainsSubstring("logs are kept in " + logs.string()));
    CHECK_THAT(read_file(logs / "service.log"), ContainsSubstring("request GET /health"));
    CHECK(run_skewbench({"verify", (tmp.path() / "out").string()}).exit_code == 0);
    CHECK_FALSE(listening(port));  // the service skewbench started is gone with it
  }
}

// Between skewbench's choice of a port and the service's bind, another
// process takes the port (the test, here): the service exits, and skewbench
// starts it again on another port, says so, and the run goes on.
TEST_CASE("a service whose port another process takes before it binds it is started again on another port") {
  TempDir tmp("skewbench-port-taken");
  const auto command = "sh " + source_path("tests/faults/port_taken_once.sh") + " " + tmp.path().string() + " {port} " +
                       SKEWBENCH_REMOTE_EFFECT_BIN + " --port {port} --state-db {state_db} --dedupe {dedupe}";
  int holder = -1;
  int taken = 0;
  const auto ended = run_measured({"run", kScenario, "--remote-command", command, "--database-url", cluster().url(),
                                   "--out", (tmp.path() / "out").string()},
                                  [&](pid_t) {
                                    taken = port_in(tmp.path() / "asked");
                                    holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                                    sockaddr_in address{};
                                    address.sin_family = AF_INET;
                                    address.sin_port = htons(static_cast<std::uint16_t>(taken));
                                    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                                    if (::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
                                      ::listen(holder, 1);
                                    }
                                    write_file_atomically(tmp.path() / "held", "");
                                  });
  INFO(ended.output);
  REQUIRE(taken > 0);
  CHECK(ended.exit_code == 0);
  CHECK_THAT(ended.output, ContainsSubstring("could not have the port skewbench chose, and was started on another: "
                                             "port " +
                                             std::to_string(taken)));
  CHECK_THAT(ended.output, ContainsSubstring("in use by another process"));
  const auto summary = read_json(tmp.path() / "out" / "summary.json");
  INFO(summary.dump(2));
  bool warned = false;
  for (const auto& warning : summary["warnings"]) {
    warned = warned || warning.get<std::string>().find("port " + std::to_string(taken)) != std::string::npos;
  }
  CHECK(warned);
  CHECK(run_skewbench({"verify", (tmp.path() / "out").string()}).exit_code == 0);
  if (holder >= 0) ::close(holder);
}

TEST_CASE("SIGINT while a started service is not ready yet ends the run at once with 130") {
  TempDir tmp("skewbench-hostile");
  const auto command = started_hostile("silent", tmp.path() / "port");
  std::optional<Clock::time_point> signalled;
  int port = 0;
  const auto ended = run_measured({"run", kScenario, "--remote-command", command, "--database-url", cluster().url(),
                                   "--out", (tmp.path() / "out").string()},
                                  sigint_once(
                                      [&] {
                                        port = port_in(tmp.path() / "port");
                                        const auto until = Clock::now() + std::chrono::seconds(10);
                                        while (!listening(port) && Clock::now() < until) {
                                          std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                        }
                                      },
                                      signalled));
  INFO(ended.output);
  REQUIRE(port > 0);
  REQUIRE(signalled);
  CHECK(ended.exit_code == 130);
  CHECK(seconds_since(signalled) < 2);
  CHECK_FALSE(listening(port));
}

TEST_CASE("SIGINT during a sweep's trickled answers ends it at once with 130 and its --resume line") {
  HostileServer server({"--mode", "trickle", "--on", "/effects"});
  TempDir tmp("skewbench-hostile");
  const auto out = tmp.path() / "sweep";
  std::optional<Clock::time_point> signalled;
  const auto ended =
      run_measured({"sweep", source_path("scenarios/sweeps/018-offset-by-epsilon.json"), "--remote-url", server.url(),
                    "--database-url", cluster().url(), "--out", out.string(), "--http-timeout", "60", "--jobs", "2"},
                   sigint_once([&] { server.wait_for_request("POST /effects"); }, signalled));
  INFO(ended.output);
  REQUIRE(signalled);
  CHECK(ended.exit_code == 130);
  CHECK(seconds_since(signalled) < 2);
  CHECK_THAT(ended.output, ContainsSubstring("--out " + out.string() + " --resume"));
  const auto sweep = read_json(out / "sweep.json");
  CHECK(sweep["complete"] == false);
}
