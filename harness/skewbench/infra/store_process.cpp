#include "infra/store_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <regex>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/loopback_port.hpp"
#include "common/stop_request.hpp"
#include "common/text.hpp"

namespace skewbench::infra {
namespace {

bool accepts_connection(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return connected;
}

// How much of a store's log a message quotes: its last bytes.
constexpr std::uintmax_t kLogTailBytes = 2000;

// What the store wrote to its log from `offset` on (at most its last kLogTailBytes).
std::string log_since(const std::filesystem::path& path, std::uintmax_t offset) {
  try {
    return read_log_since(path, offset, kLogTailBytes);
  } catch (const std::exception&) {
    return "(no log)";
  }
}

}  // namespace

StoreProcess::StoreProcess(StoreOptions options, std::filesystem::path data_dir, std::filesystem::path log_path,
                           std::map<std::string, std::string> clock_env)
    : options_(std::move(options)),
      data_dir_(std::move(data_dir)),
      log_path_(std::move(log_path)),
      clock_env_(std::move(clock_env)) {
  std::filesystem::create_directories(data_dir_);
  if (options_.run_as && ::geteuid() == 0) hand_over_to_user();
  const auto choose = [&] {
    try {
      return free_loopback_port();
    } catch (const std::exception& e) {
      throw InfrastructureError("store " + options_.name + ": " + e.what());
    }
  };
  start_on_free_port(
      choose,
      [&](int port) {
        port_ = port;
        start();
      },
      ports_given_up_);
}

void StoreProcess::hand_over_to_user() {
  const auto why = [&](const std::string& what) {
    return InfrastructureError("store " + options_.name + ": run_as \"" + *options_.run_as + "\": " + what);
  };
  try {
    run_as_ = RunAs::user(*options_.run_as);
  } catch (const std::exception& e) {
    throw why(e.what());
  }
  if (::chown(data_dir_.c_str(), run_as_->uid, run_as_->gid) != 0) {
    throw why("cannot hand " + data_dir_.string() + " to the user: " + std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::permissions(data_dir_.parent_path(), std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add, ec);
  if (ec) throw why("cannot let the user reach " + data_dir_.parent_path().string() + ": " + ec.message());
}

StoreProcess::~StoreProcess() {
  if (!process_) return;
  process_->signal_group(SIGTERM);
  if (!process_->wait_for_exit(std::chrono::milliseconds(5000))) process_->signal_group(SIGKILL);
  process_->stop();
}

std::map<std::string, std::string> StoreProcess::placeholders() const {
  return {{"{store_port}", std::to_string(port_)}, {"{store_dir}", data_dir_.string()}};
}

std::map<std::string, std::string> StoreProcess::all_placeholders() const {
  auto values = options_.placeholders;
  values.merge(placeholders());
  return values;
}

std::string StoreProcess::expanded(const std::string& command) const {
  return text::expand_placeholders(command, all_placeholders(), true);
}

void StoreProcess::start() {
  Subprocess::Options process_options;
  process_options.stderr_path = log_path_.string();
  process_options.run_as = run_as_;
  std::error_code no_log;
  const auto log_offset = std::filesystem::file_size(log_path_, no_log);
  const auto values = all_placeholders();
  for (const auto& [name, value] : options_.env) {
    process_options.env[name] = text::expand_placeholders(value, values, false);
  }
  // The clock's variables win over the target's (an LD_PRELOAD of its own
  // would otherwise drop the clock library).
  for (const auto& [name, value] : clock_env_) process_options.env[name] = value;
  // exec env: the store itself gets the signals; 1>&2: its stdout is logged.
  process_ = std::make_unique<Subprocess>(
      std::vector<std::string>{"/bin/sh", "-c", "exec env " + expanded(options_.command) + " 1>&2"}, process_options);
  const auto deadline = std::chrono::steady_clock::now() + options_.ready_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (const auto code = process_->wait_for_exit(std::chrono::milliseconds(0))) {
      const auto what = "store " + options_.name + " exited with code " + std::to_string(*code) +
                        " before it accepted a connection on port " + std::to_string(port_);
      const auto words = log_since(log_path_, log_offset);
      throw_if_port_taken(what, "127.0.0.1", port_, words);
      throw InfrastructureError(what + ": " + log_since(log_path_, 0));
    }
    const bool accepts = accepts_connection(port_);
    if (accepts && serves()) return require_own_port();
    // The pause between two checks ends at once on a stop request.
    if (wait_readable_or_stop(-1, stop_request_fd(), accepts ? 100 : 20)) {
      process_->signal_group(SIGKILL);
      process_->stop();
      throw Interrupted();
    }
  }
  process_->signal_group(SIGKILL);
  process_->stop();
  if (const auto holder = foreign_listener(port_)) {
    throw PortTaken("store " + options_.name + " did not get ready, and its port " + std::to_string(port_) +
                    " is held by " + *holder + ", which skewbench did not start");
  }
  throw InfrastructureError("store " + options_.name + " did not accept a connection on port " + std::to_string(port_) +
                            (options_.ready_command.empty() ? "" : " and pass its ready command") + " within " +
                            std::to_string(options_.ready_timeout.count()) + " ms: " + log_since(log_path_, 0));
}

void StoreProcess::require_own_port() {
  try {
    require_own_listener(port_, "store " + options_.name);
  } catch (const std::exception&) {
    process_->signal_group(SIGKILL);
    process_->stop();
    throw;
  }
}

void StoreProcess::restart() {
  process_->signal_group(SIGKILL);
  if (!process_->wait_for_exit(std::chrono::milliseconds(10000))) {
    throw InfrastructureError("store " + options_.name + " did not exit within 10 s of SIGKILL; not restarted");
  }
  process_.reset();
  start();
}

CommandResult StoreProcess::run_probe(const std::string& command, std::chrono::seconds timeout) const {
  // timeout: a store that stopped answering must not hold the run (SIGKILL
  // when the probe outlives SIGTERM). Its stderr goes to the store's log, so
  // that nothing but its answer is read.
  return run_command({"timeout", "-k", "5", std::to_string(timeout.count()), "/bin/sh", "-c",
                      "exec env " + expanded(command) + " 2>>" + text::shell_quoted(log_path_.string())});
}

bool StoreProcess::serves() const {
  if (options_.ready_command.empty()) return true;
  try {
    return run_probe(options_.ready_command, std::chrono::seconds(5)).exit_code == 0;
  } catch (const std::exception& e) {
    throw InfrastructureError("store " + options_.name + ": its ready command cannot be started: " + e.what());
  }
}

std::optional<std::int64_t> StoreProcess::wall_clock_s() const {
  if (options_.clock_probe.empty()) return std::nullopt;
  const auto probe = expanded(options_.clock_probe);
  const auto why = [&](const std::string& what) {
    return InfrastructureError("store " + options_.name + ": its clock probe (" + probe + ") " + what);
  };
  CommandResult result;
  try {
    result = run_probe(options_.clock_probe, options_.probe_timeout);
  } catch (const std::exception& e) {
    throw why(std::string("cannot be started: ") + e.what());
  }
  if (result.exit_code == 124 || result.exit_code == 128 + SIGKILL) {
    throw why("did not answer within " + std::to_string(options_.probe_timeout.count()) + " s");
  }
  if (result.exit_code != 0) {
    // Its stderr went to the store's log, which is in a folder removed at
    // exit: the message carries the log's end instead of its path.
    throw why("exited with code " + std::to_string(result.exit_code) + ": " + std::string(text::trim(result.output)) +
              "; the store's log ends: " + std::string(text::trim(log_since(log_path_, 0))));
  }
  std::smatch number;
  if (!std::regex_search(result.output, number, std::regex("-?[0-9]+"))) {
    throw why("printed no whole number: " + std::string(text::trim(result.output)));
  }
  try {
    return std::stoll(number.str());
  } catch (const std::exception&) {
    throw why("printed a number out of range: " + number.str());
  }
}

}  // namespace skewbench::infra
