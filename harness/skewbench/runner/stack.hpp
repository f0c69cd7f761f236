#pragma once

// The services a run talks to. Given URLs, the stack uses them as they are;
// without them it starts its own: a throwaway PostgreSQL cluster and a
// remote-effect child process on a temporary SQLite file, both stopped when
// the stack is destroyed (normal end, error or Ctrl-C).

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/files.hpp"
#include "common/vocabulary.hpp"
#include "infra/effect_sink.hpp"
#include "infra/http_remote.hpp"
#include "infra/in_process.hpp"
#include "infra/own_wire_remote.hpp"
#include "infra/ports.hpp"
#include "infra/process_clock.hpp"
#include "infra/store_process.hpp"
#include "remote_effect/launcher.hpp"
#include "steps/step.hpp"

namespace skewbench::infra {
class PostgresCluster;
struct PostgresBinaries;
class ProcessClock;
class FaultProxy;
class FaultCounts;
}  // namespace skewbench::infra

namespace skewbench::runner {

// How much durability the services skewbench starts keep (docs/sweeps.md,
// "Durability"); services given by URL run as they are configured.
//  - durable: PostgreSQL's defaults and remote-effect --sync full: every
//    commit has reached the disk (power-loss durability), as the published
//    runs had.
//  - throwaway: PostgreSQL fsync=off, full_page_writes=off and
//    synchronous_commit=off (on when a step stops the database, whose last
//    commits must survive it), remote-effect --sync normal: every commit
//    reaches the operating system, so a killed process loses nothing, but a
//    power loss may. The cluster and state files are deleted at the end anyway.
enum class Durability { durable, throwaway };
inline constexpr auto kDurabilities =
    vocabulary<Durability>({{Durability::durable, "durable"}, {Durability::throwaway, "throwaway"}});
constexpr std::string_view to_string(Durability durability) { return kDurabilities.name(durability); }

// How a started service learns the time a scenario asks of it
// (docs/real-clocks.md); whose time that is, the scenario says ($.remote.clock).
//  - logical: every request carries it in X-Logical-Time (the published wire);
//    the service reads no clock.
//  - real: each instance reads its own wall clock, which skewbench drives
//    under libfaketime (infra::ProcessClock), and the requests carry no time.
enum class ClockMode { logical, real };
inline constexpr auto kClockModes = vocabulary<ClockMode>({{ClockMode::logical, "logical"}, {ClockMode::real, "real"}});
constexpr std::string_view to_string(ClockMode mode) { return kClockModes.name(mode); }

struct StackOptions {
  // --engine: the real stack (the default), or the in-process engine, which
  // starts and reaches no service and takes none of the options below that
  // name or configure one (docs/engines.md).
  infra::Engine engine = infra::Engine::real;
  std::optional<std::string> database_url;  // external PostgreSQL, or start one
  std::optional<std::string> remote_url;    // external remote-effect, or start one
  std::optional<std::string> remote_effect_binary = std::nullopt;
  // --remote-command: start this service of the protocol instead of
  // remote-effect (remote_effect::LaunchOptions::command), restartable and
  // switchable like it.
  std::optional<std::string> remote_command = std::nullopt;
  // --remote-port: the port the service of remote_command listens on, for a
  // service that cannot be told one; else a free port is chosen.
  std::optional<int> remote_port = std::nullopt;
  // --remote-sync; else full when durable, normal when throwaway.
  std::optional<std::string> remote_sync = std::nullopt;
  bool quiet = false;       // no progress lines on stderr
  int http_timeout_s = 30;  // one deadline over each exchange with the remote (--http-timeout)
  // The largest answer body read from the remote (--max-answer-bytes).
  std::size_t max_answer_bytes = http::kDefaultMaxAnswerBytes;
  int db_timeout_s = 30;  // connect and statement on PostgreSQL (--db-timeout)
  // Server binaries of a started cluster (--postgres-bin); else chosen as in infra/postgres_cluster.hpp.
  std::optional<std::string> postgres_bin = std::nullopt;
  // How many remote-effect processes to start, each on its own state file
  // (a sweep starts one per job, so no two cells running at once share the
  // remote's service-wide state). Ignored with remote_url.
  unsigned remote_instances = 1;
  // --durability; run defaults to durable, sweep to throwaway.
  std::optional<Durability> durability = std::nullopt;
  // A step stops PostgreSQL (restart_database): a throwaway cluster then
  // keeps synchronous_commit on.
  bool database_restarts = false;
  // --clock-mode: real needs a remote skewbench starts, one per job.
  ClockMode clock_mode = ClockMode::logical;
  bool clock_mode_given = false;  // --clock-mode was on the command line (a target refuses logical)
  // --libfaketime: the library a real-clock service is started with; else
  // found as infra::find_libfaketime() says.
  std::optional<std::string> libfaketime = std::nullopt;
  // --ack-loss; else header in logical mode, proxy in real mode.
  std::optional<infra::AckLoss> ack_loss = std::nullopt;
  // The service's backing store as a process of its own (a target's Redis),
  // started before the service and restartable by a step; none for
  // remote-effect, whose store is its own SQLite file.
  std::optional<infra::StoreOptions> store = std::nullopt;
  // Added to the environment of each instance of remote_command (a target's
  // service); values may hold the placeholders the command may.
  std::map<std::string, std::string> remote_env = {};
  // More "{name}" placeholders of remote_command and remote_env (a target's
  // {target_dir}); the stack adds its store's {store_port} and {store_dir}.
  std::map<std::string, std::string> remote_placeholders = {};
  // The target the service comes from (targets/<name>/target.json), as the
  // evidence records it; null for remote-effect or --remote-command.
  nlohmann::json target = nullptr;
  // A service of its own wire (a black-box target): how a scenario's POST
  // goes and its answer reads. The stack then starts the effect sink the
  // service calls ({sink_url} in its command and environment, one URL per
  // instance), reading the operation id of a call where `sink_operation_id`
  // says; its effects are counted there.
  std::optional<infra::OwnWire> own_wire = std::nullopt;
  infra::OperationIdSource sink_operation_id = {};
  // Where the logs of the services the stack starts go (NAME.log for each
  // instance, store-NAME.log for the store): a run's evidence keeps them
  // when a scenario is an ERROR (logs/ under --out). Else the stack's
  // temporary folder, removed with it.
  std::optional<std::filesystem::path> log_dir = std::nullopt;
  // The TTL the service is configured with ({ttl_s}); a scenario with
  // another is refused before anything starts.
  std::optional<std::int64_t> service_ttl_s = std::nullopt;
  // How a service of remote_command shows it is ready, how long it may take
  // to be, and how it is stopped and restarted.
  remote_effect::Readiness remote_ready = {};
  std::chrono::milliseconds remote_ready_timeout = std::chrono::seconds(10);
  remote_effect::Stopping remote_stopping = {};
  // The library that moves each instance's wall clock in real-clock mode (a
  // target's $.service.wall_clock; docs/real-clocks.md).
  infra::ClockLibrary remote_wall_clock = infra::ClockLibrary::libfaketime;

