// Target files and the findings table: what a target file may say and how it
// is refused, and how a row is computed from a scenario's evidence and held
// against the committed table.

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <csignal>

#include <unistd.h>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "infra/store_process.hpp"
#include "targets/findings.hpp"
#include "targets/target.hpp"
#include "targets/template.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;

namespace {

json valid_target(const std::string& name) {
  return {{"name", name},
          {"description", "d"},
          {"library", "lib 1.0"},
          {"install", "npm ci"},
          {"needs", json::array({"sh", "../present.txt"})},
          {"service", {{"command", "node {target_dir}/service.js"}, {"env", {{"STORE", "{store_port}"}}}}},
          {"store",
           {{"name", "redis"},
            {"command", "redis-server --port {store_port}"},
            {"wall_clock", "skewbench"},
            {"clock_probe", "redis-cli -p {store_port} TIME"}}}};
}

// A folder of targets holding `document` as targets/<name>/target.json.
struct TargetsDir {
  explicit TargetsDir(const json& document, const std::string& name = "lib-a") : dir("targets-test") {
    std::filesystem::create_directories(dir.path() / name);
    write_file_atomically(dir.path() / name / "target.json", document.dump());
    write_file_atomically(dir.path() / "present.txt", "x");
  }
  TempDir dir;
};

std::string refusal(const json& document) {
  TargetsDir targets(document);
  try {
    targets::load_target("lib-a", targets.dir.path());
  } catch (const targets::TargetFileError& e) {
    return e.what();
  }
  return "(accepted)";
}

// The exchanges of a POST /effects at `clock_s` on `instance`, as a run's
// evidence records them.
json post(std::int64_t clock_s, const std::string& instance, const json& response) {
  return {{"request", {{"method", "POST"}, {"path", "/effects"}, {"headers", json::object()}}},
          {"response", response},
          {"transport_outcome", response.is_null() ? "ACK_UNKNOWN" : "ACK_RECEIVED"},
          {"harness", {{"process_clock_s", clock_s}, {"instance", instance}}}};
}

// A scenario's evidence: the first POST at 1000 (its answer lost), the replay
// at `replay_s` on `replay_instance` with the store's clock at `store_s`.
json evidence(std::int64_t replay_s, std::optional<std::int64_t> store_s, const std::string& delivery,
              std::int64_t effects, const std::string& replay_instance = "svc") {
  json clocks = json::array();
  if (store_s) clocks.push_back({{"follows", "store"}, {"set_s", *store_s}});
  return {{"scenario_id", "s"},
          {"verdict", effects >= 2 ? "CONFLICT" : "SAFE"},
          {"input", {{"ttl_s", 60}}},
          {"final", {{"post_requests", 2}, {"effect_count", effects}, {"ack_drops", 1}}},
          {"error", nullptr},
          {"timeline",
           {{{"index", 1}, {"kind", "post_effect"}, {"exchanges", {post(1000, "svc", nullptr)}}},
            {{"index", 2},
             {"kind", "recover"},
             {"process_clocks", clocks},
             {"exchanges", {post(replay_s, replay_instance, {{"delivery", delivery}})}}}}}};
}

// The same POST to a service of its own wire: its own route and answer, the
// class its target's rules gave it, and a status read counted at the sink
// between them.
json own_wire_evidence(std::int64_t replay_s, const std::string& answer_class) {
  auto out = evidence(replay_s, std::nullopt, "applied", answer_class == "applied" ? 2 : 1);
  for (auto& step : out["timeline"]) {
    for (auto& exchange : step["exchanges"]) {
      exchange["request"]["path"] = "/payments";
      exchange["http_status"] = exchange["response"].is_null() ? json(nullptr) : json(201);
      exchange["response"] = exchange["response"].is_null() ? json(nullptr) : json({{"status", "succeeded"}});
      if (!exchange["response"].is_null()) exchange["harness"]["answer_class"] = answer_class;
    }
  }
  out["timeline"][0]["exchanges"].push_back(
      {{"request", {{"method", "READ"}, {"path", "effect sink: calls for operation s"}}},
       {"response", {{"effect_count", 1}}},
       {"transport_outcome", nullptr}});
  return out;
}

}  // namespace

