#include "common/connection_server.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <list>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace skewbench::http {
namespace {

using Clock = std::chrono::steady_clock;

// Requests served on one connection before it is closed (announced in the
// Keep-Alive response header); high, so that clients keep their connection.
constexpr std::size_t kMaxRequestsPerConnection = 100000;

// What the handlers of one request may learn about, and ask of, its connection.
struct RequestContext {
  socket_t sock = INVALID_SOCKET;
  std::string head;  // request line and headers, as received
  ReadFailure failure = ReadFailure::none;
  bool dropped = false;
  bool reset = false;  // dropped with a TCP RST
  bool close_after = false;
  bool responded = false;  // a byte of a response was written
};

thread_local RequestContext* current_context = nullptr;

// cpp-httplib changed two declarations this loop builds on between Debian 12's
// 0.11 and Debian 13's 0.18: TaskQueue::enqueue returned void and now returns
// whether it took the task, and Server::process_request asked the stream for
// the peer's and its own address and now takes them as arguments. Both are
// read off the installed header rather than its version number.
using EnqueueResult = decltype(std::declval<httplib::TaskQueue&>().enqueue(std::function<void()>()));

// Numeric host and port of a socket address, as cpp-httplib prints them.
void describe(const sockaddr_storage& address, socklen_t length, std::string& host, int& port) {
  char host_buffer[NI_MAXHOST] = "";
  char port_buffer[NI_MAXSERV] = "0";
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&address), length, host_buffer, sizeof(host_buffer), port_buffer,
                    sizeof(port_buffer), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return;
  }
  host = host_buffer;
  const std::string_view port_text(port_buffer);
  std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
}

int milliseconds_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
}

// True when the socket has bytes (or end-of-stream) before the deadline.
bool wait_readable(socket_t sock, Clock::time_point deadline) {
  for (;;) {
    pollfd pfd{sock, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, milliseconds_until(deadline));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
    if (ready == 0 && Clock::now() >= deadline) return false;
  }
}

// The stream cpp-httplib parses one connection's requests from. Its buffer
// outlives each request, so bytes read past the end of one request (the next,
// pipelined request) stay for the next one.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(socket_t sock, const ConnectionLimits& limits) : sock_(sock), limits_(limits) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (::getpeername(sock, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      describe(address, length, remote_addr_, remote_port_);
    }
    length = sizeof(address);
    if (::getsockname(sock, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      describe(address, length, local_addr_, local_port_);
    }
  }

  // Waits up to the idle timeout for the first byte of a next request.
  bool wait_for_request() {
    if (offset_ < buffer_.size()) return true;
    return wait_readable(sock_, Clock::now() + limits_.idle_timeout);
  }

  void begin_request(RequestContext& context) {
    context_ = &context;
    in_head_ = true;
    consumed_ = 0;
    deadline_ = Clock::now() + limits_.header_timeout;
  }

  // cpp-httplib has parsed the head; what follows is the body.
  void begin_body() {
    in_head_ = false;
    consumed_ = 0;
    deadline_ = Clock::now() + limits_.body_timeout;
  }

  bool is_readable() const override { return offset_ < buffer_.size() || wait_readable(sock_, deadline_); }
  bool is_writable() const override { return !context_ || !context_->dropped; }

  ssize_t read(char* ptr, std::size_t size) override {
    const std::size_t budget = in_head_ ? limits_.max_head_bytes : limits_.max_body_wire_bytes;
    if (consumed_ >= budget) {
      return fail(in_head_ ? ReadFailure::head_too_large : ReadFailure::body_too_large);
    }
    if (offset_ == buffer_.size() && !fill()) return last_fill_result_;
    const std::size_t n = std::min({size, buffer_.size() - offset_, budget - consumed_});
    std::memcpy(ptr, buffer_.data() + offset_, n);
    if (in_head_ && context_) context_->head.append(buffer_.data() + offset_, n);
    offset_ += n;
    consumed_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, std::size_t size) override {
    if (!is_writable()) return -1;
    if (context_) context_->responded = true;
    for (;;) {
      const ssize_t n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
      if (n >= 0 || errno != EINTR) return n;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_addr_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = local_addr_;
    port = local_port_;
  }
  socket_t socket() const override { return sock_; }

 private:
  ssize_t fail(ReadFailure failure) {
    if (context_ && context_->failure == ReadFailure::none) context_->failure = failure;
    return -1;
  }

  // Reads what the socket has into the (empty) buffer before the deadline.
  bool fill() {
    buffer_.clear();
    offset_ = 0;
    if (!wait_readable(sock_, deadline_)) {
      last_fill_result_ = fail(in_head_ ? ReadFailure::head_timeout : ReadFailure::body_timeout);
      return false;
    }
    buffer_.resize(kReadChunkBytes);
    ssize_t n = 0;
    do {
      n = ::recv(sock_, buffer_.data(), buffer_.size(), 0);
    } while (n < 0 && errno == EINTR);
    buffer_.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    last_fill_result_ = n;  // 0: end of stream; -1: error
    return n > 0;
  }

  static constexpr std::size_t kReadChunkBytes = 16 * 1024;

  socket_t sock_;
  const ConnectionLimits& limits_;
  std::string remote_addr_, local_addr_;
  int remote_port_ = 0, local_port_ = 0;
  std::vector<char> buffer_;
  std::size_t offset_ = 0;
  ssize_t last_fill_result_ = 0;
  RequestContext* context_ = nullptr;
  bool in_head_ = true;
  std::size_t consumed_ = 0;  // bytes of the current phase handed to the parser
  Clock::time_point deadline_ = Clock::now();
};

