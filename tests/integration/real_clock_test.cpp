// Real clocks (docs/real-clocks.md): a service that reads its own wall clock,
// set by skewbench under libfaketime, and the fault proxy that loses an
// acknowledgement for a service with no X-Drop-Ack. Every check reads what
// the service itself answered, or what skewbench wrote of a real run.

#include <chrono>
#include <set>
#include <thread>
#include <utility>

#include <httplib.h>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "infra/fault_proxy.hpp"
#include "infra/http_remote.hpp"
#include "infra/process_clock.hpp"
#include "infra/remote_decorators.hpp"
#include "remote_effect/launcher.hpp"
#include "support/cli.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace re = skewbench::remote_effect;

namespace {

// remote-effect --clock system under libfaketime, on its own state file.
struct ClockedService {
  ClockedService()
      : dir("real-clock"),
        clock(dir.path() / "remote.faketime", infra::find_libfaketime(std::nullopt), 1'000),
        process(options(dir, clock)) {}

  static re::LaunchOptions options(const TempDir& dir, const infra::ProcessClock& clock) {
    re::LaunchOptions launch;
    launch.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
    launch.state_db = dir.path() / "remote.db";
    launch.stderr_path = (dir.path() / "remote-effect.log").string();
    launch.clock = re::ClockSource::system;
    launch.env = clock.environment();
    return launch;
  }

  httplib::Client client() const {
    httplib::Client client(process.base_url());
    client.set_tcp_nodelay(true);
    client.set_read_timeout(std::chrono::seconds(10));
    return client;
  }

  TempDir dir;
  infra::ProcessClock clock;
  re::RemoteEffectProcess process;
};

json get_json(httplib::Client& client, const std::string& path, const httplib::Headers& headers = {}) {
  auto res = client.Get(path, headers);
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return json::parse(res->body);
}

httplib::Headers post_headers(const std::string& operation, const std::string& key) {
  return {{"X-Operation-Id", operation}, {"Idempotency-Key", key}, {"X-Idempotency-TTL", "60"}};
}

// A run of skewbench over the shipped scenarios, and what it wrote.
struct Run {
  CommandResult result;
  json summary;
};

Run run_series(const TempDir& out, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"run", source_path("scenarios"), "--out", out.path().string(), "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto result = run_skewbench(args);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  return {result, read_json(out.path() / "summary.json")};
}

}  // namespace

TEST_CASE("remote-effect --clock system judges every request by its own clock, which the timestamp file sets") {
  ClockedService service;
  auto client = service.client();
  const auto health = get_json(client, "/health");
  CHECK(health["clock"] == "system");
  CHECK(health["wall_clock_s"] == 1'000);

  // A time on the wire is ignored: the key is created at the process's 1000.
  auto headers = post_headers("op-1", "key-1");
  headers.emplace("X-Logical-Time", "5");
  auto posted = client.Post("/effects", headers, "{}", "application/json");
  REQUIRE(posted);
  REQUIRE(posted->status == 200);
  const auto answer = json::parse(posted->body);
  CHECK(answer["evaluation_time"] == 1'000);
  CHECK(answer["idempotency_records"][0]["expires_at"] == 1'060);

  service.clock.set(1'059);
  CHECK(get_json(client, "/status/op-1")["active_idempotency_records"] == 1);
  service.clock.set(1'060);  // exactly at expiry: expired
  const auto expired = get_json(client, "/status/op-1");
  CHECK(expired["evaluation_time"] == 1'060);
  CHECK(expired["active_idempotency_records"] == 0);
  // A step back of the wall clock: the same record is active again.
  service.clock.set(1'000);
  CHECK(get_json(client, "/status/op-1")["active_idempotency_records"] == 1);
  CHECK(get_json(client, "/health")["wall_clock_s"] == 1'000);

  // The GC collects by the process's clock too.
  service.clock.set(1'061);
  auto gc = client.Post("/maintenance/gc/op-1", httplib::Headers{{"X-Logical-Time", "0"}}, "{}", "application/json");
  REQUIRE(gc);
  REQUIRE(gc->status == 200);
  CHECK(json::parse(gc->body)["logical_time"] == 1'061);
  CHECK(json::parse(gc->body)["removed_records"] == 1);
}

TEST_CASE("A process clock refuses a time libfaketime cannot be given, naming it") {
  TempDir dir("real-clock");
  infra::ProcessClock clock(dir.path() / "clock", infra::find_libfaketime(std::nullopt));
  CHECK(read_file(dir.path() / "clock") == "0\n");
  CHECK_THROWS_WITH(clock.set(-1), ContainsSubstring("not -1"));
  CHECK_THROWS_WITH(clock.set(infra::kMaxProcessClockS + 1), ContainsSubstring("9999-12-31"));
  clock.set(4'000'070);
  CHECK(read_file(dir.path() / "clock") == "4000070\n");
  CHECK(clock.now_s() == 4'000'070);
}

TEST_CASE("The series in --clock-mode real gives logical mode's verdicts, counts, published scores and digest") {
  TempDir logical_out("real-clock-logical");
  TempDir real_out("real-clock-real");
  const auto logical = run_series(logical_out, {});
  const auto real = run_series(real_out, {"--clock-mode", "real"});

  CHECK(real.summary["core_digest"] == logical.summary["core_digest"]);
  REQUIRE(real.summary["scenarios"].size() == 16);
  REQUIRE(real.summary["scenarios"].size() == logical.summary["scenarios"].size());
  for (std::size_t i = 0; i < real.summary["scenarios"].size(); ++i) {
    auto r = real.summary["scenarios"][i];
    auto l = logical.summary["scenarios"][i];
    INFO(r.dump() << "\n" << l.dump());
    CHECK(r["pass"] == true);
    for (const char* field : {"id", "verdict", "decision", "temporal_state", "effect_count", "post_requests",
                              "final_status", "policy", "core_digest"}) {
      CHECK(r[field] == l[field]);
    }
  }
  for (const char* file : {"result.json", "result-015.json", "result-016.json", "result-017.json", "result-019.json"}) {
    INFO(file);
    const auto real_result = read_json(real_out.path() / file);
    const auto logical_result = read_json(logical_out.path() / file);
    CHECK(real_result["score"] == logical_result["score"]);
    CHECK(real_result["score"] == real_result["max_score"]);
    CHECK(real_result["core_digest"] == logical_result["core_digest"]);
  }

  // The requests carried no time; the service judged each at the clock set for it.
  const auto evidence = read_json(real_out.path() / "scenarios" / "018-unsafe-node-local.json");
  CHECK(evidence["environment"]["clock"]["mode"] == "real");
  CHECK(evidence["environment"]["clock"]["ack_loss"] == "proxy");
  std::set<std::int64_t> judged;
  int drops_by_proxy = 0;
  for (const auto& step : evidence["timeline"]) {
    for (const auto& exchange : step["exchanges"]) {
      INFO(exchange.dump());
      CHECK_FALSE(exchange["request"]["headers"].contains("X-Logical-Time"));
      CHECK_FALSE(exchange["request"]["headers"].contains("X-Drop-Ack"));
      const auto& harness = exchange["harness"];
      REQUIRE(harness.is_object());
      if (!harness["judged_at_s"].is_null()) {
        CHECK(harness["judged_at_s"] == harness["process_clock_s"]);
        judged.insert(harness["judged_at_s"].get<std::int64_t>());
      }
      if (exchange["transport_outcome"] == "ACK_UNKNOWN") ++drops_by_proxy;
    }
  }
  CHECK(drops_by_proxy == 1);
  // Node A at T0 and T0+50, node B at T0+70 (its observation and its replay).
  CHECK(judged == std::set<std::int64_t>{4'000'000, 4'000'050, 4'000'070});
}

TEST_CASE("A service that does not read the clock skewbench drives is an infrastructure error, not a verdict") {
  // The service of --remote-command drops libfaketime: it reads the machine's clock.
  TempDir out("real-clock-wrong");
  const std::string command = std::string("-u LD_PRELOAD ") + SKEWBENCH_REMOTE_EFFECT_BIN +
                              " --port {port} --state-db {state_db} --dedupe {dedupe} --clock system";
  const auto r = run_skewbench({"run", source_path("scenarios/018-unsafe-node-local.json"), "--out",
                                out.path().string(), "--clock-mode", "real", "--remote-command", command});
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, ContainsSubstring("does not read the clock skewbench drives"));
  // Said of the service that was started, as soon as it is: the process that
  // listens on its port has not mapped libfaketime (docs/real-clocks.md).
  CHECK_THAT(r.output, ContainsSubstring("has not loaded libfaketime.so.1"));
  CHECK_THAT(r.output, !ContainsSubstring("remote-effect reads its wall clock"));
  CHECK_THAT(r.output, !ContainsSubstring("on a process clock skewbench drives"));
  CHECK(read_json(out.path() / "summary.json")["scenarios"][0]["verdict"] == "ERROR");
}

TEST_CASE("The fault proxy's drop_ack leaves the driver ACK_UNKNOWN and the service one effect, as X-Drop-Ack does") {
  TempDir dir("fault-proxy");
  re::LaunchOptions launch;
  launch.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
  launch.state_db = dir.path() / "remote.db";
  launch.stderr_path = (dir.path() / "remote-effect.log").string();
  re::RemoteEffectProcess service(launch);
  infra::FaultProxy proxy(service.base_url(), {.timeout_s = 10});

  const auto deliver = [](infra::RemoteApi& remote, const std::string& operation) {
    return remote.post_effect({.operation_id = operation,
                               .idempotency_key = operation + ".key",
                               .ttl_s = 60,
                               .logical_time_s = 100,
                               .drop_ack = true,
                               .body = "{}",
                               .expected_temporal_epoch = std::nullopt});
  };
  infra::HttpRemote direct(service.base_url());
  infra::HttpRemote through_proxy(proxy.base_url(), {},
                                  {.sends_logical_time = true, .ack_loss = infra::AckLoss::proxy});
  infra::ProxiedRemote proxied(through_proxy, proxy.shared_counts());

  const auto by_header = deliver(direct, "op-header");
  const auto by_proxy = deliver(proxied, "op-proxy");
  CHECK(by_header.transport_outcome() == infra::TransportOutcome::AckUnknown);
  CHECK(by_proxy.transport_outcome() == infra::TransportOutcome::AckUnknown);
  CHECK_FALSE(by_proxy.request["headers"].contains("X-Drop-Ack"));

  // What the service committed, read from the service itself (not through the proxy).
  const auto header_state = direct.status("op-header", 100).answer;
  const auto proxy_state = direct.status("op-proxy", 100).answer;
  CHECK(header_state.effect_count == 1);
  CHECK(proxy_state.effect_count == 1);
  CHECK(header_state.post_requests == 1);
  CHECK(proxy_state.post_requests == 1);
  // The service dropped the first answer itself; the proxy dropped the second.
  CHECK(header_state.ack_drops == 1);
  CHECK(proxy_state.ack_drops == 0);
  CHECK(proxy.counts("op-proxy").ack_drops == 1);
  CHECK(proxy.counts("op-header").ack_drops == 0);
  // Through the proxy the two sources add up, and the evidence keeps both.
  const auto seen = proxied.status("op-proxy", 100);
  CHECK(seen.answer.ack_drops == 1);
  CHECK(seen.harness["service_ack_drops"] == 0);
  CHECK(seen.harness["fault_proxy_ack_drops"] == 1);
  // The key stored through the proxy dedupes a retry like any other.
  auto retry = proxied.post_effect({.operation_id = "op-proxy",
                                    .idempotency_key = "op-proxy.key",
                                    .ttl_s = 60,
                                    .logical_time_s = 110,
                                    .drop_ack = false,
                                    .body = "{}",
                                    .expected_temporal_epoch = std::nullopt});
  CHECK(retry.answer.delivery == re::Delivery::deduplicated);
}

TEST_CASE("The fault proxy resets, delays, and refuses a fault it does not know, naming the header") {
  TempDir dir("fault-proxy");
  re::LaunchOptions launch;
  launch.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
  launch.state_db = dir.path() / "remote.db";
  launch.stderr_path = (dir.path() / "remote-effect.log").string();
  re::RemoteEffectProcess service(launch);
  infra::FaultProxy proxy(service.base_url(), {.timeout_s = 10});
  httplib::Client client(proxy.base_url());
  client.set_tcp_nodelay(true);
  client.set_read_timeout(std::chrono::seconds(10));

  auto headers = post_headers("op-reset", "key-reset");
  headers.emplace("X-Logical-Time", "100");
  headers.emplace(std::string(infra::kFaultHeader), "reset");
  const auto reset = client.Post("/effects", headers, "{}", "application/json");
  CHECK_FALSE(reset);
  CHECK(proxy.counts("op-reset").resets == 1);
  httplib::Client direct(service.base_url());
  const auto state = get_json(direct, "/status/op-reset", {{"X-Logical-Time", "100"}});
  CHECK(state["effect_count"] == 1);  // forwarded and committed before the reset

  const auto started = std::chrono::steady_clock::now();
  const auto delayed =
      client.Get("/status/op-reset", {{"X-Logical-Time", "100"}, {std::string(infra::kFaultHeader), "delay_ms=300"}});
  REQUIRE(delayed);
  CHECK(delayed->status == 200);
  CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(300));
  CHECK(json::parse(delayed->body)["effect_count"] == 1);

  const auto refused = client.Get("/status/op-reset", {{std::string(infra::kFaultHeader), "drop_everything"}});
  REQUIRE(refused);
  CHECK(refused->status == 400);
  CHECK(json::parse(refused->body)["header"] == std::string(infra::kFaultHeader));
  CHECK_THAT(refused->body, ContainsSubstring("drop_everything"));
  CHECK(proxy.totals().refused_faults == 1);
}

// A service may compress its answers (cpp-httplib built with zlib does when
// the client accepts gzip): the proxy passes the body and its Content-Encoding
// on untouched, as the service sent them.
TEST_CASE("The fault proxy passes an encoded answer on as the service encoded it") {
  const char gzip_like[] = "\x1f\x8b\x08\x00 not inflated by the proxy";
  const std::string encoded(gzip_like, sizeof gzip_like - 1);
  httplib::Server upstream;
  upstream.set_tcp_nodelay(true);
  upstream.Get("/health", [&](const httplib::Request&, httplib::Response& res) {
    res.set_header("Content-Encoding", "gzip");
    // A type cpp-httplib's server never compresses again itself.
    res.set_content(encoded, "application/octet-stream");
  });
  const int port = upstream.bind_to_any_port("127.0.0.1");
  REQUIRE(port > 0);
  std::thread serving([&] { upstream.listen_after_bind(); });
  while (!upstream.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  {
    infra::FaultProxy proxy("http://127.0.0.1:" + std::to_string(port), {.timeout_s = 10});
    httplib::Client client(proxy.base_url());
    client.set_tcp_nodelay(true);
    client.set_decompress(false);  // to see the bytes as they arrive
    const auto answer = client.Get("/health", {{"Accept-Encoding", "gzip"}});
    REQUIRE(answer);
    CHECK(answer->status == 200);
    CHECK(answer->get_header_value("Content-Encoding") == "gzip");
    CHECK(answer->body == encoded);
  }
  upstream.stop();
  serving.join();
}

TEST_CASE("Real-clock mode refuses, before anything starts, what it cannot drive") {
  TempDir out("real-clock-refused");
  const auto scenario = source_path("scenarios/018-unsafe-node-local.json");
  SECTION("a remote it does not start") {
    const auto r = run_skewbench(
        {"run", scenario, "--out", out.path().string(), "--clock-mode", "real", "--remote-url", "http://127.0.0.1:9"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring("drop --remote-url"));
  }
  SECTION("a libfaketime that is not there") {
    const auto r = run_skewbench({"run", scenario, "--out", out.path().string(), "--clock-mode", "real",
                                  "--libfaketime", "/nonexistent/libfaketime.so.1"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring("/nonexistent/libfaketime.so.1"));
  }
  SECTION("a T0 before the Unix epoch") {
    auto document = read_json(scenario);
    document["t0_s"] = -100;
    document.erase("$schema");
    const auto file = out.path() / "before-epoch.json";
    write_file_atomically(file, document.dump());
    const auto r =
        run_skewbench({"run", file.string(), "--out", (out.path() / "evidence").string(), "--clock-mode", "real"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring("$.t0_s"));
    CHECK_THAT(r.output, ContainsSubstring("not -100"));
  }
}

namespace {

// The exchanges of a scenario's evidence, each with the step that made it.
std::vector<std::pair<json, json>> exchanges_of(const json& evidence) {
  std::vector<std::pair<json, json>> out;
  for (const auto& step : evidence["timeline"]) {
    for (const auto& exchange : step["exchanges"]) out.emplace_back(step, exchange);
  }
  return out;
}

// The last POST /effects of a scenario: the replay, where there is one.
json last_post(const json& evidence) {
  json found;
  for (const auto& [step, exchange] : exchanges_of(evidence)) {
    if (exchange["request"]["method"] == "POST" && exchange["request"]["path"] == "/effects") found = exchange;
  }
  return found;
}

}  // namespace

TEST_CASE(
    "Two instances on one state file, each on its node's clock, give #018's unsafe outcome from their own "
    "clocks alone; on the authority's clock they deduplicate") {
  TempDir real_out("instances-real");
  TempDir logical_out("instances-logical");
  const auto folder = source_path("scenarios/instances");
  const auto real =
      run_skewbench({"run", folder, "--out", real_out.path().string(), "--quiet", "--clock-mode", "real"});
  INFO(real.output);
  REQUIRE(real.exit_code == 0);
  const auto logical = run_skewbench({"run", folder, "--out", logical_out.path().string(), "--quiet"});
  INFO(logical.output);
  REQUIRE(logical.exit_code == 0);
  // How the time reached the instances does not change what they judged.
  CHECK(read_json(real_out.path() / "summary.json")["core_digest"] ==
        read_json(logical_out.path() / "summary.json")["core_digest"]);

  const auto evidence = [&](const std::string& id) {
    return read_json(real_out.path() / "scenarios" / (id + ".json"));
  };

  // Unsafe: node B's replay reaches the second instance, whose own clock is
  // 20 s ahead, and the service's own counts show the second effect.
  const auto unsafe = evidence("018-unsafe-instance-clocks");
  CHECK(unsafe["verdict"] == "CONFLICT");
  CHECK(unsafe["final"]["effect_count"] == 2);
  CHECK(unsafe["final"]["post_requests"] == 2);
  CHECK(unsafe["final"]["status"] == "conflict");
  const auto unsafe_replay = last_post(unsafe);
  CHECK(unsafe_replay["harness"]["instance"] == "remote-effect@2");
  CHECK(unsafe_replay["harness"]["judged_at_s"] == 7'000'070);
  CHECK(unsafe_replay["response"]["delivery"] == "applied");

  // Declared authority, both instances on its clock: the same replay is
  // deduplicated by the second instance, at the authority's T0+55.
  const auto authority = evidence("018-authority-instance-clocks");
  CHECK(authority["verdict"] == "SAFE");
  CHECK(authority["final"]["effect_count"] == 1);
  CHECK(authority["final"]["post_requests"] == 2);
  const auto authority_replay = last_post(authority);
  CHECK(authority_replay["harness"]["instance"] == "remote-effect@2");
  CHECK(authority_replay["harness"]["judged_at_s"] == 7'100'055);
  CHECK(authority_replay["response"]["delivery"] == "deduplicated");

  // An authority the client decides by, but instances on their nodes' clocks: CONFLICT.
  CHECK(evidence("018-authority-policy-node-instances")["final"]["effect_count"] == 2);
  CHECK(evidence("018-uncertainty-node-instances")["final"]["effect_count"] == 1);

  for (const auto& e : {unsafe, authority}) {
    std::set<std::string> instances;
    for (const auto& [step, exchange] : exchanges_of(e)) {
      INFO(exchange.dump());
      CHECK_FALSE(exchange["request"]["headers"].contains("X-Logical-Time"));
      instances.insert(exchange["harness"]["instance"].get<std::string>());
      if (!exchange["harness"]["judged_at_s"].is_null()) {
        CHECK(exchange["harness"]["judged_at_s"] == exchange["harness"]["process_clock_s"]);
      }
    }
    CHECK(instances == std::set<std::string>{"remote-effect", "remote-effect@2"});
    // After every step each process was asked its clock, and read what was set.
    for (const auto& step : e["timeline"]) {
      REQUIRE(step["process_clocks"].size() == 2);
      for (const auto& clock : step["process_clocks"]) {
        INFO(clock.dump());
        CHECK(clock["read_s"] == clock["set_s"]);
      }
    }
  }
  // Node B's instance follows node B's clock: T0+70 when recovery starts.
  const auto& at_recovery = unsafe["timeline"].back()["process_clocks"];
  CHECK(at_recovery[1]["instance"] == "remote-effect@2");
  CHECK(at_recovery[1]["follows"] == "node:node-b");
  CHECK(at_recovery[1]["set_s"] == 7'000'070);
  CHECK(at_recovery[0]["set_s"] == 7'000'050);
  CHECK(authority["timeline"].back()["process_clocks"][1]["follows"] == "authority:remote_effect_service_clock");
  CHECK(authority["timeline"].back()["process_clocks"][1]["set_s"] == 7'100'055);
}

TEST_CASE(
    "A scenario with an instance per node is refused, before anything starts, against a remote skewbench does "
    "not start") {
  TempDir out("instances-refused");
  const auto r = run_skewbench({"run", source_path("scenarios/instances/018-unsafe-instance-clocks.json"), "--out",
                                out.path().string(), "--remote-url", "http://127.0.0.1:9"});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("$.remote.instances"));
  CHECK_THAT(r.output, ContainsSubstring("drop --remote-url"));
}

TEST_CASE("run --target starts the target's service on real clocks, and refuses what a target cannot be") {
  TempDir out("target-run");
  const auto scenario = source_path("scenarios/targets/018-instance-clock-steps-ahead.json");
  const auto targets_dir = source_path("targets");
  SECTION("the control target runs remote-effect on its own clock") {
    const auto r = run_skewbench({"run", scenario, "--out", out.path().string(), "--quiet", "--target", "remote-effect",
                                  "--targets-dir", targets_dir});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto evidence = read_json(out.path() / "scenarios" / "018-instance-clock-steps-ahead.json");
    CHECK(evidence["environment"]["remote_effect"]["target"]["name"] == "remote-effect");
    CHECK(evidence["environment"]["clock"]["mode"] == "real");
    CHECK(evidence["final"]["effect_count"] == 2);  // its clock stepped past the key's expiry
  }
  SECTION("with its own --remote-url") {
    const auto r = run_skewbench({"run", scenario, "--out", out.path().string(), "--target", "remote-effect",
                                  "--targets-dir", targets_dir, "--remote-url", "http://127.0.0.1:9"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring("drop --remote-url"));
  }
  SECTION("on logical clocks") {
    const auto r = run_skewbench({"run", scenario, "--out", out.path().string(), "--target", "remote-effect",
                                  "--targets-dir", targets_dir, "--clock-mode", "logical"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring("drop --clock-mode logical"));
  }
  SECTION("a target that does not exist, naming those that do") {
    const auto r = run_skewbench(
        {"run", scenario, "--out", out.path().string(), "--target", "no-such-library", "--targets-dir", targets_dir});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring("powertools-redis"));
  }
  SECTION("restart_store against a target without a store process") {
    const auto r = run_skewbench({"run", source_path("scenarios/targets/016-store-restart.json"), "--out",
                                  out.path().string(), "--target", "remote-effect", "--targets-dir", targets_dir});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring("restart_store needs"));
  }
}

// The store's clock is asked of the store after every step, through the clock
// probe its target declares: here a store that answers its own wall clock
// (plus an offset), and a probe that asks it. A store that reads another time
// than the one skewbench set is an infrastructure error, never a verdict.
TEST_CASE("A store's clock is read back through its clock probe, and a store on another clock is an ERROR") {
  TempDir dir("store-probe-target");
  const auto target_dir = dir.path() / "probed";
  std::filesystem::create_directories(target_dir);
  write_file_atomically(target_dir / "store.py",
                        "import socket, sys, time\n"
                        "s = socket.socket()\n"
                        "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                        "s.bind(('127.0.0.1', int(sys.argv[1])))\n"
                        "s.listen()\n"
                        "while True:\n"
                        "    c, _ = s.accept()\n"
                        "    try:\n"
                        "        c.sendall(str(int(time.time()) + int(sys.argv[2])).encode())\n"
                        "    except OSError:\n"
                        "        pass\n"
                        "    c.close()\n");
  write_file_atomically(target_dir / "probe.py",
                        "import socket, sys\n"
                        "print(socket.create_connection(('127.0.0.1', int(sys.argv[1]))).recv(64).decode())\n");
  const auto run_with_offset = [&](int offset_s) {
    auto target = read_json(source_path("targets/remote-effect/target.json"));
    target.erase("$schema");
    target["name"] = "probed";
    target["store"] = {{"name", "listener"},
                       {"command", "python3 {target_dir}/store.py {store_port} " + std::to_string(offset_s)},
                       {"clock_probe", "python3 {target_dir}/probe.py {store_port}"}};
    write_file_atomically(target_dir / "target.json", target.dump());
    TempDir out("store-probe-run");
    auto r =
        run_skewbench({"run", source_path("scenarios/targets/018-store-clock-steps-ahead.json"), "--out",
                       out.path().string(), "--quiet", "--target", "probed", "--targets-dir", dir.path().string()});
    json evidence;
    if (r.exit_code == 0) evidence = read_json(out.path() / "scenarios" / "018-store-clock-steps-ahead.json");
    return std::pair(r, evidence);
  };

  SECTION("a store on the clock skewbench drives reads it, step by step") {
    const auto [r, evidence] = run_with_offset(0);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::set<std::int64_t> store_readings;
    for (const auto& step : evidence["timeline"]) {
      for (const auto& clock : step["process_clocks"]) {
        if (clock["follows"] != "store") continue;
        CHECK(clock["instance"] == "listener");
        REQUIRE(clock["read_s"].is_number_integer());
        CHECK(clock["read_s"] == clock["set_s"]);
        store_readings.insert(clock["read_s"].get<std::int64_t>());
      }
    }
    CHECK(store_readings.size() >= 2);  // the store's clock stepped, and it read the step
  }
  SECTION("a store that reads another clock makes the run an ERROR that names it") {
    const auto [r, evidence] = run_with_offset(3600);
    CHECK(r.exit_code == 3);
    CHECK_THAT(r.output, ContainsSubstring("listener reads its wall clock as"));
    CHECK_THAT(r.output, ContainsSubstring("does not read the clock skewbench drives"));
  }
}

// A paused instance cannot be asked its clock: the step that paused it lists
// its clock as set and read_s null, without waiting for it; the steps after
// it go on, asked again once it runs.
TEST_CASE("A paused instance's clock is listed as set, not asked, and the run goes on") {
  TempDir dir("paused-real-clock");
  auto doc = read_json(source_path("scenarios/018-declared-authority.json"));
  doc.erase("$schema");
  doc.erase("report_as");
  doc["id"] = "paused-real-clock";
  auto& steps = doc["steps"];
  constexpr std::size_t kPause = 4;  // just before recovery
  steps.insert(steps.begin() + kPause, json{{"kind", "pause_remote"}, {"at_s", 50}, {"duration_ms", 500}});
  write_file_atomically(dir.path() / "in" / "paused.json", doc.dump(2));
  const auto r = run_skewbench(
      {"run", (dir.path() / "in").string(), "--out", (dir.path() / "out").string(), "-q", "--clock-mode", "real"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto evidence = read_json(dir.path() / "out" / "scenarios" / "paused-real-clock.json");
  CHECK(evidence["verdict"] == "SAFE");
  const auto& timeline = evidence["timeline"];
  REQUIRE(timeline.size() == steps.size());
  CHECK(timeline[kPause]["kind"] == "pause_remote");
  const auto& paused = timeline[kPause]["process_clocks"][0];
  CHECK(paused["set_s"].is_number_integer());
  CHECK(paused["read_s"].is_null());
  const auto& after = timeline[kPause + 1]["process_clocks"][0];
  CHECK(after["read_s"] == after["set_s"]);
}