TEST_CASE("a target file is read with its service, its store and its needs") {
  TargetsDir dir(valid_target("lib-a"));
  const auto t = targets::load_target("lib-a", dir.dir.path());
  CHECK(t.name == "lib-a");
  CHECK(t.service_command == "node {target_dir}/service.js");  // filled in by the stack, in one pass
  CHECK(t.service_env.at("STORE") == "{store_port}");          // the stack fills it in
  REQUIRE(t.store);
  CHECK(t.store->wall_clock == "skewbench");
  CHECK(t.store->clock_probe == "redis-cli -p {store_port} TIME");  // filled in by the store, at each ask
  CHECK(t.store->ready_command.empty());                            // its port accepting a connection is enough
  CHECK_FALSE(t.store->run_as.has_value());
  CHECK(targets::missing_needs(t).empty());
  // Stopped with SIGTERM, killed by a restart, unless the file says otherwise.
  CHECK(t.stopping.to_json() == json{{"signal", "SIGTERM"}, {"grace_ms", 5000}, {"restart", "kill"}});
  auto graceful = valid_target("lib-b");
  graceful["service"]["stop"] = {{"signal", "SIGINT"}, {"grace_s", 10}};
  graceful["service"]["restart"] = "graceful";
  TargetsDir graceful_dir(graceful, "lib-b");
  const auto g = targets::load_target("lib-b", graceful_dir.dir.path());
  CHECK(g.stopping.signal == SIGINT);
  CHECK(g.stopping.grace == std::chrono::seconds(10));
  CHECK(g.stopping.graceful_restart);
  CHECK(g.to_json()["stopping"]["restart"] == "graceful");

  runner::StackOptions services;
  targets::use_target(t, services);
  CHECK(services.clock_mode == runner::ClockMode::real);
  CHECK(services.ack_loss == infra::AckLoss::proxy);
  CHECK(services.remote_command == t.service_command);
  CHECK(services.remote_placeholders.at("{target_dir}") == (dir.dir.path() / "lib-a").string());
  CHECK(services.store->name == "redis");
  CHECK(services.target["name"] == "lib-a");
}

TEST_CASE("a target file that cannot be used is refused, naming the file and the JSON path") {
  auto doc = valid_target("lib-a");
  CHECK_THAT(refusal(doc), ContainsSubstring("(accepted)"));
  doc["name"] = "lib-b";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.name"));
  doc = valid_target("lib-a");
  doc["colour"] = "blue";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.colour"));
  doc = valid_target("lib-a");
  doc["store"]["wall_clock"] = "sundial";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.store.wall_clock"));
  doc = valid_target("lib-a");
  doc["store"]["clock_probe"] = "";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.store.clock_probe"));
  doc = valid_target("lib-a");
  doc["service"].erase("command");
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.command"));
  // The store's commands hold only its own placeholders.
  doc = valid_target("lib-a");
  doc["store"]["command"] = "redis-server --port {port}";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.store.command: {port} is not a placeholder here"));
  doc = valid_target("lib-a");
  doc["store"]["clock_probe"] = "redis-cli -p {store_prt} TIME";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.store.clock_probe: {store_prt}"));
  // A placeholder spelled otherwise than skewbench's names is still one, and
  // refused as unknown instead of passed on as written.
  for (const auto* spelled : {"{STORE_PORT}", "{store-port}", "{storePort2}"}) {
    doc = valid_target("lib-a");
    doc["store"]["command"] = std::string("redis-server --port ") + spelled;
    CHECK_THAT(refusal(doc), ContainsSubstring(std::string("$.store.command: ") + spelled + " is not a placeholder"));
    doc = valid_target("lib-a");
    doc["store"]["clock_probe"] = std::string("redis-cli -p ") + spelled + " TIME";
    CHECK_THAT(refusal(doc), ContainsSubstring(std::string("$.store.clock_probe: ") + spelled));
  }
  doc = valid_target("lib-a");
  doc["store"]["command"] = "redis-server --port {store_port} | awk '{print $1}' ${HOME} {a,b} {1..3}";
  CHECK_THAT(refusal(doc), ContainsSubstring("(accepted)"));
  doc = valid_target("lib-a");
  doc["store"]["ready"] = {{"command", "pg_isready -p {sink_url}"}};
  CHECK_THAT(refusal(doc), ContainsSubstring("$.store.ready.command: {sink_url}"));
  doc["store"]["ready"] = {{"command", ""}};
  CHECK_THAT(refusal(doc), ContainsSubstring("$.store.ready.command"));
  doc["store"]["ready"] = {{"command", "true"}, {"tcp_port", true}};
  CHECK_THAT(refusal(doc), ContainsSubstring("$.store.ready: holds exactly one"));
  doc["store"]["ready"] = {{"http_get", "/"}};
  CHECK_THAT(refusal(doc), ContainsSubstring("$.store.ready"));
  doc = valid_target("lib-a");
  doc["service"]["stop"] = {{"signal", "SIGSTOP"}};
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.stop.signal: \"SIGSTOP\" is not one of"));
  doc["service"]["stop"] = {{"grace_s", 600}};
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.stop.grace_s"));
  doc["service"]["stop"] = {{"grace", 6}};
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.stop.grace"));
  doc = valid_target("lib-a");
  doc["service"]["restart"] = "reboot";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.restart: \"reboot\" is not one of: kill, graceful"));
  doc = valid_target("lib-a");
  doc["store"]["run_as"] = "post gres";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.store.run_as"));
  TargetsDir dir(valid_target("lib-a"));
  CHECK_THROWS_WITH(targets::load_target("lib-z", dir.dir.path()), ContainsSubstring("lib-a"));
}

