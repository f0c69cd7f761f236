#include "runner/session.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <vector>

#include "common/errors.hpp"
#include "common/text.hpp"
#include "infra/postgres_cluster.hpp"
#include "infra/process_clock.hpp"
#include "infra/remote_decorators.hpp"
#include "remote_effect/launcher.hpp"

namespace skewbench::runner {

namespace {

// Records that `name` is used by `source`; throws naming the other file when
// it already was.
void claim(std::map<std::string, std::string>& used, const std::string& name, const std::string& source,
           const std::string& json_path, const std::string& what, const std::string& verb) {
  if (const auto [it, inserted] = used.emplace(name, source); !inserted) {
    throw scenario::ScenarioFileError(source, json_path,
                                      what + " \"" + name + "\" is also " + verb + " by " + it->second);
  }
}

}  // namespace

std::vector<scenario::Scenario> load_scenarios(const std::vector<std::string>& paths) {
  std::vector<scenario::Scenario> out;
  std::map<std::string, std::string> ids;
  std::map<std::string, std::string> sections;
  for (const auto& file : scenario::collect_scenario_files(paths)) {
    auto s = scenario::load_scenario_file(file);
    claim(ids, s.id, s.source, "$.id", "scenario id", "used");
    if (s.report_as) claim(sections, *s.report_as, s.source, "$.report_as", "section", "reported");
    out.push_back(std::move(s));
  }
  return out;
}

Session::Session(const SessionOptions& options) : options_(options), stack_(std::make_unique<Stack>(options.services)) {
  if (options.dedupe_mode && stack_->embedded_remote()) stack_->use_dedupe_mode(*options.dedupe_mode);
  outbox_ = std::make_unique<infra::PgOutbox>(stack_->database_url(), options.run_id,
                                              infra::DbTimeouts{.timeout_s = options.services.db_timeout_s});
  const auto& first = clients_.emplace_back(connect(0));
  const auto* clock = first.endpoint.clock;
  const auto* proxy = first.endpoint.fault_proxy;
  nlohmann::json clock_json = {{"mode", to_string(options.services.clock_mode)},
                               {"ack_loss", infra::kAckLosses.name(options.services.ack_loss_or_default())},
                               {"libfaketime", clock ? nlohmann::json(clock->library().string()) : nullptr},
                               {"fault_proxy_url", proxy ? nlohmann::json(proxy->base_url()) : nullptr}};
  description_ = {
      .database = infra::describe_database(outbox_->info(), stack_->database_url(), stack_->postgres_binaries()),
      .remote_health = first.outer->health().body,
      .remote_url = stack_->remote_url(),
      .embedded_remote = stack_->embedded_remote(),
      .remote_command = options.services.remote_command,
      .clock = std::move(clock_json),
      .target = options.services.target,
      .store = nullptr};
  if (const auto* store = stack_->store()) {
    description_.store = {{"name", store->name()},
                          {"port", store->port()},
                          {"command", options.services.store->command},
                          {"wall_clock", options.services.store->wall_clock},
                          {"clock_probe", options.services.store->clock_probe.empty()
                                              ? nlohmann::json(nullptr)
                                              : nlohmann::json(options.services.store->clock_probe)}};
  }
}

Session::~Session() = default;

Session::Client Session::connect(std::size_t index) {
  Client client;
  client.endpoint = stack_->instance(index);
  if (const auto& wire = options_.services.own_wire) {
    // Counted by skewbench: effects at its sink, POSTs as it sends them, lost
    // answers at its proxy. The service is never asked.
    const auto* proxy = client.endpoint.fault_proxy;
    client.own_wire = std::make_unique<infra::OwnWireRemote>(*wire, client.endpoint.driver_url,
                                                             options_.services.http_limits(), *stack_->effect_sink(),
                                                             post_tally_, proxy ? &proxy->shared_counts() : nullptr);
    client.outer = client.own_wire.get();
  } else {
    client.http =
        std::make_unique<infra::HttpRemote>(client.endpoint.driver_url, options_.services.http_limits(),
                                            infra::WireOptions{.sends_logical_time = client.endpoint.clock == nullptr,
                                                               .ack_loss = options_.services.ack_loss_or_default()});
    client.outer = client.http.get();
  }
  if (client.endpoint.fault_proxy && !client.own_wire) {
    client.proxied =
        std::make_unique<infra::ProxiedRemote>(*client.outer, client.endpoint.fault_proxy->shared_counts());
    client.outer = client.proxied.get();
  }
  if (client.endpoint.clock) {
    // A service told nothing of the time that does not read its own clock
    // would judge every request clock-less: nothing it says could be held to a time.
    if (client.outer->health().answer.clock == remote_effect::ClockSource::logical) {
      throw InfrastructureError(client.endpoint.name +
                                " reports \"clock\": \"logical\": in real-clock mode it must read its own clock "
                                "(remote-effect --clock system)");
    }
    client.clocked = std::make_unique<infra::ClockedRemote>(*client.outer, *client.endpoint.clock);
    client.outer = client.clocked.get();
  }
  return client;
}

infra::RemoteApi& Session::instance(std::size_t index) {
  if (clients_.empty()) throw std::logic_error("Session::instance after close_connections()");
  while (clients_.size() <= index) clients_.push_back(connect(clients_.size()));
  return *clients_[index].outer;
}

infra::ProcessClock* Session::process_clock(std::size_t index) {
  instance(index);
  return clients_[index].endpoint.clock;
}

std::string Session::instance_name(std::size_t index) const {
  return index < clients_.size() ? clients_[index].endpoint.name : "instance " + std::to_string(index + 1);
}

nlohmann::json Session::instances_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& client : clients_) {
    const auto& e = client.endpoint;
    out.push_back({{"name", e.name},
                   {"service_url", e.service_url},
                   {"driver_url", e.driver_url},
                   {"clock_file", e.clock ? nlohmann::json(e.clock->timestamp_file().string()) : nullptr}});
  }
  return out;
}

