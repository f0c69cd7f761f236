#include "common/http_exchange.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/elapsed.hpp"
#include "common/stop_request.hpp"
#include "common/text.hpp"

namespace skewbench::http {
namespace {

using Clock = std::chrono::steady_clock;

// After a cut, the watcher cuts again this often until the exchange returns
// (a cut that lands between two socket calls may find no socket to shut).
constexpr int kRecutIntervalMs = 50;

// Whole seconds and microseconds of a duration, as cpp-httplib's setters take them.
std::pair<time_t, time_t> seconds_and_micros(std::chrono::milliseconds duration) {
  const auto ms = std::max<std::int64_t>(duration.count(), 1);
  return {static_cast<time_t>(ms / 1000), static_cast<time_t>((ms % 1000) * 1000)};
}

// The Content-Length an answer declares, when it declares one that parses.
std::optional<std::uint64_t> declared_length(const httplib::Response& head) {
  if (!head.has_header("Content-Length")) return std::nullopt;
  const auto text = head.get_header_value("Content-Length");
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

namespace {

// The first bytes (at most max_bytes) a service sends back to `request` on a
// new connection within the deadline; nullopt when no connection was made.
std::optional<std::string> raw_answer_prefix(const std::string& host, int port, const std::string& request,
                                             std::chrono::milliseconds deadline, std::size_t max_bytes) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &address.sin_addr) != 1) {
    return std::nullopt;
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return std::nullopt;
  struct CloseOnExit {
    int fd;
    ~CloseOnExit() { ::close(fd); }
  } close_on_exit{fd};
  const auto until = Clock::now() + deadline;
  const auto wait_for = [&](short events) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
    pollfd p{fd, events, 0};
    return left > 0 && ::poll(&p, 1, static_cast<int>(left)) == 1;
  };
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    int error = 0;
    socklen_t length = sizeof error;
    if (errno != EINPROGRESS || !wait_for(POLLOUT) || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 ||
        error != 0) {
      return std::nullopt;
    }
  }
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    return std::nullopt;
  }
  std::string bytes;
  char buffer[256];
  while (bytes.size() < max_bytes && wait_for(POLLIN)) {
    const auto n = ::recv(fd, buffer, std::min(sizeof buffer, max_bytes - bytes.size()), 0);
    if (n <= 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  return bytes;
}

}  // namespace

std::string not_http_evidence(const std::string& host, int port, const std::string& path,
                              std::chrono::milliseconds deadline) {
  const auto bytes = raw_answer_prefix(
      host, port, "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n", deadline, 64);
  if (!bytes || bytes->starts_with("HTTP/1.")) return "";
  const auto asked = "a GET " + path + " sent again on a new connection was ";
  if (bytes->empty()) return asked + "closed without a byte";
  return asked + "answered with bytes that are not HTTP: \"" + text::short_prefix(*bytes, 64) + "\"";
}

std::string received_so_far(const Exchange& exchange) {
  if (!exchange.head_received) return "no answer head had arrived";
  return "the head (HTTP " + std::to_string(exchange.status) + ") and " + std::to_string(exchange.body_bytes) +
         " bytes of the body had arrived";
}

BoundedClient::BoundedClient(const std::string& host, int port, ExchangeLimits limits, int stop_fd)
    : client_(host, port), limits_(limits), stop_fd_(stop_fd == kProcessStopRequest ? stop_request_fd() : stop_fd) {
  if (limits_.deadline.count() < 1) throw std::invalid_argument("an exchange's deadline must be positive");
  if (limits_.max_answer_bytes < 1) throw std::invalid_argument("the answer size limit must be positive");
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::runtime_error("cannot create an eventfd for an HTTP client's watcher");
  client_.set_tcp_nodelay(true);
  // Backstops only: the watcher keeps the deadline. A connect in progress is
  // not cut by stop(), so it gets no longer than the whole deadline.
  const auto [seconds, micros] = seconds_and_micros(limits_.deadline);
  client_.set_connection_timeout(seconds, micros);
  client_.set_read_timeout(seconds, micros);
  client_.set_write_timeout(seconds, micros);
  watcher_ = std::thread([this] { watch(); });
}

