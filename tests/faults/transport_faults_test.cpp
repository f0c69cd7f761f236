// Faults the driver did not plan, at the moment they hurt most: the remote
// hung (SIGSTOP) or killed (SIGKILL) while a POST is in flight. The request is
// written into a socket the stopped process never reads (the test waits until
// every thread has stopped, then until the bytes sit unread in the socket), so
// "the request never arrived" is deterministic, not a race.

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/errors.hpp"
#include "infra/http_remote.hpp"
#include "infra/pg_outbox.hpp"
#include "infra/postgres_cluster.hpp"
#include "remote_effect/launcher.hpp"
#include "runner/runner.hpp"
#include "scenario/scenario.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;

namespace {

// Whether every thread of `pid` is in the stopped state ('T' in /proc/PID/task/TID/stat).
bool all_threads_stopped(pid_t pid) {
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'T') return false;
  }
  return !ec;
}

struct Remote {
  TempDir dir{"skewbench-faults"};
  remote_effect::RemoteEffectProcess process{[this] {
    remote_effect::LaunchOptions o;
    o.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
    o.state_db = dir.path() / "remote.sqlite3";
    o.stderr_path = (dir.path() / "remote.log").string();
    return o;
  }()};

  // Returns once every thread of the process has stopped: kill() only makes
  // the signal pending, and a thread still running could read a request.
  void pause() {
    ::kill(process.pid(), SIGSTOP);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!all_threads_stopped(process.pid()) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    REQUIRE(all_threads_stopped(process.pid()));
  }
  void resume() { ::kill(process.pid(), SIGCONT); }
};

infra::PostEffectRequest post(const std::string& operation_id, bool drop_ack) {
  return {.operation_id = operation_id,
          .idempotency_key = operation_id + ".key",
          .ttl_s = 60,
          .logical_time_s = 100,
          .drop_ack = drop_ack,
          .body = "{}",
          .expected_temporal_epoch = std::nullopt};
}

// Whether a TCP socket bound to local `port` holds bytes its process has not
// read (the rx_queue column of /proc/net/tcp and tcp6).
bool unread_bytes_on_port(int port) {
  char port_hex[8];
  std::snprintf(port_hex, sizeof port_hex, "%04X", static_cast<unsigned>(port));
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote_address, state, queues;
      fields >> slot >> local >> remote_address >> state >> queues;
      const auto colon = local.rfind(':');
      const auto queue_colon = queues.find(':');
      if (colon == std::string::npos || queue_colon == std::string::npos) continue;
      if (local.substr(colon + 1) != port_hex) continue;
      if (std::stoul(queues.substr(queue_colon + 1), nullptr, 16) > 0) return true;
    }
  }
  return false;
}

// Sends the POST to a stopped remote and kills the remote once the request
// waits, unread, in its socket. Returns what the client made of it.
std::string post_into_killed_remote(Remote& remote, infra::HttpRemote& client, const infra::PostEffectRequest& r) {
  remote.pause();
  auto sent = std::async(std::launch::async, [&] {
    try {
      const auto ex = client.post_effect(r);
      return "returned " + std::string(infra::to_string(ex.transport_outcome()));
    } catch (const InfrastructureError& e) {
      return std::string("threw ") + e.what();
    }
  });
  // Not a fixed sleep: on a loaded machine the client may not have written
  // the request yet, and a kill before it arrives is another fault.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!unread_bytes_on_port(remote.process.port()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(unread_bytes_on_port(remote.process.port()));
  remote.process.kill_hard();
  return sent.get();
}

// Forwards to the real client, but kills the remote during the POST with the
// given index (0 = the scenario's first POST), then starts it again on the
// same state file, so that later requests find a live remote.
class KillDuringPost final : public infra::ForwardingRemote {
 public:
  KillDuringPost(Remote& remote, int post_index)
      : KillDuringPost(remote, post_index, std::make_unique<infra::HttpRemote>(remote.process.base_url())) {}

