#include "runner/stack.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>
#include <utility>

#include <unistd.h>

#include "common/errors.hpp"
#include "common/text.hpp"
#include "infra/fault_proxy.hpp"
#include "infra/postgres_cluster.hpp"
#include "infra/process_clock.hpp"
#include "remote_effect/launcher.hpp"

namespace skewbench::runner {
namespace fs = std::filesystem;

std::string find_remote_effect_binary(const std::optional<std::string>& given) {
  if (given) {
    if (::access(given->c_str(), X_OK) == 0) return *given;
    throw InfrastructureError("remote-effect binary " + *given + " is not an executable file");
  }
  if (const char* env = std::getenv("SKEWBENCH_REMOTE_EFFECT_BIN"); env && *env) {
    if (::access(env, X_OK) == 0) return env;
    throw InfrastructureError(std::string("SKEWBENCH_REMOTE_EFFECT_BIN=") + env + " is not an executable file");
  }
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto sibling = self.parent_path() / "remote-effect";
    if (::access(sibling.c_str(), X_OK) == 0) return sibling.string();
  }
  if (const auto found = find_on_path("remote-effect")) return found->string();
  throw InfrastructureError("cannot find the remote-effect executable; pass --remote-effect-bin or --remote-url");
}

namespace {

// The -c settings of a started cluster under the profile.
std::vector<std::string> cluster_settings(const StackOptions& options) {
  if (options.durability_or_durable() == Durability::durable) return {};
  return {"fsync=off", "full_page_writes=off",
          std::string("synchronous_commit=") + (options.database_restarts ? "on" : "off")};
}

// The first keeps the names it always had; the others are numbered. A
// target's instances are named after it; a service of --remote-command is
// not remote-effect, whatever it runs.
std::string instance_name(const StackOptions& options, unsigned index) {
  const auto base = options.target.is_object() ? options.target.value("name", "service")
                    : options.remote_command   ? std::string("service")
                                               : std::string("remote-effect");
  return index == 0 ? base : base + "-" + std::to_string(index + 1);
}

std::string service_name(const remote_effect::LaunchOptions& launch) {
  return launch.command ? "the service of --remote-command" : "remote-effect";
}

// `what`: the service as a message names it.
std::unique_ptr<remote_effect::RemoteEffectProcess> start_remote(const remote_effect::LaunchOptions& launch,
                                                                 const std::string& what) {
  try {
    return std::make_unique<remote_effect::RemoteEffectProcess>(launch);
  } catch (const InfrastructureError&) {
    throw;
  } catch (const std::exception& e) {
    throw InfrastructureError("cannot start " + what + ": " + e.what());
  }
}

// Runs `remote` in dedupe mode `mode`: restarts it on the same state file and
// port when it runs another, so its clients keep their URL.
void switch_dedupe_mode(std::unique_ptr<remote_effect::RemoteEffectProcess>& remote,
                        remote_effect::LaunchOptions& launch, remote_effect::DedupeMode mode) {
  if (launch.dedupe == mode) return;
  launch.dedupe = mode;
  launch.port = remote->port();
  try {
    remote.reset();
    remote = std::make_unique<remote_effect::RemoteEffectProcess>(launch);
  } catch (const std::exception& e) {
    throw InfrastructureError("cannot restart " + service_name(launch) + " in dedupe mode " +
                              std::string(remote_effect::dedupe_mode_name(mode)) + ": " + e.what());
  }
}

void say_starting_remote(const StackOptions& options, const std::string& binary, unsigned instances) {
  std::cerr << "skewbench: starting "
            << (options.remote_command ? "the remote service: " + *options.remote_command
                                       : "remote-effect (" + binary + ")")
            << (instances > 1 ? " x" + std::to_string(instances) + ", one per job" : "")
            << (options.clock_mode == ClockMode::real
                    ? ", with libfaketime preloaded (whether it reads the clock skewbench drives is checked at "
                      "each reading of it)"
                    : "")
            << "\n";
}

// How one instance is started: remote-effect's binary, or the service command
// with its placeholders, readiness and stop (a store's placeholders are added
// by the caller).
std::unique_ptr<remote_effect::LaunchOptions> launch_options(const StackOptions& options, const std::string& binary,
                                                             const std::filesystem::path& state_db) {
  auto launch = std::make_unique<remote_effect::LaunchOptions>();
  launch->binary = binary;
  launch->state_db = state_db;
  launch->sync = options.remote_sync.value_or(
      options.durability_or_durable() == Durability::durable ? std::string("full") : std::string("normal"));
  if (options.remote_command) {
    launch->command = options.remote_command;
    launch->port = options.remote_port.value_or(0);  // 0: a free one, kept across restarts
    launch->placeholders = options.remote_placeholders;
    launch->ready = options.remote_ready;
    launch->ready_timeout = options.remote_ready_timeout;
    launch->stopping = options.remote_stopping;
  }
  return launch;
}

}  // namespace

