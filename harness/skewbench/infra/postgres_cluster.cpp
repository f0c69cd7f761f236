#include "infra/postgres_cluster.hpp"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <vector>

#include <csignal>

#include <pwd.h>
#include <unistd.h>

#include "common/errors.hpp"
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
  as_root_ = ::geteuid() == 0;
  if (as_root_) {
    const passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr) {
      throw InfrastructureError("running as root needs a 'postgres' system user to run the throwaway cluster");
    }
    if (::chown(dir_.path().c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      throw InfrastructureError("cannot hand " + dir_.path().string() + " to the postgres user");
    }
  }
  const auto data = dir_.path() / "data";
  const auto init = run_command(as_postgres({(bindir_ / "initdb").string(), "-D", data.string(), "-A", "trust", "-U",
                                             "postgres", "-E", "UTF8", "--locale=C", "--no-sync"}));
  if (init.exit_code != 0) throw InfrastructureError("initdb failed:\n" + init.output);

  // A port can be taken between asking and binding; try a few.
  std::string last_output;
  for (int attempt = 0; attempt < 5 && !running_; ++attempt) {
    port_ = free_loopback_port();
    const std::string options = "-c listen_addresses=127.0.0.1 -p " + std::to_string(port_) +
                                " -c unix_socket_directories=" + dir_.path().string();
    const auto start =
        run_command(as_postgres({(bindir_ / "pg_ctl").string(), "-D", data.string(), "-l",
                                 (dir_.path() / "server.log").string(), "-o", options, "-w", "-t", "60", "start"}));
    if (start.exit_code == 0) {
      running_ = true;
    } else {
      last_output = start.output;
    }
  }
  if (!running_) {
    std::string log;
    try {
      log = read_file(dir_.path() / "server.log");
    } catch (const std::exception&) {
    }
    throw InfrastructureError("pg_ctl start failed:\n" + last_output + log);
  }
  start_watchdog();
}

void PostgresCluster::start_watchdog() {
  std::string stop_command;
  for (const auto& arg : as_postgres(
           {(bindir_ / "pg_ctl").string(), "-D", (dir_.path() / "data").string(), "-m", "immediate", "-w", "stop"})) {
    stop_command += "'" + arg + "' ";
  }
  // $0 is the cluster's directory. USR1: we stopped the server ourselves.
  const std::string script = "cleanup() { " + stop_command + ">/dev/null 2>&1; rm -rf \"$0\"; exit 0; }; " +
                             "trap cleanup TERM; trap 'exit 0' USR1; while :; do sleep 1 & wait $!; done";
  try {
    watchdog_ = std::make_unique<Subprocess>(std::vector<std::string>{"sh", "-c", script, dir_.path().string()},
                                             Subprocess::Options{});
  } catch (const std::exception&) {
    // Without a watchdog the cluster is still stopped by the destructor.
  }
}

PostgresCluster::~PostgresCluster() { stop(); }

std::vector<std::string> PostgresCluster::as_postgres(std::vector<std::string> argv) const {
  if (!as_root_) return argv;
  std::vector<std::string> out = {"runuser", "-u", "postgres", "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

void PostgresCluster::stop() {
  if (!running_) return;
  running_ = false;
  if (watchdog_) {
    // We stop the server ourselves: the watchdog leaves without acting.
    watchdog_->send_signal(SIGUSR1);
    watchdog_->wait_for_exit(std::chrono::milliseconds(2000));
    watchdog_.reset();
  }
  try {
    run_command(as_postgres(
        {(bindir_ / "pg_ctl").string(), "-D", (dir_.path() / "data").string(), "-m", "fast", "-w", "stop"}));
  } catch (const std::exception&) {
    // Nothing more to do; the directory is removed regardless.
  }
}

std::string PostgresCluster::url() const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres";
}

}  // namespace skewbench::infra