  Durability durability_or_durable() const { return durability.value_or(Durability::durable); }
  infra::AckLoss ack_loss_or_default() const {
    return ack_loss.value_or(clock_mode == ClockMode::real ? infra::AckLoss::proxy : infra::AckLoss::header);
  }

  // The limits on each exchange with the remote (--http-timeout, --max-answer-bytes).
  infra::HttpLimits http_limits() const { return {.timeout_s = http_timeout_s, .max_answer_bytes = max_answer_bytes}; }

  // The timeouts and limits in force, as the evidence records them.
  nlohmann::json timeouts_json() const {
    return {{"http_timeout_s", http_timeout_s},
            {"max_answer_bytes", max_answer_bytes},
            {"db_connect_timeout_s", db_timeout_s < 2 ? 2 : db_timeout_s},
            {"db_statement_timeout_s", db_timeout_s},
            {"db_transaction_timeout_s", db_timeout_s + 1}};
  }
};

// Finds the remote-effect executable: the given path, $SKEWBENCH_REMOTE_EFFECT_BIN,
// the directory of the running skewbench executable, then PATH.
std::string find_remote_effect_binary(const std::optional<std::string>& given);

// One instance of the service as the driver reaches it.
struct InstanceEndpoint {
  std::string name;                          // "remote-effect", "remote-effect@2", ...: its log file's name
  std::string service_url;                   // the service itself
  std::string driver_url;                    // where the driver sends requests: the fault proxy, or the service
  infra::ProcessClock* clock = nullptr;      // its wall clock in real-clock mode; else null
  infra::FaultProxy* fault_proxy = nullptr;  // with --ack-loss proxy; else null
};

// Before a scenario's sink count is read (Stack::settle_instances): the quiet
// the effect sink waits for, at most so long; then every instance is asked
// once (RemoteEffectProcess::answer_time, an answer within
// kSettleAnswerDeadline) and the sink waits for a further
// quiet of kSettleAnswerTimes times the slowest answer, at least
// kSettleQuietAfterAnswer, before the instances stop. On a busy machine a
// service's timer fires late, and its answers come late alike.
inline constexpr std::chrono::milliseconds kSettleQuiet{250};
inline constexpr std::chrono::milliseconds kSettleAtMost{5000};
inline constexpr std::chrono::milliseconds kSettleQuietAfterAnswer{100};
inline constexpr int kSettleAnswerTimes = 20;
inline constexpr std::chrono::milliseconds kSettleAnswerDeadline{1000};

class Stack final : public steps::RemoteControl, public steps::DatabaseControl {
 public:
  // Throws InfrastructureError when a service cannot be started.
  explicit Stack(const StackOptions& options);
  ~Stack() override;

