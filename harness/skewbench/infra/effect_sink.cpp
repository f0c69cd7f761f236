#include "infra/effect_sink.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <httplib.h>

#include "common/digest.hpp"
#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "common/text.hpp"

namespace skewbench::infra {
namespace {

using nlohmann::json;

constexpr std::string_view kInstancePrefix = "/instance/";
constexpr std::int64_t kMaxDelayMs = 60'000;
constexpr const char* kJson = "application/json";

// The path's segments, empty ones (a doubled or trailing '/') left out.
std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    const auto slash = path.find('/');
    const auto segment = path.substr(0, slash);
    if (!segment.empty()) out.push_back(segment);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

// Splits "/instance/NAME/rest" into NAME and "/rest"; no instance for a path
// without the prefix.
std::pair<std::optional<std::string>, std::string_view> split_instance(std::string_view path) {
  if (!path.starts_with(kInstancePrefix)) return {std::nullopt, path};
  auto rest = path.substr(kInstancePrefix.size());
  const auto slash = rest.find('/');
  std::string name(rest.substr(0, slash));
  if (name.empty()) return {std::nullopt, path};
  return {std::move(name), slash == std::string_view::npos ? std::string_view() : rest.substr(slash)};
}

// An operation id as the sink keeps it: printable ASCII as it is; any other
// byte as \xNN; one over kMaxOperationIdBytes cut short, its size said (such
// an id names no scenario's operation).
std::string recorded_id(std::string_view id) {
  return text::short_prefix(id, id.size() <= kMaxOperationIdBytes ? kMaxOperationIdBytes : 64);
}

bool matches(const SinkFault& fault, const std::optional<std::string>& operation_id) {
  return !fault.operation_id || fault.operation_id == operation_id;
}

}  // namespace

json OperationIdSource::to_json() const {
  switch (from) {
    case From::header:
      return {{"header", header}};
    case From::json_pointer:
      return {{"json_pointer", json_pointer}};
    case From::path_segment:
      return {{"path_segment", path_segment}};
  }
  return nullptr;
}

json SinkCall::to_json() const {
  return {{"sequence", sequence},
          {"received_unix_ms", received_unix_ms},
          {"instance", instance ? json(*instance) : json(nullptr)},
          {"operation_id", operation_id ? json(*operation_id) : json(nullptr)},
          {"method", method},
          {"path", path},
          {"body_sha256", body_sha256},
          {"body_bytes", body_bytes},
          {"fault", fault ? json(kSinkFaultKinds.name(*fault)) : json(nullptr)},
          {"answer", kSinkAnswers.name(answer)},
          {"applied", applied()}};
}

std::optional<std::string> read_operation_id(const OperationIdSource& source, const httplib::Headers& headers,
                                             std::string_view path, std::string_view body) {
  switch (source.from) {
    case OperationIdSource::From::header: {
      // httplib::Headers compares names case-insensitively.
      const auto found = headers.find(source.header);
      if (found == headers.end() || found->second.empty()) return std::nullopt;
      return found->second;
    }
    case OperationIdSource::From::json_pointer: {
      const auto value = value_at_pointer(body, source.json_pointer);
      if (value && value->is_string() && !value->get<std::string>().empty()) return value->get<std::string>();
      if (value && value->is_number_integer()) return value->dump();
      return std::nullopt;
    }
    case OperationIdSource::From::path_segment: {
      const auto parts = segments(path);
      if (source.path_segment >= parts.size()) return std::nullopt;
      return std::string(parts[source.path_segment]);
    }
  }
  return std::nullopt;
}

EffectSink::EffectSink(Options options)
    : options_(std::move(options)), server_(std::make_unique<http::ConnectionServer>(options_.limits)) {
  if (!options_.now_unix_ms) throw std::invalid_argument("EffectSink: no clock (Options::now_unix_ms)");
  auto& server = *server_;
  server.set_tcp_nodelay(true);
  server.set_write_timeout(10, 0);
  server.set_payload_max_length(options_.limits.max_body_wire_bytes);
  const auto handler = [this](const httplib::Request& request, httplib::Response& response) {
    handle(request, response);
  };
  server.Get(".*", handler);
  server.Post(".*", handler);
  server.Put(".*", handler);
  server.Patch(".*", handler);
  server.Delete(".*", handler);
  port_ = server.bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw InfrastructureError("effect sink: cannot listen on 127.0.0.1 (no free port could be bound)");
  listener_ = std::thread([&server] { server.listen_after_bind(); });
  // cpp-httplib's stop() acts only on a server that is listening: the
  // destructor may call it once this has returned. The socket is bound and
  // listening already, so no call is refused meanwhile.
  while (!server.is_running()) std::this_thread::yield();
}

EffectSink::~EffectSink() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  server_->stop();
  server_->shut_down_connections();
  listener_.join();
}

