#pragma once

// One HTTP exchange with a service skewbench does not trust, bounded by
// skewbench itself: one deadline over the whole exchange (connect, request,
// head and body: cpp-httplib's own timeouts bound each socket call, so a
// service sending one byte a second never trips them), a size limit on the
// answer's body (the excess is never read into memory), and the process's
// stop request (SIGINT, SIGTERM), which cuts the exchange at once.
//
// A watcher thread per client keeps the deadline and the stop request: it
// calls httplib::Client::stop(), the one call cpp-httplib allows from another
// thread, which shuts the socket down so that the blocked read returns. It
// never needs waking as an exchange starts, so an exchange costs two mutex
// locks more than a bare cpp-httplib request.
// Used by the driver's client, the readiness check of a started service and
// the fault proxy's upstream side: one mechanism for every exchange.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include <httplib.h>

namespace skewbench::http {

// The default of --max-answer-bytes.
inline constexpr std::size_t kDefaultMaxAnswerBytes = 1024 * 1024;

struct ExchangeLimits {
  std::chrono::milliseconds deadline{30000};              // the whole exchange
  std::size_t max_answer_bytes = kDefaultMaxAnswerBytes;  // the answer's body
};

// How an exchange ended.
enum class ExchangeEnd {
  answered,   // a whole answer, within the deadline and the size limit
  failed,     // the transport failed first (refused, reset, closed): `error`
  deadline,   // no whole answer within the deadline
  too_large,  // the body passed max_answer_bytes; the rest was not read
  stopped,    // a stop request cut it (or came before it started)
};

struct Exchange {
  ExchangeEnd end = ExchangeEnd::failed;
  httplib::Error error = httplib::Error::Success;  // ExchangeEnd::failed
  bool head_received = false;                      // the status line and headers had arrived
  int status = 0;                                  // once head_received
  httplib::Headers headers;                        // once head_received
  std::string body;                                // at most max_answer_bytes
  std::size_t body_bytes = 0;                      // body bytes received, the refused excess included
  std::int64_t waited_us = 0;

  bool answered() const { return end == ExchangeEnd::answered; }
};

// For an exchange that ended before an answer head could be read: cpp-httplib
// reports a connection closed early and bytes that are not HTTP alike, and
// keeps no byte of either. This asks again, harmlessly: a plain
// "GET <path>" on a connection of its own, within `deadline`, reading at most
// 64 bytes. It says what came back when that is not HTTP ("a GET /health
// sent again on a new connection was answered with bytes that are not HTTP:
// \"\x00garbage\"", or "... was closed without a byte"), and nothing when it
// is an HTTP answer or no connection could be made. Never sent for an effect:
// only a GET, which changes nothing.
std::string not_http_evidence(const std::string& host, int port, const std::string& path,
                              std::chrono::milliseconds deadline = std::chrono::milliseconds(1000));

// What had arrived of an exchange that did not end in an answer, for an error
// message: "no answer head had arrived" or "the head (HTTP 200) and 3 bytes of
// the body had arrived".
std::string received_so_far(const Exchange& exchange);

class BoundedClient {
 public:
  // `stop_fd` becomes readable on a stop request: by default the process's
  // (common/stop_request.hpp); the fault proxy passes its own.
  static constexpr int kProcessStopRequest = -2;
  BoundedClient(const std::string& host, int port, ExchangeLimits limits, int stop_fd = kProcessStopRequest);
  ~BoundedClient();
  BoundedClient(const BoundedClient&) = delete;
  BoundedClient& operator=(const BoundedClient&) = delete;

  // For the settings an exchange does not own (keep-alive, decompression).
  httplib::Client& client() { return client_; }
  const ExchangeLimits& limits() const { return limits_; }

  // Sends `request` and reads its answer within the limits. Never throws for
  // what the service does; after a stop request it sends nothing.
  Exchange send(httplib::Request request);

 private:
  void watch();
  void wake();

  httplib::Client client_;
  ExchangeLimits limits_;
  int stop_fd_;
  int wake_fd_ = -1;

  // Held by the watcher from its decision to cut until stop() has returned,
  // and by send() as an exchange starts: a cut decided for one exchange never
  // lands on the next one (taken before mutex_).
  std::mutex cutting_;
  std::mutex mutex_;
  bool in_flight_ = false;
  std::chrono::steady_clock::time_point deadline_;
  ExchangeEnd cut_ = ExchangeEnd::answered;  // deadline or stopped once the watcher cut it
  bool stop_seen_ = false;
  bool quitting_ = false;
  std::thread watcher_;
};

}  // namespace skewbench::http