Stack::Stack(const StackOptions& options) : options_(options), fault_counts_(std::make_shared<infra::FaultCounts>()) {
  // service_options_problem() names this to the user before anything starts.
  if (options.clock_mode == ClockMode::real && options.remote_url) {
    throw InfrastructureError("--clock-mode real drives the clock of a service skewbench starts, not of --remote-url");
  }
  if (!options.database_url || !options.remote_url) work_dir_ = std::make_unique<TempDir>("skewbench-run");
  if (options.database_url) {
    database_url_ = *options.database_url;
  } else {
    auto binaries = infra::find_postgres_binaries(infra::default_postgres_search(options.postgres_bin));
    if (!options.quiet) {
      std::cerr << "skewbench: starting a throwaway PostgreSQL cluster (" << binaries.version << ", " << binaries.source
                << ": " << binaries.bin_dir.string() << ")\n";
    }
    cluster_ = std::make_unique<infra::PostgresCluster>(std::move(binaries), cluster_settings(options));
    say_ports_given_up("PostgreSQL", cluster_->ports_given_up());
    database_url_ = cluster_->url();
  }
  if (options.remote_url) {
    remote_url_ = *options.remote_url;
    external_proxy_ = fault_proxy_for(remote_url_);
    return;
  }
  if (options.store) start_store(*options.store);
  if (options.own_wire) start_effect_sink();
  const auto binary = options.remote_command ? std::string() : find_remote_effect_binary(options.remote_effect_binary);
  const unsigned instances = std::max(1u, options.remote_instances);
  if (options.remote_port && instances > 1) {
    throw InfrastructureError("--remote-port " + std::to_string(*options.remote_port) + " is one port for " +
                              std::to_string(instances) + " remote instances; run with --jobs 1");
  }
  if (!options.quiet) say_starting_remote(options, binary, instances);
  for (unsigned i = 0; i < instances; ++i) {
    const auto name = instance_name(options, i);
    auto launch = launch_options(options, binary, work_dir_->path() / (name + ".sqlite3"));
    if (options.remote_command && store_) launch->placeholders.merge(store_->placeholders());
    remotes_.push_back(start_instance(name, std::move(launch)));
  }
  remote_url_ = remotes_.front().process->base_url();
}

std::filesystem::path Stack::log_dir() const {
  if (!options_.log_dir) return work_dir_->path();
  std::error_code ec;
  std::filesystem::create_directories(*options_.log_dir, ec);
  if (ec) throw InfrastructureError("cannot create " + options_.log_dir->string() + ": " + ec.message());
  return *options_.log_dir;
}