namespace {

// A service of its own wire, as a user writes one (schema version 2).
json own_wire_target(const std::string& name) {
  return {{"schema_version", 2},
          {"name", name},
          {"description", "d"},
          {"library", "app 1.0"},
          {"install", "apt-get install python3"},
          {"needs", json::array({"sh"})},
          {"service",
           {{"wire", "own"},
            {"command", "python3 {target_dir}/app.py --port {port} --provider {sink_url} --ttl {ttl_s}"},
            {"env", {{"PROVIDER", "{sink_url}"}}},
            {"ready", {{"http_get", "/healthz"}}},
            {"ttl_s", 60}}},
          {"request",
           {{"path", "/payments/{operation_id}"},
            {"headers", {{"Content-Type", "application/json"}}},
            {"body", {{"order_id", "{operation_id}"}, {"amount", "{amount}"}}}}},
          {"answer",
           {{"status", {{"201", "applied"}, {"200", "replayed"}, {"409", "refused_in_progress"}}},
            {"json_pointer", "/outcome"},
            {"values", {{"duplicate", "replayed"}}}}},
          {"sink", {{"operation_id", {{"json_pointer", "/reference"}}}}}};
}

}  // namespace

TEST_CASE("a target of its own wire is read with its request, answer rules, sink rule, readiness and TTL") {
  TargetsDir dir(own_wire_target("lib-a"));
  const auto t = targets::load_target("lib-a", dir.dir.path());
  CHECK(t.schema_version == 2);
  REQUIRE(t.own_wire);
  CHECK(t.own_wire->target == "lib-a");
  CHECK(t.own_wire->method == "POST");
  CHECK(t.own_wire->path == "/payments/{operation_id}");
  CHECK(t.own_wire->key_header == "Idempotency-Key");
  CHECK(t.own_wire->body == R"({"amount":"{amount}","order_id":"{operation_id}"})");
  CHECK(t.own_wire->by_status.at(201) == infra::AnswerClass::applied);
  CHECK(t.own_wire->by_value.at("duplicate") == infra::AnswerClass::replayed);
  CHECK(t.sink_operation_id.from == infra::OperationIdSource::From::json_pointer);
  CHECK(t.sink_operation_id.json_pointer == "/reference");
  CHECK(t.ready.kind == remote_effect::Readiness::Kind::http_get);
  CHECK(t.ttl_s == 60);

  runner::StackOptions services;
  targets::use_target(t, services);
  REQUIRE(services.own_wire);
  CHECK(services.service_ttl_s == 60);
  CHECK(services.remote_placeholders.at("{ttl_s}") == "60");
  CHECK(services.remote_ready.value == "/healthz");
  CHECK(services.remote_ready_timeout == std::chrono::seconds(10));  // by default
  auto slow = own_wire_target("lib-a");
  slow["service"]["ready_timeout_s"] = 45;  // a JVM under libfaketime
  TargetsDir slow_dir(slow);
  targets::use_target(targets::load_target("lib-a", slow_dir.dir.path()), services);
  CHECK(services.remote_ready_timeout == std::chrono::seconds(45));
  CHECK(services.target["ready_timeout_s"] == 45);
  slow["service"]["ready_timeout_s"] = 0;
  CHECK_THAT(refusal(slow), ContainsSubstring("$.service.ready_timeout_s"));
  CHECK(services.target["wire"] == "own");
}