  const std::string& database_url() const { return database_url_; }
  // The first remote: the one a run, and every control step, uses.
  const std::string& remote_url() const { return remote_url_; }
  // One remote per sweep job (StackOptions::remote_instances), each on its
  // own state file, or the one external URL.
  std::vector<std::string> remote_urls() const;
  // Each port a start of the stack gave up, and why: taken by another
  // process before the service skewbench chose it for bound it
  // ("PostgreSQL: port 23456: ..."). The run's evidence lists them.
  std::vector<std::string> ports_given_up() const;
  // The binaries of the started cluster; null when the database is external.
  const infra::PostgresBinaries* postgres_binaries() const;
  // Started by skewbench (remote-effect, or the service of --remote-command).
  bool embedded_remote() const { return !remotes_.empty(); }
  // Null when the remote is external and cannot be restarted by us.
  steps::RemoteControl* remote_control() { return embedded_remote() ? this : nullptr; }

  // Null when the database is external.
  steps::DatabaseControl* database_control() { return cluster_ ? this : nullptr; }

  // Instance `index` of the first remote (a scenario's $.remote.instances):
  // 0 is the first remote itself; each other one runs on the first's state
  // file with a port, a log, a process clock and a fault proxy of its own,
  // and is started by the first call that names it. Throws
  // InfrastructureError when the remote is external (index > 0) or an
  // instance cannot start.
  InstanceEndpoint instance(std::size_t index);
  // The instances started so far (at least 1).
  std::size_t instance_count() const { return remotes_.empty() ? 1 : 1 + extra_instances_.size(); }

  // Restarts and pauses act on every instance of the first remote; a dedupe
  // mode switch on every remote.
  // The store process, when the service has one (StackOptions::store), and the
  // wall clock it reads in real-clock mode; else null.
  infra::StoreProcess* store() { return store_.get(); }
  // The effect sink a service of its own wire calls; null for the others.
  infra::EffectSink* effect_sink() { return effect_sink_.get(); }
  infra::ProcessClock* store_clock() { return store_clock_.get(); }

