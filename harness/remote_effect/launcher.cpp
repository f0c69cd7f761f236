#include "remote_effect/launcher.hpp"

#include <algorithm>
#include <csignal>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/http_exchange.hpp"
#include "common/json_reader.hpp"
#include "common/loopback_port.hpp"
#include "common/stop_request.hpp"
#include "common/subprocess.hpp"
#include "common/text.hpp"

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
// The log's path is not named: it is in a folder removed at exit.
std::string log_since(const std::optional<std::string>& path, std::uintmax_t offset) {
  if (!path) return "(its stderr is inherited: see above)";
  std::string text;
  try {
    text = read_log_since(*path, offset, kStderrTailBytes);
  } catch (const std::exception&) {
    return "(its log cannot be read)";
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text.empty() ? "(it wrote nothing to its stderr or stdout)" : text;
}

// 'text' for /bin/sh: single quotes, each ' written as '\''.

// The host a client connects to for a service bound to `host`.
std::string connect_host(const std::string& host) {
  if (host == "0.0.0.0" || host.empty()) return "127.0.0.1";
  if (host == "::") return "::1";
  return host;
}

// One check of GET /health may take this long, and no longer than what is
// left of the time to get ready.
constexpr std::chrono::milliseconds kHealthCheckDeadline{2000};
constexpr std::string_view kNothingAnswered = "nothing answered yet";
// How long the second GET that shows what a service sends instead of HTTP
// may take.
constexpr std::int64_t kNotHttpProbeMs = 1000;

// What GET /health answers now: nullopt while nothing listens or the answer
// is not a ready one; the reason it is not ready in `why`. The exchange is
// bounded (deadline, size) and its body read by the bounded JSON parser: the
// service is not trusted yet. A stop request throws Interrupted.
// Why an exchange failed, and when the HTTP client could not read an answer
// head, what a second GET of `path` shows (bytes that are not HTTP, or a
// connection closed at once).
std::string failure_of(const http::Exchange& answer, const std::string& host, int port, const std::string& path,
                       std::chrono::milliseconds left) {
  const auto reason = httplib::to_string(answer.error);
  if (answer.error != httplib::Error::Read || answer.head_received) return reason;
  const auto evidence =
      http::not_http_evidence(host, port, path, std::min(left, std::chrono::milliseconds(kNotHttpProbeMs)));
  return evidence.empty() ? reason : "no HTTP answer could be read (" + evidence + ")";
}

std::optional<nlohmann::json> healthy_answer(const std::string& host, int port, DedupeMode mode,
                                             std::chrono::milliseconds left, std::string& why) {
  const auto deadline = std::clamp(left, std::chrono::milliseconds(1), kHealthCheckDeadline);
  http::BoundedClient client(connect_host(host), port,
                             {.deadline = deadline, .max_answer_bytes = http::kDefaultMaxAnswerBytes});
  httplib::Request request;
  request.method = "GET";
  request.path = "/health";
  const auto answer = client.send(std::move(request));
  switch (answer.end) {
    case http::ExchangeEnd::stopped:
      throw Interrupted();
    case http::ExchangeEnd::failed:
      why = "GET /health: " + failure_of(answer, connect_host(host), port, "/health", deadline);
      return std::nullopt;
    case http::ExchangeEnd::too_large:
      why = "GET /health: its body is larger than " + std::to_string(http::kDefaultMaxAnswerBytes) + " bytes";
      return std::nullopt;
    case http::ExchangeEnd::deadline:
      // A last check cut short by the time to get ready keeps the reason before it.
      if (deadline == kHealthCheckDeadline || why == kNothingAnswered) {
        why = "GET /health: no whole answer within " + std::to_string(deadline.count()) + " ms (" +
              http::received_so_far(answer) + ")";
      }
      return std::nullopt;
    case http::ExchangeEnd::answered:
      break;
  }
  if (answer.status != 200) {
    why = "GET /health answered " + std::to_string(answer.status);
    return std::nullopt;
  }
  nlohmann::json body;
  try {
    body = parse_bounded_json(answer.body);
  } catch (const std::exception& e) {
    why = "GET /health answered a body that is not JSON skewbench reads (" + std::string(e.what()) +
          "): " + text::short_prefix(answer.body);
    return std::nullopt;
  }
  if (!body.is_object() || body.value("status", nlohmann::json()) != "ok") {
    why = "GET /health answered without \"status\": \"ok\": " + text::short_prefix(answer.body);
    return std::nullopt;
  }
  const auto reported = body.value("idempotency_mode", nlohmann::json());
  if (reported.is_string() && parse_dedupe_mode(reported.get<std::string>()) != mode) {
    why = "GET /health reports idempotency_mode " + reported.dump() + ", not \"" + std::string(dedupe_mode_name(mode)) +
          "\"";
    return std::nullopt;
  }
  return body;
}

// Whether the service's own readiness check passes now (every kind but
// protocol_health); the reason it does not in `why`.
bool own_readiness(const LaunchOptions& options, int port, std::uintmax_t log_offset, std::chrono::milliseconds left,
                   std::string& why) {
  const auto& ready = options.ready;
  switch (ready.kind) {
    case Readiness::Kind::http_get: {
      http::BoundedClient client(connect_host(options.host), port,
                                 {.deadline = std::clamp(left, std::chrono::milliseconds(1), kHealthCheckDeadline),
                                  .max_answer_bytes = http::kDefaultMaxAnswerBytes});
      httplib::Request request;
      request.method = "GET";
      request.path = ready.value;
      const auto answer = client.send(std::move(request));
      if (answer.end == http::ExchangeEnd::stopped) throw Interrupted();
      if (answer.head_received && answer.status >= 200 && answer.status < 300) return true;
      why = "GET " + ready.value + ": " +
            (answer.head_received ? "answered " + std::to_string(answer.status)
             : answer.end == http::ExchangeEnd::failed
                 ? failure_of(answer, connect_host(options.host), port, ready.value, left)
                 : http::received_so_far(answer));
      return false;
    }
    case Readiness::Kind::tcp_port: {
      const auto endpoint_host = connect_host(options.host);
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(static_cast<std::uint16_t>(port));
      const bool parsed = ::inet_pton(AF_INET, endpoint_host.c_str(), &address.sin_addr) == 1;
      const bool connected =
          fd >= 0 && parsed && ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
      if (fd >= 0) ::close(fd);
      if (!connected) why = "port " + std::to_string(port) + " does not accept a connection yet";
      return connected;
    }
    case Readiness::Kind::log_line: {
      if (!options.stderr_path) throw std::logic_error("a log_line readiness needs the service's log");
      std::ifstream in(*options.stderr_path, std::ios::binary);
      in.seekg(static_cast<std::streamoff>(log_offset));
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find(ready.value) != std::string::npos) return true;
      why = "its log holds no \"" + ready.value + "\" yet";
      return false;
    }
    case Readiness::Kind::protocol_health:
      break;
  }
  throw std::logic_error("own_readiness: protocol_health");
}

