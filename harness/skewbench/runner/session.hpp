#pragma once

// The wiring `run` and `sweep` share: the scenarios loaded and checked before
// anything starts, the services opened once (the stack, a PostgreSQL
// connection, a remote-effect client) with what they say of themselves, and
// the ERROR results of scenarios that never ran.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infra/database_description.hpp"
#include "infra/http_remote.hpp"
#include "infra/pg_outbox.hpp"
#include "runner/instances.hpp"
#include "runner/runner.hpp"
#include "runner/stack.hpp"
#include "scenario/scenario.hpp"

namespace skewbench::runner {

// Loads every scenario file under `paths` (files or folders). Throws
// scenario::ScenarioFileError when a file is invalid, or when two scenarios
// share an id or a report_as section.
std::vector<scenario::Scenario> load_scenarios(const std::vector<std::string>& paths);

// What the services say of themselves, as the evidence records it.
struct ServicesDescription {
  infra::DatabaseDescription database;
  nlohmann::json remote_health;  // remote-effect's /health
  std::string remote_url;
  bool embedded_remote = false;
  std::optional<std::string> remote_command = std::nullopt;  // the service started instead of remote-effect
  // How the service reads time and loses answers: mode, ack_loss, and in
  // real-clock mode the libfaketime library and the clock file.
  nlohmann::json clock = nlohmann::json::object();
  // The target the service comes from, and its store process (name, port,
  // command); null when there is none.
  nlohmann::json target = nullptr;
  nlohmann::json store = nullptr;
};

struct SessionOptions {
  StackOptions services;
  std::string run_id;
  // Started remote-effect runs in this mode (a sweep's cells share one).
  std::optional<remote_effect::DedupeMode> dedupe_mode = std::nullopt;
};

// The services of a run, reached through the instances' clients; it is the
// runner's ServiceInstances.
class Session final : public ServiceInstances {
 public:
  // Starts or reaches the services and asks both what they are; throws
  // InfrastructureError (or another std::exception) when one cannot be used.
  explicit Session(const SessionOptions& options);
  ~Session() override;

  Stack& stack() { return *stack_; }
  // The session's own connections; null after close_connections().
  infra::PgOutbox& outbox() { return *outbox_; }
  // The first instance as the steps reach it: through its fault proxy and its
  // process clock when the stack has them.
  infra::RemoteApi& remote() { return instance(0); }
  const ServicesDescription& description() const { return description_; }

  infra::RemoteApi& instance(std::size_t index) override;
  infra::ProcessClock* process_clock(std::size_t index) override;
  std::string instance_name(std::size_t index) const override;
  infra::ProcessClock* store_clock() override { return stack_->store_clock(); }
  std::string store_name() const override { return stack_->store() ? stack_->store()->name() : std::string(); }
  std::optional<std::int64_t> store_wall_clock_s() override {
    return stack_->store() ? stack_->store()->wall_clock_s() : std::nullopt;
  }
  bool paused() const override { return stack_->paused(); }
  void settle() override { stack_->settle_instances(); }

  // Every instance reached so far, as the evidence's environment.clock lists
  // them: name, the service's URL, the URL the driver sent to (its fault
  // proxy's, when it has one) and, in real-clock mode, its clock file.
  nlohmann::json instances_json() const;

  // Closes the connections and keeps the services (sweep workers open their own).
  void close_connections();

 private:
  // One instance's client: HTTP, then what the stack puts around it.
  struct Client {
    InstanceEndpoint endpoint;
    std::unique_ptr<infra::HttpRemote> http;
    std::unique_ptr<infra::OwnWireRemote> own_wire;  // a service of its own wire, instead of http
    std::unique_ptr<infra::RemoteApi> proxied;       // counts the fault proxy's dropped answers
    std::unique_ptr<infra::RemoteApi> clocked;       // sets the process clock before each request
    infra::RemoteApi* outer = nullptr;
  };
  Client connect(std::size_t index);

  SessionOptions options_;
  std::unique_ptr<Stack> stack_;
  std::unique_ptr<infra::PgOutbox> outbox_;
  infra::PostTally post_tally_;  // the POSTs every instance of a service of its own wire took
  std::vector<Client> clients_;  // one per instance reached so far
  ServicesDescription description_;
};

// What is wrong with the service options, found before anything starts:
// --postgres-bin without the server binaries, a remote-effect binary that
// cannot be found, or a --remote-url that does not parse; with the in-process
// engine, any option that names or configures a service, a real clock, ack
// loss by the fault proxy, or a target. Nothing when usable.
std::optional<std::string> service_options_problem(const StackOptions& services);

// Against a running remote (--remote-url), a scenario that declares a dedupe
// mode the service does not run in; nothing when all agree. An unreachable
// remote is left to the run, which reports it as an infrastructure error.
std::optional<std::string> remote_mode_problem(const StackOptions& services,
                                               const std::vector<scenario::Scenario>& scenarios);

// Against --remote-url or --database-url, a scenario with a step that
// restarts or pauses that service, which needs one skewbench started; nothing
// when every such step can run.
std::optional<std::string> control_step_problem(const StackOptions& services,
                                                const std::vector<scenario::Scenario>& scenarios);

// A scenario with an instance per node against a remote skewbench does not
// start (--remote-url), or one that listens on one fixed port (--remote-port).
std::optional<std::string> instances_problem(const StackOptions& services,
                                             const std::vector<scenario::Scenario>& scenarios);

// What a service of its own wire (StackOptions::own_wire) cannot run: a
// scenario whose TTL is not the one the service is configured with, one that
// switches the dedupe mode or reads service-wide state (gc, the temporal
// fence: skewbench's protocol only), and ack loss by header.
std::optional<std::string> own_wire_problem(const StackOptions& services,
                                            const std::vector<scenario::Scenario>& scenarios);

// With the in-process engine, a scenario it cannot model: a step that
// restarts, hangs or kills a process (the remote, PostgreSQL, a store) or an
// instance per node, naming the step or field; nothing on the real engine.
std::optional<std::string> in_process_scenario_problem(const StackOptions& services,
                                                       const std::vector<scenario::Scenario>& scenarios);

// In --clock-mode real, a scenario whose T0 a process clock cannot be set to
// (infra::process_clock_range_problem); nothing in logical mode, or when all can.
std::optional<std::string> clock_mode_problem(const StackOptions& services,
                                              const std::vector<scenario::Scenario>& scenarios);

// The result of a scenario that never ran because of `error`: ERROR, every
// expectation unmeasured, so no artifact can read it as a pass.
ScenarioResult never_ran(const scenario::Scenario& scenario, const std::string& error);

}  // namespace skewbench::runner
