// Faults the driver did not plan, at the moment they hurt most: the remote
// hung (SIGSTOP) or killed (SIGKILL) while a POST is in flight. The request is
// written into a socket the stopped process never reads, so "the request
// never arrived" is deterministic, not a race.

#include <csignal>
#include <future>
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

struct Remote {
  TempDir dir{"skewbench-faults"};
  remote_effect::RemoteEffectProcess process{[this] {
    remote_effect::LaunchOptions o;
    o.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
    o.state_db = dir.path() / "remote.sqlite3";
    o.stderr_path = (dir.path() / "remote.log").string();
    return o;
  }()};

  void pause() { ::kill(process.pid(), SIGSTOP); }
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

// Sends the POST to a stopped remote and kills the remote while the request
// waits, unread, in its socket. Returns what the client made of it.
std::string post_into_killed_remote(Remote& remote, infra::HttpRemote& client, const infra::PostEffectRequest& r) {
  remote.pause();
  auto sent = std::async(std::launch::async, [&] {
    try {
      const auto ex = client.post_effect(r);
      return std::string("returned ") + infra::to_string(ex.outcome);
    } catch (const InfrastructureError& e) {
      return std::string("threw ") + e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  remote.process.kill_hard();
  return sent.get();
}

// Forwards to the real client, but kills the remote during the POST with the
// given index (0 = the scenario's first POST), then starts it again on the
// same state file, so that later requests find a live remote.
class KillDuringPost final : public infra::RemoteApi {
 public:
  KillDuringPost(Remote& remote, int post_index) : remote_(remote), post_index_(post_index) {}

  infra::HttpExchange post_effect(const infra::PostEffectRequest& r) override {
    if (posts_++ != post_index_) return client_->post_effect(r);
    std::string outcome = post_into_killed_remote(remote_, *client_, r);
    remote_.process.restart();  // from this thread, which outlives the service
    client_ = std::make_unique<infra::HttpRemote>(remote_.process.base_url());
    if (outcome.rfind("threw ", 0) == 0) throw InfrastructureError(outcome.substr(6));
    infra::HttpExchange ex;
    ex.outcome = infra::TransportOutcome::AckUnknown;
    return ex;
  }
  infra::HttpExchange status(const std::string& id, std::int64_t t) override { return client_->status(id, t); }
  nlohmann::json health() override { return client_->health(); }
  infra::HttpExchange gc(const std::string& id, std::int64_t t) override { return client_->gc(id, t); }

 private:
  Remote& remote_;
  int post_index_;
  int posts_ = 0;
  std::unique_ptr<infra::HttpRemote> client_ = std::make_unique<infra::HttpRemote>(remote_.process.base_url());
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
                      ContainsSubstring("read timed out after 1 s"));
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
  CHECK_THAT(outcome, ContainsSubstring("without a response"));
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