constexpr std::pair<const char*, int> kStopSignals[] = {{"SIGTERM", SIGTERM}, {"SIGINT", SIGINT},
                                                        {"SIGQUIT", SIGQUIT}, {"SIGHUP", SIGHUP},
                                                        {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}};

// A start not ready by its deadline: PortTaken when another process holds
// its port (it is started again on another), else the reason and its log.
[[noreturn]] void throw_not_ready(const LaunchOptions& options, int port, std::uintmax_t log_offset,
                                  const std::string& why) {
  if (const auto holder = foreign_listener(port)) {
    throw PortTaken("the service command was not ready within " + std::to_string(options.ready_timeout.count()) +
                    " ms, and its port " + std::to_string(port) + " is held by " + *holder +
                    ", which skewbench did not start");
  }
  throw std::runtime_error("the service command was not ready within " + std::to_string(options.ready_timeout.count()) +
                           " ms (" + why + "): " + log_since(options.stderr_path, log_offset));
}

}  // namespace

int stop_signal_named(std::string_view name) {
  for (const auto& [signal_name, number] : kStopSignals) {
    if (name == signal_name) return number;
  }
  return 0;
}

std::string stop_signal_name(int signal_number) {
  for (const auto& [signal_name, number] : kStopSignals) {
    if (signal_number == number) return signal_name;
  }
  return "signal " + std::to_string(signal_number);
}

nlohmann::json Stopping::to_json() const {
  return {{"signal", stop_signal_name(signal)},
          {"grace_ms", grace.count()},
          {"restart", graceful_restart ? "graceful" : "kill"}};
}

