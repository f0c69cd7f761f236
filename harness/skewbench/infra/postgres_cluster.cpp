#include "infra/postgres_cluster.hpp"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <vector>

#include <chrono>
#include <csignal>
#include <thread>

#include <unistd.h>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/subprocess.hpp"

namespace skewbench::infra {
namespace fs = std::filesystem;

namespace {

bool has_server_binaries(const fs::path& dir) { return fs::exists(dir / "initdb") && fs::exists(dir / "pg_ctl"); }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

fs::path find_postgres_bindir() {
  if (const char* env = std::getenv("SKEWBENCH_PG_BINDIR"); env && *env) {
    if (has_server_binaries(env)) return env;
    throw InfrastructureError(std::string("SKEWBENCH_PG_BINDIR=") + env + " has no initdb and pg_ctl");
  }
  try {
    const auto r = run_command({"pg_config", "--bindir"});
    if (r.exit_code == 0 && has_server_binaries(trim(r.output))) return trim(r.output);
  } catch (const std::exception&) {
    // pg_config is optional; fall through to the Debian layout.
  }
  std::vector<std::pair<int, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const auto bin = entry.path() / "bin";
    int major = 0;
    try {
      major = std::stoi(entry.path().filename().string());
    } catch (const std::exception&) {
      continue;
    }
    if (has_server_binaries(bin)) found.emplace_back(major, bin);
  }
  if (found.empty()) {
    throw InfrastructureError(
        "no PostgreSQL server binaries (initdb, pg_ctl) found; install the postgresql package "
        "or pass --database-url");
  }
  std::sort(found.begin(), found.end());
  return found.back().second;
}

PostgresCluster::PostgresCluster(std::optional<fs::path> bindir)
    : bindir_(bindir ? *bindir : find_postgres_bindir()), dir_("skewbench-pg") {
  start_watchdog();
  if (::geteuid() == 0) {
    // PostgreSQL refuses to run as root. The children drop to the postgres
    // user themselves (no runuser in between), so that they still die with us.
    try {
      run_as_ = RunAs::user("postgres");
    } catch (const std::exception&) {
      throw InfrastructureError("running as root needs a 'postgres' system user to run the throwaway cluster");
    }
    if (::chown(dir_.path().c_str(), run_as_->uid, run_as_->gid) != 0) {
      throw InfrastructureError("cannot hand " + dir_.path().string() + " to the postgres user");
    }
  }
  const auto init = run_command({(bindir_ / "initdb").string(), "-D", data_dir().string(), "-A", "trust", "-U",
                                 "postgres", "-E", "UTF8", "--locale=C", "--no-sync"},
                                run_as_);
  if (init.exit_code != 0) throw InfrastructureError("initdb failed:\n" + init.output);

  // A port can be taken between asking and binding; try a few.
  std::string last_error;
  for (int attempt = 0; attempt < 5 && !running(); ++attempt) {
    try {
      start(free_loopback_port());
    } catch (const InfrastructureError& e) {
      last_error = e.what();
    }
  }
  if (!running()) throw InfrastructureError(last_error);
}

fs::path PostgresCluster::data_dir() const { return dir_.path() / "data"; }

bool PostgresCluster::running() const { return server_ && server_->running(); }

// The postmaster is our own child (not pg_ctl's), asking for SIGQUIT, an
// immediate shutdown, when we die: no moment of start-up or of a run leaves
// it running after skewbench is gone.
void PostgresCluster::start(int port) {
  port_ = port;
  const auto log = dir_.path() / "server.log";
  const auto log_offset = fs::exists(log) ? fs::file_size(log) : 0;
  server_ = std::make_unique<Subprocess>(
      std::vector<std::string>{(bindir_ / "postgres").string(), "-D", data_dir().string(), "-p", std::to_string(port),
                               "-c", "listen_addresses=127.0.0.1", "-c",
                               "unix_socket_directories=" + dir_.path().string()},
      Subprocess::Options{.env = {}, .stderr_path = log.string(), .run_as = run_as_, .parent_death_signal = SIGQUIT});
  // Ready when postmaster.pid's status line says so, as pg_ctl -w reads it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!server_->running() || server_->wait_for_exit(std::chrono::milliseconds(0))) break;
    std::string pid_file;
    try {
      pid_file = read_file(data_dir() / "postmaster.pid");
    } catch (const std::exception&) {
    }
    if (pid_file.find("\nready") != std::string::npos) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  server_->stop(std::chrono::milliseconds(2000));
  server_.reset();
  std::string text;
  try {
    text = read_file(log);
    text = text.substr(std::min<std::size_t>(text.size(), static_cast<std::size_t>(log_offset)));
  } catch (const std::exception&) {
  }
  throw InfrastructureError("PostgreSQL did not start on port " + std::to_string(port) + ":\n" + text);
}

// A shell that removes the cluster's directory if skewbench dies without
// cleaning up (it gets SIGTERM when its parent dies, whatever the phase): it
// waits for the postmaster, which got SIGQUIT, to remove its pid file. Should
// it die too, the next run removes the directory (its owner file names us).
void PostgresCluster::start_watchdog() {
  const std::string script =
      "cleanup() { i=0; while [ -f \"$0/data/postmaster.pid\" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; "
      "rm -rf \"$0\"; exit 0; }; trap cleanup TERM; trap 'exit 0' USR1; while :; do sleep 1 & wait $!; done";
  try {
    watchdog_ = std::make_unique<Subprocess>(std::vector<std::string>{"sh", "-c", script, dir_.path().string()},
                                             Subprocess::Options{});
  } catch (const std::exception&) {
    // Without a watchdog the next run still removes the directory.
  }
}

PostgresCluster::~PostgresCluster() {
  stop();
  if (watchdog_) {
    // We clean up ourselves: the watchdog leaves without acting.
    watchdog_->send_signal(SIGUSR1);
    watchdog_->wait_for_exit(std::chrono::milliseconds(2000));
  }
}

void PostgresCluster::stop() {
  if (!server_) return;
  // SIGINT is PostgreSQL's fast shutdown: open connections are ended.
  server_->send_signal(SIGINT);
  if (!server_->wait_for_exit(std::chrono::milliseconds(10000))) server_->stop(std::chrono::milliseconds(2000));
  server_.reset();
}

void PostgresCluster::stop_immediately() {
  if (!server_) return;
  server_->send_signal(SIGQUIT);
  if (!server_->wait_for_exit(std::chrono::milliseconds(10000))) server_->stop(std::chrono::milliseconds(2000));
  server_.reset();
}

void PostgresCluster::restart() {
  stop();
  start(port_);
}

std::string PostgresCluster::url() const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres";
}

}  // namespace skewbench::infra
