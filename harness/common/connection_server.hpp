#pragma once

// The connection loop of skewbench's HTTP servers: the remote-effect service
// and the effect sink (infra/effect_sink.hpp).
//
// cpp-httplib's own loop (0.11) gives each connection a thread of a fixed pool
// for as long as the connection stays open, reads every request through a
// fresh buffer (so a second request written right behind the first is lost),
// and bounds a request only by per-read timeouts (a byte a second keeps a
// request alive for ever). ConnectionServer keeps cpp-httplib's parser, router
// and response writer (Server::process_request) and replaces the loop around
// them:
//
// - one thread per open connection, at most max_connections of them; a
//   connection over the limit is answered 503 at once and closed, so no
//   connection waits in a queue behind idle ones;
// - one read buffer per connection, kept across requests, so pipelined
//   requests are answered in order;
// - deadlines per phase: idle_timeout while waiting for a request,
//   header_timeout for the request line and headers, body_timeout for the body;
// - byte budgets per request for the head and for the body as sent on the wire
//   (chunk framing included), so no framing can make it buffer without bound;
// - a handler reaches its own connection (drop an acknowledgement, close after
//   the response) and stop() reaches every open connection, without searching
//   the process's descriptors.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include <httplib.h>

namespace skewbench::http {

struct ConnectionLimits {
  std::size_t max_connections = 512;
  std::chrono::milliseconds idle_timeout{10000};
  std::chrono::milliseconds header_timeout{5000};
  std::chrono::milliseconds body_timeout{10000};
  std::size_t max_head_bytes = 64 * 1024;
  std::size_t max_body_wire_bytes = 192 * 1024;
};

// Why the current request could not be read in full.
enum class ReadFailure { none, head_timeout, body_timeout, head_too_large, body_too_large };

// The cpp-httplib releases whose internals this loop was read against and run
// on: Server::process_request (protected, in two signatures), svr_sock_, the
// Stream interface and TaskQueue::enqueue. 0.11.4 is Debian 12's (the test
// suite), 0.18.7 Debian 13's (the Docker image, run by the docker test). A
// unit test fails on any other release until those four are checked against
// its httplib.h and it is added here.
inline constexpr std::string_view kCheckedHttplibVersions[] = {"0.11.4", "0.18.7"};

class ConnectionServer : public httplib::Server {
 public:
  explicit ConnectionServer(ConnectionLimits limits);
  ~ConnectionServer() override = default;

  // After stop(): ends the read side of every open connection, so that the
  // threads waiting for a next request wake up and finish.
  void shut_down_connections();

  const ConnectionLimits& limits() const { return limits_; }

  // The JSON body of the 408 sent when a request line does not end before
  // header_timeout (the error handler answers every later timeout itself).
  void set_head_timeout_body(std::string body) { head_timeout_body_ = std::move(body); }

  // Connections admitted and not yet closed.
  std::size_t open_connections() const;

  // Requests on their way in, as far as this process can see them: a
  // connection still in the listen backlog or not yet given its thread, an
  // open connection with bytes received and not yet read, and a request
  // being read or handled and not yet answered. A caller that waits for
  // quiet (EffectSink::wait_quiet) counts what has arrived only once this
  // has no more in it than the requests it is handling itself.
  std::size_t requests_on_the_way() const;

  // About the request being handled on the calling thread; valid only inside
  // a handler (route, pre-routing, error or exception handler).
  static std::string_view current_request_head();  // request line and headers as received
  static ReadFailure current_read_failure();
  // Closes the connection without one more byte: the response being built is
  // never sent.
  static void drop_current_connection();
  // Aborts the connection (TCP RST, no FIN first): the response being built
  // is never sent, and the client's next read fails with a reset.
  static void reset_current_connection();
  // Sends the response, then closes the connection.
  static void close_after_response();

 private:
  // How a connection ended: by the client, the idle timeout or a stop
  // (quietly); closed by the server after a response, an error's or a
  // handler's close_after_response (drained first, see drain_before_close);
  // or aborted by reset_current_connection.
  enum class Ending { quietly, by_server, reset };

  bool process_and_close_socket(socket_t sock) override;
  bool admit(socket_t sock);
  void release(socket_t sock, Ending ending);
  // Serves requests until the connection ends.
  Ending serve(socket_t sock);
  // Server::process_request in whichever form the installed cpp-httplib
  // declares it (see connection_server.cpp).
  template <typename ConnectionStream>
  bool process_request_on(ConnectionStream& stream, bool close_connection, bool& connection_closed,
                          const std::function<void(httplib::Request&)>& setup_request);

  ConnectionLimits limits_;
  std::string head_timeout_body_ = R"({"error":"request_timeout"})";
  mutable std::mutex mutex_;
  std::set<socket_t> open_;                           // guarded by mutex_; a socket leaves it before it is closed
  bool stopping_ = false;                             // guarded by mutex_
  std::atomic<std::size_t> accepted_unserved_{0};     // accepted, not yet at process_and_close_socket
  std::atomic<std::size_t> requests_in_progress_{0};  // a request's first byte read, not yet answered
};

}  // namespace skewbench::http
