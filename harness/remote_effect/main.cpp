// remote-effect: the separate HTTP effect service, durable in SQLite.
//
//   remote-effect --host 127.0.0.1 --port 8080 --state-db PATH
//                 [--sync full|normal] [--dedupe durable|volatile] [--default-ttl-seconds 60]
//                 [--clock logical|system]
//                 [--max-connections 512] [--idle-timeout-seconds 10]
//                 [--header-timeout-seconds 5] [--body-timeout-seconds 10]
//
// Exit codes: 0 clean shutdown (SIGTERM/SIGINT), 1 unexpected failure,
// 2 bad command line, 3 state database or port unusable.

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <thread>

#include <httplib.h>
#include <pthread.h>
#include <CLI/CLI.hpp>
#include <skewbench/build_info.hpp>

#include "remote_effect/service.hpp"
#include "remote_effect/store.hpp"

namespace {

namespace re = skewbench::remote_effect;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnavailable = 3;

std::string version_text() {
  return std::string("remote-effect ") + skewbench::build_info::kVersion + " (commit " +
         skewbench::build_info::kGitCommit + ", " + skewbench::build_info::kBuildType + ", SQLite " +
         re::Store::sqlite_version() + ", cpp-httplib " + CPPHTTPLIB_VERSION + ")";
}

// SIGTERM and SIGINT are blocked in every thread and taken by one waiting
// thread, which asks the service to stop; nothing runs in a signal handler.
sigset_t termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

int serve(const re::ServiceOptions& options) {
  std::unique_ptr<re::Service> service;
  try {
    service = std::make_unique<re::Service>(options);
  } catch (const re::StoreError& e) {
    std::cerr << "remote-effect: " << e.what() << std::endl;
    return kExitUnavailable;
  }
  try {
    service->bind();
  } catch (const re::BindError& e) {
    std::cerr << "remote-effect: " << e.what() << std::endl;
    return kExitUnavailable;
  }

  std::atomic<bool> finished{false};
  std::thread signal_waiter([&] {
    const sigset_t set = termination_signals();
    const timespec poll_interval{0, 100'000'000};
    while (!finished) {
      const int signal_number = sigtimedwait(&set, nullptr, &poll_interval);
      if (signal_number == SIGTERM || signal_number == SIGINT) {
        std::cerr << "remote-effect: " << (signal_number == SIGTERM ? "SIGTERM" : "SIGINT")
                  << " received, shutting down" << std::endl;
        service->stop();
        return;
      }
    }
  });

  std::cout << service->ready_line().dump() << std::endl;  // endl flushes: the launcher waits for it
  bool served = false;
  try {
    served = service->run();
  } catch (...) {
    finished = true;
    signal_waiter.join();
    throw;
  }
  finished = true;
  signal_waiter.join();
  service.reset();  // closes the database, checkpointing the WAL
  if (!served) {
    std::cerr << "remote-effect: the listening socket failed; stopped serving" << std::endl;
    return kExitUnavailable;
  }
  return 0;
}

// What the command line says, before it becomes ServiceOptions.
struct CommandLine {
  re::ServiceOptions options;
  std::string sync = "full";
  std::string dedupe{re::dedupe_mode_name(re::kDefaultDedupeMode)};
  std::string clock{re::clock_source_name(re::ClockSource::logical)};
  std::string state_db;
  std::int64_t idle_timeout_s = 10;
  std::int64_t header_timeout_s = 5;
  std::int64_t body_timeout_s = 10;

  re::ServiceOptions service_options() const {
    auto out = options;
    out.state_db = state_db;
    out.sync = *re::parse_sync_mode(sync);
    out.dedupe = *re::parse_dedupe_mode(dedupe);
    out.clock = *re::kClockSources.parse(clock);
    out.connections.idle_timeout = std::chrono::seconds(idle_timeout_s);
    out.connections.header_timeout = std::chrono::seconds(header_timeout_s);
    out.connections.body_timeout = std::chrono::seconds(body_timeout_s);
    return out;
  }
};

void add_storage_options(CLI::App& app, CommandLine& cl) {
  app.add_option("--host", cl.options.host, "Address to bind")->capture_default_str();
  app.add_option("--port", cl.options.port, "TCP port; 0 binds any free port")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--state-db", cl.state_db, "SQLite state file (created if absent)")->envname("STATE_DB")->required();
  app.add_option("--sync", cl.sync, "SQLite synchronous level: full (durable) or normal")
      ->capture_default_str()
      ->check(CLI::IsMember({"full", "normal"}));
  app.add_option("--default-ttl-seconds", cl.options.default_ttl_s, "TTL of a key when X-Idempotency-TTL is absent")
      ->envname("DEFAULT_TTL_SECONDS")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::numeric_limits<std::int64_t>::max()));
  app.add_option("--dedupe", cl.dedupe,
                 "Where the key records live: durable (the SQLite file) or volatile (process memory, lost on restart)")
      ->envname("IDEMPOTENCY_MODE")
      ->capture_default_str()
      // Any case, as the published #016 container reads IDEMPOTENCY_MODE.
      ->transform(CLI::IsMember(re::kDedupeModes.names(), CLI::ignore_case));
  app.add_option("--clock", cl.clock,
                 "Whose clock gives a request its time: logical (its X-Logical-Time) or system (this process's own "
                 "wall clock; X-Logical-Time is ignored)")
      ->capture_default_str()
      ->check(CLI::IsMember(re::kClockSources.names()));
}

void add_connection_options(CLI::App& app, CommandLine& cl) {
  app.add_option("--max-connections", cl.options.connections.max_connections,
                 "Open connections served at once (one thread each); more are answered 503 and closed")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}));
  app.add_option("--idle-timeout-seconds", cl.idle_timeout_s, "How long a connection may wait between requests")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{3600}));
  app.add_option("--header-timeout-seconds", cl.header_timeout_s,
                 "How long the request line and headers may take to arrive, from their first byte")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{3600}));
  app.add_option("--body-timeout-seconds", cl.body_timeout_s, "How long a request body may take to arrive")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{3600}));
}

}  // namespace

int main(int argc, char** argv) {
  // Blocked before any thread starts, so every thread inherits the mask.
  const sigset_t signals = termination_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A dropped acknowledgement writes to a socket shut down on purpose.
  std::signal(SIGPIPE, SIG_IGN);

  CLI::App app{"remote-effect: the HTTP effect service, durable in SQLite", "remote-effect"};
  CommandLine cl;
  add_storage_options(app, cl);
  add_connection_options(app, cl);
  app.set_version_flag("--version", version_text());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "remote-effect: " << e.what() << "\nRun remote-effect --help for usage." << std::endl;
    return kExitUsage;
  }
  if (cl.state_db.empty()) {
    std::cerr << "remote-effect: --state-db (or STATE_DB) must name a file" << std::endl;
    return kExitUsage;
  }
  try {
    return serve(cl.service_options());
  } catch (const std::exception& e) {
    std::cerr << "remote-effect: " << e.what() << std::endl;
    return kExitFailure;
  }
}