Stack::Started Stack::start_instance(std::string name, std::unique_ptr<remote_effect::LaunchOptions> launch) const {
  Started started;
  started.name = std::move(name);
  launch->stderr_path = (log_dir() / (started.name + ".log")).string();
  if (launch->command) {
    // Each instance calls the sink at a URL of its own, so that every call
    // names the instance that made it.
    if (effect_sink_) launch->placeholders["{sink_url}"] = effect_sink_->url(started.name);
    for (const auto& [variable, value] : options_.remote_env) {
      launch->env[variable] = text::expand_placeholders(value, launch->placeholders, false);
    }
  }
  if (options_.clock_mode == ClockMode::real) {
    const bool own_library = options_.remote_wall_clock == infra::ClockLibrary::skewbench;
    started.clock = std::make_unique<infra::ProcessClock>(
        work_dir_->path() / (started.name + ".clock"),
        own_library ? infra::find_wallclock_library() : infra::find_libfaketime(options_.libfaketime), 0,
        options_.remote_wall_clock);
    launch->clock = remote_effect::ClockSource::system;
    for (const auto& [variable, value] : started.clock->environment()) launch->env[variable] = value;
  }
  started.process = start_remote(*launch, label(started.name, *launch));
  say_ports_given_up(label(started.name, *launch), started.process->ports_given_up());
  if (started.clock) {
    // Its rows hang on a clock it reads: one it does not read gives no verdict.
    const auto why =
        infra::clock_not_reached(started.process->pid(), started.process->port(), started.clock->library());
    if (why) {
      throw InfrastructureError(label(started.name, *launch) + " does not read the clock skewbench drives: " + *why +
                                "; no row may hang on its clock (docs/real-clocks.md)");
    }
  }
  started.launch = std::move(launch);
  started.fault_proxy = fault_proxy_for(started.process->base_url());
  return started;
}

void Stack::start_effect_sink() {
  // Wall time only labels the calls in the evidence; no decision reads it.
  const auto wall_clock_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  effect_sink_ = std::make_unique<infra::EffectSink>(
      infra::EffectSink::Options{.operation_id = options_.sink_operation_id, .now_unix_ms = wall_clock_ms});
  if (!options_.quiet) std::cerr << "skewbench: effect sink listening on 127.0.0.1:" << effect_sink_->port() << "\n";
}

void Stack::start_store(const infra::StoreOptions& store) {
  std::map<std::string, std::string> clock_env;
  if (options_.clock_mode == ClockMode::real) {
    const auto library = infra::kClockLibraries.parse(store.wall_clock).value_or(infra::ClockLibrary::libfaketime);
    store_clock_ = std::make_unique<infra::ProcessClock>(work_dir_->path() / ("store-" + store.name + ".clock"),
                                                         library == infra::ClockLibrary::skewbench
                                                             ? infra::find_wallclock_library()
                                                             : infra::find_libfaketime(options_.libfaketime),
                                                         0, library);
    clock_env = store_clock_->environment();
  }
  if (!options_.quiet) std::cerr << "skewbench: starting the service's store, " << store.name << "\n";
  store_ = std::make_unique<infra::StoreProcess>(store, work_dir_->path() / ("store-" + store.name + "-data"),
                                                 log_dir() / ("store-" + store.name + ".log"), std::move(clock_env));
  say_ports_given_up("store " + store.name, store_->ports_given_up());
}

void Stack::say_ports_given_up(const std::string& what, const std::vector<std::string>& given_up) const {
  if (options_.quiet) return;
  for (const auto& port : given_up) {
    std::cerr << "skewbench: " << what
              << " could not have the port skewbench chose, and was started on another: " << port << "\n";
  }
}

std::vector<std::string> Stack::ports_given_up() const {
  std::vector<std::string> out;
  const auto add = [&](const std::string& what, const std::vector<std::string>& given_up) {
    for (const auto& port : given_up) out.push_back(what + " was started on another port: " + port);
  };
  if (cluster_) add("PostgreSQL", cluster_->ports_given_up());
  if (store_) add("store " + store_->name(), store_->ports_given_up());
  for (const auto* started : {&remotes_, &extra_instances_}) {
    for (const auto& instance : *started) {
      add(label(instance.name, *instance.launch), instance.process->ports_given_up());
    }
  }
  return out;
}

std::unique_ptr<infra::FaultProxy> Stack::fault_proxy_for(const std::string& service_url) const {
  if (options_.ack_loss_or_default() != infra::AckLoss::proxy) return nullptr;
  try {
    return std::make_unique<infra::FaultProxy>(service_url, options_.http_limits(), fault_counts_);
  } catch (const std::invalid_argument& e) {
    throw InfrastructureError(std::string("fault proxy: ") + e.what());
  }
}

