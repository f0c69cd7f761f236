#include "infra/fault_proxy.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/text.hpp"
#include "infra/http_remote.hpp"
#include "remote_effect/protocol.hpp"

namespace skewbench::infra {
namespace {

constexpr std::size_t kMaxHeadBytes = 64 * 1024;
constexpr std::size_t kMaxBodyBytes = 1024 * 1024;
constexpr std::int64_t kMaxDelayMs = 60'000;

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Headers that belong to one connection, not to the request: the proxy's two
// connections each have their own.
bool hop_by_hop(std::string_view name) {
  for (const std::string_view h : {"Connection", "Keep-Alive", "Content-Length", "Transfer-Encoding", "Host",
                                   "Proxy-Connection", "TE", "Upgrade"}) {
    if (same_name(name, h)) return true;
  }
  return false;
}

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

using Clock = std::chrono::steady_clock;

// Appends what arrives before `deadline` to `buffer`; false on end of stream,
// an error, the deadline or a readable `stop_fd`.
bool read_more(int fd, std::string& buffer, Clock::time_point deadline, int stop_fd) {
  const auto left_ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left_ms <= 0) return false;
  pollfd p[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
  int ready = 0;
  do {
    ready = ::poll(p, 2, static_cast<int>(left_ms));
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0 || p[1].revents != 0 || p[0].revents == 0) return false;
  char chunk[16 * 1024];
  ssize_t n = 0;
  do {
    n = ::recv(fd, chunk, sizeof chunk, 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  buffer.append(chunk, static_cast<std::size_t>(n));
  return true;
}

struct ClientRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool close = false;  // Connection: close

  std::optional<std::string> header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (same_name(n, name)) return v;
    }
    return std::nullopt;
  }
};

// Reads one request from the connection, whole within `timeout`; nullopt
// when the connection ends, the deadline passes or `stop_fd` is readable
// first, or when the request cannot be framed (the proxy then closes the
// connection).
std::optional<ClientRequest> read_request(int fd, std::string& buffer, std::chrono::seconds timeout, int stop_fd) {
  const auto deadline = Clock::now() + timeout;
  std::size_t head_end = 0;
  while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    if (buffer.size() > kMaxHeadBytes || !read_more(fd, buffer, deadline, stop_fd)) return std::nullopt;
  }
  const std::string_view head(buffer.data(), head_end);
  ClientRequest request;
  std::size_t line_end = head.find("\r\n");
  const auto request_line = head.substr(0, line_end);
  const auto first_space = request_line.find(' ');
  const auto second_space = request_line.rfind(' ');
  if (first_space == std::string_view::npos || second_space == first_space) return std::nullopt;
  request.method = std::string(request_line.substr(0, first_space));
  request.target = std::string(request_line.substr(first_space + 1, second_space - first_space - 1));
  std::size_t content_length = 0;
  while (line_end != std::string_view::npos && line_end < head.size()) {
    const auto start = line_end + 2;
    line_end = head.find("\r\n", start);
    const auto line =
        head.substr(start, line_end == std::string_view::npos ? std::string_view::npos : line_end - start);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto name = std::string(line.substr(0, colon));
    const auto value = std::string(text::trim(line.substr(colon + 1)));
    if (same_name(name, "Transfer-Encoding")) return std::nullopt;  // the driver frames by length
    if (same_name(name, "Content-Length")) {
      const auto parsed = remote_effect::parse_int64(value);
      if (!parsed || *parsed < 0 || static_cast<std::uint64_t>(*parsed) > kMaxBodyBytes) return std::nullopt;
      content_length = static_cast<std::size_t>(*parsed);
    }
    if (same_name(name, "Connection") && same_name(value, "close")) request.close = true;
    request.headers.emplace_back(name, value);
  }
  const auto body_start = head_end + 4;
  while (buffer.size() < body_start + content_length) {
    if (!read_more(fd, buffer, deadline, stop_fd)) return std::nullopt;
  }
  request.body = buffer.substr(body_start, content_length);
  buffer.erase(0, body_start + content_length);
  return request;
}

std::string reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 409:
      return "Conflict";
    case 422:
      return "Unprocessable Entity";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

std::string response_bytes(int status, const httplib::Headers& headers, const std::string& body, bool close) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  for (const auto& [name, value] : headers) {
    if (!hop_by_hop(name)) out += name + ": " + value + "\r\n";
  }
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  if (close) out += "Connection: close\r\n";
  out += "\r\n";
  out += body;
  return out;
}

void abort_connection(int fd) {
  linger hard{1, 0};  // close with RST instead of FIN
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
}

// What becomes of the client's connection after one request.
enum class AfterRequest { serve_next, close, reset };

