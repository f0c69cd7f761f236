#include "infra/postgres_cluster.hpp"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <vector>

#include <chrono>
#include <csignal>
#include <thread>

#include <pwd.h>
#include <unistd.h>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/loopback_port.hpp"
#include "common/stop_request.hpp"
#include "common/subprocess.hpp"

namespace skewbench::infra {
namespace fs = std::filesystem;

namespace {

// How much of PostgreSQL's log a failed start quotes: its last bytes.
constexpr std::uintmax_t kLogTailBytes = 8000;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string read_postgres_version(const fs::path& bin_dir) {
  std::vector<std::string> argv = {(bin_dir / "postgres").string(), "--version"};
  // As root the server runs as the postgres user: ask as that user, so a
  // directory it cannot traverse shows up here rather than in initdb.
  if (::geteuid() == 0 && ::getpwnam("postgres") != nullptr)
    argv.insert(argv.begin(), {"runuser", "-u", "postgres", "--"});
  try {
    const auto r = run_command(argv);
    return r.exit_code == 0 ? trim(r.output) : std::string();
  } catch (const std::exception&) {
    return {};
  }
}

// pg_config --bindir, then /usr/lib/postgresql/<major>/bin, newest first.
std::vector<fs::path> system_postgres_dirs() {
  std::vector<fs::path> dirs;
  try {
    const auto r = run_command({"pg_config", "--bindir"});
    if (r.exit_code == 0 && !trim(r.output).empty()) dirs.emplace_back(trim(r.output));
  } catch (const std::exception&) {
    // pg_config is optional; the Debian layout follows.
  }
  std::vector<std::pair<int, fs::path>> debian;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    try {
      debian.emplace_back(std::stoi(entry.path().filename().string()), entry.path() / "bin");
    } catch (const std::exception&) {
    }
  }
  std::sort(debian.begin(), debian.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [major, dir] : debian) {
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  return dirs;
}

// A directory the user named: it must hold the binaries and they must run.
PostgresBinaries explicit_binaries(const PostgresSearch& search, const fs::path& dir, const std::string& name,
                                   const std::string& source) {
  if (!is_postgres_bindir(dir)) throw InfrastructureError(name + dir.string() + " has no initdb, pg_ctl and postgres");
  auto version = search.version_of(dir);
  if (version.empty()) {
    throw InfrastructureError(
        name + dir.string() + ": postgres --version fails" +
        (::geteuid() == 0 ? " as the postgres user (can it traverse every parent directory?)" : std::string()));
  }
  return {.bin_dir = dir, .source = source, .version = std::move(version)};
}

std::optional<PostgresBinaries> cached_binaries(const PostgresSearch& search) {
  if (!search.cache || !fs::exists(*search.cache / kCachedPostgresMarker)) return std::nullopt;
  const auto bin = *search.cache / "bin";
  if (!is_postgres_bindir(bin)) return std::nullopt;  // damaged: the scripts install it again
  auto version = search.version_of(bin);
  if (version.empty()) {
    throw InfrastructureError("the cached PostgreSQL in " + search.cache->string() + " does not run" +
                              (::geteuid() == 0
                                   ? " as the postgres user; SKEWBENCH_CACHE_DIR must be a directory it can traverse"
                                   : "; remove it and run scripts/reproduce.sh or scripts/test.sh again"));
  }
  return PostgresBinaries{.bin_dir = bin, .source = "cache", .version = std::move(version)};
}

std::optional<PostgresBinaries> system_binaries(const PostgresSearch& search) {
  std::vector<PostgresBinaries> found;
  for (const auto& dir : search.system) {
    if (!is_postgres_bindir(dir)) continue;
    auto version = search.version_of(dir);
    if (!version.empty()) found.push_back({.bin_dir = dir, .source = "system", .version = std::move(version)});
  }
  for (const auto& b : found) {
    if (postgres_major_of(b.version) == kPreferredPostgresMajor) return b;
  }
  if (found.empty()) return std::nullopt;
  return found.front();
}

}  // namespace

bool is_postgres_bindir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "initdb", ec) && fs::is_regular_file(dir / "pg_ctl", ec) &&
         fs::is_regular_file(dir / "postgres", ec);
}