InstanceEndpoint Stack::endpoint_of(const Started& started) {
  const auto url = started.process->base_url();
  return {.name = started.name,
          .service_url = url,
          .driver_url = started.fault_proxy ? started.fault_proxy->base_url() : url,
          .clock = started.clock.get(),
          .fault_proxy = started.fault_proxy.get()};
}

InstanceEndpoint Stack::instance(std::size_t index) {
  if (remotes_.empty()) {
    if (index > 0) {
      throw InfrastructureError("a scenario with an instance per node needs instances skewbench starts; " +
                                remote_url_ + " is one external service");
    }
    return {.name = "remote",
            .service_url = remote_url_,
            .driver_url = external_proxy_ ? external_proxy_->base_url() : remote_url_,
            .clock = nullptr,
            .fault_proxy = external_proxy_.get()};
  }
  if (index == 0) return endpoint_of(remotes_.front());
  if (options_.remote_port) {
    throw InfrastructureError("--remote-port " + std::to_string(*options_.remote_port) +
                              " is one port, and the scenario runs an instance per node");
  }
  while (extra_instances_.size() < index) {
    const auto& first = remotes_.front();
    auto launch = std::make_unique<remote_effect::LaunchOptions>(*first.launch);
    launch->port = 0;  // a free one, kept across restarts
    const auto name = first.name + "@" + std::to_string(extra_instances_.size() + 2);
    if (!options_.quiet) std::cerr << "skewbench: starting " << name << " on the same state file\n";
    extra_instances_.push_back(start_instance(name, std::move(launch)));
  }
  return endpoint_of(extra_instances_[index - 1]);
}

std::vector<Stack::Started*> Stack::first_remote_instances() {
  std::vector<Started*> out;
  if (remotes_.empty()) return out;
  out.push_back(&remotes_.front());
  for (auto& extra : extra_instances_) out.push_back(&extra);
  return out;
}

std::vector<std::string> Stack::remote_urls() const {
  if (remotes_.empty()) return {remote_url_};
  std::vector<std::string> urls;
  for (const auto& r : remotes_) urls.push_back(r.process->base_url());
  return urls;
}

// One thread that waits out a pause and sends SIGCONT; destroying it resumes
// the processes at once, so that a run never ends with a stopped process.
class Stack::Resumer {
 public:
  Resumer(std::vector<pid_t> pids, std::chrono::milliseconds duration)
      : pids_(std::move(pids)),
        until_(std::chrono::steady_clock::now() + duration),
        thread_([this] { wait_then_resume(); }) {}
  ~Resumer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      cancelled_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

 private:
  void wait_then_resume() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_until(lock, until_, [this] { return cancelled_; });
    // Resumed first, then continued: a process that answers is never read as
    // paused, however late this thread runs after its SIGCONT.
    resumed_.store(true);
    for (const auto pid : pids_) ::kill(pid, SIGCONT);
  }

 public:
  bool resumed() const { return resumed_.load(); }

 private:
  std::atomic<bool> resumed_{false};

  std::vector<pid_t> pids_;
  std::chrono::steady_clock::time_point until_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool cancelled_ = false;
  std::thread thread_;
};

Stack::~Stack() = default;

void Stack::pause_remote(std::chrono::milliseconds duration) {
  if (remotes_.empty()) throw InfrastructureError("the remote-effect service is external and cannot be paused");
  resumer_.reset();  // an earlier pause ends first
  std::vector<pid_t> stopped;
  for (const auto* instance : first_remote_instances()) {
    if (::kill(instance->process->pid(), SIGSTOP) != 0) {
      for (const auto pid : stopped) ::kill(pid, SIGCONT);
      throw InfrastructureError("cannot stop " + instance->name + " (SIGSTOP)");
    }
    stopped.push_back(instance->process->pid());
  }
  resumer_ = std::make_unique<Resumer>(std::move(stopped), duration);
}

bool Stack::paused() const { return resumer_ && !resumer_->resumed(); }