TEST_CASE("a target of its own wire that cannot be used is refused before anything starts, naming the path") {
  auto doc = own_wire_target("lib-a");
  CHECK_THAT(refusal(doc), ContainsSubstring("(accepted)"));
  doc["request"]["body"] = "{\"n\": \"{order}\"}";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.request.body: {order} is not a placeholder"));
  doc = own_wire_target("lib-a");
  doc["service"]["command"] = "python3 app.py --provider {sink_uri}";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.command: {sink_uri} is not a placeholder"));
  doc = own_wire_target("lib-a");
  doc["service"]["env"]["X"] = "{store_port}";  // no store
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.env.X: {store_port}"));
  doc = own_wire_target("lib-a");
  doc["answer"]["status"]["2000"] = "applied";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.answer.status.2000"));
  doc = own_wire_target("lib-a");
  doc["answer"]["status"]["201"] = "done";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.answer.status.201: \"done\" is not one of"));
  doc = own_wire_target("lib-a");
  doc["answer"].erase("status");  // read by its field alone
  CHECK_THAT(refusal(doc), ContainsSubstring("(accepted)"));
  doc["answer"] = json::object();
  CHECK_THAT(refusal(doc), ContainsSubstring("$.answer: holds status, or json_pointer with values"));
  doc = own_wire_target("lib-a");
  doc["sink"]["operation_id"] = {{"header", "X-Order"}, {"path_segment", 1}};
  CHECK_THAT(refusal(doc), ContainsSubstring("$.sink.operation_id: holds exactly one"));
  doc = own_wire_target("lib-a");
  doc["sink"]["operation_id"] = {{"json_pointer", "reference"}};
  CHECK_THAT(refusal(doc), ContainsSubstring("is not a JSON pointer"));
  doc = own_wire_target("lib-a");
  doc["service"].erase("ready");
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.ready: is required"));
  doc = own_wire_target("lib-a");
  doc["service"].erase("ttl_s");
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.ttl_s"));
  doc = own_wire_target("lib-a");
  doc["request"]["method"] = "GET";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.request.method"));
  doc = own_wire_target("lib-a");
  doc["request"]["path"] = "payments";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.request.path"));
  doc = own_wire_target("lib-a");
  doc["schema_version"] = 3;
  CHECK_THAT(refusal(doc), ContainsSubstring("$.schema_version"));
  // The first form is still read; what belongs to the second is named with how to convert.
  doc = own_wire_target("lib-a");
  doc.erase("schema_version");
  CHECK_THAT(refusal(doc), ContainsSubstring("needs \"schema_version\": 2"));
  doc = valid_target("lib-a");
  doc["schema_version"] = 2;
  CHECK_THAT(refusal(doc), ContainsSubstring("(accepted)"));
  doc["sink"] = {{"operation_id", {{"header", "X"}}}};
  CHECK_THAT(refusal(doc), ContainsSubstring("$.sink: belongs to a service of its own wire"));
}

TEST_CASE("the template of targets init is a target file of its own wire, read as it is printed") {
  TempDir dir("targets-init");
  std::filesystem::create_directories(dir.path() / "pay-svc");
  const auto text = targets::target_template("pay-svc");
  CHECK_THAT(text, ContainsSubstring("\"name\": \"pay-svc\""));
  CHECK_THAT(text, ContainsSubstring("// CHANGE"));
  write_file_atomically(dir.path() / "pay-svc" / "target.json", text);
  const auto t = targets::load_target("pay-svc", dir.path());
  CHECK(t.schema_version == 2);
  REQUIRE(t.own_wire);
  CHECK(t.ttl_s == 60);
  CHECK_THAT(t.service_command, ContainsSubstring("{sink_url}"));
  CHECK(t.sink_operation_id.from == infra::OperationIdSource::From::json_pointer);
  CHECK(t.ready.kind == remote_effect::Readiness::Kind::http_get);
  CHECK(t.stopping.signal == SIGTERM);
  for (const auto* name : {"", "Pay", "-x", "a/b", "a b"}) {
    CHECK_THROWS_AS(targets::target_template(name), targets::TargetFileError);
  }
}

TEST_CASE("a target file may hold comments; an instance's environment only the placeholders filled in there") {
  TargetsDir dir(own_wire_target("lib-a"));
  const auto file = dir.dir.path() / "lib-a" / "target.json";
  write_file_atomically(file, "// mine\n" + own_wire_target("lib-a").dump(2) + "\n/* end */\n");
  CHECK_NOTHROW(targets::load_target("lib-a", dir.dir.path()));
  auto doc = own_wire_target("lib-a");
  doc["service"]["env"]["PROVIDER"] = "{sink_url}";
  doc["service"]["env"]["TTL"] = "{ttl_s}";
  CHECK_THAT(refusal(doc), ContainsSubstring("(accepted)"));
  doc["service"]["env"]["LISTEN"] = "{port}";  // PORT holds it; the value is not filled in
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.env.LISTEN: {port} is not a placeholder here"));
}

TEST_CASE("what a target needs and this machine lacks is named with how to install it") {
  auto doc = valid_target("lib-a");
  doc["needs"] = {"no-such-command-skewbench", "../absent/package.json", "../present.txt"};
  TargetsDir dir(doc);
  const auto missing = targets::missing_needs(targets::load_target("lib-a", dir.dir.path()));
  REQUIRE(missing.size() == 2);
  CHECK_THAT(missing[0], ContainsSubstring("no-such-command-skewbench, which is not on PATH; install: npm ci"));
  CHECK_THAT(missing[1], ContainsSubstring("absent/package.json, which is missing"));
}