std::string EffectSink::url(const std::string& instance) const {
  return "http://127.0.0.1:" + std::to_string(port_) + std::string(kInstancePrefix) + instance;
}

void EffectSink::arm(const SinkFault& fault) {
  if (fault.calls < 1)
    throw std::invalid_argument("a sink fault takes at least 1 call, not " + std::to_string(fault.calls));
  if (fault.delay_ms < 0 || fault.delay_ms > kMaxDelayMs) {
    throw std::invalid_argument("a sink delay is 0.." + std::to_string(kMaxDelayMs) + " ms, not " +
                                std::to_string(fault.delay_ms));
  }
  std::lock_guard lock(mutex_);
  armed_.push_back(fault);
}

void EffectSink::disarm_all() {
  std::lock_guard lock(mutex_);
  armed_.clear();
}

bool EffectSink::wait_until_held(const std::optional<std::string>& operation_id, std::size_t count,
                                 std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    const auto held = std::count_if(held_.begin(), held_.end(), [&](const auto& entry) {
      return entry.second == HoldEnd::waiting && (!operation_id || calls_[entry.first].operation_id == operation_id);
    });
    return static_cast<std::size_t>(held) >= count;
  });
}

std::size_t EffectSink::release(const std::optional<std::string>& operation_id) {
  std::size_t released = 0;
  {
    std::lock_guard lock(mutex_);
    for (auto& [index, end] : held_) {
      if (end != HoldEnd::waiting || (operation_id && calls_[index].operation_id != operation_id)) continue;
      end = HoldEnd::released;
      ++released;
    }
  }
  changed_.notify_all();
  return released;
}

std::size_t EffectSink::drop_held(const std::string& instance) {
  std::size_t dropped = 0;
  {
    std::lock_guard lock(mutex_);
    for (auto& [index, end] : held_) {
      if (end != HoldEnd::waiting || calls_[index].instance != instance) continue;
      end = HoldEnd::dropped;
      ++dropped;
    }
  }
  changed_.notify_all();
  return dropped;
}

std::vector<SinkCall> EffectSink::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

std::size_t EffectSink::call_count() const {
  std::lock_guard lock(mutex_);
  return calls_.size();
}

std::int64_t EffectSink::applied(const std::string& operation_id) const {
  std::lock_guard lock(mutex_);
  return std::count_if(calls_.begin(), calls_.end(),
                       [&](const SinkCall& call) { return call.applied() && call.operation_id == operation_id; });
}

std::size_t EffectSink::record_locked(const httplib::Request& request, std::optional<SinkFault>& fault) {
  SinkCall call;
  call.sequence = static_cast<std::int64_t>(calls_.size()) + 1;
  call.received_unix_ms = options_.now_unix_ms();
  auto [instance, rest] = split_instance(request.path);
  if (instance) call.instance = text::short_prefix(*instance, 128);
  if (const auto id = read_operation_id(options_.operation_id, request.headers, rest, request.body)) {
    call.operation_id = recorded_id(*id);
  }
  call.method = text::short_prefix(request.method, 32);
  const auto [_, raw_rest] = split_instance(request.target);
  call.path = text::short_prefix(raw_rest.empty() ? std::string_view("/") : raw_rest, kMaxRecordedPathBytes);
  call.body_sha256 = sha256_hex(request.body);
  call.body_bytes = request.body.size();
  const auto armed =
      std::find_if(armed_.begin(), armed_.end(), [&](const SinkFault& f) { return matches(f, call.operation_id); });
  if (armed != armed_.end()) {
    fault = *armed;
    call.fault = armed->kind;
    if (--armed->calls == 0) armed_.erase(armed);
  }
  calls_.push_back(std::move(call));
  return calls_.size() - 1;
}