nlohmann::json Readiness::to_json() const {
  switch (kind) {
    case Kind::protocol_health:
      return {{"protocol_health", "/health"}};
    case Kind::http_get:
      return {{"http_get", value}};
    case Kind::tcp_port:
      return {{"tcp_port", true}};
    case Kind::log_line:
      return {{"log_line", value}};
  }
  return nullptr;
}

std::string expand_command(const std::string& command, const LaunchOptions& options, int port) {
  // The placeholders as text::placeholders_in reads them; other braces
  // (${PORT}, an awk program) are the shell's and stay as written.
  std::map<std::string, std::string> values = {{"{port}", std::to_string(port)},
                                               {"{state_db}", text::shell_quoted(options.state_db.string())},
                                               {"{dedupe}", std::string(dedupe_mode_name(options.dedupe))},
                                               {"{host}", text::shell_quoted(options.host)}};
  for (const auto& [name, value] : options.placeholders) values.emplace(name, text::shell_quoted(value));
  for (const auto& name : text::placeholders_in(command)) {
    if (values.contains(name)) continue;
    std::string known = "{port}, {state_db}, {dedupe}, {host}";
    for (const auto& [other, _] : options.placeholders) known += ", " + other;
    throw std::invalid_argument("unknown placeholder " + name + " in the service command (it may hold " + known + ")");
  }
  return text::expand_placeholders(command, values, false);
}

RemoteEffectProcess::RemoteEffectProcess(LaunchOptions options) : options_(std::move(options)) { start(options_.port); }

void RemoteEffectProcess::start_command(int port) {
  if (port != 0) return start_command_on(port);
  // A port skewbench chooses may be taken before the service binds it: the
  // service then starts again on another one.
  start_on_free_port([&] { return free_port(options_.host); }, [&](int chosen) { start_command_on(chosen); },
                     ports_given_up_);
}

void RemoteEffectProcess::start_command_on(int port) {
  const auto log_offset = file_size_or_zero(options_.stderr_path);
  Subprocess::Options process_options;
  process_options.stderr_path = options_.stderr_path;
  process_options.env = {{"PORT", std::to_string(port)},
                         {"STATE_DB", options_.state_db.string()},
                         {"IDEMPOTENCY_MODE", std::string(dedupe_mode_name(options_.dedupe))},
                         {"DEFAULT_TTL_SECONDS", std::to_string(options_.default_ttl_seconds)},
                         {"HOST", options_.host}};
  process_options.env.insert(options_.env.begin(), options_.env.end());
  // exec env: the service itself gets the signals, and the command may start
  // with VAR=value; 1>&2: its stdout is logged, never a pipe nobody reads.
  auto process = std::make_unique<Subprocess>(
      std::vector<std::string>{"/bin/sh", "-c",
                               "exec env " + expand_command(*options_.command, options_, port) + " 1>&2"},
      process_options);
  const auto previous_boot_id = boot_id_;
  wait_until_healthy(*process, port, log_offset, previous_boot_id);
  port_ = port;
  process_ = std::move(process);
  exit_code_.reset();
}

void RemoteEffectProcess::wait_until_healthy(Subprocess& process, int port, std::uintmax_t log_offset,
                                             const std::string& previous_boot_id) {
  const auto deadline = std::chrono::steady_clock::now() + options_.ready_timeout;
  std::string why(kNothingAnswered);
  const auto exited = [&] {
    if (const auto code = process.wait_for_exit(std::chrono::milliseconds(0))) {
      const auto words = log_since(options_.stderr_path, log_offset);
      const auto what = "the service command exited with code " + std::to_string(*code) + " before it was ready";
      throw_if_port_taken(what, options_.host, port, words);
      throw std::runtime_error(what + ": " + words);
    }
  };
  const auto give_up = [&] {
    process.signal_group(SIGKILL);
    process.stop();
  };
  try {
    while (std::chrono::steady_clock::now() < deadline) {
      exited();
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (options_.ready.kind != Readiness::Kind::protocol_health) {
        if (own_readiness(options_, port, log_offset, left, why)) {
          exited();  // answered by something else on the port, while this one failed
          require_own_listener(port, "the service");
          boot_id_.clear();
          ready_line_ = {{"ready", options_.ready.to_json()}};
          return;
        }
      } else if (const auto health = healthy_answer(options_.host, port, options_.dedupe, left, why)) {
        const auto boot_id = health->value("boot_id", nlohmann::json()).is_string()
                                 ? (*health)["boot_id"].get<std::string>()
                                 : std::string();
        // An answer from the process before (it may not have let go of the
        // port yet) is not this one's.
        if (previous_boot_id.empty() || boot_id != previous_boot_id) {
          exited();  // answered by something else on the port, while this one failed
          require_own_listener(port, "the service");
          boot_id_ = boot_id;
          ready_line_ = *health;
          return;
        }
        why = "GET /health is still answered by the process before (boot_id " + boot_id + ")";
      }
      // The pause between two checks ends at once on a stop request.
      if (wait_readable_or_stop(-1, stop_request_fd(), 20)) throw Interrupted();
    }
  } catch (const std::exception&) {
    give_up();
    throw;
  }
  give_up();
  throw_not_ready(options_, port, log_offset, why);
}

