#include "remote_effect/launcher.hpp"

#include <csignal>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace skewbench::remote_effect {
namespace {

constexpr std::size_t kStderrTailBytes = 4000;

std::uintmax_t file_size_or_zero(const std::optional<std::string>& path) {
  if (!path) return 0;
  std::error_code ec;
  const auto size = std::filesystem::file_size(*path, ec);
  return ec ? 0 : size;
}

// What the service wrote to its log since `offset`, at most kStderrTailBytes.
std::string log_since(const std::optional<std::string>& path, std::uintmax_t offset) {
  if (!path) return "(its stderr is inherited: see above)";
  std::ifstream in(*path, std::ios::binary);
  if (!in) return "(cannot read its log " + *path + ")";
  in.seekg(static_cast<std::streamoff>(offset));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > kStderrTailBytes) text = "..." + text.substr(text.size() - kStderrTailBytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text.empty() ? "(its log " + *path + " is empty)" : text;
}

}  // namespace

RemoteEffectProcess::RemoteEffectProcess(LaunchOptions options) : options_(std::move(options)) { start(options_.port); }

void RemoteEffectProcess::start(int port) {
  std::vector<std::string> argv = {options_.binary,
                                   "--host",
                                   options_.host,
                                   "--port",
                                   std::to_string(port),
                                   "--state-db",
                                   options_.state_db.string(),
                                   "--sync",
                                   options_.sync,
                                   "--dedupe",
                                   std::string(dedupe_mode_name(options_.dedupe)),
                                   "--default-ttl-seconds",
                                   std::to_string(options_.default_ttl_seconds)};
  argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
  const auto log_offset = file_size_or_zero(options_.stderr_path);
  Subprocess::Options process_options;
  process_options.stderr_path = options_.stderr_path;
  auto process = std::make_unique<Subprocess>(argv, process_options);

  const auto line = process->read_line(options_.ready_timeout);
  if (!line) {
    const auto code = process->wait_for_exit(std::chrono::milliseconds(1000));
    std::string what;
    if (code) {
      what = "remote-effect exited with code " + std::to_string(*code) + " before it was ready: ";
    } else {
      process->stop();
      what = "remote-effect printed no ready line within " + std::to_string(options_.ready_timeout.count()) + " ms: ";
    }
    throw std::runtime_error(what + log_since(options_.stderr_path, log_offset));
  }

  nlohmann::json ready;
  try {
    ready = nlohmann::json::parse(*line);
    if (ready.at("service").get<std::string>() != "remote-effect") {
      throw std::runtime_error("service is not remote-effect");
    }
    port_ = ready.at("port").get<int>();
    boot_id_ = ready.at("boot_id").get<std::string>();
  } catch (const std::exception& e) {
    process->stop();
    throw std::runtime_error("unexpected ready line from " + options_.binary + ": " + *line + " (" + e.what() + ")");
  }
  ready_line_ = std::move(ready);
  process_ = std::move(process);
  exit_code_.reset();
}

std::string RemoteEffectProcess::base_url() const {
  std::string host = options_.host;
  if (host == "0.0.0.0" || host.empty()) host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(port_);
}

pid_t RemoteEffectProcess::pid() const { return process_ ? process_->pid() : -1; }

bool RemoteEffectProcess::running() const { return process_ && process_->running(); }

void RemoteEffectProcess::kill_hard() {
  if (!running()) return;
  process_->send_signal(SIGKILL);
  exit_code_ = process_->wait_for_exit(std::chrono::milliseconds(10000));
}

int RemoteEffectProcess::stop() {
  if (running()) exit_code_ = process_->stop();
  return exit_code_.value_or(-1);
}

void RemoteEffectProcess::restart() {
  stop();
  process_.reset();
  start(port_);
}

}  // namespace skewbench::remote_effect
