#include "infra/http_remote.hpp"

#include <charconv>
#include <chrono>
#include <stdexcept>

#include <httplib.h>

#include "common/elapsed.hpp"
#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "infra/fault_proxy.hpp"
#include "infra/http_failure.hpp"
#include "remote_effect/protocol.hpp"

namespace skewbench::infra {
namespace {

using Clock = std::chrono::steady_clock;

namespace protocol = remote_effect;

httplib::Headers to_httplib(const std::vector<std::pair<std::string, std::string>>& headers) {
  return {headers.begin(), headers.end()};
}

nlohmann::json parse_body(const std::string& body, const std::string& what) {
  try {
    return parse_bounded_json(body);
  } catch (const std::exception&) {
    throw InfrastructureError(what + ": the remote answered with a body that is not JSON");
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

HttpRemote::HttpRemote(const std::string& base_url, HttpTimeouts timeouts, WireOptions wire)
    : base_url_(base_url), timeouts_(timeouts), wire_(wire) {
  if (timeouts_.timeout_s < 1) throw std::invalid_argument("the HTTP timeout must be at least 1 s");
  const auto endpoint = parse_http_url(base_url);
  client_ = std::make_unique<httplib::Client>(endpoint.host, endpoint.port);
  client_->set_tcp_nodelay(true);
  client_->set_keep_alive(true);
  client_->set_connection_timeout(timeouts_.timeout_s, 0);
  client_->set_read_timeout(timeouts_.timeout_s, 0);
  client_->set_write_timeout(timeouts_.timeout_s, 0);
}

std::string HttpRemote::describe_failure(int error, std::int64_t waited_us) const {
  const auto err = static_cast<httplib::Error>(error);
  const auto limit = std::to_string(timeouts_.timeout_s) + " s (--http-timeout)";
  // cpp-httplib reports a read that timed out and a connection the peer
  // closed both as Error::Read; the time waited tells them apart.
  const bool waited_full_timeout = waited_us >= static_cast<std::int64_t>(timeouts_.timeout_s) * 1000000 * 9 / 10;
  if (waited_full_timeout) {
    switch (err) {
      case httplib::Error::Read:
        return "read timed out after " + limit + "; the remote may still apply the request";
      case httplib::Error::Write:
        return "write timed out after " + limit;
      case httplib::Error::Connection:
      case httplib::Error::ConnectionTimeout:
        return "connect timed out after " + limit;
      default:
        break;
    }
  }
  if (err == httplib::Error::Read) return "the connection closed without a response (reset, or the remote stopped)";
  return failure_reason(err, base_url_);
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
  const auto headers = to_httplib(wire_headers);
  auto ex = sent("POST", "/effects", wire_headers, r.body);
  const auto start = Clock::now();
  auto res = client_->Post("/effects", headers, r.body, "application/json");
  ex.duration_us = micros_since(start);
  if (!res) {
    const auto err = res.error();
    const bool closed_before_timeout =
        err == httplib::Error::Read && ex.duration_us < static_cast<std::int64_t>(timeouts_.timeout_s) * 900000;
    // The planned outcome of X-Drop-Ack: the remote committed, then closed the
    // connection without a byte. The caller checks the remote's request log,
    // since a reset before the remote read the request looks the same here.
    if (r.drop_ack && closed_before_timeout) {
      ex.response_body = nullptr;
      return read_post(std::move(ex), TransportOutcome::AckUnknown, "POST /effects");
    }
    const std::string drop_how =
        wire_.ack_loss == AckLoss::proxy ? " (drop_ack by the fault proxy)" : " (X-Drop-Ack: 1)";
    throw InfrastructureError("POST " + base_url_ + "/effects" + (r.drop_ack ? drop_how : "") + ": " +
                              describe_failure(static_cast<int>(err), ex.duration_us) +
                              (r.drop_ack ? "" : "; this POST was not meant to lose its answer"));
  }
  ex.http_status = res->status;
  ex.response_body = parse_body(res->body, "POST /effects");
  if (res->status != 200 && res->status != 409 && res->status != 422) {
    throw InfrastructureError("POST /effects answered " + std::to_string(res->status) + ": " + res->body);
  }
  auto posted = read_post(std::move(ex), TransportOutcome::AckReceived, "POST /effects");
  if (res->status != 200) {
    const bool fenced = res->status == 409 && posted.answer.delivery == protocol::Delivery::fenced_out;
    posted.outcome = fenced ? TransportOutcome::FencedOut : TransportOutcome::Rejected;
  }
  return posted;
}

StatusExchange HttpRemote::status(const std::string& operation_id, std::int64_t logical_time_s) {
  const auto wire_headers = on_wire(protocol::logical_time_headers(logical_time_s), false);
  const auto headers = to_httplib(wire_headers);
  const std::string path = "/status/" + operation_id;
  auto ex = sent("GET", path, wire_headers);
  const auto start = Clock::now();
  auto res = client_->Get(path, headers);
  ex.duration_us = micros_since(start);
  if (!res) {
    throw InfrastructureError("GET " + base_url_ + path + ": " +
                              describe_failure(static_cast<int>(res.error()), ex.duration_us));
  }
  if (res->status != 200) {
    throw InfrastructureError("GET " + path + " answered " + std::to_string(res->status) + ": " + res->body);
  }
  ex.http_status = res->status;
  ex.response_body = parse_body(res->body, "GET /status");
  return read_status(std::move(ex), "GET " + path);
}

GcExchange HttpRemote::gc(const std::string& operation_id, std::int64_t logical_time_s) {
  const auto wire_headers = on_wire(protocol::logical_time_headers(logical_time_s), false);
  const auto headers = to_httplib(wire_headers);
  const std::string path = "/maintenance/gc/" + operation_id;
  auto ex = sent("POST", path, wire_headers);
  const auto start = Clock::now();
  auto res = client_->Post(path, headers, "{}", "application/json");
  ex.duration_us = micros_since(start);
  if (!res) throw InfrastructureError("POST " + base_url_ + path + " failed: " + httplib::to_string(res.error()));
  if (res->status != 200) {
    throw InfrastructureError("POST " + path + " answered " + std::to_string(res->status) + ": " + res->body);
  }
  ex.http_status = res->status;
  ex.response_body = parse_body(res->body, "POST /maintenance/gc");
  return read_gc(std::move(ex), "POST " + path);
}

HealthExchange HttpRemote::health() {
  const auto start = Clock::now();
  auto res = client_->Get("/health");
  if (!res) {
    throw InfrastructureError("GET " + base_url_ +
                              "/health: " + describe_failure(static_cast<int>(res.error()), micros_since(start)));
  }
  if (res->status != 200) throw InfrastructureError("GET /health answered " + std::to_string(res->status));
  return read_health(parse_body(res->body, "GET /health"), "GET /health");
}

}  // namespace skewbench::infra
