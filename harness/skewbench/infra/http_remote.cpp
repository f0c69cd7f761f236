#include "infra/http_remote.hpp"

#include <charconv>
#include <stdexcept>

#include <httplib.h>

#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "common/text.hpp"
#include "infra/fault_proxy.hpp"
#include "infra/http_failure.hpp"
#include "remote_effect/protocol.hpp"

namespace skewbench::infra {
namespace {

namespace protocol = remote_effect;

httplib::Headers to_httplib(const std::vector<std::pair<std::string, std::string>>& headers) {
  return {headers.begin(), headers.end()};
}

nlohmann::json parse_body(const std::string& body, const std::string& what) {
  try {
    return parse_bounded_json(body);
  } catch (const nlohmann::json::parse_error&) {
    throw InfrastructureError(what + ": the remote answered with a body that is not JSON: " + text::short_prefix(body));
  } catch (const std::exception& e) {
    // Valid JSON past the parser's bounds (nesting): refused unread.
    throw InfrastructureError(what + ": the remote answered with JSON skewbench does not read: " + e.what());
  }
}

// httplib's one-word error ("Connection") as the reason a reader needs.
std::string failure_reason(httplib::Error error, const std::string& base_url) {
  const auto endpoint = parse_http_url(base_url);
  return http_failure_reason(error, endpoint.host, endpoint.port);
}

}  // namespace

HttpEndpoint parse_http_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) throw std::invalid_argument("remote URL must start with http://: " + url);
  std::string rest = url.substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) throw std::invalid_argument("remote URL must not have a path: " + url);
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    throw std::invalid_argument("remote URL must be http://HOST:PORT: " + url);
  }
  HttpEndpoint out;
  out.host = rest.substr(0, colon);
  const auto port_text = rest.substr(colon + 1);
  const auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), out.port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || out.port <= 0 || out.port > 65535) {
    throw std::invalid_argument("remote URL has an invalid port: " + url);
  }
  return out;
}

HttpRemote::HttpRemote(const std::string& base_url, HttpLimits limits, WireOptions wire)
    : base_url_(base_url), limits_(limits), wire_(wire) {
  if (limits_.timeout_s < 1) throw std::invalid_argument("the HTTP timeout must be at least 1 s");
  if (limits_.max_answer_bytes < 1) throw std::invalid_argument("the answer size limit must be at least 1 byte");
  const auto endpoint = parse_http_url(base_url);
  client_ = std::make_unique<http::BoundedClient>(endpoint.host, endpoint.port, limits_.exchange());
  client_->client().set_keep_alive(true);
}

std::string HttpRemote::name(const std::string& method, const std::string& path) const {
  return method + " " + base_url_ + path;
}

std::string HttpRemote::describe_failure(const http::Exchange& exchange) const {
  if (exchange.error == httplib::Error::Read) {
    // The HTTP client reports a connection closed early and bytes that are
    // not an HTTP answer alike: the message names both, and what a harmless
    // GET /health shows of the service when no head could be read.
    std::string evidence;
    if (!exchange.head_received) {
      const auto endpoint = parse_http_url(base_url_);
      evidence = http::not_http_evidence(endpoint.host, endpoint.port, "/health");
    }
    return "the connection ended without a whole HTTP answer (closed or reset, the remote stopped, or it sent "
           "bytes that are not HTTP); " +
           http::received_so_far(exchange) + (evidence.empty() ? "" : "; " + evidence);
  }
  return failure_reason(exchange.error, base_url_);
}

http::Exchange HttpRemote::exchange(const std::string& method, const std::string& path,
                                    const std::vector<std::pair<std::string, std::string>>& headers,
                                    const std::string& body) {
  httplib::Request request;
  request.method = method;
  request.path = path;
  request.headers = to_httplib(headers);
  if (method != "GET") {
    request.body = body;
    if (!request.has_header("Content-Type")) request.set_header("Content-Type", "application/json");
  }
  auto ex = client_->send(std::move(request));
  switch (ex.end) {
    case http::ExchangeEnd::stopped:
      throw Interrupted();
    case http::ExchangeEnd::deadline:
      throw InfrastructureError(name(method, path) + ": timed out after " + std::to_string(limits_.timeout_s) +
                                " s (--http-timeout, one deadline over connect, request, head and body): " +
                                http::received_so_far(ex) + "; the remote may still apply the request");
    case http::ExchangeEnd::too_large:
      throw InfrastructureError(name(method, path) + ": the answer's body is larger than " +
                                std::to_string(limits_.max_answer_bytes) +
                                " bytes (--max-answer-bytes); the rest was not read and none of it is kept");
    case http::ExchangeEnd::answered:
    case http::ExchangeEnd::failed:
      break;
  }
  if (ex.answered()) {
    if (const auto proxy_error = ex.headers.find(std::string(kProxyErrorHeader)); proxy_error != ex.headers.end()) {
      throw InfrastructureError(name(method, path) +
                                ": the fault proxy got no usable answer from the service: " + proxy_error->second);
    }
  }
  return ex;
}