// One thread per task (a task serves one connection). Finished threads are
// joined at the next enqueue; shutdown() joins the rest. `accepted` counts the
// tasks taken; the task itself takes its own off when it starts.
class ThreadPerConnection final : public httplib::TaskQueue {
 public:
  explicit ThreadPerConnection(std::atomic<std::size_t>& accepted) : accepted_(accepted) {}

  EnqueueResult enqueue(std::function<void()> fn) override {
    ++accepted_;
    std::lock_guard lock(mutex_);
    join_finished_locked();
    threads_.emplace_back();
    auto slot = std::prev(threads_.end());
    *slot = std::thread([this, slot, fn = std::move(fn)] {
      fn();
      std::lock_guard done_lock(mutex_);
      finished_.push_back(slot);
    });
    // Every task is taken (a void cast where enqueue returns nothing).
    return static_cast<EnqueueResult>(true);
  }

  void shutdown() override {
    std::unique_lock lock(mutex_);
    while (!threads_.empty()) {
      join_finished_locked();
      if (threads_.empty()) break;
      // Each remaining thread ends on its own (the server has stopped).
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      lock.lock();
    }
  }

 private:
  void join_finished_locked() {
    for (auto slot : finished_) {
      slot->join();
      threads_.erase(slot);
    }
    finished_.clear();
  }

  std::atomic<std::size_t>& accepted_;
  std::mutex mutex_;
  std::list<std::thread> threads_;
  std::vector<std::list<std::thread>::iterator> finished_;
};

// Half-closes the connection and discards what the client still sends, for a
// moment, before the close: closing with unread bytes would send a reset that
// can destroy the response (e.g. a 413) before the client has read it.
void drain_before_close(socket_t sock) {
  constexpr std::size_t kMaxDrainBytes = 1024 * 1024;
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  ::shutdown(sock, SHUT_WR);
  std::vector<char> discard(16 * 1024);
  std::size_t drained = 0;
  while (drained < kMaxDrainBytes && wait_readable(sock, deadline)) {
    const ssize_t n = ::recv(sock, discard.data(), discard.size(), 0);
    if (n <= 0) break;
    drained += static_cast<std::size_t>(n);
  }
}

// A whole response written by hand, for the answers cpp-httplib's parser
// cannot give (it returns without one when the request line is cut short).
std::string raw_json_response(std::string_view status_line, std::string_view body) {
  return "HTTP/1.1 " + std::string(status_line) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + std::string(body);
}