TEST_CASE("every shipped target file is valid and names its folder") {
  const auto all = targets::load_targets(std::string(SKEWBENCH_SOURCE_DIR) + "/targets");
  CHECK(all.size() >= 5);
  for (const auto& t : all) CHECK(t.dir.filename() == t.name);
  const auto examples = targets::load_targets(std::string(SKEWBENCH_SOURCE_DIR) + "/examples/services");
  CHECK_FALSE(examples.empty());
  for (const auto& t : examples) CHECK(t.own_wire.has_value());
}

TEST_CASE("the clock that let a replay through is the one past the key's expiry, and only it") {
  // Expiry: the first POST at 1000 + TTL 60 = 1060.
  auto row = targets::finding_of("t", evidence(1070, 1050, "applied", 2), "e.json");
  CHECK(row.decided_by == "instance");
  CHECK(row.verdict == "CONFLICT");
  CHECK(row.effect_count == 2);
  CHECK(row.duplicate["instance_clock_s"] == 1070);
  CHECK(row.duplicate["store_clock_s"] == 1050);
  CHECK(row.duplicate["key_expires_at_s"] == 1060);
  CHECK(targets::finding_of("t", evidence(1050, 1070, "applied", 2), "e").decided_by == "store");
  CHECK(targets::finding_of("t", evidence(1090, 1090, "applied", 2), "e").decided_by == "instance or store");
  CHECK(targets::finding_of("t", evidence(1090, std::nullopt, "applied", 2), "e").decided_by == "instance");
  // Deduplicated while a clock had passed expiry: no clock expired the key.
  CHECK(targets::finding_of("t", evidence(1090, 1090, "deduplicated", 1), "e").decided_by == "none");
  // No clock past expiry: what duplicated was not expiry.
  const auto lost = targets::finding_of("t", evidence(1010, 1010, "applied", 2), "e");
  CHECK(lost.decided_by == "n/a");
  CHECK_FALSE(lost.duplicate.is_null());
  // An ERROR row says nothing of clocks, and an "applied" the service's
  // counts do not show is no duplicate.
  auto errored = evidence(1070, 1050, "applied", 2);
  errored["verdict"] = "ERROR";
  CHECK(targets::finding_of("t", errored, "e").decided_by == "n/a");
  CHECK(targets::finding_of("t", evidence(1070, 1050, "applied", 1), "e").duplicate.is_null());
  CHECK(targets::finding_of("t", evidence(1010, 1010, "deduplicated", 1), "e").decided_by == "n/a");
}

TEST_CASE("the POSTs of a service of its own wire are read by their outcome and their answer's class") {
  const auto duplicated = targets::finding_of("t", own_wire_evidence(1070, "applied"), "e.json");
  CHECK(duplicated.decided_by == "instance");
  CHECK(duplicated.duplicate["instance_clock_s"] == 1070);
  const auto replayed = targets::finding_of("t", own_wire_evidence(1070, "replayed"), "e.json");
  CHECK(replayed.decided_by == "none");
}