  infra::PostExchange post_effect(const infra::PostEffectRequest& r) override {
    if (posts_++ != post_index_) return client_->post_effect(r);
    std::string outcome = post_into_killed_remote(remote_, *client_, r);
    remote_.process.restart();  // from this thread, which outlives the service
    client_ = std::make_unique<infra::HttpRemote>(remote_.process.base_url());
    forward_to(*client_);
    if (outcome.rfind("threw ", 0) == 0) throw InfrastructureError(outcome.substr(6));
    return infra::read_post({}, infra::TransportOutcome::AckUnknown, "POST /effects");
  }

 private:
  KillDuringPost(Remote& remote, int post_index, std::unique_ptr<infra::HttpRemote> client)
      : ForwardingRemote(*client), remote_(remote), post_index_(post_index), client_(std::move(client)) {}

  Remote& remote_;
  int post_index_;
  int posts_ = 0;
  std::unique_ptr<infra::HttpRemote> client_;
};

runner::ScenarioResult run_with_kill(const std::string& scenario_file, int post_index) {
  static infra::PostgresCluster cluster;
  Remote remote;
  KillDuringPost api(remote, post_index);
  const auto run_id = runner::new_run_id();
  infra::PgOutbox outbox(cluster.url(), run_id);
  runner::ScenarioRunner r(api, outbox, {.run_id = run_id});
  return r.run(scenario::load_scenario_file(source_path("scenarios/" + scenario_file)));
}

}  // namespace

TEST_CASE("a POST to a hung remote fails with the timeout that fired, not as ACK_UNKNOWN") {
  Remote remote;
  infra::HttpRemote client(remote.process.base_url(), {.timeout_s = 1});
  client.health();  // the keep-alive connection is open before the hang
  remote.pause();
  for (const bool drop_ack : {false, true}) {
    const auto started = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(client.post_effect(post("op-hung-" + std::to_string(drop_ack), drop_ack)),
                      ContainsSubstring("timed out after 1 s"));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
  }
  CHECK_THROWS_WITH(client.status("op-hung", 100), ContainsSubstring("timed out after 1 s"));
  remote.resume();
}

TEST_CASE("a POST not meant to drop its answer that the remote's death cuts off is an error") {
  Remote remote;
  infra::HttpRemote client(remote.process.base_url(), {.timeout_s = 10});
  client.health();
  const auto outcome = post_into_killed_remote(remote, client, post("op-killed", false));
  CHECK_THAT(outcome, ContainsSubstring("threw "));
  CHECK_THAT(outcome, ContainsSubstring("without a whole HTTP answer"));
  CHECK_THAT(outcome, ContainsSubstring("not meant to lose its answer"));
}

TEST_CASE("a drop_ack POST that never reached a remote killed and restarted is ERROR, not a verdict") {
  // The first POST of each #018 scenario drops its acknowledgement on purpose;
  // here it never arrives. Read as ACK_UNKNOWN, CONFLICT became SAFE.
  for (const auto* file : {"018-unsafe-node-local.json", "018-declared-authority.json"}) {
    const auto r = run_with_kill(file, 0);
    INFO(file << ": " << r.error.value_or("no error"));
    CHECK(r.verdict == runner::Verdict::Error);
    REQUIRE(r.error);
    CHECK_THAT(*r.error, ContainsSubstring("request log"));
    CHECK_THAT(*r.error, ContainsSubstring("restarted"));
    CHECK_FALSE(r.pass);
  }
}

TEST_CASE("a replay that the remote's death cuts off is ERROR, not HELD") {
  // The second POST is node B's replay, sent without drop_ack.
  const auto r = run_with_kill("018-unsafe-node-local.json", 1);
  INFO(r.error.value_or("no error"));
  CHECK(r.verdict == runner::Verdict::Error);
  REQUIRE(r.error);
  CHECK_THAT(*r.error, ContainsSubstring("not meant to lose its answer"));
}