void RemoteEffectProcess::start(int port) {
  if (options_.command) return start_command(port);
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
  if (options_.clock != ClockSource::logical) {
    argv.insert(argv.end(), {"--clock", std::string(clock_source_name(options_.clock))});
  }
  argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
  const auto log_offset = file_size_or_zero(options_.stderr_path);
  Subprocess::Options process_options;
  process_options.stderr_path = options_.stderr_path;
  process_options.env = options_.env;
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
    ready = parse_bounded_json(*line);
    if (ready.at("service").get<std::string>() != "remote-effect") {
      throw std::runtime_error("service is not remote-effect");
    }
    port_ = ready.at("port").get<int>();
    boot_id_ = ready.at("boot_id").get<std::string>();
  } catch (const std::exception& e) {
    process->stop();
    throw std::runtime_error("unexpected ready line from " + options_.binary + ": " + *line + " (" + e.what() + ")");
  }
  try {
    require_own_listener(port_, "remote-effect");
  } catch (const std::exception&) {
    process->stop();
    throw;
  }
  ready_line_ = std::move(ready);
  process_ = std::move(process);
  exit_code_.reset();
}

std::string RemoteEffectProcess::base_url() const {
  std::string host = connect_host(options_.host);
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(port_);
}

pid_t RemoteEffectProcess::pid() const { return process_ ? process_->pid() : -1; }

bool RemoteEffectProcess::running() const { return process_ && process_->running(); }

std::optional<std::chrono::microseconds> RemoteEffectProcess::answer_time(std::chrono::milliseconds deadline) const {
  using Clock = std::chrono::steady_clock;
  if (!running()) return std::nullopt;
  http::BoundedClient client(connect_host(options_.host), port_,
                             {.deadline = deadline, .max_answer_bytes = http::kDefaultMaxAnswerBytes});
  httplib::Request request;
  request.method = "GET";
  request.path = !options_.command || options_.ready.kind == Readiness::Kind::protocol_health ? "/health"
                 : options_.ready.kind == Readiness::Kind::http_get                           ? options_.ready.value
                                                                                              : "/";
  // A measure of the machine's pace for a bound on waiting, not a time any
  // decision reads.
  const auto asked = Clock::now();
  const auto answer = client.send(std::move(request));
  if (answer.end == http::ExchangeEnd::stopped) throw Interrupted();
  if (!answer.head_received) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - asked);
}

RemoteEffectProcess::~RemoteEffectProcess() {
  if (options_.command) stop();  // the service's whole process group, not only the shell's pid
}

void RemoteEffectProcess::kill_hard() {
  if (!running()) return;
  if (options_.command) {
    process_->signal_group(SIGKILL);
  } else {
    process_->send_signal(SIGKILL);
  }
  exit_code_ = process_->wait_for_exit(std::chrono::milliseconds(10000));
}

int RemoteEffectProcess::stop() {
  if (running() && options_.command) {
    process_->signal_group(options_.stopping.signal);
    if (!process_->wait_for_exit(options_.stopping.grace)) process_->signal_group(SIGKILL);
  }
  if (running()) exit_code_ = process_->stop();
  return exit_code_.value_or(-1);
}

void RemoteEffectProcess::restart() {
  // A service of a command is killed, as a container is removed (docker rm
  // -f): what it held only in memory is gone, as in the published #016 runs;
  // unless its target restarts it gracefully.
  if (options_.command && !options_.stopping.graceful_restart) {
    kill_hard();
  } else {
    stop();
  }
  process_.reset();
  start(port_);
}

}  // namespace skewbench::remote_effect