void Session::close_connections() {
  clients_.clear();
  outbox_.reset();
}

ScenarioResult never_ran(const scenario::Scenario& scenario, const std::string& error) {
  ScenarioResult r;
  r.scenario_id = scenario.id;
  r.policy = std::string(scenario.policy->name());
  r.error = error;
  for (const auto& e : scenario.expectations) r.checks.push_back({e.id, e.expected, nullptr, false, false});
  return r;
}

namespace {

// The options the in-process engine has no use for: each names a service it
// does not start, or a fault it does not model (docs/engines.md).
std::optional<std::string> in_process_problem(const StackOptions& services) {
  std::vector<std::string> given;
  const auto note = [&given](bool is_given, const char* what) {
    if (is_given) given.emplace_back(what);
  };
  note(services.database_url.has_value(), "--database-url");
  note(services.postgres_bin.has_value(), "--postgres-bin");
  note(services.remote_url.has_value(), "--remote-url");
  note(services.remote_effect_binary.has_value(), "--remote-effect-bin");
  note(services.remote_command.has_value(), "--remote-command");
  note(services.remote_port.has_value(), "--remote-port");
  note(services.remote_sync.has_value(), "--remote-sync");
  note(services.durability.has_value(), "--durability");
  note(services.clock_mode == ClockMode::real, "--clock-mode real (a process's own clock)");
  note(services.libfaketime.has_value(), "--libfaketime");
  note(services.ack_loss == infra::AckLoss::proxy, "--ack-loss proxy (the fault proxy)");
  note(!services.target.is_null() || services.own_wire.has_value() || services.store.has_value(),
       "--target (a service of its own)");
  if (given.empty()) return std::nullopt;
  return "--engine in-process runs remote-effect's rules and an outbox double in this process and starts no "
         "service, so it takes no " +
         text::join(given, ", ") + " (docs/engines.md); drop " + (given.size() == 1 ? "it" : "them") +
         ", or use --engine real";
}

}  // namespace

