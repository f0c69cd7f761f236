#include "runner/stack.hpp"

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "common/errors.hpp"
#include "infra/postgres_cluster.hpp"
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
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    std::size_t start = 0;
    while (start <= p.size()) {
      const auto end = p.find(':', start);
      const auto dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
      const auto candidate = fs::path(dir.empty() ? "." : dir) / "remote-effect";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  throw InfrastructureError("cannot find the remote-effect executable; pass --remote-effect-bin or --remote-url");
}

namespace {

// The -c settings of a started cluster under the profile.
std::vector<std::string> cluster_settings(const StackOptions& options) {
  if (options.durability_or_durable() == Durability::durable) return {};
  return {"fsync=off", "full_page_writes=off",
          std::string("synchronous_commit=") + (options.database_restarts ? "on" : "off")};
}

std::string service_name(const remote_effect::LaunchOptions& launch) {
  return launch.command ? "the service of --remote-command" : "remote-effect";
}

std::unique_ptr<remote_effect::RemoteEffectProcess> start_remote(const remote_effect::LaunchOptions& launch) {
  try {
    return std::make_unique<remote_effect::RemoteEffectProcess>(launch);
  } catch (const InfrastructureError&) {
    throw;
  } catch (const std::exception& e) {
    throw InfrastructureError("cannot start " + service_name(launch) + ": " + e.what());
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

}  // namespace

Stack::Stack(const StackOptions& options) {
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
    database_url_ = cluster_->url();
  }
  if (options.remote_url) {
    remote_url_ = *options.remote_url;
    return;
  }
  const auto binary = options.remote_command ? std::string() : find_remote_effect_binary(options.remote_effect_binary);
  const unsigned instances = std::max(1u, options.remote_instances);
  if (options.remote_port && instances > 1) {
    throw InfrastructureError("--remote-port " + std::to_string(*options.remote_port) + " is one port for " +
                              std::to_string(instances) + " remote instances; run with --jobs 1");
  }
  if (!options.quiet) {
    std::cerr << "skewbench: starting "
              << (options.remote_command ? "the remote service: " + *options.remote_command
                                         : "remote-effect (" + binary + ")")
              << (instances > 1 ? " x" + std::to_string(instances) + ", one per job" : "") << "\n";
  }
  for (unsigned i = 0; i < instances; ++i) {
    // The first keeps the names it always had; the others are numbered.
    const auto name = i == 0 ? std::string("remote-effect") : "remote-effect-" + std::to_string(i + 1);
    auto launch = std::make_unique<remote_effect::LaunchOptions>();
    launch->binary = binary;
    launch->state_db = work_dir_->path() / (name + ".sqlite3");
    launch->sync = options.remote_sync.value_or(
        options.durability_or_durable() == Durability::durable ? std::string("full") : std::string("normal"));
    launch->stderr_path = (work_dir_->path() / (name + ".log")).string();
    if (options.remote_command) {
      launch->command = options.remote_command;
      launch->port = options.remote_port.value_or(0);  // 0: a free one, kept across restarts
    }
    auto process = start_remote(*launch);
    remotes_.push_back({.launch = std::move(launch), .process = std::move(process)});
  }
  remote_url_ = remotes_.front().process->base_url();
}

std::vector<std::string> Stack::remote_urls() const {
  if (remotes_.empty()) return {remote_url_};
  std::vector<std::string> urls;
  for (const auto& r : remotes_) urls.push_back(r.process->base_url());
  return urls;
}

// One thread that waits out a pause and sends SIGCONT; destroying it resumes
// the remote at once, so that a run never ends with a stopped process.
class Stack::Resumer {
 public:
  Resumer(pid_t pid, std::chrono::milliseconds duration)
      : pid_(pid), until_(std::chrono::steady_clock::now() + duration), thread_([this] { wait_then_resume(); }) {}
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
    ::kill(pid_, SIGCONT);
  }

  pid_t pid_;
  std::chrono::steady_clock::time_point until_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool cancelled_ = false;
  std::thread thread_;
};

Stack::~Stack() = default;

void Stack::pause_remote(std::chrono::milliseconds duration) {
  if (remotes_.empty()) throw InfrastructureError("the remote-effect service is external and cannot be paused");
  const auto& remote = *remotes_.front().process;
  resumer_.reset();  // an earlier pause ends first
  if (::kill(remote.pid(), SIGSTOP) != 0) throw InfrastructureError("cannot stop remote-effect (SIGSTOP)");
  resumer_ = std::make_unique<Resumer>(remote.pid(), duration);
}

void Stack::restart_database(bool immediate) {
  if (!cluster_) throw InfrastructureError("the database is external and cannot be restarted");
  if (immediate) cluster_->stop_immediately();
  cluster_->restart();
}

const infra::PostgresBinaries* Stack::postgres_binaries() const { return cluster_ ? &cluster_->binaries() : nullptr; }

std::string Stack::restart_remote() {
  if (remotes_.empty()) throw InfrastructureError("the remote-effect service is external and cannot be restarted");
  auto& remote = *remotes_.front().process;
  resumer_.reset();  // a paused process is resumed before it is asked to stop
  try {
    remote.restart();
  } catch (const std::exception& e) {
    throw InfrastructureError("cannot restart " + service_name(*remotes_.front().launch) + ": " + e.what());
  }
  return remote.boot_id();
}

void Stack::use_dedupe_mode(remote_effect::DedupeMode mode) {
  if (remotes_.empty()) {
    throw InfrastructureError("the remote-effect service is external and cannot change its dedupe mode");
  }
  // The same state file and port: the client keeps its URL, the ledger stays.
  for (auto& r : remotes_) switch_dedupe_mode(r.process, *r.launch, mode);
}

}  // namespace skewbench::runner
