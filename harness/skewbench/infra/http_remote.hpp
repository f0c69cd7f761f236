#pragma once

// The remote-effect client over one keep-alive cpp-httplib connection with
// TCP_NODELAY. Nothing is retried here: whether to send a POST again is
// recovery's decision, not the transport's.
//
// Only one failure is a planned outcome: a POST sent with X-Drop-Ack whose
// connection the remote closed without answering is ACK_UNKNOWN (the caller
// then checks the remote's request log to see that it arrived). Every other
// failure (refused or reset connection, a timeout, a POST not meant to drop
// that gets no answer) is an InfrastructureError that says what happened.

#include <cstddef>
#include <memory>
#include <string>

#include "common/http_exchange.hpp"
#include "infra/ports.hpp"

namespace skewbench::infra {

// Every exchange with the remote is bounded (common/http_exchange.hpp): one
// deadline over connecting, sending and reading the whole answer, and a size
// limit on the answer's body.
struct HttpLimits {
  int timeout_s = 30;                                           // --http-timeout
  std::size_t max_answer_bytes = http::kDefaultMaxAnswerBytes;  // --max-answer-bytes

  http::ExchangeLimits exchange() const {
    return {.deadline = std::chrono::seconds(timeout_s), .max_answer_bytes = max_answer_bytes};
  }
};

// What the client puts on the wire besides the protocol's own headers.
struct WireOptions {
  // X-Logical-Time on every request. Off when the service reads its own
  // clock (real-clock mode): the request then carries no time at all.
  bool sends_logical_time = true;
  AckLoss ack_loss = AckLoss::header;
};

struct HttpEndpoint {
  std::string host;
  int port = 0;
};

// Parses "http://host:port" (a trailing "/" is allowed). Throws
// std::invalid_argument naming what is wrong.
HttpEndpoint parse_http_url(const std::string& url);

class HttpRemote final : public RemoteApi {
 public:
  explicit HttpRemote(const std::string& base_url, HttpLimits limits = {}, WireOptions wire = {});
  ~HttpRemote() override;

  PostExchange post_effect(const PostEffectRequest& request) override;
  StatusExchange status(const std::string& operation_id, std::int64_t logical_time_s) override;
  HealthExchange health() override;
  GcExchange gc(const std::string& operation_id, std::int64_t logical_time_s) override;

  const std::string& base_url() const { return base_url_; }

  // One bounded exchange, for a wire of the service's own too
  // (infra/own_wire_remote.hpp). A POST without a Content-Type is sent as
  // JSON. A stop request throws Interrupted; the deadline, the size limit and
  // an error the fault proxy answered for the service throw
  // InfrastructureError naming the exchange and what had arrived. What the
  // transport did otherwise is the caller's to judge.
  http::Exchange exchange(const std::string& method, const std::string& path,
                          const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body);
  // Why a request got no answer, in words.
  std::string describe_failure(const http::Exchange& exchange) const;
  // "POST http://127.0.0.1:P/effects"
  std::string name(const std::string& method, const std::string& path) const;

 private:
  // The protocol's headers, less what `wire_` leaves off, plus the fault header.
  std::vector<std::pair<std::string, std::string>> on_wire(std::vector<std::pair<std::string, std::string>> headers,
                                                           bool drop_ack) const;

  std::string base_url_;
  HttpLimits limits_;
  WireOptions wire_;
  std::unique_ptr<http::BoundedClient> client_;
};

}  // namespace skewbench::infra