// The request as the service gets it: without the connection's own headers
// and without the proxy's own (the fault and the operation).
httplib::Request forwarded_request(const ClientRequest& request) {
  httplib::Request forwarded;
  forwarded.method = request.method;
  forwarded.path = request.target;
  for (const auto& [name, value] : request.headers) {
    if (!hop_by_hop(name) && !same_name(name, kFaultHeader) && !same_name(name, kOperationHeader)) {
      forwarded.headers.emplace(name, value);
    }
  }
  forwarded.body = request.body;
  return forwarded;
}

// Waits `delay_ms` of wall time, or less when `stop_fd` becomes readable (the
// proxy is being destroyed).
void wait_or_stop(std::int64_t delay_ms, int stop_fd) {
  pollfd p{stop_fd, POLLIN, 0};
  while (::poll(&p, 1, static_cast<int>(delay_ms)) < 0 && errno == EINTR) {
  }
}

// The proxy's own answer when the service's could not be read within the
// limits: the client learns why instead of waiting out its own deadline.
std::string cut_off_answer(const http::Exchange& exchange, const http::ExchangeLimits& limits) {
  const auto why = exchange.end == http::ExchangeEnd::too_large
                       ? "the service's answer body is larger than " + std::to_string(limits.max_answer_bytes) +
                             " bytes (--max-answer-bytes); the rest was not read"
                       : "the service's answer did not arrive whole within " +
                             std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limits.deadline).count()) +
                             " s (--http-timeout): " + http::received_so_far(exchange);
  const auto body = nlohmann::json{{"error", "proxy_upstream"}, {"detail", why}}.dump();
  return response_bytes(502, {{std::string(kProxyErrorHeader), why}, {"Content-Type", "application/json"}}, body, true);
}

// The operation the proxy counts a request for; empty when it names none.
std::string operation_of(const ClientRequest& request) {
  if (auto own = request.header(kOperationHeader)) return *own;
  return request.header(remote_effect::kOperationIdHeader).value_or("");
}

// The fault of a request, or the 400 that refuses it; nullopt for none.
std::optional<Fault> fault_of(const ClientRequest& request, int client_fd, FaultCounts& counts, bool& refused) {
  const auto text = request.header(kFaultHeader);
  if (!text) return std::nullopt;
  auto fault = parse_fault(*text);
  if (!fault) {
    counts.add(operation_of(request), &ProxyCounts::refused_faults);
    const auto body = nlohmann::json{
        {"error", "invalid_fault"},
        {"header", std::string(kFaultHeader)},
        {"detail",
         "expected drop_ack, reset or delay_ms=N (0..60000), not \"" + *text +
             "\""}}.dump();
    send_all(client_fd, response_bytes(400, {{"Content-Type", "application/json"}}, body, true));
    refused = true;
  }
  return fault;
}

// One request from the client: its fault applied, forwarded, and the
// service's answer passed on, dropped or cut off.
AfterRequest pass_on(const ClientRequest& request, int client_fd, http::BoundedClient& upstream, FaultCounts& counts,
                     int stop_fd) {
  const auto operation_id = operation_of(request);
  bool refused = false;
  const auto fault = fault_of(request, client_fd, counts, refused);
  if (refused) return AfterRequest::close;
  if (fault && fault->kind == Fault::Kind::delay) {
    counts.add(operation_id, &ProxyCounts::delayed);
    wait_or_stop(fault->delay_ms, stop_fd);
  }
  counts.add(operation_id, &ProxyCounts::forwarded);
  const auto answer = upstream.send(forwarded_request(request));
  if (answer.end == http::ExchangeEnd::deadline || answer.end == http::ExchangeEnd::too_large) {
    counts.add(operation_id, &ProxyCounts::cut_off);
    send_all(client_fd, cut_off_answer(answer, upstream.limits()));
    return AfterRequest::close;
  }
  if (!answer.answered()) {
    counts.add(operation_id, &ProxyCounts::unanswered);
    return AfterRequest::close;  // the service closed without an answer (or the proxy stops): so does the proxy
  }
  if (fault && fault->kind == Fault::Kind::drop_ack) {
    // Only an answer that says the service took the request (2xx: the
    // protocol's 200, a service's own 201) counts as a dropped
    // acknowledgement; a refusal dropped is a request nobody logged, which
    // the driver's ledger then tells apart.
    if (answer.status >= 200 && answer.status < 300) counts.add(operation_id, &ProxyCounts::ack_drops);
    return AfterRequest::close;  // the answer was read whole; the client gets none of it
  }
  if (fault && fault->kind == Fault::Kind::reset) {
    counts.add(operation_id, &ProxyCounts::resets);
    return AfterRequest::reset;
  }
  const auto connection = answer.headers.find("Connection");
  const bool close = request.close || (connection != answer.headers.end() && same_name(connection->second, "close"));
  if (!send_all(client_fd, response_bytes(answer.status, answer.headers, answer.body, close)) || close) {
    return AfterRequest::close;
  }
  return AfterRequest::serve_next;
}

}  // namespace