std::optional<std::string> service_options_problem(const StackOptions& services) {
  if (services.engine == infra::Engine::in_process) return in_process_problem(services);
  if (services.clock_mode == ClockMode::real) {
    if (services.remote_url) {
      return "--clock-mode real drives the clock of a service skewbench starts; drop --remote-url (or give "
             "--remote-command to let skewbench start your service under libfaketime)";
    }
    try {
      infra::find_libfaketime(services.libfaketime);
      if (services.store && services.store->wall_clock == "skewbench") infra::find_wallclock_library();
    } catch (const std::exception& e) {
      return "--clock-mode real: " + std::string(e.what());
    }
  }
  if (services.postgres_bin && !infra::is_postgres_bindir(*services.postgres_bin)) {
    return "--postgres-bin " + *services.postgres_bin + ": not a directory holding initdb, pg_ctl and postgres";
  }
  if (services.remote_command) {
    // A template that cannot be expanded is known now, not after PostgreSQL started.
    try {
      remote_effect::LaunchOptions launch;
      launch.placeholders = services.remote_placeholders;
      if (services.store)
        launch.placeholders.merge(std::map<std::string, std::string>{{"{store_port}", "0"}, {"{store_dir}", "/"}});
      if (services.own_wire) launch.placeholders["{sink_url}"] = "http://127.0.0.1:1/instance/check";
      remote_effect::expand_command(*services.remote_command, launch, 0);
    } catch (const std::invalid_argument& e) {
      // A target's command is its file's, not an option the user gave.
      return (services.target.is_object()
                  ? "target " + services.target.value("name", std::string()) + ": $.service.command: "
                  : std::string("--remote-command: ")) +
             e.what();
    }
    return std::nullopt;
  }
  if (!services.remote_url) {
    // A remote-effect that cannot be found is known now, not after PostgreSQL started.
    try {
      find_remote_effect_binary(services.remote_effect_binary);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::nullopt;
  }
  try {
    infra::parse_http_url(*services.remote_url);
  } catch (const std::invalid_argument& e) {
    return std::string("--remote-url: ") + e.what();
  }
  return std::nullopt;
}

std::optional<std::string> remote_mode_problem(const StackOptions& services,
                                               const std::vector<scenario::Scenario>& scenarios) {
  if (!services.remote_url) return std::nullopt;
  std::string running;
  try {
    infra::HttpRemote remote(*services.remote_url, services.http_limits());
    const auto mode = remote.health().answer.idempotency_mode;
    running = mode ? std::string(remote_effect::dedupe_mode_name(*mode)) : std::string("(not reported)");
  } catch (const std::exception&) {
    return std::nullopt;
  }
  for (const auto& s : scenarios) {
    if (!s.dedupe_mode || remote_effect::parse_dedupe_mode(running) == s.dedupe_mode) continue;
    const std::string wanted(remote_effect::dedupe_mode_name(*s.dedupe_mode));
    return s.source + ": needs remote dedupe mode \"" + wanted + "\" but " + *services.remote_url + " runs \"" +
           running + "\"; start it with --dedupe " + wanted + " or drop --remote-url";
  }
  return std::nullopt;
}

std::optional<std::string> clock_mode_problem(const StackOptions& services,
                                              const std::vector<scenario::Scenario>& scenarios) {
  if (services.clock_mode != ClockMode::real) return std::nullopt;
  for (const auto& s : scenarios) {
    if (auto problem = infra::process_clock_range_problem(s.t0_s)) {
      return s.source + ": $.t0_s: --clock-mode real sets the service's wall clock to the scenario's times, and " +
             *problem;
    }
  }
  return std::nullopt;
}

std::optional<std::string> instances_problem(const StackOptions& services,
                                             const std::vector<scenario::Scenario>& scenarios) {
  for (const auto& s : scenarios) {
    if (s.instance_count() < 2) continue;
    const std::string what = s.source + ": $.remote.instances: an instance per node is " +
                             std::to_string(s.instance_count()) + " processes of the service, ";
    if (services.remote_url) return what + "which skewbench starts itself; drop --remote-url";
    if (services.remote_port) {
      return what + "and --remote-port " + std::to_string(*services.remote_port) + " is one port";
    }
  }
  return std::nullopt;
}

std::optional<std::string> own_wire_problem(const StackOptions& services,
                                            const std::vector<scenario::Scenario>& scenarios) {
  if (!services.own_wire) return std::nullopt;
  const auto& target = services.own_wire->target;
  if (services.ack_loss_or_default() != infra::AckLoss::proxy) {
    return "target " + target + " speaks its own wire, which has no X-Drop-Ack: its answers are lost by the fault " +
           "proxy; drop --ack-loss header";
  }
  for (const auto& s : scenarios) {
    if (services.service_ttl_s && s.ttl_s != *services.service_ttl_s) {
      return s.source + ": $.ttl_s: " + std::to_string(s.ttl_s) + " s, but target " + target +
             "'s service is configured with " + std::to_string(*services.service_ttl_s) +
             " s ($.service.ttl_s of its target file): a scenario runs at the TTL the service keeps";
    }
    if (s.dedupe_mode) {
      return s.source + ": $.remote.dedupe: target " + target +
             " speaks its own wire; its dedupe mode is its own and cannot be switched";
    }
    if (const auto kinds = s.kinds_that(&steps::StepNeeds::reads_service_wide_state); !kinds.empty()) {
      return s.source + ": " + text::join(kinds, " and ") + " needs skewbench's protocol (the temporal epoch, " +
             "POST /maintenance/gc), which target " + target + " does not speak";
    }
    if (!infra::carries_amount(*services.own_wire) && !s.kinds_that(&steps::StepNeeds::sends_another_amount).empty()) {
      return s.source + ": a post_effect with another amount, but target " + target +
             "'s request carries no {amount} ($.request of its target file): its body would not change";
    }
  }
  return std::nullopt;
}

std::optional<std::string> in_process_scenario_problem(const StackOptions& services,
                                                       const std::vector<scenario::Scenario>& scenarios) {
  if (services.engine != infra::Engine::in_process) return std::nullopt;
  const auto refusal = [](const std::string& what) {
    return what + ", and --engine in-process starts no process (docs/engines.md); use --engine real";
  };
  for (const auto& s : scenarios) {
    std::vector<std::string> kinds;
    for (auto need :
         {&steps::StepNeeds::remote_control, &steps::StepNeeds::database_control, &steps::StepNeeds::store_control}) {
      for (auto& kind : s.kinds_that(need)) {
        if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(std::move(kind));
      }
    }
    if (!kinds.empty()) {
      return refusal(s.source + ": " + text::join(kinds, " and ") + (kinds.size() == 1 ? " acts" : " act") +
                     " on a process of the service or its database");
    }
    if (s.instance_count() >= 2) {
      return refusal(s.source + ": $.remote.instances: an instance per node is " + std::to_string(s.instance_count()) +
                     " processes of the service");
    }
  }
  return std::nullopt;
}

std::optional<std::string> control_step_problem(const StackOptions& services,
                                                const std::vector<scenario::Scenario>& scenarios) {
  for (const auto& s : scenarios) {
    if (!services.store && !s.kinds_that(&steps::StepNeeds::store_control).empty()) {
      return s.source + ": restart_store needs a service whose store runs as a process of its own, which " +
             "skewbench starts (a target's, --target); this service has none";
    }
  }
  for (const auto& s : scenarios) {
    if (!services.own_wire) {
      if (const auto kinds = s.kinds_that(&steps::StepNeeds::provider_control); !kinds.empty()) {
        return s.source + ": " + text::join(kinds, " and ") + (kinds.size() == 1 ? " needs" : " need") +
               " a service whose provider calls reach skewbench's effect sink (a target of its own wire, --target); " +
               "this one performs its effect itself";
      }
    }
  }
  for (const auto& s : scenarios) {
    if (services.remote_url && s.needs_remote_control()) {
      const auto kinds = s.kinds_that(&steps::StepNeeds::remote_control);
      return s.source + ": " + text::join(kinds, " and ") + (kinds.size() == 1 ? " needs" : " need") +
             " a remote started by skewbench; drop --remote-url (or give --remote-command to let skewbench start "
             "and restart your service)";
    }
  }
  for (const auto& s : scenarios) {
    if (services.database_url && s.needs_database_control()) {
      const auto kinds = s.kinds_that(&steps::StepNeeds::database_control);
      return s.source + ": " + text::join(kinds, " and ") + (kinds.size() == 1 ? " needs" : " need") +
             " a PostgreSQL started by skewbench; drop --database-url";
    }
  }
  return std::nullopt;
}

}  // namespace skewbench::runner