TEST_CASE("a duplicate across instances names no clock when the target's instances do not share their records") {
  std::vector<targets::FindingRow> rows = {
      targets::finding_of("t", evidence(1010, std::nullopt, "applied", 2, "svc@2"), "agree"),
      targets::finding_of("t", evidence(1070, std::nullopt, "applied", 2, "svc@2"), "skewed"),
      targets::finding_of("t", evidence(1070, std::nullopt, "applied", 2, "svc"), "one instance")};
  CHECK(rows[1].decided_by == "instance");
  targets::qualify_across_instances(rows);
  CHECK(rows[0].decided_by == "n/a");
  CHECK(rows[1].decided_by == "n/a");
  CHECK_THAT(rows[1].note, ContainsSubstring("does not share"));
  CHECK(rows[2].decided_by == "instance");  // the same instance: its clock decided
  // With a control that deduplicated, the clock stands.
  rows = {targets::finding_of("t", evidence(1010, std::nullopt, "deduplicated", 1, "svc@2"), "agree"),
          targets::finding_of("t", evidence(1070, std::nullopt, "applied", 2, "svc@2"), "skewed")};
  targets::qualify_across_instances(rows);
  CHECK(rows[1].decided_by == "instance");
  // Two requests in flight that charged twice across instances lost no
  // answer: no replay, no clock, and no control of record sharing.
  auto in_flight = evidence(1001, std::nullopt, "applied", 2, "svc@2");
  in_flight["final"]["ack_drops"] = 0;
  rows = {targets::finding_of("t", evidence(1010, std::nullopt, "deduplicated", 1, "svc@2"), "agree"),
          targets::finding_of("t", evidence(1070, std::nullopt, "applied", 2, "svc@2"), "skewed"),
          targets::finding_of("t", in_flight, "in flight")};
  CHECK(rows[2].decided_by == "n/a");
  CHECK_FALSE(rows[2].across_instances);
  CHECK_FALSE(rows[2].duplicate.is_null());  // its duplicate is still named
  // POSTs sent at once are collected in the order they were sent: a refusal
  // collected after the duplicate leaves the duplicate named.
  auto at_once = in_flight;
  at_once["timeline"][1]["exchanges"].push_back(post(1005, "svc@2", nullptr));
  at_once["timeline"][1]["exchanges"].back()["transport_outcome"] = "REJECTED";
  const auto collected = targets::finding_of("t", at_once, "at once");
  REQUIRE_FALSE(collected.duplicate.is_null());
  CHECK(collected.duplicate["step"] == 2);
  CHECK(collected.duplicate["instance_clock_s"] == 1001);
  targets::qualify_across_instances(rows);
  CHECK(rows[1].decided_by == "instance");
  // Without a measured control, no clock is named for a duplicate across instances.
  rows = {targets::finding_of("t", evidence(1070, std::nullopt, "applied", 2, "svc@2"), "skewed")};
  targets::qualify_across_instances(rows);
  CHECK(rows[0].decided_by == "n/a");
  CHECK_THAT(rows[0].note, ContainsSubstring("no control"));
}

TEST_CASE("the findings are held against the committed table, each difference naming its row and line") {
  const std::string table =
      "# Findings\n\ntext\n\n"
      "| target | scenario | verdict | POSTs | effects | expiry decided by | why |\n"
      "|---|---|---|---|---|---|---|\n"
      "| t | a | SAFE | 2 | 1 | n/a | fine |\n"
      "| t | b | CONFLICT | 2 | 2 | instance | its clock |\n"
      "| other | a | SAFE | 2 | 1 | n/a | not run |\n"
      "\nafter the table\n";
  const auto expected = targets::read_expected_table(table);
  REQUIRE(expected.size() == 3);
  CHECK(expected[1].line == 8);
  CHECK(expected[1].why == "its clock");
  auto a = targets::finding_of("t", evidence(1010, std::nullopt, "deduplicated", 1), "e");
  a.scenario = "a";
  auto b = targets::finding_of("t", evidence(1070, std::nullopt, "applied", 2), "e");
  b.scenario = "b";
  CHECK(targets::differences({a, b}, expected, {"t"}).empty());

  b.effect_count = 3;
  auto c = a;
  c.scenario = "c";
  const auto found = targets::differences({a, b, c}, expected, {"t"});
  REQUIRE(found.size() == 2);
  CHECK_THAT(found[0], ContainsSubstring("t × b (line 8): effects is 3, the table says 2"));
  CHECK_THAT(found[1], ContainsSubstring("t × c: the table has no row"));
  CHECK_THAT(targets::differences({a}, expected, {"t"}).front(),
             ContainsSubstring("t × b (line 8): in the table, but the run has no such row"));
  CHECK_THROWS_WITH(targets::read_expected_table("no table here\n"), ContainsSubstring("no findings table"));
  // The table a run writes reads back as the table it compares with.
  CHECK(targets::differences({a, b}, targets::read_expected_table(targets::markdown_table({a, b})), {"t"}).empty());
}