HttpRemote::~HttpRemote() = default;

std::vector<std::pair<std::string, std::string>> HttpRemote::on_wire(
    std::vector<std::pair<std::string, std::string>> headers, bool drop_ack) const {
  std::erase_if(headers, [this](const auto& header) {
    return (!wire_.sends_logical_time && header.first == protocol::kLogicalTimeHeader) ||
           (wire_.ack_loss == AckLoss::proxy && header.first == protocol::kDropAckHeader);
  });
  if (drop_ack && wire_.ack_loss == AckLoss::proxy) headers.emplace_back(std::string(kFaultHeader), "drop_ack");
  return headers;
}

PostExchange HttpRemote::post_effect(const PostEffectRequest& r) {
  const auto wire_headers = on_wire(protocol::post_effect_headers(r), r.drop_ack);
  auto ex = sent("POST", "/effects", wire_headers, r.body);
  const auto answer = exchange("POST", "/effects", wire_headers, r.body);
  ex.duration_us = answer.waited_us;
  if (!answer.answered()) {
    // The planned outcome of X-Drop-Ack: the remote committed, then closed the
    // connection without a byte. The caller checks the remote's request log,
    // since a reset before the remote read the request looks the same here.
    if (r.drop_ack && answer.error == httplib::Error::Read && !answer.head_received) {
      ex.response_body = nullptr;
      return read_post(std::move(ex), TransportOutcome::AckUnknown, "POST /effects");
    }
    const std::string drop_how =
        wire_.ack_loss == AckLoss::proxy ? " (drop_ack by the fault proxy)" : " (X-Drop-Ack: 1)";
    throw InfrastructureError(name("POST", "/effects") + (r.drop_ack ? drop_how : "") + ": " +
                              describe_failure(answer) +
                              (r.drop_ack ? "" : "; this POST was not meant to lose its answer"));
  }
  ex.http_status = answer.status;
  ex.response_body = parse_body(answer.body, name("POST", "/effects"));
  if (answer.status != 200 && answer.status != 409 && answer.status != 422) {
    throw InfrastructureError("POST /effects answered " + std::to_string(answer.status) + ": " +
                              text::short_prefix(answer.body));
  }
  auto posted = read_post(std::move(ex), TransportOutcome::AckReceived, "POST /effects");
  if (answer.status != 200) {
    const bool fenced = answer.status == 409 && posted.answer.delivery == protocol::Delivery::fenced_out;
    posted.outcome = fenced ? TransportOutcome::FencedOut : TransportOutcome::Rejected;
  }
  return posted;
}

StatusExchange HttpRemote::status(const std::string& operation_id, std::int64_t logical_time_s) {
  const auto wire_headers = on_wire(protocol::logical_time_headers(logical_time_s), false);
  const std::string path = "/status/" + operation_id;
  auto ex = sent("GET", path, wire_headers);
  const auto answer = exchange("GET", path, wire_headers, "");
  ex.duration_us = answer.waited_us;
  if (!answer.answered()) throw InfrastructureError(name("GET", path) + ": " + describe_failure(answer));
  if (answer.status != 200) {
    throw InfrastructureError("GET " + path + " answered " + std::to_string(answer.status) + ": " +
                              text::short_prefix(answer.body));
  }
  ex.http_status = answer.status;
  ex.response_body = parse_body(answer.body, name("GET", path));
  return read_status(std::move(ex), "GET " + path);
}

GcExchange HttpRemote::gc(const std::string& operation_id, std::int64_t logical_time_s) {
  const auto wire_headers = on_wire(protocol::logical_time_headers(logical_time_s), false);
  const std::string path = "/maintenance/gc/" + operation_id;
  auto ex = sent("POST", path, wire_headers);
  const auto answer = exchange("POST", path, wire_headers, "{}");
  ex.duration_us = answer.waited_us;
  if (!answer.answered()) throw InfrastructureError(name("POST", path) + ": " + describe_failure(answer));
  if (answer.status != 200) {
    throw InfrastructureError("POST " + path + " answered " + std::to_string(answer.status) + ": " +
                              text::short_prefix(answer.body));
  }
  ex.http_status = answer.status;
  ex.response_body = parse_body(answer.body, name("POST", path));
  return read_gc(std::move(ex), "POST " + path);
}

HealthExchange HttpRemote::health() {
  const auto answer = exchange("GET", "/health", {}, "");
  if (!answer.answered()) throw InfrastructureError(name("GET", "/health") + ": " + describe_failure(answer));
  if (answer.status != 200) throw InfrastructureError("GET /health answered " + std::to_string(answer.status));
  return read_health(parse_body(answer.body, name("GET", "/health")), "GET /health");
}

}  // namespace skewbench::infra