int postgres_major_of(const std::string& version) {
  static const std::regex pattern(R"(\(PostgreSQL\) (\d+))");
  std::smatch m;
  return std::regex_search(version, m, pattern) ? std::stoi(m[1].str()) : 0;
}

std::optional<fs::path> skewbench_cache_dir() {
  if (const char* dir = std::getenv("SKEWBENCH_CACHE_DIR"); dir && *dir) return fs::path(dir);
  if (::geteuid() == 0) return fs::path("/var/cache/skewbench");
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "skewbench";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "skewbench";
  return std::nullopt;
}

PostgresSearch default_postgres_search(std::optional<fs::path> flag) {
  PostgresSearch search{.flag = std::move(flag), .system = system_postgres_dirs(), .version_of = read_postgres_version};
  if (const char* env = std::getenv("SKEWBENCH_POSTGRES_BIN"); env && *env) {
    search.env = env;
  } else if (const char* old = std::getenv("SKEWBENCH_PG_BINDIR"); old && *old) {
    search.env = old;
    search.env_name = "SKEWBENCH_PG_BINDIR";
  }
  if (const auto cache = skewbench_cache_dir()) search.cache = *cache / kCachedPostgresDir;
  return search;
}

PostgresBinaries find_postgres_binaries(const PostgresSearch& search) {
  if (search.flag) return explicit_binaries(search, *search.flag, "--postgres-bin ", "flag");
  if (search.env) return explicit_binaries(search, *search.env, search.env_name + "=", "env");
  if (auto cached = cached_binaries(search)) return *cached;
  if (auto system = system_binaries(search)) return *system;
  throw InfrastructureError(
      "no PostgreSQL server binaries (initdb, pg_ctl, postgres) found; run scripts/reproduce.sh or "
      "scripts/test.sh to install PostgreSQL 17.6, install the postgresql package, or pass --database-url");
}

PostgresCluster::PostgresCluster(std::optional<PostgresBinaries> binaries, std::vector<std::string> settings)
    : binaries_(binaries ? std::move(*binaries) : find_postgres_binaries(default_postgres_search())),
      settings_(std::move(settings)),
      bindir_(binaries_.bin_dir),
      dir_("skewbench-pg") {
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

  // A port can be taken between asking and binding: then another one.
  start_on_free_port(
      free_loopback_port, [&](int port) { start(port); }, ports_given_up_);
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
  std::vector<std::string> argv = {(bindir_ / "postgres").string(),
                                   "-D",
                                   data_dir().string(),
                                   "-p",
                                   std::to_string(port),
                                   "-c",
                                   "listen_addresses=127.0.0.1",
                                   "-c",
                                   "unix_socket_directories=" + dir_.path().string()};
  for (const auto& setting : settings_) argv.insert(argv.end(), {"-c", setting});
  server_ = std::make_unique<Subprocess>(
      argv,
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
    if (pid_file.find("\nready") != std::string::npos) return require_own_port();
    // The pause between two looks ends at once on a stop request.
    if (wait_readable_or_stop(-1, stop_request_fd(), 20)) {
      server_->stop(std::chrono::milliseconds(2000));
      server_.reset();
      throw Interrupted();
    }
  }
  server_->stop(std::chrono::milliseconds(2000));
  server_.reset();
  std::string text;
  try {
    text = read_log_since(log, log_offset, kLogTailBytes);
  } catch (const std::exception&) {
  }
  const auto what = "PostgreSQL did not start on port " + std::to_string(port);
  throw_if_port_taken(what, "127.0.0.1", port, text);
  throw InfrastructureError(what + ":\n" + text);
}

void PostgresCluster::require_own_port() {
  try {
    require_own_listener(port_, "PostgreSQL");
  } catch (const std::exception&) {
    server_->stop(std::chrono::milliseconds(2000));
    server_.reset();
    throw;
  }
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
    // SIGTERM when we die: it removes the directory and exits (within 10 s).
    watchdog_ = std::make_unique<Subprocess>(std::vector<std::string>{"sh", "-c", script, dir_.path().string()},
                                             Subprocess::Options{.parent_death_signal = SIGTERM});
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