TEST_CASE("a count cell of the expected table may be a range the requests' timing decides") {
  const std::string table =
      "| target | scenario | verdict | POSTs | effects | expiry decided by | why |\n|---|---|---|---|---|---|---|\n"
      "| t | a | SAFE | 1–8 | 1 | n/a | timing |\n";
  const auto expected = targets::read_expected_table(table);
  auto row = targets::finding_of("t", evidence(1010, std::nullopt, "deduplicated", 1), "e");
  row.scenario = "a";
  for (const std::int64_t posts : {1, 5, 8}) {
    row.post_requests = posts;
    CHECK(targets::differences({row}, expected, {"t"}).empty());
    CHECK_THAT(targets::markdown_table({row}, expected), ContainsSubstring("| timing |"));
  }
  for (const std::int64_t posts : {0, 9}) {
    row.post_requests = posts;
    const auto found = targets::differences({row}, expected, {"t"});
    REQUIRE(found.size() == 1);
    CHECK_THAT(found[0], ContainsSubstring("POSTs is " + std::to_string(posts) + ", the table says 1–8"));
  }
  // A verdict cell may name the verdicts a race gives; no other verdict holds.
  const auto race = targets::read_expected_table(
      "| target | scenario | verdict | POSTs | effects | expiry decided by |\n|---|---|---|---|---|---|\n"
      "| t | a | CONFLICT or SAFE | 1–8 | 1–8 | n/a |\n");
  row.post_requests = 2;
  for (const std::string verdict : {"SAFE", "CONFLICT"}) {
    row.verdict = verdict;
    CHECK(targets::differences({row}, race, {"t"}).empty());
  }
  for (const std::string verdict : {"HELD", "ERROR"}) {
    row.verdict = verdict;
    CHECK_THAT(targets::differences({row}, race, {"t"}).at(0),
               ContainsSubstring("verdict is " + verdict + ", the table says CONFLICT or SAFE"));
  }
  row.verdict = "SAFE";
  // No count is within a range: a row the run could not count differs.
  row.post_requests = std::nullopt;
  CHECK(targets::differences({row}, expected, {"t"}).size() == 1);
  // A cell that is no range of two numbers holds only itself.
  for (const std::string cell : {"–8", "1–", "a–8", "1-8"}) {
    const auto other = targets::read_expected_table(
        "| target | scenario | verdict | POSTs | effects | expiry decided by |\n|---|---|---|---|---|---|\n| t | a | "
        "SAFE | " +
        cell + " | 1 | n/a |\n");
    row.post_requests = 5;
    CHECK(targets::differences({row}, other, {"t"}).size() == 1);
  }
}

TEST_CASE("an expected table with two rows for one target and scenario that disagree is refused, naming both lines") {
  const std::string head =
      "| target | scenario | verdict | POSTs | effects | expiry decided by | why |\n|---|---|---|---|---|---|---|\n";
  const auto twice = head + "| t | a | SAFE | 2 | 1 | n/a | fine |\n| t | a | CONFLICT | 2 | 2 | instance | not |\n";
  CHECK_THROWS_WITH(targets::read_expected_table(twice),
                    ContainsSubstring("lines 3 and 4 are both the row of t × a and contradict each other"));
  // The same row twice says one thing.
  const auto same = head + "| t | a | SAFE | 2 | 1 | n/a | fine |\n| t | a | SAFE | 2 | 1 | n/a | again |\n";
  CHECK(targets::read_expected_table(same).size() == 2);
}

TEST_CASE("an expected table's cells are read as Markdown reads them, and every word written is escaped") {
  const std::string table =
      "| target | scenario | verdict | POSTs | effects | expiry decided by | why |\n|---|---|---|---|---|---|---|\n"
      "| t | a | SAFE | 2 | 1 | n/a | reads a \\| b, and x\\_y |\n";
  const auto rows = targets::read_expected_table(table);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].decided_by == "n/a");
  CHECK(rows[0].why == "reads a | b, and x_y");

  auto row = targets::not_applicable("t", "a", "<script>alert(1)</script> | &amp; *bold*");
  row.verdict = "ERROR";
  const auto md = targets::findings_markdown({row}, {}, {"t × a: verdict is ERROR (<img src=x onerror=alert(1)>)"});
  for (std::size_t at = md.find('<'); at != std::string::npos; at = md.find('<', at + 1)) {
    INFO(md.substr(at));
    CHECK((at > 0 && md[at - 1] == '\\'));  // every '<' escaped: no tag is rendered
  }
  CHECK_THAT(md, ContainsSubstring("\\<script>alert(1)\\</script> \\| \\&amp; \\*bold\\*"));
  CHECK_THAT(md, ContainsSubstring("- t × a: verdict is ERROR (\\<img src=x onerror=alert(1)>)"));
  // What is written reads back as the words that were measured.
  const auto back = targets::read_expected_table(md);
  REQUIRE(back.size() == 1);
  CHECK(back[0].why == row.note);
}