  // A pause_remote step's instances are stopped and not yet let go on.
  bool paused() const;

  // Before a scenario: every instance that is not running (it died, or did
  // not start again, in a scenario before) is started again, so that no
  // scenario inherits another's failure. Throws InfrastructureError when one
  // cannot start.
  void start_stopped_instances();
  // Stops every instance of the first remote as its target says
  // (service.stop: its signal, then SIGKILL after the grace period), a paused
  // one resumed first. Whatever a service does after its answers (a
  // background task, a drain of queued work on its stop signal) has then
  // reached its effect sink: a scenario's count is read after this
  // (docs/targets.md, "Counted at the sink"). The next start_stopped_instances() starts them
  // again, without calling that a failure.
  void settle_instances();

  void restart_remote() override;
  void restart_store() override;
  std::string kill_instance(std::size_t index) override;
  void use_dedupe_mode(remote_effect::DedupeMode mode) override;
  void pause_remote(std::chrono::milliseconds duration) override;
  void restart_database(bool immediate) override;

 private:
  class Resumer;  // sends SIGCONT to paused processes when their time is up
  // A started service process and what goes with it.
  struct Started {
    std::string name;
    std::unique_ptr<remote_effect::LaunchOptions> launch;  // how it was started (to start it again)
    std::unique_ptr<infra::ProcessClock> clock;            // real-clock mode: the wall clock it reads
    std::unique_ptr<remote_effect::RemoteEffectProcess> process;
    std::unique_ptr<infra::FaultProxy> fault_proxy;  // declared after process: stops before it
    bool settled = false;                            // stopped by settle_instances(), not by a failure
  };
  Started start_instance(std::string name, std::unique_ptr<remote_effect::LaunchOptions> launch) const;
  // An instance as a message names it: "target NAME (instance)", or the service and the instance.
  std::string label(const std::string& name, const remote_effect::LaunchOptions& launch) const;
  void start_store(const infra::StoreOptions& store);
  // Says on stderr (unless quiet) each port `what`'s start gave up.
  void say_ports_given_up(const std::string& what, const std::vector<std::string>& given_up) const;
  void start_effect_sink();
  // options_.log_dir (created), else the temporary folder.
  std::filesystem::path log_dir() const;
  std::unique_ptr<infra::FaultProxy> fault_proxy_for(const std::string& service_url) const;
  static InstanceEndpoint endpoint_of(const Started& started);
  // The first remote's instances: remotes_.front() and extra_instances_.
  std::vector<Started*> first_remote_instances();

  StackOptions options_;
  // What every fault proxy of the stack did: an answer dropped in front of
  // one instance counts whichever instance is asked next.
  std::shared_ptr<infra::FaultCounts> fault_counts_;
  std::unique_ptr<TempDir> work_dir_;
  std::unique_ptr<infra::PostgresCluster> cluster_;
  // Declared before the instances: they stop first.
  std::unique_ptr<infra::ProcessClock> store_clock_;
  std::unique_ptr<infra::StoreProcess> store_;
  std::unique_ptr<infra::EffectSink> effect_sink_;  // declared before the instances: outlives their calls
  // The started remotes, one per sweep job; the first is the one a run and
  // every control step use. Empty against an external remote.
  std::vector<Started> remotes_;
  // More instances of the first remote, on its state file (instance 1, 2, ...).
  std::vector<Started> extra_instances_;
  std::unique_ptr<infra::FaultProxy> external_proxy_;  // in front of an external remote (--ack-loss proxy)
  bool settled_ = false;                               // settle_instances() stopped them on purpose
  std::unique_ptr<Resumer> resumer_;  // declared after the instances: resumes them before they are stopped
  std::string database_url_;
  std::string remote_url_;
};

}  // namespace skewbench::runner