std::optional<Fault> parse_fault(std::string_view text) {
  if (text == "drop_ack") return Fault{.kind = Fault::Kind::drop_ack};
  if (text == "reset") return Fault{.kind = Fault::Kind::reset};
  constexpr std::string_view delay = "delay_ms=";
  if (text.substr(0, delay.size()) == delay) {
    const auto ms = remote_effect::parse_int64(text.substr(delay.size()));
    if (ms && *ms >= 0 && *ms <= kMaxDelayMs) return Fault{.kind = Fault::Kind::delay, .delay_ms = *ms};
  }
  return std::nullopt;
}

void FaultCounts::add(const std::string& operation_id, std::int64_t ProxyCounts::*field) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++(totals_.*field);
  if (!operation_id.empty()) ++(per_operation_[operation_id].*field);
}

ProxyCounts FaultCounts::of(const std::string& operation_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = per_operation_.find(operation_id);
  return it == per_operation_.end() ? ProxyCounts{} : it->second;
}

ProxyCounts FaultCounts::totals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return totals_;
}

FaultProxy::FaultProxy(const std::string& upstream_url, HttpLimits limits, std::shared_ptr<FaultCounts> counts)
    : upstream_url_(upstream_url),
      limits_({.timeout_s = std::max(1, limits.timeout_s), .max_answer_bytes = limits.max_answer_bytes}),
      counts_(counts ? std::move(counts) : std::make_shared<FaultCounts>()) {
  parse_http_url(upstream_url_);  // throws std::invalid_argument on a bad URL
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw InfrastructureError(std::string("fault proxy: socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listen_fd_, SOMAXCONN) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
      ::pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    ::close(listen_fd_);
    throw InfrastructureError("fault proxy: cannot listen on 127.0.0.1: " + why);
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FaultProxy::~FaultProxy() {
  const char stop = 1;
  [[maybe_unused]] const auto written = ::write(stop_pipe_[1], &stop, 1);
  acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& worker : workers_) worker.thread.join();
  ::close(listen_fd_);
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
}

std::string FaultProxy::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void FaultProxy::accept_loop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      // Out of descriptors (or interrupted): wait a little instead of spinning.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) wait_or_stop(10, stop_pipe_[0]);
      continue;
    }
    int yes = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    std::lock_guard<std::mutex> lock(mutex_);
    reap_finished_workers();
    auto done = std::make_shared<std::atomic<bool>>(false);
    try {
      open_fds_.push_back(client);
      workers_.push_back({std::thread([this, client, done] {
                            serve(client);
                            done->store(true);
                          }),
                          done});
    } catch (const std::exception&) {  // no thread to serve it: the client sees a closed connection
      std::erase(open_fds_, client);
      ::close(client);
    }
  }
}

void FaultProxy::reap_finished_workers() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (!it->done->load()) {
      ++it;
      continue;
    }
    it->thread.join();
    it = workers_.erase(it);
  }
}

void FaultProxy::serve(int client_fd) {
  // Nothing a client sends may end the run: whatever throws closes this
  // connection only.
  try {
    serve_requests(client_fd);
  } catch (const std::exception&) {
    abort_connection(client_fd);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase(open_fds_, client_fd);
  }
  ::close(client_fd);
}

void FaultProxy::serve_requests(int client_fd) {
  const auto endpoint = parse_http_url(upstream_url_);
  http::BoundedClient upstream(endpoint.host, endpoint.port, limits_.exchange(), stop_pipe_[0]);
  upstream.client().set_keep_alive(true);
  // The answer's body goes on as the service encoded it: a cpp-httplib built
  // with zlib would otherwise inflate a gzip answer and pass it on still
  // labelled gzip, which the driver cannot read.
  upstream.client().set_decompress(false);

  std::string buffer;
  auto next = AfterRequest::serve_next;
  while (next == AfterRequest::serve_next) {
    const auto request = read_request(client_fd, buffer, std::chrono::seconds(limits_.timeout_s), stop_pipe_[0]);
    if (!request) break;
    next = pass_on(*request, client_fd, upstream, *counts_, stop_pipe_[0]);
  }
  if (next == AfterRequest::reset) abort_connection(client_fd);
}

}  // namespace skewbench::infra