void Stack::restart_database(bool immediate) {
  if (!cluster_) throw InfrastructureError("the database is external and cannot be restarted");
  if (immediate) cluster_->stop_immediately();
  cluster_->restart();
}

const infra::PostgresBinaries* Stack::postgres_binaries() const { return cluster_ ? &cluster_->binaries() : nullptr; }

void Stack::restart_remote() {
  if (remotes_.empty()) throw InfrastructureError("the remote-effect service is external and cannot be restarted");
  resumer_.reset();  // a paused process is resumed before it is asked to stop
  for (auto* instance : first_remote_instances()) {
    try {
      instance->process->restart();
    } catch (const std::exception& e) {
      throw InfrastructureError("cannot restart " + label(instance->name, *instance->launch) + ": " + e.what());
    }
  }
}

std::string Stack::kill_instance(std::size_t index) {
  const auto instances = first_remote_instances();
  if (instances.empty()) throw InfrastructureError("the service is external and cannot be killed");
  if (index >= instances.size()) {
    throw InfrastructureError("instance " + std::to_string(index + 1) + " of the service is not running (" +
                              std::to_string(instances.size()) + " started)");
  }
  resumer_.reset();  // a paused process is resumed before it is killed
  auto& instance = *instances[index];
  instance.process->kill_hard();
  try {
    instance.process->restart();
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    throw InfrastructureError("cannot start " + label(instance.name, *instance.launch) +
                              " again after killing it: " + e.what());
  }
  return instance.name;
}

void Stack::settle_instances() {
  if (remotes_.empty()) return;
  resumer_.reset();  // a paused process is resumed before it is asked to stop
  // A call made a little after an answer (a background task, a timer)
  // lands while the instances still run, whatever the milliseconds.
  if (effect_sink_) {
    effect_sink_->wait_quiet(kSettleQuiet, kSettleAtMost);
    std::chrono::microseconds slowest_answer{0};
    for (auto* instance : first_remote_instances()) {
      // One that gives no answer in time (stalled, or not HTTP) tells nothing of the pace.
      const auto took = instance->process->answer_time(kSettleAnswerDeadline);
      slowest_answer = std::max(slowest_answer, took.value_or(std::chrono::microseconds(0)));
    }
    const auto further =
        std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(slowest_answer * kSettleAnswerTimes),
                   kSettleQuietAfterAnswer, kSettleAtMost);
    effect_sink_->wait_quiet(further, kSettleAtMost);
  }
  for (auto* instance : first_remote_instances()) {
    if (!instance->process->running()) continue;
    instance->process->stop();
    instance->settled = true;
  }
}

void Stack::start_stopped_instances() {
  for (auto* instance : first_remote_instances()) {
    if (instance->process->running()) continue;
    const bool settled = std::exchange(instance->settled, false);
    if (!options_.quiet && !settled) {
      std::cerr << "skewbench: " << label(instance->name, *instance->launch)
                << " is not running (it stopped or did not start again in the scenario before); starting it\n";
    }
    try {
      instance->process->restart();
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& e) {
      throw InfrastructureError(label(instance->name, *instance->launch) +
                                " stopped in a scenario before, and cannot start again: " + e.what());
    }
  }
}

std::string Stack::label(const std::string& name, const remote_effect::LaunchOptions& launch) const {
  return options_.target.is_object() ? "target " + options_.target.value("name", "") + " (" + name + ")"
                                     : service_name(launch) + " (" + name + ")";
}

void Stack::restart_store() {
  if (!store_) throw InfrastructureError("the service has no store process of its own to restart");
  store_->restart();
}

void Stack::use_dedupe_mode(remote_effect::DedupeMode mode) {
  if (remotes_.empty()) {
    throw InfrastructureError("the remote-effect service is external and cannot change its dedupe mode");
  }
  // The same state file and port: the client keeps its URL, the ledger stays.
  for (auto& r : remotes_) switch_dedupe_mode(r.process, *r.launch, mode);
  for (auto& r : extra_instances_) switch_dedupe_mode(r.process, *r.launch, mode);
}

}  // namespace skewbench::runner