// The store's clock as the store reads it: the probe's first whole number, or
// an error that names the probe; a store without a probe cannot be asked.
TEST_CASE("a store's clock is read through its clock probe, and a probe that fails is an error naming it") {
  TempDir dir("store-probe");
  infra::StoreOptions options;
  options.name = "listener";
  // A store is ready when its port accepts a connection.
  options.command =
      "python3 -c 'import socket,sys,time; s=socket.socket(); s.bind((\"127.0.0.1\", int(sys.argv[1]))); "
      "s.listen(); time.sleep(60)' {store_port}";
  options.probe_timeout = std::chrono::seconds(1);
  const auto probe_of = [&](const std::string& probe) {
    auto with_probe = options;
    with_probe.clock_probe = probe;
    return infra::StoreProcess(with_probe, dir.path() / "data", dir.path() / "store.log", {});
  };
  CHECK_FALSE(probe_of("").wall_clock_s().has_value());
  CHECK(probe_of("echo 1700000070 123456").wall_clock_s() == 1700000070);
  // The port is filled in: the probe sees the store's own.
  const auto store = probe_of("echo {store_port}");
  CHECK(store.wall_clock_s() == store.port());
  // Only its answer is read: what it says on stderr (a number, here) goes to the store's log.
  CHECK(probe_of("sh -c 'echo 99 >&2; echo 1700000070'").wall_clock_s() == 1700000070);
  CHECK_THROWS_WITH(probe_of("echo no time").wall_clock_s(), ContainsSubstring("printed no whole number: no time"));
  CHECK_THROWS_WITH(probe_of("false").wall_clock_s(), ContainsSubstring("clock probe (false) exited with code 1"));
  CHECK_THROWS_WITH(probe_of("sleep 30").wall_clock_s(), ContainsSubstring("did not answer within 1 s"));
}

// A store that accepts connections before it serves (PostgreSQL while it
// recovers) is ready only once its ready command exits 0; one that never
// does is an error naming the command's wait, and a run_as user that does not
// exist is refused before it starts.
TEST_CASE("a store is ready once its port accepts a connection and its ready command exits 0") {
  TempDir dir("store-ready");
  infra::StoreOptions options;
  options.name = "listener";
  options.command =
      "python3 -c 'import socket,sys,time; s=socket.socket(); s.bind((\"127.0.0.1\", int(sys.argv[1]))); "
      "s.listen(); time.sleep(0.5); open(sys.argv[2] + \"/serving\", \"w\").close(); time.sleep(60)' "
      "{store_port} {store_dir}";
  options.ready_timeout = std::chrono::milliseconds(3000);
  options.ready_command = "test -f {store_dir}/serving";
  {
    // It listens half a second before it serves: ready means serving.
    infra::StoreProcess store(options, dir.path() / "data", dir.path() / "store.log", {});
    CHECK(std::filesystem::exists(dir.path() / "data" / "serving"));
  }
  options.ready_command = "test -f {store_dir}/never";
  CHECK_THROWS_WITH(infra::StoreProcess(options, dir.path() / "data2", dir.path() / "store2.log", {}),
                    ContainsSubstring("and pass its ready command within 3000 ms"));
  if (::geteuid() == 0) {
    options.ready_command = "";
    options.run_as = "no-such-user-here";
    CHECK_THROWS_WITH(infra::StoreProcess(options, dir.path() / "data3", dir.path() / "store3.log", {}),
                      ContainsSubstring("run_as \"no-such-user-here\": there is no user"));
  }
}

TEST_CASE("a target whose header, path or placeholder would be sent as written is refused, naming the path") {
  auto doc = own_wire_target("lib-a");
  doc["request"]["headers"]["X-Trace"] = "a\r\nX-Injected: 1";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.request.headers.X-Trace: a header value holds a control character"));
  doc = own_wire_target("lib-a");
  doc["request"]["headers"]["X Trace"] = "a";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.request.headers: \"X Trace\" is not a header name"));
  doc = own_wire_target("lib-a");
  doc["request"]["key_header"] = "Idempotency-Key:\r\nX";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.request.key_header:"));
  doc = own_wire_target("lib-a");
  doc["service"]["ready"] = {{"http_get", "/healthz\r\nX-Injected: 1"}};
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.ready.http_get: a path holds a control character"));
  doc = own_wire_target("lib-a");
  doc["service"]["command"] = "python3 app.py --port {port} --provider {sink_url --ttl {ttl_s}";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.command: \"{sink_url\" lacks its closing brace"));
  doc = own_wire_target("lib-a");
  doc["service"]["command"] = "python3 app.py --port {{port}} --provider {sink_url} --ttl {ttl_s}";
  CHECK_THAT(refusal(doc), ContainsSubstring("$.service.command: {{port}} doubles its braces: write {port}"));
  doc = own_wire_target("lib-a");
  doc["service"]["command"] = "sh -c 'echo ${PORT:-{port}} {a,b}' --provider {sink_url} --ttl {ttl_s}";
  CHECK_THAT(refusal(doc), ContainsSubstring("(accepted)"));
  doc = own_wire_target("lib-a");
  doc["service"]["wall_clock"] = "faketime";
  CHECK_THAT(refusal(doc),
             ContainsSubstring("$.service.wall_clock: \"faketime\" is not one of: libfaketime, skewbench"));
  doc["service"]["wall_clock"] = "skewbench";
  CHECK_THAT(refusal(doc), ContainsSubstring("(accepted)"));
}