SinkAnswer EffectSink::hold_locked(std::unique_lock<std::mutex>& lock, std::size_t index) {
  held_[index] = HoldEnd::waiting;
  changed_.notify_all();
  changed_.wait(lock, [&] { return held_[index] != HoldEnd::waiting || stopping_; });
  const auto end = held_[index];
  held_.erase(index);
  switch (end) {
    case HoldEnd::released:
      return SinkAnswer::ok;
    case HoldEnd::dropped:
      return SinkAnswer::dropped;
    case HoldEnd::waiting:
      break;
  }
  return SinkAnswer::stopped;
}

bool EffectSink::wait_quiet(std::chrono::milliseconds quiet, std::chrono::milliseconds at_most) {
  using Clock = std::chrono::steady_clock;
  // How soon a call seen on its way in is looked for again.
  constexpr std::chrono::milliseconds kLookAgain{5};
  std::unique_lock lock(mutex_);
  // Bounds on waiting, not times any decision reads: a call that arrives
  // starts the quiet again, until the deadline.
  const auto deadline = Clock::now() + at_most;
  auto quiet_until = Clock::now() + quiet;
  while (!stopping_) {
    const auto seen = calls_.size() + refused_in_window_;
    const bool arrived = changed_.wait_until(lock, std::min(quiet_until, deadline),
                                             [&] { return stopping_ || calls_.size() + refused_in_window_ != seen; });
    if (stopping_) return false;
    const auto now = Clock::now();
    if (arrived) {
      quiet_until = now + quiet;
    } else if (now >= quiet_until) {
      // The connections inside handle() are the sink's own; any other is a
      // call not yet recorded.
      if (server_->requests_on_the_way() <= handling_) return true;
      quiet_until = now + kLookAgain;
    }
    if (now >= deadline) return false;
  }
  return false;
}

void EffectSink::begin_window() {
  std::lock_guard lock(mutex_);
  window_start_ = calls_.size();
  refused_in_window_ = 0;
}

std::size_t EffectSink::refused_in_window() const {
  std::lock_guard lock(mutex_);
  return refused_in_window_;
}

void EffectSink::handle(const httplib::Request& request, httplib::Response& response) {
  ++handling_;
  const struct Handled {
    std::atomic<std::size_t>& handling;
    ~Handled() { --handling; }
  } handled{handling_};
  std::unique_lock lock(mutex_);
  if (calls_.size() - window_start_ >= kMaxCallsPerWindow) {
    ++refused_in_window_;
    lock.unlock();
    response.status = 503;
    response.set_content(json{{"applied", false}, {"error", "sink_window_full"}}.dump(), kJson);
    return;
  }
  std::optional<SinkFault> fault;
  const auto index = record_locked(request, fault);
  auto answer = SinkAnswer::ok;
  if (fault) {
    switch (fault->kind) {
      case SinkFaultKind::hold:
        answer = hold_locked(lock, index);
        break;
      case SinkFaultKind::slow:
        changed_.wait_for(lock, std::chrono::milliseconds(fault->delay_ms), [&] { return stopping_; });
        answer = stopping_ ? SinkAnswer::stopped : SinkAnswer::ok;
        break;
      case SinkFaultKind::fail_500:
        answer = SinkAnswer::fail_500;
        break;
      case SinkFaultKind::reset:
        answer = SinkAnswer::reset;
        break;
      case SinkFaultKind::no_answer:
        answer = SinkAnswer::no_answer;
        break;
    }
  }
  calls_[index].answer = answer;
  const auto sequence = calls_[index].sequence;
  lock.unlock();
  changed_.notify_all();
  switch (answer) {
    case SinkAnswer::ok:
      response.status = 200;
      response.set_content(json{{"sink_call", sequence}, {"applied", true}}.dump(), kJson);
      break;
    case SinkAnswer::fail_500:
      response.status = 500;
      response.set_content(json{{"sink_call", sequence}, {"applied", false}, {"error", "sink_fault"}}.dump(), kJson);
      break;
    case SinkAnswer::reset:
      http::ConnectionServer::reset_current_connection();
      break;
    case SinkAnswer::pending:
    case SinkAnswer::no_answer:
    case SinkAnswer::stopped:
    case SinkAnswer::dropped:
      http::ConnectionServer::drop_current_connection();
      break;
  }
}

}  // namespace skewbench::infra