void reject_over_limit(socket_t sock, std::size_t limit) {
  const std::string body = R"({"error":"too_many_connections","limit_connections":)" + std::to_string(limit) + "}";
  const std::string response = raw_json_response("503 Service Unavailable", body);
  // Best effort and never blocking: the accepting thread must not wait on it.
  [[maybe_unused]] const auto sent = ::send(sock, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

ConnectionServer::ConnectionServer(ConnectionLimits limits) : limits_(limits) {
  new_task_queue = [this] { return new ThreadPerConnection(accepted_unserved_); };
  const auto idle_s = std::chrono::duration_cast<std::chrono::seconds>(limits_.idle_timeout).count();
  // Only what the Keep-Alive response header announces; the loop below enforces it.
  set_keep_alive_timeout(static_cast<time_t>(std::max<long long>(idle_s, 1)));
  set_keep_alive_max_count(kMaxRequestsPerConnection);
}

std::string_view ConnectionServer::current_request_head() {
  return current_context ? std::string_view(current_context->head) : std::string_view();
}

ReadFailure ConnectionServer::current_read_failure() {
  return current_context ? current_context->failure : ReadFailure::none;
}

void ConnectionServer::drop_current_connection() {
  if (!current_context) return;
  current_context->dropped = true;
  current_context->close_after = true;
  ::shutdown(current_context->sock, SHUT_RDWR);
}

void ConnectionServer::reset_current_connection() {
  if (!current_context) return;
  linger hard{1, 0};  // the close sends RST instead of FIN
  ::setsockopt(current_context->sock, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  current_context->dropped = true;
  current_context->reset = true;
  current_context->close_after = true;
}

void ConnectionServer::close_after_response() {
  if (current_context) current_context->close_after = true;
}

std::size_t ConnectionServer::open_connections() const {
  std::lock_guard lock(mutex_);
  return open_.size();
}

std::size_t ConnectionServer::requests_on_the_way() const {
  std::size_t on_the_way = accepted_unserved_ + requests_in_progress_;
  const socket_t listening = svr_sock_;
  tcp_info listen_info{};
  socklen_t info_bytes = sizeof listen_info;
  // On a listening socket, Linux reports its accept backlog as tcpi_unacked.
  if (listening != INVALID_SOCKET && ::getsockopt(listening, IPPROTO_TCP, TCP_INFO, &listen_info, &info_bytes) == 0) {
    on_the_way += listen_info.tcpi_unacked;
  }
  std::lock_guard lock(mutex_);
  for (const socket_t sock : open_) {
    int unread_bytes = 0;
    if (::ioctl(sock, FIONREAD, &unread_bytes) == 0 && unread_bytes > 0) ++on_the_way;
  }
  return on_the_way;
}

bool ConnectionServer::admit(socket_t sock) {
  std::lock_guard lock(mutex_);
  if (stopping_ || open_.size() >= limits_.max_connections) return false;
  open_.insert(sock);
  return true;
}

void ConnectionServer::release(socket_t sock, Ending ending) {
  // Still registered while draining, so that stop() can cut it short.
  if (ending == Ending::by_server) drain_before_close(sock);
  {
    std::lock_guard lock(mutex_);
    open_.erase(sock);
  }
  // Closed only once no other thread can name it any more. A reset skips the
  // shutdown, which would send a FIN before the RST.
  if (ending != Ending::reset) ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

void ConnectionServer::shut_down_connections() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  for (const socket_t sock : open_) ::shutdown(sock, SHUT_RD);
}

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  const bool admitted = admit(sock);
  --accepted_unserved_;  // after admit(), so that it is counted in open_ or here throughout
  if (!admitted) {
    reject_over_limit(sock, limits_.max_connections);
    ::close(sock);
    return false;
  }
  release(sock, serve(sock));
  return true;
}

template <typename ConnectionStream>
bool ConnectionServer::process_request_on(ConnectionStream& stream, bool close_connection, bool& connection_closed,
                                          const std::function<void(httplib::Request&)>& setup_request) {
  if constexpr (requires { this->process_request(stream, close_connection, connection_closed, setup_request); }) {
    return process_request(stream, close_connection, connection_closed, setup_request);
  } else {
    std::string remote_addr, local_addr;
    int remote_port = 0, local_port = 0;
    stream.get_remote_ip_and_port(remote_addr, remote_port);
    stream.get_local_ip_and_port(local_addr, local_port);
    return process_request(stream, remote_addr, remote_port, local_addr, local_port, close_connection,
                           connection_closed, setup_request);
  }
}

ConnectionServer::Ending ConnectionServer::serve(socket_t sock) {
  ConnectionStream stream(sock, limits_);
  for (std::size_t served = 1;; ++served) {
    if (svr_sock_ == INVALID_SOCKET) return Ending::quietly;  // cpp-httplib's stop()
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return Ending::quietly;
    }
    if (!stream.wait_for_request()) return Ending::quietly;
    ++requests_in_progress_;
    const struct Answered {
      std::atomic<std::size_t>& in_progress;
      ~Answered() { --in_progress; }
    } answered_when_done{requests_in_progress_};
    RequestContext context;
    context.sock = sock;
    current_context = &context;
    stream.begin_request(context);
    bool connection_closed = false;
    const bool last = served >= keep_alive_max_count_;
    const bool answered =
        process_request_on(stream, last, connection_closed, [&stream](httplib::Request&) { stream.begin_body(); });
    current_context = nullptr;
    if (context.dropped) return context.reset ? Ending::reset : Ending::quietly;
    if (!context.responded && context.failure == ReadFailure::head_timeout && !context.head.empty()) {
      // The request line itself never ended: cpp-httplib gives up without a
      // word, but the client that sent part of it is owed the 408.
      const auto response = raw_json_response("408 Request Timeout", head_timeout_body_);
      [[maybe_unused]] const auto sent = ::send(sock, response.data(), response.size(), MSG_NOSIGNAL);
      return Ending::by_server;
    }
    if (context.close_after || context.failure != ReadFailure::none) return Ending::by_server;
    if (!answered || last || connection_closed) return Ending::quietly;
  }
}

}  // namespace skewbench::http