BoundedClient::~BoundedClient() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quitting_ = true;
  }
  wake();
  watcher_.join();
  ::close(wake_fd_);
}

void BoundedClient::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto written = ::write(wake_fd_, &one, sizeof one);
}

void BoundedClient::watch() {
  for (;;) {
    // Idle, the watcher wakes one deadline's length after it last looked: no
    // exchange started since can have a deadline before that, so send() never
    // has to wake it (an eventfd write and a context switch per exchange).
    auto timeout_ms = static_cast<std::int64_t>(limits_.deadline.count());
    bool watch_stop = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (quitting_) return;
      watch_stop = !stop_seen_;  // a stop fd stays readable: watched until seen once
      if (in_flight_ && cut_ != ExchangeEnd::answered) {
        timeout_ms = kRecutIntervalMs;
      } else if (in_flight_) {
        timeout_ms = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      }
    }
    timeout_ms = std::clamp<std::int64_t>(timeout_ms, 0, 3'600'000);
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {watch_stop ? stop_fd_ : -1, POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(timeout_ms)) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] const auto read = ::read(wake_fd_, &count, sizeof count);
    }
    const std::lock_guard<std::mutex> cutting(cutting_);
    bool cut = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (fds[1].revents != 0) stop_seen_ = true;
      if (in_flight_ && cut_ == ExchangeEnd::answered) {
        if (stop_seen_)
          cut_ = ExchangeEnd::stopped;
        else if (Clock::now() >= deadline_)
          cut_ = ExchangeEnd::deadline;
      }
      cut = in_flight_ && cut_ != ExchangeEnd::answered;
    }
    // Outside mutex_: stop() waits for a connect in progress to end, and the
    // exchange in flight takes mutex_ as it ends.
    if (cut) client_.stop();
  }
}

Exchange BoundedClient::send(httplib::Request request) {
  Exchange exchange;
  exchange.end = ExchangeEnd::stopped;
  if (stop_fd_ >= 0 && wait_readable_or_stop(-1, stop_fd_, 0)) return exchange;
  bool too_large = false;
  request.response_handler = [&](const httplib::Response& head) {
    exchange.head_received = true;
    exchange.status = head.status;
    exchange.headers = head.headers;
    // A declared length past the limit is refused before any of it is read.
    const auto length = declared_length(head);
    too_large = length && *length > limits_.max_answer_bytes;
    return !too_large;
  };
  request.content_receiver = [&](const char* data, std::size_t size, std::uint64_t, std::uint64_t) {
    exchange.body_bytes += size;
    if (exchange.body_bytes > limits_.max_answer_bytes) {
      too_large = true;
      return false;
    }
    exchange.body.append(data, size);
    return true;
  };
  const auto started = Clock::now();
  {
    const std::lock_guard<std::mutex> cutting(cutting_);
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_ = true;
    deadline_ = started + limits_.deadline;
    cut_ = ExchangeEnd::answered;
  }
  httplib::Response answer;
  const bool ok = client_.send(request, answer, exchange.error);
  ExchangeEnd cut = ExchangeEnd::answered;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_ = false;
    cut = cut_;
  }
  exchange.waited_us = micros_since(started);
  if (ok) {
    exchange.end = ExchangeEnd::answered;
    exchange.status = answer.status;
    exchange.headers = answer.headers;
  } else if (too_large) {
    exchange.end = ExchangeEnd::too_large;
  } else {
    // A read that failed as the deadline passed is the deadline's, even if
    // the watcher had not cut it yet.
    const bool past_deadline = Clock::now() >= started + limits_.deadline;
    exchange.end = cut != ExchangeEnd::answered ? cut : past_deadline ? ExchangeEnd::deadline : ExchangeEnd::failed;
  }
  return exchange;
}

}  // namespace skewbench::http
